//! What the HTML report and `characterize --report` draw, binned here so every figure on the
//! page comes from the core: rates over time, a sample of (time, offset) points as
//! seekwatcher plots them, a time × position heat map, and histograms of sizes and gaps.
//!
//! Two traces drawn over each other must share their bins: [`PlotOptions::bin_ns`] takes the
//! first trace's bin width for the second, and the other histograms bin by value (sizes
//! exactly, gaps in powers of two), which lines them up by construction.

// Counts and bin positions are non-negative and far below 2^52.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use serde::Serialize;

use crate::error::{Error, Result};
use crate::trace::{Op, TraceView};

/// Bins of the rate-over-time series when no width is given.
pub const TIME_BINS: u64 = 300;
/// Most (time, offset) points sampled for the scatter plot.
pub const SCATTER_POINTS: usize = 20_000;
/// Time and position bins of the heat map.
pub const HEAT_TIME_BINS: usize = 120;
pub const HEAT_POSITION_BINS: usize = 64;
/// Distinct request sizes shown; the rest are summed into one bar.
pub const SIZE_BARS: usize = 16;

#[derive(Debug, Clone, Copy, Default)]
pub struct PlotOptions {
    /// Width of a rate-over-time bin; default: the span over [`TIME_BINS`].
    pub bin_ns: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlotData {
    pub requests: usize,
    pub span_s: f64,
    pub over_time: OverTime,
    pub scatter: Scatter,
    pub heat: Heat,
    pub sizes: Vec<SizeBar>,
    /// Requests whose size is not among the [`SIZE_BARS`] most common.
    pub other_sizes: u64,
    pub interarrival: Vec<GapBin>,
}

/// Requests and megabytes per second in bins of equal width. Requests after the last whole
/// bin are left out (a partial bin would read low), unless there is no whole bin at all.
#[derive(Debug, Clone, Serialize)]
pub struct OverTime {
    pub bin_ns: u64,
    pub read_iops: Vec<f64>,
    pub write_iops: Vec<f64>,
    pub mb_per_s: Vec<f64>,
}

/// Every `every`-th request: issue time, byte offset, op code and volume id.
#[derive(Debug, Clone, Serialize)]
pub struct Scatter {
    pub every: usize,
    pub t_s: Vec<f64>,
    pub offset: Vec<u64>,
    pub op: Vec<u8>,
    pub volume: Vec<u32>,
}

/// Requests per (time bin, position bin); position is the offset's share of its volume's
/// span, so volumes of any size fill the same rows.
#[derive(Debug, Clone, Serialize)]
pub struct Heat {
    pub time_bins: usize,
    pub position_bins: usize,
    /// Row-major: `counts[t * position_bins + p]`.
    pub counts: Vec<u32>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct SizeBar {
    pub bytes: u32,
    pub reads: u64,
    pub writes: u64,
}

/// Gaps in `[from_us, to_us)`; the first bin holds the zero gaps (requests at one instant).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GapBin {
    pub from_us: f64,
    pub to_us: f64,
    pub count: u64,
}

/// Everything the report draws for one trace.
pub fn plot_data(t: &TraceView<'_>, opts: PlotOptions) -> Result<PlotData> {
    let n = t.ts_ns.len();
    if n == 0 {
        return Err(Error::Usage("nothing to draw: the trace is empty".into()));
    }
    let span_ns = t.ts_ns[n - 1];
    let bin_ns = match opts.bin_ns {
        Some(0) => return Err(Error::Usage("`bin_ns` must be positive".into())),
        Some(b) => b,
        None => (span_ns / TIME_BINS).max(1),
    };
    let (sizes, other_sizes) = sizes(t);
    Ok(PlotData {
        requests: n,
        span_s: span_ns as f64 / 1e9,
        over_time: over_time(t, bin_ns),
        scatter: scatter(t),
        heat: heat(t),
        sizes,
        other_sizes,
        interarrival: gaps(t.ts_ns),
    })
}

fn over_time(t: &TraceView<'_>, bin_ns: u64) -> OverTime {
    let bins = (t.ts_ns[t.ts_ns.len() - 1] / bin_ns).max(1) as usize;
    let (mut reads, mut writes, mut bytes) = (vec![0u64; bins], vec![0u64; bins], vec![0u64; bins]);
    for i in 0..t.ts_ns.len() {
        let b = (t.ts_ns[i] / bin_ns) as usize;
        if b >= bins {
            break;
        }
        match Op::from_code(t.op[i]) {
            Some(Op::Read) => reads[b] += 1,
            Some(Op::Write) => writes[b] += 1,
            _ => {}
        }
        bytes[b] += u64::from(t.size[i]);
    }
    let per_s = 1e9 / bin_ns as f64;
    OverTime {
        bin_ns,
        read_iops: reads.iter().map(|&c| c as f64 * per_s).collect(),
        write_iops: writes.iter().map(|&c| c as f64 * per_s).collect(),
        mb_per_s: bytes.iter().map(|&b| b as f64 * per_s / 1e6).collect(),
    }
}

fn scatter(t: &TraceView<'_>) -> Scatter {
    let every = t.ts_ns.len().div_ceil(SCATTER_POINTS);
    let rows = (0..t.ts_ns.len()).step_by(every);
    Scatter {
        every,
        t_s: rows.clone().map(|i| t.ts_ns[i] as f64 / 1e9).collect(),
        offset: rows.clone().map(|i| t.offset[i]).collect(),
        op: rows.clone().map(|i| t.op[i]).collect(),
        volume: rows.map(|i| t.volume[i]).collect(),
    }
}

fn heat(t: &TraceView<'_>) -> Heat {
    let volumes = t.volume.iter().max().map_or(0, |&v| v as usize + 1);
    let mut reach = vec![0u64; volumes];
    for i in 0..t.ts_ns.len() {
        let v = t.volume[i] as usize;
        reach[v] = reach[v].max(t.offset[i] + u64::from(t.size[i]));
    }
    let span = t.ts_ns[t.ts_ns.len() - 1] + 1;
    let mut counts = vec![0u32; HEAT_TIME_BINS * HEAT_POSITION_BINS];
    for i in 0..t.ts_ns.len() {
        let row = (u128::from(t.ts_ns[i]) * HEAT_TIME_BINS as u128 / u128::from(span)) as usize;
        let end = reach[t.volume[i] as usize].max(1);
        let col = (u128::from(t.offset[i]) * HEAT_POSITION_BINS as u128 / u128::from(end)) as usize;
        let cell = &mut counts[row * HEAT_POSITION_BINS + col.min(HEAT_POSITION_BINS - 1)];
        *cell = cell.saturating_add(1);
    }
    Heat {
        time_bins: HEAT_TIME_BINS,
        position_bins: HEAT_POSITION_BINS,
        counts,
    }
}

/// The [`SIZE_BARS`] most common sizes (ties to the smaller size), in size order, and the
/// count of the rest.
fn sizes(t: &TraceView<'_>) -> (Vec<SizeBar>, u64) {
    let mut by_size: rustc_hash::FxHashMap<u32, SizeBar> = rustc_hash::FxHashMap::default();
    for i in 0..t.size.len() {
        let bar = by_size.entry(t.size[i]).or_insert(SizeBar {
            bytes: t.size[i],
            reads: 0,
            writes: 0,
        });
        match Op::from_code(t.op[i]) {
            Some(Op::Read) => bar.reads += 1,
            Some(Op::Write) => bar.writes += 1,
            _ => {}
        }
    }
    let mut bars: Vec<SizeBar> = by_size.into_values().filter(|b| b.reads + b.writes > 0).collect();
    bars.sort_by_key(|b| (std::cmp::Reverse(b.reads + b.writes), b.bytes));
    let other = bars.iter().skip(SIZE_BARS).map(|b| b.reads + b.writes).sum();
    bars.truncate(SIZE_BARS);
    bars.sort_by_key(|b| b.bytes);
    (bars, other)
}

/// Gaps between successive requests in power-of-two bins of microseconds: [0, 1 µs) first
/// (mostly requests at one instant), then [1, 2), [2, 4), ... up to the largest gap.
fn gaps(ts_ns: &[u64]) -> Vec<GapBin> {
    let mut counts = vec![0u64; 1];
    for w in ts_ns.windows(2) {
        let us = (w[1] - w[0]) / 1000;
        let bin = if us == 0 { 0 } else { us.ilog2() as usize + 1 };
        if counts.len() <= bin {
            counts.resize(bin + 1, 0);
        }
        counts[bin] += 1;
    }
    counts
        .iter()
        .enumerate()
        .map(|(b, &count)| {
            let (from_us, to_us) = if b == 0 {
                (0.0, 1.0)
            } else {
                ((1u64 << (b - 1)) as f64, (1u64 << b) as f64)
            };
            GapBin {
                from_us,
                to_us,
                count,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    fn trace() -> Trace {
        // four requests over 3 s on two volumes: a read and a write per volume
        Trace {
            ts_ns: vec![0, 1_000_000_000, 1_000_000_000, 3_000_000_000],
            offset: vec![0, 4096, 1 << 20, 0],
            size: vec![4096, 4096, 8192, 512],
            op: vec![0, 1, 0, 1],
            volume: vec![0, 0, 1, 1],
            stream: vec![0; 4],
            volumes: vec!["a".into(), "b".into()],
            ..Trace::default()
        }
    }

    #[test]
    fn known_bins_of_a_small_trace() {
        let t = trace();
        let d = plot_data(
            &t.view(),
            PlotOptions {
                bin_ns: Some(1_000_000_000),
            },
        )
        .unwrap();
        // three whole seconds; the request at 3 s would open a fourth, partial bin
        assert_eq!(d.over_time.read_iops, [1.0, 1.0, 0.0]);
        assert_eq!(d.over_time.write_iops, [0.0, 1.0, 0.0]);
        assert_eq!(d.over_time.mb_per_s[1], (4096.0 + 8192.0) / 1e6);
        let sizes: Vec<(u32, u64, u64)> = d.sizes.iter().map(|b| (b.bytes, b.reads, b.writes)).collect();
        assert_eq!(sizes, [(512, 0, 1), (4096, 1, 1), (8192, 1, 0)]);
        // gaps 1 s, 0, 2 s: one at [0, 1 µs), one in [2^19, 2^20) µs, one in [2^20, 2^21)
        let bins: Vec<(f64, u64)> = d
            .interarrival
            .iter()
            .filter(|b| b.count > 0)
            .map(|b| (b.from_us, b.count))
            .collect();
        assert_eq!(bins, [(0.0, 1), (524_288.0, 1), (1_048_576.0, 1)]);
        assert_eq!((d.scatter.every, d.scatter.t_s.len()), (1, 4));
        assert_eq!(d.heat.counts.iter().sum::<u32>(), 4);
        // volume b reaches 1 MiB + 8 KiB: its request at 1 MiB sits in the last position bin
        let row = (1_000_000_000u128 * HEAT_TIME_BINS as u128 / 3_000_000_001) as usize;
        assert_eq!(d.heat.counts[row * HEAT_POSITION_BINS + 63], 1);
    }

    #[test]
    fn scatter_is_capped_and_empty_traces_refused() {
        let n = SCATTER_POINTS * 3 + 1;
        let t = Trace {
            ts_ns: (0..n as u64).collect(),
            offset: vec![0; n],
            size: vec![512; n],
            op: vec![0; n],
            volume: vec![0; n],
            stream: vec![0; n],
            volumes: vec!["a".into()],
            ..Trace::default()
        };
        let d = plot_data(&t.view(), PlotOptions::default()).unwrap();
        assert!(d.scatter.t_s.len() <= SCATTER_POINTS && d.scatter.every == 4);
        assert!(plot_data(&Trace::default().view(), PlotOptions::default()).is_err());
    }
}
