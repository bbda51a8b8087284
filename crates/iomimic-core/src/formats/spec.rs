//! What a trace format declares about itself ([`FormatSpec`]), and [`Format`], the handle the
//! rest of iomimic passes around.
//!
//! Each format's module holds its spec next to its parser, so everything about a format is in
//! one file; [`super::registry`] lists the specs. The reader and detection only ever look at a
//! spec's fields: they know no format by name.

use std::fmt;
use std::hash::{Hash, Hasher};

use super::builder::{Builder, LineError};
use super::{ReadOptions, RecordParser};
use crate::error::Result;

/// How a format's records sit in the file.
#[derive(Clone, Copy)]
pub enum Framing {
    /// Newline-terminated text lines (a `\r` before the newline is dropped, blank lines are
    /// counted as ignored without reaching the parser).
    Lines,
    /// Fixed-size binary records. The function finds the record size from the first bytes of
    /// the file (up to 1 MiB), or says why they are not this format; detection uses it too.
    Binary(fn(head: &[u8]) -> Result<usize, LineError>),
    /// A binary file the core does not read record by record (Parquet, which the Python
    /// package reads): listed and named, never detected nor framed here.
    Whole,
}

/// Builds a format's parser and the builder its rows go into, from the read options; `stem`
/// is the file name without extensions, the volume name of formats that record no device.
/// An `Err` means the options do not describe a usable parser (detection then skips it).
pub type MakeParser = fn(opts: &ReadOptions, stem: &str) -> Result<(Box<dyn RecordParser>, Builder)>;

/// Everything iomimic needs to know about a trace format.
pub struct FormatSpec {
    /// The name `--format` takes and reports show.
    pub name: &'static str,
    /// Other names `--format` accepts, in lower case.
    pub aliases: &'static [&'static str],
    /// One line saying what the format is, for `iomimic formats` and `--help`.
    pub description: &'static str,
    pub framing: Framing,
    /// Whether detection may pick the format, and when it is tried: `None` never (it must be
    /// named); `Some(rank)` in ascending rank among the formats of its framing, the registry's
    /// order breaking ties. The built-in ranks are listed in [`super::registry`].
    pub detect: Option<u16>,
    pub make: MakeParser,
}

/// A trace format: a small copyable handle to its [`FormatSpec`]. Two handles are equal when
/// their formats have the same name (names are unique within a registry).
#[derive(Clone, Copy)]
pub struct Format(&'static FormatSpec);

impl Format {
    pub const fn of(spec: &'static FormatSpec) -> Self {
        Self(spec)
    }

    pub fn spec(self) -> &'static FormatSpec {
        self.0
    }

    /// The name used by `--format` and in reports.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// One line saying what the format is, for `iomimic formats` and `--help`.
    pub fn description(self) -> &'static str {
        self.0.description
    }

    /// True for formats whose records are binary rather than lines.
    pub fn is_binary(self) -> bool {
        !matches!(self.0.framing, Framing::Lines)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Format {}

impl Hash for Format {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Format").field(&self.name()).finish()
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
