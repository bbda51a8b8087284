//! The application-level latency model: a transaction's latency is the sum of its times on
//! the VMs it touches, each scaled by how much of that VM's I/O its cache serves; a workload's
//! is the mean over its mix; the system's is the mean over every application's transactions.

use super::apps::System;

/// What runs: a workload and a rate (transactions per second) per application.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    pub workloads: Vec<usize>,
    pub rates: Vec<f64>,
}

impl Load {
    /// Scenario `s` at the file's rates.
    pub fn scenario(sys: &System, s: usize) -> Load {
        Load {
            workloads: sys.scenarios[s].workloads.clone(),
            rates: sys.apps.iter().map(|a| a.rate).collect(),
        }
    }
}

/// A VM's latency with `bytes` of cache, as a share of its latency from storage alone:
/// hits take L(SSD), misses L(Storage).
pub fn vm_factor(sys: &System, vm: usize, bytes: f64) -> f64 {
    let hit = sys.vms[vm].curve.hit(bytes);
    hit * sys.ratio + (1.0 - hit)
}

/// Latency of transaction `tx` of application `app` under the allocation `alloc` (bytes per VM).
pub fn transaction(sys: &System, app: usize, tx: usize, alloc: &[f64]) -> f64 {
    sys.apps[app].transactions[tx]
        .time
        .iter()
        .map(|&(v, t)| t * vm_factor(sys, v, alloc[v]))
        .sum()
}

/// Mean transaction latency of workload `w` of application `app`.
pub fn workload(sys: &System, app: usize, w: usize, alloc: &[f64]) -> f64 {
    sys.apps[app].workloads[w]
        .mix
        .iter()
        .map(|&(tx, share)| share * transaction(sys, app, tx, alloc))
        .sum()
}

/// Time per second the load spends on each VM with no cache: the weight of each VM's latency
/// in the system's (Tang et al.'s latency distribution, scaled by the rates).
pub fn vm_weights(sys: &System, load: &Load) -> Vec<f64> {
    let mut c = vec![0.0; sys.vms.len()];
    for (a, app) in sys.apps.iter().enumerate() {
        for &(tx, share) in &app.workloads[load.workloads[a]].mix {
            for &(v, t) in &app.transactions[tx].time {
                c[v] += load.rates[a] * share * t;
            }
        }
    }
    c
}

/// Mean latency over every transaction the load runs.
pub fn overall(sys: &System, load: &Load, alloc: &[f64]) -> f64 {
    let total: f64 = load.rates.iter().sum();
    let weighted: f64 = (0..sys.apps.len())
        .map(|a| load.rates[a] * workload(sys, a, load.workloads[a], alloc))
        .sum();
    weighted / total
}
