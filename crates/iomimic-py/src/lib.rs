//! PyO3 bindings: `iomimic._core`. Converts arrays, options and errors; holds no logic.

// PyO3 hands extracted arguments over by value, and the constructors mirror Python's keyword
// arguments one for one.
#![allow(clippy::needless_pass_by_value, clippy::too_many_arguments)]

mod errors;

use std::path::PathBuf;
use std::sync::Mutex;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use iomimic_core::formats::{self, BlkEvent, Format, ReadOptions, ReadReport, TimeUnit};
use iomimic_core::{analyze, model, realio, sim};
use iomimic_core::{Trace, TraceView};

use errors::{to_py, InputError};

fn parse_opt<T: std::str::FromStr<Err = iomimic_core::Error>>(value: Option<&str>) -> PyResult<Option<T>> {
    value.map(str::parse).transpose().map_err(to_py)
}

/// A trace file being read incrementally, so Python can show progress and stay interruptible.
#[pyclass(name = "TraceReader", module = "iomimic._core")]
struct PyTraceReader {
    inner: Mutex<Option<iomimic_core::TraceReader>>,
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
                    "--delimiter must be one character, found {d:?}"
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
            .map_err(to_py)?;
        Ok(Self {
            inner: Mutex::new(Some(reader)),
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
        self.with(|r| py.detach(|| r.read_some(max_rows)).map_err(to_py))
    }

    /// Reads the rest; returns (columns dict, volumes, files, report dict).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let reader = self
            .inner
            .lock()
            .map_err(|_| InputError::new_err("reader poisoned by an earlier panic"))?
            .take()
            .ok_or_else(|| InputError::new_err("reader already finished"))?;
        let (trace, report) = py.detach(|| reader.finish()).map_err(to_py)?;
        let out = trace_to_py(py, trace)?;
        out.set_item("report", report_to_py(py, &report)?)?;
        Ok(out)
    }
}

fn trace_to_py(py: Python<'_>, t: Trace) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    // from_vec hands each Vec's buffer to numpy without copying.
    d.set_item("ts_ns", PyArray1::from_vec(py, t.ts_ns))?;
    d.set_item("offset", PyArray1::from_vec(py, t.offset))?;
    d.set_item("size", PyArray1::from_vec(py, t.size))?;
    d.set_item("op", PyArray1::from_vec(py, t.op))?;
    d.set_item("volume", PyArray1::from_vec(py, t.volume))?;
    d.set_item("stream", PyArray1::from_vec(py, t.stream))?;
    d.set_item("latency_ns", t.latency_ns.map(|v| PyArray1::from_vec(py, v)))?;
    d.set_item("file", t.file.map(|v| PyArray1::from_vec(py, v)))?;
    d.set_item("volumes", PyList::new(py, t.volumes)?)?;
    d.set_item("files", PyList::new(py, t.files)?)?;
    Ok(d)
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
    Ok(d)
}

/// Borrowed columns handed in from Python.
#[derive(FromPyObject)]
struct Columns<'py> {
    ts_ns: PyReadonlyArray1<'py, u64>,
    offset: PyReadonlyArray1<'py, u64>,
    size: PyReadonlyArray1<'py, u32>,
    op: PyReadonlyArray1<'py, u8>,
    volume: PyReadonlyArray1<'py, u32>,
    stream: PyReadonlyArray1<'py, u32>,
    latency_ns: Option<PyReadonlyArray1<'py, u64>>,
    file: Option<PyReadonlyArray1<'py, u32>>,
}

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| InputError::new_err(format!("column {name} must be a contiguous array")))
}

fn with_view<R>(
    c: &Columns<'_>,
    volumes: &[String],
    files: &[String],
    f: impl FnOnce(&TraceView<'_>) -> PyResult<R>,
) -> PyResult<R> {
    let latency = c
        .latency_ns
        .as_ref()
        .map(|a| slice(a, "latency_ns"))
        .transpose()?;
    let file = c.file.as_ref().map(|a| slice(a, "file")).transpose()?;
    let view = TraceView {
        ts_ns: slice(&c.ts_ns, "ts_ns")?,
        offset: slice(&c.offset, "offset")?,
        size: slice(&c.size, "size")?,
        op: slice(&c.op, "op")?,
        volume: slice(&c.volume, "volume")?,
        stream: slice(&c.stream, "stream")?,
        latency_ns: latency,
        file,
        volumes,
        files,
    };
    f(&view)
}

/// Checks a trace's invariants; raises InputError naming the first breach.
#[pyfunction]
fn validate(columns: Columns<'_>, volumes: Vec<String>, files: Vec<String>) -> PyResult<()> {
    with_view(&columns, &volumes, &files, |v| {
        v.validate().map_err(InputError::new_err)
    })
}

/// Writes canonical CSV to `path`, gzip-compressed with `gzip` (the caller makes the write
/// atomic).
#[pyfunction]
#[pyo3(signature = (path, columns, volumes, files, gzip=false))]
fn write_csv(
    py: Python<'_>,
    path: PathBuf,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    gzip: bool,
) -> PyResult<()> {
    with_view(&columns, &volumes, &files, |view| {
        let file = std::fs::File::create(&path).map_err(|source| {
            to_py(iomimic_core::Error::Io {
                path: path.clone(),
                source,
            })
        })?;
        let write = || -> std::io::Result<()> {
            if gzip {
                // level 6 (gzip's own default): most of the size saving at a fraction of 9's time
                let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::default());
                formats::write_csv(view, &mut encoder)?;
                encoder.finish().map(drop)
            } else {
                formats::write_csv(view, file)
            }
        };
        py.detach(write).map_err(|source| {
            to_py(iomimic_core::Error::Io {
                path: path.clone(),
                source,
            })
        })
    })
}

/// Every characterization figure of a trace, as the JSON text of a Profile.
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, ranges=4, window_ns=None, by=None, mrc="all", mrc_sampling=None))]
fn characterize(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    ranges: usize,
    window_ns: Option<u64>,
    by: Option<&str>,
    mrc: &str,
    mrc_sampling: Option<f64>,
) -> PyResult<String> {
    let by = match by {
        None => None,
        Some("stream") => Some(analyze::GroupBy::Stream),
        Some("volume") => Some(analyze::GroupBy::Volume),
        Some(other) => {
            return Err(InputError::new_err(format!(
                "--by must be stream or volume, found {other:?}"
            )))
        }
    };
    let mrc = match mrc {
        "all" => analyze::MrcScope::All,
        "trace" => analyze::MrcScope::Trace,
        "none" => analyze::MrcScope::None,
        other => {
            return Err(InputError::new_err(format!(
                "mrc must be all, trace or none, found {other:?}"
            )))
        }
    };
    if ranges == 0 {
        return Err(InputError::new_err("--ranges must be at least 1"));
    }
    if let Some(rate) = mrc_sampling.filter(|r| !(*r > 0.0 && *r <= 1.0)) {
        return Err(InputError::new_err(format!(
            "the MRC sampling rate must be in (0, 1], found {rate}"
        )));
    }
    let opts = analyze::Options {
        ranges,
        window_ns,
        by,
        mrc,
        mrc_sampling,
    };
    with_view(&columns, &volumes, &files, |view| {
        view.validate().map_err(InputError::new_err)?;
        if view.is_empty() {
            return Err(InputError::new_err("cannot characterize an empty trace"));
        }
        let profile = py.detach(|| analyze::characterize(view, &opts)).map_err(to_py)?;
        Ok(profile.to_json())
    })
}

/// Trains a model; returns its JSON.
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, levels=None, states=None, by_stream=None, reuse=true, name="model".to_string(), source=None, seed=1))]
fn train_model(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    levels: Option<u32>,
    states: Option<u32>,
    by_stream: Option<bool>,
    reuse: bool,
    name: String,
    source: Option<String>,
    seed: u64,
) -> PyResult<String> {
    let opts = model::TrainOptions {
        levels,
        states,
        by_stream,
        reuse,
        name,
        source,
        seed,
    };
    with_view(&columns, &volumes, &files, |view| {
        view.validate().map_err(InputError::new_err)?;
        let m = py.detach(|| model::train(view, &opts)).map_err(to_py)?;
        Ok(m.to_json())
    })
}

/// Parses and validates model JSON; returns it re-serialised (or raises InputError naming the field).
#[pyfunction]
fn check_model(text: &str) -> PyResult<String> {
    Ok(model::Model::from_json(text).map_err(to_py)?.to_json())
}

/// Generates a synthetic trace from model JSON.
#[pyfunction]
#[pyo3(signature = (model_json, requests=None, duration_ns=None, intensity=1.0, seed=1, reuse=true))]
fn generate<'py>(
    py: Python<'py>,
    model_json: &str,
    requests: Option<u64>,
    duration_ns: Option<u64>,
    intensity: f64,
    seed: u64,
    reuse: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let m = model::Model::from_json(model_json).map_err(to_py)?;
    let opts = model::GenerateOptions {
        requests,
        duration_ns,
        intensity,
        seed,
        reuse,
    };
    let trace = py.detach(|| model::generate(&m, &opts)).map_err(to_py)?;
    trace_to_py(py, trace)
}

/// The locality-free baseline for a trace: same mix, sizes and gaps, uniform offsets.
#[pyfunction]
fn generate_locality_free<'py>(
    py: Python<'py>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    requests: u64,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let trace = with_view(&columns, &volumes, &files, |view| {
        py.detach(|| model::generate_locality_free(view, requests, seed))
            .map_err(to_py)
    })?;
    trace_to_py(py, trace)
}

/// Simulates a trace on a device file (TOML text); returns latencies, issue times and figures.
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, config_toml, iodepth=None, intensity=1.0, scheduler=None))]
fn simulate<'py>(
    py: Python<'py>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    config_toml: &str,
    iodepth: Option<usize>,
    intensity: f64,
    scheduler: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let config = sim::Config::from_toml(config_toml).map_err(to_py)?;
    let scheduler = match scheduler {
        None => None,
        Some("fifo") => Some(sim::Scheduler::Fifo),
        Some("sstf") => Some(sim::Scheduler::Sstf),
        Some(other) => {
            return Err(InputError::new_err(format!(
                "--scheduler must be fifo or sstf, found {other:?}"
            )))
        }
    };
    let opts = sim::SimOptions {
        iodepth,
        intensity,
        scheduler,
    };
    let result = with_view(&columns, &volumes, &files, |view| {
        if view.is_empty() {
            return Err(InputError::new_err("cannot simulate an empty trace"));
        }
        py.detach(|| sim::simulate(view, &config, &opts)).map_err(to_py)
    })?;
    let d = PyDict::new(py);
    d.set_item("latency_ns", PyArray1::from_vec(py, result.latency_ns))?;
    d.set_item("issue_ns", PyArray1::from_vec(py, result.issue_ns))?;
    let figures = serde_json::to_string(&result.figures).map_err(|e| InputError::new_err(e.to_string()))?;
    d.set_item("figures", figures)?;
    Ok(d)
}

/// Real I/O against files (see `iomimic_core::realio`): a workload issued in one piece or in
/// several (a long trace read a part at a time), all on one clock. `run_piece` issues a piece
/// and returns its per-request record (with `record`); `finish` gives the merged figures.
/// Ctrl-C or SIGTERM stops issuing and drains.
#[pyclass(module = "iomimic._core")]
struct RunSession {
    targets: Vec<realio::Target>,
    opts: realio::RunOptions,
    control: realio::Control,
    clock: Option<realio::Clock>,
    started: std::time::Instant,
    summary: realio::Summary,
    completed: usize,
    elapsed_ns: u64,
    interrupted: bool,
    verified_sectors: u64,
    verify_failures: Vec<String>,
    kernel_submits: bool,
}

#[pymethods]
impl RunSession {
    #[new]
    #[pyo3(signature = (paths, needed, write, direct, size=None, allow_device=false, overwrite=false, engine="auto", iodepth=None, workers=16, intensity=1.0, no_stall=false, sqpoll=true, align=1, deadline_ns=None, verify=false, record=true))]
    #[allow(clippy::too_many_arguments, clippy::fn_params_excessive_bools)] // mirrors the Python keywords
    fn new(
        py: Python<'_>,
        paths: Vec<String>,
        needed: Vec<u64>,
        write: bool,
        direct: bool,
        size: Option<u64>,
        allow_device: bool,
        overwrite: bool,
        engine: &str,
        iodepth: Option<usize>,
        workers: usize,
        intensity: f64,
        no_stall: bool,
        sqpoll: bool,
        align: u64,
        deadline_ns: Option<u64>,
        verify: bool,
        record: bool,
    ) -> PyResult<Self> {
        let opts = realio::RunOptions {
            engine: realio::Engine::parse(engine).map_err(to_py)?,
            iodepth,
            workers,
            intensity,
            no_stall,
            sqpoll,
            align,
            deadline_ns,
            verify,
            record,
        };
        let access = realio::guard::Access {
            write,
            allow_device,
            overwrite,
            direct,
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let targets = interruptible(py, &stop, || {
            realio::open_targets(&paths, &needed, size, access, &stop)
        })?
        .map_err(to_py)?;
        Ok(Self {
            targets,
            opts,
            control: realio::Control::default(),
            clock: None,
            started: std::time::Instant::now(),
            summary: realio::Summary::default(),
            completed: 0,
            elapsed_ns: 0,
            interrupted: false,
            verified_sectors: 0,
            verify_failures: Vec::new(),
            kernel_submits: false,
        })
    }

    /// Issues one piece of the workload (times continue the pieces before it). Returns its
    /// per-request record and whether the run is over early (stopped, or out of time).
    #[pyo3(signature = (columns, volumes, files, progress=None))]
    fn run_piece<'py>(
        &mut self,
        py: Python<'py>,
        columns: Columns<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (targets, opts, control, started) = (&self.targets, &self.opts, &self.control, self.started);
        let clock_slot = &mut self.clock;
        let mut interrupted = self.interrupted;
        let open_loop = !opts.no_stall && opts.iodepth.is_none();
        let result = with_view(&columns, &volumes, &files, |view| {
            let clock = *clock_slot.get_or_insert_with(|| {
                realio::Clock::starting(opts, view.ts_ns.first().copied().unwrap_or(0))
            });
            std::thread::scope(|scope| {
                let (done, mut finished) = std::sync::mpsc::channel();
                scope.spawn(move || {
                    // the receiver outlives the scope's threads, so the send cannot fail
                    let _ = done.send(realio::run_on(view, targets, opts, control, clock));
                });
                // the run goes on without the GIL; every 50 ms Python gets to see Ctrl-C or
                // SIGTERM and to show progress, and it hears at once when the run is over (the
                // next piece of a long workload must not wait for a tick)
                loop {
                    let wait = std::time::Duration::from_millis(50);
                    // (the receiver travels into the GIL-free closure and back: it is not Sync)
                    let (got, back) = py.detach(move || (finished.recv_timeout(wait), finished));
                    finished = back;
                    match got {
                        Ok(result) => break result.map_err(to_py),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                            panic!("the run thread ended without a result")
                        }
                    }
                    if !interrupted && py.check_signals().is_err() {
                        interrupted = true;
                        control.stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    if let Some(report) = &progress {
                        let done = control.completed.load(std::sync::atomic::Ordering::Relaxed);
                        let lag_us = open_loop
                            .then(|| control.lag_ns.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e3);
                        // a failing progress display must not stop the I/O
                        let _ = report.call1((done, started.elapsed().as_secs_f64(), lag_us));
                    }
                }
            })
        })?;
        self.interrupted = interrupted;
        self.summary.merge(result.summary);
        self.completed += result.completed;
        self.elapsed_ns = result.elapsed_ns;
        self.verified_sectors += result.verified_sectors;
        self.verify_failures.extend(result.verify_failures);
        self.kernel_submits |= result.kernel_submits;
        let over = self.interrupted
            || self.opts.deadline_ns.is_some_and(|d| result.elapsed_ns >= d)
            || result.completed < columns.ts_ns.len()?;
        let d = PyDict::new(py);
        d.set_item("issue_ns", PyArray1::from_vec(py, result.issue_ns))?;
        d.set_item("latency_ns", PyArray1::from_vec(py, result.latency_ns))?;
        d.set_item("lag_ns", PyArray1::from_vec(py, result.lag_ns))?;
        d.set_item("offset", PyArray1::from_vec(py, result.offset))?;
        d.set_item("size", PyArray1::from_vec(py, result.size))?;
        d.set_item("ran", PyArray1::from_vec(py, result.ran))?;
        d.set_item("over", over)?;
        Ok(d)
    }

    /// The whole run's figures: counts, elapsed time, whether it was interrupted, verify
    /// results, and the merged summary.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("completed", self.completed)?;
        d.set_item("elapsed_ns", self.elapsed_ns)?;
        d.set_item("interrupted", self.interrupted)?;
        d.set_item("verified_sectors", self.verified_sectors)?;
        d.set_item("verify_failures", self.verify_failures.clone())?;
        d.set_item("kernel_submits", self.kernel_submits)?;
        d.set_item("summary", summary_to_py(py, &self.summary)?)?;
        Ok(d)
    }
}

/// A run's summary: counts, HDR percentiles (µs), and requests and bytes per window.
fn summary_to_py<'py>(py: Python<'py>, s: &realio::Summary) -> PyResult<Bound<'py, PyDict>> {
    let percentiles = |h: &hdrhistogram::Histogram<u64>| -> PyResult<Option<Bound<'py, PyDict>>> {
        if h.is_empty() {
            return Ok(None);
        }
        let p = PyDict::new(py);
        let us = |ns: u64| ns as f64 / 1e3;
        p.set_item("mean", h.mean() / 1e3)?;
        for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)] {
            p.set_item(name, us(h.value_at_quantile(q)))?;
        }
        p.set_item("max", us(h.max()))?;
        Ok(Some(p))
    };
    let d = PyDict::new(py);
    d.set_item("completed", s.completed)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("latency_us", percentiles(&s.all_latencies())?)?;
    // each operation that ran: its count, bytes and latency percentiles
    let by_op = PyDict::new(py);
    for (op, name) in ["read", "write", "trim", "flush"].into_iter().enumerate() {
        let (count, bytes) = s.by_op[op];
        if count > 0 {
            let o = PyDict::new(py);
            o.set_item("completed", count)?;
            o.set_item("bytes", bytes)?;
            o.set_item("latency_us", percentiles(&s.latency[op])?)?;
            by_op.set_item(name, o)?;
        }
    }
    d.set_item("by_op", by_op)?;
    d.set_item("lag_us", percentiles(&s.lag)?)?;
    d.set_item("last_lag_us", s.last_lag_ns.map(|ns| ns as f64 / 1e3))?;
    d.set_item("window_ns", s.window_ns)?;
    let (count, bytes): (Vec<u64>, Vec<u64>) = s.windows.iter().copied().unzip();
    d.set_item("window_requests", PyArray1::from_vec(py, count))?;
    d.set_item("window_bytes", PyArray1::from_vec(py, bytes))?;
    Ok(d)
}

/// Runs `work` off the GIL while Python watches for Ctrl-C or SIGTERM every 50 ms: on one it
/// sets `stop`, lets `work` wind down, and raises the signal's exception.
fn interruptible<T: Send>(
    py: Python<'_>,
    stop: &std::sync::atomic::AtomicBool,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    std::thread::scope(|scope| {
        let handle = scope.spawn(work);
        let mut signalled = None;
        while !handle.is_finished() {
            // quick polls once stopping: the work winds down within a few ms
            let wait = std::time::Duration::from_millis(if signalled.is_some() { 5 } else { 50 });
            py.detach(|| std::thread::sleep(wait));
            if signalled.is_none() {
                if let Err(e) = py.check_signals() {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    signalled = Some(e);
                }
            }
        }
        let result = handle.join().expect("the worker thread panicked");
        signalled.map_or(Ok(result), Err)
    })
}

/// Checks a target under the write guard, creating and laying it out when missing (as a run
/// would): returns the bytes requests may use. For tools that hand the I/O to another program.
#[pyfunction]
#[pyo3(signature = (path, needed, write, size=None, allow_device=false, overwrite=false))]
fn prepare_target(
    py: Python<'_>,
    path: PathBuf,
    needed: u64,
    write: bool,
    size: Option<u64>,
    allow_device: bool,
    overwrite: bool,
) -> PyResult<(u64, bool)> {
    let access = realio::guard::Access {
        write,
        allow_device,
        overwrite,
        direct: false,
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let checked = interruptible(py, &stop, || {
        realio::guard::check(&path, needed, size, access, &stop)
    })?
    .map_err(to_py)?;
    Ok((checked.usable, checked.created))
}

/// True when the kernel lets this process use io_uring.
#[pyfunction]
fn io_uring_available() -> bool {
    realio::io_uring_available()
}

/// [(name, TOML text)] of the built-in device files.
#[pyfunction]
fn device_presets() -> Vec<(&'static str, &'static str)> {
    sim::PRESETS.to_vec()
}

/// Checks a device file; returns it normalised to JSON (or raises InputError naming the field).
#[pyfunction]
fn check_device(config_toml: &str) -> PyResult<String> {
    let config = sim::Config::from_toml(config_toml).map_err(to_py)?;
    serde_json::to_string(&config).map_err(|e| InputError::new_err(e.to_string()))
}

/// [(name, description)] of every format.
#[pyfunction]
fn format_table() -> Vec<(&'static str, &'static str)> {
    Format::all().map(|f| (f.name(), f.description())).collect()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTraceReader>()?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(write_csv, m)?)?;
    m.add_function(wrap_pyfunction!(format_table, m)?)?;
    m.add_function(wrap_pyfunction!(characterize, m)?)?;
    m.add_function(wrap_pyfunction!(train_model, m)?)?;
    m.add_function(wrap_pyfunction!(check_model, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(generate_locality_free, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_class::<RunSession>()?;
    m.add_function(wrap_pyfunction!(io_uring_available, m)?)?;
    m.add_function(wrap_pyfunction!(prepare_target, m)?)?;
    m.add_function(wrap_pyfunction!(device_presets, m)?)?;
    m.add_function(wrap_pyfunction!(check_device, m)?)?;
    errors::register(m)?;
    m.add("LATENCY_UNKNOWN", iomimic_core::LATENCY_UNKNOWN)?;
    Ok(())
}
