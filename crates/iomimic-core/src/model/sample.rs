//! Drawing from a model's distributions with a seeded generator.

use rand_distr::{Distribution, Exp, Gamma, LogNormal, Normal, Poisson};

pub use crate::random::Prng;

use super::{Bucket, Dist, Sizes};

/// The index whose share of `[0, 1)` holds `u`, shares `p` (summing to 1) laid out in order:
/// a linear scan, for short lists.
#[inline]
pub fn pick_at(p: impl IntoIterator<Item = f64>, mut u: f64) -> usize {
    let mut last = 0;
    for (i, q) in p.into_iter().enumerate() {
        if u < q {
            return i;
        }
        u -= q;
        last = i;
    }
    last
}

/// A count in `[from, to)` (from ≥ 1), drawn log-uniformly.
#[inline]
pub fn log_uniform(from: u64, to: u64, rng: &mut Prng) -> u64 {
    let (lo, hi) = ((from as f64).ln(), (to as f64).ln());
    ((lo + (hi - lo) * rng.f64()).exp() as u64).clamp(from, to - 1)
}

/// About the mean of [`log_uniform`]'s counts: the continuous law's, `(to − from) / ln(to /
/// from)` (the floor takes under one off it).
pub fn log_uniform_mean(from: u64, to: u64) -> f64 {
    let (a, b) = (from as f64, to as f64);
    if to <= from + 1 {
        a
    } else {
        (b - a) / (b / a).ln()
    }
}

/// 2^64, a fraction's scale in [`Alias`].
const TWO_64: f64 = 18_446_744_073_709_551_616.0;

/// An index drawn by probabilities in O(1) with no data-dependent branch (Walker's alias
/// method, Vose's construction): the lists drawn from on every request (edges, ops, sizes)
/// would otherwise cost a scan and a mispredicted exit each.
pub struct Alias {
    /// Column i keeps itself when the draw's fraction (64 bits) is below `cut[i]`, else it
    /// gives `alias[i]` (a column kept whole is its own alias).
    cut: Vec<u64>,
    alias: Vec<u32>,
}

impl Alias {
    /// From probabilities (normalised here; all zero puts everything on the last index, as
    /// [`pick_at`] does). An empty list gives an empty table, which must not be drawn from.
    pub fn new(p: &[f64]) -> Self {
        let n = p.len();
        let sum: f64 = p.iter().sum();
        let mut scaled: Vec<f64> = if sum > 0.0 {
            p.iter().map(|&q| q * n as f64 / sum).collect()
        } else {
            (0..n).map(|i| if i + 1 == n { n as f64 } else { 0.0 }).collect()
        };
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| scaled[i] < 1.0);
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            alias[s] = l as u32;
            scaled[l] -= 1.0 - scaled[s];
            if scaled[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // what is left is 1 up to rounding
        for i in small.into_iter().chain(large) {
            scaled[i] = 1.0;
            alias[i] = i as u32;
        }
        // the fraction in 64 bits (a cut of 1 saturates; those columns are their own alias)
        let cut = scaled.iter().map(|&c| (c * TWO_64) as u64).collect();
        Self { cut, alias }
    }

    /// The column is the high half of a 64 × 64-bit product of one random word and the
    /// column count, the fraction its low half: integer work only (the float conversions of
    /// a draw by `f64` were a tenth of generation's time in a profile).
    #[inline]
    pub fn draw(&self, rng: &mut Prng) -> usize {
        let wide = u128::from(rng.u64()) * self.cut.len() as u128;
        let (i, fraction) = ((wide >> 64) as usize, wide as u64);
        // both sides loaded first, so the choice compiles to a select, not a branch
        let (keep, other) = (fraction < self.cut[i], self.alias[i] as usize);
        if keep {
            i
        } else {
            other
        }
    }
}

/// A distribution made ready to draw from.
pub enum Sampler {
    Fixed(f64),
    Normal(Normal<f64>),
    Exponential(Exp<f64>),
    Poisson(Poisson<f64>),
    Gamma(Gamma<f64>),
    Lognormal(LogNormal<f64>),
    Empirical(Vec<f64>),
}

impl Sampler {
    pub fn new(d: &Dist) -> Sampler {
        // Parameters were validated on load; a degenerate one falls back to its mean.
        let fixed = Sampler::Fixed(d.mean_ns());
        match d {
            Dist::Fixed { value_ns } => Sampler::Fixed(*value_ns),
            Dist::Normal { mean_ns, sd_ns } => Normal::new(*mean_ns, *sd_ns).map_or(fixed, Sampler::Normal),
            Dist::Exponential { mean_ns } => Exp::new(1.0 / mean_ns).map_or(fixed, Sampler::Exponential),
            Dist::Poisson { lambda_ns } => Poisson::new(*lambda_ns).map_or(fixed, Sampler::Poisson),
            Dist::Gamma { shape, scale_ns } => Gamma::new(*shape, *scale_ns).map_or(fixed, Sampler::Gamma),
            Dist::Lognormal { mu, sigma } => LogNormal::new(*mu, *sigma).map_or(fixed, Sampler::Lognormal),
            Dist::Empirical { quantiles_ns } => Sampler::Empirical(quantiles_ns.clone()),
        }
    }

    /// A non-negative draw, in ns.
    #[inline]
    pub fn draw(&self, rng: &mut Prng) -> f64 {
        let x = match self {
            Sampler::Fixed(v) => *v,
            Sampler::Normal(d) => d.sample(rng.inner()),
            Sampler::Exponential(d) => d.sample(rng.inner()),
            Sampler::Poisson(d) => d.sample(rng.inner()),
            Sampler::Gamma(d) => d.sample(rng.inner()),
            Sampler::Lognormal(d) => d.sample(rng.inner()),
            Sampler::Empirical(q) => {
                if q.len() == 1 {
                    q[0]
                } else {
                    let pos = rng.f64() * (q.len() - 1) as f64;
                    let i = pos as usize;
                    q[i] + (q[i + 1] - q[i]) * (pos - i as f64)
                }
            }
        };
        x.max(0.0)
    }
}

/// Sizes ready to draw from.
pub struct SizeSampler {
    bytes: Vec<u32>,
    pick: Alias,
}

impl SizeSampler {
    pub fn new(s: &Sizes) -> Self {
        Self {
            bytes: s.bytes.clone(),
            pick: Alias::new(&s.p),
        }
    }

    #[inline]
    pub fn draw(&self, rng: &mut Prng) -> u32 {
        self.bytes[self.pick.draw(rng)]
    }
}

/// Counts (reuse depths, stays): a bucket by its probability, then log-uniform within it.
pub struct BucketSampler {
    buckets: Vec<(u64, u64)>,
    p: Vec<f64>,
}

impl BucketSampler {
    pub fn from_buckets(buckets: &[Bucket]) -> Self {
        Self {
            buckets: buckets.iter().map(|b| (b.from, b.to)).collect(),
            p: buckets.iter().map(|b| b.p).collect(),
        }
    }

    /// Whether there is no bucket to draw from.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// A count (≥ 1).
    #[inline]
    pub fn draw(&self, rng: &mut Prng) -> u64 {
        let u = rng.f64();
        self.draw_at(u, rng)
    }

    /// A count (≥ 1) from the bucket at `u` of `[0, 1)` (buckets laid out in order).
    #[inline]
    pub fn draw_at(&self, u: f64, rng: &mut Prng) -> u64 {
        let (from, to) = self.buckets[pick_at(self.p.iter().copied(), u)];
        log_uniform(from, to, rng)
    }
}

impl BucketSampler {
    /// A count drawn as [`Self::draw`] would, given that it is at most `max` (the law cut
    /// there, a bucket straddling `max` by its log-uniform share below it); `None` when no
    /// count that small is possible.
    pub fn draw_at_most(&self, max: u64, rng: &mut Prng) -> Option<u64> {
        let below = |&(from, to): &(u64, u64)| {
            if to <= max + 1 {
                1.0
            } else if from > max {
                0.0
            } else {
                ((max + 1) as f64 / from as f64).ln() / (to as f64 / from as f64).ln()
            }
        };
        // two passes and no allocation, as a model of many stacks cuts often; the buckets
        // (training's are in order) are not assumed sorted
        let weights = || self.buckets.iter().zip(&self.p).map(|(b, &p)| p * below(b));
        let total: f64 = weights().sum();
        if total <= 0.0 {
            return None;
        }
        let mut u = rng.f64() * total;
        let mut picked = None;
        for (i, w) in weights().enumerate() {
            if w > 0.0 {
                picked = Some(i);
                if u < w {
                    break;
                }
                u -= w;
            }
        }
        // (the last bucket of any weight takes what rounding leaves past the others)
        let (from, to) = self.buckets[picked?];
        Some(log_uniform(from, to.min(max + 1), rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_draw_follows_the_law_below_the_cut() {
        // [1, 2) half, [2, 8) a quarter, [8, 64) a quarter; cut at 3: of [2, 8) the log share
        // below 4 (ln 2 / ln 4 = a half) is kept, an eighth against [1, 2)'s half, so 1 comes
        // 4/5 of the time and 2-3 1/5
        let b = BucketSampler::from_buckets(&[
            Bucket {
                from: 1,
                to: 2,
                p: 0.5,
            },
            Bucket {
                from: 2,
                to: 8,
                p: 0.25,
            },
            Bucket {
                from: 8,
                to: 64,
                p: 0.25,
            },
        ]);
        let mut rng = Prng::new(7);
        let n = 60_000;
        let draws: Vec<u64> = (0..n)
            .map(|_| b.draw_at_most(3, &mut rng).expect("possible"))
            .collect();
        assert!(draws.iter().all(|&d| (1..=3).contains(&d)));
        let ones = draws.iter().filter(|&&d| d == 1).count() as f64 / f64::from(n);
        assert!((ones - 0.8).abs() < 0.01, "{ones}");
        // a cut below every bucket is impossible; one above all of them is no cut
        let high = BucketSampler::from_buckets(&[Bucket {
            from: 8,
            to: 64,
            p: 1.0,
        }]);
        assert_eq!(high.draw_at_most(7, &mut rng), None);
        assert!((0..1000).all(|_| (8..64).contains(&high.draw_at_most(1 << 20, &mut rng).expect("possible"))));
    }

    #[test]
    fn alias_draws_follow_the_probabilities() {
        let mut rng = Prng::new(3);
        let p = [0.5, 0.0, 0.125, 0.375];
        let a = Alias::new(&p);
        let mut counts = [0u32; 4];
        for _ in 0..400_000 {
            counts[a.draw(&mut rng)] += 1;
        }
        assert_eq!(counts[1], 0, "a zero-probability index is never drawn");
        for (c, q) in counts.iter().zip(p) {
            assert!((f64::from(*c) / 400_000.0 - q).abs() < 0.005, "{counts:?}");
        }
        // unnormalised and all-zero lists, as pick treats them
        let b = Alias::new(&[2.0, 6.0]);
        let ones = (0..100_000).filter(|_| b.draw(&mut rng) == 1).count();
        assert!((ones as f64 / 100_000.0 - 0.75).abs() < 0.01);
        let z = Alias::new(&[0.0, 0.0, 0.0]);
        assert!((0..100).all(|_| z.draw(&mut rng) == 2));
    }

    proptest::proptest! {
        /// The table holds the probabilities exactly (to rounding): each column's share of the
        /// draws, kept by its own cut and given by the others', is its probability.
        #[test]
        fn alias_tables_hold_the_probabilities(p in proptest::collection::vec(0.0f64..10.0, 1..40)) {
            let a = Alias::new(&p);
            let n = p.len() as f64;
            let sum: f64 = p.iter().sum();
            let mut share = vec![0.0f64; p.len()];
            for (i, (&cut, &other)) in a.cut.iter().zip(&a.alias).enumerate() {
                let keep = cut as f64 / TWO_64;
                share[i] += keep / n;
                share[other as usize] += (1.0 - keep) / n;
            }
            for (i, (&s, &q)) in share.iter().zip(&p).enumerate() {
                let want = if sum > 0.0 { q / sum } else if i + 1 == p.len() { 1.0 } else { 0.0 };
                proptest::prop_assert!((s - want).abs() < 1e-9, "{i}: {s} vs {want}");
            }
        }
    }
}
