//! The arrival process (step 1b of the training algorithm, [`super`]): requests per fine
//! window, and how requests arrive inside a window, learnt by how busy the window is.
//!
//! ## Algorithm
//! The fine window is a round length (1, 2 or 5 × a power of ten ns), at most a second and at
//! most a tenth of the coarse (fluctuation) window, longer on sparse traces (at most one window
//! per [`REQUESTS_PER_WINDOW`] requests), shorter on dense ones: down to a fiftieth of the
//! coarse window while windows keep [`FINER_REQUESTS`] requests on average, so that the
//! sub-window bins validation counts (a tenth of the coarse window, not a round length) hold
//! several whole windows rather than one and parts of two. A block is the whole number of fine
//! windows nearest a coarse window. Each window's requests are counted. Inside a window with
//! c ≥ 2 requests, its *spread* (first to last request, as a share of the window), its empty
//! share (1 − spread) × (c + 1) / 2 (about 1 for uniform arrivals at any c) and its
//! gaps relative to their mean there, x = gap × (c − 1) / (last − first), are kept: the gaps
//! as a first-order Markov chain over octave classes of x (the class of each gap given the
//! class of the gap before it, the window's first gap from a start row), all by the window's
//! *rate class* (⌊log2 c⌋, classes with few gaps merged into their neighbours). Bursts,
//! the gaps inside them and the idle stretches between them are runs of small and large
//! classes; conditioning on the rate class keeps a window full of one burst apart from a quiet
//! window with a burst at its end.
//!
//! The block totals (requests per m windows: the coarse profile) are searched for a period: the
//! lag (at least 2 blocks, at most half of them) of the highest local maximum of their
//! autocorrelation, when it is at least [`PERIOD_ACF`].
//!
//! ## Complexity
//! O(n) for the counts and the chain, O(n log n) at worst for the spread quantiles, O(b²) for
//! the period over b blocks.

use rustc_hash::FxHashMap;

use crate::model::{gap_class, Arrivals, RateClass, GAP_CLASSES};
use crate::trace::TraceView;

/// The finest window kept: a second (the rate's one-second figures then hold by construction).
pub const FINE_MAX_NS: u64 = 1_000_000_000;
/// Fine windows per coarse window, at most: finer than a tenth of it where the trace is dense
/// enough ([`FINER_REQUESTS`]).
pub const FINE_PER_COARSE: u64 = 50;
/// Fewest requests per fine window on average for windows finer than a tenth of the coarse one.
pub const FINER_REQUESTS: u64 = 8;
/// Fewest requests per fine window on average; sparser traces get coarser windows.
pub const REQUESTS_PER_WINDOW: u64 = 4;
/// Most fine windows a model keeps.
pub const MAX_WINDOWS: u64 = 1 << 20;
/// Fewest gaps a rate class keeps a chain of its own from (fewer merge into a neighbour).
pub const MIN_CLASS_GAPS: u64 = 256;
/// Quantiles of a rate class's spread.
pub const SPREAD_QUANTILES: usize = 9;
/// Smallest autocorrelation of the block totals that counts as a period.
pub const PERIOD_ACF: f64 = 0.3;

/// The arrival process of `t` (at least two requests), whose coarse profile has windows of
/// `coarse_ns`; `None` when the trace is too short or too sparse to say more than the profile.
pub(super) fn learn(t: &TraceView<'_>, coarse_ns: u64) -> Option<Arrivals> {
    let start = t.ts_ns[0];
    let mut fine = Fine::new(t.len() as u64, start, t.ts_ns[t.len() - 1] - start, coarse_ns)?;
    for &ts in t.ts_ns {
        fine.count(ts);
    }
    let mut classes = Classes::default();
    for &ts in t.ts_ns {
        classes.arrive(ts, &fine);
    }
    Some(fine.finish(classes))
}

/// A trace's requests counted by fine window.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Fine {
    start: u64,
    pub window_ns: u64,
    /// fine windows per coarse one
    m: u64,
    counts: Vec<u32>,
    /// each window's last request's time (what a window's mean gap needs before its requests
    /// are taken one at a time)
    last: Vec<u64>,
}

impl Fine {
    /// The fine windows of `n` requests over `[start, start + span]`, none counted yet; `None`
    /// when the trace is too short or too sparse to say more than the coarse profile.
    pub fn new(n: u64, start: u64, span: u64, coarse_ns: u64) -> Option<Self> {
        if n < 64 || span == 0 {
            return None;
        }
        let window_ns = fine_window(n, span, coarse_ns);
        let w = usize::try_from(span / window_ns + 1).ok()?;
        Some(Self {
            start,
            window_ns,
            m: (coarse_ns / window_ns).max(1),
            counts: vec![0u32; w],
            last: vec![0u64; w],
        })
    }

    /// The window of a request issued at `ts`.
    #[inline]
    pub fn index(&self, ts: u64) -> usize {
        ((ts - self.start) / self.window_ns) as usize
    }

    #[inline]
    pub fn count(&mut self, ts: u64) {
        let w = self.index(ts);
        self.counts[w] += 1;
        self.last[w] = ts;
    }

    /// A window's requests and its last one's time, once every request is counted.
    #[inline]
    pub fn window(&self, w: usize) -> (usize, u64) {
        (self.counts[w] as usize, self.last[w])
    }

    /// The arrival process, from these counts and the rate classes of every window.
    pub fn finish(self, classes: Classes) -> Arrivals {
        let period_blocks = period(&self.counts, self.m as usize);
        Arrivals {
            window_ns: self.window_ns,
            counts: self.counts,
            block: u32::try_from(self.m).unwrap_or(u32::MAX),
            period_blocks,
            classes: classes.finish(),
        }
    }
}

/// Fine windows are round lengths (1, 2, 5 × a power of ten ns): one-second bins, and any
/// round bins a user counts in, then hold whole windows (a window of 0.9999 s drifts a burst
/// across a one-second bin's edge within an hour).
fn round_windows() -> impl Iterator<Item = u64> {
    (0..19).flat_map(|e| [1, 2, 5].map(|d| d * 10u64.pow(e)))
}

/// The fine window of a trace of `n` requests over `span` ns: the longest round length up to a
/// second and a tenth of the coarse window, longer (up to the coarse window) while there would
/// be more than one window per [`REQUESTS_PER_WINDOW`] requests or [`MAX_WINDOWS`] windows;
/// where that is not longer, the shortest round length down to the longest one in a
/// [`FINE_PER_COARSE`]th of the coarse window that leaves [`FINER_REQUESTS`] requests per
/// window on average (with fewer, the windows' edges shaped a Poisson trace's gaps).
fn fine_window(n: u64, span: u64, coarse_ns: u64) -> u64 {
    let fits = |w: u64, per: u64| span / w < (n / per).max(1) && span / w < MAX_WINDOWS;
    let first = (coarse_ns / 10).clamp(1, FINE_MAX_NS);
    let mut w = round_windows().take_while(|&w| w <= first).last().unwrap_or(1);
    let start = w;
    for next in round_windows().skip_while(|&x| x <= start) {
        if fits(w, REQUESTS_PER_WINDOW) || next > coarse_ns {
            break;
        }
        w = next;
    }
    if w == start {
        let finest = round_windows()
            .take_while(|&x| x <= coarse_ns / FINE_PER_COARSE)
            .last()
            .unwrap_or(1);
        let finer: Vec<u64> = round_windows().take_while(|&x| x < start).collect();
        for &x in finer.iter().rev().take_while(|&&x| x >= finest) {
            if !fits(x, FINER_REQUESTS) {
                break;
            }
            w = x;
        }
    }
    w
}

/// What one rate class accumulates.
#[derive(Default)]
struct ClassAcc {
    spreads: Vec<f32>,
    /// per window: its empty share × (count + 1) / 2 ([`RateClass::empty`])
    empties: Vec<f32>,
    transitions: FxHashMap<(u32, u32), u32>,
    gaps: u64,
}

/// The rate classes' accumulators, given the requests one at a time in time order.
pub(super) struct Classes {
    accs: Vec<ClassAcc>,
    /// the window of the request before: its number, rate class, mean gap, last gap class and
    /// time
    at: Option<(usize, usize, f64, u32, u64)>,
}

impl Default for Classes {
    fn default() -> Self {
        Self {
            accs: (0..32).map(|_| ClassAcc::default()).collect(),
            at: None,
        }
    }
}

impl Classes {
    /// The next request, at `ts`, of the trace whose requests `fine` counted.
    #[inline]
    pub fn arrive(&mut self, ts: u64, fine: &Fine) {
        let w = fine.index(ts);
        match &mut self.at {
            Some((now, class, mean, from, prev)) if *now == w => {
                let gap = (ts - *prev) as f64;
                let to = if *mean > 0.0 { gap_class(gap / *mean) } else { 0 };
                let acc = &mut self.accs[*class];
                *acc.transitions.entry((*from, to)).or_default() += 1;
                acc.gaps += 1;
                (*from, *prev) = (to, ts);
            }
            _ => {
                // a window's first request: its spread and mean gap from its count and last time
                let (c, last) = fine.window(w);
                let class = c.ilog2() as usize;
                let mean = if c >= 2 {
                    let spread = (last - ts) as f64 / fine.window_ns as f64;
                    let acc = &mut self.accs[class];
                    acc.spreads.push(spread as f32);
                    acc.empties.push(((1.0 - spread) * (c + 1) as f64 / 2.0) as f32);
                    (last - ts) as f64 / (c - 1) as f64
                } else {
                    0.0
                };
                self.at = Some((w, class, mean, GAP_CLASSES, ts));
            }
        }
    }

    /// The rate classes with their gap chains and spreads.
    fn finish(self) -> Vec<RateClass> {
        merge(self.accs)
            .into_iter()
            .map(|(min_count, mut acc)| {
                let spread = quantiles(&mut acc.spreads, 1.0);
                let spread = if spread.is_empty() { vec![1.0] } else { spread };
                let empty = quantiles(&mut acc.empties, f64::INFINITY);
                let mut transitions: Vec<[u32; 3]> = acc
                    .transitions
                    .into_iter()
                    .map(|((from, to), count)| [from, to, count])
                    .collect();
                transitions.sort_unstable();
                RateClass {
                    min_count,
                    spread,
                    empty,
                    transitions,
                }
            })
            .collect()
    }
}

/// [`SPREAD_QUANTILES`] equally spaced quantiles of `values` (sorted in place), each within
/// `[0, most]`; none of none.
fn quantiles(values: &mut [f32], most: f64) -> Vec<f64> {
    values.sort_by(f32::total_cmp);
    let Some(last) = values.len().checked_sub(1) else {
        return Vec::new();
    };
    (0..SPREAD_QUANTILES)
        .map(|q| f64::from(values[q * last / (SPREAD_QUANTILES - 1)]).clamp(0.0, most))
        .collect()
}

/// Rate classes with fewer than [`MIN_CLASS_GAPS`] gaps merged into the next busier one (the
/// busiest into the one before it), each with the fewest requests its windows have.
fn merge(accs: Vec<ClassAcc>) -> Vec<(u32, ClassAcc)> {
    let mut out: Vec<(u32, ClassAcc)> = Vec::new();
    let mut pending: Option<(u32, ClassAcc)> = None;
    for (k, acc) in accs.into_iter().enumerate() {
        let min_count = 1u32 << k;
        let has = acc.gaps > 0 || !acc.spreads.is_empty() || k == 0;
        if !has {
            continue;
        }
        let (low, mut merged) = pending.take().unwrap_or((min_count, ClassAcc::default()));
        merged.spreads.extend(acc.spreads);
        merged.empties.extend(acc.empties);
        merged.gaps += acc.gaps;
        for (key, c) in acc.transitions {
            *merged.transitions.entry(key).or_default() += c;
        }
        if merged.gaps >= MIN_CLASS_GAPS || k == 0 {
            out.push((low, merged));
        } else {
            pending = Some((low, merged));
        }
    }
    if let Some((low, rest)) = pending {
        match out.last_mut() {
            Some((_, last)) => {
                last.spreads.extend(rest.spreads);
                last.empties.extend(rest.empties);
                last.gaps += rest.gaps;
                for (key, c) in rest.transitions {
                    *last.transitions.entry(key).or_default() += c;
                }
            }
            None => out.push((low, rest)),
        }
    }
    out
}

/// The period of the block totals (requests per `m` windows; the last, partial block left
/// out), in blocks: the highest local maximum of their autocorrelation at lags 2 to half the
/// blocks, when it reaches [`PERIOD_ACF`].
pub(super) fn period(counts: &[u32], m: usize) -> Option<u32> {
    let blocks: Vec<f64> = counts
        .chunks_exact(m.max(1))
        .map(|c| c.iter().map(|&x| f64::from(x)).sum())
        .collect();
    let b = blocks.len();
    if b < 8 {
        return None;
    }
    let mean = blocks.iter().sum::<f64>() / b as f64;
    let centred: Vec<f64> = blocks.iter().map(|x| x - mean).collect();
    let var: f64 = centred.iter().map(|x| x * x).sum();
    if var <= 0.0 {
        return None;
    }
    let acf = |lag: usize| -> f64 { (0..b - lag).map(|i| centred[i] * centred[i + lag]).sum::<f64>() / var };
    let r: Vec<f64> = (0..=b / 2 + 1)
        .map(|lag| if lag < b { acf(lag) } else { 0.0 })
        .collect();
    (2..=b / 2)
        .filter(|&lag| r[lag] >= PERIOD_ACF && r[lag] >= r[lag - 1] && r[lag] >= r[lag + 1])
        .max_by(|&a, &c| r[a].total_cmp(&r[c]))
        .and_then(|lag| u32::try_from(lag).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sine_has_its_period_and_noise_has_none() {
        // 200 blocks of one window each, a period of 23 blocks
        let sine: Vec<u32> = (0..200)
            .map(|i| (100.0 + 80.0 * (f64::from(i) * std::f64::consts::TAU / 23.0).sin()) as u32)
            .collect();
        assert_eq!(period(&sine, 1), Some(23));
        let mut x = 7u64;
        let noise: Vec<u32> = (0..200)
            .map(|_| {
                x = crate::random::splitmix(x);
                (x % 100) as u32
            })
            .collect();
        assert_eq!(period(&noise, 1), None);
        // a steady decline is no period either
        let ramp: Vec<u32> = (0..200).map(|i| 1000 - 4 * i).collect();
        assert_eq!(period(&ramp, 1), None);
    }

    #[test]
    fn fine_windows_are_round_lengths() {
        // an hour of 100 k requests, coarse windows of 36 s: a second at a tenth (not 0.9999
        // s), then 500 ms, the longest round length in a fiftieth (7,200 windows of 14)
        assert_eq!(
            fine_window(100_000, 3_600_000_000_000, 35_996_466_732),
            500_000_000
        );
        // a day of 10 M requests, coarse windows of 864 s: a second, nothing finer in a fiftieth
        assert_eq!(
            fine_window(10_000_000, 86_400_000_000_000, 864_000_000_000),
            1_000_000_000
        );
        // a minute of 24,783 requests, coarse windows of 0.6 s: 50 ms at a tenth, then finer
        // while windows keep 8 requests: 20 ms (3,001 windows; 10 ms would be 6,006)
        assert_eq!(fine_window(24_783, 60_000_000_000, 600_552_000), 20_000_000);
        // with 60,000 requests, down to 10 ms, the longest round length in a fiftieth (12 ms)
        assert_eq!(fine_window(60_000, 60_000_000_000, 600_552_000), 10_000_000);
        // with 10,000, no finer than a tenth (2,401 windows of 20 ms would hold 4 each)
        assert_eq!(fine_window(10_000, 60_000_000_000, 600_552_000), 50_000_000);
        // a sparse hour (1000 requests): at most 250 windows, so 20 s, the first round length
        // giving no more
        assert_eq!(
            fine_window(1000, 3_600_000_000_000, 36_000_000_000),
            20_000_000_000
        );
        // sparser still: never past the coarse window (36 s), so the longest round length in it
        assert_eq!(
            fine_window(100, 3_600_000_000_000, 36_000_000_000),
            20_000_000_000
        );
    }

    #[test]
    fn bursts_in_windows_are_learnt_by_their_rate() {
        // 10 s; every second one request at its start, and in odd seconds a burst of 99 more
        // 10 µs apart right after it
        let mut ts = Vec::new();
        for s in 0..10u64 {
            ts.push(s * 1_000_000_000);
            if s % 2 == 1 {
                ts.extend((1..100).map(|k| s * 1_000_000_000 + 500_000_000 + k * 10_000));
            }
        }
        let t = crate::trace::testing::reads(&ts, &vec![0; ts.len()], 4096);
        // (coarse windows of 50 s: fine ones of a second)
        let a = learn(&t.view(), 50_000_000_000).expect("enough requests");
        assert_eq!(a.window_ns, 1_000_000_000);
        assert_eq!(a.counts, [1, 100, 1, 100, 1, 100, 1, 100, 1, 100]);
        // the busy windows: the first gap is long (0.5 s, class of 0.5 s / 5 ms mean = 2^6.6),
        // the others short (10 µs / 5.05 ms ≈ 2^-9)
        let busy = a.classes.last().unwrap();
        assert_eq!(busy.min_count, 64);
        // their empty share (1 - 0.50099) times (100 + 1) / 2
        assert!(
            busy.empty.iter().all(|&e| (e - 0.49901 * 50.5).abs() < 0.05),
            "{:?}",
            busy.empty
        );
        let first: Vec<&[u32; 3]> = busy.transitions.iter().filter(|t| t[0] == GAP_CLASSES).collect();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0][1], gap_class(0.5 / 0.005_05));
        assert!(
            busy.spread.iter().all(|&s| (s - 0.50099).abs() < 1e-3),
            "{:?}",
            busy.spread
        );
    }
}
