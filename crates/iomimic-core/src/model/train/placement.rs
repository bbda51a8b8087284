//! Where each request was placed relative to the thread's recent requests: after the
//! previous one on its volume, continuing or a little past an older run (the interleaved-stream
//! extension, [`Streams`]), a re-use, or somewhere new (which says how new data is aligned).

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use super::sizes::sizes;
use crate::model::{Sizes, Streams};

/// Recent request ends per volume that continuations and near requests may follow.
pub const HEADS: usize = 1024;
/// Largest forward hole of a near request (Keeton's relaxed runs tolerate the same).
pub const NEAR_GAP: u64 = 64 << 10;
/// Deepest head a request that re-touches an earlier request's start is taken to follow. A run
/// interleaved with a few others resumes a few heads back; in a dense hot set nearly every
/// re-read lands at or a little past *some* recent end, at a depth spread over all [`HEADS`],
/// and is a re-use that only looks like a run (measured: 4–64 tried, docs/model.md).
pub const RETOUCH_RUN_DEPTH: usize = 16;
/// Share of offsets that must be multiples of the alignment random offsets are given.
pub const ALIGNED_SHARE: f64 = 0.95;

/// How a request was placed, in the order the checks are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// starts where the volume's previous request ended
    Sequential,
    /// starts where an older recent request of the volume ended
    Continuation,
    /// starts a little past where a recent request of the volume ended
    Near,
    /// touches a block the thread touched before
    Reuse,
    /// anywhere else
    New,
}

/// Which recent request end of its volume a request follows, if any.
pub(super) enum Follows {
    /// The most recent one.
    Previous,
    /// The end `depth` requests back (2 or more).
    Older(usize),
    /// A hole of `gap` bytes past the end `depth` requests back.
    Near {
        depth: usize,
        gap: u64,
    },
    Nothing,
}

/// One volume's recent request ends, newest last, and a count of each end, sorted.
#[derive(Default)]
pub(super) struct Heads {
    ends: VecDeque<u64>,
    index: BTreeMap<u64, u32>,
}

impl Heads {
    /// The head a request at `offset` follows: an older run of the volume continued is the most
    /// recent head ending exactly here; a near request is a small forward hole past the most
    /// recent head it follows. The sorted index rules most requests out before the heads are
    /// scanned for a depth.
    #[inline]
    pub fn follows(&self, offset: u64) -> Follows {
        let (ends, index) = (&self.ends, &self.index);
        if ends.back() == Some(&offset) {
            return Follows::Previous;
        }
        if index.contains_key(&offset) {
            if let Some(d) = ends.iter().rev().position(|&e| e == offset) {
                return Follows::Older(d + 1);
            }
        }
        let maybe_near = index
            .range(offset.saturating_sub(NEAR_GAP)..offset)
            .next_back()
            .is_some();
        if maybe_near {
            let near = ends
                .iter()
                .rev()
                .position(|&e| e < offset && offset - e <= NEAR_GAP)
                .map(|d| (d + 1, offset - ends[ends.len() - 1 - d]));
            if let Some((depth, gap)) = near {
                return Follows::Near { depth, gap };
            }
        }
        Follows::Nothing
    }

    /// Adds a request ending at `end`; the head it followed (`consumed` requests back) is used
    /// up, as it no longer ends a run, and the oldest goes when [`HEADS`] are kept.
    #[inline]
    pub fn advance(&mut self, consumed: Option<usize>, end: u64) {
        if let Some(depth) = consumed {
            let gone = self
                .ends
                .remove(self.ends.len() - depth)
                .expect("consumed heads exist");
            self.forget(gone);
        }
        if self.ends.len() == HEADS {
            let gone = self.ends.pop_front().expect("a full deque has a front");
            self.forget(gone);
        }
        self.ends.push_back(end);
        *self.index.entry(end).or_default() += 1;
    }

    /// Drops one head ending at `end` from the sorted index.
    fn forget(&mut self, end: u64) {
        if let Some(count) = self.index.get_mut(&end) {
            *count -= 1;
            if *count == 0 {
                self.index.remove(&end);
            }
        }
    }
}

/// How far back the heads that continuations and near requests followed were, and the holes of
/// near requests: the interleaved-stream extension.
pub(super) struct StreamsAcc {
    continuation_depth: Vec<u64>,
    near_depth: Vec<u64>,
    near_gaps: FxHashMap<u32, u64>,
}

impl StreamsAcc {
    pub fn new() -> Self {
        Self {
            continuation_depth: vec![0u64; HEADS + 1],
            near_depth: vec![0u64; HEADS + 1],
            near_gaps: FxHashMap::default(),
        }
    }

    /// How a request was placed (`reused`: it starts where a request of the thread started
    /// before), counting continuations and near requests; and how many heads back the one it
    /// used up is. A re-touch that follows a head deeper than [`RETOUCH_RUN_DEPTH`] is a re-use.
    #[inline]
    pub fn classify(&mut self, follows: &Follows, reused: bool) -> (Kind, Option<usize>) {
        match *follows {
            Follows::Previous => (Kind::Sequential, Some(1)),
            Follows::Older(depth) | Follows::Near { depth, .. } if reused && depth > RETOUCH_RUN_DEPTH => {
                (Kind::Reuse, None)
            }
            Follows::Older(depth) => {
                self.continuation_depth[depth] += 1;
                (Kind::Continuation, Some(depth))
            }
            Follows::Near { depth, gap } => {
                self.near_depth[depth] += 1;
                *self.near_gaps.entry(gap as u32).or_default() += 1;
                (Kind::Near, Some(depth))
            }
            Follows::Nothing if reused => (Kind::Reuse, None),
            Follows::Nothing => (Kind::New, None),
        }
    }

    pub fn finish(&self) -> Streams {
        let depth_p = |counts: &[u64], from: usize| -> Vec<f64> {
            let total: u64 = counts[from..].iter().sum();
            if total == 0 {
                return Vec::new();
            }
            let last = counts.iter().rposition(|&c| c > 0).unwrap_or(from).max(from);
            counts[from..=last]
                .iter()
                .map(|&c| c as f64 / total as f64)
                .collect()
        };
        Streams {
            continuation_depth: depth_p(&self.continuation_depth, 2),
            near_depth: depth_p(&self.near_depth, 1),
            near_gap: if self.near_gaps.is_empty() {
                Sizes {
                    bytes: Vec::new(),
                    p: Vec::new(),
                }
            } else {
                sizes(&self.near_gaps)
            },
        }
    }
}

/// Offsets of new requests by the powers of two they are multiples of: only requests placed
/// afresh say how the workload aligns new data.
#[derive(Default)]
pub(super) struct AlignmentAcc {
    /// `counts[k]`: offsets that are multiples of 2^k
    counts: [u64; 21],
    fresh: u64,
}

impl AlignmentAcc {
    #[inline]
    pub fn add(&mut self, offset: u64) {
        self.fresh += 1;
        for (k, count) in self.counts.iter_mut().enumerate() {
            *count += u64::from(offset.trailing_zeros() as usize >= k);
        }
    }

    /// The largest power of two (up to 1 MiB) that at least [`ALIGNED_SHARE`] of new offsets
    /// are multiples of.
    pub fn finish(&self) -> u64 {
        let enough = (self.fresh as f64 * ALIGNED_SHARE).ceil() as u64;
        1u64 << self.counts.iter().rposition(|&c| c >= enough).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retouch_follows_a_run_only_a_few_heads_back() {
        let mut streams = StreamsAcc::new();
        let deep = RETOUCH_RUN_DEPTH + 1;
        // a re-read of a scan interleaved with a few other requests resumes the scan
        assert_eq!(
            streams.classify(&Follows::Older(3), true),
            (Kind::Continuation, Some(3))
        );
        assert_eq!(
            streams.classify(&Follows::Near { depth: 2, gap: 4096 }, true),
            (Kind::Near, Some(2))
        );
        // a re-read landing at or past a head far back is a re-use, and uses no head up
        assert_eq!(streams.classify(&Follows::Older(deep), true), (Kind::Reuse, None));
        let near = Follows::Near {
            depth: deep,
            gap: 4096,
        };
        assert_eq!(streams.classify(&near, true), (Kind::Reuse, None));
        // a first touch there is still a run, however deep
        assert_eq!(
            streams.classify(&Follows::Older(deep), false),
            (Kind::Continuation, Some(deep))
        );
        assert_eq!(
            streams.classify(&Follows::Previous, true),
            (Kind::Sequential, Some(1))
        );
        // only the runs were counted: two continuations, one near request
        let counted = |c: &[u64]| c.iter().sum::<u64>();
        assert_eq!(counted(&streams.continuation_depth), 2);
        assert_eq!(counted(&streams.near_depth), 1);
    }
}
