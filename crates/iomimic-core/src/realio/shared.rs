//! The state of one run, shared by the driver and the engine's threads: its clock and
//! schedule, where each request lands, what happened to each, and the verification ledger.

use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{place, verify, Buffer, Clock, Control, RunOptions, RunResult, Summary, Target, SPIN_NS};
use crate::error::{Error, Result};
use crate::trace::{Op, TraceView};

/// The state of one run, shared by the driver and the engine's threads.
pub(super) struct Shared<'a> {
    pub t: &'a TraceView<'a>,
    pub targets: &'a [Target],
    pub opts: &'a RunOptions,
    /// The engine's [`super::engine::IoEngine::moves_data`], asked once per run rather than per request.
    pub moves_data: bool,
    start: Instant,
    pub align: u64,
    /// Time 0 of the trace, and whether lag is measured (open loop on a schedule).
    first_ts: u64,
    pub on_schedule: bool,
    /// With `record`: per request, issue and completion times (0: did not run).
    issue: Vec<AtomicU64>,
    done: Vec<AtomicU64>,
    /// With `record`: per request, the errno it failed with (0: it did not fail).
    status: Vec<AtomicU8>,
    /// The first few failed requests (every failure is counted in the summaries).
    errors: Mutex<Vec<(usize, std::io::Error)>>,
    ledger: verify::Ledger,
    pub verified: AtomicU64,
    pub failures: Mutex<Vec<String>>,
    pub control: &'a Control,
}

impl<'a> Shared<'a> {
    /// A run of `t` against `targets` on `clock`; `moves_data` is the engine's.
    pub fn new(
        t: &'a TraceView<'a>,
        targets: &'a [Target],
        opts: &'a RunOptions,
        control: &'a Control,
        clock: Clock,
        moves_data: bool,
    ) -> Self {
        Self {
            t,
            targets,
            opts,
            moves_data,
            start: clock.start,
            align: opts.align.max(1),
            first_ts: clock.first_ts,
            on_schedule: opts.iodepth.is_none() && !opts.no_stall,
            issue: per_request(opts.record, t.len()),
            done: per_request(opts.record, t.len()),
            status: if opts.record {
                (0..t.len()).map(|_| AtomicU8::new(0)).collect()
            } else {
                Vec::new()
            },
            errors: Mutex::new(Vec::new()),
            ledger: verify::Ledger::default(),
            verified: AtomicU64::new(0),
            failures: Mutex::new(Vec::new()),
            control,
        }
    }
}

impl Shared<'_> {
    /// ns since the start of the run (0 before it: an open-loop run starts a little after
    /// its threads are set up).
    #[inline]
    pub fn now(&self) -> u64 {
        u64::try_from(Instant::now().saturating_duration_since(self.start).as_nanos()).unwrap_or(u64::MAX)
    }

    #[inline]
    pub fn past_deadline(&self) -> bool {
        self.opts.deadline_ns.is_some_and(|d| self.now() >= d)
    }

    /// Asked to stop (Ctrl-C), or out of time (`--duration`).
    #[inline]
    pub fn stopping(&self) -> bool {
        self.control.stop.load(Ordering::Relaxed) || self.past_deadline()
    }

    /// Waits until `due` ns into the run: sleeps in slices (so a stop request is seen within
    /// 20 ms), then polls the clock the last stretch, yielding the CPU between polls when
    /// `yielding`. False when the run stops first, or `due` is past the deadline.
    pub fn wait_for(&self, due: u64, yielding: bool) -> bool {
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
    #[inline]
    pub fn scheduled(&self, i: usize) -> u64 {
        (self.t.ts_ns[i].saturating_sub(self.first_ts) as f64 / self.opts.intensity) as u64
    }

    /// Where request `i` lands in its target: (offset, size).
    #[inline]
    pub fn placed(&self, i: usize) -> (u64, u64) {
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
    pub fn prepare<'b>(&self, i: usize, buffer: &'b mut Buffer) -> (&'b mut [u8], (usize, u64, u64, u64)) {
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
    pub fn finish(
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
            Err(e) => {
                // the errno, as the status column keeps it (255: none, or past a byte)
                let code = e
                    .raw_os_error()
                    .and_then(|c| u8::try_from(c).ok())
                    .unwrap_or(u8::MAX);
                *summary.failed.entry(code).or_insert(0) += 1;
                if let Some(slot) = self.status.get(i) {
                    slot.store(code, Ordering::Relaxed);
                }
                let mut errors = self.errors.lock().expect("error list");
                if errors.len() < FIRST_ERRORS {
                    errors.push((i, e));
                }
            }
        }
        // a request that moves no data does nothing between issue and completion: one clock
        // read (of the two its whole cost is mostly made of) does for both
        let now = if self.moves_data { self.now() } else { issued };
        // never 0: 0 marks a request that did not run
        if let Some(slot) = self.done.get(i) {
            slot.store(now.max(1), Ordering::Relaxed);
        }
        let lag = self.on_schedule.then(|| issued.saturating_sub(self.scheduled(i)));
        if issued < self.opts.ramp_ns {
            summary.warmup += 1;
        } else {
            summary.record(self.t.op[i], issued - self.opts.ramp_ns, now - issued, lag, size);
        }
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

    /// Reads one sector of `target` back after the run: from the file, or through the Everest
    /// client (whole blocks: the block holding the sector).
    fn read_back(&self, target: usize, at: u64, sector: &mut [u8]) -> std::io::Result<()> {
        let Some(bg) = &self.targets[target].everest else {
            return self.targets[target].file.read_exact_at(sector, at);
        };
        let client = &bg.client;
        let block = client.options().block_bytes;
        let mut whole = vec![0u8; block as usize];
        let start = at - at % block;
        client
            .read(start, &mut whole)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let from = (at - start) as usize;
        sector.copy_from_slice(&whole[from..from + sector.len()]);
        Ok(())
    }

    /// After the run: every written sector holds the last write to it.
    pub fn check_written(&self) {
        let mut buffer = Buffer::new(verify::SECTOR);
        for ((target, at), seq, also) in self.ledger.expected() {
            let sector = buffer.slice(verify::SECTOR);
            if let Err(e) = self.read_back(target, at, sector) {
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

    /// The first failed requests, as messages.
    pub fn first_errors(&self) -> Vec<String> {
        let errors = self.errors.lock().expect("error list");
        errors
            .iter()
            .map(|(i, e)| {
                let (offset, size) = self.placed(*i);
                let hint = if e.raw_os_error() == Some(libc::EINVAL) && self.align > 1 {
                    " (O_DIRECT needs offsets and sizes aligned to the device's block size)"
                } else {
                    ""
                };
                format!("request {} ({size} bytes at {offset}): {e}{hint}", i + 1)
            })
            .collect()
    }

    /// A run where requests failed and none succeeded is a mistake, not a measurement (the
    /// wrong target, O_DIRECT on a device that wants other alignment): its first failure is
    /// the run's error. Otherwise failures are counted and the run goes on, as a disk's
    /// errors are what some studies look for.
    pub fn fail_if_nothing_worked(&self, summary: &Summary) -> Result<()> {
        let failed: u64 = summary.failed.values().sum();
        if failed > 0 && failed >= summary.completed {
            return Err(Error::Usage(self.first_errors().swap_remove(0)));
        }
        Ok(())
    }

    /// With `record`: each request's issue time, latency, lag and placement, into `result`.
    pub fn record_into(&self, result: &mut RunResult) {
        let n = self.t.len();
        let issue_ns: Vec<u64> = self.issue.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        let done: Vec<u64> = self.done.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        result.ran = done.iter().map(|&d| d != 0).collect();
        result.latency_ns = issue_ns
            .iter()
            .zip(&done)
            .map(|(&s, &e)| e.saturating_sub(s))
            .collect();
        result.lag_ns = if self.on_schedule {
            (0..n)
                .map(|i| issue_ns[i].saturating_sub(self.scheduled(i)))
                .collect()
        } else {
            vec![0; n]
        };
        (result.offset, result.size) = (0..n)
            .map(|i| {
                let (o, s) = self.placed(i);
                (o, u32::try_from(s).unwrap_or(u32::MAX))
            })
            .unzip();
        result.issue_ns = issue_ns;
        result.status = self.status.iter().map(|s| s.load(Ordering::Relaxed)).collect();
    }
}

/// Failed requests quoted in the figures (all are counted).
pub const FIRST_ERRORS: usize = 10;

/// A time slot per request when the run records them (else none: memory does not grow with
/// the run's length).
fn per_request(record: bool, n: usize) -> Vec<AtomicU64> {
    if record {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    } else {
        Vec::new()
    }
}
