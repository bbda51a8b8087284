//! An in-memory [`Medium`] with a fault layer, for crash tests: writes reach a volatile image
//! at once and the durable image only at `sync`; a crash keeps the durable image plus a random
//! part of what was not synced (whole writes, or a torn prefix of sectors of one), as a disk
//! that lost power may. Every write and sync of every medium sharing a [`CrashClock`] is one
//! numbered step, so a test can crash the whole system at step N. A medium can also be taken
//! offline and back (a store whose machine restarts): meanwhile all its I/O fails, and what it
//! held is kept.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::medium::Medium;
use crate::error::{Error, Result};
use crate::random::Prng;

/// The granule a torn write keeps or loses.
pub const SECTOR: usize = 512;

/// Counts steps across media; at `crash_at` the step fails and so does everything after it.
#[derive(Debug)]
pub struct CrashClock {
    steps: AtomicU64,
    crash_at: AtomicU64,
    crashed: AtomicBool,
}

impl CrashClock {
    /// A clock that crashes at step `crash_at` (1-based; `u64::MAX` never).
    pub fn new(crash_at: u64) -> Arc<CrashClock> {
        Arc::new(CrashClock {
            steps: AtomicU64::new(0),
            crash_at: AtomicU64::new(crash_at),
            crashed: AtomicBool::new(false),
        })
    }

    pub fn steps(&self) -> u64 {
        self.steps.load(Ordering::SeqCst)
    }

    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    /// The outcome of the next step: `Ok(false)` runs it, `Ok(true)` runs it torn and then
    /// crashes, `Err` when the system is already down.
    fn tick(&self) -> std::result::Result<bool, ()> {
        if self.crashed() {
            return Err(());
        }
        let n = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.crash_at.load(Ordering::SeqCst) {
            self.crashed.store(true, Ordering::SeqCst);
            return Ok(true);
        }
        Ok(false)
    }
}

struct Images {
    durable: Vec<u8>,
    volatile: Vec<u8>,
    /// Writes since the last sync, in order.
    pending: Vec<(u64, Vec<u8>)>,
}

pub struct MemMedium {
    name: String,
    images: Mutex<Images>,
    clock: Arc<CrashClock>,
    offline: AtomicBool,
}

fn crash_error(name: &str) -> Error {
    Error::Io {
        path: name.into(),
        source: std::io::Error::other("simulated crash"),
    }
}

impl MemMedium {
    /// A zero-filled medium of `len` bytes.
    pub fn new(name: &str, len: usize, clock: Arc<CrashClock>) -> MemMedium {
        MemMedium::from_image(name, vec![0; len], clock)
    }

    pub fn from_image(name: &str, image: Vec<u8>, clock: Arc<CrashClock>) -> MemMedium {
        MemMedium {
            name: name.into(),
            images: Mutex::new(Images {
                durable: image.clone(),
                volatile: image,
                pending: Vec::new(),
            }),
            clock,
            offline: AtomicBool::new(false),
        }
    }

    /// Takes the medium offline (all I/O fails, nothing is lost) or brings it back.
    pub fn set_offline(&self, offline: bool) {
        self.offline.store(offline, Ordering::SeqCst);
    }

    fn check_online(&self) -> Result<()> {
        if self.offline.load(Ordering::SeqCst) {
            return Err(Error::Io {
                path: self.name.clone().into(),
                source: std::io::Error::other("offline"),
            });
        }
        Ok(())
    }

    /// What survives a crash of the program alone: everything it wrote (the kernel has it).
    pub fn volatile_image(&self) -> Vec<u8> {
        self.images.lock().expect("medium lock").volatile.clone()
    }

    /// What survives a power loss now: the durable image plus, drawn by `rng`, some of the
    /// unsynced writes, each whole or torn to a prefix of its sectors.
    pub fn after_crash(&self, rng: &mut Prng) -> Vec<u8> {
        let im = self.images.lock().expect("medium lock");
        let mut image = im.durable.clone();
        for (offset, data) in &im.pending {
            let keep = match rng.below(3) {
                0 => 0,
                1 => data.len(),
                _ => (rng.below((data.len() / SECTOR) as u64 + 1) as usize * SECTOR).min(data.len()),
            };
            let at = *offset as usize;
            image[at..at + keep].copy_from_slice(&data[..keep]);
        }
        image
    }
}

impl Medium for MemMedium {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.check_online()?;
        if self.clock.crashed() {
            return Err(crash_error(&self.name));
        }
        let im = self.images.lock().expect("medium lock");
        let at = offset as usize;
        let Some(src) = im.volatile.get(at..at + buf.len()) else {
            return Err(Error::Usage(format!("{}: read past the end", self.name)));
        };
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.check_online()?;
        let torn = self.clock.tick().map_err(|()| crash_error(&self.name))?;
        let mut im = self.images.lock().expect("medium lock");
        let at = offset as usize;
        if at + buf.len() > im.volatile.len() {
            return Err(Error::Usage(format!("{}: write past the end", self.name)));
        }
        // A write the crash interrupts reaches the volatile image only in part: its first half
        // of sectors; `after_crash` may keep or lose even those.
        let n = if torn {
            (buf.len() / SECTOR / 2) * SECTOR
        } else {
            buf.len()
        };
        im.volatile[at..at + n].copy_from_slice(&buf[..n]);
        im.pending.push((offset, buf[..n].to_vec()));
        if torn {
            return Err(crash_error(&self.name));
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.check_online()?;
        let crash = self.clock.tick().map_err(|()| crash_error(&self.name))?;
        if crash {
            // Power was lost while flushing: nothing is promised.
            return Err(crash_error(&self.name));
        }
        let mut im = self.images.lock().expect("medium lock");
        let pending = std::mem::take(&mut im.pending);
        for (offset, data) in pending {
            let at = offset as usize;
            im.durable[at..at + data.len()].copy_from_slice(&data);
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.images.lock().expect("medium lock").volatile.len() as u64
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_writes_may_be_lost_and_synced_ones_never() {
        let clock = CrashClock::new(u64::MAX);
        let m = MemMedium::new("m", 4096, clock);
        m.write_at(&[1; 1024], 0).unwrap();
        m.sync().unwrap();
        m.write_at(&[2; 1024], 1024).unwrap();
        let mut seen_lost = false;
        let mut seen_kept = false;
        for seed in 0..32 {
            let image = m.after_crash(&mut Prng::new(seed));
            assert!(image[..1024].iter().all(|&b| b == 1));
            seen_lost |= image[1024] == 0;
            seen_kept |= image[1024] == 2;
            // A torn write keeps a prefix of whole sectors.
            assert!(image[1024..2048]
                .chunks(SECTOR)
                .all(|s| s.iter().all(|&b| b == s[0])));
        }
        assert!(seen_lost && seen_kept);
    }

    #[test]
    fn the_crash_step_fails_and_everything_after_it() {
        let clock = CrashClock::new(2);
        let m = MemMedium::new("m", 4096, clock.clone());
        m.write_at(&[1; 512], 0).unwrap();
        assert!(m.write_at(&[2; 2048], 0).is_err());
        assert!(clock.crashed());
        assert!(m.sync().is_err());
        let mut buf = [0u8; 2048];
        assert!(m.read_at(&mut buf, 0).is_err());
    }
}
