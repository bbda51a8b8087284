//! Generation: from a [`Model`] to a synthetic trace, and the locality-free baseline.
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
//! memory: the output columns, plus 16 bytes a request and the stack with reuse.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::sample::{pick, Prng, ReuseSampler, Sampler, SizeSampler};
use super::{Chain, Model, Stats, Thread};
use crate::error::{Error, Result};
use crate::trace::{Trace, TraceView};

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
    sizes: SizeSampler,
    gap: Sampler,
}

impl Ready {
    fn new(s: &Stats) -> Self {
        Self {
            stats: s.clone(),
            sizes: SizeSampler::new(&s.sizes),
            gap: Sampler::new(&s.interarrival),
        }
    }
}

/// A chain with its edges' samplers built once.
struct ChainRt {
    states: Vec<(u32, u64, u64)>,
    initial: Vec<f64>,
    edges: Vec<Vec<(usize, f64, Option<Ready>)>>,
    children: Vec<Option<ChainRt>>,
}

impl ChainRt {
    fn new(c: &Chain) -> Self {
        Self {
            states: c.states.iter().map(|s| (s.volume, s.start, s.end)).collect(),
            initial: c.initial.clone(),
            edges: c
                .transitions
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|e| (e.to as usize, e.p, e.stats.as_ref().map(Ready::new)))
                        .collect()
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

/// A Bloom filter of the offsets a thread has used, so a request the model calls new does not
/// land on a used offset by chance (which would add reuse the trace never had). Fixed memory,
/// one byte per request; a false positive only costs a retry.
struct Used {
    bits: Vec<u64>,
}

impl Used {
    fn new(expected: u64) -> Self {
        // about 16 bits per request: a few blocks each, three probes
        let words = (expected.clamp(1 << 10, 1 << 32) / 4).next_power_of_two() as usize;
        Self { bits: vec![0; words] }
    }

    /// A word and three bits in it: one cache line per lookup (a blocked Bloom filter).
    #[inline]
    fn probe(&self, volume: u32, block: u64) -> (usize, u64) {
        let h = splitmix(block ^ (u64::from(volume) << 48));
        let word = (h as usize) & (self.bits.len() - 1);
        let bits = (1u64 << ((h >> 40) & 63)) | (1u64 << ((h >> 46) & 63)) | (1u64 << ((h >> 52) & 63));
        (word, bits)
    }

    #[inline]
    fn contains(&self, volume: u32, block: u64) -> bool {
        let (word, bits) = self.probe(volume, block);
        self.bits[word] & bits == bits
    }

    #[inline]
    fn insert(&mut self, volume: u32, block: u64) {
        let (word, bits) = self.probe(volume, block);
        self.bits[word] |= bits;
    }

    /// 4 KiB blocks a request covers (the unit the miss-ratio curve counts).
    fn blocks(offset: u64, size: u32) -> std::ops::RangeInclusive<u64> {
        offset / 4096..=(offset + u64::from(size).max(1) - 1) / 4096
    }

    fn any_used(&self, volume: u32, offset: u64, size: u32) -> bool {
        Self::blocks(offset, size).any(|b| self.contains(volume, b))
    }

    fn insert_request(&mut self, volume: u32, offset: u64, size: u32) {
        for b in Self::blocks(offset, size) {
            self.insert(volume, b);
        }
    }
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
    stack: super::lru::GenStack,
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
            let s = pick(chain.initial.iter().copied(), &mut self.rng);
            self.path.push(s);
            match chain.children[s].as_ref() {
                Some(c) => chain = c,
                None => break,
            }
        }
    }

    /// The path to the leaf holding `offset` of `volume`.
    fn relocate(&mut self, rt: &ThreadRt, volume: u32, offset: u64) {
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
            let edges = &chain.edges[s];
            if edges.is_empty() {
                self.enter(rt, level);
                return &rt.defaults;
            }
            let (to, _, ready) = &edges[pick(edges.iter().map(|e| e.1), &mut self.rng)];
            let to = *to;
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
        let op = pick(ready.stats.ops.iter().copied(), &mut self.rng) as u8;
        let mut size = ready.sizes.draw(&mut self.rng);
        let gap = ready.gap.draw(&mut self.rng);
        let kind = self.rng.f64();
        let (volume, start, end) =
            rt.chain_at(&self.path[..self.path.len() - 1]).states[self.path[self.path.len() - 1]];
        let st = &ready.stats;
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
                // aligned to the volume, not to the state's start (state bounds are arbitrary)
                let first = start.div_ceil(rt.alignment) * rt.alignment;
                let room = end.saturating_sub(first).saturating_sub(u64::from(size)) / rt.alignment;
                let mut offset = first + rt.alignment * self.rng.below(room + 1);
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
            used: Used::new(count),
            rng: Prng::new(seed),
            path: Vec::new(),
            ends: vec![VecDeque::new(); model.volumes.len()],
            reuse: rt.reuse.as_ref().map(|_| ReuseState {
                stack: super::lru::GenStack::new(usize::try_from(count).unwrap_or(0)),
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
    fn new(model: &Model) -> Self {
        let mut cumulative = vec![0.0];
        for s in &model.rate.shares {
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
            "--intensity must be a positive number, found {}",
            opts.intensity
        )));
    }
    if opts.requests == Some(0) || opts.duration_ns == Some(0) {
        return Err(Error::Usage(
            "asked to generate nothing: -n and --duration must be positive".into(),
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
    let warp = Warp::new(model);
    let mut out = Trace {
        volumes: model.volumes.iter().map(|v| v.name.clone()).collect(),
        ..Trace::default()
    };
    // Long threads are cut into independent segments generated on all cores and joined in
    // model time; each segment starts its walk afresh (reuse reaches back within a segment).
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
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
    let next_job = std::sync::atomic::AtomicUsize::new(0);
    let done: std::sync::Mutex<Vec<Option<Vec<Request>>>> =
        std::sync::Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..cores.min(jobs.len()) {
            scope.spawn(|| loop {
                let j = next_job.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(t, k, n)) = jobs.get(j) else { break };
                let seed = splitmix(opts.seed ^ splitmix(t as u64) ^ splitmix(k.wrapping_add(1) << 32));
                let mut g = ThreadGen::new(model, &model.threads[t], seed, n, opts.reuse);
                while g.st.left > 0 {
                    g.next();
                }
                done.lock().expect("no generator panics")[j] = Some(std::mem::take(&mut g.st.out));
            });
        }
    });
    let done = done.into_inner().expect("no generator panics");
    // Each thread in full, its model times scaled so the workload keeps the model's rate
    // exactly. Gap shapes are kept; only their scale is pinned.
    let mut segments = jobs.iter().zip(done).peekable();
    let mut buffers: Vec<Vec<Request>> = Vec::with_capacity(model.threads.len());
    for t in 0..model.threads.len() {
        let mut reqs: Vec<Request> = Vec::new();
        while let Some((_, seg)) = segments.next_if(|((jt, _, _), _)| *jt == t) {
            let mut seg = seg.expect("every job ran");
            let base = reqs.last().map_or(0.0, |r| r.u);
            for r in &mut seg {
                r.u += base;
            }
            if reqs.is_empty() {
                reqs = seg;
            } else {
                reqs.append(&mut seg);
            }
        }
        // every thread spans the whole generated stretch: the model's duration scaled by how
        // many requests are generated (rounding a rare thread's count must not stretch it)
        if let Some(last) = reqs.last().map(|r| r.u) {
            let target = model.duration_ns as f64 * total as f64 / model.requests.max(1) as f64;
            if last > 0.0 {
                let scale = target / last;
                for r in &mut reqs {
                    r.u *= scale;
                }
            }
        }
        buffers.push(reqs);
    }
    let streams: Vec<u32> = model.threads.iter().map(|t| t.stream).collect();
    let reserve = buffers.iter().map(Vec::len).sum();
    out.ts_ns.reserve(reserve);
    out.offset.reserve(reserve);
    out.size.reserve(reserve);
    out.op.reserve(reserve);
    out.volume.reserve(reserve);
    out.stream.reserve(reserve);
    let limit = opts.duration_ns.map(|d| d as f64);
    let mut push = |r: &Request, stream: u32| -> bool {
        let t = warp.apply(r.u) / opts.intensity;
        if limit.is_some_and(|l| t > l) {
            return false;
        }
        out.ts_ns.push(t as u64);
        out.offset.push(r.offset);
        out.size.push(r.size);
        out.op.push(r.op);
        out.volume.push(r.volume);
        out.stream.push(stream);
        true
    };
    if buffers.len() == 1 {
        for r in &buffers[0] {
            if !push(r, streams[0]) {
                break;
            }
        }
    } else {
        // threads merged by model time
        let mut next = vec![0usize; buffers.len()];
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .map(|(i, b)| Reverse((b[0].u.to_bits(), i)))
            .collect();
        while let Some(Reverse((_, i))) = heap.pop() {
            let r = &buffers[i][next[i]];
            next[i] += 1;
            if !push(r, streams[i]) {
                break;
            }
            if let Some(n) = buffers[i].get(next[i]) {
                heap.push(Reverse((n.u.to_bits(), i)));
            }
        }
    }
    out.sort_by_time();
    out.make_relative();
    Ok(out)
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What IOMeter-style generators produce: the same mix, sizes and inter-arrival times as
/// `original` (each request's op, size, volume and gap drawn together from a random request of
/// it), but offsets uniform over the volume's span, with no sequential runs and no reuse.
pub fn generate_locality_free(original: &TraceView<'_>, requests: u64, seed: u64) -> Result<Trace> {
    let n = original.len();
    if n < 2 {
        return Err(Error::Usage(
            "the baseline needs an original trace of at least two requests".into(),
        ));
    }
    let mut spans = vec![1u64; original.volumes.len()];
    for i in 0..n {
        let v = original.volume[i] as usize;
        spans[v] = spans[v].max(original.offset[i] + u64::from(original.size[i]));
    }
    let mut rng = Prng::new(seed);
    let mut out = Trace {
        volumes: original.volumes.to_vec(),
        ..Trace::default()
    };
    let mut t = 0u64;
    for _ in 0..requests {
        let i = 1 + rng.below((n - 1) as u64) as usize;
        t += original.ts_ns[i] - original.ts_ns[i - 1];
        let (v, size) = (original.volume[i], original.size[i]);
        let room = spans[v as usize].saturating_sub(u64::from(size)) / 512;
        out.ts_ns.push(t);
        out.offset.push(512 * rng.below(room + 1));
        out.size.push(size);
        out.op.push(original.op[i]);
        out.volume.push(v);
        out.stream.push(original.stream[i]);
    }
    out.make_relative();
    Ok(out)
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
