//! Generation: from a [`Model`] to a synthetic trace.
//!
//! Each thread's walk is [`walk`] (on the model made ready to sample from, [`runtime`]); the
//! time warp is [`warp`]; the output columns and their merge are [`columns`].
//!
//! ## Algorithm
//! Each thread walks its state diagram: from the current leaf, the top chain's edge is drawn;
//! if it stays in the same state and that state has children, the child chain's edge is drawn
//! instead, and so on down. A move to another state enters its children by their entry
//! probabilities. A state with no edges of its own is entered afresh by its chain's entry
//! probabilities and the whole move drawn again, once. A top-level state with stays is
//! semi-Markov: each visit draws a stay, the top level takes the self-loop while it lasts and
//! one of the other edges once it is over. The deciding edge's stats (or, for an
//! edge without its own, its volume's or the thread's) give the op, the size and the
//! model-time gap; the request is then sequential (it starts at its volume's previous end),
//! a reuse (it repeats the offset and size of the request that last started in the block at a
//! depth of the thread's LRU stack drawn from the reuse distribution) or random (uniform and aligned inside the new leaf).
//! Threads get request counts by their weights and are merged by model time; model time is
//! then warped onto the rate profile (cycled when generating past its end) and divided by the
//! intensity.
//!
//! ## Complexity
//! O(n · levels + n log threads), and O(n log n) with the reuse extension (an LRU stack);
//! memory: the output columns, plus 40 bytes a request while generating, the used-block filter
//! (about a byte a block, [`super::used`]) and, with reuse, the LRU stack.

mod arrivals;
mod columns;
mod reuse;
mod runtime;
mod walk;
mod warp;

use crate::parallel::{cores, on_all_cores};
use arrivals::Schedule;
use columns::{merge_threads, Columns, Label};
use std::ops::Range;
use warp::Warp;

use super::Model;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::random::splitmix;
use crate::trace::Trace;

/// Threads with at least this many requests are generated in parallel segments.
pub const SEGMENT_MIN: u64 = 1 << 20;
/// Requests per slice of a long generation, by default (see [`Generation`]): memory for one
/// slice is about half a GiB.
pub const SLICE_REQUESTS: u64 = 1 << 23;
/// Requests per piece of the parallel time warp.
const FILL_CHUNK: usize = 1 << 16;

#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// Requests to generate; default the model's own count (or as many as fit `duration_ns`).
    pub requests: Option<u64>,
    /// Stop at this time (after intensity scaling).
    pub duration_ns: Option<u64>,
    /// Multiplies the request rate (divides every time) and changes nothing else.
    pub intensity: f64,
    pub seed: u64,
    /// Use the temporal-locality (reuse) extension when the model has it.
    pub reuse: bool,
    /// Requests per slice of a long generation (see [`Generation`]): part of what the seed
    /// gives, so the same seed and slice give the same trace however it is written.
    pub slice: u64,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            requests: None,
            duration_ns: None,
            intensity: 1.0,
            seed: 1,
            reuse: true,
            slice: SLICE_REQUESTS,
        }
    }
}

fn check(opts: &GenerateOptions) -> Result<()> {
    crate::trace::check_intensity(opts.intensity)?;
    if opts.slice == 0 {
        return Err(Error::Usage(
            "`slice` must be a positive number of requests".into(),
        ));
    }
    if opts.requests == Some(0) || opts.duration_ns == Some(0) {
        return Err(Error::Usage(
            "asked to generate nothing: `requests` and `duration` must be positive".into(),
        ));
    }
    Ok(())
}

/// Refuses an intensity so low that the workload would span more time than a trace's
/// nanosecond clock holds (times are u64 ns; 2^62 ns is about 146 years).
fn check_span(model: &Model, total: u64, intensity: f64) -> Result<()> {
    let span_ns = model.duration_ns as f64 * (total as f64 / model.requests.max(1) as f64) / intensity;
    if span_ns > (1u64 << 62) as f64 {
        let years = span_ns / 3.156e16;
        let over = if years.is_finite() {
            format!("{years:.3e} years")
        } else {
            "unbounded time".into()
        };
        return Err(Error::Usage(format!(
            "`intensity` {intensity:e} stretches {total} requests over {over}; a trace spans at most {:.0} years",
            (1u64 << 62) as f64 / 3.156e16
        )));
    }
    Ok(())
}

/// How many requests to generate and, with an arrival process, their windows.
struct Plan {
    total: u64,
    arrivals: Option<Schedule>,
    /// With an arrival process and a duration: the model time the duration ends at.
    span: Option<u64>,
}

/// The requests asked for: by count, by duration (at the model's rate), or the model's own.
fn plan(model: &Model, opts: &GenerateOptions) -> Result<Plan> {
    let estimate = match (opts.requests, opts.duration_ns) {
        (Some(n), _) => n,
        (None, Some(d)) => {
            ((d as f64 * opts.intensity / model.duration_ns as f64) * model.requests as f64).ceil() as u64 + 1
        }
        (None, None) => model.requests,
    };
    let asked_by = match (opts.requests, opts.duration_ns) {
        (Some(_), _) | (None, None) => "requests",
        (None, Some(_)) => "duration",
    };
    crate::limits::check_requests(estimate, asked_by)?;
    check_span(model, estimate, opts.intensity)?;
    let Some(a) = &model.rate.arrivals else {
        return Ok(Plan {
            total: estimate,
            arrivals: None,
            span: None,
        });
    };
    // model time to cover when asked for a duration, with or without a count (whichever
    // ends first; times are divided by the intensity after)
    let span = opts.duration_ns.map(|d| (d as f64 * opts.intensity) as u64);
    let requests = match (opts.requests, opts.duration_ns) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(model.requests),
    };
    let counted: u64 = a.counts.iter().map(|&c| u64::from(c)).sum();
    let rate = model.requests as f64 / counted.max(1) as f64;
    let sched = arrivals::schedule(a, requests, span, rate, opts.seed);
    crate::limits::check_requests(sched.total(), asked_by)?;
    Ok(Plan {
        total: sched.total(),
        arrivals: Some(sched),
        span,
    })
}

/// Generates a synthetic trace from `model`.
pub fn generate(model: &Model, opts: &GenerateOptions) -> Result<Trace> {
    generate_watched(model, opts, &Progress::default())
}

/// [`generate`], counting in `progress` the requests walked (the first half of the work) and
/// placed in time (the second), and stopping with `Interrupted` within the walks when told to.
/// The trace is its [`Generation`]'s slices one after the other, its first request at 0.
pub fn generate_watched(model: &Model, opts: &GenerateOptions, progress: &Progress) -> Result<Trace> {
    let generation = Generation::plan(model, opts)?;
    progress.add_total(2 * generation.requests());
    let mut out = generation.slice(model, 0, progress)?;
    for s in 1..generation.len() {
        let part = generation.slice(model, s, progress)?;
        if part.is_empty() {
            break; // past the duration asked for: so is every later slice
        }
        out.extend_from(&part.view());
    }
    out.make_relative();
    progress.complete();
    Ok(out)
}

/// A generation planned and cut into slices of consecutive output time, each generated on its
/// own when asked for: a trace of any length is written a slice at a time in the memory of one
/// (about 70 bytes a request of [`GenerateOptions::slice`]), and slices can be made on
/// different machines. The trace is the slices in order (each slice's times lie between its
/// neighbours'); one slice, the usual case, is the whole generation.
///
/// Each thread takes in a slice the requests that fall in its reach of the slice's time: the
/// workload's profile gives the output time where a slice ends, each thread's own profile (its
/// activity, when kept) where the thread stands at that time. A thread's walk starts afresh in
/// every slice (as the segments of a long thread do within one) and its times are scaled to its
/// reach of the slice, the last exactly at its end. With an arrival process, a slice is whole
/// windows of the schedule and takes their times.
pub struct Generation {
    opts: GenerateOptions,
    total: u64,
    /// Cycles of the model's profile the workload spans.
    cycles: f64,
    arrivals: Option<Schedule>,
    span: Option<u64>,
    slices: Vec<Slice>,
}

/// One slice of a [`Generation`].
struct Slice {
    /// Each thread's reach of the slice, as shares of its requests' model time (0 to 1).
    reach: Vec<(f64, f64)>,
    /// Each thread's requests in the slice as planned, and before it.
    counts: Vec<u64>,
    before: Vec<u64>,
    /// The output times (ns) between which the slice's requests lie: none at the trace's ends.
    bounds: (Option<u64>, Option<u64>),
    /// The arrival schedule's windows the slice covers.
    windows: Range<usize>,
}

impl Generation {
    pub fn plan(model: &Model, opts: &GenerateOptions) -> Result<Self> {
        check(opts)?;
        let Plan {
            total,
            arrivals,
            span,
        } = plan(model, opts)?;
        // (requests, windows) of each slice
        let cuts: Vec<(u64, Range<usize>)> = match &arrivals {
            None => {
                let n = total.div_ceil(opts.slice).max(1);
                let parts = usize::try_from(n).unwrap_or(usize::MAX);
                apportion(total, &vec![1.0 / n as f64; parts])
                    .into_iter()
                    .map(|r| (r, 0..0))
                    .collect()
            }
            Some(sched) => {
                let mut cuts = Vec::new();
                let (mut from, mut taken) = (0usize, 0u64);
                for (j, &c) in sched.counts.iter().enumerate() {
                    taken += u64::from(c);
                    if taken >= opts.slice || j + 1 == sched.counts.len() {
                        cuts.push((taken, from..j + 1));
                        (from, taken) = (j + 1, 0);
                    }
                }
                if cuts.is_empty() {
                    cuts.push((0, 0..0));
                }
                cuts
            }
        };
        let cycles = total as f64 / model.requests.max(1) as f64;
        let threads = &model.threads;
        // (weights normalised: validation allows their sum a rounding off 1)
        let whole = split(total, &threads.iter().map(|t| t.weight).collect::<Vec<_>>());
        let workload = Warp::new(model, &model.rate.shares);
        let warps: Vec<Warp> = threads.iter().map(|t| thread_warp(model, t)).collect();
        // at each boundary between slices: its output time and each thread's reach
        let mut first = 0u64;
        let mut at: Vec<f64> = vec![0.0; threads.len()];
        let mut start_ns = None;
        let mut before = vec![0u64; threads.len()];
        let mut slices = Vec::with_capacity(cuts.len());
        for (s, (requests, windows)) in cuts.iter().cloned().enumerate() {
            first += requests;
            let last = s + 1 == cuts.len();
            let (end_ns, to): (Option<u64>, Vec<f64>) = if last {
                (None, vec![1.0; threads.len()])
            } else {
                let t = workload.apply(first as f64 / total as f64 * cycles);
                let reach = warps
                    .iter()
                    .zip(&at)
                    .map(|(w, &a)| (w.invert(t) / cycles).clamp(a, 1.0));
                (Some((t / opts.intensity) as u64), reach.collect())
            };
            let counts = if cuts.len() == 1 {
                whole.clone()
            } else {
                let weights: Vec<f64> = (0..threads.len())
                    .map(|t| whole[t] as f64 * (to[t] - at[t]))
                    .collect();
                split(requests, &weights)
            };
            slices.push(Slice {
                reach: at.iter().copied().zip(to.iter().copied()).collect(),
                counts: counts.clone(),
                before: before.clone(),
                bounds: if arrivals.is_some() {
                    (None, None)
                } else {
                    (start_ns, end_ns)
                },
                windows,
            });
            for (b, c) in before.iter_mut().zip(counts) {
                *b += c;
            }
            at = to;
            start_ns = end_ns;
        }
        Ok(Self {
            opts: opts.clone(),
            total,
            cycles,
            arrivals,
            span,
            slices,
        })
    }

    /// How many slices.
    pub fn len(&self) -> usize {
        self.slices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// The requests planned (a duration may cut the last slices short).
    pub fn requests(&self) -> u64 {
        self.total
    }

    /// Slice `s`'s requests in time order, on the workload's own clock (the whole trace, not
    /// the slice, starts at 0 once [`Trace::make_relative`] is applied to its first slice and
    /// the same shift to the others). Empty when the slice lies past the duration asked for.
    pub fn slice(&self, model: &Model, s: usize, progress: &Progress) -> Result<Trace> {
        let slice = &self.slices[s];
        let opts = &self.opts;
        let mut out = Trace {
            volumes: model.volumes.iter().map(|v| v.name.clone()).collect(),
            ..Trace::default()
        };
        let times = match (&model.rate.arrivals, &self.arrivals) {
            (Some(a), Some(sched)) => {
                let mut times = arrivals::times(a, sched, opts.seed, slice.windows.clone());
                if let Some(limit) = self.span {
                    times.truncate(times.partition_point(|&t| t <= limit));
                }
                Some(times)
            }
            _ => None,
        };
        let past_limit = |t: u64| opts.duration_ns.is_some_and(|limit| t > limit);
        if times.as_ref().is_some_and(Vec::is_empty) || slice.bounds.0.is_some_and(past_limit) {
            return Ok(out);
        }
        let counts = match &times {
            Some(t) if t.len() as u64 != slice.counts.iter().sum::<u64>() => {
                let weights: Vec<f64> = slice.counts.iter().map(|&c| c as f64).collect();
                split(t.len() as u64, &weights)
            }
            _ => slice.counts.clone(),
        };
        let jobs = segments(&counts);
        let salt = if s == 0 {
            0
        } else {
            splitmix(0x51ce ^ (s as u64) << 20)
        };
        // Without an arrival process the threads' times are the output's; with one they only
        // order the threads' requests, and the arrival times are given out in that order once
        // merged. One thread's order is its walk's: its column takes the arrival times as they
        // are, and its walk draws no gaps (`timed` false).
        let from_arrivals = times.is_some();
        let (mut columns, merged_times, timed) = match times {
            Some(t) if model.threads.len() == 1 => {
                debug_assert_eq!(counts, [t.len() as u64]);
                (vec![Columns::with_times(t)], None, false)
            }
            other => (
                counts.iter().map(|&c| Columns::zeroed(c)).collect::<Vec<_>>(),
                other,
                true,
            ),
        };
        // each walk writes its requests straight into its thread's columns (times in model
        // time, where it writes them)
        let mut tasks = Vec::with_capacity(jobs.len());
        let mut segments = jobs.iter().peekable();
        for (t, cols) in columns.iter_mut().enumerate() {
            let mut rest = cols.slots();
            while let Some(&job) = segments.next_if(|j| j.0 == t) {
                let (slots, after) =
                    rest.split_at(usize::try_from(job.3).expect("request counts fit memory"));
                rest = after;
                tasks.push((job, slots));
            }
        }
        let lasts = on_all_cores(tasks, |((t, k, first, n), slots)| {
            let seed = splitmix(opts.seed ^ splitmix(t as u64) ^ splitmix(k.wrapping_add(1) << 32)) ^ salt;
            let at = (slice.before[t] + first, n);
            walk::walk(
                model,
                &model.threads[t],
                seed,
                at,
                (opts.reuse, timed),
                progress,
                slots,
            )
        })
        .into_iter()
        .collect::<Result<Vec<f64>>>()?;
        if timed {
            self.place_in_time(model, slice, &mut columns, &jobs, &lasts);
        }
        if let (false, Some(limit)) = (from_arrivals, opts.duration_ns) {
            // times only grow within a thread, so each is cut where it passes the limit
            for cols in &mut columns {
                cols.truncate(cols.ts.partition_point(|&t| t <= limit));
            }
        }
        let labels: Vec<Label> = model
            .threads
            .iter()
            .enumerate()
            .map(|(t, thread)| {
                Label::new(
                    thread,
                    splitmix(opts.seed ^ 0x57ea_a15e ^ splitmix(t as u64)),
                    slice.before[t],
                )
            })
            .collect();
        merge_threads(&mut out, columns, &labels);
        // arrival times onto the output clock: given out in the merged order, or already in place
        let clock = |t: u64| (t as f64 / opts.intensity) as u64;
        if let Some(times) = merged_times {
            for (slot, t) in out.ts_ns.iter_mut().zip(times) {
                *slot = clock(t);
            }
        } else if from_arrivals && opts.intensity != 1.0 {
            for slot in &mut out.ts_ns {
                *slot = clock(*slot);
            }
        }
        out.sort_by_time();
        progress.advance(counts.iter().sum());
        Ok(out)
    }

    /// The threads' requests of `slice` on the output clock: each thread's segments joined end
    /// to end in model time, its times scaled so it spans exactly its reach of the slice (gap
    /// shapes are kept; only their scale is pinned: rounding a rare thread's count must not
    /// stretch it), then warped onto its own activity where the model keeps one, else the
    /// workload's profile, in parallel pieces; kept inside the slice's bounds (a warp and its
    /// inverse agree only to rounding). The columns' times come in as each walk's model times
    /// (f64 bits), the segments' last times as `lasts`.
    fn place_in_time(
        &self,
        model: &Model,
        slice: &Slice,
        columns: &mut [Columns],
        jobs: &[(usize, u64, u64, u64)],
        lasts: &[f64],
    ) {
        let (cycles, intensity) = (self.cycles, self.opts.intensity);
        let (low, high) = (slice.bounds.0.unwrap_or(0), slice.bounds.1.unwrap_or(u64::MAX));
        let warps: Vec<Warp> = model.threads.iter().map(|t| thread_warp(model, t)).collect();
        let mut fills = Vec::new();
        let mut walked = jobs.iter().zip(lasts).peekable();
        for (t, cols) in columns.iter_mut().enumerate() {
            let mut segments = Vec::new();
            while let Some(((_, _, _, n), &last)) = walked.next_if(|((jt, _, _, _), _)| *jt == t) {
                segments.push((usize::try_from(*n).expect("request counts fit memory"), last));
            }
            let last: f64 = segments.iter().map(|&(_, last)| last).sum();
            // the thread's last request lands exactly at the end (not a rounding past it)
            let scale = if last > 0.0 { 1.0 / last } else { 1.0 };
            let mut rest: &mut [u64] = &mut cols.ts;
            let mut base = 0.0;
            for (n, last) in segments {
                let (seg, after) = std::mem::take(&mut rest).split_at_mut(n);
                rest = after;
                for ts in seg.chunks_mut(FILL_CHUNK) {
                    fills.push((ts, base, scale, t));
                }
                base += last;
            }
        }
        on_all_cores(fills, |(ts, base, scale, t)| {
            let (from, to) = slice.reach[t];
            for slot in ts {
                let u = f64::from_bits(*slot);
                let share = from + (to - from) * ((u + base) * scale).min(1.0);
                let t = warps[t].apply(share * cycles) / intensity;
                *slot = (t as u64).clamp(low, high);
            }
        });
    }
}

/// The warp of a thread's model time: onto its own activity where the model keeps one, else
/// the workload's profile.
fn thread_warp(model: &Model, thread: &super::Thread) -> Warp {
    Warp::new(model, thread.activity.as_deref().unwrap_or(&model.rate.shares))
}

/// `n` split by the weights' shares (evenly when they are all 0).
fn split(n: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    if sum > 0.0 {
        apportion(n, &weights.iter().map(|w| w / sum).collect::<Vec<_>>())
    } else {
        apportion(n, &vec![1.0 / weights.len().max(1) as f64; weights.len()])
    }
}

/// The walks to make, as (thread, segment, requests before it, requests): long threads are cut
/// into independent segments generated on all cores and joined in model time; each segment
/// starts its walk afresh (reuse reaches back within a segment).
fn segments(counts: &[u64]) -> Vec<(usize, u64, u64, u64)> {
    let cores = cores();
    counts
        .iter()
        .enumerate()
        .flat_map(|(t, &c)| {
            let parts = if c >= SEGMENT_MIN {
                (cores as u64).min(c / (SEGMENT_MIN / 2)).max(1)
            } else {
                1
            };
            let sizes = apportion(c, &vec![1.0 / parts as f64; usize::try_from(parts).unwrap_or(1)]);
            let firsts: Vec<u64> = sizes
                .iter()
                .scan(0u64, |before, &n| {
                    let first = *before;
                    *before += n;
                    Some(first)
                })
                .collect();
            sizes
                .into_iter()
                .zip(firsts)
                .enumerate()
                .map(move |(k, (n, first))| (t, k as u64, first, n))
        })
        .collect()
}

/// Largest-remainder split of `total` by `weights`.
fn apportion(total: u64, weights: &[f64]) -> Vec<u64> {
    let raw: Vec<f64> = weights.iter().map(|w| w * total as f64).collect();
    let mut out: Vec<u64> = raw.iter().map(|r| r.floor() as u64).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| (raw[b] - raw[b].floor()).total_cmp(&(raw[a] - raw[a].floor())));
    let short = total - out.iter().sum::<u64>();
    for &i in order.iter().take(short as usize) {
        out[i] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_keeps_the_total() {
        assert_eq!(apportion(10, &[0.5, 0.25, 0.25]), [5, 3, 2]);
        assert_eq!(apportion(7, &[1.0]), [7]);
        assert_eq!(apportion(3, &[0.34, 0.33, 0.33]).iter().sum::<u64>(), 3);
    }
}
