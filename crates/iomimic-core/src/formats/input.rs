//! Opening a trace file: transparent gzip/zstd decompression and a count of raw bytes consumed.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// How the bytes on disk are wrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// Counts bytes read from the underlying file, so progress can be shown against its size even
/// when the content is decompressed on the way.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// An open trace file yielding decompressed bytes.
pub struct Input {
    pub reader: Box<dyn Read + Send>,
    pub compression: Compression,
    pub file_bytes: u64,
    pub consumed: Arc<AtomicU64>,
}

/// Opens `path`, recognising compression by its magic bytes rather than its name.
pub fn open(path: &Path) -> Result<Input> {
    let io_err = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if meta.is_dir() {
        return Err(io_err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    let consumed = Arc::new(AtomicU64::new(0));
    let counting = Counting {
        inner: file,
        count: Arc::clone(&consumed),
    };
    let mut buffered = BufReader::with_capacity(1 << 16, counting);
    let head = buffered.fill_buf().map_err(io_err)?;
    let compression = if head.starts_with(&GZIP_MAGIC) {
        Compression::Gzip
    } else if head.starts_with(&ZSTD_MAGIC) {
        Compression::Zstd
    } else {
        Compression::None
    };
    let reader: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(buffered),
        // MultiGzDecoder: `cat a.gz b.gz` and bgzip files are several members back to back.
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(buffered)),
        Compression::Zstd => Box::new(
            ruzstd::decoding::StreamingDecoder::new(buffered)
                .map_err(|e| Error::Usage(format!("{}: not a readable zstd stream: {e}", path.display())))?,
        ),
    };
    Ok(Input {
        reader,
        compression,
        file_bytes: meta.len(),
        consumed,
    })
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
pub fn read_full(reader: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
