//! A flash SSD: host link, write cache, page-mapped FTL with garbage collection as work, and
//! chips on channels that serve transactions from their own queues.
//!
//! ## Algorithm
//! - Host ([`host`]): each command takes the controller `command_us`, one at a time; data
//!   crosses PCIe lanes (a rate per generation and lane, each direction apart) or SATA 6 Gb/s
//!   (one link both ways, 32 commands at once).
//! - Cache ([`cache`]): a write is acknowledged once its data is in DRAM and leaves for flash
//!   at once; while `write_buffer_pages` are on their way, further writes wait (back-pressure,
//!   which is how a drive that cannot keep up slows its writes). Reads of recently written data
//!   are served from DRAM. With `cache_mb_s` the data moves through the DRAM one access at a
//!   time (a write's in, a hit's out), as MQSim's data cache does, and a write is acknowledged
//!   once its data is in. Without a cache a write completes when its pages are programmed.
//! - FTL ([`ftl`], [`precondition`]): logical pages striped over planes (or over dies, a
//!   die's planes taking its host writes in turn), each written to its plane's next free page; over-provisioning and a starting fill (in order, or aged to the
//!   steady state of random rewrites) set how much collection has to move.
//! - Collection ([`gc`]): greedy victims, valid pages moved and the block erased, as flash
//!   transactions behind host I/O (preemptible) unless a plane runs short; idle chips collect
//!   ahead.
//! - Flash ([`flash`]): chips take batches (per die, one multi-plane operation) from their
//!   queues, reads first; a read transfers only the bytes asked for; the channel is a bus used
//!   only while data moves.
//!
//! Requests complete through the drive's own events ([`Device::wake`]). Counters:
//! `flash_reads`, `flash_programs`, `gc_page_moves`, `gc_erases`, `cache_read_hits`,
//! `partial_page_rewrites`, `write_buffer_waits`; gauges: `die_utilization` (also the device's
//! utilisation), `channel_utilization`, `host_utilization`, `write_amplification`, and
//! `cache_dram_utilization` when the DRAM takes time.
//!
//! ## Complexity
//! A few events per flash transaction, each O(log events); memory grows with the pages written
//! during the run, not with the drive's size.
//!
//! ## References
//! Tavakkol et al., "MQSim: A Framework for Enabling Realistic Studies of Modern Multi-Queue
//! SSD Devices" (FAST 2018); Agrawal et al., "Design tradeoffs for SSD performance" (USENIX
//! ATC 2008); Desnoyers, "Analytic modeling of SSD write performance" (SYSTOR 2012).

use super::device::{read_table, Device, DeviceConfig, DeviceKind, DeviceSpec};
use super::Scheduler;

mod cache;
mod collect;
mod drive;
mod events;
mod flash;
mod ftl;
mod gc;
mod host;
mod params;
mod precondition;
#[cfg(test)]
mod tests;

pub use params::{HostInterface, SsdParams, SsdPower};

/// `kind = "ssd"`.
pub const KIND: DeviceKind = DeviceKind {
    name: "ssd",
    parse: parse_table,
};

fn parse_table(table: toml::Table, path: &str) -> Result<DeviceConfig, String> {
    let p: SsdParams = read_table(table, path)?;
    p.check(path)?;
    if p.aged && p.fill > 0.0 {
        // the layout an aged drive starts from must fit beside the free blocks it rests at
        let geo = p.geometry();
        let resting = gc::Collector::new(&p, &geo).resting_free();
        let live = (p.fill * geo.logical_pages as f64) as u64;
        precondition::Layout::aged(&geo, live, resting).map_err(|e| format!("{path}.{e}"))?;
    }
    DeviceConfig::new(KIND.name, p)
}

impl DeviceSpec for SsdParams {
    fn capacity_bytes(&self) -> u64 {
        self.geometry().capacity_bytes()
    }

    fn build(&self, _: Scheduler) -> Box<dyn Device> {
        Box::new(drive::Drive::new(self))
    }

    fn summary(&self) -> String {
        let g = self.geometry();
        format!(
            "SSD {:.0} GB, {}x{}x{}x{} ({} planes), {} KiB pages, read/program/erase {}/{}/{} µs, {:?} {:.0} MB/s",
            g.capacity_bytes() as f64 / 1e9,
            self.channels,
            self.chips_per_channel,
            self.dies_per_chip,
            self.planes_per_die,
            g.plane_count(),
            self.page_kib,
            self.read_us,
            self.program_us,
            self.erase_us,
            self.host,
            self.host_rate_mb_s()
        )
    }
}
