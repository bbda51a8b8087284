//! A long computation's progress, read from another thread while it runs (a progress bar),
//! and the flag that asks it to stop (Ctrl-C). The work counts in units it names (requests
//! simulated, models tried) and checks the flag between units.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A per-request loop reports and checks once per this many units: an atomic add per request
/// would cost more than some loops' own work.
pub const CHUNK: usize = 1 << 16;

#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    stop: AtomicBool,
}

impl Progress {
    /// Units of work done so far, and in all (0 while unknown).
    pub fn get(&self) -> (u64, u64) {
        (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }

    pub fn add_total(&self, units: u64) {
        self.total.fetch_add(units, Ordering::Relaxed);
    }

    pub fn advance(&self, units: u64) {
        self.done.fetch_add(units, Ordering::Relaxed);
    }

    /// In a loop over units, `i` counting from 0: after every [`CHUNK`]th unit, counts the
    /// chunk and checks for a stop. [`ticked`](Self::ticked) counts what is left at the end.
    #[inline]
    pub fn tick(&self, i: usize) -> crate::error::Result<()> {
        if (i + 1).is_multiple_of(CHUNK) {
            self.advance(CHUNK as u64);
            self.check()
        } else {
            Ok(())
        }
    }

    /// Counts the units of a loop of `n` past its last whole chunk (see [`tick`](Self::tick)).
    pub fn ticked(&self, n: usize) {
        self.advance((n % CHUNK) as u64);
    }

    /// All of the work is done (a search that stops early skips the rest).
    pub fn complete(&self) {
        self.done
            .store(self.total.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Asks the work to stop at its next check.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// `Err(Interrupted)` once [`stop`](Self::stop) was called.
    pub fn check(&self) -> crate::error::Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            Err(crate::error::Error::Interrupted)
        } else {
            Ok(())
        }
    }
}
