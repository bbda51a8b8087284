//! The rows that compare two characterizations: the Messenger table's figures, Keeton's run
//! counts, the coarse spatial histogram, IOPS over the fluctuation windows, the block
//! miss-ratio curve, and each volume's read and sequential shares (the worst volume shown).

use std::collections::BTreeMap;

use super::super::mrc::Mrc;
use super::super::sequentiality::Sequentiality;
use super::super::{Figures, Profile};
use super::{Kind, Row, IOPS_OVER_TIME_TARGET, MRC_TARGET, POINTS_TARGET, SCALAR_TARGET, SPATIAL_TARGET};

/// Volumes with fewer requests than this are left out of the per-volume rows: their shares
/// move by more than the target from sampling alone.
pub const VOLUME_MIN_REQUESTS: u64 = 1000;

/// L1 distance / 2 of two discrete distributions given as (key, share) lists.
fn l1_half<K: Ord>(a: impl IntoIterator<Item = (K, f64)>, b: impl IntoIterator<Item = (K, f64)>) -> f64 {
    let mut both: BTreeMap<K, (f64, f64)> = BTreeMap::new();
    for (k, v) in a {
        both.entry(k).or_default().0 += v;
    }
    for (k, v) in b {
        both.entry(k).or_default().1 += v;
    }
    both.values().map(|(x, y)| (x - y).abs()).sum::<f64>() / 2.0
}

/// Mean absolute difference of two miss-ratio curves over the cache sizes of either; past the
/// end of the shorter curve (a smaller footprint) its last value stands.
pub fn mrc_error(a: &Mrc, b: &Mrc) -> f64 {
    let at = |m: &Mrc, size: u64| {
        m.curve
            .iter()
            .filter(|p| p.cache_bytes <= size)
            .max_by_key(|p| p.cache_bytes)
            .map_or(1.0, |p| p.miss_ratio)
    };
    let mut sizes: Vec<u64> = a.curve.iter().chain(&b.curve).map(|p| p.cache_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() {
        return 0.0;
    }
    sizes.iter().map(|&s| (at(a, s) - at(b, s)).abs()).sum::<f64>() / sizes.len() as f64
}

/// Mean absolute difference of per-window IOPS over the original's windows, relative to the
/// original's mean (missing synthetic windows count as idle).
pub(super) fn iops_over_time(a: &Figures, b: &Figures) -> f64 {
    let (xa, xb) = (&a.fluctuation.iops, &b.fluctuation.iops);
    let n = xa.len();
    if n == 0 {
        return 0.0;
    }
    let mean = xa.iter().sum::<f64>() / n as f64;
    if mean == 0.0 {
        return 0.0;
    }
    let gap: f64 = (0..n)
        .map(|i| (xa[i] - xb.get(i).copied().unwrap_or(0.0)).abs())
        .sum();
    gap / n as f64 / mean
}

/// Each stream's share of the requests.
fn weights(p: &Profile) -> Vec<(u32, f64)> {
    let total = p.trace.requests.max(1) as f64;
    p.streams
        .iter()
        .map(|(&s, f)| (s, f.requests as f64 / total))
        .collect()
}

fn mix_shown(f: &Figures) -> String {
    if f.writes == 0 {
        return "reads only".into();
    }
    format!(
        "{:.2}:1 ({:.2}%)",
        f.reads as f64 / f.writes as f64,
        100.0 * f.read_fraction
    )
}

fn sizes_shown(f: &Figures) -> String {
    let top: Vec<String> = f
        .size
        .all
        .distribution
        .iter()
        .take(2)
        .map(|d| format!("{}K ({:.1}%)", d.bytes / 1024, 100.0 * d.fraction))
        .collect();
    top.join(" ")
}

fn threads_shown(p: &Profile) -> String {
    let mut w = weights(p);
    // heaviest first; a stable sort keeps equal weights in stream order
    w.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top: Vec<String> = w
        .iter()
        .take(2)
        .map(|(s, v)| format!("T{s} ({:.1}%)", 100.0 * v))
        .collect();
    top.join(" ")
}

fn spatial_shown(f: &Figures) -> String {
    let shares: Vec<String> = f
        .spatial
        .fractions
        .iter()
        .map(|x| format!("{:.1}", 100.0 * x))
        .collect();
    shares.join("  ")
}

/// The rows comparing `s` (synthetic) with `o` (original), in the table's order.
pub fn compare(o: &Profile, s: &Profile) -> Vec<Row> {
    let (fo, fs) = (&o.trace, &s.trace);
    let (qo, qs) = (&fo.sequentiality, &fs.sequentiality);
    let size_shares = |f: &Figures| -> Vec<(u32, f64)> {
        f.size
            .all
            .distribution
            .iter()
            .map(|d| (d.bytes, d.fraction))
            .collect()
    };
    let spatial = fo
        .spatial
        .fractions
        .iter()
        .zip(&fs.spatial.fractions)
        .map(|(x, y)| (x - y).abs())
        .sum::<f64>()
        / 2.0;
    let mut rows = vec![
        Row::new(
            "read fraction",
            Kind::Scalar,
            fo.read_fraction,
            fs.read_fraction,
            Some(SCALAR_TARGET),
        )
        .shown(mix_shown(fo), mix_shown(fs)),
        Row::new(
            "random %",
            Kind::Scalar,
            100.0 * (1.0 - fo.sequential_fraction),
            100.0 * (1.0 - fs.sequential_fraction),
            Some(SCALAR_TARGET),
        ),
        Row::new(
            "block-size distribution (L1/2)",
            Kind::Distance,
            0.0,
            l1_half(size_shares(fo), size_shares(fs)),
            None,
        )
        .shown(sizes_shown(fo), sizes_shown(fs)),
        Row::new(
            "mean request size (B)",
            Kind::Scalar,
            fo.size.all.mean_bytes,
            fs.size.all.mean_bytes,
            Some(SCALAR_TARGET),
        ),
        Row::new(
            "thread weights (L1/2)",
            Kind::Distance,
            0.0,
            l1_half(weights(o), weights(s)),
            None,
        )
        .shown(threads_shown(o), threads_shown(s)),
        Row::new(
            "mean inter-arrival (µs)",
            Kind::Scalar,
            fo.interarrival.mean_us,
            fs.interarrival.mean_us,
            Some(SCALAR_TARGET),
        ),
        Row::new("IOPS", Kind::Scalar, fo.iops, fs.iops, Some(SCALAR_TARGET)),
    ];
    rows.extend(run_rows(qo, qs));
    rows.extend([
        Row::new(
            "spatial histogram (L1/2)",
            Kind::Spatial,
            0.0,
            spatial,
            Some(SPATIAL_TARGET),
        )
        .shown(spatial_shown(fo), spatial_shown(fs)),
        Row::new(
            "IOPS over time (mean |Δ|/mean)",
            Kind::Distance,
            0.0,
            iops_over_time(fo, fs),
            Some(IOPS_OVER_TIME_TARGET),
        ),
    ]);
    if let (Some(a), Some(b)) = (&fo.mrc, &fs.mrc) {
        rows.push(Row::new(
            "miss-ratio curve error",
            Kind::Mrc,
            0.0,
            mrc_error(a, b),
            Some(MRC_TARGET),
        ));
    }
    rows.extend(worst_volume(o, s));
    if let (Some(a), Some(b)) = (&fo.latency_us, &fs.latency_us) {
        rows.push(Row::new("mean latency (µs)", Kind::Info, a.mean, b.mean, None));
    }
    rows
}

/// The sequentiality rows (shown, not judged): the three run counts. (The share of
/// sequential requests is the "random %" row's complement, so it is not shown twice.)
fn run_rows(qo: &Sequentiality, qs: &Sequentiality) -> [Row; 3] {
    [
        Row::new("run count", Kind::Info, qo.run_count, qs.run_count, None),
        Row::new(
            "detangled run count",
            Kind::Info,
            qo.detangled_run_count,
            qs.detangled_run_count,
            None,
        ),
        Row::new(
            "relaxed detangled run count",
            Kind::Info,
            qo.relaxed_detangled_run_count,
            qs.relaxed_detangled_run_count,
            None,
        ),
    ]
}

/// The worst volume's read share and random share, in points: of the volumes with at least
/// [`VOLUME_MIN_REQUESTS`] requests in the original (matched by name), the one whose share moved
/// most. Aggregate figures hide a log volume written sequentially beside a data volume read at
/// random; these rows do not.
fn worst_volume(o: &Profile, s: &Profile) -> Vec<Row> {
    type Share = fn(&Figures) -> f64;
    let shares: [(&'static str, Share); 2] = [
        ("read %, worst volume", |f| 100.0 * f.read_fraction),
        ("random %, worst volume", |f| {
            100.0 * (1.0 - f.sequential_fraction)
        }),
    ];
    let mut rows = Vec::new();
    for (metric, share) in shares {
        let worst = o
            .volumes
            .iter()
            .filter(|(_, f)| f.requests >= VOLUME_MIN_REQUESTS)
            .map(|(name, f)| {
                let synthetic = s.volumes.get(name).map_or(0.0, share);
                (name, share(f), synthetic)
            })
            .max_by(|a, b| (a.2 - a.1).abs().total_cmp(&(b.2 - b.1).abs()));
        if let Some((name, original, synthetic)) = worst {
            rows.push(
                Row::new(metric, Kind::Points, original, synthetic, Some(POINTS_TARGET))
                    .shown(format!("{original:.2}% ({name})"), format!("{synthetic:.2}%")),
            );
        }
    }
    rows
}
