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

use crate::random::splitmix;

/// Blocks are 4 KiB, the unit the miss-ratio curve counts.
const BLOCK: u64 = 4096;

pub struct Used {
    bits: Vec<u64>,
}

/// Where one 64 KiB group's bits live: its line's first word and the hash that places bits.
#[derive(Clone, Copy)]
struct Line {
    word: usize,
    hash: u64,
}

impl Used {
    /// A filter for about `blocks` used blocks: 8 to 16 bits each (a few per cent of false
    /// positives when full), at most 128 MiB.
    pub fn new(blocks: u64) -> Self {
        let words = (blocks.clamp(1 << 13, 1 << 27) / 8).next_power_of_two() as usize;
        let bits = vec![0; words];
        advise_huge_pages(&bits);
        Self { bits }
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

    /// Starts loading the line the request at `offset` begins in (its value is not needed yet).
    #[inline]
    pub fn preload(&self, volume: u32, offset: u64) {
        let word = Self::line(self.bits.len(), volume, (offset / BLOCK) >> 4).word;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is only a hint; SSE is part of every x86-64 target, and the
        // address is inside `bits`.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.bits.as_ptr().add(word).cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = word;
    }

    /// Whether any block of the request may have been used (false: surely none was).
    pub fn any_used(&self, volume: u32, offset: u64, size: u32) -> bool {
        Self::blocks(self.bits.len(), volume, offset, size).any(|(word, bits)| self.bits[word] & bits == bits)
    }

    pub fn insert_request(&mut self, volume: u32, offset: u64, size: u32) {
        for (word, bits) in Self::blocks(self.bits.len(), volume, offset, size) {
            self.bits[word] |= bits;
        }
    }
}

/// Asks the kernel to back a large buffer with huge pages (where it is set to on request), so
/// random lookups across it do not each miss the TLB. Only advice: nothing changes if refused.
pub fn advise_huge_pages<T>(buffer: &[T]) {
    const HUGE: usize = 2 << 20;
    let start = buffer.as_ptr() as usize;
    let end = start + std::mem::size_of_val(buffer);
    let (first, last) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
    if last > first {
        // SAFETY: the range lies inside `buffer`'s allocation; MADV_HUGEPAGE changes only how
        // the kernel backs those pages, never their contents.
        unsafe {
            libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_requests_are_found_and_neighbours_mostly_not() {
        let mut u = Used::new(30_000);
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
