//! The applications file (`apps.toml`): hypervisors with their SSD cache, VMs with how their
//! hit ratio grows with cache, and applications as sets of VMs whose workloads are mixes of
//! transaction types. Read into a [`System`] with every name resolved to an index; errors
//! name the file and the field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::curve::HitCurve;
use crate::error::{Error, Result};
use crate::units::parse_size_bytes;

/// A VM's miss-ratio curve measured from its trace or model (by the caller, which reads files).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredCurve {
    pub footprint_bytes: f64,
    pub mean_request_bytes: f64,
    /// (cache bytes, miss ratio), cache sizes rising.
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    latency: LatencyRaw,
    hypervisors: Vec<HostRaw>,
    vms: Vec<VmRaw>,
    apps: Vec<AppRaw>,
    #[serde(default)]
    scenarios: Vec<ScenarioRaw>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LatencyRaw {
    ssd_over_storage: f64,
}

impl Default for LatencyRaw {
    fn default() -> Self {
        LatencyRaw {
            ssd_over_storage: 0.1,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostRaw {
    name: String,
    cache: Size,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VmRaw {
    name: String,
    hypervisor: Option<String>,
    working_set: Option<Size>,
    trace: Option<String>,
    model: Option<String>,
    pattern: Option<String>,
    // read by the caller with `model` or `pattern`
    #[allow(dead_code)]
    requests: Option<u64>,
    io_ratio: Option<f64>,
    request_size: Option<Size>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppRaw {
    name: String,
    vms: Vec<String>,
    #[serde(default = "one")]
    rate: f64,
    transactions: Vec<TxRaw>,
    workloads: Vec<WorkloadRaw>,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TxRaw {
    name: String,
    io: Option<String>,
    time: BTreeMap<String, f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadRaw {
    name: String,
    mix: BTreeMap<String, f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioRaw {
    name: String,
    workloads: BTreeMap<String, String>,
}

/// A hypervisor and the SSD cache its VMs share.
#[derive(Debug, Clone, Serialize)]
pub struct Host {
    pub name: String,
    pub cache_bytes: f64,
    pub vms: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct Vm {
    pub name: String,
    pub host: usize,
    pub curve: HitCurve,
    /// Whether the curve was measured (else linear up to the working set).
    pub measured: bool,
    pub working_set: f64,
    /// IO time over non-IO CPU time, where given.
    pub io_ratio: Option<f64>,
    /// Mean request size, where given or measured: smaller is more random.
    pub request_bytes: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct Transaction {
    pub name: String,
    pub io: Option<String>,
    /// (VM, time on it when every access goes to storage).
    pub time: Vec<(usize, f64)>,
}

#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    /// (transaction, share), shares summing to 1.
    pub mix: Vec<(usize, f64)>,
}

#[derive(Debug, Clone)]
pub struct App {
    pub name: String,
    /// Transactions per second.
    pub rate: f64,
    pub transactions: Vec<Transaction>,
    pub workloads: Vec<Workload>,
}

/// What runs at once: a workload per application.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub workloads: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct System {
    /// L(SSD) / L(Storage).
    pub ratio: f64,
    pub hosts: Vec<Host>,
    pub vms: Vec<Vm>,
    pub apps: Vec<App>,
    pub scenarios: Vec<Scenario>,
}

/// An error at `field` of the file `file`.
pub fn field_error(file: &str, field: &str, message: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{file}: field `{field}`: {message}"))
}

fn index_of<'a>(names: impl Iterator<Item = &'a str>, name: &str) -> Option<usize> {
    names.into_iter().position(|n| n == name)
}

fn size(file: &str, field: &str, s: &Size) -> Result<f64> {
    match s {
        Size::Bytes(0) => Err(field_error(file, field, "a size must be positive")),
        Size::Bytes(b) => Ok(*b as f64),
        Size::Text(t) => parse_size_bytes(t, field)
            .map(|b| b as f64)
            .map_err(|e| Error::Usage(format!("{file}: {e}"))),
    }
}

fn unique<'a>(file: &str, list: &str, names: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, n) in names.enumerate() {
        if !seen.insert(n) {
            return Err(field_error(
                file,
                &format!("{list}[{i}].name"),
                format!("{n:?} is named twice"),
            ));
        }
    }
    Ok(())
}

fn positive(file: &str, field: &str, v: f64) -> Result<f64> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(field_error(
            file,
            field,
            format!("must be a positive number, found {v}"),
        ))
    }
}

impl System {
    /// Reads `text` (the file `file`, named in errors); `curves` are the measured curves of the
    /// VMs that name a trace or a model.
    pub fn parse(text: &str, file: &str, curves: &BTreeMap<String, MeasuredCurve>) -> Result<System> {
        let de = toml::Deserializer::parse(text).map_err(|e| Error::Usage(format!("{file}: {e}")))?;
        let raw: File = serde_path_to_error::deserialize(de)
            .map_err(|e| field_error(file, &e.path().to_string(), e.inner()))?;
        let ratio = raw.latency.ssd_over_storage;
        if !(0.0..=1.0).contains(&ratio) {
            return Err(field_error(
                file,
                "latency.ssd_over_storage",
                format!("must be in [0, 1], found {ratio}"),
            ));
        }
        unique(
            file,
            "hypervisors",
            raw.hypervisors.iter().map(|h| h.name.as_str()),
        )?;
        unique(file, "vms", raw.vms.iter().map(|v| v.name.as_str()))?;
        unique(file, "apps", raw.apps.iter().map(|a| a.name.as_str()))?;
        if raw.hypervisors.is_empty() {
            return Err(field_error(file, "hypervisors", "name at least one hypervisor"));
        }
        let mut hosts = Vec::new();
        for (i, h) in raw.hypervisors.iter().enumerate() {
            let cache_bytes = size(file, &format!("hypervisors[{i}].cache"), &h.cache)?;
            hosts.push(Host {
                name: h.name.clone(),
                cache_bytes,
                vms: Vec::new(),
            });
        }
        let mut vms = Vec::new();
        for (i, v) in raw.vms.iter().enumerate() {
            let vm = read_vm(file, i, v, &mut hosts, curves)?;
            vms.push(vm);
        }
        let mut apps = Vec::new();
        for (i, a) in raw.apps.iter().enumerate() {
            apps.push(read_app(file, i, a, &vms)?);
        }
        if apps.is_empty() {
            return Err(field_error(file, "apps", "name at least one application"));
        }
        let scenarios = read_scenarios(file, &raw.scenarios, &apps)?;
        Ok(System {
            ratio,
            hosts,
            vms,
            apps,
            scenarios,
        })
    }
}

fn read_vm(
    file: &str,
    i: usize,
    v: &VmRaw,
    hosts: &mut [Host],
    curves: &BTreeMap<String, MeasuredCurve>,
) -> Result<Vm> {
    let at = |f: &str| format!("vms[{i}].{f}");
    let host = match &v.hypervisor {
        Some(h) => index_of(hosts.iter().map(|h| h.name.as_str()), h)
            .ok_or_else(|| field_error(file, &at("hypervisor"), format!("no hypervisor named {h:?}")))?,
        None if hosts.len() == 1 => 0,
        None => {
            return Err(field_error(
                file,
                &at("hypervisor"),
                "missing: there are several hypervisors",
            ))
        }
    };
    hosts[host].vms.push(i);
    let sources = [
        (v.working_set.is_some(), "working_set"),
        (v.trace.is_some(), "trace"),
        (v.model.is_some(), "model"),
        (v.pattern.is_some(), "pattern"),
    ];
    let given: Vec<&str> = sources.iter().filter(|s| s.0).map(|s| s.1).collect();
    if given.len() != 1 {
        return Err(field_error(
            file,
            &at(given.first().copied().unwrap_or("working_set")),
            "give exactly one of working_set, trace, model and pattern",
        ));
    }
    let mut request_bytes = match &v.request_size {
        Some(s) => Some(size(file, &at("request_size"), s)?),
        None => None,
    };
    let (curve, working_set) = match &v.working_set {
        Some(ws) => {
            let ws = size(file, &at("working_set"), ws)?;
            (HitCurve::linear(ws), ws)
        }
        None => {
            let m = curves
                .get(&v.name)
                .ok_or_else(|| field_error(file, &at(given[0]), "its miss-ratio curve was not measured"))?;
            request_bytes = request_bytes.or(Some(m.mean_request_bytes));
            let curve =
                HitCurve::from_miss_ratios(&m.points).map_err(|e| field_error(file, &at(given[0]), e))?;
            (curve, m.footprint_bytes)
        }
    };
    let io_ratio = match v.io_ratio {
        Some(r) => Some(positive(file, &at("io_ratio"), r)?),
        None => None,
    };
    Ok(Vm {
        name: v.name.clone(),
        host,
        curve,
        measured: v.working_set.is_none(),
        working_set,
        io_ratio,
        request_bytes,
    })
}

fn read_app(file: &str, i: usize, a: &AppRaw, vms: &[Vm]) -> Result<App> {
    let at = |f: String| format!("apps[{i}].{f}");
    let rate = positive(file, &at("rate".into()), a.rate)?;
    for (k, name) in a.vms.iter().enumerate() {
        if index_of(vms.iter().map(|v| v.name.as_str()), name).is_none() {
            return Err(field_error(
                file,
                &at(format!("vms[{k}]")),
                format!("no VM named {name:?}"),
            ));
        }
    }
    unique(
        file,
        &at("transactions".into()),
        a.transactions.iter().map(|t| t.name.as_str()),
    )?;
    unique(
        file,
        &at("workloads".into()),
        a.workloads.iter().map(|w| w.name.as_str()),
    )?;
    let mut transactions = Vec::new();
    for (t, tx) in a.transactions.iter().enumerate() {
        let mut time = Vec::new();
        for (vm, &ms) in &tx.time {
            let field = at(format!("transactions[{t}].time.{vm}"));
            if !a.vms.contains(vm) {
                return Err(field_error(
                    file,
                    &field,
                    format!("{vm:?} is not one of the application's vms"),
                ));
            }
            if !(ms.is_finite() && ms >= 0.0) {
                return Err(field_error(
                    file,
                    &field,
                    format!("must be a time ≥ 0, found {ms}"),
                ));
            }
            let v = index_of(vms.iter().map(|v| v.name.as_str()), vm).expect("checked above");
            time.push((v, ms));
        }
        transactions.push(Transaction {
            name: tx.name.clone(),
            io: tx.io.clone(),
            time,
        });
    }
    let mut workloads = Vec::new();
    for (w, wl) in a.workloads.iter().enumerate() {
        let mut mix = Vec::new();
        for (tx, &share) in &wl.mix {
            let field = at(format!("workloads[{w}].mix.{tx}"));
            let t = index_of(a.transactions.iter().map(|t| t.name.as_str()), tx)
                .ok_or_else(|| field_error(file, &field, format!("no transaction named {tx:?}")))?;
            if !(share.is_finite() && share >= 0.0) {
                return Err(field_error(
                    file,
                    &field,
                    format!("must be a share ≥ 0, found {share}"),
                ));
            }
            mix.push((t, share));
        }
        let total: f64 = mix.iter().map(|m| m.1).sum();
        if total <= 0.0 {
            return Err(field_error(
                file,
                &at(format!("workloads[{w}].mix")),
                "shares sum to zero",
            ));
        }
        for m in &mut mix {
            m.1 /= total;
        }
        workloads.push(Workload {
            name: wl.name.clone(),
            mix,
        });
    }
    if workloads.is_empty() {
        return Err(field_error(
            file,
            &at("workloads".into()),
            "name at least one workload",
        ));
    }
    Ok(App {
        name: a.name.clone(),
        rate,
        transactions,
        workloads,
    })
}

/// The scenarios the file lists; else one per workload name, every application running its
/// workload of that name (its first where it has none).
fn read_scenarios(file: &str, raw: &[ScenarioRaw], apps: &[App]) -> Result<Vec<Scenario>> {
    let workload_of = |a: &App, name: &str| a.workloads.iter().position(|w| w.name == name);
    if raw.is_empty() {
        let mut names: Vec<&str> = Vec::new();
        for w in apps.iter().flat_map(|a| &a.workloads) {
            if !names.contains(&w.name.as_str()) {
                names.push(&w.name);
            }
        }
        return Ok(names
            .iter()
            .map(|n| Scenario {
                name: (*n).to_string(),
                workloads: apps.iter().map(|a| workload_of(a, n).unwrap_or(0)).collect(),
            })
            .collect());
    }
    let mut out = Vec::new();
    for (s, sc) in raw.iter().enumerate() {
        let mut workloads = Vec::new();
        for a in apps {
            let field = format!("scenarios[{s}].workloads.{}", a.name);
            let name = sc
                .workloads
                .get(&a.name)
                .ok_or_else(|| field_error(file, &field, "missing: every application runs a workload"))?;
            let w = workload_of(a, name)
                .ok_or_else(|| field_error(file, &field, format!("{} has no workload {name:?}", a.name)))?;
            workloads.push(w);
        }
        if let Some(extra) = sc.workloads.keys().find(|k| !apps.iter().any(|a| &a.name == *k)) {
            return Err(field_error(
                file,
                &format!("scenarios[{s}].workloads.{extra}"),
                "no application of that name",
            ));
        }
        out.push(Scenario {
            name: sc.name.clone(),
            workloads,
        });
    }
    Ok(out)
}
