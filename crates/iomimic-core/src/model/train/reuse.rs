//! Temporal locality (the reuse extension): how far back in the thread's LRU stack of requests
//! (keyed by volume and start offset, as libCacheSim keys block traces) each re-used request
//! was, in quarter-octave buckets, by the re-using request's op and the re-used request's op
//! and size class; the share of those re-uses better told by how often the re-used request had
//! been touched, and its rank by that; and how much less often the thread placed requests
//! afresh at its end (step 6 of the training algorithm, [`super`]).
//!
//! ## Algorithm
//! A depth is seen only up to the size of the stack it is in: while a stack fills (a cache
//! warming up) deep re-uses cannot happen yet, so the depths seen over the whole thread hold
//! too many shallow ones for the steady state. The generator's stacks fill too, and it draws
//! a depth again when its stack is not that deep, so what it needs is the distribution of
//! depths *before* that cut. Each re-use is a draw cut at its stack's size, which is right
//! truncation; the histogram is undone from it by Lynden-Bell's product-limit estimator: the
//! chance of bucket j given a depth at most j's is the re-uses in j over those that could have
//! been in j (depth at most j's, stack at least j deep), and the buckets' probabilities are
//! its products from the deepest down.
//!
//! Recency alone forgets popularity (a request re-read a thousand times is, to a stack, no
//! likelier to come back than one re-read twice), so each re-use is also ranked by touches
//! among the requests of its class and top-level state touched twice or more (counted as the
//! generator counts them), and each class's re-uses are a mix: some by depth, the rest by rank.
//! The mix is fitted by expectation-maximisation: each kind of re-use's chance of being by rank
//! is the rank histogram's likelihood (per unit of rank) over the sum of both parts'
//! likelihoods, the histograms and shares are refitted from those chances, and so on for
//! [`EM_ROUNDS`] rounds from an even start. Ranks are cut at the requests ranked then, as
//! depths are, and undone the same way.
//!
//! ## References
//! Dempster, Laird & Rubin, "Maximum likelihood from incomplete data via the EM algorithm"
//! (JRSS B 1977).
//! Lynden-Bell, "A method of allowing for known observational selection in small samples
//! applied to 3CR quasars" (MNRAS 1971): the product-limit estimator for truncated samples.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::analyze::frequency_ranks::CountRanks;
use crate::analyze::lru_stack::KeptStacks;

use crate::model::{
    request_class as class_of, Bucket, Population, Reuse, ReuseClass, HOT_CELLS, HOT_SPOTS, PLACEMENT_CELLS,
    REQUEST_CLASSES as CLASSES, SIZE_CLASSES,
};
use crate::trace::{Op, TraceView};

/// Requests per chunk the reuse-depth pass hands over.
const DEPTH_CHUNK: usize = 1 << 16;
/// Quarter-octave bucket bounds for reuse times: 1, 2, ..., 8, 10, 12, 14, 16, 20, ...
pub(super) fn reuse_bounds() -> Vec<u64> {
    let mut b = vec![1u64];
    while *b.last().expect("non-empty") < 1 << 40 {
        let last = *b.last().expect("non-empty");
        b.push((last + 1).max((last as f64 * 2f64.powf(0.25)).round() as u64));
    }
    b
}

/// Counts over the buckets of `bounds` (the first count's bucket `[bounds[0], bounds[1])`)
/// as buckets with their shares, the empty ones left out.
pub(super) fn buckets_of(bounds: &[u64], counts: impl Iterator<Item = f64>) -> Vec<Bucket> {
    let counts: Vec<f64> = counts.collect();
    let total: f64 = counts.iter().sum();
    counts
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c > 0.0)
        .map(|(b, &c)| Bucket {
            from: bounds[b],
            to: bounds[b + 1],
            p: c / total,
        })
        .collect()
}

/// A request touched before: where the request it touches again stood.
#[derive(Debug, Clone, Copy)]
pub(super) struct Touch {
    /// its depth in the LRU stack of the requests of its previous touch's class and its
    /// top-level state (1 = the most recently used of them)
    pub depth: u64,
    /// that class
    pub class: u8,
    /// how many requests that stack held (the deepest the depth could have been)
    pub held: u64,
}

/// A request's [`Touch`], `None` on a first touch.
pub(super) type Seen = Option<Touch>;

/// What the depth pass says of a request: its [`Seen`], and its place's number (places —
/// volume and start offset — numbered from 0 in the order first touched, so that what is kept
/// per place elsewhere is an array, not a second hash map).
#[derive(Debug, Clone, Copy)]
pub(super) struct Visit {
    pub seen: Seen,
    pub place: u32,
}

/// `f` given each of the `rows` of `t` (in order) and its [`Visit`] by `stacks`: one LRU stack
/// per top-level state and class, a request moving to the stack of its new class when touched again. Stacks are kept per
/// state so that a re-use, generated where the chain is, re-uses what that state re-used (a
/// journal never re-read stays so beside a hot set re-read often). The stacks are the costliest
/// part of training and need nothing else, so on many rows they run on a core of their own, a
/// chunk ahead of `f`.
pub(super) fn each_visit(
    stacks: &mut Stacks,
    t: &TraceView<'_>,
    rows: &[usize],
    mut f: impl FnMut(usize, Visit),
) {
    // a flush has no address: it touches no stack (and the generator places none)
    let visit = |stacks: &mut Stacks, i: usize| {
        if t.op[i] == Op::Flush as u8 {
            Visit { seen: None, place: 0 }
        } else {
            stacks.visit(t.volume[i], t.offset[i], t.op[i], t.size[i])
        }
    };
    if rows.len() < DEPTH_CHUNK {
        for &i in rows {
            f(i, visit(stacks, i));
        }
        return;
    }
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Visit>>(8);
        scope.spawn(move || {
            for chunk in rows.chunks(DEPTH_CHUNK) {
                if tx
                    .send(chunk.iter().map(|&i| visit(stacks, i)).collect())
                    .is_err()
                {
                    break;
                }
            }
        });
        for (&i, v) in rows.iter().zip(rx.into_iter().flatten()) {
            f(i, v);
        }
    });
}

/// The LRU stacks [`each_visit`] keeps, one request at a time (a thread trained a piece of its
/// trace at a time keeps them between pieces).
pub(super) struct Stacks {
    top: Vec<(u32, u64, u64)>,
    /// one per top-level state and class
    by_state: KeptStacks,
    /// each place's class, number and time on its stack
    class: FxHashMap<(u32, u64), (u8, u32, u32)>,
}

impl Stacks {
    /// Stacks per top-level state of `top` and class, room made for `expected` places.
    pub fn new(top: Vec<(u32, u64, u64)>, expected: usize) -> Self {
        let mut class = FxHashMap::default();
        class.reserve(expected.min(1 << 24));
        Self {
            by_state: KeptStacks::new(top.len() * CLASSES),
            top,
            class,
        }
    }

    /// The next request's [`Visit`].
    #[inline]
    pub fn visit(&mut self, volume: u32, offset: u64, op: u8, size: u32) -> Visit {
        if self.by_state.due() {
            self.renumber();
        }
        let key = (volume, offset);
        let group = state_of(&self.top, volume, offset) * CLASSES;
        let places = self.class.len() as u32;
        match self.class.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let (was, place, time) = *e.get();
                let from = group + usize::from(was);
                let held = self.by_state.keys(from) as u64;
                let depth = self.by_state.remove(from, time);
                let now = class_of(op, size, true);
                *e.get_mut() = (now, place, self.by_state.push(group + usize::from(now)));
                Visit {
                    seen: Some(Touch {
                        depth,
                        class: was,
                        held,
                    }),
                    place,
                }
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                let now = class_of(op, size, false);
                e.insert((now, places, self.by_state.push(group + usize::from(now))));
                Visit {
                    seen: None,
                    place: places,
                }
            }
        }
    }

    /// Renumbers the stacks' times, and the places' kept with them.
    fn renumber(&mut self) {
        let (top, class) = (&self.top, &mut self.class);
        self.by_state.renumber(|new| {
            for (&(volume, offset), kept) in class.iter_mut() {
                let s = state_of(top, volume, offset) * CLASSES + usize::from(kept.0);
                kept.2 = new(s, kept.2);
            }
        });
    }
}

/// A re-used request's rank by touches among the requests of its top-level state and class
/// touched twice or more (1 = the most touched; ties take a rank among theirs by a hash of the
/// row; 0 for a request touched once), and how many such requests there were (the lowest it
/// could have been).
pub(super) type Rank = (u64, u64);

/// Requests' touch counts as the generator keeps them: a re-use touches its request once more
/// (and moves it to the class of the re-using request); any other request, even one landing
/// where an earlier one did, starts a count of its own (the generator follows and places
/// requests without looking for earlier ones there).
#[derive(Default)]
pub(super) struct TouchCounts {
    /// per top-level state and class
    ranks: Vec<CountRanks>,
    /// by place ([`Visit::place`]): the latest request there, its count and where it is ranked
    counts: Vec<(u32, u32)>,
    /// by place, for the population ([`Reuse::population`]): the top-level state (+ 1) of
    /// the request placed afresh there (0: none was), and its placements and re-uses so far
    placed_afresh: Vec<(u32, u32)>,
    /// by place: the cell of its top-level state (of [`HOT_CELLS`]) the request placed afresh
    /// there lies in
    fresh_cell: Vec<u16>,
    /// per top-level state: re-uses of requests not placed afresh (following a run)
    reused_others: Vec<u64>,
}

impl TouchCounts {
    /// Counts over `states` top-level states.
    pub fn new(states: usize) -> Self {
        Self {
            ranks: vec![CountRanks::default(); states * CLASSES],
            counts: Vec::new(),
            placed_afresh: Vec::new(),
            fresh_cell: Vec::new(),
            reused_others: vec![0; states],
        }
    }

    /// A request of top-level `state` placed afresh at `place` in the state's `cell`
    /// (`Some`), or re-using the latest request there (`None`).
    pub fn placed(&mut self, state: usize, place: u32, fresh: Option<u16>) {
        let place = place as usize;
        if place >= self.placed_afresh.len() {
            self.placed_afresh.resize(place + 1, (0, 0));
            self.fresh_cell.resize(place + 1, 0);
        }
        let slot = &mut self.placed_afresh[place];
        if let Some(cell) = fresh {
            *slot = (state as u32 + 1, 1);
            self.fresh_cell[place] = cell;
        } else if slot.0 > 0 {
            slot.1 += 1;
        } else {
            self.reused_others[state] += 1;
        }
    }

    /// Per top-level state, the requests placed afresh by their placements and re-uses, and
    /// the re-uses of the others.
    pub fn population(&self) -> Vec<Population> {
        let states = self.reused_others.len();
        let per = (HOT_CELLS as usize / PLACEMENT_CELLS) as u16;
        let mut by_touches: Vec<BTreeMap<u64, u64>> = vec![BTreeMap::new(); states];
        // per state: every request placed afresh counted in its cell, and (touches, place) of
        // those re-used, for the hottest's own cells
        let mut cells: Vec<Vec<[u32; 2]>> = vec![Vec::new(); states];
        let mut reused: Vec<Vec<(u32, u32)>> = vec![Vec::new(); states];
        for (place, &(state, touches)) in self.placed_afresh.iter().enumerate() {
            if state > 0 {
                let s = state as usize - 1;
                *by_touches[s].entry(u64::from(touches)).or_default() += 1;
                if cells[s].is_empty() {
                    cells[s].resize(PLACEMENT_CELLS, [0, 0]);
                }
                cells[s][usize::from(self.fresh_cell[place] / per)][usize::from(touches >= 2)] += 1;
                if touches >= 2 {
                    reused[s].push((touches, place as u32));
                }
            }
        }
        by_touches
            .into_iter()
            .zip(&self.reused_others)
            .zip(cells.into_iter().zip(reused))
            .map(|((counts, &other), (mut cells, mut reused))| {
                let hottest = |&(touches, place): &(u32, u32)| (std::cmp::Reverse(touches), place);
                if reused.len() > HOT_SPOTS {
                    reused.select_nth_unstable_by_key(HOT_SPOTS, hottest);
                    reused.truncate(HOT_SPOTS);
                }
                reused.sort_unstable_by_key(hottest);
                let hot: Vec<u16> = reused
                    .iter()
                    .map(|&(_, place)| self.fresh_cell[place as usize])
                    .collect();
                // the others: less the hottest, which are placed by their own cells
                for &cell in &hot {
                    cells[usize::from(cell / per)][1] -= 1;
                }
                if cells.iter().all(|c| c == &[0, 0]) {
                    cells.clear();
                }
                Population {
                    touches: counts.into_iter().map(|(k, n)| [k, n]).collect(),
                    other,
                    hot,
                    cells,
                }
            })
            .collect()
    }

    /// The thread's request number `row` (`op`, `size`) at `place` in top-level `state`: a
    /// re-use of the latest request there (its [`Rank`] before this touch), or a request of
    /// its own. Only requests touched twice or more are ranked (those touched once are too
    /// many, and alike, to tell apart by count), so only they are kept in the ranks.
    #[allow(clippy::too_many_arguments)]
    pub fn touch(
        &mut self,
        state: usize,
        place: u32,
        op: u8,
        size: u32,
        reuse: bool,
        row: usize,
    ) -> Option<Rank> {
        let place = place as usize;
        if place >= self.counts.len() {
            self.counts.resize(place + 1, (0, 0));
        }
        let slot = &mut self.counts[place];
        let (c, at) = *slot;
        let rank = (reuse && c > 0).then(|| {
            let ranks = &mut self.ranks[at as usize];
            let keys = ranks.keys();
            let rank = if c >= 2 {
                let tie = crate::random::splitmix(row as u64) % ranks.with(c).max(1);
                let rank = ranks.above(c) + 1 + tie;
                ranks.remove(c);
                rank
            } else {
                0
            };
            (rank, keys)
        });
        let count = rank.map_or(1, |_| c + 1);
        let at = state * CLASSES + usize::from(class_of(op, size, rank.is_some()));
        if count >= 2 {
            self.ranks[at].add(count);
        }
        *slot = (count, at as u32);
        rank
    }
}

/// The state of `states` (sorted, covering their volumes) holding `offset` of `volume`.
#[inline]
pub(crate) fn state_of(states: &[(u32, u64, u64)], volume: u32, offset: u64) -> usize {
    states
        .partition_point(|&(v, start, _)| (v, start) <= (volume, offset))
        .saturating_sub(1)
}

/// Re-uses (weighted) by the bucket of their depth, with the buckets they could have reached.
#[derive(Clone)]
struct Depths {
    /// re-uses in each bucket
    seen: Vec<f64>,
    /// re-uses that could have been in each bucket, as differences along the buckets: a re-use
    /// could have been in every bucket from its own to its stack's size's
    could: Vec<f64>,
}

impl Depths {
    fn new(buckets: usize) -> Self {
        Self {
            seen: vec![0.0; buckets],
            could: vec![0.0; buckets + 1],
        }
    }

    fn add(&mut self, b: usize, held: usize, weight: f64) {
        self.seen[b] += weight;
        self.could[b] += weight;
        self.could[held.max(b) + 1] -= weight;
    }

    fn total(&self) -> f64 {
        self.seen.iter().sum()
    }

    /// The share of each bucket before the stacks' sizes cut the depths (Lynden-Bell).
    fn untruncated(&self) -> Vec<f64> {
        let mut could = 0.0;
        let reverse_hazard: Vec<f64> = self
            .seen
            .iter()
            .zip(&self.could)
            .map(|(&n, &d)| {
                could += d;
                if n <= 0.0 {
                    0.0
                } else {
                    (n / could.max(n)).min(1.0)
                }
            })
            .collect();
        let mut p = vec![0.0; self.seen.len()];
        let mut below = 1.0;
        for (j, &g) in reverse_hazard.iter().enumerate().rev() {
            p[j] = g * below;
            below *= 1.0 - g;
        }
        let sum: f64 = p.iter().sum();
        if sum > 0.0 {
            for x in &mut p {
                *x /= sum;
            }
        }
        p
    }
}

/// A kind of re-use, counted: (op, class re-used, depth bucket, stack size bucket, rank
/// bucket, keys bucket).
type ReuseKey = (u8, u8, u8, u8, u8, u8);

/// The rank bucket of a re-use of a request touched once (which only recency explains).
const UNRANKED: u8 = u8::MAX;
/// Rounds of expectation-maximisation fitting the mix of re-uses by recency and by frequency.
const EM_ROUNDS: usize = 32;
/// Below this share of a class's re-uses, re-use by frequency is left out of it.
const MIN_RANK_SHARE: f64 = 0.02;

/// Re-uses counted by the bucket of their depth, overall and by kind; and fresh touches.
pub(super) struct ReuseAcc {
    bounds: Vec<u64>,
    counts: Vec<u64>,
    kinds: FxHashMap<ReuseKey, u64>,
    /// Requests, and those touching no earlier request, in the whole thread and its last
    /// quarter.
    touches: [u64; 2],
    first_touches: [u64; 2],
}

/// One (op, class)'s part of the fitted mix: its share of the op's re-uses, the share of them
/// by frequency, and the depths and ranks of the rest and of those.
struct ClassFit {
    share: f64,
    by_rank: f64,
    depths: Vec<f64>,
    ranks: Vec<f64>,
}

impl ReuseAcc {
    /// Buckets between consecutive `bounds` (from [`reuse_bounds`]).
    pub fn new(bounds: &[u64]) -> Self {
        Self {
            bounds: bounds.to_vec(),
            counts: vec![0u64; bounds.len()],
            kinds: FxHashMap::default(),
            touches: [0; 2],
            first_touches: [0; 2],
        }
    }

    /// A request; `tail`: it is in the thread's last quarter; `first`: it touched no earlier
    /// request.
    #[inline]
    pub fn touch(&mut self, tail: bool, first: bool) {
        for (k, on) in [(0, true), (1, tail)] {
            if on {
                self.touches[k] += 1;
                self.first_touches[k] += u64::from(first);
            }
        }
    }

    /// A re-use by an `op` request of the request `touch` describes, at `rank`.
    #[inline]
    pub fn add(&mut self, op: u8, touch: &Touch, (rank, keys): Rank) {
        let bucket = |d: u64| (self.bounds.partition_point(|&b| b <= d) - 1) as u8;
        let b = bucket(touch.depth);
        self.counts[usize::from(b)] += 1;
        let key = (
            op.min(1),
            touch.class,
            b,
            bucket(touch.held.max(touch.depth)),
            if rank == 0 { UNRANKED } else { bucket(rank) },
            bucket(keys.max(rank).max(1)),
        );
        *self.kinds.entry(key).or_insert(0) += 1;
    }

    /// The mix's parts given each kind's chance of being a re-use by frequency.
    fn maximise(&self, kinds: &[(ReuseKey, f64)], by_rank: &[f64]) -> Vec<ClassFit> {
        let n = self.bounds.len();
        let mut parts = vec![(Depths::new(n), Depths::new(n)); 2 * CLASSES];
        let mut per_op = [0.0f64; 2];
        for (&((op, class, d, held, r, keys), count), &w) in kinds.iter().zip(by_rank) {
            let (recency, frequency) = &mut parts[usize::from(op) * CLASSES + usize::from(class)];
            recency.add(usize::from(d), usize::from(held), count * (1.0 - w));
            if r != UNRANKED {
                frequency.add(usize::from(r), usize::from(keys), count * w);
            }
            per_op[usize::from(op)] += count;
        }
        parts
            .iter()
            .enumerate()
            .map(|(k, (recency, frequency))| {
                let all = recency.total() + frequency.total();
                ClassFit {
                    share: if per_op[k / CLASSES] > 0.0 {
                        all / per_op[k / CLASSES]
                    } else {
                        0.0
                    },
                    by_rank: if all > 0.0 { frequency.total() / all } else { 0.0 },
                    depths: recency.untruncated(),
                    ranks: frequency.untruncated(),
                }
            })
            .collect()
    }

    /// Each re-use kind's chance of being a re-use by frequency, given the mix `fit`: the two
    /// parts' likelihoods per unit of depth and of rank, weighted by the class's shares.
    fn expect(&self, kinds: &[(ReuseKey, f64)], fit: &[ClassFit], by_rank: &mut [f64]) {
        let width = |b: u8| (self.bounds[usize::from(b) + 1] - self.bounds[usize::from(b)]) as f64;
        for (&((op, class, d, _, r, _), _), w) in kinds.iter().zip(by_rank.iter_mut()) {
            if r == UNRANKED {
                continue;
            }
            let part = &fit[usize::from(op) * CLASSES + usize::from(class)];
            let recency = (1.0 - part.by_rank) * part.depths[usize::from(d)] / width(d);
            let frequency = part.by_rank * part.ranks[usize::from(r)] / width(r);
            if recency + frequency > 0.0 {
                *w = frequency / (recency + frequency);
            }
        }
    }

    /// Fits each class's mix of re-uses by recency (the class's LRU stack) and by frequency
    /// (its ranks by touches) by expectation-maximisation, from an even start; re-use by
    /// frequency is left out of a class where it explains too little.
    fn fit(&self) -> Vec<ClassFit> {
        let mut kinds: Vec<(ReuseKey, f64)> = self.kinds.iter().map(|(&k, &c)| (k, c as f64)).collect();
        kinds.sort_unstable_by_key(|&(k, _)| k);
        let mut by_rank: Vec<f64> = kinds
            .iter()
            .map(|&((_, _, _, _, r, _), _)| if r == UNRANKED { 0.0 } else { 0.5 })
            .collect();
        for _ in 0..EM_ROUNDS {
            let fit = self.maximise(&kinds, &by_rank);
            self.expect(&kinds, &fit, &mut by_rank);
        }
        let fit = self.maximise(&kinds, &by_rank);
        for (&((op, class, ..), _), w) in kinds.iter().zip(by_rank.iter_mut()) {
            if fit[usize::from(op) * CLASSES + usize::from(class)].by_rank < MIN_RANK_SHARE {
                *w = 0.0;
            }
        }
        self.maximise(&kinds, &by_rank)
    }

    /// The histograms, `None` without a re-use.
    pub fn finish(&self) -> Option<Reuse> {
        let buckets = buckets_of(&self.bounds, self.counts.iter().map(|&c| c as f64));
        if buckets.is_empty() {
            return None;
        }
        let n = SIZE_CLASSES.len() as u8;
        let classes = self
            .fit()
            .into_iter()
            .enumerate()
            .filter(|(_, part)| part.share > 0.0)
            .map(|(k, part)| {
                let (op, class) = ((k / CLASSES) as u8, (k % CLASSES) as u8);
                let depths = buckets_of(&self.bounds, part.depths.into_iter());
                ReuseClass {
                    op,
                    last_op: (class / n) % 2,
                    max_size: SIZE_CLASSES[usize::from(class % n)],
                    again: class >= 2 * n,
                    p: part.share,
                    // all by frequency when no re-use is left to recency
                    rank_share: if depths.is_empty() { 1.0 } else { part.by_rank },
                    buckets: depths,
                    ranks: buckets_of(&self.bounds, part.ranks.into_iter()),
                }
            })
            .collect();
        let share = |k: usize| self.first_touches[k] as f64 / self.touches[k].max(1) as f64;
        let tail_fresh = (self.touches[1] > 0 && share(0) > 0.0).then(|| (share(1) / share(0)).min(1.0));
        Some(Reuse {
            buckets,
            classes,
            tail_fresh,
            population: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::train::{train, TrainOptions};
    use crate::random::Prng;
    use crate::trace::Trace;

    #[test]
    fn truncated_depths_are_undone_by_hand() {
        // depths 1, 2, 3 in buckets 0, 1, 2; (depth, stack size): (1, 1) twice, (1, 3), (2, 3),
        // (3, 3). Could have been in: bucket 0 all three depth-1 re-uses; bucket 1 the (1, 3)
        // and (2, 3); bucket 2 the (1, 3), (2, 3), (3, 3). Reverse hazards 3/3, 1/2, 1/3, so
        // p2 = 1/3, p1 = 1/2 * 2/3 = 1/3, p0 = 1 * 2/3 * 1/2 = 1/3 — where the shares seen are
        // 3/5, 1/5, 1/5
        let mut d = Depths::new(3);
        for (b, held) in [(0, 0), (0, 0), (0, 2), (1, 2), (2, 2)] {
            d.add(b, held, 1.0);
        }
        for p in d.untruncated() {
            assert!((p - 1.0 / 3.0).abs() < 1e-12, "{p}");
        }
        // never cut (every stack deep enough): the shares seen
        let mut d = Depths::new(3);
        for (b, held) in [(0, 2), (0, 2), (1, 2)] {
            d.add(b, held, 1.0);
        }
        let p = d.untruncated();
        assert!((p[0] - 2.0 / 3.0).abs() < 1e-12 && (p[1] - 1.0 / 3.0).abs() < 1e-12 && p[2] == 0.0);
    }

    /// 4 KiB reads of `keys(i)`, 1 ms apart, on one volume.
    fn reads(n: usize, mut keys: impl FnMut(usize) -> u64) -> Trace {
        let mut t = Trace {
            volumes: vec!["v".into()],
            ..Trace::default()
        };
        for i in 0..n {
            t.ts_ns.push(i as u64 * 1_000_000);
            // 16 MiB apart: no re-use is taken for a request near another
            t.offset.push(keys(i) << 24);
            t.size.push(4096);
            t.op.push(0);
            t.volume.push(0);
            t.stream.push(0);
        }
        t
    }

    /// The share by rank of the re-uses by reads of reads touched before.
    fn rank_share(t: &Trace) -> f64 {
        let opts = TrainOptions {
            levels: Some(1),
            states: Some(1),
            simulate_on: None,
            ..TrainOptions::default()
        };
        let m = train(&t.view(), &opts).unwrap();
        let reuse = m.threads[0].reuse.as_ref().expect("re-uses");
        reuse
            .classes
            .iter()
            .find(|c| c.op == 0 && c.last_op == 0 && c.again)
            .expect("re-reads of re-read requests")
            .rank_share
    }

    #[test]
    fn popularity_is_told_apart_from_recency() {
        // independent references to 300 keys of Zipf-like popularity: frequency explains them
        let mut rng = Prng::new(5);
        let weights: Vec<f64> = (1..=300).map(|r| 1.0 / f64::from(r).powf(1.2)).collect();
        let sum: f64 = weights.iter().sum();
        let weights: Vec<f64> = weights.iter().map(|w| w / sum).collect();
        let zipf = reads(20_000, |_| {
            crate::model::sample::pick_at(weights.iter().copied(), rng.f64()) as u64
        });
        assert!(rank_share(&zipf) > 0.6, "{}", rank_share(&zipf));
        // a loop over 300 keys: each comes back at depth 300, all equally often — recency alone
        let looped = reads(20_000, |i| (i % 300) as u64);
        assert_eq!(rank_share(&looped), 0.0);
    }

    #[test]
    fn the_hottest_requests_keep_their_cells_hottest_first() {
        // one state; places 0-3 placed afresh in cells 10, 300, 600, 1000 (of 65,536: placement
        // cells 0-3 of 256) and touched 1, 3, 2, 3 times; place 4 re-used without a fresh
        // placement (another request's)
        let mut c = TouchCounts::new(1);
        for (place, cell) in [(0, 10), (1, 300), (2, 600), (3, 1000)] {
            c.placed(0, place, Some(cell));
        }
        for place in [1, 1, 2, 3, 3, 4] {
            c.placed(0, place, None);
        }
        let p = &c.population()[0];
        assert_eq!(p.touches, vec![[1, 1], [2, 1], [3, 2]]);
        assert_eq!(p.other, 1);
        // touched 3 times: places 1 and 3 (in place order), then place 2; place 0 not re-used
        assert_eq!(p.hot, vec![300, 1000, 600]);
        // the others' cells: place 0's, not re-used (the re-used are all among the hottest)
        assert_eq!(p.cells.len(), PLACEMENT_CELLS);
        assert_eq!(p.cells[0], [1, 0]);
        assert!(p.cells[1..].iter().all(|c| c == &[0, 0]));
        // at most HOT_SPOTS of them, the hottest
        let mut c = TouchCounts::new(1);
        for place in 0..(HOT_SPOTS as u32 + 10) {
            c.placed(0, place, Some(place as u16));
            for _ in 0..=place % 7 {
                c.placed(0, place, None);
            }
        }
        let p = &c.population()[0];
        assert_eq!(p.hot.len(), HOT_SPOTS);
        assert!(p.hot[..10].iter().all(|&cell| cell % 7 == 6), "{:?}", p.hot);
        // every place is re-used (touched 2 to 8 times), all in placement cells 0 and 1 (cells
        // below 512); the 10 not among the hottest are counted there
        let counted: Vec<[u32; 2]> = p.cells[..2].to_vec();
        assert_eq!(counted[0][1] + counted[1][1], 10);
        assert!(counted.iter().all(|c| c[0] == 0) && p.cells[2..].iter().all(|c| c == &[0, 0]));
    }
}
