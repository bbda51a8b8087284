//! Reads a trace and prints its size and the time taken: `cargo run --release --example read PATH`.

fn main() {
    let path = std::env::args().nth(1).expect("usage: read PATH [FORMAT]");
    let mut opts = iomimic_core::ReadOptions::default();
    if let Some(f) = std::env::args().nth(2) {
        opts.format = Some(f.parse().expect("format"));
    }
    let start = std::time::Instant::now();
    match iomimic_core::read_trace(&path, &opts) {
        Ok((trace, report)) => {
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "{} requests ({}) in {secs:.3} s",
                trace.len(),
                report.format.map_or("?", |f| f.name())
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
