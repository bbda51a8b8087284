//! Small statistics helpers: moments and exact percentiles.

use serde::Serialize;

/// Mean and coefficient of variation (population sd / mean) of `values`.
pub fn mean_cv(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let (n, sum) = values.clone().fold((0u64, 0.0), |(n, s), v| (n + 1, s + v));
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = sum / n as f64;
    let var = values.map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    (mean, if mean > 0.0 { var.sqrt() / mean } else { 0.0 })
}

/// Percentiles reported for times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// Exact percentiles (nearest rank) of `values`, scaled by `scale`; reorders `values`.
/// Successive selections each work on the upper part left by the previous one, so the cost
/// stays near one linear pass.
pub fn percentiles(values: &mut [u64], scale: f64) -> Option<Percentiles> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    // nearest rank: a positive quantile of a positive count
    #[allow(clippy::cast_sign_loss)]
    let ranks =
        [0.5, 0.9, 0.95, 0.99, 0.999, 1.0].map(|q: f64| ((q * n as f64).ceil() as usize).clamp(1, n) - 1);
    let mut out = [0.0; 6];
    let mut start = 0;
    for (slot, &rank) in out.iter_mut().zip(&ranks) {
        let (_, v, _) = values[start..].select_nth_unstable(rank - start);
        *slot = *v as f64 * scale;
        start = rank;
    }
    Some(Percentiles {
        p50: out[0],
        p90: out[1],
        p95: out[2],
        p99: out[3],
        p999: out[4],
        max: out[5],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u64> = (1..=1000).rev().collect();
        let p = percentiles(&mut v, 1.0).unwrap();
        assert_eq!(
            (p.p50, p.p90, p.p95, p.p99, p.p999, p.max),
            (500.0, 900.0, 950.0, 990.0, 999.0, 1000.0)
        );
        let (mean, cv) = mean_cv([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0].into_iter());
        assert_eq!((mean, cv), (5.0, 0.4));
    }
}
