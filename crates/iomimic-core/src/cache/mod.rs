//! Cache policies behind one trait, registered by name as libCacheSim registers its eviction
//! algorithms: a policy is its own file plus one line in [`POLICIES`]; [`replay`] drives any
//! of them and knows none.
//!
//! The contract: a cache holds objects (a key and a size in bytes) up to a capacity in bytes.
//! [`Policy::access`] looks a key up; a hit counts whatever the size asked now (the stored size
//! is not updated, as libCacheSim does for block traces keyed by offset); a miss admits the
//! object, evicting what the policy chooses until it fits, unless it is larger than the whole
//! cache (then it is not admitted). Keys are whatever the caller makes them: 4 KiB blocks of a
//! volume, or whole requests keyed by their start offset.

mod arc;
mod clock;
mod fifo;
mod lfu;
mod lru;
mod s3fifo;
mod slab;
mod two_q;

use serde::Serialize;

use crate::error::{Error, Result};

/// A cache policy: a cache of some capacity that decides what to keep.
pub trait Policy: Send {
    /// Accesses object `key` of `size` bytes; returns whether it was cached.
    fn access(&mut self, key: u64, size: u64) -> bool;
    /// Bytes the cached objects take.
    fn used(&self) -> u64;
    /// Objects cached.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A policy as the registry knows it.
pub struct PolicySpec {
    /// The name `--policy` takes.
    pub name: &'static str,
    pub description: &'static str,
    /// A cache of `capacity` bytes under this policy.
    pub build: fn(capacity: u64) -> Box<dyn Policy>,
}

/// The built-in policies.
pub const POLICIES: &[&PolicySpec] = &[
    &lru::POLICY,
    &fifo::POLICY,
    &clock::POLICY,
    &lfu::POLICY,
    &arc::POLICY,
    &two_q::POLICY,
    &s3fifo::POLICY,
];

/// A cache of `capacity` bytes under the policy called `name`, from `registry` (usually
/// [`POLICIES`]; a caller may add its own).
pub fn build(name: &str, capacity: u64, registry: &[&PolicySpec]) -> Result<Box<dyn Policy>> {
    let spec = registry.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = registry.iter().map(|p| p.name).collect();
        Error::Usage(format!(
            "unknown `policy` {name:?}; policies are {}",
            names.join(", ")
        ))
    })?;
    Ok((spec.build)(capacity))
}

/// What replaying accesses through a cache found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CacheFigures {
    pub accesses: u64,
    pub hits: u64,
    /// Bytes asked for, and of those, bytes found cached.
    pub bytes: u64,
    pub byte_hits: u64,
}

impl CacheFigures {
    pub fn miss_ratio(&self) -> f64 {
        ratio(self.accesses - self.hits, self.accesses)
    }

    pub fn byte_miss_ratio(&self) -> f64 {
        ratio(self.bytes - self.byte_hits, self.bytes)
    }
}

/// A queue's share of the capacity, `capacity × ratio` rounded down, computed as libCacheSim
/// computes it (in doubles), so the shares are byte for byte its shares.
#[allow(clippy::cast_sign_loss)] // ratios are positive constants
fn share(capacity: u64, ratio: f64) -> u64 {
    (capacity as f64 * ratio) as u64
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Replays `(key, size)` accesses through `policy`.
pub fn replay(policy: &mut dyn Policy, accesses: impl IntoIterator<Item = (u64, u64)>) -> CacheFigures {
    let mut f = CacheFigures::default();
    for (key, size) in accesses {
        let hit = policy.access(key, size);
        f.accesses += 1;
        f.bytes += size;
        if hit {
            f.hits += 1;
            f.byte_hits += size;
        }
    }
    f
}

#[cfg(test)]
pub(crate) mod testing {
    /// Accesses of unit-size objects named by letters: `"abcab"`.
    pub fn letters(s: &str) -> Vec<(u64, u64)> {
        s.bytes().map(|b| (u64::from(b), 1)).collect()
    }

    /// Which accesses hit, as a string of `h` and `m`.
    pub fn hits(policy: &mut dyn super::Policy, accesses: &[(u64, u64)]) -> String {
        accesses
            .iter()
            .map(|&(k, s)| if policy.access(k, s) { 'h' } else { 'm' })
            .collect()
    }
}

#[cfg(test)]
mod tests;
