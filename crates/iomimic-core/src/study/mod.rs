//! What-if studies: each a file of its own plus one line in [`STUDIES`], all driven the same
//! way, so the command line and the bindings know none of them.
//!
//! The contract: a study takes a workload (a trace; a model or a preset is generated into one
//! first, or inside the study when it compares several) and its options as JSON (its own
//! fields, unknown ones refused, errors naming the field), runs on the simulator and the cache
//! policies, and returns a report: plain data (serde) that the CLI prints as a table, writes
//! with `--json` and plots with `--plot`. Studies are deterministic: every random choice takes
//! the options' seed.

pub mod cache_alloc;
pub mod defrag;
pub mod early_errors;
pub mod offload;
pub mod prefetch;
pub mod ssd_cache;
pub mod tiers;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::trace::TraceView;

/// A study as the driver sees it.
pub trait Study: Sync {
    /// The name `iomimic study NAME` takes.
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// Runs on `workload` with `options` (JSON); returns the report. A study counts in
    /// `progress` what it can (workloads, configurations) and stops with `Interrupted` between
    /// them when told to.
    fn run(
        &self,
        workload: &TraceView<'_>,
        options: &serde_json::Value,
        progress: &Progress,
    ) -> Result<serde_json::Value>;
    /// Whether the study needs a workload; one that does not (its inputs can all be in its
    /// options) may be run on an empty trace.
    fn needs_workload(&self) -> bool {
        true
    }
    /// A sweep's independent points, each the options of a run of this study on the same
    /// workload, so they can run apart (a cluster's tasks); `None` for a study that runs as one
    /// piece. [`Study::join`] makes the report of the whole from their reports.
    fn points(&self, options: &serde_json::Value) -> Result<Option<Vec<serde_json::Value>>> {
        let _ = options;
        Ok(None)
    }
    /// The report `run` gives with `options`, from the reports of its [`Study::points`] in
    /// their order.
    fn join(&self, options: &serde_json::Value, reports: &[serde_json::Value]) -> Result<serde_json::Value> {
        let _ = (options, reports);
        Err(Error::Usage(format!(
            "study {} does not run in points",
            self.name()
        )))
    }
}

/// `options` once for each of `values`, with `field` that one value alone: a sweep's points.
pub(crate) fn each_of<T: Serialize>(
    options: &serde_json::Value,
    field: &str,
    values: &[T],
) -> Vec<serde_json::Value> {
    values
        .iter()
        .map(|v| {
            let mut point = options.clone();
            if let Some(fields) = point.as_object_mut() {
                fields.insert(field.into(), serde_json::json!([v]));
            }
            point
        })
        .collect()
}

/// The report of the whole from its points' reports, in their order: the first point's, with
/// each later one's runs added by `extend` (the rest of a point's report is every point's).
pub(crate) fn join_runs<R: DeserializeOwned + Serialize>(
    study: &dyn Study,
    options: &serde_json::Value,
    reports: &[serde_json::Value],
    extend: impl Fn(&mut R, R),
) -> Result<serde_json::Value> {
    let expected = study.points(options)?.map_or(0, |p| p.len());
    let mut points = point_reports::<R>(study.name(), expected, reports)?.into_iter();
    let mut whole = points
        .next()
        .ok_or_else(|| Error::Usage(format!("study {}: no points", study.name())))?;
    for point in points {
        extend(&mut whole, point);
    }
    serde_json::to_value(whole).map_err(|e| Error::Usage(format!("study {}: {e}", study.name())))
}

/// The reports of a study's `expected` points, read back.
pub(crate) fn point_reports<R: DeserializeOwned>(
    study: &str,
    expected: usize,
    reports: &[serde_json::Value],
) -> Result<Vec<R>> {
    if reports.len() != expected {
        return Err(Error::Usage(format!(
            "study {study}: {expected} points, {} reports",
            reports.len()
        )));
    }
    reports
        .iter()
        .map(|r| R::deserialize(r).map_err(|e| Error::Usage(format!("study {study}: a point's report: {e}"))))
        .collect()
}

/// A study's block is whole sectors: 512 B or a multiple of it.
pub(crate) fn check_block_bytes(bytes: u64) -> Result<()> {
    if bytes == 0 || !bytes.is_multiple_of(512) {
        return Err(Error::Usage(format!(
            "`block_bytes` must be a positive multiple of 512 (whole sectors), found {bytes}"
        )));
    }
    Ok(())
}

/// The built-in studies.
pub const STUDIES: &[&dyn Study] = &[
    &ssd_cache::STUDY,
    &defrag::STUDY,
    &early_errors::STUDY,
    &cache_alloc::STUDY,
    &prefetch::STUDY,
    &offload::STUDY,
];

/// The study called `name` in `registry` (usually [`STUDIES`]).
pub fn find<'r>(name: &str, registry: &[&'r dyn Study]) -> Result<&'r dyn Study> {
    registry
        .iter()
        .copied()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = registry.iter().map(|s| s.name()).collect();
            Error::Usage(format!(
                "unknown study {name:?}; studies are {}",
                if names.is_empty() {
                    "none yet".into()
                } else {
                    names.join(", ")
                }
            ))
        })
}

/// For implementations: a study's typed options from JSON, an error naming a bad field.
pub fn parse_options<O: DeserializeOwned>(study: &str, options: &serde_json::Value) -> Result<O> {
    serde_path_to_error::deserialize(options)
        .map_err(|e| Error::Usage(format!("study {study}: option `{}`: {}", e.path(), e.inner())))
}

/// For implementations: reads typed options from JSON (naming a bad field), runs `f`, and
/// turns its typed report back into JSON.
pub fn typed<O: DeserializeOwned, R: Serialize>(
    study: &str,
    options: &serde_json::Value,
    f: impl FnOnce(O) -> Result<R>,
) -> Result<serde_json::Value> {
    let report = f(parse_options(study, options)?)?;
    serde_json::to_value(report).map_err(|e| Error::Usage(format!("study {study}: {e}")))
}
