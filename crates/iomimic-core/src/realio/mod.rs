//! Real I/O: issues a trace's requests against files, open loop (at their scheduled times) or
//! closed loop (N outstanding), and measures when each went out and how long it took.
//!
//! Open loop: each request goes out at its scheduled time; when the target falls behind,
//! requests wait for room (a ring slot or a free worker) and the lag (actual issue time minus
//! scheduled) is measured; later requests keep their scheduled times, so lost time is made up
//! rather than accumulated. Closed loop: `iodepth` requests outstanding, each completion letting
//! the next go.
//!
//! Engines implement the `IoEngine` trait (`engine.rs`, which also holds their registry); the
//! driver here knows none by name. `io_uring` (one thread, one ring: `uring.rs`), `psync`
//! (positional `pread`/`pwrite` from worker threads, each taking the next request when free and
//! waiting for its time itself) and `null` (no I/O: the generator's own overhead). Engines see
//! the run through `Shared` (`shared.rs`: its clock, where requests land, what each did).
//! Results go into per-thread [`Summary`]s (HDR histograms and window counts), merged at the
//! end. Every target is opened through the write [`guard`].

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::trace::TraceView;

mod engine;
mod engines;
pub use crate::guard;
mod null;
mod psync;
mod session;
mod shared;
mod summary;
mod uring;
pub mod verify;

pub use engine::Engine;
pub use session::{folds, Fold, RunFigures, Session};
pub use summary::Summary;

pub use uring::available as io_uring_available;

use shared::Shared;

#[derive(Debug, Clone)]
#[allow(clippy::struct_excessive_bools)] // independent switches, one per command-line flag
pub struct RunOptions {
    pub engine: Engine,
    /// Closed loop with this many outstanding; open loop when `None`.
    pub iodepth: Option<usize>,
    /// Open loop: most requests in flight at once (psync: worker threads; io_uring: ring slots).
    pub workers: usize,
    /// Divides the trace's times (2 = twice as fast).
    pub intensity: f64,
    /// Open loop without waiting: every request as soon as a worker is free.
    pub no_stall: bool,
    /// io_uring on a schedule: let a kernel thread pick submissions up (SQPOLL) where the kernel
    /// allows it, so the thread keeping time never waits for one.
    pub sqpoll: bool,
    /// Offsets and sizes are rounded to this (O_DIRECT needs the device's block size).
    pub align: u64,
    /// Stop issuing this long after the start (a time-limited run), ns.
    pub deadline_ns: Option<u64>,
    /// Warm-up, ns from the start (fio's `ramp_time`): requests issued before it run but are
    /// left out of the figures, whose clock then starts here.
    pub ramp_ns: u64,
    /// Checksummed sector headers on writes, checked on reads and once more at the end.
    pub verify: bool,
    /// Keep every request's issue time and latency (for the completed-requests trace); without
    /// it a run's memory does not grow with its length.
    pub record: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            engine: Engine::Psync,
            iodepth: None,
            workers: 16,
            intensity: 1.0,
            no_stall: false,
            sqpoll: true,
            align: 1,
            deadline_ns: None,
            ramp_ns: 0,
            verify: false,
            record: true,
        }
    }
}

/// How the caller steers and watches a run from another thread: `stop` ends it early (Ctrl-C),
/// `completed` counts finished requests for progress (each worker adds to it every 64 requests
/// or 20 ms, so a display may lag a little).
/// `lag_ns` is the issue lag of a recently completed request (open loop), for the same display.
#[derive(Default)]
pub struct Control {
    pub stop: AtomicBool,
    pub completed: AtomicUsize,
    pub lag_ns: AtomicU64,
}

/// A file or device requests go to, and how many bytes of it they may use. Made only by
/// [`Target::open`], so every target has passed the write guard.
pub struct Target {
    pub(crate) file: File,
    pub size: u64,
    /// An Everest base volume (`everest:PATH`): requests go through its off-loading client
    /// (`file` is then the base opened read-only, for nothing but its identity).
    pub(crate) everest: Option<std::sync::Arc<crate::offload::volume::Background>>,
}

impl Target {
    /// Another handle on the same target (its own file descriptor, the same Everest client).
    fn duplicate(&self, path: &str) -> Result<Target> {
        Ok(Target {
            file: self.file.try_clone().map_err(|source| Error::Io {
                path: path.into(),
                source,
            })?,
            size: self.size,
            everest: self.everest.clone(),
        })
    }
}

/// Reclaim workers of an `everest:` target during a run (they work while its base is idle).
const RECLAIM_WORKERS: usize = 2;

/// How a target names an Everest base volume set up with `iomimic offload init`.
pub const EVEREST_PREFIX: &str = "everest:";

/// The engine for `name` over `paths`: Everest targets are a library call, not a file
/// descriptor, so they run on psync (`auto` picks it; io_uring is refused).
pub fn engine_for(name: &str, paths: &[String]) -> Result<Engine> {
    let engine = Engine::parse(name)?;
    if !paths.iter().any(|p| p.starts_with(EVEREST_PREFIX)) {
        return Ok(engine);
    }
    match name {
        "auto" | "psync" => Ok(Engine::Psync),
        _ => Err(Error::Usage(format!(
            "`engine` {name} cannot drive an {EVEREST_PREFIX} target; use psync (or auto)"
        ))),
    }
}

/// Opens the Everest client of the base volume `base` (recovered from its stores' logs).
fn open_everest(base: &str) -> Result<Target> {
    let (client, _) = crate::offload::volume::open(std::path::Path::new(base), None)?;
    let file = File::open(base).map_err(|source| Error::Io {
        path: base.into(),
        source,
    })?;
    Ok(Target {
        file,
        size: client.base_bytes(),
        everest: Some(std::sync::Arc::new(crate::offload::volume::Background::start(
            client,
            RECLAIM_WORKERS,
        ))),
    })
}

impl Target {
    /// Checks `path` under the write guard ([`guard`]: a missing file is created at `size` and
    /// laid out; a foreign file needs `overwrite`, a device `allow_device`), then opens it.
    /// `needed` is how far the workload reaches (for messages); `stop` ends a long lay-out.
    pub fn open(
        path: &std::path::Path,
        needed: u64,
        size: Option<u64>,
        access: guard::Access,
        stop: &AtomicBool,
    ) -> Result<(Self, guard::Checked)> {
        let checked = guard::check(path, needed, size, access, stop)?;
        let file = guard::open(&checked, access)?;
        Ok((
            Self {
                file,
                size: checked.usable,
                everest: None,
            },
            checked,
        ))
    }
}

/// Opens the targets of a workload, one per volume (`paths[v]`, reaching `needed[v]` bytes):
/// each distinct path once, under the write guard, shared by the volumes mapped to it (a
/// device opened exclusively cannot be opened twice).
pub fn open_targets(
    paths: &[String],
    needed: &[u64],
    size: Option<u64>,
    access: guard::Access,
    stop: &AtomicBool,
) -> Result<Vec<Target>> {
    if paths.len() != needed.len() {
        return Err(Error::Usage(format!(
            "{} paths for {} volumes",
            paths.len(),
            needed.len()
        )));
    }
    let mut opened: Vec<(&str, Target)> = Vec::new();
    let mut targets = Vec::with_capacity(paths.len());
    for path in paths {
        // a path named for several volumes is opened once; each volume gets its own handle
        if let Some((_, t)) = opened.iter().find(|(p, _)| *p == path.as_str()) {
            targets.push(t.duplicate(path)?);
            continue;
        }
        let t = if let Some(base) = path.strip_prefix(EVEREST_PREFIX) {
            open_everest(base)?
        } else {
            let reach = paths
                .iter()
                .zip(needed)
                .filter(|(p, _)| *p == path)
                .map(|(_, &n)| n)
                .max()
                .unwrap_or(0);
            Target::open(std::path::Path::new(path), reach.max(4096), size, access, stop)?.0
        };
        targets.push(t.duplicate(path)?);
        opened.push((path, t));
    }
    Ok(targets)
}

pub struct RunResult {
    /// Latency and lag histograms, counts, and requests per window.
    pub summary: Summary,
    /// With `record`, per request (else empty): when it was issued, ns from the start of the
    /// run, and how long it took.
    pub issue_ns: Vec<u64>,
    pub latency_ns: Vec<u64>,
    /// Issue time minus scheduled time (open loop; zero in closed loop).
    pub lag_ns: Vec<u64>,
    /// Where each request went in its target (after folding and alignment).
    pub offset: Vec<u64>,
    pub size: Vec<u32>,
    pub elapsed_ns: u64,
    /// Which requests ran (all of them unless the run was stopped).
    pub ran: Vec<bool>,
    /// With `record`: each request's status (0, or the errno it failed with).
    pub status: Vec<u8>,
    /// The first few failed requests, as messages (all are counted in `summary.failed`).
    pub first_errors: Vec<String>,
    pub completed: usize,
    /// `--verify`: sectors checked (during the run and after it) and what was wrong.
    pub verified_sectors: u64,
    pub verify_failures: Vec<String>,
    /// io_uring on a schedule: a kernel thread picked the submissions up (SQPOLL), so the
    /// thread keeping time never waited for one.
    pub kernel_submits: bool,
}

/// Where a request lands in its target: size rounded up to `align` (and cut to the target);
/// offset modulo the target's size, rounded down to `align`, and moved back if the request
/// would cross the end.
pub fn place(offset: u64, size: u64, target_size: u64, align: u64) -> (u64, u64) {
    let size = size.div_ceil(align).max(1) * align;
    let size = size.min(target_size / align * align).max(align);
    let offset = offset % target_size / align * align;
    // a request that would cross the end ends there instead
    let offset = offset.min((target_size - size) / align * align);
    (offset, size)
}

/// A buffer aligned for O_DIRECT (4 KiB), made here because `Vec<u8>` promises no alignment.
struct Buffer {
    bytes: Vec<u8>,
    start: usize,
}

impl Buffer {
    fn new(len: usize) -> Self {
        let bytes = vec![0u8; len + 4096];
        let start = bytes.as_ptr().align_offset(4096);
        Self { bytes, start }
    }

    fn slice(&mut self, len: usize) -> &mut [u8] {
        &mut self.bytes[self.start..self.start + len]
    }
}

/// Open loop: time for setting up the run's threads before the schedule's time 0.
const STARTUP_NS: u64 = 5_000_000;

/// How long before a deadline waiting turns from sleeping to spinning: sleeps end late by up
/// to the timer slack (set to 1 ns on the run's threads) plus a wake-up.
pub(crate) const SPIN_NS: u64 = 60_000;

/// Asks for precise sleeps on this thread: the kernel may otherwise end them up to 50 µs late
/// to batch wake-ups.
fn precise_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and changes only this thread's timing.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Where a run's schedule is anchored: the instant of its time 0 and the trace time that
/// stands for. A workload issued in pieces (a long trace read a part at a time) shares one
/// clock, so the pieces keep one schedule.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub start: Instant,
    pub first_ts: u64,
}

impl Clock {
    /// Time 0 from now, for a trace whose first request is at `first_ts`; on a schedule a
    /// little later, once the run's threads are up, so the first requests are not late by
    /// their set-up.
    pub fn starting(opts: &RunOptions, first_ts: u64) -> Self {
        let on_schedule = opts.iodepth.is_none() && !opts.no_stall;
        if on_schedule {
            opts.engine.ops().before_schedule(opts);
        }
        Self {
            start: Instant::now() + Duration::from_nanos(if on_schedule { STARTUP_NS } else { 0 }),
            first_ts,
        }
    }
}

/// Issues every request of `t` against `targets`. `control.stop` ends the run early (Ctrl-C):
/// requests not yet issued are left out, and `completed` says how many ran.
pub fn run(t: &TraceView<'_>, targets: &[Target], opts: &RunOptions, control: &Control) -> Result<RunResult> {
    let clock = Clock::starting(opts, t.ts_ns.first().copied().unwrap_or(0));
    run_on(t, targets, opts, control, clock)
}

/// [`run`] on a given clock: one piece of a workload issued in pieces. Elapsed time and issue
/// times count from the clock's start.
pub fn run_on(
    t: &TraceView<'_>,
    targets: &[Target],
    opts: &RunOptions,
    control: &Control,
    clock: Clock,
) -> Result<RunResult> {
    check_run(targets, opts)?;
    let n = t.len();
    let engine = opts.engine.ops();
    let shared = Shared::new(t, targets, opts, control, clock, engine.moves_data());
    let on_schedule = shared.on_schedule;
    let buffer_len = usize::try_from(largest_placed(t, targets, shared.align)).unwrap_or(usize::MAX);
    let engine::Driven {
        issued: issued_count,
        summary,
        kernel_submits,
    } = engine.drive(&shared, n, on_schedule, buffer_len)?;
    let elapsed_ns = shared.now();
    if opts.verify && shared.moves_data {
        shared.check_written();
    }
    shared.fail_if_nothing_worked(&summary)?;
    let first_errors = shared.first_errors();
    let completed = usize::try_from(summary.completed)
        .unwrap_or(usize::MAX)
        .min(issued_count);
    let mut result = RunResult {
        summary,
        issue_ns: Vec::new(),
        latency_ns: Vec::new(),
        lag_ns: Vec::new(),
        offset: Vec::new(),
        size: Vec::new(),
        elapsed_ns,
        ran: Vec::new(),
        status: Vec::new(),
        first_errors,
        completed,
        verified_sectors: shared.verified.load(Ordering::Relaxed),
        verify_failures: Vec::new(),
        kernel_submits,
    };
    if opts.record {
        shared.record_into(&mut result);
    }
    result.verify_failures = shared.failures.into_inner().expect("failure list");
    Ok(result)
}

/// Refuses options no run can go with.
fn check_run(targets: &[Target], opts: &RunOptions) -> Result<()> {
    if targets.is_empty() {
        return Err(Error::Usage("no target to run against".into()));
    }
    crate::trace::check_intensity(opts.intensity)?;
    if opts.iodepth == Some(0) || opts.workers == 0 {
        return Err(Error::Usage("`iodepth` and `workers` must be at least 1".into()));
    }
    Ok(())
}

/// The largest placed size of `t`'s requests, at most (the engines' buffer size): placing only
/// ever rounds up to `align` or cuts.
fn largest_placed(t: &TraceView<'_>, targets: &[Target], align: u64) -> u64 {
    let biggest_target = targets.iter().map(|t| t.size).max().unwrap_or(align);
    place(
        0,
        u64::from(t.size.iter().copied().max().unwrap_or(0)),
        biggest_target,
        align,
    )
    .1
}

#[cfg(test)]
mod tests;
