//! A thread of the model made ready to generate from: every distribution turned into its
//! sampler once, before the walk, and never changed while generating.

use super::super::sample::{log_uniform_mean, Alias, BucketSampler, Sampler, SizeSampler};
use super::reuse::ReuseRt;
use crate::model::{Bucket, Chain, Edge, Model, OpStats, Sizes, Stats, Thread, PROFILE_SEGMENTS, RUN_SLOTS};

/// How requests of one op (or of both) are placed and sized.
pub(super) struct Placement {
    /// Cumulative thresholds of sequential, continuation, near and reuse; past the last a
    /// request is placed afresh.
    pub sequential: f64,
    pub continuation: f64,
    pub near: f64,
    pub reuse: f64,
    pub sizes: SizeSampler,
}

impl Placement {
    fn new(sequential: f64, continuation: f64, near: f64, reuse: f64, sizes: &Sizes) -> Self {
        Self {
            sequential,
            continuation: sequential + continuation,
            near: sequential + continuation + near,
            reuse: sequential + continuation + near + reuse,
            sizes: SizeSampler::new(sizes),
        }
    }

    fn of_op(o: &OpStats) -> Self {
        Self::new(o.sequential, o.continuation, o.near, o.reuse, &o.sizes)
    }
}

/// An edge's (or a thread's, or a volume's) stats with their samplers.
pub(super) struct Ready {
    pub ops: Alias,
    /// All ops together, and (when the stats keep them apart) reads, writes and trims (if
    /// kept; else trims as writes).
    pub all: Placement,
    pub by_op: Option<Vec<Placement>>,
    pub gap: Option<Sampler>,
}

impl Ready {
    pub fn new(s: &Stats) -> Self {
        Self {
            ops: Alias::new(&s.ops),
            all: Placement::new(s.sequential, s.continuation, s.near, s.reuse, &s.sizes),
            by_op: (s.by_op.len() >= 2).then(|| s.by_op.iter().map(Placement::of_op).collect()),
            gap: s.interarrival.as_ref().map(Sampler::new),
        }
    }

    /// How a request of `op` is placed.
    #[inline]
    pub fn placement(&self, op: u8) -> &Placement {
        match &self.by_op {
            Some(p) => p.get(usize::from(op.min(2))).unwrap_or(&p[1]),
            None => &self.all,
        }
    }
}

/// A chain with its edges' samplers built once.
pub(super) struct ChainRt {
    pub states: Vec<(u32, u64, u64)>,
    pub initial: Alias,
    pub edges: Vec<Row>,
    pub children: Vec<Option<ChainRt>>,
    /// Leaves with fine placement: the sub-range counts' sampler and how many there are.
    pub fine: Vec<Option<(Alias, u64)>>,
    /// Leaves whose fine counts tell the requests re-used later apart: samplers of those and
    /// of the rest ([`crate::model::State::fine_reused`]).
    pub fine_by_reuse: Vec<Option<[Alias; 2]>>,
}

/// A top-level state's stays, and its row's edges for while one lasts and for when it is over.
/// A hand-written row may lack either: without a self-loop (or with odds of 0 for it) every
/// stay is one request; without another edge of non-zero odds the row's odds decide when the
/// stay is over.
pub(super) struct Stay {
    pub lengths: BucketSampler,
    /// The edge back to the state itself (none: every stay is one request).
    pub itself: Option<usize>,
    /// The other edges by their odds, as indices into the row (none: the row has no other).
    pub leave: Option<(Alias, Vec<usize>)>,
}

impl Stay {
    fn new(s: usize, lengths: &[Bucket], row: &[Edge]) -> Self {
        let others: Vec<usize> = leaving(s, row).collect();
        Self {
            lengths: BucketSampler::from_buckets(lengths),
            itself: row.iter().position(|e| e.to as usize == s && e.p > 0.0),
            leave: (!others.is_empty()).then(|| {
                let p: Vec<f64> = others.iter().map(|&e| row[e].p).collect();
                (Alias::new(&p), others)
            }),
        }
    }
}

/// The edges of state `s`'s `row` to other states that the walk can take.
fn leaving(s: usize, row: &[Edge]) -> impl Iterator<Item = usize> + '_ {
    (0..row.len()).filter(move |&e| row[e].to as usize != s && row[e].p > 0.0)
}

/// One class's runs in a top-level state, ready to draw from.
pub(super) struct RunRt {
    pub sizes: SizeSampler,
    /// Fresh runs: `(cell, from, to)` with their shares, in order of length, drawn by position
    /// in `[0, 1)` (a golden-ratio sequence keeps the few long runs' share).
    pub fresh: Vec<(u64, u64, u64)>,
    pub fresh_p: Vec<f64>,
    pub restart: f64,
    pub restarts: Option<BucketSampler>,
    pub alignment: u64,
    pub sequence: Vec<[u64; 2]>,
    pub cells: u64,
}

/// Per top-level state and class slot (`state * RUN_SLOTS + slot`), its runs where it keeps
/// them; `None` when no state does (the walk then places every request by its edge).
fn ready_runs(c: &Chain) -> Option<Vec<Option<RunRt>>> {
    c.states.iter().any(|s| s.runs.is_some()).then(|| {
        let mut out: Vec<Option<RunRt>> = (0..c.states.len() * RUN_SLOTS).map(|_| None).collect();
        for (i, state) in c.states.iter().enumerate() {
            for r in state.runs.iter().flatten() {
                let slot = r.own_slot();
                let total: f64 = r.fresh.iter().map(|f| f[3] as f64).sum();
                out[i * RUN_SLOTS + slot] = Some(RunRt {
                    sizes: SizeSampler::new(&r.sizes),
                    fresh: r
                        .fresh
                        .iter()
                        .map(|&[cell, from, to, _]| (cell, from, to))
                        .collect(),
                    fresh_p: r.fresh.iter().map(|f| f[3] as f64 / total).collect(),
                    restart: if r.restarts.is_empty() { 0.0 } else { r.restart },
                    restarts: (!r.restarts.is_empty()).then(|| BucketSampler::from_buckets(&r.restarts)),
                    alignment: r.alignment,
                    sequence: r.sequence.clone(),
                    cells: r.cells,
                });
            }
        }
        out
    })
}

/// One state's outgoing edges, column by column so a draw scans only the probabilities.
pub(super) struct Row {
    pub pick: Alias,
    pub to: Vec<usize>,
    pub ready: Vec<Option<Ready>>,
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
                    ready: row.iter().map(|e| e.stats.as_deref().map(Ready::new)).collect(),
                })
                .collect(),
            children: c
                .states
                .iter()
                .map(|s| s.children.as_deref().map(ChainRt::new))
                .collect(),
            fine: c
                .states
                .iter()
                .map(|s| {
                    s.fine.as_ref().map(|counts| {
                        let p: Vec<f64> = counts.iter().map(|&c| f64::from(c)).collect();
                        (Alias::new(&p), counts.len() as u64)
                    })
                })
                .collect(),
            fine_by_reuse: c
                .states
                .iter()
                .map(|s| {
                    let (fine, reused) = (s.fine.as_ref()?, s.fine_reused.as_ref()?);
                    let rest: Vec<f64> = fine.iter().zip(reused).map(|(&f, &r)| f64::from(f - r)).collect();
                    let reused: Vec<f64> = reused.iter().map(|&r| f64::from(r)).collect();
                    // (a hand-written model may leave one side empty: then the counts as one)
                    let both = reused.iter().sum::<f64>() > 0.0 && rest.iter().sum::<f64>() > 0.0;
                    both.then(|| [Alias::new(&reused), Alias::new(&rest)])
                })
                .collect(),
        }
    }

    #[inline]
    pub fn locate(&self, volume: u32, offset: u64) -> usize {
        self.states
            .partition_point(|&(v, start, _)| (v, start) <= (volume, offset))
            .saturating_sub(1)
    }
}

/// The top-level states' stays made ready to draw from, when any keeps them.
fn ready_stays(c: &Chain) -> Option<Vec<Option<Stay>>> {
    let stays = c.states.iter().zip(&c.transitions).enumerate();
    let stays: Vec<Option<Stay>> = stays
        .map(|(s, (state, row))| state.stays.as_deref().map(|l| Stay::new(s, l, row)))
        .collect();
    stays.iter().any(Option::is_some).then_some(stays)
}

/// The trace's occupancy of the top-level states that keep a profile, and the top-level rows'
/// edges to other states, for steering where a leaving walk goes ([`State::profile`]).
pub(super) struct Steer {
    /// Per top-level state with a profile: its requests before each part's end, the first
    /// `0` (`PROFILE_SEGMENTS + 1` counts), and its mean stay (the steer's scale).
    pub profiles: Vec<Option<(Vec<f64>, f64)>>,
    /// Per top-level state: its row's edges to other states, as (edge, to, odds).
    pub leaving: Vec<Vec<(usize, usize, f64)>>,
}

impl Steer {
    /// The requests the trace had made in state `t` by `at` parts of its length (`None`: the
    /// state keeps no profile).
    #[inline]
    pub fn target(&self, t: usize, at: f64) -> Option<(f64, f64)> {
        let (cum, stay) = self.profiles[t].as_ref()?;
        let k = (at.floor() as usize).min(cum.len() - 2);
        let f = (at - k as f64).clamp(0.0, 1.0);
        Some((cum[k] + f * (cum[k + 1] - cum[k]), *stay))
    }
}

/// The steer, when a top-level state keeps a profile.
fn ready_steer(c: &Chain) -> Option<Steer> {
    c.states.iter().any(|s| s.profile.is_some()).then(|| Steer {
        profiles: c
            .states
            .iter()
            .map(|s| {
                let p = s.profile.as_ref()?;
                let cum: Vec<f64> = std::iter::once(0.0)
                    .chain(p.iter().scan(0.0, |a, &n| {
                        *a += f64::from(n);
                        Some(*a)
                    }))
                    .collect();
                let stay = s.stays.as_deref().map_or(1.0, |b| {
                    b.iter()
                        .map(|b| b.p * log_uniform_mean(b.from, b.to))
                        .sum::<f64>()
                        .max(1.0)
                });
                Some((cum, stay))
            })
            .collect(),
        leaving: c
            .transitions
            .iter()
            .enumerate()
            .map(|(s, row)| {
                leaving(s, row)
                    .map(|i| (i, row[i].to as usize, row[i].p))
                    .collect()
            })
            .collect(),
    })
}

/// What a thread generates from: built once, never changed while generating.
pub(super) struct ThreadRt {
    pub root: ChainRt,
    pub defaults: Ready,
    /// Each volume's stats (for edges without their own), where the thread keeps them.
    pub volumes: Vec<Option<Ready>>,
    pub reuse: Option<ReuseRt>,
    /// depth samplers for continuations (from 2) and near requests (from 1), and near holes;
    /// by alias tables, as a stream-rich trace's depths spread over up to 1,024 heads (drawn
    /// by a scan they were a fifth of generation's time)
    pub continuation_depth: Option<Alias>,
    pub near: Option<(Alias, SizeSampler)>,
    pub alignment: u64,
    pub spans: Vec<u64>,
    /// Per top-level state, its stays when it keeps them; `None` when none does (the walk then
    /// skips them).
    pub stays: Option<Vec<Option<Stay>>>,
    /// Per top-level state and request class, its runs ([`ready_runs`]).
    pub runs: Option<Vec<Option<RunRt>>>,
    pub steer: Option<Steer>,
    /// The thread's requests in the training trace: past them, fresh placements thin out by
    /// the reuse extension's `tail_fresh`.
    pub trained: u64,
}

impl ThreadRt {
    /// `thread` of `model`, with its reuse extension when `reuse` asks for it.
    pub fn new(model: &Model, thread: &Thread, reuse: bool) -> Self {
        let mut volumes: Vec<Option<Ready>> = (0..model.volumes.len()).map(|_| None).collect();
        for v in &thread.volumes {
            volumes[v.volume as usize] = Some(Ready::new(&v.stats));
        }
        Self {
            root: ChainRt::new(&thread.chain),
            defaults: Ready::new(&thread.defaults),
            volumes,
            reuse: if reuse {
                thread
                    .reuse
                    .as_ref()
                    .map(|r| ReuseRt::new(r, thread.chain.states.len()))
            } else {
                None
            },
            continuation_depth: thread
                .streams
                .as_ref()
                .filter(|s| !s.continuation_depth.is_empty())
                .map(|s| Alias::new(&s.continuation_depth)),
            near: thread
                .streams
                .as_ref()
                .filter(|s| !s.near_depth.is_empty() && !s.near_gap.bytes.is_empty())
                .map(|s| (Alias::new(&s.near_depth), SizeSampler::new(&s.near_gap))),
            alignment: thread.alignment,
            stays: ready_stays(&thread.chain),
            runs: ready_runs(&thread.chain),
            steer: ready_steer(&thread.chain),
            spans: model.volumes.iter().map(|v| v.span_bytes.max(1)).collect(),
            trained: (thread.weight * model.requests as f64).round() as u64,
        }
    }

    /// How far into its trained requests the thread's `index`-th request lies, in parts of
    /// [`PROFILE_SEGMENTS`] (the profiles' unit; past them from the trained length on).
    #[inline]
    pub fn part_at(&self, index: u64) -> f64 {
        index as f64 * PROFILE_SEGMENTS as f64 / self.trained.max(1) as f64
    }

    /// The chain the states of `path` lead into.
    #[inline]
    pub fn chain_at(&self, path: &[usize]) -> &ChainRt {
        let mut c = &self.root;
        for &s in path {
            c = c.children[s].as_ref().expect("the path follows children");
        }
        c
    }

    /// The stats a request into `volume` takes when its edge has none of its own.
    #[inline]
    pub fn fallback(&self, volume: u32) -> &Ready {
        self.volumes[volume as usize].as_ref().unwrap_or(&self.defaults)
    }
}
