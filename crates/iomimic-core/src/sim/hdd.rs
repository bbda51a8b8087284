//! A hard disk: seek curve, rotation, zoned transfer, track buffer with read-ahead, write cache.
//!
//! ## Algorithm
//! - Seek time over a distance of d cylinders out of C: 0 for d = 0; the track-to-track time
//!   growing with √d to the average seek time at d = C/3, then linearly to the full-stroke time
//!   at d = C (the usual shape: acceleration-limited short seeks, coast-limited long ones).
//! - Rotation: the platter turns at `rpm` from angle 0 at time 0; a byte's angle is the time
//!   the media takes to stream up to it, in turns (so consecutive bytes pass under the head
//!   one after the other across tracks); after the seek the head waits for it to come round.
//! - Transfer: the media rate falls linearly from `outer_mb_s` at offset 0 to `inner_mb_s` at the
//!   end of the disk (zoned recording); a track holds a revolution's worth of bytes.
//! - Track buffer: after a read, while the disk is otherwise idle, it keeps reading ahead into
//!   a segment, a ring of `segment_kib` that a stream taking its data keeps going (see
//!   `buffer.rs`); a read inside what a segment holds is served from it at the bus rate.
//!   `cache_segments` segments are kept, least recently used replaced.
//! - Write cache: when on, a write completes once it crosses the bus into the cache
//!   (`write_cache_mib`). Dirty data is kept as extents, overlapping and touching writes merged,
//!   and destaged to the media whenever the disk is idle, the extent nearest the head first,
//!   each destage a seek, rotation and transfer like any write; a request arriving mid-destage
//!   waits for it to end, and a write that finds the cache full waits for enough destages to
//!   make room. A read wholly inside a dirty extent is served from the cache; a write larger
//!   than the cache goes straight to the media.
//! - Power: idle, seeking, transferring and standby watts integrate into energy.
//! - Queue: one I/O at a time; the next is the first queued demand I/O (FIFO), the one
//!   nearest the head (SSTF) or the one the head reaches soonest, seek and rotation (SPTF),
//!   background I/Os (prefetches, destages) only when no demand I/O waits. A queued I/O that
//!   continues where the head is streams on: its command was taken in during the one before.
//! - Zero-latency reads: a read starts with whatever part of it passes under the head first.
//!   Reads from the media cross the interface at `bus_mb_s` too; buffer hits pay
//!   `hit_overhead_ms`, media accesses `overhead_ms`.
//!
//! Counters: `buffer_hits` (reads served from the track buffer or the write cache),
//! `destages`, `spin_ups`.
//!
//! ## References
//! Ruemmler & Wilkes, "An introduction to disk drive modeling" (IEEE Computer, 1994);
//! Worthington et al., "On-line extraction of SCSI disk drive parameters" (1995).

use serde::{Deserialize, Serialize};

use self::buffer::TrackBuffer;
use self::dirty::Dirty;
use self::mechanics::Access;
use self::queue::DiskQueue;
use super::device::{read_table, Counters, Device, DeviceConfig, DeviceKind, DeviceSpec, Io, Report};
use super::Scheduler;

mod buffer;
mod dirty;
mod mechanics;
mod queue;

/// `kind = "hdd"`.
pub const KIND: DeviceKind = DeviceKind {
    name: "hdd",
    parse: parse_table,
};

fn parse_table(table: toml::Table, path: &str) -> Result<DeviceConfig, String> {
    let p: HddParams = read_table(table, path)?;
    p.check(path)?;
    DeviceConfig::new(KIND.name, p)
}

/// Parameters of a disk, as in a device file's `[device]` table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HddParams {
    pub rpm: f64,
    pub capacity_gb: f64,
    #[serde(default = "default_cylinders")]
    pub cylinders: u64,
    pub track_to_track_ms: f64,
    pub average_seek_ms: f64,
    pub full_stroke_ms: f64,
    pub outer_mb_s: f64,
    pub inner_mb_s: f64,
    /// Interface rate for buffer hits and cached writes.
    pub bus_mb_s: f64,
    /// Command overhead per request that goes to the media ...
    #[serde(default)]
    pub overhead_ms: f64,
    /// ... and per read the buffer serves (default: overhead_ms): a drive answers from its
    /// buffer without the mechanical preparation a media access needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_overhead_ms: Option<f64>,
    /// A read starts transferring whatever part of it passes under the head first.
    #[serde(default = "yes")]
    pub zero_latency: bool,
    #[serde(default = "default_segments")]
    pub cache_segments: usize,
    #[serde(default = "default_segment_kib")]
    pub segment_kib: u64,
    #[serde(default = "yes")]
    pub read_ahead: bool,
    #[serde(default)]
    pub write_cache: bool,
    /// Dirty data the write cache holds before a write must wait for destaging.
    #[serde(default = "default_write_cache_mib")]
    pub write_cache_mib: f64,
    #[serde(default)]
    pub power: Option<HddPower>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HddPower {
    pub idle_w: f64,
    pub seek_w: f64,
    pub transfer_w: f64,
    pub standby_w: f64,
    /// Spin down after this long idle (standby); absent: never.
    #[serde(default)]
    pub spin_down_s: Option<f64>,
    /// Time to spin back up for the next request.
    #[serde(default = "default_spin_up")]
    pub spin_up_s: f64,
}

fn default_spin_up() -> f64 {
    6.0
}

fn default_write_cache_mib() -> f64 {
    4.0
}

fn default_cylinders() -> u64 {
    50_000
}
fn default_segments() -> usize {
    4
}
fn default_segment_kib() -> u64 {
    512
}
fn yes() -> bool {
    true
}

impl HddParams {
    pub fn check(&self, path: &str) -> Result<(), String> {
        let positive = [
            ("rpm", self.rpm),
            ("capacity_gb", self.capacity_gb),
            ("track_to_track_ms", self.track_to_track_ms),
            ("average_seek_ms", self.average_seek_ms),
            ("full_stroke_ms", self.full_stroke_ms),
            ("outer_mb_s", self.outer_mb_s),
            ("inner_mb_s", self.inner_mb_s),
            ("bus_mb_s", self.bus_mb_s),
            ("write_cache_mib", self.write_cache_mib),
        ];
        if let Some((name, v)) = positive.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("{path}.{name}: must be a positive number, found {v}"));
        }
        if !(self.track_to_track_ms <= self.average_seek_ms && self.average_seek_ms <= self.full_stroke_ms) {
            return Err(format!(
                "{path}: seek times must satisfy track_to_track_ms <= average_seek_ms <= full_stroke_ms"
            ));
        }
        let overheads = [
            ("overhead_ms", Some(self.overhead_ms)),
            ("hit_overhead_ms", self.hit_overhead_ms),
        ];
        if let Some((name, Some(v))) = overheads
            .iter()
            .find(|(_, v)| v.is_some_and(|v| !(v.is_finite() && v >= 0.0)))
        {
            return Err(format!("{path}.{name}: must be a number of 0 or more, found {v}"));
        }
        if self.cylinders == 0 {
            return Err(format!("{path}.cylinders: must be positive"));
        }
        if self.rpm < 60.0 {
            return Err(format!("{path}.rpm: at least 60, found {}", self.rpm));
        }
        // a minute per mechanical step, a petabyte, a terabyte a second: past these, not a disk
        super::device::check_bounds(
            path,
            &[
                ("rpm", self.rpm, 1e5),
                ("capacity_gb", self.capacity_gb, 1e6),
                ("track_to_track_ms", self.track_to_track_ms, 6e4),
                ("average_seek_ms", self.average_seek_ms, 6e4),
                ("full_stroke_ms", self.full_stroke_ms, 6e4),
                ("overhead_ms", self.overhead_ms, 6e4),
                ("hit_overhead_ms", self.hit_overhead_ms.unwrap_or(0.0), 6e4),
                ("outer_mb_s", self.outer_mb_s, 1e6),
                ("inner_mb_s", self.inner_mb_s, 1e6),
                ("bus_mb_s", self.bus_mb_s, 1e6),
                ("write_cache_mib", self.write_cache_mib, 1e6),
                ("cylinders", self.cylinders as f64, 1e7),
            ],
        )
    }

    fn write_cache_bytes(&self) -> u64 {
        (self.write_cache_mib * 1024.0 * 1024.0) as u64
    }
}

impl DeviceSpec for HddParams {
    fn capacity_bytes(&self) -> u64 {
        (self.capacity_gb * 1e9) as u64
    }

    fn build(&self, scheduler: Scheduler) -> Box<dyn Device> {
        Box::new(Hdd::new(self.clone(), scheduler))
    }

    fn summary(&self) -> String {
        format!(
            "HDD {} rpm, {} GB, seek {}/{}/{} ms, {}-{} MB/s",
            self.rpm,
            self.capacity_gb,
            self.track_to_track_ms,
            self.average_seek_ms,
            self.full_stroke_ms,
            self.outer_mb_s,
            self.inner_mb_s
        )
    }
}

/// A disk's state between requests.
#[derive(Debug, Clone)]
pub struct Hdd {
    p: HddParams,
    cylinder: u64,
    buffer: TrackBuffer,
    energy_j: f64,
    /// When the disk last finished work (for idle and standby energy).
    free_at: f64,
    spin_ups: u64,
    /// Data in the write cache, not yet on the media.
    dirty: Dirty,
    /// Where the head is: the end of the last media transfer.
    head: u64,
    /// Writes destaged from the write cache, and the time the disk spent destaging while idle
    /// (destaging a write waits for is part of that write's service).
    destages: u64,
    background_ns: f64,
    /// I/Os waiting while the disk serves one.
    queue: DiskQueue,
    busy: bool,
    buffer_hits: u64,
}

/// What serving one request cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct Service {
    pub total_ns: f64,
    pub buffer_hit: bool,
}

impl Hdd {
    fn new(p: HddParams, scheduler: Scheduler) -> Self {
        let buffer = TrackBuffer::new(if p.read_ahead { p.cache_segments } else { 0 }, p.segment_kib);
        Self {
            p,
            cylinder: 0,
            buffer,
            energy_j: 0.0,
            free_at: 0.0,
            spin_ups: 0,
            dirty: Dirty::default(),
            head: 0,
            destages: 0,
            background_ns: 0.0,
            queue: DiskQueue::new(scheduler),
            busy: false,
            buffer_hits: 0,
        }
    }

    /// Starts `io` on the idle disk at `now`; returns when it is done. A queued I/O's command
    /// was taken in while the disk served the one before (`queued`): when it continues where
    /// the head is, its overhead is already paid and the media streams on without losing a turn.
    fn start(&mut self, io: &Io, now: f64, queued: bool) -> f64 {
        self.busy = true;
        let streams = queued && io.offset == self.head;
        let s = self.serve(now, io.offset, io.size, io.write, streams);
        self.buffer_hits += u64::from(s.buffer_hit);
        now + s.total_ns
    }

    /// Serves a request arriving at an idle disk at time `now` (ns); returns its service time
    /// (including the end of a destage it finds under way).
    fn serve(&mut self, now: f64, offset: u64, size: u32, write: bool, streams: bool) -> Service {
        let free = self.destage_while_idle(now);
        let wake = self.idle_until(free, true);
        let mut s = self.serve_awake(free + wake, offset, size, write, streams);
        s.total_ns += free - now + wake;
        self.free_at = now + s.total_ns;
        s
    }

    /// Destages dirty writes from when the disk went idle until `now`; returns when the disk
    /// is free again (`now`, or the end of the destage under way at `now`).
    fn destage_while_idle(&mut self, now: f64) -> f64 {
        let mut t = self.free_at;
        if self.dirty.is_empty() || t >= now {
            return now.max(t);
        }
        self.buffer.stop(t);
        let started = t;
        while !self.dirty.is_empty() && t < now {
            t += self.destage_one(t);
        }
        self.background_ns += t - started;
        self.free_at = t;
        now.max(t)
    }

    /// Writes the dirty extent nearest the head to the media, starting at `at`; returns the
    /// time it took.
    fn destage_one(&mut self, at: f64) -> f64 {
        let (offset, size) = self.dirty.take_nearest(self.head, |o| self.p.cylinder(o));
        // from the disk's own cache: the interface is not crossed
        let a = self.media(at, offset, size, false, false);
        let took = a.seek + a.rotate + a.transfer;
        self.charge(took, a.seek, a.transfer);
        self.destages += 1;
        took
    }

    /// Moves the head to `offset` at time `at` and transfers `size` bytes there.
    fn media(&mut self, at: f64, offset: u64, size: u64, zero_latency: bool, over_bus: bool) -> Access {
        let a = self
            .p
            .access(self.cylinder, at, offset, size, zero_latency, over_bus);
        self.head = offset + size;
        self.cylinder = self.p.cylinder(self.head.saturating_sub(1));
        a
    }

    /// Charges the idle time before `now`; returns the spin-up delay if the disk had gone to
    /// standby and `wake` (a request arrives) is set.
    fn idle_until(&mut self, now: f64, wake: bool) -> f64 {
        let gap = (now - self.free_at).max(0.0);
        let Some(w) = &self.p.power else { return 0.0 };
        match w.spin_down_s.map(|s| s * 1e9) {
            Some(down) if gap > down => {
                self.energy_j += (down * w.idle_w + (gap - down) * w.standby_w) / 1e9;
                if !wake {
                    return 0.0;
                }
                self.spin_ups += 1;
                let up = w.spin_up_s * 1e9;
                // spinning up draws about seek power
                self.energy_j += up * w.seek_w / 1e9;
                up
            }
            _ => {
                self.energy_j += gap * w.idle_w / 1e9;
                0.0
            }
        }
    }

    /// A read the write cache or the track buffer serves, if one can.
    fn serve_hit(&mut self, now: f64, offset: u64, end: u64) -> Option<Service> {
        let overhead = self.p.hit_overhead_ms.unwrap_or(self.p.overhead_ms) * 1e6;
        let bus = (end - offset) as f64 / (self.p.bus_mb_s * 1e-3);
        let ready = if self.dirty.holds(offset, end) {
            // written but not yet destaged: the cache has it
            now
        } else {
            let p = &self.p;
            self.buffer
                .read(offset, end, now, |at, t| p.rotation_ns(at, t))?
                .ready
        };
        // data still streaming in from the platter leaves over the bus as it comes
        let total = (overhead + bus).max(ready - now);
        self.charge(total, 0.0, total);
        Some(Service {
            total_ns: total,
            buffer_hit: true,
        })
    }

    fn serve_awake(&mut self, now: f64, offset: u64, size: u32, write: bool, streams: bool) -> Service {
        let end = offset + u64::from(size);
        if !write {
            if let Some(s) = self.serve_hit(now, offset, end) {
                return s;
            }
        }
        let overhead = if streams { 0.0 } else { self.p.overhead_ms * 1e6 };
        self.buffer.stop(now);
        if write && self.p.write_cache && u64::from(size) <= self.p.write_cache_bytes() {
            // a rewrite of data still cached takes no more room; otherwise a full cache makes
            // the write wait for destages (the disk is busy with them, in the foreground)
            let bus = f64::from(size) / (self.p.bus_mb_s * 1e-3);
            let mut destaging = 0.0;
            if !self.dirty.holds(offset, end) {
                while self.dirty.bytes + u64::from(size) > self.p.write_cache_bytes() {
                    destaging += self.destage_one(now + overhead + destaging);
                }
                self.dirty.add(offset, end);
            }
            let total = overhead + destaging + bus;
            self.charge(overhead + bus, 0.0, overhead + bus);
            return Service {
                total_ns: total,
                buffer_hit: false,
            };
        }
        let zero_latency = self.p.zero_latency && !write;
        let a = self.media(now + overhead, offset, u64::from(size), zero_latency, true);
        let total = overhead + a.seek + a.rotate + a.transfer;
        self.charge(total, a.seek, a.transfer);
        if !write {
            // read ahead from the end of this read while the disk has nothing else to do
            self.buffer
                .start(offset, end, a.end_passed, self.p.rate(offset), now);
        }
        Service {
            total_ns: total,
            buffer_hit: false,
        }
    }

    fn charge(&mut self, busy_ns: f64, seek_ns: f64, transfer_ns: f64) {
        if let Some(w) = &self.p.power {
            let other = (busy_ns - seek_ns - transfer_ns).max(0.0);
            self.energy_j += (seek_ns * w.seek_w + transfer_ns * w.transfer_w + other * w.idle_w) / 1e9;
        }
    }

    /// Destages what the run left in the write cache (as the disk would, idle after it) and
    /// charges the idle time up to the end of the run.
    fn settle(&mut self, end: f64) {
        let free = self.destage_while_idle(end);
        self.idle_until(free, false);
    }
}

impl Device for Hdd {
    fn submit(&mut self, io: Io, now: f64) -> Option<f64> {
        if self.busy {
            self.queue.push(io, self.p.cylinder(io.offset));
            return None;
        }
        Some(self.start(&io, now, false))
    }

    fn complete(&mut self, io: &Io, now: f64) -> Option<(Io, f64)> {
        self.busy = false;
        // SSTF measures from where the finished I/O left the head, SPTF from there and now
        let here = self.p.cylinder(io.offset + u64::from(io.size));
        let p = &self.p;
        let next = self.queue.pop(here, |q| p.positioning_ns(here, q.offset, now))?;
        Some((next, self.start(&next, now, true)))
    }

    fn finish(&mut self, end: f64) -> Report {
        self.settle(end);
        Report {
            background_ns: self.background_ns,
            energy_j: self.p.power.is_some().then_some(self.energy_j),
            counters: Counters::from([
                ("buffer_hits", self.buffer_hits),
                ("destages", self.destages),
                ("spin_ups", self.spin_ups),
            ]),
            ..Report::default()
        }
    }
}

/// The disk the hand-worked tests use.
#[cfg(test)]
pub(super) mod tests_support {
    use super::HddParams;

    /// 6,000 rpm (10 ms a turn), 1 GB, 1,000 cylinders, 100 MB/s everywhere (1 MB a track),
    /// seeks 1 / 5 / 10 ms, a 100 MB/s bus, no overhead, no write cache.
    pub(in super::super) fn hand() -> HddParams {
        HddParams {
            rpm: 6000.0,
            capacity_gb: 1.0,
            cylinders: 1000,
            track_to_track_ms: 1.0,
            average_seek_ms: 5.0,
            full_stroke_ms: 10.0,
            outer_mb_s: 100.0,
            inner_mb_s: 100.0,
            bus_mb_s: 100.0,
            overhead_ms: 0.0,
            hit_overhead_ms: None,
            zero_latency: true,
            cache_segments: 4,
            segment_kib: 1024,
            read_ahead: true,
            write_cache: false,
            write_cache_mib: 4.0,
            power: None,
        }
    }
}
