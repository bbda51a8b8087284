//! Trace formats: one module per format, a shared streaming driver, and detection by content.
//!
//! Every text format is a [`RecordParser`] fed one line at a time by [`TraceReader`], which reads
//! the (possibly compressed) file in blocks so memory stays bounded by the block plus the columns.
//! Each format's module declares a [`FormatSpec`] (name, aliases, framing, detection rank, how to
//! build its parser) and [`registry`] lists them; the reader and detection know no format by name.

mod alibaba;
mod ascii;
mod blkparse;
pub mod builder;
mod canonical;
mod detect;
mod fio;
mod generic;
pub mod input;
pub mod lex;
mod msr;
mod parquet;
mod reader;
pub mod registry;
mod spc;
mod spec;
mod tencent;
mod vscsi;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

pub use builder::{Builder, LineError, Outcome, Request};
pub use canonical::{write_csv, write_csv_part};
pub use input::Compression;
pub use reader::{read_trace, Counted, TraceReader};
pub use registry::Registry;
pub use spec::{Format, FormatSpec, Framing, MakeParser};

use crate::error::{Error, Result};
use crate::latency::LatencyUs;

/// Units a time column may be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Ns,
    Us,
    Ms,
    S,
}

impl TimeUnit {
    /// Power of ten from this unit to nanoseconds.
    pub fn exp_to_ns(self) -> u32 {
        match self {
            TimeUnit::Ns => 0,
            TimeUnit::Us => 3,
            TimeUnit::Ms => 6,
            TimeUnit::S => 9,
        }
    }
}

impl FromStr for TimeUnit {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ns" => Ok(TimeUnit::Ns),
            "us" | "µs" => Ok(TimeUnit::Us),
            "ms" => Ok(TimeUnit::Ms),
            "s" | "sec" => Ok(TimeUnit::S),
            _ => Err(Error::Usage(format!(
                "unknown time unit {s:?}; use ns, us, ms or s"
            ))),
        }
    }
}

/// Which blkparse action marks a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlkEvent {
    /// `D`: issued to the device driver (the default; latency is then device time).
    #[default]
    Dispatch,
    /// `Q`: queued by the block layer (latency then includes time in the I/O scheduler).
    Queue,
}

impl FromStr for BlkEvent {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "D" | "d" => Ok(BlkEvent::Dispatch),
            "Q" | "q" => Ok(BlkEvent::Queue),
            _ => Err(Error::Usage(format!(
                "unknown blkparse event {s:?}; use D (dispatch) or Q (queue)"
            ))),
        }
    }
}

/// How to read a trace. `Default` detects the format and stops at the first bad line.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Skip detection and parse as this format.
    pub format: Option<Format>,
    /// The formats detection picks from (the built-in ones by default).
    pub registry: Registry,
    /// Skip and count malformed lines instead of failing on the first.
    pub skip_bad: bool,
    /// Override the time unit of `mqsim`/`disksim` (and the default unit of `generic` times).
    pub time_unit: Option<TimeUnit>,
    /// blkparse: which event is the request.
    pub blk_event: BlkEvent,
    /// generic: the column mapping, e.g. `ts=0:us,offset=4:bytes,size=5:bytes,op=3,volume=1`.
    pub columns: Option<String>,
    /// generic: the field separator; detected from the first line when absent.
    pub delimiter: Option<u8>,
}

/// What reading a file found besides the requests.
#[derive(Debug, Clone, Default)]
pub struct ReadReport {
    pub path: PathBuf,
    pub format: Option<Format>,
    pub compression: Option<Compression>,
    /// Lines (or binary records) read.
    pub records: u64,
    pub requests: u64,
    /// Rows that arrived earlier than the row before them; the trace was stably sorted.
    pub out_of_order: u64,
    /// Time of the first request in the file's own clock, in ns; the trace is relative to it.
    pub start_ns: u64,
    /// Malformed lines skipped under `skip_bad`, by reason.
    pub skipped: BTreeMap<&'static str, u64>,
    /// The first few skipped lines, as `path:line: message`.
    pub skipped_examples: Vec<String>,
    /// Well-formed lines that carry no request (headers, comments, non-I/O events), by reason.
    pub ignored: BTreeMap<&'static str, u64>,
    /// Remarks for the user (e.g. a detection that was a close call).
    pub notes: Vec<String>,
    /// Process names of streams, where the format records them (blkparse's `comm`).
    pub stream_names: BTreeMap<u32, String>,
    /// Response-time phases the format splits (blkparse: `q2d`, `d2c`, `q2c`, as btt).
    pub latency_phases: Vec<(&'static str, LatencyUs)>,
}

impl ReadReport {
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }
}

/// A format's parser: turns one record (a line without its newline, or one binary struct) into
/// at most one request.
pub trait RecordParser: Send {
    fn parse(&mut self, record: &[u8], out: &mut Builder) -> Result<Outcome, LineError>;

    /// Called once after the last record.
    fn finish(&mut self, _out: &mut Builder) {}

    /// A copy that can parse another stretch of the same file on another thread, for formats
    /// whose records are independent of each other; `None` (the default) keeps parsing serial.
    fn fork(&self) -> Option<Box<dyn RecordParser>> {
        None
    }
}

/// `fork` for a parser whose state never changes after construction.
macro_rules! stateless_fork {
    () => {
        fn fork(&self) -> Option<Box<dyn $crate::formats::RecordParser>> {
            Some(Box::new(self.clone()))
        }
    };
}
pub(crate) use stateless_fork;

/// Test helper: parses `lines`, each of which must succeed, and returns the trace built.
#[cfg(test)]
pub(crate) fn parse_ok(
    parser: &mut dyn RecordParser,
    with_latency: bool,
    lines: &[&str],
) -> crate::trace::Trace {
    let mut b = Builder::new(with_latency, false);
    for line in lines {
        parser
            .parse(line.as_bytes(), &mut b)
            .unwrap_or_else(|e| panic!("{line}: {}", e.message));
    }
    b.take()
}
