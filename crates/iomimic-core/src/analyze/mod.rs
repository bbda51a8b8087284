//! Characterization: every figure the papers use, for the whole trace, each volume and each
//! stream, in one pass over the columns (plus a light second pass for spatial ranges, whose
//! bounds depend on each volume's span, and the miss-ratio curves).

// Numerical code: float-to-count casts are of non-negative values by construction, exact float
// equality is wanted where ties are grouped, and the formulas keep their textbook letters.
#![allow(clippy::cast_sign_loss, clippy::float_cmp, clippy::many_single_char_names)]

pub mod compare;
pub mod distfit;
mod group;
pub mod lru_stack;
pub mod mrc;
pub mod plot_data;
pub mod sequentiality;
pub mod stats;
pub mod summary;
mod threads;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use group::GroupAcc;
pub use group::{latency, Figures, Latency, PEAK_SIGMAS};
use sequentiality::KeyState;
pub use threads::{Thread, Thresholds};

use crate::error::{Error, Result};
use crate::trace::TraceView;

/// Above this many requests the miss-ratio curve is sampled (SHARDS) instead of exact.
pub const EXACT_MRC_LIMIT: usize = 10_000_000;
/// Most volumes in the peak-correlation matrix (the busiest ones).
pub const CORRELATION_VOLUMES: usize = 64;

/// Which groups the thread table classifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    Stream,
    Volume,
}

/// Miss-ratio curves to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MrcScope {
    /// None at all.
    None,
    /// The whole trace only.
    Trace,
    /// The whole trace, every volume and every stream.
    All,
}

#[derive(Debug, Clone, Serialize)]
pub struct Options {
    /// Equal ranges of each volume's address span for the spatial histogram.
    pub ranges: usize,
    /// Fluctuation window; default min(60 s, span / 100), at least 1 ms.
    pub window_ns: Option<u64>,
    /// Classify these groups into thread types.
    pub by: Option<GroupBy>,
    pub mrc: MrcScope,
    /// Force a SHARDS sampling rate (1.0 = exact); default exact up to [`EXACT_MRC_LIMIT`].
    pub mrc_sampling: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            ranges: 4,
            window_ns: None,
            by: None,
            mrc: MrcScope::All,
            mrc_sampling: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PeakCorrelation {
    pub volumes: Vec<String>,
    /// Pearson correlation of per-window IOPS; null where a volume's rate never changes.
    pub matrix: Vec<Vec<f64>>,
}

/// Every figure of a trace. Serialises to the JSON `iomimic characterize --json` writes.
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    pub format_version: u32,
    pub options: Options,
    #[serde(flatten)]
    pub trace: Figures,
    /// By volume name.
    pub volumes: BTreeMap<String, Figures>,
    /// By stream id.
    pub streams: BTreeMap<u32, Figures>,
    pub threads: Option<Vec<Thread>>,
    pub thread_thresholds: Option<Thresholds>,
    pub peak_correlation: Option<PeakCorrelation>,
}

impl Profile {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("profiles hold only serialisable values")
    }
}

/// Most fluctuation windows a trace may be cut into (each group keeps a counter per window).
pub const MAX_WINDOWS: u64 = 1_000_000;

/// The fluctuation window for a trace spanning `span_ns`: the one requested, else
/// min(60 s, span / 100) but at least 1 ms.
pub fn window_for(span_ns: u64, requested: Option<u64>) -> Result<u64> {
    let window = match requested {
        Some(0) => {
            return Err(Error::Usage(
                "the fluctuation window must be longer than 0".into(),
            ))
        }
        Some(w) => w,
        None => (span_ns / 100).clamp(1_000_000, 60_000_000_000),
    };
    let windows = span_ns / window + 1;
    if windows > MAX_WINDOWS {
        return Err(Error::Usage(format!(
            "a {window} ns window cuts this {:.3} s trace into {windows} windows; at most {MAX_WINDOWS} \
             are kept, so use a window of at least {} ns",
            span_ns as f64 / 1e9,
            span_ns / (MAX_WINDOWS - 1) + 1
        )));
    }
    Ok(window)
}

/// Computes the profile of `t` (rows in time order, as every Trace is). Fails only on options
/// that cannot apply to this trace (a window too small for its span).
pub fn characterize(t: &TraceView<'_>, opts: &Options) -> Result<Profile> {
    let n = t.len();
    let ranges = opts.ranges.max(1);
    let start = t.ts_ns.first().copied().unwrap_or(0);
    let span = t.ts_ns.last().map_or(0, |&last| last - start);
    let window_ns = window_for(span, opts.window_ns)?;
    let n_windows = (span / window_ns + 1) as usize;

    // dense ids for streams, in order of first appearance
    let mut stream_ids: FxHashMap<u32, usize> = FxHashMap::default();
    let stream_of: Vec<u32> = t
        .stream
        .iter()
        .map(|&s| {
            let next = stream_ids.len();
            *stream_ids.entry(s).or_insert(next) as u32
        })
        .collect();
    let multi_stream = stream_ids.len() > 1;
    let multi_volume = t.volumes.len() > 1;

    let new_acc = || GroupAcc::new(n_windows, ranges);
    let mut whole = new_acc();
    let mut volumes: Vec<GroupAcc> = (0..t.volumes.len()).map(|_| new_acc()).collect();
    let mut streams: Vec<GroupAcc> = if multi_stream {
        (0..stream_ids.len()).map(|_| new_acc()).collect()
    } else {
        Vec::new()
    };
    let mut volume_keys: Vec<KeyState> = (0..t.volumes.len()).map(|_| KeyState::default()).collect();
    let mut stream_keys: FxHashMap<(u32, u32), KeyState> = FxHashMap::default();
    let mut max_end = vec![0u64; t.volumes.len()];

    // Pass 1: everything but the spatial ranges.
    for i in 0..n {
        let (ts, offset, size, op, v) = (t.ts_ns[i], t.offset[i], t.size[i], t.op[i], t.volume[i] as usize);
        let window = ((ts - start) / window_ns) as usize;
        let latency = t.latency_ns.map(|l| l[i]);
        whole.observe(ts, size, op, window, latency);
        volumes[v].observe(ts, size, op, window, latency);
        volumes[v]
            .seq
            .observe(&mut volume_keys[v], offset, u64::from(size));
        max_end[v] = max_end[v].max(offset + u64::from(size));
        if multi_stream {
            let s = stream_of[i] as usize;
            streams[s].observe(ts, size, op, window, latency);
            let key = stream_keys.entry((s as u32, v as u32)).or_default();
            streams[s].seq.observe(key, offset, u64::from(size));
        }
    }
    // The whole trace's sequentiality is that of its volumes together.
    for v in &volumes {
        whole.seq.merge(&v.seq);
    }

    // Pass 2: spatial ranges of [0, max end offset) of each volume.
    for i in 0..n {
        let v = t.volume[i] as usize;
        let range = (u128::from(t.offset[i]) * ranges as u128 / u128::from(max_end[v].max(1))) as usize;
        let range = range.min(ranges - 1);
        let op = t.op[i];
        whole.observe_range(range, op);
        volumes[v].observe_range(range, op);
        if multi_stream {
            streams[stream_of[i] as usize].observe_range(range, op);
        }
    }

    let rate = opts.mrc_sampling.unwrap_or(if n > EXACT_MRC_LIMIT {
        EXACT_MRC_LIMIT as f64 / n as f64
    } else {
        1.0
    });
    let mrc_of = |rows: &[u32]| mrc::miss_ratio_curve(t, rows.iter().map(|&r| r as usize), rate);
    let has_latency = t.latency_ns.is_some();
    let per_group_mrc = opts.mrc == MrcScope::All;

    let rows_by = |group_of: &dyn Fn(usize) -> usize, groups: usize| -> Vec<Vec<u32>> {
        let mut rows = vec![Vec::new(); groups];
        for i in 0..n {
            rows[group_of(i)].push(i as u32);
        }
        rows
    };
    let volume_rows = if per_group_mrc && multi_volume {
        rows_by(&|i| t.volume[i] as usize, t.volumes.len())
    } else {
        Vec::new()
    };
    let stream_rows = if per_group_mrc && multi_stream {
        rows_by(&|i| stream_of[i] as usize, stream_ids.len())
    } else {
        Vec::new()
    };

    let whole_mrc = (opts.mrc != MrcScope::None).then(|| mrc::miss_ratio_curve(t, 0..n, rate));
    let trace = whole.finish(span, window_ns, has_latency, whole_mrc.clone());

    let window_series: Vec<Vec<u32>> = volumes.iter().map(|v| v.windows.clone()).collect();
    let volume_figures: Vec<Figures> = volumes
        .into_iter()
        .enumerate()
        .map(|(v, acc)| {
            let mrc = if !per_group_mrc {
                None
            } else if multi_volume {
                Some(mrc_of(&volume_rows[v]))
            } else {
                whole_mrc.clone()
            };
            acc.finish(span, window_ns, has_latency, mrc)
        })
        .collect();
    let mut dense_to_stream = vec![0u32; stream_ids.len()];
    for (&id, &dense) in &stream_ids {
        dense_to_stream[dense] = id;
    }
    let stream_figures: Vec<(u32, Figures)> = if multi_stream {
        streams
            .into_iter()
            .enumerate()
            .map(|(s, acc)| {
                let mrc = per_group_mrc.then(|| mrc_of(&stream_rows[s]));
                (dense_to_stream[s], acc.finish(span, window_ns, has_latency, mrc))
            })
            .collect()
    } else {
        // One stream: its figures are the trace's.
        stream_ids.keys().map(|&id| (id, trace.clone())).collect()
    };

    let (threads, thread_thresholds) = match opts.by {
        Some(GroupBy::Stream) => {
            let groups: Vec<(String, &Figures)> =
                stream_figures.iter().map(|(id, f)| (id.to_string(), f)).collect();
            let (t, th) = threads::classify(&groups, n as u64);
            (Some(t), Some(th))
        }
        Some(GroupBy::Volume) => {
            let groups: Vec<(String, &Figures)> = t.volumes.iter().cloned().zip(&volume_figures).collect();
            let (t, th) = threads::classify(&groups, n as u64);
            (Some(t), Some(th))
        }
        None => (None, None),
    };

    let peak_correlation = multi_volume.then(|| peak_correlation(t.volumes, &window_series));
    Ok(Profile {
        format_version: 1,
        options: Options {
            window_ns: Some(window_ns),
            ranges,
            ..opts.clone()
        },
        trace,
        volumes: t.volumes.iter().cloned().zip(volume_figures).collect(),
        streams: stream_figures.into_iter().collect(),
        threads,
        thread_thresholds,
        peak_correlation,
    })
}

/// Correlation of per-window request counts between the busiest volumes.
fn peak_correlation(names: &[String], series: &[Vec<u32>]) -> PeakCorrelation {
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by_key(|&v| std::cmp::Reverse(series[v].iter().map(|&c| u64::from(c)).sum::<u64>()));
    order.truncate(CORRELATION_VOLUMES);
    order.sort_unstable();
    let centred: Vec<Vec<f64>> = order
        .iter()
        .map(|&v| {
            let s = &series[v];
            let mean = s.iter().map(|&c| f64::from(c)).sum::<f64>() / s.len() as f64;
            s.iter().map(|&c| f64::from(c) - mean).collect()
        })
        .collect();
    let norm: Vec<f64> = centred
        .iter()
        .map(|c| c.iter().map(|x| x * x).sum::<f64>().sqrt())
        .collect();
    let matrix = (0..order.len())
        .map(|a| {
            (0..order.len())
                .map(|b| {
                    let dot: f64 = centred[a].iter().zip(&centred[b]).map(|(x, y)| x * y).sum();
                    let denom = norm[a] * norm[b];
                    if denom > 0.0 {
                        dot / denom
                    } else {
                        f64::NAN
                    }
                })
                .collect()
        })
        .collect();
    PeakCorrelation {
        volumes: order.iter().map(|&v| names[v].clone()).collect(),
        matrix,
    }
}
