//! The psync engine: worker threads with a buffer each, issuing positional reads and writes
//! (`pread`/`pwrite`), one request at a time. The null engine reuses its worker loop ([`pool`]).
//!
//! Each worker takes the next request when it is free (closed loop, no stall) and, on a
//! schedule, waits for that request's time itself: a hand-over from a dispatcher would add a
//! sleeping thread's wake-up to when the request goes out.

use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::engine::{Driven, IoEngine};
use super::{precise_timers, Buffer, Engine, Shared, Summary};
use crate::error::Result;
use crate::trace::Op;

pub(super) struct PsyncEngine;

impl Engine {
    #[allow(non_upper_case_globals)] // spelled as the enum variant it replaced
    pub const Psync: Engine = Engine::of(&PsyncEngine);
}

impl IoEngine for PsyncEngine {
    fn name(&self) -> &'static str {
        "psync"
    }

    /// `--workers` on a schedule, `--iodepth` (else `--workers`) in closed loop.
    fn drive(&self, run: &Shared<'_>, n: usize, on_schedule: bool, buffer_len: usize) -> Result<Driven> {
        let opts = run.opts;
        let workers = if on_schedule {
            opts.workers
        } else {
            opts.iodepth.unwrap_or(opts.workers)
        };
        let (issued, summary) = pool(run, n, on_schedule, buffer_len, workers, perform);
        Ok(Driven {
            issued,
            summary,
            kernel_submits: false,
        })
    }
}

/// Runs requests `0..n` (on their schedule when `on_schedule`) from a pool of `workers`, each
/// running a request with `perform` (a type parameter, so the call is direct). Returns how many
/// requests were issued and what the workers measured, merged.
pub(super) fn pool<P>(
    shared: &Shared<'_>,
    n: usize,
    on_schedule: bool,
    buffer_len: usize,
    workers: usize,
    perform: P,
) -> (usize, Summary)
where
    P: Fn(&Shared<'_>, usize, &mut Buffer, &mut Summary) + Sync,
{
    let next = AtomicUsize::new(0);
    let mut summary = Summary::default();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.min(n.max(1)))
            .map(|_| {
                let (next, perform) = (&next, &perform);
                scope.spawn(move || {
                    precise_timers();
                    let mut buffer = Buffer::new(buffer_len);
                    let mut summary = Summary::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n || shared.stopping() {
                            return summary;
                        }
                        // yielding: a worker waking on this CPU (its own request due, or its
                        // I/O done) would otherwise wait for this one's time slice to end;
                        // spinning workers put the issue lag p99 at ~50 µs and the gaps at KS
                        // 0.06 from the exponential at 10 k IOPS here, yielding ~10 µs, 0.015
                        if on_schedule && !shared.wait_for(shared.scheduled(i), true) {
                            return summary;
                        }
                        perform(shared, i, &mut buffer, &mut summary);
                    }
                })
            })
            .collect();
        for h in handles {
            summary.merge(h.join().expect("workers do not panic"));
        }
    });
    (next.load(Ordering::Relaxed).min(n), summary)
}

/// Runs request `i` on a worker's buffer with positional reads and writes.
fn perform(shared: &Shared<'_>, i: usize, buffer: &mut Buffer, summary: &mut Summary) {
    let (data, start) = shared.prepare(i, buffer);
    let (which, offset, _, _) = start;
    let file = &shared.targets[which].file;
    let op = shared.t.op[i];
    let outcome = if let Some(bg) = &shared.targets[which].everest {
        everest(&bg.client, op, data, offset)
    } else if op == Op::Write as u8 {
        file.write_all_at(data, offset)
    } else if op == Op::Flush as u8 {
        file.sync_data()
    } else if op == Op::Read as u8 {
        file.read_exact_at(data, offset)
    } else {
        // trims need a block device or a punch-hole call; counted as done, no I/O
        Ok(())
    };
    shared.finish(i, data, outcome, start, summary);
}

/// Request `op` through an Everest client (writes are durable when it returns; a flush has
/// nothing left to do). The client's errors become I/O errors, as the run records them.
fn everest(client: &crate::offload::Client, op: u8, data: &mut [u8], offset: u64) -> std::io::Result<()> {
    let result = if op == Op::Write as u8 {
        client.write(offset, data)
    } else if op == Op::Read as u8 {
        client.read(offset, data)
    } else {
        Ok(())
    };
    result.map_err(|e| match e {
        crate::error::Error::Io { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    })
}
