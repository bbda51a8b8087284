//! Trace formats: one module per format, a shared streaming driver, and detection by content.
//!
//! Every text format is a [`RecordParser`] fed one line at a time by [`TraceReader`], which reads
//! the (possibly compressed) file in blocks so memory stays bounded by the block plus the columns.

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
mod reader;
mod spc;
mod tencent;
mod vscsi;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

pub use builder::{Builder, LineError, Outcome, Request};
pub use canonical::write_csv;
pub use input::Compression;
pub use reader::{read_trace, TraceReader};

use crate::error::{Error, Result};

/// A trace format iomimic reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Msr,
    Spc,
    Mqsim,
    Disksim,
    VscsiCsv,
    Vscsi,
    Blkparse,
    Fio,
    Alibaba,
    Tencent,
    Generic,
    Csv,
    Parquet,
}

impl Format {
    pub const ALL: [Format; 13] = [
        Format::Msr,
        Format::Spc,
        Format::Mqsim,
        Format::Disksim,
        Format::VscsiCsv,
        Format::Vscsi,
        Format::Blkparse,
        Format::Fio,
        Format::Alibaba,
        Format::Tencent,
        Format::Generic,
        Format::Csv,
        Format::Parquet,
    ];

    /// The name used by `--format` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::Msr => "msr",
            Format::Spc => "spc",
            Format::Mqsim => "mqsim",
            Format::Disksim => "disksim",
            Format::VscsiCsv => "vscsi-csv",
            Format::Vscsi => "vscsi",
            Format::Blkparse => "blkparse",
            Format::Fio => "fio",
            Format::Alibaba => "alibaba",
            Format::Tencent => "tencent",
            Format::Generic => "generic",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
        }
    }

    /// One line saying what the format is, for `iomimic formats` and `--help`.
    pub fn description(self) -> &'static str {
        match self {
            Format::Msr => "MSR Cambridge / SNIA CSV: Timestamp(FILETIME),Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
            Format::Spc => "UMass SPC (Financial, WebSearch): ASU,LBA(sectors),Size(bytes),Opcode,Timestamp(s)",
            Format::Mqsim => "MQSim ASCII: time(ns) device lba(sectors) size(sectors) type(1 read, 0 write)",
            Format::Disksim => "DiskSim ASCII: time(ms) device lba(sectors) size(sectors) type(1 read, 0 write)",
            Format::VscsiCsv => "CloudPhysics vscsi as libCacheSim CSV: version,time(s),op(SCSI hex),size(bytes),lbn(sectors)",
            Format::Vscsi => "CloudPhysics vscsi binary, v1 (32-byte) or v2 (40-byte) little-endian records",
            Format::Blkparse => "blkparse default text: maj,min cpu seq time pid action RWBS sector + nsectors [process]",
            Format::Fio => "fio iolog version 2 (file action offset length; wait N) or 3 (time_us file action offset length)",
            Format::Alibaba => "Alibaba block traces 2020: device_id,opcode(R/W),offset(bytes),length(bytes),timestamp(us)",
            Format::Tencent => "Tencent CBS 2018: Timestamp(s),Offset(sectors),Size(sectors),IOType(0 read, 1 write),VolumeID",
            Format::Generic => "any CSV/TSV/space-separated trace, described by --columns (never detected)",
            Format::Csv => "iomimic canonical CSV (what `iomimic convert -o x.csv` writes)",
            Format::Parquet => "iomimic Parquet (what `iomimic convert -o x.parquet` writes)",
        }
    }

    /// True for formats whose records are fixed-size binary structs rather than lines.
    pub fn is_binary(self) -> bool {
        matches!(self, Format::Vscsi | Format::Parquet)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let wanted = s.trim().to_ascii_lowercase();
        let alias = match wanted.as_str() {
            "snia" | "msrc" => "msr",
            "umass" => "spc",
            "iolog" => "fio",
            "iomimic-csv" | "canonical" => "csv",
            "vscsi-bin" => "vscsi",
            "libcachesim-csv" => "vscsi-csv",
            other => other,
        };
        Format::ALL
            .into_iter()
            .find(|f| f.name() == alias)
            .ok_or_else(|| {
                let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
                Error::Usage(format!(
                    "unknown format {s:?}; known formats: {}",
                    names.join(", ")
                ))
            })
    }
}

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
        fn fork(&self) -> Option<Box<dyn super::RecordParser>> {
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

/// Builds the parser for `format`. `stem` is the file name without extensions, used as the
/// volume name by formats that record no device.
pub(crate) fn make_parser(
    format: Format,
    opts: &ReadOptions,
    stem: &str,
) -> Result<(Box<dyn RecordParser>, Builder)> {
    Ok(match format {
        Format::Msr => (Box::new(msr::MsrParser), Builder::new(true, false)),
        Format::Spc => (Box::new(spc::SpcParser), Builder::new(false, false)),
        Format::Mqsim | Format::Disksim => {
            let default = if format == Format::Mqsim {
                TimeUnit::Ns
            } else {
                TimeUnit::Ms
            };
            let unit = opts.time_unit.unwrap_or(default);
            (
                Box::new(ascii::AsciiParser::new(unit)),
                Builder::new(false, false),
            )
        }
        Format::VscsiCsv => (
            Box::new(vscsi::VscsiCsvParser::new(stem)),
            Builder::new(false, false),
        ),
        Format::Vscsi => (
            Box::new(vscsi::VscsiBinParser::new(stem)),
            Builder::new(true, false),
        ),
        Format::Blkparse => (
            Box::new(blkparse::BlkparseParser::new(opts.blk_event)),
            Builder::new(true, false),
        ),
        Format::Fio => (Box::new(fio::FioParser::default()), Builder::new(false, false)),
        Format::Alibaba => (Box::new(alibaba::AlibabaParser), Builder::new(false, false)),
        Format::Tencent => (Box::new(tencent::TencentParser), Builder::new(false, false)),
        Format::Generic => {
            let spec = opts.columns.as_deref().ok_or_else(|| {
                Error::Usage(
                    "format generic needs --columns, e.g. ts=0:us,offset=1:bytes,size=2:bytes,op=3".into(),
                )
            })?;
            let parser = generic::GenericParser::new(spec, opts.delimiter, opts.time_unit, stem)?;
            let builder = Builder::new(parser.has_latency(), parser.has_file());
            (Box::new(parser), builder)
        }
        Format::Csv => (
            Box::new(canonical::CanonicalParser::default()),
            Builder::new(false, false),
        ),
        Format::Parquet => {
            return Err(Error::Usage(
                "Parquet traces are read by the Python package (iomimic.read_trace), not the core reader"
                    .into(),
            ))
        }
    })
}
