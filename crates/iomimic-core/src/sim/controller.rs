//! The array controller's state: its block cache and the read streams it prefetches for.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::{FxHashMap, FxHashSet};

/// The controller's cache: LRU over 4 KiB blocks of the array's address space. Prefetched
/// blocks share it with demand data: many streams' read-ahead pushes out each other's (and
/// demand data), and a block read ahead that leaves the cache, or the run ends, before any
/// request reads it was wasted disk work.
pub(super) struct BlockCache {
    capacity: usize,
    stamp: u64,
    blocks: FxHashMap<u64, u64>,
    order: BTreeMap<u64, u64>,
    /// blocks read ahead that no request has read yet
    unread: FxHashSet<u64>,
    /// blocks prefetch brought in, and those of them evicted unread
    pub(super) prefetched: u64,
    evicted_unread: u64,
}

const CACHE_BLOCK: u64 = 4096;

pub(super) fn cache_block_kib() -> u64 {
    CACHE_BLOCK / 1024
}

impl BlockCache {
    pub(super) fn new(mib: f64) -> Self {
        Self {
            capacity: (mib * 1024.0 * 1024.0 / CACHE_BLOCK as f64) as usize,
            stamp: 0,
            blocks: FxHashMap::default(),
            order: BTreeMap::new(),
            unread: FxHashSet::default(),
            prefetched: 0,
            evicted_unread: 0,
        }
    }

    /// Every block the range touches is cached (and each becomes most recently used).
    pub(super) fn hit(&mut self, offset: u64, size: u32) -> bool {
        let range = offset / CACHE_BLOCK..=(offset + u64::from(size.max(1)) - 1) / CACHE_BLOCK;
        if !range.clone().all(|b| self.blocks.contains_key(&b)) {
            return false;
        }
        for b in range {
            self.unread.remove(&b);
            self.touch(b);
        }
        true
    }

    /// A read served from data a prefetch brought in (it waited for that prefetch): its blocks
    /// are used, and become the most recently used.
    pub(super) fn used(&mut self, offset: u64, size: u32) {
        for b in offset / CACHE_BLOCK..=(offset + u64::from(size.max(1)) - 1) / CACHE_BLOCK {
            self.unread.remove(&b);
            if self.blocks.contains_key(&b) {
                self.touch(b);
            }
        }
    }

    /// Caches what a prefetch read: blocks not already cached stay unread until a request
    /// reads them.
    pub(super) fn fill_ahead(&mut self, offset: u64, size: u64) {
        if self.capacity == 0 || size == 0 {
            return;
        }
        for b in offset / CACHE_BLOCK..=(offset + size - 1) / CACHE_BLOCK {
            if !self.blocks.contains_key(&b) {
                self.prefetched += 1;
                self.unread.insert(b);
            }
            self.touch(b);
        }
    }

    /// Lets go of the blocks of `offset..end` read ahead that no request has read (their
    /// stream is no longer followed): they count as evicted unread.
    pub(super) fn drop_unread(&mut self, offset: u64, end: u64) {
        if end <= offset {
            return;
        }
        for b in offset / CACHE_BLOCK..=(end - 1) / CACHE_BLOCK {
            if self.unread.remove(&b) {
                if let Some(stamp) = self.blocks.remove(&b) {
                    self.order.remove(&stamp);
                }
                self.evicted_unread += 1;
            }
        }
    }

    /// The cache holds `offset..end` whole (nothing is touched).
    pub(super) fn holds(&self, offset: u64, end: u64) -> bool {
        end > offset && (offset / CACHE_BLOCK..=(end - 1) / CACHE_BLOCK).all(|b| self.blocks.contains_key(&b))
    }

    /// Blocks prefetched that no request read: evicted first, or still unread at the end.
    pub(super) fn unused(&self) -> u64 {
        self.evicted_unread + self.unread.len() as u64
    }

    /// Caches the blocks a request's own data touches (block granularity: the cache keeps
    /// whole blocks).
    pub(super) fn fill(&mut self, offset: u64, size: u64) {
        if self.capacity == 0 || size == 0 {
            return;
        }
        for b in offset / CACHE_BLOCK..=(offset + size - 1) / CACHE_BLOCK {
            self.unread.remove(&b);
            self.touch(b);
        }
    }

    fn touch(&mut self, block: u64) {
        self.stamp += 1;
        if let Some(old) = self.blocks.insert(block, self.stamp) {
            self.order.remove(&old);
        }
        self.order.insert(self.stamp, block);
        while self.blocks.len() > self.capacity {
            let (_, victim) = self.order.pop_first().expect("a full cache has blocks");
            self.blocks.remove(&victim);
            if self.unread.remove(&victim) {
                self.evicted_unread += 1;
            }
        }
    }
}

/// The controller's view of sequential read streams, for prefetching. A read miss that lands
/// at most `prefetch_max` past the end of a tracked stream's data continues that stream (a
/// jump within the window still counts, as the FC-60 paper's (Keeton et al.) arrays treat pseudo-sequential runs),
/// and the stream's prefetch doubles up to the maximum; any other miss starts a stream at the
/// minimum. So jumps shorter than the maximum end up inside prefetched data.
#[derive(Default)]
pub(super) struct Streams {
    /// the streams followed, most recent first
    tracked: VecDeque<Tracked>,
    /// what the last stream pushed out of `tracked` had read ahead on speculation (start, end)
    pub(super) dropped: Option<(u64, u64)>,
}

#[derive(Clone, Copy)]
struct Tracked {
    /// end of the data read and read ahead
    end: u64,
    /// the current prefetch
    ahead: u64,
    /// reads that continued it strictly in sequence
    run: u32,
    /// where its read-ahead not yet reached starts
    from: u64,
    /// its read-ahead follows a sequential run (not speculation): it is kept as cached data
    kept: bool,
}

/// Streams the controller follows at once: past 8, interleaved streams push each other out
/// (the FC-60 paper saw service times rise past about 10).
const TRACKED_STREAMS: usize = 8;

/// With no minimum prefetch, reads that must continue a stream strictly sequentially before
/// it is read ahead of (the paper: array prefetching is effective for strictly sequential
/// workloads; runs with jumps gain only from a forced minimum).
pub(super) const DETECT_AFTER: u32 = 4;

impl Streams {
    /// How far to read ahead of a miss at `offset..end`. With no minimum (`first` 0) a new
    /// stream reads nothing ahead, but one that has continued `DETECT_AFTER` times reads
    /// ahead twice its request, then doubles: an array detects sequential streams whatever
    /// its minimum prefetch. `behind`: the cache holds a sequential run just before the read.
    pub(super) fn prefetch(&mut self, offset: u64, end: u64, first: u64, max: u64, behind: bool) -> u64 {
        if max == 0 {
            return 0;
        }
        let found = self
            .tracked
            .iter()
            .position(|t| offset >= t.end && offset - t.end <= max);
        let (ahead, run) = match found {
            Some(k) => {
                let t = self.tracked.remove(k).expect("found");
                // only strictly sequential reads count towards detecting a stream
                let run = if offset == t.end { t.run + 1 } else { 0 };
                let detected = first > 0 || run >= DETECT_AFTER;
                let ahead = if detected {
                    (t.ahead.max(end - offset) * 2).clamp(first, max)
                } else {
                    0
                };
                (ahead, run)
            }
            None => (first, 0),
        };
        self.tracked.push_front(Tracked {
            end: end + ahead,
            ahead,
            run,
            from: end,
            kept: behind || run >= DETECT_AFTER,
        });
        self.dropped = None;
        if self.tracked.len() > TRACKED_STREAMS {
            self.dropped = self
                .tracked
                .pop_back()
                .filter(|t| !t.kept)
                .map(|t| (t.from, t.end));
        }
        ahead
    }

    /// A read up to `end` inside a stream's prefetched data: once less than half a prefetch
    /// is left ahead of it, the stream reads on, twice as far (up to `max`); returns where
    /// from and how far.
    pub(super) fn extend(&mut self, end: u64, max: u64) -> Option<(u64, u64)> {
        let t = self
            .tracked
            .iter_mut()
            .find(|t| t.ahead > 0 && end <= t.end && t.end - end < t.ahead / 2)?;
        let (from, ahead) = (t.end, (t.ahead * 2).min(max));
        (t.end, t.ahead, t.from) = (t.end + ahead, ahead, end);
        Some((from, ahead))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_evicts_the_least_recently_used_block() {
        // 3 blocks of room
        let mut c = BlockCache::new(3.0 * 4096.0 / (1024.0 * 1024.0));
        c.fill(0, 3 * 4096);
        assert!(c.hit(0, 4096)); // block 0 is now the most recent
        c.fill(3 * 4096, 4096); // evicts block 1
        assert!(!c.hit(4096, 4096));
        assert!(c.hit(0, 4096) && c.hit(2 * 4096, 10) && c.hit(3 * 4096, 4096));
        // a hit needs every block the range touches
        assert!(!c.hit(4000, 200));
    }

    #[test]
    fn prefetched_blocks_evicted_or_left_unread_are_unused() {
        let mut c = BlockCache::new(3.0 * 4096.0 / (1024.0 * 1024.0));
        c.fill(0, 4096);
        // blocks 1 and 2 read ahead; block 0 was cached already and is not counted
        c.fill_ahead(0, 3 * 4096);
        assert_eq!((c.prefetched, c.unused()), (2, 2));
        assert!(c.hit(4096, 4096)); // block 1 read
        assert_eq!(c.unused(), 1);
        // another stream's read-ahead pushes block 2 out before anyone reads it
        c.fill_ahead(8 * 4096, 2 * 4096);
        assert!(!c.hit(2 * 4096, 4096));
        assert_eq!((c.prefetched, c.unused()), (4, 3));
        // a read that waited for a prefetch uses its blocks
        c.used(8 * 4096, 8192);
        assert_eq!(c.unused(), 1);
    }

    #[test]
    fn speculative_read_ahead_goes_with_its_stream_and_a_run_s_stays() {
        let mut c = BlockCache::new(1.0);
        let mut s = Streams::default();
        let (kib, max) = (1024, 1024 * 1024);
        // stream 0 reads 4 KiB at 0 and 64 KiB ahead on speculation; stream 1 reads at 1 GiB
        // with a sequential run just behind it in the cache
        assert_eq!(s.prefetch(0, 4 * kib, 64 * kib, max, false), 64 * kib);
        c.fill(0, 4 * kib);
        c.fill_ahead(4 * kib, 64 * kib);
        let g = 1 << 30;
        assert_eq!(s.prefetch(g, g + 4 * kib, 64 * kib, max, true), 64 * kib);
        c.fill_ahead(g + 4 * kib, 64 * kib);
        assert!(c.holds(0, 68 * kib) && !c.holds(0, 72 * kib));
        // 6 more streams: both still followed
        for k in 2..8 {
            s.prefetch(k << 32, (k << 32) + 4 * kib, 64 * kib, max, false);
            assert_eq!(s.dropped, None);
        }
        // the 9th pushes stream 0 out: its read-ahead goes, unread, its data stays
        s.prefetch(8 << 32, (8 << 32) + 4 * kib, 64 * kib, max, false);
        assert_eq!(s.dropped, Some((4 * kib, 68 * kib)));
        c.drop_unread(4 * kib, 68 * kib);
        assert!(c.hit(0, 4096) && !c.hit(4 * kib, 4096));
        assert_eq!(c.unused(), 32);
        // the 10th pushes stream 1 out, whose read-ahead followed a run: kept
        s.prefetch(9 << 32, (9 << 32) + 4 * kib, 64 * kib, max, false);
        assert_eq!(s.dropped, None);
    }

    #[test]
    fn a_stream_s_prefetch_doubles_while_jumps_stay_inside_the_window() {
        let mut s = Streams::default();
        let (kib, max) = (1024, 1024 * 1024);
        assert_eq!(s.prefetch(0, 4 * kib, 64 * kib, max, false), 64 * kib);
        // 100 KiB past the data read (4 + 64 KiB): the same stream
        assert_eq!(s.prefetch(168 * kib, 172 * kib, 64 * kib, max, false), 128 * kib);
        assert_eq!(s.prefetch(300 * kib, 304 * kib, 64 * kib, max, false), 256 * kib);
        // 2 MiB away: a new stream, back to the minimum
        assert_eq!(
            s.prefetch(3 << 20, (3 << 20) + 4 * kib, 64 * kib, max, false),
            64 * kib
        );
        // no minimum: nothing ahead of a stream until it has continued 4 times strictly in
        // sequence (a jump starts the count again); then twice the read's size, doubling
        let mut s = Streams::default();
        for k in 0..4 {
            assert_eq!(s.prefetch(k * 4 * kib, (k + 1) * 4 * kib, 0, max, false), 0);
        }
        assert_eq!(s.prefetch(16 * kib, 20 * kib, 0, max, false), 8 * kib);
        assert_eq!(s.prefetch(28 * kib, 32 * kib, 0, max, false), 16 * kib);
        // a read past half of the 16 KiB read ahead (to 48 KiB) reads on from there, twice as
        // far, up to the maximum
        assert_eq!(s.extend(38 * kib, max), None);
        assert_eq!(s.extend(42 * kib, max), Some((48 * kib, 32 * kib)));
        assert_eq!(s.extend(42 * kib, max), None);
        assert_eq!(s.extend(70 * kib, 40 * kib), Some((80 * kib, 40 * kib)));
        // runs of 4 with 8 KiB jumps: never detected
        let mut s = Streams::default();
        for k in 0..12 {
            let at = k * 4 * kib + k / 4 * 8 * kib;
            assert_eq!(s.prefetch(at, at + 4 * kib, 0, max, false), 0, "{k}");
        }
        // no maximum, no prefetch
        assert_eq!(Streams::default().prefetch(0, 4 * kib, 64 * kib, 0, false), 0);
    }
}
