//! Durations and sizes as people write them, parsed by the core's one grammar.

use pyo3::prelude::*;

use crate::errors::to_py as err_to_py;

/// Nanoseconds in a duration (`60s`, `250ms`, `1.5h`, or seconds); `what` names the parameter.
#[pyfunction]
#[pyo3(signature = (text, what="duration"))]
pub fn parse_duration_ns(text: &str, what: &str) -> PyResult<u64> {
    iomimic_core::units::parse_duration_ns(text, what).map_err(err_to_py)
}

/// Bytes in a size (`8G`, `512M`, `4KiB`, or bytes); `what` names the parameter.
#[pyfunction]
#[pyo3(signature = (text, what="size"))]
pub fn parse_size_bytes(text: &str, what: &str) -> PyResult<u64> {
    iomimic_core::units::parse_size_bytes(text, what).map_err(err_to_py)
}
