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
//! - A store that fails (an I/O error) is *down*: it is no longer chosen, reads use another
//!   replica, reclaim leaves what it holds alone, and a write it failed goes to other stores or
//!   home. Until [`Client::readmit`] takes it back, any block it may hold stays in the map, so
//!   that a later write to the block is off-loaded with a newer version instead of going home
//!   silently over a copy the store could bring back.
//!
//! Foreground I/O never waits for reclaim's I/O: reclaim holds the client's lock only to pick
//! an extent and to update the map. A read that raced with reclaim's deletes (whose space a
//! store could then reuse) sees the reclaim epoch move and reads again.
//!
//! Past 600 lines on purpose: writes, reads, reclaim, recovery and the down-store rules all
//! move the one map under the one lock, and each keeps an invariant the others rely on; split
//! into files, each part would borrow the whole client (the tests live in `tests.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde::Serialize;

use super::load::RateMeter;
use super::map::{Entry, Loc, Map, MAX_STORES};
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
    /// I/O errors from stores (each makes the store down).
    pub store_failures: u64,
}

#[derive(Default)]
struct Tally {
    base_writes: AtomicU64,
    offloaded_writes: AtomicU64,
    written_through: AtomicU64,
    reads: AtomicU64,
    reads_from_stores: AtomicU64,
    reclaimed_blocks: AtomicU64,
    store_failures: AtomicU64,
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
    /// What the client was told at open (lost stores, accepted losses).
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize, Clone)]
pub struct StoreStatus {
    pub name: String,
    /// `up`; `down` after an I/O error (until re-admitted); `lost` when it could not be opened.
    pub state: &'static str,
    /// `None` for a lost store.
    pub usage: Option<Usage>,
    /// This client's live blocks there.
    pub client_blocks: u64,
}

pub struct Client {
    base: Box<dyn Medium>,
    /// `None`: lost (not opened); slots keep store numbers stable, as records name them.
    stores: Vec<RwLock<Option<Arc<Store>>>>,
    /// Stores not to use, a bit each: lost, or down since an I/O error.
    down: AtomicU64,
    notes: Mutex<Vec<String>>,
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
        Client::open_partial(base, stores.into_iter().map(Some).collect(), opts)
    }

    /// [`Client::open`] with some stores lost (`None`): the map is rebuilt from the others,
    /// and a lost store is never chosen. Whether that loses data is the caller's judgement
    /// (the volume layer's, from the replicas each off-load had).
    pub fn open_partial(base: Box<dyn Medium>, stores: Vec<Option<Store>>, opts: Options) -> Result<Client> {
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
        let mut down = 0;
        for (s, store) in stores.iter().enumerate() {
            let Some(store) = store else {
                down |= bit(s);
                continue;
            };
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
            stores: stores.into_iter().map(|s| RwLock::new(s.map(Arc::new))).collect(),
            down: AtomicU64::new(down),
            notes: Mutex::new(Vec::new()),
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

    /// Store `s` when it is up.
    fn store(&self, s: usize) -> Option<Arc<Store>> {
        if self.down.load(Ordering::SeqCst) & bit(s) != 0 {
            return None;
        }
        self.stores[s].read().expect("store slot").clone()
    }

    fn store_name(&self, s: usize) -> String {
        match &*self.stores[s].read().expect("store slot") {
            Some(store) => store.name(),
            None => format!("store #{s}"),
        }
    }

    /// Store `s` failed an I/O: it is down until re-admitted.
    fn fail(&self, s: usize) {
        if self.down.fetch_or(bit(s), Ordering::SeqCst) & bit(s) == 0 {
            self.tally.store_failures.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Stores down or lost, a bit each.
    pub fn down_stores(&self) -> u64 {
        self.down.load(Ordering::SeqCst)
    }

    /// Adds a line to what `status` shows.
    pub fn note(&self, text: String) {
        self.notes.lock().expect("notes").push(text);
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

    /// Writes `data` at `offset`; durable when this returns. An off-load is acknowledged only
    /// with `replicas` copies; one with fewer (stores full or failing) also goes home, and its
    /// copies are then released like any older version.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let (start, n) = self.blocks_of(offset, data.len())?;
        self.base_meter.record(1);
        let load = self.base_meter.rate();
        let (offloaded, version) = {
            let mut st = self.state.lock().expect("client lock");
            let version = st.next_version;
            st.next_version += 1;
            (st.map.any_in(start, n), version)
        };
        let mut failed = 0u64;
        let locs = if offloaded || self.opts.policy.offload_now(load) {
            self.place(start, version, data, &mut failed)
        } else {
            Vec::new()
        };
        if !locs.is_empty() || failed != 0 {
            let mut st = self.state.lock().expect("client lock");
            for i in 0..n {
                let here: Vec<Loc> = locs
                    .iter()
                    .map(|l| Loc {
                        store: l.store,
                        at: l.at + i * self.opts.block_bytes,
                    })
                    .collect();
                if !here.is_empty() {
                    st.map.record(start + i, version, &here);
                }
                // A store that failed may hold part of the record: it must be deleted there
                // before the blocks may go home for good.
                for s in (0..self.stores.len()).filter(|&s| failed & bit(s) != 0) {
                    st.map.note_stale(start + i, version, s);
                }
            }
        }
        if locs.len() >= self.opts.policy.replicas {
            self.tally.offloaded_writes.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        self.base.write_at(data, offset)?;
        self.base.sync()?;
        if offloaded || !locs.is_empty() || failed != 0 {
            // Not enough copies: the data is home now, so every version up to this one is
            // released (older-only stores first) and the range is no longer off-loaded.
            self.tally.written_through.fetch_add(1, Ordering::Relaxed);
            if let Some(s) = self.release(start, n, version) {
                // Nothing newer is on a store, and an older version could not be deleted: a
                // restart could bring it back, so the write is not acknowledged. (A copy of
                // this version on an up store would have made it safe.)
                if locs.is_empty() {
                    return Err(Error::Io {
                        path: self.store_name(s).into(),
                        source: std::io::Error::other(format!(
                            "the write at {offset} went home, but this store, unavailable, \
                             holds an older version of it that could not be deleted"
                        )),
                    });
                }
            }
        } else {
            self.tally.base_writes.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Off-loads `data` at `version` to the stores the policy chooses among those up; a store
    /// that is full or fails is replaced by the next choice, so a failing store costs a retry,
    /// not the write. Stores whose `put` failed are added to `failed`.
    fn place(&self, start: u64, version: u64, data: &[u8], failed: &mut u64) -> Vec<Loc> {
        let replicas = self.opts.policy.replicas;
        let mut locs = Vec::new();
        let mut tried = 0u64;
        while locs.len() < replicas {
            let candidates: Vec<Candidate> = (0..self.stores.len())
                .filter(|&s| tried & bit(s) == 0)
                .filter_map(|s| {
                    let store = self.store(s)?;
                    Some(Candidate {
                        store: s,
                        load: store.meter.rate(),
                        has_room: store.has_room(data.len() as u64),
                    })
                })
                .collect();
            let turn = {
                let mut st = self.state.lock().expect("client lock");
                st.turn += 1;
                st.turn - 1
            };
            let policy = Policy {
                replicas: replicas - locs.len(),
                ..self.opts.policy.clone()
            };
            let chosen = policy.choose(&candidates, turn);
            if chosen.is_empty() {
                break;
            }
            for s in chosen {
                tried |= bit(s);
                let Some(store) = self.store(s) else { continue };
                match store.put(self.opts.client_id, start, version, data) {
                    Ok(Some(at)) => locs.push(Loc { store: s, at }),
                    Ok(None) => {}
                    Err(_) => {
                        self.fail(s);
                        *failed |= bit(s);
                    }
                }
            }
        }
        locs
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
                let down = self.down.load(Ordering::SeqCst);
                let mut places: Vec<Option<Loc>> = Vec::with_capacity(blocks as usize);
                for b in start..start + blocks {
                    places.push(match st.map.get(b).filter(|e| !e.home) {
                        None => None,
                        Some(e) => Some(self.up_copy(b, e, down)?),
                    });
                }
                (self.epoch.load(Ordering::SeqCst), places)
            };
            let mut first = 0usize;
            let mut from_stores = false;
            let mut failed = false;
            while first < places.len() {
                // One read per run of blocks lying one after the other in one place.
                let mut j = first + 1;
                while j < places.len() && follows(places[j - 1], places[j], bytes as u64) {
                    j += 1;
                }
                let part = &mut buf[first * bytes..j * bytes];
                match places[first] {
                    Some(l) => {
                        // A store that fails is down from now on: read again from a replica.
                        let ok = self.store(l.store).is_some_and(|s| s.read(part, l.at).is_ok());
                        if !ok {
                            self.fail(l.store);
                            failed = true;
                            break;
                        }
                        from_stores = true;
                    }
                    None => self.base.read_at(part, offset + (first * bytes) as u64)?,
                }
                first = j;
            }
            if failed {
                continue;
            }
            if !from_stores || self.epoch.load(Ordering::SeqCst) == epoch {
                if from_stores {
                    self.tally.reads_from_stores.fetch_add(1, Ordering::Relaxed);
                }
                return Ok(());
            }
        }
    }

    /// A copy of block `b`'s latest version on a store that is up.
    fn up_copy(&self, b: u64, e: &Entry, down: u64) -> Result<Loc> {
        match e.locs.iter().find(|l| down & bit(l.store) == 0) {
            Some(l) => Ok(*l),
            None => Err(Error::Io {
                path: self.store_name(e.locs.first().map_or(0, |l| l.store)).into(),
                source: std::io::Error::other(format!(
                    "block {b}: its latest version lies only on stores that are unavailable"
                )),
            }),
        }
    }

    /// Releases every version ≤ `version` of `n` blocks from `start` on every store holding
    /// one, then forgets the blocks whose latest version is ≤ `version`. The data must be home
    /// and durable already. For each block, stores holding only older versions are released
    /// before those holding its latest, so a crash in between never leaves an older version
    /// as the newest record; blocks are grouped by the stores they need, as a delete names a
    /// range. Where a store is down the group stops there (its latest copies stay, if the
    /// older ones could not go) and its blocks stay in the map, home, until it is re-admitted.
    ///
    /// Returns a store that still holds a version older than `version` that is the newest
    /// record of its block (a delete there failed): after a restart that version would come
    /// back over the data home.
    fn release(&self, start: u64, n: u64, version: u64) -> Option<usize> {
        let groups = {
            let mut st = self.state.lock().expect("client lock");
            // (start, blocks, older, latest, risky): `risky` are the stores whose failure
            // would leave an older version as a block's newest record.
            let mut groups: Vec<(u64, u64, u64, u64, u64)> = Vec::new();
            for b in start..start + n {
                let (older, latest, risky) = match st.map.get(b) {
                    None => (0, 0, 0),
                    Some(e) if e.version <= version => {
                        let holders = e.locs.iter().fold(0, |m, l| m | bit(l.store));
                        let older = e.stale & !holders;
                        let risky = if e.version < version {
                            older | holders
                        } else {
                            older
                        };
                        (older, holders, risky)
                    }
                    // A newer write came: nothing of it is touched, the older copies go.
                    Some(e) => (e.stores(), 0, 0),
                };
                match groups.last_mut() {
                    Some(g) if g.0 + g.1 == b && (g.2, g.3, g.4) == (older, latest, risky) => {
                        g.1 += 1;
                    }
                    _ => groups.push((b, 1, older, latest, risky)),
                }
                st.map.mark_home(b, version);
            }
            self.epoch.fetch_add(1, Ordering::SeqCst);
            groups
        };
        let mut done = Vec::new();
        let mut left = None;
        for (first, blocks, older, latest, risky) in groups {
            let mut all = true;
            for mask in [older, latest] {
                for s in (0..self.stores.len()).filter(|&s| mask & bit(s) != 0) {
                    let ok = self.store(s).is_some_and(|store| {
                        store
                            .delete(self.opts.client_id, first, blocks as u32, version)
                            .is_ok()
                    });
                    if !ok {
                        self.fail(s);
                        all = false;
                        if risky & bit(s) != 0 {
                            left = Some(s);
                        }
                    }
                }
                if !all {
                    break;
                }
            }
            if all {
                done.push((first, blocks));
            }
        }
        let mut st = self.state.lock().expect("client lock");
        for (first, blocks) in done {
            for b in first..first + blocks {
                st.map.remove_if(b, version);
            }
        }
        left
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
            let Some(ext) = st.map.extent_from(
                st.cursor,
                self.opts.block_bytes,
                RECLAIM_BLOCKS,
                self.down.load(Ordering::SeqCst),
            ) else {
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
        let s = ext.from.store;
        if self
            .store(s)
            .is_none_or(|st| st.read(&mut data, ext.from.at).is_err())
        {
            // The store is down: its extents wait until it is re-admitted.
            self.fail(s);
            return Ok(0);
        }
        self.base.write_at(&data, ext.start * b)?;
        self.base.sync()?;
        // Whatever deletes fail leave only this version, which is home now.
        self.release(ext.start, u64::from(ext.blocks), ext.version);
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
                st.map.extent_from(
                    0,
                    self.opts.block_bytes,
                    RECLAIM_BLOCKS,
                    self.down.load(Ordering::SeqCst),
                )
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
            store_failures: t.store_failures.load(Ordering::Relaxed),
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
        let down = self.down.load(Ordering::SeqCst);
        let stores = (0..self.stores.len())
            .map(|s| {
                let store = self.stores[s].read().expect("store slot").clone();
                StoreStatus {
                    name: names.get(s).cloned().unwrap_or_else(|| self.store_name(s)),
                    state: match (&store, down & bit(s) != 0) {
                        (None, _) => "lost",
                        (Some(_), true) => "down",
                        (Some(_), false) => "up",
                    },
                    usage: store.as_ref().map(|x| x.usage()),
                    client_blocks: store.map_or(0, |x| x.live(self.opts.client_id).len() as u64),
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
            notes: self.notes.lock().expect("notes").clone(),
        }
    }

    /// Takes store `s` back after it was down: `store` is it opened afresh from its medium
    /// (its log replayed). Its records join the map (older versions as stale ones), it may be
    /// chosen again, and blocks left in the map for its sake are released at last.
    pub fn readmit(&self, s: usize, store: Store) -> Result<()> {
        let store = Arc::new(store);
        let waiting: Vec<(u64, u64)> = {
            let mut st = self.state.lock().expect("client lock");
            for (block, live) in store.live(self.opts.client_id) {
                st.map.record(
                    block,
                    live.version,
                    &[Loc {
                        store: s,
                        at: live.at,
                    }],
                );
            }
            *self.stores[s].write().expect("store slot") = Some(store);
            self.down.fetch_and(!bit(s), Ordering::SeqCst);
            st.map
                .iter()
                .filter(|(_, e)| e.home)
                .map(|(&b, e)| (b, e.version))
                .collect()
        };
        for (b, version) in waiting {
            self.release(b, 1, version);
        }
        Ok(())
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
