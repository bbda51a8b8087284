//! The drive's DRAM write cache: the pages written recently, by logical page, with the sectors
//! each holds and the program still carrying it to flash.
//!
//! ## Algorithm
//! A write enters the cache page by page (sectors merged into what the page holds) and leaves
//! for flash at once; a rewrite of a page whose program has not started joins that program. A
//! read whose sectors the cache holds is served from it. Pages whose program has completed are
//! dropped least recently written first once the cache is full; pages still on their way stay.
//!
//!
//! The data itself moves through the cache's DRAM ([`Dram`]) one access at a time: a write's
//! data going in, a read hit's coming out, each a fixed access time plus its bytes at the
//! DRAM's rate, after the accesses before it. MQSim's data cache works so (one DRAM channel,
//! requests served in turn); a write is acknowledged once its data is in.
//!
//! ## Complexity
//! A hash-map access per page, amortised constant eviction; constant per DRAM access.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::flash::NONE;

struct Entry {
    mask: u64,
    /// the program carrying the page to flash, while it has not completed
    program: u32,
    stamp: u64,
}

pub(super) struct WriteCache {
    capacity: usize,
    pages: FxHashMap<u64, Entry>,
    /// (page, stamp) in write order; stale stamps are skipped
    order: VecDeque<(u64, u64)>,
    stamp: u64,
}

impl WriteCache {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            pages: FxHashMap::default(),
            order: VecDeque::new(),
            stamp: 0,
        }
    }

    pub(super) fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Whether the cache holds every sector of `mask` of page `lpn`.
    pub(super) fn holds(&self, lpn: u64, mask: u64) -> bool {
        self.pages.get(&lpn).is_some_and(|e| e.mask & mask == mask)
    }

    /// The program still carrying page `lpn` to flash, if any.
    pub(super) fn program(&self, lpn: u64) -> Option<u32> {
        self.pages.get(&lpn).map(|e| e.program).filter(|&p| p != NONE)
    }

    /// Sectors `mask` of page `lpn` are written, carried to flash by `program`.
    pub(super) fn write(&mut self, lpn: u64, mask: u64, program: u32) {
        self.stamp += 1;
        let e = self.pages.entry(lpn).or_insert(Entry {
            mask: 0,
            program: NONE,
            stamp: 0,
        });
        e.mask |= mask;
        e.program = program;
        e.stamp = self.stamp;
        self.order.push_back((lpn, self.stamp));
        self.evict();
    }

    /// `program` has put page `lpn` on flash.
    pub(super) fn programmed(&mut self, lpn: u64, program: u32) {
        if let Some(e) = self.pages.get_mut(&lpn) {
            if e.program == program {
                e.program = NONE;
            }
        }
        self.evict();
    }

    fn evict(&mut self) {
        // pages still on their way to flash cannot go: look past them, a bounded number
        let mut passes = self.order.len();
        while self.pages.len() > self.capacity && passes > 0 {
            passes -= 1;
            let Some((lpn, stamp)) = self.order.pop_front() else {
                break;
            };
            match self.pages.get(&lpn) {
                Some(e) if e.stamp == stamp && e.program != NONE => self.order.push_back((lpn, stamp)),
                Some(e) if e.stamp == stamp => {
                    self.pages.remove(&lpn);
                }
                _ => {}
            }
        }
    }
}

/// The cache's DRAM data path: accesses in turn, each `access_ns` then its bytes at the rate.
pub(super) struct Dram {
    ns_per_byte: f64,
    access_ns: f64,
    free: f64,
    busy_ns: f64,
}

impl Dram {
    /// A data path of `mb_s` (none: accesses take no time) and `access_ns` per access.
    pub(super) fn new(mb_s: Option<f64>, access_ns: f64) -> Self {
        Self {
            ns_per_byte: mb_s.map_or(0.0, |m| 1e3 / m),
            access_ns: if mb_s.is_some() { access_ns } else { 0.0 },
            free: 0.0,
            busy_ns: 0.0,
        }
    }

    /// `bytes` moved in or out from `at`, after the accesses before; returns when they are.
    pub(super) fn access(&mut self, at: f64, bytes: u64) -> f64 {
        let time = self.access_ns + bytes as f64 * self.ns_per_byte;
        if time == 0.0 {
            return at;
        }
        let start = at.max(self.free);
        self.free = start + time;
        self.busy_ns += time;
        self.free
    }

    /// Share of `span` the data path was busy.
    pub(super) fn utilization(&self, span: f64) -> f64 {
        if span > 0.0 {
            (self.busy_ns / span).min(1.0)
        } else {
            0.0
        }
    }
}
