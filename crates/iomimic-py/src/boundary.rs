//! The one convention for what crosses into Python.
//!
//! - Results (profiles, validations, simulation and run figures, read reports, model data):
//!   serde structs of the core, turned into plain Python data (dicts, lists, numbers, strings)
//!   by [`to_py`], always the same way. Their shapes are declared in `_core.pyi`.
//! - Traces: numpy columns in a dict, each `Vec` handed to numpy without a copy
//!   ([`trace_to_py`]); into Rust as borrowed contiguous arrays ([`Columns`], [`with_view`]).
//! - Options: strings parsed once here into the core's enums, errors naming the parameter.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList};
use serde::Serialize;

use iomimic_core::{Trace, TraceView};

use crate::errors::InputError;

static JSON_LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A core result as plain Python data. Serialised to JSON text and read back by Python's own
/// (C) parser: field order is kept, NaN and infinities become None, and no per-type
/// conversion code exists to drift from the structs.
pub fn to_py<T: Serialize + ?Sized>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(value)
        .map_err(|e| InputError::new_err(format!("a result could not be converted: {e}")))?;
    let loads = JSON_LOADS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("json")?.getattr("loads")?.unbind())
    })?;
    loads.call1(py, (text,))
}

/// Parses an option given as text into the core's type (errors already name the parameter).
pub fn parse_opt<T: std::str::FromStr<Err = iomimic_core::Error>>(
    value: Option<&str>,
) -> PyResult<Option<T>> {
    value.map(str::parse).transpose().map_err(crate::errors::to_py)
}

/// A trace's columns as numpy arrays (no copy) with its name tables.
pub fn trace_to_py(py: Python<'_>, t: Trace) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ts_ns", PyArray1::from_vec(py, t.ts_ns))?;
    d.set_item("offset", PyArray1::from_vec(py, t.offset))?;
    d.set_item("size", PyArray1::from_vec(py, t.size))?;
    d.set_item("op", PyArray1::from_vec(py, t.op))?;
    d.set_item("volume", PyArray1::from_vec(py, t.volume))?;
    d.set_item("stream", PyArray1::from_vec(py, t.stream))?;
    d.set_item("latency_ns", t.latency_ns.map(|v| PyArray1::from_vec(py, v)))?;
    d.set_item("file", t.file.map(|v| PyArray1::from_vec(py, v)))?;
    d.set_item("status", t.status.map(|v| PyArray1::from_vec(py, v)))?;
    d.set_item("volumes", PyList::new(py, t.volumes)?)?;
    d.set_item("files", PyList::new(py, t.files)?)?;
    Ok(d)
}

/// Borrowed columns handed in from Python.
#[derive(FromPyObject)]
pub struct Columns<'py> {
    ts_ns: PyReadonlyArray1<'py, u64>,
    offset: PyReadonlyArray1<'py, u64>,
    size: PyReadonlyArray1<'py, u32>,
    op: PyReadonlyArray1<'py, u8>,
    volume: PyReadonlyArray1<'py, u32>,
    stream: PyReadonlyArray1<'py, u32>,
    latency_ns: Option<PyReadonlyArray1<'py, u64>>,
    file: Option<PyReadonlyArray1<'py, u32>>,
    status: Option<PyReadonlyArray1<'py, u8>>,
}

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| InputError::new_err(format!("column {name} must be a contiguous array")))
}

/// Runs `f` on a view of the columns.
pub fn with_view<R>(
    c: &Columns<'_>,
    volumes: &[String],
    files: &[String],
    f: impl FnOnce(&TraceView<'_>) -> PyResult<R>,
) -> PyResult<R> {
    f(&view_of(c, volumes, files)?)
}

/// A view of the columns (borrowed as long as they are).
pub fn view_of<'a>(
    c: &'a Columns<'_>,
    volumes: &'a [String],
    files: &'a [String],
) -> PyResult<TraceView<'a>> {
    let latency = c
        .latency_ns
        .as_ref()
        .map(|a| slice(a, "latency_ns"))
        .transpose()?;
    let file = c.file.as_ref().map(|a| slice(a, "file")).transpose()?;
    let status = c.status.as_ref().map(|a| slice(a, "status")).transpose()?;
    let view = TraceView {
        ts_ns: slice(&c.ts_ns, "ts_ns")?,
        offset: slice(&c.offset, "offset")?,
        size: slice(&c.size, "size")?,
        op: slice(&c.op, "op")?,
        volume: slice(&c.volume, "volume")?,
        stream: slice(&c.stream, "stream")?,
        latency_ns: latency,
        file,
        status,
        volumes,
        files,
    };
    Ok(view)
}

/// As [`with_view`], for a trace that must hold its invariants and at least one request.
pub fn with_checked_view<R>(
    c: &Columns<'_>,
    volumes: &[String],
    files: &[String],
    what: &str,
    f: impl FnOnce(&TraceView<'_>) -> PyResult<R>,
) -> PyResult<R> {
    with_view(c, volumes, files, |view| {
        view.validate().map_err(InputError::new_err)?;
        if view.is_empty() {
            return Err(InputError::new_err(format!("cannot {what} an empty trace")));
        }
        f(view)
    })
}
