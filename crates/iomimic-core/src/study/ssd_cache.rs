//! SSD caching: what an SSD cache in front of a backend buys a workload, per cache size and
//! policy, for the whole workload and per stream (thread); and whether a synthetic workload
//! predicts it where a locality-free one cannot.
//!
//! ## Algorithm
//! For each workload (the original, a synthetic one from a model trained on it, and the
//! locality-free baseline with the same mix and rate), each policy and each cache size, the
//! workload runs on the two tiers of [`super::tiers`] and, as the baseline, on the backend
//! alone. The SSD tier of a cache of size C is ⌈C / `ssd_bytes`⌉ SSDs striped together
//! (progressive caching: adding 8 GB SSDs one at a time, as the TPC study did). Speedup is the
//! baseline's figure over the cached one's: mean and 99th-percentile latency, and throughput
//! (requests over the time to the last completion).
//!
//! ## References
//! Delimitrou et al., "Time and Cost-Efficient Modeling and Generation of Large-Scale
//! TPCC/TPCE/TPCH Workloads" (SSD caching, Figures 6 and 7); Delimitrou et al., "Decoupling
//! Datacenter Studies from Access to Large-Scale Applications" (progressive SSD caching).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tiers::{self, Hits, Keying, TierRun, WritePolicy};
use super::Study;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::sim::{Array, Config, Level};
use crate::trace::{Trace, TraceView};

pub struct SsdCache;

pub const STUDY: SsdCache = SsdCache;

fn default_policies() -> Vec<String> {
    vec!["lru".into()]
}
fn default_ssd_bytes() -> u64 {
    8_000_000_000
}
#[allow(clippy::unnecessary_wraps)] // serde's default for an optional field
fn default_block() -> Option<u64> {
    Some(4096)
}
fn default_workloads() -> Vec<Workload> {
    vec![Workload::Original]
}
fn one() -> f64 {
    1.0
}
fn default_seed() -> u64 {
    1
}
fn yes() -> bool {
    true
}

/// A workload the study runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// The workload given.
    Original,
    /// Generated from a model trained on it.
    Synthetic,
    /// Its mix, sizes and gaps at uniformly random offsets (what IOMeter generates).
    LocalityFree,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The backend's device file (TOML text).
    pub backend: String,
    /// One SSD's device file (TOML text).
    pub ssd: String,
    /// Bytes an SSD of the cache tier holds.
    #[serde(default = "default_ssd_bytes")]
    pub ssd_bytes: u64,
    /// Cache sizes in bytes.
    pub cache_bytes: Vec<u64>,
    #[serde(default = "default_policies")]
    pub policies: Vec<String>,
    pub write_policy: WritePolicy,
    /// Cache block size in bytes; `null`: each request is one object (libCacheSim's keying).
    #[serde(default = "default_block")]
    pub block_bytes: Option<u64>,
    #[serde(default = "default_workloads")]
    pub workloads: Vec<Workload>,
    /// Divides the workload's times.
    #[serde(default = "one")]
    pub intensity: f64,
    /// Seed of the synthetic and locality-free workloads.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Speedups per stream too.
    #[serde(default = "yes")]
    pub by_stream: bool,
}

/// Latency and throughput of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Perf {
    pub mean_us: f64,
    pub p99_us: f64,
    pub iops: f64,
    pub energy_j: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamSpeedup {
    pub stream: u32,
    pub requests: u64,
    pub read_fraction: f64,
    pub hit_ratio: f64,
    /// Baseline mean latency over cached mean latency.
    pub speedup: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheRun {
    pub policy: String,
    pub cache_bytes: u64,
    /// SSDs in the cache tier.
    pub ssds: u64,
    /// Reads served from the cache, by count and by bytes.
    pub hit_ratio: f64,
    pub byte_hit_ratio: f64,
    pub perf: Perf,
    /// Baseline over cached: mean latency, 99th-percentile latency, and throughput (cached
    /// over baseline).
    pub speedup: f64,
    pub p99_speedup: f64,
    pub iops_speedup: f64,
    pub streams: Vec<StreamSpeedup>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadReport {
    pub workload: Workload,
    pub requests: u64,
    pub baseline: Perf,
    pub runs: Vec<CacheRun>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub backend: String,
    pub ssd: String,
    pub write_policy: WritePolicy,
    /// `"4096 B blocks"` or `"requests"`.
    pub keyed_by: String,
    pub intensity: f64,
    pub workloads: Vec<WorkloadReport>,
    /// For each policy and size: the synthetic workload's speedup relative to the original's
    /// (1 is a perfect prediction), and the locality-free one's, when both were run.
    pub predictions: Vec<Prediction>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    pub policy: String,
    pub cache_bytes: u64,
    pub original_speedup: f64,
    pub synthetic_speedup: Option<f64>,
    pub locality_free_speedup: Option<f64>,
    /// (synthetic − original) / original speedup.
    pub synthetic_error: Option<f64>,
}

impl Study for SsdCache {
    fn name(&self) -> &'static str {
        "ssd-cache"
    }

    fn description(&self) -> &'static str {
        "an SSD cache in front of a backend: hit ratios and speedups per size, policy and stream"
    }

    fn run(
        &self,
        workload: &TraceView<'_>,
        options: &serde_json::Value,
        progress: &Progress,
    ) -> Result<serde_json::Value> {
        super::typed(self.name(), options, |o: Options| run(workload, &o, progress))
    }

    /// One point per policy and cache size, policy by policy as `run` goes.
    fn points(&self, options: &serde_json::Value) -> Result<Option<Vec<serde_json::Value>>> {
        let o: Options = super::parse_options(self.name(), options)?;
        check(&o)?;
        let by_policy = super::each_of(options, "policies", &o.policies);
        Ok(Some(
            by_policy
                .iter()
                .flat_map(|p| super::each_of(p, "cache_bytes", &o.cache_bytes))
                .collect(),
        ))
    }

    /// Each workload's runs, point after point; its baseline and size are every point's (the
    /// same workload on the same backend), and the predictions are drawn from the whole.
    fn join(&self, options: &serde_json::Value, reports: &[serde_json::Value]) -> Result<serde_json::Value> {
        let expected = self.points(options)?.map_or(0, |p| p.len());
        let mut points = super::point_reports::<PointReport>(self.name(), expected, reports)?.into_iter();
        let mut whole = points
            .next()
            .ok_or_else(|| Error::Usage("study ssd-cache: no points".into()))?;
        for point in points {
            if point.workloads.len() != whole.workloads.len() {
                return Err(Error::Usage("study ssd-cache: points of other workloads".into()));
            }
            for (w, p) in whole.workloads.iter_mut().zip(point.workloads) {
                w.runs.extend(p.runs);
            }
        }
        let report = Report {
            predictions: predictions(&whole.workloads),
            backend: whole.backend,
            ssd: whole.ssd,
            write_policy: whole.write_policy,
            keyed_by: whole.keyed_by,
            intensity: whole.intensity,
            workloads: whole.workloads,
        };
        serde_json::to_value(report).map_err(|e| Error::Usage(format!("study ssd-cache: {e}")))
    }
}

/// What a point's report adds to the whole: all but its predictions (which the whole's
/// replace, and which may hold a NaN that JSON keeps as null).
#[derive(Deserialize)]
struct PointReport {
    backend: String,
    ssd: String,
    write_policy: WritePolicy,
    keyed_by: String,
    intensity: f64,
    workloads: Vec<WorkloadReport>,
}

/// The most SSDs one cache is striped over.
const MAX_SSDS: u64 = 256;

fn check(o: &Options) -> Result<()> {
    if o.cache_bytes.is_empty() || o.cache_bytes.contains(&0) {
        return Err(Error::Usage(
            "`cache_bytes`: give at least one positive size".into(),
        ));
    }
    if o.policies.is_empty() {
        return Err(Error::Usage("`policies`: give at least one".into()));
    }
    crate::trace::check_intensity(o.intensity)?;
    if o.ssd_bytes == 0 {
        return Err(Error::Usage("`ssd_bytes` must be positive".into()));
    }
    // a cache is as many SSDs as it needs, striped; each simulated SSD keeps its flash state
    // (about 4 MB whatever its size), so a size given without its unit must not ask for
    // millions of them
    let largest = o.cache_bytes.iter().max().copied().unwrap_or(0);
    let ssds = largest.div_ceil(o.ssd_bytes);
    if ssds > MAX_SSDS {
        return Err(Error::Usage(format!(
            "`ssd_bytes`: a cache of {largest} bytes would take {ssds} SSDs of {} bytes; at most \
             {MAX_SSDS} (a size without a unit is bytes: 8G is 8 GiB)",
            o.ssd_bytes
        )));
    }
    if let Some(block) = o.block_bytes {
        super::check_block_bytes(block)?;
        if let Some(small) = o.cache_bytes.iter().find(|&&c| c < block) {
            return Err(Error::Usage(format!(
                "`cache_bytes`: {small} bytes hold no block of {block} (`block_bytes`)"
            )));
        }
    }
    Ok(())
}

/// Studies each workload made from `original` (one unit of `progress` each).
pub fn run(original: &TraceView<'_>, o: &Options, progress: &Progress) -> Result<Report> {
    check(o)?;
    let backend = Config::from_toml(&o.backend)?;
    let ssd = Config::from_toml(&o.ssd)?;
    let policies = o
        .policies
        .iter()
        .map(|p| tiers::policy(p))
        .collect::<Result<Vec<_>>>()?;
    let mut reports = Vec::new();
    progress.add_total(o.workloads.len() as u64);
    for &w in &o.workloads {
        progress.check()?;
        let trace = workload(original, w, o.seed)?;
        let scaled = scale(&trace.view(), o.intensity);
        reports.push(study_workload(&scaled.view(), w, o, &policies, &backend, &ssd)?);
        progress.advance(1);
    }
    Ok(Report {
        backend: backend.name.clone(),
        ssd: ssd.name.clone(),
        write_policy: o.write_policy,
        keyed_by: o
            .block_bytes
            .map_or_else(|| "requests".to_string(), |b| format!("{b} B blocks")),
        intensity: o.intensity,
        predictions: predictions(&reports),
        workloads: reports,
    })
}

/// The workload of kind `w` made from `original`.
fn workload(original: &TraceView<'_>, w: Workload, seed: u64) -> Result<Trace> {
    let n = original.len() as u64;
    match w {
        Workload::Original => Ok(to_trace(original)),
        Workload::Synthetic => {
            let opts = crate::model::TrainOptions {
                seed,
                ..crate::model::TrainOptions::default()
            };
            let model = crate::model::train(original, &opts)?;
            let gen = crate::model::GenerateOptions {
                requests: Some(n),
                seed,
                ..crate::model::GenerateOptions::default()
            };
            crate::model::generate(&model, &gen)
        }
        Workload::LocalityFree => crate::synth::generate_locality_free(original, n, seed),
    }
}

fn to_trace(t: &TraceView<'_>) -> Trace {
    Trace {
        ts_ns: t.ts_ns.to_vec(),
        offset: t.offset.to_vec(),
        size: t.size.to_vec(),
        op: t.op.to_vec(),
        volume: t.volume.to_vec(),
        stream: t.stream.to_vec(),
        latency_ns: None,
        file: None,
        status: None,
        volumes: t.volumes.to_vec(),
        files: t.files.to_vec(),
    }
}

/// `t` with its times divided by `intensity` and its recorded latencies dropped.
fn scale(t: &TraceView<'_>, intensity: f64) -> Trace {
    let mut out = to_trace(t);
    let first = t.ts_ns.first().copied().unwrap_or(0);
    if (intensity - 1.0).abs() > f64::EPSILON {
        for ts in &mut out.ts_ns {
            // times are non-negative and the intensity positive
            #[allow(clippy::cast_sign_loss)]
            let scaled = ((*ts - first) as f64 / intensity) as u64;
            *ts = scaled;
        }
    }
    out
}

/// The cache tier for a cache of `bytes`: enough SSDs of `ssd_bytes`, striped.
fn ssd_tier(ssd: &Config, bytes: u64, ssd_bytes: u64) -> (Config, u64) {
    let count = bytes.div_ceil(ssd_bytes).max(1);
    let mut tier = ssd.clone();
    if count > 1 {
        tier.array = Some(Array {
            level: Level::Raid0,
            devices: usize::try_from(count).unwrap_or(usize::MAX),
            stripe_kib: 64,
            bus_mb_s: None,
        });
    }
    (tier, count)
}

fn study_workload(
    t: &TraceView<'_>,
    w: Workload,
    o: &Options,
    policies: &[&'static crate::cache::PolicySpec],
    backend: &Config,
    ssd: &Config,
) -> Result<WorkloadReport> {
    let base = tiers::baseline(t, backend)?;
    let base_perf = perf(t, &base);
    let keying = o.block_bytes.map_or(Keying::Requests, Keying::Blocks);
    let lru_depths = match keying {
        Keying::Blocks(b) if policies.iter().any(|p| p.name == "lru") => {
            Some(tiers::lru_depths(t, b, o.write_policy))
        }
        _ => None,
    };
    // each (policy, size) is its own cache and simulation: on every core, in order
    let cells: Vec<(&crate::cache::PolicySpec, u64)> = policies
        .iter()
        .flat_map(|&policy| o.cache_bytes.iter().map(move |&bytes| (policy, bytes)))
        .collect();
    let runs = crate::parallel::on_all_cores(cells, |(policy, bytes)| -> Result<CacheRun> {
        let hits = match (&lru_depths, keying) {
            (Some(depths), Keying::Blocks(b)) if policy.name == "lru" => {
                tiers::lru_hits(t, depths, b, bytes, o.write_policy)
            }
            _ => tiers::replay_hits(t, policy, bytes, keying, o.write_policy),
        };
        let (tier, ssds) = ssd_tier(ssd, bytes, o.ssd_bytes);
        let run = tiers::tiered(t, &hits, o.write_policy, backend, &tier)?;
        let p = perf(t, &run);
        Ok(CacheRun {
            policy: policy.name.to_string(),
            cache_bytes: bytes,
            ssds,
            hit_ratio: hits.hit_ratio(),
            byte_hit_ratio: hits.byte_hit_ratio(),
            speedup: ratio(base_perf.mean_us, p.mean_us),
            p99_speedup: ratio(base_perf.p99_us, p.p99_us),
            iops_speedup: ratio(p.iops, base_perf.iops),
            streams: if o.by_stream {
                streams(t, &hits, &base, &run)
            } else {
                Vec::new()
            },
            perf: p,
        })
    })
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    Ok(WorkloadReport {
        workload: w,
        requests: t.len() as u64,
        baseline: base_perf,
        runs,
    })
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

fn perf(t: &TraceView<'_>, run: &TierRun) -> Perf {
    let n = run.latency_ns.len().max(1) as f64;
    let mean = run.latency_ns.iter().map(|&l| l as f64).sum::<f64>() / n;
    let mut sorted = run.latency_ns.clone();
    let p99 = crate::analyze::stats::percentiles(&mut sorted, 1e-3).map_or(0.0, |p| p.p99);
    Perf {
        mean_us: mean / 1e3,
        p99_us: p99,
        iops: if run.span_ns > 0 {
            t.len() as f64 / (run.span_ns as f64 / 1e9)
        } else {
            0.0
        },
        energy_j: run.energy_j,
    }
}

/// Each stream's speedup: its requests' mean latency without the cache over with it.
fn streams(t: &TraceView<'_>, hits: &Hits, base: &TierRun, cached: &TierRun) -> Vec<StreamSpeedup> {
    #[derive(Default)]
    struct Acc {
        n: u64,
        reads: u64,
        hits: u64,
        base: f64,
        cached: f64,
    }
    let mut by: BTreeMap<u32, Acc> = BTreeMap::new();
    for i in 0..t.len() {
        let a = by.entry(t.stream[i]).or_default();
        a.n += 1;
        if t.op[i] == crate::trace::Op::Read as u8 {
            a.reads += 1;
            a.hits += u64::from(hits.hit[i]);
        }
        a.base += base.latency_ns[i] as f64;
        a.cached += cached.latency_ns[i] as f64;
    }
    by.into_iter()
        .map(|(stream, a)| StreamSpeedup {
            stream,
            requests: a.n,
            read_fraction: a.reads as f64 / a.n as f64,
            hit_ratio: if a.reads > 0 {
                a.hits as f64 / a.reads as f64
            } else {
                0.0
            },
            speedup: ratio(a.base, a.cached),
        })
        .collect()
}

fn predictions(reports: &[WorkloadReport]) -> Vec<Prediction> {
    let find = |w: Workload| reports.iter().find(|r| r.workload == w);
    let Some(original) = find(Workload::Original) else {
        return Vec::new();
    };
    let speedup_of = |w: Workload, run: &CacheRun| {
        find(w).and_then(|r| {
            r.runs
                .iter()
                .find(|x| x.policy == run.policy && x.cache_bytes == run.cache_bytes)
                .map(|x| x.speedup)
        })
    };
    original
        .runs
        .iter()
        .map(|run| {
            let synthetic = speedup_of(Workload::Synthetic, run);
            Prediction {
                policy: run.policy.clone(),
                cache_bytes: run.cache_bytes,
                original_speedup: run.speedup,
                synthetic_speedup: synthetic,
                locality_free_speedup: speedup_of(Workload::LocalityFree, run),
                synthetic_error: synthetic.map(|s| (s - run.speedup) / run.speedup),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::testing::reads;

    fn preset(name: &str) -> String {
        crate::sim::PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, text)| (*text).to_string())
            .unwrap()
    }

    #[test]
    fn a_sweep_run_point_by_point_joins_into_the_whole_report() {
        let ts: Vec<u64> = (0..3000).map(|i| i * 200_000).collect();
        let offsets: Vec<u64> = (0..3000).map(|i| (i * 7919 % 900) * 4096).collect();
        let t = reads(&ts, &offsets, 4096);
        let options = serde_json::json!({
            "backend": preset("hdd-7200"),
            "ssd": preset("ssd-sata"),
            "cache_bytes": [1 << 20, 2 << 20, 8 << 20],
            "policies": ["lru", "s3fifo"],
            "write_policy": "write-through",
            "workloads": ["original", "locality-free"],
        });
        let study = SsdCache;
        let whole = study.run(&t.view(), &options, &Progress::default()).unwrap();
        let points = study.points(&options).unwrap().unwrap();
        assert_eq!(points.len(), 6);
        let reports: Vec<serde_json::Value> = points
            .iter()
            .map(|p| study.run(&t.view(), p, &Progress::default()).unwrap())
            .collect();
        assert_eq!(study.join(&options, &reports).unwrap(), whole);
        let e = study.join(&options, &reports[1..]).unwrap_err();
        assert!(e.to_string().contains("6 points, 5 reports"), "{e}");
    }
}
