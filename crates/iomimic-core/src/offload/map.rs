//! The client's metadata: for each off-loaded block, where its latest version lies (one place
//! per replica) and which stores still hold older (stale) versions, so reclaim knows where to
//! send deletes. Kept in memory only; the stores' logs rebuild it after a crash.

use std::collections::BTreeMap;

/// Where one copy of a block lies: a store and the byte offset of its data there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub store: usize,
    pub at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub version: u64,
    pub locs: Vec<Loc>,
    /// Stores (bit per store) holding versions older than `version`.
    pub stale: u64,
    /// Reclaim copied this version home and is deleting it: reads go home.
    pub home: bool,
}

impl Entry {
    /// Every store holding any version of the block.
    pub fn stores(&self) -> u64 {
        self.locs.iter().fold(self.stale, |m, l| m | (1 << l.store))
    }
}

/// An extent reclaim copies home at once: blocks with one version, lying one after the other
/// in one store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub start: u64,
    pub blocks: u32,
    pub version: u64,
    pub from: Loc,
}

/// The most stores a client may use (the stale set is a bit mask).
pub const MAX_STORES: usize = 64;

#[derive(Debug, Default, Clone)]
pub struct Map {
    blocks: BTreeMap<u64, Entry>,
}

impl Map {
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    pub fn get(&self, block: u64) -> Option<&Entry> {
        self.blocks.get(&block)
    }

    /// Whether any of `blocks` blocks from `start` is off-loaded.
    pub fn any_in(&self, start: u64, blocks: u64) -> bool {
        self.blocks.range(start..start + blocks).next().is_some()
    }

    /// Notes that `block` was written at `version` to `locs`. A version older than the one
    /// known (a write that lost a race, or a replay out of order) only adds stale stores.
    pub fn record(&mut self, block: u64, version: u64, locs: &[Loc]) {
        let mask = locs.iter().fold(0u64, |m, l| m | (1 << l.store));
        match self.blocks.get_mut(&block) {
            Some(e) if e.version > version => {
                let latest = e.locs.iter().fold(0u64, |m, l| m | (1 << l.store));
                e.stale |= mask & !latest;
            }
            Some(e) if e.version == version => {
                for l in locs {
                    if !e.locs.contains(l) {
                        e.locs.push(*l);
                    }
                }
                e.stale &= !e.locs.iter().fold(0u64, |m, l| m | (1 << l.store));
            }
            Some(e) => {
                let old = e.locs.iter().fold(e.stale, |m, l| m | (1 << l.store));
                *e = Entry {
                    version,
                    locs: locs.to_vec(),
                    stale: old & !mask,
                    home: false,
                };
            }
            None => {
                self.blocks.insert(
                    block,
                    Entry {
                        version,
                        locs: locs.to_vec(),
                        stale: 0,
                        home: false,
                    },
                );
            }
        }
    }

    /// Notes that `store` may hold a version of `block` up to `version` that the map does not
    /// place (an off-load that failed there part-way): it must be deleted there before the
    /// block may leave the map. A block not in the map enters it as home at `version`.
    pub fn note_stale(&mut self, block: u64, version: u64, store: usize) {
        let e = self.blocks.entry(block).or_insert(Entry {
            version,
            locs: Vec::new(),
            stale: 0,
            home: true,
        });
        if !e.locs.iter().any(|l| l.store == store) {
            e.stale |= 1 << store;
        }
    }

    /// Notes that `block`'s data up to `version` is home (reads go there from now on).
    pub fn mark_home(&mut self, block: u64, version: u64) {
        if let Some(e) = self.blocks.get_mut(&block).filter(|e| e.version <= version) {
            e.home = true;
        }
    }

    /// Forgets `block` when its latest version is still at most `version` (reclaim finished
    /// it); false when a newer write came meanwhile.
    pub fn remove_if(&mut self, block: u64, version: u64) -> bool {
        if self.blocks.get(&block).is_some_and(|e| e.version <= version) {
            self.blocks.remove(&block);
            return true;
        }
        false
    }

    /// The next extent at or after block `from` (wrapping to the start), for reclaim: blocks
    /// not home whose stores are all outside `skip` (stores that cannot be read or deleted on).
    pub fn extent_from(&self, from: u64, block_bytes: u64, max_blocks: u32, skip: u64) -> Option<Extent> {
        let usable = |e: &Entry| !e.home && !e.locs.is_empty() && e.stores() & skip == 0;
        let (&start, first) = self
            .blocks
            .range(from..)
            .chain(self.blocks.range(..from))
            .find(|(_, e)| usable(e))?;
        let loc = first.locs[0];
        let mut blocks = 1u32;
        for (&b, e) in self.blocks.range(start + 1..) {
            let next = e.locs.first().copied();
            let contiguous = b == start + u64::from(blocks)
                && usable(e)
                && e.version == first.version
                && next
                    == Some(Loc {
                        store: loc.store,
                        at: loc.at + u64::from(blocks) * block_bytes,
                    });
            if !contiguous || blocks == max_blocks {
                break;
            }
            blocks += 1;
        }
        Some(Extent {
            start,
            blocks,
            version: first.version,
            from: loc,
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = (&u64, &Entry)> {
        self.blocks.iter()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use proptest::prelude::*;

    use super::*;

    /// A block's latest version, its places and its stale stores.
    type Latest = (u64, BTreeSet<(usize, u64)>, u64);

    /// The reference: per block, every (version, store) ever written and not reclaimed.
    #[derive(Default)]
    struct Model {
        copies: HashMap<u64, BTreeSet<(u64, usize, u64)>>,
    }

    impl Model {
        fn latest(&self, b: u64) -> Option<Latest> {
            let c = self.copies.get(&b)?;
            let v = c.iter().map(|x| x.0).max()?;
            let locs = c.iter().filter(|x| x.0 == v).map(|x| (x.1, x.2)).collect();
            let stale = c.iter().filter(|x| x.0 < v).fold(0u64, |m, x| m | (1 << x.1));
            let latest_mask = c.iter().filter(|x| x.0 == v).fold(0u64, |m, x| m | (1 << x.1));
            Some((v, locs, stale & !latest_mask))
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Write {
            block: u64,
            version: u64,
            stores: Vec<usize>,
        },
        Reclaim {
            block: u64,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..16, 1u64..30, proptest::collection::vec(0usize..4, 1..3)).prop_map(
                |(block, version, stores)| Op::Write {
                    block,
                    version,
                    stores
                }
            ),
            (0u64..16).prop_map(|block| Op::Reclaim { block }),
        ]
    }

    proptest! {
        #[test]
        fn the_map_agrees_with_the_reference(ops in proptest::collection::vec(op(), 1..80)) {
            let mut map = Map::default();
            let mut model = Model::default();
            for op in ops {
                match op {
                    Op::Write { block, version, mut stores } => {
                        stores.sort_unstable();
                        stores.dedup();
                        let locs: Vec<Loc> = stores.iter().map(|&s| Loc { store: s, at: version * 100 + s as u64 }).collect();
                        map.record(block, version, &locs);
                        let c = model.copies.entry(block).or_default();
                        for l in &locs {
                            c.insert((version, l.store, l.at));
                        }
                    }
                    Op::Reclaim { block } => {
                        // Reclaim the latest version; the reference drops every copy.
                        let Some(v) = map.get(block).map(|e| e.version) else { continue };
                        prop_assert!(map.remove_if(block, v));
                        prop_assert!(!map.remove_if(block, v));
                        model.copies.remove(&block);
                    }
                }
            }
            for b in 0..16 {
                let want = model.latest(b);
                let got = map.get(b).map(|e| {
                    (e.version, e.locs.iter().map(|l| (l.store, l.at)).collect::<BTreeSet<_>>(), e.stale)
                });
                prop_assert_eq!(got, want, "block {}", b);
                prop_assert_eq!(map.any_in(b, 1), model.copies.contains_key(&b));
            }
        }
    }

    #[test]
    fn extents_join_contiguous_blocks_of_one_record() {
        let mut m = Map::default();
        for b in 0..4 {
            m.record(
                10 + b,
                5,
                &[Loc {
                    store: 1,
                    at: 1000 + b * 4096,
                }],
            );
        }
        m.record(
            14,
            6,
            &[Loc {
                store: 1,
                at: 1000 + 4 * 4096,
            }],
        ); // newer version: its own extent
        m.record(20, 5, &[Loc { store: 0, at: 64 }]);
        let e = m.extent_from(0, 4096, 64, 0).unwrap();
        assert_eq!(
            e,
            Extent {
                start: 10,
                blocks: 4,
                version: 5,
                from: Loc { store: 1, at: 1000 }
            }
        );
        assert_eq!(m.extent_from(11, 4096, 2, 0).unwrap().blocks, 2);
        assert_eq!(m.extent_from(14, 4096, 64, 0).unwrap().version, 6);
        assert_eq!(m.extent_from(21, 4096, 64, 0).unwrap().start, 10); // wraps to the start
        assert!(m.any_in(8, 3) && !m.any_in(15, 5));
    }
}
