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

mod generate;
mod mix;
pub mod preset;
mod sample;
mod train;
mod used;

use serde::{Deserialize, Serialize};

pub use generate::{generate, GenerateOptions};
pub use mix::mix;
pub use preset::Preset;
pub use train::{train, TrainOptions};
pub use train::{HEADS, NEAR_GAP};

use crate::error::{Error, Result};

pub const FORMAT: &str = "iomimic-model";
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Always `iomimic-model`.
    pub format: String,
    /// Schema version, 1.
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
    /// Stats for edges seen too rarely to carry their own.
    pub defaults: Stats,
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
}

/// How interleaved streams continue (Keeton's detangled runs).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Streams {
    /// P(a continuation continues the request d back on its volume), for d = 2, 3, ...
    pub continuation_depth: Vec<f64>,
    /// P(a near request follows the request d back on its volume), for d = 1, 2, ...
    pub near_depth: Vec<f64>,
    /// Size of the hole a near request leaves, in bytes.
    pub near_gap: Sizes,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    pub states: Vec<State>,
    /// Where requests start (top level) or enter this chain from outside it (lower levels).
    pub initial: Vec<f64>,
    /// Out-edges of each state.
    pub transitions: Vec<Vec<Edge>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub volume: u32,
    /// Byte range `[start, end)`.
    pub start: u64,
    pub end: u64,
    #[serde(default)]
    pub children: Option<Box<Chain>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    pub to: u32,
    pub p: f64,
    /// Requests seen on this edge in training.
    #[serde(default)]
    pub count: u64,
    #[serde(default)]
    pub stats: Option<Stats>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Stats {
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
    /// Gap before the request, in ns at the workload's mean rate.
    pub interarrival: Dist,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sizes {
    pub bytes: Vec<u32>,
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
    /// Depth of the re-used block in the thread's LRU stack of distinct 4 KiB blocks (where
    /// requests start; 1 is the most recently used), `[from, to)`, and its probability.
    pub buckets: Vec<ReuseBucket>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReuseBucket {
    pub from: u64,
    pub to: u64,
    pub p: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RateProfile {
    pub window_ns: u64,
    /// Share of requests in each window, in order.
    pub shares: Vec<f64>,
}

/// Probabilities are accepted when they sum to 1 within this.
const SUM_TOLERANCE: f64 = 1e-6;

fn invalid(path: &str, what: impl std::fmt::Display) -> Error {
    Error::Usage(format!("model field {path}: {what}"))
}

fn check_probabilities(path: &str, p: &[f64]) -> Result<()> {
    if let Some(i) = p.iter().position(|x| !(0.0..=1.0).contains(x)) {
        return Err(invalid(
            &format!("{path}[{i}]"),
            format!("{} is not a probability", p[i]),
        ));
    }
    let sum: f64 = p.iter().sum();
    if (sum - 1.0).abs() > SUM_TOLERANCE {
        return Err(invalid(path, format!("probabilities sum to {sum}, not 1")));
    }
    Ok(())
}

impl Model {
    /// Parses and validates a model; a bad file names the field path.
    pub fn from_json(text: &str) -> Result<Model> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let model: Model = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." {
                Error::Usage(format!("model: {inner}"))
            } else {
                invalid(&path, inner)
            }
        })?;
        model.validate()?;
        Ok(model)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("models hold only serialisable values")
    }

    /// Checks what the types cannot: probabilities, ranges, ids and distributions.
    pub fn validate(&self) -> Result<()> {
        if self.format != FORMAT {
            return Err(invalid(
                "format",
                format!("expected {FORMAT:?}, found {:?}", self.format),
            ));
        }
        if self.version != VERSION {
            return Err(invalid(
                "version",
                format!("this iomimic reads version {VERSION}, found {}", self.version),
            ));
        }
        if self.threads.is_empty() {
            return Err(invalid("threads", "a model needs at least one thread"));
        }
        if self.volumes.is_empty() {
            return Err(invalid("volumes", "a model needs at least one volume"));
        }
        check_probabilities(
            "threads[].weight",
            &self.threads.iter().map(|t| t.weight).collect::<Vec<_>>(),
        )?;
        if self.rate.window_ns == 0 {
            return Err(invalid("rate.window_ns", "must be positive"));
        }
        check_probabilities("rate.shares", &self.rate.shares)?;
        for (i, t) in self.threads.iter().enumerate() {
            let path = format!("threads[{i}]");
            if t.alignment == 0 {
                return Err(invalid(&format!("{path}.alignment"), "must be positive"));
            }
            check_stats(&format!("{path}.defaults"), &t.defaults)?;
            if let Some(a) = &t.activity {
                if a.len() != self.rate.shares.len() {
                    return Err(invalid(
                        &format!("{path}.activity"),
                        format!(
                            "{} windows, but rate.shares has {}",
                            a.len(),
                            self.rate.shares.len()
                        ),
                    ));
                }
                check_probabilities(&format!("{path}.activity"), a)?;
            }
            self.check_chain(&format!("{path}.chain"), &t.chain, None)?;
            if let Some(st) = &t.streams {
                for (name, p) in [
                    ("continuation_depth", &st.continuation_depth),
                    ("near_depth", &st.near_depth),
                ] {
                    if !p.is_empty() {
                        check_probabilities(&format!("{path}.streams.{name}"), p)?;
                    }
                }
                if !st.near_gap.bytes.is_empty() {
                    check_probabilities(&format!("{path}.streams.near_gap.p"), &st.near_gap.p)?;
                }
            }
            if let Some(r) = &t.reuse {
                check_probabilities(
                    &format!("{path}.reuse.buckets[].p"),
                    &r.buckets.iter().map(|b| b.p).collect::<Vec<_>>(),
                )?;
                if let Some(j) = r.buckets.iter().position(|b| b.from == 0 || b.to <= b.from) {
                    return Err(invalid(
                        &format!("{path}.reuse.buckets[{j}]"),
                        "needs 1 <= from < to",
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_chain(&self, path: &str, c: &Chain, parent: Option<&State>) -> Result<()> {
        let n = c.states.len();
        if n == 0 {
            return Err(invalid(
                &format!("{path}.states"),
                "a chain needs at least one state",
            ));
        }
        if c.initial.len() != n || c.transitions.len() != n {
            return Err(invalid(
                path,
                format!(
                    "{n} states but {} initial probabilities and {} transition rows",
                    c.initial.len(),
                    c.transitions.len()
                ),
            ));
        }
        check_probabilities(&format!("{path}.initial"), &c.initial)?;
        for (s, state) in c.states.iter().enumerate() {
            let sp = format!("{path}.states[{s}]");
            let Some(volume) = self.volumes.get(state.volume as usize) else {
                return Err(invalid(
                    &format!("{sp}.volume"),
                    format!("no volume {}", state.volume),
                ));
            };
            if state.start >= state.end || state.end > volume.span_bytes.max(1) {
                return Err(invalid(
                    &sp,
                    format!(
                        "range [{}, {}) is empty or past the volume span {}",
                        state.start, state.end, volume.span_bytes
                    ),
                ));
            }
            if let Some(p) = parent {
                if state.volume != p.volume || state.start < p.start || state.end > p.end {
                    return Err(invalid(&sp, "a child state must lie inside its parent"));
                }
            }
            if s > 0 {
                let prev = &c.states[s - 1];
                if (prev.volume, prev.end) > (state.volume, state.start) {
                    return Err(invalid(
                        &sp,
                        "states must be sorted by volume and start and must not overlap",
                    ));
                }
            }
            let edges = &c.transitions[s];
            if !edges.is_empty() {
                check_probabilities(
                    &format!("{path}.transitions[{s}][].p"),
                    &edges.iter().map(|e| e.p).collect::<Vec<_>>(),
                )?;
            }
            for (e, edge) in edges.iter().enumerate() {
                let ep = format!("{path}.transitions[{s}][{e}]");
                if edge.to as usize >= n {
                    return Err(invalid(
                        &format!("{ep}.to"),
                        format!("no state {} ({n} states)", edge.to),
                    ));
                }
                if let Some(st) = &edge.stats {
                    check_stats(&format!("{ep}.stats"), st)?;
                }
            }
            if let Some(children) = &state.children {
                self.check_chain(&format!("{sp}.children"), children, Some(state))?;
            }
        }
        Ok(())
    }
}

fn check_stats(path: &str, s: &Stats) -> Result<()> {
    check_probabilities(&format!("{path}.ops"), &s.ops)?;
    for (name, p) in [("sequential", s.sequential), ("reuse", s.reuse)] {
        if !(0.0..=1.0).contains(&p) {
            return Err(invalid(
                &format!("{path}.{name}"),
                format!("{p} is not a probability"),
            ));
        }
    }
    for (name, p) in [("continuation", s.continuation), ("near", s.near)] {
        if !(0.0..=1.0).contains(&p) {
            return Err(invalid(
                &format!("{path}.{name}"),
                format!("{p} is not a probability"),
            ));
        }
    }
    if s.sequential + s.reuse + s.continuation + s.near > 1.0 + SUM_TOLERANCE {
        return Err(invalid(
            path,
            "sequential + continuation + near + reuse exceeds 1",
        ));
    }
    if s.sizes.bytes.is_empty() || s.sizes.bytes.len() != s.sizes.p.len() {
        return Err(invalid(
            &format!("{path}.sizes"),
            "needs as many probabilities as sizes, at least one",
        ));
    }
    check_probabilities(&format!("{path}.sizes.p"), &s.sizes.p)?;
    if let Some(j) = s.sizes.bytes.iter().position(|&b| b == 0) {
        // a read or write of no bytes is no request (the readers refuse one too)
        return Err(invalid(
            &format!("{path}.sizes.bytes[{j}]"),
            "a size must be at least 1 byte",
        ));
    }
    let bad = |what: &str| Err(invalid(&format!("{path}.interarrival"), what.to_string()));
    let ok = |x: f64| x.is_finite() && x >= 0.0;
    match &s.interarrival {
        Dist::Fixed { value_ns } if !ok(*value_ns) => bad("value_ns must be >= 0"),
        Dist::Normal { mean_ns, sd_ns } if !ok(*mean_ns) || !ok(*sd_ns) => {
            bad("mean_ns and sd_ns must be >= 0")
        }
        Dist::Exponential { mean_ns } if !(ok(*mean_ns) && *mean_ns > 0.0) => bad("mean_ns must be > 0"),
        Dist::Poisson { lambda_ns } if !(ok(*lambda_ns) && *lambda_ns > 0.0) => bad("lambda_ns must be > 0"),
        Dist::Gamma { shape, scale_ns }
            if !(ok(*shape) && *shape > 0.0 && ok(*scale_ns) && *scale_ns > 0.0) =>
        {
            bad("shape and scale_ns must be > 0")
        }
        Dist::Lognormal { mu, sigma } if !(mu.is_finite() && ok(*sigma)) => {
            bad("mu must be finite and sigma >= 0")
        }
        Dist::Empirical { quantiles_ns }
            if quantiles_ns.is_empty()
                || quantiles_ns.windows(2).any(|w| w[1] < w[0])
                || !quantiles_ns.iter().all(|&q| ok(q)) =>
        {
            bad("quantiles_ns must be non-empty, non-negative and non-decreasing")
        }
        _ => Ok(()),
    }
}
