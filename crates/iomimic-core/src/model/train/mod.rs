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
//!    streams that come back to each other's requests as one ([`sharing`]), else one for the
//!    whole trace.
//! 3. States: each volume a thread touches is cut into `states` equal ranges of its span, each
//!    range into `states` sub-ranges, and so on for `levels` levels (only ranges that are
//!    visited get children).
//! 4. For each pair of consecutive requests of a thread, the first level at which their state
//!    paths differ decides the edge: it gets the count and the arriving request's stats; the
//!    levels above count a self-loop, the levels below an entry into the new state's children.
//!    Requests in the same leaf count a self-loop at every level and give stats to the leaf's.
//!    Each top-level state's visits (requests in a row in it) are counted by length, and kept
//!    as its stays where they are not geometric.
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
//! Steps 1 and 2 (with levels and states) are the [`Plan`], done where the trace is; steps 3 to 6
//! depend only on a thread's rows, their model times and [`Shared`], so [`train_part`] can
//! run each thread anywhere (on every core here, or as a cluster's task given
//! [`Plan::thread_trace`]), and [`Plan::assemble`] puts the threads into the model.
//!
//! ## Complexity
//! O(n · levels) with hash maps, plus the fits (on at most 20,000 gaps each), plus O(n log n)
//! for the reuse depths, which a second core computes alongside the main pass.

mod arrivals;
mod chain;
mod pieces;
mod placement;
mod rate;
mod reuse;
mod runs;
mod selection;
mod sharing;
mod sizes;
mod stats;
mod thread;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

pub use pieces::TrainStream;
pub use placement::{HEADS, NEAR_GAP};
pub use thread::Part;

use super::{Model, RateProfile, Thread, Volume};
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::trace::{Op, Trace, TraceView};

pub const MAX_THREADS: usize = 256;
/// Gaps all threads' gap fits are given at most (a thread keeps at most
/// [`GAPS_KEPT_THREAD`], and at least [`GAPS_KEPT_MIN`] past 16,384 threads): beyond, every
/// k-th gap, which fits the same families and bounds training in pieces.
pub const GAPS_KEPT: usize = 1 << 24;
pub const GAPS_KEPT_THREAD: usize = 1 << 20;
pub const GAPS_KEPT_MIN: usize = 1 << 10;

#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub levels: Option<u32>,
    pub states: Option<u32>,
    /// One thread per stream (`Some(true)`), one for all (`Some(false)`), or decide.
    pub by_stream: Option<bool>,
    /// Keep the temporal-locality (reuse) extension.
    pub reuse: bool,
    /// Re-use by the trace's stated population (`Some(true)`), by the edges and stacks alone
    /// (`Some(false)`), or choose by which generates the closer trace (`None`).
    pub population: Option<bool>,
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
            population: None,
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
    progress.add_total(1);
    let plan = plan_watched(t, opts, progress)?;
    let parts = plan.train_here(t);
    let model = plan.assemble(parts)?;
    model.validate()?;
    progress.complete();
    Ok(model)
}

/// The shared steps of [`train_watched`] (checking the options, choosing levels and states,
/// the windows, model times, spans and threads), counting in `progress` the models tried while
/// choosing; the threads are then trained by [`train_part`], here or elsewhere, and put
/// together by [`Plan::assemble`].
pub fn plan_watched(t: &TraceView<'_>, opts: &TrainOptions, progress: &Progress) -> Result<Plan> {
    let (levels, states, selection) = choose(
        t.len() as u64,
        &selection::head(t, selection::SELECTION_SAMPLE),
        opts,
        progress,
    )?;
    let mut plan = Plan::of(t, levels, states, opts);
    plan.selection = Some(serde_json::Value::Object(selection));
    Ok(plan)
}

/// Checks the options for a trace of `n` requests and chooses levels and states on `head`
/// (its first [`selection::SELECTION_SAMPLE`] requests): levels, states and how they were
/// chosen.
fn choose(
    n: u64,
    head: &TraceView<'_>,
    opts: &TrainOptions,
    progress: &Progress,
) -> Result<(u32, u32, serde_json::Map<String, serde_json::Value>)> {
    if n < 2 {
        return Err(Error::Usage("training needs at least two requests".into()));
    }
    if let Some(l) = opts.levels.filter(|l| !(1..=8).contains(l)) {
        return Err(Error::Usage(format!("`levels` must be 1 to 8, found {l}")));
    }
    if let Some(s) = opts.states.filter(|s| !(1..=1024).contains(s)) {
        return Err(Error::Usage(format!("`states` must be 1 to 1024, found {s}")));
    }
    if opts.levels.is_none() {
        progress.add_total(u64::from(selection::MAX_LEVELS));
    }
    let chosen = selection::select(head, opts, progress)?;
    progress.check()?;
    Ok(chosen)
}

/// Trains with the given levels and states (a model not yet validated).
pub fn train_fixed(t: &TraceView<'_>, levels: u32, states: u32, opts: &TrainOptions) -> Result<Model> {
    let plan = Plan::of(t, levels, states, opts);
    let parts = plan.train_here(t);
    plan.assemble(parts)
}

/// What every thread's training takes besides its own requests and their model times.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Shared {
    pub levels: u32,
    pub states: u32,
    /// Keep the temporal-locality (reuse) extension.
    pub reuse: bool,
    /// Each volume's span in bytes, by volume id (the whole trace's).
    pub spans: Vec<u64>,
    /// The most gaps each thread's gap fit is given ([`gaps_kept`]).
    #[serde(default = "whole_thread_gaps")]
    pub gaps_kept: usize,
}

fn whole_thread_gaps() -> usize {
    GAPS_KEPT_THREAD
}

/// The most gaps each of `threads` threads keeps for its gap fit.
pub fn gaps_kept(threads: usize) -> usize {
    (GAPS_KEPT / threads.max(1)).clamp(GAPS_KEPT_MIN, GAPS_KEPT_THREAD)
}

/// One thread to train: its name and stream in the model, and its rows of the trace.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub stream: u32,
    /// Its requests' rows, in time order (none kept when trained a piece at a time).
    pub rows: Vec<usize>,
    /// How many requests it has.
    pub requests: u64,
    /// Its share of its requests in each rate window (`None` when it is the only thread).
    activity: Option<Vec<f64>>,
    /// Its streams and their requests, when it is several that share data.
    pub members: Vec<(u32, u64)>,
}

/// Training's steps 1 and 2 and everything else that needs the whole trace, done once; the
/// threads' training (steps 3 to 6, nearly all the work) depends only on each thread's rows,
/// their model times and [`Shared`], so it can run anywhere.
#[derive(Debug, Clone)]
pub struct Plan {
    pub shared: Shared,
    /// Every request's model time.
    pub u: Vec<f64>,
    /// The threads, in the model's order.
    pub groups: Vec<Group>,
    requests: u64,
    duration_ns: u64,
    volumes: Vec<Volume>,
    rate: RateProfile,
    name: String,
    source: Option<String>,
    selection: Option<serde_json::Value>,
}

impl Plan {
    /// The plan of a trace of at least two requests with the given levels and states.
    fn of(t: &TraceView<'_>, levels: u32, states: u32, opts: &TrainOptions) -> Self {
        let n = t.len();
        let windows = rate::Windows::of(t);
        // the arrival process on a second core while this one does the rest (the threads
        // cannot start before the plan is done)
        let (arrivals, u, spans, groups) = std::thread::scope(|scope| {
            let arrivals = scope.spawn(|| arrivals::learn(t, windows.window_ns));
            let u = windows.model_times(t);
            let spans = volume_spans(t);
            let groups = thread_groups(t, opts.by_stream);
            // with one thread its activity is the workload's profile itself
            let several = groups.len() > 1;
            let groups: Vec<Group> = groups
                .into_iter()
                .map(|(name, stream, rows, members)| Group {
                    activity: several.then(|| windows.activity(t, &rows)),
                    name,
                    stream,
                    requests: rows.len() as u64,
                    rows,
                    members,
                })
                .collect();
            let arrivals = arrivals.join().expect("learning the arrivals does not panic");
            (arrivals, u, spans, groups)
        });
        Self {
            requests: n as u64,
            duration_ns: (t.ts_ns[n - 1] - t.ts_ns[0]).max(1),
            volumes: named_volumes(t.volumes, &spans),
            rate: windows.profile(arrivals),
            shared: Shared {
                levels,
                states,
                reuse: opts.reuse,
                spans,
                gaps_kept: gaps_kept(groups.len()),
            },
            u,
            groups,
            name: opts.name.clone(),
            source: opts.source.clone(),
            selection: None,
        }
    }

    /// Every thread trained on this machine, on all its cores.
    fn train_here(&self, t: &TraceView<'_>) -> Vec<Part> {
        crate::parallel::on_all_cores(self.groups.iter().collect(), |g: &Group| {
            train_part(t, &g.rows, &self.u, &self.shared)
        })
    }

    /// Thread `i`'s requests (of `t`, the trace planned) as a trace of their own, times from
    /// its first request and volume ids and names those of `t`, and their model times: all
    /// [`train_part`] needs to train the thread elsewhere, with all of that trace's rows.
    pub fn thread_trace(&self, t: &TraceView<'_>, i: usize) -> Result<(Trace, Vec<f64>)> {
        let group = self
            .groups
            .get(i)
            .ok_or_else(|| Error::Usage(format!("thread {i} of a plan of {} threads", self.groups.len())))?;
        let rows = &group.rows;
        if t.len() != self.u.len() {
            return Err(Error::Usage(format!(
                "a plan of {} requests given a trace of {}",
                self.u.len(),
                t.len()
            )));
        }
        let first = rows.first().map_or(0, |&r| t.ts_ns[r]);
        let sub = Trace {
            ts_ns: rows.iter().map(|&r| t.ts_ns[r] - first).collect(),
            offset: pick(t.offset, rows),
            size: pick(t.size, rows),
            op: pick(t.op, rows),
            volume: pick(t.volume, rows),
            stream: pick(t.stream, rows),
            volumes: t.volumes.to_vec(),
            ..Trace::default()
        };
        Ok((sub, pick(&self.u, rows)))
    }

    /// The model of the trained threads, one per group in order (not yet validated).
    pub fn assemble(&self, parts: Vec<Part>) -> Result<Model> {
        if parts.len() != self.groups.len() {
            return Err(Error::Usage(format!(
                "a model of {} threads was given {} trained threads",
                self.groups.len(),
                parts.len()
            )));
        }
        let threads = self
            .groups
            .iter()
            .zip(parts)
            .map(|(g, p)| Thread {
                name: g.name.clone(),
                stream: g.stream,
                weight: g.requests as f64 / self.requests as f64,
                alignment: p.alignment,
                defaults: p.defaults,
                volumes: p.volumes,
                chain: p.chain,
                reuse: p.reuse,
                streams: Some(p.streams),
                activity: g.activity.clone(),
                members: if g.members.len() > 1 {
                    let total = g.members.iter().map(|&(_, n)| n).sum::<u64>().max(1) as f64;
                    g.members.iter().map(|&(s, n)| (s, n as f64 / total)).collect()
                } else {
                    Vec::new()
                },
            })
            .collect();
        let mut model = Model {
            format: super::FORMAT.into(),
            version: super::VERSION,
            name: self.name.clone(),
            source: self.source.clone(),
            requests: self.requests,
            duration_ns: self.duration_ns,
            levels: self.shared.levels,
            states: self.shared.states,
            volumes: self.volumes.clone(),
            threads,
            rate: self.rate.clone(),
            selection: self.selection.clone(),
        };
        // (a plan without a selection is one level selection itself tries: it keeps all)
        if self.selection.is_some() && !selection::keeps_population(self.selection.as_ref()) {
            selection::without_population(&mut model);
        }
        Ok(model)
    }
}

/// The values of `column` at `rows`.
fn pick<T: Copy>(column: &[T], rows: &[usize]) -> Vec<T> {
    rows.iter().map(|&r| column[r]).collect()
}

/// Trains one thread: the requests `rows` of `t` (in time order) with model times `u` (indexed
/// like `t`'s rows). Depends on nothing else, so a sub-trace of just those rows, with their
/// model times, gives the same [`Part`] as the whole trace.
pub fn train_part(t: &TraceView<'_>, rows: &[usize], u: &[f64], shared: &Shared) -> Part {
    let bounds = reuse::reuse_bounds();
    thread::train_thread(
        t,
        rows,
        u,
        &shared.spans,
        shared.levels,
        shared.states,
        shared.reuse,
        &bounds,
        shared.gaps_kept,
    )
}

/// The threads to train, each as (name, stream, rows, member streams with their requests): one
/// per stream when `by_stream` (by
/// default when the trace has 2 to [`MAX_THREADS`] streams, streams that share data as one:
/// [`sharing`]), else one for the whole trace.
#[allow(clippy::type_complexity)]
fn thread_groups(
    t: &TraceView<'_>,
    by_stream: Option<bool>,
) -> Vec<(String, u32, Vec<usize>, Vec<(u32, u64)>)> {
    let mut streams: Vec<u32> = t.stream.to_vec();
    streams.sort_unstable();
    streams.dedup();
    // which streams share data, and each stream's requests (a group's members' shares)
    let mut requests: FxHashMap<u32, u64> = FxHashMap::default();
    let shared = if by_stream.is_none() && per_stream(&streams, by_stream) {
        let mut sharing = sharing::Sharing::new();
        for i in 0..t.len() {
            *requests.entry(t.stream[i]).or_default() += 1;
            if t.op[i] != Op::Flush as u8 {
                sharing.touch(t.stream[i], t.volume[i], t.offset[i]);
            }
        }
        sharing.groups()
    } else {
        FxHashMap::default()
    };
    let threads = threads_of(&streams, by_stream, &shared);
    let mut rows = vec![Vec::new(); threads.len()];
    if threads.len() > 1 {
        let index: FxHashMap<u32, usize> = threads
            .iter()
            .enumerate()
            .flat_map(|(k, (_, _, members))| members.iter().map(move |&s| (s, k)))
            .collect();
        for (i, s) in t.stream.iter().enumerate() {
            rows[index[s]].push(i);
        }
    } else {
        rows[0] = (0..t.len()).collect();
    }
    threads
        .into_iter()
        .zip(rows)
        .map(|((name, s, members), r)| {
            let members = if members.len() > 1 {
                members
                    .iter()
                    .map(|m| (*m, requests.get(m).copied().unwrap_or(0)))
                    .collect()
            } else {
                Vec::new()
            };
            (name, s, r, members)
        })
        .collect()
}

/// Whether a trace whose distinct streams are `streams` gets a thread per stream (or group).
fn per_stream(streams: &[u32], by_stream: Option<bool>) -> bool {
    by_stream.unwrap_or(streams.len() > 1 && streams.len() <= MAX_THREADS) && !streams.is_empty()
}

/// The threads of a trace whose distinct streams, sorted, are `streams`, as (name, stream,
/// member streams): one per stream when `by_stream` (by default when there are 2 to
/// [`MAX_THREADS`]) or per group of streams `shared` puts together (each stream's group by its
/// lowest stream, which the thread is given), else one.
fn threads_of(
    streams: &[u32],
    by_stream: Option<bool>,
    shared: &FxHashMap<u32, u32>,
) -> Vec<(String, u32, Vec<u32>)> {
    if !per_stream(streams, by_stream) {
        let stream = if streams.len() == 1 { streams[0] } else { 0 };
        return vec![("all".to_string(), stream, vec![stream])];
    }
    let mut members: std::collections::BTreeMap<u32, Vec<u32>> = std::collections::BTreeMap::new();
    for &s in streams {
        members.entry(*shared.get(&s).unwrap_or(&s)).or_default().push(s);
    }
    members
        .into_iter()
        .map(|(lowest, m)| {
            let name = match m.len() {
                1 => format!("stream {lowest}"),
                2..=4 => format!(
                    "streams {}",
                    m.iter().map(u32::to_string).collect::<Vec<_>>().join("+")
                ),
                n => format!("{n} streams from {lowest}, sharing data"),
            };
            (name, lowest, m)
        })
        .collect()
}

/// The model's volumes: each name with its span.
fn named_volumes(names: &[String], spans: &[u64]) -> Vec<Volume> {
    names
        .iter()
        .zip(spans)
        .map(|(name, &span_bytes)| Volume {
            name: name.clone(),
            span_bytes,
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Three streams over two volumes, interleaved: a sequential one, a random one, and one
    /// that re-reads a small set, each with its own op mix.
    fn three_streams() -> Trace {
        let n = 6000u64;
        let mut t = Trace {
            volumes: vec!["data".into(), "log".into()],
            ..Trace::default()
        };
        for i in 0..n {
            let s = (i * 7 % 3) as u32;
            let (volume, offset, op) = match s {
                0 => (0, (i / 3) * 8192, 0),
                1 => (1, (i * 104_729 % 4096) * 4096, u8::from(i % 4 == 0)),
                _ => (0, (1 << 30) + (i * 31 % 64) * 4096, 1),
            };
            t.ts_ns.push(i * 50_000 + (i * i % 7_000));
            t.offset.push(offset);
            t.size.push(if s == 0 { 8192 } else { 4096 });
            t.op.push(op);
            t.volume.push(volume);
            t.stream.push(s);
        }
        t.sort_by_time();
        t
    }

    #[test]
    fn threads_trained_apart_on_their_own_rows_assemble_the_same_model() {
        let t = three_streams();
        let opts = TrainOptions::default();
        let whole = train(&t.view(), &opts).unwrap();
        let plan = plan_watched(&t.view(), &opts, &Progress::default()).unwrap();
        assert_eq!(plan.groups.len(), 3);
        let parts: Vec<Part> = plan
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let (sub, u) = plan.thread_trace(&t.view(), i).unwrap();
                assert_eq!(sub.len(), g.rows.len());
                sub.validate().unwrap();
                let all: Vec<usize> = (0..g.rows.len()).collect();
                let part = train_part(&sub.view(), &all, &u, &plan.shared);
                // as it travels back from a task
                serde_json::from_str(&serde_json::to_string(&part).unwrap()).unwrap()
            })
            .collect();
        let apart = plan.assemble(parts).unwrap();
        assert_eq!(apart.to_json(), whole.to_json());
    }

    #[test]
    fn assembly_refuses_a_missing_thread() {
        let t = three_streams();
        let opts = TrainOptions {
            levels: Some(1),
            states: Some(4),
            ..TrainOptions::default()
        };
        let plan = plan_watched(&t.view(), &opts, &Progress::default()).unwrap();
        let one = train_part(&t.view(), &plan.groups[0].rows, &plan.u, &plan.shared);
        let e = plan.assemble(vec![one]).unwrap_err();
        assert!(e.to_string().contains("3 threads was given 1"), "{e}");
        let e = plan.thread_trace(&t.view(), 3).unwrap_err();
        assert!(e.to_string().contains("thread 3 of a plan of 3 threads"), "{e}");
        let e = plan.thread_trace(&t.view().rows(0..10), 0).unwrap_err();
        assert!(
            e.to_string()
                .contains("plan of 6000 requests given a trace of 10"),
            "{e}"
        );
    }
}
