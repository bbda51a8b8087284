//! The allocation schemes: each hypervisor's cache split among its VMs.
//! - `equal`: the same share each.
//! - `working-set`: shares as the working sets (fair to each VM, blind to the transactions).
//! - `transaction-aware`: Tang et al.'s GA. A genome is the VMs' weights; its fitness is how
//!   close (Euclidean) the weights lie to the VMs' normalized metrics: VM intensity (each VM's
//!   share of transaction time, the latency distribution), IO ratio and random-access
//!   intensity (the inverse mean request size), each metric used where every VM of the
//!   hypervisor has it.
//! - `optimal`: the allocation of least mean latency, from the hit curves directly.
//!   Latency is separable per VM, so with concave curves greedy marginal gain is optimal: the
//!   curves' linear pieces are taken in order of latency saved per byte, exactly. Where some
//!   curve is not concave (a cliff in a measured MRC), greedy can stop short of the cliff, so
//!   a dynamic programme over the GA's units is used instead: optimal at that grain.

use serde::Serialize;

use super::apps::System;
use super::ga::{self, GaOptions};
use super::latency::{self, Load};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    Equal,
    WorkingSet,
    TransactionAware,
    Optimal,
}

impl std::str::FromStr for Scheme {
    type Err = Error;

    fn from_str(s: &str) -> Result<Scheme> {
        match s.trim() {
            "equal" => Ok(Scheme::Equal),
            "working-set" => Ok(Scheme::WorkingSet),
            "transaction-aware" => Ok(Scheme::TransactionAware),
            "optimal" => Ok(Scheme::Optimal),
            other => Err(Error::Usage(format!(
                "`schemes`: {other:?} is not equal, working-set, transaction-aware or optimal"
            ))),
        }
    }
}

impl Scheme {
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Equal => "equal",
            Scheme::WorkingSet => "working-set",
            Scheme::TransactionAware => "transaction-aware",
            Scheme::Optimal => "optimal",
        }
    }
}

/// A plan: bytes per VM, and how it was found on each hypervisor.
#[derive(Debug, Clone)]
pub struct Plan {
    pub bytes: Vec<f64>,
    pub methods: Vec<String>,
    /// The GA's distance from its target, per hypervisor (transaction-aware only).
    pub fitness: Vec<Option<f64>>,
}

/// The plan `scheme` makes for `load`.
pub fn plan(sys: &System, load: &Load, scheme: Scheme, ga: &GaOptions, seed: u64) -> Plan {
    let weights = latency::vm_weights(sys, load);
    let mut bytes = vec![0.0; sys.vms.len()];
    let mut methods = Vec::new();
    let mut fitness = Vec::new();
    for (h, host) in sys.hosts.iter().enumerate() {
        let vms = &host.vms;
        let cache = host.cache_bytes;
        let mut fit = None;
        let (shares, method): (Vec<f64>, String) = match scheme {
            Scheme::Equal => (vec![1.0 / vms.len() as f64; vms.len()], "equal shares".into()),
            Scheme::WorkingSet => {
                let ws: Vec<f64> = vms.iter().map(|&v| sys.vms[v].working_set).collect();
                let total: f64 = ws.iter().sum();
                (
                    ws.iter().map(|w| w / total).collect(),
                    "shares as working sets".into(),
                )
            }
            Scheme::TransactionAware => {
                let (targets, used) = metrics(sys, vms, &weights);
                let cost = |w: &[f64]| distance(w, &targets);
                let (g, c) = ga::minimize(vms.len(), ga, seed ^ (h as u64).wrapping_mul(0x9e37_79b9), cost);
                fit = Some(c);
                let shares = g
                    .iter()
                    .map(|&u| f64::from(u) / f64::from(ga.units.max(1)))
                    .collect();
                (shares, format!("GA on {}", used.join(", ")))
            }
            Scheme::Optimal => {
                let c: Vec<f64> = vms.iter().map(|&v| weights[v] * (1.0 - sys.ratio)).collect();
                let curves: Vec<_> = vms.iter().map(|&v| &sys.vms[v].curve).collect();
                let (alloc, method) = if curves.iter().all(|c| c.is_concave()) {
                    (
                        greedy(&curves, &c, cache),
                        "greedy marginal gain (concave curves: optimal)".to_string(),
                    )
                } else {
                    let u = ga.units.max(1);
                    (
                        dynamic(&curves, &c, cache, u),
                        format!("dynamic programme over {u} units (a curve is not concave)"),
                    )
                };
                (alloc.iter().map(|b| b / cache).collect(), method)
            }
        };
        for (k, &v) in vms.iter().enumerate() {
            bytes[v] = shares[k] * cache;
        }
        methods.push(method);
        fitness.push(fit);
    }
    Plan {
        bytes,
        methods,
        fitness,
    }
}

fn normalized(values: &[f64]) -> Vec<f64> {
    let total: f64 = values.iter().sum();
    if total > 0.0 {
        values.iter().map(|v| v / total).collect()
    } else {
        vec![1.0 / values.len() as f64; values.len()]
    }
}

/// The fitness targets of the VMs `vms`: each metric normalized over them, and their names.
pub fn metrics(sys: &System, vms: &[usize], weights: &[f64]) -> (Vec<Vec<f64>>, Vec<&'static str>) {
    let mut targets = vec![normalized(&vms.iter().map(|&v| weights[v]).collect::<Vec<_>>())];
    let mut used = vec!["VM intensity"];
    let io: Option<Vec<f64>> = vms.iter().map(|&v| sys.vms[v].io_ratio).collect();
    if let Some(io) = io {
        targets.push(normalized(&io));
        used.push("IO ratio");
    }
    let random: Option<Vec<f64>> = vms
        .iter()
        .map(|&v| sys.vms[v].request_bytes.map(|b| 1.0 / b))
        .collect();
    if let Some(r) = random {
        targets.push(normalized(&r));
        used.push("random-access intensity");
    }
    (targets, used)
}

/// Euclidean distance of the weights from every metric's target at once.
pub fn distance(w: &[f64], targets: &[Vec<f64>]) -> f64 {
    targets
        .iter()
        .flat_map(|t| w.iter().zip(t).map(|(a, b)| (a - b) * (a - b)))
        .sum::<f64>()
        .sqrt()
}

/// Concave curves: fill `cache` with the pieces saving the most latency per byte first.
pub fn greedy(curves: &[&super::curve::HitCurve], c: &[f64], cache: f64) -> Vec<f64> {
    let mut pieces: Vec<(f64, usize, f64)> = Vec::new();
    for (k, curve) in curves.iter().enumerate() {
        for (len, slope) in curve.segments() {
            pieces.push((c[k] * slope, k, len));
        }
    }
    // stable: ties go to the earlier VM, and a VM's pieces stay in cache order
    pieces.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut alloc = vec![0.0; curves.len()];
    let mut left = cache;
    for (gain, k, len) in pieces {
        if left <= 0.0 || gain <= 0.0 {
            break;
        }
        let take = len.min(left);
        alloc[k] += take;
        left -= take;
    }
    alloc
}

/// Any curves: the best split of `units` grains of `cache`, VM by VM.
pub fn dynamic(curves: &[&super::curve::HitCurve], c: &[f64], cache: f64, units: u32) -> Vec<f64> {
    let u = units as usize;
    let grain = cache / f64::from(units);
    // best[j] = most latency saved with j grains over the VMs so far; pick[k][j] = VM k's grains
    let mut best = vec![0.0f64; u + 1];
    let mut pick = vec![vec![0usize; u + 1]; curves.len()];
    for (k, curve) in curves.iter().enumerate() {
        let gain: Vec<f64> = (0..=u).map(|g| c[k] * curve.hit(g as f64 * grain)).collect();
        let mut next = vec![f64::NEG_INFINITY; u + 1];
        for j in 0..=u {
            for g in 0..=j {
                let v = best[j - g] + gain[g];
                if v > next[j] + 1e-15 {
                    next[j] = v;
                    pick[k][j] = g;
                }
            }
        }
        best = next;
    }
    let mut alloc = vec![0.0; curves.len()];
    let mut j = u;
    for k in (0..curves.len()).rev() {
        alloc[k] = pick[k][j] as f64 * grain;
        j -= pick[k][j];
    }
    alloc
}
