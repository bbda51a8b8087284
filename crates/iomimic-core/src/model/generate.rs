//! Generation: from a [`Model`] to a synthetic trace, and the locality-free baseline.
//!
//! ## Algorithm
//! Each thread walks its state diagram: from the current leaf, the top chain's edge is drawn;
//! if it stays in the same state and that state has children, the child chain's edge is drawn
//! instead, and so on down. A move to another state enters its children by their entry
//! probabilities. The deciding edge's stats (or the thread's) give the op, the size and the
//! model-time gap; the request is then sequential (it starts at its volume's previous end),
//! a reuse (it repeats the offset and size of the thread's request that many requests back,
//! drawn from the reuse distribution) or random (uniform and aligned inside the new leaf).
//! Threads get request counts by their weights and are merged by model time; model time is
//! then warped onto the rate profile (cycled when generating past its end) and divided by the
//! intensity.
//!
//! ## Complexity
//! O(n · levels + n log threads); memory: the output columns plus each thread's recent
//! requests for reuse (at most [`REUSE_MEMORY`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::sample::{pick, Prng, ReuseSampler, Sampler, SizeSampler};
use super::{Chain, Model, Stats, Thread};
use crate::error::{Error, Result};
use crate::trace::{Trace, TraceView};

/// Requests each thread remembers for reuse.
pub const REUSE_MEMORY: usize = 1 << 22;

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
        Self { requests: None, duration_ns: None, intensity: 1.0, seed: 1, reuse: true }
    }
}

struct Ready {
    stats: Stats,
    sizes: SizeSampler,
    gap: Sampler,
}

impl Ready {
    fn new(s: &Stats) -> Self {
        Self { stats: s.clone(), sizes: SizeSampler::new(&s.sizes), gap: Sampler::new(&s.interarrival) }
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
                .map(|row| row.iter().map(|e| (e.to as usize, e.p, e.stats.as_ref().map(Ready::new))).collect())
                .collect(),
            children: c.states.iter().map(|s| s.children.as_deref().map(ChainRt::new)).collect(),
        }
    }

    fn locate(&self, volume: u32, offset: u64) -> usize {
        self.states.partition_point(|&(v, start, _)| (v, start) <= (volume, offset)).saturating_sub(1)
    }
}

/// What a thread generates from: built once, never changed while generating.
struct ThreadRt {
    root: ChainRt,
    defaults: Ready,
    reuse: Option<ReuseSampler>,
    alignment: u64,
    stream: u32,
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

    fn probes(&self, volume: u32, offset: u64) -> [usize; 3] {
        let h = splitmix(offset ^ (u64::from(volume) << 48));
        let mask = self.bits.len() * 64 - 1;
        [h as usize & mask, (h >> 21) as usize & mask, (h >> 42) as usize & mask]
    }

    fn contains(&self, volume: u32, block: u64) -> bool {
        self.probes(volume, block).iter().all(|&b| self.bits[b / 64] & (1 << (b % 64)) != 0)
    }

    fn insert(&mut self, volume: u32, block: u64) {
        for b in self.probes(volume, block) {
            self.bits[b / 64] |= 1 << (b % 64);
        }
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
    last_end: Vec<Option<u64>>,
    recent: VecDeque<(u32, u64, u32)>,
    u: f64,
    left: u64,
}

struct ThreadGen {
    rt: ThreadRt,
    st: ThreadState,
}

/// One request in model time.
struct Request {
    u: f64,
    offset: u64,
    size: u32,
    op: u8,
    volume: u32,
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

    fn next(&mut self, rt: &ThreadRt) -> Request {
        let ready = self.step(rt);
        let op = pick(ready.stats.ops.iter().copied(), &mut self.rng) as u8;
        let mut size = ready.sizes.draw(&mut self.rng);
        let gap = ready.gap.draw(&mut self.rng);
        let kind = self.rng.f64();
        let (volume, start, end) = rt.chain_at(&self.path[..self.path.len() - 1]).states[self.path[self.path.len() - 1]];
        let mut placed = None;
        if kind < ready.stats.sequential {
            placed = self.last_end[volume as usize].filter(|&e| e < rt.spans[volume as usize]).map(|e| (volume, e));
        } else if kind < ready.stats.sequential + ready.stats.reuse {
            if let Some(r) = &rt.reuse {
                let back = r.draw(&mut self.rng) as usize;
                if back <= self.recent.len() {
                    let (v, off, sz) = self.recent[self.recent.len() - back];
                    size = sz;
                    placed = Some((v, off));
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
        self.last_end[volume as usize] = Some(offset + u64::from(size));
        if rt.reuse.is_some() {
            if self.recent.len() == REUSE_MEMORY {
                self.recent.pop_front();
            }
            self.recent.push_back((volume, offset, size));
        }
        self.u += gap;
        self.left -= 1;
        Request { u: self.u, offset, size, op, volume }
    }
}

impl ThreadGen {
    fn new(model: &Model, thread: &Thread, seed: u64, count: u64, reuse: bool) -> Self {
        let rt = ThreadRt {
            root: ChainRt::new(&thread.chain),
            defaults: Ready::new(&thread.defaults),
            reuse: if reuse { thread.reuse.as_ref().map(ReuseSampler::new) } else { None },
            alignment: thread.alignment,
            stream: thread.stream,
            spans: model.volumes.iter().map(|v| v.span_bytes.max(1)).collect(),
        };
        let mut st = ThreadState {
            used: Used::new(count),
            rng: Prng::new(seed),
            path: Vec::new(),
            last_end: vec![None; model.volumes.len()],
            recent: VecDeque::new(),
            u: 0.0,
            left: count,
        };
        // start anywhere in the first gap, so threads do not all begin at 0
        st.u = rt.defaults.gap.draw(&mut st.rng) * st.rng.f64();
        st.enter(&rt, 0);
        Self { rt, st }
    }

    fn next(&mut self) -> Request {
        self.st.next(&self.rt)
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
        Self { duration: model.duration_ns as f64, window: model.rate.window_ns as f64, cumulative }
    }

    fn apply(&self, u: f64) -> f64 {
        let x = u / self.duration;
        let cycle = x.floor();
        let f = x - cycle;
        let w = self.cumulative.partition_point(|&c| c <= f).clamp(1, self.cumulative.len() - 1) - 1;
        let share = self.cumulative[w + 1] - self.cumulative[w];
        let within = if share > 0.0 { (f - self.cumulative[w]) / share } else { 0.0 };
        let last = self.cumulative.len() - 2;
        let length = if w == last { (self.duration - w as f64 * self.window).max(0.0) } else { self.window };
        cycle * self.duration + w as f64 * self.window + within * length
    }
}

fn check(opts: &GenerateOptions) -> Result<()> {
    if !(opts.intensity.is_finite() && opts.intensity > 0.0) {
        return Err(Error::Usage(format!("--intensity must be a positive number, found {}", opts.intensity)));
    }
    if opts.requests == Some(0) || opts.duration_ns == Some(0) {
        return Err(Error::Usage("asked to generate nothing: -n and --duration must be positive".into()));
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
    let mut gens: Vec<ThreadGen> = model
        .threads
        .iter()
        .zip(&counts)
        .enumerate()
        .map(|(i, (t, &c))| ThreadGen::new(model, t, splitmix(opts.seed ^ splitmix(i as u64)), c, opts.reuse))
        .collect();
    let warp = Warp::new(model);
    let mut out = Trace { volumes: model.volumes.iter().map(|v| v.name.clone()).collect(), ..Trace::default() };
    // Each thread in full, its model times scaled so it keeps the model's rate exactly: the
    // thread issued requests × weight requests over duration_ns, so n of them span
    // duration_ns × n / (requests × weight). Gap shapes are kept; only their scale is pinned.
    let buffers: Vec<Vec<Request>> = gens
        .iter_mut()
        .zip(&model.threads)
        .map(|(g, thread)| {
            let mut reqs: Vec<Request> = Vec::with_capacity(usize::try_from(g.st.left).unwrap_or(0));
            while g.st.left > 0 {
                reqs.push(g.next());
            }
            let expected = model.requests as f64 * thread.weight;
            if let (Some(last), true) = (reqs.last().map(|r| r.u), expected > 0.0) {
                let target = model.duration_ns as f64 * reqs.len() as f64 / expected;
                if last > 0.0 {
                    let scale = target / last;
                    for r in &mut reqs {
                        r.u *= scale;
                    }
                }
            }
            reqs
        })
        .collect();
    let reserve = buffers.iter().map(Vec::len).sum();
    out.ts_ns.reserve(reserve);
    out.offset.reserve(reserve);
    out.size.reserve(reserve);
    out.op.reserve(reserve);
    out.volume.reserve(reserve);
    out.stream.reserve(reserve);
    // threads merged by model time
    let mut next = vec![0usize; buffers.len()];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> =
        buffers.iter().enumerate().filter(|(_, b)| !b.is_empty()).map(|(i, b)| Reverse((b[0].u.to_bits(), i))).collect();
    let limit = opts.duration_ns.map(|d| d as f64);
    while let Some(Reverse((_, i))) = heap.pop() {
        let r = &buffers[i][next[i]];
        next[i] += 1;
        let t = warp.apply(r.u) / opts.intensity;
        if limit.is_some_and(|l| t > l) {
            break;
        }
        out.ts_ns.push(t as u64);
        out.offset.push(r.offset);
        out.size.push(r.size);
        out.op.push(r.op);
        out.volume.push(r.volume);
        out.stream.push(gens[i].rt.stream);
        if let Some(n) = buffers[i].get(next[i]) {
            heap.push(Reverse((n.u.to_bits(), i)));
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
        return Err(Error::Usage("the baseline needs an original trace of at least two requests".into()));
    }
    let mut spans = vec![1u64; original.volumes.len()];
    for i in 0..n {
        let v = original.volume[i] as usize;
        spans[v] = spans[v].max(original.offset[i] + u64::from(original.size[i]));
    }
    let mut rng = Prng::new(seed);
    let mut out = Trace { volumes: original.volumes.to_vec(), ..Trace::default() };
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
