//! A run as a session: targets opened once, one clock, a workload issued in one piece or in
//! several (a long trace read a part at a time), results merged, and the run's figures.
//!
//! The figures are what fio users look for: IOPS and MB/s, latency percentiles (all requests
//! and per operation), issue lag on a schedule, CPU per I/O, and IOPS and MB/s over time.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{run_on, Clock, Control, RunOptions, RunResult, Summary, Target};
use crate::error::Result;
use crate::latency::LatencyUs;
use crate::trace::{Op, TraceView};

/// A volume whose target is smaller than the part of it the workload reaches: its offsets fold
/// into the target (modulo its size), so requests that were apart in the workload meet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fold {
    pub path: String,
    pub reach_bytes: u64,
    pub size_bytes: u64,
    /// reach / size: how many times over the workload's span lands on the target.
    pub factor: f64,
}

/// Requests that ended in an error: how many, by errno, and the first few as messages.
#[derive(Debug, Clone, Serialize)]
pub struct Failed {
    pub requests: u64,
    /// errno → requests (255: an error with no errno).
    pub by_errno: BTreeMap<u8, u64>,
    pub first: Vec<String>,
}

/// The folds of volumes `needed[i]` bytes long placed on targets `targets[i]` at `paths[i]`:
/// one a target (volumes sharing a target fold into it as the farthest-reaching one does).
pub fn folds(paths: &[String], needed: &[u64], targets: &[Target]) -> Vec<Fold> {
    let mut folds: Vec<Fold> = Vec::new();
    for ((path, &reach), t) in paths.iter().zip(needed).zip(targets) {
        if reach <= t.size {
            continue;
        }
        match folds.iter_mut().find(|f| f.path == *path) {
            Some(f) if f.reach_bytes >= reach => {}
            Some(f) => f.reach_bytes = reach,
            None => folds.push(Fold {
                path: path.clone(),
                reach_bytes: reach,
                size_bytes: t.size,
                factor: 0.0,
            }),
        }
    }
    for f in &mut folds {
        f.factor = f.reach_bytes as f64 / f.size_bytes.max(1) as f64;
    }
    folds
}

/// The session's state between pieces.
pub struct Session {
    targets: Vec<Target>,
    opts: RunOptions,
    clock: Option<Clock>,
    summary: Summary,
    completed: usize,
    elapsed_ns: u64,
    verified_sectors: u64,
    verify_failures: Vec<String>,
    kernel_submits: bool,
    /// Process CPU time when the first piece started.
    cpu_start_ns: Option<u64>,
    /// Volumes folded into targets smaller than they are ([`folds`]), told in the figures.
    folded: Vec<Fold>,
    /// The first failed requests, as messages.
    first_errors: Vec<String>,
}

impl Session {
    pub fn new(targets: Vec<Target>, opts: RunOptions) -> Self {
        Self {
            targets,
            opts,
            clock: None,
            summary: Summary::default(),
            completed: 0,
            elapsed_ns: 0,
            verified_sectors: 0,
            verify_failures: Vec::new(),
            kernel_submits: false,
            cpu_start_ns: None,
            folded: Vec::new(),
            first_errors: Vec::new(),
        }
    }

    /// Records the volumes that fold into smaller targets, for the figures.
    pub fn set_folded(&mut self, folded: Vec<Fold>) {
        self.folded = folded;
    }

    pub fn folded(&self) -> &[Fold] {
        &self.folded
    }

    pub fn options(&self) -> &RunOptions {
        &self.opts
    }

    /// Issues `piece` on the session's clock (started by the first piece, so later pieces keep
    /// one schedule). Returns the piece's per-request record and whether the run is over
    /// early: stopped, out of time, or not every request ran.
    pub fn run_piece(&mut self, piece: &TraceView<'_>, control: &Control) -> Result<(RunResult, bool)> {
        self.cpu_start_ns.get_or_insert_with(process_cpu_ns);
        let first = piece.ts_ns.first().copied().unwrap_or(0);
        let clock = *self
            .clock
            .get_or_insert_with(|| Clock::starting(&self.opts, first));
        let mut result = run_on(piece, &self.targets, &self.opts, control, clock)?;
        self.summary.merge(std::mem::take(&mut result.summary));
        self.completed += result.completed;
        self.elapsed_ns = result.elapsed_ns;
        self.verified_sectors += result.verified_sectors;
        self.verify_failures.append(&mut result.verify_failures);
        self.kernel_submits |= result.kernel_submits;
        let room = super::shared::FIRST_ERRORS.saturating_sub(self.first_errors.len());
        self.first_errors.extend(result.first_errors.drain(..).take(room));
        let stopped = control.stop.load(std::sync::atomic::Ordering::Relaxed);
        let over = stopped
            || self.opts.deadline_ns.is_some_and(|d| result.elapsed_ns >= d)
            || result.completed < piece.len();
        Ok((result, over))
    }

    /// The run's figures. `requests` and `span_ns` describe the whole workload (its length and
    /// the time from its first request to its last); `interrupted` says it was stopped.
    pub fn figures(&self, requests: u64, span_ns: u64, interrupted: bool) -> RunFigures {
        let s = &self.summary;
        // the figures' clock starts when the warm-up ends
        let elapsed_s = self.elapsed_ns.saturating_sub(self.opts.ramp_ns) as f64 / 1e9;
        let per_s = |x: f64| if elapsed_s > 0.0 { x / elapsed_s } else { 0.0 };
        let time_limited = self.opts.deadline_ns.is_some();
        let on_schedule = self.opts.iodepth.is_none() && !self.opts.no_stall;
        let cpu_s = self
            .cpu_start_ns
            .map_or(0.0, |start| process_cpu_ns().saturating_sub(start) as f64 / 1e9);
        let by_op = Op::ALL
            .iter()
            .zip(&s.by_op)
            .zip(&s.latency)
            .filter(|((_, &(count, _)), _)| count > 0)
            .map(|((op, &(count, bytes)), h)| {
                let figures = OpFigures {
                    completed: count,
                    iops: per_s(count as f64),
                    mb_per_s: per_s(bytes as f64 / 1e6),
                    latency_us: LatencyUs::from_histogram(h),
                };
                (op.name(), figures)
            })
            .collect();
        RunFigures {
            engine: self.opts.engine.name(),
            mode: match (self.opts.iodepth, self.opts.no_stall) {
                (Some(depth), _) => format!("closed loop, depth {depth}"),
                (None, true) => "open loop, no stall".into(),
                (None, false) => "open loop".into(),
            },
            requests,
            completed: s.completed,
            partial: interrupted || (s.completed + s.warmup < requests && !time_limited),
            ramp_s: self.opts.ramp_ns as f64 / 1e9,
            warmup_requests: s.warmup,
            elapsed_s,
            iops: per_s(s.completed as f64),
            mb_per_s: per_s(s.bytes as f64 / 1e6),
            latency_us: LatencyUs::from_histogram(&s.all_latencies()),
            by_op,
            time_limited,
            cpu_us_per_io: if s.completed > 0 {
                1e6 * cpu_s / s.completed as f64
            } else {
                0.0
            },
            over_time: OverTime::of(s, elapsed_s),
            // on a schedule a kernel thread may take the submissions (SQPOLL), and costs a CPU
            submission: (self.opts.engine.name() == "io_uring").then_some(if self.kernel_submits {
                "kernel polling thread"
            } else {
                "system call"
            }),
            folded: self.folded.clone(),
            failed: (!s.failed.is_empty()).then(|| Failed {
                requests: s.failed.values().sum(),
                by_errno: s.failed.iter().map(|(&code, &n)| (code, n)).collect(),
                first: self.first_errors.clone(),
            }),
            verify: self.opts.verify.then(|| Verify {
                sectors_checked: self.verified_sectors,
                failures: self.verify_failures.len(),
                first: self.verify_failures.iter().take(10).cloned().collect(),
            }),
            schedule: on_schedule.then(|| Schedule {
                scheduled_iops: (span_ns > 0).then(|| {
                    self.opts.intensity * requests.saturating_sub(1) as f64 / (span_ns as f64 / 1e9)
                }),
                lag_us: LatencyUs::from_histogram(&s.lag),
                last_request_lag_us: s.last_lag_ns.map(|ns| ns as f64 / 1e3),
            }),
        }
    }
}

/// CPU time this process has used, in ns.
fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &raw mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

#[derive(Debug, Clone, Serialize)]
pub struct OpFigures {
    pub completed: u64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub latency_us: Option<LatencyUs>,
}

/// IOPS and MB/s per window of issue time.
#[derive(Debug, Clone, Serialize)]
pub struct OverTime {
    pub window_s: f64,
    pub iops: Vec<f64>,
    pub mb_per_s: Vec<f64>,
}

impl OverTime {
    /// The engine's windows (1 ms, doubled as a run grows) merged up to about 1 s, or a
    /// hundredth of a run shorter than 10 s.
    fn of(s: &Summary, elapsed_s: f64) -> Self {
        let window_s = s.window_ns as f64 / 1e9;
        let want = if elapsed_s >= 10.0 {
            1.0
        } else {
            (elapsed_s / 100.0).max(window_s)
        };
        // a positive ratio of two positive widths
        #[allow(clippy::cast_sign_loss)]
        let factor = ((want / window_s).round() as usize).max(1);
        let merged: Vec<(u64, u64)> = s
            .windows
            .chunks(factor)
            .map(|c| c.iter().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1)))
            .collect();
        let width = window_s * factor as f64;
        Self {
            window_s: width,
            iops: merged.iter().map(|&(n, _)| n as f64 / width).collect(),
            mb_per_s: merged.iter().map(|&(_, b)| b as f64 / 1e6 / width).collect(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Verify {
    pub sectors_checked: u64,
    pub failures: usize,
    /// The first failures, described.
    pub first: Vec<String>,
}

/// How a run on a schedule kept it.
#[derive(Debug, Clone, Serialize)]
pub struct Schedule {
    /// The rate the schedule asked for.
    pub scheduled_iops: Option<f64>,
    /// Issue time minus scheduled time.
    pub lag_us: Option<LatencyUs>,
    /// The last request's lag: drift shows here (a schedule that lost time and never made it
    /// up ends late).
    pub last_request_lag_us: Option<f64>,
}

/// What a run measured (`iomimic run --json`).
#[derive(Debug, Clone, Serialize)]
pub struct RunFigures {
    pub engine: &'static str,
    pub mode: String,
    pub requests: u64,
    pub completed: u64,
    /// Stopped before the workload was done (not by its `duration`).
    pub partial: bool,
    /// The warm-up left out of every other figure, and the requests issued during it.
    pub ramp_s: f64,
    pub warmup_requests: u64,
    /// Seconds measured: from the end of the warm-up to the last completion.
    pub elapsed_s: f64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub latency_us: Option<LatencyUs>,
    /// Reads, writes, trims and flushes apart (those that ran), as fio reports them.
    pub by_op: BTreeMap<&'static str, OpFigures>,
    /// The run had a `duration`, and stopping at it is no failure.
    pub time_limited: bool,
    pub cpu_us_per_io: f64,
    pub over_time: OverTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission: Option<&'static str>,
    /// Requests that failed (an I/O error from the target), when any did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<Failed>,
    /// Volumes folded into targets smaller than their reach (empty: none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub folded: Vec<Fold>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verify>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_merge_to_about_a_second() {
        let mut s = Summary::default();
        // 20 s of 1 ms windows would be coarsened by the summary itself; record 2 requests a
        // second at whole seconds
        for i in 0..40u64 {
            s.record(0, i * 500_000_000, 1000, None, 4096);
        }
        let o = OverTime::of(&s, 20.0);
        assert!((o.window_s - 1.0).abs() < 0.1, "{}", o.window_s);
        let total: f64 = o.iops.iter().map(|r| r * o.window_s).sum();
        assert!((total - 40.0).abs() < 1e-9);
    }
}
