//! The null engine: requests go through the whole run (scheduled, timed, counted) but do no
//! I/O, to measure the generator itself. It reuses psync's worker loop.

use super::engine::{Driven, IoEngine};
use super::{psync, Buffer, Engine, Shared, Summary};
use crate::error::Result;

pub(super) struct NullEngine;

impl Engine {
    #[allow(non_upper_case_globals)] // spelled as the enum variant it replaced
    pub const Null: Engine = Engine::of(&NullEngine);
}

impl IoEngine for NullEngine {
    fn name(&self) -> &'static str {
        "null"
    }

    /// Never `auto`'s choice: a run that does no I/O must be asked for.
    fn automatic(&self) -> bool {
        false
    }

    fn moves_data(&self) -> bool {
        false
    }

    /// `--workers` on a schedule; otherwise one worker: with no I/O to wait for, more would
    /// only contend.
    fn drive(&self, run: &Shared<'_>, n: usize, on_schedule: bool, buffer_len: usize) -> Result<Driven> {
        let workers = if on_schedule { run.opts.workers } else { 1 };
        let (issued, summary) = psync::pool(run, n, on_schedule, buffer_len, workers, perform);
        Ok(Driven {
            issued,
            summary,
            kernel_submits: false,
        })
    }
}

/// Request `i`: issued and done at once.
fn perform(run: &Shared<'_>, i: usize, buffer: &mut Buffer, summary: &mut Summary) {
    let (data, start) = run.prepare(i, buffer);
    run.finish(i, data, Ok(()), start, summary);
}
