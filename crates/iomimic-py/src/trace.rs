//! Reading and writing traces, and the figures `info` shows.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use iomimic_core::analyze::summary;
use iomimic_core::formats::{self, BlkEvent, Counted, Format, ReadOptions, ReadReport, TimeUnit};
use iomimic_core::merge;

use crate::boundary::{parse_opt, to_py, trace_to_py, view_of, with_view, Columns};
use crate::errors::{to_py as err_to_py, InputError};

/// A trace file being read incrementally, so Python can show progress and stay interruptible.
#[pyclass(name = "TraceReader", module = "iomimic._core")]
pub struct PyTraceReader {
    inner: Mutex<Option<iomimic_core::TraceReader>>,
    /// What `count_some` has counted (rows summarized and dropped).
    counted: Mutex<Counted>,
}

impl PyTraceReader {
    fn with<R>(&self, f: impl FnOnce(&mut iomimic_core::TraceReader) -> PyResult<R>) -> PyResult<R> {
        let mut guard = self
            .inner
            .lock()
            .map_err(|_| InputError::new_err("reader poisoned by an earlier panic"))?;
        let reader = guard
            .as_mut()
            .ok_or_else(|| InputError::new_err("reader already finished"))?;
        f(reader)
    }

    /// The reader, taken to be finished.
    fn take(&self) -> PyResult<iomimic_core::TraceReader> {
        self.inner
            .lock()
            .map_err(|_| InputError::new_err("reader poisoned by an earlier panic"))?
            .take()
            .ok_or_else(|| InputError::new_err("reader already finished"))
    }

    fn counted(&self) -> std::sync::MutexGuard<'_, Counted> {
        self.counted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PyTraceReader {
    #[new]
    #[pyo3(signature = (path, format=None, skip_bad=false, time_unit=None, event=None, columns=None, delimiter=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        format: Option<&str>,
        skip_bad: bool,
        time_unit: Option<&str>,
        event: Option<&str>,
        columns: Option<String>,
        delimiter: Option<&str>,
    ) -> PyResult<Self> {
        let delimiter = match delimiter {
            None => None,
            Some("\\t" | "tab") => Some(b'\t'),
            Some(d) if d.len() == 1 => Some(d.as_bytes()[0]),
            Some(d) => {
                return Err(InputError::new_err(format!(
                    "`delimiter` must be one character, found {d:?}"
                )))
            }
        };
        let opts = ReadOptions {
            format: parse_opt::<Format>(format)?,
            skip_bad,
            time_unit: parse_opt::<TimeUnit>(time_unit)?,
            blk_event: parse_opt::<BlkEvent>(event)?.unwrap_or_default(),
            columns,
            delimiter,
            ..ReadOptions::default()
        };
        let reader = py
            .detach(|| iomimic_core::TraceReader::open(&path, &opts))
            .map_err(err_to_py)?;
        Ok(Self {
            inner: Mutex::new(Some(reader)),
            counted: Mutex::default(),
        })
    }

    /// The format being read (detected or given).
    #[getter]
    fn format(&self) -> PyResult<&'static str> {
        self.with(|r| Ok(r.format().name()))
    }

    /// (bytes of the file consumed, file size): for progress bars.
    fn progress(&self) -> PyResult<(u64, u64)> {
        self.with(|r| Ok(r.progress()))
    }

    /// Parses at least `max_rows` more rows; False once the input is exhausted.
    fn read_some(&self, py: Python<'_>, max_rows: usize) -> PyResult<bool> {
        self.with(|r| py.detach(|| r.read_some(max_rows)).map_err(err_to_py))
    }

    /// Reads the rest; returns the columns with the name tables and the read report.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let reader = self.take()?;
        let (trace, report) = py.detach(|| reader.finish()).map_err(err_to_py)?;
        let out = trace_to_py(py, trace)?;
        out.set_item("report", report_to_py(py, &report)?)?;
        Ok(out)
    }

    /// Parses at least `max_rows` more rows, counts them into the summary and drops them;
    /// False once the input is exhausted.
    fn count_some(&self, py: Python<'_>, max_rows: usize) -> PyResult<bool> {
        let mut guard = self.counted();
        let counted: &mut Counted = &mut guard;
        self.with(|r| py.detach(|| r.count_some(max_rows, counted)).map_err(err_to_py))
    }

    /// The rows parsed so far, handed over (and, with `count`, counted for `finish_summary`):
    /// columns and name tables as `finish` gives them, times in the file's clock and file
    /// order; with whether every row so far came in time order.
    #[pyo3(signature = (count=true))]
    fn take_rows<'py>(&self, py: Python<'py>, count: bool) -> PyResult<Bound<'py, PyDict>> {
        let mut guard = self.counted();
        let counted: &mut Counted = &mut guard;
        let (rows, in_order) = self.with(|r| Ok((r.take_rows(count.then_some(counted)), r.in_order())))?;
        let out = trace_to_py(py, rows)?;
        out.set_item("in_order", in_order)?;
        Ok(out)
    }

    /// Tells the parser the input has ended (after `read_some` said so): requests it held back
    /// become rows for `take_rows`.
    fn end_parse(&self) -> PyResult<()> {
        self.with(|r| {
            r.end_parse();
            Ok(())
        })
    }

    /// Rows parsed and not yet handed over.
    #[getter]
    fn pending(&self) -> PyResult<usize> {
        self.with(|r| Ok(r.pending()))
    }

    /// Counts the rest; returns the summary (`summarize`'s keys) and the read report.
    fn finish_summary<'py>(&self, py: Python<'py>) -> PyResult<(Py<PyAny>, Bound<'py, PyDict>)> {
        let reader = self.take()?;
        let counted = std::mem::take(&mut *self.counted());
        let (summary, report) = py.detach(|| reader.finish_summary(counted)).map_err(err_to_py)?;
        Ok((to_py(py, &summary)?, report_to_py(py, &report)?))
    }
}

fn report_to_py<'py>(py: Python<'py>, r: &ReadReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", r.path.to_string_lossy())?;
    d.set_item("format", r.format.map(Format::name))?;
    d.set_item("compression", r.compression.map(formats::Compression::name))?;
    d.set_item("records", r.records)?;
    d.set_item("requests", r.requests)?;
    d.set_item("out_of_order", r.out_of_order)?;
    d.set_item("start_ns", r.start_ns)?;
    d.set_item(
        "skipped",
        r.skipped
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect::<Vec<_>>()
            .into_pyobject(py)?,
    )?;
    d.set_item("skipped_examples", &r.skipped_examples)?;
    d.set_item(
        "ignored",
        r.ignored.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(),
    )?;
    d.set_item("notes", &r.notes)?;
    d.set_item("stream_names", &r.stream_names)?;
    d.set_item("latency_phases", to_py(py, &r.latency_phases)?)?;
    Ok(d)
}

/// Checks a trace's invariants; raises InputError naming the first breach.
#[pyfunction]
pub fn validate(columns: Columns<'_>, volumes: Vec<String>, files: Vec<String>) -> PyResult<()> {
    with_view(&columns, &volumes, &files, |v| {
        v.validate().map_err(InputError::new_err)
    })
}

/// Writes canonical CSV to `path`, gzip-compressed with `gzip`; with `append`, after what the
/// file holds and without a header (a later part). The caller makes the write atomic.
#[pyfunction]
#[pyo3(signature = (path, columns, volumes, files, gzip=false, append=false))]
pub fn write_csv(
    py: Python<'_>,
    path: PathBuf,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    gzip: bool,
    append: bool,
) -> PyResult<()> {
    let io_error = |source| {
        err_to_py(iomimic_core::Error::Io {
            path: path.clone(),
            source,
        })
    };
    with_view(&columns, &volumes, &files, |view| {
        // a later part goes after the rows already written, without a second header (and, in
        // gzip, as a member of its own: gzip readers read members back to back as one stream)
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .append(append)
            .truncate(!append)
            .open(&path)
            .map_err(io_error)?;
        let write = || -> std::io::Result<()> {
            if gzip {
                // level 6 (gzip's own default): most of the size saving at a fraction of 9's time
                let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::default());
                formats::write_csv_part(view, &mut encoder, !append)?;
                encoder.finish().map(drop)
            } else {
                formats::write_csv_part(view, file, !append)
            }
        };
        py.detach(write).map_err(io_error)
    })
}

/// The figures `iomimic info` shows (counts, bytes, span, volumes, streams).
#[pyfunction]
pub fn summarize(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
) -> PyResult<Py<PyAny>> {
    with_view(&columns, &volumes, &files, |view| {
        let s = py.detach(|| summary::summarize(view));
        to_py(py, &s)
    })
}

/// Summaries of a trace's parts added up as they come: a Parquet file's row groups, read on
/// every core at once (each `add` counts without the GIL and then joins the total).
#[pyclass(name = "SummaryParts", module = "iomimic._core", frozen)]
#[derive(Default)]
pub struct PySummaryParts {
    total: Mutex<summary::PartialSummary>,
}

impl PySummaryParts {
    /// The total so far (a part that panicked while adding left it whole: `add` is one step).
    fn total(&self) -> std::sync::MutexGuard<'_, summary::PartialSummary> {
        self.total
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PySummaryParts {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Checks the rows as a trace's and adds them; false (and nothing added) when a row breaks
    /// the Trace's rules, which a whole read then names. `has_latency`: the rows have a latency
    /// column, left unread.
    #[pyo3(signature = (columns, volumes, files, has_latency=false))]
    fn add(
        &self,
        py: Python<'_>,
        columns: Columns<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
        has_latency: bool,
    ) -> PyResult<bool> {
        with_view(&columns, &volumes, &files, |view| {
            let part = py.detach(|| {
                view.validate().ok()?;
                let part = summary::PartialSummary::of(view, 0..view.len());
                Some(if has_latency { part.with_latency() } else { part })
            });
            let Some(part) = part else { return Ok(false) };
            self.total().add(part);
            Ok(true)
        })
    }

    /// The earliest time added (ns, the rows' own clock), if any.
    #[getter]
    fn start_ns(&self) -> Option<u64> {
        self.total().start_ns()
    }

    /// The summary of everything added, as `summarize` gives it, volume ids naming `volumes`.
    fn finish(&self, py: Python<'_>, volumes: Vec<String>) -> PyResult<Py<PyAny>> {
        let total = self.total().clone();
        to_py(py, &total.finish(&volumes))
    }
}

/// [(name, description)] of every format.
#[pyfunction]
pub fn format_table() -> Vec<(&'static str, &'static str)> {
    Format::all().map(|f| (f.name(), f.description())).collect()
}

/// Several traces as one, in time order: each part is (columns, volumes, files, its start in
/// its source's clock in ns, a prefix for its volume names or None).
#[pyfunction]
#[allow(clippy::type_complexity)] // the parts as Python hands them over
pub fn merge_traces<'py>(
    py: Python<'py>,
    parts: Vec<(Columns<'_>, Vec<String>, Vec<String>, u64, Option<String>)>,
) -> PyResult<Bound<'py, PyDict>> {
    let views = parts
        .iter()
        .map(|(c, volumes, files, start_ns, prefix)| {
            Ok(merge::Part {
                trace: view_of(c, volumes, files)?,
                start_ns: *start_ns,
                prefix: prefix.as_deref(),
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let merged = py.detach(|| merge::merge(&views)).map_err(err_to_py)?;
    trace_to_py(py, merged)
}
