//! Temporal locality (the reuse extension): how far back in the thread's LRU stack of requests
//! (keyed by volume and start offset, as libCacheSim keys block traces) each re-used request
//! was, in quarter-octave buckets, by the re-using request's op and the re-used request's op
//! and size class; and how much less often the thread placed requests afresh at its end (step 6
//! of the training algorithm, [`super`]).

use rustc_hash::FxHashMap;

use crate::model::{
    request_class as class_of, Reuse, ReuseBucket, ReuseClass, REQUEST_CLASSES as CLASSES, SIZE_CLASSES,
};
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

/// A request touched before: its depth in the LRU stack of the requests of its previous
/// touch's class and its top-level state (1 = the most recently used of them), and that class.
pub(super) type Seen = Option<(u64, u8)>;

/// Each request's [`Seen`], in row order: one LRU stack per top-level state of `top` and class,
/// a request moving to the stack of its new class when touched again. Stacks are kept per
/// state so that a re-use, generated where the chain is, re-uses what that state re-used (a
/// journal never re-read stays so beside a hot set re-read often). The stacks are the costliest
/// part of training and need nothing else, so they run on a core of their own, a chunk ahead of
/// the loop that reads them.
pub(super) fn reuse_depths<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    t: &'scope TraceView<'_>,
    rows: &'scope [usize],
    top: &'scope [(u32, u64, u64)],
) -> impl Iterator<Item = Seen> + 'scope {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Seen>>(8);
    scope.spawn(move || {
        use crate::analyze::lru_stack::Stack;
        let mut stacks: Vec<Option<Stack>> = (0..top.len() * CLASSES).map(|_| None).collect();
        let mut class: FxHashMap<(u32, u64), u8> = FxHashMap::default();
        class.reserve(rows.len().min(1 << 24));
        for chunk in rows.chunks(DEPTH_CHUNK) {
            let depths = chunk
                .iter()
                .map(|&i| {
                    let key = (t.volume[i], t.offset[i]);
                    let group = state_of(top, key.0, key.1) * CLASSES;
                    let again = class.contains_key(&key);
                    let now = class_of(t.op[i], t.size[i], again);
                    let seen = class.insert(key, now).map(|before| {
                        let stack = stacks[group + usize::from(before)]
                            .as_mut()
                            .expect("a classed key is stacked");
                        let depth = stack.remove(key).expect("a classed key is stacked");
                        (depth, before)
                    });
                    stacks[group + usize::from(now)]
                        .get_or_insert_with(|| Stack::new(0))
                        .touch(key);
                    seen
                })
                .collect();
            if tx.send(depths).is_err() {
                break;
            }
        }
    });
    rx.into_iter().flatten()
}

/// The state of `states` (sorted, covering their volumes) holding `offset` of `volume`.
#[inline]
pub(crate) fn state_of(states: &[(u32, u64, u64)], volume: u32, offset: u64) -> usize {
    states
        .partition_point(|&(v, start, _)| (v, start) <= (volume, offset))
        .saturating_sub(1)
}

/// Re-uses counted by the bucket of their depth, overall and by class; and fresh touches.
pub(super) struct ReuseAcc<'b> {
    bounds: &'b [u64],
    counts: Vec<u64>,
    /// (op, class re-used) → counts by bucket
    classes: FxHashMap<(u8, u8), Vec<u64>>,
    /// Requests, and those touching no earlier request, in the whole thread and its last
    /// quarter.
    touches: [u64; 2],
    first_touches: [u64; 2],
}

impl<'b> ReuseAcc<'b> {
    /// Buckets between consecutive `bounds` (from [`reuse_bounds`]).
    pub fn new(bounds: &'b [u64]) -> Self {
        Self {
            bounds,
            counts: vec![0u64; bounds.len()],
            classes: FxHashMap::default(),
            touches: [0; 2],
            first_touches: [0; 2],
        }
    }

    /// A request; `tail`: it is in the thread's last quarter; `first`: it touched no earlier
    /// request.
    #[inline]
    pub fn touch(&mut self, tail: bool, first: bool) {
        for (k, on) in [(0, true), (1, tail)] {
            if on {
                self.touches[k] += 1;
                self.first_touches[k] += u64::from(first);
            }
        }
    }

    /// A re-use by an `op` request of one `depth` back among the requests of `class`.
    #[inline]
    pub fn add(&mut self, op: u8, depth: u64, class: u8) {
        let b = self.bounds.partition_point(|&b| b <= depth) - 1;
        self.counts[b] += 1;
        let key = (op.min(1), class);
        self.classes
            .entry(key)
            .or_insert_with(|| vec![0; self.bounds.len()])[b] += 1;
    }

    fn buckets(&self, counts: &[u64]) -> Vec<ReuseBucket> {
        let total: u64 = counts.iter().sum();
        counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(b, &c)| ReuseBucket {
                from: self.bounds[b],
                to: self.bounds[b + 1],
                p: c as f64 / total as f64,
            })
            .collect()
    }

    /// The histograms, `None` without a re-use.
    pub fn finish(&self) -> Option<Reuse> {
        let buckets = self.buckets(&self.counts);
        if buckets.is_empty() {
            return None;
        }
        let mut keys: Vec<&(u8, u8)> = self.classes.keys().collect();
        keys.sort_unstable();
        let per_op = |op: u8| -> u64 {
            self.classes
                .iter()
                .filter(|(k, _)| k.0 == op)
                .map(|(_, c)| c.iter().sum::<u64>())
                .sum()
        };
        let classes = keys
            .into_iter()
            .map(|&(op, class)| {
                let counts = &self.classes[&(op, class)];
                let n = SIZE_CLASSES.len() as u8;
                ReuseClass {
                    op,
                    last_op: (class / n) % 2,
                    max_size: SIZE_CLASSES[usize::from(class % n)],
                    again: class >= 2 * n,
                    p: counts.iter().sum::<u64>() as f64 / per_op(op) as f64,
                    buckets: self.buckets(counts),
                }
            })
            .collect();
        let share = |k: usize| self.first_touches[k] as f64 / self.touches[k].max(1) as f64;
        let tail_fresh = (self.touches[1] > 0 && share(0) > 0.0).then(|| (share(1) / share(0)).min(1.0));
        Some(Reuse {
            buckets,
            classes,
            tail_fresh,
        })
    }
}
