//! Long work in the core, watched from Python: it runs on a thread of its own without the
//! GIL while Python shows its progress and hears Ctrl-C (which stops the work at its next
//! check: `Interrupted` becomes KeyboardInterrupt).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use pyo3::prelude::*;

use iomimic_core::progress::Progress;

use crate::errors::to_py;

/// Runs `work`, calling `report(done, total)` about ten times a second while it runs.
pub fn watched<R: Send>(
    py: Python<'_>,
    report: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce(&Progress) -> iomimic_core::Result<R> + Send,
) -> PyResult<R> {
    let progress = Progress::default();
    // A Ctrl-C heard while the work runs stops it at its next check; if the work ends first,
    // the interrupt is still raised (as Python would after any call), not swallowed.
    let mut interrupt: Option<PyErr> = None;
    let result = std::thread::scope(|scope| {
        let (done, mut finished) = mpsc::channel();
        let watched = &progress;
        scope.spawn(move || {
            // the receiver outlives the scope's threads, so the send cannot fail
            let _ = done.send(work(watched));
        });
        loop {
            let wait = Duration::from_millis(100);
            // (the receiver travels into the GIL-free closure and back: it is not Sync)
            let (got, back) = py.detach(move || (finished.recv_timeout(wait), finished));
            finished = back;
            match got {
                Ok(result) => break result.map_err(to_py),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => panic!("the work's thread ended without a result"),
            }
            if let Err(e) = py.check_signals() {
                progress.stop();
                interrupt.get_or_insert(e);
            }
            if let Some(report) = report {
                // a failing progress display must not stop the work, but a Ctrl-C that Python
                // delivered while the display ran (as KeyboardInterrupt) must
                if let Err(e) = report.call1(progress.get()) {
                    if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                        progress.stop();
                        interrupt.get_or_insert(e);
                    }
                }
            }
        }
    });
    match interrupt {
        Some(e) => Err(e),
        None => result,
    }
}
