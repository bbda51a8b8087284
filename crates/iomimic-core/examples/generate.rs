//! Times training and generation: `cargo run --release --example generate TRACE [levels states]`.

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
    if std::env::var("TRAIN_ONLY").is_ok() {
        eprintln!("train {:.2} M/s", trace.len() as f64 / train_s / 1e6);
        return;
    }
    let mut gen_s = f64::INFINITY;
    let mut synth = iomimic_core::Trace::default();
    for _ in 0..3 {
        let t0 = std::time::Instant::now();
        synth = model::generate(&m, &GenerateOptions::default()).expect("generate");
        gen_s = gen_s.min(t0.elapsed().as_secs_f64());
    }
    eprintln!(
        "train {:.2} M/s, generate {:.2} M/s",
        trace.len() as f64 / train_s / 1e6,
        synth.len() as f64 / gen_s / 1e6
    );
}
