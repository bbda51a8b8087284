//! The few figures `iomimic info` shows: counts by operation, bytes, span, volumes and streams.
//! One pass, no sorting: cheap enough to run on every trace read.

use std::collections::BTreeMap;
use std::ops::Range;

use rustc_hash::FxHashSet;
use serde::Serialize;

use crate::trace::{TraceView, STATUS_OK};

#[derive(Debug, Clone, Serialize)]
pub struct VolumeCount {
    pub id: u32,
    pub name: String,
    pub requests: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub volumes: Vec<VolumeCount>,
    /// Distinct stream ids.
    pub streams: usize,
    /// Time from the first request to the last, seconds.
    pub span_s: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub has_latency: bool,
    /// Requests that failed (a status other than [`STATUS_OK`]), by errno, where the trace
    /// records a status; `None` when it does not.
    pub failed: Option<BTreeMap<u8, u64>>,
}

/// A summary of some of a trace's rows: parts of one trace (its row groups, its files, read
/// on different cores) add up to the summary of the whole, exactly, in any order.
#[derive(Debug, Clone, Default)]
pub struct PartialSummary {
    rows: u64,
    ops: [u64; 4],
    bytes: [u64; 2],
    per_volume: Vec<u64>,
    streams: FxHashSet<u32>,
    /// The earliest and latest times seen.
    times: Option<(u64, u64)>,
    has_latency: bool,
    /// Failed requests by errno, where the rows record a status.
    failed: Option<BTreeMap<u8, u64>>,
}

impl PartialSummary {
    /// The rows `rows` of `t`.
    pub fn of(t: &TraceView<'_>, rows: Range<usize>) -> Self {
        let mut c = Self {
            rows: rows.len() as u64,
            per_volume: vec![0; t.volumes.len()],
            has_latency: t.latency_ns.is_some(),
            failed: t.status.map(|_| BTreeMap::new()),
            ..Self::default()
        };
        let mut last_stream = None;
        let (mut lo, mut hi) = (u64::MAX, 0);
        for i in rows.clone() {
            let op = usize::from(t.op[i]).min(3);
            c.ops[op] += 1;
            if op < 2 {
                c.bytes[op] += u64::from(t.size[i]);
            }
            // (a reader's batch may come before its file's name table: canonical CSV names
            // its volumes at the end)
            let v = t.volume[i] as usize;
            if v >= c.per_volume.len() {
                c.per_volume.resize(v + 1, 0);
            }
            c.per_volume[v] += 1;
            // streams come in runs: skip the set when the stream repeats
            if last_stream != Some(t.stream[i]) {
                c.streams.insert(t.stream[i]);
                last_stream = Some(t.stream[i]);
            }
            lo = lo.min(t.ts_ns[i]);
            hi = hi.max(t.ts_ns[i]);
        }
        if !rows.is_empty() {
            c.times = Some((lo, hi));
        }
        if let (Some(failed), Some(status)) = (&mut c.failed, t.status) {
            for &s in status[rows].iter().filter(|&&s| s != STATUS_OK) {
                *failed.entry(s).or_insert(0) += 1;
            }
        }
        c
    }

    /// Adds another part of the same trace (its volume ids index the same names).
    pub fn add(&mut self, other: Self) {
        self.rows += other.rows;
        for (a, b) in self.ops.iter_mut().zip(other.ops) {
            *a += b;
        }
        for (a, b) in self.bytes.iter_mut().zip(other.bytes) {
            *a += b;
        }
        if self.per_volume.len() < other.per_volume.len() {
            self.per_volume.resize(other.per_volume.len(), 0);
        }
        for (a, b) in self.per_volume.iter_mut().zip(other.per_volume) {
            *a += b;
        }
        self.streams.extend(other.streams);
        self.times = match (self.times, other.times) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, y) => x.or(y),
        };
        self.has_latency |= other.has_latency;
        if let Some(theirs) = other.failed {
            let mine = self.failed.get_or_insert_with(BTreeMap::new);
            for (errno, n) in theirs {
                *mine.entry(errno).or_insert(0) += n;
            }
        }
    }

    /// Requests counted.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Counts the rows as having latencies or not (a reader that found them all unknown).
    #[must_use]
    pub fn latency(mut self, has: bool) -> Self {
        self.has_latency = has;
        self
    }

    /// Counts the rows as having latencies (a reader that leaves their column unread).
    #[must_use]
    pub fn with_latency(mut self) -> Self {
        self.has_latency = true;
        self
    }

    /// The earliest time seen (ns, in the rows' own clock).
    pub fn start_ns(&self) -> Option<u64> {
        self.times.map(|t| t.0)
    }

    /// The summary of the whole, its volume ids naming `volumes`.
    pub fn finish(self, volumes: &[String]) -> Summary {
        let count = |id: usize| self.per_volume.get(id).copied().unwrap_or(0);
        Summary {
            requests: self.rows,
            reads: self.ops[0],
            writes: self.ops[1],
            trims: self.ops[2],
            flushes: self.ops[3],
            volumes: volumes
                .iter()
                .enumerate()
                .map(|(id, name)| VolumeCount {
                    id: id as u32,
                    name: name.clone(),
                    requests: count(id),
                })
                .collect(),
            streams: self.streams.len(),
            span_s: self.times.map_or(0, |(a, b)| b - a) as f64 / 1e9,
            bytes_read: self.bytes[0],
            bytes_written: self.bytes[1],
            has_latency: self.has_latency,
            failed: self.failed,
        }
    }
}

/// The summary of `t`, counted in parts on every core.
pub fn summarize(t: &TraceView<'_>) -> Summary {
    partial(t).finish(t.volumes)
}

/// [`PartialSummary::of`] every row of `t`, in parts on every core (a 10 M-request trace's pass
/// took 35 ms on one).
pub fn partial(t: &TraceView<'_>) -> PartialSummary {
    let parts = if t.len() < 1 << 20 {
        1
    } else {
        crate::parallel::cores()
    };
    let step = t.len().div_ceil(parts.max(1)).max(1);
    let ranges: Vec<_> = (0..t.len())
        .step_by(step)
        .map(|a| a..(a + step).min(t.len()))
        .collect();
    let mut total = PartialSummary {
        per_volume: vec![0; t.volumes.len()],
        has_latency: t.latency_ns.is_some(),
        failed: t.status.map(|_| BTreeMap::new()),
        ..PartialSummary::default()
    };
    for part in crate::parallel::on_all_cores(ranges, |rows| PartialSummary::of(t, rows)) {
        total.add(part);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::testing::reads;

    #[test]
    fn counts_by_hand() {
        let mut t = reads(&[0, 5, 2_000_000_005], &[0, 4096, 0], 4096);
        t.op = vec![0, 1, 3];
        t.size[2] = 0;
        t.stream = vec![7, 8, 7];
        let s = summarize(&t.view());
        assert_eq!((s.requests, s.reads, s.writes, s.flushes), (3, 1, 1, 1));
        assert_eq!((s.bytes_read, s.bytes_written, s.streams), (4096, 4096, 2));
        assert!((s.span_s - 2.000_000_005).abs() < 1e-12);
        assert_eq!(s.volumes[0].requests, 3);
    }

    #[test]
    fn parts_in_any_order_add_up_to_the_whole() {
        let mut t = reads(&[10, 20, 35, 40, 70, 90], &[0, 4096, 8192, 0, 0, 4096], 4096);
        t.op = vec![0, 1, 0, 2, 1, 0];
        t.stream = vec![1, 1, 2, 3, 1, 4];
        t.status = Some(vec![0, 5, 0, 5, 61, 0]);
        let v = t.view();
        let whole = summarize(&v);
        let mut sum = PartialSummary::of(&v, 4..6);
        sum.add(PartialSummary::of(&v, 0..1));
        sum.add(PartialSummary::of(&v, 1..4));
        sum.add(PartialSummary::of(&v, 3..3));
        assert_eq!(sum.start_ns(), Some(10));
        let parts = sum.finish(v.volumes);
        assert_eq!(
            serde_json::to_value(&parts).unwrap(),
            serde_json::to_value(&whole).unwrap()
        );
        assert_eq!((whole.requests, whole.streams, whole.span_s), (6, 4, 80e-9));
        assert_eq!(
            whole.failed.unwrap().into_iter().collect::<Vec<_>>(),
            [(5, 2), (61, 1)]
        );
    }
}
