//! The io_uring engine: one thread owns a ring and keeps up to `depth` requests in flight,
//! submitting each as it falls due (open loop) or as soon as a slot frees (closed loop).
//!
//! Buffers are registered with the kernel once (fixed buffers) so an O_DIRECT request does not
//! pin its pages each time; where registration is refused (a low RLIMIT_MEMLOCK), plain reads
//! and writes are used. In open loop the thread sleeps in the kernel, waiting for completions,
//! until shortly before the next request is due, then spins to issue it on time; a kernel
//! thread takes the submissions off the ring (SQPOLL), so issuing one never delays the next.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

use io_uring::{opcode, squeue, types, IoUring};

use super::engine::{Driven, IoEngine};
use super::{precise_timers, Buffer, Engine, Shared, Summary, SPIN_NS};
use crate::error::{Error, Result};
use crate::trace::Op;

pub(super) struct IoUringEngine;

impl Engine {
    #[allow(non_upper_case_globals)] // spelled as the enum variant it replaced
    pub const IoUring: Engine = Engine::of(&IoUringEngine);
}

impl IoEngine for IoUringEngine {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["uring"]
    }

    fn unavailable(&self) -> Option<&'static str> {
        (!available())
            .then_some("this kernel (or its seccomp policy) does not allow io_uring here; use `engine` psync")
    }

    /// Which CPUs are idle for the kernel's submission thread is measured here, before time 0:
    /// measured when the ring is made, its 40 ms made the run's first requests late (issue lag
    /// p99 of 1-1.6 ms in 5-s runs beside a busy neighbour, against 17-64 us by system call).
    fn before_schedule(&self, opts: &super::RunOptions) {
        if opts.sqpoll {
            measure_idle_cpus();
        }
    }

    /// One ring of `--iodepth` (closed loop) or `--workers` (open loop) slots, driven from the
    /// calling thread.
    fn drive(&self, run: &Shared<'_>, n: usize, on_schedule: bool, buffer_len: usize) -> Result<Driven> {
        precise_timers();
        let depth = run.opts.iodepth.unwrap_or(run.opts.workers);
        drive(run, n, depth, on_schedule, buffer_len)
            .map_err(|e| Error::Usage(format!("io_uring: {e}; try `engine` psync")))
    }
}

/// Requests pushed before they are submitted while refilling the ring. Submitting a whole
/// refill at once made the device wait for all of it (the block layer holds a batch's requests
/// until the batch is built; with a virtual disk that completes its queue in bursts, every
/// refill was a full one): 0.87–0.90 of fio's IOPS at depth 32. Every 4 gave 0.98–1.04 at less CPU
/// per I/O than every 1.
const SUBMIT_EVERY: usize = 4;

/// How long the kernel's submission thread keeps polling after the ring goes quiet, before
/// it sleeps (it is woken again by the spin before the next due request).
const SQPOLL_IDLE_MS: u32 = 1;

/// How long before a request due after a quiet spell the kernel thread is woken (it then polls
/// for `SQPOLL_IDLE_MS`, past the request's time).
const WAKE_AHEAD_NS: u64 = 200_000;

/// True when this kernel (and its seccomp policy) lets a process set up a ring.
pub fn available() -> bool {
    IoUring::new(2).is_ok()
}

/// A ring of `entries`; with `sqpoll` (on a schedule), one whose submissions a kernel thread
/// picks up (SQPOLL) where the kernel allows it and a second CPU is idle for that thread. An
/// O_DIRECT submission costs microseconds (a virtual disk's doorbell is a VM exit); made by the thread that keeps
/// time, it delays every request due meanwhile, so gaps shorter than it vanish from the run
/// (KS 0.02–0.03 from the exponential at 10 k IOPS here, 0.004–0.012 with the kernel thread).
/// Returns whether the kernel thread submits.
///
/// The kernel thread gets a CPU of its own and the calling thread (which keeps time) stays on
/// the one it is on, for as long as the returned guard lives: left to the scheduler, a new
/// kernel thread often starts on the timing thread's CPU, and the two share it in
/// millisecond slices until one is moved — requests fell due meanwhile (issue lag p99 of
/// 3–6 ms in a replay whose every Parquet row group starts a ring).
fn ring(entries: u32, sqpoll: bool) -> io::Result<(IoUring, bool, Option<Pinned>)> {
    if sqpoll {
        if let Some(pinned) = Pinned::apart() {
            let built = IoUring::builder()
                .setup_sqpoll(SQPOLL_IDLE_MS)
                .setup_sqpoll_cpu(pinned.other)
                .build(entries);
            if let Ok(ring) = built {
                return Ok((ring, true, Some(pinned)));
            }
        }
    }
    Ok((IoUring::new(entries)?, false, None))
}

/// The calling thread held on its CPU, and another CPU it may run on, for the kernel thread;
/// the thread's former CPU set comes back when this is dropped.
struct Pinned {
    other: u32,
    before: libc::cpu_set_t,
}

impl Pinned {
    /// `None` when the thread may run on one CPU only (or the kernel will not say).
    fn apart() -> Option<Self> {
        // SAFETY: cpu_set_t is plain bits; the calls read and write only the given set, for
        // this thread (pid 0).
        unsafe {
            let mut before: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw mut before) != 0 {
                return None;
            }
            let here = u32::try_from(libc::sched_getcpu()).ok()?;
            let allowed: Vec<u32> = (0..libc::CPU_SETSIZE as u32)
                .filter(|&c| c != here && libc::CPU_ISSET(c as usize, &before))
                .collect();
            let other = idle_cpu(&allowed)?;
            let mut only_here: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(here as usize, &mut only_here);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const only_here) != 0 {
                return None;
            }
            Some(Self { other, before })
        }
    }
}

/// Two samples of /proc/stat's CPU times 40 ms apart, the latest taken ([`measure_idle_cpus`]);
/// `None` inside when /proc/stat cannot be read.
type IdleSample = Option<(Vec<(u32, u64, u64)>, Vec<(u32, u64, u64)>)>;
static IDLE_SAMPLE: std::sync::Mutex<Option<IdleSample>> = std::sync::Mutex::new(None);

/// Measures which CPUs are idle, over 40 ms, for the rings made after: a run measures before
/// its schedule starts ([`IoEngine::before_schedule`]), so a ring made during the run (each
/// piece of a long replay makes its own) never pauses the schedule to measure.
fn measure_idle_cpus() -> IdleSample {
    let sample = || std::fs::read_to_string("/proc/stat").ok();
    let measured = sample().map(|before| {
        std::thread::sleep(std::time::Duration::from_millis(40));
        let after = sample().unwrap_or_default();
        (cpu_times(&before), cpu_times(&after))
    });
    *IDLE_SAMPLE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(measured.clone());
    measured
}

/// A CPU of `allowed` that is idle enough for the kernel's polling thread, the idlest one; `None`
/// when all are busy. The polling thread needs a CPU of its own: sharing one with another busy
/// process, it runs in the scheduler's slices and submissions wait milliseconds (issue lag p99
/// of 13–14 ms at 10 k IOPS with a busy neighbour, against 0.3–0.5 ms submitting from the
/// timing thread). By the latest measurement ([`measure_idle_cpus`]; one is made here only if
/// none was). Where /proc/stat cannot be read, the first allowed CPU, as before.
fn idle_cpu(allowed: &[u32]) -> Option<u32> {
    let latest = IDLE_SAMPLE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    match latest.unwrap_or_else(measure_idle_cpus) {
        Some((before, after)) => idlest(&before, &after, allowed, MIN_IDLE),
        None => allowed.first().copied(),
    }
}

/// The share of a sample a CPU must have been idle to take the polling thread.
const MIN_IDLE: f64 = 0.8;

/// Per CPU of a /proc/stat text: (number, idle ticks incl. I/O wait, all ticks).
fn cpu_times(stat: &str) -> Vec<(u32, u64, u64)> {
    stat.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let cpu: u32 = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
            let ticks: Vec<u64> = fields.filter_map(|f| f.parse().ok()).collect();
            let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
            Some((cpu, idle, ticks.iter().sum()))
        })
        .collect()
}

/// Of `allowed`, the CPU idle the largest share between two samples, if at least `min_idle`.
fn idlest(
    before: &[(u32, u64, u64)],
    after: &[(u32, u64, u64)],
    allowed: &[u32],
    min_idle: f64,
) -> Option<u32> {
    after
        .iter()
        .filter(|(cpu, _, _)| allowed.contains(cpu))
        .filter_map(|&(cpu, idle, total)| {
            let &(_, idle0, total0) = before.iter().find(|b| b.0 == cpu)?;
            let span = total.saturating_sub(total0);
            (span > 0).then(|| (cpu, idle.saturating_sub(idle0) as f64 / span as f64))
        })
        .filter(|&(_, share)| share >= min_idle)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(cpu, _)| cpu)
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: restores this thread's own CPU set, saved when it was pinned
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const self.before);
        }
    }
}

/// Runs requests `0..n` (on their schedule when `on_schedule`) through a ring of `depth` slots.
fn drive(
    shared: &Shared<'_>,
    n: usize,
    depth: usize,
    on_schedule: bool,
    buffer_len: usize,
) -> io::Result<Driven> {
    let depth = depth.clamp(1, 4096);
    let (mut slots, _pinned) = Slots::new(shared, depth, on_schedule && shared.opts.sqpoll, buffer_len)?;
    let mut summary = Summary::default();
    let mut next = 0usize;
    let outcome = loop {
        let stopping = shared.control.stop.load(Ordering::Relaxed) || shared.past_deadline();
        if !stopping {
            if let Err(e) = slots.issue_due(&mut next, n, on_schedule, &mut summary) {
                break Err(e);
            }
        }
        if slots.in_flight == 0 {
            if next >= n || stopping {
                break Ok(next);
            }
            if on_schedule {
                match slots.idle_until(shared.scheduled(next)) {
                    Ok(true) => {}
                    Ok(false) => break Ok(next),
                    Err(e) => break Err(e),
                }
            }
            continue;
        }
        let waiting_to_issue = on_schedule && next < n && !slots.free.is_empty() && !stopping;
        if let Err(e) = slots.await_completions(waiting_to_issue.then(|| shared.scheduled(next))) {
            if e.kind() != io::ErrorKind::Interrupted {
                break Err(e);
            }
        }
        slots.reap(&mut summary);
    };
    let kernel_submits = slots.kernel_submits;
    slots.close();
    outcome.map(|issued| Driven {
        issued,
        summary,
        kernel_submits,
    })
}

/// What a slot holds: its request's index and what [`Shared::prepare`] returned for it.
type Held = (usize, (usize, u64, u64, u64));

/// A run's ring and its slots: a buffer each, and what each holds.
struct Slots<'s, 'a> {
    shared: &'s Shared<'a>,
    /// Declared before `buffers`, so even unwinding drops it first: the kernel lets go of the
    /// registered buffers with the ring.
    ring: IoUring,
    /// A kernel thread picks submissions up (SQPOLL).
    kernel_submits: bool,
    buffers: Vec<Buffer>,
    /// The buffers are registered with the kernel (slot k's is fixed buffer k).
    fixed: bool,
    /// The targets are the ring's registered files, in order.
    files_registered: bool,
    held: Vec<Held>,
    free: Vec<usize>,
    in_flight: usize,
    /// Completions taken off the ring, reused from one wait to the next.
    reaped: Vec<(usize, i32)>,
}

impl<'s, 'a> Slots<'s, 'a> {
    /// A ring of `depth` slots with a buffer of `buffer_len` bytes each, registered with the
    /// kernel where it allows; the targets too. With `sqpoll` the calling thread stays pinned
    /// while the returned guard lives (see [`ring`]).
    fn new(
        shared: &'s Shared<'a>,
        depth: usize,
        sqpoll: bool,
        buffer_len: usize,
    ) -> io::Result<(Self, Option<Pinned>)> {
        let (ring, kernel_submits, pinned) =
            ring(u32::try_from(depth.next_power_of_two()).unwrap_or(4096), sqpoll)?;
        let mut buffers: Vec<Buffer> = (0..depth).map(|_| Buffer::new(buffer_len)).collect();
        let iovecs: Vec<libc::iovec> = buffers
            .iter_mut()
            .map(|b| {
                let s = b.slice(buffer_len);
                libc::iovec {
                    iov_base: s.as_mut_ptr().cast(),
                    iov_len: s.len(),
                }
            })
            .collect();
        // SAFETY: the registered memory is the buffers' heap blocks, which neither move nor are
        // freed before the ring is dropped (explicitly, in `close`).
        let fixed = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        // registered files spare the kernel a file lookup per request
        let fds: Vec<i32> = shared.targets.iter().map(|t| t.file.as_raw_fd()).collect();
        let files_registered = ring.submitter().register_files(&fds).is_ok();
        let r = Self {
            shared,
            ring,
            kernel_submits,
            buffers,
            fixed,
            files_registered,
            held: vec![(0usize, (0usize, 0u64, 0u64, 0u64)); depth],
            free: (0..depth).rev().collect(),
            in_flight: 0,
            reaped: Vec::with_capacity(depth),
        };
        Ok((r, pinned))
    }

    /// Issues requests from `next` on while slots are free and (`on_schedule`) they are due.
    #[inline]
    fn issue_due(
        &mut self,
        next: &mut usize,
        n: usize,
        on_schedule: bool,
        summary: &mut Summary,
    ) -> io::Result<()> {
        while *next < n && !self.free.is_empty() {
            if on_schedule && self.shared.now() < self.shared.scheduled(*next) {
                break;
            }
            let (i, slot) = (*next, self.free.pop().expect("a free slot"));
            *next += 1;
            self.issue(i, slot, summary)?;
        }
        Ok(())
    }

    /// Puts request `i` in `slot` on the ring (a request with nothing to submit ends at once),
    /// and submits every [`SUBMIT_EVERY`] requests.
    #[inline]
    fn issue(&mut self, i: usize, slot: usize, summary: &mut Summary) -> io::Result<()> {
        let (data, start) = self.shared.prepare(i, &mut self.buffers[slot]);
        let Some(entry) = entry(
            self.shared,
            i,
            data,
            start,
            self.fixed.then_some(slot),
            self.files_registered,
        ) else {
            self.shared.finish(i, data, Ok(()), start, summary);
            self.free.push(slot);
            return Ok(());
        };
        self.held[slot] = (i, start);
        let entry = entry.user_data(slot as u64);
        // SAFETY: the buffer behind the entry lives in `buffers` until its completion is reaped.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            // the ring holds `depth` entries, but a kernel submission thread may not yet have
            // let go of entries whose requests already completed (it advances the queue's head
            // after a batch)
            if let Err(e) = self.ring.submitter().squeue_wait() {
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
        self.in_flight += 1;
        if self.ring.submission().len() >= SUBMIT_EVERY {
            if let Err(e) = self.ring.submit() {
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Nothing in flight: waits until `due`, when the next request is to be issued. False when
    /// the run stops first.
    fn idle_until(&mut self, due: u64) -> io::Result<bool> {
        // not yielding: the CPU would go to whatever else runs here, the kernel submission
        // thread among them, for the rest of its time slice (milliseconds late)
        if self.kernel_submits {
            // a kernel thread idle past SQPOLL_IDLE_MS sleeps: wake it ahead, so a request
            // does not wait in the ring for its wake-up after being issued
            if !self.shared.wait_for(due.saturating_sub(WAKE_AHEAD_NS), false) {
                return Ok(false);
            }
            self.ring.submit()?;
        }
        Ok(self.shared.wait_for(due, false))
    }

    /// Submits what is pushed and waits for a completion; with a request waiting to be issued
    /// at `due`, only until shortly before then.
    #[inline]
    fn await_completions(&mut self, due: Option<u64>) -> io::Result<usize> {
        let Some(due) = due else {
            return self.ring.submit_and_wait(1);
        };
        let left = due.saturating_sub(self.shared.now());
        if left > SPIN_NS {
            // sleep in the kernel until a completion arrives or the next request is nearly due
            // (at most 20 ms at a time, so a stop request is seen)
            let ts =
                types::Timespec::from(Duration::from_nanos(left - SPIN_NS).min(Duration::from_millis(20)));
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => Ok(0),
                other => other,
            }
        } else {
            // close to its time: poll, so it goes out on time
            self.ring.submit()
        }
    }

    /// Ends every request whose completion is on the ring and frees its slot.
    #[inline]
    fn reap(&mut self, summary: &mut Summary) {
        self.reaped.clear();
        self.reaped.extend(
            self.ring
                .completion()
                .map(|c| (usize::try_from(c.user_data()).unwrap_or(usize::MAX), c.result())),
        );
        for &(slot, result) in &self.reaped {
            let (i, start) = self.held[slot];
            let len = usize::try_from(start.2).unwrap_or(usize::MAX);
            let outcome = outcome(self.shared.t.op[i], result, len);
            self.shared
                .finish(i, self.buffers[slot].slice(len), outcome, start, summary);
            self.free.push(slot);
            self.in_flight -= 1;
        }
    }

    /// The kernel lets go of the registered buffers with the ring, before they are freed.
    fn close(self) {
        let Self { ring, buffers, .. } = self;
        drop(ring);
        drop(buffers);
    }
}

/// What a completion's `result` says of a request with op `op` moving `len` bytes.
#[inline]
fn outcome(op: u8, result: i32, len: usize) -> io::Result<()> {
    let transfers = matches!(op, x if x == Op::Read as u8 || x == Op::Write as u8);
    if result < 0 {
        Err(io::Error::from_raw_os_error(-result))
    } else if transfers && usize::try_from(result).unwrap_or(0) != len {
        Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("short transfer: {result} of {len} bytes"),
        ))
    } else {
        Ok(())
    }
}

/// The ring entry for request `i` (`None`: nothing to submit, as for trims). `fixed`: the slot's registered buffer; `files_registered`: the targets are the
/// ring's registered files, in order.
fn entry(
    shared: &Shared<'_>,
    i: usize,
    data: &mut [u8],
    start: (usize, u64, u64, u64),
    fixed: Option<usize>,
    files_registered: bool,
) -> Option<squeue::Entry> {
    let op = shared.t.op[i];
    let length = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let index = fixed.map(|s| u16::try_from(s).expect("at most 4096 slots"));
    let target = start.0;
    // the same entry for a registered file (by index) or a plain descriptor; the opcode
    // builders take either, but as distinct types
    macro_rules! on_file {
        (|$f:ident| $build:expr) => {
            if files_registered {
                let $f = types::Fixed(u32::try_from(target).expect("a few targets"));
                $build
            } else {
                let $f = types::Fd(shared.targets[target].file.as_raw_fd());
                $build
            }
        };
    }
    Some(if op == Op::Write as u8 {
        match index {
            Some(k) => on_file!(|f| opcode::WriteFixed::new(f, data.as_ptr(), length, k)
                .offset(start.1)
                .build()),
            None => on_file!(|f| opcode::Write::new(f, data.as_ptr(), length)
                .offset(start.1)
                .build()),
        }
    } else if op == Op::Read as u8 {
        match index {
            Some(k) => on_file!(|f| opcode::ReadFixed::new(f, data.as_mut_ptr(), length, k)
                .offset(start.1)
                .build()),
            None => on_file!(|f| opcode::Read::new(f, data.as_mut_ptr(), length)
                .offset(start.1)
                .build()),
        }
    } else if op == Op::Flush as u8 {
        on_file!(|f| opcode::Fsync::new(f).flags(types::FsyncFlags::DATASYNC).build())
    } else {
        return None; // trims: counted, not issued (as the psync engine)
    })
}

#[cfg(test)]
mod idle_tests {
    use super::*;

    #[test]
    fn the_idlest_allowed_cpu_is_chosen_and_a_busy_one_never() {
        let before = "cpu  9 9 9 9\ncpu0 100 0 0 100 0\ncpu1 100 0 0 100 0\ncpu2 100 0 0 100 0\n";
        // over the sample: cpu0 90 % idle, cpu1 50 %, cpu2 100 % (not allowed)
        let after = "cpu  9 9 9 9\ncpu0 110 0 0 190 0\ncpu1 150 0 0 140 10\ncpu2 100 0 0 200 0\nintr 5\n";
        let (b, a) = (cpu_times(before), cpu_times(after));
        assert_eq!(b, [(0, 100, 200), (1, 100, 200), (2, 100, 200)]);
        assert_eq!(idlest(&b, &a, &[0, 1], MIN_IDLE), Some(0));
        assert_eq!(idlest(&b, &a, &[1], MIN_IDLE), None, "50 % idle is busy");
        assert_eq!(idlest(&b, &a, &[0, 1, 2], MIN_IDLE), Some(2));
        assert_eq!(idlest(&b, &a, &[], MIN_IDLE), None);
    }
}
