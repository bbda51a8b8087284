//! Array prefetching and workload sequentiality: how well a disk array's prefetch serves
//! workloads that are only nearly sequential, on the simulator's array (by default the
//! FC-60 RAID 5 LUN, `fc60-r5-4disk`).
//!
//! ## Algorithm
//! - `jumps`: 4 KiB reads at 50 per second in runs of `run_counts` contiguous requests; after
//!   each run the next starts `jump` bytes past the run's end, for a sweep of jump distances.
//! - `streams`: N streams at a constant aggregate 100 reads per second, taken in turn; each
//!   reads runs of `run_counts` contiguous 4 KiB requests in its own region and starts each
//!   run at a random place of it (seeded).
//! - a trace: Keeton's sequentiality metrics (jump histogram, run counts, interference), the
//!   share of reads that start less than the minimum prefetch past their volume's previous
//!   request (those prefetch can serve), the service time that share predicts
//!   (`hit_us` for them, the no-prefetch mean for the rest), and the simulated one. The trace
//!   runs at its own times: a trace faster than the array queues, and its times say so.
//!
//! Each runs with every `prefetch_kib` as the controller's minimum prefetch (0 = none), and
//! reports the mean array service time (open loop at the workload's rate) and the share of
//! what prefetch read that no request read. Prefetch reads are ordinary reads at the disks:
//! demand reads queue behind them, and what they read competes for the controller's cache.
//! On the FC-60 a forced minimum is read with the miss (which waits for it) and, with no
//! sequential run behind it in cache, held only while the controller follows its stream:
//! that is what makes prefetch hurt short runs past 8 interleaved streams.
//!
//! ## References
//! Keeton, Alvarez, Riedel, Uysal, "Characterizing I/O-intensive Workload Sequentiality on
//! Modern Disk Arrays" (CAECW 2001).

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::Study;
use crate::analyze::sequentiality::{KeyState, SeqCounts, Sequentiality};
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::random::Prng;
use crate::sim::{self, Config, SimOptions};
use crate::trace::{Op, Trace, TraceView};

pub struct Prefetch;

pub const STUDY: Prefetch = Prefetch;

const KIB: u64 = 1024;
const REQUEST: u64 = 4 * KIB;

fn default_prefetch() -> Vec<u64> {
    vec![0, 64]
}
fn default_runs() -> Vec<u64> {
    vec![4, 256]
}
fn default_requests() -> usize {
    2048
}
fn default_jumps() -> Vec<u64> {
    [0, 4, 16, 32, 48, 64, 128, 256, 512, 1024, 4096, 65536]
        .iter()
        .map(|k| k * KIB)
        .collect()
}
fn default_streams() -> Vec<u64> {
    vec![1, 2, 4, 8, 12, 16, 24, 32, 48, 64]
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The array's device file (TOML text); the FC-60 preset when absent.
    #[serde(default)]
    pub device: Option<String>,
    /// `jumps` or `streams`; the workload itself when absent.
    #[serde(default)]
    pub experiment: Option<String>,
    #[serde(default = "default_prefetch")]
    pub prefetch_kib: Vec<u64>,
    #[serde(default = "default_runs")]
    pub run_counts: Vec<u64>,
    #[serde(default = "default_jumps")]
    pub jump_bytes: Vec<u64>,
    #[serde(default = "default_streams")]
    pub streams: Vec<u64>,
    /// Requests per experiment point.
    #[serde(default = "default_requests")]
    pub requests: usize,
    #[serde(default)]
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub run_count: u64,
    /// The jump distance (jumps) or the number of streams (streams).
    pub x: u64,
    pub prefetch_kib: u64,
    pub mean_service_us: f64,
    pub cache_hit_ratio: f64,
    /// Share of what prefetch read that no request read (evicted first, or never asked for).
    pub prefetch_unused: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TraceRun {
    pub prefetch_kib: u64,
    pub mean_service_us: f64,
    /// Reads starting less than the minimum prefetch past their volume's previous request.
    pub prefetchable_fraction: f64,
    /// Service time the prefetchable share predicts, from the run without prefetch.
    pub predicted_us: f64,
    pub cache_hit_ratio: f64,
    /// Requests a second the array served: below the workload's rate, it could not keep up.
    pub iops: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub device: String,
    pub experiment: Option<String>,
    pub points: Vec<Point>,
    pub sequentiality: Option<Sequentiality>,
    pub runs: Vec<TraceRun>,
}

impl Study for Prefetch {
    fn name(&self) -> &'static str {
        "prefetch"
    }

    fn description(&self) -> &'static str {
        "Array prefetching for nearly sequential workloads (Keeton et al.): jumps in runs and \
         interleaved streams on the FC-60 array, or a trace's sequentiality and its predicted \
         and simulated benefit"
    }

    fn run(
        &self,
        workload: &TraceView<'_>,
        options: &serde_json::Value,
        _progress: &Progress,
    ) -> Result<serde_json::Value> {
        super::typed(self.name(), options, |o: Options| run(workload, &o))
    }

    fn needs_workload(&self) -> bool {
        false
    }
}

fn with_prefetch(base: &Config, kib: u64) -> Result<Config> {
    let mut c = base.clone();
    let ctl = c.controller.as_mut().ok_or_else(|| {
        Error::Usage("`device`: the device file has no [controller] to prefetch with".into())
    })?;
    if kib > ctl.prefetch_max_kib {
        return Err(Error::Usage(format!(
            "`prefetch_kib`: {kib} is above the controller's prefetch_max_kib {}",
            ctl.prefetch_max_kib
        )));
    }
    ctl.prefetch_min_kib = kib;
    Ok(c)
}

/// What a run of a workload on an array gave.
struct Served {
    /// mean latency (µs)
    mean_us: f64,
    /// the controller's hit ratio
    hits: f64,
    /// the share of prefetched data left unread
    unused: f64,
    iops: f64,
}

/// A run of `t` on `device`; open loop at the workload's times (`depth` None), so prefetch
/// reads compete with demand reads at the disks as they would at that rate.
fn service(t: &TraceView<'_>, device: &Config, depth: Option<usize>) -> Result<Served> {
    let opts = SimOptions {
        iodepth: depth,
        ..SimOptions::default()
    };
    let r = sim::simulate(t, device, &opts)?;
    let n = r.latency_ns.len().max(1) as f64;
    let read_ahead = r.figures.counter("prefetched_kib");
    Ok(Served {
        mean_us: r.latency_ns.iter().map(|&l| l as f64).sum::<f64>() / n / 1000.0,
        hits: r.figures.cache_hits as f64 / n,
        unused: if read_ahead == 0 {
            0.0
        } else {
            r.figures.counter("prefetch_unused_kib") as f64 / read_ahead as f64
        },
        iops: r.figures.iops,
    })
}

fn reads(offsets: &[u64], gap_ns: u64) -> Trace {
    let n = offsets.len();
    Trace {
        ts_ns: (0..n as u64).map(|i| i * gap_ns).collect(),
        offset: offsets.to_vec(),
        size: vec![REQUEST as u32; n],
        op: vec![Op::Read as u8; n],
        volume: vec![0; n],
        stream: vec![0; n],
        volumes: vec!["lun".into()],
        ..Trace::default()
    }
}

/// Runs of `run` contiguous requests, each run `jump` past the previous one's end.
pub fn jumps_workload(run: u64, jump: u64, requests: usize, span: u64) -> Trace {
    let mut offsets = Vec::with_capacity(requests);
    let mut at = 0u64;
    for i in 0..requests as u64 {
        if i > 0 && i % run == 0 {
            at += jump;
        }
        offsets.push(at % span / REQUEST * REQUEST);
        at += REQUEST;
    }
    reads(&offsets, 20_000_000)
}

/// `streams` streams in turn at 100 requests/s in all, each in runs of `run` requests started
/// at random places of its own region.
pub fn streams_workload(streams: u64, run: u64, requests: usize, span: u64, seed: u64) -> Trace {
    let mut rng = Prng::new(seed);
    let region = span / streams / REQUEST;
    let mut next: Vec<(u64, u64)> = vec![(0, 0); streams as usize]; // (offset, left in run)
    let mut offsets = Vec::with_capacity(requests);
    for i in 0..requests {
        let s = i % streams as usize;
        if next[s].1 == 0 {
            let start = rng.below(region.saturating_sub(run).max(1));
            next[s] = ((s as u64 * region + start) * REQUEST, run);
        }
        offsets.push(next[s].0);
        next[s].0 += REQUEST;
        next[s].1 -= 1;
    }
    reads(&offsets, 10_000_000)
}

/// The study on `workload` (used when no experiment is named).
pub fn run(workload: &TraceView<'_>, o: &Options) -> Result<Report> {
    let base = match &o.device {
        Some(text) => Config::from_toml(text)?,
        None => Config::preset("fc60-r5-4disk")?,
    };
    if o.prefetch_kib.is_empty() || o.run_counts.contains(&0) || o.streams.contains(&0) || o.requests == 0 {
        return Err(Error::Usage(
            "`prefetch_kib` needs a value; `run_counts`, `streams` and `requests` must be ≥ 1".into(),
        ));
    }
    let span = 32u64 << 30; // well inside the LUN; far jumps wrap around it
    let mut points = Vec::new();
    let mut add = |run: u64, x: u64, t: &Trace| -> Result<()> {
        for &kib in &o.prefetch_kib {
            let s = service(&t.view(), &with_prefetch(&base, kib)?, None)?;
            points.push(Point {
                run_count: run,
                x,
                prefetch_kib: kib,
                mean_service_us: s.mean_us,
                cache_hit_ratio: s.hits,
                prefetch_unused: s.unused,
            });
        }
        Ok(())
    };
    match o.experiment.as_deref() {
        Some("jumps") => {
            for &run in &o.run_counts {
                for &jump in &o.jump_bytes {
                    add(run, jump, &jumps_workload(run, jump, o.requests, span))?;
                }
            }
        }
        Some("streams") => {
            for &run in &o.run_counts {
                for &n in &o.streams {
                    // every stream reads at least one whole run: a point that stops sooner
                    // sees only the starts of long runs
                    let requests = o.requests.max((n * run) as usize);
                    add(run, n, &streams_workload(n, run, requests, span, o.seed))?;
                }
            }
        }
        Some(other) => {
            return Err(Error::Usage(format!(
                "`experiment`: {other:?} is not jumps or streams"
            )));
        }
        None => return on_trace(workload, o, &base),
    }
    Ok(Report {
        device: base.name.clone(),
        experiment: o.experiment.clone(),
        points,
        sequentiality: None,
        runs: Vec::new(),
    })
}

/// A trace's sequentiality, and prefetching's predicted and simulated benefit.
fn on_trace(t: &TraceView<'_>, o: &Options, base: &Config) -> Result<Report> {
    if t.is_empty() {
        return Err(Error::Usage(
            "give a workload or an `experiment` (jumps or streams)".into(),
        ));
    }
    let mut counts = SeqCounts::default();
    let mut keys: FxHashMap<u32, KeyState> = FxHashMap::default();
    let mut last_end: FxHashMap<u32, u64> = FxHashMap::default();
    let mut starts = Vec::new(); // (is a read, distance past the volume's previous request)
    for i in 0..t.len() {
        let (v, off, size) = (t.volume[i], t.offset[i], u64::from(t.size[i]));
        counts.observe(keys.entry(v).or_default(), off, size);
        let past = last_end
            .insert(v, off + size)
            .and_then(|end| off.checked_sub(end));
        starts.push((t.op[i] == Op::Read as u8, past));
    }
    let off_mean = service(t, &with_prefetch(base, 0)?, None)?.mean_us;
    let hit_us = base.controller.as_ref().map_or(0.0, |c| c.hit_us);
    let reads = starts.iter().filter(|s| s.0).count().max(1) as f64;
    let mut runs = Vec::new();
    for &kib in &o.prefetch_kib {
        let s = service(t, &with_prefetch(base, kib)?, None)?;
        let served = starts
            .iter()
            .filter(|s| s.0 && s.1.is_some_and(|d| d < kib * KIB))
            .count() as f64;
        // served reads hit the controller; every other request keeps its no-prefetch time
        let share = served / t.len() as f64;
        runs.push(TraceRun {
            prefetch_kib: kib,
            mean_service_us: s.mean_us,
            prefetchable_fraction: served / reads,
            predicted_us: share * hit_us + (1.0 - share) * off_mean,
            cache_hit_ratio: s.hits,
            iops: s.iops,
        });
    }
    Ok(Report {
        device: base.name.clone(),
        experiment: None,
        points: Vec::new(),
        sequentiality: Some(counts.figures()),
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(experiment: &str) -> Options {
        serde_json::from_value(serde_json::json!({"experiment": experiment, "requests": 1024})).unwrap()
    }

    fn point(r: &Report, run: u64, x: u64, kib: u64) -> &Point {
        r.points
            .iter()
            .find(|p| p.run_count == run && p.x == x && p.prefetch_kib == kib)
            .unwrap()
    }

    fn mean(r: &Report, run: u64, x: u64, kib: u64) -> f64 {
        point(r, run, x, kib).mean_service_us
    }

    #[test]
    fn workloads_are_what_they_say() {
        let t = jumps_workload(4, 8192, 9, 1 << 30);
        assert_eq!(
            t.offset,
            [0, 4096, 8192, 12288, 24576, 28672, 32768, 36864, 49152]
        );
        let s = streams_workload(3, 2, 12, 3 << 20, 1);
        // stream 0's run is contiguous, every third request
        assert_eq!(s.offset[3], s.offset[0] + 4096);
        assert!(s.offset[1] >= 1 << 20 && s.offset[1] < 2 << 20);
    }

    #[test]
    fn jumps_follow_the_papers_findings() {
        let r = run(&Trace::default().view(), &opts("jumps")).unwrap();
        let (short, long) = (4, 256);
        // long runs are fast, with or without prefetch, whatever the jump
        for &j in &default_jumps() {
            assert!(
                mean(&r, long, j, 0) < 0.5 * mean(&r, short, 1 << 20, 0),
                "long run, jump {j}"
            );
        }
        // short runs with small jumps are fast; far jumps are not
        assert!(mean(&r, short, 16 * KIB, 0) < 0.5 * mean(&r, short, 64 << 20, 0));
        // prefetching helps short runs with jumps under about 1 MiB, not far beyond
        for j in [64 * KIB, 128 * KIB, 256 * KIB, 512 * KIB] {
            assert!(mean(&r, short, j, 64) < 0.7 * mean(&r, short, j, 0), "jump {j}");
        }
        assert!(mean(&r, short, 64 << 20, 64) > 0.7 * mean(&r, short, 64 << 20, 0));
    }

    #[test]
    fn past_about_ten_streams_service_time_rises() {
        let r = run(&Trace::default().view(), &opts("streams")).unwrap();
        // without forced prefetch the disks' read-ahead segments follow up to 8 streams
        for n in [1, 2, 4, 8] {
            assert!(mean(&r, 256, n, 0) < 1000.0, "{n} streams");
        }
        for n in [12, 16, 32, 64] {
            assert!(mean(&r, 256, n, 0) > 3.0 * mean(&r, 256, 8, 0), "{n} streams");
        }
        // forced prefetch serves long runs whatever the streams: past the first reads of a run,
        // its read-ahead follows data the cache holds and is kept
        for n in [1, 8, 16, 64] {
            assert!(mean(&r, 256, n, 64) < 0.2 * mean(&r, 256, 64, 0), "{n} streams");
            assert!(mean(&r, 256, n, 64) < mean(&r, 256, n, 0), "{n} streams");
        }
        // prefetch is paid for: a run of four 4 KiB reads leaves 52 of each 64 KiB read ahead
        // unread (disk and bus time for nothing), long runs far less
        for &n in &default_streams() {
            assert!(point(&r, 4, n, 64).prefetch_unused > 0.75, "{n} streams");
            assert!(point(&r, 256, n, 64).prefetch_unused < 0.55, "{n} streams");
            // no minimum: runs of four are never detected as streams, nothing is read ahead
            assert!(point(&r, 4, n, 0).prefetch_unused <= 0.0);
        }
        // with few streams prefetch helps short runs: the read-ahead of a run's first read is
        // held while the controller follows its stream, and the run's other three reads hit
        for n in [1, 2, 4, 8] {
            assert!(mean(&r, 4, n, 64) < mean(&r, 4, n, 0), "{n} streams");
        }
        // Keeton et al.: prefetching is detrimental for short runs with many streams. Past the 8
        // streams it follows, the controller lets go of each run's read-ahead (speculation,
        // with no sequential run behind it in cache) before the run reads on, so every read is
        // a miss that also waits for its 64 KiB minimum: slower than reading 4 KiB alone
        for n in [16, 32, 64] {
            assert!(mean(&r, 4, n, 64) > 1.1 * mean(&r, 4, n, 0), "{n} streams");
            assert!(point(&r, 4, n, 64).cache_hit_ratio < 0.1, "{n} streams");
        }
    }
}
