//! PyO3 bindings: `iomimic._core`. Converts arrays, options, results and errors at the
//! boundary ([`boundary`] says how, once); holds no logic. One module per part of the core.

// PyO3 hands extracted arguments over by value, and the functions mirror Python's keyword
// arguments one for one.
#![allow(clippy::needless_pass_by_value, clippy::too_many_arguments)]

mod analyze;
mod boundary;
mod cache;
mod errors;
mod model;
mod offload;
mod realio;
mod sim;
mod study;
mod synth;
mod trace;
mod units;
mod watch;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<trace::PyTraceReader>()?;
    m.add_function(wrap_pyfunction!(trace::validate, m)?)?;
    m.add_function(wrap_pyfunction!(trace::merge_traces, m)?)?;
    m.add_function(wrap_pyfunction!(trace::write_csv, m)?)?;
    m.add_function(wrap_pyfunction!(trace::summarize, m)?)?;
    m.add_class::<trace::PySummaryParts>()?;
    m.add_function(wrap_pyfunction!(trace::format_table, m)?)?;
    m.add_function(wrap_pyfunction!(analyze::characterize, m)?)?;
    m.add_class::<analyze::PyChunkedProfile>()?;
    m.add_class::<analyze::PyChunkedPartition>()?;
    m.add_function(wrap_pyfunction!(analyze::miss_ratio_curve, m)?)?;
    m.add_function(wrap_pyfunction!(analyze::validate_traces, m)?)?;
    m.add_function(wrap_pyfunction!(analyze::plot_data, m)?)?;
    m.add_class::<model::PyModel>()?;
    m.add_class::<model::PyGeneration>()?;
    m.add_function(wrap_pyfunction!(model::train_model, m)?)?;
    m.add_class::<model::PyTrainPlan>()?;
    m.add_class::<model::PyTrainStream>()?;
    m.add_function(wrap_pyfunction!(model::train_plan, m)?)?;
    m.add_function(wrap_pyfunction!(model::train_part, m)?)?;
    m.add_function(wrap_pyfunction!(model::mix_models, m)?)?;
    m.add_function(wrap_pyfunction!(model::model_presets, m)?)?;
    m.add_function(wrap_pyfunction!(model::preset_model, m)?)?;
    m.add_function(wrap_pyfunction!(model::preset_info, m)?)?;
    m.add_function(wrap_pyfunction!(synth::pattern_trace, m)?)?;
    m.add_function(wrap_pyfunction!(synth::pattern_requests, m)?)?;
    m.add_function(wrap_pyfunction!(synth::parse_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(synth::generate_locality_free, m)?)?;
    m.add_function(wrap_pyfunction!(cache::cache_replay, m)?)?;
    m.add_function(wrap_pyfunction!(cache::cache_policies, m)?)?;
    m.add_function(wrap_pyfunction!(sim::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(sim::simulate_mapped, m)?)?;
    m.add_class::<sim::PySimStream>()?;
    m.add_function(wrap_pyfunction!(sim::device_presets, m)?)?;
    m.add_function(wrap_pyfunction!(sim::device_table, m)?)?;
    m.add_function(wrap_pyfunction!(sim::check_device, m)?)?;
    m.add_function(wrap_pyfunction!(study::study_table, m)?)?;
    m.add_function(wrap_pyfunction!(study::run_study, m)?)?;
    m.add_function(wrap_pyfunction!(study::run_study_alone, m)?)?;
    m.add_function(wrap_pyfunction!(study::study_points, m)?)?;
    m.add_function(wrap_pyfunction!(study::join_study, m)?)?;
    m.add_function(wrap_pyfunction!(study::fleet_workload, m)?)?;
    m.add_function(wrap_pyfunction!(study::judge_fleet, m)?)?;
    m.add_function(wrap_pyfunction!(offload::offload_init, m)?)?;
    m.add_function(wrap_pyfunction!(offload::offload_store_set, m)?)?;
    m.add_class::<offload::PyOffloadClient>()?;
    m.add_class::<realio::RunSession>()?;
    m.add_function(wrap_pyfunction!(realio::io_uring_available, m)?)?;
    m.add_function(wrap_pyfunction!(realio::engine_name, m)?)?;
    m.add_function(wrap_pyfunction!(realio::prepare_target, m)?)?;
    m.add_function(wrap_pyfunction!(realio::place_requests, m)?)?;
    m.add_function(wrap_pyfunction!(units::parse_duration_ns, m)?)?;
    m.add_function(wrap_pyfunction!(units::parse_size_bytes, m)?)?;
    errors::register(m)?;
    m.add("LATENCY_UNKNOWN", iomimic_core::LATENCY_UNKNOWN)?;
    m.add("STATUS_OK", iomimic_core::trace::STATUS_OK)?;
    m.add("SLICE_REQUESTS", iomimic_core::model::SLICE_REQUESTS)?;
    Ok(())
}
