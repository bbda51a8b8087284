//! The reuse extension while generating: which earlier request a re-use repeats.
//!
//! ## Algorithm
//! Requests are kept on one LRU stack per top-level state and class (op × size class, as
//! training keeps them); a request touched again moves to the stack of its new class. A re-use
//! by an op draws the class it re-uses (by that op's shares), a depth from that class's
//! histogram (a quarter-octave bucket, then log-uniform inside it), and repeats the request at
//! that depth of that class's stack in the top-level state the walk is in. A depth past what
//! the stack holds yet (early in a run) is drawn again from the class's histogram cut at the
//! stack's size; only a class with nothing there to pick draws another class, and after
//! [`REUSE_DRAWS`] draws the request is placed afresh. Version 1 models (one histogram of
//! start-block depths) use one stack for all requests. Training undid the cut that the
//! stacks' sizes made to the depths it saw, so this makes the same cut again, at the
//! generator's own sizes, in the class drawn: drawing another class instead moved re-uses
//! from the classes re-used deep (requests touched once) to those re-used soon (docs/model.md).
//!
//! Re-use by recency alone forgets popularity: a block re-read a thousand times is, to a
//! stack, no more likely to come back than one re-read twice, so the synthetic trace's hottest
//! blocks take a small share where the trace's took a quarter, and caches that count touches
//! (LFU, ARC) or admit only what comes back (a disk's track buffer) see a different workload.
//! So a share of each class's re-uses (fitted in training) picks by frequency instead: a rank
//! from the class's histogram of ranks by touches, and the request of the class (in the
//! top-level state) touched that often (requests of equal count at random). With popularity
//! drawn from the counts so far, a block hot early stays hot, as under an independent-reference
//! workload.
//!
//! ## Complexity
//! O(log n) a request (a Fenwick tree per stack), 12 bytes a request.
//!
//! ## References
//! Thiébaut, Wolf & Stone, "Synthetic traces for trace-driven simulation of cache memories"
//! (1992): generating by LRU stack depth.

use super::super::sample::{Alias, BucketSampler, Prng};
use crate::analyze::frequency_ranks::CountRanks;
use crate::analyze::lru_stack::GenStack;
use crate::model::{request_class, Population, Reuse, HOT_CELLS, PLACEMENT_CELLS, REQUEST_CLASSES};

/// Draws of a reuse depth before a reuse gives up and places its request afresh.
pub const REUSE_DRAWS: usize = 8;

/// One op's re-use classes: which to re-use, and each one's stack and samplers.
struct OpClasses {
    pick: Alias,
    classes: Vec<ClassRt>,
}

/// One class made ready to sample from.
struct ClassRt {
    stack: usize,
    depths: BucketSampler,
    /// share of its re-uses by frequency, and their ranks
    by_rank: f64,
    ranks: BucketSampler,
}

/// A thread's reuse extension made ready to sample from.
pub(super) struct ReuseRt {
    per_op: [Option<OpClasses>; 2],
    /// One stack per top-level state and request class (version 2), or one for all (version 1).
    classed: bool,
    /// Top-level states (stack groups) of a classed walk.
    groups: usize,
    /// Share of fresh placements kept past the trained length.
    pub tail_fresh: f64,
    /// Some class re-uses by frequency.
    by_rank: bool,
    /// Per top-level state, the trace's population (empty: the edges decide alone).
    pub population: Vec<Population>,
}

impl ReuseRt {
    pub fn new(r: &Reuse, groups: usize) -> Self {
        let classed = !r.classes.is_empty();
        let per_op = [0u8, 1].map(|op| {
            if !classed {
                // version 1: both ops re-use from the one stack by the one histogram
                return Some(OpClasses {
                    pick: Alias::new(&[1.0]),
                    classes: vec![ClassRt {
                        stack: 0,
                        depths: BucketSampler::from_buckets(&r.buckets),
                        by_rank: 0.0,
                        ranks: BucketSampler::from_buckets(&[]),
                    }],
                });
            }
            let mine: Vec<_> = r.classes.iter().filter(|c| c.op == op).collect();
            (!mine.is_empty()).then(|| OpClasses {
                pick: Alias::new(&mine.iter().map(|c| c.p).collect::<Vec<_>>()),
                classes: mine
                    .iter()
                    .map(|c| ClassRt {
                        stack: usize::from(request_class(c.last_op, c.max_size, c.again)),
                        depths: BucketSampler::from_buckets(&c.buckets),
                        by_rank: c.rank_share,
                        ranks: BucketSampler::from_buckets(&c.ranks),
                    })
                    .collect(),
            })
        });
        Self {
            per_op,
            classed,
            groups: if classed { groups.max(1) } else { 1 },
            tail_fresh: r.tail_fresh.unwrap_or(1.0),
            by_rank: classed && r.classes.iter().any(|c| c.rank_share > 0.0),
            population: if classed { r.population.clone() } else { Vec::new() },
        }
    }

    fn stacks(&self) -> usize {
        if self.classed {
            REQUEST_CLASSES * self.groups
        } else {
            1
        }
    }

    /// The stack of a request of `op` and `size` in top-level state `group`.
    #[inline]
    fn stack_of(&self, op: u8, size: u32, again: bool, group: usize) -> usize {
        if self.classed {
            group * REQUEST_CLASSES + usize::from(request_class(op, size, again))
        } else {
            0
        }
    }

    /// The first stack of top-level state `group`.
    #[inline]
    fn group_base(&self, group: usize) -> usize {
        if self.classed {
            group * REQUEST_CLASSES
        } else {
            0
        }
    }
}

/// The stacks of one walk.
pub(super) struct ReuseState {
    /// Made when first used (most states' classes stay empty).
    stacks: Vec<Option<GenStack>>,
    /// Per stack: the request (its index in the walk) of each of its touch times.
    requests: Vec<Vec<u32>>,
    /// Per request: its stack and its touch time there.
    slot: Vec<(u32, u32)>,
    /// With re-use by frequency: per stack, its requests' ranks by touches and, per touch
    /// count, the requests touched that often — only those touched twice or more, as
    /// training ranks them.
    ranks: Vec<(CountRanks, Vec<Vec<u32>>)>,
    /// Per request: its touches and its place among the requests of that count (if ranked).
    counted: Vec<(u32, u32)>,
}

impl ReuseState {
    pub fn new(rt: &ReuseRt, count: u64) -> Self {
        let n = usize::try_from(count).unwrap_or(0);
        let k = rt.stacks();
        Self {
            stacks: (0..k).map(|_| None).collect(),
            requests: (0..k).map(|_| Vec::new()).collect(),
            slot: Vec::with_capacity(n),
            ranks: if rt.by_rank {
                (0..k).map(|_| Default::default()).collect()
            } else {
                Vec::new()
            },
            counted: Vec::new(),
        }
    }

    /// The request of stack `s` at `rank` by touches, if it has that many.
    fn at_rank(&self, s: usize, rank: u64) -> Option<usize> {
        let (ranks, of_count) = self.ranks.get(s)?;
        let (count, place) = ranks.at_rank(rank)?;
        of_count
            .get(count as usize)
            .and_then(|requests| requests.get(place as usize))
            .map(|&r| r as usize)
    }

    /// The earlier request (its index in the walk) a re-use by `op` in top-level state `group`
    /// repeats, if a depth is found within what the stacks hold.
    #[inline]
    pub fn pick(&self, rt: &ReuseRt, op: u8, group: usize, rng: &mut Prng) -> Option<usize> {
        let classes = rt.per_op[usize::from(op.min(1))].as_ref()?;
        let base = rt.group_base(group);
        let mut class = &classes.classes[classes.pick.draw(rng)];
        for _ in 0..REUSE_DRAWS {
            let s = base + class.stack;
            if class.by_rank > 0.0 && rng.f64() < class.by_rank {
                if let Some(at) = self.at_rank(s, class.ranks.draw(rng)) {
                    return Some(at);
                }
                // nothing ranked at that rank here yet: by depth in the same class, if it
                // re-uses by depth at all (all by rank: another class)
                if class.depths.is_empty() {
                    class = &classes.classes[classes.pick.draw(rng)];
                    continue;
                }
            }
            let d = class.depths.draw(rng);
            if let Some(st) = self.stacks[s].as_ref() {
                // a depth the stack does not hold yet: drawn again below its size, in this class
                let held = st.depth() as u64;
                let d = if d > held {
                    class.depths.draw_at_most(held, rng)
                } else {
                    Some(d)
                };
                if let Some(at) = d.and_then(|d| st.at_depth(d)) {
                    return Some(self.requests[s][at] as usize);
                }
            }
            // nothing of this class here yet: another class
            class = &classes.classes[classes.pick.draw(rng)];
        }
        None
    }

    /// The next request of the walk, of `op` and `size` in top-level state `group`, re-touching
    /// request `retouch` if it repeats one.
    #[inline]
    pub fn record(&mut self, rt: &ReuseRt, op: u8, size: u32, group: usize, retouch: Option<usize>) {
        let s = rt.stack_of(op, size, retouch.is_some(), group);
        if !self.ranks.is_empty() {
            self.count(s, retouch);
        }
        if let Some(p) = retouch {
            let (stack, time) = self.slot[p];
            if let Some(st) = self.stacks[stack as usize].as_mut() {
                st.forget(time as usize);
            }
        }
        let time = self.stacks[s].get_or_insert_with(|| GenStack::new(0)).push(None);
        debug_assert_eq!(time, self.requests[s].len());
        self.requests[s].push(u32::try_from(self.slot.len()).unwrap_or(u32::MAX));
        self.slot
            .push((s as u32, u32::try_from(time).unwrap_or(u32::MAX)));
    }

    /// The next request of the walk is on no stack (a flush): it keeps its index, so the
    /// requests after it keep theirs.
    pub fn skip(&mut self) {
        self.slot.push((u32::MAX, u32::MAX));
        if !self.ranks.is_empty() {
            self.counted.push((0, 0));
        }
    }

    /// The next request (of stack `s`) is one touch more of `retouch`'s, or a first: it takes
    /// that request's place among the ranks, one count up, in its own stack's.
    fn count(&mut self, s: usize, retouch: Option<usize>) {
        let me = self.counted.len() as u32;
        let before = retouch.map_or(0, |p| {
            let (count, place) = self.counted[p];
            if count >= 2 {
                let (ranks, of_count) = &mut self.ranks[self.slot[p].0 as usize];
                ranks.remove(count);
                let requests = &mut of_count[count as usize];
                requests.swap_remove(place as usize);
                if let Some(&moved) = requests.get(place as usize) {
                    self.counted[moved as usize].1 = place;
                }
            }
            count
        });
        let count = before + 1;
        if count < 2 {
            self.counted.push((count, 0));
            return;
        }
        let (ranks, of_count) = &mut self.ranks[s];
        ranks.add(count);
        let c = count as usize;
        if of_count.len() <= c {
            of_count.resize_with(c + 1, Vec::new);
        }
        self.counted.push((count, of_count[c].len() as u32));
        of_count[c].push(me);
    }
}

/// The trace's requests placed afresh, per top-level state, drawn without replacement
/// ([`Reuse::population`]): each state's urn holds every such request as many times as the
/// trace placed or re-used it, and one token per re-use of a request placed otherwise, in a
/// random order. The walk's fresh placements and re-uses in a state take the urn's next token
/// in turn: a request not yet drawn is placed afresh, one drawn before is re-used (its latest
/// request repeated), and a re-use of a request placed otherwise is left to the stacks. So the
/// walk finds the hot set as early, re-uses each request as often and places as many afresh
/// as an independent-reference stream with the trace's popularity would; past the urn's end the
/// edges and stacks decide alone.
///
/// Memory: 4 bytes a token and a request (made only for a model that keeps a population).
pub(super) struct Urns {
    /// per top-level state: its tokens (ids of requests of the population, or [`OTHER`])
    tokens: Vec<Vec<u32>>,
    /// per top-level state: its next token
    next: Vec<usize>,
    /// per request of the population: the walk's latest request of it ([`NONE`] before)
    latest: Vec<u32>,
    /// per request of the walk: the request of the population it is ([`NONE`] for others)
    of_request: Vec<u32>,
    /// per request of the population: it is re-used (touched twice or more)
    reused: Vec<bool>,
    /// per top-level state: the id after its requests' (its hottest are the last ids) and the
    /// cells its hottest lie in ([`Population::hot`])
    hot: Vec<(u32, Vec<u16>)>,
    /// per top-level state: samplers of the cells its other requests lie in, of those not
    /// re-used and of those re-used ([`Population::cells`]; `None`: none of them)
    cells: Vec<[Option<Alias>; 2]>,
}

/// A token for a re-use of a request placed otherwise (following a run).
const OTHER: u32 = u32::MAX;
/// No request.
const NONE: u32 = u32::MAX;

/// What a state's urn says of its next fresh placement or re-use.
#[derive(Clone, Copy)]
pub(super) enum Drawn {
    /// Place afresh: a request of the population not drawn before.
    Fresh(u32),
    /// Repeat this request of the walk.
    Again(usize),
    /// A re-use the stacks choose.
    Stacks,
}

impl Urns {
    /// The urns of a walk of `count` requests starting at request `first` of a thread trained
    /// on `trained`: each state's urn is shuffled and the walk starts at the same share of it
    /// (a segment of a long thread, generated apart, starts where its share of the trace did;
    /// what earlier segments drew it does not know).
    pub fn new(population: &[Population], rng: &mut Prng, first: u64, trained: u64, count: u64) -> Self {
        let mut id = 0u32;
        let mut reused = Vec::new();
        let mut next = Vec::with_capacity(population.len());
        let mut hot = Vec::with_capacity(population.len());
        let mut cells = Vec::with_capacity(population.len());
        let tokens: Vec<Vec<u32>> = population
            .iter()
            .map(|p| {
                let mut tokens = Vec::new();
                for &[touches, requests] in &p.touches {
                    for _ in 0..requests {
                        tokens.extend(std::iter::repeat_n(id, touches as usize));
                        reused.push(touches >= 2);
                        id += 1;
                    }
                }
                // (touches rise with the ids, so the state's hottest are its last)
                hot.push((id, p.hot.clone()));
                cells.push([0, 1].map(|k| {
                    let counts: Vec<f64> = p.cells.iter().map(|c| f64::from(c[k])).collect();
                    (counts.iter().sum::<f64>() > 0.0).then(|| Alias::new(&counts))
                }));
                tokens.extend(std::iter::repeat_n(OTHER, p.other as usize));
                for i in (1..tokens.len()).rev() {
                    tokens.swap(i, rng.below(i as u64 + 1) as usize);
                }
                let start = u128::from(first) * tokens.len() as u128 / u128::from(trained.max(1));
                next.push(usize::try_from(start).unwrap_or(usize::MAX));
                tokens
            })
            .collect();
        Self {
            tokens,
            next,
            latest: vec![NONE; id as usize],
            of_request: Vec::with_capacity(usize::try_from(count).unwrap_or(0)),
            reused,
            hot,
            cells,
        }
    }

    /// Where top-level state `top`'s request `id`, placed afresh now, lies: a cell of the
    /// state and how many cells it is cut into (`None`: the state keeps no cells).
    #[inline]
    pub fn cell(&self, top: usize, id: u32, rng: &mut Prng) -> Option<(u64, u64)> {
        if let Some(cell) = self.hot_cell(top, id) {
            return Some((u64::from(cell), HOT_CELLS));
        }
        let [once, again] = self.cells.get(top)?;
        let (first, other) = if self.reused(id) {
            (again, once)
        } else {
            (once, again)
        };
        let alias = first.as_ref().or(other.as_ref())?;
        Some((alias.draw(rng) as u64, PLACEMENT_CELLS as u64))
    }

    /// The cell of top-level state `top` that its request `id` lies in, when it is one of the
    /// state's hottest.
    #[inline]
    pub fn hot_cell(&self, top: usize, id: u32) -> Option<u16> {
        let (end, cells) = self.hot.get(top)?;
        let rank = end.checked_sub(id + 1)?;
        cells.get(rank as usize).copied()
    }

    /// Whether request `id` of the population is re-used (placed afresh, then touched again).
    #[inline]
    pub fn reused(&self, id: u32) -> bool {
        self.reused.get(id as usize).copied().unwrap_or(false)
    }

    /// The next token of top-level state `top`'s urn (`None` past its end).
    #[inline]
    pub fn draw(&mut self, top: usize) -> Option<Drawn> {
        let next = self.next.get_mut(top)?;
        let &token = self.tokens[top].get(*next)?;
        *next += 1;
        Some(if token == OTHER {
            Drawn::Stacks
        } else {
            match self.latest[token as usize] {
                NONE => Drawn::Fresh(token),
                at => Drawn::Again(at as usize),
            }
        })
    }

    /// The walk's next request: placed afresh for `fresh`, or repeating `retouch`.
    #[inline]
    pub fn record(&mut self, fresh: Option<u32>, retouch: Option<usize>) {
        let id = fresh
            .or_else(|| retouch.map(|at| self.of_request[at]))
            .unwrap_or(NONE);
        if id != NONE {
            self.latest[id as usize] = self.of_request.len() as u32;
        }
        self.of_request.push(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hottest_requests_find_their_cells() {
        let population = [
            // ids 0-2 touched once, 3-4 twice, 5 five times: the hottest last
            Population {
                touches: vec![[1, 3], [2, 2], [5, 1]],
                other: 2,
                hot: vec![7, 9, 4],
                cells: Vec::new(),
            },
            // id 6
            Population {
                touches: vec![[2, 1]],
                other: 0,
                hot: vec![3],
                cells: Vec::new(),
            },
        ];
        let urns = Urns::new(&population, &mut Prng::new(1), 0, 100, 100);
        let cells: Vec<Option<u16>> = (0..6).map(|id| urns.hot_cell(0, id)).collect();
        assert_eq!(cells, [None, None, None, Some(4), Some(9), Some(7)]);
        assert_eq!(urns.hot_cell(1, 6), Some(3));
        assert_eq!(urns.hot_cell(2, 6), None, "no such state");
        assert!(urns.reused(3) && !urns.reused(2));
    }

    #[test]
    fn the_others_are_placed_by_their_cells() {
        // ids 0-1 touched once (placed in cell 5), 2-3 three times: 3 the hottest (its cell
        // 11 of 65,536), 2 re-used but not among the hottest (cell 9)
        let mut cells = vec![[0, 0]; PLACEMENT_CELLS];
        cells[5] = [2, 0];
        cells[9] = [0, 1];
        let population = [Population {
            touches: vec![[1, 2], [3, 2]],
            other: 0,
            hot: vec![11],
            cells,
        }];
        let urns = Urns::new(&population, &mut Prng::new(1), 0, 100, 100);
        let mut rng = Prng::new(2);
        let cell = |id| urns.cell(0, id, &mut Prng::new(id.into()));
        assert_eq!(cell(0), Some((5, PLACEMENT_CELLS as u64)));
        assert_eq!(cell(1), Some((5, PLACEMENT_CELLS as u64)));
        assert_eq!(cell(2), Some((9, PLACEMENT_CELLS as u64)));
        assert_eq!(cell(3), Some((11, HOT_CELLS)));
        assert_eq!(urns.cell(1, 0, &mut rng), None, "no such state");
        // a state keeping no cells of one kind places them by the other's
        let mut only_once = population[0].clone();
        only_once.cells[9] = [0, 0];
        let urns = Urns::new(&[only_once], &mut Prng::new(1), 0, 100, 100);
        assert_eq!(urns.cell(0, 2, &mut rng), Some((5, PLACEMENT_CELLS as u64)));
    }
}
