//! The drive's own event queue: times at which a die, a bus or an arriving command needs it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    /// a die finished its operation
    Die(u32),
    /// a channel's bus finished a transfer
    Bus(u32),
    /// a host command (and a write's data) reached the drive's controller
    Arrive(u32),
}

/// Events by time, ties in the order pushed. Times are non-negative, so their bit patterns
/// order as the numbers do.
#[derive(Default)]
pub(super) struct Events {
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
}

impl Events {
    pub(super) fn push(&mut self, time: f64, event: Event) {
        self.seq += 1;
        self.heap
            .push(Reverse((time.max(0.0).to_bits(), self.seq, event)));
    }

    pub(super) fn next_time(&self) -> Option<f64> {
        self.heap.peek().map(|Reverse((t, _, _))| f64::from_bits(*t))
    }

    pub(super) fn pop(&mut self) -> Option<(f64, Event)> {
        self.heap.pop().map(|Reverse((t, _, e))| (f64::from_bits(t), e))
    }
}
