//! Which blocks a generating thread has used: a Bloom filter, so a request the model calls
//! new does not land on a used block by chance (that would add re-use the trace never had).
//!
//! ## Design
//! Fixed memory, 8 to 16 bits a block; a false positive only costs the generator a retry.
//! It is blocked by cache line: the sixteen 4 KiB blocks of an aligned 64 KiB group share one
//! line (a word per two blocks, three bits per block), so a request and the sequential ones
//! after it cost one memory miss rather than one per block. Generation is bound by these
//! misses, so the generator asks for a candidate's line early ([`Used::preload`]) and the
//! buffer asks the kernel for huge pages.
//!
//! Requests of more than [`LARGE_BLOCKS`] blocks are not marked block by block (a 4 GiB request
//! is a million blocks: milliseconds a request): they are kept as exact extents, and a large
//! candidate asks coarse marks that small requests leave (a few groups of at most 256 MiB)
//! instead of each of its blocks. Work per request is then bounded whatever its size. The limit
//! is high (16 MiB) so that what nearly every trace's model generates does not change: a thread
//! none of whose requests covers more blocks keeps no coarse marks and behaves exactly as
//! before.

use std::collections::BTreeMap;

use crate::memory::{advise_huge_pages, preload};
use crate::random::splitmix;

/// Blocks are 4 KiB, the unit the miss-ratio curve counts.
const BLOCK: u64 = 4096;
/// Requests covering more blocks than this (16 MiB) are kept as extents, not in the filter.
pub const LARGE_BLOCKS: u64 = 4096;
/// Coarse group sizes, log2 blocks (16 MiB, 256 MiB): a large candidate asks the finest level
/// where it spans at most [`COARSE_SPAN`] groups. Sizes are below 4 GiB (2^20 blocks), so the
/// last level always does; a small request marks at most two groups at each.
const COARSE_LEVELS: [u32; 2] = [12, 16];
const COARSE_SPAN: u64 = 16;
/// Lines a request's marks are loaded ahead in, at most (an aligned 256 KiB request's).
const PRELOAD_GROUPS: u64 = 4;

pub struct Used {
    bits: Vec<u64>,
    /// Large requests: (volume, first block) → end block, disjoint and merged.
    large: BTreeMap<(u32, u64), u64>,
    /// When the thread can make large requests: one bit per coarse group (hashed) that a small
    /// request touched.
    coarse: Option<Vec<u64>>,
    /// Filter words and coarse groups looked at or set: the work requests cost.
    #[cfg(test)]
    pub probes: std::cell::Cell<u64>,
}

/// Where one 64 KiB group's bits live: its line's first word and the hash that places bits.
#[derive(Clone, Copy)]
struct Line {
    word: usize,
    hash: u64,
}

impl Used {
    /// A filter for about `blocks` used blocks: 8 to 16 bits each (a few per cent of false
    /// positives when full), at most 128 MiB; with coarse marks when requests of more than
    /// [`LARGE_BLOCKS`] blocks (`largest` bytes) may come.
    pub fn new(blocks: u64, largest: u32) -> Self {
        let words = (blocks.clamp(1 << 13, 1 << 27) / 8).next_power_of_two() as usize;
        let bits = vec![0; words];
        advise_huge_pages(&bits);
        // a request of `largest` bytes, unaligned, covers one block more than it fills
        let coarse =
            (u64::from(largest).div_ceil(BLOCK) + 1 > LARGE_BLOCKS).then(|| vec![0; (words / 8).max(1024)]);
        Self {
            bits,
            large: BTreeMap::new(),
            coarse,
            #[cfg(test)]
            probes: std::cell::Cell::new(0),
        }
    }

    /// The first and last block of a request.
    #[inline]
    fn span(offset: u64, size: u32) -> (u64, u64) {
        (offset / BLOCK, (offset + u64::from(size).max(1) - 1) / BLOCK)
    }

    /// Counts `n` probes (in tests only).
    #[inline]
    #[cfg_attr(not(test), allow(clippy::unused_self))]
    fn count(&self, n: u64) {
        #[cfg(test)]
        self.probes.set(self.probes.get() + n);
        #[cfg(not(test))]
        let _ = n;
    }

    /// The line of `group` in a filter of `words` words.
    #[inline]
    fn line(words: usize, volume: u32, group: u64) -> Line {
        let hash = splitmix(group ^ (u64::from(volume) << 48));
        Line {
            word: (hash << 3) as usize & (words - 1),
            hash,
        }
    }

    /// The word and the three bits of `block` in its group's line.
    #[inline]
    fn probe(line: Line, block: u64) -> (usize, u64) {
        // the line index took the hash's low bits; the bits come from the top of a product,
        // which every bit of the hash and the block's place in its group reach
        let h = (line.hash ^ (block & 15)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let bits = (1u64 << (h >> 58)) | (1u64 << ((h >> 52) & 63)) | (1u64 << ((h >> 46) & 63));
        (line.word | ((block >> 1) & 7) as usize, bits)
    }

    /// The request's blocks as (word, bits), each group's line hashed once.
    #[inline]
    fn blocks(words: usize, volume: u32, offset: u64, size: u32) -> impl Iterator<Item = (usize, u64)> {
        let first = offset / BLOCK;
        let last = (offset + u64::from(size).max(1) - 1) / BLOCK;
        let mut line = Self::line(words, volume, first >> 4);
        (first..=last).map(move |b| {
            if b.trailing_zeros() >= 4 && b != first {
                line = Self::line(words, volume, b >> 4);
            }
            Self::probe(line, b)
        })
    }

    /// Starts loading the lines a request's blocks lie in (at most [`PRELOAD_GROUPS`] of them;
    /// their values are not needed yet): for a fresh candidate, before it is looked up; for a
    /// request made, before it is marked a step later ([`Used::insert_request`]), as one that
    /// reaches into a 64 KiB group the walk did not just use would miss there.
    #[inline]
    pub fn preload(&self, volume: u32, offset: u64, size: u32) {
        let (first, last) = Self::span(offset, size);
        if last - first >= LARGE_BLOCKS {
            return; // kept as an extent, not marked
        }
        for group in (first >> 4)..=(last >> 4).min((first >> 4) + PRELOAD_GROUPS - 1) {
            preload(&self.bits, Self::line(self.bits.len(), volume, group).word);
        }
    }

    /// Whether any block of the request may have been used (false: surely none was).
    pub fn any_used(&self, volume: u32, offset: u64, size: u32) -> bool {
        let (first, last) = Self::span(offset, size);
        let filtered = if last - first < LARGE_BLOCKS {
            self.count(last - first + 1);
            Self::blocks(self.bits.len(), volume, offset, size)
                .any(|(word, bits)| self.bits[word] & bits == bits)
        } else {
            self.coarse_used(volume, first, last)
        };
        filtered || self.overlaps_large(volume, first, last)
    }

    pub fn insert_request(&mut self, volume: u32, offset: u64, size: u32) {
        let (first, last) = Self::span(offset, size);
        if last - first >= LARGE_BLOCKS {
            self.insert_large(volume, first, last + 1);
            return;
        }
        self.count(last - first + 1);
        for (word, bits) in Self::blocks(self.bits.len(), volume, offset, size) {
            self.bits[word] |= bits;
        }
        if let Some(coarse) = &mut self.coarse {
            for level in COARSE_LEVELS {
                for group in first >> level..=last >> level {
                    let (word, bit) = coarse_bit(coarse.len(), volume, level, group);
                    coarse[word] |= bit;
                }
            }
            self.count(2 * COARSE_LEVELS.len() as u64);
        }
    }

    /// Whether a small request may have touched blocks `[first, last]`: the coarse groups
    /// holding them, at the finest level where they are few.
    fn coarse_used(&self, volume: u32, first: u64, last: u64) -> bool {
        let Some(coarse) = &self.coarse else {
            return false;
        };
        let level = COARSE_LEVELS
            .into_iter()
            .find(|&l| (last >> l) - (first >> l) < COARSE_SPAN)
            .unwrap_or(COARSE_LEVELS[COARSE_LEVELS.len() - 1]);
        self.count((last >> level) - (first >> level) + 1);
        (first >> level..=last >> level).any(|group| {
            let (word, bit) = coarse_bit(coarse.len(), volume, level, group);
            coarse[word] & bit != 0
        })
    }

    /// Whether a large request used any of blocks `[first, last]`.
    fn overlaps_large(&self, volume: u32, first: u64, last: u64) -> bool {
        if self.large.is_empty() {
            return false;
        }
        self.count(1);
        // the last extent starting at or before `last` is the only one that can reach `first`
        self.large
            .range(..=(volume, last))
            .next_back()
            .is_some_and(|(&(v, _), &end)| v == volume && end > first)
    }

    /// Adds blocks `[first, end)`, merged with the extents it overlaps or touches.
    fn insert_large(&mut self, volume: u32, mut first: u64, mut end: u64) {
        self.count(1);
        if let Some((&(v, start), &e)) = self.large.range(..=(volume, first)).next_back() {
            if v == volume && e >= first {
                self.large.remove(&(v, start));
                first = start;
                end = end.max(e);
            }
        }
        // each extent is removed once after its insertion: merging is amortised O(log n)
        while let Some((&(v, start), &e)) = self.large.range((volume, first)..).next() {
            if v != volume || start > end {
                break;
            }
            self.large.remove(&(v, start));
            end = end.max(e);
        }
        self.large.insert((volume, first), end);
    }
}

/// The word and bit of a coarse group in a bitmap of `words` words.
#[inline]
fn coarse_bit(words: usize, volume: u32, level: u32, group: u64) -> (usize, u64) {
    let h = splitmix(group ^ (u64::from(volume) << 40) ^ (u64::from(level) << 58));
    ((h >> 6) as usize & (words - 1), 1 << (h & 63))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_requests_are_found_and_neighbours_mostly_not() {
        let mut u = Used::new(30_000, 65536);
        for i in 0..1000u64 {
            u.insert_request(1, i * 1_000_000, 8192 + (i as u32 % 5) * 4096);
        }
        for i in 0..1000u64 {
            assert!(u.any_used(1, i * 1_000_000, 4096));
            assert!(u.any_used(1, i * 1_000_000 + 4096, 512)); // inside each request
        }
        // a request is found through any block it overlaps, across a 64 KiB group boundary
        u.insert_request(2, 60 * 1024, 8192);
        assert!(u.any_used(2, 64 * 1024, 4096));
        let false_positives = (0..10_000u64)
            .filter(|i| u.any_used(3, i * 1_000_000, 4096))
            .count();
        // 1000 requests of 3 blocks on average in 32768 words: about 0.6 % should be found
        assert!(
            false_positives < 100,
            "{false_positives} of 10000 unused blocks reported used"
        );
    }
}
