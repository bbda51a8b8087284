//! A flash SSD: channels and dies, page read/program and block erase latencies, a write cache,
//! and garbage-collection stalls that make write latency vary.
//!
//! ## Algorithm
//! A request is cut into pages; page k goes to die (first page + k) mod dies, and die d hangs
//! off channel d mod channels. A read occupies its die for `read_us`, then its channel for the
//! page transfer; a write occupies the channel, then the die for `program_us`. Every die erases
//! a block after `pages_per_block × (1 − overprovision)` programs: garbage collection stalls it
//! for `erase_us` plus moving `gc_valid_fraction` of a block (a read and a program per page).
//! With a write cache, a write completes once transferred if the cache has room for its pages;
//! a full cache makes it wait until enough of the oldest pending programs complete (so
//! garbage-collection stalls show up in write latency).
//!
//! Dies and channels work in parallel, so the SSD starts every I/O as it arrives: it keeps no
//! queue of its own. Counter: `gc_stalls`.
//!
//! ## References
//! Agrawal et al., "Design tradeoffs for SSD performance" (USENIX ATC 2008); seed 003 on SSD
//! write-latency variability.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::device::{read_table, Counters, Device, DeviceConfig, DeviceKind, DeviceSpec, Io, Report};
use super::Scheduler;

/// `kind = "ssd"`.
pub const KIND: DeviceKind = DeviceKind {
    name: "ssd",
    parse: parse_table,
};

fn parse_table(table: toml::Table, path: &str) -> Result<DeviceConfig, String> {
    let p: SsdParams = read_table(table, path)?;
    p.check(path)?;
    DeviceConfig::new(KIND.name, p)
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SsdParams {
    pub capacity_gb: f64,
    pub channels: usize,
    pub dies_per_channel: usize,
    pub page_kib: u64,
    pub read_us: f64,
    pub program_us: f64,
    pub erase_us: f64,
    pub channel_mb_s: f64,
    #[serde(default = "default_pages_per_block")]
    pub pages_per_block: u64,
    #[serde(default = "default_overprovision")]
    pub overprovision: f64,
    #[serde(default = "default_gc_valid")]
    pub gc_valid_fraction: f64,
    #[serde(default)]
    pub write_cache_mib: f64,
    #[serde(default)]
    pub overhead_us: f64,
    #[serde(default)]
    pub power: Option<SsdPower>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SsdPower {
    pub idle_w: f64,
    pub active_w: f64,
}

fn default_pages_per_block() -> u64 {
    256
}
fn default_overprovision() -> f64 {
    0.07
}
fn default_gc_valid() -> f64 {
    0.25
}

impl SsdParams {
    pub fn check(&self, path: &str) -> Result<(), String> {
        let positive = [
            ("capacity_gb", self.capacity_gb),
            ("read_us", self.read_us),
            ("program_us", self.program_us),
            ("erase_us", self.erase_us),
            ("channel_mb_s", self.channel_mb_s),
        ];
        if let Some((name, v)) = positive.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("{path}.{name}: must be a positive number, found {v}"));
        }
        if self.channels == 0 || self.dies_per_channel == 0 || self.page_kib == 0 || self.pages_per_block == 0
        {
            return Err(format!(
                "{path}: channels, dies_per_channel, page_kib and pages_per_block must be positive"
            ));
        }
        if !(0.0..1.0).contains(&self.overprovision) || !(0.0..=1.0).contains(&self.gc_valid_fraction) {
            return Err(format!(
                "{path}: overprovision must be in [0, 1) and gc_valid_fraction in [0, 1]"
            ));
        }
        Ok(())
    }
}

impl DeviceSpec for SsdParams {
    fn capacity_bytes(&self) -> u64 {
        (self.capacity_gb * 1e9) as u64
    }

    fn build(&self, _: Scheduler) -> Box<dyn Device> {
        Box::new(Ssd::new(self.clone()))
    }

    fn summary(&self) -> String {
        format!(
            "SSD {} GB, {}x{} dies, read {} µs, program {} µs, erase {} µs",
            self.capacity_gb,
            self.channels,
            self.dies_per_channel,
            self.read_us,
            self.program_us,
            self.erase_us
        )
    }
}

#[derive(Debug, Clone)]
pub struct Ssd {
    p: SsdParams,
    die_free: Vec<f64>,
    channel_free: Vec<f64>,
    programs: Vec<u64>,
    /// Completion times of programs still pending behind the write cache.
    pending: VecDeque<f64>,
    energy_j: f64,
    gc_stalls: u64,
}

impl Ssd {
    fn new(p: SsdParams) -> Self {
        let dies = p.channels * p.dies_per_channel;
        Self {
            die_free: vec![0.0; dies],
            channel_free: vec![0.0; p.channels],
            programs: vec![0; dies],
            pending: VecDeque::new(),
            energy_j: 0.0,
            gc_stalls: 0,
            p,
        }
    }

    /// Serves a request arriving at `now`; returns when it completes (ns). Dies and channels
    /// work in parallel, so unlike a disk the SSD takes requests while others are in flight.
    fn serve(&mut self, now: f64, offset: u64, size: u32, write: bool) -> f64 {
        let page = self.p.page_kib * 1024;
        let dies = self.die_free.len();
        let first = offset / page;
        let pages = (offset + u64::from(size).max(1) - 1) / page - first + 1;
        let xfer = page as f64 / (self.p.channel_mb_s * 1e6 / 1e9);
        let start = now + self.p.overhead_us * 1e3;
        let mut done = start;
        let mut programs_done = start;
        let mut busy = 0.0;
        for k in 0..pages {
            let die = ((first + k) % dies as u64) as usize;
            let ch = die % self.channel_free.len();
            if write {
                let t_xfer = self.channel_free[ch].max(start) + xfer;
                self.channel_free[ch] = t_xfer;
                let mut t = self.die_free[die].max(t_xfer) + self.p.program_us * 1e3;
                self.programs[die] += 1;
                let per_gc = ((self.p.pages_per_block as f64) * (1.0 - self.p.overprovision)).max(1.0) as u64;
                if self.programs[die].is_multiple_of(per_gc) {
                    let moved = (self.p.pages_per_block as f64 * self.p.gc_valid_fraction).round();
                    t += self.p.erase_us * 1e3 + moved * (self.p.read_us + self.p.program_us) * 1e3;
                    self.gc_stalls += 1;
                }
                busy += t - self.die_free[die].max(t_xfer);
                self.die_free[die] = t;
                done = done.max(t_xfer);
                programs_done = programs_done.max(t);
            } else {
                let t_read = self.die_free[die].max(start) + self.p.read_us * 1e3;
                self.die_free[die] = t_read;
                let t = self.channel_free[ch].max(t_read) + xfer;
                self.channel_free[ch] = t;
                busy += self.p.read_us * 1e3 + xfer;
                done = done.max(t);
            }
        }
        if let Some(w) = &self.p.power {
            self.energy_j += busy * (w.active_w - w.idle_w).max(0.0) / 1e9;
        }
        if !write {
            return done;
        }
        // the write cache holds pending programs up to its size
        while self.pending.front().is_some_and(|&t| t <= now) {
            self.pending.pop_front();
        }
        let cache_pages = (self.p.write_cache_mib * 1024.0 * 1024.0 / page as f64) as usize;
        if cache_pages < pages as usize {
            return programs_done;
        }
        // a full cache frees a page when its oldest pending program completes
        let mut ready = done;
        while self.pending.len() + pages as usize > cache_pages {
            ready = ready.max(self.pending.pop_front().expect("a full cache has pending pages"));
        }
        for _ in 0..pages {
            self.pending.push_back(programs_done);
        }
        ready
    }
}

impl Device for Ssd {
    fn submit(&mut self, io: Io, now: f64) -> Option<f64> {
        Some(self.serve(now, io.offset, io.size, io.write))
    }

    fn complete(&mut self, _: &Io, _: f64) -> Option<(Io, f64)> {
        None
    }

    fn finish(&mut self, end: f64) -> Report {
        // idle power over the whole run; `serve` charged only the extra of active over idle
        if let Some(w) = &self.p.power {
            self.energy_j += end * w.idle_w / 1e9;
        }
        Report {
            background_ns: 0.0,
            energy_j: self.p.power.is_some().then_some(self.energy_j),
            counters: Counters::from([("gc_stalls", self.gc_stalls)]),
        }
    }
}
