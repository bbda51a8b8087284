//! The flash translation layer: a page map with static (or die-wide) plane allocation, blocks
//! with valid counts, write frontiers, and greedy choice of the block to collect.
//!
//! ## Algorithm
//! A logical page lives in the plane [`Geometry::place`] gives it, or, with `die_planes`, in
//! any plane of that plane's die (host writes take the die's planes in turn, so they sit at
//! equal page numbers and can program together; collection moves a page within its plane).
//! Within the plane it goes to the next free page of an open block (one open block for host
//! writes, another for pages that collection moves, so cold data is not mixed back into hot
//! blocks). Writing a page
//! invalidates its old copy, whose block loses a valid page. A full block is collected by moving
//! its valid pages and erasing it; the victim is the plane's full block with the fewest valid
//! pages (greedy). Host writes leave `RESERVE` free blocks to collection, so it can always finish.
//!
//! The data a drive holds when the run starts (its fill) is not in the map: it is laid out
//! implicitly, block by block in page order ([`super::precondition`]), and the map records only
//! pages written or moved during the run. Memory grows with the run's writes, not the drive.
//!
//! ## Complexity
//! A write or lookup is a hash-map access (a lookup of preconditioned data, a binary search of
//! its plane's layout); choosing a victim scans the plane's blocks, once per collected block.
//!
//! ## References
//! Agrawal et al., "Design tradeoffs for SSD performance" (USENIX ATC 2008); Tavakkol et al.,
//! "MQSim" (FAST 2018) for static plane allocation and greedy collection.

use rustc_hash::FxHashMap;

use super::params::Geometry;
use super::precondition::Layout;

/// Free blocks host writes leave to collection.
pub(super) const RESERVE: usize = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    Open,
    Full,
    Victim,
}

/// A plane's blocks, field by field (a victim scan reads only states and valid counts).
struct Plane {
    state: Vec<State>,
    valid: Vec<u32>,
    /// pages programmed (the write pointer)
    written: Vec<u32>,
    /// the block still holds the data it was preconditioned with (pages 0.. of its share of
    /// the plane's shape), not yet erased
    preconditioned: Vec<bool>,
    /// the list of logical pages written to its pages during the run (an index into the
    /// drive's lists), NONE while it has none
    list: Vec<u32>,
    free: Vec<u32>,
    /// open blocks: host writes, moved pages
    open: [Option<u32>; 2],
    /// its preconditioned layout, one of the drive's shapes
    shape: usize,
}

const NONE: u32 = u32::MAX;

/// A preconditioned layout shared by planes: the first share-number of each block, how many
/// pages there are, and for every 64th share-number the block holding it (so a lookup scans a
/// block or two instead of searching).
struct Shape {
    starts: Vec<u32>,
    total: u32,
    coarse: Vec<u32>,
}

impl Shape {
    fn new(valid: &[u32]) -> Self {
        let mut starts = Vec::with_capacity(valid.len() + 1);
        let mut total = 0u32;
        for &v in valid {
            starts.push(total);
            total += v;
        }
        let mut coarse = Vec::with_capacity(total as usize / 64 + 1);
        let mut b = 0usize;
        for local in (0..total).step_by(64) {
            while b + 1 < starts.len() && starts[b + 1] <= local {
                b += 1;
            }
            coarse.push(b as u32);
        }
        Self {
            starts,
            total,
            coarse,
        }
    }

    /// Preconditioned block `b`'s first share-number and page count.
    fn block(&self, b: usize) -> (u32, u32) {
        let start = self.starts[b];
        let end = self.starts.get(b + 1).copied().unwrap_or(self.total);
        (start, end - start)
    }

    /// The block holding share-number `local` (< total) and the page within it.
    fn find(&self, local: u32) -> Spot {
        let mut b = self.coarse[(local >> 6) as usize] as usize;
        while b + 1 < self.starts.len() && self.starts[b + 1] <= local {
            b += 1;
        }
        Spot {
            block: b as u32,
            page: local - self.starts[b],
        }
    }
}

/// Logical page → (plane, share-number): a division by the plane count, by multiplication
/// for pages under 2^32 (Lemire, Kaser, Kurz, "Faster remainder by direct computation",
/// 2019), and a table from the remainder to the plane.
struct Striping {
    n: u64,
    magic: u64,
    plane_of: Vec<u32>,
}

impl Striping {
    fn new(geo: &Geometry) -> Self {
        let n = geo.plane_count() as u64;
        let mut plane_of = vec![0u32; n as usize];
        for p in 0..n as usize {
            plane_of[geo.lpn(p, 0) as usize] = p as u32;
        }
        Self {
            n,
            magic: if n > 1 { u64::MAX / n + 1 } else { 0 },
            plane_of,
        }
    }

    fn place(&self, lpn: u64) -> (usize, u64) {
        let (q, r) = if self.n == 1 {
            (lpn, 0)
        } else if lpn < 1 << 32 {
            let q = ((u128::from(self.magic) * u128::from(lpn)) >> 64) as u64;
            let low = self.magic.wrapping_mul(lpn);
            (q, ((u128::from(low) * u128::from(self.n)) >> 64) as u64)
        } else {
            (lpn / self.n, lpn % self.n)
        };
        (self.plane_of[r as usize] as usize, q)
    }
}

/// Which open block a write goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stream {
    Host = 0,
    Moved = 1,
}

/// Where a page is: block and page within its plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Spot {
    pub block: u32,
    pub page: u32,
}

pub(super) struct Ftl {
    geo: Geometry,
    striping: Striping,
    planes: Vec<Plane>,
    shapes: Vec<Shape>,
    /// page lists of blocks written during the run (the logical page of each page), reused
    /// once erased
    lists: Vec<Box<[u64]>>,
    free_lists: Vec<u32>,
    /// logical page → plane (high 32 bits), block and page, for pages written or moved
    /// during the run
    map: FxHashMap<u64, u64>,
    page_bits: u32,
    /// host writes may go to any plane of their die
    die_planes: bool,
    /// pages each plane has taken for host writes
    host_written: Vec<u64>,
}

impl Ftl {
    /// The drive as the run finds it: `layout` gives each plane's preconditioned blocks.
    pub(super) fn new(geo: Geometry, layout: &Layout, die_planes: bool) -> Self {
        let k = geo.pages;
        let shapes = layout.shapes().iter().map(|valid| Shape::new(valid)).collect();
        let n = geo.blocks as usize;
        let planes = (0..geo.plane_count())
            .map(|p| {
                let layout_blocks = layout.plane(p);
                let used = layout_blocks.len();
                let mut plane = Plane {
                    state: vec![State::Free; n],
                    valid: vec![0; n],
                    written: vec![0; n],
                    preconditioned: vec![false; n],
                    list: vec![NONE; n],
                    // the lowest-numbered free block comes off the list first
                    free: (used as u32..geo.blocks).rev().collect(),
                    open: [None, None],
                    shape: layout.shape_of(p),
                };
                plane.state[..used].fill(State::Full);
                plane.valid[..used].copy_from_slice(layout_blocks);
                plane.written[..used].fill(k);
                plane.preconditioned[..used].fill(true);
                plane
            })
            .collect();
        Self {
            striping: Striping::new(&geo),
            geo,
            planes,
            shapes,
            lists: Vec::new(),
            free_lists: Vec::new(),
            map: FxHashMap::default(),
            page_bits: 32 - (geo.pages - 1).leading_zeros(),
            die_planes,
            host_written: vec![0; geo.plane_count()],
        }
    }

    fn pack(&self, s: Spot) -> u32 {
        (s.block << self.page_bits) | s.page
    }

    fn unpack(&self, v: u32) -> Spot {
        Spot {
            block: v >> self.page_bits,
            page: v & ((1 << self.page_bits) - 1),
        }
    }

    /// Where logical page `lpn` is held, if it holds data; with its plane (for data never
    /// written, the plane it was preconditioned in).
    pub(super) fn locate(&self, lpn: u64) -> (usize, Option<Spot>) {
        if let Some(&v) = self.map.get(&lpn) {
            return ((v >> 32) as usize, Some(self.unpack(v as u32)));
        }
        let (plane, local) = self.striping.place(lpn);
        (plane, self.implicit(plane, local))
    }

    /// Where preconditioned page `local` of `plane` sits, if it was never rewritten or moved
    /// (the caller found no entry in the map). A page that left its block has an entry: its
    /// block is erased only once every valid page has moved, so the layout still holds.
    fn implicit(&self, plane: usize, local: u64) -> Option<Spot> {
        let shape = &self.shapes[self.planes[plane].shape];
        (local < u64::from(shape.total)).then(|| shape.find(local as u32))
    }

    pub(super) fn free_blocks(&self, plane: usize) -> usize {
        self.planes[plane].free.len()
    }

    /// Writes `lpn` to the next page of its plane's `stream` block; its old copy becomes
    /// invalid. `None` when the plane has no page to give (the write waits for an erase).
    #[cfg(test)]
    pub(super) fn write(&mut self, lpn: u64, stream: Stream) -> Option<(usize, Spot)> {
        let (plane, old) = self.locate(lpn);
        let old = old.map(|s| (plane, s));
        match stream {
            Stream::Host => self.write_host(lpn, old).ok(),
            Stream::Moved => self.write_over(lpn, plane, old, stream).map(|s| (plane, s)),
        }
    }

    /// A host write of `lpn` (held at `old`, if anywhere), to the plane the striping gives;
    /// or, with `die_planes`, its die fixed by the striping and its plane the one of the die
    /// that has taken the fewest host pages (the lowest-numbered of equals) and has a page to
    /// give. A die's planes so take its host writes in turn at the same page numbers, and two
    /// writes queued for a die together can be programmed as one multi-plane operation, which
    /// needs the same page in each plane (with the plane fixed by the logical page, as in
    /// MQSim, the planes' write points drift apart and random writes almost never pair).
    /// `Err(plane)`: no page to give, the write waits for an erase in `plane` (the one the
    /// striping gives).
    pub(super) fn write_host(
        &mut self,
        lpn: u64,
        old: Option<(usize, Spot)>,
    ) -> Result<(usize, Spot), usize> {
        let home = self.striping.place(lpn).0;
        let n = if self.die_planes { self.geo.planes } else { 1 };
        let first = home - home % n;
        let taken = &self.host_written;
        let mut order = [0usize; 16];
        for (k, slot) in order.iter_mut().enumerate().take(n) {
            *slot = first + k;
        }
        order[..n].sort_by_key(|&p| (taken[p], p));
        for &plane in &order[..n] {
            if let Some(spot) = self.write_over(lpn, plane, old, Stream::Host) {
                self.host_written[plane] += 1;
                return Ok((plane, spot));
            }
        }
        Err(home)
    }

    /// Writes `lpn` (held at `old`, if anywhere) to the next page of `plane`'s `stream`
    /// block; the old copy becomes invalid. `None` when the plane has no page to give (the
    /// write waits for an erase).
    pub(super) fn write_over(
        &mut self,
        lpn: u64,
        plane: usize,
        old: Option<(usize, Spot)>,
        stream: Stream,
    ) -> Option<Spot> {
        let spot = self.allocate(plane, stream)?;
        if let Some((p, o)) = old {
            self.planes[p].valid[o.block as usize] -= 1;
        }
        let pl = &mut self.planes[plane];
        let b = spot.block as usize;
        pl.valid[b] += 1;
        self.lists[pl.list[b] as usize][spot.page as usize] = lpn;
        let packed = ((plane as u64) << 32) | u64::from(self.pack(spot));
        self.map.insert(lpn, packed);
        Some(spot)
    }

    fn allocate(&mut self, plane: usize, stream: Stream) -> Option<Spot> {
        let k = self.geo.pages;
        let s = stream as usize;
        let pl = &mut self.planes[plane];
        let block = match pl.open[s] {
            Some(b) => b,
            None => {
                let reserve = if stream == Stream::Host { RESERVE } else { 0 };
                if pl.free.len() <= reserve {
                    return None;
                }
                let b = pl.free.pop().expect("checked");
                pl.state[b as usize] = State::Open;
                pl.list[b as usize] = match self.free_lists.pop() {
                    Some(l) => {
                        self.lists[l as usize].fill(u64::MAX);
                        l
                    }
                    None => {
                        self.lists.push(vec![u64::MAX; k as usize].into_boxed_slice());
                        (self.lists.len() - 1) as u32
                    }
                };
                pl.open[s] = Some(b);
                b
            }
        };
        let b = block as usize;
        let page = pl.written[b];
        pl.written[b] += 1;
        if pl.written[b] == k {
            pl.state[b] = State::Full;
            pl.open[s] = None;
        }
        Some(Spot { block, page })
    }

    /// The plane's full block with the fewest valid pages, now marked for collection; `None`
    /// when no full block has an invalid page.
    pub(super) fn pick_victim(&mut self, plane: usize) -> Option<u32> {
        let k = self.geo.pages;
        let pl = &mut self.planes[plane];
        let (b, valid) = pl
            .state
            .iter()
            .zip(&pl.valid)
            .enumerate()
            .filter(|(_, (&st, _))| st == State::Full)
            .map(|(i, (_, &v))| (i, v))
            .min_by_key(|&(_, v)| v)?;
        if valid >= k {
            return None;
        }
        pl.state[b] = State::Victim;
        Some(b as u32)
    }

    /// The valid pages of `block`: (logical page, page).
    pub(super) fn valid_pages(&self, plane: usize, block: u32) -> Vec<(u64, u32)> {
        let pl = &self.planes[plane];
        let b = block as usize;
        let mut out = Vec::with_capacity(pl.valid[b] as usize);
        let (start, implicit) = if pl.preconditioned[b] {
            self.shapes[pl.shape].block(b)
        } else {
            (0, 0)
        };
        let list = pl.list[b];
        for page in 0..pl.written[b] {
            // a preconditioned block's pages past its data are stale, and not listed
            let lpn = if page < implicit {
                self.geo.lpn(plane, u64::from(start + page))
            } else if list != NONE {
                self.lists[list as usize][page as usize]
            } else {
                u64::MAX
            };
            if lpn == u64::MAX {
                continue;
            }
            if self.locate(lpn) == (plane, Some(Spot { block, page })) {
                out.push((lpn, page));
            }
        }
        out
    }

    /// Collection moves `lpn` out of `from` if it is still there: returns its new place.
    pub(super) fn relocate(&mut self, lpn: u64, plane: usize, from: Spot) -> Option<Spot> {
        if self.locate(lpn) != (plane, Some(from)) {
            return None; // rewritten since collection started
        }
        self.write_over(lpn, plane, Some((plane, from)), Stream::Moved)
    }

    /// `block`, collected, is erased and free again.
    pub(super) fn erase(&mut self, plane: usize, block: u32) {
        let pl = &mut self.planes[plane];
        let b = block as usize;
        debug_assert_eq!(pl.valid[b], 0, "erasing a block with valid pages");
        (pl.state[b], pl.valid[b], pl.written[b], pl.preconditioned[b]) = (State::Free, 0, 0, false);
        if pl.list[b] != NONE {
            self.free_lists.push(pl.list[b]);
            pl.list[b] = NONE;
        }
        pl.free.push(block);
    }

    pub(super) fn valid(&self, plane: usize, block: u32) -> u32 {
        self.planes[plane].valid[block as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::super::precondition::Layout;
    use super::*;

    fn geo(blocks: u32) -> Geometry {
        Geometry {
            channels: 1,
            chips: 1,
            dies: 1,
            planes: 2,
            blocks,
            pages: 4,
            page_bytes: 4096,
            logical_pages: 20,
        }
    }

    #[test]
    fn writes_invalidate_and_greedy_picks_the_emptiest_block() {
        // 2 planes of 8 blocks of 4 pages; 16 logical pages preconditioned in order: each plane
        // holds 8 in blocks 0 and 1
        let g = geo(8);
        let mut f = Ftl::new(g, &Layout::sequential(&g, 16), false);
        assert_eq!(f.locate(2), (0, Some(Spot { block: 0, page: 1 })));
        assert_eq!(f.locate(3), (1, Some(Spot { block: 0, page: 1 })));
        assert_eq!(f.locate(18), (0, None));
        // rewrite pages 0, 2, 4 (plane 0's shares 0, 1, 2: block 0) and 8 (share 4: block 1)
        for lpn in [0, 2, 4, 8] {
            f.write(lpn, Stream::Host).unwrap();
        }
        assert_eq!(f.locate(2), (0, Some(Spot { block: 2, page: 1 })));
        assert_eq!((f.valid(0, 0), f.valid(0, 1), f.valid(0, 2)), (1, 3, 4));
        assert_eq!(f.pick_victim(0), Some(0));
        assert_eq!(f.valid_pages(0, 0), [(6, 3)]);
        let moved = f.relocate(6, 0, Spot { block: 0, page: 3 }).unwrap();
        assert_eq!(moved, Spot { block: 3, page: 0 });
        assert_eq!(f.valid(0, 0), 0);
        f.erase(0, 0);
        assert_eq!(f.free_blocks(0), 5);
        // a page rewritten after collection began is not moved
        assert_eq!(f.relocate(6, 0, Spot { block: 0, page: 3 }), None);
    }

    #[test]
    fn striping_by_multiplication_matches_division() {
        let g = Geometry {
            channels: 3,
            chips: 5,
            dies: 2,
            planes: 2,
            ..geo(8)
        };
        let s = Striping::new(&g);
        let mut x = 1u64;
        for _ in 0..100_000 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            for lpn in [x >> 32, x >> 40, x >> 20, (1 << 32) - 1 - (x >> 40)] {
                assert_eq!(s.place(lpn), g.place(lpn), "{lpn}");
            }
        }
        let shape = Shape::new(&[100, 0, 30, 200, 0, 0, 7]);
        for local in 0..337 {
            let spot = shape.find(local);
            let expect = [0u32, 100, 100, 130, 330, 330, 330].partition_point(|&st| st <= local) - 1;
            assert_eq!(
                (spot.block as usize, spot.page),
                (expect, local - [0u32, 100, 100, 130, 330, 330, 330][expect])
            );
        }
    }

    #[test]
    fn a_die_s_planes_take_host_writes_in_turn() {
        // one die of 2 planes; pages 0, 2, 4, 6 are all striped to plane 0. With die-wide
        // allocation they go to planes 0, 1, 0, 1 at pages 0, 0, 1, 1 (the plane that has
        // taken fewer host pages first), and each is found, and collected, where it went
        let g = geo(8);
        let mut f = Ftl::new(g, &Layout::sequential(&g, 0), true);
        let spots: Vec<_> = [0, 2, 4, 6]
            .iter()
            .map(|&l| f.write(l, Stream::Host).unwrap())
            .collect();
        let at = |plane, page| (plane, Spot { block: 0, page });
        assert_eq!(spots, [at(0, 0), at(1, 0), at(0, 1), at(1, 1)]);
        assert_eq!(f.locate(6), (1, Some(Spot { block: 0, page: 1 })));
        assert_eq!(f.valid_pages(1, 0), [(2, 0), (6, 1)]);
        // rewriting page 2 (held in plane 1) goes to plane 0 (both planes have taken 2 host
        // pages: the lowest-numbered); plane 1's copy is no longer valid
        assert_eq!(f.write(2, Stream::Host), Some(at(0, 2)));
        assert_eq!(f.valid_pages(1, 0), [(6, 1)]);
        assert_eq!((f.valid(0, 0), f.valid(1, 0)), (3, 1));
    }

    #[test]
    fn host_writes_leave_the_reserve_to_collection() {
        let g = geo(8);
        let mut f = Ftl::new(g, &Layout::sequential(&g, 0), false);
        // plane 0 takes even pages: 7 blocks of 4 pages for host writes, the 8th held back
        let written = (0..100u64)
            .map(|i| i * 2)
            .take_while(|&l| f.write(l, Stream::Host).is_some())
            .count();
        assert_eq!(written, 28);
        assert!(f.write(200, Stream::Moved).is_some());
    }
}
