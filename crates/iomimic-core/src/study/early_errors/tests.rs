use super::*;
use crate::random::Prng;

/// Random 8 KiB reads over 4 GiB at `iops` for `seconds`.
fn random_reads(iops: u64, seconds: u64, seed: u64) -> Trace {
    let mut rng = Prng::new(seed);
    let n = iops * seconds;
    let mut t = Trace {
        volumes: vec!["v".into()],
        ..Trace::default()
    };
    for i in 0..n {
        t.ts_ns.push(i * 1_000_000_000 / iops);
        t.offset.push(rng.below(1 << 19) * 8192);
        t.size.push(8192);
        t.op.push(0);
        t.volume.push(0);
        t.stream.push(0);
    }
    t
}

fn options(faults: &[&str], intensities: &[f64]) -> Options {
    Options {
        device: crate::sim::PRESETS
            .iter()
            .find(|p| p.0 == "hdd-7200")
            .unwrap()
            .1
            .to_string(),
        devices: 12,
        faulty: 2,
        faults: faults.iter().map(|s| (*s).to_string()).collect(),
        slow_ms: None,
        fail_ms: None,
        intensities: intensities.to_vec(),
        checkpoints: 100,
        rule: Rule::default(),
        seed: 3,
    }
}

#[test]
fn a_rotated_workload_starts_at_its_shift_and_wraps_one_mean_gap_after_its_end() {
    let mut t = random_reads(1, 4, 1); // times 0, 1, 2, 3 s
    t.offset = vec![10, 11, 12, 13];
    let w = rotated(&t.view(), 1);
    assert_eq!(w.offset, [11, 12, 13, 10]);
    assert_eq!(w.ts_ns, [0, 1_000_000_000, 2_000_000_000, 3_000_000_000]);
    assert_eq!(rotated(&t.view(), 0).ts_ns, t.ts_ns);
}

#[test]
fn faulty_devices_are_a_seeded_sample() {
    let a = pick_faulty(28, 3, 5);
    assert_eq!(a, pick_faulty(28, 3, 5));
    assert_eq!(a.len(), 3);
    assert!(a.windows(2).all(|w| w[0] < w[1]) && a.iter().all(|&d| d < 28));
    assert_ne!(a, pick_faulty(28, 3, 6));
}

#[test]
fn fault_specs_parse_and_bad_ones_are_named() {
    let f = parse_faults(
        &["slow-sectors:0.001".into(), "failed-sectors:1e-5".into()],
        Some(20.0),
        None,
        9,
    )
    .unwrap();
    assert_eq!(
        (f.slow_sector_rate, f.failed_sector_rate, f.slow_write_rate),
        (0.001, 1e-5, 0.0)
    );
    assert_eq!(
        (f.slow_ms, f.slow_write_ms, f.fail_ms, f.seed),
        (20.0, 20.0, 1000.0, 9)
    );
    for bad in [
        "slow-sectors",
        "slow-sectors:0",
        "slow-sectors:2",
        "hot-sectors:0.1",
        "slow-sectors:x",
    ] {
        let e = parse_faults(&[bad.into()], None, None, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`faults`") && e.contains(bad), "{e}");
    }
    let e = parse_faults(&[], Some(f64::NAN), None, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`slow_ms`"), "{e}");
}

#[test]
fn options_out_of_range_are_refused_by_name() {
    let t = random_reads(10, 1, 1);
    let mut o = options(&["slow-sectors:0.01"], &[1.0]);
    o.faulty = 12;
    assert!(run(&t.view(), &o).unwrap_err().to_string().contains("`faulty`"));
    let mut o = options(&["slow-sectors:0.01"], &[0.0]);
    o.devices = 12;
    assert!(run(&t.view(), &o)
        .unwrap_err()
        .to_string()
        .contains("`intensities`"));
}

#[test]
fn slow_sectors_are_found_without_false_alarms_and_sooner_at_higher_intensity() {
    // 20 IOPS for 120 s per device; 1 % of the faulty devices' blocks are slow
    let t = random_reads(20, 120, 7);
    let r = run(&t.view(), &options(&["slow-sectors:0.01"], &[1.0, 4.0])).unwrap();
    assert_eq!(r.faulty.len(), 2);
    let (slow, fast) = (&r.intensities[0], &r.intensities[1]);
    for o in [slow, fast] {
        assert_eq!(
            (o.true_positives, o.false_positives, o.missed),
            (2, 0, 0),
            "{o:?}"
        );
        assert!(o.flags.iter().all(|f| f.by == detector::Evidence::Latency));
        assert_eq!(o.overloaded, Some(false));
    }
    let (a, b) = (
        slow.time_to_detect_all_s.unwrap(),
        fast.time_to_detect_all_s.unwrap(),
    );
    // four times the rate finds them in well under half the time
    assert!(b < a / 2.0, "{a} s at 1x, {b} s at 4x");
    assert!(
        (fast.span_s - slow.span_s / 4.0).abs() < 1.0,
        "{} {}",
        fast.span_s,
        slow.span_s
    );
}

#[test]
fn failed_sectors_fail_requests_and_flag_by_errors() {
    let t = random_reads(20, 60, 8);
    let r = run(&t.view(), &options(&["failed-sectors:0.005"], &[1.0])).unwrap();
    let o = &r.intensities[0];
    assert!(o.failed_requests > 0);
    assert_eq!((o.true_positives, o.false_positives), (2, 0), "{o:?}");
    assert!(o.flags.iter().all(|f| f.by == detector::Evidence::Errors));
}

#[test]
fn a_healthy_fleet_flags_nothing() {
    let t = random_reads(20, 60, 9);
    let mut o = options(&["slow-sectors:0.01"], &[1.0, 2.0]);
    o.faulty = 0;
    let r = run(&t.view(), &o).unwrap();
    assert!(r
        .intensities
        .iter()
        .all(|o| o.flags.is_empty() && o.time_to_detect_all_s.is_none()));

    // 20 IOPS × 16 is more than a disk does: the fleet is said to be overloaded
    o.intensities = vec![16.0];
    let r = run(&t.view(), &o).unwrap();
    assert_eq!(r.intensities[0].overloaded, Some(true));
}

#[test]
fn a_real_fleet_is_one_volume_per_device_and_its_run_is_judged_by_the_same_rule() {
    let t = random_reads(10, 10, 4); // 100 requests over 9.9 s
    let w = fleet_workload(&t.view(), 3, 2.0);
    assert_eq!((w.len(), w.volumes.len()), (300, 3));
    assert!(w.ts_ns.windows(2).all(|p| p[0] <= p[1]));
    assert!(*w.ts_ns.last().unwrap() <= 5_000_000_000, "times halved");
    for d in 0..3u32 {
        assert_eq!(w.volume.iter().filter(|&&v| v == d).count(), 100);
    }
    // a run of it: 1 ms each, device 2 failing one request
    let mut done = w.clone();
    done.latency_ns = Some(vec![1_000_000; 300]);
    let mut status = vec![STATUS_OK; 300];
    let failing = w.volume.iter().position(|&v| v == 2).unwrap();
    status[failing] = crate::sim::EIO;
    done.status = Some(status);
    let o = judge(completions_of(&done.view()), 3, &[], 2.0, 10, &Rule::default());
    assert_eq!(o.flags.len(), 1);
    assert_eq!(
        (o.flags[0].device, o.flags[0].by),
        (2, detector::Evidence::Errors)
    );
    assert_eq!(
        (o.true_positives, o.false_positives, o.failed_requests),
        (0, 1, 1)
    );
}

#[test]
fn each_intensity_run_apart_joins_into_the_whole_report() {
    let t = random_reads(20, 30, 9);
    let o = options(&["slow-sectors:0.01", "failed-sectors:0.001"], &[1.0, 2.0, 8.0]);
    let options = serde_json::json!({
        "device": o.device,
        "devices": o.devices,
        "faulty": o.faulty,
        "faults": o.faults,
        "intensities": o.intensities,
        "seed": o.seed,
    });
    let progress = Progress::default();
    let whole = EarlyErrors.run(&t.view(), &options, &progress).unwrap();
    let points = EarlyErrors.points(&options).unwrap().unwrap();
    assert_eq!(points.len(), 3);
    assert_eq!(points[2]["intensities"], serde_json::json!([8.0]));
    let reports: Vec<serde_json::Value> = points
        .iter()
        .map(|p| EarlyErrors.run(&t.view(), p, &progress).unwrap())
        .collect();
    assert_eq!(EarlyErrors.join(&options, &reports).unwrap(), whole);
    assert!(EarlyErrors.join(&options, &reports[..2]).is_err());
    let bad = serde_json::json!({"device": o.device, "intensities": "fast"});
    assert!(EarlyErrors.points(&bad).is_err());
}
