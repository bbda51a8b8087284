//! Fitting inter-arrival times: fixed, normal, exponential, Poisson, gamma and lognormal, each
//! by maximum likelihood (or its closed form), ranked by Kolmogorov–Smirnov distance.
//!
//! ## Algorithm
//! Parameters from the whole sample: fixed = mean; normal = mean and standard deviation;
//! exponential rate = 1/mean; Poisson λ = mean (values in whole units); lognormal = mean and
//! standard deviation of ln x; gamma shape from Minka's closed-form start refined by Newton
//! steps on the likelihood equation, scale = mean/shape. The KS distance `sup |F_n − F|` is
//! taken on an evenly strided subsample of at most [`KS_SAMPLE`] values, handling ties and the
//! jumps of discrete distributions exactly (the empirical and fitted CDFs are compared on both
//! sides of every sample value).
//!
//! ## Complexity
//! O(n) for the parameters, O(m log m) for the KS distance with m ≤ [`KS_SAMPLE`].
//!
//! ## References
//! Minka, "Estimating a Gamma distribution" (2002); Numerical Recipes §6.2 for the incomplete
//! gamma function. Written here rather than taken from a statistics crate: the fits run per
//! volume and per stream inside characterization's 5 M requests/s budget, and need only these
//! few functions.

use serde::Serialize;

/// Most values the KS distance is computed on.
pub const KS_SAMPLE: usize = 20_000;
/// Above this λ the Poisson CDF is taken from its normal approximation.
pub const POISSON_NORMAL_ABOVE: f64 = 1000.0;

/// A fitted candidate: its name, parameters and KS distance to the data.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub name: &'static str,
    pub params: Vec<(&'static str, f64)>,
    pub ks: f64,
}

/// Every candidate, best (smallest KS distance) first.
#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    pub best: &'static str,
    pub criterion: &'static str,
    pub sample_size: usize,
    pub candidates: Vec<Candidate>,
}

#[derive(Debug, Clone, Copy)]
enum Dist {
    Fixed(f64),
    Normal { mu: f64, sigma: f64 },
    Exponential { mean: f64 },
    Poisson { lambda: f64 },
    Gamma { shape: f64, scale: f64 },
    Lognormal { mu: f64, sigma: f64 },
}

impl Dist {
    fn cdf(self, x: f64) -> f64 {
        match self {
            Dist::Fixed(c) => f64::from(u8::from(x >= c)),
            Dist::Normal { mu, sigma } => normal_cdf((x - mu) / sigma),
            Dist::Exponential { mean } => {
                if x <= 0.0 {
                    0.0
                } else {
                    -(-x / mean).exp_m1()
                }
            }
            Dist::Poisson { lambda } => {
                if x < 0.0 {
                    0.0
                } else if lambda > POISSON_NORMAL_ABOVE {
                    // continuity-corrected normal: exact to well under the KS resolution here,
                    // and the exact form costs hundreds of iterations per point at such λ
                    normal_cdf((x.floor() + 0.5 - lambda) / lambda.sqrt())
                } else {
                    // P(X <= k) = Q(k + 1, λ)
                    1.0 - gamma_p(x.floor() + 1.0, lambda)
                }
            }
            Dist::Gamma { shape, scale } => {
                if x <= 0.0 {
                    0.0
                } else {
                    gamma_p(shape, x / scale)
                }
            }
            Dist::Lognormal { mu, sigma } => {
                if x <= 0.0 {
                    0.0
                } else {
                    normal_cdf((x.ln() - mu) / sigma)
                }
            }
        }
    }

    /// `lim F(y)` as y rises to x: differs from `cdf` only where F jumps.
    fn cdf_left(self, x: f64) -> f64 {
        match self {
            Dist::Fixed(c) => f64::from(u8::from(x > c)),
            Dist::Poisson { .. } => {
                let k = x.ceil() - 1.0;
                if k < 0.0 {
                    0.0
                } else {
                    self.cdf(k)
                }
            }
            _ => self.cdf(x),
        }
    }

    fn describe(self) -> (&'static str, Vec<(&'static str, f64)>) {
        match self {
            Dist::Fixed(c) => ("fixed", vec![("value", c)]),
            Dist::Normal { mu, sigma } => ("normal", vec![("mean", mu), ("sd", sigma)]),
            Dist::Exponential { mean } => ("exponential", vec![("mean", mean)]),
            Dist::Poisson { lambda } => ("poisson", vec![("lambda", lambda)]),
            Dist::Gamma { shape, scale } => ("gamma", vec![("shape", shape), ("scale", scale)]),
            Dist::Lognormal { mu, sigma } => ("lognormal", vec![("mu", mu), ("sigma", sigma)]),
        }
    }
}

/// Fits the six candidates to `values` (all > 0; the caller drops zero gaps). `None` when
/// there are fewer than two values.
pub fn fit(values: &[f64]) -> Option<Fit> {
    fit_with_sample(values, KS_SAMPLE)
}

/// As [`fit`], with the KS distance taken on at most `ks_sample` values (model training fits
/// thousands of edges and needs less resolution than a report).
pub fn fit_with_sample(values: &[f64], ks_sample: usize) -> Option<Fit> {
    fit_by(values.len(), |i| values[i], ks_sample)
}

/// As [`fit_with_sample`], on the `n` values `value(0..n)`: a caller holding its values in
/// another form (gaps in integer ns) fits them without a copy as large as the trace.
pub fn fit_by(n: usize, value: impl Fn(usize) -> f64, ks_sample: usize) -> Option<Fit> {
    if n < 2 {
        return None;
    }
    let values = || (0..n).map(&value);
    let nf = n as f64;
    let mean = values().sum::<f64>() / nf;
    let var = values().map(|v| (v - mean).powi(2)).sum::<f64>() / nf;
    // logs taken twice rather than kept: the same values in the same order, no copy
    let log_mean = values().map(f64::ln).sum::<f64>() / nf;
    let log_var = values().map(|v| (v.ln() - log_mean).powi(2)).sum::<f64>() / nf;
    let stride = n.div_ceil(ks_sample.max(2));
    let mut sample: Vec<f64> = (0..n).step_by(stride).map(&value).collect();
    sample.sort_by(f64::total_cmp);
    let moments = Moments {
        mean,
        var,
        log_mean,
        log_var,
    };
    Some(ranked(moments, "ks", sample.len(), |d| ks_distance(&sample, d)))
}

/// The moments the candidates' parameters come from (of values > 0).
#[derive(Debug, Clone, Copy)]
pub struct Moments {
    pub mean: f64,
    /// Population variance.
    pub var: f64,
    /// Mean and population variance of ln x.
    pub log_mean: f64,
    pub log_var: f64,
}

/// The candidates fitted to `moments`, ranked by their KS distance to `n` values given as
/// ascending bins `(lowest, highest, count)`, such as a histogram's: the distance is taken at
/// each bin's edges (values inside a bin are not told apart, so it is that of the values
/// rounded to their bins). `None` when there are fewer than two values.
pub fn fit_binned(moments: Moments, n: u64, bins: &[(f64, f64, u64)]) -> Option<Fit> {
    if n < 2 {
        return None;
    }
    Some(ranked(moments, "ks-binned", n as usize, |d| {
        ks_binned(bins, n, d)
    }))
}

/// Every candidate the moments give, best (smallest `ks`) first.
fn ranked(m: Moments, criterion: &'static str, sample_size: usize, ks: impl Fn(Dist) -> f64) -> Fit {
    let Moments {
        mean,
        var,
        log_mean,
        log_var,
    } = m;
    let mut dists = vec![
        Dist::Fixed(mean),
        Dist::Exponential { mean },
        Dist::Poisson { lambda: mean },
    ];
    if var > 0.0 {
        dists.push(Dist::Normal {
            mu: mean,
            sigma: var.sqrt(),
        });
        dists.push(Dist::Lognormal {
            mu: log_mean,
            sigma: log_var.sqrt().max(f64::MIN_POSITIVE),
        });
        if let Some(shape) = gamma_shape(mean.ln() - log_mean) {
            dists.push(Dist::Gamma {
                shape,
                scale: mean / shape,
            });
        }
    }
    let mut candidates: Vec<Candidate> = dists
        .into_iter()
        .map(|d| {
            let (name, params) = d.describe();
            Candidate {
                name,
                params,
                ks: ks(d),
            }
        })
        .collect();
    candidates.sort_by(|a, b| a.ks.total_cmp(&b.ks));
    Fit {
        best: candidates[0].name,
        criterion,
        sample_size,
        candidates,
    }
}

/// KS distance between `n` values in ascending bins and `d`, compared on both edges of each.
fn ks_binned(bins: &[(f64, f64, u64)], n: u64, d: Dist) -> f64 {
    let m = n as f64;
    let (mut worst, mut below) = (0.0f64, 0u64);
    for &(lo, hi, count) in bins {
        let upto = below + count;
        worst = worst
            .max((d.cdf_left(lo) - below as f64 / m).abs())
            .max((d.cdf(hi) - upto as f64 / m).abs());
        below = upto;
    }
    if let Dist::Fixed(c) = d {
        // its jump may fall between bins
        let under: u64 = bins.iter().filter(|b| b.1 < c).map(|b| b.2).sum();
        let upto: u64 = bins.iter().filter(|b| b.0 <= c).map(|b| b.2).sum();
        worst = worst.max(under as f64 / m).max(1.0 - upto as f64 / m);
    }
    worst
}

/// KS distance between the sorted sample and `d`, exact for ties and for jumps of `d`.
fn ks_distance(sorted: &[f64], d: Dist) -> f64 {
    let m = sorted.len() as f64;
    let mut worst: f64 = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let v = sorted[i];
        let below = i as f64 / m;
        let mut j = i;
        while j < sorted.len() && sorted[j] == v {
            j += 1;
        }
        let upto = j as f64 / m;
        worst = worst
            .max((d.cdf_left(v) - below).abs())
            .max((d.cdf(v) - upto).abs());
        i = j;
    }
    // A fixed distribution's single jump may fall between sample values.
    if let Dist::Fixed(c) = d {
        let below = sorted.partition_point(|&x| x < c) as f64 / m;
        let upto = sorted.partition_point(|&x| x <= c) as f64 / m;
        worst = worst.max(below).max(1.0 - upto);
    }
    worst
}

/// Gamma shape by maximum likelihood from s = ln(mean) − mean(ln x) > 0.
fn gamma_shape(s: f64) -> Option<f64> {
    if !(s > 0.0 && s.is_finite()) {
        return None;
    }
    let mut k = (3.0 - s + ((s - 3.0).powi(2) + 24.0 * s).sqrt()) / (12.0 * s);
    for _ in 0..4 {
        // Newton on f(k) = ln k − ψ(k) − s
        let f = k.ln() - digamma(k) - s;
        let df = 1.0 / k - trigamma(k);
        let next = k - f / df;
        if !(next > 0.0 && next.is_finite()) {
            break;
        }
        k = next;
    }
    Some(k)
}

fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
}

fn digamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    acc + x.ln() - 0.5 * inv - inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 / 252.0))
}

fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    acc + inv + 0.5 * inv2 + inv * inv2 * (1.0 / 6.0 - inv2 * (1.0 / 30.0 - inv2 / 42.0))
}

/// Regularized lower incomplete gamma P(a, x): series below a + 1, continued fraction above.
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let log_prefix = a * x.ln() - x - libm::lgamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        (sum * log_prefix.exp()).clamp(0.0, 1.0)
    } else {
        // Lentz's method for the continued fraction of Q(a, x)
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -f64::from(i) * (f64::from(i) - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-15 {
                break;
            }
        }
        (1.0 - log_prefix.exp() * h).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_functions_match_known_values() {
        assert!((gamma_p(1.0, 2.0) - (1.0 - (-2.0f64).exp())).abs() < 1e-12);
        assert!((gamma_p(3.0, 2.5) - 0.456_186_884_076_7).abs() < 1e-9);
        assert!((gamma_p(50.0, 60.0) - 0.915_593_318_906_282).abs() < 1e-9);
        assert!((normal_cdf(1.959_963_985) - 0.975).abs() < 1e-9);
        assert!((digamma(1.0) + 0.577_215_664_901_532_9).abs() < 1e-10);
        assert!((trigamma(1.0) - std::f64::consts::PI.powi(2) / 6.0).abs() < 1e-10);
    }

    fn lcg(n: usize) -> impl Iterator<Item = f64> {
        let mut state = 42u64;
        (0..n).map(move |_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        })
    }

    #[test]
    fn exponential_data_is_best_fit_by_exponential() {
        let data: Vec<f64> = lcg(50_000).map(|u| -200.0 * u.ln()).collect();
        let f = fit(&data).unwrap();
        assert!(matches!(f.best, "exponential" | "gamma"), "{f:?}");
        let expo = f.candidates.iter().find(|c| c.name == "exponential").unwrap();
        assert!(expo.ks < 0.01);
        assert!((expo.params[0].1 - 200.0).abs() < 4.0);
        let gamma = f.candidates.iter().find(|c| c.name == "gamma").unwrap();
        assert!((gamma.params[0].1 - 1.0).abs() < 0.03, "shape {gamma:?}");
    }

    #[test]
    fn constant_data_is_fixed_and_lognormal_data_lognormal() {
        let f = fit(&[5.0; 100]).unwrap();
        assert_eq!(f.best, "fixed");
        assert_eq!(f.candidates[0].ks, 0.0);
        // Box-Muller normals exponentiated
        let u: Vec<f64> = lcg(40_000).collect();
        let data: Vec<f64> = u
            .chunks(2)
            .map(|p| (2.0 + 0.5 * (-2.0 * p[0].ln()).sqrt() * (std::f64::consts::TAU * p[1]).cos()).exp())
            .collect();
        let f = fit(&data).unwrap();
        assert_eq!(f.best, "lognormal");
        let ln = &f.candidates[0];
        assert!((ln.params[0].1 - 2.0).abs() < 0.02 && (ln.params[1].1 - 0.5).abs() < 0.02);
    }

    #[test]
    fn ks_handles_ties_and_jumps() {
        // half the values at 1, half at 3: a fixed fit at the mean 2 is off by 1/2 on both sides
        let f = fit(&[1.0, 1.0, 3.0, 3.0]).unwrap();
        let fixed = f.candidates.iter().find(|c| c.name == "fixed").unwrap();
        assert!((fixed.ks - 0.5).abs() < 1e-12);
        assert!(fit(&[1.0]).is_none());
    }
}
