//! Tests across policies: the registry, LRU against the one-pass miss-ratio curve, ARC against
//! LRU on scans. Each policy's hand-worked traces are in its own file.

use super::*;
use crate::analyze::mrc::{miss_ratio_curve, BLOCK};
use crate::trace::{Op, Trace};

/// A small deterministic generator (the tests need no statistical quality).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.below(1 << 30) as f64) < p * f64::from(1u32 << 30)
    }
}

#[test]
fn the_registry_builds_by_name_and_names_the_choices() {
    for spec in POLICIES {
        // 100 bytes: S3-FIFO's small queue (10 %) must hold more than one 1-byte object
        let mut p = build(spec.name, 100, POLICIES).unwrap();
        let f = replay(p.as_mut(), testing::letters("abab"));
        assert_eq!(
            (f.accesses, f.hits, f.bytes, f.byte_hits),
            (4, 2, 4, 2),
            "{}",
            spec.name
        );
        assert!((f.miss_ratio() - 0.5).abs() < 1e-12);
    }
    let e = build("belady", 1, POLICIES).err().unwrap().to_string();
    assert!(e.contains("`policy`") && e.contains("lru, fifo, clock"), "{e}");
}

/// Two volumes, skewed offsets, requests of 1 to 4 blocks not aligned to blocks (so many span
/// one more), a few trims (no cached data).
fn block_trace() -> Trace {
    let mut rng = Lcg(11);
    let n = 30_000;
    let mut t = Trace {
        volumes: vec!["a".into(), "b".into()],
        ..Trace::default()
    };
    for i in 0..n {
        let volume = rng.below(2) as u32;
        // skewed: the square of a uniform draw piles up near block 0
        let u = rng.below(1 << 16);
        let block = (u * u) >> 20; // 0 .. 4096
        t.ts_ns.push(i);
        t.offset.push(block * BLOCK + 512 * rng.below(8));
        t.size
            .push(BLOCK as u32 * (1 + rng.below(4) as u32) - 512 * rng.below(2) as u32);
        t.op.push(if rng.chance(0.02) { Op::Trim } else { Op::Read } as u8);
        t.volume.push(volume);
        t.stream.push(0);
    }
    t
}

/// The block accesses the curve counts: every 4 KiB block a read or write overlaps, keyed by
/// (volume, block).
fn block_accesses(t: &Trace) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for i in 0..t.ts_ns.len() {
        if t.op[i] != Op::Read as u8 && t.op[i] != Op::Write as u8 {
            continue;
        }
        let first = t.offset[i] / BLOCK;
        let last = (t.offset[i] + u64::from(t.size[i]) - 1) / BLOCK;
        out.extend((first..=last).map(|b| (u64::from(t.volume[i]) << 48 | b, BLOCK)));
    }
    out
}

#[test]
fn lru_at_every_size_of_the_curve_is_the_one_pass_curve() {
    let t = block_trace();
    let mrc = miss_ratio_curve(
        &t.view(),
        0..t.ts_ns.len(),
        1.0,
        &crate::progress::Progress::default(),
    )
    .unwrap();
    let accesses = block_accesses(&t);
    assert_eq!(mrc.accesses, accesses.len() as u64);
    assert!(mrc.curve.len() >= 4, "{} points", mrc.curve.len());
    for point in &mrc.curve {
        let mut lru = build("lru", point.cache_bytes, POLICIES).unwrap();
        let f = replay(lru.as_mut(), accesses.iter().copied());
        // the same hit count: one access is 1/50,000 of the ratio, far above float rounding
        assert!(
            (f.miss_ratio() - point.miss_ratio).abs() < 1e-12,
            "{} bytes: replay {} curve {}",
            point.cache_bytes,
            f.miss_ratio(),
            point.miss_ratio
        );
    }
    // and the curve is not flat: the sizes above do discriminate
    let first = mrc.curve.first().unwrap().miss_ratio;
    let last = mrc.curve.last().unwrap().miss_ratio;
    assert!(first > last + 0.1, "{first} {last}");
}

/// ARC may trail LRU by this much in miss ratio (a few accesses in 10,000 where both keep
/// everything that recurs); on these traces it is usually far ahead.
const ARC_MARGIN: f64 = 0.005;

#[test]
fn arc_is_never_much_worse_than_lru_on_scans_mixed_with_a_hot_set() {
    let mut ahead = 0;
    let mut cases = 0;
    for (hot, scan_len, scan_share) in [
        (50, 1200, 0.2),
        (300, 3000, 0.5),
        (900, 1200, 0.5),
        (300, 10_000, 0.8),
    ] {
        for cache_objects in [250u64, 1000, 2000] {
            for variable in [false, true] {
                let mut rng = Lcg(hot * 7 + scan_len);
                let mut scan_at = 0;
                let accesses: Vec<(u64, u64)> = (0..30_000)
                    .map(|_| {
                        let key = if rng.chance(scan_share) {
                            scan_at = (scan_at + 1) % scan_len;
                            1_000_000 + scan_at
                        } else {
                            rng.below(hot)
                        };
                        // a size per object, 512 B to 64 KiB, or all 4 KiB
                        let size = if variable {
                            512 + (key * 2_654_435_761) % 65_024
                        } else {
                            4096
                        };
                        (key, size)
                    })
                    .collect();
                let mean = accesses.iter().map(|a| a.1).sum::<u64>() / accesses.len() as u64;
                let capacity = cache_objects * mean;
                let ratio = |name: &str| {
                    let mut p = build(name, capacity, POLICIES).unwrap();
                    replay(p.as_mut(), accesses.iter().copied()).miss_ratio()
                };
                let (arc, lru) = (ratio("arc"), ratio("lru"));
                assert!(
                    arc <= lru + ARC_MARGIN,
                    "hot {hot}, scan {scan_len}, share {scan_share}, {cache_objects} objects: arc {arc} lru {lru}"
                );
                cases += 1;
                ahead += usize::from(arc < lru - 0.05);
            }
        }
    }
    // the point of ARC: well ahead where the scan flushes LRU's hot set (10 of the 24 here;
    // elsewhere the cache holds the hot set under both, or neither)
    assert!(ahead * 3 >= cases, "ARC ahead by 0.05 in {ahead} of {cases}");
}
