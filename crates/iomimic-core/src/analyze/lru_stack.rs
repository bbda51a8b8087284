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

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use super::block_map::BlockMap;

pub type Key = (u32, u64);

/// Touch times held by one cache line of the bitmap.
const LINE_TIMES: usize = 512;

/// 512 touch times' marks, a bit each, on one cache line.
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct Line([u64; 8]);

impl Line {
    /// Marks at times `[0, at)` of the line.
    #[inline]
    fn before(&self, at: usize) -> u32 {
        let (word, bit) = (at / 64, at % 64);
        let full: u32 = self.0[..word].iter().map(|w| w.count_ones()).sum();
        let part = if bit == 0 {
            0
        } else {
            (self.0[word] << (64 - bit)).count_ones()
        };
        full + part
    }

    /// The time of the line's `k`-th mark (from 1).
    fn select(&self, mut k: u32) -> usize {
        for (i, &w) in self.0.iter().enumerate() {
            let ones = w.count_ones();
            if k <= ones {
                let mut w = w;
                for _ in 1..k {
                    w &= w - 1; // drop the lowest marks before the k-th
                }
                return i * 64 + w.trailing_zeros() as usize;
            }
            k -= ones;
        }
        unreachable!("a line holds the marks its count says")
    }
}

/// Marked touch times: a bitmap, a bit a time, and a growable Fenwick tree (1-based nodes)
/// over its lines, counting the marks of each. A question then walks a tree 512 times smaller
/// than one over the times (it stays in the caches) and reads one line of the bitmap: about
/// one cache miss instead of one per level, and an eighth of a byte a time instead of four.
struct Marks {
    lines: Vec<Line>,
    tree: Vec<u32>,
    /// Touch times so far.
    times: usize,
    /// Times unmarked since the last reset: the marks are `times − unmarked`. Two counters that
    /// each change alone (a push adds a time, an unmark a gap): when both changed on a push, the
    /// compiler loaded and stored them as one 16-byte word, which a re-use's 8-byte store had
    /// just written in part, and the load waited for the store (half a push's time in perf).
    unmarked: usize,
}

impl Marks {
    fn with_capacity(capacity: usize) -> Self {
        let lines = capacity.div_ceil(LINE_TIMES);
        let mut tree = Vec::with_capacity(lines + 1);
        tree.push(0);
        Self {
            lines: Vec::with_capacity(lines),
            tree,
            times: 0,
            unmarked: 0,
        }
    }

    /// Touch times so far.
    fn len(&self) -> usize {
        self.times
    }

    /// Marked times: distinct keys on the stack.
    #[inline]
    fn count(&self) -> usize {
        self.times - self.unmarked
    }

    /// Appends the next time, marked.
    #[inline]
    fn push(&mut self) {
        let (line, at) = (self.times / LINE_TIMES, self.times % LINE_TIMES);
        if at == 0 {
            self.push_line();
        }
        self.lines[line].0[at / 64] |= 1 << (at % 64);
        // the last line's node is the tree's last: nothing above it to update
        *self.tree.last_mut().expect("a node per line") += 1;
        self.times += 1;
    }

    /// Appends an empty line. Its node n covers lines (n − lowbit(n), n]: it starts as the sum
    /// of the nodes below it that tile that range.
    #[cold]
    fn push_line(&mut self) {
        self.lines.push(Line::default());
        let n = self.tree.len();
        let low = n & n.wrapping_neg();
        let mut covered = 0u32;
        let mut j = n - 1;
        while j > n - low {
            covered += self.tree[j];
            j &= j - 1;
        }
        self.tree.push(covered);
    }

    /// Makes the times `0..n` and marks every one.
    fn reset_all_marked(&mut self, n: usize) {
        self.lines.clear();
        self.lines.resize(n.div_ceil(LINE_TIMES), Line([u64::MAX; 8]));
        if !n.is_multiple_of(LINE_TIMES) {
            let last = self.lines.last_mut().expect("a partial line");
            *last = Line::default();
            for t in 0..n % LINE_TIMES {
                last.0[t / 64] |= 1 << (t % 64);
            }
        }
        self.tree.clear();
        self.tree.push(0);
        for k in 1..=self.lines.len() {
            // node k covers lines (k − lowbit(k), k], all full but perhaps the last
            let first = k - (k & k.wrapping_neg());
            let full = (k.min(n / LINE_TIMES) - first.min(n / LINE_TIMES)) * LINE_TIMES;
            let partial = if k * LINE_TIMES > n { n % LINE_TIMES } else { 0 };
            self.tree.push((full + partial) as u32);
        }
        self.times = n;
        self.unmarked = 0;
    }

    fn unmark(&mut self, at: usize) {
        let (line, bit) = (at / LINE_TIMES, at % LINE_TIMES);
        self.lines[line].0[bit / 64] &= !(1 << (bit % 64));
        let mut i = line + 1;
        while i < self.tree.len() {
            self.tree[i] -= 1;
            i += i & i.wrapping_neg();
        }
        self.unmarked += 1;
    }

    /// Marks at times `[0, at)`.
    fn before(&self, at: usize) -> usize {
        let line = at / LINE_TIMES;
        let mut i = line;
        let mut sum = 0usize;
        while i > 0 {
            sum += self.tree[i] as usize;
            i &= i - 1;
        }
        if !at.is_multiple_of(LINE_TIMES) {
            sum += self.lines[line].before(at % LINE_TIMES) as usize;
        }
        sum
    }

    /// The marked time with `depth − 1` marks after it (1 = the newest), if that deep.
    fn at_depth(&self, depth: u64) -> Option<usize> {
        let depth = usize::try_from(depth).ok()?;
        if depth == 0 || depth > self.count() {
            return None;
        }
        // the k-th mark from the oldest: find its line by descending the tree, then the bit
        let mut k = self.count() - depth + 1;
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
        Some(pos * LINE_TIMES + self.lines[pos].select(k as u32))
    }
}

impl Marks {
    /// Unmarks the touch at `prev`, returning its depth: the marks after it, plus one.
    fn depth_of(&mut self, prev: usize) -> u64 {
        let after = self.count() - self.before(prev + 1);
        self.unmark(prev);
        after as u64 + 1
    }

    /// For each line, the marks before it: with [`Marks::rank`], each marked time's number
    /// when the marked times are renumbered 0.. in order.
    fn line_ranks(&self) -> Vec<u32> {
        let mut before = Vec::with_capacity(self.lines.len());
        let mut count = 0u32;
        for line in &self.lines {
            before.push(count);
            count += line.before(LINE_TIMES - 1) + (line.0[7] >> 63) as u32;
        }
        before
    }

    /// The number of marked time `t` among the marked ones ([`Marks::line_ranks`]).
    fn rank(&self, line_ranks: &[u32], t: u32) -> u32 {
        let (line, at) = (t as usize / LINE_TIMES, t as usize % LINE_TIMES);
        line_ranks[line] + self.lines[line].before(at)
    }

    /// Marks the next time for each key of a part whose previous touches are `prev`
    /// ([`NO_TOUCH`] for none), yielding each one's depth, in order.
    fn depths<'a>(&'a mut self, prev: &'a [u32]) -> impl Iterator<Item = Option<u64>> + 'a {
        prev.iter().enumerate().map(move |(i, &p)| {
            if let Some(&ahead) = prev.get(i + BATCH_AHEAD) {
                if ahead != NO_TOUCH {
                    let line = ahead as usize / LINE_TIMES;
                    crate::memory::preload(&self.lines, line);
                    crate::memory::preload(&self.tree, line + 1);
                }
            }
            let d = (p != NO_TOUCH).then(|| self.depth_of(p as usize));
            self.push();
            d
        })
    }
}

/// Up to [`PART`] keys of a [`Stack::touch_stream`], with their tags and previous touches:
/// what passes from the map's side to the marks' side.
struct Part<K, T> {
    keys: Vec<K>,
    tags: Vec<T>,
    prev: Vec<u32>,
}

impl<K, T> Default for Part<K, T> {
    fn default() -> Self {
        Self {
            keys: Vec::new(),
            tags: Vec::new(),
            prev: Vec::new(),
        }
    }
}

impl<K: Copy, T> Part<K, T> {
    /// Refills the part from `items`; false when they are spent.
    fn fill(&mut self, items: &mut impl Iterator<Item = (K, T)>) -> bool {
        self.keys.clear();
        self.tags.clear();
        // by internal iteration: a flattened iterator then runs each inner one in a loop of
        // its own, rather than asking which one it is on at every item
        items.take(PART).for_each(|(key, tag)| {
            self.keys.push(key);
            self.tags.push(tag);
        });
        !self.keys.is_empty()
    }

    /// Marks the part's touches, calling `depth` for each.
    fn take_depths(&mut self, marks: &mut Marks, depth: &mut impl FnMut(K, T, Option<u64>)) {
        let depths = marks.depths(&self.prev);
        for ((&key, tag), d) in self.keys.iter().zip(self.tags.drain(..)).zip(depths) {
            depth(key, tag, d);
        }
    }
}

/// What the stack needs of its map from a key to the time of the key's latest touch.
pub trait TouchTimes {
    /// Sent to the other core of a pipelined stream ([`Stack::touch_stream`]).
    type Key: Copy + Send + Sync;
    fn with_capacity(keys: usize) -> Self;
    /// Sets the key's time, returning the one it replaced.
    fn insert(&mut self, key: Self::Key, time: u32) -> Option<u32>;
    fn remove(&mut self, key: Self::Key) -> Option<u32>;
    /// Keys in the map.
    fn keys(&self) -> usize;
    /// Rewrites every time through `f`.
    fn renumber(&mut self, f: impl FnMut(u32) -> u32);
    /// Every key with its time, in no order.
    fn entries(&self) -> Vec<(Self::Key, u32)>;
    /// Starts loading where `key` would be, if the map can.
    fn preload(&self, _key: Self::Key) {}
    /// Which of `regions` equal stretches of the map's slots `key`'s lookup starts in, for a
    /// map whose slots follow a hash it can tell (lookups sorted by region then walk it in
    /// order); `None` for a map that cannot.
    fn region(&self, _key: Self::Key, _regions: usize) -> Option<usize> {
        None
    }
}

impl<K, S> TouchTimes for HashMap<K, u32, S>
where
    K: Copy + Eq + std::hash::Hash + Send + Sync,
    S: std::hash::BuildHasher + Default,
{
    type Key = K;
    fn with_capacity(keys: usize) -> Self {
        HashMap::with_capacity_and_hasher(keys, S::default())
    }
    fn insert(&mut self, key: K, time: u32) -> Option<u32> {
        HashMap::insert(self, key, time)
    }
    fn remove(&mut self, key: K) -> Option<u32> {
        HashMap::remove(self, &key)
    }
    fn keys(&self) -> usize {
        HashMap::len(self)
    }
    fn renumber(&mut self, mut f: impl FnMut(u32) -> u32) {
        for t in self.values_mut() {
            *t = f(*t);
        }
    }
    fn entries(&self) -> Vec<(K, u32)> {
        self.iter().map(|(&k, &t)| (k, t)).collect()
    }
}

impl<const L: usize, const W: usize> TouchTimes for BlockMap<L, W> {
    type Key = u64;
    /// A bucket a key: right for the sparse map; a dense one is sized by its groups and given
    /// to [`Stack::with_map`].
    fn with_capacity(keys: usize) -> Self {
        BlockMap::with_capacity(keys)
    }
    fn insert(&mut self, key: u64, time: u32) -> Option<u32> {
        BlockMap::insert(self, key, time)
    }
    fn remove(&mut self, key: u64) -> Option<u32> {
        BlockMap::remove(self, key)
    }
    fn keys(&self) -> usize {
        BlockMap::len(self)
    }
    fn renumber(&mut self, f: impl FnMut(u32) -> u32) {
        BlockMap::renumber(self, f);
    }
    fn entries(&self) -> Vec<(u64, u32)> {
        BlockMap::entries(self).collect()
    }
    fn preload(&self, key: u64) {
        BlockMap::preload(self, key);
    }
    fn region(&self, key: u64, regions: usize) -> Option<usize> {
        Some(Self::region(key, regions))
    }
}

/// Touch times per key at which the stack renumbers them: a time costs a bit, so letting
/// them reach 8 per key costs a byte a key and renumbers rarely.
const COMPACT_AT: usize = 8;

/// Keys a [`Stack::touch_all`] batch looks up or unmarks ahead of the one it is on.
const BATCH_AHEAD: usize = 16;

/// Regions of the map a batch's keys are sorted into (at most): few enough that the sort's
/// write positions and counts stay in the caches, many enough that a region is a few pages.
const REGIONS: usize = 1 << 12;

/// How many times [`Stack::compact`]'s lowest threshold a pipelined round's times reach
/// before it renumbers them (at least: or [`COMPACT_AT`] times the keys): 2 Mi times, a bitmap
/// of 256 KiB, by default.
const ROUND_COMPACT_FROM: usize = 32;

/// Keys a part of a [`Stack::touch_stream`]: 16 to each of the map's regions,
/// and scratch (the part's sorted keys, its previous touches) that stays in the caches.
pub const PART: usize = 1 << 16;

/// A batch's previous touch, when there was none.
const NO_TOUCH: u32 = u32::MAX;

/// What [`previous_touches`] sorts a part's keys with, kept between parts so that it
/// allocates once.
struct Batch<K> {
    /// The batch's keys with their indices, in the order of the map's regions.
    sorted: Vec<(K, u32)>,
    /// Each key's region, then each region's start in `sorted`.
    region: Vec<u16>,
    starts: Vec<u32>,
}

impl<K> Default for Batch<K> {
    fn default() -> Self {
        Self {
            sorted: Vec::new(),
            region: Vec::new(),
            starts: Vec::new(),
        }
    }
}

impl<K: Copy> Batch<K> {
    /// Sorts the keys (with their indices) by the map's region, stably: time order within
    /// one, and the time order itself for a map with no regions. The keys travel with their
    /// indices so that the walk through the map reads them in order, not gathered.
    fn sort_by_region<M: TouchTimes<Key = K>>(&mut self, keys: &[K], map: &M) {
        let n = keys.len();
        assert!(n < u32::MAX as usize, "a batch's indices fit 32 bits");
        self.sorted.clear();
        let regions = REGIONS.min(n.next_power_of_two());
        if keys.first().and_then(|&k| map.region(k, regions)).is_none() {
            self.sorted.extend(keys.iter().copied().zip(0..));
            return;
        }
        self.region.clear();
        self.region
            .extend(keys.iter().map(|&k| map.region(k, regions).unwrap_or(0) as u16));
        self.starts.clear();
        self.starts.resize(regions + 1, 0);
        for &r in &self.region {
            self.starts[r as usize + 1] += 1;
        }
        for r in 0..regions {
            self.starts[r + 1] += self.starts[r];
        }
        self.sorted.resize(n, (keys[0], 0));
        for (i, (&key, &r)) in keys.iter().zip(&self.region).enumerate() {
            let at = &mut self.starts[r as usize];
            self.sorted[*at as usize] = (key, i as u32);
            *at += 1;
        }
    }
}

/// Finds the previous touch of each of `keys` (or [`NO_TOUCH`]) in `prev`, touching them in
/// the map at times `base + i`, the map read in the order of its regions ([`Stack::touch_all`]).
fn previous_touches<M: TouchTimes>(
    last: &mut M,
    keys: &[M::Key],
    base: usize,
    batch: &mut Batch<M::Key>,
    prev: &mut Vec<u32>,
) {
    assert!(base + keys.len() < NO_TOUCH as usize, "touch times fit 32 bits");
    batch.sort_by_region(keys, last);
    prev.clear();
    prev.resize(keys.len(), NO_TOUCH);
    for (j, &(key, i)) in batch.sorted.iter().enumerate() {
        if let Some(&(next, _)) = batch.sorted.get(j + BATCH_AHEAD) {
            last.preload(next);
        }
        if let Some(p) = last.insert(key, (base + i as usize) as u32) {
            prev[i as usize] = p;
        }
    }
}

/// A stack that finds each key's previous touch in a map to measure its depth.
///
/// Memory is counted per distinct key, not per touch: a map entry (a key and a 32-bit time)
/// and at most eight bits of the bitmap. When the touch times outnumber the keys eight to one, the live
/// times are renumbered 0..keys in order ([`Stack::compact`]), which changes no depth; that
/// also keeps the tree as small as the keys, so its walks stay in the caches on a long trace.
pub struct Stack<M = FxHashMap<Key, u32>> {
    marks: Marks,
    last: M,
    /// Touch times at which to compact at the earliest (tests set it low).
    compact_from: usize,
}

impl<M: TouchTimes> Stack<M> {
    /// A stack expecting about `keys` distinct keys (it grows past that).
    pub fn new(keys: usize) -> Self {
        // reserved for what is expected only: a map far larger than its keys misses the
        // caches on every probe (an over-reserved map once made a curve 4x slower)
        Self::with_map(keys, M::with_capacity(keys.min(1 << 26)))
    }

    /// A stack expecting about `keys` distinct keys, in a map made for them.
    pub fn with_map(keys: usize, last: M) -> Self {
        Self::compacting_from(keys, 1 << 16, last)
    }

    fn compacting_from(keys: usize, compact_from: usize, last: M) -> Self {
        Self {
            marks: Marks::with_capacity(keys.saturating_mul(2).min(1 << 27)),
            last,
            compact_from,
        }
    }

    /// Touches `key` at the next time. Returns the key's stack depth before this touch, 1 being
    /// the most recently used key, or `None` on a first touch.
    pub fn touch(&mut self, key: M::Key) -> Option<u64> {
        self.compact_if_due();
        let now = self.marks.len() as u32;
        let depth = self
            .last
            .insert(key, now)
            .map(|prev| self.marks.depth_of(prev as usize));
        self.marks.push();
        depth
    }

    /// Takes `key` off the stack: its depth before (1 = most recent), or `None` if it is not
    /// on it.
    pub fn remove(&mut self, key: M::Key) -> Option<u64> {
        let prev = self.last.remove(key)? as usize;
        Some(self.marks.depth_of(prev))
    }

    /// Touches `keys` at the next times, one after another, as [`Stack::touch`] would, and
    /// calls `depth(i, d)` with the depth of `keys[i]` before its touch, in order: a
    /// [`Stack::touch_stream`] on this thread alone.
    pub fn touch_all(&mut self, keys: &[M::Key], mut depth: impl FnMut(usize, Option<u64>) + Send) {
        let items = keys.iter().copied().zip(0..);
        self.touch_stream_on(|_| false, items, |_, i, d| depth(i, d));
    }

    /// Touches the keys of `items` at the next times, one after another, as [`Stack::touch`]
    /// would, and calls `depth(key, tag, d)` for each, in order, with the key's depth before its
    /// touch.
    ///
    /// Why parts of [`PART`] keys: on a map far past the caches, each lookup in time order is a
    /// random read of memory and a TLB miss (the map was most of a large curve's time, and grew
    /// it faster than the data). A part's keys meet the map in the order of its slots
    /// ([`previous_touches`]), so the walk goes through memory in order; the depths are then
    /// taken in time order from the previous touches found.
    ///
    /// On two cores it is a pipeline: this thread draws the items and finds each part's
    /// previous touches in the map, while another takes the depths of the part before from the
    /// marks. The halves are of about equal work on a large curve and touch disjoint memory
    /// (the map; the bitmap and its tree), and a part's times are known before its depths are
    /// taken (the times so far plus each key's index), so they exchange nothing else. The
    /// marks' half grows with the re-uses, the map's with the accesses: a trace whose share of
    /// re-uses grows with its length pays less for it than one thread would.
    pub fn touch_stream<T: Send>(
        &mut self,
        items: impl Iterator<Item = (M::Key, T)>,
        depth: impl FnMut(M::Key, T, Option<u64>) + Send,
    ) {
        // this thread is one of the pipeline's two (one called from outside the crate's own
        // threads holds no claim yet)
        let _caller = crate::parallel::Busy::for_this_thread();
        self.touch_stream_on(crate::parallel::cores_to_spare, items, depth);
    }

    /// [`Stack::touch_stream`], a part at a time on this thread alone unless `spare(1)` says
    /// one more thread could have a core of its own beside those claimed (this one's among
    /// them), and back to one thread when `spare(0)` says the cores are over-claimed: a curve
    /// taken beside other work (a characterization's counters) waits for a core of its own.
    fn touch_stream_on<T: Send>(
        &mut self,
        spare: impl Fn(usize) -> bool,
        items: impl Iterator<Item = (M::Key, T)>,
        mut depth: impl FnMut(M::Key, T, Option<u64>) + Send,
    ) {
        let mut items = items.peekable();
        let mut batch = Batch::default();
        // parts come back once their depths are taken, and serve again, round after round
        let (spent, spent_rx) = std::sync::mpsc::channel::<Part<M::Key, T>>();
        while items.peek().is_some() {
            self.compact_if_due();
            if !spare(1) {
                let mut part = spent_rx.try_recv().unwrap_or_default();
                part.fill(&mut items);
                let times = self.marks.len();
                previous_touches(&mut self.last, &part.keys, times, &mut batch, &mut part.prev);
                part.take_depths(&mut self.marks, &mut depth);
                let _ = spent.send(part); // the receiver is this thread's
                continue;
            }
            // a round on two cores, until the times call for renumbering (which needs both
            // halves; a round of at least ROUND_COMPACT_FROM parts' worth, so that a small
            // working set's renumbering does not end every round after a part) or the cores
            // are wanted elsewhere
            let (last, marks) = (&mut self.last, &mut self.marks);
            let renumber_from = self.compact_from.saturating_mul(ROUND_COMPACT_FROM);
            let mut times = marks.len();
            std::thread::scope(|scope| {
                // a part in the channel and one on each side at most: the scratch stays small
                let (found, found_rx) = std::sync::mpsc::sync_channel::<Part<M::Key, T>>(1);
                let (spent, depth) = (spent.clone(), &mut depth);
                scope.spawn(move || {
                    let _core = crate::parallel::Busy::claim();
                    for mut part in found_rx {
                        part.take_depths(marks, depth);
                        let _ = spent.send(part); // the receiver outlives the round
                    }
                });
                loop {
                    let mut part = spent_rx.try_recv().unwrap_or_default();
                    if !part.fill(&mut items) {
                        break;
                    }
                    previous_touches(last, &part.keys, times, &mut batch, &mut part.prev);
                    times += part.keys.len();
                    found.send(part).expect("the marking thread takes every part");
                    if times >= renumber_from.max(COMPACT_AT * last.keys()) || !spare(0) {
                        break;
                    }
                }
            });
        }
    }

    /// Renumbers the touch times if they have come to [`COMPACT_AT`] times the keys.
    fn compact_if_due(&mut self) {
        if self.marks.len() >= self.compact_from.max(COMPACT_AT * self.marks.count()) {
            self.compact();
        }
    }

    /// Renumbers the live touch times 0..keys, keeping their order: a time's new number is
    /// its rank among the marked (live) ones, the marks before its line plus those before it
    /// on the line. Linear in the times; run when they are [`COMPACT_AT`] times the keys, so
    /// it costs O(1) a touch, amortised.
    fn compact(&mut self) {
        let ranks = self.marks.line_ranks();
        let marks = &self.marks;
        self.last.renumber(|t| marks.rank(&ranks, t));
        self.marks.reset_all_marked(self.marks.count());
    }

    /// The time of the latest touch of the key at `depth` (1 = most recent), if that deep.
    #[cfg(test)]
    pub fn at_depth(&self, depth: u64) -> Option<usize> {
        self.marks.at_depth(depth)
    }

    /// Distinct keys touched.
    pub fn keys(&self) -> usize {
        self.last.keys()
    }

    /// The keys on the stack, least recently touched first.
    pub fn keys_by_last_touch(&self) -> Vec<M::Key> {
        let mut keys = self.last.entries();
        keys.sort_unstable_by_key(|&(_, t)| t);
        keys.into_iter().map(|(k, _)| k).collect()
    }
}

/// LRU stacks over keys whose latest touch times their caller keeps (in its own map of the
/// keys, beside what else it keeps of each): a touch is then no lookup of the stacks' own.
/// Training's re-use pass keeps each place's class, number and time in one map and moves places
/// between a top-level state's stacks by class (a map per stack was two more hash operations a
/// request). The times of every stack are renumbered at once ([`KeptStacks::renumber`]) when
/// they outnumber the keys [`COMPACT_AT`] to one, so memory stays a byte or so a key.
pub struct KeptStacks {
    stacks: Vec<Marks>,
    /// Touch times over every stack, and keys on them.
    times: usize,
    keys: usize,
}

impl KeptStacks {
    pub fn new(stacks: usize) -> Self {
        Self {
            stacks: (0..stacks).map(|_| Marks::with_capacity(0)).collect(),
            times: 0,
            keys: 0,
        }
    }

    /// Keys on stack `s`.
    pub fn keys(&self, s: usize) -> usize {
        self.stacks[s].count()
    }

    /// Takes the key last touched at `time` off stack `s`: its depth there (1 = the most
    /// recently touched).
    pub fn remove(&mut self, s: usize, time: u32) -> u64 {
        self.keys -= 1;
        self.stacks[s].depth_of(time as usize)
    }

    /// Puts a key on top of stack `s`: the time of its touch there.
    pub fn push(&mut self, s: usize) -> u32 {
        let marks = &mut self.stacks[s];
        let time = u32::try_from(marks.len()).expect("touch times fit 32 bits");
        marks.push();
        self.times += 1;
        self.keys += 1;
        time
    }

    /// Whether the times are due to be renumbered ([`KeptStacks::renumber`]).
    pub fn due(&self) -> bool {
        self.times >= (1 << 20).max(COMPACT_AT * self.keys)
    }

    /// Renumbers each stack's times 0.. in order, which changes no depth: `rewrite` is given
    /// the new time of a key's time on a stack, `new(stack, time)`, to rewrite the times its
    /// keys are kept with.
    pub fn renumber(&mut self, rewrite: impl FnOnce(&dyn Fn(usize, u32) -> u32)) {
        let ranks: Vec<Vec<u32>> = self.stacks.iter().map(Marks::line_ranks).collect();
        let stacks = &self.stacks;
        rewrite(&|s: usize, t: u32| stacks[s].rank(&ranks[s], t));
        for marks in &mut self.stacks {
            marks.reset_all_marked(marks.count());
        }
        self.times = self.keys;
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
        self.marks.count()
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
    use super::super::block_map::{DenseBlockMap, SparseBlockMap};
    use super::*;

    /// A seeded stream of 31-bit numbers (the high bits of a 64-bit LCG).
    fn lcg(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        }
    }

    /// Marks against a plain list of bits over hundreds of bitmap lines, through unmarking and
    /// renumbering (all marked again, a partial line at the end) on the way.
    #[test]
    fn marks_agree_with_a_list_of_bits() {
        let mut marks = Marks::with_capacity(0);
        let mut bits: Vec<bool> = Vec::new();
        let mut random = lcg(17);
        let mut next = move || random() as usize;
        for round in 0..3 {
            for _ in 0..150_000 {
                marks.push();
                bits.resize(bits.len() + 1, true);
                if next() % 3 > 0 {
                    let at = next() % bits.len();
                    if bits[at] {
                        bits[at] = false;
                        marks.unmark(at);
                    }
                }
            }
            let count = bits.iter().filter(|&&b| b).count();
            assert_eq!(marks.count(), count);
            for _ in 0..2_000 {
                let at = next() % (bits.len() + 1);
                let before = bits[..at].iter().filter(|&&b| b).count();
                assert_eq!(marks.before(at), before, "round {round}, before {at}");
                let depth = 1 + next() % count;
                // the marked time with depth − 1 marks after it
                let expected = (0..bits.len()).rev().filter(|&t| bits[t]).nth(depth - 1);
                assert_eq!(
                    marks.at_depth(depth as u64),
                    expected,
                    "round {round}, depth {depth}"
                );
            }
            assert_eq!(marks.at_depth(count as u64 + 1), None);
            let n = count - round * 1_000 - 7;
            marks.reset_all_marked(n);
            bits = vec![true; n];
            assert_eq!((marks.before(n), marks.before(n / 2), marks.len()), (n, n / 2, n));
        }
    }

    #[test]
    fn depths_by_hand() {
        let mut s = Stack::<FxHashMap<Key, u32>>::new(2); // grows past its capacity
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
        assert_eq!(s.remove((1, 10)), Some(91));
        assert_eq!(s.remove((1, 10)), None);
        assert_eq!(s.touch(b), Some(1));
        assert_eq!(s.touch((1, 11)), Some(90));
    }

    #[test]
    fn compacting_changes_no_depth() {
        compacting_changes_no_depth_with(Stack::compacting_from(0, 8, FxHashMap::<u64, u32>::default()));
        compacting_changes_no_depth_with(Stack::compacting_from(0, 8, SparseBlockMap::with_capacity(0)));
        compacting_changes_no_depth_with(Stack::compacting_from(0, 8, DenseBlockMap::with_capacity(0)));
    }

    fn compacting_changes_no_depth_with<M: TouchTimes<Key = u64>>(mut s: Stack<M>) {
        // against a plain list (most recent first), compacting every few touches
        let mut list: Vec<u64> = Vec::new();
        let mut state = 3u64;
        for step in 0..20_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let key = (state >> 33) % [40, 400, 3000][step / 500 % 3];
            let expected = list.iter().position(|&k| k == key).map(|at| {
                list.remove(at);
                at as u64 + 1
            });
            if state >> 62 == 0 {
                assert_eq!(s.remove(key), expected, "remove at step {step}");
            } else {
                assert_eq!(s.touch(key), expected, "touch at step {step}");
                list.insert(0, key);
            }
            assert!(
                s.marks.len() <= COMPACT_AT * s.keys() + 8,
                "times stay within 8 per key"
            );
        }
    }

    #[test]
    fn batches_give_the_depths_of_touches_one_by_one() {
        batches_agree(Stack::compacting_from(0, 64, FxHashMap::<u64, u32>::default()));
        batches_agree(Stack::compacting_from(0, 64, SparseBlockMap::with_capacity(0)));
        batches_agree(Stack::compacting_from(0, 64, DenseBlockMap::with_capacity(0)));
    }

    /// Batches of 0 to 999 keys, repeats within one included, against a stack touched one key
    /// at a time; both compact on the way.
    fn batches_agree<M: TouchTimes<Key = u64>>(mut batched: Stack<M>) {
        let mut single = Stack::compacting_from(0, 64, FxHashMap::<u64, u32>::default());
        let mut next = lcg(5);
        for round in 0..60 {
            let len = next() as usize % 1000;
            let span = [30, 700, 20_000][round % 3];
            let keys: Vec<u64> = (0..len).map(|_| next() % span).collect();
            let expected: Vec<Option<u64>> = keys.iter().map(|&k| single.touch(k)).collect();
            let mut got = vec![None; len];
            batched.touch_all(&keys, |i, d| got[i] = d);
            assert_eq!(got, expected, "round {round}");
        }
        assert_eq!(batched.keys(), single.keys());
    }

    #[test]
    fn streams_give_the_depths_of_touches_one_by_one() {
        // two cores always, never, and taken and given back every other part
        let flips = std::sync::atomic::AtomicUsize::new(0);
        let every_other = |_: usize| {
            flips
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                .is_multiple_of(2)
        };
        let spares: [&(dyn Fn(usize) -> bool + Sync); 3] = [&|_| true, &|_| false, &every_other];
        for (two_cores, spare) in spares.into_iter().enumerate() {
            for compact_from in [64, 1 << 16] {
                let hashed = FxHashMap::<u64, u32>::default();
                streams_agree(Stack::compacting_from(0, compact_from, hashed), spare, two_cores);
                let sparse = SparseBlockMap::with_capacity(0);
                streams_agree(Stack::compacting_from(0, compact_from, sparse), spare, two_cores);
                let dense = DenseBlockMap::with_capacity(0);
                streams_agree(Stack::compacting_from(0, compact_from, dense), spare, two_cores);
            }
        }
    }

    /// Streams of several parts, the keys drawn from spans wide and narrow (so that the times
    /// call for renumbering in the middle of a stream, or not), against a stack touched one key
    /// at a time; each key's tag comes back with its depth.
    fn streams_agree<M: TouchTimes<Key = u64>>(
        mut streamed: Stack<M>,
        spare: &(dyn Fn(usize) -> bool + Sync),
        two_cores: usize,
    ) {
        let mut single = Stack::compacting_from(0, 64, FxHashMap::<u64, u32>::default());
        let mut next = lcg(9);
        for (round, span) in [(0, 50_000), (1, 300), (2, 5_000_000)] {
            let len = PART * 2 + 1_000 * round;
            let keys: Vec<u64> = (0..len).map(|_| next() % span).collect();
            let expected: Vec<(u64, usize, Option<u64>)> = keys
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, i, single.touch(k)))
                .collect();
            let mut got = Vec::with_capacity(len);
            let items = keys.iter().enumerate().map(|(i, &k)| (k, i));
            streamed.touch_stream_on(spare, items, |k, i, d| got.push((k, i, d)));
            assert!(got == expected, "round {round}, cores by rule {two_cores}");
        }
        assert_eq!(streamed.keys(), single.keys());
    }

    #[test]
    fn kept_stacks_match_plain_lists_through_renumbering() {
        // keys move between three stacks; their times are kept here, as training keeps them
        let mut stacks = KeptStacks::new(3);
        let mut lists: Vec<Vec<u64>> = vec![Vec::new(); 3]; // most recent first
        let mut kept: std::collections::HashMap<u64, (usize, u32)> = std::collections::HashMap::new();
        let mut next = lcg(21);
        for step in 0..40_000 {
            let key = next() % 700;
            let to = (next() % 3) as usize;
            if let Some(&(from, time)) = kept.get(&key) {
                let at = lists[from].iter().position(|&k| k == key).expect("on its stack");
                assert_eq!(stacks.keys(from), lists[from].len(), "step {step}");
                assert_eq!(stacks.remove(from, time), at as u64 + 1, "step {step}");
                lists[from].remove(at);
            }
            kept.insert(key, (to, stacks.push(to)));
            lists[to].insert(0, key);
            if step % 3_001 == 3_000 {
                stacks.renumber(|new| {
                    for (s, t) in kept.values_mut() {
                        *t = new(*s, *t);
                    }
                });
                assert_eq!(stacks.times, stacks.keys);
            }
        }
    }

    #[test]
    fn generator_depths_match_a_plain_list() {
        // (key, time of its latest touch), most recent first, over many lines of the bitmap
        let mut g = GenStack::new(0);
        let mut list: Vec<(u64, usize)> = Vec::new();
        let mut state = 11u64;
        for step in 0..30_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let key = (state >> 33) % 2_000;
            let prev = list
                .iter()
                .position(|&(k, _)| k == key)
                .map(|at| list.remove(at).1);
            let time = g.push(prev);
            list.insert(0, (key, time));
            if step % 7 == 0 {
                let depth = 1 + (state >> 20) as usize % (list.len() + 1);
                assert_eq!(g.at_depth(depth as u64), list.get(depth - 1).map(|&(_, t)| t));
            }
        }
        assert_eq!(g.depth(), list.len());
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
