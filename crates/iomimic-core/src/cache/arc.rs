//! ARC: an LRU list of objects seen once and one of objects seen again, their split tuned by
//! ghost lists of what each recently evicted.
//!
//! ## Algorithm
//! Four lists: T1 (cached, seen once since admission), T2 (cached, hit since), and the ghosts B1
//! and B2 (keys and sizes of objects recently evicted from T1 and T2, not cached). A target `p`
//! for T1's bytes moves with the ghosts: a request for a key in B1 raises it by
//! max(|B2| / |B1|, 1), one in B2 lowers it by max(|B1| / |B2|, 1), `p` staying in [0, capacity].
//! A hit moves the object to T2's front; a ghost hit counts as a miss and the object comes
//! back at T2's front; any other miss admits at T1's front. REPLACE evicts T1's LRU object into
//! B1 when T1 is non-empty and above `p` (or at `p` when the request hit B2), or when T2 is
//! empty; else T2's LRU object into B2.
//!
//! Sizes follow libCacheSim's `ARC` (in bytes, one eviction at a time until the object fits):
//!
//! - `|B1|`, `|B2|` and `p` are bytes, and the step is still at least 1: with objects of many
//!   bytes `p` moves slowly (a few bytes a ghost hit) rather than an object at a time;
//! - on a ghost hit, each eviction is a plain REPLACE (the ghosts are not trimmed);
//! - on any other miss, each eviction first bounds the ghosts: if T1 + B1 + the new object
//!   exceed the capacity, B1's oldest entry is dropped and REPLACE runs, or, with B1 empty,
//!   T1's LRU object is dropped without a ghost; otherwise, if all four lists hold twice the
//!   capacity or more, B2's oldest entry is dropped, then REPLACE runs;
//! - the "request hit B2" flag of REPLACE is cleared only by the next request that finds its
//!   key on any list (or by the admission after a ghost hit), as libCacheSim's is.
//!
//! With all of that mirrored, the hits equal libCacheSim's for any trace and sizes.
//!
//! ## Complexity
//! O(1) per access (amortised hash-map cost). Memory per object or ghost: a map entry and a
//! slab node; the ghosts hold up to about the capacity again in bytes of keys.
//!
//! ## References
//! Megiddo & Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache" (FAST 2003).

use rustc_hash::FxHashMap;

use super::slab::{List, Slab};
use super::{Policy, PolicySpec};

pub const POLICY: PolicySpec = PolicySpec {
    name: "arc",
    description: "adaptive replacement cache",
    build: |capacity| Box::new(ArcCache::new(capacity)),
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    T1,
    T2,
    B1,
    B2,
}

pub struct ArcCache {
    capacity: u64,
    index: FxHashMap<u64, u32>,
    slab: Slab<Where>,
    t1: List,
    t2: List,
    b1: List,
    b2: List,
    /// T1's target size in bytes (a float, as libCacheSim keeps it).
    p: f64,
    /// The last request that found its key on a list found it in B2 (REPLACE's tie rule).
    last_in_b2: bool,
}

impl ArcCache {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            index: FxHashMap::default(),
            slab: Slab::default(),
            t1: List::default(),
            t2: List::default(),
            b1: List::default(),
            b2: List::default(),
            p: 0.0,
            last_in_b2: false,
        }
    }

    fn list(&mut self, w: Where) -> &mut List {
        match w {
            Where::T1 => &mut self.t1,
            Where::T2 => &mut self.t2,
            Where::B1 => &mut self.b1,
            Where::B2 => &mut self.b2,
        }
    }

    /// Drops the oldest entry of `w` from the cache and the map.
    fn drop_back(&mut self, w: Where) {
        let mut list = *self.list(w);
        if let Some(i) = self.slab.pop_back(&mut list) {
            self.index.remove(&self.slab.get(i).key);
            self.slab.release(i);
        }
        *self.list(w) = list;
    }

    /// Moves the oldest entry of `from` to the front of `to`.
    fn demote(&mut self, from: Where, to: Where) {
        let (mut a, mut b) = (*self.list(from), *self.list(to));
        if let Some(i) = self.slab.pop_back(&mut a) {
            self.slab.push_front(&mut b, i);
            self.slab.get_mut(i).meta = to;
        }
        *self.list(from) = a;
        *self.list(to) = b;
    }

    // libCacheSim's tie rule compares T1's bytes with `p` exactly
    #[allow(clippy::float_cmp)]
    fn replace(&mut self) {
        let t1 = self.t1.bytes as f64;
        let t1_over = t1 > self.p || (t1 == self.p && self.last_in_b2);
        if (self.t1.bytes > 0 && t1_over) || self.t2.bytes == 0 {
            self.demote(Where::T1, Where::B1);
        } else {
            self.demote(Where::T2, Where::B2);
        }
    }

    /// One eviction for a miss that was not a ghost hit (the paper's case IV).
    fn evict_cold(&mut self, incoming: u64) {
        if self.t1.bytes + self.b1.bytes + incoming > self.capacity {
            if self.b1.bytes > 0 {
                self.drop_back(Where::B1);
                self.replace();
            } else {
                self.drop_back(Where::T1);
            }
        } else {
            let all = self.t1.bytes + self.b1.bytes + self.t2.bytes + self.b2.bytes;
            if all >= 2 * self.capacity && self.b2.bytes > 0 {
                self.drop_back(Where::B2);
            }
            self.replace();
        }
    }
}

/// `a` if greater than `b`, else `b` (C's `MAX` macro: a NaN `a` gives `b`).
fn c_max(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

impl Policy for ArcCache {
    fn access(&mut self, key: u64, size: u64) -> bool {
        let mut ghost_hit = false;
        if let Some(&i) = self.index.get(&key) {
            self.last_in_b2 = false;
            match self.slab.get(i).meta {
                Where::T1 => {
                    self.slab.unlink(&mut self.t1, i);
                    self.slab.push_front(&mut self.t2, i);
                    self.slab.get_mut(i).meta = Where::T2;
                    return true;
                }
                Where::T2 => {
                    self.slab.move_to_front(&mut self.t2, i);
                    return true;
                }
                Where::B1 => {
                    let delta = c_max(self.b2.bytes as f64 / self.b1.bytes as f64, 1.0);
                    self.p = (self.p + delta).min(self.capacity as f64);
                    self.slab.unlink(&mut self.b1, i);
                }
                Where::B2 => {
                    self.last_in_b2 = true;
                    let delta = c_max(self.b1.bytes as f64 / self.b2.bytes as f64, 1.0);
                    self.p = c_max(self.p - delta, 0.0);
                    self.slab.unlink(&mut self.b2, i);
                }
            }
            self.index.remove(&key);
            self.slab.release(i);
            ghost_hit = true;
        }
        if size > self.capacity {
            return false;
        }
        while self.t1.bytes + self.t2.bytes + size > self.capacity {
            if ghost_hit {
                self.replace();
            } else {
                self.evict_cold(size);
            }
        }
        let to = if ghost_hit {
            self.last_in_b2 = false;
            Where::T2
        } else {
            Where::T1
        };
        let i = self.slab.alloc(key, size, to);
        let mut list = *self.list(to);
        self.slab.push_front(&mut list, i);
        *self.list(to) = list;
        self.index.insert(key, i);
        false
    }

    fn used(&self) -> u64 {
        self.t1.bytes + self.t2.bytes
    }

    fn len(&self) -> usize {
        (self.t1.len + self.t2.len) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{hits, letters};
    use super::*;

    /// T1, T2, B1 and B2, newest first, keys as letters.
    fn lists(c: &ArcCache) -> [String; 4] {
        [&c.t1, &c.t2, &c.b1, &c.b2].map(|l| c.slab.keys(l).iter().map(|&k| k as u8 as char).collect())
    }

    #[test]
    fn by_hand() {
        // capacity 2, unit sizes; lists newest first
        //   a b  T1 ba                      misses
        //   a    T1 b   T2 a                hit: to T2
        //   c    T1 c   T2 a   B1 b         miss: T1+B1+1 <= 2, all lists < 4: REPLACE;
        //                                   T1 = 1 > p = 0: b to B1
        //   b    T1 c   T2 b          B2 a  B1 ghost hit: p = 0 + max(0/1, 1) = 1; REPLACE:
        //                                   T1 = 1 = p (not over), T2 not empty: a to B2
        //   a           T2 ab  B1 c         B2 ghost hit: p = max(1 - 1, 0) = 0; REPLACE:
        //                                   T1 = 1 > 0: c to B1
        //   d    T1 d   T2 a   B1 c   B2 b  miss: T1+B1+1 = 2, lists 3: REPLACE: T1
        //                                   empty: b to B2
        //   c    T1 d   T2 c          B2 ab B1 ghost hit: p = 0 + max(1/1, 1) = 1; REPLACE:
        //                                   T1 = 1 = p: a to B2
        //   e    T1 ed         B1     B2 ca miss: lists hold 4 = 2 x capacity: B2's oldest
        //                                   (b) dropped; REPLACE: T1 = p: c to B2
        let mut c = ArcCache::new(2);
        assert_eq!(hits(&mut c, &letters("abacbadce")), "mmhmmmmmm");
        assert_eq!(lists(&c), ["ed", "", "", "ca"].map(String::from));
        assert!((c.p - 1.0).abs() < 1e-12);
        assert_eq!(hits(&mut c, &letters("d")), "h");
    }

    #[test]
    fn sizes() {
        // capacity 4, (key, size)
        //   1(2) 2 3        T1 3 2 1                  misses, full
        //   2               T1 3 1    T2 2            hit
        //   4(2)            T1 4 3    T2 2            miss: T1+B1+2 > 4 with B1 empty: 1 is
        //                                             dropped with no ghost (2 bytes free)
        //   1(2)            T1 1      T2 2  B1 4      miss: 3 dropped the same way; then
        //                                             T1+B1+2 = 4: REPLACE: 4 to B1
        //   4(2)                      T2 4 2  B1 1    B1 ghost hit: p = 1; REPLACE: T1 =
        //                                             2 > 1: 1 to B1
        //   3               T1 3      T2 4 2  B1 1    miss, fits
        //   1(2)            T1 3      T2 1  B2 4 2    B1 ghost hit: p = 2; REPLACE twice:
        //                                             T1 = 1 < p, so T2's LRU: 2, then 4
        let mut c = ArcCache::new(4);
        let keys = [
            (1, 2),
            (2, 1),
            (3, 1),
            (2, 1),
            (4, 2),
            (1, 2),
            (4, 2),
            (3, 1),
            (1, 2),
        ];
        assert_eq!(hits(&mut c, &keys), "mmmhmmmmm");
        assert_eq!(c.slab.keys(&c.t1), [3]);
        assert_eq!(c.slab.keys(&c.t2), [1]);
        assert!(c.b1.is_empty());
        assert_eq!(c.slab.keys(&c.b2), [4, 2]);
        assert_eq!((c.used(), c.len()), (3, 2));
        assert!(!c.access(9, 5));
    }
}
