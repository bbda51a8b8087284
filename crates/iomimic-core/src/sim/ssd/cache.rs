//! The drive's DRAM write cache: the pages written recently, by logical page, with the sectors
//! each holds and the program still carrying it to flash.
//!
//! ## Algorithm
//! A write enters the cache page by page (sectors merged into what the page holds) and leaves
//! for flash at once; a rewrite of a page whose program has not started joins that program. A
//! read whose sectors the cache holds is served from it. Pages whose program has completed are
//! dropped least recently written first once the cache is full; pages still on their way stay.
//!
//! ## Complexity
//! A hash-map access per page, amortised constant eviction.

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
