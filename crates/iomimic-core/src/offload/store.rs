//! An Everest store: a circular log of records in a file or partition, serving any number of
//! clients. No cleaner: records die when the client that wrote them deletes them after reclaim
//! (or writes a newer version of the same blocks here), and the tail moves past dead records.
//!
//! ## Layout
//! Two header slots of 4 KiB at offsets 0 and 4096, written alternately with a generation
//! number and a checksum, so a torn header write leaves the other slot good: `magic u32 |
//! layout u32 | generation u64 | tail u64 | tail_lsn u64 | head u64 | area u64 | crc u32`.
//! The log area follows. Positions are logical (they only grow); a position's place is
//! `8192 + position % area`. The head is not kept in the header: recovery scans from the
//! tail while records carry good checksums and consecutive sequence numbers.
//!
//! ## Invariants
//! - A record is in memory only once it is durable (written and synced), so the tail never
//!   moves past a record on the strength of a newer one that a crash could still lose.
//! - The tail moves past a data record only when none of its blocks is live here, and past a
//!   delete once it reaches it (everything it released lies before it). The header that says
//!   so is durable before the space is reused.
//! - Off-loads keep `reserve` bytes free, so deletes (which free space) always fit.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::load::RateMeter;
use super::medium::Medium;
use super::record::{self, Header, Kind, ALIGN, HEADER};
use crate::error::{Error, Result};

const SLOT: u64 = 4096;
const LOG_START: u64 = 2 * SLOT;
const STORE_MAGIC: u32 = 0x3153_5645; // "EVS1"
const LAYOUT: u32 = 1;
/// Bytes kept for delete records: a store that is otherwise full can still release data.
const RESERVE: u64 = 64 * ALIGN;

/// Where one live block of a client lies in this store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveBlock {
    pub version: u64,
    /// Byte offset of the block's data in the medium.
    pub at: u64,
    record: u64,
}

#[derive(Debug, Clone, Copy)]
struct Rec {
    pos: u64,
    /// Blocks of this record still live here (0 for deletes and wraps).
    live: u32,
}

/// How full a store is.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Usage {
    pub area_bytes: u64,
    /// Between tail and head: live records and dead ones not yet passed.
    pub used_bytes: u64,
    pub live_blocks: u64,
    pub records: u64,
    pub head: u64,
    pub tail: u64,
}

struct Log {
    area: u64,
    head: u64,
    tail: u64,
    next_lsn: u64,
    tail_lsn: u64,
    generation: u64,
    records: VecDeque<Rec>,
    /// Index of `records[0]` since the store was opened.
    first: u64,
    live: FxHashMap<(u32, u64), LiveBlock>,
}

pub struct Store {
    medium: Box<dyn Medium>,
    block: u64,
    log: std::sync::Mutex<Log>,
    /// Off-loads and reads served lately: the load replies carry back to clients.
    pub meter: RateMeter,
}

fn corrupt(m: &dyn Medium, what: &str) -> Error {
    Error::Corrupt {
        path: m.name().into(),
        message: what.into(),
    }
}

impl Store {
    /// Makes `medium` an empty store for blocks of `block` bytes.
    pub fn format(medium: Box<dyn Medium>, block: u64) -> Result<Store> {
        let area = (medium.len().saturating_sub(LOG_START) / ALIGN) * ALIGN;
        if area < RESERVE + 2 * (block + ALIGN) {
            return Err(Error::Usage(format!(
                "store {}: {} bytes are too few for a log of {block}-byte blocks",
                medium.name(),
                medium.len()
            )));
        }
        let log = Log {
            area,
            head: 0,
            tail: 0,
            next_lsn: 1,
            tail_lsn: 1,
            generation: 0,
            records: VecDeque::new(),
            first: 0,
            live: FxHashMap::default(),
        };
        let store = Store::with(medium, block, log);
        {
            let mut log = store.log.lock().expect("store lock");
            // Both slots, so no slot of an earlier store on this medium survives.
            store.write_header(&mut log)?;
            store.write_header(&mut log)?;
        }
        Ok(store)
    }

    fn with(medium: Box<dyn Medium>, block: u64, log: Log) -> Store {
        Store {
            medium,
            block,
            log: std::sync::Mutex::new(log),
            meter: RateMeter::new(),
        }
    }

    /// Opens a store after a restart or crash: the newest good header, then the log scanned
    /// from its tail until the first record that is torn, corrupt or from an earlier lap.
    pub fn open(medium: Box<dyn Medium>, block: u64) -> Result<Store> {
        let mut best: Option<(u64, u64, u64, u64)> = None;
        for slot in 0..2 {
            let mut b = [0u8; 64];
            medium.read_at(&mut b, slot * SLOT)?;
            let u32_at = |a: usize| u32::from_le_bytes(b[a..a + 4].try_into().expect("4"));
            let u64_at = |a: usize| u64::from_le_bytes(b[a..a + 8].try_into().expect("8"));
            if u32_at(0) != STORE_MAGIC || crc32fast::hash(&b[..48]) != u32_at(48) {
                continue;
            }
            if u32_at(4) != LAYOUT {
                return Err(corrupt(
                    &*medium,
                    &format!("store layout {} is unknown", u32_at(4)),
                ));
            }
            let (generation, tail, tail_lsn, area) = (u64_at(8), u64_at(16), u64_at(24), u64_at(40));
            if best.is_none_or(|b| generation > b.0) {
                best = Some((generation, tail, tail_lsn, area));
            }
        }
        let Some((generation, tail, tail_lsn, area)) = best else {
            return Err(corrupt(&*medium, "not an iomimic offload store (no good header)"));
        };
        if area == 0 || area % ALIGN != 0 || LOG_START + area > medium.len() {
            return Err(corrupt(&*medium, "store header names an area that does not fit"));
        }
        let log = Log {
            area,
            head: tail,
            tail,
            next_lsn: tail_lsn,
            tail_lsn,
            generation,
            records: VecDeque::new(),
            first: 0,
            live: FxHashMap::default(),
        };
        let store = Store::with(medium, block, log);
        store.scan()?;
        Ok(store)
    }

    fn place(log: &Log, pos: u64) -> u64 {
        LOG_START + pos % log.area
    }

    /// Replays the log from the tail into memory.
    fn scan(&self) -> Result<()> {
        let mut log = self.log.lock().expect("store lock");
        let mut head = [0u8; HEADER];
        while log.head - log.tail < log.area {
            let at = Self::place(&log, log.head);
            self.medium.read_at(&mut head, at)?;
            let Some(h) = record::parse_header(&head) else {
                break;
            };
            let size = record::size(h.data_len as usize);
            if h.lsn != log.next_lsn || at + size > LOG_START + log.area {
                break;
            }
            let mut bytes = vec![0u8; size as usize];
            self.medium.read_at(&mut bytes, at)?;
            if !record::verify(&bytes, &h) || !self.sane(&h) {
                break;
            }
            Self::apply(&mut log, &h, at + HEADER as u64, size, self.block);
        }
        Self::pass_dead(&mut log);
        Ok(())
    }

    fn sane(&self, h: &Header) -> bool {
        match h.kind {
            Kind::Data => u64::from(h.data_len) == u64::from(h.blocks) * self.block && h.blocks > 0,
            Kind::Delete | Kind::Wrap => h.data_len == 0,
        }
    }

    /// Takes a durable record into memory: its blocks, what it supersedes or releases.
    fn apply(log: &mut Log, h: &Header, data_at: u64, size: u64, block: u64) {
        let index = log.first + log.records.len() as u64;
        let mut rec = Rec {
            pos: log.head,
            live: 0,
        };
        for i in 0..u64::from(h.blocks) {
            let key = (h.client, h.start_block + i);
            let old = log.live.get(&key).copied();
            match h.kind {
                Kind::Data => {
                    if old.is_some_and(|o| o.version >= h.version) {
                        continue; // an older version appended late: dead on arrival
                    }
                    if let Some(o) = old {
                        Self::release(log, o.record);
                    }
                    let at = data_at + i * block;
                    log.live.insert(
                        key,
                        LiveBlock {
                            version: h.version,
                            at,
                            record: index,
                        },
                    );
                    rec.live += 1;
                }
                Kind::Delete => {
                    if let Some(o) = old.filter(|o| o.version <= h.version) {
                        log.live.remove(&key);
                        Self::release(log, o.record);
                    }
                }
                Kind::Wrap => {}
            }
        }
        log.records.push_back(rec);
        log.next_lsn = h.lsn + 1;
        log.head = if h.kind == Kind::Wrap {
            log.head + (log.area - log.head % log.area)
        } else {
            log.head + size
        };
    }

    fn release(log: &mut Log, record: u64) {
        if let Some(r) = log.records.get_mut((record - log.first) as usize) {
            r.live -= 1;
        }
    }

    /// Moves the tail (in memory) past dead records; true when it moved.
    fn pass_dead(log: &mut Log) -> bool {
        let mut moved = false;
        while let Some(r) = log.records.front().copied() {
            if r.live > 0 {
                break;
            }
            log.records.pop_front();
            log.first += 1;
            log.tail_lsn += 1;
            log.tail = log.records.front().map_or(log.head, |n| n.pos);
            moved = true;
        }
        moved
    }

    fn write_header(&self, log: &mut Log) -> Result<()> {
        log.generation += 1;
        let mut b = vec![0u8; SLOT as usize];
        b[0..4].copy_from_slice(&STORE_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&LAYOUT.to_le_bytes());
        b[8..16].copy_from_slice(&log.generation.to_le_bytes());
        b[16..24].copy_from_slice(&log.tail.to_le_bytes());
        b[24..32].copy_from_slice(&log.tail_lsn.to_le_bytes());
        b[32..40].copy_from_slice(&log.head.to_le_bytes());
        b[40..48].copy_from_slice(&log.area.to_le_bytes());
        let crc = crc32fast::hash(&b[..48]);
        b[48..52].copy_from_slice(&crc.to_le_bytes());
        self.medium.write_at(&b, (log.generation % 2) * SLOT)?;
        self.medium.sync()
    }

    /// Appends a record (a wrap first when it does not fit before the end of the area),
    /// syncs, and takes it into memory. `None` when the store has no room: a data record
    /// must leave [`RESERVE`] free.
    fn append(&self, log: &mut Log, mut h: Header, data: &[u8]) -> Result<Option<u64>> {
        let size = record::size(data.len());
        let to_end = log.area - log.head % log.area;
        let keep = if h.kind == Kind::Data { RESERVE } else { 0 };
        if !Self::fits(log, size, keep) {
            return Ok(None);
        }
        if size > to_end {
            let wrap = Header {
                kind: Kind::Wrap,
                lsn: log.next_lsn,
                version: 0,
                client: 0,
                start_block: 0,
                blocks: 0,
                data_len: 0,
            };
            self.medium
                .write_at(&record::encode(&wrap, &[]), Self::place(log, log.head))?;
            self.medium.sync()?;
            Self::apply(log, &wrap, 0, to_end, self.block);
        }
        h.lsn = log.next_lsn;
        let at = Self::place(log, log.head);
        self.medium.write_at(&record::encode(&h, data), at)?;
        self.medium.sync()?;
        Self::apply(log, &h, at + HEADER as u64, size, self.block);
        if Self::pass_dead(log) {
            self.write_header(log)?;
        }
        Ok(Some(at + HEADER as u64))
    }

    /// Off-loads `data` (whole blocks from `start_block`) for `client` at `version`; the byte
    /// offset of the data in the medium, or `None` when the store is full.
    pub fn put(&self, client: u32, start_block: u64, version: u64, data: &[u8]) -> Result<Option<u64>> {
        if data.is_empty() || !(data.len() as u64).is_multiple_of(self.block) {
            return Err(Error::Usage(format!(
                "store: {} bytes are not whole blocks",
                data.len()
            )));
        }
        self.meter.record(1);
        let h = Header {
            kind: Kind::Data,
            lsn: 0,
            version,
            client,
            start_block,
            blocks: (data.len() as u64 / self.block) as u32,
            data_len: data.len() as u32,
        };
        let mut log = self.log.lock().expect("store lock");
        self.append(&mut log, h, data)
    }

    /// Releases every version ≤ `version` of `blocks` blocks from `start_block` of `client`.
    pub fn delete(&self, client: u32, start_block: u64, blocks: u32, version: u64) -> Result<()> {
        let h = Header {
            kind: Kind::Delete,
            lsn: 0,
            version,
            client,
            start_block,
            blocks,
            data_len: 0,
        };
        let mut log = self.log.lock().expect("store lock");
        match self.append(&mut log, h, &[])? {
            Some(_) => Ok(()),
            None => Err(Error::Usage(format!(
                "store {}: no room even for a delete record",
                self.medium.name()
            ))),
        }
    }

    /// Reads off-loaded data at a byte offset [`Store::put`] or [`Store::live`] gave.
    pub fn read(&self, buf: &mut [u8], at: u64) -> Result<()> {
        self.meter.record(1);
        self.medium.read_at(buf, at)
    }

    /// Every live block of `client` here, for the client's recovery.
    pub fn live(&self, client: u32) -> Vec<(u64, LiveBlock)> {
        let log = self.log.lock().expect("store lock");
        let mut v: Vec<(u64, LiveBlock)> = log
            .live
            .iter()
            .filter(|((c, _), _)| *c == client)
            .map(|((_, b), l)| (*b, *l))
            .collect();
        v.sort_unstable_by_key(|(b, _)| *b);
        v
    }

    pub fn usage(&self) -> Usage {
        let log = self.log.lock().expect("store lock");
        Usage {
            area_bytes: log.area,
            used_bytes: log.head - log.tail,
            live_blocks: log.live.len() as u64,
            records: log.records.len() as u64,
            head: log.head,
            tail: log.tail,
        }
    }

    /// Whether an off-load of `bytes` of data fits now (as [`Store::put`] would judge it).
    pub fn has_room(&self, bytes: u64) -> bool {
        let log = self.log.lock().expect("store lock");
        Self::fits(&log, record::size(bytes as usize), RESERVE)
    }

    /// Whether a record of `size` bytes fits, counting the wrap it may need, with `keep` left.
    fn fits(log: &Log, size: u64, keep: u64) -> bool {
        let to_end = log.area - log.head % log.area;
        let need = if size <= to_end { size } else { to_end + size };
        need + keep <= log.area - (log.head - log.tail)
    }

    pub fn name(&self) -> String {
        self.medium.name()
    }
}

#[cfg(test)]
mod tests;
