//! A VM's hit ratio as a function of its cache: piecewise linear through points, flat past the
//! last. Linear up to the working set (Tang et al.'s model) or read off a measured LRU miss-ratio
//! curve.

/// Hit ratio against cache bytes: points (bytes, hit) from (0, 0), bytes rising.
#[derive(Debug, Clone, PartialEq)]
pub struct HitCurve {
    points: Vec<(f64, f64)>,
}

impl HitCurve {
    /// Hit ratio cache / working set, 1 from the working set on.
    pub fn linear(working_set: f64) -> HitCurve {
        HitCurve {
            points: vec![(0.0, 0.0), (working_set, 1.0)],
        }
    }

    /// From (cache bytes, miss ratio) points of an LRU curve; an empty cache hits nothing.
    pub fn from_miss_ratios(points: &[(f64, f64)]) -> Result<HitCurve, String> {
        let mut out = vec![(0.0, 0.0)];
        for &(bytes, miss) in points {
            if !(bytes.is_finite() && bytes > 0.0 && (0.0..=1.0).contains(&miss)) {
                return Err(format!("bad curve point ({bytes}, {miss})"));
            }
            let &(last_bytes, last_hit) = out.last().expect("starts with the origin");
            if bytes <= last_bytes {
                return Err("curve points must have rising cache sizes".into());
            }
            // an LRU curve never rises; a sampled one may wobble, which would not be a curve of hits
            out.push((bytes, (1.0 - miss).max(last_hit)));
        }
        Ok(HitCurve { points: out })
    }

    /// The hit ratio with `bytes` of cache.
    pub fn hit(&self, bytes: f64) -> f64 {
        let p = &self.points;
        let k = p.partition_point(|&(x, _)| x <= bytes);
        if k == p.len() {
            return p[k - 1].1;
        }
        let (x0, y0) = p[k - 1];
        let (x1, y1) = p[k];
        y0 + (y1 - y0) * (bytes - x0) / (x1 - x0)
    }

    /// Pieces (bytes, hit gained per byte), in cache order.
    pub fn segments(&self) -> Vec<(f64, f64)> {
        self.points
            .windows(2)
            .map(|w| (w[1].0 - w[0].0, (w[1].1 - w[0].1) / (w[1].0 - w[0].0)))
            .collect()
    }

    /// Whether every byte gains no more than the one before it (then greedy allocation is
    /// optimal).
    pub fn is_concave(&self) -> bool {
        self.segments()
            .windows(2)
            .all(|w| w[1].1 <= w[0].1 * (1.0 + 1e-12))
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // the curves' ends are exact
mod tests {
    use super::*;

    #[test]
    fn linear_until_the_working_set() {
        let c = HitCurve::linear(8.0);
        assert_eq!(c.hit(0.0), 0.0);
        assert!((c.hit(0.6) - 0.075).abs() < 1e-15);
        assert_eq!(c.hit(8.0), 1.0);
        assert_eq!(c.hit(20.0), 1.0);
        assert!(c.is_concave());
    }

    #[test]
    fn from_miss_ratios_interpolates_and_flags_a_cliff() {
        let c = HitCurve::from_miss_ratios(&[(1.0, 0.9), (2.0, 0.8), (4.0, 0.2)]).unwrap();
        assert!((c.hit(0.5) - 0.05).abs() < 1e-12);
        assert!((c.hit(3.0) - 0.5).abs() < 1e-12);
        assert_eq!(c.hit(9.0), 0.8);
        // gains 0.1/B, 0.1/B, then 0.3/B: a cliff, not concave
        assert!(!c.is_concave());
        assert!(HitCurve::from_miss_ratios(&[(2.0, 0.5), (1.0, 0.4)]).is_err());
    }
}
