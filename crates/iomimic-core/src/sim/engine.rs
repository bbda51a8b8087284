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
use std::collections::{BinaryHeap, VecDeque};

use super::controller::{cache_block_kib, BlockCache, Streams, DETECT_AFTER};
use super::device::{Device, Io};
use super::figures::{self, Member, Requests, SimFigures, Sketched, Tally};
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

/// Request ids from here on are the controller's prefetches; trace rows lie below.
const PREFETCH_IDS: usize = 1 << 62;

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

/// The requests in flight by id: trace rows below `n` ([`PREFETCH_IDS`]), the controller's
/// prefetches from `n` on. Each kind starts in id order and mostly ends in it, so each is a [`Window`]: an
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

/// The trace rows a run reads, by row id: a whole trace lent to it, or the rows fed to it a
/// piece at a time that it still holds (from the first not yet done on).
enum Rows<'t, 'v> {
    Lent(&'t TraceView<'v>),
    Fed(FedRows),
}

#[derive(Default)]
struct FedRows {
    /// Id of the first row held.
    base: usize,
    ts: VecDeque<u64>,
    offset: VecDeque<u64>,
    size: VecDeque<u32>,
    op: VecDeque<u8>,
    volume: VecDeque<u32>,
}

impl Rows<'_, '_> {
    /// Rows given so far: ids below this exist.
    fn len(&self) -> usize {
        match self {
            Rows::Lent(t) => t.len(),
            Rows::Fed(f) => f.base + f.ts.len(),
        }
    }

    fn ts(&self, i: usize) -> u64 {
        match self {
            Rows::Lent(t) => t.ts_ns[i],
            Rows::Fed(f) => f.ts[i - f.base],
        }
    }

    /// (offset, size, op, volume) of row `i`.
    fn request(&self, i: usize) -> (u64, u32, u8, u32) {
        match self {
            Rows::Lent(t) => (t.offset[i], t.size[i], t.op[i], t.volume[i]),
            Rows::Fed(f) => {
                let k = i - f.base;
                (f.offset[k], f.size[k], f.op[k], f.volume[k])
            }
        }
    }
}

/// Each trace request's outcome by row id, from the first not yet handed on.
#[derive(Default)]
pub(super) struct Outcomes {
    base: usize,
    /// when it arrived (ns of simulated time; for its latency)
    arrival: VecDeque<f64>,
    pub issue_ns: VecDeque<u64>,
    pub latency_ns: VecDeque<u64>,
    pub status: VecDeque<u8>,
    done: VecDeque<bool>,
}

impl Outcomes {
    /// Room for the outcomes of rows below `rows`.
    fn grow(&mut self, rows: usize) {
        let more = (self.base + self.done.len()..rows).len();
        self.arrival.extend(std::iter::repeat_n(0.0, more));
        self.issue_ns.extend(std::iter::repeat_n(0, more));
        self.latency_ns.extend(std::iter::repeat_n(0, more));
        self.status.extend(std::iter::repeat_n(STATUS_OK, more));
        self.done.extend(std::iter::repeat_n(false, more));
    }

    /// The outcomes of the first rows, up to the first not done, taken out with the rows' ops
    /// (the rows go too: nothing reads a row once it is done).
    fn take_done(&mut self, rows: &mut Rows<'_, '_>) -> (Done, Vec<u8>) {
        let k = self.done.iter().position(|&d| !d).unwrap_or(self.done.len());
        self.base += k;
        self.arrival.drain(..k);
        self.done.drain(..k);
        let mut ops = Vec::new();
        if let Rows::Fed(f) = rows {
            f.base += k;
            f.ts.drain(..k);
            f.offset.drain(..k);
            f.size.drain(..k);
            ops.extend(f.op.drain(..k));
            f.volume.drain(..k);
        }
        let done = Done {
            issue_ns: self.issue_ns.drain(..k).collect(),
            latency_ns: self.latency_ns.drain(..k).collect(),
            status: self.status.drain(..k).collect(),
        };
        (done, ops)
    }
}

/// Where a replay stands between the pieces of a trace fed to it.
#[derive(Default)]
struct Progressed {
    /// the next row to issue
    next: usize,
    done: usize,
    last_done: f64,
    now: f64,
    /// the first row's trace time
    start_ts: Option<u64>,
    /// closed loop: a completion at this time found no row yet to issue in its place
    owed: Option<f64>,
}

/// One run's moving parts: devices, requests in flight, the controller, the event queue.
struct Run<'t, 'v> {
    rows: Rows<'t, 'v>,
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
    out: Outcomes,
    replay: Progressed,
    service_sum: f64,
    device_ios: u64,
    cache_hits: u64,
    /// Requests whose offset lay past their volume's region (folded into it).
    folded: u64,
    slow_ios: u64,
    failed_ios: u64,
}

impl<'t, 'v> Run<'t, 'v> {
    /// A run of `rows` on the device or array of `config`, its volumes (`volumes` of them)
    /// each in its own equal region of it.
    fn new(rows: Rows<'t, 'v>, volumes: usize, config: &Config, scheduler: Scheduler) -> Self {
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
        let region = (capacity / volumes.max(1) as u64 / unit).max(1) * unit;
        let mut out = Outcomes::default();
        out.grow(rows.len());
        Run {
            rows,
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
            reqs: InFlight::new(PREFETCH_IDS),
            next_prefetch: PREFETCH_IDS,
            ios: Window::default(),
            inflight: 0,
            next_arrival: f64::INFINITY,
            woken: Vec::new(),
            events: BinaryHeap::new(),
            seq: 0,
            turn: 0,
            out,
            replay: Progressed::default(),
            service_sum: 0.0,
            device_ios: 0,
            cache_hits: 0,
            folded: 0,
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
        if failed && r < PREFETCH_IDS {
            self.out.status[r - self.out.base] = EIO;
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
        if r < PREFETCH_IDS {
            self.out.arrival[r - self.out.base] = now;
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
        let (offset, size, op, volume) = self.rows.request(i);
        let write = op == Op::Write as u8;
        let size = size.max(1);
        // offsets past a volume's region fold into it
        let offset = if op == Op::Flush as u8 {
            0
        } else {
            self.folded += u64::from(offset >= self.region);
            self.region * u64::from(volume) + offset % self.region
        };
        let k = i - self.out.base;
        self.out.issue_ns[k] = now as u64;
        let mut fill = None;
        let mut prefetch = None;
        let mut with_read = 0;
        let mut background = false;
        let ready = self.admit(now, size);
        if let (Some(c), Some(cache)) = (self.controller, self.cache.as_mut()) {
            if !write && cache.hit(offset, size) {
                self.cache_hits += 1;
                self.out.arrival[k] = now;
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
                self.out.arrival[k] = now;
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
            let (offset, size, _, volume) = self.rows.request(i);
            let offset = self.region * u64::from(volume) + offset % self.region;
            let size = u64::from(size.max(1));
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

    /// Runs the rows given so far through: every request issued (at its arrival, or as others
    /// complete in a closed loop of depth `closed`) and completed. With `end` false more rows
    /// may come, so it stops where it would need one (the next arrival, or a closed loop's next
    /// request) and goes on from there when called again; with `end`, it runs to the last
    /// completion and returns the simulated span (ns).
    fn advance(
        &mut self,
        closed: Option<usize>,
        intensity: f64,
        progress: &Progress,
        end: bool,
    ) -> Result<Option<f64>> {
        let fed = self.rows.len();
        self.out.grow(fed);
        if fed > 0 && self.replay.start_ts.is_none() {
            self.replay.start_ts = Some(self.rows.ts(0));
        }
        let start_ts = self.replay.start_ts.unwrap_or(0);
        if let Some(depth) = closed {
            // the first `depth` requests go out together at the start
            while self.replay.next < fed.min(depth) {
                self.issue(self.replay.next, 0.0);
                self.replay.next += 1;
            }
            if self.replay.next < depth && !end {
                return Ok(None);
            }
            if let Some(at) = self.replay.owed {
                if self.replay.next < fed {
                    self.replay.owed = None;
                    self.issue(self.replay.next, at);
                    self.replay.next += 1;
                } else if end {
                    self.replay.owed = None;
                } else {
                    return Ok(None);
                }
            }
        }
        loop {
            let next = self.replay.next;
            if closed.is_none() && next == fed && !end {
                return Ok(None); // the next arrival is in a piece not given yet
            }
            let next_arrival =
                (closed.is_none() && next < fed).then(|| (self.rows.ts(next) - start_ts) as f64 / intensity);
            self.next_arrival = next_arrival.unwrap_or(f64::INFINITY);
            if next_arrival.is_none() && self.replay.done == fed && self.inflight == 0 {
                // all that is left is devices' own work after the run (wake-ups)
                break;
            }
            let next_event = self.events.peek().map(|Reverse((time, _, _))| *time as f64);
            match (next_arrival, next_event) {
                (Some(a), e) if e.is_none_or(|e| a <= e) => {
                    self.replay.now = a;
                    self.issue(next, a);
                    self.replay.next += 1;
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
                    let now = time as f64;
                    self.replay.now = now;
                    self.replay.last_done = self.replay.last_done.max(now);
                    let Some(r) = finished else { continue };
                    let k = r - self.out.base;
                    self.out.latency_ns[k] = (now - self.out.arrival[k]).max(0.0) as u64;
                    self.out.done[k] = true;
                    self.replay.done += 1;
                    if self.replay.done.is_multiple_of(PROGRESS_UNIT) {
                        progress.advance(PROGRESS_UNIT as u64);
                        progress.check()?;
                    }
                    if closed.is_some() {
                        if self.replay.next < fed {
                            self.issue(self.replay.next, now);
                            self.replay.next += 1;
                        } else if !end {
                            self.replay.owed = Some(now);
                            return Ok(None);
                        }
                    }
                }
                _ => break,
            }
        }
        debug_assert_eq!(self.replay.done, fed);
        progress.advance((self.replay.done % PROGRESS_UNIT) as u64);
        Ok(Some(self.replay.last_done.max(self.replay.now)))
    }

    /// The devices' figures at the end of a run of `span` ns.
    fn members(&mut self, span: f64) -> Vec<Member> {
        self.slots
            .iter_mut()
            .map(|s| Member {
                ios: s.ios,
                busy_ns: s.busy_ns,
                report: s.device.finish(span),
            })
            .collect()
    }

    /// The figures of a run of `span` ns whose requests' latencies and bytes `requests` gives.
    fn figures(&mut self, device: &str, closed: Option<usize>, span: f64, requests: Requests) -> SimFigures {
        let members = self.members(span);
        let tally = Tally {
            device,
            closed,
            span,
            requests,
            service_sum: self.service_sum,
            device_ios: self.device_ios,
            cache_hits: self.cache_hits,
            folded: (self.folded, self.region),
            slow_ios: self.slow_ios,
            failed_ios: self.failed_ios,
        };
        let mut figures = figures::summarise(&tally, members);
        self.fill_cache();
        if let Some(cache) = self.cache.as_ref().filter(|c| c.prefetched > 0) {
            // what prefetch read, and how much of it no request read (wasted disk and bus time)
            let kib = cache_block_kib();
            figures.counters.insert("prefetched_kib", cache.prefetched * kib);
            figures
                .counters
                .insert("prefetch_unused_kib", cache.unused() * kib);
        }
        figures
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
    check_depth(opts)?;
    let mut run = Run::new(
        Rows::Lent(t),
        t.volumes.len(),
        config,
        opts.scheduler.unwrap_or(config.scheduler),
    );
    let span = run
        .advance(opts.iodepth, opts.intensity, progress, true)?
        .expect("a run to the end ends");
    let out = std::mem::take(&mut run.out);
    let (issue_ns, latency_ns, status) = (
        Vec::from(out.issue_ns),
        Vec::from(out.latency_ns),
        Vec::from(out.status),
    );
    let requests = Requests::exact(t, &latency_ns);
    let figures = run.figures(&config.name, opts.iodepth, span, requests);
    Ok(SimResult {
        issue_ns,
        latency_ns,
        status,
        figures,
    })
}

fn check_depth(opts: &SimOptions) -> Result<()> {
    if opts.iodepth == Some(0) {
        return Err(Error::Usage("`iodepth` must be at least 1".into()));
    }
    Ok(())
}

/// A run fed a trace a piece at a time, in time order, for a trace larger than memory: it
/// holds the requests from the first not yet done to the last given (as many as the devices
/// have queued), and hands back each request's outcome in trace order once it and every
/// request before it are done. Its figures are those of the whole trace simulated at once,
/// but for the latency percentiles, taken on HDR histograms (within 0.1 %, the mean and the
/// maximum exact).
pub struct SimStream {
    run: Run<'static, 'static>,
    config: Config,
    opts: SimOptions,
    requests: Sketched,
    last_ts: Option<u64>,
}

/// What came out of a piece: the outcomes of requests done (in trace order, from where the
/// last piece's left off).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Done {
    pub issue_ns: Vec<u64>,
    pub latency_ns: Vec<u64>,
    pub status: Vec<u8>,
}

impl SimStream {
    /// A run on `config` of a trace of `volumes` volumes (each gets its own equal region of
    /// the device, as [`simulate`] gives them).
    pub fn new(config: &Config, opts: &SimOptions, volumes: usize) -> Result<Self> {
        check_depth(opts)?;
        let scheduler = opts.scheduler.unwrap_or(config.scheduler);
        Ok(Self {
            run: Run::new(Rows::Fed(FedRows::default()), volumes, config, scheduler),
            config: config.clone(),
            opts: opts.clone(),
            requests: Sketched::default(),
            last_ts: None,
        })
    }

    /// Runs the next piece's rows (after the last piece's in time) as far as they go.
    pub fn feed(&mut self, piece: &TraceView<'_>, progress: &Progress) -> Result<Done> {
        if let Some(&first) = piece.ts_ns.first() {
            if self.last_ts.is_some_and(|last| first < last) || piece.ts_ns.windows(2).any(|w| w[1] < w[0]) {
                return Err(Error::Usage(
                    "a piece of the trace goes back in time: pieces must come in time order".into(),
                ));
            }
            let start = self.run.replay.start_ts.unwrap_or(first);
            let last = *piece.ts_ns.last().expect("not empty");
            crate::trace::check_time_scale(last - start, self.opts.intensity)?;
            self.last_ts = Some(last);
        }
        let Rows::Fed(rows) = &mut self.run.rows else {
            unreachable!("a stream's rows are fed")
        };
        rows.ts.extend(piece.ts_ns);
        rows.offset.extend(piece.offset);
        rows.size.extend(piece.size);
        rows.op.extend(piece.op);
        rows.volume.extend(piece.volume);
        self.requests.fed(piece);
        self.run
            .advance(self.opts.iodepth, self.opts.intensity, progress, false)?;
        Ok(self.take_done())
    }

    /// Runs to the end of the trace: the outcomes of the last requests and the run's figures.
    pub fn finish(mut self, progress: &Progress) -> Result<(Done, SimFigures)> {
        let span = self
            .run
            .advance(self.opts.iodepth, self.opts.intensity, progress, true)?
            .expect("a run to the end ends");
        let done = self.take_done();
        let requests = std::mem::take(&mut self.requests).finish();
        let figures = self
            .run
            .figures(&self.config.name, self.opts.iodepth, span, requests);
        Ok((done, figures))
    }

    fn take_done(&mut self) -> Done {
        let (done, ops) = self.run.out.take_done(&mut self.run.rows);
        self.requests.done(&done.latency_ns, &ops);
        done
    }
}
