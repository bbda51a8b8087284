//! Known answers for the comparison rows.

use super::super::mrc::{Mrc, MrcPoint};
use super::super::{characterize, Options, Profile};
use super::*;
use crate::trace::testing::reads;
use crate::trace::Trace;

fn profile(t: &Trace) -> Profile {
    characterize(&t.view(), &Options::default()).unwrap()
}

#[test]
fn a_trace_matches_itself_and_rows_follow_the_table() {
    let ts: Vec<u64> = (0..400).map(|i| i * 1_000_000).collect();
    let offsets: Vec<u64> = (0..400).map(|i| (i * 37 % 100) * 4096).collect();
    let t = reads(&ts, &offsets, 4096);
    let rows = compare(&profile(&t), &profile(&t));
    assert_eq!(rows[0].metric, "read fraction");
    assert_eq!(rows[0].original_shown.as_deref(), Some("reads only"));
    for r in &rows {
        assert_eq!(r.variation.map(f64::abs), Some(0.0), "{}", r.metric);
        assert_ne!(r.ok, Some(false), "{}", r.metric);
    }
    assert_eq!(worst_deviation(&rows), 0.0);
}

#[test]
fn variations_by_hand() {
    // the synthetic trace is twice as fast and half its requests are 8 KiB
    let ts: Vec<u64> = (0..100).map(|i| i * 2_000_000).collect();
    let offsets: Vec<u64> = (0..100).map(|i| i * 8192).collect();
    let o = reads(&ts, &offsets, 4096);
    let mut s = reads(&ts.iter().map(|t| t / 2).collect::<Vec<_>>(), &offsets, 4096);
    for i in 0..50 {
        s.size[i] = 8192;
    }
    let rows = compare(&profile(&o), &profile(&s));
    let row = |m: &str| rows.iter().find(|r| r.metric == m).unwrap();
    // 6 KiB mean against 4 KiB: +50 %
    assert!((row("mean request size (B)").variation.unwrap() - 0.5).abs() < 1e-12);
    // gaps of 1 ms against 2 ms: −50 %; IOPS doubles
    assert!((row("mean inter-arrival (µs)").variation.unwrap() + 0.5).abs() < 1e-12);
    assert!((row("IOPS").variation.unwrap() - 1.0).abs() < 1e-9);
    assert_eq!(row("IOPS").ok, Some(false));
    // sizes {4K: 1} against {4K: .5, 8K: .5}: L1/2 = 0.5
    assert!((row("block-size distribution (L1/2)").synthetic - 0.5).abs() < 1e-12);
    assert_eq!(row("block-size distribution (L1/2)").ok, None);
    assert!(worst_deviation(&rows) >= 1.0 - 1e-9);
}

#[test]
fn curve_error_holds_the_last_value_past_the_shorter_curve() {
    let point = |c: u64, m: f64| MrcPoint {
        cache_bytes: c,
        miss_ratio: m,
    };
    let curve = |points: Vec<MrcPoint>| Mrc {
        block_bytes: 4096,
        accesses: 0,
        cold_misses: 0,
        footprint_bytes: 0,
        curve: points,
        reuse_histogram: Vec::new(),
        sampling_rate: 1.0,
        sampling_error: 0.0,
    };
    let a = curve(vec![point(1, 0.5), point(2, 0.25)]);
    let b = curve(vec![point(1, 0.5), point(2, 0.5), point(4, 0.0)]);
    // sizes 1, 2, 4: |0.5−0.5|, |0.25−0.5|, |0.25−0| → 0.5 / 3
    assert!((mrc_error(&a, &b) - 0.5 / 3.0).abs() < 1e-12);
}

fn spec_of(t: &Trace) -> FineSpec {
    FineSpec::of(&t.view(), 10_000_000_000)
}

#[test]
fn bursts_by_hand() {
    // two requests in second 0, none in second 1, one in second 2: a third of seconds idle, the
    // peak second twice the mean; gaps 0.1 s and 2.3 s
    let t = reads(
        &[100_000_000, 200_000_000, 2_500_000_000],
        &[0, 8192, 16384],
        4096,
    );
    let f = Fine::of(&t.view(), &spec_of(&t));
    assert_eq!(f.per_second, [2, 0, 1]);
    assert!((f.idle_pct - 100.0 / 3.0).abs() < 1e-12);
    assert!((f.peak_to_mean - 2.0).abs() < 1e-12);
    // mean 1.2 s, population sd 1.1 s
    assert!((f.cv - 1.1 / 1.2).abs() < 1e-12);
    // the sub-window is a tenth of the 10 s window: 1 s bins again
    assert_eq!(f.per_sub, [2, 0, 1]);
}

#[test]
fn footprint_counts_blocks_touched_again() {
    // an 8 KiB read of blocks 0-1, then block 1 alone, then block 5
    let mut t = reads(&[0, 1, 2], &[0, 4096, 20480], 4096);
    t.size[0] = 8192;
    let f = Fine::of(&t.view(), &spec_of(&t));
    assert_eq!(f.footprint_blocks, 3);
    assert!((f.reaccessed_pct - 100.0 / 3.0).abs() < 1e-12);
}

#[test]
fn request_keyed_curve_by_hand() {
    // objects at 0 (1 MiB), 1 MiB (512 KiB), then 0 again: a 1 MiB LRU cache evicted 0 to
    // admit the second object, a 2 MiB one keeps both
    let mut t = reads(&[0, 1, 2], &[0, 1 << 20, 0], 1 << 20);
    t.size[1] = 512 << 10;
    let spec = spec_of(&t);
    // 1.5 MiB of distinct objects: sizes 1, 2, 4 MiB
    assert_eq!(spec.cache_bytes, [1 << 20, 2 << 20, 4 << 20]);
    let f = Fine::of(&t.view(), &spec);
    let miss: Vec<f64> = f.requests.iter().map(|p| p.miss_ratio).collect();
    assert_eq!(miss, [1.0, 2.0 / 3.0, 2.0 / 3.0]);
    let total = f64::from((1 << 20) + (512 << 10) + (1 << 20));
    assert!((f.requests[1].byte_miss_ratio - f64::from((1 << 20) + (512 << 10)) / total).abs() < 1e-12);
}

#[test]
fn fine_rows_of_a_trace_against_itself_and_a_shifted_one() {
    let ts: Vec<u64> = (0..2000).map(|i| i * 5_000_000).collect();
    let offsets: Vec<u64> = (0..2000).map(|i| (i * 37 % 640) * (1 << 20)).collect();
    let t = reads(&ts, &offsets, 4096);
    let spec = spec_of(&t);
    let f = Fine::of(&t.view(), &spec);
    for r in fine::compare_fine(&f, &f) {
        assert_eq!(r.variation.map(f64::abs), Some(0.0), "{}", r.metric);
        assert_eq!(r.ok, Some(true), "{}", r.metric);
    }
    // every request moved to the volume's first 64th: all shares move
    let mut low = t.clone();
    for o in &mut low.offset {
        *o /= 128;
    }
    let rows = fine::compare_fine(&f, &Fine::of(&low.view(), &spec));
    let spatial = rows
        .iter()
        .find(|r| r.metric.starts_with("spatial histogram, 64"))
        .unwrap();
    assert!(spatial.variation.unwrap() > 0.9, "{spatial:?}");
    assert_eq!(spatial.ok, Some(false));
}

#[test]
fn the_worst_volume_is_shown() {
    // volume a: all reads; volume b: half writes in the original, all reads in the synthetic
    let n = 4000usize;
    let ts: Vec<u64> = (0..n as u64).map(|i| i * 1_000_000).collect();
    let offsets: Vec<u64> = (0..n as u64).map(|i| (i * 7919 % 1000) * 4096).collect();
    let mut o = reads(&ts, &offsets, 4096);
    o.volumes = vec!["a".into(), "b".into()];
    for i in 0..n {
        o.volume[i] = (i % 2) as u32;
        if i % 4 == 1 {
            o.op[i] = 1;
        }
    }
    let mut s = o.clone();
    s.op = vec![0; n];
    let rows = compare(&profile(&o), &profile(&s));
    let row = rows.iter().find(|r| r.metric == "read %, worst volume").unwrap();
    assert_eq!((row.original, row.synthetic), (50.0, 100.0));
    assert_eq!(row.variation, Some(50.0));
    assert_eq!(row.ok, Some(false));
    assert_eq!(row.original_shown.as_deref(), Some("50.00% (b)"));
}
