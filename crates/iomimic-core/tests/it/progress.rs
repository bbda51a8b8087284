//! Long work reports its progress exactly (done reaches total, never passes it) and stops with
//! `Interrupted` when told to: characterization, validation and generation, from outside the
//! crate as the bindings call them.

use iomimic_core::analyze::{characterize_watched, compare, MrcScope, Options};
use iomimic_core::error::Error;
use iomimic_core::model::{self, GenerateOptions, TrainOptions};
use iomimic_core::progress::{Progress, CHUNK};
use iomimic_core::trace::Trace;

/// `n` requests over `volumes` volumes and `streams` streams, with reuse and mixed sizes.
fn trace(n: usize, volumes: u32, streams: u32) -> Trace {
    let mut x = 12345u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t = Trace {
        volumes: (0..volumes).map(|v| format!("v{v}")).collect(),
        ..Trace::default()
    };
    for i in 0..n {
        t.ts_ns.push(i as u64 * 10_000);
        t.offset.push(next() % 4096 * 4096);
        t.size.push(4096 << (next() % 3));
        t.op.push(u8::from(next() % 3 == 0));
        t.volume.push(next() as u32 % volumes);
        t.stream.push(next() as u32 % streams);
    }
    t
}

#[test]
fn tick_counts_every_unit_once() {
    let p = Progress::default();
    let n = 3 * CHUNK + 17;
    for i in 0..n {
        p.tick(i).unwrap();
    }
    p.ticked(n);
    assert_eq!(p.get().0, n as u64);
    p.stop();
    assert!(matches!(p.tick(CHUNK - 1), Err(Error::Interrupted)));
}

#[test]
fn characterization_counts_each_pass_exactly() {
    let n = 3 * CHUNK + 5;
    for (volumes, streams, mrc) in [
        (1, 1, MrcScope::All),
        (3, 1, MrcScope::All),
        (1, 4, MrcScope::Trace),
        (3, 4, MrcScope::All),
        (3, 4, MrcScope::None),
    ] {
        let t = trace(n, volumes, streams);
        let opts = Options {
            mrc,
            ..Options::default()
        };
        let p = Progress::default();
        let profile = characterize_watched(&t.view(), &opts, &p).unwrap();
        assert_eq!(profile.trace.requests, n as u64);
        let (done, total) = p.get();
        // passes: counters, ranges, volumes' figures, the whole curve, the streams' figures
        let passes = 3 + u64::from(mrc != MrcScope::None) + u64::from(streams > 1);
        assert_eq!(
            (done, total),
            (passes * n as u64, passes * n as u64),
            "{volumes} {streams} {mrc:?}"
        );
        // the same figures as without a watcher
        let plain = iomimic_core::analyze::characterize(&t.view(), &opts).unwrap();
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            serde_json::to_string(&profile).unwrap()
        );
    }
}

#[test]
fn validation_and_generation_count_to_their_total() {
    let t = trace(2 * CHUNK, 2, 3);
    let m = model::train(
        &t.view(),
        &TrainOptions {
            levels: Some(2),
            states: Some(4),
            ..TrainOptions::default()
        },
    )
    .unwrap();
    let p = Progress::default();
    let opts = GenerateOptions {
        requests: Some(3 * CHUNK as u64 + 1),
        ..GenerateOptions::default()
    };
    let synthetic = model::generate_watched(&m, &opts, &p).unwrap();
    assert_eq!(p.get(), (2 * synthetic.len() as u64, 2 * synthetic.len() as u64));
    assert_eq!(synthetic, model::generate(&m, &opts).unwrap());
    for baseline in [None, Some(compare::Baseline::LocalityFree)] {
        let p = Progress::default();
        let v = compare::ValidateOptions {
            ranges: 4,
            baseline,
            seed: 1,
        };
        compare::validate_watched(&t.view(), &synthetic.view(), &v, &p).unwrap();
        let (done, total) = p.get();
        assert!(total > 0 && done == total, "{done} of {total}");
    }
}

#[test]
fn a_stop_interrupts_characterization_validation_and_generation() {
    let workload = trace(3 * CHUNK, 2, 3);
    let stopped = || {
        let p = Progress::default();
        p.stop();
        p
    };
    let watched = stopped();
    let e = characterize_watched(&workload.view(), &Options::default(), &watched);
    assert!(matches!(e, Err(Error::Interrupted)));
    // stopped at the first chunk of a pass, not at the end of the work
    let (done, total) = watched.get();
    assert!(done < total / 2, "{done} of {total}");
    let v = compare::ValidateOptions {
        ranges: 4,
        baseline: None,
        seed: 1,
    };
    let e = compare::validate_watched(&workload.view(), &workload.view(), &v, &stopped());
    assert!(matches!(e, Err(Error::Interrupted)));
    let m = model::train(&workload.view(), &TrainOptions::default()).unwrap();
    let e = model::generate_watched(&m, &GenerateOptions::default(), &stopped());
    assert!(matches!(e, Err(Error::Interrupted)));
}
