//! The I/O engine interface: the [`IoEngine`] trait the run driver calls, and [`Engine`], the
//! handle `--engine` picks (after fio's `struct ioengine_ops`, where `null` is just another
//! engine). The registry is [`super::engines`].
//!
//! Adding an engine is a file with a unit struct implementing [`IoEngine`] (and, for code that
//! names it, an `Engine::Name` constant beside it) plus one line in the registry. The driver
//! (`run_on`) knows no engine by name: it asks the chosen one whether its requests move data
//! and lets it issue them.

use std::fmt;

use super::{Shared, Summary};
use crate::error::Result;

/// What the run driver needs from an engine. Engines hold no state: what one run needs (a ring,
/// worker threads, buffers) lives in its `drive`.
pub(super) trait IoEngine: Sync {
    /// The name `--engine` takes.
    fn name(&self) -> &'static str;

    /// Other names `--engine` accepts.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// Why this machine cannot run the engine, if it cannot: asked when the engine is chosen.
    fn unavailable(&self) -> Option<&'static str> {
        None
    }

    /// Whether `--engine auto` may choose it.
    fn automatic(&self) -> bool {
        true
    }

    /// Whether requests move data. An engine whose requests do nothing gets no data stamped
    /// into its writes and nothing verified, and a request's completion is taken to be its
    /// issue (one clock read instead of two, most of what such a request costs).
    fn moves_data(&self) -> bool {
        true
    }

    /// Work to do before an open-loop schedule's time 0, so that it delays no request.
    fn before_schedule(&self, _opts: &super::RunOptions) {}

    /// Issues requests `0..n` of the run (each due at `run.scheduled(i)` when `on_schedule`,
    /// else as soon as there is room), each through `run.prepare` and `run.finish`, until they
    /// are done or `run.stopping()`. `buffer_len` bytes hold the largest request.
    fn drive(&self, run: &Shared<'_>, n: usize, on_schedule: bool, buffer_len: usize) -> Result<Driven>;
}

/// What an engine's [`IoEngine::drive`] did: how many requests it issued, what it measured, and
/// whether a kernel thread made the submissions (io_uring's SQPOLL).
pub(super) struct Driven {
    pub issued: usize,
    pub summary: Summary,
    pub kernel_submits: bool,
}

/// An I/O engine, as `--engine` names it: a copyable handle to a registered engine. Code that
/// picks one itself names it as `Engine::IoUring`, `Engine::Psync`, `Engine::Null`.
#[derive(Clone, Copy)]
pub struct Engine(&'static dyn IoEngine);

impl Engine {
    pub(super) const fn of(engine: &'static dyn IoEngine) -> Self {
        Self(engine)
    }

    pub(super) fn ops(self) -> &'static dyn IoEngine {
        self.0
    }

    /// The name `--engine` takes for it.
    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

impl PartialEq for Engine {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Engine {}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Engine").field(&self.name()).finish()
    }
}
