//! Peaks of load per volume and how they line up across volumes.
//!
//! ## Algorithm
//! Each volume's requests are counted per window; a window is a peak window when its rate is
//! at least the volume's threshold; peak windows at most one window apart form one peak.
//! Correlation is Pearson's between two volumes' per-window rates.

use serde::Serialize;

/// Requests per second of each volume in each window of `window_ns`.
pub fn rates(ts: &[u64], volume: &[u32], volumes: usize, window_ns: u64) -> Vec<Vec<f64>> {
    let windows = ts.last().map_or(0, |&t| (t / window_ns) as usize + 1);
    let mut r = vec![vec![0.0; windows]; volumes];
    for (&t, &v) in ts.iter().zip(volume) {
        r[v as usize][(t / window_ns) as usize] += 1e9 / window_ns as f64;
    }
    r
}

/// The median of a volume's windows that saw any request (0 when none did).
pub fn busy_median(rates: &[f64]) -> f64 {
    let mut busy: Vec<f64> = rates.iter().copied().filter(|&r| r > 0.0).collect();
    if busy.is_empty() {
        return 0.0;
    }
    busy.sort_by(f64::total_cmp);
    busy[busy.len() / 2]
}

/// Peaks as window ranges `[first, last]` where the rate reaches `threshold`.
pub fn peaks(rates: &[f64], threshold: f64) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (w, &r) in rates.iter().enumerate() {
        if r < threshold {
            continue;
        }
        match out.last_mut() {
            Some(p) if w <= p.1 + 2 => p.1 = w,
            _ => out.push((w, w)),
        }
    }
    out
}

/// Pearson's correlation; 0 when either series is constant.
pub fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len()) as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    if saa == 0.0 || sbb == 0.0 {
        return 0.0;
    }
    sab / (saa * sbb).sqrt()
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub r: f64,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::float_cmp)] // exact values: sums of small integers
    use super::*;

    #[test]
    fn peaks_merge_across_one_quiet_window() {
        let r = [1.0, 9.0, 9.0, 1.0, 9.0, 1.0, 1.0, 1.0, 9.0];
        assert_eq!(peaks(&r, 5.0), vec![(1, 4), (8, 8)]);
        assert_eq!(busy_median(&[0.0, 3.0, 1.0, 2.0]), 2.0);
    }

    #[test]
    fn correlation_by_hand() {
        assert!((correlation(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]) - 1.0).abs() < 1e-12);
        assert!((correlation(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        // x = (1,0,0,1), y = (0,1,0,1): means 0.5, sab = 0.25·(-1 -1 +1 +1)... = 0; r = 0
        assert_eq!(correlation(&[1.0, 0.0, 0.0, 1.0], &[0.0, 1.0, 0.0, 1.0]), 0.0);
        assert_eq!(correlation(&[1.0, 1.0], &[0.0, 5.0]), 0.0);
    }

    #[test]
    fn rates_per_window() {
        let r = rates(&[0, 10, 1_500_000_000], &[0, 1, 0], 2, 1_000_000_000);
        assert_eq!(r, vec![vec![1.0, 1.0], vec![1.0, 0.0]]);
    }
}
