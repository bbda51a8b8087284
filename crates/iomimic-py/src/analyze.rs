//! Characterization and fidelity.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use iomimic_core::analyze::{self, chunked, compare};

use crate::boundary::{parse_opt, to_py, with_checked_view, with_view, Columns};
use crate::errors::{to_py as err_to_py, InputError};
use crate::watch::watched;

/// Every characterization figure of a trace (a Profile).
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, ranges=4, window_ns=None, by=None, mrc="all", mrc_sampling=None, mrc_budget=None, progress=None))]
#[allow(clippy::too_many_arguments)] // one per keyword of the Python call
pub fn characterize(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    ranges: usize,
    window_ns: Option<u64>,
    by: Option<&str>,
    mrc: &str,
    mrc_sampling: Option<f64>,
    mrc_budget: Option<u64>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let opts = options(ranges, window_ns, by, mrc, mrc_sampling, mrc_budget)?;
    let profile = with_checked_view(&columns, &volumes, &files, "characterize", |view| {
        watched(py, progress.as_ref(), |p| {
            analyze::characterize_watched(view, &opts, p)
        })
    })?;
    to_py(py, &profile)
}

/// The options of a characterization, checked.
fn options(
    ranges: usize,
    window_ns: Option<u64>,
    by: Option<&str>,
    mrc: &str,
    mrc_sampling: Option<f64>,
    mrc_budget: Option<u64>,
) -> PyResult<analyze::Options> {
    let by = match by {
        None => None,
        Some("stream") => Some(analyze::GroupBy::Stream),
        Some("volume") => Some(analyze::GroupBy::Volume),
        Some(other) => {
            return Err(InputError::new_err(format!(
                "`by` must be stream or volume, found {other:?}"
            )))
        }
    };
    let mrc = match mrc {
        "all" => analyze::MrcScope::All,
        "trace" => analyze::MrcScope::Trace,
        "none" => analyze::MrcScope::None,
        other => {
            return Err(InputError::new_err(format!(
                "`mrc` must be all, trace or none, found {other:?}"
            )))
        }
    };
    if ranges == 0 {
        return Err(InputError::new_err("`ranges` must be at least 1"));
    }
    check_rate("mrc_sampling", mrc_sampling)?;
    Ok(analyze::Options {
        ranges,
        window_ns,
        by,
        mrc,
        mrc_sampling,
        mrc_budget: budget_blocks(mrc_budget)?,
    })
}

/// A characterization of a trace read a piece at a time (row groups of a Parquet trace too
/// large to hold), its curves within 3/8 of `memory` bytes: every piece is given to `survey`, then, after `start`, again to `add`, in
/// the same time order; `finish` gives the profile (`analyze::chunked` says what is exact).
#[pyclass(name = "ChunkedProfile", module = "iomimic._core", frozen)]
pub struct PyChunkedProfile {
    stage: Mutex<Stage>,
}

enum Stage {
    Surveying(Box<chunked::Survey>, analyze::Options),
    Counting(Box<chunked::Chunked>),
    Done,
}

impl PyChunkedProfile {
    /// Gives a piece to the survey (`Some(in_order)`) or to the counting (`None`), whichever is
    /// asked for, refusing it in the other stage.
    fn take_piece(
        &self,
        py: Python<'_>,
        columns: &Columns<'_>,
        volumes: &[String],
        files: &[String],
        surveying: Option<bool>,
    ) -> PyResult<()> {
        let mut stage = self.stage();
        with_view(columns, volumes, files, |view| {
            match (&mut *stage, surveying) {
                (Stage::Surveying(survey, _), Some(true)) => py.detach(|| survey.add(view)),
                (Stage::Surveying(survey, _), Some(false)) => {
                    py.detach(|| survey.add_in_any_order(view));
                    Ok(())
                }
                (Stage::Counting(chunked), None) => py.detach(|| chunked.add(view)),
                (_, Some(_)) => {
                    return Err(InputError::new_err(
                        "every piece is surveyed before the first is added",
                    ))
                }
                (_, None) => {
                    return Err(InputError::new_err(
                        "pieces are added after `start` and before `finish`",
                    ))
                }
            }
            .map_err(err_to_py)
        })
    }

    /// Runs `work` on the survey (before `start`).
    fn surveying<R>(&self, work: impl FnOnce(&mut chunked::Survey) -> PyResult<R>) -> PyResult<R> {
        match &mut *self.stage() {
            Stage::Surveying(survey, _) => work(survey),
            _ => Err(InputError::new_err("the survey has ended already")),
        }
    }

    /// Runs `work` on the characterization being counted (after `start`).
    fn counting<R>(&self, work: impl FnOnce(&mut chunked::Chunked) -> PyResult<R>) -> PyResult<R> {
        match &mut *self.stage() {
            Stage::Counting(chunked) => work(chunked),
            _ => Err(InputError::new_err(
                "the counting runs between `start` and `finish`",
            )),
        }
    }

    fn stage(&self) -> std::sync::MutexGuard<'_, Stage> {
        self.stage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PyChunkedProfile {
    #[new]
    #[pyo3(signature = (memory, ranges=4, window_ns=None, by=None, mrc="all", mrc_sampling=None, mrc_budget=None))]
    fn new(
        memory: u64,
        ranges: usize,
        window_ns: Option<u64>,
        by: Option<&str>,
        mrc: &str,
        mrc_sampling: Option<f64>,
        mrc_budget: Option<u64>,
    ) -> PyResult<Self> {
        let mut opts = options(ranges, window_ns, by, mrc, mrc_sampling, mrc_budget)?;
        opts.mrc_budget = opts.mrc_budget.min(chunked::curve_budget(memory, opts.mrc));
        Ok(Self {
            stage: Mutex::new(Stage::Surveying(Box::new(chunked::Survey::new(0)), opts)),
        })
    }

    /// Surveys the next piece (first pass): in time order after the previous one, unless
    /// `in_order` is false (the survey then takes pieces in any order, the counting still in
    /// time order).
    #[pyo3(signature = (columns, volumes, files, in_order=true))]
    fn survey(
        &self,
        py: Python<'_>,
        columns: Columns<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
        in_order: bool,
    ) -> PyResult<()> {
        self.take_piece(py, &columns, &volumes, &files, Some(in_order))
    }

    /// The survey so far, as bytes (a partition's, for the driver's `take_survey`).
    fn surveyed<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.surveying(|survey| Ok(PyBytes::new(py, &survey.to_bytes().map_err(err_to_py)?)))
    }

    /// Adds the survey of the partition that comes next in time (`surveyed` of another
    /// characterization); false, and nothing added, when it starts before the ones before
    /// it end.
    fn take_survey(&self, py: Python<'_>, survey_bytes: &[u8]) -> PyResult<bool> {
        self.surveying(|survey| {
            py.detach(|| Ok(survey.merge(chunked::Survey::from_bytes(survey_bytes)?)))
                .map_err(err_to_py)
        })
    }

    /// Ends the survey: the counting of a trace with these volume names begins.
    fn start(&self, volumes: Vec<String>) -> PyResult<()> {
        let mut stage = self.stage();
        let Stage::Surveying(survey, opts) = std::mem::replace(&mut *stage, Stage::Done) else {
            return Err(InputError::new_err("the survey has ended already"));
        };
        if survey.rows() == 0 {
            return Err(InputError::new_err("cannot characterize an empty trace"));
        }
        *stage = Stage::Counting(Box::new(
            chunked::Chunked::new(*survey, volumes, &opts).map_err(err_to_py)?,
        ));
        Ok(())
    }

    /// Counts the next piece (second pass).
    fn add(
        &self,
        py: Python<'_>,
        columns: Columns<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
    ) -> PyResult<()> {
        self.take_piece(py, &columns, &volumes, &files, None)
    }

    /// What counting a partition of this trace on its own needs (after `start`), as text for
    /// `ChunkedPartition`.
    fn setup(&self) -> PyResult<String> {
        self.counting(|chunked| chunked.setup().to_json().map_err(err_to_py))
    }

    /// Takes in the next partition's counts (the bytes of `ChunkedPartition.finish`), in time
    /// order. False when some of its requests must be counted again: give its pieces again to
    /// `redo`, then call `redone`.
    fn absorb(&self, py: Python<'_>, part: &[u8]) -> PyResult<bool> {
        self.counting(|chunked| {
            py.detach(|| chunked.absorb(chunked::Part::from_bytes(part)?))
                .map_err(err_to_py)
        })
    }

    /// Counts a piece of the partition taken in last again (see `absorb`).
    fn redo(
        &self,
        py: Python<'_>,
        columns: Columns<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
    ) -> PyResult<()> {
        self.counting(|chunked| {
            with_view(&columns, &volumes, &files, |view| {
                py.detach(|| chunked.redo(view)).map_err(err_to_py)
            })
        })
    }

    /// Ends `redo`.
    fn redone(&self) {
        if let Stage::Counting(chunked) = &mut *self.stage() {
            chunked.redone();
        }
    }

    /// The profile of every piece added (or partition taken in).
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Stage::Counting(chunked) = &*self.stage() {
            chunked.whole_so_far().map_err(err_to_py)?;
        }
        let Stage::Counting(chunked) = std::mem::replace(&mut *self.stage(), Stage::Done) else {
            return Err(InputError::new_err("nothing is being counted"));
        };
        let profile = py.detach(|| chunked.finish());
        to_py(py, &profile)
    }
}

/// One partition of a trace (a range of its time) counted on its own, a piece at a time, from
/// the setup of the trace's `ChunkedProfile`; `finish` gives its counts as bytes for
/// `ChunkedProfile.absorb` (in another process, a Ray task's result).
#[pyclass(name = "ChunkedPartition", module = "iomimic._core", frozen)]
pub struct PyChunkedPartition {
    counting: Mutex<Option<chunked::Chunked>>,
}

impl PyChunkedPartition {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<chunked::Chunked>> {
        self.counting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PyChunkedPartition {
    /// `share`: the partition's part of the trace's requests (it sizes the curves' maps).
    #[new]
    fn new(setup: &str, share: f64) -> PyResult<Self> {
        let setup = chunked::Setup::from_json(setup).map_err(err_to_py)?;
        Ok(Self {
            counting: Mutex::new(Some(chunked::Chunked::partition(setup, share))),
        })
    }

    /// Counts the partition's next piece (in time order).
    fn add(
        &self,
        py: Python<'_>,
        columns: Columns<'_>,
        volumes: Vec<String>,
        files: Vec<String>,
    ) -> PyResult<()> {
        let mut counting = self.lock();
        let Some(chunked) = counting.as_mut() else {
            return Err(InputError::new_err("the partition is finished"));
        };
        with_view(&columns, &volumes, &files, |view| {
            py.detach(|| chunked.add(view)).map_err(err_to_py)
        })
    }

    /// The partition's counts, as bytes.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let Some(chunked) = self.lock().take() else {
            return Err(InputError::new_err("the partition is finished"));
        };
        let bytes = py.detach(|| chunked.into_part()?.to_bytes()).map_err(err_to_py)?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// The LRU miss-ratio curve of a trace's 4 KiB blocks alone (the profile's `mrc`).
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, budget=None, sampling=None, progress=None))]
pub fn miss_ratio_curve(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    budget: Option<u64>,
    sampling: Option<f64>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let budget = budget_blocks(budget)?;
    check_rate("sampling", sampling)?;
    let curve = with_checked_view(&columns, &volumes, &files, "take the curve of", |view| {
        watched(py, progress.as_ref(), |p| {
            let n = view.len();
            p.add_total(n as u64);
            let blocks = analyze::mrc::Blocks::of_trace(view);
            let rate = sampling.unwrap_or_else(|| blocks.sampling_rate(budget));
            let curve = analyze::mrc::curve_of_counted(view, 0..n, &blocks, rate, p)?;
            p.ticked(n);
            Ok(curve)
        })
    })?;
    to_py(py, &curve)
}

/// A forced SHARDS rate, if any, must be in (0, 1].
fn check_rate(name: &str, rate: Option<f64>) -> PyResult<()> {
    match rate.filter(|r| !(*r > 0.0 && *r <= 1.0)) {
        Some(rate) => Err(InputError::new_err(format!(
            "`{name}` must be in (0, 1], found {rate}"
        ))),
        None => Ok(()),
    }
}

/// Blocks a curve may track: the default, or the caller's (at least one).
fn budget_blocks(budget: Option<u64>) -> PyResult<u64> {
    match budget {
        Some(b) if b < analyze::mrc::MIN_BUDGET_BLOCKS => Err(InputError::new_err(format!(
            "`mrc_budget` must be at least {} blocks, found {b}: a curve sampled from fewer says \
             little (SHARDS' error grows as one over the root of the blocks sampled)",
            analyze::mrc::MIN_BUDGET_BLOCKS
        ))),
        Some(blocks) => Ok(blocks),
        None => Ok(analyze::mrc::DEFAULT_BUDGET_BLOCKS),
    }
}

/// How faithful `synthetic` is to `original`: the validation table (and a baseline's).
#[pyfunction]
#[pyo3(signature = (original, original_names, synthetic, synthetic_names, ranges=4, baseline=None, seed=1, progress=None))]
#[allow(clippy::too_many_arguments)] // one per keyword of the Python call
pub fn validate_traces(
    py: Python<'_>,
    original: Columns<'_>,
    original_names: (Vec<String>, Vec<String>),
    synthetic: Columns<'_>,
    synthetic_names: (Vec<String>, Vec<String>),
    ranges: usize,
    baseline: Option<&str>,
    seed: u64,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    if ranges == 0 {
        return Err(InputError::new_err("`ranges` must be at least 1"));
    }
    let opts = compare::ValidateOptions {
        ranges,
        baseline: parse_opt::<compare::Baseline>(baseline)?,
        seed,
    };
    let (ov, of) = &original_names;
    let (sv, sf) = &synthetic_names;
    let result = with_checked_view(&original, ov, of, "validate against", |o| {
        with_view(&synthetic, sv, sf, |s| {
            s.validate().map_err(InputError::new_err)?;
            if s.is_empty() {
                return Err(InputError::new_err("cannot validate an empty synthetic trace"));
            }
            watched(py, progress.as_ref(), |p| {
                compare::validate_watched(o, s, &opts, p)
            })
        })
    })?;
    to_py(py, &result)
}

/// What the report draws for a trace (rates over time, a seekwatcher sample, a heat map,
/// size and gap histograms); `bin_ns` lines a second trace's rate bins up with a first's.
#[pyfunction]
#[pyo3(signature = (columns, volumes, files, bin_ns=None))]
pub fn plot_data(
    py: Python<'_>,
    columns: Columns<'_>,
    volumes: Vec<String>,
    files: Vec<String>,
    bin_ns: Option<u64>,
) -> PyResult<Py<PyAny>> {
    with_view(&columns, &volumes, &files, |view| {
        let d = py
            .detach(|| analyze::plot_data::plot_data(view, analyze::plot_data::PlotOptions { bin_ns }))
            .map_err(err_to_py)?;
        to_py(py, &d)
    })
}
