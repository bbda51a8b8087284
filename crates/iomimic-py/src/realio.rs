//! Real I/O: a run session over targets the core's write guard checked and opened.

use std::path::PathBuf;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use iomimic_core::realio;

use crate::boundary::{with_view, Columns};
use crate::errors::to_py;

/// Real I/O against files (see `iomimic_core::realio`): a workload issued in one piece or in
/// several (a long trace read a part at a time), all on one clock. `run_piece` issues a piece
/// and returns its per-request record (with `record`); `finish` gives the merged figures.
/// Ctrl-C or SIGTERM stops issuing and drains.
#[pyclass(module = "iomimic._core")]
pub struct RunSession {
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
            || result.completed < columns.len()?;
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
pub fn interruptible<T: Send>(
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
pub fn prepare_target(
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
pub fn io_uring_available() -> bool {
    realio::io_uring_available()
}
