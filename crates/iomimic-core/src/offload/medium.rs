//! Where the off-loading layer keeps bytes: a base volume or a store's log, seen as positioned
//! reads and writes plus a durability barrier. Files and devices implement it in production;
//! the crash tests put an in-memory medium with a fault layer in its place ([`super::fault`]).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Positioned I/O with an explicit durability point. Methods take `&self` so that reclaim
/// workers can read a store while a foreground write appends to it.
pub trait Medium: Send + Sync {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()>;
    /// Everything written before is durable once this returns.
    fn sync(&self) -> Result<()>;
    /// Bytes the medium holds.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// For messages.
    fn name(&self) -> String;
}

/// A regular file or a block device, opened by the caller after the write guard allowed it.
pub struct FileMedium {
    file: File,
    path: PathBuf,
    len: u64,
}

impl FileMedium {
    pub fn new(file: File, path: &Path, len: u64) -> FileMedium {
        FileMedium {
            file,
            path: path.to_path_buf(),
            len,
        }
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn check(&self, n: usize, offset: u64) -> Result<()> {
        if offset.checked_add(n as u64).is_none_or(|end| end > self.len) {
            return Err(Error::Usage(format!(
                "{}: {n} bytes at {offset} reach past its {} bytes",
                self.path.display(),
                self.len
            )));
        }
        Ok(())
    }
}

impl Medium for FileMedium {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.check(buf.len(), offset)?;
        self.file.read_exact_at(buf, offset).map_err(|e| self.io(e))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.check(buf.len(), offset)?;
        self.file.write_all_at(buf, offset).map_err(|e| self.io(e))
    }

    fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| self.io(e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }
}

/// A medium shared with whoever else holds it (a test looking at a store's images).
impl<M: Medium + ?Sized> Medium for std::sync::Arc<M> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        (**self).read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        (**self).write_at(buf, offset)
    }
    fn sync(&self) -> Result<()> {
        (**self).sync()
    }
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn name(&self) -> String {
        (**self).name()
    }
}
