//! Drawing from a model's distributions with a seeded generator.

use rand_core::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, Gamma, LogNormal, Normal, Poisson};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{Dist, Reuse, Sizes};

/// The seeded generator every random choice goes through (xoshiro256++: fast, and its output
/// does not change between library versions, so a seed always gives the same workload).
pub struct Prng(Xoshiro256PlusPlus);

impl Prng {
    pub fn new(seed: u64) -> Self {
        Self(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n), n > 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    pub fn inner(&mut self) -> &mut Xoshiro256PlusPlus {
        &mut self.0
    }
}

/// Index drawn from probabilities `p` (summing to 1) by a linear scan; lists are short.
#[inline]
pub fn pick(p: impl IntoIterator<Item = f64>, rng: &mut Prng) -> usize {
    let mut u = rng.f64();
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
    p: Vec<f64>,
}

impl SizeSampler {
    pub fn new(s: &Sizes) -> Self {
        Self {
            bytes: s.bytes.clone(),
            p: s.p.clone(),
        }
    }

    #[inline]
    pub fn draw(&self, rng: &mut Prng) -> u32 {
        self.bytes[pick(self.p.iter().copied(), rng)]
    }
}

/// Reuse times: a bucket by its probability, then log-uniform within it.
pub struct ReuseSampler {
    buckets: Vec<(u64, u64)>,
    p: Vec<f64>,
}

impl ReuseSampler {
    pub fn new(r: &Reuse) -> Self {
        Self {
            buckets: r.buckets.iter().map(|b| (b.from, b.to)).collect(),
            p: r.buckets.iter().map(|b| b.p).collect(),
        }
    }

    /// How many of the thread's requests back to re-use (≥ 1).
    #[inline]
    pub fn draw(&self, rng: &mut Prng) -> u64 {
        let (from, to) = self.buckets[pick(self.p.iter().copied(), rng)];
        let (lo, hi) = ((from as f64).ln(), (to as f64).ln());
        ((lo + (hi - lo) * rng.f64()).exp() as u64).clamp(from, to - 1)
    }
}
