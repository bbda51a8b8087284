//! LFU: evict the least frequently used object; among equals, the one that reached its count
//! first.
//!
//! ## Algorithm
//! An object's count starts at 1 when it is admitted and grows by 1 on each hit; it is
//! forgotten on eviction (a re-admitted object starts again at 1). Objects with the same count
//! share a bucket, a list in the order they reached that count; buckets form a list in
//! increasing count. A hit moves the object to the newest end of the next bucket (made if
//! missing, the emptied one dropped); eviction takes the oldest object of the first bucket.
//!
//! Ties go as in libCacheSim's `LFU` (first in, first out within a count, counted from when the
//! object reached it, not from its admission), which makes the hits the same as its for any
//! trace and sizes.
//!
//! ## Complexity
//! O(1) per access (amortised hash-map cost), as counts only ever step by one. Memory per
//! object: a map entry and a slab node; per distinct count in use, one bucket.
//!
//! ## References
//! The constant-time bucket structure: Shah, Mitra & Matani, "An O(1) algorithm for
//! implementing the LFU cache eviction scheme" (2010).

use rustc_hash::FxHashMap;

use super::slab::{List, Slab, NIL};
use super::{Policy, PolicySpec};

pub const POLICY: PolicySpec = PolicySpec {
    name: "lfu",
    description: "least frequently used, first in first out among equals",
    build: |capacity| Box::new(Lfu::new(capacity)),
};

/// The objects with one count, in the order they reached it (newest at the front).
struct Bucket {
    count: u64,
    objects: List,
    /// Neighbours of lower and higher count.
    prev: u32,
    next: u32,
}

pub struct Lfu {
    capacity: u64,
    used: u64,
    index: FxHashMap<u64, u32>,
    /// Each object's bucket.
    slab: Slab<u32>,
    buckets: Vec<Bucket>,
    free_buckets: Vec<u32>,
    /// The bucket of the lowest count (the eviction end).
    lowest: u32,
}

impl Lfu {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            used: 0,
            index: FxHashMap::default(),
            slab: Slab::default(),
            buckets: Vec::new(),
            free_buckets: Vec::new(),
            lowest: NIL,
        }
    }

    /// A new empty bucket for `count`, linked in after `prev` (`NIL`: first).
    fn new_bucket(&mut self, count: u64, prev: u32) -> u32 {
        let next = if prev == NIL {
            self.lowest
        } else {
            self.buckets[prev as usize].next
        };
        let bucket = Bucket {
            count,
            objects: List::default(),
            prev,
            next,
        };
        let b = match self.free_buckets.pop() {
            Some(b) => {
                self.buckets[b as usize] = bucket;
                b
            }
            None => {
                self.buckets.push(bucket);
                (self.buckets.len() - 1) as u32
            }
        };
        if prev == NIL {
            self.lowest = b;
        } else {
            self.buckets[prev as usize].next = b;
        }
        if next != NIL {
            self.buckets[next as usize].prev = b;
        }
        b
    }

    fn drop_bucket(&mut self, b: u32) {
        let Bucket { prev, next, .. } = self.buckets[b as usize];
        if prev == NIL {
            self.lowest = next;
        } else {
            self.buckets[prev as usize].next = next;
        }
        if next != NIL {
            self.buckets[next as usize].prev = prev;
        }
        self.free_buckets.push(b);
    }

    fn evict(&mut self) {
        let b = self.lowest;
        let Some(i) = self.slab.pop_back(&mut self.buckets[b as usize].objects) else {
            return;
        };
        if self.buckets[b as usize].objects.is_empty() {
            self.drop_bucket(b);
        }
        let node = self.slab.get(i);
        self.used -= node.size;
        self.index.remove(&node.key);
        self.slab.release(i);
    }
}

impl Policy for Lfu {
    fn access(&mut self, key: u64, size: u64) -> bool {
        if let Some(&i) = self.index.get(&key) {
            let b = self.slab.get(i).meta;
            let (count, next) = (self.buckets[b as usize].count, self.buckets[b as usize].next);
            let up = if next != NIL && self.buckets[next as usize].count == count + 1 {
                next
            } else {
                self.new_bucket(count + 1, b)
            };
            self.slab.unlink(&mut self.buckets[b as usize].objects, i);
            self.slab.push_front(&mut self.buckets[up as usize].objects, i);
            self.slab.get_mut(i).meta = up;
            if self.buckets[b as usize].objects.is_empty() {
                self.drop_bucket(b);
            }
            return true;
        }
        if size > self.capacity {
            return false;
        }
        while self.used + size > self.capacity && self.lowest != NIL {
            self.evict();
        }
        let ones = if self.lowest != NIL && self.buckets[self.lowest as usize].count == 1 {
            self.lowest
        } else {
            self.new_bucket(1, NIL)
        };
        let i = self.slab.alloc(key, size, ones);
        self.slab.push_front(&mut self.buckets[ones as usize].objects, i);
        self.index.insert(key, i);
        self.used += size;
        false
    }

    fn used(&self) -> u64 {
        self.used
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
        // capacity 3, unit sizes; buckets by count, each oldest first
        //   a b c a   1: b c    2: a
        //   b         1: c      2: a b      hit
        //   d         1: d      2: a b      miss: c, the only count-1 object, goes
        //   e         1: e      2: a b      miss: d goes (a newcomer is the first victim)
        //   e         1: -      2: a b e    hit: e reached 2 after a and b
        //   f         1: f      2: b e      miss: a goes, the oldest at the lowest count
        //   a         1: a      2: b e      miss (a starts again at 1): f goes
        let mut c = Lfu::new(3);
        assert_eq!(hits(&mut c, &letters("abcabdeefa")), "mmmhhmmhmm");
        assert_eq!(hits(&mut c, &letters("be")), "hh");
        assert_eq!((c.len(), c.used()), (3, 3));
    }

    #[test]
    fn sizes() {
        // capacity 5, (key, size); buckets by count, each oldest first
        //   1(2) 2(1) 3(2)   1: 1 2 3          full
        //   2 2 3            1: 1  2: 3  3: 2  hits
        //   4(3)             1: 4  3: 2        miss: 1 goes (3 bytes in use, 3 more needed),
        //                                      then 3, the oldest at the next count
        //   2 4              2: 4  4: 2        hits
        //   1(2)             1: 1  4: 2        miss: 4 goes
        let mut c = Lfu::new(5);
        assert_eq!(
            hits(&mut c, &[(1, 2), (2, 1), (3, 2), (2, 1), (2, 1), (3, 2), (4, 3)]),
            "mmmhhhm"
        );
        assert_eq!((c.len(), c.used()), (2, 4));
        assert_eq!(hits(&mut c, &[(2, 1), (4, 3), (1, 2)]), "hhm");
        assert!(!c.access(9, 6));
    }
}
