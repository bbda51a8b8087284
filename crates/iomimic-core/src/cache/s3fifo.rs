//! S3-FIFO: a small FIFO filters one-hit wonders, a main FIFO with reinsertion keeps the rest,
//! a ghost FIFO remembers what the small one dropped.
//!
//! ## Algorithm
//! libCacheSim's `S3FIFO` with its defaults: the small queue S gets 10 % of the capacity in
//! bytes, the main queue M the rest, the ghost G remembers keys (and sizes) of up to 90 %. Each
//! cached object has a counter, 0 on admission, raised by every hit (no other change on a
//! hit). A miss whose key is in G is admitted to M (and leaves G); any other miss to S —
//! except that before the first eviction, once S is full, newcomers go to M. To make room,
//! while S + M plus the new object exceed the capacity, one of:
//!
//! - if M is over its share or S is empty, M's oldest object is looked at: with a counter of 1
//!   or more it goes back to M's front with its counter min(counter, 3) − 1 (a 2-bit clock),
//!   else it is evicted; repeated until one is evicted;
//! - else S's oldest object: with a counter of 2 or more it moves to M's front (counter 0) and
//!   the next one is looked at; else it is evicted and its key put in G (which drops its oldest
//!   keys to stay in its share).
//!
//! As in libCacheSim, an object is admitted only if it fits in S's share (on a miss not in G,
//! only if strictly smaller; the room is made before that check, so such a miss still evicts),
//! and shares are the capacity times the ratio, rounded down. With that the hits equal
//! libCacheSim's for any trace and sizes. Below 10 bytes S's share is 0: libCacheSim refuses
//! to build such a cache (it aborts the process); here it admits nothing.
//!
//! ## Complexity
//! O(1) amortised per access: M's reinsertions each spend a counter a hit raised. Memory per
//! object or ghost key: a map entry and a slab node.
//!
//! ## References
//! Yang, Zhang, Qiu, Yue & Vinayak, "FIFO queues are all you need for cache eviction"
//! (SOSP 2023).

use rustc_hash::FxHashMap;

use super::slab::{List, Slab};
use super::{share, Policy, PolicySpec};

pub const POLICY: PolicySpec = PolicySpec {
    name: "s3fifo",
    description: "S3-FIFO: small, main and ghost FIFO queues",
    build: |capacity| Box::new(S3Fifo::new(capacity)),
};

/// The small queue's and the ghost's shares, and the hits that promote out of the small queue
/// (libCacheSim's defaults).
const SMALL_RATIO: f64 = 0.1;
const GHOST_RATIO: f64 = 0.9;
const PROMOTE_AT: u8 = 2;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    Small,
    Main,
    Ghost,
}

#[derive(Clone, Copy)]
pub struct Meta {
    at: Where,
    /// Hits since admission (saturating: only "3 or more" matters).
    hits: u8,
}

pub struct S3Fifo {
    capacity: u64,
    small_cap: u64,
    main_cap: u64,
    ghost_cap: u64,
    index: FxHashMap<u64, u32>,
    slab: Slab<Meta>,
    small: List,
    main: List,
    ghost: List,
    /// Whether anything was evicted yet (until then, newcomers go to M once S is full).
    evicted: bool,
}

impl S3Fifo {
    pub fn new(capacity: u64) -> Self {
        let small_cap = share(capacity, SMALL_RATIO);
        Self {
            capacity,
            small_cap,
            main_cap: capacity - small_cap,
            ghost_cap: share(capacity, GHOST_RATIO),
            index: FxHashMap::default(),
            slab: Slab::default(),
            small: List::default(),
            main: List::default(),
            ghost: List::default(),
            evicted: false,
        }
    }

    fn forget(&mut self, i: u32) {
        self.index.remove(&self.slab.get(i).key);
        self.slab.release(i);
    }

    fn evict(&mut self) {
        self.evicted = true;
        if self.main.bytes > self.main_cap || self.small.bytes == 0 {
            self.evict_main();
        } else {
            self.evict_small();
        }
    }

    fn evict_main(&mut self) {
        while let Some(i) = self.main.back() {
            let meta = &mut self.slab.get_mut(i).meta;
            if meta.hits >= 1 {
                meta.hits = meta.hits.min(3) - 1;
                self.slab.move_to_front(&mut self.main, i);
            } else {
                self.slab.unlink(&mut self.main, i);
                self.forget(i);
                return;
            }
        }
    }

    fn evict_small(&mut self) {
        while let Some(i) = self.slab.pop_back(&mut self.small) {
            let node = self.slab.get_mut(i);
            if node.meta.hits >= PROMOTE_AT {
                node.meta = Meta {
                    at: Where::Main,
                    hits: 0,
                };
                self.slab.push_front(&mut self.main, i);
                continue;
            }
            let size = node.size;
            if size > self.ghost_cap {
                self.forget(i);
                return;
            }
            while self.ghost.bytes + size > self.ghost_cap {
                let Some(old) = self.slab.pop_back(&mut self.ghost) else {
                    break;
                };
                self.forget(old);
            }
            self.slab.get_mut(i).meta = Meta {
                at: Where::Ghost,
                hits: 0,
            };
            self.slab.push_front(&mut self.ghost, i);
            return;
        }
    }
}

impl Policy for S3Fifo {
    fn access(&mut self, key: u64, size: u64) -> bool {
        let mut remembered = false;
        if let Some(&i) = self.index.get(&key) {
            let meta = &mut self.slab.get_mut(i).meta;
            if meta.at != Where::Ghost {
                meta.hits = meta.hits.saturating_add(1);
                return true;
            }
            self.slab.unlink(&mut self.ghost, i);
            self.forget(i);
            remembered = true;
        }
        // nothing larger than S's share (so than the cache) is admitted
        if size > self.small_cap {
            return false;
        }
        while self.small.bytes + self.main.bytes + size > self.capacity {
            self.evict();
        }
        let to = if remembered {
            Where::Main
        } else if size >= self.small_cap {
            return false;
        } else if !self.evicted && self.small.bytes >= self.small_cap {
            Where::Main
        } else {
            Where::Small
        };
        let i = self.slab.alloc(key, size, Meta { at: to, hits: 0 });
        let list = if to == Where::Main {
            &mut self.main
        } else {
            &mut self.small
        };
        self.slab.push_front(list, i);
        self.index.insert(key, i);
        false
    }

    fn used(&self) -> u64 {
        self.small.bytes + self.main.bytes
    }

    fn len(&self) -> usize {
        (self.small.len + self.main.len) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::hits;
    use super::*;

    fn state(c: &S3Fifo) -> [Vec<u64>; 3] {
        [c.slab.keys(&c.small), c.slab.keys(&c.main), c.slab.keys(&c.ghost)]
    }

    fn unit(keys: &[u64]) -> Vec<(u64, u64)> {
        keys.iter().map(|&k| (k, 1)).collect()
    }

    #[test]
    fn by_hand() {
        // capacity 20, unit sizes: shares S 2, M 18, G 18; queues newest first, [n] = hits
        //   1 2 1 1    S 2 1[2]                   two misses, two hits
        //   3..20      S 2 1[2]  M 20..3          S is full and nothing evicted yet: to M
        //   21         S 21      M 1 20..3   G 2  room from S: 1 has 2 hits, to M; 2 has
        //                                         none, to G
        //   3          M 1 20..4 3[1]             hit
        //   22         S 22 21   M 3 1 20..5      M over its share: 3 goes round (its count
        //                                         down to 0), 4 is evicted
        //   2          S 22      M 2 3 1 20..5  G 21   G hit: to M; room from S: 21 to G
        //   1          M ... 1[1] ...             hit
        //   23         S 23 22   M 2 3 1 20..6  G 21   M over its share: 5 evicted
        let mut c = S3Fifo::new(20);
        let mut keys: Vec<u64> = vec![1, 2, 1, 1];
        keys.extend(3..=20);
        keys.extend([21, 3, 22, 2, 1, 23]);
        let expect = "mmhh".to_owned() + &"m".repeat(18) + "mhmmhm";
        assert_eq!(hits(&mut c, &unit(&keys)), expect);
        let mut main = vec![2, 3, 1];
        main.extend((6..=20).rev());
        assert_eq!(state(&c), [vec![23, 22], main, vec![21]]);
        // 2 is cached, 21 only remembered
        assert_eq!(hits(&mut c, &unit(&[2, 21])), "hm");
    }

    #[test]
    fn sizes() {
        // capacity 40: shares S 4, M 36, G 36; (key, size)
        //   1(2) 2(2) 1 1     S 2 1[2]                    full S
        //   3..14 (3 each)    S 2 1[2]   M 14..3          36 bytes to M: full
        //   15(4)             M 1 14..4        G 2        room: 1 to M, 2 to G, then M
        //                                                 over its share: 3 evicted; but
        //                                                 15 is not smaller than S's share:
        //                                                 not admitted
        //   2(2)              M 2 1 14..4                 G hit: to M (37 bytes)
        //   16(3)             S 16                        fits (40)
        //   3(3)              S 3 16     M 2 1 14..5      M over its share: 4 evicted
        let mut c = S3Fifo::new(40);
        let mut keys: Vec<(u64, u64)> = vec![(1, 2), (2, 2), (1, 2), (1, 2)];
        keys.extend((3..=14).map(|k| (k, 3)));
        keys.extend([(15, 4), (2, 2), (16, 3), (3, 3)]);
        let expect = "mmhh".to_owned() + &"m".repeat(12) + "mmmm";
        assert_eq!(hits(&mut c, &keys), expect);
        let mut main = vec![2, 1];
        main.extend((5..=14).rev());
        assert_eq!(state(&c), [vec![3, 16], main, vec![]]);
        assert_eq!((c.used(), c.len()), (40, 14));
        // larger than S's share: refused outright
        assert!(!c.access(99, 5));
        assert_eq!(c.used(), 40);
    }

    #[test]
    fn under_ten_bytes_the_small_queue_has_no_room_and_nothing_is_admitted() {
        // libCacheSim refuses such a cache (it aborts); here every object is too large for S
        let mut c = S3Fifo::new(9);
        assert_eq!(hits(&mut c, &unit(&[1, 1, 1])), "mmm");
        assert!(c.is_empty());
    }
}
