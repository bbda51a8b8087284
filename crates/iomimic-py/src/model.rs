//! The workload model: a parsed, validated model held in Rust, trained, mixed, loaded from a
//! preset, generated from.

use std::sync::Arc;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use iomimic_core::model::{self, Model, Preset};

use crate::boundary::{to_py, trace_to_py, with_checked_view, with_view, Columns};
use crate::errors::{to_py as err_to_py, InputError};
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
    #[pyo3(signature = (options, progress=None))]
    fn generate<'py>(
        &self,
        py: Python<'py>,
        options: GenerateArgs,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let opts = model::GenerateOptions::from(options);
        let trace = watched(py, progress.as_ref(), |p| {
            model::generate_watched(&self.inner, &opts, p)
        })?;
        trace_to_py(py, trace)
    }

    /// The same generation planned in slices, each made when asked for (`Generation.slice`).
    fn generation(&self, py: Python<'_>, options: GenerateArgs) -> PyResult<PyGeneration> {
        let opts = model::GenerateOptions::from(options);
        let plan = py
            .detach(|| model::Generation::plan(&self.inner, &opts))
            .map_err(err_to_py)?;
        Ok(PyGeneration {
            model: Arc::clone(&self.inner),
            plan,
        })
    }
}

/// Generation's options as Python gives them: a dict with `seed` and any of the other keys, the
/// others at their defaults. One type for both ways in (generated whole, or planned in slices).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct GenerateArgs {
    #[pyo3(default)]
    requests: Option<u64>,
    #[pyo3(default)]
    duration_ns: Option<u64>,
    #[pyo3(default = 1.0)]
    intensity: f64,
    seed: u64,
    #[pyo3(default = true)]
    reuse: bool,
    #[pyo3(default)]
    slice: Option<u64>,
}

impl From<GenerateArgs> for model::GenerateOptions {
    fn from(a: GenerateArgs) -> Self {
        Self {
            requests: a.requests,
            duration_ns: a.duration_ns,
            intensity: a.intensity,
            seed: a.seed,
            reuse: a.reuse,
            slice: a.slice.unwrap_or(model::SLICE_REQUESTS),
        }
    }
}

/// A generation cut into slices of consecutive time (`iomimic_core::model::Generation`).
#[pyclass(name = "Generation", module = "iomimic._core", frozen)]
pub struct PyGeneration {
    model: Arc<Model>,
    plan: model::Generation,
}

#[pymethods]
impl PyGeneration {
    fn __len__(&self) -> usize {
        self.plan.len()
    }

    /// The requests planned (a duration may cut the last slices short).
    #[getter]
    fn requests(&self) -> u64 {
        self.plan.requests()
    }

    /// Slice `s` as trace columns, its times less `start_ns` (default: its own first time,
    /// which is right for the first slice) and that shift as `start_ns`; no rows past the
    /// duration asked for.
    #[pyo3(signature = (s, start_ns=None, progress=None))]
    fn slice<'py>(
        &self,
        py: Python<'py>,
        s: usize,
        start_ns: Option<u64>,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        if s >= self.plan.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "slice {s} of a generation of {}",
                self.plan.len()
            )));
        }
        let (trace, start) = watched(py, progress.as_ref(), |p| {
            let mut t = self.plan.slice(&self.model, s, p)?;
            let start = start_ns.unwrap_or_else(|| t.ts_ns.first().copied().unwrap_or(0));
            for ts in &mut t.ts_ns {
                *ts = ts.saturating_sub(start);
            }
            Ok((t, start))
        })?;
        let d = trace_to_py(py, trace)?;
        d.set_item("start_ns", start)?;
        Ok(d)
    }
}

/// Training's options as Python gives them: a dict with `seed` and any of the other keys, the
/// others at their defaults. One type for both ways in (trained here, or planned for a
/// cluster).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct TrainArgs {
    #[pyo3(default)]
    levels: Option<u32>,
    #[pyo3(default)]
    states: Option<u32>,
    #[pyo3(default)]
    by_stream: Option<bool>,
    #[pyo3(default = true)]
    reuse: bool,
    #[pyo3(default)]
    population: Option<bool>,
    #[pyo3(default)]
    name: Option<String>,
    #[pyo3(default)]
    source: Option<String>,
    seed: u64,
    #[pyo3(default)]
    simulate_on: Option<(String, usize)>,
}

impl From<TrainArgs> for model::TrainOptions {
    fn from(a: TrainArgs) -> Self {
        Self {
            levels: a.levels,
            states: a.states,
            by_stream: a.by_stream,
            reuse: a.reuse,
            population: a.population,
            name: a.name.unwrap_or_else(|| "model".into()),
            source: a.source,
            seed: a.seed,
            simulate_on: a.simulate_on,
        }
    }
}

/// Trains a model of a trace.
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, options, progress=None))]
pub fn train_model(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    options: TrainArgs,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<PyModel> {
    let opts = model::TrainOptions::from(options);
    with_checked_view(&columns, &volumes, &files, "train on", |view| {
        watched(py, progress.as_ref(), |p| model::train_watched(view, &opts, p)).map(PyModel::wrap)
    })
}

/// Training fed a trace a piece at a time, in time order (a trace larger than memory): each
/// of its passes feeds every piece, then `end_pass`, which gives the model after the last.
#[pyclass(name = "TrainStream", module = "iomimic._core", frozen)]
pub struct PyTrainStream {
    inner: std::sync::Mutex<model::TrainStream>,
}

#[pymethods]
impl PyTrainStream {
    /// `threads`: the places in the model of the threads trained here (default all; the
    /// others' parts come to `assemble`).
    #[new]
    #[pyo3(signature = (volumes, files, options, threads=None))]
    fn new(
        volumes: Vec<String>,
        files: Vec<String>,
        options: TrainArgs,
        threads: Option<Vec<usize>>,
    ) -> Self {
        Self {
            inner: std::sync::Mutex::new(model::TrainStream::with_threads(
                volumes,
                files,
                options.into(),
                threads,
            )),
        }
    }

    /// Training that starts at the third pass from another's `clocked()`, training the threads
    /// `threads` (default all).
    #[staticmethod]
    #[pyo3(signature = (volumes, files, options, clocked, threads=None))]
    fn resume(
        py: Python<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
        options: TrainArgs,
        clocked: &str,
        threads: Option<Vec<usize>>,
    ) -> PyResult<Self> {
        let opts = options.into();
        let inner = py
            .detach(|| model::TrainStream::resume(volumes, files, opts, clocked, threads))
            .map_err(err_to_py)?;
        Ok(Self {
            inner: std::sync::Mutex::new(inner),
        })
    }

    /// Between the second pass and the third: what the third needs, as JSON text.
    fn clocked(&self) -> PyResult<String> {
        self.lock().clocked().map_err(err_to_py)
    }

    /// After the first pass: the threads as (name, requests), in the model's order.
    #[getter]
    fn threads(&self) -> Option<Vec<(String, u64)>> {
        self.lock().threads()
    }

    /// Once trained: the threads trained here as (place in the model, JSON text).
    fn parts(&self) -> PyResult<Vec<(usize, String)>> {
        let parts = self.lock().parts().map_err(err_to_py)?;
        parts
            .into_iter()
            .map(|(k, p)| {
                serde_json::to_string(&p)
                    .map(|text| (k, text))
                    .map_err(|e| InputError::new_err(format!("a thread could not be converted: {e}")))
            })
            .collect()
    }

    /// Once trained: the model, the threads trained elsewhere given as (place, JSON text).
    fn assemble(&self, py: Python<'_>, parts: Vec<(usize, String)>) -> PyResult<PyModel> {
        let parts = parts
            .into_iter()
            .map(|(k, text)| {
                serde_json::from_str(&text)
                    .map(|p| (k, p))
                    .map_err(|e| InputError::new_err(format!("thread {k} is not a trained thread: {e}")))
            })
            .collect::<PyResult<Vec<(usize, model::Part)>>>()?;
        let mut guard = self.lock();
        let inner: &mut model::TrainStream = &mut guard;
        py.detach(|| inner.assemble(parts))
            .map(PyModel::wrap)
            .map_err(err_to_py)
    }

    /// Passes over the trace training needs.
    #[classattr]
    const PASSES: usize = model::TrainStream::PASSES;

    /// The pass the next piece belongs to (from 1; past the last once trained).
    #[getter]
    fn current_pass(&self) -> usize {
        self.lock().pass()
    }

    /// The next piece of the pass.
    fn feed(
        &self,
        py: Python<'_>,
        columns: Columns<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
    ) -> PyResult<()> {
        let mut guard = self.lock();
        let inner: &mut model::TrainStream = &mut guard;
        with_view(&columns, &volumes, &files, |view| {
            py.detach(|| inner.feed(view)).map_err(err_to_py)
        })
    }

    /// Ends the pass: None while another is needed, then the model. Level selection, at the
    /// end of the first pass, reports the models it tries to `progress(done, total)`.
    #[pyo3(signature = (progress=None))]
    fn end_pass(&self, py: Python<'_>, progress: Option<Bound<'_, PyAny>>) -> PyResult<Option<PyModel>> {
        let mut guard = self.lock();
        let inner: &mut model::TrainStream = &mut guard;
        let model = watched(py, progress.as_ref(), |p| inner.end_pass(p))?;
        Ok(model.map(PyModel::wrap))
    }
}

impl PyTrainStream {
    fn lock(&self) -> std::sync::MutexGuard<'_, model::TrainStream> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Training's shared steps, done by the caller (a cluster's driver): levels and states, the
/// model times, the spans and the threads, each trained by [`train_part`] wherever it runs and
/// put together by `assemble`.
#[pyclass(name = "TrainPlan", module = "iomimic._core", frozen)]
pub struct PyTrainPlan {
    inner: model::Plan,
}

#[pymethods]
impl PyTrainPlan {
    /// What every thread's training takes besides its rows, as JSON text (for `train_part`).
    #[getter]
    fn shared(&self) -> PyResult<String> {
        serde_json::to_string(&self.inner.shared)
            .map_err(|e| InputError::new_err(format!("the plan could not be converted: {e}")))
    }

    /// Each thread's count of requests, in the model's order of threads.
    #[getter]
    fn sizes(&self) -> Vec<usize> {
        self.inner.groups.iter().map(|g| g.rows.len()).collect()
    }

    /// Thread `i`'s requests of the trace planned (its columns, volume and file tables) as a
    /// trace of their own, and their model times: what `train_part` takes.
    fn thread_trace<'py>(
        &self,
        py: Python<'py>,
        i: usize,
        columns: Columns<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
    ) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyArray1<f64>>)> {
        let (sub, u) = with_view(&columns, &volumes, &files, |view| {
            py.detach(|| self.inner.thread_trace(view, i)).map_err(err_to_py)
        })?;
        Ok((trace_to_py(py, sub)?, PyArray1::from_vec(py, u)))
    }

    /// The model of the threads `train_part` returned, one per thread in order.
    fn assemble(&self, py: Python<'_>, parts: Vec<String>) -> PyResult<PyModel> {
        py.detach(|| {
            let parts = parts
                .iter()
                .map(|p| serde_json::from_str::<model::Part>(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| InputError::new_err(format!("a trained thread could not be read: {e}")))?;
            let model = self.inner.assemble(parts).map_err(err_to_py)?;
            model.validate().map_err(err_to_py)?;
            Ok(PyModel::wrap(model))
        })
    }
}

/// Training's shared steps (what `train_model` does before training the threads).
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, options, progress=None))]
pub fn train_plan(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    options: TrainArgs,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<PyTrainPlan> {
    let opts = model::TrainOptions::from(options);
    with_checked_view(&columns, &volumes, &files, "train on", |view| {
        watched(py, progress.as_ref(), |p| model::plan_watched(view, &opts, p))
            .map(|inner| PyTrainPlan { inner })
    })
}

/// One thread trained from a trace of its requests alone (all of its rows) with their model
/// times and the plan's `shared` JSON; the thread as JSON text, for `TrainPlan.assemble`.
#[pyfunction]
pub fn train_part(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    model_times: PyReadonlyArray1<'_, f64>,
    shared: &str,
) -> PyResult<String> {
    let shared: model::Shared = serde_json::from_str(shared)
        .map_err(|e| InputError::new_err(format!("`shared` is not a training plan's: {e}")))?;
    let u = model_times
        .as_slice()
        .map_err(|_| InputError::new_err("`model_times` must be a contiguous array"))?;
    with_checked_view(&columns, &volumes, &files, "train on", |view| {
        if u.len() != view.len() {
            return Err(InputError::new_err(format!(
                "{} model times for {} requests",
                u.len(),
                view.len()
            )));
        }
        if view.volume.iter().any(|&v| v as usize >= shared.spans.len()) {
            return Err(InputError::new_err(
                "a request's volume is not in the plan's spans",
            ));
        }
        py.detach(|| {
            let rows: Vec<usize> = (0..view.len()).collect();
            let part = model::train_part(view, &rows, u, &shared);
            serde_json::to_string(&part)
                .map_err(|e| InputError::new_err(format!("a trained thread could not be converted: {e}")))
        })
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
