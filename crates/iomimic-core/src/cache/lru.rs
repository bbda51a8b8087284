//! LRU: evict the least recently used object.
//!
//! ## Algorithm
//! A doubly linked list of objects in recency order, kept in a slab (indexes, not pointers),
//! and a map from key to slab index: a hit moves its object to the front, a miss inserts at
//! the front and evicts from the back until the new object fits.
//!
//! ## Complexity
//! O(1) per access (amortised hash-map cost); memory per object: the map entry and a slab
//! node (key, size, two links).
//!
//! ## References
//! Mattson et al., "Evaluation techniques for storage hierarchies" (1970).

use rustc_hash::FxHashMap;

use super::{Policy, PolicySpec};

pub const POLICY: PolicySpec = PolicySpec {
    name: "lru",
    description: "least recently used",
    build: |capacity| Box::new(Lru::new(capacity)),
};

const NONE: u32 = u32::MAX;

struct Node {
    key: u64,
    size: u64,
    prev: u32,
    next: u32,
}

pub struct Lru {
    capacity: u64,
    used: u64,
    index: FxHashMap<u64, u32>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    /// Most and least recently used.
    head: u32,
    tail: u32,
}

impl Lru {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            used: 0,
            index: FxHashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NONE,
            tail: NONE,
        }
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = (self.nodes[i as usize].prev, self.nodes[i as usize].next);
        if prev == NONE {
            self.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, i: u32) {
        self.nodes[i as usize].prev = NONE;
        self.nodes[i as usize].next = self.head;
        if self.head != NONE {
            self.nodes[self.head as usize].prev = i;
        }
        self.head = i;
        if self.tail == NONE {
            self.tail = i;
        }
    }

    fn evict_tail(&mut self) {
        let i = self.tail;
        self.unlink(i);
        let node = &self.nodes[i as usize];
        self.used -= node.size;
        self.index.remove(&node.key);
        self.free.push(i);
    }
}

impl Policy for Lru {
    fn access(&mut self, key: u64, size: u64) -> bool {
        if let Some(&i) = self.index.get(&key) {
            self.unlink(i);
            self.push_front(i);
            return true;
        }
        if size > self.capacity {
            return false;
        }
        while self.used + size > self.capacity {
            self.evict_tail();
        }
        let node = Node {
            key,
            size,
            prev: NONE,
            next: NONE,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.index.insert(key, i);
        self.push_front(i);
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
}
