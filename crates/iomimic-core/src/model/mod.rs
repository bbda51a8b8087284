//! The hierarchical state-diagram workload model: its on-disk form, loading with validation,
//! training from a trace and generating synthetic traces.
//!
//! A model holds one [`Thread`] per stream (or one for the whole trace). A thread's [`Chain`]
//! has states that are address ranges of volumes; each state may expand into a chain of its
//! own over equal sub-ranges, to any depth. Edges carry the probability that the next request
//! moves from one state to another and the [`Stats`] of requests arriving over that edge:
//! op mix, sequential and reuse probabilities, a size distribution and an inter-arrival
//! distribution. See `docs/model.md` for the semantics.

// Numerical code: float-to-count casts are of non-negative values by construction, and the
// training helpers take the trace's columns and options one by one.
#![allow(
    clippy::cast_sign_loss,
    clippy::many_single_char_names,
    clippy::too_many_arguments,
    clippy::float_cmp
)]

mod check;
mod counts;
mod generate;
mod mix;
pub mod preset;
mod rows;
mod sample;
mod train;
mod used;

use serde::{Deserialize, Serialize};

pub use generate::{generate, generate_watched, GenerateOptions, Generation, SLICE_REQUESTS};
pub use mix::mix;
pub use preset::Preset;
pub use train::{
    plan_watched, train, train_part, train_watched, Group, Part, Plan, Shared, TrainOptions, TrainStream,
};
pub use train::{HEADS, NEAR_GAP};

use crate::error::{Error, Result};

pub const FORMAT: &str = "iomimic-model";
/// The schema this build writes. Version 1 files (before the arrival process, per-op stats,
/// per-volume stats, fine placement and request-keyed reuse) load and generate as they did;
/// version 2 files differ from version 3 only in writing every state's edges as objects
/// (version 3 writes sparse rows, [`rows`]).
/// Version 4 writes a child chain's states without their ranges when they are their parent's
/// equal split ([`equal_split`]), and a chain's entry probabilities sparsely when most are 0.
/// Version 5 writes shares that came from counts as the counts ([`counts`]).
pub const VERSION: u32 = 5;
/// The schema versions this build reads.
pub const READS: [u32; 5] = [1, 2, 3, 4, 5];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Always `iomimic-model`.
    pub format: String,
    /// Schema version ([`VERSION`]; [`READS`] are read).
    pub version: u32,
    pub name: String,
    #[serde(default)]
    pub source: Option<String>,
    /// Requests and span of the training trace (or of the workload a preset describes).
    pub requests: u64,
    pub duration_ns: u64,
    /// Depth of the state hierarchy and states per level it was trained with.
    pub levels: u32,
    pub states: u32,
    pub volumes: Vec<Volume>,
    pub threads: Vec<Thread>,
    pub rate: RateProfile,
    /// How levels and states were chosen, when they were.
    #[serde(default)]
    pub selection: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Volume {
    pub name: String,
    /// Bytes addressed: the largest end offset seen.
    pub span_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Thread {
    pub name: String,
    /// Stream id given to the requests this thread generates.
    pub stream: u32,
    /// Share of all requests.
    pub weight: f64,
    /// Random offsets are multiples of this many bytes.
    pub alignment: u64,
    /// Stats for edges seen too rarely to carry their own (and no volume stats apply).
    pub defaults: Stats,
    /// The stats of the requests on each volume the thread uses, for edges into that volume
    /// without their own: a log volume keeps its writes and runs beside a data volume.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<VolumeStats>,
    pub chain: Chain,
    /// Temporal-locality extension: LRU depths of re-used blocks.
    #[serde(default)]
    pub reuse: Option<Reuse>,
    /// Interleaved streams: which earlier request of the volume a continuation continues.
    #[serde(default)]
    pub streams: Option<Streams>,
    /// When the thread is active: its share of its own requests in each window of the rate
    /// profile, so its weight over short intervals follows the trace (a thread busy only in
    /// the first half stays there). Absent: it follows the workload's profile.
    #[serde(default)]
    pub activity: Option<Vec<f64>>,
    /// The streams of a thread trained from several that share data, each with its share of
    /// the thread's requests: every request generated is given one of them by share (empty:
    /// every request is `stream`'s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<(u32, f64)>,
}

/// One volume's stats within a thread.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VolumeStats {
    pub volume: u32,
    pub stats: Stats,
}

/// How interleaved streams continue (Keeton's detangled runs).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Streams {
    /// P(a continuation continues the request d back on its volume), for d = 2, 3, ...
    #[serde(with = "counts::shares")]
    pub continuation_depth: Vec<f64>,
    /// P(a near request follows the request d back on its volume), for d = 1, 2, ...
    #[serde(with = "counts::shares")]
    pub near_depth: Vec<f64>,
    /// Size of the hole a near request leaves, in bytes.
    pub near_gap: Sizes,
}

/// `k` equal ranges of `[start, end)` of `volume` (fewer when it is narrower): how training
/// splits a state into its children, and so what a file leaves out ([`rows`]).
pub(crate) fn equal_split(volume: u32, start: u64, end: u64, k: u32) -> Vec<(u32, u64, u64)> {
    let width = end - start;
    let k = u64::from(k).min(width).max(1);
    (0..k)
        .map(|j| {
            (
                volume,
                start + (u128::from(width) * u128::from(j) / u128::from(k)) as u64,
                start + (u128::from(width) * u128::from(j + 1) / u128::from(k)) as u64,
            )
        })
        .collect()
}

/// Written and read by [`rows`]: a file lists only the states with edges.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(try_from = "rows::ChainFile")]
pub struct Chain {
    pub states: Vec<State>,
    /// Where requests start (top level) or enter this chain from outside it (lower levels).
    pub initial: Vec<f64>,
    /// Out-edges of each state: only those seen (a state without any has an empty row).
    pub transitions: Vec<Vec<Edge>>,
}

/// Written and read by [`rows`]: a child state that is its parent's equal split leaves out its
/// range.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(try_from = "rows::StateFile")]
pub struct State {
    pub volume: u32,
    /// Byte range `[start, end)`.
    pub start: u64,
    pub end: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Box<Chain>>,
    /// A leaf's fresh placements counted over equal sub-ranges: new requests land by these
    /// counts rather than uniformly, so where they fall holds below the leaf's width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fine: Option<Vec<u32>>,
    /// Of `fine`'s counts, the fresh placements of requests the trace went on to re-use: read
    /// from models trained before [`Population::cells`], whose walk places a population's
    /// requests by these counts (re-used ones) and the rest of `fine`'s (the others) where a
    /// population keeps no cells. Training no longer writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fine_reused: Option<Vec<u32>>,
    /// A top-level state's stays: how many requests in a row the thread made in it per visit.
    /// The walk stays a drawn length and then leaves by the edges to other states, so a long
    /// scan or a storm stays one visit (a self-loop's odds alone give geometric stays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stays: Option<Vec<Bucket>>,
    /// A top-level state's runs, per request class that makes long ones there: its requests of
    /// that class are placed as runs (a start, then the next requests one after another), not
    /// one at a time by their edges, so a scan or a log keeps its length and where it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<Runs>>,
    /// A top-level state with stays: its requests in each of [`PROFILE_SEGMENTS`] equal parts
    /// of the thread's requests, in order. The walk steers towards the states behind these
    /// counts when it leaves a state, so a bursty state's visits come when the trace's did and
    /// as many (docs/model.md, Extensions: occupancy profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Vec<u32>>,
}

/// Parts of a thread's requests a top-level state's [`State::profile`] counts over.
pub const PROFILE_SEGMENTS: usize = 64;

/// The runs of one request class in a top-level state: requests of the class (its op and size
/// class) each starting where the previous one of a recent run of the class ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Runs {
    /// Reads 0, the rest 1.
    pub op: u8,
    /// An index of [`SIZE_CLASSES`].
    pub size_class: u8,
    /// The sizes of the class's requests in the state (an edge's sizes are the whole
    /// state's, or the volume's, and would put other sizes into a scan).
    pub sizes: Sizes,
    /// Equal cells of the state that fresh starts are counted in ([`RUN_CELLS`]; files that
    /// do not say were written with 256).
    #[serde(default = "cells_before_4096")]
    pub cells: u64,
    /// Runs that started afresh, as `[cell, from, to, count]`: `count` runs whose start lay in
    /// `cell` (of [`Self::cells`]) and whose length in requests was in
    /// `[from, to)`. A start and its length together: a journal's one long run and the odd
    /// writes beside it each start where they did.
    pub fresh: Vec<[u64; 4]>,
    /// Share of runs that start where an earlier run of the class started (a re-scan) ...
    #[serde(default)]
    pub restart: f64,
    /// ... and their lengths in requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "counts::buckets")]
    pub restarts: Vec<Bucket>,
    /// What every fresh start's offset is a multiple of (a power of two, at most 1 MiB): a
    /// scan of 64 KiB reads on a 64 KiB grid stays on it.
    pub alignment: u64,
    /// The trace's runs in order, where they are few ([`MAX_RUN_SEQUENCE`]): `[start,
    /// length]`, `start` a cell for a run started afresh or [`Self::cells`] + k for a restart
    /// of the k-th (from 0) fresh run. The walk makes its first runs so and draws the rest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sequence: Vec<[u64; 2]>,
}

/// Coarsest alignment a class's fresh run starts are given ([`Runs::alignment`]).
pub const MAX_RUN_ALIGNMENT: u64 = 1 << 20;
/// Most runs of a class a model keeps in order ([`Runs::sequence`]).
pub const MAX_RUN_SEQUENCE: usize = 1024;

/// The cell (of `cells` equal ones of `[start, end)`) that `offset` lies in.
#[inline]
pub fn cell_of(start: u64, end: u64, offset: u64, cells: u64) -> u64 {
    let cell =
        u128::from(offset.saturating_sub(start)) * u128::from(cells) / u128::from((end - start).max(1));
    cell.min(u128::from(cells - 1)) as u64
}

/// Cells of a top-level state that fresh runs' starts are counted in: fine enough (a MiB of a
/// 4 GiB state) that fresh scans overlap one another as the trace's did. At 256 their starts
/// fell anywhere in 16 MiB, and the blocks re-accessed of a re-scanned region varied by ±3
/// points from one generation to the next (docs/model.md, Extensions: runs).
pub const RUN_CELLS: u64 = 4096;
/// Most cells a model's runs may use.
pub const MAX_RUN_CELLS: u64 = 1 << 20;

fn cells_before_4096() -> u64 {
    256
}
/// Request classes a state's runs are kept by ([`Runs::slot`]): reads and the rest, by size
/// class.
pub const RUN_SLOTS: usize = 2 * SIZE_CLASSES.len();

impl Runs {
    /// The slot of a request of `op` and `size` among a state's classes of runs.
    #[inline]
    pub fn slot(op: u8, size: u32) -> usize {
        usize::from(op.min(1)) * SIZE_CLASSES.len() + size_class(size)
    }

    /// The slot of these runs' class.
    #[inline]
    pub fn own_slot(&self) -> usize {
        usize::from(self.op.min(1)) * SIZE_CLASSES.len() + usize::from(self.size_class)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    pub to: u32,
    pub p: f64,
    /// Requests seen on this edge in training.
    #[serde(default)]
    pub count: u64,
    /// Boxed: most edges have none, and an edge is then a few words, not a whole [`Stats`].
    #[serde(default)]
    pub stats: Option<Box<Stats>>,
}

/// Written and read by [`counts`]: as counts out of `n` where training counted them.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(try_from = "counts::StatsFile")]
pub struct Stats {
    /// Requests the shares were counted on (0: not counted — a preset's, or read as shares).
    pub n: u64,
    /// Probabilities of read, write, trim, flush.
    pub ops: [f64; 4],
    /// Probability that a request starts where the previous request of its volume ended.
    pub sequential: f64,
    /// Probability that a request re-uses an address this thread used before.
    pub reuse: f64,
    /// Probability that it continues an older run of its volume (where one of the last
    /// requests of the volume, not the last, ended): an interleaved stream.
    #[serde(default)]
    pub continuation: f64,
    /// Probability that it starts a little past where a recent request of its volume ended
    /// (a forward hole of at most 64 KiB).
    #[serde(default)]
    pub near: f64,
    pub sizes: Sizes,
    /// Gap before the request, in ns at the workload's mean rate. Version 2 models with an
    /// arrival process keep it only in a thread's defaults (it orders the threads' requests;
    /// the arrival process times them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interarrival: Option<Dist>,
    /// Placement and sizes of reads and of writes apart (`[read, write]`), when both were seen
    /// often enough, and of trims (`[read, write, trim]`) when they were too (else trims are
    /// placed and sized as writes); the fields above then describe them all together. Flushes
    /// have no address or size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_op: Vec<OpStats>,
}

/// How requests of one op are placed and sized.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OpStats {
    // each may be left out where it is 0 (a file's counts, [`counts`])
    #[serde(default)]
    pub sequential: f64,
    #[serde(default)]
    pub reuse: f64,
    #[serde(default)]
    pub continuation: f64,
    #[serde(default)]
    pub near: f64,
    /// Sizes of the requests not re-used (a re-use repeats its earlier request's size).
    pub sizes: Sizes,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sizes {
    pub bytes: Vec<u32>,
    #[serde(with = "counts::shares")]
    pub p: Vec<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Dist {
    Fixed {
        value_ns: f64,
    },
    Normal {
        mean_ns: f64,
        sd_ns: f64,
    },
    Exponential {
        mean_ns: f64,
    },
    Poisson {
        lambda_ns: f64,
    },
    Gamma {
        shape: f64,
        scale_ns: f64,
    },
    Lognormal {
        mu: f64,
        sigma: f64,
    },
    /// Equally spaced quantiles (from the minimum to the maximum), linearly interpolated.
    Empirical {
        quantiles_ns: Vec<f64>,
    },
}

impl Dist {
    pub fn mean_ns(&self) -> f64 {
        match self {
            Dist::Fixed { value_ns } => *value_ns,
            Dist::Normal { mean_ns, .. } | Dist::Exponential { mean_ns } => *mean_ns,
            Dist::Poisson { lambda_ns } => *lambda_ns,
            Dist::Gamma { shape, scale_ns } => shape * scale_ns,
            Dist::Lognormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            Dist::Empirical { quantiles_ns } => {
                // mean of the piecewise-linear quantile function
                let q = quantiles_ns;
                if q.len() < 2 {
                    return q.first().copied().unwrap_or(0.0);
                }
                q.windows(2).map(|w| f64::midpoint(w[0], w[1])).sum::<f64>() / (q.len() - 1) as f64
            }
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Reuse {
    /// Version 1: depth of the re-used block in the thread's LRU stack of distinct 4 KiB blocks
    /// where requests start. Version 2: depth of the re-used request in the LRU stack of
    /// distinct requests (keyed by volume and start offset). `[from, to)` and its probability;
    /// 1 is the most recently used.
    #[serde(with = "counts::buckets")]
    pub buckets: Vec<Bucket>,
    /// Version 2: the depths again, by the re-using request's op and the re-used request's op
    /// and size class, so writes re-read and reads re-read each come back as soon as they did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ReuseClass>,
    /// Version 2: how much less often the last quarter of the thread placed requests afresh
    /// than the whole thread did (1: as often). Past the trained length, fresh placements are
    /// scaled by it (the rest re-use), so the footprint grows as the trace's did at its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_fresh: Option<f64>,
    /// Version 2, where training found it makes a closer trace (`selection.population`): per
    /// top-level state, the trace's requests placed afresh there and how often each was
    /// re-used. Generation then draws the state's fresh placements and re-uses from it without
    /// replacement, as an independent-reference stream with the trace's popularity would make
    /// them (`generate/reuse.rs`, [`Urns`](crate::model::generate)); empty: the edges' odds
    /// and the stacks decide alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub population: Vec<Population>,
}

/// One top-level state's population (see [`Reuse::population`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Population {
    /// `[touches, requests]`: how many requests placed afresh were touched that many times
    /// (placed, then re-used `touches − 1` times), touches rising.
    pub touches: Vec<[u64; 2]>,
    /// Re-uses of requests not placed afresh (a run's requests, re-used later).
    pub other: u64,
    /// Where the state's most re-used requests lay: for each of its hottest (the most touches
    /// first, at most [`HOT_SPOTS`]), the cell of [`HOT_CELLS`] equal cells of the state's byte
    /// range that its first placement fell in. Generation places those requests in their cells,
    /// so the few requests that take most of a skewed workload's accesses lie where the trace's
    /// did rather than wherever the walk was when they came up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hot: Vec<u16>,
    /// Where the state's other requests placed afresh lay: per cell of [`PLACEMENT_CELLS`]
    /// equal cells of the state's byte range, `[not re-used, re-used]`. Generation places the
    /// others by these counts (the re-used and the rest each by their own), not in the leaf the
    /// walk is in: the walk is where the trace's *accesses* were, dense where a hot set is,
    /// while new data lay where the trace placed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<[u32; 2]>,
}

/// Equal cells a top-level state is cut into for [`Population::cells`].
pub const PLACEMENT_CELLS: usize = 256;

/// Most hottest requests a top-level state's population places ([`Population::hot`]).
pub const HOT_SPOTS: usize = 256;
/// Equal cells a top-level state is cut into for [`Population::hot`].
pub const HOT_CELLS: u64 = 1 << 16;

/// Re-uses by one op of requests of one class.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReuseClass {
    /// The re-using request's op (0 read, 1 write).
    pub op: u8,
    /// The op of the request re-used.
    pub last_op: u8,
    /// The re-used request's size class: at most this many bytes (and more than the class
    /// below's).
    pub max_size: u32,
    /// The re-used request had been touched before (it was itself a re-use): re-uses of
    /// requests touched once are what make blocks re-accessed, so keeping them apart holds the
    /// share of the footprint that comes back, not only the miss-ratio curve.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub again: bool,
    /// Share of `op`'s re-uses.
    pub p: f64,
    /// Depths of its re-uses by recency (empty when all are by frequency).
    #[serde(with = "counts::buckets")]
    pub buckets: Vec<Bucket>,
    /// Share of its re-uses by frequency: they repeat the request of the class (in the
    /// top-level state) at a rank by touches among those touched twice or more, drawn from
    /// `ranks` (1 = the most touched), instead of one at a depth of its stack.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rank_share: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "counts::buckets")]
    pub ranks: Vec<Bucket>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// A range of counts `[from, to)` and its probability: drawn log-uniformly inside it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    pub from: u64,
    pub to: u64,
    pub p: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RateProfile {
    pub window_ns: u64,
    /// Share of requests in each window, in order.
    #[serde(with = "counts::shares")]
    pub shares: Vec<f64>,
    /// Version 2: when requests arrive, at a finer grain than `shares` (which then only orders
    /// the threads' requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<Arrivals>,
}

/// The arrival process: requests per fine window, and how they arrive inside a window, by
/// how busy the window is (see `docs/model.md`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Arrivals {
    pub window_ns: u64,
    /// Requests in each window of the trace.
    pub counts: Vec<u32>,
    /// Windows per block: blocks are the units the profile is extended by past the trace.
    pub block: u32,
    /// The profile's period in blocks, when the trace shows one (extension follows its shape).
    #[serde(default)]
    pub period_blocks: Option<u32>,
    /// By how busy a window is, from the quietest.
    pub classes: Vec<RateClass>,
}

/// How requests arrive inside windows with at least `min_count` requests (and fewer than the
/// next class's).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RateClass {
    pub min_count: u32,
    /// Quantiles (equally spaced, from 0 to 1) of the share of the window between its first and
    /// last request.
    pub spread: Vec<f64>,
    /// Quantiles (as `spread`'s) of the share of the window before its first and after its last
    /// request, times (count + 1) / 2: about 1 for uniform arrivals whatever the count, so a
    /// class of windows of 8 to 15 requests gives each its own (a window of 8 uniform arrivals
    /// leaves 22 % of it empty on average, one of 15 only 12 %). Generation takes a window's
    /// spread from these where the class has them, from `spread` otherwise (older models).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub empty: Vec<f64>,
    /// Gap-class transitions `[from, to, count]` between consecutive gaps inside a window; `from`
    /// = [`GAP_CLASSES`] counts a window's first gap. Gaps are relative to the window's mean gap
    /// (see [`gap_class`]).
    pub transitions: Vec<[u32; 3]>,
}

/// Size classes of re-used requests: at most this many bytes (and more than the class below).
pub const SIZE_CLASSES: [u32; 4] = [4096, 16384, 65536, u32::MAX];
/// Request classes ([`request_class`]): an op (reads, the rest), a size class, and whether the
/// request was touched before.
pub const REQUEST_CLASSES: usize = 4 * SIZE_CLASSES.len();

/// The size class (an index of [`SIZE_CLASSES`]) of a request of `size` bytes.
#[inline]
pub fn size_class(size: u32) -> usize {
    SIZE_CLASSES
        .iter()
        .position(|&m| size <= m)
        .unwrap_or(SIZE_CLASSES.len() - 1)
}

/// The class of a request as a re-use target: `again × 8 + op × 4 + size class` (reads 0, the
/// rest 1; `again`: it re-touched an earlier request).
#[inline]
pub fn request_class(op: u8, size: u32, again: bool) -> u8 {
    u8::from(again) * 2 * SIZE_CLASSES.len() as u8
        + op.min(1) * SIZE_CLASSES.len() as u8
        + size_class(size) as u8
}

/// Gap classes: 0 is a gap of 0; class k ≥ 1 holds relative gaps in [2^(k−21), 2^(k−20)),
/// the first and last also holding what lies below and above.
pub const GAP_CLASSES: u32 = 32;

/// The class of relative gap `x` (a gap over its window's mean gap).
#[inline]
pub fn gap_class(x: f64) -> u32 {
    if x <= 0.0 {
        return 0;
    }
    let k = x.log2().floor() + 21.0;
    k.clamp(1.0, f64::from(GAP_CLASSES - 1)) as u32
}

/// The bounds `[lo, hi)` of gap class `k` ≥ 1.
#[inline]
pub fn gap_bounds(k: u32) -> (f64, f64) {
    let lo = (f64::from(k) - 21.0).exp2();
    (lo, 2.0 * lo)
}

impl Model {
    /// Parses and validates a model; a bad file names the field path. A model of an earlier
    /// version is then of this one (read as it was, it is written in this version's form).
    pub fn from_json(text: &str) -> Result<Model> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let mut model: Model = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." {
                Error::Usage(format!("model: {inner}"))
            } else {
                check::invalid(&path, inner)
            }
        })?;
        model.validate()?;
        model.version = VERSION;
        Ok(model)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("models hold only serialisable values")
    }
}
