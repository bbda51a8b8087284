//! Runs as objects: per top-level state and request class (op, size class), the runs its
//! requests make — each request starting where the previous request of a recent run of the
//! class ended — with how long each ran and where it started (afresh, or where an earlier run
//! of the class started: a re-scan).
//!
//! The edges place requests one at a time, so a run of a few hundred scan reads breaks
//! wherever the walk enters the state at another leaf or takes a rare edge, and each break
//! starts somewhere new; the trace's scans instead re-start where earlier scans started and
//! run on past them (docs/model.md, Extensions: runs).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::reuse::buckets_of;
use super::sizes::sizes as size_shares;
use crate::model::{
    cell_of, Runs, MAX_RUN_ALIGNMENT, MAX_RUN_SEQUENCE, RUN_CELLS, RUN_SLOTS as SLOTS, SIZE_CLASSES,
};

/// Recent runs of a class a request may continue: a scan interleaved with a few others of its
/// class (and any number of other requests) resumes a few runs back.
const RUN_HEADS: usize = 16;
/// Fewest requests of a class in a state for its runs to be kept.
const MIN_RUN_REQUESTS: u64 = 64;
/// Fewest requests per run, on average, for a class's runs to be kept: below it the class is
/// mostly single requests, which the edges place as well as runs would.
const MIN_MEAN_RUN: f64 = 16.0;
/// A class is given up (its starts forgotten, nothing more counted) once it has made this
/// many runs at under 2 requests each: a random class, which would otherwise hold every place
/// it touched.
const GIVE_UP_RUNS: u64 = 4096;

/// Where a run started: afresh in a cell of the state, or where the k-th fresh run did.
#[derive(Clone, Copy)]
enum Start {
    Fresh(u32),
    Restart(u32),
}

/// A run still open to continuation.
#[derive(Clone, Copy)]
struct Head {
    end: u64,
    length: u64,
    start: Start,
    /// Its place in the class's sequence, if among the first [`MAX_RUN_SEQUENCE`] runs.
    order: Option<usize>,
}

/// One class's runs in one top-level state.
#[derive(Default, Clone)]
struct ClassRuns {
    /// Recent runs, newest last.
    heads: VecDeque<Head>,
    /// Where runs started afresh, each with its ordinal among them.
    starts: FxHashMap<u64, u32>,
    /// Every fresh start's offset OR-ed (its trailing zeros give the starts' alignment).
    offsets_or: u64,
    /// Finished runs: fresh ones by (length bucket, cell), restarts by length bucket.
    fresh: FxHashMap<(usize, u32), u64>,
    restarts: FxHashMap<usize, u64>,
    /// The first runs in order, `[start, length]` as [`Runs::sequence`] keeps them.
    sequence: Vec<[u64; 2]>,
    runs: u64,
    requests: u64,
    sizes: FxHashMap<u32, u64>,
    given_up: bool,
}

impl ClassRuns {
    /// A run is over: counted by its length's bucket of `bounds`.
    fn close(&mut self, h: Head, bounds: &[u64]) {
        let b = (bounds.partition_point(|&x| x <= h.length) - 1).min(bounds.len() - 2);
        match h.start {
            Start::Fresh(cell) => *self.fresh.entry((b, cell)).or_default() += 1,
            Start::Restart(_) => *self.restarts.entry(b).or_default() += 1,
        }
        if let Some(i) = h.order {
            self.sequence[i][1] = h.length;
        }
    }
}

/// The runs of a thread's requests, per top-level state and class slot ([`Runs::slot`]).
pub(super) struct RunsAcc {
    classes: Vec<Option<Box<ClassRuns>>>,
    bounds: Vec<u64>,
}

impl RunsAcc {
    /// Runs over `states` top-level states, lengths counted in the buckets of `bounds`.
    pub fn new(states: usize, bounds: &[u64]) -> Self {
        Self {
            classes: (0..states * SLOTS).map(|_| None).collect(),
            bounds: bounds.to_vec(),
        }
    }

    /// A request of class `slot` ([`Runs::slot`]) at `offset` in top-level state `state`,
    /// which spans `[from, to)`.
    #[inline]
    pub fn request(&mut self, (state, from, to): (usize, u64, u64), slot: usize, offset: u64, size: u32) {
        let c = self.classes[state * SLOTS + slot].get_or_insert_with(Box::default);
        if c.given_up {
            return;
        }
        c.requests += 1;
        *c.sizes.entry(size).or_default() += 1;
        let end = offset + u64::from(size);
        if let Some(at) = c.heads.iter().rposition(|h| h.end == offset) {
            let mut h = c.heads.remove(at).expect("found");
            h.length += 1;
            h.end = end;
            c.heads.push_back(h);
            return;
        }
        let fresh = c.starts.len() as u32;
        let start = match c.starts.entry(offset) {
            std::collections::hash_map::Entry::Occupied(e) => Start::Restart(*e.get()),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(fresh);
                c.offsets_or |= offset;
                Start::Fresh(cell_of(from, to, offset, RUN_CELLS) as u32)
            }
        };
        let order = (c.sequence.len() < MAX_RUN_SEQUENCE).then(|| {
            c.sequence.push(match start {
                Start::Fresh(cell) => [u64::from(cell), 1],
                Start::Restart(k) => [RUN_CELLS + u64::from(k), 1],
            });
            c.sequence.len() - 1
        });
        c.runs += 1;
        if c.heads.len() == RUN_HEADS {
            let h = c.heads.pop_front().expect("full");
            c.close(h, &self.bounds);
        }
        c.heads.push_back(Head {
            end,
            length: 1,
            start,
            order,
        });
        if c.runs >= GIVE_UP_RUNS && c.requests < 2 * c.runs {
            **c = ClassRuns {
                given_up: true,
                ..ClassRuns::default()
            };
        }
    }

    /// Per top-level state, the classes whose runs are long enough to keep.
    pub fn finish(&self) -> Vec<Option<Vec<Runs>>> {
        let mut out: Vec<Option<Vec<Runs>>> = vec![None; self.classes.len() / SLOTS];
        for (i, c) in self.classes.iter().enumerate() {
            let Some(c) = c.as_deref() else { continue };
            if c.given_up
                || c.requests < MIN_RUN_REQUESTS
                || (c.requests as f64) < MIN_MEAN_RUN * c.runs as f64
            {
                continue;
            }
            // the runs still open end with the thread
            let mut c = c.clone();
            while let Some(h) = c.heads.pop_front() {
                c.close(h, &self.bounds);
            }
            let mut fresh: Vec<[u64; 4]> = c
                .fresh
                .iter()
                .map(|(&(b, cell), &n)| [u64::from(cell), self.bounds[b], self.bounds[b + 1], n])
                .collect();
            fresh.sort_unstable_by_key(|&[cell, from, ..]| (from, cell));
            let mut restarts = vec![0.0; self.bounds.len() - 1];
            for (&b, &n) in &c.restarts {
                restarts[b] = n as f64;
            }
            let restarted: f64 = restarts.iter().sum();
            let slot = i % SLOTS;
            out[i / SLOTS].get_or_insert_with(Vec::new).push(Runs {
                op: (slot / SIZE_CLASSES.len()) as u8,
                size_class: (slot % SIZE_CLASSES.len()) as u8,
                sizes: size_shares(&c.sizes),
                fresh,
                restart: restarted / c.runs as f64,
                restarts: buckets_of(&self.bounds, restarts.into_iter()),
                cells: RUN_CELLS,
                alignment: if c.offsets_or == 0 {
                    MAX_RUN_ALIGNMENT
                } else {
                    (1u64 << c.offsets_or.trailing_zeros()).min(MAX_RUN_ALIGNMENT)
                },
                sequence: c.sequence,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::train::reuse::reuse_bounds;

    const STATE: (usize, u64, u64) = (0, 0, 1 << 32);

    #[test]
    fn interleaved_runs_and_restarts_are_counted() {
        let mut acc = RunsAcc::new(2, &reuse_bounds());
        let slot = Runs::slot(0, 65536);
        // run A: 40 requests from 0; run B: 30 from 1 GiB + 64 KiB, interleaved with A; then
        // A's start again for 20 (a re-scan)
        let b = (1 << 30) + 65536;
        for i in 0..40u64 {
            acc.request(STATE, slot, i * 65536, 65536);
            if i < 30 {
                acc.request(STATE, slot, b + i * 65536, 65536);
            }
        }
        for i in 0..20u64 {
            acc.request(STATE, slot, i * 65536, 65536);
        }
        let runs = acc.finish();
        assert!(runs[1].is_none());
        let r = &runs[0].as_ref().expect("kept")[0];
        assert_eq!((r.op, r.size_class), (0, 2));
        assert!((r.restart - 1.0 / 3.0).abs() < 1e-12);
        // in order: A afresh in cell 0 for 40, B afresh in its cell (a quarter of the way) for
        // 30, A's start again
        let cell_b = RUN_CELLS / 4;
        assert_eq!(r.sequence, vec![[0, 40], [cell_b, 30], [RUN_CELLS, 20]]);
        // the fresh runs by cell and length bucket, the restart by its length
        assert_eq!(r.fresh.len(), 2);
        assert_eq!((r.fresh[0][0], r.fresh[0][3]), (cell_b, 1));
        assert!(r.fresh[0][1] <= 30 && 30 < r.fresh[0][2]);
        assert!(r.fresh[1][1] <= 40 && 40 < r.fresh[1][2]);
        assert_eq!(r.restarts.len(), 1);
        assert!(r.restarts[0].from <= 20 && 20 < r.restarts[0].to);
        assert_eq!(r.alignment, 65536);
        assert_eq!(r.sizes.bytes, vec![65536]);
    }

    #[test]
    fn short_runs_are_not_kept() {
        let mut acc = RunsAcc::new(1, &reuse_bounds());
        let slot = Runs::slot(1, 4096);
        for i in 0..200u64 {
            // pairs of adjacent requests, each pair somewhere new
            acc.request(STATE, slot, i * (1 << 20), 4096);
            acc.request(STATE, slot, i * (1 << 20) + 4096, 4096);
        }
        assert!(acc.finish()[0].is_none());
    }

    #[test]
    fn a_random_class_is_given_up_and_holds_no_places() {
        let mut acc = RunsAcc::new(1, &reuse_bounds());
        let slot = Runs::slot(0, 4096);
        for i in 0..GIVE_UP_RUNS + 10 {
            acc.request(STATE, slot, (i * 7919 % 100_000) * (1 << 20), 4096);
        }
        let c = acc.classes[slot].as_deref().expect("seen");
        assert!(c.given_up && c.starts.is_empty() && c.sequence.is_empty());
        assert!(acc.finish()[0].is_none());
    }
}
