//! The core crate's integration tests: one module per fixture, through the public API only.

mod toy_format;
