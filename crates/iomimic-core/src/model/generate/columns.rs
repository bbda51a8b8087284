//! The generated requests as output columns: one set per thread, filled in parallel pieces
//! once their times are on the output clock, then merged in time order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::model::Thread;
use crate::random::unit_hash;
use crate::trace::Trace;

/// One thread's generated requests as columns, times on the output clock.
pub(super) struct Columns {
    pub ts: Vec<u64>,
    offset: Vec<u64>,
    size: Vec<u32>,
    op: Vec<u8>,
    volume: Vec<u32>,
}

/// Slots of a [`Columns`] that one piece of work fills.
pub(super) struct Slots<'a> {
    pub ts: &'a mut [u64],
    pub offset: &'a mut [u64],
    pub size: &'a mut [u32],
    pub op: &'a mut [u8],
    pub volume: &'a mut [u32],
}

impl Columns {
    pub fn zeroed(n: u64) -> Self {
        let n = usize::try_from(n).expect("request counts fit memory");
        Self {
            ts: vec![0; n],
            offset: vec![0; n],
            size: vec![0; n],
            op: vec![0; n],
            volume: vec![0; n],
        }
    }

    /// Columns whose times are given (`ts`: arrival times in model ns), the rest zeroed.
    pub fn with_times(ts: Vec<u64>) -> Self {
        let n = ts.len();
        Self {
            ts,
            offset: vec![0; n],
            size: vec![0; n],
            op: vec![0; n],
            volume: vec![0; n],
        }
    }

    pub fn len(&self) -> usize {
        self.ts.len()
    }

    pub fn truncate(&mut self, n: usize) {
        self.ts.truncate(n);
        self.offset.truncate(n);
        self.size.truncate(n);
        self.op.truncate(n);
        self.volume.truncate(n);
    }

    pub fn slots(&mut self) -> Slots<'_> {
        Slots {
            ts: &mut self.ts,
            offset: &mut self.offset,
            size: &mut self.size,
            op: &mut self.op,
            volume: &mut self.volume,
        }
    }
}

impl<'a> Slots<'a> {
    /// The first `n` slots, and the rest.
    pub fn split_at(self, n: usize) -> (Slots<'a>, Slots<'a>) {
        let (ts, ts_rest) = self.ts.split_at_mut(n);
        let (offset, offset_rest) = self.offset.split_at_mut(n);
        let (size, size_rest) = self.size.split_at_mut(n);
        let (op, op_rest) = self.op.split_at_mut(n);
        let (volume, volume_rest) = self.volume.split_at_mut(n);
        (
            Slots {
                ts,
                offset,
                size,
                op,
                volume,
            },
            Slots {
                ts: ts_rest,
                offset: offset_rest,
                size: size_rest,
                op: op_rest,
                volume: volume_rest,
            },
        )
    }
}

/// The stream each of a thread's requests is given: the thread's, or (a thread trained from
/// streams that share data) one of its members' by share, drawn from the request's place in
/// the thread, so that a long generation cut into slices labels each request as a whole one.
pub(super) enum Label {
    One(u32),
    Members {
        streams: Vec<u32>,
        /// cumulative shares
        upto: Vec<f64>,
        seed: u64,
        /// the thread's requests before this slice's first
        first: u64,
    },
}

impl Label {
    pub fn new(thread: &Thread, seed: u64, first: u64) -> Self {
        if thread.members.is_empty() {
            return Label::One(thread.stream);
        }
        let total: f64 = thread.members.iter().map(|&(_, p)| p).sum();
        let mut acc = 0.0;
        Label::Members {
            streams: thread.members.iter().map(|&(s, _)| s).collect(),
            upto: thread
                .members
                .iter()
                .map(|&(_, p)| {
                    acc += p / total;
                    acc
                })
                .collect(),
            seed,
            first,
        }
    }

    /// The stream of the slice's `j`-th request of the thread.
    #[inline]
    fn of(&self, j: usize) -> u32 {
        match self {
            Label::One(s) => *s,
            Label::Members {
                streams,
                upto,
                seed,
                first,
            } => {
                let u = unit_hash(*seed, first + j as u64);
                streams[upto.partition_point(|&c| c <= u).min(streams.len() - 1)]
            }
        }
    }
}

/// Appends the threads' columns to `out` in time order (ties: the lower thread first).
pub(super) fn merge_threads(out: &mut Trace, mut columns: Vec<Columns>, labels: &[Label]) {
    if columns.len() == 1 {
        let c = columns.pop().expect("one thread");
        out.stream = (0..c.len()).map(|j| labels[0].of(j)).collect();
        (out.ts_ns, out.offset, out.size, out.op, out.volume) = (c.ts, c.offset, c.size, c.op, c.volume);
        return;
    }
    out.reserve(columns.iter().map(Columns::len).sum());
    let mut next = vec![0usize; columns.len()];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.len() > 0)
        .map(|(i, c)| Reverse((c.ts[0], i)))
        .collect();
    while let Some(Reverse((ts, i))) = heap.pop() {
        let (c, j) = (&columns[i], next[i]);
        out.ts_ns.push(ts);
        out.offset.push(c.offset[j]);
        out.size.push(c.size[j]);
        out.op.push(c.op[j]);
        out.volume.push(c.volume[j]);
        out.stream.push(labels[i].of(j));
        next[i] += 1;
        if let Some(&t) = c.ts.get(j + 1) {
            heap.push(Reverse((t, i)));
        }
    }
}
