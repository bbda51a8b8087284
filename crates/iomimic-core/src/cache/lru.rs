//! LRU: evict the least recently used object.
//!
//! ## Algorithm
//! One list of objects in recency order (a [`Slab`] list: nodes linked by index) and a map from
//! key to node: a hit moves its object to the front, a miss inserts at the front and evicts
//! from the back until the new object fits. This is libCacheSim's `LRU` access for access.
//!
//! ## Complexity
//! O(1) per access (amortised hash-map cost); memory per object: the map entry and a slab
//! node (key, size, two links).
//!
//! ## References
//! Mattson et al., "Evaluation techniques for storage hierarchies" (1970).

use rustc_hash::FxHashMap;

use super::slab::{List, Slab};
use super::{Policy, PolicySpec};

pub const POLICY: PolicySpec = PolicySpec {
    name: "lru",
    description: "least recently used",
    build: |capacity| Box::new(Lru::new(capacity)),
};

pub struct Lru {
    capacity: u64,
    index: FxHashMap<u64, u32>,
    slab: Slab<()>,
    /// Most recently used at the front.
    list: List,
}

impl Lru {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            index: FxHashMap::default(),
            slab: Slab::default(),
            list: List::default(),
        }
    }
}

impl Policy for Lru {
    fn access(&mut self, key: u64, size: u64) -> bool {
        if let Some(&i) = self.index.get(&key) {
            self.slab.move_to_front(&mut self.list, i);
            return true;
        }
        if size > self.capacity {
            return false;
        }
        while self.list.bytes + size > self.capacity {
            let Some(old) = self.slab.pop_back(&mut self.list) else {
                break;
            };
            self.index.remove(&self.slab.get(old).key);
            self.slab.release(old);
        }
        let i = self.slab.alloc(key, size, ());
        self.slab.push_front(&mut self.list, i);
        self.index.insert(key, i);
        false
    }

    fn used(&self) -> u64 {
        self.list.bytes
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
        // capacity 3: a b c a d (evicts b, the least recent) b (miss, evicts c) a (hit)
        let mut c = Lru::new(3);
        assert_eq!(hits(&mut c, &letters("abcadba")), "mmmhmmh");
        assert_eq!((c.len(), c.used()), (3, 3));
        // sizes: a 2-byte object pushes out two 1-byte ones; one larger than the cache is not kept
        let mut c = Lru::new(3);
        assert_eq!(
            hits(&mut c, &[(1, 1), (2, 1), (3, 1), (4, 2), (3, 1), (1, 1)]),
            "mmmmhm"
        );
        assert!(!c.access(9, 4) && !c.access(9, 4));
    }

    #[test]
    fn a_hit_keeps_the_stored_size() {
        // 1 is stored at 1 byte; asked again at 3 bytes it hits and still takes 1 byte
        let mut c = Lru::new(4);
        assert_eq!(hits(&mut c, &[(1, 1), (1, 3), (2, 3), (1, 1)]), "mhmh");
        assert_eq!(c.used(), 4);
    }
}
