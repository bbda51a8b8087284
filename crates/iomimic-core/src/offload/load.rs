//! Load as the off-loading policy sees it: requests per second over the last moments, kept by
//! a meter on the base volume (by the client) and on each store (carried back on its replies).

use std::sync::Mutex;
use std::time::Instant;

/// The meter's window: short enough to see a peak start, long enough to smooth single bursts.
pub const WINDOW_NS: u64 = 100_000_000;

/// Requests per second over the current and the previous window.
#[derive(Debug)]
pub struct RateMeter {
    start: Instant,
    /// (window index, requests in it, requests in the window before)
    state: Mutex<(u64, u64, u64)>,
}

impl Default for RateMeter {
    fn default() -> Self {
        Self::new()
    }
}

impl RateMeter {
    pub fn new() -> RateMeter {
        RateMeter {
            start: Instant::now(),
            state: Mutex::new((0, 0, 0)),
        }
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Counts `n` requests now.
    pub fn record(&self, n: u64) {
        self.record_at(self.now_ns(), n);
    }

    /// Counts `n` requests at `now_ns` (from the meter's start), for callers with their own clock.
    pub fn record_at(&self, now_ns: u64, n: u64) {
        let mut s = self.state.lock().expect("meter lock");
        Self::roll(&mut s, now_ns);
        s.1 += n;
    }

    fn roll(s: &mut (u64, u64, u64), now_ns: u64) {
        let w = now_ns / WINDOW_NS;
        if w != s.0 {
            s.2 = if w == s.0 + 1 { s.1 } else { 0 };
            s.1 = 0;
            s.0 = w;
        }
    }

    /// Requests per second now.
    pub fn rate(&self) -> f64 {
        self.rate_at(self.now_ns())
    }

    pub fn rate_at(&self, now_ns: u64) -> f64 {
        let mut s = self.state.lock().expect("meter lock");
        Self::roll(&mut s, now_ns);
        let into = (now_ns % WINDOW_NS) as f64;
        (s.1 + s.2) as f64 / ((WINDOW_NS as f64 + into) / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_covers_this_window_and_the_one_before() {
        let m = RateMeter::new();
        m.record_at(10_000_000, 50); // window 0
        m.record_at(150_000_000, 30); // window 1, 50 ms in
                                      // (50 + 30) requests over 150 ms = 533.3/s
        assert!((m.rate_at(150_000_000) - 80.0 / 0.15).abs() < 1e-6);
        // Two windows later, nothing recent is left.
        assert!(m.rate_at(350_000_000).abs() < f64::EPSILON);
    }
}
