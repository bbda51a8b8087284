//! Training: from a trace to a [`Model`].
//!
//! Step 1 below is [`rate`], step 2 is here; [`thread`] runs steps 3 to 6 over one thread's
//! requests, with the state hierarchy in [`chain`], the placements in [`placement`], the stats
//! in [`stats`] and the reuse depths in [`reuse`]. [`selection`] chooses levels and states
//! when they are not given.
//!
//! ## Algorithm
//! 1. The trace's rate profile: the share of requests in each fluctuation window. Every request
//!    gets a *model time* u = span × C(t), C being the cumulative share at its issue time t
//!    (piecewise linear over windows); gaps in model time are gaps at the mean rate, so
//!    generation can warp them back onto the profile.
//! 2. Threads: one per stream when the trace has 2 to [`MAX_THREADS`] streams (or as asked),
//!    else one for the whole trace.
//! 3. States: each volume a thread touches is cut into `states` equal ranges of its span, each
//!    range into `states` sub-ranges, and so on for `levels` levels (only ranges that are
//!    visited get children).
//! 4. For each pair of consecutive requests of a thread, the first level at which their state
//!    paths differ decides the edge: it gets the count and the arriving request's stats; the
//!    levels above count a self-loop, the levels below an entry into the new state's children.
//!    Requests in the same leaf count a self-loop at every level and give stats to the leaf's.
//! 5. Stats per edge: op mix, P(sequential) (starts at the previous end on its volume),
//!    P(reuse) (not sequential, and starts at an offset the thread used before), the sizes
//!    (at most [`MAX_SIZES`](sizes::MAX_SIZES), the rarest merged into the nearest kept size)
//!    and the model-time gap: the best of the six fitted families when its KS distance is at
//!    most [`PARAMETRIC_KS`](stats::PARAMETRIC_KS) and fewer than
//!    [`ZERO_GAP_LIMIT`](stats::ZERO_GAP_LIMIT) gaps are zero, else the empirical quantiles.
//!    Edges with fewer than [`MIN_STATS`](stats::MIN_STATS) requests use the thread's stats.
//! 6. Reuse (temporal locality): how many of the thread's requests back the re-used offset was
//!    last used, in quarter-octave buckets.
//!
//! ## Complexity
//! O(n · levels) with hash maps, plus the fits (on at most 20,000 gaps each), plus O(n log n)
//! for the reuse depths, which a second core computes alongside the main pass.

mod arrivals;
mod chain;
mod placement;
mod rate;
mod reuse;
mod selection;
mod sizes;
mod stats;
mod thread;

use rustc_hash::FxHashMap;

pub use placement::{HEADS, NEAR_GAP};

use super::{Model, RateProfile, Thread, Volume};
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::trace::TraceView;

pub const MAX_THREADS: usize = 256;

#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub levels: Option<u32>,
    pub states: Option<u32>,
    /// One thread per stream (`Some(true)`), one for all (`Some(false)`), or decide.
    pub by_stream: Option<bool>,
    /// Keep the temporal-locality (reuse) extension.
    pub reuse: bool,
    pub name: String,
    pub source: Option<String>,
    pub seed: u64,
    /// The device preset and closed-loop depth level selection simulates on (the TPC paper
    /// adds levels until one more changes the simulated IOPS by under 2 %); `None` leaves
    /// levels to the fidelity rule alone.
    pub simulate_on: Option<(String, usize)>,
}

/// The device level selection simulates on unless told otherwise: a disk, whose seeks feel
/// where requests land, with a queue it can reorder.
pub const SELECTION_DEVICE: &str = "hdd-7200";
pub const SELECTION_DEPTH: usize = 8;

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            levels: None,
            states: None,
            by_stream: None,
            reuse: true,
            name: "model".into(),
            source: None,
            seed: 1,
            simulate_on: Some((SELECTION_DEVICE.into(), SELECTION_DEPTH)),
        }
    }
}

/// Trains a model, choosing levels and states unless given.
pub fn train(t: &TraceView<'_>, opts: &TrainOptions) -> Result<Model> {
    train_watched(t, opts, &Progress::default())
}

/// [`train`], counting in `progress` the models tried while choosing the levels and the final
/// one, and stopping with `Interrupted` between them when told to.
pub fn train_watched(t: &TraceView<'_>, opts: &TrainOptions, progress: &Progress) -> Result<Model> {
    if t.len() < 2 {
        return Err(Error::Usage("training needs at least two requests".into()));
    }
    if let Some(l) = opts.levels.filter(|l| !(1..=8).contains(l)) {
        return Err(Error::Usage(format!("`levels` must be 1 to 8, found {l}")));
    }
    if let Some(s) = opts.states.filter(|s| !(1..=1024).contains(s)) {
        return Err(Error::Usage(format!("`states` must be 1 to 1024, found {s}")));
    }
    progress.add_total(if opts.levels.is_some() {
        1
    } else {
        u64::from(selection::MAX_LEVELS) + 1
    });
    let (levels, states, selection) = selection::select(t, opts, progress)?;
    progress.check()?;
    let mut model = train_fixed(t, levels, states, opts);
    progress.complete();
    model.selection = Some(serde_json::Value::Object(selection));
    model.validate()?;
    Ok(model)
}

/// Trains with the given levels and states.
pub fn train_fixed(t: &TraceView<'_>, levels: u32, states: u32, opts: &TrainOptions) -> Model {
    let n = t.len();
    let span = t.ts_ns[n - 1] - t.ts_ns[0];
    let windows = rate::Windows::of(t);
    let u = windows.model_times(t);
    let spans = volume_spans(t);
    let groups = thread_groups(t, opts.by_stream);
    let bounds = reuse::reuse_bounds();
    let several = groups.len() > 1;
    // threads learn independently: on every core (each with a side thread for reuse depths)
    let threads = crate::parallel::on_all_cores(groups, |(name, stream, rows)| {
        let learnt = thread::train_thread(t, &rows, &u, &spans, levels, states, opts.reuse, &bounds);
        Thread {
            name,
            stream,
            weight: rows.len() as f64 / n as f64,
            alignment: learnt.alignment,
            defaults: learnt.defaults,
            volumes: learnt.volumes,
            chain: learnt.chain,
            reuse: learnt.reuse,
            streams: Some(learnt.streams),
            // with one thread its activity is the workload's profile itself
            activity: several.then(|| windows.activity(t, &rows)),
        }
    });
    Model {
        format: super::FORMAT.into(),
        version: super::VERSION,
        name: opts.name.clone(),
        source: opts.source.clone(),
        requests: n as u64,
        duration_ns: span.max(1),
        levels,
        states,
        volumes: t
            .volumes
            .iter()
            .zip(&spans)
            .map(|(name, &span_bytes)| Volume {
                name: name.clone(),
                span_bytes,
            })
            .collect(),
        threads,
        rate: RateProfile {
            arrivals: arrivals::learn(t, windows.window_ns),
            ..windows.profile()
        },
        selection: None,
    }
}

/// The threads to train, each as (name, stream, rows): one per stream when `by_stream` (by
/// default when the trace has 2 to [`MAX_THREADS`] streams), else one for the whole trace.
fn thread_groups(t: &TraceView<'_>, by_stream: Option<bool>) -> Vec<(String, u32, Vec<usize>)> {
    let n = t.len();
    let mut streams: Vec<u32> = t.stream.to_vec();
    streams.sort_unstable();
    streams.dedup();
    let by_stream = by_stream.unwrap_or(streams.len() > 1 && streams.len() <= MAX_THREADS);
    if by_stream {
        let index: FxHashMap<u32, usize> = streams.iter().enumerate().map(|(i, &s)| (s, i)).collect();
        let mut rows = vec![Vec::new(); streams.len()];
        for i in 0..n {
            rows[index[&t.stream[i]]].push(i);
        }
        streams
            .iter()
            .zip(rows)
            .map(|(&s, r)| (format!("stream {s}"), s, r))
            .collect()
    } else {
        let stream = if streams.len() == 1 { streams[0] } else { 0 };
        vec![("all".to_string(), stream, (0..n).collect())]
    }
}

/// Each volume's span: the largest end offset a request reaches (at least 1).
fn volume_spans(t: &TraceView<'_>) -> Vec<u64> {
    let mut spans = vec![0u64; t.volumes.len()];
    for i in 0..t.len() {
        let v = t.volume[i] as usize;
        spans[v] = spans[v].max(t.offset[i] + u64::from(t.size[i]));
    }
    spans.iter().map(|&s| s.max(1)).collect()
}

/// Counts as shares of their total (equal shares when all are 0).
fn normalise(counts: &[u64]) -> Vec<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return vec![1.0 / counts.len() as f64; counts.len()];
    }
    counts.iter().map(|&c| c as f64 / total as f64).collect()
}
