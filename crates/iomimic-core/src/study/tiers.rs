//! An SSD cache in front of a backend device, simulated as two tiers.
//!
//! ## Algorithm
//! The workload's requests pass through a cache policy in time order, keyed by 4 KiB blocks
//! (a request hits when every block it touches is cached) or, in the request-keyed mode, by
//! the request itself. Each request then becomes device I/Os on two tiers:
//! - a read hit reads the SSD; a read miss reads the backend, and the missing data is written
//!   to the SSD once the backend has returned it (a fill, off the request's path);
//! - a write, by the write policy: *read-only* (write-around) writes the backend only and
//!   leaves the cache as it was; *write-through* writes both at once and caches the data (the
//!   request waits for both); *write-back* writes the SSD, caches the data, and the backend
//!   gets the write behind it (a destage, off the request's path).
//!
//! The backend tier is simulated first (its destages included), then the SSD tier with each
//! fill issued when its backend read completed. A request's latency is that of the slower of
//! its on-path I/Os. Both tiers are the trace-driven simulator: queueing, seeks, channel and
//! die contention are theirs.
//!
//! LRU over blocks takes one pass for every cache size: each block access's LRU stack depth
//! (the crate's [`lru_stack`]) says at once whether a cache of C blocks holds it (depth ≤ C).
//! Other policies, and the request-keyed mode, replay the policy per size.
//!
//! ## Complexity
//! O(a log a) for the stack depths of a block accesses, O(a) per (policy, size) replay, and
//! two simulations per size.

use crate::analyze::lru_stack::Stack;
use crate::cache::{self, PolicySpec};
use crate::error::Result;
use crate::random::splitmix;
use crate::sim::{self, Config, SimOptions};
use crate::trace::{Op, Trace, TraceView};

/// What writes do with the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WritePolicy {
    /// Writes go to the backend only (write-around); the cache holds what was read.
    ReadOnly,
    WriteThrough,
    WriteBack,
}

/// How requests are keyed in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keying {
    /// Blocks of this many bytes; a request touches every block it overlaps.
    Blocks(u64),
    /// Each request is one object keyed by its start offset and sized by its length; a hit
    /// counts whatever its length (libCacheSim's convention for block traces).
    Requests,
}

/// Which requests hit the cache: per request, whether it was served from it; and the bytes
/// that hit.
#[derive(Debug, Clone)]
pub struct Hits {
    pub hit: Vec<bool>,
    pub requests: u64,
    pub hits: u64,
    pub bytes: u64,
    pub byte_hits: u64,
}

/// Whether request `i` passes through the cache (reads always; writes unless write-around).
fn cached(op: u8, write_policy: WritePolicy) -> bool {
    op == Op::Read as u8 || (op == Op::Write as u8 && write_policy != WritePolicy::ReadOnly)
}

fn volume_key(volume: u32) -> u64 {
    splitmix(u64::from(volume))
}

fn blocks(t: &TraceView<'_>, i: usize, block: u64) -> std::ops::Range<u64> {
    let first = t.offset[i] / block;
    let last = (t.offset[i] + u64::from(t.size[i]).max(1) - 1) / block;
    first..last + 1
}

/// LRU stack depths of every block access of the cached requests, in order (None: first
/// touch): one pass serves every cache size.
pub fn lru_depths(t: &TraceView<'_>, block: u64, write_policy: WritePolicy) -> Vec<Option<u64>> {
    let mut stack: Stack = Stack::new(0);
    let mut depths = Vec::with_capacity(t.len());
    for i in 0..t.len() {
        if cached(t.op[i], write_policy) {
            for b in blocks(t, i, block) {
                depths.push(stack.touch((t.volume[i], b)));
            }
        }
    }
    depths
}

/// The hits of an LRU cache of `capacity` bytes, from [`lru_depths`].
pub fn lru_hits(
    t: &TraceView<'_>,
    depths: &[Option<u64>],
    block: u64,
    capacity: u64,
    write_policy: WritePolicy,
) -> Hits {
    let slots = capacity / block;
    let mut h = Hits::empty(t.len());
    let mut next = 0;
    for i in 0..t.len() {
        if !cached(t.op[i], write_policy) {
            continue;
        }
        let n = blocks(t, i, block).count();
        let all = depths[next..next + n]
            .iter()
            .all(|d| d.is_some_and(|d| d <= slots));
        next += n;
        h.count(i, all, u64::from(t.size[i]), t.op[i]);
    }
    h
}

impl Hits {
    fn empty(n: usize) -> Self {
        Self {
            hit: vec![false; n],
            requests: 0,
            hits: 0,
            bytes: 0,
            byte_hits: 0,
        }
    }

    fn count(&mut self, i: usize, hit: bool, bytes: u64, op: u8) {
        // hit ratios are the reads' (what a cache is for); writes only change what is cached
        if op != Op::Read as u8 {
            self.hit[i] = hit;
            return;
        }
        self.hit[i] = hit;
        self.requests += 1;
        self.bytes += bytes;
        if hit {
            self.hits += 1;
            self.byte_hits += bytes;
        }
    }

    pub fn hit_ratio(&self) -> f64 {
        ratio(self.hits, self.requests)
    }

    pub fn byte_hit_ratio(&self) -> f64 {
        ratio(self.byte_hits, self.bytes)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The hits of a cache of `capacity` bytes under `policy`, replayed.
pub fn replay_hits(
    t: &TraceView<'_>,
    policy: &PolicySpec,
    capacity: u64,
    keying: Keying,
    write_policy: WritePolicy,
) -> Hits {
    let mut cache = (policy.build)(capacity);
    let mut h = Hits::empty(t.len());
    for i in 0..t.len() {
        if !cached(t.op[i], write_policy) {
            continue;
        }
        let size = u64::from(t.size[i]);
        let hit = match keying {
            Keying::Requests => cache.access(t.offset[i] ^ volume_key(t.volume[i]), size.max(1)),
            Keying::Blocks(block) => {
                let v = volume_key(t.volume[i]);
                // every block is accessed (a miss admits it) even after the first miss
                let mut all = true;
                for b in blocks(t, i, block) {
                    all &= cache.access(b ^ v, block);
                }
                all
            }
        };
        h.count(i, hit, size, t.op[i]);
    }
    h
}

/// What one tiered run measured.
#[derive(Debug, Clone)]
pub struct TierRun {
    /// Latency of each request (ns), in trace order.
    pub latency_ns: Vec<u64>,
    /// From the first arrival to the last completion of any I/O (ns).
    pub span_ns: u64,
    /// Energy of both tiers, where their device files give power figures.
    pub energy_j: Option<f64>,
}

/// One tier's share of the work: requests as device I/Os, and which workload request each
/// belongs to (`None`: off every request's path).
struct TierTrace {
    trace: Trace,
    owner: Vec<Option<usize>>,
}

impl TierTrace {
    fn new(volumes: &[String]) -> Self {
        Self {
            trace: Trace {
                volumes: volumes.to_vec(),
                ..Trace::default()
            },
            owner: Vec::new(),
        }
    }

    fn push(&mut self, t: &TraceView<'_>, i: usize, ts: u64, op: Op, owner: Option<usize>) {
        let tr = &mut self.trace;
        tr.ts_ns.push(ts);
        tr.offset.push(t.offset[i]);
        tr.size.push(t.size[i].max(1));
        tr.op.push(op as u8);
        tr.volume.push(t.volume[i]);
        tr.stream.push(t.stream[i]);
        self.owner.push(owner);
    }

    /// Simulates the tier: when each I/O completed, whose it was, and the tier's energy.
    fn simulate(self, config: &Config) -> Result<TierDone> {
        if self.trace.is_empty() {
            return Ok(TierDone::default());
        }
        // stable: I/Os at one instant keep the order they were made in
        let mut order: Vec<usize> = (0..self.trace.len()).collect();
        order.sort_by_key(|&k| self.trace.ts_ns[k]);
        let pick = |v: &[u64]| order.iter().map(|&k| v[k]).collect::<Vec<_>>();
        let t = &self.trace;
        let sorted = Trace {
            ts_ns: pick(&t.ts_ns),
            offset: pick(&t.offset),
            size: order.iter().map(|&k| t.size[k]).collect(),
            op: order.iter().map(|&k| t.op[k]).collect(),
            volume: order.iter().map(|&k| t.volume[k]).collect(),
            stream: order.iter().map(|&k| t.stream[k]).collect(),
            volumes: t.volumes.clone(),
            ..Trace::default()
        };
        let start = sorted.ts_ns[0];
        let r = sim::simulate(&sorted.view(), config, &SimOptions::default())?;
        Ok(TierDone {
            owner: order.iter().map(|&k| self.owner[k]).collect(),
            // the simulator counts from the tier's first I/O: back to workload time
            done_at: r
                .issue_ns
                .iter()
                .zip(&r.latency_ns)
                .map(|(&i, &l)| start + i + l)
                .collect(),
            energy_j: r.figures.energy_j,
        })
    }
}

/// What a tier's simulation gave: per I/O, the workload request it belongs to and when it
/// completed (workload time).
#[derive(Default)]
struct TierDone {
    owner: Vec<Option<usize>>,
    done_at: Vec<u64>,
    energy_j: Option<f64>,
}

/// Runs workload `t` (times already scaled) on `backend` alone: the baseline.
pub fn baseline(t: &TraceView<'_>, backend: &Config) -> Result<TierRun> {
    let r = sim::simulate(t, backend, &SimOptions::default())?;
    let span = span_of(t.ts_ns, &r.latency_ns);
    Ok(TierRun {
        latency_ns: r.latency_ns,
        span_ns: span,
        energy_j: r.figures.energy_j,
    })
}

fn span_of(arrivals: &[u64], latency: &[u64]) -> u64 {
    let first = arrivals.first().copied().unwrap_or(0);
    let last = arrivals
        .iter()
        .zip(latency)
        .map(|(&a, &l)| a + l)
        .max()
        .unwrap_or(first);
    last - first
}

/// Runs workload `t` on the SSD tier `ssd` in front of `backend`, with the hits found by a
/// cache policy.
pub fn tiered(
    t: &TraceView<'_>,
    hits: &Hits,
    write_policy: WritePolicy,
    backend: &Config,
    ssd: &Config,
) -> Result<TierRun> {
    let n = t.len();
    let mut disk = TierTrace::new(t.volumes);
    let mut flash = TierTrace::new(t.volumes);
    // reads that missed: filled into the SSD once the backend returns them
    let mut fills: Vec<usize> = Vec::new();
    for i in 0..n {
        let ts = t.ts_ns[i];
        let op = Op::from_code(t.op[i]).unwrap_or(Op::Read);
        match op {
            Op::Read if hits.hit[i] => flash.push(t, i, ts, Op::Read, Some(i)),
            Op::Read => {
                disk.push(t, i, ts, Op::Read, Some(i));
                fills.push(i);
            }
            Op::Write => match write_policy {
                WritePolicy::ReadOnly => disk.push(t, i, ts, Op::Write, Some(i)),
                WritePolicy::WriteThrough => {
                    disk.push(t, i, ts, Op::Write, Some(i));
                    flash.push(t, i, ts, Op::Write, Some(i));
                }
                WritePolicy::WriteBack => {
                    flash.push(t, i, ts, Op::Write, Some(i));
                    disk.push(t, i, ts, Op::Write, None);
                }
            },
            // trims and flushes concern the data's home
            Op::Trim | Op::Flush => disk.push(t, i, ts, op, Some(i)),
        }
    }
    let mut latency = vec![0u64; n];
    let disk = disk.simulate(backend)?;
    let mut done_at = vec![0u64; n];
    // the last I/O of either tier, destages and fills included
    let mut last = t.ts_ns.first().copied().unwrap_or(0);
    for (&owner, &done) in disk.owner.iter().zip(&disk.done_at) {
        last = last.max(done);
        if let Some(i) = owner {
            done_at[i] = done_at[i].max(done);
        }
    }
    for &i in &fills {
        if done_at[i] > 0 {
            flash.push(t, i, done_at[i], Op::Write, None);
        }
    }
    let flash = flash.simulate(ssd)?;
    for (&owner, &done) in flash.owner.iter().zip(&flash.done_at) {
        last = last.max(done);
        if let Some(i) = owner {
            done_at[i] = done_at[i].max(done);
        }
    }
    for i in 0..n {
        latency[i] = done_at[i].saturating_sub(t.ts_ns[i]);
    }
    let energy_j = match (disk.energy_j, flash.energy_j) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    Ok(TierRun {
        span_ns: last - t.ts_ns.first().copied().unwrap_or(0),
        latency_ns: latency,
        energy_j,
    })
}

/// The built-in policy called `name`.
pub fn policy(name: &str) -> Result<&'static PolicySpec> {
    cache::POLICIES
        .iter()
        .copied()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = cache::POLICIES.iter().map(|p| p.name).collect();
            crate::error::Error::Usage(format!(
                "unknown `policies` entry {name:?}; policies are {}",
                names.join(", ")
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::testing::reads;

    #[test]
    fn one_pass_lru_equals_replayed_lru_at_every_size() {
        let offsets: Vec<u64> = (0..3000u64).map(|i| (i * 7919 % 400 + i % 3) * 4096).collect();
        let ts: Vec<u64> = (0..3000).collect();
        let mut t = reads(&ts, &offsets, 8192);
        t.op = (0..3000).map(|i| u8::from(i % 5 == 0)).collect();
        for wp in [WritePolicy::ReadOnly, WritePolicy::WriteThrough] {
            let depths = lru_depths(&t.view(), 4096, wp);
            for blocks in [1u64, 16, 64, 200, 401, 1000] {
                let one = lru_hits(&t.view(), &depths, 4096, blocks * 4096, wp);
                let lru = policy("lru").unwrap();
                let again = replay_hits(&t.view(), lru, blocks * 4096, Keying::Blocks(4096), wp);
                assert_eq!(one.hit, again.hit, "{blocks} blocks, {wp:?}");
                assert_eq!(one.hits, again.hits);
            }
        }
    }

    #[test]
    fn a_cached_read_is_served_by_the_ssd() {
        // a 4 KiB read, five reads elsewhere, then the first again: on an idle disk (its own
        // track buffer off, so only the SSD cache can serve a repeat) with an SSD cache
        let ts: Vec<u64> = (0..7).map(|i| i * 100_000_000).collect();
        let far: Vec<u64> = [1u64, 50, 100, 150, 200, 250, 1]
            .iter()
            .map(|g| g << 30)
            .collect();
        let t = reads(&ts, &far, 4096);
        let text = crate::sim::PRESETS[0]
            .1
            .replace("read_ahead = true", "read_ahead = false");
        let backend = Config::from_toml(&text).unwrap();
        let ssd = Config::preset("ssd-sata").unwrap();
        let lru = policy("lru").unwrap();
        let hits = replay_hits(
            &t.view(),
            lru,
            1 << 20,
            Keying::Blocks(4096),
            WritePolicy::ReadOnly,
        );
        assert_eq!(hits.hit, [false, false, false, false, false, false, true]);
        let run = tiered(&t.view(), &hits, WritePolicy::ReadOnly, &backend, &ssd).unwrap();
        let base = baseline(&t.view(), &backend).unwrap();
        // the misses cost what the disk alone costs; the hit far less
        assert_eq!(run.latency_ns[..6], base.latency_ns[..6]);
        assert!(
            run.latency_ns[6] * 10 < base.latency_ns[6],
            "{:?} {:?}",
            run.latency_ns,
            base.latency_ns
        );
    }

    #[test]
    fn write_back_takes_the_ssds_time_and_destages_behind() {
        let mut t = reads(&[0], &[1 << 30], 4096);
        t.op = vec![Op::Write as u8];
        let backend = Config::preset("hdd-7200").unwrap();
        let ssd = Config::preset("ssd-sata").unwrap();
        let lru = policy("lru").unwrap();
        let through = replay_hits(
            &t.view(),
            lru,
            1 << 20,
            Keying::Blocks(4096),
            WritePolicy::WriteThrough,
        );
        let wt = tiered(&t.view(), &through, WritePolicy::WriteThrough, &backend, &ssd).unwrap();
        let wb = tiered(&t.view(), &through, WritePolicy::WriteBack, &backend, &ssd).unwrap();
        let base = baseline(&t.view(), &backend).unwrap();
        assert!(wt.latency_ns[0] >= base.latency_ns[0]);
        assert!(wb.latency_ns[0] * 10 < base.latency_ns[0]);
        // the destage still occupies the disk: the span covers it
        assert!(wb.span_ns >= base.latency_ns[0]);
    }
}
