//! Workloads not learned from a trace: simple fio/IOMeter-style patterns, and the
//! locality-free baseline that IOMeter-like generators produce from a trace's mix.

mod locality_free;
pub mod pattern;

pub use locality_free::generate_locality_free;
pub use pattern::Pattern;
