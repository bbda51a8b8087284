//! The io_uring engine: one thread owns a ring and keeps up to `depth` requests in flight,
//! submitting each as it falls due (open loop) or as soon as a slot frees (closed loop).

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use io_uring::{opcode, types, IoUring};

use super::{wait_until, Buffer, Shared};
use crate::trace::Op;

/// True when this kernel (and its seccomp policy) lets a process set up a ring.
pub fn available() -> bool {
    IoUring::new(2).is_ok()
}

/// Runs requests `0..n` (`due(i)`: its scheduled time in open loop); returns how many were issued.
pub(super) fn drive(
    shared: &Shared<'_>,
    n: usize,
    depth: usize,
    due: Option<&dyn Fn(usize) -> u64>,
    buffer_len: usize,
) -> io::Result<usize> {
    let depth = depth.clamp(1, 4096);
    let mut ring = IoUring::new(u32::try_from(depth.next_power_of_two()).unwrap_or(4096))?;
    let mut buffers: Vec<Buffer> = (0..depth).map(|_| Buffer::new(buffer_len)).collect();
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut slots = vec![(0usize, (0usize, 0u64, 0u64, 0u64)); depth];
    let (mut in_flight, mut next) = (0usize, 0usize);
    let mut reaped: Vec<(usize, i32)> = Vec::with_capacity(depth);
    loop {
        let stopping = shared.control.stop.load(Ordering::Relaxed) || shared.past_deadline();
        while !stopping && next < n && !free.is_empty() {
            if due.is_some_and(|due| shared.now() < due(next)) {
                break;
            }
            let (i, slot) = (next, free.pop().expect("a free slot"));
            next += 1;
            let len = shared.buffer_len(i);
            let data = buffers[slot].slice(len);
            let start = shared.prepare(i, data);
            let fd = types::Fd(shared.targets[start.0].file.as_raw_fd());
            let op = shared.t.op[i];
            let length = u32::try_from(len).unwrap_or(u32::MAX);
            let entry = if shared.opts.engine == super::Engine::Null {
                None
            } else if op == Op::Write as u8 {
                Some(
                    opcode::Write::new(fd, data.as_ptr(), length)
                        .offset(start.1)
                        .build(),
                )
            } else if op == Op::Read as u8 {
                Some(
                    opcode::Read::new(fd, data.as_mut_ptr(), length)
                        .offset(start.1)
                        .build(),
                )
            } else if op == Op::Flush as u8 {
                Some(opcode::Fsync::new(fd).flags(types::FsyncFlags::DATASYNC).build())
            } else {
                None // trims: counted, not issued (as the psync engine)
            };
            match entry {
                None => {
                    shared.finish(i, data, Ok(()), start);
                    free.push(slot);
                }
                Some(entry) => {
                    slots[slot] = (i, start);
                    // SAFETY: the buffer behind the entry lives in `buffers` until its completion
                    // is reaped below, and the ring has room for `depth` entries.
                    unsafe { ring.submission().push(&entry.user_data(slot as u64)) }
                        .expect("the ring holds depth entries");
                    in_flight += 1;
                }
            }
        }
        if in_flight == 0 {
            if next >= n || stopping {
                return Ok(next);
            }
            if let Some(due) = due {
                wait_until(shared.start, due(next));
            }
            continue;
        }
        // open loop with a request still to issue: poll, so it goes out on time
        if due.is_some() && next < n && !free.is_empty() && !stopping {
            ring.submit()?;
        } else {
            ring.submit_and_wait(1)?;
        }
        reaped.clear();
        reaped.extend(
            ring.completion()
                .map(|c| (usize::try_from(c.user_data()).unwrap_or(usize::MAX), c.result())),
        );
        for &(slot, result) in &reaped {
            let (i, start) = slots[slot];
            let len = shared.buffer_len(i);
            let transfers = matches!(shared.t.op[i], x if x == Op::Read as u8 || x == Op::Write as u8);
            let outcome = if result < 0 {
                Err(io::Error::from_raw_os_error(-result))
            } else if transfers && usize::try_from(result).unwrap_or(0) != len {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("short transfer: {result} of {len} bytes"),
                ))
            } else {
                Ok(())
            };
            shared.finish(i, buffers[slot].slice(len), outcome, start);
            free.push(slot);
            in_flight -= 1;
        }
    }
}
