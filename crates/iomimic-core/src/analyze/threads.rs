//! Thread types: each stream (or volume) classified by functionality, intensity and
//! fluctuation, as the papers' per-thread tables do by hand.
//!
//! ## Algorithm
//! - **functionality** `log` when the group is write-dominated (≥ [`LOG_WRITE_FRACTION`] of its
//!   reads and writes are writes), small (mean request ≤ [`LOG_MAX_MEAN_BYTES`]) and
//!   sequential in the relaxed sense (at least [`LOG_MIN_RELAXED_SEQUENTIAL`] of its requests
//!   continue a stream across holes of at most 64 KiB); otherwise `data`.
//! - **intensity** `high` when the group issues at least its fair share of requests
//!   (weight ≥ 1 / number of groups), else `low`.
//! - **fluctuation** `high` when the coefficient of variation of its per-window IOPS is at least
//!   [`HIGH_FLUCTUATION_CV`], else `low`.
//!
//! ## References
//! Delimitrou et al., per-thread characterization of Messenger (IISWC 2011) and Table 1 of the
//! TPC paper (TPCTC 2011), which classify threads by hand and name automatic classification as
//! future work.

use serde::Serialize;

use super::Figures;

pub const LOG_WRITE_FRACTION: f64 = 0.9;
pub const LOG_MAX_MEAN_BYTES: f64 = 64.0 * 1024.0;
pub const LOG_MIN_RELAXED_SEQUENTIAL: f64 = 0.5;
pub const HIGH_FLUCTUATION_CV: f64 = 1.0;

#[derive(Debug, Clone, Serialize)]
pub struct Thread {
    pub group: String,
    pub weight: f64,
    pub functionality: &'static str,
    pub intensity: &'static str,
    pub fluctuation: &'static str,
    pub iops: f64,
    pub fluctuation_cv: f64,
    pub write_fraction: f64,
    pub mean_bytes: f64,
    pub relaxed_sequential_fraction: f64,
}

/// The thresholds used, written next to the table so it can be read without this code.
#[derive(Debug, Clone, Serialize)]
pub struct Thresholds {
    pub log_min_write_fraction: f64,
    pub log_max_mean_bytes: f64,
    pub log_min_relaxed_sequential_fraction: f64,
    pub high_intensity_min_weight: f64,
    pub high_fluctuation_min_cv: f64,
}

/// Classifies `groups` (name, figures); `total` is the trace's request count.
pub fn classify(groups: &[(String, &Figures)], total: u64) -> (Vec<Thread>, Thresholds) {
    let fair_share = 1.0 / groups.len().max(1) as f64;
    let mut threads: Vec<Thread> = groups
        .iter()
        .map(|(name, f)| {
            let weight = if total == 0 {
                0.0
            } else {
                f.requests as f64 / total as f64
            };
            let write_fraction = 1.0 - f.read_fraction;
            let relaxed = if f.requests == 0 {
                0.0
            } else {
                1.0 - 1.0 / f.sequentiality.relaxed_detangled_run_count.max(1.0)
            };
            let log = f.reads + f.writes > 0
                && write_fraction >= LOG_WRITE_FRACTION
                && f.size.all.mean_bytes <= LOG_MAX_MEAN_BYTES
                && relaxed >= LOG_MIN_RELAXED_SEQUENTIAL;
            Thread {
                group: name.clone(),
                weight,
                functionality: if log { "log" } else { "data" },
                intensity: if weight >= fair_share { "high" } else { "low" },
                fluctuation: if f.fluctuation.cv >= HIGH_FLUCTUATION_CV {
                    "high"
                } else {
                    "low"
                },
                iops: f.iops,
                fluctuation_cv: f.fluctuation.cv,
                write_fraction,
                mean_bytes: f.size.all.mean_bytes,
                relaxed_sequential_fraction: relaxed,
            }
        })
        .collect();
    threads.sort_by(|a, b| b.weight.total_cmp(&a.weight).then_with(|| a.group.cmp(&b.group)));
    let thresholds = Thresholds {
        log_min_write_fraction: LOG_WRITE_FRACTION,
        log_max_mean_bytes: LOG_MAX_MEAN_BYTES,
        log_min_relaxed_sequential_fraction: LOG_MIN_RELAXED_SEQUENTIAL,
        high_intensity_min_weight: fair_share,
        high_fluctuation_min_cv: HIGH_FLUCTUATION_CV,
    };
    (threads, thresholds)
}
