//! Small statistics helpers: moments and exact percentiles.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Mean and coefficient of variation (population sd / mean) of `values`.
pub fn mean_cv(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let (n, sum) = values.clone().fold((0u64, 0.0), |(n, s), v| (n + 1, s + v));
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = sum / n as f64;
    let var = values.map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    (mean, if mean > 0.0 { var.sqrt() / mean } else { 0.0 })
}

/// Percentiles reported for times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// Exact percentiles (nearest rank) of `values`, scaled by `scale`; reorders `values`.
/// Successive selections each work on the upper part left by the previous one, so the cost
/// stays near one linear pass.
pub fn percentiles(values: &mut [u64], scale: f64) -> Option<Percentiles> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    // nearest rank: a positive quantile of a positive count
    #[allow(clippy::cast_sign_loss)]
    let ranks =
        [0.5, 0.9, 0.95, 0.99, 0.999, 1.0].map(|q: f64| ((q * n as f64).ceil() as usize).clamp(1, n) - 1);
    let mut out = [0.0; 6];
    let mut start = 0;
    for (slot, &rank) in out.iter_mut().zip(&ranks) {
        let (_, v, _) = values[start..].select_nth_unstable(rank - start);
        *slot = *v as f64 * scale;
        start = rank;
    }
    Some(Percentiles {
        p50: out[0],
        p90: out[1],
        p95: out[2],
        p99: out[3],
        p999: out[4],
        max: out[5],
    })
}

/// Significant digits a [`Sketch`] keeps: a value is known to within 1 part in 1,024.
pub const SKETCH_DIGITS: u8 = 3;

/// Values (times in ns) summed up a piece at a time, in bounded memory: count, sum and sum of
/// squares exactly (so the mean and CV are those of the values), the largest exactly, and the
/// rest in an HDR histogram whose percentiles are within 0.1 % of the exact ones. Sketches of
/// pieces add up to the sketch of the whole.
#[derive(Debug, Clone)]
pub struct Sketch {
    pub count: u64,
    sum: u128,
    sum_sq: u128,
    max: u64,
    histogram: hdrhistogram::Histogram<u64>,
}

impl Default for Sketch {
    fn default() -> Self {
        Self {
            count: 0,
            sum: 0,
            sum_sq: 0,
            max: 0,
            histogram: hdrhistogram::Histogram::new(SKETCH_DIGITS).expect("3 significant digits are valid"),
        }
    }
}

impl Sketch {
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.count += 1;
        // saturating: only values near 2^64 ns (a latency written negative) could reach the top
        self.sum = self.sum.saturating_add(u128::from(v));
        self.sum_sq = self.sum_sq.saturating_add(u128::from(v) * u128::from(v));
        self.max = self.max.max(v);
        if self.histogram.record(v).is_err() {
            // past what even a resized histogram tracks (near 2^64 ns): kept at its top
            self.histogram.saturating_record(v);
        }
    }

    pub fn merge(&mut self, other: &Sketch) {
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.sum_sq = self.sum_sq.saturating_add(other.sum_sq);
        self.max = self.max.max(other.max);
        self.histogram
            .add(&other.histogram)
            .expect("auto-resizing histograms take any values");
    }

    /// Mean and coefficient of variation (population), as [`mean_cv`] of the values.
    pub fn mean_cv(&self) -> (f64, f64) {
        if self.count == 0 {
            return (0.0, 0.0);
        }
        let n = self.count as f64;
        let mean = self.sum as f64 / n;
        let var = (self.sum_sq as f64 / n - mean * mean).max(0.0);
        (mean, if mean > 0.0 { var.sqrt() / mean } else { 0.0 })
    }

    /// The exact sum and sum of squares of the values.
    pub fn sums(&self) -> (u128, u128) {
        (self.sum, self.sum_sq)
    }

    /// Percentiles (nearest rank, to the histogram's precision; the max exact), scaled.
    pub fn percentiles(&self, scale: f64) -> Option<Percentiles> {
        if self.count == 0 {
            return None;
        }
        let at = |q: f64| self.histogram.value_at_quantile(q).min(self.max) as f64 * scale;
        Some(Percentiles {
            p50: at(0.5),
            p90: at(0.9),
            p95: at(0.95),
            p99: at(0.99),
            p999: at(0.999),
            max: self.max as f64 * scale,
        })
    }

    /// The sketch as plain numbers (a partition's partial result crosses to another process):
    /// the sums as decimal text (JSON numbers stop at 64 bits), the histogram as its
    /// non-empty bins' highest values and counts.
    fn to_data(&self) -> SketchData {
        SketchData {
            count: self.count,
            sum: self.sum.to_string(),
            sum_sq: self.sum_sq.to_string(),
            max: self.max,
            bins: self
                .histogram
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_since_last_iteration()))
                .collect(),
        }
    }

    fn from_data(d: SketchData) -> Result<Self, String> {
        let number = |s: &str| {
            s.parse::<u128>()
                .map_err(|e| format!("a sketch's sum {s:?}: {e}"))
        };
        let mut sketch = Self {
            count: d.count,
            sum: number(&d.sum)?,
            sum_sq: number(&d.sum_sq)?,
            max: d.max,
            ..Self::default()
        };
        for (value, count) in d.bins {
            // a bin's highest value falls in that bin again (the top one, of values past what
            // the histogram tracks, saturates as recording them did)
            if sketch.histogram.record_n(value, count).is_err() {
                sketch.histogram.saturating_record_n(value, count);
            }
        }
        Ok(sketch)
    }

    /// The recorded values as bins `(lowest, highest, count)` in ascending order.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let h = &self.histogram;
        h.iter_recorded().map(move |v| {
            let value = v.value_iterated_to();
            (
                h.lowest_equivalent(value),
                value.min(self.max),
                v.count_since_last_iteration(),
            )
        })
    }
}

#[derive(Serialize, Deserialize)]
struct SketchData {
    count: u64,
    sum: String,
    sum_sq: String,
    max: u64,
    bins: Vec<(u64, u64)>,
}

impl Serialize for Sketch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_data().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Sketch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Sketch::from_data(SketchData::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u64> = (1..=1000).rev().collect();
        let p = percentiles(&mut v, 1.0).unwrap();
        assert_eq!(
            (p.p50, p.p90, p.p95, p.p99, p.p999, p.max),
            (500.0, 900.0, 950.0, 990.0, 999.0, 1000.0)
        );
        let (mean, cv) = mean_cv([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0].into_iter());
        assert_eq!((mean, cv), (5.0, 0.4));
    }

    #[test]
    fn a_sketch_crosses_as_json_unchanged() {
        let mut s = Sketch::default();
        for v in [0u64, 1, 7, 1_000, 123_456_789, u64::MAX / 3, 5, 5, u64::MAX - 5] {
            s.record(v);
        }
        let back: Sketch = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!((back.count, back.sums(), back.max), (s.count, s.sums(), s.max));
        assert_eq!(back.bins().collect::<Vec<_>>(), s.bins().collect::<Vec<_>>());
        assert_eq!(back.percentiles(1.0), s.percentiles(1.0));
    }
}
