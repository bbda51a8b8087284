//! Generation: from a [`Model`] to a synthetic trace.
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

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::sample::{pick, Alias, Prng, ReuseSampler, Sampler, SizeSampler};
use super::used::Used;
use super::{Chain, Model, Stats, Thread};
use crate::error::{Error, Result};
use crate::random::splitmix;
use crate::trace::Trace;

/// Draws of a reuse depth before a reuse gives up and places its request afresh.
const REUSE_DRAWS: usize = 8;
/// Stack positions below the drawn depth searched for a block in the chosen state.
const REUSE_PROBES: u64 = 16;
/// Threads with at least this many requests are generated in parallel segments.
pub const SEGMENT_MIN: u64 = 1 << 20;

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

struct Ready {
    stats: Stats,
    ops: Alias,
    sizes: SizeSampler,
    gap: Sampler,
}

impl Ready {
    fn new(s: &Stats) -> Self {
        Self {
            stats: s.clone(),
            ops: Alias::new(&s.ops),
            sizes: SizeSampler::new(&s.sizes),
            gap: Sampler::new(&s.interarrival),
        }
    }
}

/// A chain with its edges' samplers built once.
struct ChainRt {
    states: Vec<(u32, u64, u64)>,
    initial: Alias,
    edges: Vec<Row>,
    children: Vec<Option<ChainRt>>,
}

/// One state's outgoing edges, column by column so a draw scans only the probabilities.
struct Row {
    pick: Alias,
    to: Vec<usize>,
    ready: Vec<Option<Ready>>,
}

impl ChainRt {
    fn new(c: &Chain) -> Self {
        Self {
            states: c.states.iter().map(|s| (s.volume, s.start, s.end)).collect(),
            initial: Alias::new(&c.initial),
            edges: c
                .transitions
                .iter()
                .map(|row| Row {
                    pick: Alias::new(&row.iter().map(|e| e.p).collect::<Vec<_>>()),
                    to: row.iter().map(|e| e.to as usize).collect(),
                    ready: row.iter().map(|e| e.stats.as_ref().map(Ready::new)).collect(),
                })
                .collect(),
            children: c
                .states
                .iter()
                .map(|s| s.children.as_deref().map(ChainRt::new))
                .collect(),
        }
    }

    fn locate(&self, volume: u32, offset: u64) -> usize {
        self.states
            .partition_point(|&(v, start, _)| (v, start) <= (volume, offset))
            .saturating_sub(1)
    }
}

/// What a thread generates from: built once, never changed while generating.
struct ThreadRt {
    root: ChainRt,
    defaults: Ready,
    reuse: Option<ReuseSampler>,
    /// depth samplers for continuations (from 2) and near requests (from 1), and near holes
    continuation_depth: Option<Vec<f64>>,
    near: Option<(Vec<f64>, SizeSampler)>,
    alignment: u64,
    spans: Vec<u64>,
}

/// Tries at placing a new request on an unused offset before accepting a used one.
const NEW_OFFSET_TRIES: usize = 8;

/// Where a thread is: its leaf, its volumes' previous ends, its recent requests.
struct ThreadState {
    used: Used,
    rng: Prng,
    path: Vec<usize>,
    /// The most recent request ends of each volume, newest last.
    ends: Vec<VecDeque<Head>>,
    /// When reuse is on: the LRU stack of the blocks requests started in, and those requests.
    reuse: Option<ReuseState>,
    /// The requests generated, in order.
    out: Vec<Request>,
    u: f64,
    left: u64,
}

/// Where a recent request ended, and (for the reuse stack) when it was issued and the block it
/// started in.
#[derive(Clone, Copy)]
struct Head {
    end: u64,
    time: usize,
    block: u64,
}

/// The reuse extension's LRU stack; its times index the thread's requests (`out`).
struct ReuseState {
    stack: crate::analyze::lru_stack::GenStack,
}

struct ThreadGen {
    rt: ThreadRt,
    st: ThreadState,
}

/// One request in model time.
#[derive(Clone, Copy)]
struct Request {
    u: f64,
    offset: u64,
    size: u32,
    op: u8,
    volume: u32,
    /// Top-level state it was placed in (for the reuse extension; fits the struct's padding).
    top: u32,
}

impl ThreadRt {
    fn chain_at(&self, path: &[usize]) -> &ChainRt {
        let mut c = &self.root;
        for &s in path {
            c = c.children[s].as_ref().expect("the path follows children");
        }
        c
    }
}

impl ThreadState {
    /// Walks down from `level` by entry probabilities, replacing the path below it.
    fn enter(&mut self, rt: &ThreadRt, level: usize) {
        self.path.truncate(level);
        let mut chain = rt.chain_at(&self.path);
        loop {
            let s = chain.initial.draw(&mut self.rng);
            self.path.push(s);
            match chain.children[s].as_ref() {
                Some(c) => chain = c,
                None => break,
            }
        }
    }

    /// The path to the leaf holding `offset` of `volume`.
    fn relocate(&mut self, rt: &ThreadRt, volume: u32, offset: u64) {
        // most placements (sequential ones above all) stay in the current leaf
        let (leaf, parents) = self.path.split_last().expect("a path reaches a leaf");
        let (v, start, end) = rt.chain_at(parents).states[*leaf];
        if v == volume && (start..end).contains(&offset) {
            return;
        }
        self.path.clear();
        let mut c = &rt.root;
        loop {
            let s = c.locate(volume, offset);
            self.path.push(s);
            match c.children[s].as_ref() {
                Some(child) => c = child,
                None => break,
            }
        }
    }

    /// Draws the next move and returns the stats of the edge that decided it.
    fn step<'r>(&mut self, rt: &'r ThreadRt) -> &'r Ready {
        let depth = self.path.len();
        for level in 0..depth {
            let chain = rt.chain_at(&self.path[..level]);
            let s = self.path[level];
            let row = &chain.edges[s];
            if row.to.is_empty() {
                self.enter(rt, level);
                return &rt.defaults;
            }
            let e = row.pick.draw(&mut self.rng);
            let (to, ready) = (row.to[e], &row.ready[e]);
            if to != s || chain.children[s].is_none() || level + 1 == depth {
                if to != s {
                    self.path.truncate(level);
                    self.path.push(to);
                    if chain.children[to].is_some() {
                        self.enter(rt, level + 1);
                    }
                }
                return ready.as_ref().unwrap_or(&rt.defaults);
            }
        }
        &rt.defaults
    }

    /// Generates the next request into `out`.
    fn next(&mut self, rt: &ThreadRt) {
        let ready = self.step(rt);
        let mut size = ready.sizes.draw(&mut self.rng);
        let kind = self.rng.f64();
        let (volume, start, end) =
            rt.chain_at(&self.path[..self.path.len() - 1]).states[self.path[self.path.len() - 1]];
        let st = &ready.stats;
        // aligned to the volume, not to the state's start (state bounds are arbitrary)
        let first = start.div_ceil(rt.alignment) * rt.alignment;
        let room = end.saturating_sub(first).saturating_sub(u64::from(size)) / rt.alignment;
        // A request the model places at random gets its first candidate now, so the filter's
        // line for it loads from memory while the op and the gap are drawn.
        let candidate = (kind >= st.sequential + st.continuation + st.near + st.reuse).then(|| {
            let offset = first + rt.alignment * self.rng.below(room + 1);
            self.used.preload(volume, offset);
            offset
        });
        let op = ready.ops.draw(&mut self.rng) as u8;
        let gap = ready.gap.draw(&mut self.rng);
        let ends = &self.ends[volume as usize];
        let span = rt.spans[volume as usize];
        // the end `depth` requests back on this volume, if there is one
        let head = |depth: usize| (depth >= 1 && depth <= ends.len()).then(|| ends[ends.len() - depth].end);
        // the `depth`-th most recent head inside the chosen state: continuations and near
        // requests stay where the state diagram put them, so streams cannot drift off its map
        // (a depth past the heads the state has takes its oldest)
        let head_in = |depth: usize, skip_latest: bool| {
            let mut found = None;
            let mut count = 0;
            for (i, h) in ends.iter().enumerate().rev() {
                let at = ends.len() - i;
                if h.end >= start && h.end < end && !(skip_latest && at == 1) {
                    found = Some((at, h.end));
                    count += 1;
                    if count >= depth {
                        break;
                    }
                }
            }
            found
        };
        let mut placed = None;
        // the head a run-continuing request follows is used up (it no longer ends a run)
        let mut consumed = None;
        // the earlier request whose block this one starts in again, when known
        let mut retouch: Option<usize> = None;
        if kind < st.sequential {
            placed = head(1).filter(|&e| e < span).map(|e| (volume, e));
            consumed = placed.map(|_| 1);
        } else if kind < st.sequential + st.continuation {
            if let Some(p) = &rt.continuation_depth {
                let depth = pick(p.iter().copied(), &mut self.rng) + 2;
                if let Some((at, e)) = head_in(depth - 1, true) {
                    placed = Some((volume, e));
                    consumed = Some(at);
                }
            }
        } else if kind < st.sequential + st.continuation + st.near {
            if let Some((p, gaps)) = &rt.near {
                let depth = pick(p.iter().copied(), &mut self.rng) + 1;
                let hole = u64::from(gaps.draw(&mut self.rng));
                if let Some((at, e)) = head_in(depth, false).filter(|&(_, e)| e + hole < span) {
                    placed = Some((volume, e + hole));
                    consumed = Some(at);
                }
            }
        } else if kind < st.sequential + st.continuation + st.near + st.reuse {
            let top = self.path[0];
            if let (Some(r), Some(ReuseState { stack })) = (&rt.reuse, &self.reuse) {
                let history = &self.out;
                // The thread's LRU stack gives the depth (so the miss-ratio curve follows); the
                // block taken is the first at or below that depth that lies in the state the
                // diagram chose (so where requests land follows too). A depth past what the
                // stack holds yet (early in a run) is drawn again: the trained depths were, at
                // each reuse, at most the stack's size then.
                let reach = stack.depth() as u64;
                let depth = (0..REUSE_DRAWS)
                    .map(|_| r.draw(&mut self.rng))
                    .find(|&d| d <= reach);
                if let Some(d) = depth {
                    let found = (d..=reach.min(d + REUSE_PROBES))
                        .filter_map(|probe| stack.at_depth(probe))
                        .find(|&at| history[at].top as usize == top);
                    if let Some(at) = found {
                        let t = history[at];
                        size = t.size;
                        placed = Some((t.volume, t.offset));
                        retouch = Some(at);
                    }
                }
            }
        }
        let (volume, offset) = match placed {
            Some((v, off)) => {
                self.relocate(rt, v, off);
                (v, off)
            }
            None => {
                let mut offset = candidate.unwrap_or_else(|| first + rt.alignment * self.rng.below(room + 1));
                for _ in 1..NEW_OFFSET_TRIES {
                    if !self.used.any_used(volume, offset, size) {
                        break;
                    }
                    offset = first + rt.alignment * self.rng.below(room + 1);
                }
                (volume, offset)
            }
        };
        self.used.insert_request(volume, offset, size);
        let time = self.out.len();
        let ends = &mut self.ends[volume as usize];
        if let Some(depth) = consumed {
            let h = ends.remove(ends.len() - depth).expect("consumed heads exist");
            // continuing inside the block the followed request started in touches it again
            if h.block == offset / 4096 {
                retouch = retouch.or(Some(h.time));
            }
        }
        if ends.len() == super::HEADS {
            ends.pop_front();
        }
        ends.push_back(Head {
            end: offset + u64::from(size),
            time,
            block: offset / 4096,
        });
        if let Some(state) = &mut self.reuse {
            state.stack.push(retouch);
        }
        self.u += gap;
        self.left -= 1;
        let top = u32::try_from(self.path[0]).unwrap_or(u32::MAX);
        self.out.push(Request {
            u: self.u,
            offset,
            size,
            op,
            volume,
            top,
        });
    }
}

impl ThreadGen {
    fn new(model: &Model, thread: &Thread, seed: u64, count: u64, reuse: bool) -> Self {
        let rt = ThreadRt {
            root: ChainRt::new(&thread.chain),
            defaults: Ready::new(&thread.defaults),

            reuse: if reuse {
                thread.reuse.as_ref().map(ReuseSampler::new)
            } else {
                None
            },
            continuation_depth: thread
                .streams
                .as_ref()
                .map(|s| s.continuation_depth.clone())
                .filter(|p| !p.is_empty()),
            near: thread
                .streams
                .as_ref()
                .filter(|s| !s.near_depth.is_empty() && !s.near_gap.bytes.is_empty())
                .map(|s| (s.near_depth.clone(), SizeSampler::new(&s.near_gap))),
            alignment: thread.alignment,
            spans: model.volumes.iter().map(|v| v.span_bytes.max(1)).collect(),
        };
        let mut st = ThreadState {
            used: Used::new(count * mean_blocks(&thread.defaults.sizes)),
            rng: Prng::new(seed),
            path: Vec::new(),
            ends: vec![VecDeque::new(); model.volumes.len()],
            reuse: rt.reuse.as_ref().map(|_| ReuseState {
                stack: crate::analyze::lru_stack::GenStack::new(usize::try_from(count).unwrap_or(0)),
            }),
            out: Vec::with_capacity(usize::try_from(count).unwrap_or(0)),
            u: 0.0,
            left: count,
        };
        // start anywhere in the first gap, so threads do not all begin at 0
        st.u = rt.defaults.gap.draw(&mut st.rng) * st.rng.f64();
        st.enter(&rt, 0);
        Self { rt, st }
    }

    fn next(&mut self) {
        self.st.next(&self.rt);
    }
}

/// 4 KiB blocks an aligned request of these sizes covers on average, rounded up.
fn mean_blocks(sizes: &super::Sizes) -> u64 {
    let mean: f64 = sizes
        .bytes
        .iter()
        .zip(&sizes.p)
        .map(|(&b, &p)| p * u64::from(b).div_ceil(4096).max(1) as f64)
        .sum();
    (mean.ceil() as u64).max(1)
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

/// Maps model time onto the rate profile: within each cycle of the model's duration, the
/// cumulative share of requests is followed window by window.
struct Warp {
    duration: f64,
    window: f64,
    cumulative: Vec<f64>,
}

impl Warp {
    /// Onto `shares` (the workload's profile, or one thread's activity) over the rate windows.
    fn new(model: &Model, shares: &[f64]) -> Self {
        let mut cumulative = vec![0.0];
        for s in shares {
            cumulative.push(cumulative.last().expect("non-empty") + s);
        }
        Self {
            duration: model.duration_ns as f64,
            window: model.rate.window_ns as f64,
            cumulative,
        }
    }

    fn apply(&self, u: f64) -> f64 {
        let x = u / self.duration;
        let cycle = x.floor();
        let f = x - cycle;
        let w = self
            .cumulative
            .partition_point(|&c| c <= f)
            .clamp(1, self.cumulative.len() - 1)
            - 1;
        let share = self.cumulative[w + 1] - self.cumulative[w];
        let within = if share > 0.0 {
            (f - self.cumulative[w]) / share
        } else {
            0.0
        };
        let last = self.cumulative.len() - 2;
        let length = if w == last {
            (self.duration - w as f64 * self.window).max(0.0)
        } else {
            self.window
        };
        cycle * self.duration + w as f64 * self.window + within * length
    }
}

fn check(opts: &GenerateOptions) -> Result<()> {
    if !(opts.intensity.is_finite() && opts.intensity > 0.0) {
        return Err(Error::Usage(format!(
            "`intensity` must be a positive number, found {}",
            opts.intensity
        )));
    }
    if opts.requests == Some(0) || opts.duration_ns == Some(0) {
        return Err(Error::Usage(
            "asked to generate nothing: `requests` and `duration` must be positive".into(),
        ));
    }
    Ok(())
}

/// Generates a synthetic trace from `model`.
pub fn generate(model: &Model, opts: &GenerateOptions) -> Result<Trace> {
    check(opts)?;
    let total = match (opts.requests, opts.duration_ns) {
        (Some(n), _) => n,
        (None, Some(d)) => {
            ((d as f64 * opts.intensity / model.duration_ns as f64) * model.requests as f64).ceil() as u64 + 1
        }
        (None, None) => model.requests,
    };
    let counts = apportion(total, &model.threads.iter().map(|t| t.weight).collect::<Vec<_>>());
    // each thread onto its own activity where the model keeps one, else the workload's profile
    let warps: Vec<Warp> = model
        .threads
        .iter()
        .map(|t| Warp::new(model, t.activity.as_deref().unwrap_or(&model.rate.shares)))
        .collect();
    let mut out = Trace {
        volumes: model.volumes.iter().map(|v| v.name.clone()).collect(),
        ..Trace::default()
    };
    // Long threads are cut into independent segments generated on all cores and joined in
    // model time; each segment starts its walk afresh (reuse reaches back within a segment).
    let cores = cores();
    let jobs: Vec<(usize, u64, u64)> = counts
        .iter()
        .enumerate()
        .flat_map(|(t, &c)| {
            let parts = if c >= SEGMENT_MIN {
                (cores as u64).min(c / (SEGMENT_MIN / 2)).max(1)
            } else {
                1
            };
            let sizes = apportion(c, &vec![1.0 / parts as f64; usize::try_from(parts).unwrap_or(1)]);
            sizes.into_iter().enumerate().map(move |(k, n)| (t, k as u64, n))
        })
        .collect();
    let walks = on_all_cores(jobs.clone(), |(t, k, n)| {
        let seed = splitmix(opts.seed ^ splitmix(t as u64) ^ splitmix(k.wrapping_add(1) << 32));
        let mut g = ThreadGen::new(model, &model.threads[t], seed, n, opts.reuse);
        while g.st.left > 0 {
            g.next();
        }
        g.st.out
    });
    // Each thread's segments are joined end to end in model time, and the thread's times
    // scaled so the workload keeps the model's rate exactly (gap shapes are kept; only their
    // scale is pinned): every thread spans the whole generated stretch, the model's duration
    // scaled by how many requests are generated (rounding a rare thread's count must not
    // stretch it). Then model time is warped onto the output clock, in parallel pieces.
    let target = model.duration_ns as f64 * total as f64 / model.requests.max(1) as f64;
    let mut columns: Vec<Columns> = counts.iter().map(|&c| Columns::zeroed(c)).collect();
    let mut fills = Vec::new();
    let mut walked = jobs.iter().zip(&walks).peekable();
    for (t, cols) in columns.iter_mut().enumerate() {
        let mut segments = Vec::new();
        while let Some((_, seg)) = walked.next_if(|((jt, _, _), _)| *jt == t) {
            segments.push(seg.as_slice());
        }
        let last: f64 = segments.iter().filter_map(|s| s.last()).map(|r| r.u).sum();
        let scale = if last > 0.0 { target / last } else { 1.0 };
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
            let t = warp.apply((r.u + base) * scale) / opts.intensity;
            slots.ts[i] = t as u64;
            slots.offset[i] = r.offset;
            slots.size[i] = r.size;
            slots.op[i] = r.op;
            slots.volume[i] = r.volume;
        }
    });
    drop(walks);
    if let Some(limit) = opts.duration_ns {
        // times only grow within a thread, so each is cut where it passes the limit
        for cols in &mut columns {
            cols.truncate(cols.ts.partition_point(|&t| t <= limit));
        }
    }
    let streams: Vec<u32> = model.threads.iter().map(|t| t.stream).collect();
    merge_threads(&mut out, columns, &streams);
    out.sort_by_time();
    out.make_relative();
    Ok(out)
}

/// Requests per piece of the parallel time warp.
const FILL_CHUNK: usize = 1 << 16;

/// One thread's generated requests as columns, times on the output clock.
struct Columns {
    ts: Vec<u64>,
    offset: Vec<u64>,
    size: Vec<u32>,
    op: Vec<u8>,
    volume: Vec<u32>,
}

/// Slots of a [`Columns`] that one piece of work fills.
struct Slots<'a> {
    ts: &'a mut [u64],
    offset: &'a mut [u64],
    size: &'a mut [u32],
    op: &'a mut [u8],
    volume: &'a mut [u32],
}

impl Columns {
    fn zeroed(n: u64) -> Self {
        let n = usize::try_from(n).expect("request counts fit memory");
        Self {
            ts: vec![0; n],
            offset: vec![0; n],
            size: vec![0; n],
            op: vec![0; n],
            volume: vec![0; n],
        }
    }

    fn len(&self) -> usize {
        self.ts.len()
    }

    fn truncate(&mut self, n: usize) {
        self.ts.truncate(n);
        self.offset.truncate(n);
        self.size.truncate(n);
        self.op.truncate(n);
        self.volume.truncate(n);
    }

    fn slots(&mut self) -> Slots<'_> {
        Slots {
            ts: &mut self.ts,
            offset: &mut self.offset,
            size: &mut self.size,
            op: &mut self.op,
            volume: &mut self.volume,
        }
    }
}

impl<'a> Slots<'a> {
    /// The first `n` slots, and the rest.
    fn split_at(self, n: usize) -> (Slots<'a>, Slots<'a>) {
        let (ts, ts_rest) = self.ts.split_at_mut(n);
        let (offset, offset_rest) = self.offset.split_at_mut(n);
        let (size, size_rest) = self.size.split_at_mut(n);
        let (op, op_rest) = self.op.split_at_mut(n);
        let (volume, volume_rest) = self.volume.split_at_mut(n);
        (
            Slots {
                ts,
                offset,
                size,
                op,
                volume,
            },
            Slots {
                ts: ts_rest,
                offset: offset_rest,
                size: size_rest,
                op: op_rest,
                volume: volume_rest,
            },
        )
    }
}

/// Appends the threads' columns to `out` in time order (ties: the lower thread first).
fn merge_threads(out: &mut Trace, mut columns: Vec<Columns>, streams: &[u32]) {
    if columns.len() == 1 {
        let c = columns.pop().expect("one thread");
        out.stream = vec![streams[0]; c.len()];
        (out.ts_ns, out.offset, out.size, out.op, out.volume) = (c.ts, c.offset, c.size, c.op, c.volume);
        return;
    }
    out.reserve(columns.iter().map(Columns::len).sum());
    let mut next = vec![0usize; columns.len()];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.len() > 0)
        .map(|(i, c)| Reverse((c.ts[0], i)))
        .collect();
    while let Some(Reverse((ts, i))) = heap.pop() {
        let (c, j) = (&columns[i], next[i]);
        out.ts_ns.push(ts);
        out.offset.push(c.offset[j]);
        out.size.push(c.size[j]);
        out.op.push(c.op[j]);
        out.volume.push(c.volume[j]);
        out.stream.push(streams[i]);
        next[i] += 1;
        if let Some(&t) = c.ts.get(j + 1) {
            heap.push(Reverse((t, i)));
        }
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Runs `work` on every task, spread over the machine's cores; results in task order.
fn on_all_cores<T: Send, R: Send>(tasks: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let cores = cores();
    let n = tasks.len();
    let tasks: Vec<Mutex<Option<T>>> = tasks.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..cores.min(n) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(task) = tasks.get(i) else { break };
                let task = task
                    .lock()
                    .expect("no worker panics")
                    .take()
                    .expect("each task runs once");
                let r = work(task);
                *results[i].lock().expect("no worker panics") = Some(r);
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().expect("no worker panics").expect("every task ran"))
        .collect()
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
