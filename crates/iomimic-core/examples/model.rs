//! Trains a model on a trace, generates from it and prints a few figures of both:
//! `cargo run --release --example model PATH [levels states]`.

use iomimic_core::analyze::{self, MrcScope, Options};
use iomimic_core::model::{self, GenerateOptions, TrainOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (trace, _) = iomimic_core::read_trace(&args[1], &iomimic_core::ReadOptions::default()).expect("read");
    let mut opts = TrainOptions::default();
    if args.len() > 3 {
        opts.levels = Some(args[2].parse().expect("levels"));
        opts.states = Some(args[3].parse().expect("states"));
    }
    let t0 = std::time::Instant::now();
    let m = model::train(&trace.view(), &opts).expect("train");
    let train_s = t0.elapsed().as_secs_f64();
    let t0 = std::time::Instant::now();
    let synth = model::generate(&m, &GenerateOptions::default()).expect("generate");
    let gen_s = t0.elapsed().as_secs_f64();
    let base = model::generate_locality_free(&trace.view(), trace.len() as u64, 1).expect("baseline");
    if std::env::var("REUSE").is_ok() {
        for (name, t) in [("orig", &trace), ("synth", &synth)] {
            let blocks: u64 = (0..t.len()).map(|i| (t.offset[i] + u64::from(t.size[i]) - 1) / 4096 - t.offset[i] / 4096 + 1).sum();
            let big = t.size.iter().filter(|&&s| s > 65536).count();
            let unaligned = t.offset.iter().filter(|&&o| o % 4096 != 0).count();
            eprintln!("{name}: {} requests, {blocks} blocks, {big} big, {unaligned} unaligned, size sum {}", t.len(), t.size.iter().map(|&s| u64::from(s)).sum::<u64>());
        }
    }
    let o = Options { mrc: MrcScope::Trace, ..Options::default() };
    let a = analyze::characterize(&trace.view(), &o).expect("a");
    let b = analyze::characterize(&synth.view(), &o).expect("b");
    let c = analyze::characterize(&base.view(), &o).expect("c");
    eprintln!("levels {} states {} trained in {train_s:.3}s, generated {} in {gen_s:.3}s; json {} bytes", m.levels, m.states, synth.len(), m.to_json().len());
    for (name, p) in [("orig", &a), ("synth", &b), ("base", &c)] {
        let f = &p.trace;
        let mrc = f.mrc.as_ref().expect("mrc");
        eprintln!(
            "{name:6} rf {:.4} seq {:.4} size {:.0} iat {:.1} iops {:.1} spatial {:?} fp {} mrc {:?}",
            f.read_fraction, f.sequential_fraction, f.size.all.mean_bytes, f.interarrival.mean_us, f.iops,
            f.spatial.fractions.iter().map(|x| (x * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
            mrc.footprint_bytes >> 20,
            mrc.curve.iter().map(|p| (p.miss_ratio * 1000.0).round() / 1000.0).collect::<Vec<_>>()
        );
        if std::env::var("REUSE").is_ok() {
            eprintln!("   accesses {} cold {} reuse {:?}", mrc.accesses, mrc.cold_misses, mrc.reuse_histogram.iter().map(|b| (b.from_blocks, b.count)).collect::<Vec<_>>());
        }
    }
}
