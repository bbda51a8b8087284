//! When requests arrive, from a model's arrival process (see [`crate::model::Arrivals`]).
//!
//! ## Algorithm
//! *Schedule*: requests per fine window. Over the trace's span they are the trace's counts
//! (scaled by the model's rate where a mix changed it). Past its end the profile is extended a
//! block (a coarse window's worth of fine windows) at a time: when the trace showed a period of
//! P blocks, a block at phase φ gets the mean total of the trace's blocks at phase φ, spread
//! over its windows as one of those blocks (drawn at random) spread its own; without a period
//! it is a copy of a block of the trace drawn at random, so the distribution of the trace's
//! block rates and of its windows inside them holds.
//!
//! *Times*: a window with one request gets it at a uniform point; one with c ≥ 2 draws its
//! spread (the share of the window from its first to its last request) from its rate class's
//! quantiles, a uniform lead before the first request, and c − 1 relative gaps from the class's
//! gap chain (a class by the chain, then a power law within the class's octave, its slope the
//! one the neighbouring classes show); the gaps are
//! scaled to fill the spread.
//!
//! ## Complexity
//! O(windows + n), in parallel pieces; memory: the times (8 bytes a request).

use super::super::sample::{Alias, Prng};
use crate::model::{gap_bounds, Arrivals, RateClass, GAP_CLASSES};
use crate::parallel::on_all_cores;
use crate::random::splitmix;
use std::ops::Range;

/// Requests per piece of the parallel time draw.
const TIMES_CHUNK: u64 = 1 << 16;

/// Requests per fine window over the span to generate.
pub(super) struct Schedule {
    pub window_ns: u64,
    pub counts: Vec<u32>,
}

impl Schedule {
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }
}

/// Rounds `x` up or down at random, keeping its expectation.
fn round_random(x: f64, rng: &mut Prng) -> u32 {
    let floor = x.floor();
    (floor + f64::from(u8::from(rng.f64() < x - floor))) as u32
}

/// Extends the trace's counts block by block (see the module's algorithm).
struct Extension<'a> {
    counts: &'a [u32],
    m: usize,
    /// Totals of the trace's full blocks.
    blocks: Vec<f64>,
    period: Option<usize>,
    /// With a period: the mean block total at each phase.
    seasonal: Vec<f64>,
}

impl<'a> Extension<'a> {
    fn new(a: &'a Arrivals) -> Self {
        let m = a.block.max(1) as usize;
        let blocks: Vec<f64> = a
            .counts
            .chunks_exact(m)
            .map(|c| c.iter().map(|&x| f64::from(x)).sum())
            .collect();
        let period = a
            .period_blocks
            .map(|p| p as usize)
            .filter(|&p| p >= 1 && p <= blocks.len());
        let seasonal = period.map_or_else(Vec::new, |p| {
            (0..p)
                .map(|phase| {
                    let at: Vec<f64> = blocks.iter().skip(phase).step_by(p).copied().collect();
                    at.iter().sum::<f64>() / at.len().max(1) as f64
                })
                .collect()
        });
        Self {
            counts: &a.counts,
            m,
            blocks,
            period,
            seasonal,
        }
    }

    /// The windows of the block `b` blocks past the trace's first (b at or past its end).
    fn block(&self, b: usize, rng: &mut Prng) -> Vec<u32> {
        let nb = self.blocks.len();
        if nb == 0 {
            // a trace shorter than a block: repeat it
            return self.counts.to_vec();
        }
        let (source, level) = match self.period {
            Some(p) => {
                let phase = b % p;
                let cycles = (nb - phase).div_ceil(p);
                let s = phase + p * rng.below(cycles as u64) as usize;
                (s, self.seasonal[phase])
            }
            None => {
                let s = rng.below(nb as u64) as usize;
                (s, self.blocks[s])
            }
        };
        let pattern = &self.counts[source * self.m..(source + 1) * self.m];
        let total = self.blocks[source];
        pattern
            .iter()
            .map(|&c| {
                if total > 0.0 {
                    round_random(f64::from(c) * level / total, rng)
                } else {
                    round_random(level / self.m as f64, rng)
                }
            })
            .collect()
    }
}

/// The schedule for `requests` (exactly that many) or for `span_ns` of model time, at the
/// model's rate of `rate` requests per trace request counted (1 for a trained model).
pub(super) fn schedule(
    a: &Arrivals,
    requests: Option<u64>,
    span_ns: Option<u64>,
    rate: f64,
    seed: u64,
) -> Schedule {
    let mut rng = Prng::new(splitmix(seed ^ 0xa771_5a15));
    let scaled: Vec<u32> = if (rate - 1.0).abs() < 1e-12 {
        a.counts.clone()
    } else {
        a.counts
            .iter()
            .map(|&c| round_random(f64::from(c) * rate, &mut rng))
            .collect()
    };
    let scaled_arrivals = Arrivals {
        counts: scaled,
        ..a.clone()
    };
    let ext = Extension::new(&scaled_arrivals);
    let windows_wanted = span_ns.map(|s| s / a.window_ns + 1);
    let mut counts: Vec<u32> = Vec::new();
    let mut total = 0u64;
    let mut next_block = scaled_arrivals.counts.len() / ext.m;
    let mut pending: std::collections::VecDeque<u32> = scaled_arrivals.counts.iter().copied().collect();
    // the trace's last, partial block is followed by whole extension blocks
    loop {
        if windows_wanted.is_some_and(|w| counts.len() as u64 >= w) || requests.is_some_and(|n| total >= n) {
            break;
        }
        let Some(c) = pending.pop_front() else {
            pending.extend(ext.block(next_block, &mut rng));
            next_block += 1;
            continue;
        };
        counts.push(c);
        total += u64::from(c);
    }
    if let Some(n) = requests {
        // the last window gives up what overshoots
        let over = total.saturating_sub(n);
        if let Some(last) = counts.last_mut() {
            *last -= u32::try_from(over).unwrap_or(*last);
        }
    }
    Schedule {
        window_ns: a.window_ns,
        counts,
    }
}

/// A rate class made ready: spread quantiles, per gap class the next class's sampler, and the
/// shape of the gaps inside each class's octave.
struct ClassRt {
    spread: Vec<f64>,
    /// ([`RateClass::empty`]; empty in older models)
    empty: Vec<f64>,
    rows: Vec<Option<(Alias, Vec<u32>)>>,
    /// Per gap class: its octave's draw, worked out once (two exponentials and a division per
    /// gap were a quarter of the arrival times' cost).
    octaves: Vec<Octave>,
}

/// The largest f64 below 2.
const BELOW_TWO: f64 = 2.0 - f64::EPSILON;
/// Slopes from which an octave's power law is drawn in single precision: `1 + u (2^e − 1)`
/// then takes about 58,000 values or more across the octave.
const F32_POWER_FROM: f64 = 0.01;

/// The gaps of one octave `[lo, 2 lo)`: a density ∝ x^(e − 1) inside it.
#[derive(Clone, Copy)]
struct Octave {
    lo: f64,
    e: f64,
    /// 2^e − 1 and 1 / e, for the inverse of the distribution
    grow: f64,
    inverse: f64,
}

impl Octave {
    fn new(k: u32, e: f64) -> Self {
        Octave {
            lo: gap_bounds(k).0,
            e,
            grow: e.exp2() - 1.0,
            inverse: 1.0 / e,
        }
    }
}

/// Inside an octave, gaps follow a power law whose slope is the one the class's neighbours
/// show (the density of gaps per unit of gap, in log-log): flat where gaps are much shorter
/// than their mean, falling steeply past it, as an exponential's. Log-uniform in every octave
/// (the slope −1 everywhere) spread a Poisson trace's gaps: a CV of 1.05–1.06 for 1.00.
fn octave_shapes(transitions: &[[u32; 3]]) -> Vec<f64> {
    let mut count = vec![0.0f64; GAP_CLASSES as usize];
    for t in transitions {
        if let Some(c) = count.get_mut(t[1] as usize) {
            *c += f64::from(t[2]);
        }
    }
    // log2 of the density: the class's count over its octave's width (2^(k − 21))
    let density = |k: usize| (count[k] > 0.0).then(|| count[k].log2() - (k as f64 - 21.0));
    (0..GAP_CLASSES as usize)
        .map(|k| {
            let below = k.checked_sub(1).and_then(density);
            let here = density(k);
            let above = (k + 1 < count.len()).then(|| density(k + 1)).flatten();
            let slope = match (below, here, above) {
                (Some(b), _, Some(a)) => (a - b) / 2.0,
                (Some(b), Some(h), None) => h - b,
                (None, Some(h), Some(a)) => a - h,
                _ => -1.0,
            };
            slope.clamp(-6.0, 3.0) + 1.0
        })
        .collect()
}

/// A draw from quantiles (equally spaced from 0 to 1), linear between them.
fn quantile(q: &[f64], rng: &mut Prng) -> f64 {
    if q.len() == 1 {
        return q[0];
    }
    let pos = rng.f64() * (q.len() - 1) as f64;
    let i = pos as usize;
    q[i] + (q[(i + 1).min(q.len() - 1)] - q[i]) * (pos - i as f64)
}

impl ClassRt {
    fn new(c: &RateClass) -> Self {
        let mut by_from: Vec<Vec<(u32, f64)>> = vec![Vec::new(); GAP_CLASSES as usize + 1];
        for t in &c.transitions {
            by_from[t[0] as usize].push((t[1], f64::from(t[2])));
        }
        Self {
            octaves: {
                let shapes = octave_shapes(&c.transitions);
                (0..=GAP_CLASSES)
                    .map(|k| Octave::new(k, shapes.get(k as usize).copied().unwrap_or(0.0)))
                    .collect()
            },
            spread: c.spread.clone(),
            empty: c.empty.clone(),
            rows: by_from
                .into_iter()
                .map(|row| {
                    (!row.is_empty()).then(|| {
                        let p: Vec<f64> = row.iter().map(|r| r.1).collect();
                        (Alias::new(&p), row.iter().map(|r| r.0).collect())
                    })
                })
                .collect(),
        }
    }

    /// The spread of a window of `count` requests: from the empty share of windows of its
    /// count where the class keeps it, from the class's spreads otherwise.
    fn spread(&self, count: usize, rng: &mut Prng) -> f64 {
        if self.empty.is_empty() {
            return quantile(&self.spread, rng);
        }
        1.0 - quantile(&self.empty, rng) * 2.0 / (count + 1) as f64
    }

    /// A gap of class `k` (`k` ≥ 1), relative to the window's mean gap.
    #[inline]
    fn gap(&self, k: u32, rng: &mut Prng) -> f64 {
        let o = match self.octaves.get(k as usize) {
            Some(o) => *o,
            None => Octave::new(k, 0.0),
        };
        let u = rng.f64();
        if o.e.abs() < 1e-9 {
            o.lo * u.exp2() // log-uniform
        } else if o.e.abs() < F32_POWER_FROM {
            // nearly flat: 1 + u (2^e − 1) would round to a few values in single precision
            o.lo * (1.0 + u * o.grow).powf(o.inverse)
        } else {
            // the inverse of the power law's distribution over [lo, 2 lo), in single precision
            // (a gap's 24 bits are far finer than its octave; the double-precision power was a
            // sixteenth of generation's time), kept below the octave's end
            let x = (1.0 + u * o.grow) as f32;
            o.lo * f64::from(x.powf(o.inverse as f32)).min(BELOW_TWO)
        }
    }

    /// The next gap class after `from` (a window's first gap from the start row).
    fn next(&self, from: u32, rng: &mut Prng) -> u32 {
        let row = self.rows[from as usize]
            .as_ref()
            .or(self.rows[GAP_CLASSES as usize].as_ref());
        match row {
            Some((alias, to)) => to[alias.draw(rng)],
            None => 21, // relative gap about 1: even spacing
        }
    }
}

/// The times (model ns, ascending) of the requests of the schedule's `windows`. Each window
/// draws from its own seed, so a range of windows gets the times the whole schedule gives it.
pub(super) fn times(a: &Arrivals, s: &Schedule, seed: u64, windows: Range<usize>) -> Vec<u64> {
    let classes: Vec<ClassRt> = a.classes.iter().map(ClassRt::new).collect();
    let mins: Vec<u32> = a.classes.iter().map(|c| c.min_count).collect();
    let counts = &s.counts[windows.clone()];
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let mut out = vec![0u64; usize::try_from(total).unwrap_or(0)];
    // pieces of whole windows, each about TIMES_CHUNK requests
    let mut pieces = Vec::new();
    let mut rest: &mut [u64] = &mut out;
    let (mut from, mut taken) = (windows.start, 0u64);
    for (j, &c) in counts.iter().enumerate().map(|(i, c)| (windows.start + i, c)) {
        taken += u64::from(c);
        if taken >= TIMES_CHUNK || j + 1 == windows.end {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(taken as usize);
            pieces.push((from, j + 1, head));
            rest = tail;
            from = j + 1;
            taken = 0;
        }
    }
    on_all_cores(pieces, |(first, last, slots)| {
        let mut k = 0;
        for j in first..last {
            let c = s.counts[j] as usize;
            if c == 0 {
                continue;
            }
            let mut rng = Prng::new(splitmix(seed ^ splitmix(j as u64)));
            let class = &classes[mins.partition_point(|&m| m as usize <= c).saturating_sub(1)];
            window(
                class,
                j as u64 * s.window_ns,
                s.window_ns,
                &mut slots[k..k + c],
                &mut rng,
            );
            if j == 0 {
                // the trace's windows start at its first request: so do the generated ones
                let lead = slots[0];
                for t in &mut slots[..c] {
                    *t -= lead;
                }
            }
            k += c;
        }
    });
    out
}

/// Fills `slots` with the times of a window starting at `start`.
fn window(class: &ClassRt, start: u64, width: u64, slots: &mut [u64], rng: &mut Prng) {
    let w = width as f64;
    if slots.len() == 1 {
        slots[0] = start + (rng.f64() * w) as u64;
        return;
    }
    let spread = class.spread(slots.len(), rng).clamp(0.0, 1.0);
    let lead = rng.f64() * (1.0 - spread) * w;
    // cumulative relative gaps, in the slots as f64 bits until scaled
    let mut from = GAP_CLASSES;
    let mut sum = 0.0f64;
    slots[0] = 0.0f64.to_bits();
    for slot in &mut slots[1..] {
        let k = class.next(from, rng);
        from = k;
        let x = if k == 0 { 0.0 } else { class.gap(k, rng) };
        sum += x;
        *slot = sum.to_bits();
    }
    let scale = if sum > 0.0 { spread * w / sum } else { 0.0 };
    for slot in slots.iter_mut() {
        let c = f64::from_bits(*slot);
        *slot = start + (lead + c * scale).min(w - 1.0).max(0.0) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrivals(counts: Vec<u32>, block: u32, period: Option<u32>) -> Arrivals {
        Arrivals {
            window_ns: 1000,
            counts,
            block,
            period_blocks: period,
            classes: vec![RateClass {
                empty: Vec::new(),
                min_count: 1,
                spread: vec![0.5],
                transitions: vec![[GAP_CLASSES, 21, 1], [21, 21, 1]],
            }],
        }
    }

    #[test]
    fn the_trace_comes_first_then_its_blocks() {
        let a = arrivals(vec![1, 2, 3, 4, 5, 6], 2, None);
        let s = schedule(&a, Some(30), None, 1.0, 1);
        assert_eq!(&s.counts[..6], &[1, 2, 3, 4, 5, 6]);
        assert_eq!(s.total(), 30);
        // then whole blocks of the trace, [1, 2], [3, 4] or [5, 6]
        assert!(
            matches!(&s.counts[6..8], [1, 2] | [3, 4] | [5, 6]),
            "{:?}",
            s.counts
        );
        // by span: 10 windows of 1000 ns
        let s = schedule(&a, None, Some(9_999), 1.0, 1);
        assert_eq!(s.counts.len(), 10);
        // fewer requests than the trace: its first windows
        assert_eq!(schedule(&a, Some(4), None, 1.0, 1).counts, [1, 2, 1]);
    }

    #[test]
    fn a_period_extends_by_its_phase() {
        // period 2 blocks of one window: high, low, high, low
        let a = arrivals(vec![100, 10, 100, 10, 100, 10], 1, Some(2));
        let s = schedule(&a, None, Some(11_999), 1.0, 3);
        assert_eq!(&s.counts[6..], &[100, 10, 100, 10, 100, 10]);
    }

    #[test]
    fn times_stay_in_their_windows_and_in_order() {
        let a = arrivals(vec![3, 0, 5, 1], 1, None);
        let s = schedule(&a, None, Some(3_999), 1.0, 1);
        let t = times(&a, &s, 9, 0..s.counts.len());
        assert_eq!(t.len(), 9);
        // a range of windows gets the times the whole schedule gives it
        assert_eq!(times(&a, &s, 9, 2..4), t[3..]);
        assert_eq!(times(&a, &s, 9, 0..2), t[..3]);
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
        let per_window: Vec<usize> = (0..4)
            .map(|j| t.iter().filter(|&&x| x / 1000 == j).count())
            .collect();
        assert_eq!(per_window, [3, 0, 5, 1]);
        // spread 0.5: a window's requests lie within half of it
        let w2: Vec<u64> = t.iter().copied().filter(|&x| x / 1000 == 2).collect();
        assert!(w2[4] - w2[0] <= 500, "{w2:?}");
    }

    #[test]
    fn gaps_inside_an_octave_take_the_slope_of_its_neighbours() {
        // counts by class as an exponential's (mean gap 1, class 21 = [1, 2)): per octave
        // [lo, 2 lo) the probability e^-lo − e^-2lo
        let p = |k: u32| {
            let (lo, hi) = gap_bounds(k);
            (-lo).exp() - (-hi).exp()
        };
        let transitions: Vec<[u32; 3]> = (10..26)
            .map(|k| [GAP_CLASSES, k, (p(k) * 1e6).round() as u32])
            .filter(|t| t[2] > 0)
            .collect();
        let shapes = octave_shapes(&transitions);
        // far below the mean the density is flat (e = 1), past it steeply falling; with no
        // neighbours, log-uniform (e = 0)
        assert!((shapes[12] - 1.0).abs() < 0.01, "{}", shapes[12]);
        assert!(shapes[23] < -2.0, "{}", shapes[23]);
        assert_eq!(shapes[2], 0.0);
        // draws stay in their octave, and the class's mean is the exponential's there
        let class = ClassRt::new(&RateClass {
            empty: Vec::new(),
            min_count: 1,
            spread: vec![1.0],
            transitions,
        });
        let mut rng = Prng::new(5);
        for k in [12u32, 21, 22, 23] {
            let (lo, hi) = gap_bounds(k);
            let draws: Vec<f64> = (0..20_000).map(|_| class.gap(k, &mut rng)).collect();
            assert!(draws.iter().all(|&x| (lo..hi).contains(&x)));
            let mean = draws.iter().sum::<f64>() / draws.len() as f64;
            // E[x | lo <= x < 2 lo] of an exponential of mean 1
            let expected =
                (lo + 1.0) - (hi - lo) * (-lo).exp().recip() * (-hi).exp() / (1.0 - (lo - hi).exp());
            assert!(
                (mean - expected).abs() < 0.03 * lo,
                "class {k}: {mean} vs {expected}"
            );
        }
    }
}
