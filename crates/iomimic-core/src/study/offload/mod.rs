//! Write off-loading for peak loads (Everest), trace-driven on the simulator: each volume of
//! the trace is a client with its own device; stores live on the volumes (store `i` on volume
//! `i mod V`, after that volume's data). The workload runs twice, without off-loading and
//! with it, and each peak's reads and writes are compared.
//!
//! ## Algorithm
//! Requests are routed in time order by the real layer's policy, load meters and map
//! ([`route`]): a volume whose rate reaches its threshold off-loads writes to the
//! least-loaded stores on other volumes that are lightly loaded and have room (`n_way`,
//! `replicas`); reads of off-loaded blocks go to the store; reclaim workers copy extents home
//! while a volume is idle (also after the trace ends, until all is home). Every volume then
//! runs its I/Os (its own, the stores' and reclaim's) on the simulated device; a request's
//! response time is that of its slowest part. By default a volume's threshold is
//! `peak_factor` × the median rate of its busy windows and "lightly loaded" is half of that;
//! peaks are the windows at or above the threshold ([`peaks`]).
//!
//! ## References
//! Narayanan et al., "Everest: scaling down peak loads through I/O off-loading" (mean and
//! 99th-percentile response time of reads and writes per peak, off-load vs not; stores of 3 %
//! of a volume; peaks uncorrelated across volumes).

// Times and windows are checked positive before they are cast.
#![allow(clippy::cast_sign_loss)]

pub mod peaks;
pub mod route;

use serde::{Deserialize, Serialize};

use super::Study;
use crate::error::{Error, Result};
use crate::offload::policy::{Mode, Policy};
use crate::progress::Progress;
use crate::sim::{self, Config, SimOptions};
use crate::trace::{Op, Trace, TraceView};
use route::{Io, StoreSpec, BLOCK, RECLAIM};

pub struct Offload;

pub const STUDY: Offload = Offload;

fn three() -> usize {
    3
}
fn one() -> usize {
    1
}
fn four() -> usize {
    4
}
fn peak_factor() -> f64 {
    3.0
}
fn window_ms() -> f64 {
    1000.0
}
fn unit() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The device file every volume runs on (TOML text).
    pub device: String,
    #[serde(default = "three")]
    pub stores: usize,
    #[serde(default = "one")]
    pub n_way: usize,
    #[serde(default = "one")]
    pub replicas: usize,
    /// Names of the volumes to study (all when absent).
    #[serde(default)]
    pub volumes: Option<Vec<String>>,
    /// Each store's size; 3 % of its volume's span (at least 16 MiB) when absent.
    #[serde(default)]
    pub store_bytes: Option<u64>,
    #[serde(default)]
    pub loaded_iops: Option<f64>,
    #[serde(default)]
    pub light_iops: Option<f64>,
    #[serde(default = "peak_factor")]
    pub peak_factor: f64,
    #[serde(default = "window_ms")]
    pub window_ms: f64,
    /// Reclaim workers per client.
    #[serde(default = "four")]
    pub workers: usize,
    #[serde(default = "unit")]
    pub intensity: f64,
}

/// Response times of one kind of request, without off-loading and with it (ms).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Compare {
    pub requests: u64,
    pub off_mean_ms: f64,
    pub on_mean_ms: f64,
    pub off_p99_ms: f64,
    pub on_p99_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PeakRow {
    pub volume: String,
    pub start_s: f64,
    pub end_s: f64,
    pub peak_iops: f64,
    pub write_share: f64,
    pub reads: Compare,
    pub writes: Compare,
}

#[derive(Debug, Clone, Serialize)]
pub struct VolumeRow {
    pub name: String,
    pub requests: u64,
    pub write_share: f64,
    pub median_iops: f64,
    pub loaded_iops: f64,
    pub light_iops: f64,
    pub offloaded_writes: u64,
    /// From its last off-load until its last block was home; `None` if never drained.
    pub reclaim_s: Option<f64>,
    pub reads: Compare,
    pub writes: Compare,
}

#[derive(Debug, Clone, Serialize)]
pub struct StoreRow {
    pub host: String,
    pub capacity_bytes: u64,
    pub max_used_bytes: u64,
    pub offloads: u64,
    pub reclaimed_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub device: String,
    pub requests: u64,
    pub n_way: usize,
    pub replicas: usize,
    pub window_ms: f64,
    pub volumes: Vec<VolumeRow>,
    pub peaks: Vec<PeakRow>,
    pub stores: Vec<StoreRow>,
    /// Blocks still off-loaded when reclaim gave up (an hour after the trace).
    pub unreclaimed_blocks: u64,
    pub correlation: Vec<peaks::Pair>,
    pub mean_correlation: f64,
}

impl Study for Offload {
    fn name(&self) -> &'static str {
        "offload"
    }

    fn description(&self) -> &'static str {
        "Everest write off-loading for peak loads: volumes' peaks, off-load on vs off, mean and \
         p99 read/write response time per peak, store occupancy, reclaim time, peak correlation"
    }

    fn run(
        &self,
        workload: &TraceView<'_>,
        options: &serde_json::Value,
        _progress: &Progress,
    ) -> Result<serde_json::Value> {
        super::typed("offload", options, |o: Options| study(workload, &o))
    }
}

/// The volumes chosen, as a trace of their own (dense ids, times divided by `intensity`).
fn select(t: &TraceView<'_>, o: &Options) -> Result<Trace> {
    let keep: Vec<Option<u32>> = match &o.volumes {
        None => (0..t.volumes.len() as u32).map(Some).collect(),
        Some(names) => {
            for n in names {
                if !t.volumes.contains(n) {
                    return Err(Error::Usage(format!(
                        "`volumes`: {n:?} is not a volume of the trace (it has {})",
                        t.volumes.join(", ")
                    )));
                }
            }
            let mut next = 0;
            t.volumes
                .iter()
                .map(|v| {
                    names.contains(v).then(|| {
                        next += 1;
                        next - 1
                    })
                })
                .collect()
        }
    };
    let mut out = Trace {
        volumes: t
            .volumes
            .iter()
            .zip(&keep)
            .filter(|(_, k)| k.is_some())
            .map(|(v, _)| v.clone())
            .collect(),
        ..Trace::default()
    };
    for i in 0..t.len() {
        if let Some(v) = keep[t.volume[i] as usize] {
            out.ts_ns.push((t.ts_ns[i] as f64 / o.intensity) as u64);
            out.offset.push(t.offset[i]);
            out.size.push(t.size[i]);
            out.op.push(t.op[i]);
            out.volume.push(v);
            out.stream.push(t.stream[i]);
        }
    }
    Ok(out)
}

fn check(o: &Options) -> Result<()> {
    if o.stores == 0 {
        return Err(Error::Usage("`stores` must be at least 1".into()));
    }
    for (name, value) in [
        ("window_ms", o.window_ms),
        ("peak_factor", o.peak_factor),
        ("intensity", o.intensity),
    ] {
        if !(value > 0.0 && value.is_finite()) {
            return Err(Error::Usage(format!(
                "`{name}` must be a positive number, found {value}"
            )));
        }
    }
    if o.workers == 0 {
        return Err(Error::Usage("`workers` must be at least 1".into()));
    }
    if let Some(bytes) = o.store_bytes.filter(|&b| b < BLOCK || b % BLOCK != 0) {
        return Err(Error::Usage(format!(
            "`store_bytes` must be whole {BLOCK}-byte blocks (the stores' unit), found {bytes}"
        )));
    }
    Ok(())
}

pub fn study(t: &TraceView<'_>, o: &Options) -> Result<Report> {
    check(o)?;
    let device = Config::from_toml(&o.device)?;
    let trace = select(t, o)?;
    let t = trace.view();
    let nv = t.volumes.len();
    if t.is_empty() || nv < 2 {
        return Err(Error::Usage(format!(
            "off-loading needs requests on at least 2 volumes (stores live on other volumes); found {nv}"
        )));
    }
    let window_ns = (o.window_ms * 1e6) as u64;
    let rates = peaks::rates(t.ts_ns, t.volume, nv, window_ns);
    let medians: Vec<f64> = rates.iter().map(|r| peaks::busy_median(r)).collect();
    let policies: Vec<Policy> = medians
        .iter()
        .map(|&m| {
            let loaded = o.loaded_iops.unwrap_or((o.peak_factor * m).max(1.0));
            Policy {
                mode: Mode::Auto,
                loaded_iops: loaded,
                light_iops: o.light_iops.unwrap_or(loaded / 2.0).min(loaded),
                n_way: o.n_way,
                replicas: o.replicas,
            }
        })
        .collect();
    for p in &policies {
        p.check()?;
    }
    let specs = store_specs(&t, o);
    let routed = route::route(&t, &policies, &specs, o.workers);
    let off = latencies_off(&t, &device)?;
    let on = latencies_on(&t, &routed.ios, &device)?;
    let mut peak_rows = Vec::new();
    for (v, r) in rates.iter().enumerate() {
        for (w0, w1) in peaks::peaks(r, policies[v].loaded_iops) {
            let (from, to) = (w0 as u64 * window_ns, (w1 as u64 + 1) * window_ns);
            let rows: Vec<usize> = (0..t.len())
                .filter(|&i| t.volume[i] as usize == v && t.ts_ns[i] >= from && t.ts_ns[i] < to)
                .collect();
            let writes = rows.iter().filter(|&&i| t.op[i] == Op::Write as u8).count();
            peak_rows.push(PeakRow {
                volume: t.volumes[v].clone(),
                start_s: from as f64 / 1e9,
                end_s: to as f64 / 1e9,
                peak_iops: r[w0..=w1].iter().copied().fold(0.0, f64::max),
                write_share: writes as f64 / rows.len().max(1) as f64,
                reads: compare(&t, &rows, Op::Read, &off, &on),
                writes: compare(&t, &rows, Op::Write, &off, &on),
            });
        }
    }
    let volumes = (0..nv)
        .map(|v| {
            let rows: Vec<usize> = (0..t.len()).filter(|&i| t.volume[i] as usize == v).collect();
            let writes = rows.iter().filter(|&&i| t.op[i] == Op::Write as u8).count();
            let vt = &routed.volumes[v];
            VolumeRow {
                name: t.volumes[v].clone(),
                requests: rows.len() as u64,
                write_share: writes as f64 / rows.len().max(1) as f64,
                median_iops: medians[v],
                loaded_iops: policies[v].loaded_iops,
                light_iops: policies[v].light_iops,
                offloaded_writes: vt.offloaded_writes,
                reclaim_s: match (vt.last_offload_ns, vt.drained_ns) {
                    (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64 / 1e9),
                    _ => None,
                },
                reads: compare(&t, &rows, Op::Read, &off, &on),
                writes: compare(&t, &rows, Op::Write, &off, &on),
            }
        })
        .collect();
    let stores = specs
        .iter()
        .zip(&routed.stores)
        .map(|(s, st)| StoreRow {
            host: t.volumes[s.host].clone(),
            capacity_bytes: s.blocks * BLOCK,
            max_used_bytes: st.max_used_blocks * BLOCK,
            offloads: st.offloads,
            reclaimed_bytes: st.reclaimed_blocks * BLOCK,
        })
        .collect();
    let mut correlation = Vec::new();
    for a in 0..nv {
        for b in a + 1..nv {
            let r = peaks::correlation(&rates[a], &rates[b]);
            correlation.push(peaks::Pair {
                a: t.volumes[a].clone(),
                b: t.volumes[b].clone(),
                r,
            });
        }
    }
    let mean_correlation = correlation.iter().map(|p| p.r).sum::<f64>() / correlation.len().max(1) as f64;
    Ok(Report {
        device: device.name.clone(),
        requests: t.len() as u64,
        n_way: o.n_way,
        replicas: o.replicas,
        window_ms: o.window_ms,
        volumes,
        peaks: peak_rows,
        stores,
        unreclaimed_blocks: routed.left_blocks,
        correlation,
        mean_correlation,
    })
}

/// Store `i` on volume `i mod V`, after the volume's data (and after earlier stores there).
fn store_specs(t: &TraceView<'_>, o: &Options) -> Vec<StoreSpec> {
    let nv = t.volumes.len();
    let mut span = vec![0u64; nv];
    for i in 0..t.len() {
        let v = t.volume[i] as usize;
        span[v] = span[v].max(t.offset[i] + u64::from(t.size[i]));
    }
    let mib = 1 << 20;
    let mut next: Vec<u64> = span.iter().map(|s| s.div_ceil(mib) * mib).collect();
    (0..o.stores)
        .map(|i| {
            let host = i % nv;
            let bytes = o.store_bytes.unwrap_or((span[host] * 3 / 100).max(16 * mib));
            let blocks = (bytes / BLOCK).max(1);
            let start = next[host];
            next[host] += blocks * BLOCK;
            StoreSpec { host, start, blocks }
        })
        .collect()
}

/// Each request's response time with every volume on its own device, no off-loading.
fn latencies_off(t: &TraceView<'_>, device: &Config) -> Result<Vec<u64>> {
    let mut out = vec![0u64; t.len()];
    for v in 0..t.volumes.len() {
        let rows: Vec<usize> = (0..t.len()).filter(|&i| t.volume[i] as usize == v).collect();
        let ios: Vec<Io> = rows
            .iter()
            .map(|&i| Io {
                ts_ns: t.ts_ns[i],
                offset: t.offset[i],
                size: t.size[i],
                op: t.op[i],
                owner: i as u32,
            })
            .collect();
        for (io, lat) in ios.iter().zip(simulate(&ios, device)?) {
            out[io.owner as usize] = lat;
        }
    }
    Ok(out)
}

/// Each request's response time with off-loading: the slowest of its parts.
fn latencies_on(t: &TraceView<'_>, ios: &[Vec<Io>], device: &Config) -> Result<Vec<u64>> {
    let mut out = vec![0u64; t.len()];
    for list in ios {
        let mut list = list.clone();
        list.sort_by_key(|io| io.ts_ns);
        for (io, lat) in list.iter().zip(simulate(&list, device)?) {
            if io.owner != RECLAIM {
                let o = &mut out[io.owner as usize];
                *o = (*o).max(lat);
            }
        }
    }
    Ok(out)
}

/// Simulated response times of `ios` (in time order) on one device.
fn simulate(ios: &[Io], device: &Config) -> Result<Vec<u64>> {
    if ios.is_empty() {
        return Ok(Vec::new());
    }
    let t0 = ios[0].ts_ns;
    let trace = Trace {
        ts_ns: ios.iter().map(|io| io.ts_ns - t0).collect(),
        offset: ios.iter().map(|io| io.offset).collect(),
        size: ios.iter().map(|io| io.size).collect(),
        op: ios.iter().map(|io| io.op).collect(),
        volume: vec![0; ios.len()],
        stream: vec![0; ios.len()],
        volumes: vec!["volume".into()],
        ..Trace::default()
    };
    Ok(sim::simulate(&trace.view(), device, &SimOptions::default())?.latency_ns)
}

fn compare(t: &TraceView<'_>, rows: &[usize], op: Op, off: &[u64], on: &[u64]) -> Compare {
    let pick = |lat: &[u64]| -> Vec<u64> {
        rows.iter()
            .filter(|&&i| t.op[i] == op as u8)
            .map(|&i| lat[i])
            .collect()
    };
    let (mut a, mut b) = (pick(off), pick(on));
    let figures = |v: &mut Vec<u64>| {
        crate::latency::LatencyUs::from_ns(v).map_or((0.0, 0.0), |l| (l.mean / 1e3, l.p.p99 / 1e3))
    };
    let (off_mean_ms, off_p99_ms) = figures(&mut a);
    let (on_mean_ms, on_p99_ms) = figures(&mut b);
    Compare {
        requests: a.len() as u64,
        off_mean_ms,
        on_mean_ms,
        off_p99_ms,
        on_p99_ms,
    }
}

#[cfg(test)]
mod tests;
