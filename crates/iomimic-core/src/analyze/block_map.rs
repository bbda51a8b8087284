//! The LRU stack's map from a block key to the time of its latest touch, in the form the
//! miss-ratio curve needs it fast: keys packed in one word, open addressing.
//!
//! Why not a general hash map: a lookup there reads a control byte and then the entry, two
//! cache lines in two arrays, and on a curve with millions of distinct blocks each is a cache
//! and TLB miss (profiling showed the map at 70 % of the curve's time). Here a slot holds the
//! key and its time together and probing is linear, so a lookup is about one miss, on huge
//! pages where the kernel grants them; a slot is 16 bytes.
//!
//! ## Algorithm
//! Linear probing from a Fibonacci hash of the key, mapped onto the table by multiplying
//! (Lemire's range reduction), so the table can be sized to the keys expected rather than to
//! a power of two (16 × 4/3 ≈ 21 bytes a key, not up to twice that); at most 3/4 full
//! (doubling past it); removal shifts the following entries back instead of leaving
//! tombstones (Knuth's Algorithm R), so probes stay short however many keys come and go.

use crate::memory::{advise_huge_pages, preload};

/// A slot: key + 1 (0 marks an empty slot, so a fresh table is zeroed memory the kernel
/// maps lazily) and the value.
type Slot = [u64; 2];

pub struct BlockMap {
    slots: Vec<Slot>,
    len: usize,
}

impl BlockMap {
    /// A map for about `keys` keys without growing. Keys must not be `u64::MAX`.
    pub fn with_capacity(keys: usize) -> Self {
        let slots = (keys.saturating_mul(4) / 3 + 1).max(16);
        let table = vec![[0u64; 2]; slots];
        advise_huge_pages(&table);
        Self { slots: table, len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn home(&self, stored: u64) -> usize {
        let hash = stored.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((u128::from(hash) * self.slots.len() as u128) >> 64) as usize
    }

    /// The slot after `i`, wrapping round.
    #[inline]
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.slots.len() {
            0
        } else {
            i + 1
        }
    }

    /// Slots from `from` forward to `to`, wrapping round.
    #[inline]
    fn distance(&self, from: usize, to: usize) -> usize {
        if to >= from {
            to - from
        } else {
            to + self.slots.len() - from
        }
    }

    /// The slot holding `key`, or the empty one where it would go.
    #[inline]
    fn find(&self, stored: u64) -> usize {
        let mut i = self.home(stored);
        loop {
            let k = self.slots[i][0];
            if k == stored || k == 0 {
                return i;
            }
            i = self.next(i);
        }
    }

    /// Sets `key`'s value, returning the one it replaced.
    #[inline]
    pub fn insert(&mut self, key: u64, value: u32) -> Option<u32> {
        debug_assert!(key != u64::MAX);
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let stored = key + 1;
        let i = self.find(stored);
        let slot = &mut self.slots[i];
        let old = (slot[0] == stored).then_some(slot[1] as u32);
        if old.is_none() {
            self.len += 1;
        }
        *slot = [stored, u64::from(value)];
        old
    }

    /// Starts loading `key`'s slot.
    #[inline]
    pub fn preload(&self, key: u64) {
        preload(&self.slots, self.home(key + 1));
    }

    /// `key`'s value, if it is in.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u32> {
        let slot = self.slots[self.find(key + 1)];
        (slot[0] != 0).then_some(slot[1] as u32)
    }

    /// Takes `key` out, returning its value.
    pub fn remove(&mut self, key: u64) -> Option<u32> {
        let stored = key + 1;
        let mut hole = self.find(stored);
        if self.slots[hole][0] == 0 {
            return None;
        }
        let value = self.slots[hole][1] as u32;
        let mut j = hole;
        loop {
            j = self.next(j);
            let k = self.slots[j][0];
            if k == 0 {
                break;
            }
            // the entry at j may fill the hole when the hole lies on its probe path
            if self.distance(self.home(k), j) >= self.distance(hole, j) {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
        }
        self.slots[hole] = [0, 0];
        self.len -= 1;
        Some(value)
    }

    /// Every value, to be rewritten in place.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut u64> {
        self.slots.iter_mut().filter(|s| s[0] != 0).map(|s| &mut s[1])
    }

    fn grow(&mut self) {
        let mut bigger = Self::with_capacity(self.slots.len() * 3 / 2);
        for s in self.slots.iter().filter(|s| s[0] != 0) {
            let i = bigger.find(s[0]);
            bigger.slots[i] = *s;
        }
        bigger.len = self.len;
        *self = bigger;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn agrees_with_a_hash_map_through_growth_and_removal() {
        let mut map = BlockMap::with_capacity(0);
        let mut reference: HashMap<u64, u32> = HashMap::new();
        let mut state = 9u64;
        for step in 0..200_000u32 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            // clustered keys (adjacent blocks) and the largest key allowed
            let key = match state >> 61 {
                0 => u64::MAX - 1,
                _ => (state >> 40) % 5_000 + (((state >> 20) % 3) << 40),
            };
            if state >> 58 & 7 < 3 {
                assert_eq!(map.remove(key), reference.remove(&key), "step {step}");
            } else {
                assert_eq!(map.insert(key, step), reference.insert(key, step), "step {step}");
            }
            assert_eq!(map.len(), reference.len());
        }
        let mut values: Vec<u64> = map.values_mut().map(|v| *v).collect();
        let mut expected: Vec<u64> = reference.values().map(|&v| u64::from(v)).collect();
        values.sort_unstable();
        expected.sort_unstable();
        assert_eq!(values, expected);
    }
}
