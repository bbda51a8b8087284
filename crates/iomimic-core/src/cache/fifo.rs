//! FIFO: evict the object cached longest ago, whatever its use since.
//!
//! ## Algorithm
//! A queue of keys in admission order and a map of what is cached; a hit changes nothing.
//!
//! ## Complexity
//! O(1) per access (amortised hash-map cost).
//!
//! ## References
//! Belady, "A study of replacement algorithms for a virtual-storage computer" (1966).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::{Policy, PolicySpec};

pub const POLICY: PolicySpec = PolicySpec {
    name: "fifo",
    description: "first in, first out",
    build: |capacity| Box::new(Fifo::new(capacity)),
};

pub struct Fifo {
    capacity: u64,
    used: u64,
    sizes: FxHashMap<u64, u64>,
    queue: VecDeque<u64>,
}

impl Fifo {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            used: 0,
            sizes: FxHashMap::default(),
            queue: VecDeque::new(),
        }
    }
}

impl Policy for Fifo {
    fn access(&mut self, key: u64, size: u64) -> bool {
        if self.sizes.contains_key(&key) {
            return true;
        }
        if size > self.capacity {
            return false;
        }
        while self.used + size > self.capacity {
            let Some(old) = self.queue.pop_front() else { break };
            self.used -= self.sizes.remove(&old).unwrap_or(0);
        }
        self.queue.push_back(key);
        self.sizes.insert(key, size);
        self.used += size;
        false
    }

    fn used(&self) -> u64 {
        self.used
    }

    fn len(&self) -> usize {
        self.sizes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{hits, letters};
    use super::*;

    #[test]
    fn by_hand() {
        // capacity 3: a b c a (hit, order unchanged) d (evicts a, the first in) a (miss)
        let mut c = Fifo::new(3);
        assert_eq!(hits(&mut c, &letters("abcada")), "mmmhmm");
        assert_eq!(c.len(), 3);
    }
}
