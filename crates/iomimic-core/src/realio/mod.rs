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
//! waiting for its time itself) and `null` (no I/O: the generator's own overhead). Results go
//! into per-thread [`Summary`]s (HDR histograms and window counts), merged at the end. Every
//! target is opened through the write [`guard`].

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::trace::{Op, TraceView};

mod engine;
mod engines;
pub mod guard;
mod null;
mod psync;
mod session;
mod summary;
mod uring;
pub mod verify;

pub use engine::Engine;
pub use session::{RunFigures, Session};
pub use summary::Summary;

pub use uring::available as io_uring_available;

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
        let target = match opened.iter().find(|(p, _)| *p == path.as_str()) {
            Some((_, t)) => Target {
                file: t.file.try_clone().map_err(|source| Error::Io {
                    path: path.into(),
                    source,
                })?,
                size: t.size,
            },
            None => {
                let reach = paths
                    .iter()
                    .zip(needed)
                    .filter(|(p, _)| *p == path)
                    .map(|(_, &n)| n)
                    .max()
                    .unwrap_or(0);
                let (t, _) = Target::open(std::path::Path::new(path), reach.max(4096), size, access, stop)?;
                let copy = Target {
                    file: t.file.try_clone().map_err(|source| Error::Io {
                        path: path.into(),
                        source,
                    })?,
                    size: t.size,
                };
                opened.push((path, t));
                copy
            }
        };
        targets.push(target);
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
fn place(offset: u64, size: u64, target_size: u64, align: u64) -> (u64, u64) {
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

/// The state of one run, shared by the driver and the engine's threads.
struct Shared<'a> {
    t: &'a TraceView<'a>,
    targets: &'a [Target],
    opts: &'a RunOptions,
    /// The engine's [`engine::IoEngine::moves_data`], asked once per run rather than per request.
    moves_data: bool,
    start: Instant,
    align: u64,
    /// Time 0 of the trace, and whether lag is measured (open loop on a schedule).
    first_ts: u64,
    on_schedule: bool,
    /// With `record`: per request, issue and completion times (0: did not run).
    issue: Vec<AtomicU64>,
    done: Vec<AtomicU64>,
    errors: Mutex<Vec<(usize, std::io::Error)>>,
    ledger: verify::Ledger,
    verified: AtomicU64,
    failures: Mutex<Vec<String>>,
    control: &'a Control,
}

impl Shared<'_> {
    /// ns since the start of the run (0 before it: an open-loop run starts a little after
    /// its threads are set up).
    fn now(&self) -> u64 {
        u64::try_from(Instant::now().saturating_duration_since(self.start).as_nanos()).unwrap_or(u64::MAX)
    }

    fn past_deadline(&self) -> bool {
        self.opts.deadline_ns.is_some_and(|d| self.now() >= d)
    }

    /// Asked to stop (Ctrl-C), or out of time (`--duration`).
    fn stopping(&self) -> bool {
        self.control.stop.load(Ordering::Relaxed) || self.past_deadline()
    }

    /// Waits until `due` ns into the run: sleeps in slices (so a stop request is seen within
    /// 20 ms), then polls the clock the last stretch, yielding the CPU between polls when
    /// `yielding`. False when the run stops first, or `due` is past the deadline.
    fn wait_for(&self, due: u64, yielding: bool) -> bool {
        if self.opts.deadline_ns.is_some_and(|d| due >= d) {
            return false;
        }
        let target = self.start + Duration::from_nanos(due);
        loop {
            let now = Instant::now();
            if now >= target {
                return true;
            }
            if self.control.stop.load(Ordering::Relaxed) {
                return false;
            }
            match (target - now).checked_sub(Duration::from_nanos(SPIN_NS)) {
                Some(sleep) => std::thread::sleep(sleep.min(Duration::from_millis(20))),
                None if yielding => std::thread::yield_now(),
                None => std::hint::spin_loop(),
            }
        }
    }

    /// When request `i` is due, ns from the start of the run.
    #[allow(clippy::cast_sign_loss)] // times and intensity are positive
    fn scheduled(&self, i: usize) -> u64 {
        (self.t.ts_ns[i].saturating_sub(self.first_ts) as f64 / self.opts.intensity) as u64
    }

    /// Where request `i` lands in its target: (offset, size).
    fn placed(&self, i: usize) -> (u64, u64) {
        let target = &self.targets[self.t.volume[i] as usize % self.targets.len()];
        place(
            self.t.offset[i],
            u64::from(self.t.size[i]),
            target.size,
            self.align,
        )
    }

    /// Starts request `i` on `buffer`: records its issue time and, for a write, fills its data.
    /// Returns the part of the buffer it uses, and its target index, offset, size and issue time.
    fn prepare<'b>(&self, i: usize, buffer: &'b mut Buffer) -> (&'b mut [u8], (usize, u64, u64, u64)) {
        let issued = self.now();
        if let Some(slot) = self.issue.get(i) {
            slot.store(issued, Ordering::Relaxed);
        }
        let which = self.t.volume[i] as usize % self.targets.len();
        let (offset, size) = self.placed(i);
        let data = buffer.slice(usize::try_from(size).unwrap_or(usize::MAX));
        if self.t.op[i] == Op::Write as u8 && self.moves_data {
            if self.opts.verify {
                verify::stamp(data, which, offset, i as u64);
                self.ledger.writing(which, offset, size, issued);
            } else {
                // a recognisable pattern: the request number in every 8 bytes
                for chunk in data.chunks_exact_mut(8) {
                    chunk.copy_from_slice(&(i as u64).to_le_bytes());
                }
            }
        }
        (data, (which, offset, size, issued))
    }

    /// Ends request `i`, whose I/O had `outcome`; `data` is what a read brought back.
    fn finish(
        &self,
        i: usize,
        data: &[u8],
        outcome: std::io::Result<()>,
        start: (usize, u64, u64, u64),
        summary: &mut Summary,
    ) {
        let (which, offset, size, issued) = start;
        match outcome {
            Ok(()) if self.opts.verify && self.moves_data => {
                let op = self.t.op[i];
                if op == Op::Write as u8 {
                    self.ledger
                        .wrote(which, offset, size, i as u64, issued, self.now());
                } else if op == Op::Read as u8 {
                    self.check_read(data, which, offset, issued);
                }
            }
            Ok(()) => {}
            Err(e) => self.errors.lock().expect("error list").push((i, e)),
        }
        // a request that moves no data does nothing between issue and completion: one clock
        // read (of the two its whole cost is mostly made of) does for both
        let now = if self.moves_data { self.now() } else { issued };
        // never 0: 0 marks a request that did not run
        if let Some(slot) = self.done.get(i) {
            slot.store(now.max(1), Ordering::Relaxed);
        }
        let lag = self.on_schedule.then(|| issued.saturating_sub(self.scheduled(i)));
        summary.record(self.t.op[i], issued, now - issued, lag, size);
        if i + 1 == self.t.len() {
            summary.last_lag_ns = lag;
        }
        if let Some(new) = summary.progress_due(now) {
            self.control.completed.fetch_add(new as usize, Ordering::Relaxed);
            if let Some(lag) = lag {
                self.control.lag_ns.store(lag, Ordering::Relaxed);
            }
        }
    }

    /// Checks every sector of a read that a finished write had put down before it was issued
    /// and that no write touched while it ran.
    fn check_read(&self, data: &[u8], target: usize, offset: u64, issued: u64) {
        for (k, sector) in data.chunks(verify::SECTOR).enumerate() {
            let at = offset + (k * verify::SECTOR) as u64;
            let result = verify::check(sector, target, at);
            // judged only once the read is over, so a write racing it is seen
            if self.ledger.settled(target, at, issued) {
                self.verified.fetch_add(1, Ordering::Relaxed);
                if let Err(what) = result {
                    self.fail(what);
                }
            }
        }
    }

    fn fail(&self, what: String) {
        let mut failures = self.failures.lock().expect("failure list");
        failures.push(what);
    }

    /// After the run: every written sector holds the last write to it.
    fn check_written(&self) {
        let mut buffer = Buffer::new(verify::SECTOR);
        for ((target, at), seq, also) in self.ledger.expected() {
            let sector = buffer.slice(verify::SECTOR);
            if let Err(e) = self.targets[target].file.read_exact_at(sector, at) {
                self.fail(format!(
                    "sector at {at} of target {target}: reading it back failed: {e}"
                ));
                continue;
            }
            self.verified.fetch_add(1, Ordering::Relaxed);
            match verify::check(sector, target, at) {
                Ok(found) if found == seq || also.contains(&found) => {}
                Ok(found) => self.fail(format!(
                    "sector at {at} of target {target}: holds request {} where request {} wrote last (stale)",
                    found + 1,
                    seq + 1
                )),
                Err(what) => self.fail(what),
            }
        }
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
    if targets.is_empty() {
        return Err(Error::Usage("no target to run against".into()));
    }
    if !(opts.intensity.is_finite() && opts.intensity > 0.0) {
        return Err(Error::Usage(format!(
            "`intensity` must be a positive number, found {}",
            opts.intensity
        )));
    }
    if opts.iodepth == Some(0) || opts.workers == 0 {
        return Err(Error::Usage("`iodepth` and `workers` must be at least 1".into()));
    }
    let align = opts.align.max(1);
    let n = t.len();
    // the largest placed size, at most: placing only ever rounds up to `align` or cuts
    let biggest_target = targets.iter().map(|t| t.size).max().unwrap_or(align);
    let largest = place(
        0,
        u64::from(t.size.iter().copied().max().unwrap_or(0)),
        biggest_target,
        align,
    )
    .1;
    let per_request = |record: bool| -> Vec<AtomicU64> {
        if record {
            (0..n).map(|_| AtomicU64::new(0)).collect()
        } else {
            Vec::new()
        }
    };
    let on_schedule = opts.iodepth.is_none() && !opts.no_stall;
    let engine = opts.engine.ops();
    let shared = Shared {
        t,
        targets,
        opts,
        moves_data: engine.moves_data(),
        start: clock.start,
        align,
        first_ts: clock.first_ts,
        on_schedule,
        issue: per_request(opts.record),
        done: per_request(opts.record),
        errors: Mutex::new(Vec::new()),
        ledger: verify::Ledger::default(),
        verified: AtomicU64::new(0),
        failures: Mutex::new(Vec::new()),
        control,
    };
    let buffer_len = usize::try_from(largest).unwrap_or(usize::MAX);
    let engine::Driven {
        issued: issued_count,
        summary,
        kernel_submits,
    } = engine.drive(&shared, n, on_schedule, buffer_len)?;
    let elapsed_ns = shared.now();
    if opts.verify && shared.moves_data {
        shared.check_written();
    }
    let errors = std::mem::take(&mut *shared.errors.lock().expect("error list"));
    if let Some((i, e)) = errors.into_iter().next() {
        let (offset, size) = shared.placed(i);
        let hint = if e.raw_os_error() == Some(libc::EINVAL) && align > 1 {
            " (O_DIRECT needs offsets and sizes aligned to the device's block size)"
        } else {
            ""
        };
        return Err(Error::Usage(format!(
            "request {} ({} bytes at {offset}): {e}{hint}",
            i + 1,
            size
        )));
    }
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
        completed,
        verified_sectors: shared.verified.load(Ordering::Relaxed),
        verify_failures: Vec::new(),
        kernel_submits,
    };
    if opts.record {
        let issue_ns: Vec<u64> = shared.issue.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        let done: Vec<u64> = shared.done.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        result.ran = done.iter().map(|&d| d != 0).collect();
        result.latency_ns = issue_ns
            .iter()
            .zip(&done)
            .map(|(&s, &e)| e.saturating_sub(s))
            .collect();
        result.lag_ns = if on_schedule {
            (0..n)
                .map(|i| issue_ns[i].saturating_sub(shared.scheduled(i)))
                .collect()
        } else {
            vec![0; n]
        };
        (result.offset, result.size) = (0..n)
            .map(|i| {
                let (o, s) = shared.placed(i);
                (o, u32::try_from(s).unwrap_or(u32::MAX))
            })
            .unzip();
        result.issue_ns = issue_ns;
    }
    result.verify_failures = shared.failures.into_inner().expect("failure list");
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::testing::reads;

    fn target(dir: &std::path::Path, size: u64) -> Target {
        let path = dir.join("t.dat");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(size).unwrap();
        Target { file, size }
    }

    /// `always`, and io_uring too where this kernel allows it.
    fn engines(always: &[Engine]) -> Vec<Engine> {
        let mut all = always.to_vec();
        if uring::available() {
            all.push(Engine::IoUring);
        }
        all
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("iomimic-realio-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn placement_folds_and_aligns() {
        assert_eq!(place(100, 10, 1000, 1), (100, 10));
        // 995 + 10 crosses the end: moved back to end there; 2,500 folds to 500
        assert_eq!(place(995, 10, 1000, 1), (990, 10));
        assert_eq!(place(2500, 10, 1000, 1), (500, 10));
        assert_eq!(place(5000, 100, 8192, 4096), (4096, 4096));
        // a request larger than the target is cut to it
        assert_eq!(place(0, 10_000, 8192, 4096), (0, 8192));
    }

    #[test]
    fn closed_loop_runs_every_request_and_writes_land() {
        let dir = temp_dir("closed");
        let mut t = reads(&[0; 64], &(0..64).map(|i| i * 4096).collect::<Vec<_>>(), 4096);
        t.op = vec![Op::Write as u8; 64];
        for engine in engines(&[Engine::Psync]) {
            let targets = [target(&dir, 64 * 4096)];
            let opts = RunOptions {
                engine,
                iodepth: Some(4),
                verify: true,
                ..RunOptions::default()
            };
            let r = run(&t.view(), &targets, &opts, &Control::default()).unwrap();
            assert_eq!(r.completed, 64, "{engine:?}");
            assert!(
                r.verify_failures.is_empty(),
                "{engine:?}: {:?}",
                r.verify_failures
            );
            assert_eq!(r.verified_sectors, 64 * 8, "{engine:?}");
            let data = std::fs::read(dir.join("t.dat")).unwrap();
            for i in 0..64usize {
                let sector = &data[i * 4096..i * 4096 + 512];
                assert_eq!(
                    verify::check(sector, 0, (i * 4096) as u64),
                    Ok(i as u64),
                    "{engine:?}"
                );
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn open_loop_keeps_the_schedule() {
        let dir = temp_dir("open");
        // 200 requests 1 ms apart
        let ts: Vec<u64> = (0..200).map(|i| i * 1_000_000).collect();
        let t = reads(&ts, &vec![0; 200], 4096);
        let targets = [target(&dir, 1 << 20)];
        for engine in engines(&[Engine::Null, Engine::Psync]) {
            let opts = RunOptions {
                engine,
                ..RunOptions::default()
            };
            let r = run(&t.view(), &targets, &opts, &Control::default()).unwrap();
            assert_eq!(r.completed, 200);
            for (i, (&issued, &due)) in r.issue_ns.iter().zip(&ts).enumerate() {
                assert!(issued >= due, "{engine:?}: request {i} issued early");
            }
            // the last request within 5 ms of its time even on a busy test machine
            assert!(r.lag_ns[199] < 5_000_000, "{engine:?}: {}", r.lag_ns[199]);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn io_uring_on_a_schedule_submits_by_kernel_thread_or_not_as_asked() {
        if !uring::available() {
            return; // nothing to test on a kernel without io_uring
        }
        let dir = temp_dir("sqpoll");
        // 3,000 writes 50 µs apart, issued in pieces of 700 on one clock (as a long Parquet
        // trace is), through 16 slots, with and without the kernel submission thread (which
        // posts completions before it lets go of their queue entries: the Python test of
        // Parquet replay in pieces catches a full queue there)
        let n = 3000usize;
        let ts: Vec<u64> = (0..n as u64).map(|i| i * 50_000).collect();
        let mut t = reads(&ts, &(0..n as u64).map(|i| i * 4096).collect::<Vec<_>>(), 4096);
        t.op = vec![Op::Write as u8; n];
        let kernel_allows = io_uring::IoUring::<io_uring::squeue::Entry>::builder()
            .setup_sqpoll(1)
            .build(4)
            .is_ok()
            && std::thread::available_parallelism().is_ok_and(|c| c.get() >= 2);
        for sqpoll in [true, false] {
            let targets = [target(&dir, n as u64 * 4096)];
            let opts = RunOptions {
                engine: Engine::IoUring,
                sqpoll,
                verify: true,
                ..RunOptions::default()
            };
            let view = t.view();
            let clock = Clock::starting(&opts, 0);
            for piece in (0..n).step_by(700) {
                let rows = piece..(piece + 700).min(n);
                let r = run_on(
                    &view.rows(rows.clone()),
                    &targets,
                    &opts,
                    &Control::default(),
                    clock,
                )
                .unwrap();
                assert_eq!(r.kernel_submits, sqpoll && kernel_allows, "sqpoll {sqpoll}");
                assert_eq!(r.completed, rows.len(), "sqpoll {sqpoll}");
                assert!(r.verify_failures.is_empty(), "{:?}", r.verify_failures);
                for (&issued, &due) in r.issue_ns.iter().zip(&ts[rows]) {
                    assert!(issued >= due, "sqpoll {sqpoll}: a request issued early");
                }
            }
            // (sequence numbers count within a piece)
            let data = std::fs::read(dir.join("t.dat")).unwrap();
            for i in 0..n {
                let sector = &data[i * 4096..i * 4096 + 512];
                assert_eq!(verify::check(sector, 0, (i * 4096) as u64), Ok((i % 700) as u64));
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_stop_or_the_deadline_ends_a_long_wait_promptly() {
        let dir = temp_dir("wait");
        // the second request is due ten seconds in
        let t = reads(&[0, 10_000_000_000], &[0, 4096], 4096);
        let targets = [target(&dir, 1 << 20)];
        for engine in engines(&[Engine::Psync]) {
            let control = Control::default();
            let started = Instant::now();
            let r = std::thread::scope(|scope| {
                scope.spawn(|| {
                    std::thread::sleep(Duration::from_millis(100));
                    control.stop.store(true, Ordering::Relaxed);
                });
                let opts = RunOptions {
                    engine,
                    ..RunOptions::default()
                };
                run(&t.view(), &targets, &opts, &control).unwrap()
            });
            assert_eq!(r.completed, 1, "{engine:?}");
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{engine:?}: {:?}",
                started.elapsed()
            );

            let opts = RunOptions {
                engine,
                deadline_ns: Some(50_000_000),
                ..RunOptions::default()
            };
            let started = Instant::now();
            let r = run(&t.view(), &targets, &opts, &Control::default()).unwrap();
            assert_eq!(r.completed, 1, "{engine:?}");
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{engine:?}: {:?}",
                started.elapsed()
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_stop_request_ends_the_run_early() {
        let dir = temp_dir("stop");
        let ts: Vec<u64> = (0..100).map(|i| i * 1_000_000).collect();
        let t = reads(&ts, &vec![0; 100], 4096);
        let targets = [target(&dir, 1 << 20)];
        let control = Control::default();
        control.stop.store(true, Ordering::Relaxed);
        let r = run(&t.view(), &targets, &RunOptions::default(), &control).unwrap();
        assert_eq!(r.completed, 0);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
