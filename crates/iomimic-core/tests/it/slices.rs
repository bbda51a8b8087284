//! A long generation made slice by slice is the same trace as made whole, and its slices
//! follow one another in time.

use iomimic_core::model::{self, GenerateOptions, Generation, Model, TrainOptions};
use iomimic_core::progress::Progress;
use iomimic_core::trace::Trace;

/// Three streams that come and go (the first only in the first half, the third only in the
/// last quarter), in bursts, with mixed sizes and re-use.
fn trace() -> Trace {
    let mut x = 777u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t = Trace {
        volumes: vec!["a".into(), "b".into()],
        ..Trace::default()
    };
    let n = 30_000u64;
    let mut ts = 0u64;
    for i in 0..n {
        ts += if next() % 50 == 0 {
            2_000_000
        } else {
            next() % 20_000
        };
        let stream = match i * 4 / n {
            0 | 1 => (next() % 2) as u32,
            2 => 1,
            _ => 1 + (next() % 2) as u32,
        };
        t.ts_ns.push(ts);
        t.offset.push(next() % 2048 * 4096);
        t.size.push(4096 << (next() % 3));
        t.op.push(u8::from(next() % 4 == 0));
        t.volume.push((next() % 2) as u32);
        t.stream.push(stream);
    }
    t
}

fn model() -> Model {
    let opts = TrainOptions {
        levels: Some(1),
        states: Some(4),
        ..TrainOptions::default()
    };
    model::train(&trace().view(), &opts).unwrap()
}

/// The slices of `opts`'s generation, each shifted as the first.
fn slices(m: &Model, opts: &GenerateOptions) -> Vec<Trace> {
    let g = Generation::plan(m, opts).unwrap();
    let p = Progress::default();
    let mut out: Vec<Trace> = (0..g.len()).map(|s| g.slice(m, s, &p).unwrap()).collect();
    let start = out[0].ts_ns[0];
    for part in &mut out {
        part.ts_ns.iter_mut().for_each(|t| *t -= start);
    }
    out
}

fn joined(parts: &[Trace]) -> Trace {
    let mut whole = Trace {
        volumes: parts[0].volumes.clone(),
        ..Trace::default()
    };
    for p in parts {
        whole.ts_ns.extend(&p.ts_ns);
        whole.offset.extend(&p.offset);
        whole.size.extend(&p.size);
        whole.op.extend(&p.op);
        whole.volume.extend(&p.volume);
        whole.stream.extend(&p.stream);
    }
    whole
}

fn per_stream(t: &Trace) -> [usize; 3] {
    let mut c = [0; 3];
    for &s in &t.stream {
        c[s as usize] += 1;
    }
    c
}

#[test]
fn slices_joined_are_the_whole_generation_in_time_order() {
    let trained = model();
    let mut plain = trained.clone();
    plain.rate.arrivals = None;
    assert!(
        trained.rate.arrivals.is_some(),
        "the bursty trace keeps an arrival process"
    );
    for m in [&trained, &plain] {
        let opts = GenerateOptions {
            requests: Some(60_000),
            slice: 7_000,
            ..GenerateOptions::default()
        };
        let parts = slices(m, &opts);
        assert!(parts.len() >= 8, "{} slices", parts.len());
        let whole = model::generate(m, &opts).unwrap();
        let joined = joined(&parts);
        assert_eq!(joined, whole);
        assert_eq!(whole.len(), 60_000);
        assert!(whole.ts_ns.windows(2).all(|w| w[0] <= w[1]));
        // slices of about 7,000 requests each (the last what is left)
        let sizes: Vec<usize> = parts.iter().map(Trace::len).collect();
        let (last, full) = sizes.split_last().unwrap();
        assert!(
            full.iter().all(|&n| (6_000..8_000).contains(&n)) && *last <= 8_000,
            "{sizes:?}"
        );
        // each stream keeps its share and its place in time: the same as generated in one slice
        let one = model::generate(
            m,
            &GenerateOptions {
                slice: u64::MAX,
                ..opts.clone()
            },
        )
        .unwrap();
        let (a, b) = (per_stream(&whole), per_stream(&one));
        for s in 0..3 {
            let diff = (a[s] as f64 - b[s] as f64).abs() / b[s] as f64;
            assert!(diff < 0.02, "stream {s}: {} vs {}", a[s], b[s]);
        }
        let last_of = |t: &Trace, s: u32| t.ts_ns[t.stream.iter().rposition(|&x| x == s).unwrap()] as f64;
        let first_of = |t: &Trace, s: u32| t.ts_ns[t.stream.iter().position(|&x| x == s).unwrap()] as f64;
        let span = *one.ts_ns.last().unwrap() as f64;
        assert!((last_of(&whole, 0) - last_of(&one, 0)).abs() < 0.05 * span);
        assert!((first_of(&whole, 2) - first_of(&one, 2)).abs() < 0.05 * span);
    }
}

#[test]
fn a_duration_ends_the_slices_where_it_ends_the_whole() {
    let trained = model();
    let mut plain = trained.clone();
    plain.rate.arrivals = None;
    for m in [&trained, &plain] {
        let opts = GenerateOptions {
            duration_ns: Some(m.duration_ns / 2 * 5),
            slice: 9_000,
            ..GenerateOptions::default()
        };
        let parts = slices(m, &opts);
        let whole = model::generate(m, &opts).unwrap();
        let kept: Vec<Trace> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        assert_eq!(joined(&kept), whole);
        assert!(*whole.ts_ns.last().unwrap() <= m.duration_ns / 2 * 5);
        let n = whole.len() as f64 / m.requests as f64;
        assert!(
            (2.3..2.7).contains(&n),
            "{n} x the model's requests in 2.5 x its duration"
        );
    }
}
