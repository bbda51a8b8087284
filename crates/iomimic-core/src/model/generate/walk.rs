//! The thread walker: one walk of a thread's state diagram, a request per step, in model time
//! (the first part of the generation algorithm, [`super`]). The hot loop of generation.

use std::collections::VecDeque;

use super::super::sample::{log_uniform, pick_at, Prng};
use super::super::used::Used;
use super::columns::Slots;
use super::reuse::{Drawn, ReuseState, Urns};
use super::runtime::{ChainRt, Ready, RunRt, Stay, Steer, ThreadRt};
use crate::error::Result;
use crate::model::{Chain, Model, Runs, Sizes, Stats, Thread, PROFILE_SEGMENTS, RUN_SLOTS};
use crate::progress::Progress;
use crate::trace::Op;

/// Tries at placing a new request on an unused offset before accepting a used one.
const NEW_OFFSET_TRIES: usize = 8;

/// The golden ratio's fractional part: steps by it spread over `[0, 1)` as evenly as any.
const GOLDEN: f64 = 0.618_033_988_749_894_9;

/// One request in model time.
#[derive(Clone, Copy)]
struct Request {
    u: f64,
    offset: u64,
    size: u32,
    op: u8,
    volume: u32,
}

/// The `count` requests of one walk of `thread` (a whole thread, or a segment of a long one
/// that starts `first` requests into it), written into `out` (times as model time, f64 bits;
/// `timed` false: the times are given, the walk draws no gaps and leaves them as they are);
/// each request counted in `progress`, which can stop the walk with `Interrupted`. Returns the
/// last request's model time (0 without requests; untimed, only where the walk started).
pub(super) fn walk(
    model: &Model,
    thread: &Thread,
    seed: u64,
    (first, count): (u64, u64),
    (reuse, timed): (bool, bool),
    progress: &Progress,
    out: Slots<'_>,
) -> Result<f64> {
    let rt = ThreadRt::new(model, thread, reuse);
    let mut st = ThreadState::new(&rt, model, thread, seed, count, out);
    st.timed = timed;
    st.index = first;
    if let Some(steer) = &rt.steer {
        // a later segment starts where the trace was by then
        let at = rt.part_at(first);
        for (t, n) in st.occupied.iter_mut().enumerate() {
            *n = steer.target(t, at).map_or(0.0, |x| x.0);
        }
    }
    if let Some(r) = rt.reuse.as_ref().filter(|r| !r.population.is_empty()) {
        st.urns = Some(Urns::new(&r.population, &mut st.rng, first, rt.trained, count));
    }
    if let Some(runs) = &rt.runs {
        // the trace's runs in order are the thread's start: a later segment (generated apart)
        // draws its runs, as its restarts could not name the fresh runs of the segments before
        if first > 0 {
            for (w, r) in st.runs.iter_mut().zip(runs) {
                w.made = r.as_ref().map_or(0, |r| r.sequence.len());
            }
        }
    }
    for i in 0..count as usize {
        st.next(&rt);
        progress.tick(i)?;
    }
    st.commit(&rt);
    progress.ticked(count as usize);
    Ok(if count > 0 { st.u } else { 0.0 })
}

/// Where a thread is: its leaf, its volumes' previous ends, its recent requests.
struct ThreadState<'o> {
    used: Used,
    rng: Prng,
    path: Vec<usize>,
    /// The most recent request ends of each volume, newest last.
    ends: Vec<VecDeque<u64>>,
    /// When reuse is on: the LRU stacks of the walk's requests.
    reuse: Option<ReuseState>,
    /// The requests generated, in order, and how many so far.
    out: Slots<'o>,
    made: usize,
    u: f64,
    left: u64,
    /// The thread's requests before this one (counting earlier segments).
    index: u64,
    /// The top-level state the walk is visiting and how many more requests its stay makes
    /// there (when the state has stays).
    visit: (usize, u64),
    /// Per top-level state, where its next stay is drawn in `[0, 1)`: a golden-ratio sequence,
    /// so each length's share of the visits holds over any stretch of them, not only on
    /// average (a few long visits decide a bursty trace's op and size shares).
    stay_at: Vec<f64>,
    /// With a population: the urns the walk's placements in each top-level state draw from.
    urns: Option<Urns>,
    /// With a steer: the requests made in each top-level state (counting earlier segments'),
    /// and room for a leave's weights.
    occupied: Vec<f64>,
    weights: Vec<f64>,
    /// Per top-level state and class slot with runs, the run in progress and the runs' starts.
    runs: Vec<RunWalk>,
    /// The previous request, made but not yet recorded ([`Self::commit`]).
    pending: Option<Pending>,
    /// Whether the walk draws gaps and writes its times (else the times are given).
    timed: bool,
}

/// A request made but not yet appended to the walk's memory: its blocks, heads, stacks and
/// place in the output are written while the next request's filter line loads.
#[derive(Clone, Copy)]
struct Pending {
    request: Request,
    /// How many heads back on the volume is the one it followed (used up by it).
    consumed: Option<usize>,
    /// The earlier request it repeats, when it is a re-use.
    retouch: Option<usize>,
    /// The top-level state it lies in.
    group: usize,
}

/// Where one class's runs in a top-level state stand.
#[derive(Default, Clone)]
struct RunWalk {
    /// Where the run in progress goes on, and how many more requests it makes.
    next: u64,
    left: u64,
    /// Where the class's runs started (each once): a re-scan starts at one of them.
    starts: Vec<u64>,
    /// Where the next fresh run and the next restart's length are drawn in `[0, 1)`
    /// (golden-ratio sequences, as stays').
    fresh_at: f64,
    restart_at: f64,
    /// Restarts owed: each new run adds the class's restart share, and a run restarts while a
    /// whole one is owed (error diffusion rather than a coin per run: with 50 runs a coin's
    /// count of fresh starts varies by a fifth, and with it how far the scans reach).
    owed: f64,
    /// Runs the walk started in the class: the first follow the trace's sequence.
    made: usize,
}

impl RunWalk {
    #[inline]
    fn restarts_due(&mut self, share: f64) -> bool {
        self.owed += share;
        let due = self.owed >= 1.0;
        if due {
            self.owed -= 1.0;
        }
        due
    }
}

/// How the next request is to be placed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pick {
    Sequential,
    Continuation,
    Near,
    Reuse,
    New,
}

/// One draw of the walk's next move.
enum Move<'r> {
    /// An edge, with its stats if it has its own.
    Edge(Option<&'r Ready>),
    /// A state without edges, entered afresh by entry probabilities.
    Entered,
}

/// Where a request that follows an earlier one goes.
#[derive(Default)]
struct Follow {
    /// (volume, offset); `None`: the request is placed afresh in its leaf.
    placed: Option<(u32, u64)>,
    /// How many heads back on the volume is the one it follows (used up by it).
    consumed: Option<usize>,
    /// The earlier request this one repeats, when it is a re-use.
    retouch: Option<usize>,
}

/// The offsets a new request may start at in a range: `first + alignment × k`, k ≤ `room`.
#[derive(Clone, Copy)]
struct Aligned {
    first: u64,
    alignment: u64,
    room: u64,
}

impl Aligned {
    /// Aligned offsets (to the volume, not to the range's start: range bounds are arbitrary)
    /// where a request of `size` fits inside `[start, end)`.
    #[inline]
    fn within(start: u64, end: u64, alignment: u64, size: u32) -> Self {
        // shifts where the alignment is a power of two (two divisions a request showed in
        // profiles)
        let pow2 = alignment.is_power_of_two();
        let whole = |x: u64| {
            if pow2 {
                x >> alignment.trailing_zeros()
            } else {
                x / alignment
            }
        };
        let first = if pow2 {
            (whole(start) + u64::from(start & (alignment - 1) != 0)) * alignment
        } else {
            start.div_ceil(alignment) * alignment
        };
        Aligned {
            first,
            alignment,
            room: whole(end.saturating_sub(first).saturating_sub(u64::from(size))),
        }
    }

    #[inline]
    fn draw(self, rng: &mut Prng) -> u64 {
        self.first + self.alignment * rng.below(self.room + 1)
    }
}

/// Part `j` of `parts` equal parts of `[start, end)`.
#[inline]
fn part(start: u64, end: u64, j: u64, parts: u64) -> (u64, u64) {
    // in u64 where the product fits (a 128-bit division is a library call)
    let width = end - start;
    let at = |k: u64| match width.checked_mul(k) {
        Some(p) => start + p / parts,
        None => start + (u128::from(width) * u128::from(k) / u128::from(parts)) as u64,
    };
    (at(j), at(j + 1))
}

/// Cell `cell` of `cells` equal cells of a top-level state `(volume, start, end)`, widened
/// to hold a request of `size` where cells are narrower than it.
#[inline]
fn cell_range((_, start, end): (u32, u64, u64), cell: u64, cells: u64, size: u32) -> (u64, u64) {
    let (lo, hi) = part(start, end, cell, cells);
    let lo = lo.min(end.saturating_sub(u64::from(size))).max(start);
    (lo, hi.max(lo + u64::from(size)).min(end))
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

/// The largest request size any of the thread's stats can draw (a re-use repeats one of them).
fn largest_size(thread: &Thread) -> u32 {
    fn of_stats(s: &Stats) -> u32 {
        let sizes = std::iter::once(&s.sizes).chain(s.by_op.iter().map(|o| &o.sizes));
        sizes.flat_map(|z| z.bytes.iter().copied()).max().unwrap_or(0)
    }
    fn of_chain(c: &Chain) -> u32 {
        let edges = c
            .transitions
            .iter()
            .flatten()
            .filter_map(|e| e.stats.as_deref())
            .map(of_stats);
        let children = c
            .states
            .iter()
            .filter_map(|s| s.children.as_deref())
            .map(of_chain);
        edges.chain(children).max().unwrap_or(0)
    }
    let volumes = thread.volumes.iter().map(|v| of_stats(&v.stats));
    volumes
        .chain([of_stats(&thread.defaults), of_chain(&thread.chain)])
        .max()
        .unwrap_or(0)
}

/// The end `depth` requests back on a volume, if there is one.
#[inline]
fn head(ends: &VecDeque<u64>, depth: usize) -> Option<u64> {
    (depth >= 1 && depth <= ends.len()).then(|| ends[ends.len() - depth])
}

/// The `depth`-th most recent head inside the state `[start, end)` and how far back it is:
/// continuations and near requests stay where the state diagram put them, so streams cannot
/// drift off its map (a depth past the heads the state has takes its oldest).
#[inline]
fn head_in(
    ends: &VecDeque<u64>,
    start: u64,
    end: u64,
    depth: usize,
    skip_latest: bool,
) -> Option<(usize, u64)> {
    let mut found = None;
    let mut count = 0;
    for (i, &h) in ends.iter().enumerate().rev() {
        let at = ends.len() - i;
        if h >= start && h < end && !(skip_latest && at == 1) {
            found = Some((at, h));
            count += 1;
            if count >= depth {
                break;
            }
        }
    }
    found
}

impl<'o> ThreadState<'o> {
    /// A thread about to make `count` requests into `out`, at a random point of its first gap
    /// and in a state drawn by entry probabilities.
    fn new(rt: &ThreadRt, model: &Model, thread: &Thread, seed: u64, count: u64, out: Slots<'o>) -> Self {
        let mut st = ThreadState {
            used: Used::new(count * mean_blocks(&thread.defaults.sizes), largest_size(thread)),
            rng: Prng::new(seed),
            path: Vec::new(),
            ends: vec![VecDeque::new(); model.volumes.len()],
            reuse: rt.reuse.as_ref().map(|r| ReuseState::new(r, count)),
            out,
            made: 0,
            u: 0.0,
            left: count,
            index: 0,
            visit: (usize::MAX, 0),
            stay_at: Vec::new(),
            urns: None,
            occupied: Vec::new(),
            weights: Vec::new(),
            runs: Vec::new(),
            pending: None,
            timed: true,
        };
        // (drawn only when there are stays: a model without any generates as it did before)
        if rt.stays.is_some() {
            st.stay_at = (0..rt.root.states.len()).map(|_| st.rng.f64()).collect();
        }
        if rt.steer.is_some() {
            st.occupied = vec![0.0; rt.root.states.len()];
        }
        if let Some(runs) = &rt.runs {
            st.runs = vec![RunWalk::default(); runs.len()];
            for (w, r) in st.runs.iter_mut().zip(runs) {
                if r.is_some() {
                    (w.fresh_at, w.restart_at, w.owed) = (st.rng.f64(), st.rng.f64(), st.rng.f64());
                }
            }
        }
        // start anywhere in the first gap, so threads do not all begin at 0
        st.u = rt.defaults.gap.as_ref().map_or(0.0, |g| g.draw(&mut st.rng)) * st.rng.f64();
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

    /// Draws the next move and returns the stats of the edge that decided it, if it has any.
    /// A state without edges of its own (the trace left it only by moves of a level above,
    /// held only its last request, or was never visited) is entered afresh by its chain's entry
    /// probabilities, and the whole move is drawn again from the top: the request takes the
    /// stats of an edge where the walk now is, not its volume's or thread's, which are no
    /// place's in particular (a scan that reached such a state broke off there). The levels
    /// above draw twice on such a step; drawing again only from the re-entered level down was
    /// measured worse (docs/model.md, Generation). Once only, so the work stays bounded when
    /// entry leads to another state without edges. A top-level state with stays takes its
    /// self-loop while the visit's stay lasts and its other edges once it is over
    /// ([`Self::stay_or_leave`]); a request placed in another state (following a run there)
    /// ends the visit early.
    fn step<'r>(&mut self, rt: &'r ThreadRt) -> Option<&'r Ready> {
        match self.draw_move(rt) {
            Move::Edge(ready) => ready,
            Move::Entered => match self.draw_move(rt) {
                Move::Edge(ready) => ready,
                Move::Entered => None,
            },
        }
    }

    /// One draw down the levels (the top level's edge chosen by the stay, where the state has
    /// stays): an edge taken, or a state without edges entered afresh.
    fn draw_move<'r>(&mut self, rt: &'r ThreadRt) -> Move<'r> {
        let depth = self.path.len();
        for level in 0..depth {
            let chain = rt.chain_at(&self.path[..level]);
            let s = self.path[level];
            let row = &chain.edges[s];
            if row.to.is_empty() {
                self.enter(rt, level);
                return Move::Entered;
            }
            let e = match &rt.stays {
                Some(stays) if level == 0 => stays[s].as_ref().and_then(|stay| self.stay_or_leave(stay, s)),
                _ => None,
            }
            .unwrap_or_else(|| row.pick.draw(&mut self.rng));
            let e = match &rt.steer {
                Some(steer) if level == 0 && row.to[e] != s => self.steered(rt, steer, s, e),
                _ => e,
            };
            let (to, ready) = (row.to[e], &row.ready[e]);
            if to != s || chain.children[s].is_none() || level + 1 == depth {
                if to != s {
                    self.path.truncate(level);
                    self.path.push(to);
                    if chain.children[to].is_some() {
                        self.enter(rt, level + 1);
                    }
                }
                return Move::Edge(ready.as_ref());
            }
        }
        Move::Edge(None)
    }

    /// The walk leaves top-level state `s` (by edge `e`, drawn by the odds): where to, by the
    /// odds tilted towards the states the walk has made fewer requests in than the trace had by
    /// now, and away from those it made more in: by `e` for each mean stay behind or ahead (at
    /// most `e³` towards a state behind, down to `e⁻³⁰` away from one ahead: a state left often
    /// would otherwise be entered again and again). Past the trained length the odds
    /// decide. Out of line, as `visited`.
    #[inline(never)]
    fn steered(&mut self, rt: &ThreadRt, steer: &Steer, s: usize, e: usize) -> usize {
        let at = rt.part_at(self.index);
        if at >= PROFILE_SEGMENTS as f64 {
            return e;
        }
        let leaving = &steer.leaving[s];
        self.weights.clear();
        self.weights
            .extend(leaving.iter().map(|&(_, t, p)| match steer.target(t, at) {
                Some((target, stay)) => p * ((target - self.occupied[t]) / stay).clamp(-30.0, 3.0).exp(),
                None => p,
            }));
        let total: f64 = self.weights.iter().sum();
        if total <= 0.0 {
            return e;
        }
        leaving[pick_at(self.weights.iter().copied(), self.rng.f64() * total)].0
    }

    /// The edge a top-level state with stays takes: back to itself while the stay lasts, to
    /// another state by their odds once it is over (`None`: the row's odds decide). Out of
    /// line, as `visited`, so that the walk of a model without stays stays as compact as it was.
    #[inline(never)]
    fn stay_or_leave(&mut self, stay: &Stay, s: usize) -> Option<usize> {
        if self.visit.0 != s {
            return None;
        }
        if self.visit.1 > 0 {
            stay.itself
        } else {
            let (odds, edges) = stay.leave.as_ref()?;
            Some(edges[odds.draw(&mut self.rng)])
        }
    }

    /// A request made in the top-level state `top`: a visit goes on, or a new one starts with
    /// a stay drawn for it.
    #[inline(never)]
    fn visited(&mut self, stays: &[Option<Stay>], top: usize) {
        if self.visit.0 == top {
            self.visit.1 = self.visit.1.saturating_sub(1);
        } else {
            let length = match stays[top].as_ref() {
                Some(stay) => {
                    let at = &mut self.stay_at[top];
                    *at = (*at + GOLDEN).fract();
                    stay.lengths.draw_at(*at, &mut self.rng)
                }
                None => 1,
            };
            self.visit = (top, length - 1);
        }
    }

    /// The leaf the path ends in: its chain and index.
    #[inline]
    fn leaf<'r>(&self, rt: &'r ThreadRt) -> (&'r ChainRt, usize) {
        let (leaf, parents) = self.path.split_last().expect("a path reaches a leaf");
        (rt.chain_at(parents), *leaf)
    }

    /// Generates the next request into `out`.
    #[inline]
    fn next(&mut self, rt: &ThreadRt) {
        let edge = self.step(rt);
        let (chain, s) = self.leaf(rt);
        let leaf = chain.states[s];
        let (volume, start, end) = leaf;
        let ready = edge.unwrap_or_else(|| rt.fallback(volume));
        let op = ready.ops.draw(&mut self.rng) as u8;
        if op == Op::Flush as u8 {
            self.flush(rt, ready, volume);
            return;
        }
        let place = ready.placement(op);
        let mut size = place.sizes.draw(&mut self.rng);
        if let Some(runs) = &rt.runs {
            let at = self.path[0] * RUN_SLOTS + Runs::slot(op, size);
            if let Some(run) = &runs[at] {
                self.in_run(rt, run, at, ready, op);
                return;
            }
        }
        let kind = self.rng.f64();
        let mut pick = if kind < place.sequential {
            Pick::Sequential
        } else if kind < place.continuation {
            Pick::Continuation
        } else if kind < place.near {
            Pick::Near
        } else if kind < place.reuse {
            Pick::Reuse
        } else {
            Pick::New
        };
        if pick == Pick::New && self.index >= rt.trained {
            // past the trained length fresh placements thin out as the trace's did at its end
            if rt.reuse.as_ref().is_some_and(|r| self.rng.f64() >= r.tail_fresh) {
                pick = Pick::Reuse;
            }
        }
        // with a population, its urn decides a fresh placement or a re-use (and which)
        let drawn = match (&mut self.urns, pick) {
            (Some(urns), Pick::New | Pick::Reuse) => urns.draw(self.path[0]),
            _ => None,
        };
        match drawn {
            Some(Drawn::Fresh(_)) => pick = Pick::New,
            Some(Drawn::Again(_) | Drawn::Stacks) => pick = Pick::Reuse,
            None => {}
        }
        // the sub-range of the leaf a fresh request lands in, when the leaf keeps them; a
        // request of the population lands where the trace's of its kind (re-used later or
        // not) did, where the leaf tells them apart
        let cell = match (drawn, &self.urns) {
            (Some(Drawn::Fresh(id)), Some(urns)) => urns.cell(self.path[0], id, &mut self.rng),
            _ => None,
        };
        let (lo, hi) = match (&chain.fine[s], cell) {
            // a request of the population, placed in its cell of the state
            (_, Some((cell, cells))) => cell_range(rt.root.states[self.path[0]], cell, cells, size),
            (Some((alias, m)), None) => {
                let alias = match (drawn, &chain.fine_by_reuse[s], &self.urns) {
                    (Some(Drawn::Fresh(id)), Some(split), Some(urns)) => {
                        &split[usize::from(!urns.reused(id))]
                    }
                    _ => alias,
                };
                part(start, end, alias.draw(&mut self.rng) as u64, *m)
            }
            (None, None) => (start, end),
        };
        let aligned = Aligned::within(lo, hi, rt.alignment, size);
        // A request the model places at random gets its first candidate now, so the filter's
        // line for it loads from memory while the previous request is recorded (and the gap
        // drawn, when the walk draws gaps).
        let candidate = (pick == Pick::New).then(|| {
            let offset = aligned.draw(&mut self.rng);
            self.used.preload(volume, offset, size);
            offset
        });
        // the previous request is written down while that line loads: nothing above reads
        // what it changes (the filter, the heads, the stacks, the output), what follows does
        self.commit(rt);
        let gap = self.gap(rt, ready);
        let follow = match drawn {
            Some(Drawn::Again(at)) => self.repeat(at, &mut size),
            _ => self.follow(rt, op, pick, leaf, &mut size),
        };
        if let Some(urns) = &mut self.urns {
            let fresh = match drawn {
                Some(Drawn::Fresh(id)) => Some(id),
                _ => None,
            };
            urns.record(fresh, follow.retouch);
        }
        let (volume, offset) = match follow.placed {
            Some((v, off)) => {
                // A re-use leaves the walk where the chain put it: the chain's edges already
                // count the trace's jumps to re-used data, and following the re-used request
                // too would pull the walk into the states whose requests are re-used most.
                if follow.retouch.is_none() {
                    self.relocate(rt, v, off);
                }
                (v, off)
            }
            None => (volume, self.place_new(volume, aligned, size, candidate)),
        };
        self.record(rt, volume, offset, size, op, gap, &follow);
        if let Some(stays) = &rt.stays {
            self.visited(stays, self.path[0]);
        }
    }

    /// A request of a class its top-level state makes runs of, sized by the class: the next of
    /// the class's run in progress, or the first of a new one — the trace's next run while its
    /// sequence lasts, then drawn: where an earlier run of the class started (a re-scan) or
    /// afresh where the trace's fresh runs started. Out of line: most models keep no runs.
    #[inline(never)]
    fn in_run(&mut self, rt: &ThreadRt, run: &RunRt, at: usize, ready: &Ready, op: u8) {
        let size = run.sizes.draw(&mut self.rng);
        let (volume, _, top_end) = rt.root.states[self.path[0]];
        let (left, next) = (self.runs[at].left, self.runs[at].next);
        let offset = if left > 0
            && next
                .checked_add(u64::from(size))
                .is_some_and(|end| end <= top_end)
        {
            self.runs[at].left -= 1;
            next
        } else {
            let made = self.runs[at].made;
            self.runs[at].made = made.saturating_add(1);
            let (offset, length) = match run.sequence.get(made) {
                Some(&[start, length]) => match start.checked_sub(run.cells) {
                    None => (self.run_start(rt, run, at, start, size), length),
                    Some(k) => match self.runs[at].starts.get(k as usize) {
                        Some(&from) => (from, length),
                        // a restart of a run this walk did not make (a segment's): drawn
                        None => (self.draw_run(rt, run, at, size).0, length),
                    },
                },
                None => self.draw_run(rt, run, at, size),
            };
            self.runs[at].left = length - 1;
            // a start kept for a smaller request, or aligned past a narrow cell, stays inside
            offset.min(top_end.saturating_sub(u64::from(size)))
        };
        self.runs[at].next = offset.saturating_add(u64::from(size));
        self.commit(rt);
        let gap = self.gap(rt, ready);
        if let Some(urns) = &mut self.urns {
            urns.record(None, None);
        }
        self.relocate(rt, volume, offset);
        self.record(rt, volume, offset, size, op, gap, &Follow::default());
        if let Some(stays) = &rt.stays {
            self.visited(stays, self.path[0]);
        }
    }

    /// A new run drawn from the class's runs: a restart where one is owed, else a fresh run
    /// with its start cell and length drawn together.
    fn draw_run(&mut self, rt: &ThreadRt, run: &RunRt, at: usize, size: u32) -> (u64, u64) {
        let starts = self.runs[at].starts.len() as u64;
        if let Some(lengths) = &run.restarts {
            if starts > 0 && self.runs[at].restarts_due(run.restart) {
                let w = &mut self.runs[at];
                w.restart_at = (w.restart_at + GOLDEN).fract();
                let length = lengths.draw_at(w.restart_at, &mut self.rng);
                return (w.starts[self.rng.below(starts) as usize], length);
            }
        }
        let w = &mut self.runs[at];
        w.fresh_at = (w.fresh_at + GOLDEN).fract();
        let (cell, from, to) = run.fresh[pick_at(run.fresh_p.iter().copied(), w.fresh_at)];
        let length = log_uniform(from, to, &mut self.rng);
        (self.run_start(rt, run, at, cell, size), length)
    }

    /// A fresh run's start in `cell` of the walk's top-level state, on the class's grid (not
    /// kept off used blocks: the trace's fresh scans overlap one another as they fall, and
    /// kept apart they reached 4 % more blocks); kept as the class's next fresh start.
    fn run_start(&mut self, rt: &ThreadRt, run: &RunRt, at: usize, cell: u64, size: u32) -> u64 {
        let (lo, hi) = cell_range(rt.root.states[self.path[0]], cell, run.cells, size);
        let alignment = rt.alignment.max(run.alignment);
        let offset = Aligned::within(lo, hi, alignment, size).draw(&mut self.rng);
        self.runs[at].starts.push(offset);
        offset
    }

    /// The model time from the previous request to the next: drawn from its edge's gaps, else
    /// the thread's; none when the times are given (the walk is not `timed`).
    #[inline]
    fn gap(&mut self, rt: &ThreadRt, ready: &Ready) -> f64 {
        if !self.timed {
            return 0.0;
        }
        ready
            .gap
            .as_ref()
            .or(rt.defaults.gap.as_ref())
            .map_or(0.0, |g| g.draw(&mut self.rng))
    }

    /// A flush (no address, no size, as traces record them: offset 0) in `volume`: it takes
    /// its gap and its place in the walk's stays, and nothing else.
    #[inline(never)]
    fn flush(&mut self, rt: &ThreadRt, ready: &Ready, volume: u32) {
        self.commit(rt);
        let gap = self.gap(rt, ready);
        if let Some(state) = &mut self.reuse {
            state.skip();
        }
        if let Some(urns) = &mut self.urns {
            urns.record(None, None);
        }
        self.u += gap;
        self.left -= 1;
        self.index += 1;
        self.put(Request {
            u: self.u,
            offset: 0,
            size: 0,
            op: Op::Flush as u8,
            volume,
        });
        // counted where the walk is, as training counts a flush where the trace put it
        if let Some(n) = self.occupied.get_mut(self.path[0]) {
            *n += 1.0;
        }
        if let Some(stays) = &rt.stays {
            self.visited(stays, self.path[0]);
        }
    }

    /// Where `pick` puts the request: after its volume's previous request, continuing or near
    /// a recent run inside the leaf `(volume, start, end)`, or repeating an earlier request
    /// (taking its `size`). Nothing placed for a new request or one with nothing to follow.
    #[inline]
    fn follow(&mut self, rt: &ThreadRt, op: u8, how: Pick, leaf: (u32, u64, u64), size: &mut u32) -> Follow {
        let (volume, start, end) = leaf;
        let ends = &self.ends[volume as usize];
        let span = rt.spans[volume as usize];
        let mut follow = Follow::default();
        match how {
            Pick::Sequential => {
                follow.placed = head(ends, 1).filter(|&e| e < span).map(|e| (volume, e));
                follow.consumed = follow.placed.map(|_| 1);
            }
            Pick::Continuation => {
                if let Some(p) = &rt.continuation_depth {
                    let depth = p.draw(&mut self.rng) + 2;
                    if let Some((at, e)) = head_in(ends, start, end, depth - 1, true) {
                        follow.placed = Some((volume, e));
                        follow.consumed = Some(at);
                    }
                }
            }
            Pick::Near => {
                if let Some((p, gaps)) = &rt.near {
                    let depth = p.draw(&mut self.rng) + 1;
                    let hole = u64::from(gaps.draw(&mut self.rng));
                    if let Some((at, e)) =
                        head_in(ends, start, end, depth, false).filter(|&(_, e)| e + hole < span)
                    {
                        follow.placed = Some((volume, e + hole));
                        follow.consumed = Some(at);
                    }
                }
            }
            Pick::Reuse => {
                let picked = match (&rt.reuse, &self.reuse) {
                    (Some(r), Some(state)) => state.pick(r, op, self.path[0], &mut self.rng),
                    _ => None,
                };
                if let Some(at) = picked {
                    follow = self.repeat(at, size);
                }
            }
            Pick::New => {}
        }
        follow
    }

    /// A re-use of the walk's request `at`: its place and its `size`.
    #[inline]
    fn repeat(&self, at: usize, size: &mut u32) -> Follow {
        *size = self.out.size[at];
        Follow {
            placed: Some((self.out.volume[at], self.out.offset[at])),
            consumed: None,
            retouch: Some(at),
        }
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

    /// Makes the request: the thread's model time moves on by `gap`, and the request is
    /// recorded by the next [`Self::commit`].
    #[inline]
    fn record(
        &mut self,
        rt: &ThreadRt,
        volume: u32,
        offset: u64,
        size: u32,
        op: u8,
        gap: f64,
        follow: &Follow,
    ) {
        debug_assert!(self.pending.is_none(), "the request before was recorded");
        self.used.preload(volume, offset, size);
        self.u += gap;
        self.left -= 1;
        self.index += 1;
        // the re-use stacks' top-level state: where the walk is, unless a re-use took the
        // request elsewhere (top-level states are disjoint: what a search would find)
        let (v, start, end) = rt.root.states[self.path[0]];
        let group = if self.reuse.is_none() || (v == volume && (start..end).contains(&offset)) {
            self.path[0]
        } else {
            rt.root.locate(volume, offset)
        };
        debug_assert!(self.reuse.is_none() || group == rt.root.locate(volume, offset));
        if let Some(n) = self.occupied.get_mut(group) {
            *n += 1.0;
        }
        self.pending = Some(Pending {
            request: Request {
                u: self.u,
                offset,
                size,
                op,
                volume,
            },
            consumed: follow.consumed,
            retouch: follow.retouch,
            group,
        });
    }

    /// Records the request made last, if not yet: its blocks become used, it becomes its
    /// volume's newest head (the head it followed is used up), it goes on its reuse stack and
    /// into the output.
    #[inline]
    fn commit(&mut self, rt: &ThreadRt) {
        let Some(Pending {
            request,
            consumed,
            retouch,
            group,
        }) = self.pending.take()
        else {
            return;
        };
        let Request {
            offset,
            size,
            op,
            volume,
            ..
        } = request;
        self.used.insert_request(volume, offset, size);
        let ends = &mut self.ends[volume as usize];
        if let Some(depth) = consumed {
            ends.remove(ends.len() - depth).expect("consumed heads exist");
        }
        if ends.len() == crate::model::HEADS {
            ends.pop_front();
        }
        ends.push_back(offset + u64::from(size));
        if let (Some(r), Some(state)) = (&rt.reuse, &mut self.reuse) {
            state.record(r, op, size, group, retouch);
        }
        self.put(request);
    }

    /// Writes the next request into the output.
    #[inline]
    fn put(&mut self, r: Request) {
        let i = self.made;
        if self.timed {
            self.out.ts[i] = r.u.to_bits();
        }
        self.out.offset[i] = r.offset;
        self.out.size[i] = r.size;
        self.out.op[i] = r.op;
        self.out.volume[i] = r.volume;
        self.made += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::columns::Columns;
    use super::*;
    use crate::model::{Bucket, Preset};

    proptest::proptest! {
        /// Shifts for a power-of-two alignment give the offsets division gives.
        #[test]
        fn aligned_offsets_by_shift_are_those_by_division(
            start in 0u64..1 << 50, width in 0u64..1 << 40, shift in 0u32..24, size in 1u32..1 << 24,
        ) {
            let alignment = 1u64 << shift;
            let end = start + width;
            let a = Aligned::within(start, end, alignment, size);
            let first = start.div_ceil(alignment) * alignment;
            proptest::prop_assert_eq!(a.first, first);
            proptest::prop_assert_eq!(a.room, end.saturating_sub(first).saturating_sub(u64::from(size)) / alignment);
        }

        /// A range's parts are the same whether the product fits 64 bits or not.
        #[test]
        fn parts_agree_with_wide_arithmetic(start in 0u64..1 << 62, width in 0u64..1 << 62, parts in 1u64..1 << 20, j in 0u64..1 << 20) {
            let j = j % parts;
            let wide = |k: u64| start + (u128::from(width) * u128::from(k) / u128::from(parts)) as u64;
            proptest::prop_assert_eq!(part(start, start + width, j, parts), (wide(j), wide(j + 1)));
        }
    }

    /// `f` applied to every stats of `c` (its edges' and its children's).
    fn each_stats(c: &mut Chain, f: &mut impl FnMut(&mut Stats)) {
        for e in c.transitions.iter_mut().flatten() {
            if let Some(s) = &mut e.stats {
                f(s);
            }
        }
        for s in &mut c.states {
            if let Some(child) = &mut s.children {
                each_stats(child, f);
            }
        }
    }

    /// `f` applied to every stats of `thread`.
    fn each_thread_stats(thread: &mut Thread, f: &mut impl FnMut(&mut Stats)) {
        f(&mut thread.defaults);
        for v in &mut thread.volumes {
            f(&mut v.stats);
        }
        each_stats(&mut thread.chain, f);
    }

    fn resize(s: &mut Stats, bytes: u32) {
        let one = Sizes {
            bytes: vec![bytes],
            p: vec![1.0],
        };
        s.sizes = one.clone();
        for o in &mut s.by_op {
            o.sizes = one.clone();
        }
    }

    /// Every request placed afresh: nothing but edges moves the walk.
    fn fresh_only(s: &mut Stats) {
        (s.sequential, s.continuation, s.near, s.reuse) = (0.0, 0.0, 0.0, 0.0);
        for o in &mut s.by_op {
            (o.sequential, o.continuation, o.near, o.reuse) = (0.0, 0.0, 0.0, 0.0);
        }
    }

    /// The messenger preset (a first thread whose four states each lead to every state), its
    /// requests all placed afresh, and the first state visited 50 requests at a time (the
    /// others as their self-loops' odds say).
    fn visits_of_50() -> Model {
        let mut model = Preset::builtin("messenger").unwrap().build().unwrap();
        let thread = &mut model.threads[0];
        each_thread_stats(thread, &mut fresh_only);
        thread.chain.states[0].stays = Some(vec![Bucket {
            from: 50,
            to: 51,
            p: 1.0,
        }]);
        model
    }

    #[test]
    fn a_state_with_stays_is_visited_for_a_drawn_length() {
        let model = visits_of_50();
        let thread = &model.threads[0];
        let rt = ThreadRt::new(&model, thread, false);
        let mut cols = Columns::zeroed(50_000);
        let mut st = ThreadState::new(&rt, &model, thread, 11, 50_000, cols.slots());
        let mut visits: Vec<(usize, u64)> = Vec::new();
        let mut visit = (usize::MAX, 0);
        while st.left > 0 {
            st.next(&rt);
            if st.path[0] == visit.0 {
                visit.1 += 1;
            } else {
                visits.push(visit);
                visit = (st.path[0], 1);
            }
        }
        let of = |s: usize| visits.iter().filter(move |v| v.0 == s).map(|v| v.1);
        assert!(of(0).count() >= 20, "{} visits to state 0", of(0).count());
        assert!(of(0).all(|l| l == 50), "{:?}", of(0).collect::<Vec<_>>());
        // without stays a visit lasts as long as the self-loop's odds say: one or more
        let others: Vec<u64> = of(1).collect();
        assert!(others.contains(&1) && others.iter().any(|&l| l > 1), "{others:?}");
        // a hand-written row without a self-loop: every visit is one request, whatever the
        // stays say
        let mut model = model.clone();
        let row = &mut model.threads[0].chain.transitions[0];
        row.retain(|e| e.to != 0);
        let total: f64 = row.iter().map(|e| e.p).sum();
        for e in row.iter_mut() {
            e.p /= total;
        }
        let thread = &model.threads[0];
        let rt = ThreadRt::new(&model, thread, false);
        let mut cols = Columns::zeroed(5_000);
        let mut st = ThreadState::new(&rt, &model, thread, 11, 5_000, cols.slots());
        let mut last = usize::MAX;
        while st.left > 0 {
            st.next(&rt);
            assert!(!(st.path[0] == 0 && last == 0), "state 0 visited twice in a row");
            last = st.path[0];
        }
    }

    #[test]
    fn a_state_with_a_profile_is_visited_when_and_as_much_as_the_trace_was() {
        // state 0 visited 50 requests at a time, 8,000 requests in all, every one of them in
        // the second half of a 50,000-request thread
        let mut model = visits_of_50();
        // the thread's share of the trace was 50,000 requests
        model.requests = (50_000.0 / model.threads[0].weight).round() as u64;
        let in_halves = |model: &Model, seed: u64| {
            let thread = &model.threads[0];
            let rt = ThreadRt::new(model, thread, false);
            let mut cols = Columns::zeroed(50_000);
            let mut st = ThreadState::new(&rt, model, thread, seed, 50_000, cols.slots());
            let mut halves = [0u64; 2];
            while st.left > 0 {
                st.next(&rt);
                if st.path[0] == 0 {
                    halves[usize::from(st.index > 25_000)] += 1;
                }
            }
            halves
        };
        // by its odds alone the state takes its share of both halves
        let [first, second] = in_halves(&model, 5);
        assert!(first > 2_000 && second > 2_000, "{first} {second}");
        let profile: Vec<u32> = (0..PROFILE_SEGMENTS)
            .map(|k| if k < PROFILE_SEGMENTS / 2 { 0 } else { 250 })
            .collect();
        model.threads[0].chain.states[0].profile = Some(profile);
        model.validate().unwrap();
        for seed in [5, 6, 7] {
            let [first, second] = in_halves(&model, seed);
            // (a walk may start in it, or take the odd edge in while not yet ahead)
            assert!(first <= 1_000, "{first} in the first half");
            assert!((7_400..=8_600).contains(&second), "{second} in the second half");
        }
    }

    #[test]
    fn work_per_request_does_not_grow_with_its_size() {
        // 4 GiB less a block: the largest size a model holds
        let huge = u32::MAX / 4096 * 4096;
        let mut model = Preset::builtin("tpch").unwrap().build().unwrap();
        for v in &mut model.volumes {
            v.span_bytes = 1 << 50;
        }
        for t in &mut model.threads {
            each_thread_stats(t, &mut |s| resize(s, huge));
        }
        let thread = &model.threads[0];
        assert_eq!(largest_size(thread), huge);
        let count = 1000;
        let rt = ThreadRt::new(&model, thread, true);
        let mut cols = Columns::zeroed(count);
        let mut st = ThreadState::new(&rt, &model, thread, 7, count, cols.slots());
        while st.left > 0 {
            st.next(&rt);
        }
        st.commit(&rt);
        assert!(st.out.size.iter().all(|&s| s == huge));
        // block by block this was over a million probes a request; now: up to 8 tries of at
        // most 17 coarse groups and an extent lookup each, and one extent insertion
        let probes = st.used.probes.get();
        let bound = count * (NEW_OFFSET_TRIES as u64 * (17 + 1) + 1);
        assert!(
            probes <= bound,
            "{probes} probes for {count} requests (at most {bound})"
        );
    }
}
