//! The workload model: a parsed, validated model held in Rust, trained, mixed, loaded from a
//! preset, generated from.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use iomimic_core::model::{self, Model, Preset};

use crate::boundary::{to_py, trace_to_py, with_checked_view, Columns};
use crate::errors::to_py as err_to_py;
use crate::watch::watched;

/// A validated model. Generation works on it directly: the JSON is parsed once.
#[pyclass(name = "Model", module = "iomimic._core", frozen)]
pub struct PyModel {
    inner: Arc<Model>,
}

impl PyModel {
    fn wrap(m: Model) -> Self {
        Self { inner: Arc::new(m) }
    }
}

#[pymethods]
impl PyModel {
    /// Parses and validates model JSON (an InputError names the bad field).
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<Self> {
        py.detach(|| Model::from_json(text))
            .map(Self::wrap)
            .map_err(err_to_py)
    }

    fn to_json(&self, py: Python<'_>) -> String {
        py.detach(|| self.inner.to_json())
    }

    /// The whole model as plain data (the JSON's structure).
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, self.inner.as_ref())
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// A synthetic trace: `requests` of them, or as many as fit `duration_ns` (default the
    /// training trace's count); `intensity` multiplies the rate.
    #[pyo3(signature = (requests=None, duration_ns=None, intensity=1.0, seed=1, reuse=true, progress=None))]
    #[allow(clippy::too_many_arguments)] // one per keyword of the Python call
    fn generate<'py>(
        &self,
        py: Python<'py>,
        requests: Option<u64>,
        duration_ns: Option<u64>,
        intensity: f64,
        seed: u64,
        reuse: bool,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let opts = model::GenerateOptions {
            requests,
            duration_ns,
            intensity,
            seed,
            reuse,
        };
        let trace = watched(py, progress.as_ref(), |p| {
            model::generate_watched(&self.inner, &opts, p)
        })?;
        trace_to_py(py, trace)
    }
}

/// Trains a model of a trace.
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, levels=None, states=None, by_stream=None, reuse=true, name=None, source=None, seed=1, simulate_on=None, progress=None))]
pub fn train_model(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    levels: Option<u32>,
    states: Option<u32>,
    by_stream: Option<bool>,
    reuse: bool,
    name: Option<String>,
    source: Option<String>,
    seed: u64,
    simulate_on: Option<(String, usize)>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<PyModel> {
    let opts = model::TrainOptions {
        levels,
        states,
        by_stream,
        reuse,
        name: name.unwrap_or_else(|| "model".into()),
        source,
        seed,
        simulate_on,
    };
    with_checked_view(&columns, &volumes, &files, "train on", |view| {
        watched(py, progress.as_ref(), |p| model::train_watched(view, &opts, p)).map(PyModel::wrap)
    })
}

/// A workload assembled from models, each with a share of the requests.
#[pyfunction]
pub fn mix_models(py: Python<'_>, parts: Vec<(PyRef<'_, PyModel>, f64)>, name: &str) -> PyResult<PyModel> {
    let models: Vec<(Arc<Model>, f64)> = parts.iter().map(|(m, w)| (Arc::clone(&m.inner), *w)).collect();
    py.detach(|| {
        let refs: Vec<(&Model, f64)> = models.iter().map(|(m, w)| (m.as_ref(), *w)).collect();
        model::mix(&refs, name)
    })
    .map(PyModel::wrap)
    .map_err(err_to_py)
}

/// The names of the preset models.
#[pyfunction]
pub fn model_presets() -> Vec<&'static str> {
    model::preset::PRESETS.iter().map(|(n, _)| *n).collect()
}

/// A preset's model.
#[pyfunction]
pub fn preset_model(name: &str) -> PyResult<PyModel> {
    Preset::builtin(name)
        .and_then(|p| p.build())
        .map(PyModel::wrap)
        .map_err(err_to_py)
}

/// A preset's description: sources, assumptions, the published figures it must reproduce.
#[pyfunction]
pub fn preset_info(py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
    let preset = Preset::builtin(name).map_err(err_to_py)?;
    to_py(py, &preset)
}
