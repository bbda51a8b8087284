//! iomimic's core: the columnar [`Trace`], the trace formats that fill it, and what is computed on it.
//!
//! Nothing here knows about Python; the `iomimic-py` crate converts arrays and errors at the
//! boundary.

pub mod analyze;
pub mod cache;
pub mod error;
pub mod formats;
pub mod guard;
pub mod latency;
pub mod limits;
mod memory;
pub mod merge;
pub mod model;
pub mod offload;
mod parallel;
pub mod progress;
pub mod random;
pub mod realio;
pub mod sim;
pub mod stats;
pub mod study;
pub mod synth;
pub mod trace;
pub mod units;

pub use error::{Error, Result};
pub use formats::{read_trace, Format, ReadOptions, ReadReport, TraceReader};
pub use trace::{Op, Trace, TraceView, LATENCY_UNKNOWN, MAX_OFFSET};
