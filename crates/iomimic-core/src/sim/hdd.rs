//! A hard disk: seek curve, rotation, zoned transfer, track buffer with read-ahead, write cache.
//!
//! ## Algorithm
//! - Seek time over a distance of d cylinders out of C: 0 for d = 0; the track-to-track time
//!   growing with √d to the average seek time at d = C/3, then linearly to the full-stroke time
//!   at d = C (the usual shape: acceleration-limited short seeks, coast-limited long ones).
//! - Rotation: the platter turns at `rpm` from angle 0 at time 0; a byte's angle is its offset
//!   within its track; after the seek the head waits for the target angle to come round.
//! - Transfer: the media rate falls linearly from `outer_mb_s` at offset 0 to `inner_mb_s` at the
//!   end of the disk (zoned recording); a track holds a revolution's worth of bytes.
//! - Track buffer: after a read, while the disk is otherwise idle, it keeps reading ahead into
//!   a segment (up to `segment_kib`); a read inside what a segment holds is served from it at
//!   the bus rate. `cache_segments` segments are kept, least recently used replaced.
//! - Write cache: when on, a write completes once it crosses the bus into the cache
//!   (`write_cache_mib`). Dirty data is kept as extents, overlapping and touching writes merged,
//!   and destaged to the media whenever the disk is idle, the extent nearest the head first,
//!   each destage a seek, rotation and transfer like any write; a request arriving mid-destage
//!   waits for it to end, and a write that finds the cache full waits for enough destages to
//!   make room. A read wholly inside a dirty extent is served from the cache; a write larger
//!   than the cache goes straight to the media.
//! - Power: idle, seeking, transferring and standby watts integrate into energy.
//! - Queue: one I/O at a time; the next is the first queued demand I/O (FIFO) or the one
//!   nearest the head (SSTF), background I/Os (prefetches, destages) only when no demand I/O
//!   waits.
//!
//! Counters: `buffer_hits` (reads served from the track buffer or the write cache),
//! `destages`, `spin_ups`.
//!
//! ## References
//! Ruemmler & Wilkes, "An introduction to disk drive modeling" (IEEE Computer, 1994);
//! Worthington et al., "On-line extraction of SCSI disk drive parameters" (1995).

use serde::{Deserialize, Serialize};

use self::dirty::Dirty;
use self::queue::DiskQueue;
use super::device::{read_table, Counters, Device, DeviceConfig, DeviceKind, DeviceSpec, Io, Report};
use super::Scheduler;

mod dirty;
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
    /// Command overhead per request.
    #[serde(default)]
    pub overhead_ms: f64,
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
        if self.cylinders == 0 {
            return Err(format!("{path}.cylinders: must be positive"));
        }
        Ok(())
    }

    fn write_cache_bytes(&self) -> u64 {
        (self.write_cache_mib * 1024.0 * 1024.0) as u64
    }

    fn revolution_ns(&self) -> f64 {
        60e9 / self.rpm
    }

    /// Seek time in ns over `d` cylinders.
    pub fn seek_ns(&self, d: u64) -> f64 {
        if d == 0 {
            return 0.0;
        }
        let x = d as f64 / self.cylinders as f64;
        let ms = if x <= 1.0 / 3.0 {
            self.track_to_track_ms + (self.average_seek_ms - self.track_to_track_ms) * (3.0 * x).sqrt()
        } else {
            self.average_seek_ms + (self.full_stroke_ms - self.average_seek_ms) * (x - 1.0 / 3.0) * 1.5
        };
        ms * 1e6
    }

    /// Media rate (bytes/ns) at `offset`.
    fn rate(&self, offset: u64) -> f64 {
        let x = (offset as f64 / self.capacity_bytes() as f64).min(1.0);
        (self.outer_mb_s - (self.outer_mb_s - self.inner_mb_s) * x) * 1e6 / 1e9
    }

    pub fn cylinder(&self, offset: u64) -> u64 {
        let x = (offset as f64 / self.capacity_bytes() as f64).min(1.0);
        ((x * self.cylinders as f64) as u64).min(self.cylinders - 1)
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

#[derive(Debug, Clone, Copy)]
struct Segment {
    start: u64,
    /// bytes held, once frozen; while `reading`, held = min(size, (now − since) × rate)
    held: u64,
    since: f64,
    reading: bool,
    used: f64,
}

/// A disk's state between requests.
#[derive(Debug, Clone)]
pub struct Hdd {
    p: HddParams,
    cylinder: u64,
    segments: Vec<Segment>,
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
        Self {
            p,
            cylinder: 0,
            segments: Vec::new(),
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

    /// Starts `io` on the idle disk at `now`; returns when it is done.
    fn start(&mut self, io: &Io, now: f64) -> f64 {
        self.busy = true;
        let s = self.serve(now, io.offset, io.size, io.write);
        self.buffer_hits += u64::from(s.buffer_hit);
        now + s.total_ns
    }

    fn segment_bytes(&self) -> u64 {
        self.p.segment_kib * 1024
    }

    fn held(&self, s: &Segment, now: f64) -> u64 {
        if s.reading {
            let rate = self.p.rate(s.start);
            (((now - s.since).max(0.0) * rate) as u64).min(self.segment_bytes())
        } else {
            s.held
        }
    }

    /// Serves a request arriving at an idle disk at time `now` (ns); returns its service time
    /// (including the end of a destage it finds under way).
    fn serve(&mut self, now: f64, offset: u64, size: u32, write: bool) -> Service {
        let free = self.destage_while_idle(now);
        let wake = self.idle_until(free, true);
        let mut s = self.serve_awake(free + wake, offset, size, write);
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
        self.stop_read_ahead(t);
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
        let (seek, rotate, transfer) = self.media(at, offset, size);
        let took = seek + rotate + transfer;
        self.charge(took, seek, transfer);
        self.destages += 1;
        took
    }

    /// Moves the head to `offset` at time `at` and transfers `size` bytes there: the seek, the
    /// wait for the sector to come round, and the transfer (ns).
    fn media(&mut self, at: f64, offset: u64, size: u64) -> (f64, f64, f64) {
        let target = self.p.cylinder(offset);
        let seek = self.p.seek_ns(self.cylinder.abs_diff(target));
        let rev = self.p.revolution_ns();
        let rate = self.p.rate(offset);
        let track_bytes = rate * rev;
        let angle = (offset as f64 % track_bytes) / track_bytes;
        let head = ((at + seek) % rev) / rev;
        let rotate = ((angle - head).rem_euclid(1.0)) * rev;
        let transfer = size as f64 / rate;
        self.head = offset + size;
        self.cylinder = self.p.cylinder(self.head.saturating_sub(1));
        (seek, rotate, transfer)
    }

    /// The disk stops reading ahead the moment it works on something else.
    fn stop_read_ahead(&mut self, now: f64) {
        for i in 0..self.segments.len() {
            if self.segments[i].reading {
                let held = self.held(&self.segments[i], now);
                let s = &mut self.segments[i];
                s.held = held;
                s.reading = false;
            }
        }
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

    fn serve_awake(&mut self, now: f64, offset: u64, size: u32, write: bool) -> Service {
        let overhead = self.p.overhead_ms * 1e6;
        let bus = f64::from(size) / (self.p.bus_mb_s * 1e6 / 1e9);
        let end = offset + u64::from(size);
        if !write && self.dirty.holds(offset, end) {
            // written but not yet destaged: the cache has it
            let total = overhead + bus;
            self.charge(total, 0.0, total);
            return Service {
                total_ns: total,
                buffer_hit: true,
            };
        }
        if !write && self.p.read_ahead {
            // A read inside what a segment holds is a hit; one inside what a segment still
            // reading ahead is about to hold waits for the data to stream in (a sequential
            // stream stays in the buffer even with requests queued behind each other).
            let seg_bytes = self.segment_bytes();
            let hit = self.segments.iter().position(|s| {
                offset >= s.start && end <= s.start + s.held.max(if s.reading { seg_bytes } else { 0 })
            });
            if let Some(i) = hit {
                let s = self.segments[i];
                let held = self.held(&s, now);
                let wait = if end > s.start + held {
                    (end - s.start - held) as f64 / self.p.rate(s.start)
                } else {
                    0.0
                };
                self.segments[i].used = now;
                let total = overhead + wait + bus;
                self.charge(total, 0.0, total);
                return Service {
                    total_ns: total,
                    buffer_hit: true,
                };
            }
        }
        self.stop_read_ahead(now);
        if write && self.p.write_cache && u64::from(size) <= self.p.write_cache_bytes() {
            // a rewrite of data still cached takes no more room; otherwise a full cache makes
            // the write wait for destages (the disk is busy with them, in the foreground)
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
        let (seek, rotate, transfer) = self.media(now + overhead, offset, u64::from(size));
        let total = overhead + seek + rotate + transfer;
        self.charge(total, seek, transfer);
        if !write && self.p.read_ahead && self.p.cache_segments > 0 {
            // read ahead from the end of this read while the disk has nothing else to do
            let seg = Segment {
                start: offset,
                held: 0,
                since: now + total - transfer,
                reading: true,
                used: now,
            };
            if self.segments.len() == self.p.cache_segments {
                let lru = (0..self.segments.len())
                    .min_by(|&a, &b| self.segments[a].used.total_cmp(&self.segments[b].used))
                    .expect("segments exist");
                self.segments[lru] = seg;
            } else {
                self.segments.push(seg);
            }
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
        Some(self.start(&io, now))
    }

    fn complete(&mut self, io: &Io, now: f64) -> Option<(Io, f64)> {
        self.busy = false;
        // SSTF measures from where the finished I/O left the head
        let next = self.queue.pop(self.p.cylinder(io.offset + u64::from(io.size)))?;
        Some((next, self.start(&next, now)))
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
