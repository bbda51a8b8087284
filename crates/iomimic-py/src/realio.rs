//! Real I/O: a run session over targets the core's write guard checked and opened.

use std::path::PathBuf;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use iomimic_core::realio;

use crate::boundary::{to_py as to_py_value, with_view, Columns};
use crate::errors::to_py;

/// Real I/O against files (see `iomimic_core::realio::Session`): a workload issued in one
/// piece or in several (a long trace read a part at a time), all on one clock. `run_piece`
/// issues a piece and returns its per-request record (with `record`); `finish` gives the run's
/// figures. Ctrl-C or SIGTERM stops issuing and drains.
#[pyclass(module = "iomimic._core")]
pub struct RunSession {
    session: realio::Session,
    control: realio::Control,
    started: std::time::Instant,
    interrupted: bool,
}

#[pymethods]
impl RunSession {
    #[new]
    #[pyo3(signature = (paths, needed, write, direct, size=None, allow_device=false, overwrite=false, engine="auto", iodepth=None, workers=16, intensity=1.0, no_stall=false, sqpoll=true, align=1, deadline_ns=None, ramp_ns=0, verify=false, record=true))]
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
        ramp_ns: u64,
        verify: bool,
        record: bool,
    ) -> PyResult<Self> {
        let opts = realio::RunOptions {
            engine: realio::engine_for(engine, &paths).map_err(to_py)?,
            iodepth,
            workers,
            intensity,
            no_stall,
            sqpoll,
            align,
            deadline_ns,
            ramp_ns,
            verify,
            record,
        };
        let access = iomimic_core::guard::Access {
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
        let folded = realio::folds(&paths, &needed, &targets);
        let mut session = realio::Session::new(targets, opts);
        session.set_folded(folded);
        Ok(Self {
            session,
            control: realio::Control::default(),
            started: std::time::Instant::now(),
            interrupted: false,
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
        let (session, control, started) = (&mut self.session, &self.control, self.started);
        let opts = session.options();
        let open_loop = !opts.no_stall && opts.iodepth.is_none();
        let mut interrupted = self.interrupted;
        let (result, over) = with_view(&columns, &volumes, &files, |view| {
            std::thread::scope(|scope| {
                let (done, mut finished) = std::sync::mpsc::channel();
                scope.spawn(move || {
                    // the receiver outlives the scope's threads, so the send cannot fail
                    let _ = done.send(session.run_piece(view, control));
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
        let d = PyDict::new(py);
        d.set_item("issue_ns", PyArray1::from_vec(py, result.issue_ns))?;
        d.set_item("latency_ns", PyArray1::from_vec(py, result.latency_ns))?;
        d.set_item("lag_ns", PyArray1::from_vec(py, result.lag_ns))?;
        d.set_item("offset", PyArray1::from_vec(py, result.offset))?;
        d.set_item("size", PyArray1::from_vec(py, result.size))?;
        d.set_item("ran", PyArray1::from_vec(py, result.ran))?;
        d.set_item("status", PyArray1::from_vec(py, result.status))?;
        d.set_item("over", over)?;
        Ok(d)
    }

    /// Volumes whose targets are smaller than their reach: their offsets fold (path,
    /// reach_bytes, size_bytes, factor each), known before the run starts.
    fn folded(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py_value(py, self.session.folded())
    }

    /// The run's figures; `requests` and `span_ns` describe the whole workload (its length and
    /// the time from its first request to its last).
    fn finish(&self, py: Python<'_>, requests: u64, span_ns: u64) -> PyResult<Py<PyAny>> {
        to_py_value(py, &self.session.figures(requests, span_ns, self.interrupted))
    }
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
    let access = iomimic_core::guard::Access {
        write,
        allow_device,
        overwrite,
        direct: false,
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let checked = interruptible(py, &stop, || {
        iomimic_core::guard::check(&path, needed, size, access, &stop)
    })?
    .map_err(to_py)?;
    Ok((checked.usable, checked.created))
}

/// The engine `name` stands for (`auto`: io_uring where the kernel allows it, else psync).
#[pyfunction]
pub fn engine_name(name: &str) -> PyResult<&'static str> {
    realio::Engine::parse(name)
        .map(realio::Engine::name)
        .map_err(to_py)
}

/// True when the kernel lets this process use io_uring.
#[pyfunction]
pub fn io_uring_available() -> bool {
    realio::io_uring_available()
}

/// Placed offsets and sizes, as numpy arrays.
type Placed<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u32>>);

/// Where each request lands in its volume's target, as a run places it (`realio::place`):
/// offsets fold into `target_sizes[volume]` and round to `align`. Returns (offsets, sizes).
#[pyfunction]
pub fn place_requests<'py>(
    py: Python<'py>,
    offset: numpy::PyReadonlyArray1<'py, u64>,
    size: numpy::PyReadonlyArray1<'py, u32>,
    volume: numpy::PyReadonlyArray1<'py, u32>,
    target_sizes: Vec<u64>,
    align: u64,
) -> PyResult<Placed<'py>> {
    let (offset, size, volume) = (offset.as_slice()?, size.as_slice()?, volume.as_slice()?);
    if size.len() != offset.len() || volume.len() != offset.len() {
        return Err(crate::errors::InputError::new_err(
            "`offset`, `size` and `volume` differ in length",
        ));
    }
    if align == 0 || target_sizes.iter().any(|&t| t < align) {
        return Err(crate::errors::InputError::new_err(
            "`align` must be positive and no larger than any target",
        ));
    }
    let mut placed_offset = Vec::with_capacity(offset.len());
    let mut placed_size = Vec::with_capacity(offset.len());
    for i in 0..offset.len() {
        let target = *target_sizes.get(volume[i] as usize).ok_or_else(|| {
            crate::errors::InputError::new_err(format!("volume {} has no target size", volume[i]))
        })?;
        let (o, s) = realio::place(offset[i], u64::from(size[i]), target, align);
        placed_offset.push(o);
        placed_size.push(u32::try_from(s).unwrap_or(u32::MAX));
    }
    Ok((
        PyArray1::from_vec(py, placed_offset),
        PyArray1::from_vec(py, placed_size),
    ))
}
