//! What-if studies: every study through one function, options and report as plain data.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use iomimic_core::study::{self, early_errors};

use crate::boundary::{to_py, trace_to_py, with_checked_view, Columns};
use crate::errors::{to_py as err_to_py, InputError};
use crate::watch::watched;

/// [(name, description)] of every study.
#[pyfunction]
pub fn study_table() -> Vec<(&'static str, &'static str)> {
    study::STUDIES
        .iter()
        .map(|s| (s.name(), s.description()))
        .collect()
}

/// Runs study `name` on a workload with `options` (JSON text: the study's own fields);
/// returns its report. `progress(done, total)` is called while it runs.
#[pyfunction]
#[pyo3(signature = (name, columns, volumes, files, options, progress=None))]
pub fn run_study(
    py: Python<'_>,
    name: &str,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    options: &str,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let s = study::find(name, study::STUDIES).map_err(err_to_py)?;
    let options = options_of(name, options)?;
    let report = with_checked_view(&columns, &volumes, &files, "study", |view| {
        watched(py, progress.as_ref(), |p| s.run(view, &options, p))
    })?;
    to_py(py, &report)
}

/// The independent points of study `name` with `options` (JSON text), each the options (JSON
/// text) of a run on the same workload; None when the study runs as one piece.
#[pyfunction]
pub fn study_points(name: &str, options: &str) -> PyResult<Option<Vec<String>>> {
    let s = study::find(name, study::STUDIES).map_err(err_to_py)?;
    let points = s.points(&options_of(name, options)?).map_err(err_to_py)?;
    Ok(points.map(|p| p.iter().map(serde_json::Value::to_string).collect()))
}

/// The report of study `name` with `options`, from its points' reports (JSON texts, in the
/// order of `study_points`).
#[pyfunction]
pub fn join_study(py: Python<'_>, name: &str, options: &str, reports: Vec<String>) -> PyResult<Py<PyAny>> {
    let s = study::find(name, study::STUDIES).map_err(err_to_py)?;
    let options = options_of(name, options)?;
    let reports = reports
        .iter()
        .map(|r| serde_json::from_str(r))
        .collect::<Result<Vec<serde_json::Value>, _>>()
        .map_err(|e| InputError::new_err(format!("study {name}: a point's report is not JSON: {e}")))?;
    let report = py.detach(|| s.join(&options, &reports)).map_err(err_to_py)?;
    to_py(py, &report)
}

/// Runs study `name`, one that takes no workload (its inputs are all in `options`).
#[pyfunction]
#[pyo3(signature = (name, options, progress=None))]
pub fn run_study_alone(
    py: Python<'_>,
    name: &str,
    options: &str,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let s = study::find(name, study::STUDIES).map_err(err_to_py)?;
    if s.needs_workload() {
        return Err(InputError::new_err(format!("study {name} runs on a workload")));
    }
    let options = options_of(name, options)?;
    let empty = iomimic_core::trace::Trace::default();
    let report = watched(py, progress.as_ref(), |p| s.run(&empty.view(), &options, p))?;
    to_py(py, &report)
}

/// The workload of a fleet of `devices` real targets at `intensity`: one volume per device,
/// each the workload started at its own point (see the core's `early_errors::fleet_workload`).
#[pyfunction]
pub fn fleet_workload<'py>(
    py: Python<'py>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    devices: usize,
    intensity: f64,
) -> PyResult<Bound<'py, PyDict>> {
    if devices == 0 || !(intensity.is_finite() && intensity > 0.0) {
        return Err(InputError::new_err(
            "a fleet needs devices and a positive intensity",
        ));
    }
    let t = with_checked_view(&columns, &volumes, &files, "study", |view| {
        Ok(py.detach(|| early_errors::fleet_workload(view, devices, intensity)))
    })?;
    trace_to_py(py, t)
}

/// The early-error rule's verdict on a real run of a fleet workload (`rule`: JSON text of the
/// rule's fields).
#[pyfunction]
pub fn judge_fleet(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    intensity: f64,
    checkpoints: usize,
    rule: &str,
) -> PyResult<Py<PyAny>> {
    let rule: early_errors::detector::Rule = serde_json::from_str(rule)
        .map_err(|e| InputError::new_err(format!("study early-errors: rule: {e}")))?;
    let outcome = with_checked_view(&columns, &volumes, &files, "study", |view| {
        let completions = early_errors::completions_of(view);
        Ok(early_errors::judge(
            completions,
            volumes.len(),
            &[],
            intensity,
            checkpoints.max(1),
            &rule,
        ))
    })?;
    to_py(py, &outcome)
}

/// A study's options, from the JSON text Python hands over.
fn options_of(name: &str, text: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| InputError::new_err(format!("study {name}: options are not JSON: {e}")))
}
