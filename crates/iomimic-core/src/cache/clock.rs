//! CLOCK (second chance): FIFO order, but an object used since it came in is passed over once.
//!
//! ## Algorithm
//! Objects sit on a circle in arrival order with one reference bit each; the hand rests at the
//! oldest. A hit sets the object's bit. To make room, the hand looks at the oldest object: a set
//! bit is cleared and the object goes behind the newest (its second chance), a clear bit means
//! eviction. New objects come in with the bit clear. Here the circle is a list whose back is the
//! hand, so "passing over" is moving an object from the back to the front.
//!
//! This is libCacheSim's `Clock` with its defaults (`init_freq=0`, `n_bit_counter=1`): the
//! same order of passes and evictions, so the same hits for any trace and sizes.
//!
//! ## Complexity
//! O(1) amortised per access: each pass clears a bit that a hit set, so a sweep costs at most
//! the hits since the last one. Memory per object: a map entry and a slab node.
//!
//! ## References
//! Corbató, "A paging experiment with the Multics system" (MIT Project MAC, 1968; in *In Honor
//! of P. M. Morse*, MIT Press 1969).

use rustc_hash::FxHashMap;

use super::slab::{List, Slab};
use super::{Policy, PolicySpec};

pub const POLICY: PolicySpec = PolicySpec {
    name: "clock",
    description: "CLOCK, one reference bit (second chance)",
    build: |capacity| Box::new(Clock::new(capacity)),
};

pub struct Clock {
    capacity: u64,
    index: FxHashMap<u64, u32>,
    /// The reference bit of each object.
    slab: Slab<bool>,
    /// Newest at the front; the hand at the back.
    ring: List,
}

impl Clock {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            index: FxHashMap::default(),
            slab: Slab::default(),
            ring: List::default(),
        }
    }

    fn evict(&mut self) {
        while let Some(i) = self.ring.back() {
            let node = self.slab.get_mut(i);
            if node.meta {
                node.meta = false;
                self.slab.move_to_front(&mut self.ring, i);
            } else {
                self.slab.unlink(&mut self.ring, i);
                self.index.remove(&self.slab.get(i).key);
                self.slab.release(i);
                return;
            }
        }
    }
}

impl Policy for Clock {
    fn access(&mut self, key: u64, size: u64) -> bool {
        if let Some(&i) = self.index.get(&key) {
            self.slab.get_mut(i).meta = true;
            return true;
        }
        if size > self.capacity {
            return false;
        }
        while self.ring.bytes + size > self.capacity {
            self.evict();
        }
        let i = self.slab.alloc(key, size, false);
        self.slab.push_front(&mut self.ring, i);
        self.index.insert(key, i);
        false
    }

    fn used(&self) -> u64 {
        self.ring.bytes
    }

    fn len(&self) -> usize {
        self.index.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{hits, letters};
    use super::*;

    #[test]
    fn by_hand() {
        // capacity 3, unit sizes; the ring from the newest to the hand, * marking a set bit
        //   a b c   [c b a]    three misses
        //   a       [c b a*]   hit: a's bit set
        //   d       [d a c]    miss: the hand passes a* (cleared, to the front: [a c b]),
        //                      then evicts b
        //   b       [b d a]    miss: the hand evicts c
        //   a       [b d a*]   hit
        //   c       [c a b]    miss: the hand passes a* ([a b d]), then evicts d
        //   a b     [c a* b*]  two hits
        //   d       [d a b]    miss: the hand passes b* and a* ([a b c]), then evicts c
        let mut c = Clock::new(3);
        assert_eq!(hits(&mut c, &letters("abcadbacabd")), "mmmhmmhmhhm");
        assert_eq!((c.len(), c.used()), (3, 3));
    }

    #[test]
    fn sizes() {
        // capacity 4, (key, size)
        //   1(2) 2(1) 3(1)   [3 2 1]    three misses, full
        //   1                [3 2 1*]   hit
        //   4(2)             [4 1]      miss: the hand passes 1* ([1 3 2]), evicts 2 (1 byte
        //                               free, 2 needed), then evicts 3
        //   1 4              [4* 1*]    two hits
        //   2(1)             [2 4]      miss: the hand passes 1* and 4* ([4 1]), evicts 1
        let mut c = Clock::new(4);
        assert_eq!(
            hits(
                &mut c,
                &[(1, 2), (2, 1), (3, 1), (1, 2), (4, 2), (1, 2), (4, 2), (2, 1)]
            ),
            "mmmhmhhm"
        );
        assert_eq!((c.len(), c.used()), (2, 3));
        // larger than the whole cache: not admitted, nothing evicted
        assert!(!c.access(9, 5));
        assert_eq!(hits(&mut c, &[(2, 1), (4, 2)]), "hh");
    }
}
