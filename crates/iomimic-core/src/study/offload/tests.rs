use super::*;
use crate::random::Prng;

/// Three volumes on 7,200 rpm disks with their write caches on (the paper's volumes had
/// NVRAM): `peaky` reads and writes 20 times a second and, from 2 s to 4 s (when `peak`),
/// takes 1,000 random writes a second, more than the disk destages; `busy` reads evenly 120
/// times a second throughout; `idle` reads 10 times a second. (Without a write cache, a log
/// of 4 KiB appends waits a rotation per append and gains nothing: the disk's, not the
/// policy's, limit.)
fn workload(peak: bool) -> Trace {
    let mut rows: Vec<(u64, u64, u8, u32)> = Vec::new();
    let mut rng = Prng::new(7);
    let gb = 1u64 << 30;
    let mut add = |rows: &mut Vec<(u64, u64, u8, u32)>,
                   v: u32,
                   from_ms: u64,
                   to_ms: u64,
                   per_s: u64,
                   write_every: u64| {
        let gap = 1_000_000_000 / per_s;
        let mut t = from_ms * 1_000_000;
        let mut k = 0;
        while t < to_ms * 1_000_000 {
            let op = u8::from(write_every > 0 && k % write_every == 0);
            rows.push((t, rng.below(8 * gb / 4096) * 4096, op, v));
            t += gap;
            k += 1;
        }
    };
    add(&mut rows, 0, 0, 10_000, 20, 2);
    if peak {
        add(&mut rows, 0, 2_000, 4_000, 1000, 1);
    }
    add(&mut rows, 1, 0, 10_000, 120, 0);
    add(&mut rows, 2, 0, 10_000, 10, 0);
    rows.sort_by_key(|r| r.0);
    Trace {
        ts_ns: rows.iter().map(|r| r.0).collect(),
        offset: rows.iter().map(|r| r.1).collect(),
        size: vec![4096; rows.len()],
        op: rows.iter().map(|r| r.2).collect(),
        volume: rows.iter().map(|r| r.3).collect(),
        stream: vec![0; rows.len()],
        volumes: vec!["peaky".into(), "busy".into(), "idle".into()],
        ..Trace::default()
    }
}

fn options() -> Options {
    serde_json::from_value(serde_json::json!({ "device": crate::sim::PRESETS[0].1.replace("write_cache = false", "write_cache = true"), "stores": 3, "n_way": 2 })).unwrap()
}

#[test]
fn a_write_peak_gains_and_the_busy_store_is_never_used() {
    let t = workload(true);
    let r = study(&t.view(), &options()).unwrap();
    // The peak: 2-4 s on `peaky` only (its busy windows' median is 20/s, the threshold 60/s).
    assert_eq!(r.peaks.len(), 1, "{:?}", r.peaks);
    let p = &r.peaks[0];
    assert_eq!((p.volume.as_str(), p.start_s, p.end_s), ("peaky", 2.0, 4.0));
    assert!(p.write_share > 0.9);
    // Both gain: writes leave the overloaded disk, and reads no longer queue behind them.
    assert!(
        p.writes.on_mean_ms * 20.0 < p.writes.off_mean_ms,
        "{:?}",
        p.writes
    );
    assert!(p.reads.on_mean_ms * 20.0 < p.reads.off_mean_ms, "{:?}", p.reads);
    assert!(p.writes.on_p99_ms < p.writes.off_p99_ms, "{:?}", p.writes);
    // Store 1 lives on `busy` (120/s, above `peaky`'s light level of 30/s): never chosen.
    assert_eq!(r.stores[1].host, "busy");
    assert_eq!(r.stores[1].offloads, 0);
    assert_eq!(
        r.stores[0].offloads, 0,
        "a volume never off-loads to its own store"
    );
    assert!(r.stores[2].offloads > 0 && r.stores[2].max_used_bytes > 0);
    // Everything went home, after the peak.
    assert_eq!(r.unreclaimed_blocks, 0);
    let peaky = &r.volumes[0];
    assert!(peaky.offloaded_writes > 0 && peaky.reclaim_s.is_some());
    assert_eq!(r.volumes[1].offloaded_writes, 0);
    assert_eq!(r.correlation.len(), 3);
}

#[test]
fn off_loading_costs_nothing_without_peaks() {
    // Without the peak, nobody reaches a threshold: both runs are the same.
    let t = workload(false);
    let r = study(&t.view(), &options()).unwrap();
    assert!(r.peaks.is_empty(), "{:?}", r.peaks);
    for v in &r.volumes {
        assert_eq!(v.offloaded_writes, 0);
        assert!((v.reads.on_mean_ms - v.reads.off_mean_ms).abs() < 1e-9);
    }
}

#[test]
fn bad_options_are_usage_errors() {
    let t = workload(true);
    let mut o = options();
    o.replicas = 3;
    assert!(matches!(study(&t.view(), &o), Err(Error::Usage(_))));
    let mut o = options();
    o.volumes = Some(vec!["nope".into()]);
    assert!(matches!(study(&t.view(), &o), Err(Error::Usage(m)) if m.contains("nope")));
    let mut o = options();
    o.volumes = Some(vec!["idle".into()]);
    assert!(matches!(study(&t.view(), &o), Err(Error::Usage(_))));
}
