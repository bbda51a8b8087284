//! The event loop: arrivals, phases of array requests, device I/Os, completions.
//!
//! The loop knows devices only through [`Device`]: it submits each device I/O, adds what the
//! array adds (injected faults, the shared bus), and tells the device when the I/O completed.
//! A device that schedules work of its own (an SSD) asks to be woken at the times it names
//! and hands back the I/Os it finished then.
//!
//! Past 600 lines on purpose: the loop, request phases, the controller's cache and prefetch,
//! faults and the bus all move one `Run`'s state at each event; split into files, each part
//! would borrow the whole of it (the tests live in `tests.rs`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::controller::{cache_block_kib, BlockCache, Streams, DETECT_AFTER};
use super::device::{Device, Io};
use super::figures::{self, Member, SimFigures, Tally};
use super::raid::{DevIo, Layout};
use super::window::Window;
use super::{Config, Controller, Faults, Scheduler};
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::random::unit_hash2;
use crate::trace::{Op, TraceView, STATUS_OK};

/// Requests completed between two reports of progress (and checks for a stop).
const PROGRESS_UNIT: usize = 4096;

/// The granule of injected sector faults.
const FAULT_BLOCK: u64 = 4096;

#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Closed loop with this many requests outstanding; open loop (trace times) when `None`.
    pub iodepth: Option<usize>,
    /// Divides trace times (open loop).
    pub intensity: f64,
    /// Overrides the device file's scheduler.
    pub scheduler: Option<Scheduler>,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            iodepth: None,
            intensity: 1.0,
            scheduler: None,
        }
    }
}

/// What a simulation gives: per request in trace order, and the figures of the run (one
/// device's, or with several devices [`MappedFigures`](super::MappedFigures)).
pub struct SimResult<F = SimFigures> {
    /// Issue time (ns, as simulated, 0 at the trace's first request) and latency of every
    /// request, in trace order.
    pub issue_ns: Vec<u64>,
    pub latency_ns: Vec<u64>,
    /// [`STATUS_OK`] or `EIO` for a request an injected failed sector failed (after the
    /// drive's retries, which `fail_ms` stands for).
    pub status: Vec<u8>,
    pub figures: F,
}

/// The errno of a request that failed on a bad sector.
pub const EIO: u8 = 5;

/// A request in flight: kept from its start until its last device I/O completes (its arrival
/// and status live in the run's per-request columns, so nothing per request outlives it).
struct Req {
    phases: Vec<Vec<DevIo>>,
    phase: usize,
    outstanding: usize,
    /// the controller already completed it (write-back): the device I/Os are destaging
    background: bool,
    /// array range to cache once the device reads complete (request plus prefetch)
    fill: Option<(u64, u64)>,
    /// what a read reads ahead in the same disk reads as its own data (`prefetch_with_read`)
    ahead: Option<(u64, u64)>,
}

/// The requests in flight by id: trace rows below `n`, the controller's prefetches from `n`
/// on. Each kind starts in id order and mostly ends in it, so each is a [`Window`]: an
/// overloaded device's queue of a million requests stays in order in memory, where a hash map
/// scattered it (the time per request grew 1.7x from 100 k to 1 M requests).
struct InFlight {
    rows: Window<Req>,
    prefetches: Window<Req>,
    n: usize,
}

impl InFlight {
    fn new(n: usize) -> Self {
        Self {
            rows: Window::default(),
            prefetches: Window::default(),
            n,
        }
    }

    fn of(&mut self, r: usize) -> &mut Window<Req> {
        if r < self.n {
            &mut self.rows
        } else {
            &mut self.prefetches
        }
    }

    fn insert(&mut self, r: usize, req: Req) {
        self.of(r).insert(r, req);
    }

    fn get_mut(&mut self, r: usize) -> Option<&mut Req> {
        self.of(r).get_mut(r)
    }

    fn remove(&mut self, r: usize) -> Option<Req> {
        self.of(r).remove(r)
    }
}

impl std::ops::Index<usize> for InFlight {
    type Output = Req;

    fn index(&self, r: usize) -> &Req {
        if r < self.n {
            &self.rows[r]
        } else {
            &self.prefetches[r]
        }
    }
}

/// What a completed read puts in the controller's cache.
#[derive(Clone, Copy)]
enum Fill {
    /// a request's own data
    Demand,
    /// data read ahead, unread until a request reads it
    Ahead,
    /// a read that waited for a prefetch has read this
    Used,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// a device I/O finished: (device, io id)
    Done(usize, usize),
    /// a request served by the controller (a cache hit, a write-back write) completes
    Finish(usize),
    /// a device that schedules its own work asked to run now
    Wake(usize),
    /// the controller finished a request's command processing: its device I/Os start
    Launch(usize),
}

type Events = BinaryHeap<Reverse<(u64, u64, Event)>>;

/// A device of the array, with the engine's own count of its work.
struct Slot {
    device: Box<dyn Device>,
    ios: u64,
    /// time with I/Os in service, from start to completion (faults and bus included)
    busy_ns: f64,
    /// the wake-up asked for and scheduled: (event time, exact time)
    wake: Option<(u64, f64)>,
}

/// One run's moving parts: devices, requests in flight, the controller, the event queue.
struct Run<'t, 'v> {
    t: &'t TraceView<'v>,
    layout: Layout,
    /// bytes of the array's address space
    capacity: u64,
    /// each volume gets its own equal region of the array
    region: u64,
    controller: Option<Controller>,
    cache: Option<BlockCache>,
    streams: Streams,
    /// read ranges to cache, from requests whose device reads completed: (offset, length,
    /// read ahead) — a range read ahead, or one a read waiting for a prefetch has used
    fills: Vec<(u64, u64, Fill)>,
    /// prefetches under way: (range start, end, request, the reads waiting for its data); a
    /// read inside one waits for it rather than reading the disks again (a few streams' worth)
    prefetching: Vec<(u64, u64, usize, Vec<usize>)>,
    faults: Option<Faults>,
    /// a shared back-end bus (bytes per ns): each device I/O's data crosses it in turn
    bus_rate: Option<f64>,
    bus_free: f64,
    /// when the controller finishes the commands and data it has taken
    controller_free: f64,
    slots: Vec<Slot>,
    /// requests in flight, by id: trace requests by row, then background prefetches
    reqs: InFlight,
    /// the id the next prefetch gets
    next_prefetch: usize,
    /// when each trace request arrived
    arrival: Vec<f64>,
    /// device I/Os in flight by id: (request, I/O, when it was submitted)
    ios: Window<(usize, DevIo, f64)>,
    /// device I/Os submitted and not yet completed
    inflight: usize,
    /// the next trace arrival (open loop), for a woken device's horizon
    next_arrival: f64,
    /// what a woken device finished, reused between wake-ups
    woken: Vec<(usize, f64)>,
    events: Events,
    seq: u64,
    turn: usize,
    issue_ns: Vec<u64>,
    latency_ns: Vec<u64>,
    status: Vec<u8>,
    service_sum: f64,
    device_ios: u64,
    cache_hits: u64,
    slow_ios: u64,
    failed_ios: u64,
}

impl<'t, 'v> Run<'t, 'v> {
    fn new(t: &'t TraceView<'v>, config: &Config, scheduler: Scheduler) -> Self {
        let n = t.len();
        let (count, unit) = config
            .array
            .as_ref()
            .map_or((1, 64 * 1024), |a| (a.devices, a.stripe_kib * 1024));
        let layout = Layout {
            level: config.array.as_ref().map(|a| a.level),
            devices: count,
            unit,
        };
        let spec = config.device.spec();
        // offsets past the array fold into it
        let capacity = (spec.capacity_bytes() / unit).max(1) * unit * layout.data_devices() as u64;
        let region = (capacity / t.volumes.len().max(1) as u64 / unit).max(1) * unit;
        Run {
            t,
            layout,
            capacity,
            region,
            controller: config.controller,
            cache: config.controller.as_ref().map(|c| BlockCache::new(c.cache_mib)),
            streams: Streams::default(),
            fills: Vec::new(),
            prefetching: Vec::new(),
            faults: config.faults.clone(),
            bus_rate: config
                .array
                .as_ref()
                .and_then(|a| a.bus_mb_s)
                .map(|mb| mb * 1e6 / 1e9),
            bus_free: 0.0,
            controller_free: 0.0,
            slots: (0..count)
                .map(|_| Slot {
                    device: spec.build(scheduler),
                    ios: 0,
                    busy_ns: 0.0,
                    wake: None,
                })
                .collect(),
            reqs: InFlight::new(n),
            next_prefetch: n,
            arrival: vec![0.0; n],
            ios: Window::default(),
            inflight: 0,
            next_arrival: f64::INFINITY,
            woken: Vec::new(),
            events: BinaryHeap::new(),
            seq: 0,
            turn: 0,
            issue_ns: vec![0; n],
            latency_ns: vec![0; n],
            status: vec![STATUS_OK; n],
            service_sum: 0.0,
            device_ios: 0,
            cache_hits: 0,
            slow_ios: 0,
            failed_ios: 0,
        }
    }

    fn at(&mut self, time: f64, event: Event) {
        self.seq += 1;
        self.events.push(Reverse((time as u64, self.seq, event)));
    }

    fn on_bus(&mut self, done: f64, size: u32) -> f64 {
        match self.bus_rate {
            Some(rate) => {
                let finish = done.max(self.bus_free + f64::from(size) / rate);
                self.bus_free = finish;
                finish
            }
            None => done,
        }
    }

    /// Extra time I/O `io` on `device` takes from injected faults, and whether it fails.
    ///
    /// Sector faults belong to places: each 4 KiB block of each device is bad or not, the same
    /// every time it is touched (as a real bad sector is); intermittent slow writes draw anew
    /// for each I/O.
    fn fault(&mut self, device: usize, io: &Io) -> (f64, bool) {
        let Some(f) = &self.faults else {
            return (0.0, false);
        };
        let seed = f.seed ^ (device as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let first = io.offset / FAULT_BLOCK;
        let last = (io.offset + u64::from(io.size.max(1)) - 1) / FAULT_BLOCK;
        // kinds draw apart: 1 failed sector, 2 slow sector, 3 slow write
        let any = |kind: u64, rate: f64| {
            rate > 0.0 && (first..=last).any(|block| unit_hash2(seed, block, kind) < rate)
        };
        let (mut extra, mut failed) = (0.0, false);
        if any(1, f.failed_sector_rate) {
            self.failed_ios += 1;
            extra += f.fail_ms * 1e6;
            failed = true;
        } else if any(2, f.slow_sector_rate) {
            self.slow_ios += 1;
            extra += f.slow_ms * 1e6;
        }
        if io.write && unit_hash2(seed, io.id as u64, 3) < f.slow_write_rate {
            self.slow_ios += 1;
            extra += f.slow_write_ms * 1e6;
        }
        (extra, failed)
    }

    /// Device I/O `id` as its device sees it.
    fn io(&self, id: usize) -> (usize, Io) {
        let (r, d, _) = self.ios[id];
        let io = Io {
            id,
            offset: d.offset,
            size: d.size,
            write: d.write,
            // a disk cannot tell a prefetch (a background read: it fills the cache) from a
            // demand read; only destages wait until no demand I/O does
            background: self.reqs[r].background && self.reqs[r].fill.is_none(),
        };
        (d.device, io)
    }

    /// Gives device I/O `id` to its device now; it starts or waits in the device's queue.
    fn submit(&mut self, id: usize, now: f64) {
        let (device, io) = self.io(id);
        self.ios[id].2 = now;
        if let Some(served) = self.slots[device].device.submit(io, now) {
            self.started(device, &io, now, served);
        }
        self.rewake(device);
    }

    /// Schedules the wake-up `device` asks for, unless one as early is scheduled already.
    fn rewake(&mut self, device: usize) {
        let Some(at) = self.slots[device].device.next_wake() else {
            return;
        };
        let key = at as u64;
        if self.slots[device].wake.is_some_and(|(k, _)| k <= key) {
            return;
        }
        self.slots[device].wake = Some((key, at));
        self.seq += 1;
        self.events.push(Reverse((key, self.seq, Event::Wake(device))));
    }

    /// `device`'s wake-up scheduled at event time `key` is due: it runs its own work and the
    /// I/Os it finished complete (with the array's faults and bus).
    fn woken(&mut self, device: usize, key: u64) {
        let Some((k, at)) = self.slots[device].wake else {
            return;
        };
        if k != key {
            return; // superseded by an earlier wake-up
        }
        self.slots[device].wake = None;
        let next_event = self
            .events
            .peek()
            .map_or(f64::INFINITY, |Reverse((time, _, _))| *time as f64);
        let horizon = next_event.min(self.next_arrival);
        let mut done = std::mem::take(&mut self.woken);
        self.slots[device].device.wake(at, horizon, &mut done);
        for (id, t) in done.drain(..) {
            let (_, io) = self.io(id);
            self.started(device, &io, self.ios[id].2, t);
        }
        self.woken = done;
        self.rewake(device);
    }

    /// `device` started `io` at `now` and will be done with it at `served`: the array adds
    /// faults and the bus, and the completion is scheduled.
    fn started(&mut self, device: usize, io: &Io, now: f64, served: f64) {
        let (delay, failed) = self.fault(device, io);
        let r = self.ios[io.id].0;
        if failed && r < self.status.len() {
            self.status[r] = EIO;
        }
        let done = self.on_bus(served + delay, io.size);
        self.slots[device].busy_ns += done - now;
        self.service_sum += done - now;
        self.at(done, Event::Done(device, io.id));
    }

    /// Starts a phase of request `r`: its device I/Os all at once.
    fn launch(&mut self, r: usize, now: f64) {
        let req = self.reqs.get_mut(r).expect("a launched request is in flight");
        let p = req.phase;
        let count = req.phases[p].len();
        req.outstanding = count;
        for k in 0..count {
            // by index: the phase stays in the request (no copy of the list per phase)
            let io = self.reqs[r].phases[p][k];
            let id = self.ios.push((r, io, now));
            self.inflight += 1;
            self.device_ios += 1;
            self.slots[io.device].ios += 1;
            self.submit(id, now);
        }
    }

    /// Request `r` (a trace request or a background prefetch), arrived `now`, starts its first
    /// phase at `start` (once the controller has processed it).
    fn request(
        &mut self,
        r: usize,
        now: f64,
        start: f64,
        phases: Vec<Vec<DevIo>>,
        background: bool,
        fill: Option<(u64, u64)>,
    ) {
        if let Some(a) = self.arrival.get_mut(r) {
            *a = now;
        }
        self.reqs.insert(
            r,
            Req {
                phases,
                phase: 0,
                outstanding: 0,
                background,
                fill,
                ahead: None,
            },
        );
        if start <= now {
            self.launch(r, now);
        } else {
            self.at(start, Event::Launch(r));
        }
    }

    /// Trace request `i` arrives at the array now.
    fn issue(&mut self, i: usize, now: f64) {
        // reads completed since the last arrival enter the cache first
        self.fill_cache();
        let t = self.t;
        let op = t.op[i];
        let write = op == Op::Write as u8;
        let size = t.size[i].max(1);
        // offsets past a volume's region fold into it
        let offset = if op == Op::Flush as u8 {
            0
        } else {
            self.region * u64::from(t.volume[i]) + t.offset[i] % self.region
        };
        self.issue_ns[i] = now as u64;
        let mut fill = None;
        let mut prefetch = None;
        let mut with_read = 0;
        let mut background = false;
        let ready = self.admit(now, size);
        if let (Some(c), Some(cache)) = (self.controller, self.cache.as_mut()) {
            if !write && cache.hit(offset, size) {
                self.cache_hits += 1;
                self.arrival[i] = now;
                // the controller moves a hit's data out of its cache itself, one at a time
                let done = ready.max(self.controller_free) + c.hit_us * 1e3;
                self.controller_free = done;
                self.at(done, Event::Finish(i));
                self.keep_ahead(offset + u64::from(size), now, ready);
                return;
            }
            let end = offset + u64::from(size);
            if let Some(p) = self
                .prefetching
                .iter_mut()
                .find(|p| !write && p.0 <= offset && end <= p.1)
            {
                // its data is on its way from the disks: served as a hit once it is in
                p.3.push(i);
                self.arrival[i] = now;
                self.keep_ahead(end, now, ready);
                return;
            }
            if write && c.write_back {
                cache.fill(offset, u64::from(size));
                let done = ready + (c.hit_us + c.mirror_us) * 1e3;
                self.at(done, Event::Finish(i));
                background = true;
            } else if !write {
                fill = Some((offset, u64::from(size)));
                let first = ((f64::from(size) * c.prefetch_multiple) as u64)
                    .max(c.prefetch_min_kib * 1024)
                    .min(c.prefetch_max_kib * 1024);
                // a sequential run just before the read, in the cache: its read-ahead is kept
                let run = u64::from(DETECT_AFTER) * u64::from(size);
                let behind = offset >= run && cache.holds(offset - run, offset);
                let ahead = self
                    .streams
                    .prefetch(offset, end, first, c.prefetch_max_kib * 1024, behind);
                if let Some((from, to)) = self.streams.dropped.take().filter(|_| c.prefetch_per_stream) {
                    cache.drop_unread(from, to);
                }
                let ahead = ahead.min(self.capacity.saturating_sub(end));
                if ahead > 0 {
                    prefetch = Some((end, ahead));
                    // the minimum is read with the request; past it, prefetch is background
                    if c.prefetch_with_read && first > 0 {
                        with_read = ahead.min(first);
                    }
                }
            }
        }
        if let (1.., Some((from, ahead))) = (with_read, prefetch) {
            // one read of the disks for the request and its minimum read-ahead; reads inside
            // that wait for it as for any prefetch under way
            let length = u32::try_from(u64::from(size) + with_read).unwrap_or(u32::MAX);
            let phases = self.layout.map(offset, length, false, &mut self.turn);
            self.prefetching.push((from, from + with_read, i, Vec::new()));
            self.request(i, now, ready, phases, false, fill);
            if let Some(req) = self.reqs.get_mut(i) {
                req.ahead = Some((from, with_read));
            }
            if ahead > with_read {
                self.prefetch(from + with_read, ahead - with_read, now, ready);
            }
            return;
        }
        let phases = self.layout.map(offset, size, write, &mut self.turn);
        self.request(i, now, ready, phases, background, fill);
        // the prefetch reads in the background, behind the request: it waits only for its data
        if let Some((from, ahead)) = prefetch {
            self.prefetch(from, ahead, now, ready);
        }
    }

    /// Puts the reads completed since the last arrival into the cache.
    fn fill_cache(&mut self) {
        if let Some(cache) = self.cache.as_mut() {
            for (offset, length, kind) in self.fills.drain(..) {
                match kind {
                    Fill::Demand => cache.fill(offset, length),
                    Fill::Ahead => cache.fill_ahead(offset, length),
                    Fill::Used => cache.used(offset, u32::try_from(length).unwrap_or(u32::MAX)),
                }
            }
        }
    }

    /// Reads `ahead` bytes from `from` into the cache in the background, from `ready` on.
    fn prefetch(&mut self, from: u64, ahead: u64, now: f64, ready: f64) {
        let length = u32::try_from(ahead).unwrap_or(u32::MAX);
        let phases = self.layout.map(from, length, false, &mut self.turn);
        let r = self.next_prefetch;
        self.next_prefetch += 1;
        self.prefetching.push((from, from + ahead, r, Vec::new()));
        self.request(r, now, ready, phases, true, Some((from, ahead)));
    }

    /// A read served from prefetched data up to `end`: when its stream has used half of what
    /// was read ahead, the next prefetch starts, so a stream keeps finding its data in cache.
    fn keep_ahead(&mut self, end: u64, now: f64, ready: f64) {
        let max = self.controller.map_or(0, |c| c.prefetch_max_kib * 1024);
        if let Some((from, ahead)) = self.streams.extend(end, max) {
            let ahead = ahead.min(self.capacity.saturating_sub(from));
            if ahead > 0 {
                self.prefetch(from, ahead, now, ready);
            }
        }
    }

    /// Prefetch request `r` has its data in the cache at `now`: the reads waiting for it are
    /// served as hits, one at a time by the controller.
    fn prefetched(&mut self, r: usize, now: f64) {
        let Some(k) = self.prefetching.iter().position(|p| p.2 == r) else {
            return;
        };
        let (_, _, _, waiting) = self.prefetching.swap_remove(k);
        let hit = self.controller.map_or(0.0, |c| c.hit_us * 1e3);
        for i in waiting {
            // the read used what was read ahead for it (after the prefetch's own fill)
            let offset = self.region * u64::from(self.t.volume[i]) + self.t.offset[i] % self.region;
            let size = u64::from(self.t.size[i].max(1));
            self.fills.push((offset, size, Fill::Used));
            self.cache_hits += 1;
            let done = now.max(self.controller_free) + hit;
            self.controller_free = done;
            self.at(done, Event::Finish(i));
        }
    }

    /// A request of `size` bytes reaches the controller at `now`; returns when the controller
    /// is done with its command and data (then it is served from cache or goes to the devices).
    /// The controller handles one command at a time, and its data path moves `max_mb_s`.
    fn admit(&mut self, now: f64, size: u32) -> f64 {
        let Some(c) = self.controller else { return now };
        let data = c.max_mb_s.map_or(0.0, |mb| f64::from(size) / (mb * 1e6 / 1e9));
        let work = c.command_us * 1e3 + data;
        if work == 0.0 {
            return now;
        }
        let start = now.max(self.controller_free);
        self.controller_free = start + work;
        self.controller_free
    }

    /// Device I/O `id` on `device` finished now; returns the trace request it completes, if any.
    fn device_done(&mut self, device: usize, id: usize, now: f64) -> Option<usize> {
        // the device takes its next queued I/O before the request moves on
        let (_, io) = self.io(id);
        self.inflight -= 1;
        if let Some((next, served)) = self.slots[device].device.complete(&io, now) {
            self.ios[next.id].2 = now;
            self.started(device, &next, now, served);
        }
        self.rewake(device);
        let r = self.ios[id].0;
        self.ios.retire(id);
        let req = self.reqs.get_mut(r).expect("a request with I/Os is in flight");
        req.outstanding -= 1;
        if req.outstanding > 0 {
            return None;
        }
        req.phase += 1;
        if req.phase < req.phases.len() {
            self.launch(r, now);
            return None;
        }
        let req = self.reqs.remove(r).expect("in flight");
        let background = req.background;
        if let Some((offset, length)) = req.ahead {
            self.fills.push((offset, length, Fill::Ahead));
            self.prefetched(r, now);
        }
        if let Some((offset, length)) = req.fill {
            let kind = if background { Fill::Ahead } else { Fill::Demand };
            self.fills.push((offset, length, kind));
            if background {
                self.prefetched(r, now);
            }
        }
        (!background).then_some(r)
    }

    /// Runs the trace through: every request issued (at its arrival, or as others complete in
    /// a closed loop of depth `closed`) and completed. Returns the simulated span (ns).
    fn replay(&mut self, closed: Option<usize>, intensity: f64, progress: &Progress) -> Result<f64> {
        let t = self.t;
        let n = t.len();
        let start_ts = t.ts_ns.first().copied().unwrap_or(0);
        let arrival_of = |i: usize| (t.ts_ns[i] - start_ts) as f64 / intensity;
        let mut done_count = 0usize;
        let mut next = 0usize;
        let mut last_done = 0.0f64;
        let mut now = 0.0f64;
        if let Some(depth) = closed {
            while next < n.min(depth) {
                self.issue(next, 0.0);
                next += 1;
            }
        }
        loop {
            let next_arrival = (closed.is_none() && next < n).then(|| arrival_of(next));
            self.next_arrival = next_arrival.unwrap_or(f64::INFINITY);
            if next_arrival.is_none() && done_count == n && self.inflight == 0 {
                // all that is left is devices' own work after the run (wake-ups)
                break;
            }
            let next_event = self.events.peek().map(|Reverse((time, _, _))| *time as f64);
            match (next_arrival, next_event) {
                (Some(a), e) if e.is_none_or(|e| a <= e) => {
                    now = a;
                    self.issue(next, now);
                    next += 1;
                }
                (_, Some(_)) => {
                    let Reverse((time, _, event)) = self.events.pop().expect("peeked");
                    let finished = match event {
                        Event::Wake(device) => {
                            self.woken(device, time);
                            continue;
                        }
                        Event::Launch(r) => {
                            self.launch(r, time as f64);
                            continue;
                        }
                        // served by the controller
                        Event::Finish(r) => Some(r),
                        Event::Done(device, id) => self.device_done(device, id, time as f64),
                    };
                    now = time as f64;
                    last_done = last_done.max(now);
                    let Some(r) = finished else { continue };
                    self.latency_ns[r] = (now - self.arrival[r]).max(0.0) as u64;
                    done_count += 1;
                    if done_count.is_multiple_of(PROGRESS_UNIT) {
                        progress.advance(PROGRESS_UNIT as u64);
                        progress.check()?;
                    }
                    if closed.is_some() && next < n {
                        self.issue(next, now);
                        next += 1;
                    }
                }
                _ => break,
            }
        }
        debug_assert_eq!(done_count, n);
        progress.advance((done_count % PROGRESS_UNIT) as u64);
        Ok(last_done.max(now))
    }
}

/// Replays `t` against the device or array of `config`.
pub fn simulate(t: &TraceView<'_>, config: &Config, opts: &SimOptions) -> Result<SimResult> {
    simulate_watched(t, config, opts, &Progress::default())
}

/// [`simulate`], counting completed requests in `progress` (whose total the caller sets) and
/// stopping with `Interrupted` when it is told to.
pub fn simulate_watched(
    t: &TraceView<'_>,
    config: &Config,
    opts: &SimOptions,
    progress: &Progress,
) -> Result<SimResult> {
    let span = t.ts_ns.last().map_or(0, |last| last - t.ts_ns[0]);
    crate::trace::check_time_scale(span, opts.intensity)?;
    if opts.iodepth == Some(0) {
        return Err(Error::Usage("`iodepth` must be at least 1".into()));
    }
    let mut run = Run::new(t, config, opts.scheduler.unwrap_or(config.scheduler));
    let span = run.replay(opts.iodepth, opts.intensity, progress)?;
    // only the per-request results are needed from here on
    run.arrival = Vec::new();
    let members = run
        .slots
        .iter_mut()
        .map(|s| Member {
            ios: s.ios,
            busy_ns: s.busy_ns,
            report: s.device.finish(span),
        })
        .collect();
    let tally = Tally {
        device: &config.name,
        closed: opts.iodepth,
        span,
        latency_ns: &run.latency_ns,
        service_sum: run.service_sum,
        device_ios: run.device_ios,
        cache_hits: run.cache_hits,
        slow_ios: run.slow_ios,
        failed_ios: run.failed_ios,
    };
    let mut figures = figures::summarise(t, &tally, members);
    run.fill_cache();
    if let Some(cache) = run.cache.as_ref().filter(|c| c.prefetched > 0) {
        // what prefetch read, and how much of it no request read (wasted disk and bus time)
        let kib = cache_block_kib();
        figures.counters.insert("prefetched_kib", cache.prefetched * kib);
        figures
            .counters
            .insert("prefetch_unused_kib", cache.unused() * kib);
    }
    Ok(SimResult {
        issue_ns: run.issue_ns,
        latency_ns: run.latency_ns,
        status: run.status,
        figures,
    })
}
