//! Text output of `blkparse` (blktrace's formatter) in its default layout.
//!
//! ## Format
//! `maj,min cpu seq time pid action RWBS [sector + nsectors] [process]`, e.g.
//! `  8,0    3        1     0.000000000   697  D   W 223490 + 8 [kjournald]`.
//! The per-CPU and total summaries blkparse prints at the end are recognised and ignored.
//!
//! ## Fields
//! - `maj,min` → volume, named `maj,min`.
//! - `time`: seconds, decimal → `ts_ns`.
//! - `pid` → `stream`.
//! - `action`: `D` (dispatched to the driver) events are the requests by default; `--event Q`
//!   takes queue events instead. A `C` (complete) event with the same device, sector and length
//!   as an earlier unmatched request gives that request's `latency_ns` (C time − request time);
//!   requests with no completion have unknown latency. Other actions are ignored, counted.
//! - `RWBS`: `D` (discard) → trim; else `R` → read; else `W` → write, or flush when it moves no
//!   sectors and carries `F`; else `F` → flush; anything else (e.g. `N`) moves no data: ignored.
//! - `sector`, `nsectors`: 512-byte sectors.
//!
//! ## Source
//! blkparse(1) manual, "Default output"; blktrace's `blkparse_fmt.c`.

use std::collections::{HashMap, VecDeque};

use super::builder::{Builder, LineError, Outcome, Request};
use super::spec::{FormatSpec, Framing};
use super::{lex, BlkEvent};
use crate::trace::{Op, LATENCY_UNKNOWN};

pub(crate) const FORMAT: FormatSpec = FormatSpec {
    name: "blkparse",
    aliases: &[],
    description: "blkparse default text: maj,min cpu seq time pid action RWBS sector + nsectors [process]",
    framing: Framing::Lines,
    detect: Some(40),
    make: |opts, _| {
        Ok((
            Box::new(BlkparseParser::new(opts.blk_event)),
            Builder::new(true, false),
        ))
    },
};

pub struct BlkparseParser {
    event: &'static [u8],
    /// Requests awaiting their completion, by (volume, sector, nsectors): (row, issue time).
    pending: HashMap<(u32, u64, u64), VecDeque<(usize, u64)>>,
    in_summary: bool,
}

impl BlkparseParser {
    pub fn new(event: BlkEvent) -> Self {
        let event: &'static [u8] = match event {
            BlkEvent::Dispatch => b"D",
            BlkEvent::Queue => b"Q",
        };
        Self {
            event,
            pending: HashMap::new(),
            in_summary: false,
        }
    }
}

fn classify(rwbs: &[u8], sectors: u64) -> Option<Op> {
    let has = |c: u8| rwbs.contains(&c);
    if has(b'D') {
        Some(Op::Trim)
    } else if has(b'R') {
        Some(Op::Read)
    } else if has(b'W') {
        Some(if sectors == 0 && has(b'F') {
            Op::Flush
        } else {
            Op::Write
        })
    } else if has(b'F') {
        Some(Op::Flush)
    } else {
        None
    }
}

fn is_device(field: &[u8]) -> bool {
    match memchr::memchr(b',', field) {
        Some(i) => {
            let (maj, min) = (&field[..i], &field[i + 1..]);
            !maj.is_empty() && !min.is_empty() && maj.iter().chain(min).all(u8::is_ascii_digit)
        }
        None => false,
    }
}

impl super::RecordParser for BlkparseParser {
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let mut f = [&b""[..]; 10];
        let n = lex::split_whitespace(line, &mut f);
        if !is_device(f[0]) {
            if self.in_summary || [&b"CPU"[..], b"Total"].iter().any(|p| f[0].starts_with(p)) {
                self.in_summary = true;
                return Ok(Outcome::Ignored("summary"));
            }
            return Err(LineError::new(
                "bad_device",
                format!(
                    "expected a device maj,min first, found {:?}",
                    String::from_utf8_lossy(f[0])
                ),
            ));
        }
        self.in_summary = false;
        lex::expect_fields(n, 7, true)?;
        let action = f[5];
        let is_request = action == self.event;
        let is_completion = action == b"C";
        if !is_request && !is_completion {
            return Ok(Outcome::Ignored("other_action"));
        }
        let ts_ns = lex::scaled_decimal(f[3], 9, "time")?;
        let (sector, sectors) = if n >= 10 && f[8] == b"+" {
            (lex::u64_field(f[7], "sector")?, lex::u64_field(f[9], "nsectors")?)
        } else {
            (0, 0)
        };
        let volume = out.volumes.intern(f[0]);
        if is_completion {
            let Some(queue) = self.pending.get_mut(&(volume, sector, sectors)) else {
                return Ok(Outcome::Ignored("unmatched_completion"));
            };
            let (row, issued) = queue.pop_front().expect("queues are removed when empty");
            if queue.is_empty() {
                self.pending.remove(&(volume, sector, sectors));
            }
            if let Some(latency) = out.trace.latency_ns.as_mut() {
                latency[row] = ts_ns.saturating_sub(issued);
            }
            return Ok(Outcome::Ignored("completion"));
        }
        let Some(op) = classify(f[6], sectors) else {
            return Ok(Outcome::Ignored("no_data"));
        };
        let offset = lex::to_bytes(sector, 512, "sector")?;
        let size = lex::to_bytes(sectors, 512, "nsectors")?;
        let pid = lex::u64_field(f[4], "pid")?;
        let mut req = Request::new(ts_ns, offset, size, op, volume);
        req.stream = u32::try_from(pid)
            .map_err(|_| LineError::new("number_too_large", format!("pid {pid} is too large")))?;
        req.latency_ns = LATENCY_UNKNOWN;
        let row = out.len();
        out.push(req)?;
        self.pending
            .entry((volume, sector, sectors))
            .or_default()
            .push_back((row, ts_ns));
        Ok(Outcome::Request)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Builder, RecordParser};
    use super::*;

    const SAMPLE: &str = "  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]
  8,0    3        2     0.000001000   697  D   W 223490 + 8 [kjournald]
  8,0    0        0     0.000002000     0  m   N cfq697 dispatched
  8,16   1        3     0.000010000   812  D   R 1000 + 16 [cat]
  8,0    3        4     0.000412000     0  C   W 223490 + 8 [0]
  8,16   1        5     0.000020000   812  D  DS 2048 + 2048 [fstrim]
  8,16   1        6     0.000030000   812  D FWS [sync]
CPU0 (8,0):
 Reads Queued:           0,        0KiB	 Writes Queued:           1,        4KiB
";

    fn parse_all(event: BlkEvent) -> (crate::trace::Trace, Vec<Outcome>) {
        let mut b = Builder::new(true, false);
        let mut p = BlkparseParser::new(event);
        let outcomes = SAMPLE
            .lines()
            .map(|l| p.parse(l.as_bytes(), &mut b).unwrap())
            .collect();
        (b.take(), outcomes)
    }

    #[test]
    fn dispatches_are_requests_and_completions_give_latency() {
        let (t, outcomes) = parse_all(BlkEvent::Dispatch);
        assert_eq!(t.ts_ns, [1000, 10_000, 20_000, 30_000]);
        assert_eq!(t.op, [1, 0, 2, 3]);
        assert_eq!(t.offset, [223_490 * 512, 512_000, 2048 * 512, 0]);
        assert_eq!(t.size, [4096, 8192, 1 << 20, 0]);
        assert_eq!(t.stream, [697, 812, 812, 812]);
        assert_eq!(t.volumes, ["8,0", "8,16"]);
        let lat = t.latency_ns.unwrap();
        assert_eq!(lat[0], 411_000);
        assert_eq!(lat[1], LATENCY_UNKNOWN);
        assert_eq!(outcomes[7], Outcome::Ignored("summary"));
        assert_eq!(outcomes[8], Outcome::Ignored("summary"));
    }

    #[test]
    fn queue_events_on_request() {
        let (t, _) = parse_all(BlkEvent::Queue);
        assert_eq!(t.ts_ns, [0]);
        assert_eq!(t.latency_ns.unwrap(), [412_000]);
    }

    #[test]
    fn garbage_is_an_error() {
        let mut b = Builder::new(true, false);
        let e = BlkparseParser::new(BlkEvent::Dispatch)
            .parse(b"hello world", &mut b)
            .unwrap_err();
        assert_eq!(e.key, "bad_device");
    }
}
