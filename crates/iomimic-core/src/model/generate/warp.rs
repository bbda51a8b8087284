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

    /// The output time of `x` cycles of the profile (model time / the model's duration). Cycle k
    /// covers (k, k + 1]: a request at the very end of a cycle is the last of that cycle, in the
    /// last window with requests, never the first of the next (which would stretch the span of a
    /// thread whose activity starts late by a whole cycle).
    #[inline]
    pub fn apply(&self, x: f64) -> f64 {
        let x = x.max(0.0);
        let mut cycle = x.floor();
        let mut f = x - cycle;
        if f == 0.0 && cycle > 0.0 {
            cycle -= 1.0;
            f = 1.0;
        }
        // the window whose share takes the cumulative share to f (at 0: the first with any)
        let end = if f > 0.0 {
            self.cumulative.partition_point(|&c| c < f)
        } else {
            self.cumulative.partition_point(|&c| c <= 0.0)
        };
        let w = end.clamp(1, self.cumulative.len() - 1) - 1;
        let share = self.cumulative[w + 1] - self.cumulative[w];
        let within = if share > 0.0 {
            ((f - self.cumulative[w]) / share).clamp(0.0, 1.0)
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

    /// The cycles of the profile whose output time is `t`: the inverse of [`apply`](Self::apply)
    /// (in windows without requests, the share reached by their start). Slices of a long
    /// generation meet at one output time; this finds where each thread stands at it.
    pub fn invert(&self, t: f64) -> f64 {
        if self.duration <= 0.0 || self.window <= 0.0 {
            return 0.0;
        }
        let t = t.max(0.0);
        let cycle = (t / self.duration).floor();
        let inside = t - cycle * self.duration;
        let last = self.cumulative.len() - 2;
        let w = ((inside / self.window) as usize).min(last);
        let length = if w == last {
            (self.duration - w as f64 * self.window).max(0.0)
        } else {
            self.window
        };
        let through = if length > 0.0 {
            ((inside - w as f64 * self.window) / length).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let share = self.cumulative[w + 1] - self.cumulative[w];
        cycle + self.cumulative[w] + share * through
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warp(shares: &[f64]) -> Warp {
        let mut cumulative = vec![0.0];
        for s in shares {
            cumulative.push(cumulative.last().unwrap() + s);
        }
        Warp {
            duration: 100.0,
            window: 25.0,
            cumulative,
        }
    }

    #[test]
    fn a_late_thread_ends_in_its_last_window_not_the_next_cycle() {
        // active only in the third quarter
        let w = warp(&[0.0, 0.0, 1.0, 0.0]);
        assert_eq!(w.apply(1.0), 75.0);
        assert_eq!(w.apply(0.5), 62.5);
        assert_eq!(w.apply(0.0), 50.0);
        // the second cycle runs the same way, 100 later
        assert_eq!(w.apply(1.5), 162.5);
        assert_eq!(w.apply(2.0), 175.0);
    }

    #[test]
    fn invert_undoes_apply_where_there_are_requests() {
        let w = warp(&[0.1, 0.0, 0.6, 0.3]);
        for x in [0.05, 0.1, 0.3, 0.7, 0.95, 1.0, 1.2, 2.65] {
            assert!((w.invert(w.apply(x)) - x).abs() < 1e-9, "{x}");
        }
        // a time in the idle second window stands where the first window ended
        assert!((w.invert(40.0) - 0.1).abs() < 1e-12);
        assert!((w.invert(162.5) - 1.4).abs() < 1e-12);
    }

    #[test]
    fn an_even_profile_is_the_identity() {
        let w = warp(&[0.25; 4]);
        for u in [0.0, 10.0, 25.0, 99.0, 100.0, 130.0] {
            assert!((w.apply(u / 100.0) - u).abs() < 1e-9, "{u}");
        }
    }
}
