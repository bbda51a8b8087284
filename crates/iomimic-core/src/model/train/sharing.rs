//! Streams that share data (step 2 of the training algorithm, [`super`]): which streams come
//! back to requests another stream made, so that they train as one thread.
//!
//! A thread re-uses only its own requests (its stacks and population are its own), so streams
//! that read one hot set — a database's backends, or a trace whose stream numbers are given to
//! requests by turn — would each be modelled with a hot set of its own: the synthetic
//! footprint then grows with the number of streams, and every miss-ratio curve goes wrong (on
//! the benchmarks' 64-stream trace, three re-touches in four are of another stream's request:
//! request-keyed curve error 0.075 per stream, 0.017 with the streams of a volume as one).
//!
//! ## Algorithm
//! Each request that starts where an earlier request started (a re-touch, keyed by volume and
//! offset as the reuse stacks are) counts for the pair of its stream and the stream that made
//! the place's previous request. Two streams are grouped when the re-touches between them
//! (either way round) are at least [`SHARED_SHARE`] of the re-touches of the one of them that
//! makes more, and at least [`MIN_SHARED`]; groups are closed under that (union-find). Against
//! the larger, so that a stream that comes back to nothing (a log) is not grouped by another's
//! few reads of it, nor two large streams joined by a small one that reads both. k streams
//! taking equal turns at one hot set share 2/k of each one's re-touches pairwise: up to 40
//! streams so are grouped.
//!
//! The places are a hash sample, halved whenever more than [`MAX_PLACES`] are kept (the
//! fixed-size form of SHARDS, Waldspurger et al., FAST 2015): the shares are ratios of counts,
//! which a spatially uniform sample keeps, and memory stays bounded on any trace.

use rustc_hash::FxHashMap;

use crate::random::splitmix;

/// Share of the busier stream's re-touches that must be between the two (either way round) for
/// them to be one thread.
pub const SHARED_SHARE: f64 = 0.05;
/// Fewest sampled re-touches between two streams that group them.
pub const MIN_SHARED: u64 = 32;
/// Most places sampled at once.
const MAX_PLACES: usize = 1 << 19;

/// Re-touches within and between streams, over a hash sample of places.
#[derive(Default)]
pub(super) struct Sharing {
    /// each sampled place's latest stream (its index)
    last: FxHashMap<(u32, u64), u32>,
    /// places whose hash is at most this are sampled
    threshold: u64,
    /// the streams seen, by index, and each one's index
    ids: Vec<u32>,
    index: FxHashMap<u32, u32>,
    /// re-touches each stream made
    made: Vec<u64>,
    /// re-touches between two streams, either way round, keyed (lower index, higher)
    between: FxHashMap<(u32, u32), u64>,
}

impl Sharing {
    pub fn new() -> Self {
        Self {
            threshold: u64::MAX,
            ..Self::default()
        }
    }

    /// A request of stream `stream` starting at `offset` of `volume`.
    #[inline]
    pub fn touch(&mut self, stream: u32, volume: u32, offset: u64) {
        if place_hash(volume, offset) > self.threshold {
            return;
        }
        let next = self.ids.len() as u32;
        let k = *self.index.entry(stream).or_insert(next);
        if k == next {
            self.ids.push(stream);
            self.made.push(0);
        }
        if let Some(before) = self.last.insert((volume, offset), k) {
            self.made[k as usize] += 1;
            if before != k {
                *self.between.entry((before.min(k), before.max(k))).or_default() += 1;
            }
        }
        if self.last.len() > MAX_PLACES {
            // counts so far were taken at twice the rate from now on: halved, every stretch of
            // the trace weighs alike (SHARDS' adjustment)
            self.made.iter_mut().for_each(|m| *m /= 2);
            self.between.values_mut().for_each(|c| *c /= 2);
            self.threshold /= 2;
            let threshold = self.threshold;
            self.last.retain(|&(v, off), _| place_hash(v, off) <= threshold);
        }
    }

    /// Each grouped stream's thread: the lowest stream of its group (streams grouped with no
    /// other are left out).
    pub fn groups(&self) -> FxHashMap<u32, u32> {
        let mut parent: Vec<usize> = (0..self.ids.len()).collect();
        for (&(a, b), &count) in &self.between {
            let busier = self.made[a as usize].max(self.made[b as usize]);
            if count >= MIN_SHARED && count as f64 >= SHARED_SHARE * busier as f64 {
                let (ra, rb) = (root(&mut parent, a as usize), root(&mut parent, b as usize));
                let (keep, join) = if self.ids[ra] <= self.ids[rb] {
                    (ra, rb)
                } else {
                    (rb, ra)
                };
                parent[join] = keep;
            }
        }
        let roots: Vec<usize> = (0..self.ids.len()).map(|i| root(&mut parent, i)).collect();
        // each group's lowest stream and size
        let mut lowest: FxHashMap<usize, (u32, usize)> = FxHashMap::default();
        for (i, &r) in roots.iter().enumerate() {
            let g = lowest.entry(r).or_insert((self.ids[i], 0));
            g.0 = g.0.min(self.ids[i]);
            g.1 += 1;
        }
        roots
            .iter()
            .enumerate()
            .filter(|&(_, r)| lowest[r].1 > 1)
            .map(|(i, r)| (self.ids[i], lowest[r].0))
            .collect()
    }
}

/// The root of `i`'s set in a union-find forest, paths halved on the way.
fn root(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

#[inline]
fn place_hash(volume: u32, offset: u64) -> u64 {
    splitmix(offset ^ (u64::from(volume) << 48).rotate_left(7))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_that_come_back_to_each_others_requests_are_grouped() {
        let mut s = Sharing::new();
        // streams 7 and 2 read one hot set of 100 places by turns; stream 1 re-reads its own;
        // stream 3 writes a log and comes back to nothing
        for round in 0..10u64 {
            for p in 0..100u64 {
                s.touch(if (round + p) % 2 == 0 { 7 } else { 2 }, 0, p * 4096);
                s.touch(1, 0, (1000 + p) * 4096);
                s.touch(3, 1, (round * 100 + p) * 4096);
            }
        }
        let groups = s.groups();
        assert_eq!((groups.len(), groups[&7], groups[&2]), (2, 2, 2));
        // a few coincidences do not group
        let mut s = Sharing::new();
        for p in 0..1000u64 {
            s.touch(0, 0, p % 500 * 4096);
        }
        for p in 0..(MIN_SHARED - 1) {
            s.touch(1, 0, p * 4096);
        }
        assert!(s.groups().is_empty());
        // a stream that comes back to nothing is not grouped by another's few reads of it
        let mut s = Sharing::new();
        for p in 0..200u64 {
            s.touch(5, 1, p * 4096);
        }
        for round in 0..20u64 {
            for p in 0..1000u64 {
                s.touch(0, 0, p * 4096);
            }
            s.touch(5, 1, (200 + round) * 4096);
        }
        for p in 0..40u64 {
            s.touch(0, 1, p * 4096);
        }
        assert!(s.groups().is_empty());
        // nor two streams that share nothing by a small one that reads both
        let mut s = Sharing::new();
        for _ in 0..20 {
            for p in 0..1000u64 {
                s.touch(0, 0, p * 4096);
                s.touch(2, 1, p * 4096);
            }
        }
        for p in 0..40u64 {
            s.touch(1, 0, p * 4096);
            s.touch(1, 1, p * 4096);
        }
        assert!(s.groups().is_empty());
    }

    #[test]
    fn the_sample_stays_bounded_and_keeps_the_shares() {
        let mut s = Sharing::new();
        let n = 4 * MAX_PLACES as u64;
        for p in 0..n {
            s.touch((p % 2) as u32, 0, p * 4096);
        }
        // every place once more, by the other stream
        for p in 0..n {
            s.touch(((p + 1) % 2) as u32, 0, p * 4096);
        }
        assert!(s.last.len() <= MAX_PLACES && s.threshold < u64::MAX / 2);
        let made: u64 = s.made.iter().sum();
        assert!(made > 1000 && s.between[&(0, 1)].abs_diff(made) <= 2);
        assert_eq!(s.groups()[&1], 0);
    }
}
