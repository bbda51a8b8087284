//! The few figures `iomimic info` shows: counts by operation, bytes, span, volumes and streams.
//! One pass, no sorting: cheap enough to run on every trace read.

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
    pub failed: Option<std::collections::BTreeMap<u8, u64>>,
}

pub fn summarize(t: &TraceView<'_>) -> Summary {
    let mut ops = [0u64; 4];
    let mut bytes = [0u64; 2];
    let mut per_volume = vec![0u64; t.volumes.len()];
    let mut streams: FxHashSet<u32> = FxHashSet::default();
    let mut last_stream = None;
    for i in 0..t.len() {
        let op = usize::from(t.op[i]).min(3);
        ops[op] += 1;
        if op < 2 {
            bytes[op] += u64::from(t.size[i]);
        }
        per_volume[t.volume[i] as usize] += 1;
        // streams come in runs: skip the set when the stream repeats
        if last_stream != Some(t.stream[i]) {
            streams.insert(t.stream[i]);
            last_stream = Some(t.stream[i]);
        }
    }
    let span_ns = match (t.ts_ns.first(), t.ts_ns.last()) {
        (Some(&a), Some(&b)) => b - a,
        _ => 0,
    };
    Summary {
        requests: t.len() as u64,
        reads: ops[0],
        writes: ops[1],
        trims: ops[2],
        flushes: ops[3],
        volumes: t
            .volumes
            .iter()
            .enumerate()
            .map(|(id, name)| VolumeCount {
                id: id as u32,
                name: name.clone(),
                requests: per_volume[id],
            })
            .collect(),
        streams: streams.len(),
        span_s: span_ns as f64 / 1e9,
        bytes_read: bytes[0],
        bytes_written: bytes[1],
        has_latency: t.latency_ns.is_some(),
        failed: t.status.map(|status| {
            let mut by_errno = std::collections::BTreeMap::new();
            for &s in status.iter().filter(|&&s| s != STATUS_OK) {
                *by_errno.entry(s).or_insert(0) += 1;
            }
            by_errno
        }),
    }
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
}
