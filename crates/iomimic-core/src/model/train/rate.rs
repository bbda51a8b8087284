//! The rate profile (step 1 of the training algorithm, [`super`]): requests per fluctuation
//! window, and each request's model time, in which gaps are gaps at the mean rate so that
//! generation can warp them back onto the profile.

use super::normalise;
use crate::analyze;
use crate::model::{Arrivals, RateProfile};
use crate::trace::TraceView;

/// A trace's requests counted by fluctuation window.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Windows {
    pub window_ns: u64,
    pub counts: Vec<u64>,
    /// the first request's time and the span to the last
    start: u64,
    span: u64,
}

impl Windows {
    /// The windows of a trace whose requests span `[start, start + span]`, none counted yet.
    pub fn empty(start: u64, span: u64) -> Self {
        let window_ns = analyze::window_for(span, None).unwrap_or(span.max(1));
        Self {
            window_ns,
            counts: vec![0u64; (span / window_ns) as usize + 1],
            start,
            span,
        }
    }

    /// The trace's windows (it has at least two requests).
    pub fn of(t: &TraceView<'_>) -> Self {
        let mut w = Self::empty(t.ts_ns[0], t.ts_ns[t.len() - 1] - t.ts_ns[0]);
        for &ts in t.ts_ns {
            w.count(ts);
        }
        w
    }

    /// Counts a request issued at `ts`.
    #[inline]
    pub fn count(&mut self, ts: u64) {
        let w = self.index(ts);
        self.counts[w] += 1;
    }

    /// The window of a request issued at `ts`.
    #[inline]
    pub fn index(&self, ts: u64) -> usize {
        ((ts - self.start) / self.window_ns) as usize
    }

    /// The model time of each request once every request is counted.
    pub fn clock(&self) -> Clock {
        let mut before = Vec::with_capacity(self.counts.len());
        let mut acc = 0u64;
        for &c in &self.counts {
            before.push(acc);
            acc += c;
        }
        Clock {
            start: self.start,
            span: self.span.max(1) as f64,
            n: acc as f64,
            window_ns: self.window_ns,
            counts: self.counts.clone(),
            before,
        }
    }

    /// Model time of every request: span × cumulative share at its issue time.
    pub fn model_times(&self, t: &TraceView<'_>) -> Vec<f64> {
        let clock = self.clock();
        t.ts_ns.iter().map(|&ts| clock.time(ts)).collect()
    }

    /// The share of the requests `rows` (one thread's) in each window.
    pub fn activity(&self, t: &TraceView<'_>, rows: &[usize]) -> Vec<f64> {
        let mut own = vec![0u64; self.counts.len()];
        for &i in rows {
            own[self.index(t.ts_ns[i])] += 1;
        }
        normalise(&own)
    }

    /// The workload's rate profile: the share of all requests in each window, and how they
    /// arrive inside windows when that was learnt.
    pub fn profile(&self, arrivals: Option<Arrivals>) -> RateProfile {
        RateProfile {
            window_ns: self.window_ns,
            shares: normalise(&self.counts),
            arrivals,
        }
    }
}

/// Model times from the counted windows.
pub(super) struct Clock {
    start: u64,
    span: f64,
    n: f64,
    window_ns: u64,
    counts: Vec<u64>,
    /// requests in the windows before each
    before: Vec<u64>,
}

impl Clock {
    /// The model time of a request issued at `ts`: span × the cumulative share of requests
    /// then (linear within a window).
    #[inline]
    pub fn time(&self, ts: u64) -> f64 {
        let rel = ts - self.start;
        let w = ((rel / self.window_ns) as usize).min(self.counts.len() - 1);
        let frac = (rel - w as u64 * self.window_ns) as f64 / self.window_ns as f64;
        self.span * (self.before[w] as f64 + frac * self.counts[w] as f64) / self.n
    }
}
