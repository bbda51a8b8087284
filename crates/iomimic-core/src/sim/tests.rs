//! The simulator's tests by hand: a disk whose numbers are easy, alone, cached, behind a
//! controller, with faults and standby; presets and device-file errors.

use super::hdd::HddPower;
use super::*;
use crate::trace::{Op, Trace};

/// A disk whose numbers are easy by hand (see `hdd::tests_support::hand`).
fn hand(read_ahead: bool) -> HddParams {
    HddParams {
        read_ahead,
        ..super::hdd::tests_support::hand()
    }
}

/// A device file of the disk `p` alone.
fn of(p: HddParams) -> Config {
    Config {
        name: "hand".into(),
        description: String::new(),
        scheduler: Scheduler::Fifo,
        device: DeviceConfig::new("hdd", p).unwrap(),
        array: None,
        controller: None,
        faults: None,
    }
}

fn disk(read_ahead: bool) -> Config {
    of(hand(read_ahead))
}

/// The same disk with a write cache of `mib`.
fn cached_disk(mib: f64) -> Config {
    let mut p = hand(false);
    (p.write_cache, p.write_cache_mib) = (true, mib);
    of(p)
}

fn trace(ts: &[u64], offsets: &[u64], size: u32, op: u8) -> Trace {
    let mut t = crate::trace::testing::reads(ts, offsets, size);
    t.op = vec![op; ts.len()];
    t
}

#[test]
fn one_request_by_hand() {
    // cylinder 250 of 1,000: seek 1 + 4·√0.75 = 4.4641 ms; the target (angle 0) comes round
    // at 10 ms; 100 KB at 100 MB/s is 1 ms: 11 ms in all
    let t = trace(&[0], &[250_000_000], 100_000, 0);
    let r = simulate(&t.view(), &disk(false), &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [11_000_000]);
}

#[test]
fn a_cached_write_is_destaged_while_the_disk_is_idle() {
    // the write crosses the bus in 1 ms. Idle from 1 ms, the disk destages it: seek to
    // cylinder 250 (4.4641 ms), wait for angle 0 (the head is at 0.54641 of a turn:
    // 4.5359 ms), write 1 ms — busy until 11 ms. The read arriving at 2 ms waits for that,
    // seeks back (4.4641), waits 4.5359 and reads 1 ms: done at 21 ms, 19 ms after it came.
    let mut t = trace(&[0, 2_000_000], &[250_000_000, 0], 100_000, 0);
    t.op[0] = Op::Write as u8;
    let r = simulate(&t.view(), &cached_disk(4.0), &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [1_000_000, 19_000_000]);
    assert_eq!(r.figures.counter("destages"), 1);
    // reads and writes apart
    let ops = &r.figures.by_op;
    assert_eq!(ops.keys().copied().collect::<Vec<_>>(), ["read", "write"]);
    let (read, write) = (ops["read"].latency_us, ops["write"].latency_us);
    assert_eq!((write.count, write.mean), (1, 1000.0));
    assert_eq!(read.p.max, 19_000.0);
    // without the cache the write itself takes the 11 ms (the read still ends at 21 ms)
    let r = simulate(&t.view(), &disk(false), &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [11_000_000, 19_000_000]);
    assert_eq!(r.figures.counter("destages"), 0);
}

#[test]
fn a_full_write_cache_makes_a_write_wait_for_destaging() {
    // a 0.1 MiB cache holds one 100 KB write: the second, queued behind the first, must
    // first destage it (10 ms, as above, from 1 ms), then crosses the bus: done at 12 ms
    let t = trace(&[0, 0], &[250_000_000, 500_000_000], 100_000, Op::Write as u8);
    let r = simulate(&t.view(), &cached_disk(0.1), &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [1_000_000, 12_000_000]);
    assert_eq!(r.figures.counter("destages"), 1);
}

#[test]
fn a_read_of_data_still_in_the_write_cache_is_a_hit() {
    // two writes and a read of the second's range arrive together: the writes cross the bus
    // (1 ms each) and the read finds the data cached, 1 ms more
    let mut t = trace(&[0, 0, 0], &[250_000_000, 500_000_000, 500_000_000], 100_000, 0);
    t.op[0] = Op::Write as u8;
    t.op[1] = Op::Write as u8;
    let r = simulate(&t.view(), &cached_disk(4.0), &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [1_000_000, 2_000_000, 3_000_000]);
    assert_eq!(r.figures.devices[0].counter("buffer_hits"), 1);
}

#[test]
fn back_to_back_requests_queue() {
    // the second waits 11 ms, then needs no seek, 9 ms of rotation (the head is at 0.1 of a
    // turn) and 1 ms of transfer: done at 21 ms
    let t = trace(&[0, 0], &[250_000_000, 250_000_000], 100_000, 0);
    let r = simulate(&t.view(), &disk(false), &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [11_000_000, 21_000_000]);
}

#[test]
fn sequential_reads_hit_the_track_buffer() {
    // by 12 ms the disk has read 200 KB ahead from the first read's start: the next 100 KB
    // is a buffer hit, 1 ms at the bus rate
    let t = trace(&[0, 12_000_000], &[250_000_000, 250_100_000], 100_000, 0);
    let r = simulate(&t.view(), &disk(true), &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [11_000_000, 1_000_000]);
    assert_eq!(r.figures.devices[0].counter("buffer_hits"), 1);
    let r = simulate(&t.view(), &disk(false), &SimOptions::default()).unwrap();
    assert!(r.latency_ns[1] > 5_000_000);
}

#[test]
fn closed_loop_depth_one_gives_one_over_service_time() {
    let offsets: Vec<u64> = (0..200u64)
        .map(|i| (i * 7919 % 1000) * 1_000_000 + (i % 7) * 4096)
        .collect();
    let t = trace(&vec![0; 200], &offsets, 4096, 0);
    let opts = SimOptions {
        iodepth: Some(1),
        ..SimOptions::default()
    };
    let r = simulate(&t.view(), &disk(false), &opts).unwrap();
    let f = &r.figures;
    assert_eq!(f.device_ios, 200);
    let expected = 1e6 / f.mean_service_us;
    assert!(
        (f.iops - expected).abs() / expected < 1e-6,
        "{} vs {expected}",
        f.iops
    );
}

#[test]
fn sustained_writes_run_at_the_media_rate_not_the_bus_rate() {
    // 3,000 random 4 KiB writes, one at a time, into a 0.5 MiB cache (128 writes): once it
    // fills, every write waits for a destage, so the cache can speed writes up only by
    // ordering destages (nearest first: 1.4x here) — never to the bus rate (25,000/s)
    let offsets: Vec<u64> = (0..3000u64)
        .map(|i| (i * 7919 % 1000) * 1_000_000 + (i * 104_729 % 244) * 4096)
        .collect();
    let t = trace(&vec![0; 3000], &offsets, 4096, Op::Write as u8);
    let opts = SimOptions {
        iodepth: Some(1),
        ..SimOptions::default()
    };
    let through = simulate(&t.view(), &disk(false), &opts).unwrap().figures;
    let cached = simulate(&t.view(), &cached_disk(0.5), &opts).unwrap().figures;
    assert!(
        cached.iops > 1.1 * through.iops && cached.iops < 3.0 * through.iops,
        "{} vs {}",
        cached.iops,
        through.iops
    );
    assert!(
        cached.counter("destages") >= 3000 - 128,
        "{}",
        cached.counter("destages")
    );
    assert!(cached.devices[0].utilization > 0.99);
}

fn with_controller(prefetch_min_kib: u64) -> Config {
    Config {
        controller: Some(Controller {
            cache_mib: 16.0,
            write_back: true,
            hit_us: 100.0,
            mirror_us: 50.0,
            prefetch_min_kib,
            prefetch_max_kib: 1024,
            prefetch_multiple: 0.0,
            prefetch_with_read: false,
            prefetch_per_stream: false,
            command_us: 0.0,
            max_mb_s: None,
        }),
        ..disk(false)
    }
}

#[test]
fn offsets_past_the_device_fold_into_it_and_are_counted() {
    // the hand disk holds 1 GB: its region is that rounded down to the 64 KiB unit
    let region = 1_000_000_000 / 65_536 * 65_536;
    let t = trace(&[0, 50_000_000], &[250_000_000, region + 250_000_000], 100_000, 0);
    let r = simulate(&t.view(), &disk(false), &SimOptions::default()).unwrap();
    assert_eq!((r.figures.folded_requests, r.figures.region_bytes), (1, region));
    // folded onto the first read's place: no seek, the target a whole turn away
    let alone = simulate(
        &trace(&[0, 50_000_000], &[250_000_000, 250_000_000], 100_000, 0).view(),
        &disk(false),
        &SimOptions::default(),
    )
    .unwrap();
    assert_eq!(r.latency_ns, alone.latency_ns);
    assert_eq!(alone.figures.folded_requests, 0);
}

#[test]
fn controller_cache_serves_a_repeated_read() {
    let t = trace(&[0, 50_000_000], &[250_000_000, 250_000_000], 100_000, 0);
    let r = simulate(&t.view(), &with_controller(0), &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [11_000_000, 100_000]);
    assert_eq!((r.figures.cache_hits, r.figures.device_ios), (1, 1));
}

#[test]
fn write_back_completes_in_cache_and_destages_behind() {
    let t = trace(&[0], &[250_000_000], 100_000, 1);
    let r = simulate(&t.view(), &with_controller(0), &SimOptions::default()).unwrap();
    // hit 100 µs + mirror 50 µs; the disk still writes it, finishing at 11 ms
    assert_eq!(r.latency_ns, [150_000]);
    assert_eq!(r.figures.device_ios, 1);
    assert!((r.figures.duration_s - 0.011).abs() < 1e-9);
}

#[test]
fn prefetch_turns_the_next_sequential_read_into_a_hit() {
    let t = trace(&[0, 55_000_000], &[250_000_000, 250_004_096], 4096, 0);
    let r = simulate(&t.view(), &with_controller(64), &SimOptions::default()).unwrap();
    assert_eq!(r.figures.cache_hits, 1);
    assert_eq!(r.latency_ns[1], 100_000);
    // 64 KiB read ahead, of which the second read used one 4 KiB block
    assert_eq!(r.figures.counter("prefetched_kib"), 64);
    assert_eq!(r.figures.counter("prefetch_unused_kib"), 60);
    // the request itself does not wait for the 64 KiB read behind it
    assert!(r.latency_ns[0] < 10_100_000);
    let r = simulate(&t.view(), &with_controller(0), &SimOptions::default()).unwrap();
    assert_eq!(r.figures.cache_hits, 0);
    assert!(r.latency_ns[1] > 5_000_000);
}

#[test]
fn a_minimum_read_with_the_request_delays_it_and_serves_the_next_read() {
    // 1 MiB minimum: read 0 completes only when the disk has read its 4 KiB and the 1 MiB
    // after it (some 5 ms more, streaming on); read 1, inside it, arrives meanwhile and waits
    let t = trace(&[0, 5_000_000], &[250_000_000, 250_004_096], 4096, 0);
    let mut with_read = with_controller(1024);
    with_read.controller.as_mut().unwrap().prefetch_with_read = true;
    let r = simulate(&t.view(), &with_read, &SimOptions::default()).unwrap();
    let behind = simulate(&t.view(), &with_controller(1024), &SimOptions::default()).unwrap();
    assert!(behind.latency_ns[0] < 10_100_000, "{:?}", behind.latency_ns);
    assert!(
        r.latency_ns[0] > behind.latency_ns[0] + 4_000_000,
        "{:?}",
        r.latency_ns
    );
    // read 1 is served from it once it is in, as a hit, with no disk read of its own
    assert_eq!((r.figures.cache_hits, r.figures.device_ios), (1, 1));
    assert!(r.latency_ns[1] + 5_000_000 > r.latency_ns[0]);
    assert_eq!(r.figures.counter("prefetch_unused_kib"), 1020);
}

#[test]
fn a_demand_read_queues_behind_a_prefetch_and_unread_prefetch_is_counted() {
    // read 0 (4 KiB at 250 MB) reads 1 MiB ahead; read 1 arrives at 5 ms far away. The disk
    // cannot tell the prefetch from a demand read: it streams the 1 MiB (10.5 ms at 100 MB/s)
    // right after read 0 (done at ~10 ms), so read 1 waits until ~20.5 ms and then seeks
    let t = trace(&[0, 5_000_000], &[250_000_000, 750_000_000], 4096, 0);
    let mut ahead = with_controller(1024);
    ahead.controller.as_mut().unwrap().prefetch_min_kib = 1024;
    let r = simulate(&t.view(), &ahead, &SimOptions::default()).unwrap();
    let plain = simulate(&t.view(), &with_controller(0), &SimOptions::default()).unwrap();
    // without prefetch read 1 starts when read 0 ends (10.04 ms) and takes 10 ms (seek 6.25,
    // rotation, transfer): 15.04 ms after it came; behind the prefetch it starts 10.5 ms later
    assert_eq!(plain.latency_ns[1], 15_040_960);
    assert!(
        r.latency_ns[1] > plain.latency_ns[1] + 9_000_000,
        "{:?}",
        r.latency_ns
    );
    // each read started a stream and read 1 MiB ahead; no request read any of it
    assert_eq!(r.figures.counter("prefetched_kib"), 2048);
    assert_eq!(r.figures.counter("prefetch_unused_kib"), 2048);
    assert_eq!(plain.figures.counter("prefetched_kib"), 0);
}

#[test]
fn injected_faults_add_their_delays() {
    let mut config = disk(false);
    config.faults = Some(Faults {
        slow_sector_rate: 0.0,
        slow_ms: 50.0,
        failed_sector_rate: 1.0,
        fail_ms: 1000.0,
        slow_write_rate: 0.0,
        slow_write_ms: 50.0,
        seed: 7,
    });
    let t = trace(&[0], &[250_000_000], 100_000, 0);
    let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [1_011_000_000]);
    assert_eq!((r.figures.failed_ios, r.figures.slow_ios), (1, 0));
    // the request fails, after the drive's retries
    assert_eq!(r.status, [super::EIO]);

    let f = config.faults.as_mut().unwrap();
    f.failed_sector_rate = 0.0;
    f.slow_write_rate = 1.0;
    let t = trace(&[0], &[250_000_000], 100_000, 1);
    let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [61_000_000]);
    assert_eq!((r.figures.failed_ios, r.figures.slow_ios), (0, 1));

    assert_eq!(r.status, [crate::trace::STATUS_OK]);

    // at a rate of a quarter, about a quarter of 4,000 one-block I/Os are slow, the same ones
    // each run
    let f = config.faults.as_mut().unwrap();
    f.slow_write_rate = 0.0;
    f.slow_sector_rate = 0.25;
    let offsets: Vec<u64> = (0..4000u64).map(|i| i * 102_400).collect();
    let ts: Vec<u64> = (0..4000u64).map(|i| i * 100_000_000).collect();
    let t = trace(&ts, &offsets, 4096, 0);
    let first = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
    let again = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
    assert_eq!(first.latency_ns, again.latency_ns);
    let slow = first.figures.slow_ios;
    assert!((900..1100).contains(&slow), "{slow}");

    // a bad sector is a place: reading the same blocks again is slow exactly where it was
    let twice: Vec<u64> = offsets.iter().chain(&offsets).copied().collect();
    let ts: Vec<u64> = (0..8000u64).map(|i| i * 100_000_000).collect();
    let t = trace(&ts, &twice, 4096, 0);
    let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
    let slow_at = |i: usize| r.latency_ns[i] > 50_000_000;
    assert!((0..4000).all(|i| slow_at(i) == slow_at(i + 4000)));
    assert_eq!(r.figures.slow_ios, 2 * slow);
}

#[test]
fn an_idle_disk_spins_down_and_back_up() {
    let power = |spin_down_s| HddPower {
        idle_w: 5.0,
        seek_w: 8.0,
        transfer_w: 6.0,
        standby_w: 1.0,
        spin_down_s,
        spin_up_s: 6.0,
    };
    let mut p = hand(false);
    p.power = Some(power(Some(10.0)));
    let config = of(p.clone());
    let t = trace(&[0, 100_000_000_000], &[250_000_000, 250_000_000], 100_000, 0);
    let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
    assert_eq!(r.figures.counter("spin_ups"), 1);
    // six seconds of spin-up, then at most a turn and the transfer
    assert!(
        (6_000_000_000..6_011_000_000).contains(&r.latency_ns[1]),
        "{}",
        r.latency_ns[1]
    );
    let standby = r.figures.energy_j.unwrap();

    p.power = Some(power(None));
    let config = of(p);
    let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
    assert_eq!(r.figures.counter("spin_ups"), 0);
    assert!(r.latency_ns[1] < 11_000_000);
    // ~100 s idle at 5 W against 10 s idle, ~84 s at 1 W and 6 s spinning up at 8 W
    let awake = r.figures.energy_j.unwrap();
    assert!(awake > 480.0 && standby < 200.0, "{awake} {standby}");
}

#[test]
fn raid5_small_write_is_four_device_ios() {
    let config = Config::preset("fc60-r5-4disk").unwrap();
    let t = trace(&[0], &[0], 4096, 1);
    let r = simulate(&t.view(), &config, &SimOptions::default()).unwrap();
    assert_eq!(r.figures.device_ios, 4);
    let t = trace(&[0], &[0], 4096, 0);
    assert_eq!(
        simulate(&t.view(), &config, &SimOptions::default())
            .unwrap()
            .figures
            .device_ios,
        1
    );
}

#[test]
fn presets_load_and_bad_files_name_the_field() {
    for (name, _) in PRESETS {
        assert_eq!(Config::preset(name).unwrap().name, name);
    }
    let e = Config::from_toml("name = \"x\"\n[device]\nkind = \"hdd\"\nrpm = \"fast\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("device file field device"), "{e}");
    let text = PRESETS[0]
        .1
        .replace("average_seek_ms = 8.5", "average_seek_ms = 30.0");
    let e = Config::from_toml(&text).unwrap_err().to_string();
    assert!(
        e.contains("track_to_track_ms <= average_seek_ms <= full_stroke_ms"),
        "{e}"
    );
    let fc60 = Config::preset("fc60-r5-4disk").unwrap();
    assert!(fc60.controller.is_some());
    let text = format!("{}\n[faults]\nslow_sector_rate = 1.5\n", PRESETS[0].1);
    let e = Config::from_toml(&text).unwrap_err().to_string();
    assert!(e.contains("faults.slow_sector_rate"), "{e}");
    let text = format!(
        "{}\n[controller]\ncache_mib = 8\nprefetch_min_kib = 64\nprefetch_max_kib = 16\n",
        PRESETS[0].1
    );
    let e = Config::from_toml(&text).unwrap_err().to_string();
    assert!(e.contains("controller.prefetch_max_kib"), "{e}");
}

#[test]
fn the_device_table_s_errors_name_the_exact_field() {
    let hdd = PRESETS[0].1;
    for (from, to, expected) in [
        (
            "rpm = 7200",
            "rpm = \"fast\"",
            "device.rpm: invalid type: string \"fast\", expected f64",
        ),
        ("rpm = 7200", "rpms = 7200", "device.rpms: unknown field `rpms`"),
        (
            "idle_w = 5.4",
            "idle_w = \"x\"",
            "device.power.idle_w: invalid type",
        ),
        (
            "kind = \"hdd\"",
            "kind = \"tape\"",
            "device.kind: unknown kind \"tape\"; kinds are hdd, ssd",
        ),
        (
            "kind = \"hdd\"",
            "kind = 3",
            "device.kind: expected a string (one of hdd, ssd), found integer",
        ),
        ("kind = \"hdd\"", "", "device.kind: missing; kinds are hdd, ssd"),
    ] {
        let e = Config::from_toml(&hdd.replace(from, to)).unwrap_err().to_string();
        assert!(e.starts_with(&format!("device file field {expected}")), "{e}");
    }
    // written back as the file has it, defaults filled in (hdd-7200 gives no cylinders)
    let json = serde_json::to_value(Config::preset("hdd-7200").unwrap()).unwrap();
    let device = &json["device"];
    assert_eq!(
        (device["kind"].as_str(), device["rpm"].as_f64()),
        (Some("hdd"), Some(7200.0))
    );
    assert_eq!(device["cylinders"].as_u64(), Some(50_000));
}

/// `n` sequential `size`-byte requests from offset 0, closed loop at `depth`, on `config`:
/// MB/s.
fn sequential_mb_s(config: &Config, n: usize, size: u32, op: Op, depth: usize) -> f64 {
    let offsets: Vec<u64> = (0..n as u64).map(|i| i * u64::from(size)).collect();
    let t = trace(&vec![0; n], &offsets, size, op as u8);
    let opts = SimOptions {
        iodepth: Some(depth),
        ..SimOptions::default()
    };
    let r = simulate(&t.view(), config, &opts).unwrap();
    let end = r
        .latency_ns
        .iter()
        .zip(&r.issue_ns)
        .map(|(l, i)| l + i)
        .max()
        .unwrap();
    (n as f64 * f64::from(size)) / (end as f64 / 1e9) / 1e6
}

#[test]
fn hdd_7200_streams_sequential_reads_and_queued_writes_near_the_media_rate() {
    // 180 MB/s at the outer edge; 200 MiB is 0.01 % of the disk in, so the rate stays 180
    let c = Config::preset("hdd-7200").unwrap();
    for depth in [1, 8] {
        let read = sequential_mb_s(&c, 200, 1 << 20, Op::Read, depth);
        assert!(
            (0.85 * 180.0..=180.0).contains(&read),
            "depth {depth}: {read:.1} MB/s"
        );
    }
    // no write cache: one 64 KiB write at a time loses most of a turn between writes (8.3 ms
    // a turn, 0.36 ms of data), queued ones follow each other under the head
    let one = sequential_mb_s(&c, 400, 64 << 10, Op::Write, 1);
    let queued = sequential_mb_s(&c, 400, 64 << 10, Op::Write, 8);
    assert!(one < 0.1 * 180.0, "depth 1: {one:.1} MB/s");
    assert!(queued >= 0.85 * 180.0, "depth 8: {queued:.1} MB/s");
}

#[test]
fn buffer_hits_pay_their_own_overhead() {
    // media accesses 0.3 ms, hits 0.05: the cached write takes 0.3 + 1 ms on the bus; the
    // read of it, queued behind, is a hit: 0.05 + 1 ms more, done at 2.35 ms
    let mut p = hand(false);
    (p.write_cache, p.overhead_ms, p.hit_overhead_ms) = (true, 0.3, Some(0.05));
    let mut t = trace(&[0, 0], &[250_000_000, 250_000_000], 100_000, 0);
    t.op[0] = Op::Write as u8;
    let r = simulate(&t.view(), &of(p), &SimOptions::default()).unwrap();
    assert_eq!(r.latency_ns, [1_300_000, 2_350_000]);
}

#[test]
fn sptf_beats_sstf_on_queued_random_reads() {
    // 2,000 random 4 KiB reads at depth 16 across a 15k disk: SPTF also weighs the rotation
    let c = Config::preset("hdd-15k").unwrap();
    let mut rng = crate::random::Prng::new(3);
    let offsets: Vec<u64> = (0..2000).map(|_| rng.below(140_000_000) * 4096).collect();
    let t = trace(&vec![0; 2000], &offsets, 4096, 0);
    let iops = |scheduler| {
        let opts = SimOptions {
            iodepth: Some(16),
            scheduler: Some(scheduler),
            ..SimOptions::default()
        };
        simulate(&t.view(), &c, &opts).unwrap().figures.iops
    };
    let (fifo, sstf, sptf) = (
        iops(Scheduler::Fifo),
        iops(Scheduler::Sstf),
        iops(Scheduler::Sptf),
    );
    assert!(
        sstf > 1.1 * fifo && sptf > 1.2 * sstf,
        "{fifo:.0} {sstf:.0} {sptf:.0}"
    );
}

/// The FC-60 paper's (Uysal et al.) four figures on a stream of `size`-byte reads, random
/// over 40 GB or sequential, closed loop at `depth`: (IO/s, MB/s).
fn fc60_run(size: u32, sequential: bool, depth: usize) -> (f64, f64) {
    let c = Config::preset("fc60-r5-4disk").unwrap();
    let mut rng = crate::random::Prng::new(1);
    let n = if size < 65536 { 4000 } else { 1500 };
    let unit = u64::from(size);
    let offsets: Vec<u64> = (0..n as u64)
        .map(|i| {
            if sequential {
                i * unit
            } else {
                rng.below(40_000_000_000 / unit) * unit
            }
        })
        .collect();
    let t = trace(&vec![0; n], &offsets, size, 0);
    let opts = SimOptions {
        iodepth: Some(depth),
        ..SimOptions::default()
    };
    let f = simulate(&t.view(), &c, &opts).unwrap().figures;
    (f.iops, f.mb_per_s)
}

#[test]
fn fc60_gives_the_paper_s_four_figures_at_depth_8_and_never_passes_its_ceiling() {
    let figures = [
        (2048, false, 381.76, 0),
        (2048, true, 3656.4, 0),
        (256 * 1024, false, 17.6, 1),
        (256 * 1024, true, 40.3, 1),
    ];
    for (size, sequential, published, which) in figures {
        let got = fc60_run(size, sequential, 8);
        let got = if which == 0 { got.0 } else { got.1 };
        assert!(
            (got / published - 1.0).abs() < 0.10,
            "{size} {sequential}: {got} vs {published}"
        );
    }
    // the controller takes 90.9 µs of each command, one at a time: at most 11,000 IO/s (the
    // paper's top observed per controller), however deep the queue and however small and
    // cached the reads
    for depth in [1, 4, 32, 128] {
        let (iops, _) = fc60_run(2048, true, depth);
        assert!(iops < 11_000.0, "depth {depth}: {iops}");
    }
    let c = Config::preset("fc60-r5-4disk").unwrap();
    let t = trace(&vec![0; 3000], &vec![0; 3000], 512, 0);
    let at = |depth| {
        let opts = SimOptions {
            iodepth: Some(depth),
            ..SimOptions::default()
        };
        simulate(&t.view(), &c, &opts).unwrap().figures
    };
    assert!(at(64).iops < 11_000.0);
    let f = at(1);
    // one at a time, all but the first are hits: 90.9 µs of command, 6.1 µs of data at
    // 84 MB/s, 150 µs to serve from cache: 4,050 IO/s
    assert!(
        (f.iops - 1e6 / (90.9 + 512.0 / 84.0 + 150.0)).abs() < 40.0,
        "{}",
        f.iops
    );
}

#[test]
fn device_fields_past_any_device_are_refused_by_name() {
    let hdd = super::PRESETS.iter().find(|p| p.0 == "hdd-7200").unwrap().1;
    for (old, new, field) in [
        ("overhead_ms = 0.1", "overhead_ms = 1e308", "device.overhead_ms"),
        ("rpm = 7200", "rpm = 1e-308", "device.rpm"),
        ("rpm = 7200", "rpm = 1e9", "device.rpm"),
    ] {
        assert!(hdd.contains(old), "{old}");
        let e = Config::from_toml(&hdd.replace(old, new)).unwrap_err().to_string();
        assert!(e.contains(field), "{new}: {e}");
    }
    let nvme = super::PRESETS.iter().find(|p| p.0 == "ssd-nvme").unwrap().1;
    for (old, new, field) in [
        (
            "channels = 8",
            "channels = 9223372036854775807",
            "device.channels",
        ),
        ("channels = 8", "channels = 1000000000", "device.channels"),
    ] {
        assert!(nvme.contains(old), "{old}");
        let e = Config::from_toml(&nvme.replace(old, new))
            .unwrap_err()
            .to_string();
        assert!(e.contains(field), "{new}: {e}");
    }
    let faulty = format!("{hdd}\n[faults]\nslow_sector_rate = 0.1\nslow_ms = inf\n");
    let e = Config::from_toml(&faulty).unwrap_err().to_string();
    assert!(e.contains("faults.slow_ms"), "{e}");
}

#[test]
fn progress_counts_every_request_and_a_stop_interrupts() {
    use crate::progress::Progress;
    let n = 10_000u64;
    let ts: Vec<u64> = (0..n).map(|i| i * 1_000_000).collect();
    let offsets: Vec<u64> = (0..n).map(|i| (i * 7919 % 1000) * 4096).collect();
    let t = trace(&ts, &offsets, 4096, 0);
    let progress = Progress::default();
    progress.add_total(n);
    simulate_watched(&t.view(), &disk(false), &SimOptions::default(), &progress).unwrap();
    assert_eq!(progress.get(), (n, n));
    // several devices count into the one progress
    let progress = Progress::default();
    let mut two = t.clone();
    two.volume = (0..n).map(|i| (i % 2) as u32).collect();
    two.volumes = vec!["a".into(), "b".into()];
    let placements: Vec<Placement> = [vec![0], vec![1]]
        .into_iter()
        .map(|volumes| Placement {
            config: disk(false),
            volumes,
        })
        .collect();
    simulate_mapped(&two.view(), &placements, &SimOptions::default(), &progress).unwrap();
    assert_eq!(progress.get().0, n);
    // told to stop, the run ends at its next check with Interrupted
    let stopped = Progress::default();
    stopped.stop();
    let e = simulate_watched(&t.view(), &disk(false), &SimOptions::default(), &stopped);
    assert!(matches!(e, Err(crate::error::Error::Interrupted)));
    assert_eq!(stopped.get().0, 4096);
}

/// Reads and writes of mixed sizes over three volumes, sequential runs among random ones,
/// trims and flushes, from a seeded generator: for runs fed in pieces.
fn mixed_requests(n: usize, mean_gap_ns: u64, seed: u64) -> Trace {
    let mut rng = crate::random::Prng::new(seed);
    let mut t = Trace {
        volumes: vec!["a".into(), "b".into(), "c".into()],
        ..Trace::default()
    };
    let (mut ts, mut end) = (0u64, 0u64);
    for _ in 0..n {
        ts += rng.below(2 * mean_gap_ns);
        let size = [4096u32, 8192, 65536, 262_144][rng.below(4) as usize];
        let offset = if rng.below(3) == 0 {
            end
        } else {
            rng.below(1 << 22) * 4096
        };
        end = offset + u64::from(size);
        t.ts_ns.push(ts);
        t.offset.push(offset);
        t.size.push(size);
        t.op.push([0u8, 0, 0, 1, 1, 2, 3][rng.below(7) as usize]);
        t.volume.push(rng.below(3) as u32);
        t.stream.push(0);
    }
    t
}

/// Every figure alike but the latency percentiles, which a stream takes on HDR histograms.
fn same_but_sketched(want: &serde_json::Value, got: &serde_json::Value, path: &str) {
    use serde_json::Value;
    match (want, got) {
        (Value::Object(wants), Value::Object(gots)) => {
            assert_eq!(
                wants.keys().collect::<Vec<_>>(),
                gots.keys().collect::<Vec<_>>(),
                "{path}"
            );
            for (k, v) in wants {
                let p = format!("{path}.{k}");
                let sketched = ["p50", "p90", "p95", "p99", "p999"].contains(&k.as_str());
                if path.ends_with("latency_us") && sketched {
                    let (exact, taken) = (v.as_f64().unwrap(), gots[k].as_f64().unwrap());
                    let bound = 1e-3 * exact.abs().max(taken.abs()) + 1e-6;
                    assert!((exact - taken).abs() <= bound, "{p}: {exact} vs {taken}");
                } else {
                    same_but_sketched(v, &gots[k], &p);
                }
            }
        }
        (Value::Array(wants), Value::Array(gots)) => {
            assert_eq!(wants.len(), gots.len(), "{path}");
            for (i, (one, other)) in wants.iter().zip(gots).enumerate() {
                same_but_sketched(one, other, &format!("{path}[{i}]"));
            }
        }
        (Value::Number(one), Value::Number(other)) => {
            let (exact, taken) = (one.as_f64().unwrap(), other.as_f64().unwrap());
            assert!(
                (exact - taken).abs() <= 1e-9 * exact.abs().max(taken.abs()),
                "{path}: {exact} vs {taken}"
            );
        }
        _ => assert_eq!(want, got, "{path}"),
    }
}

/// The outcomes of pieces fed in turn, joined.
fn joined(mut outcomes: Vec<Done>) -> Done {
    let mut all = Done::default();
    for d in &mut outcomes {
        all.issue_ns.append(&mut d.issue_ns);
        all.latency_ns.append(&mut d.latency_ns);
        all.status.append(&mut d.status);
    }
    all
}

#[test]
fn a_trace_fed_in_pieces_runs_as_the_whole_trace() {
    let progress = crate::progress::Progress::default();
    // an idle disk, an overloaded one, an SSD, an array with a controller's cache and
    // prefetch, a closed loop, a faster replay, and faults
    let mut faulty = Config::preset("hdd-7200").unwrap();
    faulty.faults = Some(Faults {
        failed_sector_rate: 0.01,
        slow_sector_rate: 0.02,
        slow_ms: 50.0,
        fail_ms: 1000.0,
        slow_write_rate: 0.05,
        slow_write_ms: 30.0,
        seed: 3,
    });
    let cases: Vec<(Config, SimOptions, u64)> = vec![
        (
            Config::preset("hdd-7200").unwrap(),
            SimOptions::default(),
            40_000_000,
        ),
        (
            Config::preset("hdd-7200").unwrap(),
            SimOptions::default(),
            200_000,
        ),
        (Config::preset("ssd-sata").unwrap(), SimOptions::default(), 20_000),
        (
            Config::preset("fc60-r5-4disk").unwrap(),
            SimOptions::default(),
            2_000_000,
        ),
        (
            Config::preset("tpc-raid10-28disk").unwrap(),
            SimOptions {
                iodepth: Some(16),
                ..SimOptions::default()
            },
            1_000,
        ),
        (
            Config::preset("mqsim-default").unwrap(),
            SimOptions {
                intensity: 4.0,
                ..SimOptions::default()
            },
            50_000,
        ),
        (faulty, SimOptions::default(), 10_000_000),
    ];
    for (config, opts, gap) in cases {
        let t = mixed_requests(3_000, gap, 11);
        let whole = simulate(&t.view(), &config, &opts).unwrap();
        for cuts in [
            vec![0, 3_000],
            vec![0, 1, 2, 999, 1_000, 2_998, 3_000],
            vec![0, 700, 701, 3_000],
        ] {
            let mut s = SimStream::new(&config, &opts, t.volumes.len()).unwrap();
            let mut outcomes: Vec<Done> = cuts
                .windows(2)
                .map(|w| s.feed(&t.view().rows(w[0]..w[1]), &progress).unwrap())
                .collect();
            let (last, figures) = s.finish(&progress).unwrap();
            outcomes.push(last);
            let name = format!("{} {:?} {cuts:?}", config.name, opts);
            let all = joined(outcomes);
            assert_eq!(all.issue_ns, whole.issue_ns, "{name}");
            assert_eq!(all.latency_ns, whole.latency_ns, "{name}");
            assert_eq!(all.status, whole.status, "{name}");
            same_but_sketched(
                &serde_json::to_value(&whole.figures).unwrap(),
                &serde_json::to_value(&figures).unwrap(),
                &name,
            );
        }
    }
}

#[test]
fn a_trace_fed_in_pieces_runs_with_each_volume_on_its_device_as_the_whole() {
    let progress = crate::progress::Progress::default();
    let t = mixed_requests(4_000, 300_000, 5);
    let place = |name: &str, volumes: &[u32]| Placement {
        config: Config::preset(name).unwrap(),
        volumes: volumes.to_vec(),
    };
    let placements = [place("hdd-7200", &[1]), place("ssd-sata", &[0, 2])];
    for opts in [
        SimOptions::default(),
        SimOptions {
            iodepth: Some(4),
            ..SimOptions::default()
        },
    ] {
        let whole = simulate_mapped(&t.view(), &placements, &opts, &progress).unwrap();
        let mut s = MappedStream::new(&t.volumes, &placements, &opts).unwrap();
        let mut outcomes: Vec<Done> = [0, 3, 1_500, 1_501, 4_000]
            .windows(2)
            .map(|w| s.feed(&t.view().rows(w[0]..w[1]), &progress).unwrap())
            .collect();
        let (last, figures) = s.finish(&progress).unwrap();
        outcomes.push(last);
        let all = joined(outcomes);
        assert_eq!(all.issue_ns, whole.issue_ns, "{opts:?}");
        assert_eq!(all.latency_ns, whole.latency_ns, "{opts:?}");
        same_but_sketched(
            &serde_json::to_value(&whole.figures).unwrap(),
            &serde_json::to_value(&figures).unwrap(),
            "mapped",
        );
    }
}

#[test]
fn pieces_back_in_time_are_refused() {
    let t = mixed_requests(100, 1_000, 2);
    let progress = crate::progress::Progress::default();
    let mut s = SimStream::new(&Config::preset("ssd-sata").unwrap(), &SimOptions::default(), 3).unwrap();
    s.feed(&t.view().rows(50..100), &progress).unwrap();
    assert!(s.feed(&t.view().rows(0..50), &progress).is_err());
}
