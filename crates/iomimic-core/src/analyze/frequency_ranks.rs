//! Ranks by touch count, the least-frequently-used counterpart of [`super::lru_stack`]: how
//! many keys were touched more often than one with a given count, and which count the key at a
//! given rank has (rank 1 is the most touched key; keys of equal count share a run of ranks).
//!
//! ## Algorithm
//! A Fenwick tree over touch counts holds how many keys have each count. Its size is a power
//! of two, doubled (and rebuilt) when a count passes it, so it costs what the highest count
//! needs, not what the trace's length could.
//!
//! ## Complexity
//! O(log c) a touch or a look-up, c the highest count; 16 bytes per count value up to c.

/// Keys by touch count.
#[derive(Debug, Default, Clone)]
pub struct CountRanks {
    /// Fenwick tree: `tree[i]` sums the keys of counts `(i - lowbit(i), i]`
    tree: Vec<u64>,
    /// keys of each count, as the tree is rebuilt from them
    of_count: Vec<u64>,
    keys: u64,
}

impl CountRanks {
    /// Keys touched.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Keys touched exactly `count` times.
    pub fn with(&self, count: u32) -> u64 {
        self.of_count.get(count as usize).copied().unwrap_or(0)
    }

    /// Keys touched more than `count` times.
    pub fn above(&self, count: u32) -> u64 {
        self.keys - self.up_to(count)
    }

    /// A key with `count` touches (at least 1) joins.
    pub fn add(&mut self, count: u32) {
        let c = count.max(1) as usize;
        if c >= self.tree.len() {
            self.grow(c);
        }
        self.keys += 1;
        self.of_count[c] += 1;
        self.update(c, 1);
    }

    /// A key with `count` touches leaves (it was added with that count).
    pub fn remove(&mut self, count: u32) {
        let c = count.max(1) as usize;
        debug_assert!(self.with(count) > 0, "a key of that count was added");
        self.keys -= 1;
        self.of_count[c] -= 1;
        self.update(c, u64::MAX); // wrapping: minus one
    }

    /// The count of the key at `rank` (1 = most touched) and its place among the keys of that
    /// count (0-based), if that many keys were touched.
    pub fn at_rank(&self, rank: u64) -> Option<(u32, u64)> {
        if rank == 0 || rank > self.keys {
            return None;
        }
        // the keys in ascending count order: the key at rank r is at place keys - r of them
        let place = self.keys - rank;
        // the largest index whose prefix sum is at most `place`: the count is one past it
        let (mut at, mut left) = (0usize, place);
        let mut step = self.tree.len().next_power_of_two() >> 1;
        while step > 0 {
            let next = at + step;
            if next < self.tree.len() && self.tree[next] <= left {
                at = next;
                left -= self.tree[next];
            }
            step >>= 1;
        }
        Some(((at + 1) as u32, left))
    }

    /// Keys with counts 1..=`count`.
    fn up_to(&self, count: u32) -> u64 {
        let mut i = (count as usize).min(self.tree.len().saturating_sub(1));
        let mut sum = 0u64;
        while i > 0 {
            sum = sum.wrapping_add(self.tree[i]);
            i &= i - 1;
        }
        sum
    }

    fn update(&mut self, mut i: usize, delta: u64) {
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Room for counts up to `count` at least, the tree rebuilt from the counts' keys.
    fn grow(&mut self, count: usize) {
        let len = (count + 1).next_power_of_two().max(16);
        self.of_count.resize(len, 0);
        self.tree = vec![0; len];
        for c in 1..len {
            self.tree[c] = self.tree[c].wrapping_add(self.of_count[c]);
            let parent = c + (c & c.wrapping_neg());
            if parent < len {
                self.tree[parent] = self.tree[parent].wrapping_add(self.tree[c]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_by_hand() {
        let mut r = CountRanks::default();
        // a touched 3 times, b twice, c and d once (e came and went)
        for count in [3, 2, 1, 1, 5] {
            r.add(count);
        }
        r.remove(5);
        assert_eq!(r.keys(), 4);
        assert_eq!((r.with(1), r.with(2), r.with(3)), (2, 1, 1));
        assert_eq!((r.above(0), r.above(1), r.above(2), r.above(3)), (4, 2, 1, 0));
        // ascending: c d (count 1), b (2), a (3)
        assert_eq!(r.at_rank(1), Some((3, 0)));
        assert_eq!(r.at_rank(2), Some((2, 0)));
        assert_eq!(r.at_rank(3), Some((1, 1)));
        assert_eq!(r.at_rank(4), Some((1, 0)));
        assert_eq!(r.at_rank(5), None);
        assert_eq!(r.at_rank(0), None);
    }

    #[test]
    fn counts_past_the_first_tree_rebuild_it() {
        let mut r = CountRanks::default();
        for c in 1..=1000 {
            // one key touched again and again
            if c > 1 {
                r.remove(c - 1);
            }
            r.add(c);
        }
        r.add(1);
        assert_eq!(r.keys(), 2);
        assert_eq!(r.above(1), 1);
        assert_eq!(r.above(999), 1);
        assert_eq!(r.above(1000), 0);
        assert_eq!(r.at_rank(1), Some((1000, 0)));
        assert_eq!(r.at_rank(2), Some((1, 0)));
    }
}
