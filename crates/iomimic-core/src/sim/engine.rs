//! The event loop: arrivals, device queues, phases of array requests, completions.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use serde::Serialize;

use super::controller::{BlockCache, Streams};
use super::hdd::Hdd;
use super::raid::{DevIo, Layout};
use super::ssd::Ssd;
use super::{Config, Controller, DeviceParams, Faults, Scheduler};
use crate::analyze::{self, stats};
use crate::error::{Error, Result};
use crate::trace::{Op, TraceView};

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

#[derive(Debug, Clone, Serialize)]
pub struct DeviceFigures {
    pub ios: u64,
    pub utilization: f64,
    pub buffer_hits: u64,
    /// Writes destaged from a disk's write cache.
    pub destages: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SimFigures {
    pub device: String,
    pub mode: String,
    pub requests: u64,
    pub duration_s: f64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub mean_latency_us: f64,
    pub latency_us: Option<stats::Percentiles>,
    pub mean_service_us: f64,
    pub device_ios: u64,
    pub devices: Vec<DeviceFigures>,
    pub energy_j: Option<f64>,
    pub gc_stalls: u64,
    pub cache_hits: u64,
    pub slow_ios: u64,
    pub failed_ios: u64,
    pub spin_ups: u64,
    pub destages: u64,
    /// The latency of each operation that the trace has (read, write, trim, flush), apart, as
    /// characterization summarises latency.
    pub by_op: std::collections::BTreeMap<&'static str, analyze::Latency>,
}

pub struct SimResult {
    /// Issue time (ns, as simulated) and latency of every request, in trace order.
    pub issue_ns: Vec<u64>,
    pub latency_ns: Vec<u64>,
    pub figures: SimFigures,
}

enum Dev {
    Hdd {
        disk: Hdd,
        queue: VecDeque<usize>,
        busy: bool,
        busy_ns: f64,
        hits: u64,
    },
    Ssd {
        ssd: Ssd,
        busy_ns: f64,
    },
}

#[derive(Default)]
struct Req {
    arrival: f64,
    phases: Vec<Vec<DevIo>>,
    phase: usize,
    outstanding: usize,
    /// the controller already completed it (write-back): the device I/Os are destaging
    background: bool,
    /// array range to cache once the device reads complete (request plus prefetch)
    fill: Option<(u64, u64)>,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// a device I/O finished: (device, io id)
    Done(usize, usize),
    /// a request served by the controller (a cache hit, a write-back write) completes
    Finish(usize),
}

/// A uniform draw in [0, 1) for fault `kind` of I/O `id` (deterministic, seeded).
fn draw(seed: u64, id: usize, kind: u64) -> f64 {
    let mut z =
        seed ^ (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ kind.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

type Events = BinaryHeap<Reverse<(u64, u64, Event)>>;

/// One run's moving parts: devices, requests in flight, the controller, the event queue.
struct Run<'t, 'v> {
    t: &'t TraceView<'v>,
    scheduler: Scheduler,
    layout: Layout,
    /// bytes of the array's address space
    capacity: u64,
    /// each volume gets its own equal region of the array
    region: u64,
    controller: Option<Controller>,
    cache: Option<BlockCache>,
    streams: Streams,
    /// read ranges to cache, from requests whose device reads completed
    fills: Vec<(u64, u64)>,
    faults: Option<Faults>,
    /// a shared back-end bus (bytes per ns): each device I/O's data crosses it in turn
    bus_rate: Option<f64>,
    bus_free: f64,
    devs: Vec<Dev>,
    /// trace requests first, then background prefetches
    reqs: Vec<Req>,
    /// every device I/O: (request, I/O)
    ios: Vec<(usize, DevIo)>,
    events: Events,
    seq: u64,
    turn: usize,
    issue_ns: Vec<u64>,
    latency_ns: Vec<u64>,
    service_sum: f64,
    device_ios: u64,
    cache_hits: u64,
    slow_ios: u64,
    failed_ios: u64,
}

impl Run<'_, '_> {
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

    /// Extra time an I/O takes from injected faults.
    fn fault_delay(&mut self, id: usize, write: bool) -> f64 {
        let Some(f) = &self.faults else { return 0.0 };
        let mut extra = 0.0;
        if draw(f.seed, id, 1) < f.failed_sector_rate {
            self.failed_ios += 1;
            extra += f.fail_ms * 1e6;
        } else if draw(f.seed, id, 2) < f.slow_sector_rate {
            self.slow_ios += 1;
            extra += f.slow_ms * 1e6;
        }
        if write && draw(f.seed, id, 3) < f.slow_write_rate {
            self.slow_ios += 1;
            extra += f.slow_write_ms * 1e6;
        }
        extra
    }

    /// Starts device I/O `id` now; an idle disk begins it, a busy one queues it.
    fn start_io(&mut self, id: usize, now: f64) {
        let io = self.ios[id].1;
        let served = match &mut self.devs[io.device] {
            Dev::Hdd {
                disk,
                queue,
                busy,
                hits,
                ..
            } => {
                if *busy {
                    queue.push_back(id);
                    return;
                }
                *busy = true;
                let s = disk.serve(now, io.offset, io.size, io.write);
                *hits += u64::from(s.buffer_hit);
                now + s.total_ns
            }
            Dev::Ssd { ssd, .. } => ssd.serve(now, io.offset, io.size, io.write),
        };
        let delay = self.fault_delay(id, io.write);
        let done = self.on_bus(served + delay, io.size);
        match &mut self.devs[io.device] {
            Dev::Hdd { busy_ns, .. } | Dev::Ssd { busy_ns, .. } => *busy_ns += done - now,
        }
        self.service_sum += done - now;
        self.at(done, Event::Done(io.device, id));
    }

    /// Starts a phase of request `r`: its device I/Os all at once.
    fn launch(&mut self, r: usize, phase: Vec<DevIo>, now: f64) {
        self.reqs[r].outstanding = phase.len();
        for io in phase {
            self.ios.push((r, io));
            self.device_ios += 1;
            self.start_io(self.ios.len() - 1, now);
        }
    }

    /// Request `r` (a trace request or a background prefetch) starts its first phase now.
    fn request(
        &mut self,
        r: usize,
        now: f64,
        phases: Vec<Vec<DevIo>>,
        background: bool,
        fill: Option<(u64, u64)>,
    ) {
        let first = phases[0].clone();
        self.reqs[r] = Req {
            arrival: now,
            phases,
            phase: 0,
            outstanding: 0,
            background,
            fill,
        };
        self.launch(r, first, now);
    }

    /// Trace request `i` arrives at the array now.
    fn issue(&mut self, i: usize, now: f64) {
        // reads completed since the last arrival enter the cache first
        if let Some(cache) = self.cache.as_mut() {
            for (offset, length) in self.fills.drain(..) {
                cache.fill(offset, length);
            }
        }
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
        let mut background = false;
        if let (Some(c), Some(cache)) = (self.controller, self.cache.as_mut()) {
            if !write && cache.hit(offset, size) {
                self.cache_hits += 1;
                self.reqs[i].arrival = now;
                let done = now + c.hit_us * 1e3;
                self.at(done, Event::Finish(i));
                return;
            }
            if write && c.write_back {
                cache.fill(offset, u64::from(size));
                let done = now + (c.hit_us + c.mirror_us) * 1e3;
                self.at(done, Event::Finish(i));
                background = true;
            } else if !write {
                fill = Some((offset, u64::from(size)));
                let first = ((f64::from(size) * c.prefetch_multiple) as u64)
                    .max(c.prefetch_min_kib * 1024)
                    .min(c.prefetch_max_kib * 1024);
                let end = offset + u64::from(size);
                let ahead = self
                    .streams
                    .prefetch(offset, end, first, c.prefetch_max_kib * 1024);
                let ahead = ahead.min(self.capacity.saturating_sub(end));
                if ahead > 0 {
                    prefetch = Some((end, ahead));
                }
            }
        }
        let phases = self.layout.map(offset, size, write, &mut self.turn);
        self.request(i, now, phases, background, fill);
        // the prefetch reads in the background, behind the request: it waits only for its data
        if let Some((from, ahead)) = prefetch {
            let length = u32::try_from(ahead).unwrap_or(u32::MAX);
            let phases = self.layout.map(from, length, false, &mut self.turn);
            self.reqs.push(Req::default());
            self.request(self.reqs.len() - 1, now, phases, true, Some((from, ahead)));
        }
    }

    /// Device I/O `id` on `device` finished now; returns the trace request it completes, if any.
    fn device_done(&mut self, device: usize, id: usize, now: f64) -> Option<usize> {
        if let Dev::Hdd {
            disk, queue, busy, ..
        } = &mut self.devs[device]
        {
            *busy = false;
            // the disk takes its next queued I/O: demand I/Os first, prefetches and destages
            // wait for an idle moment
            let (reqs, ios) = (&self.reqs, &self.ios);
            let background = |q: usize| reqs[ios[queue[q]].0].background;
            let pick = match self.scheduler {
                Scheduler::Fifo => (0..queue.len()).min_by_key(|&q| (background(q), q)),
                Scheduler::Sstf => {
                    let here = disk.p.cylinder(ios[id].1.offset + u64::from(ios[id].1.size));
                    (0..queue.len()).min_by_key(|&q| {
                        (
                            background(q),
                            disk.p.cylinder(ios[queue[q]].1.offset).abs_diff(here),
                        )
                    })
                }
            };
            if let Some(q) = pick {
                let queued = queue.remove(q).expect("picked from the queue");
                self.start_io(queued, now);
            }
        }
        let r = self.ios[id].0;
        let req = &mut self.reqs[r];
        req.outstanding -= 1;
        if req.outstanding > 0 {
            return None;
        }
        req.phase += 1;
        if req.phase < req.phases.len() {
            let phase = req.phases[req.phase].clone();
            self.launch(r, phase, now);
            return None;
        }
        req.phases = Vec::new();
        if let Some(range) = req.fill.take() {
            self.fills.push(range);
        }
        (!req.background).then_some(r)
    }
}

/// Replays `t` against the device or array of `config`.
pub fn simulate(t: &TraceView<'_>, config: &Config, opts: &SimOptions) -> Result<SimResult> {
    if !(opts.intensity.is_finite() && opts.intensity > 0.0) {
        return Err(Error::Usage(format!(
            "--intensity must be a positive number, found {}",
            opts.intensity
        )));
    }
    if opts.iodepth == Some(0) {
        return Err(Error::Usage("--iodepth must be at least 1".into()));
    }
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
    let device_bytes = match &config.device {
        DeviceParams::Hdd(p) => p.capacity_bytes(),
        DeviceParams::Ssd(p) => p.capacity_bytes(),
    };
    // offsets past the array fold into it
    let capacity = (device_bytes / unit).max(1) * unit * layout.data_devices() as u64;
    let region = (capacity / t.volumes.len().max(1) as u64 / unit).max(1) * unit;
    let devs: Vec<Dev> = (0..count)
        .map(|_| match &config.device {
            DeviceParams::Hdd(p) => Dev::Hdd {
                disk: Hdd::new(p.clone()),
                queue: VecDeque::new(),
                busy: false,
                busy_ns: 0.0,
                hits: 0,
            },
            DeviceParams::Ssd(p) => Dev::Ssd {
                ssd: Ssd::new(p.clone()),
                busy_ns: 0.0,
            },
        })
        .collect();
    let mut run = Run {
        t,
        scheduler: opts.scheduler.unwrap_or(config.scheduler),
        layout,
        capacity,
        region,
        controller: config.controller,
        cache: config.controller.as_ref().map(|c| BlockCache::new(c.cache_mib)),
        streams: Streams::default(),
        fills: Vec::new(),
        faults: config.faults.clone(),
        bus_rate: config
            .array
            .as_ref()
            .and_then(|a| a.bus_mb_s)
            .map(|mb| mb * 1e6 / 1e9),
        bus_free: 0.0,
        devs,
        reqs: (0..n).map(|_| Req::default()).collect(),
        ios: Vec::new(),
        events: BinaryHeap::new(),
        seq: 0,
        turn: 0,
        issue_ns: vec![0; n],
        latency_ns: vec![0; n],
        service_sum: 0.0,
        device_ios: 0,
        cache_hits: 0,
        slow_ios: 0,
        failed_ios: 0,
    };

    let closed = opts.iodepth;
    let start_ts = t.ts_ns.first().copied().unwrap_or(0);
    let arrival_of = |i: usize| (t.ts_ns[i] - start_ts) as f64 / opts.intensity;
    let mut done_count = 0usize;
    let mut next = 0usize;
    let mut last_done = 0.0f64;
    let mut now = 0.0f64;
    if let Some(depth) = closed {
        while next < n.min(depth) {
            run.issue(next, 0.0);
            next += 1;
        }
    }
    loop {
        let next_arrival = (closed.is_none() && next < n).then(|| arrival_of(next));
        let next_event = run.events.peek().map(|Reverse((time, _, _))| *time as f64);
        match (next_arrival, next_event) {
            (Some(a), e) if e.is_none_or(|e| a <= e) => {
                now = a;
                run.issue(next, now);
                next += 1;
            }
            (_, Some(_)) => {
                let Reverse((time, _, event)) = run.events.pop().expect("peeked");
                now = time as f64;
                last_done = last_done.max(now);
                let finished = match event {
                    // served by the controller
                    Event::Finish(r) => Some(r),
                    Event::Done(device, id) => run.device_done(device, id, now),
                };
                let Some(r) = finished else { continue };
                run.latency_ns[r] = (now - run.reqs[r].arrival).max(0.0) as u64;
                done_count += 1;
                if closed.is_some() && next < n {
                    run.issue(next, now);
                    next += 1;
                }
            }
            _ => break,
        }
    }
    debug_assert_eq!(done_count, n);
    let span = last_done.max(now);
    let Run {
        mut devs,
        ios,
        issue_ns,
        latency_ns,
        service_sum,
        device_ios,
        cache_hits,
        slow_ios,
        failed_ios,
        ..
    } = run;
    let bytes: u64 = t.size.iter().map(|&s| u64::from(s)).sum();
    let mut lat: Vec<u64> = latency_ns.clone();
    let mean_latency = if n == 0 {
        0.0
    } else {
        lat.iter().map(|&l| l as f64).sum::<f64>() / n as f64 / 1e3
    };
    let mut per_op: [Vec<u64>; 4] = Default::default();
    for (&l, &op) in latency_ns.iter().zip(t.op) {
        per_op[usize::from(op).min(3)].push(l);
    }
    let by_op = [Op::Read, Op::Write, Op::Trim, Op::Flush]
        .into_iter()
        .zip(&mut per_op)
        .filter_map(|(op, mine)| Some((op.name(), analyze::latency(mine)?)))
        .collect();
    let mut energy = None;
    let mut gc_stalls = 0;
    let mut spin_ups = 0;
    let mut destages = 0;
    let devices = devs
        .iter_mut()
        .map(|d| match d {
            Dev::Hdd {
                disk, busy_ns, hits, ..
            } => {
                disk.finish(span);
                spin_ups += disk.spin_ups;
                destages += disk.destages;
                if disk.p.power.is_some() {
                    *energy.get_or_insert(0.0) += disk.energy_j;
                }
                DeviceFigures {
                    ios: 0,
                    // destaging while idle keeps the disk busy too
                    utilization: if span > 0.0 {
                        ((*busy_ns + disk.background_ns) / span).min(1.0)
                    } else {
                        0.0
                    },
                    buffer_hits: *hits,
                    destages: disk.destages,
                }
            }
            Dev::Ssd { ssd, busy_ns } => {
                ssd.idle_energy(span);
                if ssd.p.power.is_some() {
                    *energy.get_or_insert(0.0) += ssd.energy_j;
                }
                gc_stalls += ssd.gc_stalls;
                DeviceFigures {
                    ios: 0,
                    utilization: if span > 0.0 {
                        (*busy_ns / span).min(1.0)
                    } else {
                        0.0
                    },
                    buffer_hits: 0,
                    destages: 0,
                }
            }
        })
        .collect::<Vec<_>>();
    let mut devices = devices;
    for (_, io) in &ios {
        devices[io.device].ios += 1;
    }
    let figures = SimFigures {
        device: config.name.clone(),
        mode: closed.map_or_else(|| "open loop".to_string(), |d| format!("closed loop, depth {d}")),
        requests: n as u64,
        duration_s: span / 1e9,
        iops: if span > 0.0 { n as f64 / (span / 1e9) } else { 0.0 },
        mb_per_s: if span > 0.0 {
            bytes as f64 / 1e6 / (span / 1e9)
        } else {
            0.0
        },
        mean_latency_us: mean_latency,
        latency_us: stats::percentiles(&mut lat, 1e-3),
        mean_service_us: if device_ios == 0 {
            0.0
        } else {
            service_sum / device_ios as f64 / 1e3
        },
        device_ios,
        devices,
        energy_j: energy,
        gc_stalls,
        cache_hits,
        slow_ios,
        failed_ios,
        spin_ups,
        destages,
        by_op,
    };
    Ok(SimResult {
        issue_ns,
        latency_ns,
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Config, DeviceParams, HddParams};
    use super::*;
    use crate::trace::Trace;

    /// A disk whose numbers are easy by hand: 6,000 rpm (10 ms a turn), 1 GB, 1,000 cylinders,
    /// 100 MB/s everywhere (1 MB a track), seeks 1 / 5 / 10 ms.
    fn disk(read_ahead: bool) -> Config {
        Config {
            name: "hand".into(),
            description: String::new(),
            scheduler: Scheduler::Fifo,
            device: DeviceParams::Hdd(HddParams {
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
                cache_segments: 4,
                segment_kib: 1024,
                read_ahead,
                write_cache: false,
                write_cache_mib: 4.0,
                power: None,
            }),
            array: None,
            controller: None,
            faults: None,
        }
    }

    /// The same disk with a write cache of `mib`.
    fn cached_disk(mib: f64) -> Config {
        let mut c = disk(false);
        if let DeviceParams::Hdd(p) = &mut c.device {
            (p.write_cache, p.write_cache_mib) = (true, mib);
        }
        c
    }

    fn trace(ts: &[u64], offsets: &[u64], size: u32, op: u8) -> Trace {
        let mut t = crate::trace::testing::reads(ts, offsets, size);
        t.op = vec![op; ts.len()];
        t
    }

    #[test]
    fn one_request_by_hand() {
        // cylinder 250 of 1,000: seek 1 + 4·√0.75 = 4.4641 ms; the target (angle 0) comes round
        // at 10 ms; 100 KB at 100 MB/s is 1 ms: 11 ms in all
        let t = trace(&[0], &[250_000_000], 100_000, 0);
        let r = simulate(&t.view(), &disk(false), &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [11_000_000]);
    }

    #[test]
    fn a_cached_write_is_destaged_while_the_disk_is_idle() {
        // the write crosses the bus in 1 ms. Idle from 1 ms, the disk destages it: seek to
        // cylinder 250 (4.4641 ms), wait for angle 0 (the head is at 0.54641 of a turn:
        // 4.5359 ms), write 1 ms — busy until 11 ms. The read arriving at 2 ms waits for that,
        // seeks back (4.4641), waits 4.5359 and reads 1 ms: done at 21 ms, 19 ms after it came.
        let mut t = trace(&[0, 2_000_000], &[250_000_000, 0], 100_000, 0);
        t.op[0] = Op::Write as u8;
        let r = simulate(&t.view(), &cached_disk(4.0), &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [1_000_000, 19_000_000]);
        assert_eq!(r.figures.destages, 1);
        // reads and writes apart
        let ops = &r.figures.by_op;
        assert_eq!(ops.keys().copied().collect::<Vec<_>>(), ["read", "write"]);
        assert_eq!((ops["write"].count, ops["write"].mean_us), (1, 1000.0));
        assert_eq!(ops["read"].percentiles_us.max, 19_000.0);
        // without the cache the write itself takes the 11 ms (the read still ends at 21 ms)
        let r = simulate(&t.view(), &disk(false), &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [11_000_000, 19_000_000]);
        assert_eq!(r.figures.destages, 0);
    }

    #[test]
    fn a_full_write_cache_makes_a_write_wait_for_destaging() {
        // a 0.1 MiB cache holds one 100 KB write: the second, queued behind the first, must
        // first destage it (10 ms, as above, from 1 ms), then crosses the bus: done at 12 ms
        let t = trace(&[0, 0], &[250_000_000, 500_000_000], 100_000, Op::Write as u8);
        let r = simulate(&t.view(), &cached_disk(0.1), &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [1_000_000, 12_000_000]);
        assert_eq!(r.figures.destages, 1);
    }

    #[test]
    fn a_read_of_data_still_in_the_write_cache_is_a_hit() {
        // two writes and a read of the second's range arrive together: the writes cross the bus
        // (1 ms each) and the read finds the data cached, 1 ms more
        let mut t = trace(&[0, 0, 0], &[250_000_000, 500_000_000, 500_000_000], 100_000, 0);
        t.op[0] = Op::Write as u8;
        t.op[1] = Op::Write as u8;
        let r = simulate(&t.view(), &cached_disk(4.0), &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [1_000_000, 2_000_000, 3_000_000]);
        assert_eq!(r.figures.devices[0].buffer_hits, 1);
    }

    #[test]
    fn back_to_back_requests_queue() {
        // the second waits 11 ms, then needs no seek, 9 ms of rotation (the head is at 0.1 of a
        // turn) and 1 ms of transfer: done at 21 ms
        let t = trace(&[0, 0], &[250_000_000, 250_000_000], 100_000, 0);
        let r = simulate(&t.view(), &disk(false), &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [11_000_000, 21_000_000]);
    }

    #[test]
    fn sequential_reads_hit_the_track_buffer() {
        // by 12 ms the disk has read 200 KB ahead from the first read's start: the next 100 KB
        // is a buffer hit, 1 ms at the bus rate
        let t = trace(&[0, 12_000_000], &[250_000_000, 250_100_000], 100_000, 0);
        let r = simulate(&t.view(), &disk(true), &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [11_000_000, 1_000_000]);
        assert_eq!(r.figures.devices[0].buffer_hits, 1);
        let r = simulate(&t.view(), &disk(false), &SimOptions::default()).unwrap();
        assert!(r.latency_ns[1] > 5_000_000);
    }

    #[test]
    fn closed_loop_depth_one_gives_one_over_service_time() {
        let offsets: Vec<u64> = (0..200u64)
            .map(|i| (i * 7919 % 1000) * 1_000_000 + (i % 7) * 4096)
            .collect();
        let t = trace(&vec![0; 200], &offsets, 4096, 0);
        let opts = SimOptions {
            iodepth: Some(1),
            ..SimOptions::default()
        };
        let r = simulate(&t.view(), &disk(false), &opts).unwrap();
        let f = &r.figures;
        assert_eq!(f.device_ios, 200);
        let expected = 1e6 / f.mean_service_us;
        assert!(
            (f.iops - expected).abs() / expected < 1e-6,
            "{} vs {expected}",
            f.iops
        );
    }

    #[test]
    fn sustained_writes_run_at_the_media_rate_not_the_bus_rate() {
        // 3,000 random 4 KiB writes, one at a time, into a 0.5 MiB cache (128 writes): once it
        // fills, every write waits for a destage, so the cache can speed writes up only by
        // ordering destages (nearest first: 1.4x here) — never to the bus rate (25,000/s)
        let offsets: Vec<u64> = (0..3000u64)
            .map(|i| (i * 7919 % 1000) * 1_000_000 + (i * 104_729 % 244) * 4096)
            .collect();
        let t = trace(&vec![0; 3000], &offsets, 4096, Op::Write as u8);
        let opts = SimOptions {
            iodepth: Some(1),
            ..SimOptions::default()
        };
        let through = simulate(&t.view(), &disk(false), &opts).unwrap().figures;
        let cached = simulate(&t.view(), &cached_disk(0.5), &opts).unwrap().figures;
        assert!(
            cached.iops > 1.1 * through.iops && cached.iops < 3.0 * through.iops,
            "{} vs {}",
            cached.iops,
            through.iops
        );
        assert!(cached.destages >= 3000 - 128, "{}", cached.destages);
        assert!(cached.devices[0].utilization > 0.99);
    }

    fn with_controller(prefetch_min_kib: u64) -> Config {
        Config {
            controller: Some(super::super::Controller {
                cache_mib: 16.0,
                write_back: true,
                hit_us: 100.0,
                mirror_us: 50.0,
                prefetch_min_kib,
                prefetch_max_kib: 1024,
                prefetch_multiple: 0.0,
            }),
            ..disk(false)
        }
    }

    #[test]
    fn controller_cache_serves_a_repeated_read() {
        let t = trace(&[0, 50_000_000], &[250_000_000, 250_000_000], 100_000, 0);
        let r = simulate(&t.view(), &with_controller(0), &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [11_000_000, 100_000]);
        assert_eq!((r.figures.cache_hits, r.figures.device_ios), (1, 1));
    }

    #[test]
    fn write_back_completes_in_cache_and_destages_behind() {
        let t = trace(&[0], &[250_000_000], 100_000, 1);
        let r = simulate(&t.view(), &with_controller(0), &SimOptions::default()).unwrap();
        // hit 100 µs + mirror 50 µs; the disk still writes it, finishing at 11 ms
        assert_eq!(r.latency_ns, [150_000]);
        assert_eq!(r.figures.device_ios, 1);
        assert!((r.figures.duration_s - 0.011).abs() < 1e-9);
    }

    #[test]
    fn prefetch_turns_the_next_sequential_read_into_a_hit() {
        let t = trace(&[0, 55_000_000], &[250_000_000, 250_004_096], 4096, 0);
        let r = simulate(&t.view(), &with_controller(64), &SimOptions::default()).unwrap();
        assert_eq!(r.figures.cache_hits, 1);
        assert_eq!(r.latency_ns[1], 100_000);
        // the request itself does not wait for the 64 KiB read behind it
        assert!(r.latency_ns[0] < 10_100_000);
        let r = simulate(&t.view(), &with_controller(0), &SimOptions::default()).unwrap();
        assert_eq!(r.figures.cache_hits, 0);
        assert!(r.latency_ns[1] > 5_000_000);
    }

    #[test]
    fn injected_faults_add_their_delays() {
        let mut config = disk(false);
        config.faults = Some(super::super::Faults {
            slow_sector_rate: 0.0,
            slow_ms: 50.0,
            failed_sector_rate: 1.0,
            fail_ms: 1000.0,
            slow_write_rate: 0.0,
            slow_write_ms: 50.0,
            seed: 7,
        });
        let t = trace(&[0], &[250_000_000], 100_000, 0);
        let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [1_011_000_000]);
        assert_eq!((r.figures.failed_ios, r.figures.slow_ios), (1, 0));

        let f = config.faults.as_mut().unwrap();
        f.failed_sector_rate = 0.0;
        f.slow_write_rate = 1.0;
        let t = trace(&[0], &[250_000_000], 100_000, 1);
        let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
        assert_eq!(r.latency_ns, [61_000_000]);
        assert_eq!((r.figures.failed_ios, r.figures.slow_ios), (0, 1));

        // at a rate of a quarter, about a quarter of 4,000 I/Os are slow, the same ones each run
        let f = config.faults.as_mut().unwrap();
        f.slow_write_rate = 0.0;
        f.slow_sector_rate = 0.25;
        let offsets: Vec<u64> = (0..4000u64).map(|i| i * 100_000).collect();
        let ts: Vec<u64> = (0..4000u64).map(|i| i * 100_000_000).collect();
        let t = trace(&ts, &offsets, 4096, 0);
        let first = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
        let again = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
        assert_eq!(first.latency_ns, again.latency_ns);
        let slow = first.figures.slow_ios;
        assert!((900..1100).contains(&slow), "{slow}");
    }

    #[test]
    fn an_idle_disk_spins_down_and_back_up() {
        let power = |spin_down_s| super::super::hdd::HddPower {
            idle_w: 5.0,
            seek_w: 8.0,
            transfer_w: 6.0,
            standby_w: 1.0,
            spin_down_s,
            spin_up_s: 6.0,
        };
        let mut config = disk(false);
        let DeviceParams::Hdd(p) = &mut config.device else {
            unreachable!()
        };
        p.power = Some(power(Some(10.0)));
        let t = trace(&[0, 100_000_000_000], &[250_000_000, 250_000_000], 100_000, 0);
        let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
        assert_eq!(r.figures.spin_ups, 1);
        // six seconds of spin-up, then at most a turn and the transfer
        assert!(
            (6_000_000_000..6_011_000_000).contains(&r.latency_ns[1]),
            "{}",
            r.latency_ns[1]
        );
        let standby = r.figures.energy_j.unwrap();

        let DeviceParams::Hdd(p) = &mut config.device else {
            unreachable!()
        };
        p.power = Some(power(None));
        let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
        assert_eq!(r.figures.spin_ups, 0);
        assert!(r.latency_ns[1] < 11_000_000);
        // ~100 s idle at 5 W against 10 s idle, ~84 s at 1 W and 6 s spinning up at 8 W
        let awake = r.figures.energy_j.unwrap();
        assert!(awake > 480.0 && standby < 200.0, "{awake} {standby}");
    }

    #[test]
    fn raid5_small_write_is_four_device_ios() {
        let config = Config::preset("fc60-r5-4disk").unwrap();
        let t = trace(&[0], &[0], 4096, 1);
        let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
        assert_eq!(r.figures.device_ios, 4);
        let t = trace(&[0], &[0], 4096, 0);
        assert_eq!(
            simulate(&t.view(), &config, &SimOptions::default())
                .unwrap()
                .figures
                .device_ios,
            1
        );
    }

    #[test]
    fn presets_load_and_bad_files_name_the_field() {
        for (name, _) in super::super::PRESETS {
            assert_eq!(Config::preset(name).unwrap().name, name);
        }
        let e = Config::from_toml("name = \"x\"\n[device]\nkind = \"hdd\"\nrpm = \"fast\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("device file field device"), "{e}");
        let text = super::super::PRESETS[0]
            .1
            .replace("average_seek_ms = 8.5", "average_seek_ms = 30.0");
        let e = Config::from_toml(&text).unwrap_err().to_string();
        assert!(
            e.contains("track_to_track_ms <= average_seek_ms <= full_stroke_ms"),
            "{e}"
        );
        let fc60 = Config::preset("fc60-r5-4disk").unwrap();
        assert!(fc60.controller.is_some());
        let text = format!(
            "{}\n[faults]\nslow_sector_rate = 1.5\n",
            super::super::PRESETS[0].1
        );
        let e = Config::from_toml(&text).unwrap_err().to_string();
        assert!(e.contains("faults.slow_sector_rate"), "{e}");
        let text = format!(
            "{}\n[controller]\ncache_mib = 8\nprefetch_min_kib = 64\nprefetch_max_kib = 16\n",
            super::super::PRESETS[0].1
        );
        let e = Config::from_toml(&text).unwrap_err().to_string();
        assert!(e.contains("controller.prefetch_max_kib"), "{e}");
    }
}
