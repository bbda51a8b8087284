//! The crate's integration tests, one binary: kinds added from outside the crate, each needing
//! only its own file and one registry line.

mod fuzz_readers;
mod offload_crash;
mod progress;
mod slices;
mod toy_device;
mod toy_format;
mod toy_policy;
mod toy_study;
