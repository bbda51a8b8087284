//! The LRU stack's map from a block key to the time of its latest touch, in the form the
//! miss-ratio curve needs it fast: keys packed in one word, open addressing.
//!
//! Why not a general hash map: a lookup there reads a control byte and then the entry, two
//! cache lines in two arrays, and on a curve with millions of distinct blocks each is a cache
//! and TLB miss (profiling showed the map at 70 % of the curve's time). Here a bucket holds the
//! key and its time together and probing is linear, so a lookup is about one miss, on huge
//! pages where the kernel grants them.
//!
//! Two shapes ([`SparseBlockMap`], [`DenseBlockMap`]): a bucket of one key (16 bytes), or of
//! eight adjacent keys (40 bytes), for traces whose requests touch runs of adjacent blocks. A
//! 64 KiB request's sixteen 4 KiB blocks are then two or three buckets, not sixteen random
//! slots; on a map past the caches and the TLB's reach, its lookups were 3/4 of the curve's
//! time (the prefetches stalling). Keys of a volume's adjacent blocks must be adjacent numbers.
//!
//! ## Algorithm
//! A key's group is the key without its lowest bits (one key a group when sparse) and its lane
//! those bits. Linear probing for the group's bucket from a hash of the group (folded, then
//! Fibonacci), mapped onto the table by multiplying (Lemire's range reduction), so the table
//! can be sized to the buckets expected rather than to a power of two; at most 3/4 full
//! (growing by half past it); removing a bucket's last key shifts the following buckets back
//! instead of leaving a tombstone (Knuth's Algorithm R), so probes stay short however many keys
//! come and go.

use crate::memory::{advise_huge_pages, preload};

/// One key a bucket: word 0 the group + 1 (0 marks an empty bucket, so a fresh table is zeroed
/// memory the kernel maps lazily), word 1 the time + 1.
pub type SparseBlockMap = BlockMap<1, 2>;
/// Eight adjacent keys a bucket: word 0 the group + 1, then the lanes' times + 1 (0: no key),
/// two to a word.
pub type DenseBlockMap = BlockMap<8, 5>;

/// `WORDS` must be 1 + `LANES` / 2 rounded up (checked when a map is made).
pub struct BlockMap<const LANES: usize, const WORDS: usize> {
    buckets: Vec<[u64; WORDS]>,
    /// Keys in the map.
    len: usize,
    /// Buckets in use.
    used: usize,
}

impl<const LANES: usize, const WORDS: usize> BlockMap<LANES, WORDS> {
    /// A map that holds `buckets` buckets without growing (a sparse map's bucket is one key, a
    /// dense one's up to eight adjacent keys). Keys must not be `u64::MAX`.
    pub fn with_capacity(buckets: usize) -> Self {
        const {
            assert!(LANES.is_power_of_two() && WORDS == 1 + LANES.div_ceil(2));
        }
        let slots = (buckets.saturating_mul(4) / 3 + 1).max(16);
        let table = vec![[0u64; WORDS]; slots];
        advise_huge_pages(&table);
        Self {
            buckets: table,
            len: 0,
            used: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The bucket's tag and the lane of `key`.
    #[inline]
    fn split(key: u64) -> (u64, usize) {
        ((key >> LANES.trailing_zeros()) + 1, key as usize & (LANES - 1))
    }

    #[inline]
    fn hash(tag: u64) -> u64 {
        // folded first so that high bits (a volume) move the home as much as low ones
        (tag ^ tag >> 29).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    #[inline]
    fn home(&self, tag: u64) -> usize {
        ((u128::from(Self::hash(tag)) * self.buckets.len() as u128) >> 64) as usize
    }

    /// Which of `regions` equal stretches of the table `key`'s home bucket lies in, whatever
    /// the table's size: keys sorted by it are looked up in the table's order.
    #[inline]
    pub fn region(key: u64, regions: usize) -> usize {
        ((u128::from(Self::hash(Self::split(key).0)) * regions as u128) >> 64) as usize
    }

    /// The bucket after `i`, wrapping round.
    #[inline]
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.buckets.len() {
            0
        } else {
            i + 1
        }
    }

    /// Buckets from `from` forward to `to`, wrapping round.
    #[inline]
    fn distance(&self, from: usize, to: usize) -> usize {
        if to >= from {
            to - from
        } else {
            to + self.buckets.len() - from
        }
    }

    /// The bucket holding `tag`, or the empty one where it would go.
    #[inline]
    fn find(&self, tag: u64) -> usize {
        let mut i = self.home(tag);
        loop {
            let k = self.buckets[i][0];
            if k == tag || k == 0 {
                return i;
            }
            i = self.next(i);
        }
    }

    /// The lane's stored value (time + 1, 0 for none).
    #[inline]
    fn lane(bucket: &[u64; WORDS], lane: usize) -> u32 {
        (bucket[1 + lane / 2] >> (32 * (lane % 2))) as u32
    }

    #[inline]
    fn set_lane(bucket: &mut [u64; WORDS], lane: usize, stored: u32) {
        let (word, shift) = (1 + lane / 2, 32 * (lane % 2));
        bucket[word] = bucket[word] & !(0xffff_ffff << shift) | u64::from(stored) << shift;
    }

    /// Sets `key`'s value, returning the one it replaced.
    #[inline]
    pub fn insert(&mut self, key: u64, value: u32) -> Option<u32> {
        debug_assert!(key != u64::MAX && value != u32::MAX);
        if (self.used + 1) * 4 > self.buckets.len() * 3 {
            self.grow();
        }
        let (tag, lane) = Self::split(key);
        let i = self.find(tag);
        let bucket = &mut self.buckets[i];
        if bucket[0] == 0 {
            bucket[0] = tag;
            self.used += 1;
        }
        let old = Self::lane(bucket, lane);
        Self::set_lane(bucket, lane, value + 1);
        if old == 0 {
            self.len += 1;
        }
        old.checked_sub(1)
    }

    /// Starts loading `key`'s bucket (both its cache lines when it straddles two).
    #[inline]
    pub fn preload(&self, key: u64) {
        let i = self.home(Self::split(key).0);
        preload(&self.buckets, i);
        if WORDS > 2 {
            let last = self.buckets.as_ptr().wrapping_add(i + 1) as usize - 1;
            if last / 64 != self.buckets.as_ptr().wrapping_add(i) as usize / 64 {
                preload(&self.buckets, i + 1);
            }
        }
    }

    /// `key`'s value, if it is in.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u32> {
        let (tag, lane) = Self::split(key);
        let bucket = &self.buckets[self.find(tag)];
        if bucket[0] == tag {
            Self::lane(bucket, lane).checked_sub(1)
        } else {
            None
        }
    }

    /// Takes `key` out, returning its value.
    pub fn remove(&mut self, key: u64) -> Option<u32> {
        let (tag, lane) = Self::split(key);
        let mut hole = self.find(tag);
        if self.buckets[hole][0] != tag {
            return None;
        }
        let value = Self::lane(&self.buckets[hole], lane).checked_sub(1)?;
        Self::set_lane(&mut self.buckets[hole], lane, 0);
        self.len -= 1;
        if self.buckets[hole][1..].iter().any(|&w| w != 0) {
            return Some(value);
        }
        let mut j = hole;
        loop {
            j = self.next(j);
            let k = self.buckets[j][0];
            if k == 0 {
                break;
            }
            // the bucket at j may fill the hole when the hole lies on its probe path
            if self.distance(self.home(k), j) >= self.distance(hole, j) {
                self.buckets[hole] = self.buckets[j];
                hole = j;
            }
        }
        self.buckets[hole] = [0; WORDS];
        self.used -= 1;
        Some(value)
    }

    /// Rewrites every value through `f`.
    pub fn renumber(&mut self, mut f: impl FnMut(u32) -> u32) {
        for bucket in self.buckets.iter_mut().filter(|b| b[0] != 0) {
            for lane in 0..LANES {
                let stored = Self::lane(bucket, lane);
                if stored != 0 {
                    Self::set_lane(bucket, lane, f(stored - 1) + 1);
                }
            }
        }
    }

    /// Every value.
    pub fn values(&self) -> impl Iterator<Item = u32> + '_ {
        self.buckets
            .iter()
            .filter(|b| b[0] != 0)
            .flat_map(|b| (0..LANES).map(move |lane| Self::lane(b, lane)))
            .filter_map(|stored| stored.checked_sub(1))
    }

    /// Every key with its value, in no order.
    pub fn entries(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.buckets.iter().filter(|b| b[0] != 0).flat_map(|b| {
            (0..LANES).filter_map(move |lane| {
                let key = (b[0] - 1) << LANES.trailing_zeros() | lane as u64;
                Self::lane(b, lane).checked_sub(1).map(|value| (key, value))
            })
        })
    }

    fn grow(&mut self) {
        let mut bigger = Self::with_capacity(self.buckets.len() * 3 / 2);
        for b in self.buckets.iter().filter(|b| b[0] != 0) {
            let i = bigger.find(b[0]);
            bigger.buckets[i] = *b;
        }
        (bigger.len, bigger.used) = (self.len, self.used);
        *self = bigger;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn agrees_with_a_hash_map<const L: usize, const W: usize>(mut map: BlockMap<L, W>) {
        let mut reference: HashMap<u64, u32> = HashMap::new();
        let mut state = 9u64;
        for step in 0..200_000u32 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            // clustered keys (adjacent blocks), keys of other volumes (high bits) and the
            // largest key allowed
            let key = match state >> 61 {
                0 => u64::MAX - 1,
                1 => ((state >> 40) % 64) | (((state >> 20) % 3) << 62),
                _ => (state >> 40) % 5_000 + (((state >> 20) % 3) << 40),
            };
            if state >> 58 & 7 < 3 {
                assert_eq!(map.remove(key), reference.remove(&key), "step {step}");
            } else {
                assert_eq!(map.insert(key, step), reference.insert(key, step), "step {step}");
            }
            assert_eq!(map.len(), reference.len());
            if step % 1000 == 0 {
                assert_eq!(map.get(key), reference.get(&key).copied());
            }
        }
        map.renumber(|t| t / 2);
        let mut values: Vec<u32> = map.values().collect();
        let mut expected: Vec<u32> = reference.values().map(|&v| v / 2).collect();
        values.sort_unstable();
        expected.sort_unstable();
        assert_eq!(values, expected);
    }

    #[test]
    fn sparse_agrees_with_a_hash_map_through_growth_and_removal() {
        agrees_with_a_hash_map(SparseBlockMap::with_capacity(0));
    }

    #[test]
    fn dense_agrees_with_a_hash_map_through_growth_and_removal() {
        agrees_with_a_hash_map(DenseBlockMap::with_capacity(0));
    }
}
