//! Opening a trace file: transparent gzip/zstd decompression and a count of raw bytes consumed.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{CorruptData, Error, Result};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// Skippable zstd frames (pzstd writes one first) have magics 0x184D2A50..=0x184D2A5F, stored
/// little-endian: a first byte 0x5_, then 0x2A 0x4D 0x18.
const SKIPPABLE_MAGIC_TAIL: [u8; 3] = [0x2a, 0x4d, 0x18];

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
    } else if head.starts_with(&ZSTD_MAGIC) || is_skippable_frame(head) {
        Compression::Zstd
    } else {
        Compression::None
    };
    let reader: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(buffered),
        // MultiGzDecoder: `cat a.gz b.gz` and bgzip files are several members back to back.
        Compression::Gzip => Box::new(Corrupt::new(
            "gzip",
            flate2::bufread::MultiGzDecoder::new(buffered),
        )),
        Compression::Zstd => Box::new(Corrupt::new("zstd", ZstdFrames::new(buffered))),
    };
    Ok(Input {
        reader,
        compression,
        file_bytes: meta.len(),
        consumed,
    })
}

fn is_skippable_frame(head: &[u8]) -> bool {
    head.len() >= 4 && head[0] & 0xf0 == 0x50 && head[1..4] == SKIPPABLE_MAGIC_TAIL
}

/// Marks a decompressor's errors as damage to the file (bad input), not a failing system.
/// An error of the file itself passes through a decompressor with its own kind (not
/// `InvalidData`/`InvalidInput`/`UnexpectedEof`, which decoders use), so it stays an I/O error.
struct Corrupt<R> {
    compression: &'static str,
    inner: R,
}

impl<R> Corrupt<R> {
    fn new(compression: &'static str, inner: R) -> Self {
        Self { compression, inner }
    }
}

impl<R: Read> Read for Corrupt<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::ErrorKind::{InvalidData, InvalidInput, UnexpectedEof};
        self.inner.read(buf).map_err(|e| {
            if matches!(e.kind(), InvalidData | InvalidInput | UnexpectedEof) {
                let message = match e.kind() {
                    // (after a complete member, a few bytes that start no other read the same)
                    UnexpectedEof => format!(
                        "the file ends inside compressed data (truncated, or a few bytes that are \
                         not {} follow the data): {e}",
                        self.compression
                    ),
                    _ => e.to_string(),
                };
                std::io::Error::new(
                    InvalidData,
                    CorruptData {
                        compression: self.compression,
                        message,
                    },
                )
            } else {
                e
            }
        })
    }
}

/// Every frame of a zstd stream in turn, as `zstd -d` reads them: concatenated frames
/// (`cat a.zst b.zst`, or a compressor writing a frame per chunk) are all read, skippable
/// frames (pzstd's index) are stepped over, and a truncated frame, a bad content checksum or
/// bytes after the last frame that are no frame are errors rather than a silent end.
/// (ruzstd's streaming reader decodes one frame and stops, so the frames are driven here.)
struct ZstdFrames<R: BufRead> {
    source: R,
    frame: ruzstd::decoding::FrameDecoder,
    in_frame: bool,
}

/// A decoder error as the damage it means: a file cut short inside a frame says so.
fn bad_zstd(e: impl std::error::Error + 'static) -> std::io::Error {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    let mut truncated = format!("{e:?}").contains("UnexpectedEof");
    while let Some(c) = cause {
        truncated |= c
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof);
        cause = c.source();
    }
    let message = if truncated {
        "the file ends inside a frame (truncated?)".to_string()
    } else {
        e.to_string()
    };
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// A damage found here rather than by the decoder.
fn bad_zstd_text(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

impl<R: BufRead> ZstdFrames<R> {
    fn new(source: R) -> Self {
        Self {
            source,
            frame: ruzstd::decoding::FrameDecoder::new(),
            in_frame: false,
        }
    }

    /// Starts the next frame, stepping over skippable ones; `false` at a clean end of input.
    fn next_frame(&mut self) -> std::io::Result<bool> {
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        loop {
            if self.source.fill_buf()?.is_empty() {
                return Ok(false);
            }
            match self.frame.reset(&mut self.source) {
                Ok(()) => {
                    self.in_frame = true;
                    return Ok(true);
                }
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let length = u64::from(length);
                    let skipped = std::io::copy(&mut (&mut self.source).take(length), &mut std::io::sink())?;
                    if skipped < length {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "a skippable frame is cut short",
                        ));
                    }
                }
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::BadMagicNumber(magic))) => {
                    return Err(bad_zstd_text(format!(
                        "bytes after a complete frame are not another zstd frame (magic {magic:#010x})"
                    )))
                }
                Err(e) => return Err(bad_zstd(e)),
            }
        }
    }
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use ruzstd::decoding::BlockDecodingStrategy;
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                while self.frame.can_collect() == 0 && !self.frame.is_finished() {
                    self.frame
                        .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                        .map_err(bad_zstd)?;
                }
                let n = self.frame.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                if let (Some(stored), Some(computed)) = (
                    self.frame.get_checksum_from_data(),
                    self.frame.get_calculated_checksum(),
                ) {
                    if stored != computed {
                        return Err(bad_zstd_text(format!(
                            "a frame's content checksum is wrong (stored {stored:#010x}, computed {computed:#010x})"
                        )));
                    }
                }
                self.in_frame = false;
            }
            if !self.next_frame()? {
                return Ok(0);
            }
        }
    }
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
