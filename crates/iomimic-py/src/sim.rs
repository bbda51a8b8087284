//! Trace-driven simulation.

use std::sync::Mutex;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use iomimic_core::progress::Progress;
use iomimic_core::sim;
use iomimic_core::trace::TraceView;

use crate::boundary::{to_py, with_checked_view, with_view, Columns};
use crate::errors::{to_py as err_to_py, InputError};
use crate::watch::watched;

/// Simulates a trace on a device file (TOML text); returns latencies, issue times and figures.
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, config_toml, iodepth=None, intensity=1.0, scheduler=None, progress=None))]
pub fn simulate<'py>(
    py: Python<'py>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    config_toml: &str,
    iodepth: Option<usize>,
    intensity: f64,
    scheduler: Option<&str>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let config = sim::Config::from_toml(config_toml).map_err(err_to_py)?;
    let opts = options(iodepth, intensity, scheduler)?;
    run_watched(py, (&columns, &volumes, &files), progress, |view, p| {
        sim::simulate_watched(view, &config, &opts, p)
    })
}

/// Simulates a trace with each placement's volumes (ids) on its own device (TOML text).
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, placements, iodepth=None, intensity=1.0, scheduler=None, progress=None))]
pub fn simulate_mapped<'py>(
    py: Python<'py>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    placements: Vec<(String, Vec<u32>)>,
    iodepth: Option<usize>,
    intensity: f64,
    scheduler: Option<&str>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let placements = placed(placements)?;
    let opts = options(iodepth, intensity, scheduler)?;
    run_watched(py, (&columns, &volumes, &files), progress, |view, p| {
        sim::simulate_mapped(view, &placements, &opts, p)
    })
}

/// A simulation fed a trace a piece at a time, in time order (a trace larger than memory): on
/// one device (`config_toml`) or with each placement's volumes on its own (`placements`, as
/// `simulate_mapped` takes them). `volumes` are the trace's names, all of them.
#[pyclass(name = "SimStream", module = "iomimic._core", frozen)]
pub struct PySimStream {
    run: Mutex<Option<Streaming>>,
}

enum Streaming {
    One(Box<sim::SimStream>),
    Mapped(Box<sim::MappedStream>),
}

#[pymethods]
impl PySimStream {
    #[new]
    #[pyo3(signature = (volumes, config_toml=None, placements=None, iodepth=None, intensity=1.0, scheduler=None))]
    fn new(
        volumes: Vec<String>,
        config_toml: Option<&str>,
        placements: Option<Vec<(String, Vec<u32>)>>,
        iodepth: Option<usize>,
        intensity: f64,
        scheduler: Option<&str>,
    ) -> PyResult<Self> {
        let opts = options(iodepth, intensity, scheduler)?;
        iomimic_core::trace::check_intensity(intensity).map_err(err_to_py)?;
        let run = match (config_toml, placements) {
            (Some(text), None) => {
                let config = sim::Config::from_toml(text).map_err(err_to_py)?;
                Streaming::One(Box::new(
                    sim::SimStream::new(&config, &opts, volumes.len()).map_err(err_to_py)?,
                ))
            }
            (None, Some(placements)) => {
                let placements = placed(placements)?;
                Streaming::Mapped(Box::new(
                    sim::MappedStream::new(&volumes, &placements, &opts).map_err(err_to_py)?,
                ))
            }
            _ => {
                return Err(InputError::new_err(
                    "give one of `config_toml` (one device) and `placements`",
                ))
            }
        };
        Ok(Self {
            run: Mutex::new(Some(run)),
        })
    }

    /// Runs the next piece as far as it goes; returns the outcomes of the requests done, in
    /// trace order from where the last call's left off: issue_ns, latency_ns, status.
    fn feed<'py>(
        &self,
        py: Python<'py>,
        columns: Columns<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut guard = self.run.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let run = guard
            .as_mut()
            .ok_or_else(|| InputError::new_err("the simulation has finished"))?;
        let progress = Progress::default();
        let done = with_view(&columns, &volumes, &files, |view| {
            py.detach(|| match run {
                Streaming::One(s) => s.feed(view, &progress),
                Streaming::Mapped(s) => s.feed(view, &progress),
            })
            .map_err(err_to_py)
        })?;
        done_to_py(py, done)
    }

    /// Runs to the end: the last outcomes, and the run's figures.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyDict>, Py<PyAny>)> {
        let run = self
            .run
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .ok_or_else(|| InputError::new_err("the simulation has finished"))?;
        let progress = Progress::default();
        match run {
            Streaming::One(s) => ended(py, || (*s).finish(&progress)),
            Streaming::Mapped(s) => ended(py, || (*s).finish(&progress)),
        }
    }
}

/// The end of a run in pieces, as Python gets it: the last outcomes and the figures.
fn ended<F: serde::Serialize + Send>(
    py: Python<'_>,
    finish: impl FnOnce() -> iomimic_core::Result<(sim::Done, F)> + Send,
) -> PyResult<(Bound<'_, PyDict>, Py<PyAny>)> {
    let (done, figures) = py.detach(finish).map_err(err_to_py)?;
    Ok((done_to_py(py, done)?, to_py(py, &figures)?))
}

fn done_to_py(py: Python<'_>, done: sim::Done) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("issue_ns", PyArray1::from_vec(py, done.issue_ns))?;
    d.set_item("latency_ns", PyArray1::from_vec(py, done.latency_ns))?;
    d.set_item("status", PyArray1::from_vec(py, done.status))?;
    Ok(d)
}

/// Placements as Python gives them: (device file text, volume ids).
fn placed(placements: Vec<(String, Vec<u32>)>) -> PyResult<Vec<sim::Placement>> {
    placements
        .into_iter()
        .map(|(text, volumes)| {
            Ok(sim::Placement {
                config: sim::Config::from_toml(&text).map_err(err_to_py)?,
                volumes,
            })
        })
        .collect()
}

/// Runs a simulation of the trace (its columns and name tables) on a thread of its own,
/// counting its requests in the watcher's progress, and gives its outcome as Python gets it:
/// the columns as numpy arrays, the figures as a dict.
fn run_watched<'py, F: serde::Serialize + Send>(
    py: Python<'py>,
    (columns, volumes, files): (&Columns<'_>, &[String], &[String]),
    progress: Option<Bound<'py, PyAny>>,
    simulate: impl Fn(&TraceView<'_>, &Progress) -> iomimic_core::Result<sim::SimResult<F>> + Sync,
) -> PyResult<Bound<'py, PyDict>> {
    let result = with_checked_view(columns, volumes, files, "simulate", |view| {
        watched(py, progress.as_ref(), |p| {
            p.add_total(view.len() as u64);
            simulate(view, p)
        })
    })?;
    let d = PyDict::new(py);
    d.set_item("latency_ns", PyArray1::from_vec(py, result.latency_ns))?;
    d.set_item("issue_ns", PyArray1::from_vec(py, result.issue_ns))?;
    d.set_item("status", PyArray1::from_vec(py, result.status))?;
    d.set_item("figures", to_py(py, &result.figures)?)?;
    Ok(d)
}

fn options(iodepth: Option<usize>, intensity: f64, scheduler: Option<&str>) -> PyResult<sim::SimOptions> {
    let scheduler = match scheduler {
        None => None,
        Some("fifo") => Some(sim::Scheduler::Fifo),
        Some("sstf") => Some(sim::Scheduler::Sstf),
        Some("sptf") => Some(sim::Scheduler::Sptf),
        Some(other) => {
            return Err(InputError::new_err(format!(
                "`scheduler` must be fifo, sstf or sptf, found {other:?}"
            )))
        }
    };
    Ok(sim::SimOptions {
        iodepth,
        intensity,
        scheduler,
    })
}

/// [(name, TOML text)] of the built-in device files.
#[pyfunction]
pub fn device_presets() -> Vec<(&'static str, &'static str)> {
    sim::PRESETS.to_vec()
}

/// [(name, description, array, device)] of the built-in device files, each a line of text.
#[pyfunction]
pub fn device_table() -> PyResult<Vec<(&'static str, String, String, String)>> {
    sim::PRESETS
        .iter()
        .map(|&(name, text)| {
            let c = sim::Config::from_toml(text).map_err(err_to_py)?;
            let array = c
                .array
                .as_ref()
                .map_or_else(|| "-".to_string(), sim::Array::summary);
            Ok((name, c.description.clone(), array, c.device.spec().summary()))
        })
        .collect()
}

/// Checks a device file; returns it normalised (or raises InputError naming the field).
#[pyfunction]
pub fn check_device(py: Python<'_>, config_toml: &str) -> PyResult<Py<PyAny>> {
    let config = sim::Config::from_toml(config_toml).map_err(err_to_py)?;
    to_py(py, &config)
}
