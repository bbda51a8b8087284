//! Characterization: every figure the papers use, for the whole trace, each volume and each
//! stream, in one pass over the columns (plus a light second pass for spatial ranges, whose
//! bounds depend on each volume's span, and the miss-ratio curves).

// Numerical code: float-to-count casts are of non-negative values by construction, exact float
// equality is wanted where ties are grouped, and the formulas keep their textbook letters.
#![allow(clippy::cast_sign_loss, clippy::float_cmp, clippy::many_single_char_names)]

mod block_map;
pub mod chunked;
pub mod compare;
pub mod distfit;
pub mod frequency_ranks;
mod group;
pub mod lru_stack;
pub mod mrc;
pub mod plot_data;
pub mod sequentiality;
pub use crate::stats; // moments and percentiles, below the figures that use them (latency objects too)
pub mod summary;
mod threads;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

pub use group::{Figures, PEAK_SIGMAS};
use group::{GroupAcc, Members};
use mrc::Mrc;
use sequentiality::KeyState;
pub use threads::{Thread, Thresholds};

use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::trace::TraceView;

/// Most volumes in the peak-correlation matrix (the busiest ones).
pub const CORRELATION_VOLUMES: usize = 64;

/// Which groups the thread table classifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    Stream,
    Volume,
}

/// Miss-ratio curves to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MrcScope {
    /// None at all.
    None,
    /// The whole trace only.
    Trace,
    /// The whole trace, every volume and every stream.
    All,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// Equal ranges of each volume's address span for the spatial histogram.
    pub ranges: usize,
    /// Fluctuation window; default min(60 s, span / 100), at least 1 ms.
    pub window_ns: Option<u64>,
    /// Classify these groups into thread types.
    pub by: Option<GroupBy>,
    pub mrc: MrcScope,
    /// Force a SHARDS sampling rate (1.0 = exact); default from `mrc_budget`.
    pub mrc_sampling: Option<f64>,
    /// Distinct 4 KiB blocks a curve may track: exact when the trace's fit, else sampled at
    /// the rate that brings them down to it (SHARDS).
    pub mrc_budget: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            ranges: 4,
            window_ns: None,
            by: None,
            mrc: MrcScope::All,
            mrc_sampling: None,
            mrc_budget: mrc::DEFAULT_BUDGET_BLOCKS,
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

/// Most spatial ranges of a volume's span a profile keeps (a heat map row each).
pub const MAX_RANGES: usize = 65_536;

/// Bytes of counters a profile may hold (per window and per range, for every group), so that
/// a window or range count that cannot fit is refused up front, not met by the allocator.
const COUNTER_BUDGET: u64 = 4 << 30;

fn check_counters(groups: usize, windows: usize, ranges: usize) -> Result<()> {
    // a u32 per window and three u64 per range, in each group
    let bytes = groups as u64 * (windows as u64 * 4 + ranges as u64 * 24);
    if bytes > COUNTER_BUDGET {
        return Err(Error::Usage(format!(
            "{groups} volumes and streams × {windows} windows and {ranges} ranges need {:.1} GiB of \
             counters (at most {} GiB): use a longer --window or fewer --ranges",
            bytes as f64 / f64::from(1u32 << 30),
            COUNTER_BUDGET >> 30
        )));
    }
    Ok(())
}

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
    characterize_watched(t, opts, &Progress::default())
}

/// [`characterize`], counting in `progress` the requests each pass has taken and stopping with
/// `Interrupted` within a pass when told to.
pub fn characterize_watched(t: &TraceView<'_>, opts: &Options, progress: &Progress) -> Result<Profile> {
    progress.add_total(work_units(t, opts));
    characterize_counted(t, opts, progress)
}

/// The units [`characterize_watched`] counts: a trace's length for each pass over it (the
/// counters, the spatial ranges, the whole trace's curve, the volumes' figures and, when there
/// are several streams, the streams').
pub(crate) fn work_units(t: &TraceView<'_>, opts: &Options) -> u64 {
    let several_streams = t.stream.iter().any(|&s| s != t.stream[0]);
    let passes = 3 + u64::from(opts.mrc != MrcScope::None) + u64::from(several_streams);
    passes * t.len() as u64
}

/// [`characterize_watched`] with the total already counted (by a caller that adds several
/// characterizations' at once).
pub(crate) fn characterize_counted(
    t: &TraceView<'_>,
    opts: &Options,
    progress: &Progress,
) -> Result<Profile> {
    let ranges = opts.ranges.max(1);
    if ranges > MAX_RANGES {
        return Err(Error::Usage(format!(
            "`ranges` {ranges} is more than the {MAX_RANGES} spatial ranges a profile keeps"
        )));
    }
    let start = t.ts_ns.first().copied().unwrap_or(0);
    let span = t.ts_ns.last().map_or(0, |&last| last - start);
    let window_ns = window_for(span, opts.window_ns)?;
    let n_windows = (span / window_ns + 1) as usize;
    let streams = StreamIds::of(t);
    check_counters(1 + t.volumes.len() + streams.several(), n_windows, ranges)?;
    let rows = GroupRows::new(t, &streams);
    // the miss-ratio curves (stack distances) and the counters share nothing: both cores
    // (each side claims its core: the curves spread to both when the counters are done)
    let (groups, curves) = std::thread::scope(|scope| {
        let counting = crate::parallel::Busy::claim();
        let curves = scope.spawn(|| {
            let _core = crate::parallel::Busy::claim();
            Curves::new(t, opts, progress)
        });
        let mut groups = Groups::new(t.volumes.len(), streams.several(), n_windows, ranges);
        let counted = groups
            .observe(t, &streams, start, window_ns, progress)
            .and_then(|max_end| groups.observe_ranges(t, &streams, ranges, &max_end, progress));
        drop(counting);
        if counted.is_err() {
            progress.stop(); // the curves' thread stops too
        }
        let curves = curves.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        Ok::<_, Error>((groups, (counted, curves)))
    })?;
    let (counted, curves) = curves;
    counted?;
    let curves = curves?;
    let figures = groups.finish(&curves, &rows, &streams, span, window_ns, progress)?;
    Ok(assemble(
        t.volumes,
        figures,
        t.len() as u64,
        Options {
            window_ns: Some(window_ns),
            ranges,
            ..opts.clone()
        },
    ))
}

/// The profile of the groups' figures (of a trace of `volumes` and `requests`): their thread
/// types when asked for, and the busiest volumes' peak correlation. `opts` as resolved (the
/// window and ranges used).
fn assemble(volumes: &[String], figures: GroupFigures, requests: u64, opts: Options) -> Profile {
    let (threads, thread_thresholds) = match opts.by {
        Some(GroupBy::Stream) => {
            let groups: Vec<(String, &Figures)> = figures
                .streams
                .iter()
                .map(|(id, f)| (id.to_string(), f))
                .collect();
            let (t, th) = threads::classify(&groups, requests);
            (Some(t), Some(th))
        }
        Some(GroupBy::Volume) => {
            let groups: Vec<(String, &Figures)> = volumes.iter().cloned().zip(&figures.volumes).collect();
            let (t, th) = threads::classify(&groups, requests);
            (Some(t), Some(th))
        }
        None => (None, None),
    };
    let peak_correlation = (volumes.len() > 1).then(|| peak_correlation(volumes, &figures.window_series));
    Profile {
        format_version: 2, // 2: response times as latency objects (docs/json.md)
        options: opts,
        trace: figures.trace,
        volumes: volumes.iter().cloned().zip(figures.volumes).collect(),
        streams: figures.streams.into_iter().collect(),
        threads,
        thread_thresholds,
        peak_correlation,
    }
}

/// Dense ids for a trace's streams, in order of first appearance.
struct StreamIds {
    /// Stream id → dense id.
    dense: FxHashMap<u32, usize>,
    /// Each request's dense id.
    of: Vec<u32>,
}

impl StreamIds {
    fn of(t: &TraceView<'_>) -> Self {
        let mut dense: FxHashMap<u32, usize> = FxHashMap::default();
        let of = t
            .stream
            .iter()
            .map(|&s| {
                let next = dense.len();
                *dense.entry(s).or_insert(next) as u32
            })
            .collect();
        Self { dense, of }
    }

    fn len(&self) -> usize {
        self.dense.len()
    }

    /// The number of streams when there are several, else 0 (one stream's figures are the
    /// trace's, so it gets no group of its own).
    fn several(&self) -> usize {
        if self.len() > 1 {
            self.len()
        } else {
            0
        }
    }
}

/// The rows of each volume (when there are several) and of each stream (when there are
/// several), in time order: counted first, so each list is allocated once at its size. The
/// figures that need a group's requests in order (gaps, latencies, miss-ratio curves) take
/// them from these, one group at a time.
struct GroupRows {
    volumes: Grouped,
    streams: Grouped,
}

/// Rows grouped by a key: group `g` is `rows[starts[g]..starts[g + 1]]`.
struct Grouped {
    rows: Vec<u32>,
    starts: Vec<usize>,
}

impl Grouped {
    fn new(groups: usize, keys: impl Iterator<Item = usize> + Clone) -> Self {
        let mut starts = vec![0usize; groups + 1];
        for k in keys.clone() {
            starts[k + 1] += 1;
        }
        for g in 0..groups {
            starts[g + 1] += starts[g];
        }
        let mut next = starts.clone();
        let mut rows = vec![0u32; starts[groups]];
        for (i, k) in keys.enumerate() {
            rows[next[k]] = i as u32;
            next[k] += 1;
        }
        Self { rows, starts }
    }

    fn none() -> Self {
        Self {
            rows: Vec::new(),
            starts: vec![0],
        }
    }

    fn of(&self, g: usize) -> &[u32] {
        &self.rows[self.starts[g]..self.starts[g + 1]]
    }
}

impl GroupRows {
    fn new(t: &TraceView<'_>, streams: &StreamIds) -> Self {
        let n = t.len();
        Self {
            volumes: if t.volumes.len() > 1 {
                Grouped::new(t.volumes.len(), (0..n).map(|i| t.volume[i] as usize))
            } else {
                Grouped::none()
            },
            streams: if streams.len() > 1 {
                Grouped::new(streams.len(), streams.of.iter().map(|&s| s as usize))
            } else {
                Grouped::none()
            },
        }
    }

    /// The requests of volume `v`.
    fn volume(&self, t: &TraceView<'_>, v: usize) -> Members<'_> {
        if t.volumes.len() > 1 {
            Members::Rows(self.volumes.of(v))
        } else {
            Members::All(t.len())
        }
    }
}

/// What one characterization accumulates: the whole trace, each volume, and each stream when
/// there are several (else `streams` is empty).
struct Groups {
    whole: GroupAcc,
    volumes: Vec<GroupAcc>,
    streams: Vec<GroupAcc>,
}

/// The finished figures of every group.
struct GroupFigures {
    trace: Figures,
    volumes: Vec<Figures>,
    /// By stream id.
    streams: Vec<(u32, Figures)>,
    /// Each volume's requests per fluctuation window.
    window_series: Vec<Vec<u32>>,
}

impl Groups {
    fn new(volumes: usize, streams: usize, windows: usize, ranges: usize) -> Self {
        let new_acc = || GroupAcc::new(windows, ranges);
        Self {
            whole: new_acc(),
            volumes: (0..volumes).map(|_| new_acc()).collect(),
            streams: (0..streams).map(|_| new_acc()).collect(),
        }
    }

    /// Pass 1: everything but the spatial ranges and the streams' sequentiality.
    /// Returns each volume's largest end offset, which the ranges of pass 2 divide.
    fn observe(
        &mut self,
        t: &TraceView<'_>,
        stream_ids: &StreamIds,
        start: u64,
        window_ns: u64,
        progress: &Progress,
    ) -> Result<Vec<u64>> {
        let multi_stream = !self.streams.is_empty();
        let mut volume_keys: Vec<KeyState> = (0..t.volumes.len()).map(|_| KeyState::default()).collect();
        let mut max_end = vec![0u64; t.volumes.len()];
        let (whole, volumes, streams) = (&mut self.whole, &mut self.volumes, &mut self.streams);
        for i in 0..t.len() {
            let (ts, offset, size, op, v) =
                (t.ts_ns[i], t.offset[i], t.size[i], t.op[i], t.volume[i] as usize);
            let window = ((ts - start) / window_ns) as usize;
            whole.observe(size, op, window);
            volumes[v].observe(size, op, window);
            volumes[v]
                .seq
                .observe(&mut volume_keys[v], offset, u64::from(size));
            max_end[v] = max_end[v].max(offset + u64::from(size));
            if multi_stream {
                let s = stream_ids.of[i] as usize;
                streams[s].observe(size, op, window);
            }
            progress.tick(i)?;
        }
        progress.ticked(t.len());
        // The whole trace's sequentiality is that of its volumes together.
        for v in volumes.iter() {
            whole.seq.merge(&v.seq);
        }
        Ok(max_end)
    }

    /// Pass 2: spatial ranges of [0, max end offset) of each volume.
    fn observe_ranges(
        &mut self,
        t: &TraceView<'_>,
        streams: &StreamIds,
        ranges: usize,
        max_end: &[u64],
        progress: &Progress,
    ) -> Result<()> {
        let multi_stream = !self.streams.is_empty();
        for i in 0..t.len() {
            let v = t.volume[i] as usize;
            let range = (u128::from(t.offset[i]) * ranges as u128 / u128::from(max_end[v].max(1))) as usize;
            let range = range.min(ranges - 1);
            let op = t.op[i];
            self.whole.observe_range(range, op);
            self.volumes[v].observe_range(range, op);
            if multi_stream {
                self.streams[streams.of[i] as usize].observe_range(range, op);
            }
            progress.tick(i)?;
        }
        progress.ticked(t.len());
        Ok(())
    }

    /// The figures of every group over the trace's `span`, with the curves asked for, each
    /// counted in `progress` by its requests. The groups are independent, so they are finished
    /// on every core (their fits and sequentiality are most of a many-stream trace's time).
    fn finish(
        self,
        curves: &Curves<'_, '_>,
        rows: &GroupRows,
        ids: &StreamIds,
        span: u64,
        window_ns: u64,
        progress: &Progress,
    ) -> Result<GroupFigures> {
        enum Group {
            Trace(GroupAcc),
            Volume(usize, GroupAcc),
            Stream(usize, GroupAcc),
        }
        let t = curves.t;
        let multi_volume = self.volumes.len() > 1;
        let one_stream = self.streams.is_empty();
        let whole_mrc = curves.whole();
        let window_series: Vec<Vec<u32>> = self.volumes.iter().map(|v| v.windows.clone()).collect();
        let volumes = self.volumes.len();
        let tasks: Vec<Group> = std::iter::once(Group::Trace(self.whole))
            .chain(
                self.volumes
                    .into_iter()
                    .enumerate()
                    .map(|(v, acc)| Group::Volume(v, acc)),
            )
            .chain(
                self.streams
                    .into_iter()
                    .enumerate()
                    .map(|(s, acc)| Group::Stream(s, acc)),
            )
            .collect();
        let finished = crate::parallel::on_all_cores(tasks, |group| -> Result<Figures> {
            progress.check()?;
            Ok(match group {
                Group::Trace(acc) => acc.finish(t, Members::All(t.len()), span, window_ns, whole_mrc.clone()),
                Group::Volume(v, acc) => {
                    let mrc = if multi_volume {
                        curves.of(rows.volumes.of(v), progress)?
                    } else {
                        progress.advance(t.len() as u64);
                        whole_mrc.clone().filter(|_| curves.per_group)
                    };
                    acc.finish(t, rows.volume(t, v), span, window_ns, mrc)
                }
                Group::Stream(s, mut acc) => {
                    let members = rows.streams.of(s);
                    // a stream's sequentiality is taken here, one stream at a time on each
                    // core: its keys' detangling maps hold an entry per recent request, and
                    // all streams' at once were the largest per-request cost of a many-stream
                    // trace
                    acc.seq = sequentiality::of_rows(t, members);
                    let mrc = curves.of(members, progress)?;
                    acc.finish(t, Members::Rows(members), span, window_ns, mrc)
                }
            })
        });
        let mut finished = finished
            .into_iter()
            .collect::<Result<Vec<Figures>>>()?
            .into_iter();
        let trace = finished.next().expect("the trace's figures come first");
        let volumes: Vec<Figures> = finished.by_ref().take(volumes).collect();
        let mut dense_to_stream = vec![0u32; ids.len()];
        for (&id, &dense) in &ids.dense {
            dense_to_stream[dense] = id;
        }
        let streams: Vec<(u32, Figures)> = if one_stream {
            // One stream: its figures are the trace's.
            ids.dense.keys().map(|&id| (id, trace.clone())).collect()
        } else {
            finished
                .enumerate()
                .map(|(s, f)| (dense_to_stream[s], f))
                .collect()
        };
        Ok(GroupFigures {
            trace,
            volumes,
            streams,
            window_series,
        })
    }
}

/// The miss-ratio curves asked for: the whole trace's (computed at once, on its own core while
/// the counters are taken), and with [`MrcScope::All`] each volume's and stream's, on the rows
/// of each (exact when the trace's distinct blocks fit the budget, else sampled at one rate).
struct Curves<'v, 'a> {
    t: &'v TraceView<'a>,
    whole: Option<Mrc>,
    rate: f64,
    per_group: bool,
}

impl<'v, 'a> Curves<'v, 'a> {
    /// Takes the whole trace's curve (counted in `progress`) unless none is asked for.
    fn new(t: &'v TraceView<'a>, opts: &Options, progress: &Progress) -> Result<Self> {
        let n = t.len();
        let (rate, whole) = match opts.mrc {
            MrcScope::None => (1.0, None),
            _ => {
                let blocks = mrc::Blocks::of_trace(t);
                let rate = opts
                    .mrc_sampling
                    .unwrap_or_else(|| blocks.sampling_rate(opts.mrc_budget));
                let whole = mrc::curve_of_counted(t, 0..n, &blocks, rate, progress)?;
                progress.ticked(n);
                (rate, Some(whole))
            }
        };
        Ok(Self {
            t,
            whole,
            rate,
            per_group: opts.mrc == MrcScope::All,
        })
    }

    /// The whole trace's curve, unless none is asked for.
    fn whole(&self) -> Option<Mrc> {
        self.whole.clone()
    }

    /// A group's curve, when each group gets one (else None), its requests counted in
    /// `progress` either way.
    fn of(&self, rows: &[u32], progress: &Progress) -> Result<Option<Mrc>> {
        if !self.per_group {
            progress.advance(rows.len() as u64);
            return Ok(None);
        }
        let curve = mrc::miss_ratio_curve(self.t, rows.iter().map(|&r| r as usize), self.rate, progress)?;
        progress.ticked(rows.len());
        Ok(Some(curve))
    }
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
