//! Reads a trace, characterizes it and prints the time taken:
//! `cargo run --release --example characterize PATH [none|trace|all]`.

use iomimic_core::analyze::{self, MrcScope, Options};

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: characterize PATH [none|trace|all]");
    let mrc = match std::env::args().nth(2).as_deref() {
        Some("none") => MrcScope::None,
        Some("trace") => MrcScope::Trace,
        _ => MrcScope::All,
    };
    let (trace, _) =
        iomimic_core::read_trace(&path, &iomimic_core::ReadOptions::default()).unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(2)
        });
    let start = std::time::Instant::now();
    let profile = analyze::characterize(
        &trace.view(),
        &Options {
            mrc,
            ..Options::default()
        },
    )
    .expect("default options suit every trace");
    let secs = start.elapsed().as_secs_f64();
    let json = profile.to_json();
    eprintln!(
        "{} requests in {secs:.3} s ({:.2} M/s); {} bytes of JSON",
        trace.len(),
        trace.len() as f64 / secs / 1e6,
        json.len()
    );
}
