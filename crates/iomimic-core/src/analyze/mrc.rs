//! The LRU miss-ratio curve over 4 KiB blocks, for every cache size in one pass.
//!
//! ## Algorithm
//! A request touches every 4 KiB block it overlaps (reads and writes; trims and flushes move no
//! cached data). Each block access's *stack distance* is the number of distinct blocks touched
//! since the previous access to the same block; an LRU cache of C blocks hits exactly the
//! accesses with distance < C. Distances come from the crate's LRU stack
//! ([`super::lru_stack`]: a Fenwick tree over access times holding a 1 at the latest access of
//! every block, as Bennett & Kruskal). The histogram of distances then
//! gives the miss ratio at every size: misses(C) = cold misses + accesses with distance ≥ C.
//!
//! Above a count of block accesses the caller chooses, blocks are sampled spatially as in SHARDS: a block
//! is tracked when a hash of its address falls below rate × 2^24, and each sampled distance is
//! scaled by 1/rate.
//!
//! ## Complexity
//! O(a log a) time for a block accesses, O(a + footprint) memory (times are 32-bit).
//!
//! ## References
//! Mattson et al., "Evaluation techniques for storage hierarchies" (1970); Bennett & Kruskal,
//! "LRU stack processing" (1975); Waldspurger et al., "Efficient MRC Construction with SHARDS"
//! (FAST 2015).

use serde::Serialize;

use super::lru_stack::Stack;

use crate::error::Result;
use crate::progress::Progress;
use crate::trace::{Op, TraceView};

pub const BLOCK: u64 = 4096;
/// Smallest cache size on the curve.
const FIRST_CACHE: u64 = 1 << 20;
const SHARDS_MODULUS: u64 = 1 << 24;

#[derive(Debug, Clone, Serialize)]
pub struct MrcPoint {
    pub cache_bytes: u64,
    pub miss_ratio: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReuseBucket {
    /// Distances in blocks, `[from, to)`.
    pub from_blocks: u64,
    pub to_blocks: u64,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Mrc {
    pub block_bytes: u64,
    /// Block accesses (scaled to the whole trace when sampled).
    pub accesses: u64,
    pub cold_misses: u64,
    pub footprint_bytes: u64,
    pub curve: Vec<MrcPoint>,
    /// Stack distances in log2 buckets; cold misses are not in it.
    pub reuse_histogram: Vec<ReuseBucket>,
    /// 1.0 for an exact curve, else the SHARDS sampling rate.
    pub sampling_rate: f64,
}

fn mix(volume: u32, block: u64) -> u64 {
    // SplitMix64 finaliser: spreads adjacent blocks uniformly for sampling.
    let mut z = block ^ (u64::from(volume) << 52) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 4 KiB block accesses of a trace's reads and writes (what an exact curve holds).
pub fn block_accesses(t: &TraceView<'_>) -> u64 {
    (0..t.len())
        .filter(|&i| (t.op[i] == Op::Read as u8 || t.op[i] == Op::Write as u8) && t.size[i] > 0)
        .map(|i| (t.offset[i] + u64::from(t.size[i]) - 1) / BLOCK - t.offset[i] / BLOCK + 1)
        .sum()
}

/// The miss-ratio curve of the requests `rows` (indices into `t`, in time order), sampling
/// blocks at `rate` (1.0 = exact).
///
/// `progress` counts the rows by [`Progress::tick`] (the caller counts the rest with
/// [`Progress::ticked`]) and stops the work with `Interrupted` when told to.
pub fn miss_ratio_curve(
    t: &TraceView<'_>,
    rows: impl Iterator<Item = usize> + Clone,
    rate: f64,
    progress: &Progress,
) -> Result<Mrc> {
    let threshold = (rate.clamp(0.0, 1.0) * SHARDS_MODULUS as f64) as u64;
    let sampled = |volume: u32, block: u64| rate >= 1.0 || mix(volume, block) % SHARDS_MODULUS < threshold;
    let blocks_of = |i: usize| {
        let op = t.op[i];
        if op != Op::Read as u8 && op != Op::Write as u8 || t.size[i] == 0 {
            return 0..0;
        }
        let first = t.offset[i] / BLOCK;
        let last = (t.offset[i] + u64::from(t.size[i]) - 1) / BLOCK;
        first..last + 1
    };
    let total: usize = rows
        .clone()
        .map(|i| blocks_of(i).filter(|&b| sampled(t.volume[i], b)).count())
        .sum();
    let mut stack = Stack::new(total);
    // distances[d] = sampled accesses at distance d (in sampled blocks): d distinct blocks
    // touched since the block's previous access, its stack depth less one
    let mut distances: Vec<u64> = Vec::new();
    let mut cold = 0u64;
    for (k, i) in rows.enumerate() {
        progress.tick(k)?;
        let volume = t.volume[i];
        for block in blocks_of(i) {
            if !sampled(volume, block) {
                continue;
            }
            match stack.touch((volume, block)) {
                Some(depth) => {
                    let d = (depth - 1) as usize;
                    if d >= distances.len() {
                        distances.resize(d + 1, 0);
                    }
                    distances[d] += 1;
                }
                None => cold += 1,
            }
        }
    }
    Ok(finish(
        &distances,
        cold,
        stack.keys() as u64,
        rate.clamp(f64::MIN_POSITIVE, 1.0),
    ))
}

fn finish(distances: &[u64], cold: u64, sampled_footprint: u64, rate: f64) -> Mrc {
    let scale = 1.0 / rate;
    let reuses: u64 = distances.iter().sum();
    let accesses = reuses + cold;
    let footprint_blocks = (sampled_footprint as f64 * scale).round() as u64;
    // hits_below[k] = reuses with sampled distance < k
    let mut curve = Vec::new();
    let mut cache = FIRST_CACHE;
    let mut prefix = 0u64;
    let mut k = 0usize;
    loop {
        let blocks = cache / BLOCK;
        // a sampled distance d stands for d / rate real blocks
        let limit = ((blocks as f64) * rate).ceil() as usize;
        while k < limit.min(distances.len()) {
            prefix += distances[k];
            k += 1;
        }
        let miss_ratio = if accesses == 0 {
            0.0
        } else {
            1.0 - prefix as f64 / accesses as f64
        };
        curve.push(MrcPoint {
            cache_bytes: cache,
            miss_ratio,
        });
        if blocks >= footprint_blocks {
            break;
        }
        cache = (cache * 2).min(footprint_blocks.max(1) * BLOCK).max(cache + 1);
    }
    let mut reuse_histogram: Vec<ReuseBucket> = Vec::new();
    for (d, &count) in distances.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let real = (d as f64 * scale) as u64;
        let from = if real == 0 { 0 } else { 1u64 << real.ilog2() };
        let to = if real == 0 { 1 } else { from * 2 };
        let scaled = (count as f64 * scale).round() as u64;
        match reuse_histogram.last_mut() {
            Some(b) if b.from_blocks == from => b.count += scaled,
            _ => reuse_histogram.push(ReuseBucket {
                from_blocks: from,
                to_blocks: to,
                count: scaled,
            }),
        }
    }
    Mrc {
        block_bytes: BLOCK,
        accesses: (accesses as f64 * scale).round() as u64,
        cold_misses: (cold as f64 * scale).round() as u64,
        footprint_bytes: footprint_blocks * BLOCK,
        curve,
        reuse_histogram,
        sampling_rate: rate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    fn curve(t: &TraceView<'_>, rows: std::ops::Range<usize>, rate: f64) -> Mrc {
        miss_ratio_curve(t, rows, rate, &Progress::default()).unwrap()
    }

    fn reads(blocks: &[u64]) -> Trace {
        let ts: Vec<u64> = (0..blocks.len() as u64).collect();
        crate::trace::testing::reads(&ts, &blocks.iter().map(|b| b * BLOCK).collect::<Vec<_>>(), 4096)
    }

    #[test]
    fn distances_by_hand() {
        // a b c a b c: every reuse has 2 distinct blocks in between
        let t = reads(&[0, 1, 2, 0, 1, 2]);
        let m = curve(&t.view(), 0..6, 1.0);
        assert_eq!((m.accesses, m.cold_misses, m.footprint_bytes), (6, 3, 3 * 4096));
        assert_eq!(m.reuse_histogram.len(), 1);
        assert_eq!(
            (m.reuse_histogram[0].from_blocks, m.reuse_histogram[0].count),
            (2, 3)
        );
        // 1 MiB (256 blocks) holds all three: only the cold misses
        assert_eq!(m.curve.len(), 1);
        assert!((m.curve[0].miss_ratio - 0.5).abs() < 1e-12);
    }

    #[test]
    fn curve_falls_at_the_working_set() {
        // a loop over 512 blocks (2 MiB), twice: a 1 MiB LRU cache misses everything,
        // a 2 MiB cache hits the whole second pass
        let blocks: Vec<u64> = (0..512).chain(0..512).collect();
        let t = reads(&blocks);
        let m = curve(&t.view(), 0..1024, 1.0);
        let at = |bytes: u64| {
            m.curve
                .iter()
                .find(|p| p.cache_bytes == bytes)
                .unwrap()
                .miss_ratio
        };
        assert_eq!(at(1 << 20), 1.0);
        assert_eq!(at(2 << 20), 0.5);
        assert_eq!(m.curve.last().unwrap().cache_bytes, 2 << 20);
    }

    #[test]
    fn a_request_touches_every_block_it_overlaps() {
        let mut t = reads(&[0, 0]);
        t.offset = vec![4000, 4096]; // the first spans blocks 0 and 1
        t.size = vec![200, 4096];
        let m = curve(&t.view(), 0..2, 1.0);
        assert_eq!((m.accesses, m.cold_misses), (3, 2));
        assert_eq!(m.reuse_histogram[0].from_blocks, 0);
    }

    #[test]
    fn sampling_tracks_the_exact_curve() {
        let mut state = 7u64;
        let blocks: Vec<u64> = (0..200_000)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let u = (state >> 33) as f64 / (1u64 << 31) as f64;
                (u * u * 20_000.0) as u64 // skewed popularity over 20k blocks
            })
            .collect();
        let t = reads(&blocks);
        let exact = curve(&t.view(), 0..blocks.len(), 1.0);
        let approx = curve(&t.view(), 0..blocks.len(), 0.1);
        for (e, a) in exact.curve.iter().zip(&approx.curve) {
            assert!((e.miss_ratio - a.miss_ratio).abs() < 0.02, "{e:?} {a:?}");
        }
    }
}
