//! The write guard: what real I/O may touch. Every target the engine opens passes through here,
//! whoever calls it (the CLI, the Python API, a Rust caller, the fio exporter).
//!
//! The rules:
//! - a target that does not exist is created (at `size`), laid out with data, and marked as
//!   iomimic's;
//! - an existing regular file is written only when iomimic created it (its mark is bound to that
//!   very file) or `overwrite` is set;
//! - a block device needs `allow_device`, and is refused while anything uses it: mounted (in any
//!   mount namespace), swap, a holder built on it (LVM, RAID, dm-crypt), or open exclusively by
//!   another program. The kernel is the judge of "in use": the device is opened with `O_EXCL`,
//!   which it refuses (EBUSY) for any mounted or claimed device; the checks of sysfs, swap and
//!   mountinfo only make the message say why.
//!
//! Messages name the API's parameters in backquotes (`allow_device`); the CLI shows its flags.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// What the caller allows beyond the safe default.
#[derive(Debug, Clone, Copy, Default)]
#[allow(clippy::struct_excessive_bools)] // independent permissions, one per API parameter
pub struct Access {
    /// The workload writes.
    pub write: bool,
    /// Block devices may be used (never one in use).
    pub allow_device: bool,
    /// Existing files iomimic did not create may be written.
    pub overwrite: bool,
    /// Open with O_DIRECT.
    pub direct: bool,
}

/// What a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Device,
}

/// A target checked (and, if it was missing, created) under the rules.
#[derive(Debug, Clone)]
pub struct Checked {
    pub path: PathBuf,
    pub kind: Kind,
    /// Bytes requests may use: `size` where given, else the whole file or device.
    pub usable: u64,
    /// Created by this call.
    pub created: bool,
}

/// The extended attribute that marks a file iomimic created (bound to the inode itself).
const MARK_XATTR: &str = "user.iomimic.created";
/// Bytes written per call while laying a file out.
const LAYOUT_CHUNK: usize = 4 << 20;

fn guard_error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{}: {message}", path.display()))
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks `path` against the rules for `access`; creates and lays it out when it is missing
/// (which needs `size`). `needed` is how far the workload reaches, for the messages. `stop`
/// ends a long lay-out early (the half-made file is removed).
pub fn check(
    path: &Path,
    needed: u64,
    size: Option<u64>,
    access: Access,
    stop: &AtomicBool,
) -> Result<Checked> {
    if size == Some(0) {
        return Err(guard_error(path, "`size` must be positive"));
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return create(path, needed, size, stop);
        }
        Err(e) => return Err(io_error(path, e)),
    };
    let kind = if meta.file_type().is_block_device() {
        Kind::Device
    } else if meta.is_file() {
        Kind::File
    } else {
        return Err(guard_error(path, "not a regular file or a block device"));
    };
    let have = match kind {
        Kind::Device => {
            if !access.allow_device {
                return Err(guard_error(
                    path,
                    "is a block device; set `allow_device` to run against it",
                ));
            }
            let file = open_device(path, false)?;
            device_bytes(&file).map_err(|e| io_error(path, e))?
        }
        Kind::File => {
            let ours = created_by_iomimic(path);
            if access.write && !access.overwrite && !ours {
                return Err(guard_error(
                    path,
                    "exists and iomimic did not create it; the workload writes, so set `overwrite` \
                     to let it write there",
                ));
            }
            let have = meta.len();
            match size {
                Some(size) if have < size => {
                    if !(access.overwrite || ours) {
                        return Err(guard_error(
                            path,
                            format!("holds {have} bytes, less than `size` {size}"),
                        ));
                    }
                    grow(path, have, size, stop)?;
                    size
                }
                _ => have,
            }
        }
    };
    let usable = size.map_or(have, |s| s.min(have));
    if usable == 0 {
        return Err(guard_error(path, "has no room for requests (size 0)"));
    }
    Ok(Checked {
        path: path.to_path_buf(),
        kind,
        usable,
        created: false,
    })
}

/// Opens a checked target for the run.
pub fn open(checked: &Checked, access: Access) -> Result<File> {
    match checked.kind {
        Kind::Device => open_device(&checked.path, access.write).and_then(|f| {
            if access.direct {
                // O_EXCL and O_DIRECT together: reopen with both
                drop(f);
                open_with(&checked.path, access.write, libc::O_EXCL | libc::O_DIRECT)
            } else {
                Ok(f)
            }
        }),
        Kind::File => open_with(
            &checked.path,
            access.write,
            if access.direct { libc::O_DIRECT } else { 0 },
        ),
    }
}

fn open_with(path: &Path, write: bool, flags: i32) -> Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(write).custom_flags(flags);
    options.open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::EINVAL) if flags & libc::O_DIRECT != 0 => guard_error(
            path,
            "the file system refuses O_DIRECT (`direct`); run without it or on another file system",
        ),
        Some(libc::EBUSY) => in_use_error(path),
        _ => io_error(path, e),
    })
}

/// Opens a block device exclusively: the kernel refuses (EBUSY) one that is mounted, swap, held
/// by another device or opened exclusively elsewhere, whatever the mount namespace.
fn open_device(path: &Path, write: bool) -> Result<File> {
    if let Some(why) = in_use(path) {
        return Err(guard_error(
            path,
            format!("{why}; iomimic never runs against a device in use"),
        ));
    }
    open_with(path, write, libc::O_EXCL)
}

fn in_use_error(path: &Path) -> Error {
    guard_error(
        path,
        "is in use (mounted, perhaps in another mount namespace such as a container's, or held \
         by another program); iomimic never runs against a device in use",
    )
}

fn device_bytes(file: &File) -> std::io::Result<u64> {
    use std::io::Seek;
    let mut f = file;
    f.seek(std::io::SeekFrom::End(0))
}

/// Why a block device is in use, from what the system shows (this namespace's mounts, swap,
/// sysfs holders); `None` when nothing shows. The exclusive open decides in the end.
fn in_use(device: &Path) -> Option<String> {
    let rdev = std::fs::metadata(device).ok()?.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let sysfs = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let mut ours = vec![(major, minor)];
    if let Ok(entries) = std::fs::read_dir(sysfs.canonicalize().unwrap_or_else(|_| sysfs.clone())) {
        for part in entries.flatten().map(|e| e.path()) {
            if part.join("partition").exists() {
                if let Some(dev) = read_dev_numbers(&part.join("dev")) {
                    ours.push(dev);
                }
                if has_entries(&part.join("holders")) {
                    let name = part.file_name().map(|n| n.to_string_lossy().into_owned());
                    return Some(format!(
                        "its partition {} is in use by another device",
                        name.unwrap_or_default()
                    ));
                }
            }
        }
    }
    if has_entries(&sysfs.join("holders")) {
        return Some("another device (LVM, RAID, dm-crypt) is built on it".into());
    }
    let is_ours = |dev: u64| ours.contains(&(libc::major(dev), libc::minor(dev)));
    if let Ok(swaps) = std::fs::read_to_string("/proc/swaps") {
        for line in swaps.lines().skip(1) {
            let Some(name) = line.split_whitespace().next() else {
                continue;
            };
            if std::fs::metadata(name).is_ok_and(|m| is_ours(m.rdev())) {
                return Some("it (or a partition of it) is swap space".into());
            }
        }
    }
    if let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in mounts.lines() {
            let Some(numbers) = line.split_whitespace().nth(2) else {
                continue;
            };
            let Some((a, b)) = numbers.split_once(':') else {
                continue;
            };
            if let (Ok(a), Ok(b)) = (a.parse(), b.parse()) {
                if ours.contains(&(a, b)) {
                    return Some("it (or a partition of it) is mounted".into());
                }
            }
        }
    }
    None
}

fn read_dev_numbers(path: &Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(path).ok()?;
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn has_entries(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some())
}

/// Creates a missing target at `size`, lays it out and marks it; removes it on any failure.
fn create(path: &Path, needed: u64, size: Option<u64>, stop: &AtomicBool) -> Result<Checked> {
    let Some(size) = size else {
        return Err(guard_error(
            path,
            format!(
                "does not exist; give `size` to create it (the workload reaches {needed} bytes; \
                 offsets past `size` fold into it)"
            ),
        ));
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    let made = lay_out(&file, path, 0, size, stop).and_then(|()| mark_created(path, &file));
    if let Err(e) = made {
        drop(file);
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(sidecar(path));
        return Err(e);
    }
    Ok(Checked {
        path: path.to_path_buf(),
        kind: Kind::File,
        usable: size,
        created: true,
    })
}

/// Extends a file of iomimic's (or one `overwrite` allows) to `size`, laying out the new part.
fn grow(path: &Path, from: u64, size: u64, stop: &AtomicBool) -> Result<()> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    if let Err(e) = lay_out(&file, path, from, size, stop) {
        // give back whatever was reserved or written past the old end
        let _ = file.set_len(from);
        return Err(e);
    }
    if created_by_iomimic(path) {
        // a sidecar mark records the size: keep it true
        mark_created(path, &file)?;
    }
    Ok(())
}

/// Writes `[from, to)` of `file` once, as fio lays out its files: preallocated but unwritten
/// space reads back as zeros without touching the device, which would make reads look free.
/// The data is pseudo-random, so no layer can compress or deduplicate it away. Space is
/// reserved first, so a size past the free space is refused before anything is written.
fn lay_out(file: &File, path: &Path, from: u64, to: u64, stop: &AtomicBool) -> Result<()> {
    use std::os::fd::AsRawFd;
    let len = to - from;
    let (Ok(offset), Ok(length)) = (libc::off_t::try_from(from), libc::off_t::try_from(len)) else {
        return Err(guard_error(path, format!("`size` {to} is too large")));
    };
    let free = free_bytes(file);
    if free.is_some_and(|free| len > free) {
        return Err(guard_error(
            path,
            format!(
                "`size` {to} bytes needs {len} more, and the file system has {} free",
                free.unwrap_or(0)
            ),
        ));
    }
    // SAFETY: posix_fallocate reads its integer arguments only; the descriptor is open.
    let reserved = unsafe { libc::posix_fallocate(file.as_raw_fd(), offset, length) };
    match reserved {
        0 | libc::EOPNOTSUPP | libc::EINVAL => {} // a file system without preallocation: write on
        libc::ENOSPC | libc::EFBIG => {
            return Err(guard_error(
                path,
                format!(
                    "not enough free space for `size` {to} bytes ({})",
                    std::io::Error::from_raw_os_error(reserved)
                ),
            ))
        }
        e => return Err(io_error(path, std::io::Error::from_raw_os_error(e))),
    }
    let mut chunk = vec![
        0u8;
        LAYOUT_CHUNK
            .min(usize::try_from(len).unwrap_or(LAYOUT_CHUNK))
            .max(8)
    ];
    crate::random::fill_bytes(&mut chunk, 0x10ad ^ from);
    let mut at = from;
    while at < to {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        let n = usize::try_from(to - at).map_or(chunk.len(), |left| left.min(chunk.len()));
        file.write_all_at(&chunk[..n], at)
            .map_err(|e| io_error(path, e))?;
        at += n as u64;
    }
    file.sync_all().map_err(|e| io_error(path, e))
}

/// Bytes an unprivileged writer may still use on `file`'s file system, where it says.
fn free_bytes(file: &File) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: fstatvfs fills the struct it is given for an open descriptor.
    let ok = unsafe { libc::fstatvfs(file.as_raw_fd(), st.as_mut_ptr()) } == 0;
    // SAFETY: initialised by the successful call.
    ok.then(|| unsafe { st.assume_init() })
        .map(|st| st.f_bavail.saturating_mul(st.f_frsize))
}

/// The identity a sidecar mark is bound to: device, inode and birth time (or, where the file
/// system keeps no birth time, the size iomimic left the file at).
fn identity(meta: &std::fs::Metadata) -> String {
    let born = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or_else(
            || format!("size={}", meta.len()),
            |d| format!("btime={}", d.as_nanos()),
        );
    format!("dev={} ino={} {born}", meta.dev(), meta.ino())
}

const SIDECAR_HEADER: &str = "iomimic created this file; identity:";

/// Where the mark lives on file systems without user extended attributes: `.NAME.iomimic`.
fn sidecar(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.iomimic"))
}

/// Marks `file` (just created or grown by iomimic) as iomimic's: an extended attribute on the
/// inode where the file system has them, else a sidecar file naming the inode's identity.
fn mark_created(path: &Path, file: &File) -> Result<()> {
    mark(path, file, true)
}

fn mark(path: &Path, file: &File, try_xattr: bool) -> Result<()> {
    use std::os::fd::AsRawFd;
    if try_xattr {
        let name = CString::new(MARK_XATTR).expect("no NUL in the attribute name");
        // SAFETY: a valid descriptor, a NUL-terminated name and a 1-byte value that outlives the call.
        let set = unsafe { libc::fsetxattr(file.as_raw_fd(), name.as_ptr(), b"1".as_ptr().cast(), 1, 0) };
        if set == 0 {
            return Ok(());
        }
    }
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    let mut side = File::create(sidecar(path)).map_err(|e| io_error(path, e))?;
    writeln!(side, "{SIDECAR_HEADER} {}", identity(&meta)).map_err(|e| io_error(path, e))
}

/// Whether iomimic created the file now at `path`: its inode carries the mark, or the sidecar
/// names this very inode (a file that took the name later, or a symlink to another file, is
/// not iomimic's).
pub fn created_by_iomimic(path: &Path) -> bool {
    has_mark_xattr(path) || sidecar_matches(path)
}

fn has_mark_xattr(path: &Path) -> bool {
    let (Ok(p), Ok(name)) = (
        CString::new(path.as_os_str().as_bytes()),
        CString::new(MARK_XATTR),
    ) else {
        return false;
    };
    let mut value = [0u8; 8];
    // SAFETY: NUL-terminated strings and a buffer of the length passed.
    let got = unsafe { libc::getxattr(p.as_ptr(), name.as_ptr(), value.as_mut_ptr().cast(), value.len()) };
    got > 0
}

fn sidecar_matches(path: &Path) -> bool {
    let (Ok(text), Ok(meta)) = (std::fs::read_to_string(sidecar(path)), std::fs::metadata(path)) else {
        return false;
    };
    text.trim()
        .strip_prefix(SIDECAR_HEADER)
        .is_some_and(|id| id.trim() == identity(&meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("iomimic-guard-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const WRITE: Access = Access {
        write: true,
        allow_device: false,
        overwrite: false,
        direct: false,
    };

    #[test]
    fn a_missing_target_is_created_laid_out_and_marked() {
        let dir = temp_dir("create");
        let path = dir.join("t.dat");
        let stop = AtomicBool::new(false);
        let c = check(&path, 100, Some(10_000), WRITE, &stop).unwrap();
        assert!(c.created && c.usable == 10_000 && c.kind == Kind::File);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 10_000);
        assert!(
            data.iter().filter(|&&b| b == 0).count() < 200,
            "laid out with data, not holes"
        );
        assert!(created_by_iomimic(&path));
        // iomimic's own file may be written again without `overwrite`
        assert!(check(&path, 100, None, WRITE, &stop).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_foreign_file_needs_overwrite_and_a_missing_one_needs_size() {
        let dir = temp_dir("foreign");
        let stop = AtomicBool::new(false);
        let path = dir.join("f.dat");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        let e = check(&path, 10, None, WRITE, &stop).unwrap_err().to_string();
        assert!(
            e.contains("iomimic did not create it") && e.contains("`overwrite`"),
            "{e}"
        );
        let read_only = Access {
            write: false,
            ..WRITE
        };
        assert_eq!(check(&path, 10, None, read_only, &stop).unwrap().usable, 4096);
        let overwrite = Access {
            overwrite: true,
            ..WRITE
        };
        assert!(check(&path, 10, None, overwrite, &stop).is_ok());
        let e = check(&dir.join("missing"), 10, None, WRITE, &stop)
            .unwrap_err()
            .to_string();
        assert!(e.contains("give `size`"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_sidecar_mark_is_bound_to_its_file() {
        let dir = temp_dir("sidecar");
        let path = dir.join("s.dat");
        let file = File::create(&path).unwrap();
        mark(&path, &file, false).unwrap();
        drop(file);
        assert!(sidecar_matches(&path));
        // a new file takes the name: the old mark does not cover it
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"someone else's").unwrap();
        assert!(!sidecar_matches(&path));
        // a symlink to a foreign file under the marked name is not iomimic's either
        let other = dir.join("other.dat");
        std::fs::write(&other, b"foreign").unwrap();
        std::fs::remove_file(&path).unwrap();
        let file = File::create(&path).unwrap();
        mark(&path, &file, false).unwrap();
        drop(file);
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&other, &path).unwrap();
        assert!(!created_by_iomimic(&path));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_size_past_the_free_space_is_refused_before_writing() {
        let dir = temp_dir("nospace");
        let path = dir.join("huge.dat");
        let e = check(&path, 1, Some(1 << 62), WRITE, &AtomicBool::new(false)).unwrap_err();
        assert!(
            e.to_string().contains(" free") || e.to_string().contains("too large"),
            "{e}"
        );
        assert!(!path.exists(), "the half-made file is removed");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_stopped_lay_out_leaves_nothing() {
        let dir = temp_dir("stop");
        let path = dir.join("t.dat");
        let e = check(&path, 1, Some(1 << 20), WRITE, &AtomicBool::new(true)).unwrap_err();
        assert!(matches!(e, Error::Interrupted));
        assert!(!path.exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
