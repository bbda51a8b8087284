//! The simulated Everest client: the trace's requests, in time order, routed by the real
//! layer's policy ([`crate::offload::policy`]), load meters ([`crate::offload::load`]) and
//! map ([`crate::offload::map`]) to base volumes and stores, plus the reclaim I/O that runs
//! while a base is idle. What comes out is, per physical volume, the I/Os it receives.
//!
//! A volume's load is the rate of its own requests (the meter counts nothing else): a store
//! is lightly loaded when the volume it lives on is, whatever the off-loads it takes (log
//! appends, which cost a disk little), so a store is not judged busy by its own success.

use crate::offload::load::RateMeter;
use crate::offload::map::{Entry, Loc, Map};
use crate::offload::policy::{Candidate, Policy};
use crate::trace::{Op, TraceView};

pub const BLOCK: u64 = 4096;
/// Reclaim looks at idle volumes this often, each worker copying one extent per look.
pub const TICK_NS: u64 = 10_000_000;
/// An extent reclaim copies at once (64 KiB).
const RECLAIM_BLOCKS: u32 = 16;
/// Reclaim gives up this long after the trace's end (a store that never drains is reported).
const RECLAIM_LIMIT_NS: u64 = 3_600_000_000_000;
/// The owner of reclaim I/O (not a trace request).
pub const RECLAIM: u32 = u32::MAX;

/// One I/O a physical volume receives.
#[derive(Debug, Clone, Copy)]
pub struct Io {
    pub ts_ns: u64,
    pub offset: u64,
    pub size: u32,
    pub op: u8,
    /// The trace request it serves, or [`RECLAIM`].
    pub owner: u32,
}

/// A store: which volume it lives on, where, how big.
#[derive(Debug, Clone)]
pub struct StoreSpec {
    pub host: usize,
    pub start: u64,
    pub blocks: u64,
}

#[derive(Debug, Clone, Default)]
pub struct StoreTally {
    pub used_blocks: u64,
    pub max_used_blocks: u64,
    pub offloads: u64,
    pub reclaimed_blocks: u64,
    head: u64,
}

#[derive(Debug, Clone, Default)]
pub struct VolumeTally {
    pub offloaded_writes: u64,
    /// When this volume last off-loaded a write, and when its last off-loaded block went home.
    pub last_offload_ns: Option<u64>,
    pub drained_ns: Option<u64>,
}

pub struct Routed {
    /// Per physical volume (the trace's volumes, in order).
    pub ios: Vec<Vec<Io>>,
    pub stores: Vec<StoreTally>,
    pub volumes: Vec<VolumeTally>,
    /// Blocks still off-loaded when reclaim gave up.
    pub left_blocks: u64,
}

struct Router<'p> {
    policies: &'p [Policy],
    specs: &'p [StoreSpec],
    workers: usize,
    meters: Vec<RateMeter>,
    maps: Vec<Map>,
    version: u64,
    turns: Vec<u64>,
    cursors: Vec<u64>,
    out: Routed,
}

/// Routes `t` (volumes `0..policies.len()`, each a client with its policy) with `workers`
/// reclaim workers per client.
pub fn route(t: &TraceView<'_>, policies: &[Policy], specs: &[StoreSpec], workers: usize) -> Routed {
    let n = policies.len();
    let mut r = Router {
        policies,
        specs,
        workers,
        meters: (0..n).map(|_| RateMeter::new()).collect(),
        maps: vec![Map::default(); n],
        version: 0,
        turns: vec![0; n],
        cursors: vec![0; n],
        out: Routed {
            ios: vec![Vec::new(); n],
            stores: vec![StoreTally::default(); specs.len()],
            volumes: vec![VolumeTally::default(); n],
            left_blocks: 0,
        },
    };
    let mut tick = TICK_NS;
    for i in 0..t.len() {
        let ts = t.ts_ns[i];
        while tick <= ts {
            r.reclaim(tick);
            tick += TICK_NS;
        }
        let v = t.volume[i] as usize;
        r.meters[v].record_at(ts, 1);
        match Op::from_code(t.op[i]) {
            Some(Op::Write) => r.write(i as u32, v, ts, t.offset[i], t.size[i]),
            Some(Op::Read) => r.read(i as u32, v, ts, t.offset[i], t.size[i]),
            _ => r.out.ios[v].push(Io {
                ts_ns: ts,
                offset: t.offset[i],
                size: t.size[i],
                op: t.op[i],
                owner: i as u32,
            }),
        }
    }
    let end = t.ts_ns.last().copied().unwrap_or(0);
    while r.maps.iter().any(|m| !m.is_empty()) && tick <= end + RECLAIM_LIMIT_NS {
        r.reclaim(tick);
        tick += TICK_NS;
    }
    r.out.left_blocks = r.maps.iter().map(|m| m.len() as u64).sum();
    r.out
}

fn blocks_of(offset: u64, size: u32) -> (u64, u64) {
    let start = offset / BLOCK;
    let end = (offset + u64::from(size.max(1))).div_ceil(BLOCK);
    (start, end - start)
}

impl Router<'_> {
    fn write(&mut self, owner: u32, v: usize, ts: u64, offset: u64, size: u32) {
        let (start, n) = blocks_of(offset, size);
        let policy = &self.policies[v];
        let offloaded = self.maps[v].any_in(start, n);
        let mut chosen = Vec::new();
        if offloaded || policy.offload_now(self.meters[v].rate_at(ts)) {
            let candidates: Vec<Candidate> = self
                .specs
                .iter()
                .enumerate()
                .filter(|(_, s)| s.host != v)
                .map(|(s, spec)| Candidate {
                    store: s,
                    load: self.meters[spec.host].rate_at(ts),
                    has_room: self.out.stores[s].used_blocks + n <= spec.blocks,
                })
                .collect();
            chosen = policy.choose(&candidates, self.turns[v]);
            self.turns[v] += 1;
        }
        if chosen.is_empty() {
            // Home: a range not off-loaded, or (stores full) written through. The simulated
            // write-through does not model the deletes it sends.
            if offloaded {
                for b in start..start + n {
                    self.forget(v, b);
                }
            }
            self.out.ios[v].push(Io {
                ts_ns: ts,
                offset,
                size,
                op: Op::Write as u8,
                owner,
            });
            return;
        }
        self.version += 1;
        let mut locs = Vec::new();
        for &s in &chosen {
            let spec = &self.specs[s];
            let st = &mut self.out.stores[s];
            // The log's next place; wrapping within the store's region.
            let at = spec.start + (st.head % spec.blocks) * BLOCK;
            st.head += n;
            st.offloads += 1;
            let size = (n * BLOCK) as u32;
            self.out.ios[spec.host].push(Io {
                ts_ns: ts,
                offset: at,
                size,
                op: Op::Write as u8,
                owner,
            });
            locs.push(Loc { store: s, at });
        }
        for k in 0..n {
            let here: Vec<Loc> = locs
                .iter()
                .map(|l| Loc {
                    store: l.store,
                    at: l.at + k * BLOCK,
                })
                .collect();
            let before = self.maps[v].get(start + k).map_or(0, Entry::stores);
            self.maps[v].record(start + k, self.version, &here);
            let after = self.maps[v].get(start + k).map_or(0, Entry::stores);
            self.account(before, after);
        }
        let vt = &mut self.out.volumes[v];
        vt.offloaded_writes += 1;
        vt.last_offload_ns = Some(ts);
        vt.drained_ns = None;
    }

    /// Store occupancy follows the map: a store holds a block while it has any version of it.
    fn account(&mut self, before: u64, after: u64) {
        for (s, st) in self.out.stores.iter_mut().enumerate() {
            let (was, is) = (before >> s & 1 == 1, after >> s & 1 == 1);
            if is && !was {
                st.used_blocks += 1;
                st.max_used_blocks = st.max_used_blocks.max(st.used_blocks);
            } else if was && !is {
                st.used_blocks -= 1;
            }
        }
    }

    fn forget(&mut self, v: usize, b: u64) {
        if let Some(before) = self.maps[v].get(b).map(Entry::stores) {
            let version = self.maps[v].get(b).map_or(0, |e| e.version);
            self.maps[v].remove_if(b, version);
            self.account(before, 0);
        }
    }

    fn read(&mut self, owner: u32, v: usize, ts: u64, offset: u64, size: u32) {
        let (start, n) = blocks_of(offset, size);
        if !self.maps[v].any_in(start, n) {
            self.out.ios[v].push(Io {
                ts_ns: ts,
                offset,
                size,
                op: Op::Read as u8,
                owner,
            });
            return;
        }
        let end = offset + u64::from(size);
        let place = |b: u64| self.maps[v].get(b).map(|e| e.locs[0]);
        let mut first = 0;
        while first < n {
            let here = place(start + first);
            let mut j = first + 1;
            while j < n && follows(place(start + j - 1), place(start + j)) {
                j += 1;
            }
            // Clip the run to the request's own bytes.
            let lo = ((start + first) * BLOCK).max(offset);
            let hi = ((start + j) * BLOCK).min(end);
            let (vol, at) = match here {
                Some(l) => (self.specs[l.store].host, l.at + (lo - (start + first) * BLOCK)),
                None => (v, lo),
            };
            self.out.ios[vol].push(Io {
                ts_ns: ts,
                offset: at,
                size: (hi - lo) as u32,
                op: Op::Read as u8,
                owner,
            });
            first = j;
        }
    }

    /// One look by each idle client's workers: each copies an extent home and deletes it.
    fn reclaim(&mut self, now: u64) {
        for v in 0..self.maps.len() {
            if self.maps[v].is_empty() || !self.policies[v].reclaim_now(self.meters[v].rate_at(now)) {
                continue;
            }
            for _ in 0..self.workers {
                let Some(ext) = self.maps[v].extent_from(self.cursors[v], BLOCK, RECLAIM_BLOCKS, 0) else {
                    break;
                };
                self.cursors[v] = ext.start + u64::from(ext.blocks);
                let size = (u64::from(ext.blocks) * BLOCK) as u32;
                let host = self.specs[ext.from.store].host;
                let read = Io {
                    ts_ns: now,
                    offset: ext.from.at,
                    size,
                    op: Op::Read as u8,
                    owner: RECLAIM,
                };
                self.out.ios[host].push(read);
                let home = Io {
                    ts_ns: now,
                    offset: ext.start * BLOCK,
                    size,
                    op: Op::Write as u8,
                    owner: RECLAIM,
                };
                self.out.ios[v].push(home);
                for b in ext.start..ext.start + u64::from(ext.blocks) {
                    if let Some(before) = self.maps[v].get(b).map(Entry::stores) {
                        self.maps[v].remove_if(b, ext.version);
                        self.account(before, 0);
                    }
                }
                self.out.stores[ext.from.store].reclaimed_blocks += u64::from(ext.blocks);
                if self.maps[v].is_empty() {
                    self.out.volumes[v].drained_ns = Some(now);
                    break;
                }
            }
        }
    }
}

fn follows(a: Option<Loc>, b: Option<Loc>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.store == b.store && a.at + BLOCK == b.at,
        _ => false,
    }
}
