//! The one shape every output gives a set of response times: how many, their mean, and the
//! percentiles fio and btt users read, all in microseconds (the key that holds it says so:
//! `latency_us`, `q2c_us`, ...). Characterization, simulation, real runs and trace reading all
//! use it, so a figure means the same wherever it appears (docs/json.md).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::stats;
use crate::trace::Op;

/// Count, mean and percentiles of response times, in µs (the percentiles' keys sit beside
/// `count` and `mean` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyUs {
    pub count: u64,
    pub mean: f64,
    #[serde(flatten)]
    pub p: stats::Percentiles,
}

impl LatencyUs {
    /// Exact (nearest-rank) figures of times in ns; reorders `values`. `None` when empty.
    pub fn from_ns(values: &mut [u64]) -> Option<Self> {
        let count = values.len() as u64;
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / count.max(1) as f64 / 1e3;
        Some(Self {
            count,
            mean,
            p: stats::percentiles(values, 1e-3)?,
        })
    }

    /// Figures of times in ns sketched piece by piece (the mean and max exact, the percentiles
    /// to the sketch's 0.1 %). `None` when empty.
    pub fn from_sketch(s: &stats::Sketch) -> Option<Self> {
        Some(Self {
            count: s.count,
            mean: s.mean_cv().0 / 1e3,
            p: s.percentiles(1e-3)?,
        })
    }

    /// Figures of an HDR histogram of times in ns (three significant digits, as fio's).
    pub fn from_histogram(h: &hdrhistogram::Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        Some(Self {
            count: h.len(),
            mean: h.mean() / 1e3,
            p: stats::Percentiles {
                p50: us(0.5),
                p90: us(0.9),
                p95: us(0.95),
                p99: us(0.99),
                p999: us(0.999),
                max: h.max() as f64 / 1e3,
            },
        })
    }
}

/// One operation's response times, as a `by_op` map holds them (keyed by operation name).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OpLatency {
    pub latency_us: LatencyUs,
}

/// Each operation's response times apart, from times in ns per operation (read, write, trim,
/// flush, as [`Op`] numbers them); operations with none are left out. Reorders the times.
pub fn by_op(per_op: &mut [Vec<u64>; 4]) -> BTreeMap<&'static str, OpLatency> {
    named(per_op.iter_mut().map(|times| LatencyUs::from_ns(times)))
}

/// [`by_op`] from each operation's sketch instead.
pub fn by_op_sketched(sketches: &[stats::Sketch; 4]) -> BTreeMap<&'static str, OpLatency> {
    named(sketches.iter().map(LatencyUs::from_sketch))
}

/// Read, write, trim and flush figures (in that order) by operation name, the missing left out.
fn named(figures: impl Iterator<Item = Option<LatencyUs>>) -> BTreeMap<&'static str, OpLatency> {
    [Op::Read, Op::Write, Op::Trim, Op::Flush]
        .into_iter()
        .zip(figures)
        .filter_map(|(op, latency)| Some((op.name(), OpLatency { latency_us: latency? })))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_figures_of_known_times() {
        let mut ns: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let l = LatencyUs::from_ns(&mut ns).unwrap();
        assert_eq!(
            (l.count, l.mean, l.p.p50, l.p.p99, l.p.max),
            (1000, 500.5, 500.0, 990.0, 1000.0)
        );
        assert!(LatencyUs::from_ns(&mut []).is_none());
    }

    #[test]
    fn histogram_figures_agree_within_its_precision() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for i in 1..=1000u64 {
            h.record(i * 1000).unwrap();
        }
        let l = LatencyUs::from_histogram(&h).unwrap();
        assert_eq!(l.count, 1000);
        assert!((l.p.p50 - 500.0).abs() < 1.0 && (l.p.max - 1000.0).abs() < 1.0);
    }
}
