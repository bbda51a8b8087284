//! Early error detection (infant mortality): a fleet of simulated devices runs the workload, a
//! few of them with injected faults, and a robust outlier rule ([`detector`]) picks the faulty
//! ones out by their latencies and errors. Run at rising intensity (the workload's times
//! divided), it shows how much sooner a time-compressed workload finds them.
//!
//! Every device runs the same workload, each starting at its own point of it (the trace
//! rotated by `i/devices` of its requests), as the members of a fleet see one application at
//! different moments; so healthy devices differ as real ones do, and none is a copy of another.
//! Faults are placed by the options' seed: which devices are faulty, and which of their
//! sectors are bad (a bad sector is a place, slow or failing each time it is touched; see
//! [`crate::sim::Faults`]).
//!
//! ## References
//! Delimitrou et al., "Decoupling Datacenter Studies from Access to Large-Scale Applications"
//! (time-compressed workloads shorten the burn-in that finds infant mortality).

pub mod detector;

use serde::{Deserialize, Serialize};

use super::Study;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::random::Prng;
use crate::sim::{self, Config, Faults, SimOptions};
use crate::trace::{Trace, TraceView, STATUS_OK};
use detector::{Completion, Flag, Rule};

pub struct EarlyErrors;

pub const STUDY: EarlyErrors = EarlyErrors;

fn default_devices() -> usize {
    28
}
fn default_faulty() -> usize {
    2
}
fn default_faults() -> Vec<String> {
    vec!["slow-sectors:0.001".into()]
}
fn default_intensities() -> Vec<f64> {
    vec![1.0, 2.0, 4.0, 8.0]
}
fn default_checkpoints() -> usize {
    100
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The device file every member of the fleet is (TOML text).
    pub device: String,
    #[serde(default = "default_devices")]
    pub devices: usize,
    #[serde(default = "default_faulty")]
    pub faulty: usize,
    /// `slow-sectors:RATE`, `failed-sectors:RATE`, `slow-writes:RATE` (RATE a share of 4 KiB
    /// blocks, or of writes), each once at most.
    #[serde(default = "default_faults")]
    pub faults: Vec<String>,
    /// Extra time a slow sector or a slow write takes, and a failed sector before its error
    /// (the drive's retries).
    #[serde(default)]
    pub slow_ms: Option<f64>,
    #[serde(default)]
    pub fail_ms: Option<f64>,
    #[serde(default = "default_intensities")]
    pub intensities: Vec<f64>,
    /// Checkpoints the rule runs at, evenly over each run.
    #[serde(default = "default_checkpoints")]
    pub checkpoints: usize,
    #[serde(default)]
    pub rule: Rule,
    #[serde(default)]
    pub seed: u64,
}

/// One intensity's outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub intensity: f64,
    /// How long the fleet ran (the longest member, s).
    pub span_s: f64,
    /// Faulty devices flagged by the end, and healthy ones flagged at any checkpoint.
    pub true_positives: usize,
    pub false_positives: usize,
    pub missed: usize,
    /// Seconds until each faulty device was flagged (in faulty order; None: missed).
    pub time_to_detect_s: Vec<Option<f64>>,
    /// Until the last faulty device was flagged; None when one was missed (or none is faulty).
    pub time_to_detect_all_s: Option<f64>,
    pub flags: Vec<Flag>,
    /// Requests that failed (injected failed sectors), fleet-wide.
    pub failed_requests: u64,
    /// The devices could not keep up with the workload at this intensity (simulated fleets).
    pub overloaded: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub device: String,
    pub devices: usize,
    /// Which devices carry the faults.
    pub faulty: Vec<u32>,
    pub faults: Faults,
    pub requests_per_device: u64,
    pub rule: Rule,
    pub intensities: Vec<Outcome>,
}

impl Study for EarlyErrors {
    fn name(&self) -> &'static str {
        "early-errors"
    }

    fn description(&self) -> &'static str {
        "early error detection: a fleet with a few faulty devices, found by a robust latency rule \
         sooner at higher intensity"
    }

    fn run(
        &self,
        workload: &TraceView<'_>,
        options: &serde_json::Value,
        _progress: &Progress,
    ) -> Result<serde_json::Value> {
        super::typed(self.name(), options, |o: Options| run(workload, &o))
    }

    /// One point per intensity: each fleet runs on its own (the faulty devices and their bad
    /// sectors come from the seed alone, so every point places them alike).
    fn points(&self, options: &serde_json::Value) -> Result<Option<Vec<serde_json::Value>>> {
        let o: Options = super::parse_options(self.name(), options)?;
        Ok(Some(super::each_of(options, "intensities", &o.intensities)))
    }

    /// The outcomes of every point in order; the rest (fleet, faults, rule) is every point's.
    fn join(&self, options: &serde_json::Value, reports: &[serde_json::Value]) -> Result<serde_json::Value> {
        super::join_runs(self, options, reports, |whole: &mut Report, point: Report| {
            whole.intensities.extend(point.intensities);
        })
    }
}

pub fn run(t: &TraceView<'_>, o: &Options) -> Result<Report> {
    let faults = check(t, o)?;
    let device = Config::from_toml(&o.device)?;
    let faulty = pick_faulty(o.devices, o.faulty, o.seed);
    let mut outcomes = Vec::new();
    for &intensity in &o.intensities {
        outcomes.push(run_fleet(t, &device, &faults, &faulty, intensity, o)?);
    }
    Ok(Report {
        device: device.name.clone(),
        devices: o.devices,
        faulty,
        faults,
        requests_per_device: t.len() as u64,
        rule: o.rule,
        intensities: outcomes,
    })
}

/// Checks the options; returns the faults they describe.
fn check(t: &TraceView<'_>, o: &Options) -> Result<Faults> {
    let bad = |m: String| Err(Error::Usage(format!("study early-errors: {m}")));
    if t.is_empty() {
        return bad("the workload is empty".into());
    }
    if o.devices < 2 || o.devices > 4096 {
        return bad(format!("`devices` must be 2 to 4096, found {}", o.devices));
    }
    if o.faulty >= o.devices {
        return bad(format!(
            "`faulty` must be fewer than `devices` ({}), found {}: the rule compares a device with the fleet",
            o.devices, o.faulty
        ));
    }
    if o.intensities.is_empty() || o.intensities.iter().any(|k| !(k.is_finite() && *k > 0.0)) {
        return bad("`intensities` must be positive numbers".into());
    }
    if o.checkpoints == 0 || o.checkpoints > 100_000 {
        return bad(format!(
            "`checkpoints` must be 1 to 100000, found {}",
            o.checkpoints
        ));
    }
    let r = &o.rule;
    for (name, value) in [
        ("rule.slow_factor", r.slow_factor),
        ("rule.threshold", r.threshold),
    ] {
        if !(value.is_finite() && value > 0.0) {
            return bad(format!("`{name}` must be a positive number, found {value}"));
        }
    }
    parse_faults(&o.faults, o.slow_ms, o.fail_ms, o.seed)
}

/// The faults `specs` name (`KIND:RATE`), with their delays.
pub fn parse_faults(
    specs: &[String],
    slow_ms: Option<f64>,
    fail_ms: Option<f64>,
    seed: u64,
) -> Result<Faults> {
    let mut f = Faults {
        slow_sector_rate: 0.0,
        slow_ms: 50.0,
        failed_sector_rate: 0.0,
        fail_ms: 1000.0,
        slow_write_rate: 0.0,
        slow_write_ms: 50.0,
        seed,
    };
    for spec in specs {
        let bad = || {
            Error::Usage(format!(
                "`faults`: {spec:?} is not KIND:RATE with KIND slow-sectors, failed-sectors or \
                 slow-writes and RATE in (0, 1]"
            ))
        };
        let (kind, rate) = spec.split_once(':').ok_or_else(bad)?;
        let rate: f64 = rate.trim().parse().map_err(|_| bad())?;
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(bad());
        }
        match kind.trim() {
            "slow-sectors" => f.slow_sector_rate = rate,
            "failed-sectors" => f.failed_sector_rate = rate,
            "slow-writes" => f.slow_write_rate = rate,
            _ => return Err(bad()),
        }
    }
    for (name, ms) in [("slow_ms", slow_ms), ("fail_ms", fail_ms)] {
        if let Some(ms) = ms.filter(|ms| !(0.0..=3.6e6).contains(ms)) {
            return Err(Error::Usage(format!(
                "`{name}` must be 0 to 3600000 ms (an hour), found {ms}"
            )));
        }
    }
    if let Some(ms) = slow_ms {
        f.slow_ms = ms;
        f.slow_write_ms = ms;
    }
    if let Some(ms) = fail_ms {
        f.fail_ms = ms;
    }
    Ok(f)
}

/// `faulty` of `devices` devices, chosen by `seed`, in ascending order.
fn pick_faulty(devices: usize, faulty: usize, seed: u64) -> Vec<u32> {
    let mut all: Vec<u32> = (0..devices as u32).collect();
    let mut rng = Prng::new(seed ^ 0xfa17);
    // a partial Fisher–Yates shuffle: the first `faulty` places are a uniform sample
    for i in 0..faulty {
        let j = i + rng.below((devices - i) as u64) as usize;
        all.swap(i, j);
    }
    let mut picked = all[..faulty].to_vec();
    picked.sort_unstable();
    picked
}

/// The fleet at one intensity: every member simulated (both cores), then the rule.
fn run_fleet(
    t: &TraceView<'_>,
    device: &Config,
    faults: &Faults,
    faulty: &[u32],
    intensity: f64,
    o: &Options,
) -> Result<Outcome> {
    let opts = SimOptions {
        intensity,
        ..SimOptions::default()
    };
    let member = |d: usize| -> Result<Vec<Completion>> {
        let mut config = device.clone();
        config.faults = faulty.contains(&(d as u32)).then(|| Faults {
            seed: faults.seed ^ (d as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ..faults.clone()
        });
        let w = rotated(t, d * t.len() / o.devices);
        let r = sim::simulate(&w.view(), &config, &opts)?;
        Ok((0..w.len())
            .map(|i| Completion {
                device: d as u32,
                done_ns: r.issue_ns[i] + r.latency_ns[i],
                latency_ns: r.latency_ns[i],
                failed: r.status[i] != STATUS_OK,
            })
            .collect())
    };
    let mut completions = Vec::with_capacity(t.len() * o.devices);
    for part in in_parallel(o.devices, member) {
        completions.extend(part?);
    }
    let mut outcome = judge(completions, o.devices, faulty, intensity, o.checkpoints, &o.rule);
    // the fleet kept up when it finished about when the workload did (its last request plus
    // a second to drain); otherwise queueing, not faults, set the latencies
    let offered_s = (t.ts_ns[t.len() - 1] - t.ts_ns[0]) as f64 / 1e9 / intensity;
    outcome.overloaded = Some(outcome.span_s > 1.1 * offered_s + 1.0);
    Ok(outcome)
}

/// The rule's verdict on a fleet's completions at `checkpoints` points of its run, scored
/// against the devices known to be `faulty` (none for real targets: then every flag is a
/// finding, counted as a false positive only in the sense that no fault was injected).
pub fn judge(
    mut completions: Vec<Completion>,
    devices: usize,
    faulty: &[u32],
    intensity: f64,
    checkpoints: usize,
    rule: &Rule,
) -> Outcome {
    let failed_requests = completions.iter().filter(|c| c.failed).count() as u64;
    let span = completions.iter().map(|c| c.done_ns).max().unwrap_or(0);
    let flags = detector::detect(
        &mut completions,
        devices,
        &detector::checkpoints(span, checkpoints),
        rule,
    );
    let time_to_detect_s: Vec<Option<f64>> = faulty
        .iter()
        .map(|&d| flags[d as usize].as_ref().map(|f| f.at_s))
        .collect();
    let true_positives = time_to_detect_s.iter().flatten().count();
    let flagged = flags.iter().flatten().count();
    Outcome {
        intensity,
        span_s: span as f64 / 1e9,
        true_positives,
        false_positives: flagged - true_positives,
        missed: faulty.len() - true_positives,
        time_to_detect_all_s: time_to_detect_s
            .iter()
            .try_fold(None, |worst: Option<f64>, t| {
                t.map(|t| Some(worst.map_or(t, |w| w.max(t))))
            })
            .flatten(),
        time_to_detect_s,
        flags: flags.into_iter().flatten().collect(),
        failed_requests,
        overloaded: None,
    }
}

/// The completions of a real run of [`fleet_workload`]: device = volume, done = issue time +
/// latency, failed = an error status. Requests with no latency (not issued) are left out.
pub fn completions_of(done: &TraceView<'_>) -> Vec<Completion> {
    let Some(latency) = done.latency_ns else {
        return Vec::new();
    };
    (0..done.len())
        .filter(|&i| latency[i] != crate::trace::LATENCY_UNKNOWN)
        .map(|i| Completion {
            device: done.volume[i],
            done_ns: done.ts_ns[i] + latency[i],
            latency_ns: latency[i],
            failed: done.status.is_some_and(|s| s[i] != STATUS_OK),
        })
        .collect()
}

/// One workload per device of a fleet of `devices`, merged by time: volume `d` is the
/// workload rotated to start at request `d·n/devices`, its times divided by `intensity` (for a
/// real run, one target per volume).
#[allow(clippy::cast_sign_loss)] // times and a positive intensity: never negative
pub fn fleet_workload(t: &TraceView<'_>, devices: usize, intensity: f64) -> Trace {
    let mut all = Trace {
        volumes: (0..devices).map(|d| format!("device{d}")).collect(),
        ..Trace::default()
    };
    all.reserve(t.len() * devices);
    for d in 0..devices {
        let w = rotated(t, d * t.len() / devices);
        all.ts_ns
            .extend(w.ts_ns.iter().map(|&ts| (ts as f64 / intensity) as u64));
        all.offset.extend(&w.offset);
        all.size.extend(&w.size);
        all.op.extend(&w.op);
        all.volume.extend(std::iter::repeat_n(d as u32, w.len()));
        all.stream
            .extend(w.stream.iter().map(|&s| s.wrapping_add(d as u32 * 65_536)));
    }
    all.sort_by_time();
    all
}

/// `f(0..n)`, spread over the machine's cores, in order.
fn in_parallel<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(n)
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(usize, T)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            return mine;
                        }
                        mine.push((i, f(i)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a fleet member panicked"))
            .collect()
    });
    out.sort_unstable_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, v)| v).collect()
}

/// The workload started at request `shift`: the rest of it, then its beginning again, one mean
/// gap after its end.
fn rotated(t: &TraceView<'_>, shift: usize) -> Trace {
    let n = t.len();
    let order = (shift..n).chain(0..shift);
    let last = t.ts_ns[n - 1];
    let gap = if n > 1 {
        (last - t.ts_ns[0]) / (n as u64 - 1)
    } else {
        0
    };
    let origin = t.ts_ns[shift];
    let time = |i: usize| {
        if i >= shift {
            t.ts_ns[i] - origin
        } else {
            last - origin + gap + (t.ts_ns[i] - t.ts_ns[0])
        }
    };
    let mut w = Trace {
        volumes: t.volumes.to_vec(),
        ..Trace::default()
    };
    w.reserve(n);
    for i in order {
        w.ts_ns.push(time(i));
        w.offset.push(t.offset[i]);
        w.size.push(t.size[i]);
        w.op.push(t.op[i]);
        w.volume.push(t.volume[i]);
        w.stream.push(t.stream[i]);
    }
    w
}

#[cfg(test)]
mod tests;
