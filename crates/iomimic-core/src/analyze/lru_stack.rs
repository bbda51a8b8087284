//! The LRU stack over block keys, both ways: the distance of a touch (the miss-ratio curve,
//! training's reuse depths) and the block at a given depth (generation). The one LRU stack of
//! the crate.
//!
//! ## Algorithm
//! A Fenwick tree over touch times holds a 1 at the latest touch of every key. The distance of
//! a touch is the number of marks after the key's previous touch (distinct keys touched since);
//! the key at depth d is the one whose mark has d − 1 marks after it, found by descending the
//! tree. Both are O(log n). The tree grows one time at a time: a new node sums the nodes below
//! it that tile its range.
//!
//! ## References
//! Bennett & Kruskal, "LRU stack processing" (1975); Thiébaut, Wolf & Stone, "Synthetic traces
//! for trace-driven simulation of cache memories" (1992) for generating by stack depth.

use rustc_hash::FxHashMap;

pub type Key = (u32, u64);

/// Marked touch times: a growable Fenwick tree (1-based nodes) and the count of marks.
struct Marks {
    tree: Vec<u32>,
    count: usize,
}

impl Marks {
    fn with_capacity(capacity: usize) -> Self {
        let mut tree = Vec::with_capacity(capacity + 1);
        tree.push(0);
        Self { tree, count: 0 }
    }

    /// Touch times so far.
    fn len(&self) -> usize {
        self.tree.len() - 1
    }

    /// Appends the next time, marked: node n covers times (n − lowbit(n), n].
    fn push(&mut self) {
        let n = self.tree.len();
        let low = n & n.wrapping_neg();
        let mut covered = 1u32;
        let mut j = n - 1;
        while j > n - low {
            covered += self.tree[j];
            j &= j - 1;
        }
        self.tree.push(covered);
        self.count += 1;
    }

    fn unmark(&mut self, at: usize) {
        let mut i = at + 1;
        while i < self.tree.len() {
            self.tree[i] -= 1;
            i += i & i.wrapping_neg();
        }
        self.count -= 1;
    }

    /// Marks at times `[0, at)`.
    fn before(&self, at: usize) -> usize {
        let mut i = at;
        let mut sum = 0usize;
        while i > 0 {
            sum += self.tree[i] as usize;
            i &= i - 1;
        }
        sum
    }

    /// The marked time with `depth − 1` marks after it (1 = the newest), if that deep.
    fn at_depth(&self, depth: u64) -> Option<usize> {
        let depth = usize::try_from(depth).ok()?;
        if depth == 0 || depth > self.count {
            return None;
        }
        let mut k = self.count - depth + 1;
        let mut pos = 0usize;
        let mut step = (self.tree.len() - 1).next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && (self.tree[next] as usize) < k {
                pos = next;
                k -= self.tree[next] as usize;
            }
            step >>= 1;
        }
        Some(pos)
    }
}

/// A stack that finds each key's previous touch in a map to measure its depth. Touch times
/// are 32-bit (the map is most of the memory: a key and a time per distinct block).
pub struct Stack {
    marks: Marks,
    last: FxHashMap<Key, u32>,
}

impl Stack {
    /// A stack expecting about `capacity` touches (it grows past that).
    pub fn new(capacity: usize) -> Self {
        let mut last = FxHashMap::default();
        last.reserve(capacity.min(1 << 24));
        Self {
            marks: Marks::with_capacity(capacity),
            last,
        }
    }

    /// Touches `key` at the next time. Returns the key's stack depth before this touch, 1 being
    /// the most recently used key, or `None` on a first touch.
    pub fn touch(&mut self, key: Key) -> Option<u64> {
        self.touch_prev(key).map(|(depth, _)| depth)
    }

    /// As [`Stack::touch`], with the time of the key's previous touch (touches count from 0).
    pub fn touch_prev(&mut self, key: Key) -> Option<(u64, usize)> {
        let now = self.marks.len();
        let depth = self.last.insert(key, now as u32).map(|prev| {
            let prev = prev as usize;
            // marks after prev: all marks but those up to and including prev
            let between = self.marks.count - self.marks.before(prev + 1);
            self.marks.unmark(prev);
            (between as u64 + 1, prev)
        });
        self.marks.push();
        depth
    }

    /// Takes `key` off the stack: its depth before (1 = most recent) and its latest touch
    /// time, or `None` if it is not on it.
    pub fn remove(&mut self, key: Key) -> Option<(u64, usize)> {
        let prev = self.last.remove(&key)? as usize;
        let between = self.marks.count - self.marks.before(prev + 1);
        self.marks.unmark(prev);
        Some((between as u64 + 1, prev))
    }

    /// The time of the latest touch of the key at `depth` (1 = most recent), if that deep.
    #[cfg(test)]
    pub fn at_depth(&self, depth: u64) -> Option<usize> {
        self.marks.at_depth(depth)
    }

    /// Distinct keys touched.
    pub fn keys(&self) -> usize {
        self.last.len()
    }
}

/// The generator's stack: no key map. The generator knows when a request re-touches a block
/// (it re-issues an earlier request, or continues one within its block), so it passes that
/// request's time; with no map and no distance to measure a touch is O(1) amortised.
pub struct GenStack {
    marks: Marks,
    /// Whether each time is still its key's latest touch.
    latest: Vec<bool>,
}

impl GenStack {
    pub fn new(capacity: usize) -> Self {
        Self {
            marks: Marks::with_capacity(capacity),
            latest: Vec::with_capacity(capacity),
        }
    }

    /// Distinct keys on the stack.
    pub fn depth(&self) -> usize {
        self.marks.count
    }

    /// Adds the next touch; `prev` is the time this key was touched before, if it was.
    /// Returns the new touch's time.
    pub fn push(&mut self, prev: Option<usize>) -> usize {
        if let Some(p) = prev {
            self.forget(p);
        }
        self.marks.push();
        self.latest.push(true);
        self.latest.len() - 1
    }

    /// Takes the key last touched at `time` off the stack (it moved to another stack); a time
    /// that is not its key's latest touch is ignored.
    pub fn forget(&mut self, time: usize) {
        if self.latest.get(time) == Some(&true) {
            self.latest[time] = false;
            self.marks.unmark(time);
        }
    }

    /// The time of the latest touch of the key at `depth` (1 = most recent), if that deep.
    pub fn at_depth(&self, depth: u64) -> Option<usize> {
        self.marks.at_depth(depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_by_hand() {
        let mut s = Stack::new(2); // grows past its capacity
        let (a, b, c) = ((0, 1), (0, 2), (0, 3));
        assert_eq!(s.touch(a), None);
        assert_eq!(s.touch(b), None);
        assert_eq!(s.touch(c), None);
        // stack is c b a: a is at depth 3
        assert_eq!(s.at_depth(1), Some(2));
        assert_eq!(s.at_depth(3), Some(0));
        assert_eq!(s.at_depth(4), None);
        assert_eq!(s.touch(a), Some(3));
        // stack is a c b
        assert_eq!(s.touch(a), Some(1));
        assert_eq!(s.at_depth(3), Some(1)); // b, last touched at time 1
        assert_eq!(s.touch(b), Some(3));
        for k in 10..100 {
            s.touch((1, k));
        }
        assert_eq!(s.at_depth(90), Some(6)); // the oldest of the 90 new keys, touched at 6
        assert_eq!(s.touch(b), Some(91));
        // b is on top; taking the oldest new key off leaves b's depth alone
        assert_eq!(s.remove((1, 10)), Some((91, 6)));
        assert_eq!(s.remove((1, 10)), None);
        assert_eq!(s.touch(b), Some(1));
        assert_eq!(s.touch((1, 11)), Some(90));
    }

    #[test]
    fn generator_stack_follows_known_retouches() {
        let mut g = GenStack::new(0);
        g.push(None); // a at 0
        g.push(None); // b at 1
        g.push(None); // c at 2
        assert_eq!((g.depth(), g.at_depth(3)), (3, Some(0)));
        g.push(Some(0)); // a again at 3: stack a c b
        assert_eq!(g.depth(), 3);
        assert_eq!(g.at_depth(3), Some(1));
        assert_eq!(g.at_depth(1), Some(3));
        g.push(Some(0)); // a stale previous time is ignored: a new key d at 4
        assert_eq!(g.depth(), 4);
        g.forget(3); // a moved to another stack: d c b
        assert_eq!((g.depth(), g.at_depth(3)), (3, Some(1)));
    }
}
