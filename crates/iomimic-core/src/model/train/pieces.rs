//! Training on a trace given a piece at a time, in time order (a trace larger than memory):
//! the model [`super::train`] makes of the whole trace, from three passes over it.
//!
//! 1. *Outline*: the requests, their times, each volume's span, the streams (with each one's
//!    requests and volumes) and the first [`SELECTION_SAMPLE`] requests, on which levels and
//!    states are chosen exactly as for the whole trace (which chooses on them too).
//! 2. *Clock*: the requests per coarse (rate profile) and fine (arrival process) window, which
//!    model times and the arrival classes need before any request is counted.
//! 3. *Threads*: each thread's pass fed its requests with their model times, the re-use stacks
//!    beside it, the threads on all cores; each request's gap given to the arrival classes
//!    (its window's mean gap from the window's count and last time, both counted by the
//!    clock); each thread's activity counted.
//!
//! Nothing is kept per request but a bounded sample of each thread's gaps
//! ([`super::GAPS_KEPT`], the same sample the whole trace's training fits): the threads' stacks,
//! touch counts and heads grow with the places (volume and start offset) a thread touches, the
//! chains with the states it visits.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::arrivals::{Classes, Fine};
use super::rate::{Clock, Windows};
use super::selection::SELECTION_SAMPLE;
use super::sharing::Sharing;
use super::thread::Part;
use super::thread::{ThreadPass, ThreadTrainer};
use super::{
    choose, gaps_kept, named_volumes, normalise, reuse, threads_of, Group, Plan, Shared, TrainOptions,
    MAX_THREADS,
};
use crate::analyze::chunked::in_order;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::progress::Progress;
use crate::trace::{Op, Trace, TraceView};

/// Places each thread's re-use stacks make room for at first: they grow past it as needed (room
/// for a thread's requests, as training on the whole trace makes, would hold memory per request).
const PLACES_RESERVED: usize = 1 << 16;

/// Training fed a trace a piece at a time: [`TrainStream::feed`] each piece of a pass in time
/// order, then [`TrainStream::end_pass`]; after the third pass that gives the model.
pub struct TrainStream {
    opts: TrainOptions,
    volumes: Vec<String>,
    files: Vec<String>,
    /// The threads trained here (`None`: all), by their place in the model.
    here: Option<Vec<usize>>,
    pass: Pass,
    /// the last time fed in this pass, and the rows fed
    last: Option<u64>,
    rows: u64,
}

enum Pass {
    Outline(Box<Outline>),
    Clock(Box<Clocking>),
    Threads(Box<Threads>),
    /// The threads trained here, awaiting the others' ([`TrainStream::assemble`]).
    Trained(Box<(Plan, Vec<Option<Part>>)>),
    Done,
}

impl TrainStream {
    /// Passes over the trace it needs.
    pub const PASSES: usize = 3;

    /// Training with `opts` on a trace whose names are `volumes` and `files` (all of them: the
    /// pieces' ids index these).
    pub fn new(volumes: Vec<String>, files: Vec<String>, opts: TrainOptions) -> Self {
        Self::with_threads(volumes, files, opts, None)
    }

    /// [`TrainStream::new`] training only the threads `here` (their places in the model; `None`:
    /// all), the others' parts to come from elsewhere: where each of a cluster's tasks trains
    /// some threads over the whole trace, and the driver, training none, assembles the model.
    pub fn with_threads(
        volumes: Vec<String>,
        files: Vec<String>,
        opts: TrainOptions,
        here: Option<Vec<usize>>,
    ) -> Self {
        let n = volumes.len();
        // streams that share data train as one, unless a thread per stream is asked
        let sharing = opts.by_stream.is_none().then(Sharing::new);
        Self {
            opts,
            here,
            pass: Pass::Outline(Box::new(Outline {
                spans: vec![0; n],
                touched: vec![false; n],
                streams: Some(BTreeMap::new()),
                sharing,
                start: None,
                head: None,
            })),
            volumes,
            files,
            last: None,
            rows: 0,
        }
    }

    /// The pass the next piece belongs to (1 to [`Self::PASSES`]; past it once done).
    pub fn pass(&self) -> usize {
        match self.pass {
            Pass::Outline(_) => 1,
            Pass::Clock(_) => 2,
            Pass::Threads(_) => 3,
            Pass::Trained(_) | Pass::Done => 4,
        }
    }

    /// After the first pass: the threads, as (name, requests), in the model's order.
    pub fn threads(&self) -> Option<Vec<(String, u64)>> {
        let plan = match &self.pass {
            Pass::Clock(c) => &c.plan,
            Pass::Threads(th) => &th.plan,
            _ => return None,
        };
        Some(
            plan.threads
                .iter()
                .map(|(name, _, n, _)| (name.clone(), *n))
                .collect(),
        )
    }

    /// Between the second pass and the third (nothing of it fed yet): what the third needs, as
    /// JSON text, for [`TrainStream::resume`] elsewhere (a cluster's tasks then read the trace
    /// once, not three times).
    pub fn clocked(&self) -> Result<String> {
        match &self.pass {
            Pass::Threads(th) if self.rows == 0 => {
                let clocked = ClockedRef {
                    plan: &th.plan,
                    windows: &th.windows,
                    fine: th.fine.as_ref(),
                };
                serde_json::to_string(&clocked)
                    .map_err(|e| Error::Usage(format!("the clock could not be written: {e}")))
            }
            _ => Err(Error::Usage(
                "the clock is known between the second pass and the third".into(),
            )),
        }
    }

    /// Training that starts at the third pass from what [`TrainStream::clocked`] gave, training
    /// the threads `here` (`None`: all).
    pub fn resume(
        volumes: Vec<String>,
        files: Vec<String>,
        opts: TrainOptions,
        clocked: &str,
        here: Option<Vec<usize>>,
    ) -> Result<Self> {
        let clock: Clocking = serde_json::from_str(clocked)
            .map_err(|e| Error::Usage(format!("not the clock of a training: {e}")))?;
        if clock.plan.spans.len() != volumes.len() {
            return Err(Error::Usage(format!(
                "a clock of {} volumes given a trace of {}",
                clock.plan.spans.len(),
                volumes.len()
            )));
        }
        let threads = clock.finish(&opts, here.as_deref())?;
        Ok(Self {
            opts,
            volumes,
            files,
            here,
            pass: Pass::Threads(Box::new(threads)),
            last: None,
            rows: 0,
        })
    }

    /// Once trained: the threads trained here, with their places in the model.
    pub fn parts(&self) -> Result<Vec<(usize, Part)>> {
        match &self.pass {
            Pass::Trained(done) => Ok(done
                .1
                .iter()
                .enumerate()
                .filter_map(|(k, p)| p.clone().map(|p| (k, p)))
                .collect()),
            _ => Err(Error::Usage("training has not finished its passes".into())),
        }
    }

    /// Once trained: the model, with the threads not trained here given as `parts` (each with
    /// its place in the model).
    pub fn assemble(&mut self, parts: Vec<(usize, Part)>) -> Result<Model> {
        let Pass::Trained(done) = std::mem::replace(&mut self.pass, Pass::Done) else {
            return Err(Error::Usage("training has not finished its passes".into()));
        };
        let (plan, mut have) = *done;
        for (k, part) in parts {
            match have.get_mut(k) {
                Some(slot @ None) => *slot = Some(part),
                Some(Some(_)) => return Err(Error::Usage(format!("thread {k} was given twice"))),
                None => {
                    return Err(Error::Usage(format!(
                        "thread {k} of a model of {} threads",
                        have.len()
                    )))
                }
            }
        }
        if let Some(k) = have.iter().position(Option::is_none) {
            return Err(Error::Usage(format!(
                "thread {k} of {} was not given",
                have.len()
            )));
        }
        let model = plan.assemble(have.into_iter().flatten().collect())?;
        model.validate()?;
        Ok(model)
    }

    /// The next piece of the pass (its times at or after the last piece's).
    pub fn feed(&mut self, t: &TraceView<'_>) -> Result<()> {
        if t.is_empty() {
            return Ok(());
        }
        in_order(t, self.last)?;
        if let Some(v) = t.volume.iter().find(|&&v| v as usize >= self.volumes.len()) {
            return Err(Error::Usage(format!(
                "a piece names volume {v} of a trace of {} volumes",
                self.volumes.len()
            )));
        }
        match &mut self.pass {
            Pass::Outline(o) => o.add(t, &self.volumes, &self.files, self.opts.by_stream),
            Pass::Clock(c) => {
                c.plan.holds(t, self.rows)?;
                c.add(t);
            }
            Pass::Threads(th) => {
                th.plan.holds(t, self.rows)?;
                th.add(t)?;
            }
            Pass::Trained(_) | Pass::Done => return Err(Error::Usage("training has finished".into())),
        }
        self.last = t.ts_ns.last().copied();
        self.rows += t.len() as u64;
        Ok(())
    }

    /// Ends the pass: `None` while another pass over the trace is needed, then the model (with
    /// threads chosen by [`TrainStream::with_threads`], `None` again: see `parts`, `assemble`).
    /// Level selection (on the first requests, at the end of the first pass) counts the
    /// models it tries in `progress`.
    pub fn end_pass(&mut self, progress: &Progress) -> Result<Option<Model>> {
        let (rows, last) = (self.rows, self.last);
        (self.rows, self.last) = (0, None);
        match std::mem::replace(&mut self.pass, Pass::Done) {
            Pass::Outline(o) => {
                let clock = o.finish(rows, last.unwrap_or(0), self, progress)?;
                self.pass = Pass::Clock(Box::new(clock));
                Ok(None)
            }
            Pass::Clock(c) => {
                c.plan.check(rows)?;
                self.pass = Pass::Threads(Box::new(c.finish(&self.opts, self.here.as_deref())?));
                Ok(None)
            }
            Pass::Threads(th) => {
                th.plan.check(rows)?;
                let (plan, parts) = th.finish(&self.volumes);
                if self.here.is_none() {
                    let model = plan.assemble(parts.into_iter().flatten().collect())?;
                    model.validate()?;
                    return Ok(Some(model));
                }
                self.pass = Pass::Trained(Box::new((plan, parts)));
                Ok(None)
            }
            Pass::Trained(_) | Pass::Done => Err(Error::Usage("training has finished".into())),
        }
    }
}

/// The first pass: what the trace's plan needs but the counts by window.
struct Outline {
    /// each volume's farthest end
    spans: Vec<u64>,
    touched: Vec<bool>,
    /// per stream: requests and volumes touched (`None` past [`MAX_THREADS`] streams, where
    /// one thread trains on all)
    streams: Option<BTreeMap<u32, (u64, BTreeSet<u32>)>>,
    /// which streams come back to each other's requests (while streams are counted)
    sharing: Option<Sharing>,
    start: Option<u64>,
    /// the first requests, for level selection
    head: Option<Trace>,
}

impl Outline {
    fn add(&mut self, t: &TraceView<'_>, volumes: &[String], files: &[String], by_stream: Option<bool>) {
        self.start.get_or_insert(t.ts_ns[0]);
        let head = self.head.get_or_insert_with(|| Trace {
            latency_ns: t.latency_ns.map(|_| Vec::new()),
            file: t.file.map(|_| Vec::new()),
            status: t.status.map(|_| Vec::new()),
            volumes: volumes.to_vec(),
            files: files.to_vec(),
            ..Trace::default()
        });
        let room = SELECTION_SAMPLE.saturating_sub(head.len()).min(t.len());
        if room > 0 {
            head.extend_from(&t.rows(0..room));
        }
        for i in 0..t.len() {
            let v = t.volume[i] as usize;
            self.spans[v] = self.spans[v].max(t.offset[i] + u64::from(t.size[i]));
            self.touched[v] = true;
        }
        if let Some(streams) = &mut self.streams {
            for (&s, &v) in t.stream.iter().zip(t.volume) {
                let (count, volumes) = streams.entry(s).or_default();
                *count += 1;
                volumes.insert(v);
            }
            if streams.len() > MAX_THREADS && by_stream != Some(true) {
                self.streams = None;
                self.sharing = None;
            }
        }
        if let Some(sharing) = &mut self.sharing {
            for i in 0..t.len() {
                if t.op[i] != Op::Flush as u8 {
                    sharing.touch(t.stream[i], t.volume[i], t.offset[i]);
                }
            }
        }
    }

    /// The plan but for what the counts by window give; levels and states chosen.
    fn finish(self, n: u64, last: u64, on: &TrainStream, progress: &Progress) -> Result<Clocking> {
        let opts = &on.opts;
        let mut head = self.head.unwrap_or_default();
        // a column some piece lacked is left out, as a trace read whole would have none
        let len = head.len();
        head.latency_ns = head.latency_ns.filter(|c| c.len() == len);
        head.file = head.file.filter(|c| c.len() == len);
        head.status = head.status.filter(|c| c.len() == len);
        let (levels, states, selection) = choose(n, &head.view(), opts, progress)?;
        let start = self.start.unwrap_or(0);
        let span = last - start;
        // past MAX_THREADS streams the map is gone, and with no streams `threads_of` gives the
        // one thread for all that it gives past MAX_THREADS
        let streams = self.streams.unwrap_or_default();
        let keys: Vec<u32> = streams.keys().copied().collect();
        let shared = self.sharing.map(|s| s.groups()).unwrap_or_default();
        let named = threads_of(&keys, opts.by_stream, &shared);
        let members: Vec<Vec<(u32, u64)>> = named
            .iter()
            .map(|(_, _, m)| {
                m.iter()
                    .map(|s| (*s, streams.get(s).map_or(0, |c| c.0)))
                    .collect()
            })
            .collect();
        let threads: Vec<(String, u32, u64, Vec<u32>)> = if named.len() > 1 {
            named
                .into_iter()
                .map(|(name, s, members)| {
                    let count = members.iter().map(|m| streams[m].0).sum();
                    let volumes: BTreeSet<u32> = members
                        .iter()
                        .flat_map(|m| streams[m].1.iter().copied())
                        .collect();
                    (name, s, count, volumes.into_iter().collect())
                })
                .collect()
        } else {
            let all: Vec<u32> = (0..self.touched.len() as u32)
                .filter(|&v| self.touched[v as usize])
                .collect();
            named
                .into_iter()
                .map(|(name, s, _)| (name, s, n, all.clone()))
                .collect()
        };
        let windows = Windows::empty(start, span);
        let fine = Fine::new(n, start, span, windows.window_ns);
        Ok(Clocking {
            plan: Outlined {
                n,
                start,
                span,
                levels,
                states,
                selection,
                spans: self.spans.iter().map(|&s| s.max(1)).collect(),
                threads,
                members,
            },
            windows,
            fine,
        })
    }
}

/// What the first pass found, for the passes after it.
#[derive(Serialize, Deserialize)]
struct Outlined {
    n: u64,
    start: u64,
    span: u64,
    levels: u32,
    states: u32,
    selection: serde_json::Map<String, serde_json::Value>,
    spans: Vec<u64>,
    /// (name, stream, requests, volumes) of each thread, in the model's order
    threads: Vec<(String, u32, u64, Vec<u32>)>,
    /// each thread's streams and their requests (a thread of streams that share data has
    /// several)
    #[serde(default)]
    members: Vec<Vec<(u32, u64)>>,
}

impl Outlined {
    /// Fails unless the piece `t`, after `before` requests of its pass, lies within the requests
    /// and times the first pass found.
    fn holds(&self, t: &TraceView<'_>, before: u64) -> Result<()> {
        let (first, last) = (t.ts_ns[0], t.ts_ns[t.len() - 1]);
        if before + t.len() as u64 > self.n || first < self.start || last - self.start > self.span {
            return Err(changed(&format!(
                "{} requests from {} ns to {} ns, then more, or later",
                self.n,
                self.start,
                self.start + self.span
            )));
        }
        Ok(())
    }

    /// Fails unless a pass read as many requests as the first.
    fn check(&self, rows: u64) -> Result<()> {
        if rows == self.n {
            Ok(())
        } else {
            Err(changed(&format!("{} requests, then {rows}", self.n)))
        }
    }
}

/// [`Clocking`] borrowed, to be written.
#[derive(Serialize)]
struct ClockedRef<'a> {
    plan: &'a Outlined,
    windows: &'a Windows,
    fine: Option<&'a Fine>,
}

/// The second pass: requests by coarse and fine window.
#[derive(Serialize, Deserialize)]
struct Clocking {
    plan: Outlined,
    windows: Windows,
    fine: Option<Fine>,
}

impl Clocking {
    fn add(&mut self, t: &TraceView<'_>) {
        for &ts in t.ts_ns {
            self.windows.count(ts);
            if let Some(fine) = &mut self.fine {
                fine.count(ts);
            }
        }
    }

    fn finish(self, opts: &TrainOptions, here: Option<&[usize]>) -> Result<Threads> {
        let plan = self.plan;
        if let Some(k) = here.into_iter().flatten().find(|&&k| k >= plan.threads.len()) {
            return Err(Error::Usage(format!(
                "thread {k} of a trace of {} threads",
                plan.threads.len()
            )));
        }
        let bounds = reuse::reuse_bounds();
        let kept = gaps_kept(plan.threads.len());
        let trainers = plan
            .threads
            .iter()
            .enumerate()
            .map(|(k, (_, _, requests, volumes))| {
                if here.is_some_and(|h| !h.contains(&k)) {
                    return None;
                }
                let requests = *requests as usize;
                let pass = ThreadPass::new(
                    volumes,
                    &plan.spans,
                    plan.levels,
                    plan.states,
                    opts.reuse,
                    &bounds,
                    requests,
                    kept,
                );
                Some(ThreadTrainer::new(
                    pass,
                    opts.reuse,
                    requests.min(PLACES_RESERVED),
                ))
            })
            .collect();
        let several = plan.threads.len() > 1;
        Ok(Threads {
            index: several.then(|| {
                plan.threads
                    .iter()
                    .enumerate()
                    .flat_map(|(k, (_, s, _, _))| {
                        let members = plan.members.get(k).cloned().unwrap_or_else(|| vec![(*s, 0)]);
                        members.into_iter().map(move |(m, _)| (m, k))
                    })
                    .collect()
            }),
            activity: several.then(|| vec![vec![0u64; self.windows.counts.len()]; plan.threads.len()]),
            clock: self.windows.clock(),
            windows: self.windows,
            fine: self.fine,
            classes: Classes::default(),
            trainers,
            touches: plan
                .threads
                .iter()
                .map(|(_, _, _, volumes)| {
                    let mut on = vec![false; plan.spans.len()];
                    for &v in volumes {
                        on[v as usize] = true;
                    }
                    on
                })
                .collect(),
            shared: Shared {
                levels: plan.levels,
                states: plan.states,
                reuse: opts.reuse,
                spans: plan.spans.clone(),
                gaps_kept: kept,
            },
            name: opts.name.clone(),
            source: opts.source.clone(),
            plan,
        })
    }
}

/// An error for a trace that is not the one the first pass read.
fn changed(what: &str) -> Error {
    Error::Usage(format!("the trace changed between passes: {what}"))
}

/// The third pass: the threads trained, the arrival classes and activities counted.
struct Threads {
    plan: Outlined,
    shared: Shared,
    name: String,
    source: Option<String>,
    windows: Windows,
    clock: Clock,
    fine: Option<Fine>,
    classes: Classes,
    /// the threads trained here (`None` for those trained elsewhere)
    trainers: Vec<Option<ThreadTrainer>>,
    /// each thread's volumes, by volume id
    touches: Vec<Vec<bool>>,
    /// each stream's thread (with several threads)
    index: Option<FxHashMap<u32, usize>>,
    /// each thread's requests by coarse window (with several threads)
    activity: Option<Vec<Vec<u64>>>,
}

impl Threads {
    fn add(&mut self, t: &TraceView<'_>) -> Result<()> {
        let mut rows: Vec<Vec<usize>> = vec![Vec::new(); self.trainers.len()];
        match (&self.index, &mut self.activity) {
            (Some(index), Some(activity)) => {
                for (i, s) in t.stream.iter().enumerate() {
                    let k = *index
                        .get(s)
                        .ok_or_else(|| changed(&format!("stream {s} is new")))?;
                    rows[k].push(i);
                    activity[k][self.windows.index(t.ts_ns[i])] += 1;
                }
            }
            _ => rows[0] = (0..t.len()).collect(),
        }
        for (k, rows) in rows.iter().enumerate() {
            if let Some(&i) = rows.iter().find(|&&i| !self.touches[k][t.volume[i] as usize]) {
                return Err(changed(&format!(
                    "thread {k} touches volume {} anew",
                    t.volume[i]
                )));
            }
        }
        if let Some(fine) = &self.fine {
            for &ts in t.ts_ns {
                self.classes.arrive(ts, fine);
            }
        }
        let tasks: Vec<(&mut ThreadTrainer, Vec<usize>)> = self
            .trainers
            .iter_mut()
            .zip(rows)
            .filter_map(|(trainer, r)| trainer.as_mut().filter(|_| !r.is_empty()).map(|t| (t, r)))
            .collect();
        if !tasks.is_empty() {
            // (a driver whose threads train elsewhere needs no model times)
            let u: Vec<f64> = t.ts_ns.iter().map(|&ts| self.clock.time(ts)).collect();
            crate::parallel::on_all_cores(tasks, |(trainer, rows)| trainer.feed(t, &rows, &u));
        }
        Ok(())
    }

    /// The plan and the threads trained here.
    fn finish(mut self, volumes: &[String]) -> (Plan, Vec<Option<Part>>) {
        let arrivals = self
            .fine
            .take()
            .map(|fine| fine.finish(std::mem::take(&mut self.classes)));
        let parts = crate::parallel::on_all_cores(self.trainers, |t| t.map(ThreadTrainer::finish));
        let activity = self.activity.take();
        let plan = Plan {
            u: Vec::new(),
            groups: self
                .plan
                .threads
                .iter()
                .enumerate()
                .map(|(k, (name, stream, requests, _))| Group {
                    name: name.clone(),
                    stream: *stream,
                    rows: Vec::new(),
                    requests: *requests,
                    activity: activity.as_ref().map(|a| normalise(&a[k])),
                    members: match self.plan.members.get(k) {
                        Some(m) if m.len() > 1 => m.clone(),
                        _ => Vec::new(),
                    },
                })
                .collect(),
            requests: self.plan.n,
            duration_ns: self.plan.span.max(1),
            volumes: named_volumes(volumes, &self.shared.spans),
            rate: self.windows.profile(arrivals),
            shared: self.shared,
            name: self.name,
            source: self.source,
            selection: Some(serde_json::Value::Object(self.plan.selection)),
        };
        (plan, parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` requests of `streams` streams over three volumes, in bursts, with sequential runs, a
    /// hot set re-used often and a wide cold range, mixed sizes and ops, and latencies.
    fn mixed(n: u64, streams: u64, seed: u64) -> Trace {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut t = Trace {
            volumes: vec!["a".into(), "b".into(), "c".into()],
            latency_ns: Some(Vec::new()),
            ..Trace::default()
        };
        let (mut ts, mut run) = (0u64, 0u64);
        for _ in 0..n {
            ts += if next() % 50 == 0 {
                2_000_000
            } else {
                next() % 20_000
            };
            let offset = match next() % 4 {
                0 => {
                    run += 8192;
                    run
                }
                1 => next() % 64 * 4096,
                _ => next() % 200_000 * 4096,
            };
            t.ts_ns.push(ts);
            t.offset.push(offset);
            t.size.push(4096 << (next() % 3));
            t.op.push(u8::from(next() % 4 == 0));
            t.volume.push((next() % 3) as u32);
            t.stream.push((next() % streams) as u32);
            t.latency_ns.as_mut().unwrap().push(50_000 + next() % 1_000_000);
        }
        t
    }

    /// `t` trained a piece at a time, each pass cut before the rows `cuts`.
    fn in_pieces(t: &Trace, opts: &TrainOptions, cuts: &[usize]) -> Result<Model> {
        let mut stream = TrainStream::new(t.volumes.clone(), t.files.clone(), opts.clone());
        loop {
            let mut from = 0;
            for &to in cuts.iter().chain([t.len()].iter()) {
                stream.feed(&t.view().rows(from..to))?;
                from = to;
            }
            if let Some(model) = stream.end_pass(&Progress::default())? {
                assert_eq!(stream.pass(), TrainStream::PASSES + 1);
                return Ok(model);
            }
        }
    }

    fn same(t: &Trace, opts: &TrainOptions, cuts: &[usize]) {
        let whole = super::super::train(&t.view(), opts).unwrap();
        let pieces = in_pieces(t, opts, cuts).unwrap();
        assert_eq!(pieces.to_json(), whole.to_json());
    }

    #[test]
    fn several_streams_in_pieces_train_the_whole_traces_model() {
        // levels and states chosen; single rows and a cut inside a burst
        let t = mixed(20_000, 4, 3);
        let cuts = [1, 2, 777, 778, 9_000, 19_999];
        // its streams take turns at one workload: they share data, and train as one thread
        same(&t, &TrainOptions::default(), &cuts);
        let shared = in_pieces(&t, &TrainOptions::default(), &cuts).unwrap();
        assert_eq!(shared.threads.len(), 1);
        assert_eq!(
            (shared.threads[0].name.as_str(), shared.threads[0].stream),
            ("streams 0+1+2+3", 0)
        );
        // a thread per stream when asked
        let apart = TrainOptions {
            by_stream: Some(true),
            ..TrainOptions::default()
        };
        same(&t, &apart, &cuts);
    }

    #[test]
    fn stays_cut_by_pieces_train_the_whole_traces_stays() {
        // one stream: scans of 400 requests amid single random requests, three in four visits
        // of one request; cut inside scans
        let mut rng = crate::random::Prng::new(5);
        let mut rows: Vec<(u64, u32)> = Vec::new();
        for visit in 0..400u64 {
            let scan = if visit % 4 == 3 { 400 } else { 1 };
            for j in 0..scan {
                rows.push((visit * (1 << 22) % (1 << 30) + j * 65_536, 65_536));
            }
            rows.push(((3 << 30) + rng.below(1 << 18) * 4096, 4096));
        }
        let n = rows.len();
        let t = Trace {
            volumes: vec!["a".into()],
            ts_ns: (0..n as u64).map(|i| i * 1000).collect(),
            offset: rows.iter().map(|r| r.0).collect(),
            size: rows.iter().map(|r| r.1).collect(),
            op: vec![0; n],
            volume: vec![0; n],
            stream: vec![0; n],
            ..Trace::default()
        };
        let opts = TrainOptions {
            levels: Some(1),
            states: Some(4),
            ..TrainOptions::default()
        };
        let whole = super::super::train(&t.view(), &opts).unwrap();
        assert!(
            whole.threads[0].chain.states[0].stays.is_some(),
            "the scans' stays are kept"
        );
        same(&t, &opts, &[150, 151, 20_000, 40_321]);
    }

    #[test]
    fn one_stream_with_reuse_in_many_small_pieces() {
        let t = mixed(30_000, 1, 5);
        let opts = TrainOptions {
            levels: Some(2),
            states: Some(4),
            ..TrainOptions::default()
        };
        let cuts: Vec<usize> = (997..t.len()).step_by(997).collect();
        same(&t, &opts, &cuts);
        // and without re-use, one thread forced per stream
        let opts = TrainOptions {
            reuse: false,
            by_stream: Some(true),
            ..opts
        };
        same(&t, &opts, &cuts);
    }

    #[test]
    fn the_selection_head_spans_pieces_and_many_streams_train_as_one() {
        // more requests than level selection looks at, cut inside its head, and more streams
        // than threads are made of by default
        let t = mixed(SELECTION_SAMPLE as u64 + 20_000, MAX_THREADS as u64 + 44, 9);
        let opts = TrainOptions {
            levels: Some(1),
            simulate_on: None,
            ..TrainOptions::default()
        };
        let model = in_pieces(&t, &opts, &[50_000, SELECTION_SAMPLE - 1, SELECTION_SAMPLE + 7]).unwrap();
        assert_eq!(model.threads.len(), 1);
        assert_eq!(model.threads[0].name, "all");
        same(&t, &opts, &[50_000, SELECTION_SAMPLE - 1, SELECTION_SAMPLE + 7]);
    }

    /// All passes of `stream` over `t` cut before `cuts`; the model when it trained every thread.
    fn passes(stream: &mut TrainStream, t: &Trace, cuts: &[usize]) -> Option<Model> {
        for _ in 0..TrainStream::PASSES {
            let mut from = 0;
            for &to in cuts.iter().chain([t.len()].iter()) {
                stream.feed(&t.view().rows(from..to)).unwrap();
                from = to;
            }
            if let Some(model) = stream.end_pass(&Progress::default()).unwrap() {
                return Some(model);
            }
        }
        None
    }

    #[test]
    fn threads_trained_by_tasks_and_assembled_by_a_driver_give_the_whole_model() {
        let t = mixed(20_000, 4, 13);
        let opts = TrainOptions {
            by_stream: Some(true),
            ..TrainOptions::default()
        };
        let whole = super::super::train(&t.view(), &opts).unwrap();
        // the driver trains no thread: its first pass chooses levels and states
        let none = Some(Vec::new());
        let mut driver = TrainStream::with_threads(t.volumes.clone(), Vec::new(), opts.clone(), none.clone());
        assert!(driver.threads().is_none() && driver.clocked().is_err());
        for _ in 0..2 {
            driver.feed(&t.view()).unwrap();
            assert!(driver.end_pass(&Progress::default()).unwrap().is_none());
        }
        let threads = driver.threads().unwrap();
        assert_eq!(threads.len(), 4);
        assert_eq!(threads.iter().map(|(_, n)| n).sum::<u64>(), 20_000);
        // two tasks take up from the clock, each training two threads in one pass
        let clocked = driver.clocked().unwrap();
        let mut parts = Vec::new();
        for here in [vec![0, 3], vec![2, 1]] {
            let mut task =
                TrainStream::resume(t.volumes.clone(), Vec::new(), opts.clone(), &clocked, Some(here))
                    .unwrap();
            for cut in [0..5_000, 5_000..12_345, 12_345..20_000] {
                task.feed(&t.view().rows(cut)).unwrap();
            }
            assert!(task.end_pass(&Progress::default()).unwrap().is_none());
            let done = task.parts().unwrap();
            assert_eq!(done.len(), 2);
            // as it travels back from a task
            parts.extend(
                serde_json::from_str::<Vec<(usize, Part)>>(&serde_json::to_string(&done).unwrap()).unwrap(),
            );
        }
        driver.feed(&t.view()).unwrap();
        assert!(driver.end_pass(&Progress::default()).unwrap().is_none());
        assert!(driver.parts().unwrap().is_empty());
        assert_eq!(driver.assemble(parts.clone()).unwrap().to_json(), whole.to_json());
        // a thread missing, or given twice, is refused
        let mut again = TrainStream::with_threads(t.volumes.clone(), Vec::new(), opts.clone(), none.clone());
        assert!(passes(&mut again, &t, &[]).is_none());
        let e = again.assemble(parts[..3].to_vec()).unwrap_err();
        assert!(e.to_string().contains("thread 2 of 4 was not given"), "{e}");
        let mut again = TrainStream::with_threads(t.volumes.clone(), Vec::new(), opts.clone(), none);
        assert!(passes(&mut again, &t, &[]).is_none());
        let e = again
            .assemble([parts.clone(), parts[..1].to_vec()].concat())
            .unwrap_err();
        assert!(e.to_string().contains("thread 0 was given twice"), "{e}");
        // a clock of another trace
        let e = TrainStream::resume(vec!["a".into()], Vec::new(), opts, &clocked, None)
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("a clock of 3 volumes given a trace of 1"),
            "{e}"
        );
    }

    #[test]
    fn refuses_pieces_out_of_order_a_trace_that_changed_and_too_few_requests() {
        let t = mixed(2_000, 2, 11);
        let opts = TrainOptions {
            levels: Some(1),
            states: Some(4),
            by_stream: Some(true),
            ..TrainOptions::default()
        };
        let mut stream = TrainStream::new(t.volumes.clone(), Vec::new(), opts.clone());
        stream.feed(&t.view().rows(1_000..2_000)).unwrap();
        let e = stream.feed(&t.view().rows(0..1_000)).unwrap_err();
        assert!(e.to_string().contains("back in time"), "{e}");

        let mut stream = TrainStream::new(t.volumes.clone(), Vec::new(), opts.clone());
        stream.feed(&t.view()).unwrap();
        assert!(stream.end_pass(&Progress::default()).unwrap().is_none());
        stream.feed(&t.view().rows(0..1_500)).unwrap();
        let e = stream.end_pass(&Progress::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains("changed between passes: 2000 requests, then 1500"),
            "{e}"
        );

        // a pass that finds more requests, or later ones, than the first (a log still written)
        let longer = mixed(2_500, 2, 11);
        for more in [longer.view(), longer.view().rows(1_000..2_500)] {
            let mut stream = TrainStream::new(t.volumes.clone(), Vec::new(), opts.clone());
            stream.feed(&t.view()).unwrap();
            stream.end_pass(&Progress::default()).unwrap();
            let e = stream.feed(&more).unwrap_err();
            assert!(
                e.to_string().contains("changed between passes: 2000 requests"),
                "{e}"
            );
        }
        // a volume a thread did not touch in the first pass: stream 0 keeps off volume 2 but in
        // the last pass
        let mut kept = t.clone();
        for i in 0..kept.len() {
            if kept.stream[i] == 0 && kept.volume[i] == 2 {
                kept.volume[i] = 0;
            }
        }
        let mut moved = kept.clone();
        let i = (0..moved.len()).find(|&i| moved.stream[i] == 0).unwrap();
        moved.volume[i] = 2;
        let mut stream = TrainStream::new(t.volumes.clone(), Vec::new(), opts.clone());
        for _ in 0..2 {
            stream.feed(&kept.view()).unwrap();
            stream.end_pass(&Progress::default()).unwrap();
        }
        let e = stream.feed(&moved.view()).unwrap_err();
        assert!(e.to_string().contains("thread 0 touches volume 2 anew"), "{e}");

        let mut stream = TrainStream::new(t.volumes.clone(), Vec::new(), opts.clone());
        stream.feed(&t.view().rows(0..1)).unwrap();
        let e = stream.end_pass(&Progress::default()).unwrap_err();
        assert!(e.to_string().contains("at least two requests"), "{e}");

        let mut stream = TrainStream::new(vec!["a".into()], Vec::new(), opts);
        let e = stream.feed(&t.view()).unwrap_err();
        assert!(e.to_string().contains("of a trace of 1 volumes"), "{e}");
    }
}
