//! The thread walker: one walk of a thread's state diagram, a request per step, in model time
//! (the first part of the generation algorithm, [`super`]). The hot loop of generation.

use std::collections::VecDeque;

use super::super::sample::{pick, Prng};
use super::super::used::Used;
use super::runtime::{Ready, ThreadRt};
use crate::model::{Model, Sizes, Stats, Thread};

/// Draws of a reuse depth before a reuse gives up and places its request afresh.
const REUSE_DRAWS: usize = 8;
/// Stack positions below the drawn depth searched for a block in the chosen state.
const REUSE_PROBES: u64 = 16;
/// Tries at placing a new request on an unused offset before accepting a used one.
const NEW_OFFSET_TRIES: usize = 8;

/// One request in model time.
#[derive(Clone, Copy)]
pub(super) struct Request {
    pub u: f64,
    pub offset: u64,
    pub size: u32,
    pub op: u8,
    pub volume: u32,
    /// Top-level state it was placed in (for the reuse extension; fits the struct's padding).
    top: u32,
}

/// The `count` requests of one walk of `thread` (a whole thread, or a segment of a long one),
/// in model time.
pub(super) fn walk(model: &Model, thread: &Thread, seed: u64, count: u64, reuse: bool) -> Vec<Request> {
    let rt = ThreadRt::new(model, thread, reuse);
    let mut st = ThreadState::new(&rt, model, thread, seed, count);
    while st.left > 0 {
        st.next(&rt);
    }
    st.out
}

/// Where a thread is: its leaf, its volumes' previous ends, its recent requests.
struct ThreadState {
    used: Used,
    rng: Prng,
    path: Vec<usize>,
    /// The most recent request ends of each volume, newest last.
    ends: Vec<VecDeque<Head>>,
    /// When reuse is on: the LRU stack of the blocks requests started in, and those requests.
    reuse: Option<ReuseState>,
    /// The requests generated, in order.
    out: Vec<Request>,
    u: f64,
    left: u64,
}

/// Where a recent request ended, and (for the reuse stack) when it was issued and the block it
/// started in.
#[derive(Clone, Copy)]
struct Head {
    end: u64,
    time: usize,
    block: u64,
}

/// The reuse extension's LRU stack; its times index the thread's requests (`out`).
struct ReuseState {
    stack: crate::analyze::lru_stack::GenStack,
}

/// Where a request that follows an earlier one goes.
#[derive(Default)]
struct Follow {
    /// (volume, offset); `None`: the request is placed afresh in its leaf.
    placed: Option<(u32, u64)>,
    /// How many heads back on the volume is the one it follows (used up by it).
    consumed: Option<usize>,
    /// The earlier request whose block this one starts in again, when known.
    retouch: Option<usize>,
}

/// The offsets a new request may start at in its leaf: `first + alignment × k`, k ≤ `room`.
#[derive(Clone, Copy)]
struct Aligned {
    first: u64,
    alignment: u64,
    room: u64,
}

impl Aligned {
    #[inline]
    fn draw(self, rng: &mut Prng) -> u64 {
        self.first + self.alignment * rng.below(self.room + 1)
    }
}

/// 4 KiB blocks an aligned request of these sizes covers on average, rounded up.
fn mean_blocks(sizes: &Sizes) -> u64 {
    let mean: f64 = sizes
        .bytes
        .iter()
        .zip(&sizes.p)
        .map(|(&b, &p)| p * u64::from(b).div_ceil(4096).max(1) as f64)
        .sum();
    (mean.ceil() as u64).max(1)
}

/// The end `depth` requests back on a volume, if there is one.
#[inline]
fn head(ends: &VecDeque<Head>, depth: usize) -> Option<u64> {
    (depth >= 1 && depth <= ends.len()).then(|| ends[ends.len() - depth].end)
}

/// The `depth`-th most recent head inside the state `[start, end)` and how far back it is:
/// continuations and near requests stay where the state diagram put them, so streams cannot
/// drift off its map (a depth past the heads the state has takes its oldest).
#[inline]
fn head_in(
    ends: &VecDeque<Head>,
    start: u64,
    end: u64,
    depth: usize,
    skip_latest: bool,
) -> Option<(usize, u64)> {
    let mut found = None;
    let mut count = 0;
    for (i, h) in ends.iter().enumerate().rev() {
        let at = ends.len() - i;
        if h.end >= start && h.end < end && !(skip_latest && at == 1) {
            found = Some((at, h.end));
            count += 1;
            if count >= depth {
                break;
            }
        }
    }
    found
}

impl ThreadState {
    /// A thread about to make `count` requests, at a random point of its first gap and in a
    /// state drawn by entry probabilities.
    fn new(rt: &ThreadRt, model: &Model, thread: &Thread, seed: u64, count: u64) -> Self {
        let mut st = ThreadState {
            used: Used::new(count * mean_blocks(&thread.defaults.sizes)),
            rng: Prng::new(seed),
            path: Vec::new(),
            ends: vec![VecDeque::new(); model.volumes.len()],
            reuse: rt.reuse.as_ref().map(|_| ReuseState {
                stack: crate::analyze::lru_stack::GenStack::new(usize::try_from(count).unwrap_or(0)),
            }),
            out: Vec::with_capacity(usize::try_from(count).unwrap_or(0)),
            u: 0.0,
            left: count,
        };
        // start anywhere in the first gap, so threads do not all begin at 0
        st.u = rt.defaults.gap.draw(&mut st.rng) * st.rng.f64();
        st.enter(rt, 0);
        st
    }

    /// Walks down from `level` by entry probabilities, replacing the path below it.
    fn enter(&mut self, rt: &ThreadRt, level: usize) {
        self.path.truncate(level);
        let mut chain = rt.chain_at(&self.path);
        loop {
            let s = chain.initial.draw(&mut self.rng);
            self.path.push(s);
            match chain.children[s].as_ref() {
                Some(c) => chain = c,
                None => break,
            }
        }
    }

    /// The path to the leaf holding `offset` of `volume`.
    fn relocate(&mut self, rt: &ThreadRt, volume: u32, offset: u64) {
        // most placements (sequential ones above all) stay in the current leaf
        let (leaf, parents) = self.path.split_last().expect("a path reaches a leaf");
        let (v, start, end) = rt.chain_at(parents).states[*leaf];
        if v == volume && (start..end).contains(&offset) {
            return;
        }
        self.path.clear();
        let mut c = &rt.root;
        loop {
            let s = c.locate(volume, offset);
            self.path.push(s);
            match c.children[s].as_ref() {
                Some(child) => c = child,
                None => break,
            }
        }
    }

    /// Draws the next move and returns the stats of the edge that decided it.
    fn step<'r>(&mut self, rt: &'r ThreadRt) -> &'r Ready {
        let depth = self.path.len();
        for level in 0..depth {
            let chain = rt.chain_at(&self.path[..level]);
            let s = self.path[level];
            let row = &chain.edges[s];
            if row.to.is_empty() {
                self.enter(rt, level);
                return &rt.defaults;
            }
            let e = row.pick.draw(&mut self.rng);
            let (to, ready) = (row.to[e], &row.ready[e]);
            if to != s || chain.children[s].is_none() || level + 1 == depth {
                if to != s {
                    self.path.truncate(level);
                    self.path.push(to);
                    if chain.children[to].is_some() {
                        self.enter(rt, level + 1);
                    }
                }
                return ready.as_ref().unwrap_or(&rt.defaults);
            }
        }
        &rt.defaults
    }

    /// Generates the next request into `out`.
    #[inline]
    fn next(&mut self, rt: &ThreadRt) {
        let ready = self.step(rt);
        let mut size = ready.sizes.draw(&mut self.rng);
        let kind = self.rng.f64();
        let leaf = rt.chain_at(&self.path[..self.path.len() - 1]).states[self.path[self.path.len() - 1]];
        let (volume, start, end) = leaf;
        let st = &ready.stats;
        // aligned to the volume, not to the state's start (state bounds are arbitrary)
        let first = start.div_ceil(rt.alignment) * rt.alignment;
        let aligned = Aligned {
            first,
            alignment: rt.alignment,
            room: end.saturating_sub(first).saturating_sub(u64::from(size)) / rt.alignment,
        };
        // A request the model places at random gets its first candidate now, so the filter's
        // line for it loads from memory while the op and the gap are drawn.
        let candidate = (kind >= st.sequential + st.continuation + st.near + st.reuse).then(|| {
            let offset = aligned.draw(&mut self.rng);
            self.used.preload(volume, offset);
            offset
        });
        let op = ready.ops.draw(&mut self.rng) as u8;
        let gap = ready.gap.draw(&mut self.rng);
        let follow = self.follow(rt, st, kind, leaf, &mut size);
        let (volume, offset) = match follow.placed {
            Some((v, off)) => {
                self.relocate(rt, v, off);
                (v, off)
            }
            None => (volume, self.place_new(volume, aligned, size, candidate)),
        };
        self.record(volume, offset, size, op, gap, &follow);
    }

    /// Where the drawn `kind` puts the request against the edge's stats `st`: after its
    /// volume's previous request, continuing or near a recent run inside the leaf
    /// `(volume, start, end)`, or on a block the thread used before (taking that request's
    /// `size`). Nothing placed when the kind is a new request or it has nothing to follow.
    #[inline]
    fn follow(
        &mut self,
        rt: &ThreadRt,
        st: &Stats,
        kind: f64,
        leaf: (u32, u64, u64),
        size: &mut u32,
    ) -> Follow {
        let (volume, start, end) = leaf;
        let ends = &self.ends[volume as usize];
        let span = rt.spans[volume as usize];
        let mut follow = Follow::default();
        if kind < st.sequential {
            follow.placed = head(ends, 1).filter(|&e| e < span).map(|e| (volume, e));
            follow.consumed = follow.placed.map(|_| 1);
        } else if kind < st.sequential + st.continuation {
            if let Some(p) = &rt.continuation_depth {
                let depth = pick(p.iter().copied(), &mut self.rng) + 2;
                if let Some((at, e)) = head_in(ends, start, end, depth - 1, true) {
                    follow.placed = Some((volume, e));
                    follow.consumed = Some(at);
                }
            }
        } else if kind < st.sequential + st.continuation + st.near {
            if let Some((p, gaps)) = &rt.near {
                let depth = pick(p.iter().copied(), &mut self.rng) + 1;
                let hole = u64::from(gaps.draw(&mut self.rng));
                if let Some((at, e)) =
                    head_in(ends, start, end, depth, false).filter(|&(_, e)| e + hole < span)
                {
                    follow.placed = Some((volume, e + hole));
                    follow.consumed = Some(at);
                }
            }
        } else if kind < st.sequential + st.continuation + st.near + st.reuse {
            if let Some(at) = self.reused_block(rt) {
                let t = self.out[at];
                *size = t.size;
                follow.placed = Some((t.volume, t.offset));
                follow.retouch = Some(at);
            }
        }
        follow
    }

    /// The earlier request (its index in `out`) whose block a reuse takes. The thread's LRU
    /// stack gives the depth (so the miss-ratio curve follows); the block taken is the first at
    /// or below that depth that lies in the top-level state the diagram chose (so where
    /// requests land follows too). A depth past what the stack holds yet (early in a run) is
    /// drawn again: the trained depths were, at each reuse, at most the stack's size then.
    #[inline]
    fn reused_block(&mut self, rt: &ThreadRt) -> Option<usize> {
        let top = self.path[0];
        let (Some(r), Some(ReuseState { stack })) = (&rt.reuse, &self.reuse) else {
            return None;
        };
        let history = &self.out;
        let reach = stack.depth() as u64;
        let d = (0..REUSE_DRAWS)
            .map(|_| r.draw(&mut self.rng))
            .find(|&d| d <= reach)?;
        (d..=reach.min(d + REUSE_PROBES))
            .filter_map(|probe| stack.at_depth(probe))
            .find(|&at| history[at].top as usize == top)
    }

    /// An offset for a new request, preferring one whose blocks no request used yet.
    #[inline]
    fn place_new(&mut self, volume: u32, aligned: Aligned, size: u32, candidate: Option<u64>) -> u64 {
        let mut offset = candidate.unwrap_or_else(|| aligned.draw(&mut self.rng));
        for _ in 1..NEW_OFFSET_TRIES {
            if !self.used.any_used(volume, offset, size) {
                break;
            }
            offset = aligned.draw(&mut self.rng);
        }
        offset
    }

    /// Appends the request: its blocks become used, it becomes its volume's newest head (the
    /// head it followed is used up), it touches its block in the reuse stack, and the thread's
    /// model time moves on by `gap`.
    #[inline]
    fn record(&mut self, volume: u32, offset: u64, size: u32, op: u8, gap: f64, follow: &Follow) {
        self.used.insert_request(volume, offset, size);
        let time = self.out.len();
        let mut retouch = follow.retouch;
        let ends = &mut self.ends[volume as usize];
        if let Some(depth) = follow.consumed {
            let h = ends.remove(ends.len() - depth).expect("consumed heads exist");
            // continuing inside the block the followed request started in touches it again
            if h.block == offset / 4096 {
                retouch = retouch.or(Some(h.time));
            }
        }
        if ends.len() == crate::model::HEADS {
            ends.pop_front();
        }
        ends.push_back(Head {
            end: offset + u64::from(size),
            time,
            block: offset / 4096,
        });
        if let Some(state) = &mut self.reuse {
            state.stack.push(retouch);
        }
        self.u += gap;
        self.left -= 1;
        let top = u32::try_from(self.path[0]).unwrap_or(u32::MAX);
        self.out.push(Request {
            u: self.u,
            offset,
            size,
            op,
            volume,
            top,
        });
    }
}
