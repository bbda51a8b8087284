//! The figures of one group of requests (the whole trace, a volume or a stream): accumulated in
//! the single pass over the columns, finished into [`Figures`].

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::distfit::{self, Fit};
use super::mrc::Mrc;
use super::sequentiality::{SeqCounts, Sequentiality};
use super::stats::{self, Percentiles};
use crate::latency::{self, LatencyUs, OpLatency};
use crate::trace::{TraceView, LATENCY_UNKNOWN};

/// Most request sizes listed in a size distribution; the rest are summed in `other_fraction`.
pub const SIZES_LISTED: usize = 32;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct GroupAcc {
    pub ops: [u64; 4],
    pub bytes: [u64; 4],
    /// Request counts by size, for reads and writes.
    sizes: [FxHashMap<u32, u64>; 2],
    pub seq: SeqCounts,
    /// Requests per fluctuation window.
    pub windows: Vec<u32>,
    /// Requests per spatial range: all, reads, writes.
    spatial: [Vec<u64>; 3],
}

impl GroupAcc {
    pub fn new(windows: usize, ranges: usize) -> Self {
        Self {
            windows: vec![0; windows],
            spatial: std::array::from_fn(|_| vec![0; ranges]),
            ..Self::default()
        }
    }

    /// Counts one request (everything but sequentiality, which needs per-key state, and the
    /// spatial range, which needs the volume's span). Gaps and latencies are not kept here: a
    /// copy per group would be bytes per request three times over; [`GroupAcc::finish`] takes
    /// them from the columns, one group at a time.
    #[inline]
    pub fn observe(&mut self, size: u32, op: u8, window: usize) {
        let o = usize::from(op);
        self.ops[o] += 1;
        self.bytes[o] += u64::from(size);
        if o < 2 {
            *self.sizes[o].entry(size).or_default() += 1;
        }
        self.windows[window] += 1;
    }

    /// Adds the counts of `other` (the same group over other requests), sequentiality aside:
    /// its state carries over, so the caller merges those counts once they are known.
    pub fn merge_counts(&mut self, other: &GroupAcc) {
        let add = |a: &mut [u64], b: &[u64]| a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
        add(&mut self.ops, &other.ops);
        add(&mut self.bytes, &other.bytes);
        for (mine, theirs) in self.sizes.iter_mut().zip(&other.sizes) {
            for (&size, &n) in theirs {
                *mine.entry(size).or_default() += n;
            }
        }
        for (a, b) in self.windows.iter_mut().zip(&other.windows) {
            *a += b;
        }
        for (mine, theirs) in self.spatial.iter_mut().zip(&other.spatial) {
            add(mine, theirs);
        }
    }

    #[inline]
    pub fn observe_range(&mut self, range: usize, op: u8) {
        self.spatial[0][range] += 1;
        if op < 2 {
            self.spatial[1 + usize::from(op)][range] += 1;
        }
    }

    /// Finishes the figures of the group whose requests are `members` of `t`. `duration_ns` is
    /// the whole trace's span (rates of all groups are over the same time, so they add up);
    /// `window_ns` is the fluctuation window.
    pub fn finish(
        self,
        t: &TraceView<'_>,
        members: Members<'_>,
        duration_ns: u64,
        window_ns: u64,
        mrc: Option<Mrc>,
    ) -> Figures {
        let interarrival = interarrival(&mut members.gaps(t.ts_ns));
        let latency = t.latency_ns.map_or_else(Latencies::default, |l| {
            let mut per_op = members.latencies(l, t.op);
            let mut all = per_op.concat();
            Latencies {
                cv: (!all.is_empty()).then(|| stats::mean_cv(all.iter().map(|&v| v as f64)).1),
                all: LatencyUs::from_ns(&mut all),
                // each operation apart, when the group has more than one with latencies
                by_op: if per_op.iter().filter(|l| !l.is_empty()).count() > 1 {
                    latency::by_op(&mut per_op)
                } else {
                    BTreeMap::new()
                },
            }
        });
        self.figures(duration_ns, window_ns, mrc, interarrival, latency)
    }

    /// The figures of the counts, with the gaps' and latencies' figures taken apart (from the
    /// columns, or from sketches of a trace read in pieces).
    pub fn figures(
        self,
        duration_ns: u64,
        window_ns: u64,
        mrc: Option<Mrc>,
        interarrival: Interarrival,
        latency: Latencies,
    ) -> Figures {
        let requests: u64 = self.ops.iter().sum();
        let duration_s = duration_ns as f64 / 1e9;
        let rate = |x: f64| {
            if duration_s > 0.0 {
                x / duration_s
            } else {
                0.0
            }
        };
        let data_bytes = self.bytes[0] + self.bytes[1];
        let fraction = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let size_of = |maps: &[&FxHashMap<u32, u64>]| size_figures(maps);
        let [reads, writes] = &self.sizes;
        Figures {
            requests,
            reads: self.ops[0],
            writes: self.ops[1],
            trims: self.ops[2],
            flushes: self.ops[3],
            read_fraction: fraction(self.ops[0], self.ops[0] + self.ops[1]),
            bytes_read: self.bytes[0],
            bytes_written: self.bytes[1],
            duration_s,
            iops: rate(requests as f64),
            mb_per_s: rate(data_bytes as f64 / 1e6),
            interarrival,
            size: Sizes {
                all: size_of(&[reads, writes]),
                read: size_of(&[reads]),
                write: size_of(&[writes]),
            },
            sequential_fraction: fraction(self.seq.sequential, self.seq.requests),
            sequentiality: self.seq.figures(),
            spatial: Spatial {
                ranges: self.spatial[0].len(),
                fractions: normalise(&self.spatial[0]),
                read_fractions: normalise(&self.spatial[1]),
                write_fractions: normalise(&self.spatial[2]),
            },
            fluctuation: fluctuation(&self.windows, window_ns, duration_ns),
            latency_us: latency.all,
            latency_cv: latency.cv,
            by_op: latency.by_op,
            mrc,
        }
    }
}

/// A group's response-time figures (none when the trace records no latencies).
#[derive(Debug, Default)]
pub struct Latencies {
    pub all: Option<LatencyUs>,
    pub cv: Option<f64>,
    pub by_op: BTreeMap<&'static str, OpLatency>,
}

/// The requests of a group, in time order: every row of the trace, or a list of rows.
#[derive(Clone, Copy)]
pub enum Members<'a> {
    All(usize),
    Rows(&'a [u32]),
}

impl<'a> Members<'a> {
    fn rows(self) -> impl Iterator<Item = usize> + Clone + 'a {
        let (n, rows) = match self {
            Members::All(n) => (n, &[][..]),
            Members::Rows(r) => (r.len(), r),
        };
        (0..n).map(move |k| if rows.is_empty() { k } else { rows[k] as usize })
    }

    /// The gaps between consecutive requests.
    fn gaps(self, ts: &[u64]) -> Vec<u64> {
        let rows = self.rows();
        rows.clone()
            .zip(rows.skip(1))
            .map(|(a, b)| ts[b] - ts[a])
            .collect()
    }

    /// Known latencies by op code (read, write, trim, flush), in time order.
    fn latencies(self, latency: &[u64], op: &[u8]) -> [Vec<u64>; 4] {
        let mut out: [Vec<u64>; 4] = Default::default();
        for i in self.rows().filter(|&i| latency[i] != LATENCY_UNKNOWN) {
            out[usize::from(op[i]).min(3)].push(latency[i]);
        }
        out
    }
}

fn normalise(counts: &[u64]) -> Vec<f64> {
    let total: u64 = counts.iter().sum();
    counts
        .iter()
        .map(|&c| if total == 0 { 0.0 } else { c as f64 / total as f64 })
        .collect()
}

fn size_figures(maps: &[&FxHashMap<u32, u64>]) -> SizeFigures {
    let mut merged: FxHashMap<u32, u64> = FxHashMap::default();
    for map in maps {
        for (&size, &count) in *map {
            *merged.entry(size).or_default() += count;
        }
    }
    let total: u64 = merged.values().sum();
    let bytes: u128 = merged.iter().map(|(&s, &c)| u128::from(s) * u128::from(c)).sum();
    let mut entries: Vec<(u32, u64)> = merged.into_iter().collect();
    // most common first; equal counts by size so the order is deterministic
    entries.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let share = |c: u64| {
        if total == 0 {
            0.0
        } else {
            c as f64 / total as f64
        }
    };
    let listed: u64 = entries.iter().take(SIZES_LISTED).map(|e| e.1).sum();
    SizeFigures {
        mean_bytes: if total == 0 {
            0.0
        } else {
            bytes as f64 / total as f64
        },
        distinct_sizes: entries.len(),
        distribution: entries
            .iter()
            .take(SIZES_LISTED)
            .map(|&(bytes, c)| SizeShare {
                bytes,
                fraction: share(c),
            })
            .collect(),
        other_fraction: share(total - listed),
    }
}

fn interarrival(gaps: &mut [u64]) -> Interarrival {
    let (mean_ns, cv) = stats::mean_cv(gaps.iter().map(|&g| g as f64));
    let zeros = gaps.iter().filter(|&&g| g == 0).count();
    // Fits describe the positive gaps (a log or a gamma cannot take 0); zero_fraction says
    // how many requests share their predecessor's instant. The positive ones are moved to the
    // front in time order (the fit samples by stride) rather than copied, then the zeros put
    // back behind them: percentiles need the same values, not the same order.
    let mut positive = 0;
    for i in 0..gaps.len() {
        if gaps[i] > 0 {
            gaps[positive] = gaps[i];
            positive += 1;
        }
    }
    let fit = distfit::fit_by(positive, |i| gaps[i] as f64 / 1e3, distfit::KS_SAMPLE);
    gaps[positive..].fill(0);
    Interarrival {
        count: gaps.len(),
        mean_us: mean_ns / 1e3,
        cv,
        zero_fraction: if gaps.is_empty() {
            0.0
        } else {
            zeros as f64 / gaps.len() as f64
        },
        percentiles_us: stats::percentiles(gaps, 1e-3),
        fit,
    }
}

/// Peaks are windows whose rate exceeds the mean by more than this many standard deviations.
pub const PEAK_SIGMAS: f64 = 3.0;

/// The rates of `windows` (of `window_ns` each, from the trace's start) over a trace of
/// `span_ns`. The trace is taken to end a gap after its last request, at the rate of the
/// window before (n requests take n gaps; the trace's mean gap for a trace of one window), so
/// the last window is rated over what it covers up to there; one covering under half a window
/// is left out (beside the others, a rate over a sliver is noise: wsrch-small's last 0.055 s
/// of a 0.6 s window held one request), unless it is the only one.
fn fluctuation(windows: &[u32], window_ns: u64, span_ns: u64) -> Fluctuation {
    let window_s = window_ns as f64 / 1e9;
    let mut iops: Vec<f64> = windows.iter().map(|&c| f64::from(c) / window_s).collect();
    if let Some(last) = windows.len().checked_sub(1) {
        let gap = match last.checked_sub(1).map(|before| windows[before]) {
            Some(c) if c > 0 => window_ns as f64 / f64::from(c),
            _ => {
                let requests: u64 = windows.iter().map(|&c| u64::from(c)).sum();
                span_ns as f64 / requests.saturating_sub(1).max(1) as f64
            }
        };
        let end = span_ns as f64 + gap;
        let covered = (end - (last as u64 * window_ns) as f64).max(0.0) / window_ns as f64;
        if covered < 0.5 && last > 0 {
            iops.pop();
        } else if covered > 0.0 && covered < 1.0 {
            iops[last] /= covered;
        }
    }
    let (mean, cv) = stats::mean_cv(iops.iter().copied());
    let threshold = mean * (1.0 + PEAK_SIGMAS * cv);
    let peaks = iops
        .iter()
        .enumerate()
        .filter(|&(_, &r)| cv > 0.0 && r > threshold)
        .map(|(i, &r)| Peak {
            start_s: i as f64 * window_s,
            iops: r,
        })
        .collect();
    Fluctuation {
        window_s,
        iops,
        mean_iops: mean,
        cv,
        peak_rule: "iops > mean + 3 sd",
        peak_threshold_iops: threshold,
        peaks,
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    /// reads / (reads + writes).
    pub read_fraction: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub duration_s: f64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub interarrival: Interarrival,
    pub size: Sizes,
    pub sequential_fraction: f64,
    pub sequentiality: Sequentiality,
    pub spatial: Spatial,
    pub fluctuation: Fluctuation,
    /// Response times, when the trace records them (docs/json.md gives the shape).
    pub latency_us: Option<LatencyUs>,
    /// Their coefficient of variation.
    pub latency_cv: Option<f64>,
    /// Each operation's response times apart, when more than one kind has them (else empty).
    pub by_op: BTreeMap<&'static str, OpLatency>,
    pub mrc: Option<Mrc>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Interarrival {
    /// Gaps measured (requests of the group minus one).
    pub count: usize,
    pub mean_us: f64,
    pub cv: f64,
    pub zero_fraction: f64,
    pub percentiles_us: Option<Percentiles>,
    pub fit: Option<Fit>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeShare {
    pub bytes: u32,
    pub fraction: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeFigures {
    pub mean_bytes: f64,
    pub distinct_sizes: usize,
    pub distribution: Vec<SizeShare>,
    pub other_fraction: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Sizes {
    #[serde(flatten)]
    pub all: SizeFigures,
    pub read: SizeFigures,
    pub write: SizeFigures,
}

#[derive(Debug, Clone, Serialize)]
pub struct Spatial {
    pub ranges: usize,
    pub fractions: Vec<f64>,
    pub read_fractions: Vec<f64>,
    pub write_fractions: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Peak {
    pub start_s: f64,
    pub iops: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Fluctuation {
    pub window_s: f64,
    pub iops: Vec<f64>,
    pub mean_iops: f64,
    pub cv: f64,
    pub peak_rule: &'static str,
    pub peak_threshold_iops: f64,
    pub peaks: Vec<Peak>,
}

#[cfg(test)]
mod tests {
    use super::fluctuation;

    #[test]
    fn the_last_window_is_rated_over_what_it_covers() {
        const S: u64 = 1_000_000_000;
        let close =
            |a: &[f64], b: &[f64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
        // 10 s windows over 25 s, 300 requests in the second (a gap of 33 ms): the third
        // window covers 5.03 s to the trace's end, just over half a window, and holds 10
        let span = 25 * S;
        let f = fluctuation(&[100, 300, 10], 10 * S, span);
        let end = span as f64 + 10e9 / 300.0;
        let third = 10.0 / ((end - 20e9) / 1e9);
        assert!(close(&f.iops, &[10.0, 30.0, third]), "{:?}", f.iops);
        assert!((third - 2.0).abs() < 0.03);
        // over 21 s the third covers about 1 s: left out, not a rate of 1 a second nor of 10
        let f = fluctuation(&[100, 300, 10], 10 * S, 21 * S);
        assert_eq!(f.iops, [10.0, 30.0]);
        assert!((f.mean_iops - 20.0).abs() < 1e-12);
        // one a second from 0 to 29 s: the request at 29 s fills its window
        assert_eq!(fluctuation(&[1; 30], S, 29 * S).iops, [1.0; 30]);
        // a span shorter than the window: its one window over the span (60 in 5.9 s and a gap)
        assert!(close(&fluctuation(&[60], 3600 * S, 5_900_000_000).iops, &[10.0]));
    }
}
