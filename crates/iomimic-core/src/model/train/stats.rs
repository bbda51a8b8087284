//! What the requests over one edge (or all of a thread's, or a volume's) looked like, and the
//! [`Stats`] fitted to it: shares of ops, placements and sizes, for reads and writes apart
//! when both were seen often enough, and (for a thread's own stats) the model-time gap.

use rustc_hash::FxHashMap;

use super::placement::Kind;
use super::sizes::sizes;
use crate::analyze::distfit;
use crate::model::{Dist, OpStats, Sizes, Stats};
use crate::trace::Op;

/// Fewest requests an edge needs to carry stats of its own.
pub const MIN_STATS: u64 = 16;
/// Fewest requests of each op for reads and writes to be kept apart.
pub const MIN_BY_OP: u64 = 16;
pub const PARAMETRIC_KS: f64 = 0.05;
/// Fewest gaps a parametric fit is tried on; fewer are kept as empirical quantiles.
pub const MIN_PARAMETRIC: usize = 256;
/// Gaps a distribution fit is judged on (KS resolution about 1/√2000 ≈ 0.02).
pub const EDGE_KS_SAMPLE: usize = 2000;
pub const ZERO_GAP_LIMIT: f64 = 0.05;
pub const QUANTILES: usize = 65;
/// An edge keeps stats of its own only where they differ from what it would fall back to by
/// more than this: a share of an op or placement, or the L1/2 distance of the sizes.
pub const DIFFERENT: f64 = 0.05;

/// What one op's requests over an edge looked like.
#[derive(Default, Clone)]
struct OpAcc {
    count: u64,
    /// sequential, continuation, near, reuse
    kinds: [u64; 4],
    /// Sizes of requests placed other than by re-use (a re-use repeats its earlier size).
    sizes: FxHashMap<u32, u64>,
    /// Sizes of all of them, for an op with only re-uses.
    all_sizes: FxHashMap<u32, u64>,
}

impl OpAcc {
    #[inline]
    fn add(&mut self, size: u32, kind: Kind) {
        self.count += 1;
        match kind {
            Kind::Sequential => self.kinds[0] += 1,
            Kind::Continuation => self.kinds[1] += 1,
            Kind::Near => self.kinds[2] += 1,
            Kind::Reuse => self.kinds[3] += 1,
            Kind::New => {}
        }
        if size == 0 {
            // a flush moves no bytes: it has no size to model (a model's sizes are at least 1)
            return;
        }
        if kind != Kind::Reuse {
            *self.sizes.entry(size).or_default() += 1;
        }
        *self.all_sizes.entry(size).or_default() += 1;
    }

    fn merge(&mut self, other: &OpAcc) {
        self.count += other.count;
        for k in 0..4 {
            self.kinds[k] += other.kinds[k];
        }
        for (&s, &c) in &other.sizes {
            *self.sizes.entry(s).or_default() += c;
        }
        for (&s, &c) in &other.all_sizes {
            *self.all_sizes.entry(s).or_default() += c;
        }
    }

    fn finish(&self) -> OpStats {
        let n = self.count.max(1) as f64;
        OpStats {
            sequential: self.kinds[0] as f64 / n,
            continuation: self.kinds[1] as f64 / n,
            near: self.kinds[2] as f64 / n,
            reuse: self.kinds[3] as f64 / n,
            sizes: sizes(if self.sizes.is_empty() {
                &self.all_sizes
            } else {
                &self.sizes
            }),
        }
    }
}

/// What one edge (or thread, or volume) saw.
#[derive(Default)]
pub(super) struct StatsAcc {
    pub count: u64,
    ops: [u64; 4],
    /// reads; writes; trims (flushes carry no address or size: counted in `ops` alone)
    by_op: [OpAcc; 3],
    /// Model-time gaps, kept only where a gap distribution is fitted (a thread's own stats).
    pub gaps: Option<Vec<f64>>,
}

impl StatsAcc {
    /// An accumulator that also keeps the gaps.
    pub fn with_gaps() -> Self {
        Self {
            gaps: Some(Vec::new()),
            ..Self::default()
        }
    }

    #[inline]
    pub fn add(&mut self, op: u8, size: u32, kind: Kind, gap: Option<f64>) {
        self.count += 1;
        self.ops[usize::from(op.min(3))] += 1;
        if op < Op::Flush as u8 {
            self.by_op[usize::from(op)].add(size, kind);
        }
        if let (Some(gaps), Some(g)) = (&mut self.gaps, gap) {
            gaps.push(g);
        }
    }

    /// Adds what `other` counted (its gaps are not kept).
    pub fn merge(&mut self, other: &StatsAcc) {
        self.count += other.count;
        for (a, b) in self.ops.iter_mut().zip(&other.ops) {
            *a += b;
        }
        for (a, b) in self.by_op.iter_mut().zip(&other.by_op) {
            a.merge(b);
        }
    }

    /// The stats; `gap` is the thread's gap distribution where one is kept.
    pub fn finish(&self, gap: Option<Dist>) -> Stats {
        let n = self.count.max(1) as f64;
        let mut both = self.by_op[0].clone();
        both.merge(&self.by_op[1]);
        both.merge(&self.by_op[2]);
        let all = both.finish();
        // reads and writes apart when both were seen often enough; then trims too, if they were
        // (else they are placed and sized as writes)
        let [reads, writes, trims] = &self.by_op;
        let apart = reads.count >= MIN_BY_OP && writes.count >= MIN_BY_OP;
        let kept = if trims.count >= MIN_BY_OP { 3 } else { 2 };
        Stats {
            n: self.count,
            ops: self.ops.map(|c| c as f64 / n),
            sequential: all.sequential,
            reuse: all.reuse,
            continuation: all.continuation,
            near: all.near,
            sizes: all.sizes,
            interarrival: gap,
            by_op: if apart {
                self.by_op[..kept].iter().map(OpAcc::finish).collect()
            } else {
                Vec::new()
            },
        }
    }
}

/// Whether an edge's stats say something its fallback does not: an op share, a placement
/// share (of either op) or the sizes differ by more than [`DIFFERENT`].
pub(super) fn differs(edge: &Stats, fallback: &Stats) -> bool {
    let far = |a: f64, b: f64| (a - b).abs() > DIFFERENT;
    let placement = |s: &Stats, op: usize| -> [f64; 4] {
        s.by_op
            .get(op)
            .map_or([s.sequential, s.continuation, s.near, s.reuse], |o| {
                [o.sequential, o.continuation, o.near, o.reuse]
            })
    };
    let sizes_of = |s: &Stats, op: usize| -> Sizes {
        s.by_op
            .get(op)
            .map_or_else(|| s.sizes.clone(), |o| o.sizes.clone())
    };
    edge.ops.iter().zip(&fallback.ops).any(|(&a, &b)| far(a, b))
        || (0..3).any(|op| {
            let (a, b) = (placement(edge, op), placement(fallback, op));
            a.iter().zip(&b).any(|(&x, &y)| far(x, y))
                || sizes_l1_half(&sizes_of(edge, op), &sizes_of(fallback, op)) > DIFFERENT
        })
}

fn sizes_l1_half(a: &Sizes, b: &Sizes) -> f64 {
    let mut both: FxHashMap<u32, (f64, f64)> = FxHashMap::default();
    for (&s, &p) in a.bytes.iter().zip(&a.p) {
        both.entry(s).or_default().0 += p;
    }
    for (&s, &p) in b.bytes.iter().zip(&b.p) {
        both.entry(s).or_default().1 += p;
    }
    both.values().map(|(x, y)| (x - y).abs()).sum::<f64>() / 2.0
}

/// The best parametric fit when it is good, else empirical quantiles.
pub(super) fn gap_dist(gaps: &[f64]) -> Dist {
    let zeros = gaps.iter().filter(|&&g| g == 0.0).count() as f64 / gaps.len() as f64;
    // a parametric family is worth testing only with enough gaps to tell them apart
    if zeros < ZERO_GAP_LIMIT && gaps.len() >= MIN_PARAMETRIC {
        if let Some(dist) = parametric(gaps) {
            return dist;
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

/// The best-fitting of the six families, when its KS distance is at most [`PARAMETRIC_KS`].
fn parametric(gaps: &[f64]) -> Option<Dist> {
    let positive: Vec<f64> = gaps.iter().copied().filter(|&g| g > 0.0).collect();
    let fit = distfit::fit_with_sample(&positive, EDGE_KS_SAMPLE)?;
    let best = &fit.candidates[0];
    let p = |name: &str| best.params.iter().find(|(k, _)| *k == name).map_or(0.0, |x| x.1);
    (best.ks <= PARAMETRIC_KS).then(|| match best.name {
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
    })
}
