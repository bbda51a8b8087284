//! A run's figures: latency and throughput of the requests, and what each device reported.

use std::collections::BTreeMap;

use serde::Serialize;

use super::device::{Counters, Gauges, Report};
use crate::latency::{self, LatencyUs, OpLatency};
use crate::stats::Sketch;
use crate::trace::TraceView;

#[derive(Debug, Clone, Serialize)]
pub struct DeviceFigures {
    pub ios: u64,
    pub utilization: f64,
    /// The kind's own counters (a disk's `buffer_hits` and `destages`, ...), written beside
    /// the figures above.
    #[serde(flatten)]
    pub counters: Counters,
    /// The kind's own shares and ratios (an SSD's `channel_utilization`, ...), beside them too.
    #[serde(flatten)]
    pub gauges: Gauges,
}

impl DeviceFigures {
    /// Counter `name`, 0 when the device's kind has none of that name.
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SimFigures {
    pub device: String,
    pub mode: String,
    pub requests: u64,
    pub duration_s: f64,
    pub iops: f64,
    pub mb_per_s: f64,
    /// The requests' response times (docs/json.md gives the shape).
    pub latency_us: Option<LatencyUs>,
    pub mean_service_us: f64,
    pub device_ios: u64,
    pub devices: Vec<DeviceFigures>,
    pub energy_j: Option<f64>,
    /// Reads the controller's cache served.
    pub cache_hits: u64,
    /// Requests whose offset lay past the region of the device their volume was given (each
    /// volume on a device gets an equal part of it), placed at the offset modulo the region:
    /// their locality is no longer the trace's.
    pub folded_requests: u64,
    /// That region, in bytes.
    pub region_bytes: u64,
    /// Device I/Os slowed or failed by injected faults.
    pub slow_ios: u64,
    pub failed_ios: u64,
    /// The devices' counters summed over the array (`gc_erases`, `destages`, `spin_ups`, ...),
    /// written beside the figures above.
    #[serde(flatten)]
    pub counters: Counters,
    /// The devices' gauges averaged over the array (`die_utilization`, `write_amplification`,
    /// ...), beside them too.
    #[serde(flatten)]
    pub gauges: Gauges,
    /// The latency of each operation that the trace has (read, write, trim, flush), apart, as
    /// characterization and real runs give it.
    pub by_op: BTreeMap<&'static str, OpLatency>,
}

impl SimFigures {
    /// Counter `name` summed over the devices, 0 when their kind has none of that name.
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    /// Gauge `name` averaged over the devices, `None` when their kind has none of that name.
    pub fn gauge(&self, name: &str) -> Option<f64> {
        self.gauges.get(name).copied()
    }
}

/// The engine's account of a run, for [`summarise`].
pub(super) struct Tally<'a> {
    pub device: &'a str,
    /// `Some(depth)` for a closed loop.
    pub closed: Option<usize>,
    /// Simulated time from the first arrival to the last completion (ns).
    pub span: f64,
    pub requests: Requests,
    /// Sum of device I/Os' times from start to completion (ns).
    pub service_sum: f64,
    pub device_ios: u64,
    pub cache_hits: u64,
    /// Requests folded into their volume's region, and its size in bytes.
    pub folded: (u64, u64),
    pub slow_ios: u64,
    pub failed_ios: u64,
}

/// One device's I/Os and time busy as the engine counted them, with its own report.
pub(super) struct Member {
    pub ios: u64,
    pub busy_ns: f64,
    pub report: Report,
}

/// The requests' side of a run's figures: how many, their bytes, their latencies whole and
/// by operation.
#[derive(Debug, Clone, Default)]
pub(super) struct Requests {
    pub count: u64,
    pub bytes: u64,
    pub latency_us: Option<LatencyUs>,
    pub by_op: BTreeMap<&'static str, OpLatency>,
}

impl Requests {
    /// The figures of every latency of `t`'s requests (`latency_ns`, in trace order): exact.
    pub fn exact(t: &TraceView<'_>, latency_ns: &[u64]) -> Self {
        Self {
            count: t.len() as u64,
            bytes: t.size.iter().map(|&s| u64::from(s)).sum(),
            // a copy to take percentiles from, freed before the per-op copies are made
            latency_us: LatencyUs::from_ns(&mut latency_ns.to_vec()),
            by_op: by_op(t, latency_ns),
        }
    }
}

/// Requests counted as they are given and done, for a trace fed in pieces: latencies in
/// sketches (percentiles within 0.1 %, mean and maximum exact).
#[derive(Debug, Default)]
pub(super) struct Sketched {
    count: u64,
    bytes: u64,
    all: Sketch,
    by_op: [Sketch; 4],
}

impl Sketched {
    pub fn fed(&mut self, piece: &TraceView<'_>) {
        self.count += piece.len() as u64;
        self.bytes += piece.size.iter().map(|&s| u64::from(s)).sum::<u64>();
    }

    /// Requests done, their latencies and operations.
    pub fn done(&mut self, latency_ns: &[u64], ops: &[u8]) {
        for (&l, &op) in latency_ns.iter().zip(ops) {
            self.all.record(l);
            self.by_op[usize::from(op).min(3)].record(l);
        }
    }

    pub fn finish(self) -> Requests {
        Requests {
            count: self.count,
            bytes: self.bytes,
            latency_us: LatencyUs::from_sketch(&self.all),
            by_op: latency::by_op_sketched(&self.by_op),
        }
    }
}

pub(super) fn summarise(run: &Tally<'_>, members: Vec<Member>) -> SimFigures {
    let (n, span, bytes) = (run.requests.count, run.span, run.requests.bytes);
    let mut energy = None;
    let mut counters = Counters::new();
    let mut gauges = Gauges::new();
    let count = members.len().max(1) as f64;
    let devices = members
        .into_iter()
        .map(|m| {
            if let Some(e) = m.report.energy_j {
                *energy.get_or_insert(0.0) += e;
            }
            for (&name, &n) in &m.report.counters {
                *counters.entry(name).or_insert(0) += n;
            }
            for (&name, &g) in &m.report.gauges {
                *gauges.entry(name).or_insert(0.0) += g / count;
            }
            // a device's own background work keeps it busy too
            let engine = if span > 0.0 {
                ((m.busy_ns + m.report.background_ns) / span).min(1.0)
            } else {
                0.0
            };
            DeviceFigures {
                ios: m.ios,
                utilization: m.report.utilization.unwrap_or(engine),
                counters: m.report.counters,
                gauges: m.report.gauges,
            }
        })
        .collect();
    SimFigures {
        device: run.device.to_string(),
        mode: run
            .closed
            .map_or_else(|| "open loop".to_string(), |d| format!("closed loop, depth {d}")),
        requests: n,
        duration_s: span / 1e9,
        iops: if span > 0.0 { n as f64 / (span / 1e9) } else { 0.0 },
        mb_per_s: if span > 0.0 {
            bytes as f64 / 1e6 / (span / 1e9)
        } else {
            0.0
        },
        latency_us: run.requests.latency_us,
        mean_service_us: if run.device_ios == 0 {
            0.0
        } else {
            run.service_sum / run.device_ios as f64 / 1e3
        },
        device_ios: run.device_ios,
        devices,
        energy_j: energy,
        cache_hits: run.cache_hits,
        folded_requests: run.folded.0,
        region_bytes: run.folded.1,
        slow_ios: run.slow_ios,
        failed_ios: run.failed_ios,
        counters,
        gauges,
        by_op: run.requests.by_op.clone(),
    }
}

/// Each operation's latency apart.
fn by_op(t: &TraceView<'_>, latency_ns: &[u64]) -> BTreeMap<&'static str, OpLatency> {
    // sized first: pushed into, each list could take up to twice its length
    let mut counts = [0usize; 4];
    for &op in t.op {
        counts[usize::from(op).min(3)] += 1;
    }
    let mut per_op: [Vec<u64>; 4] = counts.map(Vec::with_capacity);
    for (&l, &op) in latency_ns.iter().zip(t.op) {
        per_op[usize::from(op).min(3)].push(l);
    }
    latency::by_op(&mut per_op)
}
