//! Workloads not learned from a trace: patterns and the locality-free baseline.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use iomimic_core::synth::{self, Pattern};

use crate::boundary::{trace_to_py, with_checked_view, Columns};
use crate::errors::to_py as err_to_py;

/// The workload a `--pattern` spec describes, `requests` long.
#[pyfunction]
#[pyo3(signature = (spec, requests, span=None, seed=1))]
pub fn pattern_trace<'py>(
    py: Python<'py>,
    spec: &str,
    requests: u64,
    span: Option<u64>,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let pattern: Pattern = spec.parse().map_err(err_to_py)?;
    let trace = py
        .detach(|| pattern.generate(requests, span, seed))
        .map_err(err_to_py)?;
    trace_to_py(py, trace)
}

/// How many requests a pattern run of `duration_ns` at `intensity` needs.
#[pyfunction]
pub fn pattern_requests(spec: &str, duration_ns: u64, intensity: f64) -> PyResult<u64> {
    let pattern: Pattern = spec.parse().map_err(err_to_py)?;
    pattern.requests_for(duration_ns, intensity).map_err(err_to_py)
}

/// (read %, sequential, size, gap ns, poisson, span, zipf): a pattern's fields, as Python's
/// `Pattern` takes them.
type PatternFields = (u32, bool, u32, u64, bool, Option<u64>, Option<f64>);

/// The fields of a pattern spec, checked.
#[pyfunction]
pub fn parse_pattern(spec: &str) -> PyResult<PatternFields> {
    let p: Pattern = spec.parse().map_err(err_to_py)?;
    Ok((
        p.read_pct,
        p.sequential,
        p.size,
        p.gap_ns,
        p.poisson,
        p.span,
        p.zipf,
    ))
}

/// The locality-free baseline for a trace: same mix, sizes and gaps, uniform offsets.
#[pyfunction]
pub fn generate_locality_free<'py>(
    py: Python<'py>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    requests: u64,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let trace = with_checked_view(&columns, &volumes, &files, "make a baseline of", |view| {
        py.detach(|| synth::generate_locality_free(view, requests, seed))
            .map_err(err_to_py)
    })?;
    trace_to_py(py, trace)
}
