//! What the requests over one edge (or all of a thread's) looked like, and the [`Stats`] fitted
//! to it: shares of ops and placements, the commonest sizes and the model-time gap.

use rustc_hash::FxHashMap;

use super::placement::Kind;
use crate::analyze::distfit;
use crate::model::{Dist, Sizes, Stats};

pub const MAX_SIZES: usize = 32;
pub const MIN_STATS: u64 = 8;
pub const PARAMETRIC_KS: f64 = 0.05;
/// Fewest gaps a parametric fit is tried on; fewer are kept as empirical quantiles.
pub const MIN_PARAMETRIC: usize = 256;
/// Gaps an edge's distribution fit is judged on (KS resolution about 1/√2000 ≈ 0.02).
pub const EDGE_KS_SAMPLE: usize = 2000;
pub const ZERO_GAP_LIMIT: f64 = 0.05;
pub const QUANTILES: usize = 65;

/// What one edge saw.
#[derive(Default)]
pub(super) struct StatsAcc {
    pub count: u64,
    ops: [u64; 4],
    sequential: u64,
    continuation: u64,
    near: u64,
    reuse: u64,
    sizes: FxHashMap<u32, u64>,
    pub gaps: Vec<f64>,
}

impl StatsAcc {
    #[inline]
    pub fn add(&mut self, op: u8, size: u32, kind: Kind, gap: Option<f64>) {
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

    /// The stats; an edge with too few gaps to fit takes `fallback_gap` (its thread's).
    pub fn finish(&self, fallback_gap: &Dist) -> Stats {
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

/// The [`MAX_SIZES`] commonest sizes with their shares, the rarest merged into the nearest kept.
pub(super) fn sizes(counts: &FxHashMap<u32, u64>) -> Sizes {
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
