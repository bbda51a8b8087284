//! Sequentiality: the sequential fraction and Keeton et al.'s jump and stream-interference
//! metrics.
//!
//! ## Algorithm
//! Requests are followed per *key* (a volume, or a stream on a volume), in issue order.
//! - A request is **sequential** when it starts exactly where the previous request of its key
//!   ended. Its **jump distance** is `offset − previous end`: negative is a backward jump, zero
//!   sequential, positive a forward jump. `p_backward`, `p_sequential` and `p_forward` are over
//!   the requests that have a predecessor; the histogram puts distances in signed log2 buckets.
//! - **run_count** (the "old" sequential run count): mean length of maximal runs of sequential
//!   requests, i.e. requests / (requests that are not sequential).
//! - **Detangling**: every request leaves a *head* at its end offset. A request that starts
//!   exactly at a live head continues that head's stream (even if other requests came between);
//!   otherwise it starts a new stream. **detangled_run_count** = requests / streams started.
//!   **interference_frequency** = mean, over continuations, of the requests of the same key
//!   issued between a stream's request and its continuation.
//! - **Relaxed** detangling also lets a request continue a stream when it starts up to
//!   [`RELAXED_GAP`] bytes past the head (a small forward hole, which array prefetching still
//!   covers); **relaxed_detangled_run_count** = requests / streams started under that rule.
//! - Heads not continued within [`HEAD_WINDOW`] requests of their key are dropped, bounding
//!   memory; a stream that resumes later counts as a new one.
//!
//! ## Complexity
//! O(1) expected per request (hash maps keyed by end offset; relaxed heads by 64 KiB bucket).
//!
//! ## References
//! Keeton, Alvarez, Riedel, Uysal: "Characterizing I/O-intensive Workload Sequentiality on
//! Modern Disk Arrays" (CAECW 2001).

use crate::trace::TraceView;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Largest forward hole a relaxed stream tolerates.
pub const RELAXED_GAP: u64 = 64 << 10;
/// Requests of a key after which an unmatched head is forgotten.
pub const HEAD_WINDOW: u64 = 1 << 16;
/// Signed log2 buckets: index 64 is distance 0, 64 + k is [2^(k-1), 2^k), 64 − k its negative.
pub const JUMP_BUCKETS: usize = 129;

/// State of one key (volume, or stream on a volume).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct KeyState {
    last_end: Option<u64>,
    /// Requests of this key so far.
    count: u64,
    /// end offset → index (in this key's sequence) of the request that ends there.
    heads: FxHashMap<u64, u64>,
    /// 64 KiB bucket of an end offset → (end offset, index) of the latest head in it.
    relaxed: FxHashMap<u64, (u64, u64)>,
}

impl KeyState {
    /// Requests of this key so far.
    pub fn requests(&self) -> u64 {
        self.count
    }

    /// Whether this state, after requests some of which came before `base` (this key's
    /// requests before a partition of the trace), will count every later request as `local`
    /// (the same requests from the partition's start alone) does: the same last end, and the
    /// same heads once those set before the partition are left out (every one of them is then
    /// too old to be continued, `local` having seen at least [`HEAD_WINDOW`] requests).
    pub fn agrees_from(&self, base: u64, local: &KeyState) -> bool {
        let own = |at: u64| at >= base;
        self.last_end == local.last_end
            && self.heads.values().filter(|&&at| own(at)).count() == local.heads.len()
            && local
                .heads
                .iter()
                .all(|(end, at)| self.heads.get(end) == Some(&(at + base)))
            && self.relaxed.values().filter(|&&(_, at)| own(at)).count() == local.relaxed.len()
            && local
                .relaxed
                .iter()
                .all(|(b, &(end, at))| self.relaxed.get(b) == Some(&(end, at + base)))
    }

    /// This state without the heads no later request can continue (older than
    /// [`HEAD_WINDOW`] requests of the key): it counts every later request alike.
    #[must_use]
    pub fn within_reach(mut self) -> KeyState {
        let now = self.count;
        self.heads.retain(|_, at| now - *at <= HEAD_WINDOW);
        self.relaxed.retain(|_, (_, at)| now - *at <= HEAD_WINDOW);
        self
    }

    /// The state of a partition's requests taken from the partition's start alone, placed
    /// after `base` earlier requests of the key.
    #[must_use]
    pub fn after(mut self, base: u64) -> KeyState {
        self.count += base;
        for at in self.heads.values_mut() {
            *at += base;
        }
        for (_, at) in self.relaxed.values_mut() {
            *at += base;
        }
        self
    }
}

/// Counters that add up across keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeqCounts {
    pub requests: u64,
    pub with_predecessor: u64,
    pub sequential: u64,
    pub backward: u64,
    pub forward: u64,
    #[serde(with = "jump_counts")]
    pub jumps: [u64; JUMP_BUCKETS],
    pub streams: u64,
    pub relaxed_streams: u64,
    pub continuations: u64,
    pub interference_sum: u64,
}

impl Default for SeqCounts {
    fn default() -> Self {
        Self {
            requests: 0,
            with_predecessor: 0,
            sequential: 0,
            backward: 0,
            forward: 0,
            jumps: [0; JUMP_BUCKETS],
            streams: 0,
            relaxed_streams: 0,
            continuations: 0,
            interference_sum: 0,
        }
    }
}

/// The counts of requests `rows` of `t` (in time order), a key per volume.
pub fn of_rows(t: &TraceView<'_>, rows: &[u32]) -> SeqCounts {
    let mut keys: FxHashMap<u32, KeyState> = FxHashMap::default();
    let mut counts = SeqCounts::default();
    for &r in rows {
        let i = r as usize;
        counts.observe(
            keys.entry(t.volume[i]).or_default(),
            t.offset[i],
            u64::from(t.size[i]),
        );
    }
    counts
}

fn jump_bucket(distance: i128) -> usize {
    let magnitude = distance.unsigned_abs();
    let k = if magnitude == 0 {
        0
    } else {
        128 - magnitude.leading_zeros() as usize
    };
    let k = k.min(64);
    if distance < 0 {
        64 - k
    } else {
        64 + k
    }
}

impl SeqCounts {
    /// Follows one request of `key`.
    #[inline]
    pub fn observe(&mut self, key: &mut KeyState, offset: u64, size: u64) {
        let end = offset + size;
        let index = key.count;
        key.count += 1;
        self.requests += 1;
        if let Some(prev_end) = key.last_end {
            self.with_predecessor += 1;
            let distance = i128::from(offset) - i128::from(prev_end);
            match distance.signum() {
                0 => self.sequential += 1,
                1 => self.forward += 1,
                _ => self.backward += 1,
            }
            self.jumps[jump_bucket(distance)] += 1;
        }
        key.last_end = Some(end);

        // exact detangling
        match key.heads.remove(&offset) {
            Some(prev) if index - prev <= HEAD_WINDOW => {
                self.continuations += 1;
                self.interference_sum += index - prev - 1;
            }
            _ => self.streams += 1,
        }
        key.heads.insert(end, index);

        // relaxed detangling: a head at most RELAXED_GAP bytes before `offset`
        let bucket = offset / RELAXED_GAP;
        let found = [bucket, bucket.wrapping_sub(1)].into_iter().find_map(|b| {
            key.relaxed
                .get(&b)
                .filter(|&&(head, at)| {
                    head <= offset && offset - head <= RELAXED_GAP && index - at <= HEAD_WINDOW
                })
                .map(|_| b)
        });
        match found {
            Some(b) => {
                key.relaxed.remove(&b);
            }
            None => self.relaxed_streams += 1,
        }
        key.relaxed.insert(end / RELAXED_GAP, (end, index));

        // forget stale heads now and then so memory stays bounded
        if index > 0 && index.is_multiple_of(HEAD_WINDOW) {
            key.heads.retain(|_, at| index - *at <= HEAD_WINDOW);
            key.relaxed.retain(|_, (_, at)| index - *at <= HEAD_WINDOW);
        }
    }

    pub fn merge(&mut self, other: &SeqCounts) {
        self.requests += other.requests;
        self.with_predecessor += other.with_predecessor;
        self.sequential += other.sequential;
        self.backward += other.backward;
        self.forward += other.forward;
        for (a, b) in self.jumps.iter_mut().zip(other.jumps) {
            *a += b;
        }
        self.streams += other.streams;
        self.relaxed_streams += other.relaxed_streams;
        self.continuations += other.continuations;
        self.interference_sum += other.interference_sum;
    }

    /// Takes `other`'s counts back out (counts of some of the requests merged before).
    pub fn unmerge(&mut self, other: &SeqCounts) {
        self.requests -= other.requests;
        self.with_predecessor -= other.with_predecessor;
        self.sequential -= other.sequential;
        self.backward -= other.backward;
        self.forward -= other.forward;
        for (a, b) in self.jumps.iter_mut().zip(other.jumps) {
            *a -= b;
        }
        self.streams -= other.streams;
        self.relaxed_streams -= other.relaxed_streams;
        self.continuations -= other.continuations;
        self.interference_sum -= other.interference_sum;
    }

    pub fn figures(&self) -> Sequentiality {
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let jump_histogram = self
            .jumps
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(i, &count)| {
                let k = i64::try_from(i).expect("129 buckets") - 64;
                let (from, to) = match k {
                    0 => (0i128, 1i128),
                    k if k > 0 => (1i128 << (k - 1), 1i128 << k),
                    k => (-(1i128 << (-k)) + 1, -(1i128 << (-k - 1)) + 1),
                };
                JumpBucket {
                    log2_bucket: k,
                    from_bytes: from as f64,
                    to_bytes: to as f64,
                    count,
                }
            })
            .collect();
        let not_sequential = self.requests - self.sequential;
        Sequentiality {
            p_backward: ratio(self.backward, self.with_predecessor),
            p_sequential: ratio(self.sequential, self.with_predecessor),
            p_forward: ratio(self.forward, self.with_predecessor),
            jump_histogram,
            run_count: ratio(self.requests, not_sequential),
            interference_frequency: ratio(self.interference_sum, self.continuations),
            detangled_run_count: ratio(self.requests, self.streams),
            relaxed_detangled_run_count: ratio(self.requests, self.relaxed_streams),
            relaxed_gap_bytes: RELAXED_GAP,
        }
    }
}

/// The jump histogram as a list (serde's arrays stop at 32).
mod jump_counts {
    use super::JUMP_BUCKETS;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(jumps: &[u64; JUMP_BUCKETS], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(jumps)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u64; JUMP_BUCKETS], D::Error> {
        let v = Vec::<u64>::deserialize(d)?;
        let n = v.len();
        v.try_into()
            .map_err(|_| serde::de::Error::custom(format!("{n} jump buckets, not {JUMP_BUCKETS}")))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct JumpBucket {
    /// 0 for sequential; +k for forward jumps in [2^(k-1), 2^k) bytes; −k for backward jumps
    /// of that magnitude.
    pub log2_bucket: i64,
    /// Signed distance range `[from, to)` in bytes.
    pub from_bytes: f64,
    pub to_bytes: f64,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Sequentiality {
    pub p_backward: f64,
    pub p_sequential: f64,
    pub p_forward: f64,
    pub jump_histogram: Vec<JumpBucket>,
    pub run_count: f64,
    pub interference_frequency: f64,
    pub detangled_run_count: f64,
    pub relaxed_detangled_run_count: f64,
    pub relaxed_gap_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(requests: &[(u64, u64)]) -> SeqCounts {
        let mut c = SeqCounts::default();
        let mut key = KeyState::default();
        for &(offset, size) in requests {
            c.observe(&mut key, offset, size);
        }
        c
    }

    #[test]
    fn a_sequential_run_with_a_hole() {
        // 0-4K, 4K-8K, 8K-12K, hole of 8K, 20K-24K, 24K-28K, then back to 0
        let c = run(&[
            (0, 4096),
            (4096, 4096),
            (8192, 4096),
            (20480, 4096),
            (24576, 4096),
            (0, 4096),
        ]);
        let s = c.figures();
        assert_eq!(
            (c.sequential, c.forward, c.backward, c.with_predecessor),
            (3, 1, 1, 5)
        );
        assert!((s.p_sequential - 0.6).abs() < 1e-12);
        // runs: [0,4K,8K] [20K,24K] [0] -> 6 / 3
        assert!((s.run_count - 2.0).abs() < 1e-12);
        // exact detangling: streams start at 0, 20K and the final 0 -> 3
        assert!((s.detangled_run_count - 2.0).abs() < 1e-12);
        // relaxed: the 8 KiB hole is tolerated -> streams start at 0 and the final 0
        assert!((s.relaxed_detangled_run_count - 3.0).abs() < 1e-12);
        let buckets: Vec<(i64, u64)> = s
            .jump_histogram
            .iter()
            .map(|b| (b.log2_bucket, b.count))
            .collect();
        // +8192 is in [2^13, 2^14): bucket 14; -28672 is in (-2^15, -2^14]: bucket -15
        assert_eq!(buckets, [(-15, 1), (0, 3), (14, 1)]);
    }

    #[test]
    fn interleaved_streams_are_detangled() {
        // two sequential streams A (at 0) and B (at 1 MiB), strictly alternating
        let mut reqs = Vec::new();
        for i in 0..4u64 {
            reqs.push((i * 4096, 4096));
            reqs.push(((1 << 20) + i * 4096, 4096));
        }
        let s = run(&reqs).figures();
        assert_eq!(s.p_sequential, 0.0); // no request follows its immediate predecessor
        assert!((s.run_count - 1.0).abs() < 1e-12);
        assert!((s.detangled_run_count - 4.0).abs() < 1e-12); // 8 requests, 2 streams
        assert!((s.interference_frequency - 1.0).abs() < 1e-12); // one request of the other stream between
    }
}
