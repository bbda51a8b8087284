//! The Everest client: a base volume and a set of stores behind one read/write interface.
//!
//! - Writes to a range with nothing off-loaded go to the base volume unless it is loaded; then
//!   (and always once a block is off-loaded, until it is reclaimed) they become versioned
//!   records on the stores the [`Policy`] chooses. A write returns once it is durable.
//! - Reads return each block's latest version, from a store or from the base volume, split
//!   where needed.
//! - Reclaim ([`Client::reclaim_step`], run by workers while the base is idle) copies an
//!   extent's latest version home, syncs, then deletes it on the stores: first where only
//!   older versions lie, last where the latest does, so that at every moment the newest
//!   surviving record is the newest version or the data is home. A write that arrives
//!   meanwhile has a newer version, which `delete(range, version)` does not touch.
//! - Recovery ([`Client::open`]) rebuilds the map from the stores' logs.
//!
//! Foreground I/O never waits for reclaim's I/O: reclaim holds the client's lock only to pick
//! an extent and to update the map. A read that raced with reclaim's deletes (whose space a
//! store could then reuse) sees the reclaim epoch move and reads again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde::Serialize;

use super::load::RateMeter;
use super::map::{Loc, Map, MAX_STORES};
use super::medium::Medium;
use super::policy::{Candidate, Policy};
use super::store::{Store, Usage};
use crate::error::{Error, Result};

/// The most blocks reclaim copies at once.
const RECLAIM_BLOCKS: u32 = 256;

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Options {
    pub client_id: u32,
    pub block_bytes: u64,
    pub policy: Policy,
}

#[derive(Debug, Default, Serialize, Clone, PartialEq, Eq)]
pub struct Counters {
    pub base_writes: u64,
    pub offloaded_writes: u64,
    /// Off-loads no store could take while the range was off-loaded: written home instead.
    pub written_through: u64,
    pub reads: u64,
    pub reads_from_stores: u64,
    pub reclaimed_blocks: u64,
}

#[derive(Default)]
struct Tally {
    base_writes: AtomicU64,
    offloaded_writes: AtomicU64,
    written_through: AtomicU64,
    reads: AtomicU64,
    reads_from_stores: AtomicU64,
    reclaimed_blocks: AtomicU64,
}

struct State {
    map: Map,
    next_version: u64,
    turn: u64,
    cursor: u64,
    /// Extents (start, blocks) reclaim workers are copying.
    claimed: Vec<(u64, u32)>,
}

/// What `status` shows.
#[derive(Debug, Serialize, Clone)]
pub struct Status {
    pub client_id: u32,
    pub block_bytes: u64,
    pub base_bytes: u64,
    pub offloaded_blocks: u64,
    /// Off-loaded ranges: (first block, blocks, latest version), at most 100.
    pub extents: Vec<(u64, u32, u64)>,
    pub stores: Vec<StoreStatus>,
    pub counters: Counters,
}

#[derive(Debug, Serialize, Clone)]
pub struct StoreStatus {
    pub name: String,
    pub usage: Usage,
    /// This client's live blocks there.
    pub client_blocks: u64,
}

pub struct Client {
    base: Box<dyn Medium>,
    stores: Vec<RwLock<Arc<Store>>>,
    opts: Options,
    state: Mutex<State>,
    base_meter: RateMeter,
    epoch: AtomicU64,
    tally: Tally,
}

fn bit(s: usize) -> u64 {
    1 << s
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Client {
    /// Opens a client over `base` and already formatted or recovered `stores`, rebuilding the
    /// map from the stores' logs (recovery after a crash of the client, the stores or both).
    pub fn open(base: Box<dyn Medium>, stores: Vec<Store>, opts: Options) -> Result<Client> {
        opts.policy.check()?;
        if stores.len() > MAX_STORES {
            return Err(Error::Usage(format!(
                "at most {MAX_STORES} stores, found {}",
                stores.len()
            )));
        }
        if opts.block_bytes == 0 || !opts.block_bytes.is_multiple_of(512) {
            return Err(Error::Usage(format!(
                "`block_bytes` must be a positive multiple of 512, found {}",
                opts.block_bytes
            )));
        }
        let mut map = Map::default();
        let mut newest = 0;
        for (s, store) in stores.iter().enumerate() {
            for (block, live) in store.live(opts.client_id) {
                map.record(
                    block,
                    live.version,
                    &[Loc {
                        store: s,
                        at: live.at,
                    }],
                );
                newest = newest.max(live.version);
            }
        }
        Ok(Client {
            base,
            stores: stores.into_iter().map(|s| RwLock::new(Arc::new(s))).collect(),
            state: Mutex::new(State {
                map,
                // Versions stay above any a log still holds, and above the clock so that a
                // delete record left from before a restart never outranks a new write.
                next_version: (newest + 1).max(now_ns()),
                turn: 0,
                cursor: 0,
                claimed: Vec::new(),
            }),
            opts,
            base_meter: RateMeter::new(),
            epoch: AtomicU64::new(0),
            tally: Tally::default(),
        })
    }

    fn store(&self, s: usize) -> Arc<Store> {
        self.stores[s].read().expect("store slot").clone()
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    pub fn base_bytes(&self) -> u64 {
        self.base.len()
    }

    fn blocks_of(&self, offset: u64, len: usize) -> Result<(u64, u64)> {
        let b = self.opts.block_bytes;
        if !offset.is_multiple_of(b) || !(len as u64).is_multiple_of(b) || len == 0 {
            return Err(Error::Usage(format!(
                "everest: I/O must be whole {b}-byte blocks, found {len} bytes at {offset}"
            )));
        }
        if offset + len as u64 > self.base.len() {
            return Err(Error::Usage(format!(
                "everest: {len} bytes at {offset} reach past the base volume's {} bytes",
                self.base.len()
            )));
        }
        Ok((offset / b, len as u64 / b))
    }

    /// The base volume's load now (requests per second).
    pub fn base_load(&self) -> f64 {
        self.base_meter.rate()
    }

    /// Writes `data` at `offset`; durable when this returns.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let (start, n) = self.blocks_of(offset, data.len())?;
        self.base_meter.record(1);
        let load = self.base_meter.rate();
        let (offloaded, chosen, version) = {
            let mut st = self.state.lock().expect("client lock");
            let offloaded = st.map.any_in(start, n);
            let mut chosen = Vec::new();
            if offloaded || self.opts.policy.offload_now(load) {
                let candidates: Vec<Candidate> = (0..self.stores.len())
                    .map(|s| {
                        let store = self.store(s);
                        Candidate {
                            store: s,
                            load: store.meter.rate(),
                            has_room: store.has_room(data.len() as u64),
                        }
                    })
                    .collect();
                chosen = self.opts.policy.choose(&candidates, st.turn);
                st.turn += 1;
            }
            let version = st.next_version;
            st.next_version += 1;
            (offloaded, chosen, version)
        };
        let mut locs = Vec::new();
        for &s in &chosen {
            if let Some(at) = self.store(s).put(self.opts.client_id, start, version, data)? {
                locs.push(Loc { store: s, at });
            }
        }
        if !locs.is_empty() {
            let mut st = self.state.lock().expect("client lock");
            for i in 0..n {
                let here: Vec<Loc> = locs
                    .iter()
                    .map(|l| Loc {
                        store: l.store,
                        at: l.at + i * self.opts.block_bytes,
                    })
                    .collect();
                st.map.record(start + i, version, &here);
            }
            self.tally.offloaded_writes.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        self.base.write_at(data, offset)?;
        self.base.sync()?;
        if offloaded {
            // No store could take it: the data is home now, so every older version is
            // released (older-only stores first) and the range is no longer off-loaded.
            self.tally.written_through.fetch_add(1, Ordering::Relaxed);
            self.release(start, n, version)?;
        } else {
            self.tally.base_writes.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes at `offset`: each block's latest version.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let (start, blocks) = self.blocks_of(offset, buf.len())?;
        self.base_meter.record(1);
        self.tally.reads.fetch_add(1, Ordering::Relaxed);
        let bytes = self.opts.block_bytes as usize;
        loop {
            let (epoch, places) = {
                let st = self.state.lock().expect("client lock");
                let places: Vec<Option<Loc>> = (0..blocks)
                    .map(|i| st.map.get(start + i).filter(|e| !e.home).map(|e| e.locs[0]))
                    .collect();
                (self.epoch.load(Ordering::SeqCst), places)
            };
            let mut first = 0usize;
            let mut from_stores = false;
            while first < places.len() {
                // One read per run of blocks lying one after the other in one place.
                let mut j = first + 1;
                while j < places.len() && follows(places[j - 1], places[j], bytes as u64) {
                    j += 1;
                }
                let part = &mut buf[first * bytes..j * bytes];
                match places[first] {
                    Some(l) => {
                        self.store(l.store).read(part, l.at)?;
                        from_stores = true;
                    }
                    None => self.base.read_at(part, offset + (first * bytes) as u64)?,
                }
                first = j;
            }
            if !from_stores || self.epoch.load(Ordering::SeqCst) == epoch {
                if from_stores {
                    self.tally.reads_from_stores.fetch_add(1, Ordering::Relaxed);
                }
                return Ok(());
            }
        }
    }

    /// Releases every version ≤ `version` of `n` blocks from `start` on every store holding
    /// one, then forgets the blocks whose latest version is ≤ `version`. The data must be home
    /// and durable already. For each block, stores holding only older versions are released
    /// before those holding its latest, so a crash in between never leaves an older version
    /// as the newest record; blocks are grouped by the stores they need, as a delete names a
    /// range.
    fn release(&self, start: u64, n: u64, version: u64) -> Result<()> {
        let groups = {
            let mut st = self.state.lock().expect("client lock");
            let mut groups: Vec<(u64, u64, u64, u64)> = Vec::new(); // (start, blocks, older, latest)
            for b in start..start + n {
                let (older, latest) = match st.map.get(b) {
                    None => (0, 0),
                    Some(e) if e.version <= version => {
                        let holders = e.locs.iter().fold(0, |m, l| m | bit(l.store));
                        (e.stale & !holders, holders)
                    }
                    // A newer write came: nothing of it is touched, the older copies go.
                    Some(e) => (e.stores(), 0),
                };
                match groups.last_mut() {
                    Some(g) if g.0 + g.1 == b && (g.2, g.3) == (older, latest) => g.1 += 1,
                    _ => groups.push((b, 1, older, latest)),
                }
                st.map.mark_home(b, version);
            }
            self.epoch.fetch_add(1, Ordering::SeqCst);
            groups
        };
        for (first, blocks, older, latest) in groups {
            for mask in [older, latest] {
                for s in (0..self.stores.len()).filter(|&s| mask & bit(s) != 0) {
                    self.store(s)
                        .delete(self.opts.client_id, first, blocks as u32, version)?;
                }
            }
        }
        let mut st = self.state.lock().expect("client lock");
        for b in start..start + n {
            st.map.remove_if(b, version);
        }
        Ok(())
    }

    /// Reclaims one extent when there is one and the base volume is idle: copies it home and
    /// releases it. Returns the blocks reclaimed (0 when another worker holds the next one).
    pub fn reclaim_step(&self) -> Result<Option<u64>> {
        if !self.opts.policy.reclaim_now(self.base_meter.rate()) {
            return Ok(None);
        }
        self.reclaim_one()
    }

    /// Reclaims the next extent whatever the load (what a worker does once the policy lets
    /// it): blocks reclaimed, 0 when another worker holds it, `None` when nothing is left.
    pub fn reclaim_one(&self) -> Result<Option<u64>> {
        let ext = {
            let mut st = self.state.lock().expect("client lock");
            let Some(ext) = st
                .map
                .extent_from(st.cursor, self.opts.block_bytes, RECLAIM_BLOCKS)
            else {
                return Ok(None);
            };
            st.cursor = ext.start + u64::from(ext.blocks);
            let end = ext.start + u64::from(ext.blocks);
            if st
                .claimed
                .iter()
                .any(|&(s, n)| s < end && ext.start < s + u64::from(n))
            {
                return Ok(Some(0));
            }
            st.claimed.push((ext.start, ext.blocks));
            ext
        };
        let result = self.reclaim_extent(ext);
        let mut st = self.state.lock().expect("client lock");
        st.claimed.retain(|&c| c != (ext.start, ext.blocks));
        result.map(Some)
    }

    fn reclaim_extent(&self, ext: super::map::Extent) -> Result<u64> {
        let b = self.opts.block_bytes;
        let mut data = vec![0u8; (u64::from(ext.blocks) * b) as usize];
        self.store(ext.from.store).read(&mut data, ext.from.at)?;
        self.base.write_at(&data, ext.start * b)?;
        self.base.sync()?;
        self.release(ext.start, u64::from(ext.blocks), ext.version)?;
        self.tally
            .reclaimed_blocks
            .fetch_add(u64::from(ext.blocks), Ordering::Relaxed);
        Ok(u64::from(ext.blocks))
    }

    /// Reclaims everything now, whatever the load (for `recover --reclaim` and tests).
    pub fn reclaim_all(&self) -> Result<u64> {
        let mut total = 0;
        loop {
            let ext = {
                let st = self.state.lock().expect("client lock");
                st.map.extent_from(0, self.opts.block_bytes, RECLAIM_BLOCKS)
            };
            let Some(ext) = ext else { return Ok(total) };
            total += self.reclaim_extent(ext)?;
        }
    }

    /// Starts `workers` reclaim threads that run while the base is idle, until `stop` is set.
    pub fn spawn_reclaim(
        self: &Arc<Self>,
        workers: usize,
        stop: &Arc<std::sync::atomic::AtomicBool>,
    ) -> Vec<std::thread::JoinHandle<Result<()>>> {
        (0..workers)
            .map(|_| {
                let (me, stop) = (Arc::clone(self), Arc::clone(stop));
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if me.reclaim_step()?.is_none() {
                            std::thread::sleep(std::time::Duration::from_millis(5));
                        }
                    }
                    Ok(())
                })
            })
            .collect()
    }

    pub fn counters(&self) -> Counters {
        let t = &self.tally;
        Counters {
            base_writes: t.base_writes.load(Ordering::Relaxed),
            offloaded_writes: t.offloaded_writes.load(Ordering::Relaxed),
            written_through: t.written_through.load(Ordering::Relaxed),
            reads: t.reads.load(Ordering::Relaxed),
            reads_from_stores: t.reads_from_stores.load(Ordering::Relaxed),
            reclaimed_blocks: t.reclaimed_blocks.load(Ordering::Relaxed),
        }
    }

    pub fn offloaded_blocks(&self) -> u64 {
        self.state.lock().expect("client lock").map.len() as u64
    }

    pub fn status(&self, names: &[String]) -> Status {
        let st = self.state.lock().expect("client lock");
        let mut extents: Vec<(u64, u32, u64)> = Vec::new();
        for (&b, e) in st.map.iter() {
            if let Some(x) = extents
                .last_mut()
                .filter(|x| x.0 + u64::from(x.1) == b && x.2 == e.version)
            {
                x.1 += 1;
            } else if extents.len() == 100 {
                break;
            } else {
                extents.push((b, 1, e.version));
            }
        }
        let stores = (0..self.stores.len())
            .map(|s| {
                let store = self.store(s);
                StoreStatus {
                    name: names.get(s).cloned().unwrap_or_else(|| store.name()),
                    usage: store.usage(),
                    client_blocks: store.live(self.opts.client_id).len() as u64,
                }
            })
            .collect();
        Status {
            client_id: self.opts.client_id,
            block_bytes: self.opts.block_bytes,
            base_bytes: self.base.len(),
            offloaded_blocks: st.map.len() as u64,
            extents,
            stores,
            counters: self.counters(),
        }
    }
}

/// Whether block place `b` lies right after `a` (both home, or both in one store, adjacent).
fn follows(a: Option<Loc>, b: Option<Loc>, block: u64) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.store == b.store && a.at + block == b.at,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
