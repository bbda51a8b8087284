//! One thread's pass over its requests in order: each request's path of states, how it was
//! placed, and what it adds to the edge that decided it, its volume's stats and the thread's;
//! then the thread's model.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::chain::{Fallback, Hierarchy};
use super::placement::{AlignmentAcc, Heads, Kind, StreamsAcc};
use super::reuse::{each_visit, state_of, ReuseAcc, Seen, Stacks, TouchCounts, Visit};
use super::runs::RunsAcc;
use super::stats::{gap_dist, StatsAcc};
use crate::model::{cell_of, Chain, Dist, Reuse, Runs, Stats, Streams, VolumeStats, HOT_CELLS};
use crate::trace::{Op, TraceView};

/// What training learnt of one thread from its requests alone: the thread's model but for what
/// depends on the whole trace (its share and activity), which [`super::Plan::assemble`] adds.
/// Serialisable, so a thread trained elsewhere (a cluster's task) comes back exactly.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Part {
    pub chain: Chain,
    /// The thread's own stats, for edges with too few requests for theirs.
    pub defaults: Stats,
    /// Per volume, the stats of its requests over edges without their own (what those take).
    pub volumes: Vec<VolumeStats>,
    pub reuse: Option<Reuse>,
    pub streams: Streams,
    /// Random offsets are multiples of this.
    pub alignment: u64,
}

/// The most gaps of a thread's requests its gap fit is given: past that many, every k-th
/// gap, so that a thread trained a piece at a time keeps a bounded number.
pub(super) fn gap_stride(requests: usize, kept: usize) -> usize {
    requests.saturating_sub(1).div_ceil(kept.max(1)).max(1)
}

/// Trains the thread of requests `rows` (in time order) with model times `u`, keeping at most
/// about `gaps_kept` of their gaps for the fit.
#[allow(clippy::too_many_arguments)]
pub(super) fn train_thread(
    t: &TraceView<'_>,
    rows: &[usize],
    u: &[f64],
    spans: &[u64],
    levels: u32,
    k: u32,
    reuse_on: bool,
    bounds: &[u64],
    gaps_kept: usize,
) -> Part {
    let mut volumes: Vec<u32> = rows.iter().map(|&i| t.volume[i]).collect();
    volumes.sort_unstable();
    volumes.dedup();
    let pass = ThreadPass::new(
        &volumes,
        spans,
        levels,
        k,
        reuse_on,
        bounds,
        rows.len(),
        gaps_kept,
    );
    let mut thread = ThreadTrainer::new(pass, reuse_on, rows.len());
    thread.feed(t, rows, u);
    thread.finish()
}

/// A thread's pass with the re-use stacks beside it, fed its requests in order, all at once or
/// a piece at a time.
pub(super) struct ThreadTrainer {
    pass: ThreadPass,
    stacks: Option<Stacks>,
}

impl ThreadTrainer {
    /// Room is made for `places` places in the stacks at first.
    pub fn new(pass: ThreadPass, reuse_on: bool, places: usize) -> Self {
        let stacks = reuse_on.then(|| Stacks::new(pass.hierarchy.top_states(), places));
        Self { pass, stacks }
    }

    /// The thread's next requests: `rows` of `t`, with model times `u` (indexed like `t`).
    pub fn feed(&mut self, t: &TraceView<'_>, rows: &[usize], u: &[f64]) {
        let pass = &mut self.pass;
        let mut request = |i: usize, visit: Visit| {
            pass.request(t.volume[i], t.offset[i], t.size[i], t.op[i], u[i], visit);
        };
        match &mut self.stacks {
            Some(stacks) => each_visit(stacks, t, rows, request),
            None => rows.iter().for_each(|&i| request(i, NO_VISIT)),
        }
    }

    pub fn finish(self) -> Part {
        self.pass.finish()
    }
}

/// What a request is told of its place with reuse off.
pub(super) const NO_VISIT: Visit = Visit { seen: None, place: 0 };

/// What is counted over one thread's requests, one at a time.
pub(super) struct ThreadPass {
    hierarchy: Hierarchy,
    /// All of the thread's requests, for its default stats (with their gaps).
    stats: StatsAcc,
    /// The requests on each volume.
    by_volume: FxHashMap<u32, StatsAcc>,
    /// Per volume: recent request ends, which continuations and near requests follow.
    heads: FxHashMap<u32, Heads>,
    streams: StreamsAcc,
    /// Each top-level state's runs by request class.
    runs: RunsAcc,
    reuse: ReuseAcc,
    reuse_on: bool,
    /// requests' touch counts, as the generator keeps them (with reuse on)
    counts: TouchCounts,
    /// the top-level states, which the counts are kept per
    top: Vec<(u32, u64, u64)>,
    alignment: AlignmentAcc,
    /// The previous request's path of (chain, state), and this one's.
    prev: Vec<(usize, usize)>,
    cur: Vec<(usize, usize)>,
    /// requests counted so far; the first of the thread's last quarter; every how many gaps
    /// one is kept for the fit; the previous request's model time
    seen: usize,
    tail_from: usize,
    gap_stride: usize,
    prev_u: f64,
}

impl ThreadPass {
    /// A pass over a thread of `requests` requests on `volumes` (sorted, distinct).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        volumes: &[u32],
        spans: &[u64],
        levels: u32,
        k: u32,
        reuse_on: bool,
        bounds: &[u64],
        requests: usize,
        gaps_kept: usize,
    ) -> Self {
        let hierarchy = Hierarchy::new(volumes, spans, levels, k, bounds, requests);
        let top = hierarchy.top_states();
        let runs = RunsAcc::new(top.len(), bounds);
        Self {
            counts: if reuse_on {
                TouchCounts::new(top.len())
            } else {
                TouchCounts::default()
            },
            top: if reuse_on { top } else { Vec::new() },
            hierarchy,
            stats: StatsAcc::with_gaps(),
            by_volume: FxHashMap::default(),
            heads: FxHashMap::default(),
            streams: StreamsAcc::new(),
            runs,
            reuse: ReuseAcc::new(bounds),
            reuse_on,
            alignment: AlignmentAcc::default(),
            prev: Vec::new(),
            cur: Vec::new(),
            seen: 0,
            tail_from: requests - requests / 4,
            gap_stride: gap_stride(requests, gaps_kept),
            prev_u: 0.0,
        }
    }

    /// Counts the thread's next request, at model time `u`, told its place by the stacks.
    #[inline]
    pub fn request(&mut self, volume: u32, offset: u64, size: u32, op: u8, u: f64, visit: Visit) {
        let j = self.seen;
        self.seen += 1;
        let gap = (j > 0).then_some(u - self.prev_u);
        self.prev_u = u;
        if op != Op::Flush as u8 {
            self.reuse.touch(j >= self.tail_from, visit.seen.is_none());
        }
        self.observe(volume, offset, size, op, gap, visit, j);
    }
}

impl ThreadPass {
    /// Counts the next request; `gap` is its model-time gap (`None` for the thread's first),
    /// `before` the depth and class of the request it touches again (`None` on a first touch or
    /// with reuse off).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn observe(
        &mut self,
        volume: u32,
        offset: u64,
        size: u32,
        op: u8,
        gap: Option<f64>,
        visit: Visit,
        row: usize,
    ) {
        let before: Seen = visit.seen;
        self.hierarchy.path(volume, offset, &mut self.cur);
        // A flush has no address: it moves the walk (where the trace put it) and counts as an
        // op, but follows no run, re-uses nothing and is placed nowhere.
        let flush = op == Op::Flush as u8;
        let kind = if flush {
            Kind::New
        } else {
            let heads = self.heads.entry(volume).or_default();
            let follows = heads.follows(offset);
            // A re-use starts where an earlier request of the thread on its volume started
            // (the request-keyed unit of libCacheSim's block traces); its depth in the LRU
            // stack of such requests is kept.
            let (kind, consumed) = self.streams.classify(&follows, before.is_some());
            heads.advance(consumed, offset + u64::from(size));
            let top = self.cur[0].1;
            let (_, start, end) = self.hierarchy.top_state(top);
            self.runs
                .request((top, start, end), Runs::slot(op, size), offset, size);
            if kind == Kind::New {
                self.alignment.add(offset);
                self.hierarchy.fresh(&self.cur, offset);
            }
            kind
        };
        if !self.top.is_empty() && !flush {
            let state = state_of(&self.top, volume, offset);
            let rank = self
                .counts
                .touch(state, visit.place, op, size, kind == Kind::Reuse, row);
            if matches!(kind, Kind::New | Kind::Reuse) {
                let cell = (kind == Kind::New).then(|| hot_cell(self.top[state], offset));
                self.counts.placed(state, visit.place, cell);
            }
            if let (Kind::Reuse, Some(touch), Some(rank)) = (kind, before, rank) {
                self.reuse.add(op, &touch, rank);
            }
        }
        let kept = gap.filter(|_| (row - 1).is_multiple_of(self.gap_stride));
        self.stats.add(op, size, kind, kept);
        self.by_volume
            .entry(volume)
            .or_default()
            .add(op, size, kind, None);
        if gap.is_none() {
            self.hierarchy.start(&self.cur);
        } else {
            self.hierarchy.step(&self.prev, &self.cur, op, size, kind, gap);
        }
        std::mem::swap(&mut self.prev, &mut self.cur);
    }

    pub fn finish(self) -> Part {
        let reuse_on = self.reuse_on;
        let gaps = self.stats.gaps.as_deref().unwrap_or(&[]);
        let overall_gap = if gaps.is_empty() {
            Dist::Fixed { value_ns: 0.0 }
        } else {
            gap_dist(gaps)
        };
        let defaults = self.stats.finish(Some(overall_gap));
        let by_volume: FxHashMap<u32, Stats> = if self.by_volume.len() > 1 {
            self.by_volume
                .iter()
                .map(|(&v, acc)| (v, acc.finish(None)))
                .collect()
        } else {
            FxHashMap::default()
        };
        let (mut chain, rest) = self.hierarchy.build(&Fallback {
            volumes: &by_volume,
            thread: &defaults,
        });
        let runs = self.runs.finish();
        for (state, runs) in chain.states.iter_mut().zip(runs) {
            state.runs = runs;
        }
        let mut volumes: Vec<VolumeStats> = rest
            .into_iter()
            .map(|(volume, stats)| VolumeStats { volume, stats })
            .collect();
        volumes.sort_by_key(|v| v.volume);
        Part {
            chain,
            defaults,
            volumes,
            reuse: if reuse_on {
                self.reuse.finish().map(|mut r| {
                    r.population = self.counts.population();
                    r
                })
            } else {
                None
            },
            streams: self.streams.finish(),
            alignment: self.alignment.finish(),
        }
    }
}

/// The cell of a top-level state `(volume, start, end)` ([`crate::model::HOT_CELLS`] equal
/// ones) that `offset` lies in.
fn hot_cell((_, start, end): (u32, u64, u64), offset: u64) -> u16 {
    cell_of(start, end, offset, HOT_CELLS) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Bucket, PROFILE_SEGMENTS};

    #[test]
    fn top_level_stays_are_kept_where_they_are_not_geometric() {
        // two top-level states, [0, 2^29) and [2^29, 2^30); forty visits to each, in turn: A
        // for 1 request three times in four and for 40 the fourth, B for 1 request always (the
        // last B ends the thread)
        let bounds = super::super::reuse::reuse_bounds();
        let mut pass = ThreadPass::new(&[0], &[1 << 30], 1, 2, false, &bounds, 2000, 100);
        let mut i = 0u64;
        let mut request = |offset: u64| {
            pass.request(0, offset, 4096, 0, i as f64, NO_VISIT);
            i += 1;
        };
        for visit in 0..40u64 {
            let a = if visit % 4 == 3 { 40 } else { 1 };
            for j in 0..a {
                request(j * 8192);
            }
            request((1 << 29) + visit * 8192);
        }
        let part = pass.finish();
        let b = |from, to, p| Bucket { from, to, p };
        // quarter-octave buckets: 1 is [1, 2), 40 is [40, 48); a self-loop's odds would give
        // stays of 1 with p 1/10.75, not 3/4
        assert_eq!(
            part.chain.states[0].stays,
            Some(vec![b(1, 2, 0.75), b(40, 48, 0.25)])
        );
        // every stay of B is 1 request, as a state without a self-loop gives anyway
        assert_eq!(part.chain.states[1].stays, None);
        // seven visits are too few to tell
        let mut pass = ThreadPass::new(&[0], &[1 << 30], 1, 2, false, &bounds, 2000, 100);
        let mut i = 0u64;
        for visit in 0..14u64 {
            for _ in 0..(if visit % 2 == 0 {
                1 + 39 * (visit % 4 / 2)
            } else {
                1
            }) {
                pass.request(0, (visit % 2) << 29, 4096, 0, i as f64, NO_VISIT);
                i += 1;
            }
        }
        assert_eq!(pass.finish().chain.states[0].stays, None);
        // geometric visits (a one-in-five chance a request to leave) are what a self-loop
        // gives: not kept
        let mut pass = ThreadPass::new(&[0], &[1 << 30], 1, 2, false, &bounds, 4000, 100);
        let mut rng = crate::random::Prng::new(7);
        let mut i = 0u64;
        for visit in 0..300u64 {
            loop {
                pass.request(0, (visit % 2) << 29, 4096, 0, i as f64, NO_VISIT);
                i += 1;
                if rng.below(5) == 0 {
                    break;
                }
            }
        }
        let part = pass.finish();
        assert_eq!(part.chain.states[0].stays, None);
        assert_eq!(part.chain.states[1].stays, None);
    }

    #[test]
    fn a_state_with_stays_keeps_its_requests_by_part_of_the_thread() {
        // 6,400 requests over two top-level states: A, [0, 2^29), visited 100 requests at a time
        // every other hundred in the thread's second half; B the rest
        let bounds = super::super::reuse::reuse_bounds();
        let n = 6400;
        let mut pass = ThreadPass::new(&[0], &[1 << 30], 1, 2, false, &bounds, n, 100);
        for i in 0..n as u64 {
            let in_a = i >= 3200 && (i / 100) % 2 == 0;
            let offset = if in_a {
                (i % 100) * 8192
            } else {
                (1 << 29) + (i % 50) * 8192
            };
            pass.request(0, offset, 4096, 0, i as f64, NO_VISIT);
        }
        let part = pass.finish();
        // a part is 100 requests: A's are the even parts of the second half, whole
        let a = part.chain.states[0]
            .profile
            .as_ref()
            .expect("A keeps stays, so a profile");
        let want: Vec<u32> = (0..PROFILE_SEGMENTS)
            .map(|k| if k >= 32 && k % 2 == 0 { 100 } else { 0 })
            .collect();
        assert_eq!(a, &want);
        // a state without stays keeps none
        let mut pass = ThreadPass::new(&[0], &[1 << 30], 1, 2, false, &bounds, 1000, 100);
        let mut rng = crate::random::Prng::new(3);
        for i in 0..1000u64 {
            pass.request(0, rng.below(2) << 29, 4096, 0, i as f64, NO_VISIT);
        }
        let part = pass.finish();
        assert!(part
            .chain
            .states
            .iter()
            .all(|s| s.stays.is_none() && s.profile.is_none()));
    }

    #[test]
    fn gap_stride_keeps_at_most_the_gaps_asked() {
        // 999 gaps, 100 kept at most: every 10th (0, 10, ..., 990)
        assert_eq!(gap_stride(1000, 100), 10);
        assert_eq!(gap_stride(1001, 100), 10);
        assert_eq!(gap_stride(1002, 100), 11);
        assert_eq!(gap_stride(5, 100), 1);
        assert_eq!(gap_stride(0, 100), 1);
        let bounds = super::super::reuse::reuse_bounds();
        let mut pass = ThreadPass::new(&[0], &[1 << 30], 1, 4, false, &bounds, 1000, 100);
        for i in 0..1000u64 {
            pass.request(0, i * 4096, 4096, 0, i as f64 * (1.0 + (i % 3) as f64), NO_VISIT);
        }
        let gaps = pass.stats.gaps.as_deref().unwrap();
        assert_eq!(gaps.len(), 100);
        // the kept gaps are those into requests 1, 11, 21, ...: (j·(1 + j%3)) − ((j−1)·(1 + (j−1)%3))
        let gap = |j: f64| j * (1.0 + j % 3.0) - (j - 1.0) * (1.0 + (j - 1.0) % 3.0);
        assert_eq!(gaps[0], gap(1.0));
        assert_eq!(gaps[1], gap(11.0));
        assert_eq!(gaps[99], gap(991.0));
    }
}
