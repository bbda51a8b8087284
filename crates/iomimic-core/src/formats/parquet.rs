//! iomimic's Parquet traces: listed and named here, read by the Python package.
//!
//! ## Format
//! Apache Parquet, one column per Trace column with its type, zstd-compressed; the name tables
//! are JSON in the schema metadata under the key `iomimic`
//! (`{"version": 1, "volumes": [...], "files": [...]}`). What `iomimic convert -o x.parquet`
//! writes.
//!
//! ## Fields
//! As the Trace: `ts_ns` and `latency_ns` in ns (null latency is unknown), `offset` and `size`
//! in bytes, `op` 0 read, 1 write, 2 trim, 3 flush; `volume` and `file` are ids into the name
//! tables.
//!
//! ## Source
//! iomimic's own, on the Apache Parquet file format. The core reader does not parse it: the
//! Python package reads it with pyarrow (`iomimic.read_trace`) and recognises it by its magic
//! bytes, so it is never detected here.

use super::spec::{FormatSpec, Framing};
use crate::error::Error;

pub(crate) const FORMAT: FormatSpec = FormatSpec {
    name: "parquet",
    aliases: &[],
    description: "iomimic Parquet (what `iomimic convert -o x.parquet` writes)",
    framing: Framing::Whole,
    detect: None,
    make: |_, _| {
        Err(Error::Usage(
            "Parquet traces are read by the Python package (iomimic.read_trace), not the core reader".into(),
        ))
    },
};
