//! Garbage collection as work the flash does: picking a victim, moving its valid pages,
//! erasing it.
//!
//! This file holds the collector's state; `collect.rs` does its work on the drive.
//!
//! ## Algorithm
//! A plane starts collecting when a write leaves it fewer free blocks than `gc_threshold` of
//! its blocks, and an idle chip starts on its planes below `gc_idle_threshold` (background
//! collection). One block at a time per plane: the victim ([`Ftl::pick_victim`], greedy) has
//! each valid page read and programmed into the plane's block for moved pages — both crossing
//! the channel unless `gc_copyback` — then it is erased. Its transactions wait in their own
//! queues behind host I/O, unless a plane of the chip is below `gc_hard_threshold` (or
//! `gc_preemptible` is off): then collection goes first. Host writes that find no free page
//! wait for the erase. A page rewritten by the host while its block is collected is not moved.
//!
//! ## Complexity
//! A victim costs a scan of its plane's blocks and a transaction per valid page.
//!
//! ## References
//! Tavakkol et al., "MQSim" (FAST 2018) for preemptible collection with a hard threshold; Lee
//! et al., "Preemptible I/O scheduling of garbage collection for solid state drives" (IEEE TCAD
//! 2013).

use super::flash::{Tx, ERASE, GC_READ, GC_WRITE};
use super::params::{Geometry, SsdParams};

#[derive(Debug, Clone)]
pub(super) struct Job {
    pub(super) victim: u32,
    /// valid pages not yet moved (or found rewritten)
    pub(super) remaining: u32,
}

pub(super) struct Collector {
    /// free-block thresholds of a plane: collect, put collection first, collect while idle
    pub(super) soft: usize,
    pub(super) hard: usize,
    pub(super) idle: usize,
    pub(super) preemptible: bool,
    pub(super) page_bytes: u32,
    pub(super) jobs: Vec<Option<Job>>,
    pub erases: u64,
}

impl Collector {
    pub(super) fn new(p: &SsdParams, geo: &Geometry) -> Self {
        let blocks = f64::from(geo.blocks);
        let at_least = |share: f64| ((share * blocks).ceil() as usize).max(super::ftl::RESERVE + 1);
        Self {
            soft: at_least(p.gc_threshold),
            hard: ((p.gc_hard_threshold * blocks).ceil() as usize).max(super::ftl::RESERVE + 1),
            idle: at_least(p.gc_idle_threshold),
            preemptible: p.gc_preemptible,
            page_bytes: if p.gc_copyback { 0 } else { geo.page_bytes as u32 },
            jobs: vec![None; geo.plane_count()],
            erases: 0,
        }
    }

    /// Free blocks a plane rests at once idle collection is done (an aged drive starts so).
    pub(super) fn resting_free(&self) -> u32 {
        (self.idle.max(self.soft) + 1) as u32
    }

    pub(super) fn owns(tx: &Tx) -> bool {
        matches!(tx.class, GC_READ | GC_WRITE | ERASE)
    }
}
