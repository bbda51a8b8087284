//! The rate profile (step 1 of the training algorithm, [`super`]): requests per fluctuation
//! window, and each request's model time, in which gaps are gaps at the mean rate so that
//! generation can warp them back onto the profile.

use super::normalise;
use crate::analyze;
use crate::model::RateProfile;
use crate::trace::TraceView;

/// A trace's requests counted by fluctuation window.
pub(super) struct Windows {
    pub window_ns: u64,
    pub counts: Vec<u64>,
}

impl Windows {
    /// The trace's windows (it has at least two requests).
    pub fn of(t: &TraceView<'_>) -> Self {
        let span = t.ts_ns[t.len() - 1] - t.ts_ns[0];
        let window_ns = analyze::window_for(span, None).unwrap_or(span.max(1));
        let mut counts = vec![0u64; (span / window_ns) as usize + 1];
        for &ts in t.ts_ns {
            counts[((ts - t.ts_ns[0]) / window_ns) as usize] += 1;
        }
        Self { window_ns, counts }
    }

    /// Model time of every request: span × cumulative share at its issue time.
    pub fn model_times(&self, t: &TraceView<'_>) -> Vec<f64> {
        let (window_ns, counts) = (self.window_ns, &self.counts);
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

    /// The share of the requests `rows` (one thread's) in each window.
    pub fn activity(&self, t: &TraceView<'_>, rows: &[usize]) -> Vec<f64> {
        let mut own = vec![0u64; self.counts.len()];
        for &i in rows {
            own[((t.ts_ns[i] - t.ts_ns[0]) / self.window_ns) as usize] += 1;
        }
        normalise(&own)
    }

    /// The workload's rate profile: the share of all requests in each window.
    pub fn profile(&self) -> RateProfile {
        RateProfile {
            window_ns: self.window_ns,
            shares: normalise(&self.counts),
            arrivals: None,
        }
    }
}
