//! The LRU miss-ratio curve over 4 KiB blocks, for every cache size in one pass.
//!
//! ## Algorithm
//! A request touches every 4 KiB block it overlaps (reads and writes; trims and flushes move no
//! cached data). Each block access's *stack distance* is the number of distinct blocks touched
//! since the previous access to the same block; an LRU cache of C blocks hits exactly the
//! accesses with distance < C. Distances come from the crate's LRU stack
//! ([`super::lru_stack`]: a Fenwick tree over access times holding a 1 at the latest access of
//! every block, as Bennett & Kruskal). The histogram of distances then
//! gives the miss ratio at every size: misses(C) = cold misses + accesses with distance ≥ C.
//!
//! Above a count of block accesses the caller chooses, blocks are sampled spatially as in SHARDS: a block
//! is tracked when a hash of its address falls below rate × 2^24, and each sampled distance is
//! scaled by 1/rate.
//!
//! ## Complexity
//! O(a log a) time for a block accesses, O(a + footprint) memory (times are 32-bit).
//!
//! ## References
//! Mattson et al., "Evaluation techniques for storage hierarchies" (1970); Bennett & Kruskal,
//! "LRU stack processing" (1975); Waldspurger et al., "Efficient MRC Construction with SHARDS"
//! (FAST 2015).

use serde::{Deserialize, Serialize};

use rustc_hash::FxHashMap;

use super::block_map::{BlockMap, DenseBlockMap, SparseBlockMap};
use super::lru_stack::{Stack, TouchTimes};

use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::trace::{Op, TraceView};

pub const BLOCK: u64 = 4096;
/// Smallest cache size on the curve.
const FIRST_CACHE: u64 = 1 << 20;
const SHARDS_MODULUS: u64 = 1 << 24;

#[derive(Debug, Clone, Serialize)]
pub struct MrcPoint {
    pub cache_bytes: u64,
    pub miss_ratio: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReuseBucket {
    /// Distances in blocks, `[from, to)`.
    pub from_blocks: u64,
    pub to_blocks: u64,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Mrc {
    pub block_bytes: u64,
    /// Block accesses (every one, sampled or not).
    pub accesses: u64,
    pub cold_misses: u64,
    pub footprint_bytes: u64,
    pub curve: Vec<MrcPoint>,
    /// Stack distances in log2 buckets; cold misses are not in it.
    pub reuse_histogram: Vec<ReuseBucket>,
    /// 1.0 for an exact curve, else the SHARDS sampling rate.
    pub sampling_rate: f64,
    /// Estimated standard error of the miss ratio from sampling, the largest over the curve's
    /// sizes (0 when exact): a jackknife over 16 groups of the sampled blocks.
    pub sampling_error: f64,
}

fn mix(volume: u32, block: u64) -> u64 {
    // SplitMix64 finaliser: spreads adjacent blocks uniformly for sampling.
    let mut z = block ^ (u64::from(volume) << 52) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 4 KiB blocks request `i` touches (none for trims, flushes and empty requests).
fn blocks_of(t: &TraceView<'_>, i: usize) -> std::ops::Range<u64> {
    let op = t.op[i];
    if op != Op::Read as u8 && op != Op::Write as u8 || t.size[i] == 0 {
        return 0..0;
    }
    let first = t.offset[i] / BLOCK;
    let last = (t.offset[i] + u64::from(t.size[i]) - 1) / BLOCK;
    first..last + 1
}

/// Blocks an exact curve tracks before sampling, by default: at most 64 bytes each, so
/// about 512 MiB (a footprint of 32 GiB in 4 KiB blocks).
pub const DEFAULT_BUDGET_BLOCKS: u64 = 1 << 23;

/// The fewest blocks a curve tracks: a SHARDS sample of fewer says little (its error grows as
/// one over the root of the blocks sampled), and of a handful nothing (a sample of no block
/// would give a miss ratio of 0).
pub const MIN_BUDGET_BLOCKS: u64 = 1024;

/// Keys a [`DistinctSample`] holds at most: its count is exact up to this many distinct keys
/// and has a standard error of 1/√kept, 0.4–0.55 %, past them; a count's two sets (blocks and
/// groups of eight, about 1.1 MiB each) stay near a core's caches, where a fixed 1/64 sample
/// of a large trace's blocks did not (the count grew 13 times with 10 times the data, and was
/// a seventh of a large curve's time).
const SAMPLE_KEYS: usize = 1 << 16;

/// Distinct keys counted on a sample that halves as it fills (adaptive sampling, Flajolet's
/// "On adaptive sampling", 1990): a key is kept while its hash's top `level` bits are 0; when
/// more than [`SAMPLE_KEYS`] are kept the level rises and about half are let go. The distinct
/// keys are then about `kept × 2^level`. The hashes themselves are kept (64 bits: no two of a
/// trace's keys share one but with negligible odds).
#[derive(Default, Serialize, Deserialize)]
struct DistinctSample {
    level: u32,
    kept: rustc_hash::FxHashSet<u64>,
}

impl DistinctSample {
    #[inline]
    fn add(&mut self, hash: u64) {
        if hash.leading_zeros() >= self.level && self.kept.insert(hash) && self.kept.len() > SAMPLE_KEYS {
            self.rise();
        }
    }

    /// Halves the sample until it fits.
    fn rise(&mut self) {
        while self.kept.len() > SAMPLE_KEYS {
            self.level += 1;
            let level = self.level;
            self.kept.retain(|h| h.leading_zeros() >= level);
        }
    }

    /// Adds another sample's keys: both at the higher level of the two.
    fn merge(&mut self, other: DistinctSample) {
        let level = self.level.max(other.level);
        self.level = level;
        self.kept.retain(|h| h.leading_zeros() >= level);
        self.kept
            .extend(other.kept.into_iter().filter(|h| h.leading_zeros() >= level));
        self.rise();
    }

    fn estimate(&self) -> u64 {
        (self.kept.len() as u64) << self.level
    }
}

/// What a curve of some rows will hold, counted before it is taken: how fast to sample it
/// and how large to make its map.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Blocks {
    /// Block accesses of reads and writes.
    pub accesses: u64,
    /// Distinct (volume, block) pairs: exact up to [`SAMPLE_KEYS`], past that counted on an
    /// adaptive sample ([`DistinctSample`]; standard error 0.4–0.55 %).
    pub distinct: u64,
    /// Distinct groups of eight adjacent blocks (a [`DenseBlockMap`] bucket), counted like
    /// `distinct`.
    groups: u64,
    /// The block and the volume past the largest touched.
    top: u64,
    volumes: u32,
}

/// [`Blocks`] counted a piece of a trace at a time (a trace read in row groups, or split over
/// the cores), then merged.
#[derive(Default, Serialize, Deserialize)]
pub struct BlockCount {
    accesses: u64,
    blocks: DistinctSample,
    groups: DistinctSample,
    top: u64,
    volumes: u32,
}

impl BlockCount {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts the blocks of requests `rows` of `t`.
    pub fn add(&mut self, t: &TraceView<'_>, rows: impl Iterator<Item = usize>) {
        for i in rows {
            let blocks = blocks_of(t, i);
            let volume = t.volume[i];
            self.accesses += blocks.end - blocks.start;
            self.top = self.top.max(blocks.end);
            self.volumes = self.volumes.max(volume.saturating_add(1));
            let groups = blocks.start >> 3..blocks.end.div_ceil(8);
            // the volume hashed on its own first: `mix` puts it in the top 12 bits, where
            // volumes 4,096 apart (traces of thousands of volumes) would count as one
            let salt = crate::random::splitmix(u64::from(volume));
            for block in blocks {
                self.blocks.add(mix(0, block ^ salt));
            }
            for group in groups {
                self.groups.add(mix(0, !group ^ salt));
            }
        }
    }

    /// Adds the count of other requests' blocks.
    pub fn merge(&mut self, other: BlockCount) {
        self.accesses += other.accesses;
        self.top = self.top.max(other.top);
        self.volumes = self.volumes.max(other.volumes);
        self.blocks.merge(other.blocks);
        self.groups.merge(other.groups);
    }

    pub fn finish(self) -> Blocks {
        Blocks {
            accesses: self.accesses,
            distinct: self.blocks.estimate(),
            groups: self.groups.estimate(),
            top: self.top,
            volumes: self.volumes,
        }
    }
}

/// Rows a core counts at least when [`Blocks::of_trace`] splits the trace: fewer are not worth
/// a thread.
const ROWS_A_CORE: usize = 1 << 18;

impl Blocks {
    pub fn of(t: &TraceView<'_>, rows: impl Iterator<Item = usize>) -> Self {
        let mut count = BlockCount::new();
        count.add(t, rows);
        count.finish()
    }

    /// [`Blocks::of`] every row of `t`, in a piece on each core that is free (this thread's
    /// among them): on one beside a characterization's counters.
    pub fn of_trace(t: &TraceView<'_>) -> Self {
        let n = t.len();
        let cores = crate::parallel::free_cores().min(n / ROWS_A_CORE);
        if cores < 2 {
            return Self::of(t, 0..n);
        }
        let pieces: Vec<_> = (0..cores).map(|c| c * n / cores..(c + 1) * n / cores).collect();
        let counts = crate::parallel::on_all_cores(pieces, |rows| {
            let mut count = BlockCount::new();
            count.add(t, rows);
            count
        });
        let whole = counts.into_iter().reduce(|mut whole, count| {
            whole.merge(count);
            whole
        });
        whole.expect("two pieces or more").finish()
    }

    /// Buckets a [`DenseBlockMap`] of the blocks sampled at `rate` would hold, when that map is
    /// the smaller of the two (its 40-byte bucket holding 2.5 or more of them on average; a
    /// [`SparseBlockMap`] spends 16 bytes a block). Dense is also the faster then: a request's
    /// adjacent blocks share buckets.
    fn dense_buckets(&self, rate: f64) -> Option<usize> {
        let fill = self.distinct as f64 / self.groups.max(1) as f64;
        // groups with at least one block sampled, and the blocks each then holds
        let buckets = self.groups as f64 * (1.0 - (1.0 - rate).powf(fill));
        let per_bucket = self.distinct as f64 * rate / buckets.max(1.0);
        (per_bucket >= 2.5).then_some((buckets * 1.05) as usize + 16)
    }

    /// The high bits a (volume, block) pair packed in one word gives its volume, when every
    /// pair fits (a map entry of 16 bytes, not 24).
    fn volume_bits(&self) -> Option<u32> {
        let bits = u32::BITS - self.volumes.max(2).saturating_sub(1).leading_zeros();
        (self.top < 1u64 << (64 - bits)).then_some(bits)
    }

    /// The SHARDS rate at which the curve tracks about `budget` blocks: 1.0 (exact) when the
    /// distinct blocks fit, else budget ÷ distinct blocks.
    pub fn sampling_rate(&self, budget: u64) -> f64 {
        if self.accesses <= budget || self.distinct <= budget {
            1.0 // no more distinct blocks than accesses
        } else {
            budget as f64 / self.distinct as f64
        }
    }
}

/// The miss-ratio curve of the requests `rows` (indices into `t`, in time order), sampling
/// blocks at `rate` (1.0 = exact).
///
/// `progress` counts the rows by [`Progress::tick`] (the caller counts the rest with
/// [`Progress::ticked`]) and stops the work with `Interrupted` when told to.
pub fn miss_ratio_curve(
    t: &TraceView<'_>,
    rows: impl Iterator<Item = usize> + Clone,
    rate: f64,
    progress: &Progress,
) -> Result<Mrc> {
    curve_of_counted(t, rows.clone(), &Blocks::of(t, rows), rate, progress)
}

/// A block's key in one word: the volume in the top `bits`, so that a volume's adjacent
/// blocks have adjacent keys (and [`DenseBlockMap`] buckets).
#[inline]
fn pack(bits: u32, volume: u32, block: u64) -> u64 {
    u64::from(volume) << (64 - bits) | block
}

/// The (volume, block) pair a key of [`pack`] stands for.
#[inline]
fn unpack(bits: u32, key: u64) -> (u32, u64) {
    let shift = 64 - bits;
    ((key >> shift) as u32, key & ((1u64 << shift) - 1))
}

/// Distinct blocks that the rows' reads and writes touch, and how many of them more than once.
/// One pass through a map sized to the blocks counted first: a general hash map grew and
/// rehashed its way through a 1 MiB-request trace's 7 M blocks in half of `validate`'s time.
pub fn footprint(t: &TraceView<'_>, rows: impl Iterator<Item = usize> + Clone) -> (u64, u64) {
    let blocks = Blocks::of(t, rows.clone());
    let keys = (blocks.distinct as f64 * 1.05) as usize + 16;
    if let Some(bits) = blocks.volume_bits() {
        match blocks.dense_buckets(1.0) {
            Some(buckets) => count_touches(t, rows, bits, DenseBlockMap::with_capacity(buckets)),
            None => count_touches(t, rows, bits, SparseBlockMap::with_capacity(keys)),
        }
    } else {
        let mut touches: FxHashMap<(u32, u64), u8> = FxHashMap::default();
        touches.reserve(keys);
        for i in rows {
            for block in blocks_of(t, i) {
                let c = touches.entry((t.volume[i], block)).or_default();
                *c = c.saturating_add(1);
            }
        }
        let again = touches.values().filter(|&&c| c > 1).count();
        (touches.len() as u64, again as u64)
    }
}

/// [`footprint`] through a block map: distinct blocks, and those touched more than once.
fn count_touches<const L: usize, const W: usize>(
    t: &TraceView<'_>,
    rows: impl Iterator<Item = usize>,
    bits: u32,
    mut touches: BlockMap<L, W>,
) -> (u64, u64) {
    for i in rows {
        let volume = t.volume[i];
        for block in blocks_of(t, i) {
            let key = pack(bits, volume, block);
            let seen = touches.get(key).unwrap_or(0);
            if seen < 2 {
                touches.insert(key, seen + 1);
            }
        }
    }
    let again = touches.values().filter(|&c| c > 1).count();
    (touches.len() as u64, again as u64)
}

/// [`miss_ratio_curve`] of rows whose [`Blocks`] are counted already.
pub fn curve_of_counted(
    t: &TraceView<'_>,
    rows: impl Iterator<Item = usize>,
    blocks: &Blocks,
    rate: f64,
    progress: &Progress,
) -> Result<Mrc> {
    let mut curve = Curve::new(blocks, rate, blocks.distinct);
    curve.feed(t, rows, progress)?;
    Ok(curve.finish())
}

/// A curve being taken: the LRU stack in the map that suits the blocks, fed requests in time
/// order (a whole trace at once, or a trace read a piece at a time), finished into an [`Mrc`].
pub struct Curve {
    replay: Replaying,
}

/// The stack's map: packed keys in buckets of adjacent blocks or one key a slot, else a hash
/// map of (volume, block) pairs when a pair does not fit a word.
enum Replaying {
    Dense(Replay<DenseBlockMap>, u32),
    Sparse(Replay<SparseBlockMap>, u32),
    Pairs(Replay<FxHashMap<(u32, u64), u32>>),
}

impl Curve {
    /// A curve of requests whose blocks are counted in `blocks` (or like them: a group of a
    /// trace takes its trace's), sampled at `rate`, its map made for `expected` distinct
    /// blocks before sampling (it grows past them).
    pub fn new(blocks: &Blocks, rate: f64, expected: u64) -> Self {
        let rate = rate.clamp(f64::MIN_POSITIVE, 1.0);
        let keys = (expected as f64 * rate * 1.05) as usize + 16;
        let replay = match blocks.volume_bits() {
            Some(bits) => match blocks.dense_buckets(rate) {
                Some(buckets) => {
                    // the trace's buckets, scaled to the share of its blocks expected here
                    let share = expected as f64 / blocks.distinct.max(1) as f64;
                    let buckets = (buckets as f64 * share.min(1.0)) as usize + 16;
                    let stack = Stack::with_map(keys, DenseBlockMap::with_capacity(buckets));
                    Replaying::Dense(Replay::new(stack, rate), bits)
                }
                None => Replaying::Sparse(Replay::new(Stack::new(keys), rate), bits),
            },
            None => Replaying::Pairs(Replay::new(Stack::new(keys), rate)),
        };
        Self { replay }
    }

    /// A curve of one partition of a trace (a time range, taken on its own from an empty
    /// stack), made as [`Curve::new`] makes the whole trace's, keeping what the curve of the
    /// whole needs to take it in ([`Curve::into_part`]).
    pub fn of_partition(blocks: &Blocks, rate: f64, expected: u64) -> Self {
        let mut curve = Self::new(blocks, rate, expected);
        match &mut curve.replay {
            Replaying::Dense(r, _) => r.first_touches = Some(Vec::new()),
            Replaying::Sparse(r, _) => r.first_touches = Some(Vec::new()),
            Replaying::Pairs(r) => r.first_touches = Some(Vec::new()),
        }
        curve
    }

    /// What this partition's curve adds to the curve of the whole.
    pub fn into_part(self) -> CurvePart {
        match self.replay {
            Replaying::Dense(r, bits) => r.into_part(|k| unpack(bits, k)),
            Replaying::Sparse(r, bits) => r.into_part(|k| unpack(bits, k)),
            Replaying::Pairs(r) => r.into_part(|k| k),
        }
    }

    /// Takes in the curve of the partition that follows the requests fed so far. Its re-uses
    /// within the partition have their distances already (every block touched between was
    /// touched in it); each block's first touch there is measured here, in this stack: its
    /// depth among the blocks not yet touched in the partition, plus the partition's distinct
    /// blocks touched before it. Then the partition's blocks go on top, in their last-touch
    /// order. The work is the partition's distinct blocks, not its requests.
    pub fn absorb(&mut self, part: CurvePart) -> Result<()> {
        match &mut self.replay {
            Replaying::Dense(r, bits) => {
                let bits = *bits;
                r.absorb(part, |v, b| pack(bits, v, b))
            }
            Replaying::Sparse(r, bits) => {
                let bits = *bits;
                r.absorb(part, |v, b| pack(bits, v, b))
            }
            Replaying::Pairs(r) => r.absorb(part, |v, b| (v, b)),
        }
    }

    /// Replays requests `rows` of `t`, counted in `progress` by [`Progress::tick`].
    pub fn feed(
        &mut self,
        t: &TraceView<'_>,
        rows: impl Iterator<Item = usize>,
        progress: &Progress,
    ) -> Result<()> {
        match &mut self.replay {
            Replaying::Dense(r, bits) => {
                let bits = *bits;
                r.feed(t, rows, |v, b| pack(bits, v, b), progress)
            }
            Replaying::Sparse(r, bits) => {
                let bits = *bits;
                r.feed(t, rows, |v, b| pack(bits, v, b), progress)
            }
            Replaying::Pairs(r) => r.feed(t, rows, |v, b| (v, b), progress),
        }
    }

    pub fn finish(self) -> Mrc {
        match self.replay {
            Replaying::Dense(r, _) => r.finish(),
            Replaying::Sparse(r, _) => r.finish(),
            Replaying::Pairs(r) => r.finish(),
        }
    }
}

/// Sampled block accesses through an LRU stack, touched a batch at a time, their distances
/// counted.
struct Replay<M: TouchTimes> {
    stack: Stack<M>,
    h: Distances,
    threshold: u64,
    rate: f64,
    /// A partition's curve: each block's first touch, in order, with its jackknife group.
    first_touches: Option<Vec<(M::Key, u8)>>,
}

impl CurvePart {
    /// Leaves the blocks out, to be filled in from the whole trace's curve
    /// ([`CurvePart::share_blocks`]).
    pub fn drop_blocks(&mut self) {
        self.first = Vec::new();
        self.last = Vec::new();
    }

    /// Fills in each volume's curve's blocks (`volumes[v]`, left out by
    /// [`CurvePart::drop_blocks`]) from this curve of all volumes: a volume's blocks are its
    /// own, in the same order.
    pub fn share_blocks(&self, volumes: &mut [CurvePart]) {
        for &(pair, group) in &self.first {
            if let Some(v) = volumes.get_mut(pair.0 as usize) {
                v.first.push((pair, group));
            }
        }
        for &pair in &self.last {
            if let Some(v) = volumes.get_mut(pair.0 as usize) {
                v.last.push(pair);
            }
        }
    }
}

/// What the curve of one partition of a trace adds to the curve of the whole
/// ([`Curve::absorb`]).
#[derive(Serialize, Deserialize)]
pub struct CurvePart {
    /// The distances counted within the partition, every first touch counted cold.
    distances: Distances,
    /// The sampled blocks, (volume, block), in the order of their first touch in the
    /// partition, with their jackknife groups.
    first: Vec<((u32, u64), u8)>,
    /// The same blocks in the order of their last touch, least recent first.
    last: Vec<(u32, u64)>,
}

impl<M: TouchTimes> Replay<M> {
    fn new(stack: Stack<M>, rate: f64) -> Self {
        Self {
            stack,
            h: Distances::new(rate),
            threshold: (rate * SHARDS_MODULUS as f64) as u64,
            rate,
            first_touches: None,
        }
    }

    fn into_part(mut self, pair: impl Fn(M::Key) -> (u32, u64)) -> CurvePart {
        let first = self.first_touches.take().unwrap_or_default();
        CurvePart {
            first: first.into_iter().map(|(k, g)| (pair(k), g)).collect(),
            last: self.stack.keys_by_last_touch().into_iter().map(pair).collect(),
            distances: self.h,
        }
    }

    fn absorb(&mut self, part: CurvePart, key: impl Fn(u32, u64) -> M::Key) -> Result<()> {
        let CurvePart {
            distances: d,
            first,
            last,
        } = part;
        if d.bounds != self.h.bounds || d.counts.len() != self.h.counts.len() {
            return Err(Error::Usage(
                "a partition's curve was taken at another sampling rate".into(),
            ));
        }
        for (a, b) in self.h.counts.iter_mut().zip(&d.counts) {
            *a += b;
        }
        for (a, b) in self.h.cold.iter_mut().zip(d.cold) {
            *a += b;
        }
        self.h.total += d.total;
        for (j, &((volume, block), group)) in first.iter().enumerate() {
            let group = usize::from(group);
            self.h.cold[group] -= 1; // counted cold within the partition
            match self.stack.remove(key(volume, block)) {
                Some(depth) => self.h.reuse(group, depth - 1 + j as u64),
                None => self.h.cold(group),
            }
        }
        let keys: Vec<M::Key> = last.iter().map(|&(v, b)| key(v, b)).collect();
        self.stack.touch_all(&keys, |_, _| {});
        Ok(())
    }

    fn feed(
        &mut self,
        t: &TraceView<'_>,
        rows: impl Iterator<Item = usize>,
        key: impl Fn(u32, u64) -> M::Key,
        progress: &Progress,
    ) -> Result<()> {
        let (rate, threshold) = (self.rate, self.threshold);
        let mut total = 0;
        let mut stopped = Ok(());
        let requests = rows.enumerate().map_while(|(k, i)| {
            if let Err(e) = progress.tick(k) {
                stopped = Err(e);
                return None;
            }
            let blocks = blocks_of(t, i);
            total += blocks.end - blocks.start;
            Some((t.volume[i], blocks))
        });
        let key = &key;
        let sampled = requests.flat_map(|(volume, blocks)| {
            blocks.filter_map(move |block| {
                let group = if rate >= 1.0 {
                    0
                } else {
                    let hash = mix(volume, block);
                    if hash % SHARDS_MODULUS >= threshold {
                        return None;
                    }
                    (hash >> 60) as u8
                };
                Some((key(volume, block), group))
            })
        });
        let (h, mut first) = (&mut self.h, self.first_touches.as_mut());
        self.stack.touch_stream(sampled, |k, group, depth| match depth {
            Some(depth) => h.reuse(usize::from(group), depth - 1),
            None => {
                h.cold(usize::from(group));
                if let Some(first) = first.as_mut() {
                    first.push((k, group));
                }
            }
        });
        self.h.total += total;
        stopped
    }

    fn finish(mut self) -> Mrc {
        self.h.footprint = self.stack.keys() as u64;
        self.h.finish()
    }
}

/// Groups of sampled blocks (by hash) whose counts are kept apart for the jackknife.
const GROUPS: usize = 16;

/// Sampled stack distances, counted in ranges whose bounds are every distance at which a
/// figure changes (a curve point's limit, a reuse bucket's start): the curve is as exact as
/// with a count per distance, in a few hundred bytes rather than 8 bytes per distinct block.
#[derive(Serialize, Deserialize)]
struct Distances {
    rate: f64,
    /// Starts of the ranges, ascending, the first 0.
    bounds: Vec<u64>,
    /// `counts[g * bounds.len() + r]`: reuses of group g in range r.
    counts: Vec<u64>,
    cold: [u64; GROUPS],
    /// Distinct sampled blocks.
    footprint: u64,
    /// Block accesses, sampled or not.
    total: u64,
    /// For each octave of distances (`d`'s bit length, 0 for 0), the range its smallest
    /// distance lies in: a distance's range is then a step or two from there, not a binary
    /// search over every bound (which was a tenth of a large curve's time). Made by
    /// [`Distances::new`]; not written, as only a curve being taken counts distances.
    #[serde(skip)]
    octave_range: Vec<u16>,
}

impl Distances {
    fn new(rate: f64) -> Self {
        let scale = 1.0 / rate;
        let mut bounds = vec![0u64];
        for j in 0..48 {
            // a curve point of 256·2^j blocks hits the sampled distances below its limit
            bounds.push(((256u64 << j) as f64 * rate).ceil() as u64);
            // the first sampled distance whose real distance reaches 2^j (a reuse bucket)
            let real = |d: u64| (d as f64 * scale) as u64;
            let mut d = ((1u64 << j) as f64 * rate) as u64;
            while d > 0 && real(d - 1) >= 1 << j {
                d -= 1;
            }
            while real(d) < 1 << j {
                d += 1;
            }
            bounds.push(d);
        }
        bounds.sort_unstable();
        bounds.dedup();
        let groups = if rate >= 1.0 { 1 } else { GROUPS };
        let octave_range = (0..=64)
            .map(|o| {
                let smallest = if o == 0 { 0 } else { 1u64 << (o - 1) };
                (bounds.partition_point(|&b| b <= smallest) - 1) as u16
            })
            .collect();
        Self {
            rate,
            counts: vec![0; groups * bounds.len()],
            bounds,
            cold: [0; GROUPS],
            footprint: 0,
            total: 0,
            octave_range,
        }
    }

    #[inline]
    fn reuse(&mut self, group: usize, distance: u64) {
        let octave = (u64::BITS - distance.leading_zeros()) as usize;
        let mut range = usize::from(self.octave_range[octave]);
        while self.bounds.get(range + 1).is_some_and(|&b| b <= distance) {
            range += 1;
        }
        debug_assert_eq!(range, self.bounds.partition_point(|&b| b <= distance) - 1);
        self.counts[group * self.bounds.len() + range] += 1;
    }

    #[inline]
    fn cold(&mut self, group: usize) {
        self.cold[group] += 1;
    }

    /// The reuses of each group (and of all, last) at distances below `limit`, a bound or
    /// past every distance.
    fn hits_below(&self, limit: Option<u64>) -> Vec<u64> {
        let n = self.bounds.len();
        let ranges = limit.map_or(n, |l| self.bounds.partition_point(|&b| b < l));
        let mut hits: Vec<u64> = self.counts.chunks(n).map(|c| c[..ranges].iter().sum()).collect();
        hits.push(hits.iter().sum());
        hits
    }

    fn finish(&mut self) -> Mrc {
        let (rate, scale) = (self.rate, 1.0 / self.rate);
        let groups = self.counts.len() / self.bounds.len();
        let all = self.hits_below(None);
        let (reuses, cold) = (all[groups], self.cold.iter().sum::<u64>());
        let footprint_blocks = (self.footprint as f64 * scale).round() as u64;
        // each group's accesses, for the jackknife
        let group_accesses: Vec<u64> = (0..groups).map(|g| all[g] + self.cold[g]).collect();
        let accesses = reuses + cold;
        let mut curve = Vec::new();
        let mut worst_error = 0.0f64;
        let mut cache = FIRST_CACHE;
        loop {
            let blocks = cache / BLOCK;
            // a sampled distance d stands for d / rate real blocks; past the footprint every
            // reuse hits
            let limit = (blocks < footprint_blocks).then(|| ((blocks as f64) * rate).ceil() as u64);
            let hits = self.hits_below(limit);
            let miss = |hit: u64, of: u64| {
                if of == 0 {
                    0.0
                } else {
                    1.0 - hit as f64 / of as f64
                }
            };
            if groups > 1 {
                let leave_out: Vec<f64> = (0..groups)
                    .filter(|&g| group_accesses[g] < accesses)
                    .map(|g| miss(hits[groups] - hits[g], accesses - group_accesses[g]))
                    .collect();
                worst_error = worst_error.max(jackknife_error(&leave_out));
            }
            curve.push(MrcPoint {
                cache_bytes: cache,
                miss_ratio: miss(hits[groups], accesses),
            });
            if limit.is_none() {
                break;
            }
            cache = (cache * 2).min(footprint_blocks.max(1) * BLOCK).max(cache + 1);
        }
        // counted unscaled by log2 bucket of the real distance, scaled once
        let mut reuse_histogram: Vec<ReuseBucket> = Vec::new();
        for (r, &start) in self.bounds.iter().enumerate() {
            let count: u64 = (0..groups).map(|g| self.counts[g * self.bounds.len() + r]).sum();
            if count == 0 {
                continue;
            }
            let real = (start as f64 * scale) as u64;
            let from = if real == 0 { 0 } else { 1u64 << real.ilog2() };
            let to = if real == 0 { 1 } else { from * 2 };
            match reuse_histogram.last_mut() {
                Some(b) if b.from_blocks == from => b.count += count,
                _ => reuse_histogram.push(ReuseBucket {
                    from_blocks: from,
                    to_blocks: to,
                    count,
                }),
            }
        }
        for b in &mut reuse_histogram {
            b.count = (b.count as f64 * scale).round() as u64;
        }
        Mrc {
            block_bytes: BLOCK,
            accesses: self.total,
            cold_misses: (cold as f64 * scale).round() as u64,
            footprint_bytes: footprint_blocks * BLOCK,
            curve,
            reuse_histogram,
            sampling_rate: rate,
            sampling_error: worst_error,
        }
    }
}

/// The jackknife standard error from leave-one-group-out estimates.
fn jackknife_error(estimates: &[f64]) -> f64 {
    let n = estimates.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mean = estimates.iter().sum::<f64>() / n;
    ((n - 1.0) / n * estimates.iter().map(|e| (e - mean).powi(2)).sum::<f64>()).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    fn curve(t: &TraceView<'_>, rows: std::ops::Range<usize>, rate: f64) -> Mrc {
        miss_ratio_curve(t, rows, rate, &Progress::default()).unwrap()
    }

    fn reads(blocks: &[u64]) -> Trace {
        let ts: Vec<u64> = (0..blocks.len() as u64).collect();
        crate::trace::testing::reads(&ts, &blocks.iter().map(|b| b * BLOCK).collect::<Vec<_>>(), 4096)
    }

    #[test]
    fn distances_by_hand() {
        // a b c a b c: every reuse has 2 distinct blocks in between
        let t = reads(&[0, 1, 2, 0, 1, 2]);
        let m = curve(&t.view(), 0..6, 1.0);
        assert_eq!((m.accesses, m.cold_misses, m.footprint_bytes), (6, 3, 3 * 4096));
        assert_eq!(m.reuse_histogram.len(), 1);
        assert_eq!(
            (m.reuse_histogram[0].from_blocks, m.reuse_histogram[0].count),
            (2, 3)
        );
        // 1 MiB (256 blocks) holds all three: only the cold misses
        assert_eq!(m.curve.len(), 1);
        assert!((m.curve[0].miss_ratio - 0.5).abs() < 1e-12);
    }

    #[test]
    fn distinct_samples_count_exactly_while_they_fit_and_closely_past_that() {
        let mut few = DistinctSample::default();
        for k in 0..SAMPLE_KEYS as u64 * 3 {
            few.add(mix(1, k % SAMPLE_KEYS as u64));
        }
        assert_eq!((few.level, few.estimate()), (0, SAMPLE_KEYS as u64));
        // 2 M keys, each twice: within 2 % (about 4 standard errors)
        let n = 2_000_000u64;
        let mut many = DistinctSample::default();
        for k in (0..n).chain(0..n) {
            many.add(mix(2, k));
        }
        assert!(many.level > 0 && many.kept.len() <= SAMPLE_KEYS);
        let err = many.estimate() as f64 / n as f64 - 1.0;
        assert!(err.abs() < 0.02, "{err}");
        // pieces merged give the sample of the whole, key for key
        let (mut a, mut b) = (DistinctSample::default(), DistinctSample::default());
        for k in 0..n {
            if k % 3 == 0 {
                a.add(mix(2, k));
            } else {
                b.add(mix(2, k));
            }
        }
        a.merge(b);
        assert_eq!(a.level, many.level);
        assert_eq!(a.kept, many.kept);
    }

    #[test]
    fn blocks_of_volumes_4096_apart_are_told_apart() {
        let mut t = crate::trace::testing::reads(&[0, 1], &[0, 0], 4096);
        t.volume = vec![0, 4096];
        t.volumes = (0..=4096).map(|v| format!("v{v}")).collect();
        assert_eq!(Blocks::of(&t.view(), 0..2).distinct, 2);
    }

    #[test]
    fn a_budget_keeps_the_curve_exact_while_the_blocks_fit() {
        // 300 distinct blocks, each touched 10 times
        let blocks: Vec<u64> = (0..3000).map(|i| i % 300 * 7).collect();
        let t = reads(&blocks);
        let blocks = Blocks::of(&t.view(), 0..3000);
        assert_eq!((blocks.accesses, blocks.distinct), (3000, 300));
        assert_eq!(blocks.sampling_rate(300), 1.0);
        assert_eq!(blocks.sampling_rate(3000), 1.0);
        let rate = blocks.sampling_rate(150);
        assert!((rate - 0.5).abs() < 1e-9, "{rate}");
        // a trace of many blocks: counted on a sample, within a few per cent
        let many: Vec<u64> = (0..3_000_000).map(|i| i % 1_500_000).collect();
        let t = reads(&many);
        let counted = Blocks::of(&t.view(), 0..many.len());
        let rate = counted.sampling_rate(150_000);
        assert!((rate / 0.1 - 1.0).abs() < 0.03, "{rate}");
        // counted in pieces on the cores: the same count
        let split = Blocks::of_trace(&t.view());
        assert_eq!(
            (split.accesses, split.distinct, split.groups, split.top),
            (counted.accesses, counted.distinct, counted.groups, counted.top)
        );
    }

    #[test]
    fn ranges_of_distances_give_the_exact_curve_when_sampled() {
        // the counted ranges change no figure: a count per distance gives the same curve
        let mut state = 3u64;
        let blocks: Vec<u64> = (0..40_000)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                ((state >> 33) % 4_000) * ((state >> 60) + 1)
            })
            .collect();
        let t = reads(&blocks);
        for rate in [1.0, 0.37, 0.1] {
            let m = curve(&t.view(), 0..blocks.len(), rate);
            // by hand: every sampled block's distance, from a plain list
            let threshold = (rate * SHARDS_MODULUS as f64) as u64;
            let mut list: Vec<u64> = Vec::new();
            let mut distances = Vec::new();
            let mut cold = 0u64;
            for &b in &blocks {
                if rate < 1.0 && mix(0, b) % SHARDS_MODULUS >= threshold {
                    continue;
                }
                match list.iter().position(|&k| k == b) {
                    Some(at) => {
                        list.remove(at);
                        distances.push(at as u64);
                    }
                    None => cold += 1,
                }
                list.insert(0, b);
            }
            let accesses = distances.len() as u64 + cold;
            for p in &m.curve[..m.curve.len() - 1] {
                let limit = ((p.cache_bytes / BLOCK) as f64 * rate).ceil() as u64;
                let hits = distances.iter().filter(|&&d| d < limit).count() as u64;
                assert_eq!(
                    p.miss_ratio,
                    1.0 - hits as f64 / accesses as f64,
                    "rate {rate} {p:?}"
                );
            }
            let reuses = distances.len() as f64;
            assert_eq!(m.curve.last().unwrap().miss_ratio, 1.0 - reuses / accesses as f64);
            let scale = 1.0 / rate;
            assert_eq!(m.cold_misses, (cold as f64 * scale).round() as u64);
            for b in &m.reuse_histogram {
                let (from, to) = (b.from_blocks, b.to_blocks);
                let n = distances
                    .iter()
                    .filter(|&&d| {
                        let real = (d as f64 * scale) as u64;
                        real >= from && real < to
                    })
                    .count();
                assert_eq!(b.count, (n as f64 * scale).round() as u64, "rate {rate} {b:?}");
            }
        }
    }

    #[test]
    fn curve_falls_at_the_working_set() {
        // a loop over 512 blocks (2 MiB), twice: a 1 MiB LRU cache misses everything,
        // a 2 MiB cache hits the whole second pass
        let blocks: Vec<u64> = (0..512).chain(0..512).collect();
        let t = reads(&blocks);
        let m = curve(&t.view(), 0..1024, 1.0);
        let at = |bytes: u64| {
            m.curve
                .iter()
                .find(|p| p.cache_bytes == bytes)
                .unwrap()
                .miss_ratio
        };
        assert_eq!(at(1 << 20), 1.0);
        assert_eq!(at(2 << 20), 0.5);
        assert_eq!(m.curve.last().unwrap().cache_bytes, 2 << 20);
    }

    #[test]
    fn a_request_touches_every_block_it_overlaps() {
        let mut t = reads(&[0, 0]);
        t.offset = vec![4000, 4096]; // the first spans blocks 0 and 1
        t.size = vec![200, 4096];
        let m = curve(&t.view(), 0..2, 1.0);
        assert_eq!((m.accesses, m.cold_misses), (3, 2));
        assert_eq!(m.reuse_histogram[0].from_blocks, 0);
    }

    #[test]
    fn sampling_tracks_the_exact_curve() {
        let mut state = 7u64;
        let blocks: Vec<u64> = (0..200_000)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let u = (state >> 33) as f64 / (1u64 << 31) as f64;
                (u * u * 20_000.0) as u64 // skewed popularity over 20k blocks
            })
            .collect();
        let t = reads(&blocks);
        let exact = curve(&t.view(), 0..blocks.len(), 1.0);
        assert_eq!(exact.sampling_error, 0.0);
        for rate in [0.3, 0.1, 0.03, 0.01] {
            let approx = curve(&t.view(), 0..blocks.len(), rate);
            let worst = exact
                .curve
                .iter()
                .zip(&approx.curve)
                .map(|(e, a)| (e.miss_ratio - a.miss_ratio).abs())
                .fold(0.0, f64::max);
            // the stated error is a standard error: the curve strays past three of them
            // nowhere, and it is not a loose bound either
            let stated = approx.sampling_error;
            assert!(
                worst <= 3.0 * stated,
                "rate {rate}: off by {worst}, stated {stated}"
            );
            assert!(
                stated <= 3.0 * worst + 0.01,
                "rate {rate}: off by {worst}, stated {stated}"
            );
            if rate >= 0.1 {
                assert!(worst < 0.02, "rate {rate}: off by {worst}");
            }
        }
    }
}
