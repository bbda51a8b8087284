//! Defragmentation, quantified without performing it: the workload's blocks are laid out again
//! so that what is read together lies together, the workload is replayed on the new layout,
//! and the two runs are compared.
//!
//! ## Algorithm
//! Each volume's distinct blocks are placed anew, packed from the start of the volume, in the
//! order the workload first touches them (co-access order): requests that followed each other
//! come to lie one after the other, and a request's own blocks stay together. Where the trace
//! names files, a file's blocks are kept together in their file order, files placed in the
//! order they are first touched. A request then starts at its first block's new place.
//! - `full`: every block moves.
//! - `partial:P%`: only the hottest P % of the blocks (by accesses) move, packed at the start;
//!   the rest stay where they were.
//! - `dynamic`: the layout follows the workload: the run is cut into windows, and the blocks a
//!   window touches for the first time are placed (appended to the packed region) only once
//!   that window is over, so each window runs on the layout the windows before it built.
//!
//! Before and after: the read/write split, the share of random and sequential requests (a
//! request is sequential when it starts where the previous request of its volume ended), and
//! the simulator's latency, throughput and energy.
//!
//! ## References
//! Delimitrou et al., "Decoupling Datacenter Studies from Access to Large-Scale Applications"
//! (the defragmentation table: random and sequential shares before and after).

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use super::Study;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::sim::{self, Config, SimOptions};
use crate::trace::{Op, Trace, TraceView};

pub struct Defrag;

pub const STUDY: Defrag = Defrag;

fn default_block() -> u64 {
    4096
}
fn default_policies() -> Vec<String> {
    vec!["full".into()]
}
fn default_windows() -> usize {
    10
}
fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The device file the workload runs on (TOML text).
    pub device: String,
    /// `full`, `partial:P%` (or `partial:0.P`), `dynamic`.
    #[serde(default = "default_policies")]
    pub policies: Vec<String>,
    #[serde(default = "default_block")]
    pub block_bytes: u64,
    /// Windows the dynamic policy re-lays out after.
    #[serde(default = "default_windows")]
    pub windows: usize,
    #[serde(default = "one")]
    pub intensity: f64,
}

/// A layout policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Policy {
    Full,
    /// The hottest share of blocks moves.
    Partial(f64),
    Dynamic,
}

impl std::str::FromStr for Policy {
    type Err = Error;

    fn from_str(s: &str) -> Result<Policy> {
        let bad = || Error::Usage(format!("`policies`: {s:?} is not full, partial:P% or dynamic"));
        match s.trim() {
            "full" => Ok(Policy::Full),
            "dynamic" => Ok(Policy::Dynamic),
            other => {
                let share = other.strip_prefix("partial:").ok_or_else(bad)?;
                let share = match share.strip_suffix('%') {
                    Some(p) => p.parse::<f64>().map(|p| p / 100.0),
                    None => share.parse::<f64>(),
                }
                .map_err(|_| bad())?;
                if share > 0.0 && share <= 1.0 {
                    Ok(Policy::Partial(share))
                } else {
                    Err(Error::Usage(format!(
                        "`policies`: {s:?} moves no blocks or more than all: P is above 0 % and at \
                         most 100 %"
                    )))
                }
            }
        }
    }
}

impl Policy {
    fn name(self) -> String {
        match self {
            Policy::Full => "full".into(),
            Policy::Partial(p) => format!("partial:{}%", p * 100.0),
            Policy::Dynamic => "dynamic".into(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Shape {
    pub read_fraction: f64,
    pub write_fraction: f64,
    pub random_fraction: f64,
    pub sequential_fraction: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Perf {
    pub mean_us: f64,
    pub p99_us: f64,
    pub iops: f64,
    pub energy_j: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub policy: String,
    pub shape: Shape,
    pub perf: Perf,
    /// Before over after: mean and 99th-percentile latency.
    pub speedup: f64,
    pub p99_speedup: f64,
    /// (after − before) / before energy, where the device file gives power figures.
    pub energy_change: Option<f64>,
    /// Bytes the new layout moved from where they were.
    pub moved_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub device: String,
    pub requests: u64,
    pub block_bytes: u64,
    pub before: Shape,
    pub before_perf: Perf,
    pub runs: Vec<Run>,
}

impl Study for Defrag {
    fn name(&self) -> &'static str {
        "defrag"
    }

    fn description(&self) -> &'static str {
        "defragmentation without performing it: blocks laid out in co-access order, replayed"
    }

    fn run(
        &self,
        workload: &TraceView<'_>,
        options: &serde_json::Value,
        progress: &Progress,
    ) -> Result<serde_json::Value> {
        super::typed(self.name(), options, |o: Options| run(workload, &o, progress))
    }

    /// One point per policy.
    fn points(&self, options: &serde_json::Value) -> Result<Option<Vec<serde_json::Value>>> {
        let o: Options = super::parse_options(self.name(), options)?;
        for p in &o.policies {
            p.parse::<Policy>()?;
        }
        Ok(Some(super::each_of(options, "policies", &o.policies)))
    }

    /// The runs of every point in order; the rest (the workload before any relayout) is every
    /// point's.
    fn join(&self, options: &serde_json::Value, reports: &[serde_json::Value]) -> Result<serde_json::Value> {
        super::join_runs(self, options, reports, |whole: &mut Report, point: Report| {
            whole.runs.extend(point.runs);
        })
    }
}

/// Simulates the trace as it is, then after each policy's relayout (one unit of `progress`
/// each).
pub fn run(t: &TraceView<'_>, o: &Options, progress: &Progress) -> Result<Report> {
    super::check_block_bytes(o.block_bytes)?;
    crate::trace::check_intensity(o.intensity)?;
    let policies = o
        .policies
        .iter()
        .map(|p| p.parse())
        .collect::<Result<Vec<Policy>>>()?;
    // the dynamic layout's windows each hold requests (the others do not use them)
    let dynamic = policies.iter().any(|p| matches!(p, Policy::Dynamic));
    if o.windows == 0 || (dynamic && o.windows > t.len().max(1)) {
        return Err(Error::Usage(format!(
            "`windows` must be 1 to the trace's {} requests, found {}",
            t.len(),
            o.windows
        )));
    }
    let device = Config::from_toml(&o.device)?;
    let opts = SimOptions {
        intensity: o.intensity,
        ..SimOptions::default()
    };
    progress.add_total(policies.len() as u64 + 1);
    let before = simulate(t, &device, &opts)?;
    progress.advance(1);
    let mut runs = Vec::new();
    for policy in policies {
        progress.check()?;
        let (after, moved) = relayout(t, policy, o.block_bytes, o.windows);
        let perf = simulate(&after.view(), &device, &opts)?;
        runs.push(Run {
            policy: policy.name(),
            shape: shape(&after.view()),
            speedup: ratio(before.mean_us, perf.mean_us),
            p99_speedup: ratio(before.p99_us, perf.p99_us),
            energy_change: match (before.energy_j, perf.energy_j) {
                (Some(b), Some(a)) if b > 0.0 => Some((a - b) / b),
                _ => None,
            },
            moved_bytes: moved,
            perf,
        });
        progress.advance(1);
    }
    Ok(Report {
        device: device.name.clone(),
        requests: t.len() as u64,
        block_bytes: o.block_bytes,
        before: shape(t),
        before_perf: before,
        runs,
    })
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

fn simulate(t: &TraceView<'_>, device: &Config, opts: &SimOptions) -> Result<Perf> {
    let r = sim::simulate(t, device, opts)?;
    let f = &r.figures;
    Ok(Perf {
        mean_us: f.latency_us.map_or(0.0, |l| l.mean),
        p99_us: f.latency_us.map_or(0.0, |l| l.p.p99),
        iops: f.iops,
        energy_j: f.energy_j,
    })
}

/// Read/write split and the random/sequential split (a request is sequential when it starts
/// where the previous request of its volume ended).
pub fn shape(t: &TraceView<'_>) -> Shape {
    let mut last_end: FxHashMap<u32, u64> = FxHashMap::default();
    let (mut reads, mut writes, mut sequential) = (0u64, 0u64, 0u64);
    for i in 0..t.len() {
        reads += u64::from(t.op[i] == Op::Read as u8);
        writes += u64::from(t.op[i] == Op::Write as u8);
        let end = t.offset[i] + u64::from(t.size[i]);
        if last_end.insert(t.volume[i], end) == Some(t.offset[i]) {
            sequential += 1;
        }
    }
    let n = t.len().max(1) as f64;
    Shape {
        read_fraction: reads as f64 / n,
        write_fraction: writes as f64 / n,
        random_fraction: 1.0 - sequential as f64 / n,
        sequential_fraction: sequential as f64 / n,
    }
}

/// A block of a volume: (volume, block number).
type Block = (u32, u64);

/// The order blocks are placed in: by file and file order where the trace names files, else
/// by first touch; within a request, its blocks in order.
fn placement_order(t: &TraceView<'_>, block: u64, rows: std::ops::Range<usize>) -> Vec<Block> {
    let mut seen: FxHashSet<Block> = FxHashSet::default();
    let mut order = Vec::new();
    for i in rows {
        if t.op[i] == Op::Flush as u8 {
            continue;
        }
        let first = t.offset[i] / block;
        let last = (t.offset[i] + u64::from(t.size[i]).max(1) - 1) / block;
        for b in first..=last {
            if seen.insert((t.volume[i], b)) {
                order.push((t.volume[i], b));
            }
        }
    }
    if let Some(files) = t.file {
        // a file's blocks together, files in the order first touched, each in file order
        let mut file_of: FxHashMap<Block, (usize, u32)> = FxHashMap::default();
        let mut first_seen: FxHashMap<u32, usize> = FxHashMap::default();
        for (i, &file) in files.iter().enumerate() {
            let rank = {
                let next = first_seen.len();
                *first_seen.entry(file).or_insert(next)
            };
            let b = (t.volume[i], t.offset[i] / block);
            file_of.entry(b).or_insert((rank, file));
        }
        order.sort_by_key(|b| file_of.get(b).map_or((usize::MAX, *b), |&(rank, _)| (rank, *b)));
    }
    order
}

/// The workload on its new layout, and the bytes the layout moved.
pub fn relayout(t: &TraceView<'_>, policy: Policy, block: u64, windows: usize) -> (Trace, u64) {
    let mut counts: FxHashMap<Block, u64> = FxHashMap::default();
    if let Policy::Partial(_) = policy {
        for i in 0..t.len() {
            let last = (t.offset[i] + u64::from(t.size[i]).max(1) - 1) / block;
            for b in t.offset[i] / block..=last {
                *counts.entry((t.volume[i], b)).or_default() += 1;
            }
        }
    }
    let mut place: FxHashMap<Block, u64> = FxHashMap::default();
    let mut next_free: FxHashMap<u32, u64> = FxHashMap::default();
    let mut assign = |order: &[Block], place: &mut FxHashMap<Block, u64>| {
        for &b in order {
            if place.contains_key(&b) {
                continue;
            }
            let slot = next_free.entry(b.0).or_insert(0);
            place.insert(b, *slot);
            *slot += 1;
        }
    };
    let mut out = Trace {
        volumes: t.volumes.to_vec(),
        files: t.files.to_vec(),
        ..Trace::default()
    };
    out.reserve(t.len());
    let n = t.len();
    match policy {
        Policy::Full => assign(&placement_order(t, block, 0..n), &mut place),
        Policy::Partial(share) => {
            let mut hot: Vec<(Block, u64)> = counts.into_iter().collect();
            // hottest first; equal counts in block order, so the choice is deterministic
            hot.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            #[allow(clippy::cast_sign_loss)] // a positive share of a count
            let keep = ((hot.len() as f64 * share).ceil() as usize).min(hot.len());
            let hot: FxHashSet<Block> = hot[..keep].iter().map(|&(b, _)| b).collect();
            let order: Vec<Block> = placement_order(t, block, 0..n)
                .into_iter()
                .filter(|b| hot.contains(b))
                .collect();
            assign(&order, &mut place);
        }
        Policy::Dynamic => {}
    }
    let window = n.div_ceil(windows).max(1);
    let mut moved = 0u64;
    for start in (0..n).step_by(window) {
        let rows = start..(start + window).min(n);
        for i in rows.clone() {
            let b = (t.volume[i], t.offset[i] / block);
            let offset = match place.get(&b) {
                Some(&slot) => slot * block + t.offset[i] % block,
                None => t.offset[i],
            };
            out.ts_ns.push(t.ts_ns[i]);
            out.offset.push(offset);
            out.size.push(t.size[i]);
            out.op.push(t.op[i]);
            out.volume.push(t.volume[i]);
            out.stream.push(t.stream[i]);
        }
        if policy == Policy::Dynamic {
            assign(&placement_order(t, block, rows), &mut place);
        }
    }
    for (&(_, b), &slot) in &place {
        moved += u64::from(b != slot) * block;
    }
    if let Some(files) = t.file {
        out.file = Some(files.to_vec());
    }
    (out, moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::testing::reads;

    #[test]
    fn each_policy_run_apart_joins_into_the_whole_report() {
        let ts: Vec<u64> = (0..2000).map(|i| i * 2_000_000).collect();
        let offsets: Vec<u64> = (0..2000).map(|i| (i * 7919 % 600) * 4096).collect();
        let t = reads(&ts, &offsets, 4096);
        let device = crate::sim::PRESETS[0].1;
        let options = serde_json::json!({
            "device": device,
            "policies": ["full", "partial:20%", "dynamic"],
        });
        let whole = Defrag.run(&t.view(), &options, &Progress::default()).unwrap();
        let points = Defrag.points(&options).unwrap().unwrap();
        assert_eq!(points.len(), 3);
        let reports: Vec<serde_json::Value> = points
            .iter()
            .map(|p| Defrag.run(&t.view(), p, &Progress::default()).unwrap())
            .collect();
        assert_eq!(Defrag.join(&options, &reports).unwrap(), whole);
        let bad = serde_json::json!({"device": device, "policies": ["tidy"]});
        assert!(Defrag.points(&bad).is_err());
    }

    #[test]
    fn a_sequential_trace_stays_as_it_is() {
        let ts: Vec<u64> = (0..100).map(|i| i * 1_000_000).collect();
        let offsets: Vec<u64> = (0..100).map(|i| i * 8192).collect();
        let t = reads(&ts, &offsets, 8192);
        for policy in [Policy::Full, Policy::Partial(0.5), Policy::Dynamic] {
            let (after, moved) = relayout(&t.view(), policy, 4096, 10);
            assert_eq!(after.offset, t.offset, "{policy:?}");
            assert_eq!(moved, 0, "{policy:?}");
        }
    }

    #[test]
    fn co_accessed_blocks_come_together() {
        // a thread reads 4 KiB at 100, 7, 55, 3 (blocks), twice over: after a full re-layout
        // the blocks are 0, 1, 2, 3 in that order and the second pass is sequential too
        let blocks = [100u64, 7, 55, 3, 100, 7, 55, 3];
        let ts: Vec<u64> = (0..8).collect();
        let t = reads(&ts, &blocks.iter().map(|b| b * 4096).collect::<Vec<_>>(), 4096);
        let (after, moved) = relayout(&t.view(), Policy::Full, 4096, 1);
        assert_eq!(after.offset, [0, 4096, 8192, 12288, 0, 4096, 8192, 12288]);
        // block 3 lands where it was
        assert_eq!(moved, 3 * 4096);
        assert!((shape(&t.view()).sequential_fraction - 0.0).abs() < 1e-12);
        assert!((shape(&after.view()).sequential_fraction - 6.0 / 8.0).abs() < 1e-12);
        // dynamic: the first window (half) runs on the old layout, the second on the new
        let (after, _) = relayout(&t.view(), Policy::Dynamic, 4096, 2);
        assert_eq!(after.offset[..4], t.offset[..4]);
        assert_eq!(after.offset[4..], [0, 4096, 8192, 12288]);
        // partial: the hottest half (each block is read twice: ties go by block number)
        let (after, _) = relayout(&t.view(), Policy::Partial(0.5), 4096, 1);
        assert_eq!(after.offset[..4], [100 * 4096, 0, 55 * 4096, 4096]);
    }

    #[test]
    fn policies_parse_and_name_themselves() {
        assert_eq!("partial:10%".parse::<Policy>().unwrap(), Policy::Partial(0.1));
        assert_eq!("partial:0.25".parse::<Policy>().unwrap(), Policy::Partial(0.25));
        assert!("partial:150%".parse::<Policy>().is_err());
        assert!("shuffle"
            .parse::<Policy>()
            .unwrap_err()
            .to_string()
            .contains("`policies`"));
        assert_eq!(Policy::Partial(0.1).name(), "partial:10%");
    }

    #[test]
    fn a_scattered_workload_gets_faster_on_a_disk() {
        // two threads each reading a run of blocks, interleaved, the blocks scattered over the
        // disk: after the re-layout the disk seeks far less
        let mut offsets = Vec::new();
        for k in 0..400u64 {
            offsets.push(((k * 7919) % 100_000) * (1 << 20));
        }
        let ts: Vec<u64> = (0..400).map(|i| i * 20_000_000).collect();
        let t = reads(&ts, &offsets, 4096);
        let device = crate::sim::PRESETS[0].1.to_string();
        let o = Options {
            device,
            policies: vec!["full".into()],
            block_bytes: 4096,
            windows: 10,
            intensity: 1.0,
        };
        let r = run(&t.view(), &o, &Progress::default()).unwrap();
        assert!(r.runs[0].speedup > 1.5, "{}", r.runs[0].speedup);
        assert!(r.runs[0].energy_change.is_some_and(|e| e < 0.0));
    }
}
