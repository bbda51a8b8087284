//! A disk's queue of I/Os waiting while it serves one, in O(log n) per I/O however deep it
//! grows (an open-loop replay onto a disk too slow for it queues the whole trace).
//!
//! Demand I/Os are served before background ones (prefetches, destages). Within each, FIFO
//! takes the oldest; SSTF the one whose cylinder is nearest the head's, the oldest among equals
//! — the same choices a scan of the whole queue makes, found by an ordered-map search. SPTF
//! the one the head reaches soonest (seek and rotation, which only the disk can say), among
//! the oldest [`SPTF_WINDOW`]: a drive's command queue holds that many, and the bound keeps a
//! deep queue linear.

use std::collections::{BTreeMap, VecDeque};

use super::super::device::Io;
use super::super::Scheduler;

/// How many of the oldest queued I/Os shortest-positioning-time-first chooses among (the
/// command queue of a SATA or SAS drive).
pub(super) const SPTF_WINDOW: usize = 32;

#[derive(Debug, Clone)]
pub(super) struct DiskQueue {
    scheduler: Scheduler,
    /// Arrival order, to break ties as the oldest first.
    seq: u64,
    /// FIFO: demand, then background.
    fifo: [VecDeque<Io>; 2],
    /// SSTF: (cylinder, arrival) → I/O, demand then background.
    sstf: [BTreeMap<(u64, u64), Io>; 2],
}

impl DiskQueue {
    pub(super) fn new(scheduler: Scheduler) -> Self {
        Self {
            scheduler,
            seq: 0,
            fifo: [VecDeque::new(), VecDeque::new()],
            sstf: [BTreeMap::new(), BTreeMap::new()],
        }
    }

    /// Queues `io`, which starts at `cylinder`.
    pub(super) fn push(&mut self, io: Io, cylinder: u64) {
        let class = usize::from(io.background);
        match self.scheduler {
            Scheduler::Fifo | Scheduler::Sptf => self.fifo[class].push_back(io),
            Scheduler::Sstf => {
                self.seq += 1;
                self.sstf[class].insert((cylinder, self.seq), io);
            }
        }
    }

    /// The next I/O to serve, the head being at cylinder `here`; `positioning` is the time
    /// the head needs to reach an I/O (for SPTF).
    pub(super) fn pop(&mut self, here: u64, positioning: impl Fn(&Io) -> f64) -> Option<Io> {
        match self.scheduler {
            Scheduler::Fifo => self.fifo.iter_mut().find_map(VecDeque::pop_front),
            Scheduler::Sptf => {
                let class = self.fifo.iter_mut().find(|q| !q.is_empty())?;
                let best = (0..class.len().min(SPTF_WINDOW))
                    .min_by(|&a, &b| positioning(&class[a]).total_cmp(&positioning(&class[b])))?;
                class.remove(best)
            }
            Scheduler::Sstf => {
                let class = self.sstf.iter_mut().find(|m| !m.is_empty())?;
                // the nearest at or below the head and the nearest at or above it; each the
                // oldest of its cylinder
                let below = class.range(..(here + 1, 0)).next_back().map(|(&(c, _), _)| c);
                let below = below.and_then(|c| class.range((c, 0)..).next().map(|(&k, _)| k));
                let above = class.range((here, 0)..).next().map(|(&k, _)| k);
                let key = match (below, above) {
                    (Some(b), Some(a)) => {
                        let (db, da) = (here - b.0, a.0 - here);
                        if db < da || (db == da && b.1 < a.1) {
                            b
                        } else {
                            a
                        }
                    }
                    (Some(k), None) | (None, Some(k)) => k,
                    (None, None) => return None,
                };
                class.remove(&key)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(id: usize, background: bool) -> Io {
        Io {
            id,
            offset: 0,
            size: 512,
            write: false,
            background,
        }
    }

    /// What a scan of the whole queue picks, as the disk did before: (background, distance)
    /// least, the oldest among equals.
    fn scan(queue: &[(Io, u64)], here: u64) -> Option<usize> {
        (0..queue.len()).min_by_key(|&q| (queue[q].0.background, queue[q].1.abs_diff(here)))
    }

    #[test]
    fn sstf_picks_what_a_scan_picks() {
        let mut state = 12345u64;
        let mut rand = |n: u64| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (state >> 33) % n
        };
        let mut q = DiskQueue::new(Scheduler::Sstf);
        let mut reference: Vec<(Io, u64)> = Vec::new();
        let mut here = 50;
        for step in 0..5000 {
            if rand(3) > 0 || reference.is_empty() {
                let i = io(step, rand(5) == 0);
                let cyl = rand(100);
                q.push(i, cyl);
                reference.push((i, cyl));
            } else {
                let want = scan(&reference, here).map(|k| reference.remove(k));
                let got = q.pop(here, |_| 0.0);
                assert_eq!(got.map(|g| g.id), want.map(|w| w.0.id), "step {step}");
                here = want.map_or(here, |w| w.1);
            }
        }
    }

    #[test]
    fn fifo_serves_demand_first_in_arrival_order() {
        let mut q = DiskQueue::new(Scheduler::Fifo);
        for (id, bg) in [(0, true), (1, false), (2, true), (3, false)] {
            q.push(io(id, bg), 0);
        }
        let order: Vec<usize> = std::iter::from_fn(|| q.pop(0, |_| 0.0)).map(|i| i.id).collect();
        assert_eq!(order, [1, 3, 0, 2]);
    }
}

#[test]
fn sptf_takes_the_nearest_in_time_among_the_oldest() {
    let mut q = DiskQueue::new(Scheduler::Sptf);
    // positioning times by offset: the I/O at offset 5 is nearest; one past the window is
    // nearer still but not yet in the drive's queue
    for k in 0..=SPTF_WINDOW as u64 {
        let mut i = tests_io(k as usize);
        i.offset = if k == SPTF_WINDOW as u64 {
            0
        } else {
            10 + k.abs_diff(5)
        };
        q.push(i, 0);
    }
    let time = |i: &Io| i.offset as f64;
    assert_eq!(q.pop(0, time).map(|i| i.id), Some(5));
    // the window moves on as I/Os leave it: now the one at offset 0 is in it
    assert_eq!(q.pop(0, time).map(|i| i.id), Some(SPTF_WINDOW));
}

#[cfg(test)]
fn tests_io(id: usize) -> Io {
    Io {
        id,
        offset: 0,
        size: 512,
        write: false,
        background: false,
    }
}
