//! Characterization of a trace read a piece at a time (the row groups of a Parquet trace too
//! large to hold), in memory bounded by the counters and curves, not by the trace's length.
//!
//! Two passes over the pieces, in time order:
//! 1. a [`Survey`]: the time span (which sets the fluctuation windows), how far each volume
//!    reaches (which sets its spatial ranges), its streams, and its distinct blocks counted on
//!    an adaptive hash sample (which set the curves' sampling rate and maps);
//! 2. [`Chunked::add`] of every piece, then [`Chunked::finish`].
//!
//! What carries over from one piece to the next: each volume's (and each stream's per
//! volume) sequentiality state, each group's last arrival, and the curves' LRU stacks, so every
//! count (operations, bytes, sizes, sequentiality and Keeton's run metrics, spatial ranges,
//! fluctuation windows, the gaps' count, mean and CV) equals the whole trace's exactly, and a
//! curve at the same rate is the same curve. What is estimated: percentiles of gaps and
//! latencies come from HDR histograms ([`Sketch`], within 0.1 %), and the inter-arrival fit's
//! KS distances are taken on those histograms' bins instead of a strided sample of values (its
//! parameters come from exact moments).

mod partition;

pub use partition::Part;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::group::{GroupAcc, Interarrival, Latencies};
use super::mrc::{BlockCount, Blocks, Curve};
use super::sequentiality::{KeyState, SeqCounts, HEAD_WINDOW};
use super::stats::Sketch;
use super::{check_counters, distfit, window_for, Grouped, MrcScope, Options, Profile, MAX_RANGES};
use crate::error::{Error, Result};
use crate::latency::{self, LatencyUs};
use crate::progress::Progress;
use crate::trace::{TraceView, LATENCY_UNKNOWN};

/// Bytes a curve spends on each block it tracks (its LRU stack's map, marks and tree).
pub const BYTES_PER_TRACKED_BLOCK: u64 = 64;

/// The blocks each curve may track when all of them together (the trace's, and each volume's
/// and stream's, which add up to two more) take at most 3/8 of `memory` bytes: the rest is for
/// the counters and sequentiality state, two pieces of the trace, the reader, and the maps'
/// doubling as they grow (a 200 M-request run within 2 GiB peaked at 1.87 GiB with half).
pub fn curve_budget(memory: u64, scope: MrcScope) -> u64 {
    let curves = match scope {
        MrcScope::None => return u64::MAX,
        MrcScope::Trace => 1,
        MrcScope::All => 3,
    };
    (memory / 8 * 3 / (BYTES_PER_TRACKED_BLOCK * curves)).max(super::mrc::MIN_BUDGET_BLOCKS)
}

/// What the figures need known before the first piece is counted, gathered by a pass over all
/// of them (or over each partition of the trace apart, and merged).
#[derive(Serialize, Deserialize)]
pub struct Survey {
    rows: u64,
    first: Option<u64>,
    last: u64,
    /// Each volume's largest end offset, and its requests.
    reach: Vec<u64>,
    volume_rows: Vec<u64>,
    /// Requests of each stream id.
    streams: FxHashMap<u32, u64>,
    blocks: BlockCount,
}

impl Survey {
    pub fn new(volumes: usize) -> Self {
        Self {
            rows: 0,
            first: None,
            last: 0,
            reach: vec![0; volumes],
            volume_rows: vec![0; volumes],
            streams: FxHashMap::default(),
            blocks: BlockCount::new(),
        }
    }

    /// Counts the next piece (its rows in time order, after the previous piece's).
    pub fn add(&mut self, t: &TraceView<'_>) -> Result<()> {
        in_order(t, self.first.map(|_| self.last))?;
        self.add_in_any_order(t);
        Ok(())
    }

    /// Counts a piece whatever its times: what a survey keeps is a span and sets, so it may
    /// see the trace in another order than the counting will (files that interleave in time,
    /// surveyed one after another and then counted merged).
    pub fn add_in_any_order(&mut self, t: &TraceView<'_>) {
        let n = t.len();
        let (Some(&low), Some(&high)) = (t.ts_ns.iter().min(), t.ts_ns.iter().max()) else {
            return;
        };
        self.first = Some(self.first.map_or(low, |f| f.min(low)));
        self.last = self.last.max(high);
        self.rows += n as u64;
        for i in 0..n {
            let v = t.volume[i] as usize;
            if v >= self.reach.len() {
                self.reach.resize(v + 1, 0);
                self.volume_rows.resize(v + 1, 0);
            }
            self.reach[v] = self.reach[v].max(t.offset[i] + u64::from(t.size[i]));
            self.volume_rows[v] += 1;
            *self.streams.entry(t.stream[i]).or_default() += 1;
        }
        self.blocks.add(t, 0..n);
    }

    /// Requests surveyed.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds the survey of the partition of the trace that comes next in time. False, and
    /// nothing added, when it starts before the requests surveyed so far end.
    pub fn merge(&mut self, other: Survey) -> bool {
        let (Some(first), Some(_)) = (other.first, self.first) else {
            if self.first.is_none() {
                *self = other;
            }
            return true;
        };
        if first < self.last {
            return false;
        }
        self.rows += other.rows;
        self.last = self.last.max(other.last);
        let n = self.reach.len().max(other.reach.len());
        self.reach.resize(n, 0);
        self.volume_rows.resize(n, 0);
        for (v, (&reach, &rows)) in other.reach.iter().zip(&other.volume_rows).enumerate() {
            self.reach[v] = self.reach[v].max(reach);
            self.volume_rows[v] += rows;
        }
        for (s, n) in other.streams {
            *self.streams.entry(s).or_default() += n;
        }
        self.blocks.merge(other.blocks);
        true
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        partition::to_bytes(self, "a survey")
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Survey> {
        partition::from_bytes(bytes, "a survey")
    }
}

/// Fails unless the piece's times ascend from `after` (the previous piece's last).
pub(crate) fn in_order(t: &TraceView<'_>, after: Option<u64>) -> Result<()> {
    let back = t.ts_ns.windows(2).position(|w| w[1] < w[0]);
    let before = after.is_some_and(|last| t.ts_ns.first().is_some_and(|&f| f < last));
    if back.is_some() || before {
        return Err(Error::Usage(
            "a piece of the trace goes back in time: pieces must come in time order".into(),
        ));
    }
    Ok(())
}

/// The arrivals of a group: the gaps between them sketched, the logs of the positive ones
/// summed for the fit.
#[derive(Default, Serialize, Deserialize)]
struct Gaps {
    /// The first arrival (a partition's first gap is measured from the partition before).
    first: Option<u64>,
    last: Option<u64>,
    all: Sketch,
    positive: u64,
    ln_sum: f64,
    ln_sq: f64,
}

impl Gaps {
    #[inline]
    fn arrive(&mut self, ts: u64) {
        match self.last.replace(ts) {
            Some(last) => self.gap(ts - last),
            None => self.first = Some(ts),
        }
    }

    #[inline]
    fn gap(&mut self, gap: u64) {
        self.all.record(gap);
        if gap > 0 {
            let ln = (gap as f64 / 1e3).ln();
            self.positive += 1;
            self.ln_sum += ln;
            self.ln_sq += ln * ln;
        }
    }

    /// The figures [`super::group`] takes from the columns, here from the sketch.
    fn figures(&self) -> Interarrival {
        let count = self.all.count;
        let (mean_ns, cv) = self.all.mean_cv();
        let n = self.positive as f64;
        let fit = (self.positive >= 2).then(|| {
            // the positive gaps in µs: the zeros add nothing to the sums
            let (sum, sum_sq) = self.all.sums();
            let mean = sum as f64 / n / 1e3;
            let log_mean = self.ln_sum / n;
            let moments = distfit::Moments {
                mean,
                var: (sum_sq as f64 / n / 1e6 - mean * mean).max(0.0),
                log_mean,
                log_var: (self.ln_sq / n - log_mean * log_mean).max(0.0),
            };
            let bins: Vec<(f64, f64, u64)> = self
                .all
                .bins()
                .filter(|&(_, hi, _)| hi > 0)
                .map(|(lo, hi, c)| (lo.max(1) as f64 / 1e3, hi as f64 / 1e3, c))
                .collect();
            distfit::fit_binned(moments, self.positive, &bins)
        });
        Interarrival {
            count: count as usize,
            mean_us: mean_ns / 1e3,
            cv,
            zero_fraction: if count == 0 {
                0.0
            } else {
                (count - self.positive) as f64 / count as f64
            },
            percentiles_us: self.all.percentiles(1e-3),
            fit: fit.flatten(),
        }
    }
}

/// One group's counts, arrivals and (when the trace has them) response times by op code.
#[derive(Serialize, Deserialize)]
struct Group {
    acc: GroupAcc,
    gaps: Gaps,
    latency: [Sketch; 4],
}

impl Group {
    fn new(windows: usize, ranges: usize) -> Self {
        Self {
            acc: GroupAcc::new(windows, ranges),
            gaps: Gaps::default(),
            latency: Default::default(),
        }
    }

    #[inline]
    #[allow(clippy::too_many_arguments)] // one request's columns
    fn observe(&mut self, ts: u64, size: u32, op: u8, window: usize, range: usize, latency: Option<u64>) {
        self.acc.observe(size, op, window);
        self.acc.observe_range(range, op);
        self.gaps.arrive(ts);
        if let Some(l) = latency {
            self.latency[usize::from(op).min(3)].record(l);
        }
    }

    fn latencies(&self) -> Latencies {
        let mut all = Sketch::default();
        for s in &self.latency {
            all.merge(s);
        }
        if all.count == 0 {
            return Latencies::default();
        }
        let by_op = if self.latency.iter().filter(|s| s.count > 0).count() > 1 {
            latency::by_op_sketched(&self.latency)
        } else {
            BTreeMap::new()
        };
        Latencies {
            all: LatencyUs::from_sketch(&all),
            cv: Some(all.mean_cv().1),
            by_op,
        }
    }
}

/// The counters of every group and the state that carries sequentiality across pieces: the
/// whole trace's, the volumes' and the streams' apart, each counted on its own core.
struct Counts {
    whole: Group,
    volumes: Keyed,
    /// By dense stream id, when there are several streams (else empty).
    streams: Keyed,
}

/// Groups whose sequentiality is followed per volume they touch (a volume's group touches its
/// own only; a stream's, any).
struct Keyed {
    groups: Vec<Group>,
    keys: Vec<FxHashMap<u32, Key>>,
    /// Counting a partition of the trace: each key keeps its own counts and first requests.
    partition: bool,
}

/// A key's sequentiality state, and in a partition of the trace what taking the partition in
/// needs ([`KeyPart`]).
#[derive(Default)]
struct Key {
    state: KeyState,
    part: Option<Box<KeyPart>>,
}

/// What one key's requests in a partition of the trace leave: their counts and final state
/// taken from the partition's start alone, and the first [`HEAD_WINDOW`] of them, which are
/// replayed with the state the partition really starts from (only they can continue a head
/// set before it).
#[derive(Default, Serialize, Deserialize)]
struct KeyPart {
    counts: SeqCounts,
    head: Vec<(u64, u32)>,
    state: KeyState,
}

impl Keyed {
    fn new(groups: usize, new_group: impl Fn() -> Group, partition: bool) -> Self {
        Self {
            groups: (0..groups).map(|_| new_group()).collect(),
            keys: (0..groups).map(|_| FxHashMap::default()).collect(),
            partition,
        }
    }

    /// Counts the rows of one piece, row `i` in group `group_of(i)`.
    fn observe(&mut self, t: &TraceView<'_>, at: &Where<'_>, group_of: impl Fn(usize) -> usize) {
        let partition = self.partition;
        for i in 0..t.len() {
            let g = group_of(i);
            let (window, range, latency) = at.of(t, i);
            let group = &mut self.groups[g];
            group.observe(t.ts_ns[i], t.size[i], t.op[i], window, range, latency);
            let key = self.keys[g].entry(t.volume[i]).or_insert_with(|| Key {
                state: KeyState::default(),
                part: partition.then(Box::default),
            });
            let (offset, size) = (t.offset[i], t.size[i]);
            match &mut key.part {
                None => group.acc.seq.observe(&mut key.state, offset, u64::from(size)),
                Some(part) => {
                    if part.head.len() < HEAD_WINDOW as usize {
                        part.head.push((offset, size));
                    }
                    part.counts.observe(&mut key.state, offset, u64::from(size));
                }
            }
        }
    }
}

/// Where a request falls: its fluctuation window and spatial range.
struct Where<'a> {
    start: u64,
    window_ns: u64,
    ranges: usize,
    reach: &'a [u64],
}

impl Where<'_> {
    /// Row `i`'s window, spatial range and known latency.
    #[inline]
    fn of(&self, t: &TraceView<'_>, i: usize) -> (usize, usize, Option<u64>) {
        let window = ((t.ts_ns[i] - self.start) / self.window_ns) as usize;
        let v = t.volume[i] as usize;
        let range =
            (u128::from(t.offset[i]) * self.ranges as u128 / u128::from(self.reach[v].max(1))) as usize;
        let latency = t.latency_ns.map(|l| l[i]).filter(|&l| l != LATENCY_UNKNOWN);
        (window, range.min(self.ranges - 1), latency)
    }
}

/// The curves asked for: the whole trace's, and each volume's and stream's.
struct Curves {
    whole: Option<Curve>,
    volumes: Vec<Curve>,
    streams: Vec<Curve>,
}

/// One piece's work for a core: a part of the counters, or one curve (over the piece's rows,
/// or the rows listed).
enum Task<'c> {
    Whole(&'c mut Group),
    Volumes(&'c mut Keyed),
    Streams(&'c mut Keyed),
    Curve(&'c mut Curve, Option<&'c [u32]>),
}

/// What every count of a characterization needs known before its first piece, worked out
/// from the [`Survey`]: the same for the whole trace and for each partition of it counted
/// apart (it crosses to the processes that count them).
#[derive(Clone, Serialize, Deserialize)]
pub struct Setup {
    opts: Options,
    start: u64,
    span: u64,
    window_ns: u64,
    windows: usize,
    ranges: usize,
    reach: Vec<u64>,
    volumes: Vec<String>,
    /// Each dense stream id's stream id, when there are several streams (else empty).
    stream_ids: Vec<u32>,
    /// The trace's one stream, when it has only one (its figures are the trace's).
    single_stream: Option<u32>,
    /// The curves: the trace's blocks, the rate they are sampled at, and the distinct blocks
    /// each volume's and stream's curve is expected to hold (`None` without those curves).
    blocks: Blocks,
    rate: f64,
    volume_blocks: Option<Vec<u64>>,
    stream_blocks: Option<Vec<u64>>,
}

impl Setup {
    fn of(survey: Survey, volumes: Vec<String>, opts: &Options) -> Result<Self> {
        let ranges = opts.ranges.max(1);
        if ranges > MAX_RANGES {
            return Err(Error::Usage(format!(
                "`ranges` {ranges} is more than the {MAX_RANGES} spatial ranges a profile keeps"
            )));
        }
        let start = survey.first.unwrap_or(0);
        let span = survey.last - start;
        let window_ns = window_for(span, opts.window_ns)?;
        let n_windows = (span / window_ns + 1) as usize;
        let several = survey.streams.len() > 1;
        let mut stream_ids: Vec<u32> = if several {
            survey.streams.keys().copied().collect()
        } else {
            Vec::new()
        };
        stream_ids.sort_unstable();
        let n_volumes = volumes.len().max(survey.reach.len());
        check_counters(1 + n_volumes + stream_ids.len(), n_windows, ranges)?;
        let blocks = survey.blocks.finish();
        let rate = opts
            .mrc_sampling
            .unwrap_or_else(|| blocks.sampling_rate(opts.mrc_budget));
        let share = |rows: u64| (blocks.distinct as f64 * rows as f64 / survey.rows.max(1) as f64) as u64;
        let per_group = opts.mrc == MrcScope::All;
        let mut reach = survey.reach.clone();
        reach.resize(n_volumes, 0);
        Ok(Self {
            opts: Options {
                window_ns: Some(window_ns),
                ranges,
                ..opts.clone()
            },
            start,
            span,
            window_ns,
            windows: n_windows,
            ranges,
            reach,
            volumes,
            volume_blocks: (per_group && n_volumes > 1).then(|| {
                (0..n_volumes)
                    .map(|v| share(survey.volume_rows.get(v).copied().unwrap_or(0)))
                    .collect()
            }),
            stream_blocks: per_group.then(|| stream_ids.iter().map(|s| share(survey.streams[s])).collect()),
            single_stream: if several {
                None
            } else {
                survey.streams.keys().next().copied()
            },
            stream_ids,
            blocks,
            rate,
        })
    }
}

/// A characterization being taken a piece at a time.
pub struct Chunked {
    setup: Setup,
    /// Stream id → dense id.
    dense: FxHashMap<u32, u32>,
    counts: Counts,
    curves: Curves,
    rows: u64,
    /// Keys whose requests in the last partition taken in must be counted again
    /// ([`Chunked::absorb`]): (stream group or volume group, group, volume).
    redo: Vec<(bool, usize, u32)>,
    /// A partition was taken in part way (an error in the middle): the figures are not whole.
    broken: bool,
}

impl Chunked {
    /// Ready to take the pieces `survey` counted, of a trace of `volumes`.
    pub fn new(survey: Survey, volumes: Vec<String>, opts: &Options) -> Result<Self> {
        Ok(Self::with(Setup::of(survey, volumes, opts)?, None))
    }

    /// Ready to count one partition of a trace (a range of its time, `share` of its
    /// requests) on its own, from the setup the trace's [`Chunked`] gives;
    /// [`Chunked::into_part`] then says what that characterization takes in.
    pub fn partition(setup: Setup, share: f64) -> Self {
        Self::with(setup, Some(share.clamp(0.0, 1.0)))
    }

    /// What counting a partition of this trace needs known.
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// Ready to count the whole trace, or (`partition`: its share of the requests) a
    /// partition of it.
    fn with(setup: Setup, partition: Option<f64>) -> Self {
        let s = &setup;
        let new_group = || Group::new(s.windows, s.ranges);
        // a partition's curve holds about its share of the blocks: a map sized for more
        // misses the caches
        let curve = |expected: u64| match partition {
            Some(share) => Curve::of_partition(&s.blocks, s.rate, (expected as f64 * share) as u64 + 1),
            None => Curve::new(&s.blocks, s.rate, expected),
        };
        let partition = partition.is_some();
        let n_volumes = s.reach.len();
        let curves = Curves {
            whole: (s.opts.mrc != MrcScope::None).then(|| curve(s.blocks.distinct)),
            volumes: s.volume_blocks.iter().flatten().map(|&b| curve(b)).collect(),
            streams: s.stream_blocks.iter().flatten().map(|&b| curve(b)).collect(),
        };
        Self {
            dense: s
                .stream_ids
                .iter()
                .enumerate()
                .map(|(d, &id)| (id, d as u32))
                .collect(),
            counts: Counts {
                whole: new_group(),
                volumes: Keyed::new(n_volumes, new_group, partition),
                streams: Keyed::new(s.stream_ids.len(), new_group, partition),
            },
            curves,
            rows: 0,
            redo: Vec::new(),
            broken: false,
            setup,
        }
    }

    /// The dense stream id of each row of `t` (none with one stream).
    fn streams_of(&self, t: &TraceView<'_>) -> Result<Vec<u32>> {
        if self.setup.stream_ids.is_empty() {
            return Ok(Vec::new());
        }
        t.stream
            .iter()
            .map(|s| {
                self.dense
                    .get(s)
                    .copied()
                    .ok_or_else(|| Error::Usage(format!("stream {s} was not in the trace surveyed")))
            })
            .collect()
    }

    /// Counts the next piece: its rows in time order, after the previous piece's, of the
    /// trace surveyed. The counters and each curve are independent: they run on every core.
    pub fn add(&mut self, t: &TraceView<'_>) -> Result<()> {
        let n = t.len();
        if !self.redo.is_empty() {
            return Err(Error::Usage(
                "a partition's requests are being counted again: `redo` them first".into(),
            ));
        }
        let stream_of = self.streams_of(t)?;
        let s = &self.setup;
        if let Some(&v) = t.volume.iter().find(|&&v| v as usize >= s.reach.len()) {
            return Err(Error::Usage(format!("volume {v} was not in the trace surveyed")));
        }
        if t.ts_ns.first().is_some_and(|&f| f < s.start)
            || t.ts_ns.last().is_some_and(|&l| l > s.start + s.span)
        {
            return Err(Error::Usage("a piece lies outside the time span surveyed".into()));
        }
        let by_volume = (!self.curves.volumes.is_empty())
            .then(|| Grouped::new(s.reach.len(), t.volume.iter().map(|&v| v as usize)));
        let by_stream = (!self.curves.streams.is_empty())
            .then(|| Grouped::new(s.stream_ids.len(), stream_of.iter().map(|&s| s as usize)));
        let counts = &mut self.counts;
        let mut tasks = vec![
            Task::Streams(&mut counts.streams),
            Task::Volumes(&mut counts.volumes),
        ];
        tasks.push(Task::Whole(&mut counts.whole));
        let curves = &mut self.curves;
        if let Some(c) = curves.whole.as_mut() {
            tasks.push(Task::Curve(c, None));
        }
        for (g, c) in curves.volumes.iter_mut().enumerate() {
            tasks.push(Task::Curve(
                c,
                Some(by_volume.as_ref().expect("grouped when curved").of(g)),
            ));
        }
        for (g, c) in curves.streams.iter_mut().enumerate() {
            tasks.push(Task::Curve(
                c,
                Some(by_stream.as_ref().expect("grouped when curved").of(g)),
            ));
        }
        let at = Where {
            start: s.start,
            window_ns: s.window_ns,
            ranges: s.ranges,
            reach: &s.reach,
        };
        let several_streams = !stream_of.is_empty();
        let done = crate::parallel::on_all_cores(tasks, |task| match task {
            Task::Whole(whole) => {
                for i in 0..n {
                    let (window, range, latency) = at.of(t, i);
                    whole.observe(t.ts_ns[i], t.size[i], t.op[i], window, range, latency);
                }
                Ok(())
            }
            Task::Volumes(volumes) => {
                volumes.observe(t, &at, |i| t.volume[i] as usize);
                Ok(())
            }
            Task::Streams(streams) => {
                if several_streams {
                    streams.observe(t, &at, |i| stream_of[i] as usize);
                }
                Ok(())
            }
            Task::Curve(curve, None) => curve.feed(t, 0..n, &Progress::default()),
            Task::Curve(curve, Some(rows)) => {
                curve.feed(t, rows.iter().map(|&r| r as usize), &Progress::default())
            }
        });
        done.into_iter().collect::<Result<()>>()?;
        self.rows += n as u64;
        Ok(())
    }

    /// The profile of every piece added.
    pub fn finish(self) -> Profile {
        let Self {
            setup,
            counts,
            curves,
            rows,
            ..
        } = self;
        let Setup {
            opts,
            span,
            window_ns,
            volumes: names,
            stream_ids,
            single_stream,
            ..
        } = setup;
        let Counts {
            mut whole,
            volumes,
            streams,
        } = counts;
        let (volumes, streams) = (volumes.groups, streams.groups);
        for v in &volumes {
            whole.acc.seq.merge(&v.acc.seq);
        }
        let figures = |g: Group, mrc| {
            let (interarrival, latency) = (g.gaps.figures(), g.latencies());
            g.acc.figures(span, window_ns, mrc, interarrival, latency)
        };
        let whole_mrc = curves.whole.map(Curve::finish);
        let multi_volume = volumes.len() > 1;
        let per_group = opts.mrc == MrcScope::All;
        let window_series: Vec<Vec<u32>> = volumes.iter().map(|v| v.acc.windows.clone()).collect();
        let mut volume_curves = curves.volumes.into_iter().map(Curve::finish);
        let volume_figures: Vec<_> = volumes
            .into_iter()
            .map(|g| {
                let mrc = if multi_volume {
                    volume_curves.next()
                } else {
                    whole_mrc.clone().filter(|_| per_group)
                };
                figures(g, mrc)
            })
            .collect();
        let trace = figures(whole, whole_mrc);
        let stream_figures: Vec<(u32, _)> = if stream_ids.is_empty() {
            // one stream: its figures are the trace's
            single_stream.map(|id| (id, trace.clone())).into_iter().collect()
        } else {
            let mut stream_curves = curves.streams.into_iter().map(Curve::finish);
            stream_ids
                .iter()
                .zip(streams)
                .map(|(&id, g)| (id, figures(g, stream_curves.next())))
                .collect()
        };
        let mut names = names;
        names.resize_with(volume_figures.len(), String::new);
        super::assemble(
            &names,
            super::GroupFigures {
                trace,
                volumes: volume_figures,
                streams: stream_figures,
                window_series,
            },
            rows,
            opts,
        )
    }
}

#[cfg(test)]
pub(super) mod tests {
    use serde_json::Value;

    use super::*;
    use crate::trace::Trace;

    /// A trace of three volumes (and a fourth named but never used) and five streams, with
    /// reuse, runs, zero gaps, trims, flushes and latencies (some unknown), from a seeded
    /// generator.
    pub(super) fn mixed(n: usize, seed: u64) -> Trace {
        let mut x = seed;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        let mut t = Trace {
            volumes: vec!["a".into(), "b".into(), "c".into(), "idle".into()],
            latency_ns: Some(Vec::new()),
            ..Trace::default()
        };
        let (mut ts, mut end) = (0u64, 0u64);
        for _ in 0..n {
            ts += [0, 1, 250, 9_000, 1_000_000][next(5) as usize];
            let size = [512u32, 4096, 8192, 65536][next(4) as usize];
            let offset = match next(3) {
                0 => end,
                1 => next(64) * 4096,
                _ => next(1 << 20) * 512,
            };
            end = offset + u64::from(size);
            let op = [0u8, 0, 1, 1, 2, 3][next(6) as usize];
            t.ts_ns.push(ts);
            t.offset.push(offset);
            t.size.push(if op == 3 { 0 } else { size });
            t.op.push(op);
            t.volume.push(next(3) as u32);
            t.stream.push(next(5) as u32 * 7);
            let latency = if next(10) == 0 {
                LATENCY_UNKNOWN
            } else {
                1_000 + next(5_000_000)
            };
            t.latency_ns.as_mut().unwrap().push(latency);
        }
        t
    }

    pub(super) fn chunked(t: &TraceView<'_>, cuts: &[usize], opts: &Options) -> Profile {
        let pieces: Vec<TraceView<'_>> = cuts.windows(2).map(|w| t.rows(w[0]..w[1])).collect();
        let mut survey = Survey::new(t.volumes.len());
        for p in &pieces {
            survey.add(p).unwrap();
        }
        let mut c = Chunked::new(survey, t.volumes.to_vec(), opts).unwrap();
        for p in &pieces {
            c.add(p).unwrap();
        }
        c.finish()
    }

    /// Compares two profiles' JSON: every figure equal (floats to 1e-9 relative), but
    /// percentiles within the sketch's 0.1 % and the fits' KS distances and sample sizes
    /// (taken differently) only present alike.
    pub(super) fn same(a: &Value, b: &Value, path: &str) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                assert_eq!(
                    x.keys().collect::<Vec<_>>(),
                    y.keys().collect::<Vec<_>>(),
                    "{path}"
                );
                for (k, v) in x {
                    let p = format!("{path}.{k}");
                    let sketched = ["percentiles_us", "latency_us"].iter().any(|s| path.contains(s));
                    match k.as_str() {
                        "criterion" | "sample_size" | "ks" | "best" => {}
                        "p50" | "p90" | "p95" | "p99" | "p999" | "max" if sketched => {
                            let (u, w) = (v.as_f64().unwrap(), y[k].as_f64().unwrap());
                            assert!(
                                (u - w).abs() <= 1e-3 * u.abs().max(w.abs()) + 1e-9,
                                "{p}: {u} vs {w}"
                            );
                        }
                        "candidates" => {
                            // the same candidates with the same parameters (from the same
                            // moments), in the order their KS distances give
                            let by_name = |c: &Value| {
                                let mut v: Vec<(String, Value)> = c
                                    .as_array()
                                    .unwrap()
                                    .iter()
                                    .map(|c| (c["name"].to_string(), c["params"].clone()))
                                    .collect();
                                v.sort_by(|a, b| a.0.cmp(&b.0));
                                v
                            };
                            let (u, w) = (by_name(v), by_name(&y[k]));
                            assert_eq!(u.len(), w.len(), "{p}");
                            for ((n, a), (m, b)) in u.iter().zip(&w) {
                                assert_eq!(n, m, "{p}");
                                same(a, b, &format!("{p}.{n}"));
                            }
                        }
                        _ => same(v, &y[k], &p),
                    }
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len(), "{path}");
                for (i, (u, w)) in x.iter().zip(y).enumerate() {
                    same(u, w, &format!("{path}[{i}]"));
                }
            }
            (Value::Number(x), Value::Number(y)) => {
                let (u, w) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!((u - w).abs() <= 1e-9 * u.abs().max(w.abs()), "{path}: {u} vs {w}");
            }
            _ => assert_eq!(a, b, "{path}"),
        }
    }

    #[test]
    fn pieces_give_the_whole_traces_figures() {
        let t = mixed(30_000, 7);
        let v = t.view();
        let opts = Options {
            by: Some(super::super::GroupBy::Stream),
            ..Options::default()
        };
        let whole = serde_json::to_value(super::super::characterize(&v, &opts).unwrap()).unwrap();
        for cuts in [
            vec![0, 30_000],
            vec![0, 1, 2, 9_999, 10_000, 29_000, 30_000],
            vec![0, 777, 15_000, 30_000],
        ] {
            let pieces = serde_json::to_value(chunked(&v, &cuts, &opts)).unwrap();
            same(&whole, &pieces, "profile");
        }
    }

    #[test]
    fn sampled_curves_are_the_whole_traces_at_the_same_rate() {
        let t = mixed(20_000, 3);
        let v = t.view();
        let opts = Options {
            mrc_sampling: Some(0.25),
            ..Options::default()
        };
        let whole = serde_json::to_value(super::super::characterize(&v, &opts).unwrap()).unwrap();
        let pieces = serde_json::to_value(chunked(&v, &[0, 5_000, 12_345, 20_000], &opts)).unwrap();
        same(&whole["mrc"], &pieces["mrc"], "mrc");
        same(
            &whole["volumes"]["b"]["mrc"],
            &pieces["volumes"]["b"]["mrc"],
            "volumes.b.mrc",
        );
        same(
            &whole["streams"]["14"]["mrc"],
            &pieces["streams"]["14"]["mrc"],
            "streams.14.mrc",
        );
    }

    #[test]
    fn one_stream_and_one_volume_take_the_traces_figures() {
        let mut t = mixed(5_000, 11);
        t.volume.fill(0);
        t.stream.fill(3);
        t.volumes.truncate(1);
        let v = t.view();
        let opts = Options::default();
        let whole = serde_json::to_value(super::super::characterize(&v, &opts).unwrap()).unwrap();
        let pieces = serde_json::to_value(chunked(&v, &[0, 2_500, 5_000], &opts)).unwrap();
        same(&whole, &pieces, "profile");
    }

    #[test]
    fn pieces_out_of_order_are_refused() {
        let t = mixed(100, 5);
        let v = t.view();
        let mut survey = Survey::new(3);
        survey.add(&v.rows(50..100)).unwrap();
        assert!(survey.add(&v.rows(0..50)).is_err());
    }

    #[test]
    fn a_survey_in_any_order_prepares_the_same_counting() {
        // files that interleave in time are surveyed one after another: here the pieces come
        // backwards, and one of them reversed inside
        let t = mixed(12_000, 9);
        let v = t.view();
        let opts = Options::default();
        let middle = 4_000..8_000;
        let backwards = |c: &[u64]| c[middle.clone()].iter().rev().copied().collect::<Vec<_>>();
        let rows = Trace {
            ts_ns: backwards(&t.ts_ns),
            offset: backwards(&t.offset),
            size: t.size[middle.clone()].iter().rev().copied().collect(),
            op: t.op[middle.clone()].iter().rev().copied().collect(),
            volume: t.volume[middle.clone()].iter().rev().copied().collect(),
            stream: t.stream[middle.clone()].iter().rev().copied().collect(),
            volumes: t.volumes.clone(),
            ..Trace::default()
        };
        let mut survey = Survey::new(0);
        survey.add_in_any_order(&v.rows(8_000..12_000));
        survey.add_in_any_order(&rows.view());
        survey.add_in_any_order(&v.rows(0..4_000));
        assert_eq!(survey.rows(), 12_000);
        let mut c = Chunked::new(survey, t.volumes.clone(), &opts).unwrap();
        for cut in [0..4_000, 4_000..8_000, 8_000..12_000] {
            c.add(&v.rows(cut)).unwrap();
        }
        let whole = serde_json::to_value(super::super::characterize(&v, &opts).unwrap()).unwrap();
        same(&whole, &serde_json::to_value(c.finish()).unwrap(), "profile");
    }
}
