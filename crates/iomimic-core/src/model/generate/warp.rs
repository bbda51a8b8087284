//! The time warp: model time onto the output clock, following the rate profile (or one
//! thread's activity) window by window.

use crate::model::Model;

/// Maps model time onto the rate profile: within each cycle of the model's duration, the
/// cumulative share of requests is followed window by window.
pub(super) struct Warp {
    duration: f64,
    window: f64,
    cumulative: Vec<f64>,
}

impl Warp {
    /// Onto `shares` (the workload's profile, or one thread's activity) over the rate windows.
    pub fn new(model: &Model, shares: &[f64]) -> Self {
        let mut cumulative = vec![0.0];
        for s in shares {
            cumulative.push(cumulative.last().expect("non-empty") + s);
        }
        Self {
            duration: model.duration_ns as f64,
            window: model.rate.window_ns as f64,
            cumulative,
        }
    }

    #[inline]
    pub fn apply(&self, u: f64) -> f64 {
        let x = u / self.duration;
        let cycle = x.floor();
        let f = x - cycle;
        let w = self
            .cumulative
            .partition_point(|&c| c <= f)
            .clamp(1, self.cumulative.len() - 1)
            - 1;
        let share = self.cumulative[w + 1] - self.cumulative[w];
        let within = if share > 0.0 {
            (f - self.cumulative[w]) / share
        } else {
            0.0
        };
        let last = self.cumulative.len() - 2;
        let length = if w == last {
            (self.duration - w as f64 * self.window).max(0.0)
        } else {
            self.window
        };
        cycle * self.duration + w as f64 * self.window + within * length
    }
}
