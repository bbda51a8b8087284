//! The closed loop (MAPE-K): each window the loop monitors the transactions each application
//! ran, analyses them (which of the application's workloads has the mix nearest, Euclidean,
//! to the shares of transaction types seen; the rate),
//! plans anew with the GA when the workload or the rate changed, and executes the plan from
//! the next window. The timeline file says when the true workloads and rates change.

use serde::{Deserialize, Serialize};

use super::apps::{field_error, System};
use super::ga::GaOptions;
use super::latency::{self, Load};
use super::plan::{plan, Scheme};
use crate::error::{Error, Result};
use crate::random::Prng;

fn default_tolerance() -> f64 {
    0.2
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimelineRaw {
    window_s: f64,
    duration_s: f64,
    /// A rate change beyond this share re-plans.
    #[serde(default = "default_tolerance")]
    tolerance: f64,
    #[serde(default)]
    changes: Vec<ChangeRaw>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeRaw {
    at_s: f64,
    app: String,
    workload: Option<String>,
    rate: Option<f64>,
}

/// A change: from `at_s`, application `app` runs `workload` and/or at `rate`.
#[derive(Debug, Clone)]
struct Change {
    at_s: f64,
    app: usize,
    workload: Option<usize>,
    rate: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct Timeline {
    window_s: f64,
    windows: usize,
    tolerance: f64,
    changes: Vec<Change>,
}

impl Timeline {
    pub fn parse(text: &str, file: &str, sys: &System) -> Result<Timeline> {
        let de = toml::Deserializer::parse(text).map_err(|e| Error::Usage(format!("{file}: {e}")))?;
        let raw: TimelineRaw = serde_path_to_error::deserialize(de)
            .map_err(|e| field_error(file, &e.path().to_string(), e.inner()))?;
        let ok = |v: f64| v.is_finite() && v > 0.0;
        if !ok(raw.window_s) {
            return Err(field_error(
                file,
                "window_s",
                "must be a positive number of seconds",
            ));
        }
        if !ok(raw.duration_s) || raw.duration_s < raw.window_s || raw.duration_s / raw.window_s > 100_000.0 {
            return Err(field_error(
                file,
                "duration_s",
                "must hold between 1 and 100000 windows",
            ));
        }
        if !(raw.tolerance.is_finite() && raw.tolerance >= 0.0) {
            return Err(field_error(file, "tolerance", "must be a share ≥ 0"));
        }
        let mut changes = Vec::new();
        for (i, c) in raw.changes.iter().enumerate() {
            let at = |f: &str| format!("changes[{i}].{f}");
            if !(c.at_s.is_finite() && c.at_s >= 0.0) {
                return Err(field_error(file, &at("at_s"), "must be a time ≥ 0"));
            }
            let app =
                sys.apps.iter().position(|a| a.name == c.app).ok_or_else(|| {
                    field_error(file, &at("app"), format!("no application named {:?}", c.app))
                })?;
            let workload = match &c.workload {
                Some(w) => Some(
                    sys.apps[app]
                        .workloads
                        .iter()
                        .position(|x| &x.name == w)
                        .ok_or_else(|| {
                            field_error(file, &at("workload"), format!("{} has no workload {w:?}", c.app))
                        })?,
                ),
                None => None,
            };
            if let Some(r) = c.rate {
                if !ok(r) {
                    return Err(field_error(file, &at("rate"), "must be a positive rate"));
                }
            }
            changes.push(Change {
                at_s: c.at_s,
                app,
                workload,
                rate: c.rate,
            });
        }
        changes.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        let windows = (raw.duration_s / raw.window_s).round() as usize;
        Ok(Timeline {
            window_s: raw.window_s,
            windows,
            tolerance: raw.tolerance,
            changes,
        })
    }

    /// The true load during the window starting at `t`, from `start`.
    fn load_at(&self, start: &Load, t: f64) -> Load {
        let mut load = start.clone();
        for c in self.changes.iter().take_while(|c| c.at_s <= t) {
            if let Some(w) = c.workload {
                load.workloads[c.app] = w;
            }
            if let Some(r) = c.rate {
                load.rates[c.app] = r;
            }
        }
        load
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Window {
    pub start_s: f64,
    /// The true workload and rate of each application.
    pub workloads: Vec<String>,
    pub rates: Vec<f64>,
    /// What the loop detected in this window.
    pub detected: Vec<String>,
    pub observed_rates: Vec<f64>,
    /// Whether the loop re-planned at the end of this window.
    pub replanned: bool,
    /// Bytes per VM in effect during this window.
    pub allocation: Vec<f64>,
    pub adaptive: f64,
    pub r#static: f64,
    pub equal: f64,
    pub optimal: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AdaptReport {
    pub window_s: f64,
    pub tolerance: f64,
    pub apps: Vec<String>,
    pub vms: Vec<String>,
    pub windows: Vec<Window>,
    /// Mean latency over the windows: adaptive, static (the first plan kept), equal, optimal.
    pub mean: [f64; 4],
    pub replans: usize,
}

/// Monitor and analyse one window: transactions drawn from each application's true mix; the
/// workload whose mix lies nearest (Euclidean) to the shares of transaction types seen; the
/// rate seen.
fn observe(sys: &System, load: &Load, window_s: f64, rng: &mut Prng) -> (Vec<usize>, Vec<f64>) {
    let mut detected = Vec::new();
    let mut rates = Vec::new();
    for (a, app) in sys.apps.iter().enumerate() {
        let n = (load.rates[a] * window_s).round().max(1.0) as usize;
        let mut seen = vec![0.0; app.transactions.len()];
        let mix = &app.workloads[load.workloads[a]].mix;
        for _ in 0..n {
            let mut u = rng.f64();
            let pick = mix.iter().find(|&&(_, s)| {
                u -= s;
                u < 0.0
            });
            seen[pick.unwrap_or(&mix[mix.len() - 1]).0] += 1.0 / n as f64;
        }
        let nearest = (0..app.workloads.len())
            .map(|w| {
                let mut expected = vec![0.0; app.transactions.len()];
                app.workloads[w].mix.iter().for_each(|&(tx, s)| expected[tx] = s);
                (
                    w,
                    expected
                        .iter()
                        .zip(&seen)
                        .map(|(x, y)| (x - y) * (x - y))
                        .sum::<f64>(),
                )
            })
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .map_or(0, |x| x.0);
        detected.push(nearest);
        rates.push(n as f64 / window_s);
    }
    (detected, rates)
}

/// Runs the loop over the timeline from `start`.
pub fn run(sys: &System, start: &Load, timeline: &Timeline, ga: &GaOptions, seed: u64) -> AdaptReport {
    let mut rng = Prng::new(seed ^ 0x6d61_7065);
    let first = plan(sys, start, Scheme::TransactionAware, ga, seed);
    let equal = plan(sys, start, Scheme::Equal, ga, seed).bytes;
    let mut belief = start.clone();
    let mut current = first.bytes.clone();
    let mut windows = Vec::new();
    let mut replans = 0;
    let mut optimal_memo: Vec<(Load, Vec<f64>)> = Vec::new();
    for i in 0..timeline.windows {
        let t = i as f64 * timeline.window_s;
        let load = timeline.load_at(start, t);
        let best = match optimal_memo.iter().find(|(l, _)| *l == load) {
            Some((_, b)) => b.clone(),
            None => {
                let b = plan(sys, &load, Scheme::Optimal, ga, seed).bytes;
                optimal_memo.push((load.clone(), b.clone()));
                b
            }
        };
        let (detected, observed) = observe(sys, &load, timeline.window_s, &mut rng);
        let moved = detected != belief.workloads
            || observed
                .iter()
                .zip(&belief.rates)
                .any(|(o, b)| (o - b).abs() > timeline.tolerance * b);
        let in_effect = current.clone();
        if moved {
            belief = Load {
                workloads: detected.clone(),
                rates: observed.clone(),
            };
            current = plan(sys, &belief, Scheme::TransactionAware, ga, seed).bytes;
            replans += 1;
        }
        let name = |a: usize, w: usize| sys.apps[a].workloads[w].name.clone();
        windows.push(Window {
            start_s: t,
            workloads: load
                .workloads
                .iter()
                .enumerate()
                .map(|(a, &w)| name(a, w))
                .collect(),
            rates: load.rates.clone(),
            detected: detected.iter().enumerate().map(|(a, &w)| name(a, w)).collect(),
            observed_rates: observed,
            replanned: moved,
            adaptive: latency::overall(sys, &load, &in_effect),
            r#static: latency::overall(sys, &load, &first.bytes),
            equal: latency::overall(sys, &load, &equal),
            optimal: latency::overall(sys, &load, &best),
            allocation: in_effect,
        });
    }
    let n = windows.len() as f64;
    let mean = |f: fn(&Window) -> f64| windows.iter().map(f).sum::<f64>() / n;
    AdaptReport {
        window_s: timeline.window_s,
        tolerance: timeline.tolerance,
        apps: sys.apps.iter().map(|a| a.name.clone()).collect(),
        vms: sys.vms.iter().map(|v| v.name.clone()).collect(),
        mean: [
            mean(|w| w.adaptive),
            mean(|w| w.r#static),
            mean(|w| w.equal),
            mean(|w| w.optimal),
        ],
        replans,
        windows,
    }
}
