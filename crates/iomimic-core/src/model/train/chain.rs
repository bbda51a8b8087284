//! A thread's chains while they are counted: each volume cut into equal ranges, visited ranges
//! into sub-ranges level by level, and for consecutive requests the edge at the level where
//! their paths part (steps 3 and 4 of the training algorithm, [`super`]).

use rustc_hash::FxHashMap;

use super::normalise;
use super::placement::Kind;
use super::reuse::buckets_of;
use super::stats::{differs, StatsAcc, MIN_STATS};
use crate::model::{equal_split, Bucket, Chain, Edge, State, Stats, PROFILE_SEGMENTS};

/// Sub-ranges per volume that fresh placements are counted over, spread over its leaves (a
/// leaf gets this many divided by the leaves a volume has, when that is more than one).
pub const FINE_PER_VOLUME: u64 = 256;
/// Fewest fresh placements a leaf needs to keep its fine counts.
pub const MIN_FINE: u32 = 32;
/// Fewest visits a top-level state needs to keep its stays.
pub const MIN_VISITS: u64 = 8;
/// The Kolmogorov–Smirnov distance's critical value at 5 %, times √n.
const KS_5_PERCENT: f64 = 1.36;

/// A chain under construction.
struct ChainAcc {
    states: Vec<(u32, u64, u64)>,
    children: Vec<Option<usize>>,
    initial: Vec<u64>,
    edges: Vec<FxHashMap<u32, StatsAcc>>,
    /// Self-loop counts that carry no stats (decided at a deeper level).
    passes: Vec<u64>,
    /// Leaves only: fresh placements per sub-range of each state.
    fine: Vec<Vec<u32>>,
}

impl ChainAcc {
    fn new(states: Vec<(u32, u64, u64)>) -> Self {
        let n = states.len();
        Self {
            states,
            children: vec![None; n],
            initial: vec![0; n],
            edges: (0..n).map(|_| FxHashMap::default()).collect(),
            passes: vec![0; n],
            fine: vec![Vec::new(); n],
        }
    }
}

/// The state of a chain holding `offset` (states sorted, covering their parent).
#[inline]
fn locate(states: &[(u32, u64, u64)], volume: u32, offset: u64) -> usize {
    let i = states.partition_point(|&(v, start, _)| (v, start) <= (volume, offset));
    i.saturating_sub(1)
}

/// A thread's chains; chain 0 is the top level, over the volumes the thread touches.
pub(super) struct Hierarchy {
    levels: u32,
    k: u32,
    chains: Vec<ChainAcc>,
    /// Sub-ranges per leaf for fresh placements (1: none kept).
    fine: u64,
    /// Requests in each top-level state per part of the thread ([`PROFILE_SEGMENTS`] a state):
    /// summed, where the thread starts and its visits' total; by part, a profile ([`Parts`]).
    occupancy: Vec<u64>,
    parts: Parts,
    /// Requests counted so far.
    rows: usize,
    /// Top-level visits: the state visited now and its requests so far, and per state the
    /// finished visits' lengths counted in quarter-octave buckets of `bounds`.
    visit: (usize, u64),
    stays: Vec<Vec<u64>>,
    bounds: Vec<u64>,
}

impl Hierarchy {
    /// `k` states per volume of `volumes` at the top, `k` per visited state below, `levels` deep;
    /// visits counted in the buckets of `bounds` (the reuse extension's); a thread of
    /// `requests` requests.
    pub fn new(volumes: &[u32], spans: &[u64], levels: u32, k: u32, bounds: &[u64], requests: usize) -> Self {
        let top: Vec<(u32, u64, u64)> = volumes
            .iter()
            .flat_map(|&v| equal_split(v, 0, spans[v as usize], k))
            .collect();
        let leaves = u64::from(k).saturating_pow(levels);
        Self {
            levels,
            k,
            occupancy: vec![0; top.len() * PROFILE_SEGMENTS],
            parts: Parts::new(requests),
            rows: 0,
            stays: vec![Vec::new(); top.len()],
            chains: vec![ChainAcc::new(top)],
            fine: FINE_PER_VOLUME.div_ceil(leaves.max(1)),
            visit: (0, 0),
            bounds: bounds.to_vec(),
        }
    }

    /// The top level's states: `(volume, start, end)`, sorted.
    pub fn top_states(&self) -> Vec<(u32, u64, u64)> {
        self.chains[0].states.clone()
    }

    /// Top-level state `s`: `(volume, start, end)`.
    #[inline]
    pub fn top_state(&self, s: usize) -> (u32, u64, u64) {
        self.chains[0].states[s]
    }

    /// A request placed afresh at `offset`, in the leaf at the end of `path`.
    #[inline]
    pub fn fresh(&mut self, path: &[(usize, usize)], offset: u64) {
        if self.fine <= 1 {
            return;
        }
        let &(c, s) = path.last().expect("a path reaches a leaf");
        let (_, start, end) = self.chains[c].states[s];
        let m = self.fine.min(end - start);
        let counts = &mut self.chains[c].fine[s];
        if counts.is_empty() {
            counts.resize(m as usize, 0);
        }
        let j = (u128::from(offset.saturating_sub(start)) * u128::from(m) / u128::from(end - start)) as usize;
        let last = counts.len() - 1;
        counts[j.min(last)] += 1;
    }

    /// (chain, state) at each level for a request, creating children on the way.
    #[inline]
    pub fn path(&mut self, volume: u32, offset: u64, out: &mut Vec<(usize, usize)>) {
        out.clear();
        let mut chain = 0;
        for level in 0..self.levels {
            let s = locate(&self.chains[chain].states, volume, offset);
            out.push((chain, s));
            if level + 1 == self.levels {
                break;
            }
            chain = match self.chains[chain].children[s] {
                Some(c) => c,
                None => {
                    let (v, start, end) = self.chains[chain].states[s];
                    let c = self.chains.len();
                    self.chains
                        .push(ChainAcc::new(equal_split(v, start, end, self.k)));
                    self.chains[chain].children[s] = Some(c);
                    c
                }
            };
        }
    }

    /// The thread's first request, at `path`: an entry at every level.
    pub fn start(&mut self, path: &[(usize, usize)]) {
        for &(c, s) in path {
            self.chains[c].initial[s] += 1;
        }
        self.visit = (path[0].1, 1);
        self.occupied(path[0].1);
    }

    /// A request in top-level state `s`, counted in the thread's part it lies in.
    #[inline]
    fn occupied(&mut self, s: usize) {
        let part = self.parts.of(self.rows);
        self.rows += 1;
        self.occupancy[s * PROFILE_SEGMENTS + part] += 1;
    }

    /// The top-level visit in progress ends (its state left, or the thread's end).
    fn end_visit(stays: &mut [Vec<u64>], bounds: &[u64], (state, length): (usize, u64)) {
        let b = (bounds.partition_point(|&x| x <= length) - 1).min(bounds.len() - 2);
        let counts = &mut stays[state];
        if counts.len() <= b {
            counts.resize(b + 1, 0);
        }
        counts[b] += 1;
    }

    /// A move from `prev` to `cur`: the first level where the paths differ (else the leaf)
    /// gets the edge and the request's stats, the levels above a self-loop, the levels below an
    /// entry into the new state's children.
    #[inline]
    pub fn step(
        &mut self,
        prev: &[(usize, usize)],
        cur: &[(usize, usize)],
        op: u8,
        size: u32,
        kind: Kind,
        gap: Option<f64>,
    ) {
        let differ = prev.iter().zip(cur).position(|(a, b)| a != b);
        let decided = differ.unwrap_or(cur.len() - 1);
        if differ == Some(0) {
            Self::end_visit(&mut self.stays, &self.bounds, self.visit);
            self.visit = (cur[0].1, 1);
        } else {
            self.visit.1 += 1;
        }
        self.occupied(cur[0].1);
        for (level, (&(c, a), &(_, b))) in prev.iter().zip(cur).enumerate() {
            match level.cmp(&decided) {
                std::cmp::Ordering::Less => self.chains[c].passes[a] += 1,
                std::cmp::Ordering::Equal => {
                    self.chains[c].edges[a]
                        .entry(b as u32)
                        .or_default()
                        .add(op, size, kind, gap);
                }
                std::cmp::Ordering::Greater => self.chains[cur[level].0].initial[b] += 1,
            }
        }
    }

    /// The finished chains. An edge has stats of its own from [`MIN_STATS`] requests, where
    /// they differ from the stats it would otherwise take (`fallback` of the volume it leads
    /// into).
    ///
    /// Returns the chain and, per volume, the stats of the requests over edges without their
    /// own: those edges take these, so every op, placement and size share of the volume holds
    /// as the trace had it (falling back to the volume's whole stats would count the edges
    /// with their own twice). Top-level starts follow occupancy (each top-level state's
    /// requests), not just the first request; the top-level states get their stays
    /// ([`Self::stays_of`]), the visit the thread ended in counting as a whole one (it is cut
    /// short at most once).
    pub fn build(&self, fallback: &Fallback<'_>) -> (Chain, FxHashMap<u32, Stats>) {
        let mut rest: FxHashMap<u32, StatsAcc> = FxHashMap::default();
        for acc in &self.chains {
            for edges in &acc.edges {
                for (&to, st) in edges {
                    let volume = acc.states[to as usize].0;
                    if own_stats(st, fallback.of(volume)).is_none() {
                        rest.entry(volume).or_default().merge(st);
                    }
                }
            }
        }
        let rest = rest
            .into_iter()
            .filter(|(_, acc)| acc.count > 0)
            .map(|(v, acc)| (v, acc.finish(None)))
            .collect();
        let mut chain = build_chain(&self.chains, 0, fallback);
        let requests: Vec<u64> = self
            .occupancy
            .chunks(PROFILE_SEGMENTS)
            .map(|parts| parts.iter().sum())
            .collect();
        chain.initial = normalise(&requests);
        // the visit the thread ended in counts as it stands
        let mut stays = self.stays.clone();
        if self.visit.1 > 0 {
            Self::end_visit(&mut stays, &self.bounds, self.visit);
        }
        let profiles = self.occupancy.chunks(PROFILE_SEGMENTS);
        for (((state, counts), &requests), parts) in
            chain.states.iter_mut().zip(&stays).zip(&requests).zip(profiles)
        {
            state.stays = self.stays_of(counts, requests);
            // a state visited in stays keeps when (the walk steers by it)
            if state.stays.is_some() {
                state.profile = Some(parts.iter().map(|&n| n.min(u64::from(u32::MAX)) as u32).collect());
            }
        }
        (chain, rest)
    }

    /// A state's stays as buckets, when it was visited often enough and they are not what its
    /// self-loop's odds give anyway: a geometric law of their mean (Kolmogorov–Smirnov's
    /// critical value at 5 %, the empirical law known at bucket ends; conservative, as the
    /// law's parameter comes from the same visits and the law is discrete, so a state keeps
    /// its stays only when they are plainly not geometric). Most states' stays are (a
    /// stream-rich trace's all are); kept for them the model would grow and the walk draw more
    /// for nothing.
    fn stays_of(&self, counts: &[u64], requests: u64) -> Option<Vec<Bucket>> {
        let visits: u64 = counts.iter().sum();
        if visits < MIN_VISITS {
            return None;
        }
        let stay_on = 1.0 - visits as f64 / requests as f64;
        let mut below = 0;
        let mut distance = 0.0f64;
        for (b, &c) in counts.iter().enumerate() {
            below += c;
            let longest = self.bounds[b + 1] - 1;
            let geometric = 1.0 - stay_on.powf(longest as f64);
            distance = distance.max((below as f64 / visits as f64 - geometric).abs());
        }
        (distance > KS_5_PERCENT / (visits as f64).sqrt())
            .then(|| buckets_of(&self.bounds, counts.iter().map(|&c| c as f64)))
    }
}

/// Which of [`PROFILE_SEGMENTS`] equal parts of a thread's rows a row lies in, for rows given
/// in order: `row · parts / requests`, kept without a division a request.
struct Parts {
    requests: usize,
    /// the part rows are in now, and the first row past it
    part: usize,
    end: usize,
}

impl Parts {
    fn new(requests: usize) -> Self {
        Self {
            requests,
            part: 0,
            end: requests.div_ceil(PROFILE_SEGMENTS),
        }
    }

    #[inline]
    fn of(&mut self, row: usize) -> usize {
        while row >= self.end && self.part + 1 < PROFILE_SEGMENTS {
            self.part += 1;
            self.end = ((self.part + 1) * self.requests).div_ceil(PROFILE_SEGMENTS);
        }
        self.part
    }
}

/// An edge's stats, when it has requests enough for them and they differ from its fallback.
fn own_stats(st: &StatsAcc, fallback: &Stats) -> Option<Stats> {
    (st.count >= MIN_STATS)
        .then(|| st.finish(None))
        .filter(|s| differs(s, fallback))
}

/// The stats an edge without its own takes: its volume's, else the thread's.
pub(super) struct Fallback<'a> {
    pub volumes: &'a FxHashMap<u32, Stats>,
    pub thread: &'a Stats,
}

impl Fallback<'_> {
    fn of(&self, volume: u32) -> &Stats {
        self.volumes.get(&volume).unwrap_or(self.thread)
    }
}

fn build_chain(chains: &[ChainAcc], c: usize, fallback: &Fallback<'_>) -> Chain {
    let acc = &chains[c];
    let states = acc
        .states
        .iter()
        .zip(&acc.children)
        .zip(&acc.fine)
        .map(|((&(volume, start, end), child), fine)| State {
            volume,
            start,
            end,
            children: child.map(|ci| Box::new(build_chain(chains, ci, fallback))),
            fine: (fine.iter().sum::<u32>() >= MIN_FINE).then(|| fine.clone()),
            fine_reused: None,
            stays: None,
            runs: None,
            profile: None,
        })
        .collect();
    let transitions = acc
        .edges
        .iter()
        .zip(&acc.passes)
        .enumerate()
        .map(|(s, (edges, &passes))| {
            let mut out: Vec<(u32, u64, Option<Stats>)> = edges
                .iter()
                .map(|(&to, st)| {
                    let own = own_stats(st, fallback.of(acc.states[to as usize].0));
                    (to, st.count, own)
                })
                .collect();
            if passes > 0 {
                // moves decided below this level stay in the state here
                match out.iter_mut().find(|e| e.0 as usize == s) {
                    Some(e) => e.1 += passes,
                    None => out.push((s as u32, passes, None)),
                }
            }
            out.sort_by_key(|e| e.0);
            let total: u64 = out.iter().map(|e| e.1).sum();
            out.into_iter()
                .map(|(to, count, stats)| Edge {
                    to,
                    p: count as f64 / total as f64,
                    count,
                    stats: stats.map(Box::new),
                })
                .collect()
        })
        .collect();
    Chain {
        states,
        initial: normalise(&acc.initial),
        transitions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn parts_are_rows_times_parts_over_requests(requests in 1usize..100_000) {
            let mut parts = Parts::new(requests);
            for row in 0..requests {
                proptest::prop_assert_eq!(parts.of(row), row * PROFILE_SEGMENTS / requests);
            }
        }
    }
}
