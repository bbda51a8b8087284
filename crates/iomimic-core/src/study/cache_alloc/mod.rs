//! Transaction-aware SSD cache allocation: how a hypervisor's SSD cache is best split among
//! the VMs of transactional applications, judged by the applications' transaction latency
//! rather than by each VM's hit ratio.
//!
//! The model ([`apps`], [`latency`]): an application is a set of VMs, a workload a mix of
//! transaction types, a transaction's latency the sum of its times on the VMs, and a VM's
//! time falls with its hit ratio (hits at L(SSD), misses at L(Storage)); the hit ratio comes
//! from the VM's cache share through its curve ([`curve`]), linear up to its working set or a
//! measured LRU miss-ratio curve. Schemes in [`plan`], the GA in [`ga`], the closed loop in
//! [`adapt`].
//!
//! The study's workload argument is not used: the VMs' I/O is named in the applications file
//! (their curves measured by the caller and passed in `curves`).
//!
//! ## References
//! Tang et al., "Transaction-Aware SSD Cache Allocation for the Virtualization Environment"
//! (2018): the latency model, the worked example (`example.toml`), the GA and MAPE-K loop.

// Float-to-count casts here are of non-negative values by construction (shares, windows).
#![allow(clippy::cast_sign_loss)]

pub mod adapt;
pub mod apps;
pub mod curve;
pub mod ga;
pub mod latency;
pub mod plan;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Study;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::trace::TraceView;
use apps::{MeasuredCurve, System};
use ga::GaOptions;
use latency::Load;
use plan::Scheme;

/// Tang et al.'s worked example, as an applications file.
pub const EXAMPLE: &str = include_str!("example.toml");

pub struct CacheAlloc;

pub const STUDY: CacheAlloc = CacheAlloc;

fn all_schemes() -> Vec<String> {
    ["equal", "working-set", "transaction-aware", "optimal"]
        .map(String::from)
        .to_vec()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The applications file's text; [`EXAMPLE`] when absent.
    #[serde(default)]
    pub apps: Option<String>,
    /// Its name in error messages.
    #[serde(default)]
    pub apps_file: Option<String>,
    /// Measured curves of the VMs that name a trace or a model, by VM name.
    #[serde(default)]
    pub curves: BTreeMap<String, MeasuredCurve>,
    #[serde(default = "all_schemes")]
    pub schemes: Vec<String>,
    #[serde(default)]
    pub ga: GaOptions,
    /// The closed loop's timeline file (text), and its name; runs the loop when given.
    #[serde(default)]
    pub timeline: Option<String>,
    #[serde(default)]
    pub timeline_file: Option<String>,
    #[serde(default)]
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct VmReport {
    pub name: String,
    pub hypervisor: String,
    pub working_set_bytes: f64,
    pub curve: &'static str,
    pub concave: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TxReport {
    pub name: String,
    pub io: Option<String>,
    pub latency: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AppReport {
    pub app: String,
    pub workload: String,
    pub rate: f64,
    pub latency: f64,
    pub transactions: Vec<TxReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SchemeReport {
    pub scheme: &'static str,
    /// Bytes, hit ratio and latency factor (of L(Storage)) per VM, in file order.
    pub allocation: Vec<f64>,
    pub hit: Vec<f64>,
    pub vm_latency: Vec<f64>,
    pub apps: Vec<AppReport>,
    /// Mean over every transaction of the scenario.
    pub overall: f64,
    pub methods: Vec<String>,
    pub fitness: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScenarioReport {
    pub name: String,
    pub schemes: Vec<SchemeReport>,
    /// Transaction-aware over optimal mean latency, less 1: what the GA leaves.
    pub ga_shortfall: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub ssd_over_storage: f64,
    pub hypervisors: Vec<apps::Host>,
    pub vms: Vec<VmReport>,
    pub scenarios: Vec<ScenarioReport>,
    pub adapt: Option<adapt::AdaptReport>,
}

impl Study for CacheAlloc {
    fn name(&self) -> &'static str {
        "cache-alloc"
    }

    fn description(&self) -> &'static str {
        "Transaction-aware SSD cache allocation among the VMs of transactional applications: \
         equal, working-set, the GA of Tang et al. and the optimum from the curves, by \
         transaction latency; a MAPE-K loop over workload changes"
    }

    fn run(
        &self,
        _workload: &TraceView<'_>,
        options: &serde_json::Value,
        _progress: &Progress,
    ) -> Result<serde_json::Value> {
        super::typed("cache-alloc", options, |o: Options| run(&o))
    }

    fn needs_workload(&self) -> bool {
        false
    }
}

/// The study on its options.
pub fn run(opts: &Options) -> Result<Report> {
    let file = opts
        .apps_file
        .as_deref()
        .unwrap_or(if opts.apps.is_some() { "apps" } else { "example" });
    let sys = System::parse(opts.apps.as_deref().unwrap_or(EXAMPLE), file, &opts.curves)?;
    let schemes: Vec<Scheme> = opts.schemes.iter().map(|s| s.parse()).collect::<Result<_>>()?;
    if schemes.is_empty() {
        return Err(Error::Usage("`schemes`: name at least one".into()));
    }
    if opts.ga.units == 0 || opts.ga.units > 100_000 {
        return Err(Error::Usage(format!(
            "`ga.units`: must be 1 to 100000, found {}",
            opts.ga.units
        )));
    }
    let scenarios = (0..sys.scenarios.len())
        .map(|s| scenario(&sys, s, &schemes, opts))
        .collect();
    let adapt = match &opts.timeline {
        Some(text) => {
            let tfile = opts.timeline_file.as_deref().unwrap_or("timeline");
            let timeline = adapt::Timeline::parse(text, tfile, &sys)?;
            Some(adapt::run(
                &sys,
                &Load::scenario(&sys, 0),
                &timeline,
                &opts.ga,
                opts.seed,
            ))
        }
        None => None,
    };
    Ok(Report {
        ssd_over_storage: sys.ratio,
        vms: sys
            .vms
            .iter()
            .map(|v| VmReport {
                name: v.name.clone(),
                hypervisor: sys.hosts[v.host].name.clone(),
                working_set_bytes: v.working_set,
                curve: if v.measured { "measured" } else { "linear" },
                concave: v.curve.is_concave(),
            })
            .collect(),
        hypervisors: sys.hosts.clone(),
        scenarios,
        adapt,
    })
}

fn scenario(sys: &System, s: usize, schemes: &[Scheme], opts: &Options) -> ScenarioReport {
    let load = Load::scenario(sys, s);
    let reports: Vec<SchemeReport> = schemes
        .iter()
        .map(|&scheme| {
            let p = plan::plan(sys, &load, scheme, &opts.ga, opts.seed);
            scheme_report(sys, &load, scheme, p)
        })
        .collect();
    let overall = |k: Scheme| reports.iter().find(|r| r.scheme == k.name()).map(|r| r.overall);
    let ga_shortfall = match (overall(Scheme::TransactionAware), overall(Scheme::Optimal)) {
        (Some(ta), Some(opt)) if opt > 0.0 => Some(ta / opt - 1.0),
        _ => None,
    };
    ScenarioReport {
        name: sys.scenarios[s].name.clone(),
        schemes: reports,
        ga_shortfall,
    }
}

fn scheme_report(sys: &System, load: &Load, scheme: Scheme, p: plan::Plan) -> SchemeReport {
    let alloc = &p.bytes;
    let apps = sys
        .apps
        .iter()
        .enumerate()
        .map(|(a, app)| {
            let w = load.workloads[a];
            let mut used: Vec<usize> = app.workloads[w].mix.iter().map(|m| m.0).collect();
            used.sort_unstable();
            AppReport {
                app: app.name.clone(),
                workload: app.workloads[w].name.clone(),
                rate: load.rates[a],
                latency: latency::workload(sys, a, w, alloc),
                transactions: used
                    .into_iter()
                    .map(|tx| TxReport {
                        name: app.transactions[tx].name.clone(),
                        io: app.transactions[tx].io.clone(),
                        latency: latency::transaction(sys, a, tx, alloc),
                    })
                    .collect(),
            }
        })
        .collect();
    SchemeReport {
        scheme: scheme.name(),
        hit: (0..sys.vms.len())
            .map(|v| sys.vms[v].curve.hit(alloc[v]))
            .collect(),
        vm_latency: (0..sys.vms.len())
            .map(|v| latency::vm_factor(sys, v, alloc[v]))
            .collect(),
        overall: latency::overall(sys, load, alloc),
        allocation: p.bytes,
        apps,
        methods: p.methods,
        fitness: p.fitness,
    }
}
