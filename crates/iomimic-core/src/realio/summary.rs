//! What a run measured, in memory that does not grow with its length: latency HDR histograms
//! per operation (reads, writes, trims, flushes: fio reports reads and writes apart too), an
//! issue-lag histogram, and completed requests and bytes per time window.
//!
//! Each worker keeps its own [`Summary`] (no sharing on the I/O path); they are merged when the
//! run ends. Windows start at 1 ms and double (pairs merged) whenever there would be more than
//! [`MAX_WINDOWS`], so an hour-long run still keeps a few thousand counters.

use hdrhistogram::Histogram;

use crate::trace::Op;

/// Windows kept before they are merged pairwise.
pub const MAX_WINDOWS: usize = 4096;
const FIRST_WINDOW_NS: u64 = 1_000_000;
/// Three significant digits: values within 0.1 % (as fio's and wrk's percentiles are).
const DIGITS: u8 = 3;

/// Operations kept apart: the Trace's op codes (read, write, trim, flush).
pub const OPS: usize = 4;

#[derive(Debug, Clone)]
pub struct Summary {
    /// Completion minus issue, ns, per operation (indexed by op code).
    pub latency: [Histogram<u64>; OPS],
    /// Completed requests and bytes per operation.
    pub by_op: [(u64, u64); OPS],
    /// Issue minus scheduled time, ns (open loop only).
    pub lag: Histogram<u64>,
    pub completed: u64,
    pub bytes: u64,
    /// Requests issued during the warm-up: run, not counted anywhere else.
    pub warmup: u64,
    /// Requests that failed, by errno (255: no errno); they are counted in `completed` too.
    pub failed: std::collections::BTreeMap<u8, u64>,
    /// Width of each window, ns.
    pub window_ns: u64,
    /// (requests, bytes) issued in each window, from the start of the run.
    pub windows: Vec<(u64, u64)>,
    /// The issue lag of the workload's last request, when it ran on a schedule: drift shows
    /// here (a schedule that lost time and never made it up ends late).
    pub last_lag_ns: Option<u64>,
    /// Completed requests already added to the run's shared progress count, and when.
    reported: (u64, u64),
}

impl Default for Summary {
    fn default() -> Self {
        let histogram = || Histogram::new(DIGITS).expect("3 significant digits are allowed");
        Self {
            latency: std::array::from_fn(|_| histogram()),
            by_op: [(0, 0); OPS],
            lag: histogram(),
            completed: 0,
            bytes: 0,
            warmup: 0,
            failed: std::collections::BTreeMap::new(),
            window_ns: FIRST_WINDOW_NS,
            windows: Vec::new(),
            last_lag_ns: None,
            reported: (0, 0),
        }
    }
}

impl Summary {
    /// One finished request of operation `op`: issued at `issue_ns` (from the start), done
    /// `latency_ns` later.
    #[inline]
    pub fn record(&mut self, op: u8, issue_ns: u64, latency_ns: u64, lag_ns: Option<u64>, bytes: u64) {
        let op = usize::from(op).min(OPS - 1);
        record(&mut self.latency[op], latency_ns);
        // a flush moves no data; a trim's range is its own rate (as fio's trim bandwidth),
        // not data moved, so the total counts reads and writes
        let bytes = if op == Op::Flush as usize { 0 } else { bytes };
        self.by_op[op].0 += 1;
        self.by_op[op].1 += bytes;
        if let Some(lag) = lag_ns {
            record(&mut self.lag, lag);
        }
        self.completed += 1;
        let moved = if op < Op::Trim as usize { bytes } else { 0 };
        self.bytes += moved;
        // issue times mostly grow: the last window still holding this one saves a division
        let last = self.windows.len().wrapping_sub(1) as u64;
        let w = if !self.windows.is_empty()
            && issue_ns >= last * self.window_ns
            && issue_ns < (last + 1) * self.window_ns
        {
            last as usize
        } else {
            let mut w = usize::try_from(issue_ns / self.window_ns).unwrap_or(usize::MAX);
            while w >= MAX_WINDOWS {
                self.coarsen();
                w /= 2;
            }
            if w >= self.windows.len() {
                self.windows.resize(w + 1, (0, 0));
            }
            w
        };
        let slot = &mut self.windows[w];
        slot.0 += 1;
        slot.1 += moved;
    }

    /// Every operation's latencies in one histogram.
    pub fn all_latencies(&self) -> Histogram<u64> {
        let mut all = self.latency[0].clone();
        for h in &self.latency[1..] {
            all.add(h).expect("auto-resizing histograms accept any value");
        }
        all
    }

    /// Completions to add to the shared progress count now, if it is time: every 64 of them
    /// or 20 ms, so workers seldom touch the shared counter yet a slow run still shows progress.
    #[inline]
    pub fn progress_due(&mut self, now_ns: u64) -> Option<u64> {
        let done = self.completed + self.warmup;
        let new = done - self.reported.0;
        if new >= 64 || (new > 0 && now_ns.saturating_sub(self.reported.1) >= 20_000_000) {
            self.reported = (done, now_ns);
            Some(new)
        } else {
            None
        }
    }

    /// Doubles the window width, merging neighbours.
    fn coarsen(&mut self) {
        self.window_ns *= 2;
        self.windows = self
            .windows
            .chunks(2)
            .map(|pair| pair.iter().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1)))
            .collect();
    }

    /// Adds another worker's summary into this one.
    pub fn merge(&mut self, mut other: Summary) {
        while self.window_ns < other.window_ns {
            self.coarsen();
        }
        while other.window_ns < self.window_ns {
            other.coarsen();
        }
        for (op, theirs) in other.latency.iter().enumerate() {
            self.latency[op]
                .add(theirs)
                .expect("auto-resizing histograms accept any value");
            self.by_op[op].0 += other.by_op[op].0;
            self.by_op[op].1 += other.by_op[op].1;
        }
        self.lag
            .add(&other.lag)
            .expect("auto-resizing histograms accept any value");
        self.completed += other.completed;
        self.bytes += other.bytes;
        self.warmup += other.warmup;
        for (code, count) in &other.failed {
            *self.failed.entry(*code).or_insert(0) += count;
        }
        self.last_lag_ns = self.last_lag_ns.or(other.last_lag_ns);
        if other.windows.len() > self.windows.len() {
            self.windows.resize(other.windows.len(), (0, 0));
        }
        for (mine, theirs) in self.windows.iter_mut().zip(other.windows) {
            mine.0 += theirs.0;
            mine.1 += theirs.1;
        }
    }
}

/// Records into an auto-resizing histogram (it grows to fit; only a value beyond what any
/// histogram can hold is clamped).
#[inline]
fn record(h: &mut Histogram<u64>, value: u64) {
    if h.record(value).is_err() {
        h.saturating_record(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_windows_and_merging() {
        let mut a = Summary::default();
        for i in 1..=1000u64 {
            // two a millisecond; every fourth a write
            a.record(u8::from(i % 4 == 0), i * 1_000_000 / 2, i * 1000, Some(i), 4096);
        }
        assert_eq!(a.completed, 1000);
        assert_eq!(a.bytes, 4_096_000);
        assert_eq!(a.by_op[..2], [(750, 3_072_000), (250, 1_024_000)]);
        // 1..1000 µs: the median is 500 µs to within 0.1 %; the writes' (4, 8, ..., 1000) 500 too
        let all = a.all_latencies();
        let p50 = all.value_at_quantile(0.5) as f64;
        assert!((p50 - 500_000.0).abs() <= 500.0, "{p50}");
        assert_eq!(all.max(), all.highest_equivalent(1_000_000));
        assert_eq!(a.latency[1].len(), 250);
        assert_eq!(a.latency[1].min(), a.latency[1].lowest_equivalent(4000));
        let write_p50 = a.latency[1].value_at_quantile(0.5) as f64;
        assert!((write_p50 - 500_000.0).abs() <= 500.0, "{write_p50}");
        assert_eq!(a.windows.len(), 501);
        assert_eq!(a.windows[1], (2, 8192));

        // a long run coarsens its windows instead of growing them
        let mut b = Summary::default();
        b.record(3, 10_000_000_000, 5, None, 512); // at 10 s: 10,000 ms windows would be too many
        assert_eq!(b.window_ns, 4_000_000);
        assert_eq!(b.windows.len(), 2501);
        assert_eq!(b.lag.len(), 0);

        a.merge(b);
        assert_eq!(a.window_ns, 4_000_000);
        assert_eq!(a.completed, 1001);
        // the first 4 ms window holds requests issued at 0.5 ms .. 3.5 ms
        assert_eq!(a.windows[0].0, 7);
        assert_eq!(a.windows.iter().map(|w| w.0).sum::<u64>(), 1001);
        assert_eq!(a.all_latencies().min(), 5);
        // the flush kept apart, moving no data
        assert_eq!(a.by_op[3], (1, 0));
        assert_eq!(a.bytes, 4_096_000);
        // a trim's range counts in its own rate, not in the data moved
        let mut c = Summary::default();
        c.record(2, 0, 5, None, 1 << 20);
        c.record(0, 0, 5, None, 4096);
        assert_eq!(
            (c.by_op[2], c.bytes, c.windows[0]),
            ((1, 1 << 20), 4096, (2, 4096))
        );
    }
}
