//! The figures characterization does not compute and validation needs: the rate at one second
//! and at a tenth of the fluctuation window, how bursty arrivals are (inter-arrival CV, idle
//! seconds, the peak second against the mean), the footprint and how much of it comes back,
//! request-keyed LRU miss ratios (libCacheSim's convention for block traces), and where
//! requests land at [`FINE_RANGES`] ranges per volume. Both traces are measured on the
//! original's grid ([`FineSpec`]): its sub-window, cache sizes and volume spans.
//!
//! ## Complexity
//! O(n) for the rates and bursts; O(a) expected for the footprint (a hash map over the a block
//! accesses); O(n · sizes) for the request-keyed curves, one LRU replay per cache size (sampled
//! as SHARDS does above [`REQUEST_EXACT_LIMIT`] requests), the sizes shared among the cores.
//! (One pass by byte stack distance would not give libCacheSim's figures: a hit keeps the
//! size stored when the object went in, so an object's size differs between cache sizes.)

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::{
    Kind, Row, CV_TARGET, FINE_RANGES, FINE_SPATIAL_TARGET, FOOTPRINT_TARGET, IOPS_OVER_TIME_TARGET,
    MRC_TARGET, PEAK_TARGET, POINTS_TARGET,
};
use crate::cache;
use crate::error::Result;
use crate::parallel::on_all_cores;
use crate::progress::Progress;
use crate::trace::{Op, TraceView};

const SECOND: u64 = 1_000_000_000;
/// Smallest cache of the request-keyed curves; sizes double from here.
const FIRST_CACHE: u64 = 1 << 20;
/// Above this many requests the request-keyed curves sample objects (SHARDS).
pub const REQUEST_EXACT_LIMIT: usize = 2_000_000;
const SHARDS_MODULUS: u64 = 1 << 24;

/// The original's grid, on which both traces are measured.
#[derive(Debug, Clone)]
pub struct FineSpec {
    /// Bins of the sub-window rate: a tenth of the fluctuation window, at least 1 ms.
    pub sub_ns: u64,
    /// Cache sizes of the request-keyed curves: 1 MiB doubling up to twice the original's
    /// request footprint (the bytes of its distinct objects).
    pub cache_bytes: Vec<u64>,
    /// Each volume's span in the original (largest end offset), by name.
    pub spans: BTreeMap<String, u64>,
}

impl FineSpec {
    pub fn of(original: &TraceView<'_>, window_ns: u64) -> FineSpec {
        let mut spans: BTreeMap<String, u64> = BTreeMap::new();
        let mut objects: FxHashMap<(u32, u64), u32> = FxHashMap::default();
        for i in 0..original.len() {
            let name = &original.volumes[original.volume[i] as usize];
            let end = original.offset[i] + u64::from(original.size[i]);
            let span = spans.entry(name.clone()).or_default();
            *span = (*span).max(end);
            if is_data(original.op[i]) {
                objects
                    .entry((original.volume[i], original.offset[i]))
                    .or_insert(original.size[i]);
            }
        }
        let footprint: u64 = objects.values().map(|&s| u64::from(s)).sum();
        let mut cache_bytes = vec![FIRST_CACHE];
        while cache_bytes.len() < 40 && *cache_bytes.last().expect("non-empty") < footprint.saturating_mul(2)
        {
            cache_bytes.push(cache_bytes.last().expect("non-empty") * 2);
        }
        FineSpec {
            sub_ns: (window_ns / 10).max(1_000_000),
            cache_bytes,
            spans,
        }
    }
}

/// Miss ratios of an LRU cache of whole requests at one size.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RequestPoint {
    pub cache_bytes: u64,
    pub miss_ratio: f64,
    pub byte_miss_ratio: f64,
}

/// One trace's fine figures.
#[derive(Debug, Clone)]
pub struct Fine {
    /// Requests in each second from the first request.
    pub per_second: Vec<u32>,
    /// Requests in each sub-window bin.
    pub per_sub: Vec<u32>,
    pub sub_ns: u64,
    pub cv: f64,
    /// Share of one-second bins without a request, in %.
    pub idle_pct: f64,
    /// The busiest second's requests over the mean second's.
    pub peak_to_mean: f64,
    /// Distinct 4 KiB blocks read or written, and the share of them touched again, in %.
    pub footprint_blocks: u64,
    pub reaccessed_pct: f64,
    pub requests: Vec<RequestPoint>,
    /// Requests in each of [`FINE_RANGES`] equal ranges of each volume's span, by name.
    pub spatial: BTreeMap<String, Vec<u64>>,
}

fn is_data(op: u8) -> bool {
    op == Op::Read as u8 || op == Op::Write as u8
}

fn bins(t: &TraceView<'_>, width: u64) -> Vec<u32> {
    let Some(&start) = t.ts_ns.first() else {
        return Vec::new();
    };
    let span = t.ts_ns[t.len() - 1] - start;
    let mut out = vec![0u32; usize::try_from(span / width + 1).unwrap_or(1)];
    for &ts in t.ts_ns {
        out[((ts - start) / width) as usize] += 1;
    }
    out
}

impl FineSpec {
    /// The units [`Fine::of_watched`] counts for `t`: its length once per cache size.
    pub fn work_units(&self, t: &TraceView<'_>) -> u64 {
        t.len() as u64 * self.cache_bytes.len() as u64
    }
}

impl Fine {
    pub fn of(t: &TraceView<'_>, spec: &FineSpec) -> Fine {
        Self::of_watched(t, spec, &Progress::default()).expect("an unstopped progress never interrupts")
    }

    /// [`of`](Self::of), counting in `progress` the requests replayed at each cache size and
    /// stopping with `Interrupted` within a replay when told to.
    pub fn of_watched(t: &TraceView<'_>, spec: &FineSpec, progress: &Progress) -> Result<Fine> {
        let per_second = bins(t, SECOND);
        let per_sub = bins(t, spec.sub_ns);
        let (_, cv) = crate::analyze::stats::mean_cv(t.ts_ns.windows(2).map(|w| (w[1] - w[0]) as f64));
        let seconds = per_second.len().max(1) as f64;
        let idle_pct = 100.0 * per_second.iter().filter(|&&c| c == 0).count() as f64 / seconds;
        let mean = t.len() as f64 / seconds;
        let peak = f64::from(per_second.iter().copied().max().unwrap_or(0));
        let (footprint_blocks, reaccessed_pct) = footprint(t);
        Ok(Fine {
            per_second,
            per_sub,
            sub_ns: spec.sub_ns,
            cv,
            idle_pct,
            peak_to_mean: if mean > 0.0 { peak / mean } else { 0.0 },
            footprint_blocks,
            reaccessed_pct,
            requests: request_curve(t, &spec.cache_bytes, progress)?,
            spatial: spatial(t, &spec.spans),
        })
    }
}

/// Distinct 4 KiB blocks that reads and writes touch, and the share touched more than once.
fn footprint(t: &TraceView<'_>) -> (u64, f64) {
    let (n, again) = crate::analyze::mrc::footprint(t, 0..t.len());
    (
        n,
        if n == 0 {
            0.0
        } else {
            100.0 * again as f64 / n as f64
        },
    )
}

/// The request-keyed LRU curve: every read and write an object keyed by its volume and start
/// offset and sized by its length; a hit counts the size asked now (libCacheSim's convention,
/// the crate's [`cache`] policies). Above [`REQUEST_EXACT_LIMIT`] requests a SHARDS sample of
/// objects is replayed in caches scaled by the sampling rate.
fn request_curve(t: &TraceView<'_>, sizes: &[u64], progress: &Progress) -> Result<Vec<RequestPoint>> {
    let data = (0..t.len()).filter(|&i| is_data(t.op[i]));
    let rate = if t.len() > REQUEST_EXACT_LIMIT {
        REQUEST_EXACT_LIMIT as f64 / t.len() as f64
    } else {
        1.0
    };
    let threshold = (rate * SHARDS_MODULUS as f64) as u64;
    let mut ids: FxHashMap<(u32, u64), u64> = FxHashMap::default();
    let mut accesses: Vec<(u64, u64)> = Vec::new();
    for i in data {
        let key = (t.volume[i], t.offset[i]);
        if rate < 1.0
            && crate::random::splitmix(t.offset[i] ^ (u64::from(t.volume[i]) << 52)) % SHARDS_MODULUS
                >= threshold
        {
            continue;
        }
        let next = ids.len() as u64;
        accesses.push((*ids.entry(key).or_insert(next), u64::from(t.size[i])));
    }
    let point = |c: u64| -> Result<RequestPoint> {
        let capacity = (c as f64 * rate) as u64;
        let mut lru = cache::build("lru", capacity, cache::POLICIES).expect("lru is registered");
        let mut stopped = Ok(());
        // a replay checks between chunks of accesses, and ends early once told to stop
        let watched = accesses
            .iter()
            .enumerate()
            .map_while(|(k, &a)| match progress.tick(k) {
                Ok(()) => Some(a),
                Err(e) => {
                    stopped = Err(e);
                    None
                }
            });
        let f = cache::replay(lru.as_mut(), watched);
        stopped?;
        progress.ticked(accesses.len());
        progress.advance((t.len() - accesses.len()) as u64); // what was not replayed counts too
        Ok(RequestPoint {
            cache_bytes: c,
            miss_ratio: f.miss_ratio(),
            byte_miss_ratio: f.byte_miss_ratio(),
        })
    };
    // the sizes are independent replays
    on_all_cores(sizes.to_vec(), point).into_iter().collect()
}

/// Requests in [`FINE_RANGES`] equal ranges of each volume's span (the original's where it has
/// the volume, else the trace's own).
fn spatial(t: &TraceView<'_>, spans: &BTreeMap<String, u64>) -> BTreeMap<String, Vec<u64>> {
    let own: Vec<u64> = {
        let mut s = vec![1u64; t.volumes.len()];
        for i in 0..t.len() {
            let v = t.volume[i] as usize;
            s[v] = s[v].max(t.offset[i] + u64::from(t.size[i]));
        }
        s
    };
    let span: Vec<u64> = t
        .volumes
        .iter()
        .zip(&own)
        .map(|(name, &o)| spans.get(name).copied().unwrap_or(o).max(1))
        .collect();
    let mut counts = vec![vec![0u64; FINE_RANGES]; t.volumes.len()];
    for i in 0..t.len() {
        let v = t.volume[i] as usize;
        let r = (u128::from(t.offset[i]) * FINE_RANGES as u128 / u128::from(span[v])) as usize;
        counts[v][r.min(FINE_RANGES - 1)] += 1;
    }
    t.volumes.iter().cloned().zip(counts).collect()
}

/// Mean |Δ| / mean of two rate series over the first's bins (missing bins count as idle).
fn series_gap(a: &[u32], b: &[u32]) -> f64 {
    let total: u64 = a.iter().map(|&c| u64::from(c)).sum();
    if total == 0 {
        return 0.0;
    }
    let gap: u64 = a
        .iter()
        .enumerate()
        .map(|(i, &x)| u64::from(x.abs_diff(b.get(i).copied().unwrap_or(0))))
        .sum();
    gap as f64 / total as f64
}

/// L1/2 of the two traces' shares over (volume, range), volumes matched by name.
fn spatial_distance(a: &BTreeMap<String, Vec<u64>>, b: &BTreeMap<String, Vec<u64>>) -> f64 {
    let total = |m: &BTreeMap<String, Vec<u64>>| m.values().flatten().sum::<u64>().max(1) as f64;
    let (ta, tb) = (total(a), total(b));
    let zeros = vec![0u64; FINE_RANGES];
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .map(|name| {
            let (x, y) = (a.get(name).unwrap_or(&zeros), b.get(name).unwrap_or(&zeros));
            x.iter()
                .zip(y)
                .map(|(&p, &q)| (p as f64 / ta - q as f64 / tb).abs())
                .sum::<f64>()
        })
        .sum::<f64>()
        / 2.0
}

/// Mean absolute difference of two request-keyed curves on the same sizes.
fn curve_error(a: &[RequestPoint], b: &[RequestPoint], field: fn(&RequestPoint) -> f64) -> f64 {
    if a.is_empty() {
        return 0.0;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| (field(x) - field(y)).abs())
        .sum::<f64>()
        / a.len() as f64
}

/// The fine rows comparing `s` with `o`.
pub fn compare_fine(o: &Fine, s: &Fine) -> Vec<Row> {
    let sub_ms = o.sub_ns as f64 / 1e6;
    vec![
        Row::new(
            "IOPS over time, 1 s bins (mean |Δ|/mean)",
            Kind::Distance,
            0.0,
            series_gap(&o.per_second, &s.per_second),
            Some(IOPS_OVER_TIME_TARGET),
        ),
        Row::new(
            "IOPS over time, sub-window bins (mean |Δ|/mean)",
            Kind::Distance,
            0.0,
            series_gap(&o.per_sub, &s.per_sub),
            Some(IOPS_OVER_TIME_TARGET),
        )
        .shown(format!("{sub_ms:.4} ms bins"), String::new()),
        Row::new("inter-arrival CV", Kind::Scalar, o.cv, s.cv, Some(CV_TARGET)),
        Row::new(
            "idle 1 s bins (%)",
            Kind::Points,
            o.idle_pct,
            s.idle_pct,
            Some(POINTS_TARGET),
        ),
        Row::new(
            "peak-to-mean IOPS (1 s bins)",
            Kind::Scalar,
            o.peak_to_mean,
            s.peak_to_mean,
            Some(PEAK_TARGET),
        ),
        Row::new(
            "footprint (4 KiB blocks)",
            Kind::Scalar,
            o.footprint_blocks as f64,
            s.footprint_blocks as f64,
            Some(FOOTPRINT_TARGET),
        ),
        Row::new(
            "blocks re-accessed (%)",
            Kind::Points,
            o.reaccessed_pct,
            s.reaccessed_pct,
            Some(POINTS_TARGET),
        ),
        Row::new(
            "request miss-ratio curve error",
            Kind::Mrc,
            0.0,
            curve_error(&o.requests, &s.requests, |p| p.miss_ratio),
            Some(MRC_TARGET),
        ),
        Row::new(
            "byte miss-ratio curve error",
            Kind::Mrc,
            0.0,
            curve_error(&o.requests, &s.requests, |p| p.byte_miss_ratio),
            Some(MRC_TARGET),
        ),
        Row::new(
            "spatial histogram, 64 ranges (L1/2)",
            Kind::Distance,
            0.0,
            spatial_distance(&o.spatial, &s.spatial),
            Some(FINE_SPATIAL_TARGET),
        ),
    ]
}
