//! A drive's state, and how host requests become flash transactions and back.
//!
//! Requests pass the host link ([`super::host`]), then reads look in the write cache and go to
//! flash page by page; writes enter the cache (acknowledged once their data is in, unless the
//! pages on their way to flash exceed the write buffer: then they wait) and leave for flash at
//! once. A write covering part of a page that holds data reads the rest first. Collection
//! ([`super::gc`]) adds its own transactions; the flash array ([`super::flash`]) times them.

use std::collections::VecDeque;

use super::super::device::{Counters, Device, Gauges, Io, Report};
use super::cache::{Dram, WriteCache};
use super::events::{Event, Events};
use super::flash::{Flash, Op, Tx, HOST_READ, HOST_WRITE, NONE};
use super::ftl::Ftl;
use super::gc::Collector;
use super::host::{HostLink, DOWN, UP};
use super::params::{full_mask, sector_mask, Geometry, HostInterface, PlaneAllocation, SsdParams};
use super::precondition::Layout;

/// A host request in the drive.
#[derive(Debug, Clone, Copy)]
struct Req {
    io: Io,
    /// pages still to be read, or programmed (a write without a cache)
    pending: u32,
    /// when the part of a read served from the cache is out of DRAM
    ready: f64,
}

/// Counts for the report.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub host_programs: u64,
    pub gc_programs: u64,
    pub flash_reads: u64,
    pub cache_read_hits: u64,
    pub partial_rewrites: u64,
    pub write_stalls: u64,
}

pub(super) struct Drive {
    p: SsdParams,
    pub(super) geo: Geometry,
    pub(super) host: HostLink,
    cache: WriteCache,
    dram: Dram,
    pub(super) ftl: Ftl,
    pub(super) flash: Flash,
    pub(super) events: Events,
    pub(super) gc: Collector,
    reqs: Vec<Req>,
    free_reqs: Vec<u32>,
    /// bytes on their way from the cache to flash, and the most allowed
    in_flight: u64,
    buffer: u64,
    /// writes waiting for room in the buffer
    waiting: VecDeque<u32>,
    /// host programs waiting for a free page, per plane
    pub(super) stalled: Vec<VecDeque<u32>>,
    pub(super) tally: Tally,
    done: Vec<(usize, f64)>,
    /// the time the drive has run to
    clock: f64,
}

impl Drive {
    pub(super) fn new(p: &SsdParams) -> Self {
        let geo = p.geometry();
        let collector = Collector::new(p, &geo);
        let live = (p.fill * geo.logical_pages as f64) as u64;
        let layout = if p.aged {
            // an aged drive sits where idle collection leaves it; checked on reading the file
            Layout::aged(&geo, live, collector.resting_free())
                .unwrap_or_else(|_| Layout::sequential(&geo, live))
        } else {
            Layout::sequential(&geo, live)
        };
        let cache_pages = (p.write_cache_mib * 1024.0 * 1024.0 / geo.page_bytes as f64) as usize;
        let mut flash = Flash::new(geo, p.read_us, p.program_us, p.erase_us, p.channel_mb_s);
        let ftl = Ftl::new(geo, &layout, p.plane_allocation == PlaneAllocation::Die);
        for chip in 0..geo.chip_count() {
            flash.set_urgent(chip, !p.gc_preemptible);
        }
        Self {
            host: HostLink::new(
                p.host_rate_mb_s(),
                p.host == HostInterface::Nvme,
                p.command_us,
                p.queue_limit(),
            ),
            cache: WriteCache::new(cache_pages),
            dram: Dram::new(p.cache_mb_s, p.cache_access_ns),
            ftl,
            flash,
            events: Events::default(),
            gc: collector,
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            in_flight: 0,
            buffer: p.write_buffer_pages.unwrap_or(geo.plane_count() as u64) * geo.page_bytes,
            waiting: VecDeque::new(),
            stalled: (0..geo.plane_count()).map(|_| VecDeque::new()).collect(),
            tally: Tally::default(),
            done: Vec::new(),
            clock: 0.0,
            geo,
            p: p.clone(),
        }
    }

    /// Takes host command `io`, arrived at `at`, into the drive. With `now_ok`, a command that
    /// reaches the flash side before anything else happens in the drive is dealt with at once
    /// (as of that time) rather than through an event.
    fn admit(&mut self, io: Io, at: f64, now_ok: bool) {
        self.host.outstanding += 1;
        let req = Req {
            io,
            pending: 0,
            ready: at,
        };
        let r = match self.free_reqs.pop() {
            Some(r) => {
                self.reqs[r as usize] = req;
                r
            }
            None => {
                self.reqs.push(req);
                (self.reqs.len() - 1) as u32
            }
        };
        let mut t = self.host.command(at);
        if io.write {
            t = self.host.transfer(DOWN, t, io.size);
        }
        if now_ok && self.events.next_time().is_none_or(|e| e >= t) {
            self.clock = t;
            self.arrive(r, t);
            self.settle(t);
        } else {
            self.events.push(t, Event::Arrive(r));
        }
    }

    /// Request `r` is done at `at`: its slot and its command's place in the queue free up.
    fn complete(&mut self, r: u32, at: f64) {
        self.done.push((self.reqs[r as usize].io.id, at));
        self.free_reqs.push(r);
        self.host.outstanding -= 1;
        if let Some((io, arrived)) = self.host.waiting.pop_front() {
            self.admit(io, arrived.max(at), false);
        }
    }

    /// The pages of request `r`: (logical page, sector mask, bytes).
    fn pages(&self, r: u32) -> impl Iterator<Item = (u64, u64, u32)> {
        let io = self.reqs[r as usize].io;
        let pb = self.geo.page_bytes;
        let end = io.offset + u64::from(io.size.max(1));
        let (first, last) = (io.offset / pb, (end - 1) / pb);
        let logical = self.geo.logical_pages;
        (first..=last).map(move |page| {
            let (from, to) = (
                io.offset.max(page * pb) - page * pb,
                end.min((page + 1) * pb) - page * pb,
            );
            (page % logical, sector_mask(from, to), (to - from) as u32)
        })
    }

    fn arrive(&mut self, r: u32, now: f64) {
        if self.reqs[r as usize].io.write {
            if self.cache.enabled() && !self.buffer_has_room(r) {
                self.tally.write_stalls += 1;
                self.waiting.push_back(r);
                return;
            }
            self.write(r, now);
        } else {
            self.read(r, now);
        }
    }

    /// Whether write `r`'s data fits beside what is on its way to flash (a write larger than
    /// the whole buffer goes alone).
    fn buffer_has_room(&self, r: u32) -> bool {
        self.in_flight == 0 || self.in_flight + u64::from(self.reqs[r as usize].io.size) <= self.buffer
    }

    fn read(&mut self, r: u32, now: f64) {
        let mut pending = 0;
        let mut hit_bytes = 0;
        for (lpn, mask, bytes) in self.pages(r) {
            if self.cache.holds(lpn, mask) {
                self.tally.cache_read_hits += 1;
                hit_bytes += u64::from(bytes);
                continue;
            }
            // data never written is read where it would be (a trace's reads were of data
            // written before it began)
            let (plane, spot) = self.ftl.locate(lpn);
            let spot = spot.unwrap_or(super::ftl::Spot { block: 0, page: 0 });
            let tx = self.flash.add(Tx::new(
                Op::Read,
                HOST_READ,
                plane as u32,
                (spot.block, spot.page),
                bytes,
                r,
                lpn,
            ));
            self.tally.flash_reads += 1;
            self.flash.enqueue(tx);
            pending += 1;
        }
        // the hits come out of DRAM while the flash reads the rest
        let ready = if hit_bytes > 0 {
            self.dram.access(now, hit_bytes)
        } else {
            now
        };
        let req = &mut self.reqs[r as usize];
        req.pending = pending;
        req.ready = ready;
        if pending == 0 {
            self.read_out(r, now);
        }
    }

    /// Request `r`'s data is all out of flash at `now` (and out of DRAM once it is ready): it
    /// crosses the link back.
    fn read_out(&mut self, r: u32, now: f64) {
        let req = &self.reqs[r as usize];
        let (size, ready) = (req.io.size, req.ready);
        let t = self.host.transfer(UP, now.max(ready), size);
        self.complete(r, t);
    }

    fn write(&mut self, r: u32, now: f64) {
        let cached = self.cache.enabled();
        let full = full_mask(self.geo.page_bytes);
        let mut programs = 0;
        for (lpn, mask, bytes) in self.pages(r) {
            if let Some(p) = self.cache.program(lpn).filter(|&p| !self.flash.tx(p).issued) {
                // joins a program that has not started: it carries the sectors along
                self.cache.write(lpn, mask, p);
                let t = self.flash.tx_mut(p);
                t.bytes = t.bytes.max(bytes);
                t.held += bytes;
                self.in_flight += u64::from(bytes);
                continue;
            }
            let partial = mask != full && !self.cache.holds(lpn, full & !mask);
            let (plane, old) = self.ftl.locate(lpn);
            let rewrite = partial && old.is_some();
            let program = self.flash.add(Tx {
                hold: 1 + u8::from(rewrite),
                held: bytes,
                ..Tx::new(
                    Op::Program,
                    HOST_WRITE,
                    plane as u32,
                    (0, 0),
                    if rewrite {
                        self.geo.page_bytes as u32
                    } else {
                        bytes
                    },
                    if cached { NONE } else { r },
                    lpn,
                )
            });
            if let (true, Some(spot)) = (rewrite, old) {
                // the rest of the page comes from flash first
                self.tally.partial_rewrites += 1;
                let read = self.flash.add(Tx {
                    then: program,
                    ..Tx::new(
                        Op::Read,
                        HOST_READ,
                        plane as u32,
                        (spot.block, spot.page),
                        (self.geo.page_bytes as u32).saturating_sub(bytes),
                        NONE,
                        lpn,
                    )
                });
                self.flash.enqueue(read);
            }
            if cached {
                self.cache.write(lpn, mask, program);
            }
            self.in_flight += u64::from(bytes);
            programs += 1;
            self.place_at(program, old.map(|s| (plane, s)));
        }
        if cached {
            // acknowledged once its data is in DRAM
            let size = u64::from(self.reqs[r as usize].io.size);
            let t = self.dram.access(now, size);
            self.complete(r, t);
        } else {
            self.reqs[r as usize].pending = programs;
            if programs == 0 {
                self.complete(r, now);
            }
        }
    }

    /// Host program `tx` gets its page in flash; it waits for an erase when the plane has none.
    pub(super) fn place(&mut self, tx: u32) {
        let (plane, old) = self.ftl.locate(self.flash.tx(tx).lpn);
        self.place_at(tx, old.map(|s| (plane, s)));
    }

    /// As [`Drive::place`], the page's data known to be at `old` (the caller has just looked).
    fn place_at(&mut self, tx: u32, old: Option<(usize, super::ftl::Spot)>) {
        let lpn = self.flash.tx(tx).lpn;
        match self.ftl.write_host(lpn, old) {
            Ok((plane, spot)) => {
                let t = self.flash.tx_mut(tx);
                (t.plane, t.block, t.page) = (plane as u32, spot.block, spot.page);
                self.release(tx);
                Collector::after_write(self, plane);
            }
            Err(plane) => {
                self.stalled[plane].push_back(tx);
                Collector::after_write(self, plane);
            }
        }
    }

    /// One thing `tx` waited for is there; it queues once nothing is left.
    fn release(&mut self, tx: u32) {
        let t = self.flash.tx_mut(tx);
        t.hold -= 1;
        if t.hold == 0 {
            self.flash.enqueue(tx);
        }
    }

    /// A host transaction finished.
    fn host_done(&mut self, tx: u32, now: f64) {
        let t = *self.flash.tx(tx);
        self.flash.remove(tx);
        match t.op {
            Op::Read if t.then != NONE => self.release(t.then),
            Op::Read => {
                let req = &mut self.reqs[t.owner as usize];
                req.pending -= 1;
                if req.pending == 0 {
                    self.read_out(t.owner, now);
                }
            }
            Op::Program => {
                self.tally.host_programs += 1;
                self.in_flight -= u64::from(t.held);
                self.cache.programmed(t.lpn, tx);
                if t.owner != NONE {
                    let req = &mut self.reqs[t.owner as usize];
                    req.pending -= 1;
                    if req.pending == 0 {
                        self.complete(t.owner, now);
                    }
                }
                while let Some(&r) = self.waiting.front() {
                    if !self.buffer_has_room(r) {
                        break;
                    }
                    self.waiting.pop_front();
                    self.write(r, now);
                }
            }
            Op::Erase => unreachable!("erases belong to collection"),
        }
    }

    fn handle(&mut self, now: f64, event: Event) {
        self.clock = self.clock.max(now);
        match event {
            Event::Arrive(r) => self.arrive(r, now),
            Event::Die(die) => self.flash.die_done(die as usize, now, &mut self.events),
            Event::Bus(ch) => self.flash.bus_done(ch as usize, now),
        }
        self.settle(now);
    }

    /// Deals with the transactions the flash finished (which may queue and finish more) and
    /// offers idle chips background collection, then lets the touched channels start work,
    /// until nothing more happens at this instant.
    fn settle(&mut self, now: f64) {
        loop {
            self.take_finished();
            while let Some(chip) = self.flash.idled.pop() {
                Collector::idle(self, chip as usize);
            }
            if !self.flash.kick_touched(now, &mut self.events) && self.flash.finished.is_empty() {
                break;
            }
        }
    }

    fn take_finished(&mut self) {
        while !self.flash.finished.is_empty() {
            let mut finished = std::mem::take(&mut self.flash.finished);
            for &(tx, at) in &finished {
                if Collector::owns(self.flash.tx(tx)) {
                    Collector::done(self, tx);
                } else {
                    self.host_done(tx, at);
                }
            }
            finished.clear();
            if self.flash.finished.is_empty() {
                self.flash.finished = finished;
            }
        }
    }

    fn report(&mut self, end: f64) -> Report {
        let (die_ns, bus_ns) = self.flash.busy();
        let share = |busy: f64, n: usize| {
            if end > 0.0 {
                (busy / (end * n as f64)).min(1.0)
            } else {
                0.0
            }
        };
        let dies = share(die_ns, self.flash.die_count());
        let t = &self.tally;
        let programs = t.host_programs + t.gc_programs;
        let mut gauges = Gauges::from([
            ("die_utilization", dies),
            ("channel_utilization", share(bus_ns, self.geo.channels)),
            ("host_utilization", self.host.utilization(end)),
        ]);
        if self.p.cache_mb_s.is_some() {
            gauges.insert("cache_dram_utilization", self.dram.utilization(end));
        }
        if t.host_programs > 0 {
            gauges.insert("write_amplification", programs as f64 / t.host_programs as f64);
        }
        let energy = self
            .p
            .power
            .as_ref()
            .map(|w| (w.idle_w + (w.active_w - w.idle_w) * dies) * end / 1e9);
        Report {
            background_ns: 0.0,
            energy_j: energy,
            counters: Counters::from([
                ("flash_reads", t.flash_reads),
                ("flash_programs", programs),
                ("gc_page_moves", t.gc_programs),
                ("gc_erases", self.gc.erases),
                ("cache_read_hits", t.cache_read_hits),
                ("partial_page_rewrites", t.partial_rewrites),
                ("write_buffer_waits", t.write_stalls),
            ]),
            utilization: Some(dies),
            gauges,
        }
    }
}

impl Device for Drive {
    fn submit(&mut self, io: Io, now: f64) -> Option<f64> {
        if self.host.outstanding >= self.host.limit {
            self.host.waiting.push_back((io, now));
        } else {
            self.clock = self.clock.max(now);
            self.admit(io, now, true);
            // served at once (a write into the cache, a read of cached data): said so now
            if let Some(k) = self.done.iter().position(|&(id, _)| id == io.id) {
                return Some(self.done.swap_remove(k).1);
            }
        }
        None
    }

    fn complete(&mut self, _: &Io, _: f64) -> Option<(Io, f64)> {
        None
    }

    fn finish(&mut self, end: f64) -> Report {
        self.report(end)
    }

    fn next_wake(&self) -> Option<f64> {
        // completions found while taking a command in are handed over at once
        if self.done.is_empty() {
            self.events.next_time()
        } else {
            Some(self.clock)
        }
    }

    fn wake(&mut self, now: f64, horizon: f64, done: &mut Vec<(usize, f64)>) {
        // nothing outside the drive happens before the horizon or before the first completion
        // found (the loop reacts to it then, not now): the drive runs on to that point
        let mut until = horizon;
        while let Some(t) = self.events.next_time() {
            until = self.done.iter().fold(until, |u, &(_, at)| u.min(at));
            if t > now && t > until {
                break;
            }
            let (t, event) = self.events.pop().expect("peeked");
            self.handle(t, event);
        }
        done.append(&mut self.done);
    }
}
