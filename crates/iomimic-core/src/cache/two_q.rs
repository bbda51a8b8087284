//! 2Q: new objects wait in a FIFO (A1in); only those asked for again after leaving it, while
//! their key is remembered (A1out), reach the LRU main queue (Am).
//!
//! ## Algorithm
//! The "full version" of 2Q with libCacheSim's `TwoQ` defaults: A1in holds up to 25 % of the
//! capacity in bytes, the ghost FIFO A1out remembers keys (and sizes) of up to 50 % of it, Am
//! gets the rest (75 %). A hit in A1in changes nothing (a burst of correlated references does
//! not promote); a hit in Am moves to Am's front. A miss whose key is in A1out is admitted to
//! Am (removed from A1out); any other miss to A1in's front. To make room, while A1in + Am
//! plus the new object exceed the capacity: if A1in is over its share its oldest object moves
//! to A1out (which drops its own oldest keys to stay in its share), else Am's LRU object is
//! evicted. An object admitted to Am then also makes room within Am's own share.
//!
//! As in libCacheSim, an object larger than A1in's share is never admitted (even on an A1out
//! hit), and the shares are the capacity times the ratio, rounded down. With that the hits
//! equal libCacheSim's for any trace and sizes.
//!
//! ## Complexity
//! O(1) per access (amortised hash-map cost). Memory per object or remembered key: a map
//! entry and a slab node.
//!
//! ## References
//! Johnson & Shasha, "2Q: A Low Overhead High Performance Buffer Management Replacement
//! Algorithm" (VLDB 1994).

use rustc_hash::FxHashMap;

use super::slab::{List, Slab};
use super::{share, Policy, PolicySpec};

pub const POLICY: PolicySpec = PolicySpec {
    name: "2q",
    description: "2Q: FIFO for newcomers, LRU for objects seen again",
    build: |capacity| Box::new(TwoQ::new(capacity)),
};

/// A1in's and A1out's shares of the capacity (libCacheSim's defaults).
const IN_RATIO: f64 = 0.25;
const OUT_RATIO: f64 = 0.5;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    In,
    Out,
    Main,
}

pub struct TwoQ {
    capacity: u64,
    in_cap: u64,
    out_cap: u64,
    main_cap: u64,
    index: FxHashMap<u64, u32>,
    slab: Slab<Where>,
    a_in: List,
    a_out: List,
    main: List,
}

impl TwoQ {
    pub fn new(capacity: u64) -> Self {
        let in_cap = share(capacity, IN_RATIO);
        Self {
            capacity,
            in_cap,
            out_cap: share(capacity, OUT_RATIO),
            main_cap: capacity - in_cap,
            index: FxHashMap::default(),
            slab: Slab::default(),
            a_in: List::default(),
            a_out: List::default(),
            main: List::default(),
        }
    }

    fn forget(&mut self, i: u32) {
        self.index.remove(&self.slab.get(i).key);
        self.slab.release(i);
    }

    /// A1in's oldest object to A1out, which drops its oldest keys to make room.
    fn demote_oldest_in(&mut self) {
        let Some(i) = self.slab.pop_back(&mut self.a_in) else {
            return;
        };
        let size = self.slab.get(i).size;
        if size > self.out_cap {
            self.forget(i);
            return;
        }
        while self.a_out.bytes + size > self.out_cap {
            let Some(old) = self.slab.pop_back(&mut self.a_out) else {
                break;
            };
            self.forget(old);
        }
        self.slab.get_mut(i).meta = Where::Out;
        self.slab.push_front(&mut self.a_out, i);
    }

    fn evict_main(&mut self) {
        if let Some(i) = self.slab.pop_back(&mut self.main) {
            self.forget(i);
        }
    }
}

impl Policy for TwoQ {
    fn access(&mut self, key: u64, size: u64) -> bool {
        let mut remembered = false;
        if let Some(&i) = self.index.get(&key) {
            match self.slab.get(i).meta {
                Where::In => return true,
                Where::Main => {
                    self.slab.move_to_front(&mut self.main, i);
                    return true;
                }
                Where::Out => {
                    self.slab.unlink(&mut self.a_out, i);
                    self.forget(i);
                    remembered = true;
                }
            }
        }
        // nothing larger than A1in's share (so than the cache) is admitted
        if size > self.in_cap {
            return false;
        }
        while self.a_in.bytes + self.main.bytes + size > self.capacity {
            if self.a_in.bytes > self.in_cap {
                self.demote_oldest_in();
            } else {
                self.evict_main();
            }
        }
        let to = if remembered {
            // Am is a cache of its own share: it evicts for its newcomer too
            while self.main.bytes + size > self.main_cap && !self.main.is_empty() {
                self.evict_main();
            }
            Where::Main
        } else {
            Where::In
        };
        let i = self.slab.alloc(key, size, to);
        let list = if remembered {
            &mut self.main
        } else {
            &mut self.a_in
        };
        self.slab.push_front(list, i);
        self.index.insert(key, i);
        false
    }

    fn used(&self) -> u64 {
        self.a_in.bytes + self.main.bytes
    }

    fn len(&self) -> usize {
        (self.a_in.len + self.main.len) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::hits;
    use super::*;

    fn state(c: &TwoQ) -> [Vec<u64>; 3] {
        [c.slab.keys(&c.a_in), c.slab.keys(&c.a_out), c.slab.keys(&c.main)]
    }

    #[test]
    fn by_hand() {
        // capacity 8, unit sizes: shares A1in 2, A1out 4, Am 6; queues newest first
        //   1..8        in 87654321              misses; A1in may pass its share while room is left
        //   1           in 87654321              hit in A1in: nothing moves
        //   9           in 98765432  out 1       miss: A1in over its share: 1 to A1out
        //   1           in 9876543  out 2  m 1   A1out hit: 1 admitted to Am, room made by
        //                                        moving 2 to A1out
        let mut c = TwoQ::new(8);
        let unit = |k: &[u64]| k.iter().map(|&k| (k, 1)).collect::<Vec<_>>();
        assert_eq!(
            hits(&mut c, &unit(&[1, 2, 3, 4, 5, 6, 7, 8, 1, 9, 1])),
            "mmmmmmmmhmm"
        );
        assert_eq!(state(&c), [vec![9, 8, 7, 6, 5, 4, 3], vec![2], vec![1]]);
        // 2 comes back to Am; 10..12 push 3, 4, 5 out to A1out; 1 and 2 stay hits
        assert_eq!(hits(&mut c, &unit(&[2, 10, 11, 12, 1, 2])), "mmmmhh");
        assert_eq!(
            state(&c),
            [vec![12, 11, 10, 9, 8, 7], vec![6, 5, 4, 3], vec![2, 1]]
        );
    }

    #[test]
    fn sizes() {
        // capacity 16: A1in 4, A1out 8, Am 12
        //   1(4) 2(4) 3(4) 4(4)   in 4 3 2 1             full
        //   5(2)                  in 5 4 3 2   out 1     1 to A1out (A1in 16 > 4)
        //   1(4)                  in 5 4 3   out 2  m 1  A1out hit; 2 to A1out for room
        //   6(5)                  -                      larger than A1in's share: refused
        let mut c = TwoQ::new(16);
        let keys = [(1, 4), (2, 4), (3, 4), (4, 4), (5, 2), (1, 4), (6, 5), (1, 4)];
        assert_eq!(hits(&mut c, &keys), "mmmmmmmh");
        assert_eq!(state(&c), [vec![5, 4, 3], vec![2], vec![1]]);
        assert_eq!((c.used(), c.len()), (14, 4));
    }
}
