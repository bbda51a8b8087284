//! Fidelity: how far a synthetic workload is from the original, figure by figure. The one
//! definition, used by `iomimic validate` and by the trainer's choice of levels.
//!
//! ## Algorithm
//! Both traces are characterized with the same options (the original's fluctuation window and
//! spatial ranges), then compared as the Messenger validation table does: metric,
//! original, synthetic, variation. Each row is read one of four ways, and carries its own
//! target where it has one:
//! - *scalar*: relative difference (s − o) / |o| (read fraction, mean size, IOPS, ... within
//!   ±2 %; inter-arrival CV ±10 %; peak-to-mean IOPS ±15 %; footprint ±5 %);
//! - *points*: difference of two percentages in points (idle one-second bins, blocks
//!   re-accessed, the worst volume's read and sequential shares: within 2 points);
//! - *distance*: a distance between two distributions or curves (spatial histograms' L1/2,
//!   miss-ratio curves' mean absolute difference, IOPS over time as mean |Δ| / mean);
//! - *info*: a relative difference shown without a target.
//!
//! The rows from the two characterizations are [`rows`]; the figures characterization does not
//! compute (one-second and sub-window rates, bursts, footprint, request-keyed miss ratios,
//! fine spatial locality) are [`fine`]. A locality-free baseline (IOMeter-like: the original's
//! mix, sizes and gaps at uniformly random offsets) can be scored beside the synthetic trace on
//! every row.
//!
//! ## References
//! Delimitrou et al., IISWC 2011 (the Messenger validation table); request-keyed miss ratios
//! as libCacheSim computes them for block traces (an object per start offset, sized by the
//! request).

mod fine;
mod rows;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::Serialize;

use super::mrc::Mrc;
use super::{characterize_counted, window_for, work_units, MrcScope, Options};
use crate::error::Result;
use crate::progress::Progress;
use crate::trace::TraceView;

pub use fine::{compare_fine, Fine, FineSpec, RequestPoint};
pub use rows::{compare, mrc_error};

/// Targets of the scored rows.
pub const SCALAR_TARGET: f64 = 0.02;
pub const SPATIAL_TARGET: f64 = 0.02;
pub const MRC_TARGET: f64 = 0.03;
/// IOPS over time (one-second, sub-window and window bins): mean |Δ| / mean.
pub const IOPS_OVER_TIME_TARGET: f64 = 0.15;
pub const CV_TARGET: f64 = 0.10;
pub const PEAK_TARGET: f64 = 0.15;
pub const FOOTPRINT_TARGET: f64 = 0.05;
/// Rows in percentage points (idle bins, blocks re-accessed, per-volume shares).
pub const POINTS_TARGET: f64 = 2.0;
/// Spatial histogram at [`FINE_RANGES`] ranges per volume: L1/2.
pub const FINE_SPATIAL_TARGET: f64 = 0.05;
pub const FINE_RANGES: usize = 64;

/// How a row's variation is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Relative difference, with a target.
    Scalar,
    /// Relative difference, shown for information.
    Info,
    /// Difference of two percentages, in points.
    Points,
    /// A distance (spatial histograms, IOPS over time); with a target or shown for information.
    Distance,
    /// The coarse spatial histogram's L1/2 (a distance with its own kind, as tables show it).
    Spatial,
    /// A miss-ratio curves' mean absolute difference.
    Mrc,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub metric: &'static str,
    pub kind: Kind,
    pub original: f64,
    pub synthetic: f64,
    /// Relative difference (scalar, info), difference in points, or the distance; `None` where
    /// the original is 0 and the synthetic is not (an infinite relative difference).
    pub variation: Option<f64>,
    /// The largest |variation| that meets the target; `None` for rows shown for information.
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_ok: Option<Option<bool>>,
}

impl Row {
    /// A row of `kind` with `target` (`None`: shown for information).
    fn new(metric: &'static str, kind: Kind, original: f64, synthetic: f64, target: Option<f64>) -> Row {
        let variation = match kind {
            Kind::Scalar | Kind::Info => relative(original, synthetic),
            Kind::Points => Some(synthetic - original),
            Kind::Distance | Kind::Spatial | Kind::Mrc => Some(synthetic),
        };
        let target = if kind == Kind::Info { None } else { target };
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
            baseline_ok: None,
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

    /// The deviation in units of the row's target (1 = just met), for rows with a target.
    pub fn deviation_in_targets(&self) -> Option<f64> {
        self.target.map(|t| self.deviation() / t)
    }
}

fn relative(a: f64, b: f64) -> Option<f64> {
    if a == 0.0 {
        (b == 0.0).then_some(0.0)
    } else {
        Some((b - a) / a.abs())
    }
}

/// The worst deviation among the rows that have a target, in units of each row's target (at
/// most 1 when every target is met): how far a synthetic workload is from the original, as one
/// number (what level selection watches).
pub fn worst_deviation(rows: &[Row]) -> f64 {
    rows.iter()
        .filter_map(Row::deviation_in_targets)
        .fold(0.0, f64::max)
}

/// The mean deviation of the rows that have a target, in units of each row's target, each
/// counted at most `cap`: how far a synthetic workload is from the original over every figure,
/// so a change that mends some and breaks others shows (one wild figure cannot decide alone).
pub fn mean_deviation(rows: &[Row], cap: f64) -> f64 {
    let (sum, n) = rows
        .iter()
        .filter_map(Row::deviation_in_targets)
        .fold((0.0, 0u32), |(s, n), d| (s + d.min(cap), n + 1));
    if n == 0 {
        0.0
    } else {
        sum / f64::from(n)
    }
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

/// Request-keyed LRU curves (miss ratio and byte miss ratio at each cache size).
#[derive(Debug, Clone, Serialize)]
pub struct RequestCurves {
    pub original: Vec<RequestPoint>,
    pub synthetic: Vec<RequestPoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Vec<RequestPoint>>,
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
    pub request_curves: RequestCurves,
    pub iops_over_time: IopsOverTime,
    /// Requests per second over the original's span.
    pub iops_per_second: IopsOverTime,
    pub spatial: SpatialPair,
    /// Rows with a target, and how many met it.
    pub passed: usize,
    pub checked: usize,
    /// With a baseline: how many targets it met.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_passed: Option<usize>,
}

/// Every row comparing `s` with `o` (`so`, `ss`: their characterizations; `fo`, `fs`: their
/// fine figures).
fn all_rows(po: &super::Profile, ps: &super::Profile, fo: &Fine, fs: &Fine) -> Vec<Row> {
    let mut rows = compare(po, ps);
    rows.extend(fine::compare_fine(fo, fs));
    rows
}

/// Compares `synthetic` with `original` (and, if asked, a baseline generated from the
/// original) under the same characterization options.
pub fn validate(
    original: &TraceView<'_>,
    synthetic: &TraceView<'_>,
    opts: &ValidateOptions,
) -> Result<Validation> {
    validate_watched(original, synthetic, opts, &Progress::default())
}

/// [`validate`], counting in `progress` the requests the characterizations have taken and
/// stopping with `Interrupted` within one when told to.
pub fn validate_watched(
    original: &TraceView<'_>,
    synthetic: &TraceView<'_>,
    opts: &ValidateOptions,
    progress: &Progress,
) -> Result<Validation> {
    let char_opts = Options {
        ranges: opts.ranges,
        mrc: MrcScope::Trace,
        ..Options::default()
    };
    // the original's window (as characterization would choose it) is both traces' grid
    let span = original.ts_ns.last().map_or(0, |&l| l - original.ts_ns[0]);
    let same_window = Options {
        window_ns: Some(window_for(span, None)?),
        ..char_opts
    };
    let spec = FineSpec::of(original, same_window.window_ns.unwrap_or(1));
    // a baseline is as long as the synthetic trace: its work is counted as that trace's
    let measured = |t: &TraceView<'_>| work_units(t, &same_window) + spec.work_units(t);
    let synthetics = 1 + u64::from(opts.baseline.is_some());
    progress.add_total(measured(original) + synthetics * measured(synthetic));
    let characterize = |t: &TraceView<'_>| characterize_counted(t, &same_window, progress);
    let fine = |t: &TraceView<'_>| Fine::of_watched(t, &spec, progress);
    let po = characterize(original)?;
    let fo = fine(original)?;
    let ps = characterize(synthetic)?;
    let fs = fine(synthetic)?;
    let mut rows = all_rows(&po, &ps, &fo, &fs);
    let base = match opts.baseline {
        Some(Baseline::LocalityFree) => {
            let base = crate::synth::generate_locality_free(original, synthetic.len() as u64, opts.seed)?;
            let pb = characterize(&base.view())?;
            let fb = fine(&base.view())?;
            let by_metric: BTreeMap<&str, Row> = all_rows(&po, &pb, &fo, &fb)
                .into_iter()
                .map(|r| (r.metric, r))
                .collect();
            for r in &mut rows {
                if let Some(b) = by_metric.get(r.metric) {
                    r.baseline = Some(b.synthetic);
                    r.baseline_variation = Some(b.variation);
                    r.baseline_ok = Some(b.ok);
                }
            }
            Some((pb, fb))
        }
        None => None,
    };
    progress.complete();
    let checked = rows.iter().filter(|r| r.ok.is_some()).count();
    let passed = rows.iter().filter(|r| r.ok == Some(true)).count();
    let baseline_passed = base
        .as_ref()
        .map(|_| rows.iter().filter(|r| r.baseline_ok == Some(Some(true))).count());
    let per_second = |f: &Fine| f.per_second.iter().map(|&c| f64::from(c)).collect::<Vec<_>>();
    Ok(Validation {
        original: Brief {
            requests: po.trace.requests,
        },
        synthetic: Brief {
            requests: ps.trace.requests,
        },
        baseline: base.as_ref().map(|(p, _)| Brief {
            requests: p.trace.requests,
        }),
        baseline_kind: opts.baseline,
        curves: Curves {
            original: po.trace.mrc.clone(),
            synthetic: ps.trace.mrc.clone(),
            baseline: base.as_ref().map(|(p, _)| p.trace.mrc.clone()),
        },
        request_curves: RequestCurves {
            original: fo.requests.clone(),
            synthetic: fs.requests.clone(),
            baseline: base.as_ref().map(|(_, f)| f.requests.clone()),
        },
        iops_over_time: IopsOverTime {
            window_s: po.trace.fluctuation.window_s,
            original: po.trace.fluctuation.iops.clone(),
            synthetic: ps.trace.fluctuation.iops.clone(),
        },
        iops_per_second: IopsOverTime {
            window_s: 1.0,
            original: per_second(&fo),
            synthetic: per_second(&fs),
        },
        spatial: SpatialPair {
            original: po.trace.spatial.fractions.clone(),
            synthetic: ps.trace.spatial.fractions.clone(),
        },
        rows,
        passed,
        checked,
        baseline_passed,
    })
}
