//! What-if studies: every study through one function, options and report as plain data.

use pyo3::prelude::*;

use iomimic_core::study;

use crate::boundary::{to_py, with_checked_view, Columns};
use crate::errors::{to_py as err_to_py, InputError};

/// [(name, description)] of every study.
#[pyfunction]
pub fn study_table() -> Vec<(&'static str, &'static str)> {
    study::STUDIES
        .iter()
        .map(|s| (s.name(), s.description()))
        .collect()
}

/// Runs study `name` on a workload with `options` (JSON text: the study's own fields);
/// returns its report.
#[pyfunction]
pub fn run_study(
    py: Python<'_>,
    name: &str,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    options: &str,
) -> PyResult<Py<PyAny>> {
    let s = study::find(name, study::STUDIES).map_err(err_to_py)?;
    let options: serde_json::Value = serde_json::from_str(options)
        .map_err(|e| InputError::new_err(format!("study {name}: options are not JSON: {e}")))?;
    let report = with_checked_view(&columns, &volumes, &files, "study", |view| {
        py.detach(|| s.run(view, &options)).map_err(err_to_py)
    })?;
    to_py(py, &report)
}
