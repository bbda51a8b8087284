//! One thread's pass over its requests in order: each request's path of states, how it was
//! placed, and what it adds to the edge that decided it, its volume's stats and the thread's;
//! then the thread's model.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::chain::{Fallback, Hierarchy};
use super::placement::{AlignmentAcc, Heads, Kind, StreamsAcc};
use super::reuse::{reuse_depths, state_of, ReuseAcc, Seen, TouchCounts, Visit};
use super::stats::{gap_dist, StatsAcc};
use crate::model::{Chain, Dist, Reuse, Stats, Streams, VolumeStats};
use crate::trace::TraceView;

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

/// Trains the thread of requests `rows` (in time order) with model times `u`.
pub(super) fn train_thread(
    t: &TraceView<'_>,
    rows: &[usize],
    u: &[f64],
    spans: &[u64],
    levels: u32,
    k: u32,
    reuse_on: bool,
    bounds: &[u64],
) -> Part {
    let mut volumes: Vec<u32> = rows.iter().map(|&i| t.volume[i]).collect();
    volumes.sort_unstable();
    volumes.dedup();
    let mut pass = ThreadPass {
        hierarchy: Hierarchy::new(&volumes, spans, levels, k),
        stats: StatsAcc::with_gaps(),
        by_volume: FxHashMap::default(),
        heads: FxHashMap::default(),
        streams: StreamsAcc::new(),
        reuse: ReuseAcc::new(bounds),
        counts: TouchCounts::default(),
        top: Vec::new(),
        alignment: AlignmentAcc::default(),
        prev: Vec::new(),
        cur: Vec::new(),
    };
    let tail_from = rows.len() - rows.len() / 4;
    let top = pass.hierarchy.top_states();
    if reuse_on {
        pass.counts = TouchCounts::new(top.len());
        pass.top.clone_from(&top);
    }
    std::thread::scope(|scope| {
        // with reuse off no depth is needed: an endless run of `None`
        let mut depths: Box<dyn Iterator<Item = Visit>> = if reuse_on {
            Box::new(reuse_depths(scope, t, rows, &top))
        } else {
            Box::new(std::iter::repeat(Visit { seen: None, place: 0 }))
        };
        for (j, &i) in rows.iter().enumerate() {
            let visit = depths.next().expect("a depth for every row");
            let gap = (j > 0).then(|| u[i] - u[rows[j - 1]]);
            pass.reuse.touch(j >= tail_from, visit.seen.is_none());
            pass.observe(t.volume[i], t.offset[i], t.size[i], t.op[i], gap, visit, j);
        }
    });
    pass.finish(t, rows, reuse_on)
}

/// What is counted over one thread's requests.
struct ThreadPass<'b> {
    hierarchy: Hierarchy,
    /// All of the thread's requests, for its default stats (with their gaps).
    stats: StatsAcc,
    /// The requests on each volume.
    by_volume: FxHashMap<u32, StatsAcc>,
    /// Per volume: recent request ends, which continuations and near requests follow.
    heads: FxHashMap<u32, Heads>,
    streams: StreamsAcc,
    reuse: ReuseAcc<'b>,
    /// requests' touch counts, as the generator keeps them (with reuse on)
    counts: TouchCounts,
    /// the top-level states, which the counts are kept per
    top: Vec<(u32, u64, u64)>,
    alignment: AlignmentAcc,
    /// The previous request's path of (chain, state), and this one's.
    prev: Vec<(usize, usize)>,
    cur: Vec<(usize, usize)>,
}

impl ThreadPass<'_> {
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
        let heads = self.heads.entry(volume).or_default();
        let follows = heads.follows(offset);
        // A re-use starts where an earlier request of the thread on its volume started (the
        // request-keyed unit of libCacheSim's block traces); its depth in the LRU stack of such
        // requests is kept.
        let (kind, consumed) = self.streams.classify(&follows, before.is_some());
        heads.advance(consumed, offset + u64::from(size));
        if kind == Kind::New {
            self.alignment.add(offset);
            self.hierarchy.fresh(&self.cur, offset);
        }
        if !self.top.is_empty() {
            let state = state_of(&self.top, volume, offset);
            let rank = self
                .counts
                .touch(state, visit.place, op, size, kind == Kind::Reuse, row);
            if let (Kind::Reuse, Some(touch), Some(rank)) = (kind, before, rank) {
                self.reuse.add(op, &touch, rank);
            }
        }
        self.stats.add(op, size, kind, gap);
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

    fn finish(mut self, t: &TraceView<'_>, rows: &[usize], reuse_on: bool) -> Part {
        self.hierarchy.start_by_occupancy(t, rows);
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
        let (chain, rest) = self.hierarchy.build(&Fallback {
            volumes: &by_volume,
            thread: &defaults,
        });
        let mut volumes: Vec<VolumeStats> = rest
            .into_iter()
            .map(|(volume, stats)| VolumeStats { volume, stats })
            .collect();
        volumes.sort_by_key(|v| v.volume);
        Part {
            chain,
            defaults,
            volumes,
            reuse: if reuse_on { self.reuse.finish() } else { None },
            streams: self.streams.finish(),
            alignment: self.alignment.finish(),
        }
    }
}
