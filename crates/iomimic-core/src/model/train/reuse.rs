//! Temporal locality (the reuse extension): how far back in the thread's LRU stack of blocks
//! each re-used block was, as a histogram of quarter-octave buckets (step 6 of the training
//! algorithm, [`super`]).

use crate::model::{Reuse, ReuseBucket};
use crate::trace::TraceView;

/// Requests per chunk the reuse-depth pass hands over.
const DEPTH_CHUNK: usize = 1 << 16;

/// Quarter-octave bucket bounds for reuse times: 1, 2, ..., 8, 10, 12, 14, 16, 20, ...
pub(super) fn reuse_bounds() -> Vec<u64> {
    let mut b = vec![1u64];
    while *b.last().expect("non-empty") < 1 << 40 {
        let last = *b.last().expect("non-empty");
        b.push((last + 1).max((last as f64 * 2f64.powf(0.25)).round() as u64));
    }
    b
}

/// Each request's LRU stack depth (of the 4 KiB block it starts in, among the blocks the
/// thread's requests started in), or `None` on a first touch, in row order. The stack is the
/// costliest part of training and needs nothing else, so it runs on a core of its own, a
/// chunk ahead of the loop that reads it.
pub(super) fn reuse_depths<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    t: &'scope TraceView<'_>,
    rows: &'scope [usize],
) -> impl Iterator<Item = Option<u64>> + 'scope {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Option<u64>>>(8);
    scope.spawn(move || {
        let mut stack = crate::analyze::lru_stack::Stack::new(rows.len());
        for chunk in rows.chunks(DEPTH_CHUNK) {
            let depths = chunk
                .iter()
                .map(|&i| stack.touch((t.volume[i], t.offset[i] / 4096)))
                .collect();
            if tx.send(depths).is_err() {
                break;
            }
        }
    });
    rx.into_iter().flatten()
}

/// Re-uses counted by the bucket of their depth.
pub(super) struct ReuseAcc<'b> {
    bounds: &'b [u64],
    counts: Vec<u64>,
}

impl<'b> ReuseAcc<'b> {
    /// Buckets between consecutive `bounds` (from [`reuse_bounds`]).
    pub fn new(bounds: &'b [u64]) -> Self {
        Self {
            bounds,
            counts: vec![0u64; bounds.len()],
        }
    }

    #[inline]
    pub fn add(&mut self, depth: u64) {
        self.counts[self.bounds.partition_point(|&b| b <= depth) - 1] += 1;
    }

    /// The histogram, `None` without a re-use.
    pub fn finish(&self) -> Option<Reuse> {
        let total: u64 = self.counts.iter().sum();
        let buckets: Vec<ReuseBucket> = self
            .counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(b, &c)| ReuseBucket {
                from: self.bounds[b],
                to: self.bounds[b + 1],
                p: c as f64 / total as f64,
            })
            .collect();
        (!buckets.is_empty()).then_some(Reuse { buckets })
    }
}
