//! Choosing states per level and levels when the caller gives none: states by how well equal
//! ranges hold consecutive requests together, levels by how much one more level changes a
//! generated trace, both on the head of a large trace.
//!
//! Levels follow two rules, and the model takes the deeper of the two: the TPC paper's (add
//! levels until one more changes the *simulated* IOPS, on a stated device and depth, by less
//! than [`IOPS_CHANGE`]) and a fidelity rule (until one more improves the worst deviation of
//! the figures `validate` scores, each in units of its target, by less than [`LEVEL_CHANGE`]). Simulated IOPS alone is blind
//! to what a device does not feel (a miss-ratio curve, the one-second rates), and the
//! fidelity figures alone to what only a device's queue shows; `model.selection` records both.

use rustc_hash::FxHashMap;

use super::{train_fixed, volume_spans, TrainOptions};
use crate::analyze::{self, compare, MrcScope};
use crate::error::Result;
use crate::progress::Progress;
use crate::sim;
use crate::trace::{Trace, TraceView};

/// Deepest level tried. A fourth level was tried and left out: on a 2 M-request trace of 16
/// volumes and 64 streams it improved the worst fidelity figure from 5.9 to 2.9 targets but took
/// the model from 31 MB to 266 MB (every visited state's 16 children are written, with their
/// ranges), past any sensible share of the trace's size.
pub const MAX_LEVELS: u32 = 3;
pub const STATE_CHOICES: [u32; 3] = [4, 8, 16];
/// Choices of states whose relative transition probabilities are within this share of the
/// lowest are told apart by the fidelity of their models instead (as levels are added only
/// where they change the simulated IOPS by more than [`IOPS_CHANGE`]), the fewest states
/// taken where the worst deviations are within [`LEVEL_CHANGE`]: on a trace whose requests no
/// choice holds together (ratios within 0.1–0.8 % of one another on wsrch-small, a Zipf hot
/// set, a hot set beside a log) the lowest ratio chose 16 by noise, a model two to four times
/// the size of one of 4 or 8 and no closer.
pub const STATES_GAIN: f64 = 0.02;
/// Level selection stops at the first level after which the worst figure (in units of its
/// target) improves by less than this.
pub const LEVEL_CHANGE: f64 = 0.02;
/// ... and after which the simulated IOPS changes by less than this share (the TPC paper's 2 %).
pub const IOPS_CHANGE: f64 = 0.02;
/// Requests used to choose levels on a large trace.
pub const SELECTION_SAMPLE: usize = 100_000;
/// The population is kept when it lowers the mean deviation (in targets) by at least this.
pub const POPULATION_GAIN: f64 = 0.02;
/// Each figure counts at most this many targets in that mean.
pub const DEVIATION_CAP: f64 = 5.0;
/// A population re-using fewer than this share of the sample's requests is not judged (kept
/// out: it could not move a figure).
pub const MIN_POPULATION_REUSE: f64 = 0.01;

/// Levels and states (each as given, else chosen) and the record of how they were chosen that
/// the model keeps as its `selection`.
pub(super) fn select(
    t: &TraceView<'_>,
    opts: &TrainOptions,
    progress: &Progress,
) -> Result<(u32, u32, serde_json::Map<String, serde_json::Value>)> {
    let sample = head(t, SELECTION_SAMPLE);
    let mut selection = serde_json::Map::new();
    selection.insert("states_given".into(), opts.states.is_some().into());
    // states: the lowest transition ratio (the TPC paper's rule); where several are within
    // STATES_GAIN of it and levels are chosen too, the fewest whose levels' model comes as close
    let mut tied: Vec<u32> = Vec::new();
    let mut states = match opts.states {
        Some(k) => k,
        None => {
            let (k, ratios) = choose_states(&sample);
            let lowest = ratios.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
            tied = ratios
                .iter()
                .filter(|r| r.1 <= lowest * (1.0 + STATES_GAIN))
                .map(|r| r.0)
                .collect();
            selection.insert(
                "states_tried".into(),
                ratios
                    .iter()
                    .map(
                        |&(states, ratio)| serde_json::json!({ "states": states, "transition_ratio": ratio }),
                    )
                    .collect(),
            );
            k
        }
    };
    // made when first needed: level selection, or a population worth judging
    let mut judge: Option<Judge<'_>> = None;
    let mut chosen_model = None;
    let levels = match opts.levels {
        Some(l) => l,
        None => {
            let judge = judge.insert(Judge::of(&sample)?);
            // the sample's own IOPS on the stated device, once for every choice tried
            let original_iops = match &opts.simulate_on {
                Some((device, depth)) => Some(simulated_iops(&sample, device, *depth)?),
                None => None,
            };
            let mut chosen = choose_levels(judge, states, original_iops, opts, progress)?;
            if tied.len() > 1 {
                let mut by_states = vec![(states, chosen)];
                for &k in tied.iter().filter(|&&k| k != states) {
                    progress.add_total(u64::from(MAX_LEVELS));
                    by_states.push((k, choose_levels(judge, k, original_iops, opts, progress)?));
                }
                by_states.sort_by_key(|c| c.0);
                let best = by_states.iter().map(|c| c.1.worst).fold(f64::INFINITY, f64::min);
                let at = by_states
                    .iter()
                    .position(|c| c.1.worst <= best + LEVEL_CHANGE)
                    .unwrap_or(0);
                let tried: Vec<serde_json::Value> = by_states
                    .iter()
                    .map(|(k, c)| serde_json::json!({ "states": k, "levels": c.levels, "worst_deviation": c.worst }))
                    .collect();
                selection.insert("states_by_fidelity".into(), tried.into());
                (states, chosen) = by_states.swap_remove(at);
            }
            chosen_model = Some(chosen.model);
            selection.insert("levels_tried".into(), chosen.tried);
            selection.insert("levels_by_fidelity".into(), chosen.by_fidelity.into());
            selection.insert("levels_by_iops".into(), chosen.by_iops.into());
            if let Some(iops) = original_iops {
                selection.insert("original_simulated_iops".into(), iops.into());
            }
            chosen.levels
        }
    };
    if let (true, Some(given)) = (opts.reuse, opts.population) {
        selection.insert(
            "population".into(),
            serde_json::json!({ "kept": given, "given": true }),
        );
    } else if opts.reuse {
        let with = match chosen_model {
            Some(model) => model,
            None => train_fixed(&sample, levels, states, opts)?,
        };
        selection.insert(
            "population".into(),
            choose_population(&sample, &mut judge, &with, opts)?,
        );
    }
    let simulated = opts.simulate_on.as_ref().map_or_else(
        || "no device (fidelity rule only)".to_string(),
        |(device, depth)| format!("{device} at depth {depth}, each volume on a device of its own"),
    );
    selection.insert(
        "rule".into(),
        format!(
            "states per level: the choice of {STATE_CHOICES:?} with the lowest level-1 inter-state transition \
             probability relative to chance, and where others are within {:.0} % of it, the fewest of those whose \
             model (levels chosen for each) has a worst deviation within {LEVEL_CHANGE} of the lowest; levels (1 to {MAX_LEVELS}): the deeper of the first whose next level \
             changes the simulated IOPS ({simulated}, closed loop) by less than {:.0} % and the first whose next \
             level improves the worst deviation of a generated trace from the original (of the figures `validate` \
             scores against a target, each in units of its target) by less than {LEVEL_CHANGE}",
            STATES_GAIN * 100.0,
            IOPS_CHANGE * 100.0
        )
        .into(),
    );
    Ok((levels, states, selection))
}

/// Level-1 inter-state transition probability of `k` equal ranges, relative to what independent
/// requests would give: P(consecutive requests change state) / (1 − Σ π²). Below 1, requests
/// stay in their state more than chance; the smaller, the better the states fit the workload.
fn relative_transition_probability(t: &TraceView<'_>, k: u32, spans: &[u64]) -> f64 {
    let range = |i: usize| {
        let v = t.volume[i] as usize;
        (
            v,
            (u128::from(t.offset[i]) * u128::from(k) / u128::from(spans[v].max(1))) as u64,
        )
    };
    let mut occupancy: FxHashMap<(usize, u64), u64> = FxHashMap::default();
    let mut changes = 0u64;
    let mut prev = None;
    for i in 0..t.len() {
        let r = range(i);
        *occupancy.entry(r).or_default() += 1;
        changes += u64::from(prev.is_some_and(|p| p != r));
        prev = Some(r);
    }
    let n = t.len() as f64;
    let chance = 1.0 - occupancy.values().map(|&c| (c as f64 / n).powi(2)).sum::<f64>();
    if chance <= 0.0 {
        return 1.0;
    }
    changes as f64 / (n - 1.0).max(1.0) / chance
}

/// The first `n` requests of a trace (choices are made on a sample of a large trace).
pub(super) fn head<'a>(t: &TraceView<'a>, n: usize) -> TraceView<'a> {
    t.rows(0..t.len().min(n))
}

/// The states per level with the lowest relative transition probability, with each choice's.
fn choose_states(t: &TraceView<'_>) -> (u32, Vec<(u32, f64)>) {
    let spans = volume_spans(t);
    let ratios: Vec<(u32, f64)> = STATE_CHOICES
        .iter()
        .map(|&k| (k, relative_transition_probability(t, k, &spans)))
        .collect();
    let mut best = (f64::INFINITY, STATE_CHOICES[0]);
    for &(k, ratio) in &ratios {
        if ratio < best.0 - 1e-9 {
            best = (ratio, k);
        }
    }
    (best.1, ratios)
}

/// What level selection found.
struct LevelChoice {
    levels: u32,
    /// The worst deviation of the chosen level's generated trace (in targets).
    worst: f64,
    /// What each rule alone would choose (`None`: the rule was not applied).
    by_fidelity: u32,
    by_iops: Option<u32>,
    tried: serde_json::Value,
    /// The model of the sample at the levels chosen (with its population).
    model: crate::model::Model,
}

/// How close generated traces are to a sample of the trace: its characterization and its fine
/// figures (one-second rates, footprint, request-keyed curves, 64-range locality: one more
/// level often shows only there), made once for every model tried.
struct Judge<'a> {
    sample: TraceView<'a>,
    original: analyze::Profile,
    same_window: analyze::Options,
    spec: compare::FineSpec,
    fine: compare::Fine,
}

impl<'a> Judge<'a> {
    fn of(sample: &TraceView<'a>) -> Result<Self> {
        let opts_char = analyze::Options {
            mrc: MrcScope::Trace,
            ..analyze::Options::default()
        };
        let original = analyze::characterize(sample, &opts_char)?;
        let same_window = analyze::Options {
            window_ns: original.options.window_ns,
            ..opts_char
        };
        let spec = compare::FineSpec::of(sample, original.options.window_ns.unwrap_or(1));
        let fine = compare::Fine::of(sample, &spec);
        Ok(Self {
            sample: *sample,
            original,
            same_window,
            spec,
            fine,
        })
    }

    /// A trace of the sample's length generated from `model` (with `seed`), and how it
    /// compares with the sample, row by row.
    fn generate_and_compare(
        &self,
        model: &crate::model::Model,
        seed: u64,
    ) -> Result<(Trace, Vec<compare::Row>)> {
        let gen = crate::model::GenerateOptions {
            requests: Some(self.sample.len() as u64),
            seed,
            ..crate::model::GenerateOptions::default()
        };
        let synth = crate::model::generate(model, &gen)?;
        let mut rows = compare::compare(
            &self.original,
            &analyze::characterize(&synth.view(), &self.same_window)?,
        );
        rows.extend(compare::compare_fine(
            &self.fine,
            &compare::Fine::of(&synth.view(), &self.spec),
        ));
        Ok((synth, rows))
    }
}

/// Closed-loop IOPS of `t` with each of its volumes on a device `device` of its own, `depth`
/// requests outstanding on each.
fn simulated_iops(t: &TraceView<'_>, device: &str, depth: usize) -> Result<f64> {
    let config = sim::Config::preset(device)?;
    let placements: Vec<sim::Placement> = (0..t.volumes.len() as u32)
        .map(|v| sim::Placement {
            config: config.clone(),
            volumes: vec![v],
        })
        .collect();
    let opts = sim::SimOptions {
        iodepth: Some(depth.max(1)),
        ..sim::SimOptions::default()
    };
    Ok(sim::simulate_mapped(t, &placements, &opts, &Progress::default())?
        .figures
        .iops)
}

fn choose_levels(
    judge: &Judge<'_>,
    states: u32,
    original_iops: Option<f64>,
    opts: &TrainOptions,
    progress: &Progress,
) -> Result<LevelChoice> {
    let sample = &judge.sample;
    let mut tried = Vec::new();
    let mut worsts = Vec::new();
    let mut previous: Option<f64> = None;
    let mut previous_iops: Option<f64> = None;
    let (mut by_fidelity, mut by_iops) = (None, None);
    let mut models = Vec::new();
    for levels in 1..=MAX_LEVELS {
        progress.check()?;
        let model = train_fixed(sample, levels, states, opts)?;
        // levels are judged as the edges and stacks place requests (the population is
        // chosen after, at the chosen levels): a copy without it, where there is one
        let (synth, rows) = if has_population(&model) {
            let mut stacks_only = model.clone();
            without_population(&mut stacks_only);
            judge.generate_and_compare(&stacks_only, opts.seed)?
        } else {
            judge.generate_and_compare(&model, opts.seed)?
        };
        models.push(model);
        let worst = compare::worst_deviation(&rows);
        worsts.push(worst);
        // how much this level improved the worst deviation of the level before
        let gain = previous.map(|p: f64| p - worst);
        let iops = match &opts.simulate_on {
            Some((device, depth)) => Some(simulated_iops(&synth.view(), device, *depth)?),
            None => None,
        };
        // how much this level changed the simulated IOPS of the level before (a share of it)
        let iops_change = previous_iops
            .zip(iops)
            .map(|(p, now): (f64, f64)| (now - p).abs() / p.max(f64::MIN_POSITIVE));
        tried.push(serde_json::json!({
            "levels": levels,
            "worst_deviation": worst,
            "improvement": gain,
            "simulated_iops": iops,
            "iops_change": iops_change,
        }));
        progress.advance(1);
        if by_fidelity.is_none() && gain.is_some_and(|g| g < LEVEL_CHANGE) {
            by_fidelity = Some(levels - 1);
        }
        if by_iops.is_none() && iops_change.is_some_and(|c| c < IOPS_CHANGE) {
            by_iops = Some(levels - 1);
        }
        if by_fidelity.is_some() && (by_iops.is_some() || iops.is_none()) {
            break;
        }
        previous = Some(worst);
        previous_iops = iops;
    }
    let by_fidelity = by_fidelity.unwrap_or(MAX_LEVELS);
    let by_iops = original_iops.map(|_| by_iops.unwrap_or(MAX_LEVELS));
    let levels = by_fidelity.max(by_iops.unwrap_or(1));
    let model = models.swap_remove(levels as usize - 1);
    let worst = worsts[levels as usize - 1];
    Ok(LevelChoice {
        levels,
        worst,
        by_fidelity,
        by_iops,
        tried: serde_json::Value::Array(tried),
        model,
    })
}

/// Whether some thread of `model` keeps a population ([`crate::model::Reuse::population`]).
fn has_population(model: &crate::model::Model) -> bool {
    model
        .threads
        .iter()
        .any(|t| t.reuse.as_ref().is_some_and(|r| !r.population.is_empty()))
}

/// The model's threads without their population ([`crate::model::Reuse::population`]).
pub(super) fn without_population(model: &mut crate::model::Model) {
    for r in model.threads.iter_mut().filter_map(|t| t.reuse.as_mut()) {
        r.population.clear();
    }
}

/// Whether a model chosen by `selection` keeps its population (not without a record of it).
pub(super) fn keeps_population(selection: Option<&serde_json::Value>) -> bool {
    selection
        .and_then(|s| s.get("population"))
        .and_then(|p| p.get("kept"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// Whether the model keeps the trace's population: a model of the sample at the chosen levels
/// generates the sample's length with it and without it (the same seed), and it is kept when
/// its trace is closer to the sample by [`POPULATION_GAIN`] in the mean deviation (each
/// figure `validate` scores, in units of its target, at most [`DEVIATION_CAP`]). A population
/// helps where requests come back by their popularity, independently (a hot set), and hurts
/// where they come back in bursts of their own (a journal re-read after its writes, scans
/// resumed): the edges' stacks hold those, a shuffled population does not. A population that
/// would re-use under [`MIN_POPULATION_REUSE`] of the sample's requests is left out unjudged.
/// The sample's characterization is `judge`'s (made once for level selection too), and `with`
/// is the model level selection chose (else one trained at the given levels).
fn choose_population<'a>(
    sample: &TraceView<'a>,
    judge: &mut Option<Judge<'a>>,
    with: &crate::model::Model,
    opts: &TrainOptions,
) -> Result<serde_json::Value> {
    let reused: u64 = with
        .threads
        .iter()
        .filter_map(|t| t.reuse.as_ref())
        .flat_map(|r| &r.population)
        .map(|p| p.touches.iter().map(|&[k, n]| (k - 1) * n).sum::<u64>())
        .sum();
    // re-uses the population would place, against the sample's requests: too few to change
    // a figure, it is left out unjudged
    let share = reused as f64 / sample.len().max(1) as f64;
    if share < MIN_POPULATION_REUSE {
        return Ok(serde_json::json!({ "kept": false, "reused_share": share }));
    }
    let judge = match judge {
        Some(judge) => judge,
        None => judge.insert(Judge::of(sample)?),
    };
    let mut without = with.clone();
    without_population(&mut without);
    let score = |model: &crate::model::Model| -> Result<f64> {
        let (_, rows) = judge.generate_and_compare(model, opts.seed)?;
        Ok(compare::mean_deviation(&rows, DEVIATION_CAP))
    };
    let (with_score, without_score) = (score(with)?, score(&without)?);
    Ok(serde_json::json!({
        "kept": with_score <= without_score - POPULATION_GAIN,
        "reused_share": share,
        "mean_deviation_with": with_score,
        "mean_deviation_without": without_score,
    }))
}

#[cfg(test)]
mod tests {
    use crate::model::train::{train_watched, TrainOptions};
    use crate::progress::Progress;
    use crate::trace::testing::reads;

    #[test]
    fn training_counts_the_models_it_tries_and_stops_between_them() {
        let ts: Vec<u64> = (0..3000).map(|i| i * 1_000_000).collect();
        let offsets: Vec<u64> = (0..3000).map(|i| (i * 7919 % 500) * 4096).collect();
        let t = reads(&ts, &offsets, 4096);
        let progress = Progress::default();
        train_watched(&t.view(), &TrainOptions::default(), &progress).unwrap();
        let total = u64::from(super::MAX_LEVELS) + 1;
        assert_eq!(progress.get(), (total, total));
        let stopped = Progress::default();
        stopped.stop();
        let e = train_watched(&t.view(), &TrainOptions::default(), &stopped);
        assert!(matches!(e, Err(crate::error::Error::Interrupted)));
    }
}
