//! Generation: from a [`Model`] to a synthetic trace.
//!
//! Each thread's walk is [`walk`] (on the model made ready to sample from, [`runtime`]); the
//! time warp is [`warp`]; the output columns and their merge are [`columns`].
//!
//! ## Algorithm
//! Each thread walks its state diagram: from the current leaf, the top chain's edge is drawn;
//! if it stays in the same state and that state has children, the child chain's edge is drawn
//! instead, and so on down. A move to another state enters its children by their entry
//! probabilities. The deciding edge's stats (or the thread's) give the op, the size and the
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
use columns::{merge_threads, Columns};
use warp::Warp;

use super::Model;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::random::splitmix;
use crate::trace::Trace;

/// Threads with at least this many requests are generated in parallel segments.
pub const SEGMENT_MIN: u64 = 1 << 20;
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
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            requests: None,
            duration_ns: None,
            intensity: 1.0,
            seed: 1,
            reuse: true,
        }
    }
}

fn check(opts: &GenerateOptions) -> Result<()> {
    crate::trace::check_intensity(opts.intensity)?;
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

/// How many requests to generate and, with an arrival process, when they arrive (model ns).
struct Plan {
    total: u64,
    times: Option<Vec<u64>>,
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
            times: None,
        });
    };
    // model time to cover when asked by duration (times are divided by the intensity after)
    let span = match (opts.requests, opts.duration_ns) {
        (None, Some(d)) => Some((d as f64 * opts.intensity) as u64),
        _ => None,
    };
    let requests = match (opts.requests, opts.duration_ns) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(model.requests),
    };
    let counted: u64 = a.counts.iter().map(|&c| u64::from(c)).sum();
    let rate = model.requests as f64 / counted.max(1) as f64;
    let sched = arrivals::schedule(a, requests, span, rate, opts.seed);
    crate::limits::check_requests(sched.total(), asked_by)?;
    let mut times = arrivals::times(a, &sched, opts.seed);
    if let Some(limit) = span {
        times.truncate(times.partition_point(|&t| t <= limit));
    }
    Ok(Plan {
        total: times.len() as u64,
        times: Some(times),
    })
}

/// Generates a synthetic trace from `model`.
pub fn generate(model: &Model, opts: &GenerateOptions) -> Result<Trace> {
    generate_watched(model, opts, &Progress::default())
}

/// [`generate`], counting in `progress` the requests walked (the first half of the work) and
/// placed in time (the second, counted when done), and stopping with `Interrupted` within the
/// walks when told to.
pub fn generate_watched(model: &Model, opts: &GenerateOptions, progress: &Progress) -> Result<Trace> {
    check(opts)?;
    let plan = plan(model, opts)?;
    let total = plan.total;
    progress.add_total(2 * total);
    let counts = apportion(total, &model.threads.iter().map(|t| t.weight).collect::<Vec<_>>());
    let jobs = segments(&counts);
    let walks = on_all_cores(jobs.clone(), |(t, k, first, n)| {
        let seed = splitmix(opts.seed ^ splitmix(t as u64) ^ splitmix(k.wrapping_add(1) << 32));
        walk::walk(model, &model.threads[t], seed, (first, n), opts.reuse, progress)
    })
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    // Without an arrival process the threads' times are the output's; with one they only
    // order the threads' requests, and the arrival times are given out in that order.
    let mut columns = place_in_time(model, &counts, &jobs, &walks, total, opts.intensity);
    drop(walks);
    if let (None, Some(limit)) = (&plan.times, opts.duration_ns) {
        // times only grow within a thread, so each is cut where it passes the limit
        for cols in &mut columns {
            cols.truncate(cols.ts.partition_point(|&t| t <= limit));
        }
    }
    let mut out = Trace {
        volumes: model.volumes.iter().map(|v| v.name.clone()).collect(),
        ..Trace::default()
    };
    let streams: Vec<u32> = model.threads.iter().map(|t| t.stream).collect();
    merge_threads(&mut out, columns, &streams);
    if let Some(times) = plan.times {
        for (slot, t) in out.ts_ns.iter_mut().zip(times) {
            *slot = (t as f64 / opts.intensity) as u64;
        }
    }
    out.sort_by_time();
    out.make_relative();
    progress.complete();
    Ok(out)
}

/// The threads' requests on the output clock: each thread's segments joined end to end in
/// model time, its times scaled so it spans exactly the generated stretch (gap shapes are kept;
/// only their scale is pinned: rounding a rare thread's count must not stretch it), then warped
/// onto its own activity where the model keeps one, else the workload's profile, in parallel
/// pieces.
fn place_in_time(
    model: &Model,
    counts: &[u64],
    jobs: &[(usize, u64, u64, u64)],
    walks: &[Vec<walk::Request>],
    total: u64,
    intensity: f64,
) -> Vec<Columns> {
    let warps: Vec<Warp> = model
        .threads
        .iter()
        .map(|t| Warp::new(model, t.activity.as_deref().unwrap_or(&model.rate.shares)))
        .collect();
    // cycles of the profile the workload spans (exactly 1 when as many requests as the model's)
    let cycles = total as f64 / model.requests.max(1) as f64;
    let mut columns: Vec<Columns> = counts.iter().map(|&c| Columns::zeroed(c)).collect();
    let mut fills = Vec::new();
    let mut walked = jobs.iter().zip(walks).peekable();
    for (t, cols) in columns.iter_mut().enumerate() {
        let mut segments = Vec::new();
        while let Some((_, seg)) = walked.next_if(|((jt, _, _, _), _)| *jt == t) {
            segments.push(seg.as_slice());
        }
        let last: f64 = segments.iter().filter_map(|s| s.last()).map(|r| r.u).sum();
        // the thread's last request lands exactly at the end (not a rounding past it)
        let scale = if last > 0.0 { 1.0 / last } else { 1.0 };
        let mut rest = cols.slots();
        let mut base = 0.0;
        for seg in segments {
            for reqs in seg.chunks(FILL_CHUNK) {
                let (slots, after) = rest.split_at(reqs.len());
                rest = after;
                fills.push((reqs, base, scale, &warps[t], slots));
            }
            base += seg.last().map_or(0.0, |r| r.u);
        }
    }
    on_all_cores(fills, |(reqs, base, scale, warp, slots)| {
        for (i, r) in reqs.iter().enumerate() {
            let t = warp.apply(((r.u + base) * scale).min(1.0) * cycles) / intensity;
            slots.ts[i] = t as u64;
            slots.offset[i] = r.offset;
            slots.size[i] = r.size;
            slots.op[i] = r.op;
            slots.volume[i] = r.volume;
        }
    });
    columns
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
