//! The psync engine, and the null engine that shares its loop: worker threads with a buffer
//! each, issuing positional reads and writes (`pread`/`pwrite`), one request at a time.
//!
//! Each worker takes the next request when it is free (closed loop, no stall) and, on a
//! schedule, waits for that request's time itself: a hand-over from a dispatcher would add a
//! sleeping thread's wake-up to when the request goes out.

use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{precise_timers, Buffer, Engine, Shared, Summary};
use crate::trace::Op;

/// Runs requests `0..n` (on their schedule when `on_schedule`) from a pool of workers: the
/// run's `--workers` on a schedule, `--iodepth` (else `--workers`) in closed loop, one for the
/// null engine without a schedule (with no I/O to wait for, more would only contend). Returns
/// how many requests were issued and what the workers measured, merged.
pub(super) fn drive(shared: &Shared<'_>, n: usize, on_schedule: bool, buffer_len: usize) -> (usize, Summary) {
    let opts = shared.opts;
    let workers = if on_schedule {
        opts.workers
    } else if opts.engine == Engine::Null {
        1
    } else {
        opts.iodepth.unwrap_or(opts.workers)
    };
    let next = AtomicUsize::new(0);
    let mut summary = Summary::default();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.min(n.max(1)))
            .map(|_| {
                let next = &next;
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
    let outcome = if shared.opts.engine == Engine::Null {
        Ok(())
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
