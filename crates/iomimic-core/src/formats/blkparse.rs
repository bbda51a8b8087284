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
//! - `pid` → `stream`; the process name in brackets at the end of a request's line (blkparse's
//!   `comm`) names the stream (`ReadReport::stream_names`, the first name seen per pid).
//! - `action`: `D` (dispatched to the driver) events are the requests by default; `--event Q`
//!   takes queue events instead. A `C` (complete) event with the same device, sector and length
//!   as an earlier unmatched request gives that request's `latency_ns` (C time − request time);
//!   requests with no completion have unknown latency. `M`/`F` (back/front merge) take the last
//!   queued request of that extent out of the matching: it never dispatches on its own. Other
//!   actions are ignored, counted.
//! - The phases btt reports, matched the same way: Q2D (queued → dispatched: time in the
//!   scheduler), D2C (dispatched → complete: the driver and device) and Q2C (the whole), each a
//!   `LatencyUs` in `ReadReport::latency_phases` over the requests that have both ends.
//! - `RWBS`: `D` (discard) → trim; else `R` → read; else `W` → write, or flush when it moves no
//!   sectors and carries `F`; else `F` → flush; anything else (e.g. `N`) moves no data: ignored.
//! - `sector`, `nsectors`: 512-byte sectors.
//!
//! ## Source
//! blkparse(1) manual, "Default output"; blktrace's `blkparse_fmt.c`.

use std::collections::{HashMap, VecDeque};

use crate::latency::LatencyUs;

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

/// A device extent: (volume, sector, nsectors).
type Extent = (u32, u64, u64);

/// One request on its way through the block layer.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// Its row, once the chosen event has made it a request.
    row: Option<usize>,
    queued_ns: Option<u64>,
    dispatched_ns: Option<u64>,
}

pub struct BlkparseParser {
    event: &'static [u8],
    /// Queued requests not yet dispatched, by extent, oldest first.
    queued: HashMap<Extent, VecDeque<InFlight>>,
    /// Dispatched requests awaiting their completion, by extent, oldest first.
    dispatched: HashMap<Extent, VecDeque<InFlight>>,
    /// Q2D, D2C and Q2C times in ns of the requests that have both ends.
    q2d: Vec<u64>,
    d2c: Vec<u64>,
    q2c: Vec<u64>,
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
            queued: HashMap::new(),
            dispatched: HashMap::new(),
            q2d: Vec::new(),
            d2c: Vec::new(),
            q2c: Vec::new(),
            in_summary: false,
        }
    }

    /// The completion `C` at `ts_ns` of the oldest request in flight on `extent`.
    fn complete(&mut self, extent: Extent, ts_ns: u64, out: &mut Builder) -> Outcome {
        // a request traced without its D (some captures keep only Q and C) completes from the queue
        let Some(req) =
            pop_front(&mut self.dispatched, extent).or_else(|| pop_front(&mut self.queued, extent))
        else {
            return Outcome::Ignored("unmatched_completion");
        };
        if let Some(q) = req.queued_ns {
            self.q2c.push(ts_ns.saturating_sub(q));
        }
        if let Some(d) = req.dispatched_ns {
            self.d2c.push(ts_ns.saturating_sub(d));
        }
        let issued = if self.event == b"Q" {
            req.queued_ns
        } else {
            req.dispatched_ns
        };
        if let (Some(row), Some(issued), Some(latency)) = (req.row, issued, out.trace.latency_ns.as_mut()) {
            latency[row] = ts_ns.saturating_sub(issued);
        }
        Outcome::Ignored("completion")
    }
}

fn pop_front(map: &mut HashMap<Extent, VecDeque<InFlight>>, extent: Extent) -> Option<InFlight> {
    let queue = map.get_mut(&extent)?;
    let front = queue.pop_front();
    if queue.is_empty() {
        map.remove(&extent);
    }
    front
}

/// The process name blkparse prints in brackets at the end of a line, if any.
fn process_name(line: &[u8]) -> Option<&[u8]> {
    let end = memchr::memrchr(b']', line)?;
    let start = memchr::memrchr(b'[', &line[..end])?;
    let name = line[start + 1..end].trim_ascii();
    (!name.is_empty()).then_some(name)
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
        if !matches!(action, b"Q" | b"D" | b"C" | b"M" | b"F") {
            return Ok(Outcome::Ignored("other_action"));
        }
        let ts_ns = lex::scaled_decimal(f[3], 9, "time")?;
        let (sector, sectors) = if n >= 10 && f[8] == b"+" {
            (lex::u64_field(f[7], "sector")?, lex::u64_field(f[9], "nsectors")?)
        } else {
            (0, 0)
        };
        let volume = out.volumes.intern(f[0]);
        let extent = (volume, sector, sectors);
        match action {
            b"C" => return Ok(self.complete(extent, ts_ns, out)),
            // merged into another request: it will not dispatch or complete on its own
            b"M" | b"F" => {
                if let Some(queue) = self.queued.get_mut(&extent) {
                    queue.pop_back();
                    if queue.is_empty() {
                        self.queued.remove(&extent);
                    }
                }
                return Ok(Outcome::Ignored("merge"));
            }
            _ => {}
        }
        let mut req = if action == b"D" {
            pop_front(&mut self.queued, extent).unwrap_or(InFlight {
                row: None,
                queued_ns: None,
                dispatched_ns: None,
            })
        } else {
            InFlight {
                row: None,
                queued_ns: None,
                dispatched_ns: None,
            }
        };
        let outcome = if is_request {
            Self::push_request(&f, line, extent, ts_ns, out, &mut req)?
        } else {
            Outcome::Ignored("other_action")
        };
        if action == b"Q" {
            req.queued_ns = Some(ts_ns);
            self.queued.entry(extent).or_default().push_back(req);
        } else {
            req.dispatched_ns = Some(ts_ns);
            if let Some(q) = req.queued_ns {
                self.q2d.push(ts_ns.saturating_sub(q));
            }
            self.dispatched.entry(extent).or_default().push_back(req);
        }
        Ok(outcome)
    }

    fn finish(&mut self, out: &mut Builder) {
        for (name, times) in [
            ("q2d_us", &mut self.q2d),
            ("d2c_us", &mut self.d2c),
            ("q2c_us", &mut self.q2c),
        ] {
            if let Some(figures) = LatencyUs::from_ns(times) {
                out.latency_phases.push((name, figures));
            }
        }
    }
}

impl BlkparseParser {
    /// Adds the request this event makes (when its RWBS moves data or flushes) and names its
    /// stream after the process.
    fn push_request(
        f: &[&[u8]; 10],
        line: &[u8],
        extent: Extent,
        ts_ns: u64,
        out: &mut Builder,
        req: &mut InFlight,
    ) -> Result<Outcome, LineError> {
        let (volume, sector, sectors) = extent;
        let Some(op) = classify(f[6], sectors) else {
            return Ok(Outcome::Ignored("no_data"));
        };
        let offset = lex::to_bytes(sector, 512, "sector")?;
        let size = lex::to_bytes(sectors, 512, "nsectors")?;
        let pid = lex::u64_field(f[4], "pid")?;
        let mut r = Request::new(ts_ns, offset, size, op, volume);
        r.stream = u32::try_from(pid)
            .map_err(|_| LineError::new("number_too_large", format!("pid {pid} is too large")))?;
        r.latency_ns = LATENCY_UNKNOWN;
        req.row = Some(out.len());
        out.push(r)?;
        if let Some(name) = process_name(line) {
            out.stream_names
                .entry(r.stream)
                .or_insert_with(|| String::from_utf8_lossy(name).into_owned());
        }
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
    fn process_names_and_btt_phases() {
        let (mut b, mut p) = (Builder::new(true, false), BlkparseParser::new(BlkEvent::Dispatch));
        // two requests queued by `dd`; a third merges into the first; the C of the second
        // comes before the first's; an unqueued D (no Q) still gets its D2C
        let lines = "  8,0 0 1 0.000000000 100 Q R 0 + 8 [dd]
  8,0 0 2 0.000001000 100 Q R 8 + 8 [dd]
  8,0 0 3 0.000002000 100 Q R 16 + 8 [dd]
  8,0 0 4 0.000002000 100 M R 16 + 8 [dd]
  8,0 0 5 0.000010000 100 D R 0 + 8 [dd]
  8,0 0 6 0.000030000 100 D R 8 + 8 [dd]
  8,0 0 7 0.000100000 0 C R 8 + 8 [0]
  8,0 0 8 0.000200000 0 C R 0 + 8 [0]
  8,0 1 9 0.000300000 7 D W 64 + 8 [kworker/1:2 x]
  8,0 1 10 0.000350000 0 C W 64 + 8 [0]
";
        for l in lines.lines() {
            p.parse(l.as_bytes(), &mut b).unwrap();
        }
        p.finish(&mut b);
        assert_eq!(b.stream_names.get(&100).map(String::as_str), Some("dd"));
        assert_eq!(b.stream_names.get(&7).map(String::as_str), Some("kworker/1:2 x"));
        let phase = |name: &str| b.latency_phases.iter().find(|(n, _)| *n == name).unwrap().1;
        // Q2D: 10 and 29 µs; D2C: 190, 70 and 50 µs; Q2C: 200 and 99 µs
        assert_eq!(
            (phase("q2d_us").count, phase("q2d_us").mean, phase("q2d_us").p.max),
            (2, 19.5, 29.0)
        );
        assert_eq!(
            (phase("d2c_us").count, phase("d2c_us").mean),
            (3, (190.0 + 70.0 + 50.0) / 3.0)
        );
        assert_eq!((phase("q2c_us").count, phase("q2c_us").p.max), (2, 200.0));
        let t = b.take();
        assert_eq!(t.latency_ns.unwrap(), [190_000, 70_000, 50_000]);
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
