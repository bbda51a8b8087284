//! Fidelity: how far a synthetic workload is from the original, figure by figure. The one
//! definition, used by `iomimic validate` and by the trainer's choice of levels.
//!
//! ## Algorithm
//! Both traces are characterized with the same options (the original's fluctuation window and
//! spatial ranges), then compared as the Messenger validation table does: metric,
//! original, synthetic, variation. A *scalar* row's variation is relative, (s − o) / |o|, and
//! meets its target within ±2 %; a *distance* row's variation is the distance itself: the
//! spatial histogram's L1/2 (target ≤ 0.02), the miss-ratio curves' mean absolute difference
//! (target ≤ 0.03, over the cache sizes of either curve, the shorter curve's last value standing
//! past its end), and, without a target, the size distribution's and thread weights' L1/2 and
//! the per-window IOPS gap. *Info* rows are shown without a target.
//!
//! A locality-free baseline (IOMeter-like: the original's mix, sizes and gaps at uniformly
//! random offsets) can be scored beside the synthetic trace.
//!
//! ## References
//! Delimitrou et al., "Decoupling Datacenter Studies from Access to Large-Scale Applications"
//! (the Messenger validation table).

use std::collections::BTreeMap;

use serde::Serialize;

use super::mrc::Mrc;
use super::{characterize, Figures, MrcScope, Options, Profile};
use crate::error::Result;
use crate::trace::TraceView;

/// Targets of the scored rows.
pub const SCALAR_TARGET: f64 = 0.02;
pub const SPATIAL_TARGET: f64 = 0.02;
pub const MRC_TARGET: f64 = 0.03;

/// How a row's variation is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Relative difference, target ±2 %.
    Scalar,
    /// Relative difference, shown for information.
    Info,
    /// A distance, shown for information.
    Distance,
    /// The spatial histogram's L1/2, target ≤ 0.02.
    Spatial,
    /// The miss-ratio curves' mean absolute difference, target ≤ 0.03.
    Mrc,
}

impl Kind {
    /// The largest variation (in absolute value) that meets the target, for scored kinds.
    pub fn target(self) -> Option<f64> {
        match self {
            Kind::Scalar => Some(SCALAR_TARGET),
            Kind::Spatial => Some(SPATIAL_TARGET),
            Kind::Mrc => Some(MRC_TARGET),
            Kind::Info | Kind::Distance => None,
        }
    }

    fn relative(self) -> bool {
        matches!(self, Kind::Scalar | Kind::Info)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub metric: &'static str,
    pub kind: Kind,
    pub original: f64,
    pub synthetic: f64,
    /// Relative difference (scalar, info) or the distance; `None` where the original is 0 and
    /// the synthetic is not (an infinite relative difference).
    pub variation: Option<f64>,
    /// The largest |variation| that meets the target (relative for scalar rows); `None` for
    /// rows shown for information.
    pub target: Option<f64>,
    /// Whether the target is met; `None` for rows without a target.
    pub ok: Option<bool>,
    /// A readable form of the figure, where a number alone says little.
    pub original_shown: Option<String>,
    pub synthetic_shown: Option<String>,
    /// The locality-free baseline's figure and variation, when one was scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_variation: Option<Option<f64>>,
}

impl Row {
    fn new(metric: &'static str, kind: Kind, original: f64, synthetic: f64) -> Row {
        let variation = if kind.relative() {
            relative(original, synthetic)
        } else {
            Some(synthetic)
        };
        let target = kind.target();
        let ok = target.map(|t| variation.is_some_and(|v| v.abs() <= t));
        Row {
            metric,
            kind,
            original,
            synthetic,
            variation,
            target,
            ok,
            original_shown: None,
            synthetic_shown: None,
            baseline: None,
            baseline_variation: None,
        }
    }

    fn shown(mut self, original: String, synthetic: String) -> Row {
        self.original_shown = Some(original);
        self.synthetic_shown = Some(synthetic);
        self
    }

    /// How far the row is from its figure: |variation| (infinite where undefined).
    pub fn deviation(&self) -> f64 {
        self.variation.map_or(f64::INFINITY, f64::abs)
    }
}

fn relative(a: f64, b: f64) -> Option<f64> {
    if a == 0.0 {
        (b == 0.0).then_some(0.0)
    } else {
        Some((b - a) / a.abs())
    }
}

/// L1 distance / 2 of two discrete distributions given as (key, share) lists.
fn l1_half<K: Ord>(a: impl IntoIterator<Item = (K, f64)>, b: impl IntoIterator<Item = (K, f64)>) -> f64 {
    let mut both: BTreeMap<K, (f64, f64)> = BTreeMap::new();
    for (k, v) in a {
        both.entry(k).or_default().0 += v;
    }
    for (k, v) in b {
        both.entry(k).or_default().1 += v;
    }
    both.values().map(|(x, y)| (x - y).abs()).sum::<f64>() / 2.0
}

/// Mean absolute difference of two miss-ratio curves over the cache sizes of either; past the
/// end of the shorter curve (a smaller footprint) its last value stands.
pub fn mrc_error(a: &Mrc, b: &Mrc) -> f64 {
    let at = |m: &Mrc, size: u64| {
        m.curve
            .iter()
            .filter(|p| p.cache_bytes <= size)
            .max_by_key(|p| p.cache_bytes)
            .map_or(1.0, |p| p.miss_ratio)
    };
    let mut sizes: Vec<u64> = a.curve.iter().chain(&b.curve).map(|p| p.cache_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() {
        return 0.0;
    }
    sizes.iter().map(|&s| (at(a, s) - at(b, s)).abs()).sum::<f64>() / sizes.len() as f64
}

/// Mean absolute difference of per-window IOPS over the original's windows, relative to the
/// original's mean (missing synthetic windows count as idle).
fn iops_over_time(a: &Figures, b: &Figures) -> f64 {
    let (xa, xb) = (&a.fluctuation.iops, &b.fluctuation.iops);
    let n = xa.len();
    if n == 0 {
        return 0.0;
    }
    let mean = xa.iter().sum::<f64>() / n as f64;
    if mean == 0.0 {
        return 0.0;
    }
    let gap: f64 = (0..n)
        .map(|i| (xa[i] - xb.get(i).copied().unwrap_or(0.0)).abs())
        .sum();
    gap / n as f64 / mean
}

/// Each stream's share of the requests.
fn weights(p: &Profile) -> Vec<(u32, f64)> {
    let total = p.trace.requests.max(1) as f64;
    p.streams
        .iter()
        .map(|(&s, f)| (s, f.requests as f64 / total))
        .collect()
}

fn mix_shown(f: &Figures) -> String {
    if f.writes == 0 {
        return "reads only".into();
    }
    format!(
        "{:.2}:1 ({:.2}%)",
        f.reads as f64 / f.writes as f64,
        100.0 * f.read_fraction
    )
}

fn sizes_shown(f: &Figures) -> String {
    let top: Vec<String> = f
        .size
        .all
        .distribution
        .iter()
        .take(2)
        .map(|d| format!("{}K ({:.1}%)", d.bytes / 1024, 100.0 * d.fraction))
        .collect();
    top.join(" ")
}

fn threads_shown(p: &Profile) -> String {
    let mut w = weights(p);
    // heaviest first; a stable sort keeps equal weights in stream order
    w.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top: Vec<String> = w
        .iter()
        .take(2)
        .map(|(s, v)| format!("T{s} ({:.1}%)", 100.0 * v))
        .collect();
    top.join(" ")
}

fn spatial_shown(f: &Figures) -> String {
    let shares: Vec<String> = f
        .spatial
        .fractions
        .iter()
        .map(|x| format!("{:.1}", 100.0 * x))
        .collect();
    shares.join("  ")
}

/// The rows comparing `s` (synthetic) with `o` (original), in the table's order.
pub fn compare(o: &Profile, s: &Profile) -> Vec<Row> {
    let (fo, fs) = (&o.trace, &s.trace);
    let (qo, qs) = (&fo.sequentiality, &fs.sequentiality);
    let size_shares = |f: &Figures| -> Vec<(u32, f64)> {
        f.size
            .all
            .distribution
            .iter()
            .map(|d| (d.bytes, d.fraction))
            .collect()
    };
    let spatial = fo
        .spatial
        .fractions
        .iter()
        .zip(&fs.spatial.fractions)
        .map(|(x, y)| (x - y).abs())
        .sum::<f64>()
        / 2.0;
    let mut rows = vec![
        Row::new("read fraction", Kind::Scalar, fo.read_fraction, fs.read_fraction)
            .shown(mix_shown(fo), mix_shown(fs)),
        Row::new(
            "random %",
            Kind::Scalar,
            100.0 * (1.0 - fo.sequential_fraction),
            100.0 * (1.0 - fs.sequential_fraction),
        ),
        Row::new(
            "sequential %",
            Kind::Info,
            100.0 * fo.sequential_fraction,
            100.0 * fs.sequential_fraction,
        ),
        Row::new(
            "block-size distribution (L1/2)",
            Kind::Distance,
            0.0,
            l1_half(size_shares(fo), size_shares(fs)),
        )
        .shown(sizes_shown(fo), sizes_shown(fs)),
        Row::new(
            "mean request size (B)",
            Kind::Scalar,
            fo.size.all.mean_bytes,
            fs.size.all.mean_bytes,
        ),
        Row::new(
            "thread weights (L1/2)",
            Kind::Distance,
            0.0,
            l1_half(weights(o), weights(s)),
        )
        .shown(threads_shown(o), threads_shown(s)),
        Row::new(
            "mean inter-arrival (µs)",
            Kind::Scalar,
            fo.interarrival.mean_us,
            fs.interarrival.mean_us,
        ),
        Row::new("IOPS", Kind::Scalar, fo.iops, fs.iops),
        Row::new("P(sequential)", Kind::Info, qo.p_sequential, qs.p_sequential),
        Row::new("run count", Kind::Info, qo.run_count, qs.run_count),
        Row::new(
            "detangled run count",
            Kind::Info,
            qo.detangled_run_count,
            qs.detangled_run_count,
        ),
        Row::new(
            "relaxed detangled run count",
            Kind::Info,
            qo.relaxed_detangled_run_count,
            qs.relaxed_detangled_run_count,
        ),
        Row::new("spatial histogram (L1/2)", Kind::Spatial, 0.0, spatial)
            .shown(spatial_shown(fo), spatial_shown(fs)),
        Row::new(
            "IOPS over time (mean |Δ|/mean)",
            Kind::Distance,
            0.0,
            iops_over_time(fo, fs),
        ),
    ];
    if let (Some(a), Some(b)) = (&fo.mrc, &fs.mrc) {
        rows.push(Row::new(
            "miss-ratio curve error",
            Kind::Mrc,
            0.0,
            mrc_error(a, b),
        ));
    }
    if let (Some(a), Some(b)) = (&fo.latency, &fs.latency) {
        rows.push(Row::new("mean latency (µs)", Kind::Info, a.mean_us, b.mean_us));
    }
    rows
}

/// The worst deviation among the rows that have a target: how far a synthetic workload is
/// from the original, as one number (what level selection watches).
pub fn worst_deviation(rows: &[Row]) -> f64 {
    rows.iter()
        .filter(|r| r.kind.target().is_some())
        .map(Row::deviation)
        .fold(0.0, f64::max)
}

/// A baseline workload scored beside the synthetic one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Baseline {
    /// IOMeter-like: the original's mix, sizes and gaps at uniformly random offsets.
    LocalityFree,
}

impl std::str::FromStr for Baseline {
    type Err = crate::error::Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "locality-free" => Ok(Baseline::LocalityFree),
            other => Err(crate::error::Error::Usage(format!(
                "unknown `baseline` {other:?}; the one baseline is locality-free"
            ))),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ValidateOptions {
    /// Spatial ranges per volume.
    pub ranges: usize,
    pub baseline: Option<Baseline>,
    /// Seed of the baseline's generator.
    pub seed: u64,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        Self {
            ranges: 4,
            baseline: None,
            seed: 1,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Brief {
    pub requests: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Curves {
    pub original: Option<Mrc>,
    pub synthetic: Option<Mrc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Option<Mrc>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IopsOverTime {
    pub window_s: f64,
    pub original: Vec<f64>,
    pub synthetic: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SpatialPair {
    pub original: Vec<f64>,
    pub synthetic: Vec<f64>,
}

/// What `iomimic validate` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    pub rows: Vec<Row>,
    pub original: Brief,
    pub synthetic: Brief,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Brief>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_kind: Option<Baseline>,
    pub curves: Curves,
    pub iops_over_time: IopsOverTime,
    pub spatial: SpatialPair,
    /// Rows with a target, and how many met it.
    pub passed: usize,
    pub checked: usize,
}

/// Compares `synthetic` with `original` (and, if asked, a baseline generated from the
/// original) under the same characterization options.
pub fn validate(
    original: &TraceView<'_>,
    synthetic: &TraceView<'_>,
    opts: &ValidateOptions,
) -> Result<Validation> {
    let char_opts = Options {
        ranges: opts.ranges,
        mrc: MrcScope::Trace,
        ..Options::default()
    };
    let po = characterize(original, &char_opts)?;
    let same_window = Options {
        window_ns: po.options.window_ns,
        ..char_opts
    };
    let ps = characterize(synthetic, &same_window)?;
    let mut rows = compare(&po, &ps);
    let pb = match opts.baseline {
        Some(Baseline::LocalityFree) => {
            let base = crate::synth::generate_locality_free(original, synthetic.len() as u64, opts.seed)?;
            let pb = characterize(&base.view(), &same_window)?;
            let by_metric: BTreeMap<&str, Row> =
                compare(&po, &pb).into_iter().map(|r| (r.metric, r)).collect();
            for r in &mut rows {
                if let Some(b) = by_metric.get(r.metric) {
                    r.baseline = Some(b.synthetic);
                    r.baseline_variation = Some(b.variation);
                }
            }
            Some(pb)
        }
        None => None,
    };
    let checked = rows.iter().filter(|r| r.ok.is_some()).count();
    let passed = rows.iter().filter(|r| r.ok == Some(true)).count();
    Ok(Validation {
        original: Brief {
            requests: po.trace.requests,
        },
        synthetic: Brief {
            requests: ps.trace.requests,
        },
        baseline: pb.as_ref().map(|p| Brief {
            requests: p.trace.requests,
        }),
        baseline_kind: opts.baseline,
        curves: Curves {
            original: po.trace.mrc.clone(),
            synthetic: ps.trace.mrc.clone(),
            baseline: pb.as_ref().map(|p| p.trace.mrc.clone()),
        },
        iops_over_time: IopsOverTime {
            window_s: po.trace.fluctuation.window_s,
            original: po.trace.fluctuation.iops.clone(),
            synthetic: ps.trace.fluctuation.iops.clone(),
        },
        spatial: SpatialPair {
            original: po.trace.spatial.fractions.clone(),
            synthetic: ps.trace.spatial.fractions.clone(),
        },
        rows,
        passed,
        checked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::testing::reads;

    fn profile(t: &crate::trace::Trace) -> Profile {
        characterize(&t.view(), &Options::default()).unwrap()
    }

    #[test]
    fn a_trace_matches_itself_and_rows_follow_the_table() {
        let ts: Vec<u64> = (0..400).map(|i| i * 1_000_000).collect();
        let offsets: Vec<u64> = (0..400).map(|i| (i * 37 % 100) * 4096).collect();
        let t = reads(&ts, &offsets, 4096);
        let rows = compare(&profile(&t), &profile(&t));
        assert_eq!(rows[0].metric, "read fraction");
        assert_eq!(rows[0].original_shown.as_deref(), Some("reads only"));
        for r in &rows {
            assert_eq!(r.variation.map(f64::abs), Some(0.0), "{}", r.metric);
            assert_ne!(r.ok, Some(false), "{}", r.metric);
        }
        assert_eq!(worst_deviation(&rows), 0.0);
    }

    #[test]
    fn variations_by_hand() {
        // the synthetic trace is twice as fast and half its requests are 8 KiB
        let ts: Vec<u64> = (0..100).map(|i| i * 2_000_000).collect();
        let offsets: Vec<u64> = (0..100).map(|i| i * 8192).collect();
        let o = reads(&ts, &offsets, 4096);
        let mut s = reads(&ts.iter().map(|t| t / 2).collect::<Vec<_>>(), &offsets, 4096);
        for i in 0..50 {
            s.size[i] = 8192;
        }
        let rows = compare(&profile(&o), &profile(&s));
        let row = |m: &str| rows.iter().find(|r| r.metric == m).unwrap();
        // 6 KiB mean against 4 KiB: +50 %
        assert!((row("mean request size (B)").variation.unwrap() - 0.5).abs() < 1e-12);
        // gaps of 1 ms against 2 ms: −50 %; IOPS doubles
        assert!((row("mean inter-arrival (µs)").variation.unwrap() + 0.5).abs() < 1e-12);
        assert!((row("IOPS").variation.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(row("IOPS").ok, Some(false));
        // sizes {4K: 1} against {4K: .5, 8K: .5}: L1/2 = 0.5
        assert!((row("block-size distribution (L1/2)").synthetic - 0.5).abs() < 1e-12);
        assert_eq!(row("block-size distribution (L1/2)").ok, None);
        assert!(worst_deviation(&rows) >= 1.0 - 1e-9);
    }

    #[test]
    fn curve_error_holds_the_last_value_past_the_shorter_curve() {
        let point = |c: u64, m: f64| super::super::mrc::MrcPoint {
            cache_bytes: c,
            miss_ratio: m,
        };
        let curve = |points: Vec<super::super::mrc::MrcPoint>| Mrc {
            block_bytes: 4096,
            accesses: 0,
            cold_misses: 0,
            footprint_bytes: 0,
            curve: points,
            reuse_histogram: Vec::new(),
            sampling_rate: 1.0,
        };
        let a = curve(vec![point(1, 0.5), point(2, 0.25)]);
        let b = curve(vec![point(1, 0.5), point(2, 0.5), point(4, 0.0)]);
        // sizes 1, 2, 4: |0.5−0.5|, |0.25−0.5|, |0.25−0| → 0.5 / 3
        assert!((mrc_error(&a, &b) - 0.5 / 3.0).abs() < 1e-12);
    }
}
