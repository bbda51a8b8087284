//! Training: from a trace to a [`Model`].
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
//!    (at most [`MAX_SIZES`], the rarest merged into the nearest kept size) and the model-time
//!    gap: the best of the six fitted families when its KS distance is at most
//!    [`PARAMETRIC_KS`] and fewer than [`ZERO_GAP_LIMIT`] gaps are zero, else the empirical
//!    quantiles. Edges with fewer than [`MIN_STATS`] requests use the thread's stats.
//! 6. Reuse (temporal locality): how many of the thread's requests back the re-used offset was
//!    last used, in quarter-octave buckets.
//!
//! ## Complexity
//! O(n · levels) with hash maps, plus the fits (on at most 20,000 gaps each), plus O(n log n)
//! for the reuse depths, which a second core computes alongside the main pass.

use rustc_hash::FxHashMap;

use super::{
    Chain, Dist, Edge, Model, RateProfile, Reuse, ReuseBucket, Sizes, State, Stats, Streams, Thread, Volume,
};
use crate::analyze::{self, compare, distfit, MrcScope};
use crate::error::{Error, Result};
use crate::trace::TraceView;

pub const MAX_THREADS: usize = 256;
pub const MAX_LEVELS: u32 = 3;
pub const STATE_CHOICES: [u32; 3] = [4, 8, 16];
pub const MAX_SIZES: usize = 32;
/// Recent request ends per volume that continuations and near requests may follow.
pub const HEADS: usize = 1024;
/// Largest forward hole of a near request (Keeton's relaxed runs tolerate the same).
pub const NEAR_GAP: u64 = 64 << 10;
/// Share of offsets that must be multiples of the alignment random offsets are given.
pub const ALIGNED_SHARE: f64 = 0.95;
pub const MIN_STATS: u64 = 8;
pub const PARAMETRIC_KS: f64 = 0.05;
/// Fewest gaps a parametric fit is tried on; fewer are kept as empirical quantiles.
pub const MIN_PARAMETRIC: usize = 256;
/// Gaps an edge's distribution fit is judged on (KS resolution about 1/√2000 ≈ 0.02).
pub const EDGE_KS_SAMPLE: usize = 2000;
pub const ZERO_GAP_LIMIT: f64 = 0.05;
pub const QUANTILES: usize = 65;
/// Level selection stops at the first level after which the figures change by less than this.
pub const LEVEL_CHANGE: f64 = 0.02;
/// Requests used to choose levels on a large trace.
pub const SELECTION_SAMPLE: usize = 100_000;

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
}

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
        }
    }
}

/// Trains a model, choosing levels and states unless given.
pub fn train(t: &TraceView<'_>, opts: &TrainOptions) -> Result<Model> {
    if t.len() < 2 {
        return Err(Error::Usage("training needs at least two requests".into()));
    }
    if let Some(l) = opts.levels.filter(|l| !(1..=8).contains(l)) {
        return Err(Error::Usage(format!("`levels` must be 1 to 8, found {l}")));
    }
    if let Some(s) = opts.states.filter(|s| !(1..=1024).contains(s)) {
        return Err(Error::Usage(format!("`states` must be 1 to 1024, found {s}")));
    }
    let states = opts
        .states
        .unwrap_or_else(|| choose_states(&head(t, SELECTION_SAMPLE)));
    let mut selection = serde_json::Map::new();
    selection.insert("states_given".into(), opts.states.is_some().into());
    let levels = match opts.levels {
        Some(l) => l,
        None => {
            let (l, tried) = choose_levels(t, states, opts)?;
            selection.insert("levels_tried".into(), tried);
            l
        }
    };
    selection.insert(
        "rule".into(),
        format!(
            "states per level: the choice of {STATE_CHOICES:?} with the lowest level-1 inter-state transition \
             probability relative to chance; levels: the first whose next level improves the worst deviation of a \
             generated trace from the original (of the figures `validate` scores against a target) by less than \
             {:.0} points",
            LEVEL_CHANGE * 100.0
        )
        .into(),
    );
    let mut model = train_fixed(t, levels, states, opts);
    model.selection = Some(serde_json::Value::Object(selection));
    model.validate()?;
    Ok(model)
}

/// Level-1 inter-state transition probability of `k` equal ranges, relative to what independent
/// requests would give: P(consecutive requests change state) / (1 − Σ π²). Below 1, requests
/// stay in their state more than chance; the smaller, the better the states fit the workload.
fn relative_transition_probability(t: &TraceView<'_>, k: u32, spans: &[u64]) -> f64 {
    let range = |i: usize| {
        let v = t.volume[i] as usize;
        (
            v,
            (u128::from(t.offset[i]) * u128::from(k) / u128::from(spans[v].max(1))) as u64,
        )
    };
    let mut occupancy: FxHashMap<(usize, u64), u64> = FxHashMap::default();
    let mut changes = 0u64;
    let mut prev = None;
    for i in 0..t.len() {
        let r = range(i);
        *occupancy.entry(r).or_default() += 1;
        changes += u64::from(prev.is_some_and(|p| p != r));
        prev = Some(r);
    }
    let n = t.len() as f64;
    let chance = 1.0 - occupancy.values().map(|&c| (c as f64 / n).powi(2)).sum::<f64>();
    if chance <= 0.0 {
        return 1.0;
    }
    changes as f64 / (n - 1.0).max(1.0) / chance
}

fn volume_spans(t: &TraceView<'_>) -> Vec<u64> {
    let mut spans = vec![0u64; t.volumes.len()];
    for i in 0..t.len() {
        let v = t.volume[i] as usize;
        spans[v] = spans[v].max(t.offset[i] + u64::from(t.size[i]));
    }
    spans.iter().map(|&s| s.max(1)).collect()
}

/// The first `n` requests of a trace (choices are made on a sample of a large trace).
fn head<'a>(t: &TraceView<'a>, n: usize) -> TraceView<'a> {
    let n = t.len().min(n);
    TraceView {
        ts_ns: &t.ts_ns[..n],
        offset: &t.offset[..n],
        size: &t.size[..n],
        op: &t.op[..n],
        volume: &t.volume[..n],
        stream: &t.stream[..n],
        latency_ns: t.latency_ns.map(|l| &l[..n]),
        file: t.file.map(|f| &f[..n]),
        volumes: t.volumes,
        files: t.files,
    }
}

fn choose_states(t: &TraceView<'_>) -> u32 {
    let spans = volume_spans(t);
    let mut best = (f64::INFINITY, STATE_CHOICES[0]);
    for k in STATE_CHOICES {
        let ratio = relative_transition_probability(t, k, &spans);
        if ratio < best.0 - 1e-9 {
            best = (ratio, k);
        }
    }
    best.1
}

fn choose_levels(t: &TraceView<'_>, states: u32, opts: &TrainOptions) -> Result<(u32, serde_json::Value)> {
    let sample = head(t, SELECTION_SAMPLE);
    let n = sample.len();
    let opts_char = analyze::Options {
        mrc: MrcScope::Trace,
        ..analyze::Options::default()
    };
    let original = analyze::characterize(&sample, &opts_char)?;
    let same_window = analyze::Options {
        window_ns: original.options.window_ns,
        ..opts_char
    };
    let mut tried = Vec::new();
    let mut previous: Option<f64> = None;
    for levels in 1..=MAX_LEVELS {
        let model = train_fixed(&sample, levels, states, opts);
        let gen = super::GenerateOptions {
            requests: Some(n as u64),
            seed: opts.seed,
            ..super::GenerateOptions::default()
        };
        let synth = super::generate(&model, &gen)?;
        let rows = compare::compare(&original, &analyze::characterize(&synth.view(), &same_window)?);
        let worst = compare::worst_deviation(&rows);
        // how much this level improved the worst deviation of the level before
        let gain = previous.map(|p: f64| p - worst);
        tried.push(serde_json::json!({ "levels": levels, "worst_deviation": worst, "improvement": gain }));
        if gain.is_some_and(|g| g < LEVEL_CHANGE) {
            return Ok((levels - 1, serde_json::Value::Array(tried)));
        }
        previous = Some(worst);
    }
    Ok((MAX_LEVELS, serde_json::Value::Array(tried)))
}

/// What one edge saw.
#[derive(Default)]
struct StatsAcc {
    count: u64,
    ops: [u64; 4],
    sequential: u64,
    continuation: u64,
    near: u64,
    reuse: u64,
    sizes: FxHashMap<u32, u64>,
    gaps: Vec<f64>,
}

impl StatsAcc {
    fn add(&mut self, op: u8, size: u32, kind: Kind, gap: Option<f64>) {
        self.count += 1;
        self.ops[usize::from(op.min(3))] += 1;
        let (sequential, reuse) = (kind == Kind::Sequential, kind == Kind::Reuse);
        self.continuation += u64::from(kind == Kind::Continuation);
        self.near += u64::from(kind == Kind::Near);
        self.sequential += u64::from(sequential);
        self.reuse += u64::from(reuse);
        *self.sizes.entry(size).or_default() += 1;
        if let Some(g) = gap {
            self.gaps.push(g);
        }
    }

    fn finish(&self, fallback_gap: &Dist) -> Stats {
        let n = self.count.max(1) as f64;
        Stats {
            ops: self.ops.map(|c| c as f64 / n),
            sequential: self.sequential as f64 / n,
            reuse: self.reuse as f64 / n,
            continuation: self.continuation as f64 / n,
            near: self.near as f64 / n,
            sizes: sizes(&self.sizes),
            interarrival: if self.gaps.len() >= MIN_STATS as usize {
                gap_dist(&self.gaps)
            } else {
                fallback_gap.clone()
            },
        }
    }
}

fn sizes(counts: &FxHashMap<u32, u64>) -> Sizes {
    let mut entries: Vec<(u32, u64)> = counts.iter().map(|(&s, &c)| (s, c)).collect();
    entries.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let (kept, rest) = entries.split_at(entries.len().min(MAX_SIZES));
    let mut kept: Vec<(u32, u64)> = kept.to_vec();
    kept.sort_by_key(|e| e.0);
    for &(size, count) in rest {
        // the nearest kept size takes the count of a rare one
        let i = kept.partition_point(|e| e.0 < size);
        let j = if i == kept.len() || (i > 0 && size - kept[i - 1].0 < kept[i].0 - size) {
            i - 1
        } else {
            i
        };
        kept[j].1 += count;
    }
    let total: u64 = kept.iter().map(|e| e.1).sum::<u64>().max(1);
    Sizes {
        bytes: kept.iter().map(|e| e.0).collect(),
        p: kept.iter().map(|e| e.1 as f64 / total as f64).collect(),
    }
}

/// The best parametric fit when it is good, else empirical quantiles.
fn gap_dist(gaps: &[f64]) -> Dist {
    let zeros = gaps.iter().filter(|&&g| g == 0.0).count() as f64 / gaps.len() as f64;
    // a parametric family is worth testing only with enough gaps to tell them apart
    if zeros < ZERO_GAP_LIMIT && gaps.len() >= MIN_PARAMETRIC {
        let positive: Vec<f64> = gaps.iter().copied().filter(|&g| g > 0.0).collect();
        if let Some(fit) = distfit::fit_with_sample(&positive, EDGE_KS_SAMPLE) {
            let best = &fit.candidates[0];
            if best.ks <= PARAMETRIC_KS {
                let p = |name: &str| best.params.iter().find(|(k, _)| *k == name).map_or(0.0, |x| x.1);
                return match best.name {
                    "fixed" => Dist::Fixed { value_ns: p("value") },
                    "normal" => Dist::Normal {
                        mean_ns: p("mean"),
                        sd_ns: p("sd"),
                    },
                    "exponential" => Dist::Exponential { mean_ns: p("mean") },
                    "poisson" => Dist::Poisson {
                        lambda_ns: p("lambda"),
                    },
                    "gamma" => Dist::Gamma {
                        shape: p("shape"),
                        scale_ns: p("scale"),
                    },
                    _ => Dist::Lognormal {
                        mu: p("mu"),
                        sigma: p("sigma"),
                    },
                };
            }
        }
    }
    let mut sorted = gaps.to_vec();
    sorted.sort_by(f64::total_cmp);
    let last = sorted.len() - 1;
    let quantiles_ns = (0..QUANTILES)
        .map(|q| sorted[q * last / (QUANTILES - 1)])
        .collect();
    Dist::Empirical { quantiles_ns }
}

/// How a request was placed, in the order the checks are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// starts where the volume's previous request ended
    Sequential,
    /// starts where an older recent request of the volume ended
    Continuation,
    /// starts a little past where a recent request of the volume ended
    Near,
    /// touches a block the thread touched before
    Reuse,
    /// anywhere else
    New,
}

/// Drops one head ending at `end` from the sorted index.
fn forget(index: &mut std::collections::BTreeMap<u64, u32>, end: u64) {
    if let Some(count) = index.get_mut(&end) {
        *count -= 1;
        if *count == 0 {
            index.remove(&end);
        }
    }
}

/// Quarter-octave bucket bounds for reuse times: 1, 2, ..., 8, 10, 12, 14, 16, 20, ...
fn reuse_bounds() -> Vec<u64> {
    let mut b = vec![1u64];
    while *b.last().expect("non-empty") < 1 << 40 {
        let last = *b.last().expect("non-empty");
        b.push((last + 1).max((last as f64 * 2f64.powf(0.25)).round() as u64));
    }
    b
}

/// A chain under construction.
struct ChainAcc {
    states: Vec<(u32, u64, u64)>,
    children: Vec<Option<usize>>,
    initial: Vec<u64>,
    edges: Vec<FxHashMap<u32, StatsAcc>>,
    /// Self-loop counts that carry no stats (decided at a deeper level).
    passes: Vec<u64>,
}

impl ChainAcc {
    fn new(states: Vec<(u32, u64, u64)>) -> Self {
        let n = states.len();
        Self {
            states,
            children: vec![None; n],
            initial: vec![0; n],
            edges: (0..n).map(|_| FxHashMap::default()).collect(),
            passes: vec![0; n],
        }
    }
}

fn split(volume: u32, start: u64, end: u64, k: u32) -> Vec<(u32, u64, u64)> {
    let width = end - start;
    let k = u64::from(k).min(width).max(1);
    (0..k)
        .map(|j| {
            (
                volume,
                start + (u128::from(width) * u128::from(j) / u128::from(k)) as u64,
                start + (u128::from(width) * u128::from(j + 1) / u128::from(k)) as u64,
            )
        })
        .collect()
}

/// The state of a chain holding `offset` (states sorted, covering their parent).
fn locate(states: &[(u32, u64, u64)], volume: u32, offset: u64) -> usize {
    let i = states.partition_point(|&(v, start, _)| (v, start) <= (volume, offset));
    i.saturating_sub(1)
}

struct ThreadTrainer {
    levels: u32,
    k: u32,
    chains: Vec<ChainAcc>,
}

impl ThreadTrainer {
    /// (chain, state) at each level for a request, creating children on the way.
    fn path(&mut self, volume: u32, offset: u64, out: &mut Vec<(usize, usize)>) {
        out.clear();
        let mut chain = 0;
        for level in 0..self.levels {
            let s = locate(&self.chains[chain].states, volume, offset);
            out.push((chain, s));
            if level + 1 == self.levels {
                break;
            }
            chain = match self.chains[chain].children[s] {
                Some(c) => c,
                None => {
                    let (v, start, end) = self.chains[chain].states[s];
                    let c = self.chains.len();
                    self.chains.push(ChainAcc::new(split(v, start, end, self.k)));
                    self.chains[chain].children[s] = Some(c);
                    c
                }
            };
        }
    }
}

/// Requests per chunk the reuse-depth pass hands over.
const DEPTH_CHUNK: usize = 1 << 16;

/// Each request's LRU stack depth (of the 4 KiB block it starts in, among the blocks the
/// thread's requests started in), or `None` on a first touch, in row order. The stack is the
/// costliest part of training and needs nothing else, so it runs on a core of its own, a
/// chunk ahead of the loop that reads it.
fn reuse_depths<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    t: &'scope TraceView<'_>,
    rows: &'scope [usize],
) -> impl Iterator<Item = Option<u64>> + 'scope {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Option<u64>>>(8);
    scope.spawn(move || {
        let mut stack = crate::analyze::lru_stack::Stack::new(rows.len());
        for chunk in rows.chunks(DEPTH_CHUNK) {
            let depths = chunk
                .iter()
                .map(|&i| stack.touch((t.volume[i], t.offset[i] / 4096)))
                .collect();
            if tx.send(depths).is_err() {
                break;
            }
        }
    });
    rx.into_iter().flatten()
}

fn train_thread(
    t: &TraceView<'_>,
    rows: &[usize],
    u: &[f64],
    spans: &[u64],
    levels: u32,
    k: u32,
    reuse_on: bool,
    bounds: &[u64],
) -> (Chain, Stats, Option<Reuse>, Streams, u64) {
    let mut volumes: Vec<u32> = rows.iter().map(|&i| t.volume[i]).collect();
    volumes.sort_unstable();
    volumes.dedup();
    let top: Vec<(u32, u64, u64)> = volumes
        .iter()
        .flat_map(|&v| split(v, 0, spans[v as usize], k))
        .collect();
    let mut tr = ThreadTrainer {
        levels,
        k,
        chains: vec![ChainAcc::new(top)],
    };
    let mut thread_stats = StatsAcc::default();
    // per volume: recent request ends, newest last, and a count of each end, sorted
    let mut heads: FxHashMap<
        u32,
        (
            std::collections::VecDeque<u64>,
            std::collections::BTreeMap<u64, u32>,
        ),
    > = FxHashMap::default();
    let mut continuation_depth = vec![0u64; HEADS + 1];
    let mut near_depth = vec![0u64; HEADS + 1];
    let mut near_gaps: FxHashMap<u32, u64> = FxHashMap::default();
    let mut reuse_hist = vec![0u64; bounds.len()];
    // align_counts[k]: offsets that are multiples of 2^k
    let mut align_counts = [0u64; 21];
    let mut random = 0u64;
    let (mut prev, mut cur) = (Vec::new(), Vec::new());
    std::thread::scope(|scope| {
        // with reuse off no depth is needed: an endless run of `None`
        let mut depths: Box<dyn Iterator<Item = Option<u64>>> = if reuse_on {
            Box::new(reuse_depths(scope, t, rows))
        } else {
            Box::new(std::iter::repeat(None))
        };
        for (j, &i) in rows.iter().enumerate() {
            let (v, offset, size, op) = (t.volume[i], t.offset[i], t.size[i], t.op[i]);
            tr.path(v, offset, &mut cur);
            let (ends, index) = heads.entry(v).or_default();
            let sequential = ends.back() == Some(&offset);
            // An older run of the volume continued: the most recent head ending exactly here. Or a
            // small forward hole past the most recent head it follows. The sorted index of head
            // ends rules most requests out before the heads are scanned for a depth.
            let maybe_continued = !sequential && index.contains_key(&offset);
            let continued = if maybe_continued {
                ends.iter().rev().position(|&e| e == offset).map(|d| d + 1)
            } else {
                None
            };
            let maybe_near = !sequential
                && continued.is_none()
                && index
                    .range(offset.saturating_sub(NEAR_GAP)..offset)
                    .next_back()
                    .is_some();
            let near = if maybe_near {
                ends.iter()
                    .rev()
                    .position(|&e| e < offset && offset - e <= NEAR_GAP)
                    .map(|d| (d + 1, offset - ends[ends.len() - 1 - d]))
            } else {
                None
            };
            // A re-use starts in a 4 KiB block (the unit of the miss-ratio curve) where an earlier
            // request of the thread started; its depth in the LRU stack of such blocks is kept.
            let seen = depths.next().expect("a depth for every row");
            let kind = if sequential {
                Kind::Sequential
            } else if let Some(d) = continued {
                continuation_depth[d] += 1;
                Kind::Continuation
            } else if let Some((d, gap)) = near {
                near_depth[d] += 1;
                *near_gaps.entry(gap as u32).or_default() += 1;
                Kind::Near
            } else if seen.is_some() {
                Kind::Reuse
            } else {
                Kind::New
            };
            // the head a run-continuing request follows is used up (it no longer ends a run)
            let consumed = if sequential {
                Some(1)
            } else {
                continued.or(near.map(|n| n.0))
            };
            if let Some(depth) = consumed {
                let gone = ends.remove(ends.len() - depth).expect("consumed heads exist");
                forget(index, gone);
            }
            if ends.len() == HEADS {
                let gone = ends.pop_front().expect("a full deque has a front");
                forget(index, gone);
            }
            ends.push_back(offset + u64::from(size));
            *index.entry(offset + u64::from(size)).or_default() += 1;
            let reuse = kind == Kind::Reuse;
            if kind == Kind::New {
                // only requests placed afresh say how the workload aligns new data
                random += 1;
                for (k, count) in align_counts.iter_mut().enumerate() {
                    *count += u64::from(offset.trailing_zeros() as usize >= k);
                }
            }
            if let (true, Some(depth)) = (reuse, seen) {
                reuse_hist[bounds.partition_point(|&b| b <= depth) - 1] += 1;
            }
            let gap = (j > 0).then(|| u[i] - u[rows[j - 1]]);
            thread_stats.add(op, size, kind, gap);
            if j == 0 {
                for &(c, s) in &cur {
                    tr.chains[c].initial[s] += 1;
                }
            } else {
                let differ = prev.iter().zip(&cur).position(|(a, b)| a != b);
                let decided = differ.unwrap_or(cur.len() - 1);
                for (level, (&(c, a), &(_, b))) in prev.iter().zip(&cur).enumerate() {
                    match level.cmp(&decided) {
                        std::cmp::Ordering::Less => tr.chains[c].passes[a] += 1,
                        std::cmp::Ordering::Equal => {
                            tr.chains[c].edges[a]
                                .entry(b as u32)
                                .or_default()
                                .add(op, size, kind, gap);
                        }
                        std::cmp::Ordering::Greater => tr.chains[cur[level].0].initial[b] += 1,
                    }
                }
            }
            std::mem::swap(&mut prev, &mut cur);
        }
    });
    // Top-level starts follow occupancy, not just the first request.
    let top_occupancy: Vec<u64> = {
        let mut occ = vec![0u64; tr.chains[0].states.len()];
        for &i in rows {
            occ[locate(&tr.chains[0].states, t.volume[i], t.offset[i])] += 1;
        }
        occ
    };
    tr.chains[0].initial = top_occupancy;
    let overall_gap = if thread_stats.gaps.is_empty() {
        Dist::Fixed { value_ns: 0.0 }
    } else {
        gap_dist(&thread_stats.gaps)
    };
    let defaults = thread_stats.finish(&overall_gap);
    let chain = build_chain(&tr.chains, 0, &defaults.interarrival);
    let histogram = |hist: &[u64]| {
        let total: u64 = hist.iter().sum();
        let buckets: Vec<ReuseBucket> = hist
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(b, &c)| ReuseBucket {
                from: bounds[b],
                to: bounds[b + 1],
                p: c as f64 / total as f64,
            })
            .collect();
        (!buckets.is_empty()).then_some(Reuse { buckets })
    };
    let reuse = if reuse_on { histogram(&reuse_hist) } else { None };
    let depth_p = |counts: &[u64], from: usize| -> Vec<f64> {
        let total: u64 = counts[from..].iter().sum();
        if total == 0 {
            return Vec::new();
        }
        let last = counts.iter().rposition(|&c| c > 0).unwrap_or(from).max(from);
        counts[from..=last]
            .iter()
            .map(|&c| c as f64 / total as f64)
            .collect()
    };
    let streams = Streams {
        continuation_depth: depth_p(&continuation_depth, 2),
        near_depth: depth_p(&near_depth, 1),
        near_gap: if near_gaps.is_empty() {
            Sizes {
                bytes: Vec::new(),
                p: Vec::new(),
            }
        } else {
            sizes(&near_gaps)
        },
    };
    // the largest power of two (up to 1 MiB) that at least 95 % of fresh offsets are multiples of
    let enough = (random as f64 * ALIGNED_SHARE).ceil() as u64;
    let alignment = 1u64 << align_counts.iter().rposition(|&c| c >= enough).unwrap_or(0);
    (chain, defaults, reuse, streams, alignment)
}

fn normalise(counts: &[u64]) -> Vec<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return vec![1.0 / counts.len() as f64; counts.len()];
    }
    counts.iter().map(|&c| c as f64 / total as f64).collect()
}

fn build_chain(chains: &[ChainAcc], c: usize, fallback_gap: &Dist) -> Chain {
    let acc = &chains[c];
    let states = acc
        .states
        .iter()
        .zip(&acc.children)
        .map(|(&(volume, start, end), child)| State {
            volume,
            start,
            end,
            children: child.map(|ci| Box::new(build_chain(chains, ci, fallback_gap))),
        })
        .collect();
    let transitions = acc
        .edges
        .iter()
        .zip(&acc.passes)
        .enumerate()
        .map(|(s, (edges, &passes))| {
            let mut out: Vec<(u32, u64, Option<Stats>)> = edges
                .iter()
                .map(|(&to, st)| {
                    (
                        to,
                        st.count,
                        (st.count >= MIN_STATS).then(|| st.finish(fallback_gap)),
                    )
                })
                .collect();
            if passes > 0 {
                // moves decided below this level stay in the state here
                match out.iter_mut().find(|e| e.0 as usize == s) {
                    Some(e) => e.1 += passes,
                    None => out.push((s as u32, passes, None)),
                }
            }
            out.sort_by_key(|e| e.0);
            let total: u64 = out.iter().map(|e| e.1).sum();
            out.into_iter()
                .map(|(to, count, stats)| Edge {
                    to,
                    p: count as f64 / total as f64,
                    count,
                    stats,
                })
                .collect()
        })
        .collect();
    Chain {
        states,
        initial: normalise(&acc.initial),
        transitions,
    }
}

/// Model time of every request: span × cumulative share at its issue time.
fn model_times(t: &TraceView<'_>, window_ns: u64, counts: &[u64]) -> Vec<f64> {
    let n = t.len() as f64;
    let start = t.ts_ns[0];
    let span = (t.ts_ns[t.len() - 1] - start).max(1) as f64;
    let mut before = Vec::with_capacity(counts.len());
    let mut acc = 0u64;
    for &c in counts {
        before.push(acc);
        acc += c;
    }
    t.ts_ns
        .iter()
        .map(|&ts| {
            let rel = ts - start;
            let w = ((rel / window_ns) as usize).min(counts.len() - 1);
            let frac = (rel - w as u64 * window_ns) as f64 / window_ns as f64;
            span * (before[w] as f64 + frac * counts[w] as f64) / n
        })
        .collect()
}

/// Trains with the given levels and states.
pub fn train_fixed(t: &TraceView<'_>, levels: u32, states: u32, opts: &TrainOptions) -> Model {
    let n = t.len();
    let span = t.ts_ns[n - 1] - t.ts_ns[0];
    let window_ns = analyze::window_for(span, None).unwrap_or(span.max(1));
    let mut counts = vec![0u64; (span / window_ns) as usize + 1];
    for &ts in t.ts_ns {
        counts[((ts - t.ts_ns[0]) / window_ns) as usize] += 1;
    }
    let u = model_times(t, window_ns, &counts);
    let spans = volume_spans(t);

    let mut streams: Vec<u32> = t.stream.to_vec();
    streams.sort_unstable();
    streams.dedup();
    let by_stream = opts
        .by_stream
        .unwrap_or(streams.len() > 1 && streams.len() <= MAX_THREADS);
    let groups: Vec<(String, u32, Vec<usize>)> = if by_stream {
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
    };
    let bounds = reuse_bounds();
    let several = groups.len() > 1;
    let threads = groups
        .into_iter()
        .map(|(name, stream, rows)| {
            let (chain, defaults, reuse, streams, alignment) =
                train_thread(t, &rows, &u, &spans, levels, states, opts.reuse, &bounds);
            Thread {
                name,
                stream,
                weight: rows.len() as f64 / n as f64,
                alignment,
                defaults,
                chain,
                reuse,
                streams: Some(streams),
                // with one thread its activity is the workload's profile itself
                activity: several.then(|| {
                    let mut own = vec![0u64; counts.len()];
                    for &i in &rows {
                        own[((t.ts_ns[i] - t.ts_ns[0]) / window_ns) as usize] += 1;
                    }
                    normalise(&own)
                }),
            }
        })
        .collect();
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
            window_ns,
            shares: normalise(&counts),
        },
        selection: None,
    }
}
