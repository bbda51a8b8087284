//! The one error type of the core crate.

use std::path::PathBuf;

/// Everything that can go wrong in the core. Each message names where and what.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A record of a trace file is malformed. `line` is 1-based (a record number for binary
    /// formats, named by `unit`).
    #[error("{path}:{line}: {message}")]
    Parse {
        path: PathBuf,
        line: u64,
        key: &'static str,
        message: String,
    },
    /// A compressed file whose data is damaged or cut short.
    #[error("{path}: {message}")]
    Corrupt { path: PathBuf, message: String },
    /// No format's parser accepted the start of the file.
    #[error("{path}: no known trace format matches; tried {tried}. Name one with `format`")]
    UnknownFormat { path: PathBuf, tried: String },
    /// The file holds no request at all.
    #[error("{path}: no requests found ({why})")]
    Empty { path: PathBuf, why: String },
    /// The caller asked the work to stop (Ctrl-C) before it was done.
    #[error("interrupted")]
    Interrupted,
    /// Options that cannot work together or cannot be parsed (e.g. a `--columns` spec).
    #[error("{0}")]
    Usage(String),
}

impl Error {
    /// An error met while reading `path`: damaged compressed data is the file's fault (bad
    /// input), anything else the system's.
    pub fn reading(path: &std::path::Path, source: std::io::Error) -> Error {
        let corrupt = source
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<CorruptData>())
            .map(ToString::to_string);
        match corrupt {
            Some(message) => Error::Corrupt {
                path: path.to_path_buf(),
                message,
            },
            None => Error::Io {
                path: path.to_path_buf(),
                source,
            },
        }
    }

    /// True when the user's input (a file or an option) is at fault rather than the system.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Error::Io { .. } | Error::Interrupted)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Decompressed data that turned out damaged, as a decompressor reports it inside an
/// `io::Error`: [`Error::Corrupt`] once it reaches the reader ([`Error::reading`]).
#[derive(Debug)]
pub struct CorruptData {
    pub compression: &'static str,
    pub message: String,
}

impl std::fmt::Display for CorruptData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "damaged {} data: {}", self.compression, self.message)
    }
}

impl std::error::Error for CorruptData {}
