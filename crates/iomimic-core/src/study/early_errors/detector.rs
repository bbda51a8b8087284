//! The outlier rule that picks failing devices out of a fleet by their latencies: the same rule
//! for simulated fleets and for real targets measured by the engine.
//!
//! ## The rule
//! At each checkpoint, over every request each device has completed so far:
//! - a device with a failed request (an error status) is flagged: an error is unambiguous;
//! - otherwise a request is *slow* when its latency exceeds `slow_factor` times the fleet's
//!   median latency (all devices pooled, as of the checkpoint that first sees the request); a
//!   run of consecutive slow requests on a device is one *slow episode* (a queue backed up
//!   behind one moment, busy or faulty). Each device's episodes per request `x` is compared
//!   with the fleet's: the device is flagged when `x` exceeds the fleet's median by more than
//!   `threshold` robust deviations and it has at least `min_slow` episodes. The robust
//!   deviation is the median absolute deviation scaled by 1.4826 (a standard deviation for
//!   normal data), floored at the binomial standard error of the device's own share,
//!   `sqrt(n·m + 1) / n` for `n` requests at median share `m`, so that a fleet of near-equal
//!   devices (a deviation near zero) does not flag a device for a slow request or two.
//!
//! Medians resist the faulty devices themselves: a few outliers move neither the fleet's
//! median latency nor its median share, so they cannot hide each other.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Scales a median absolute deviation to a standard deviation for normal data.
const MAD_TO_SIGMA: f64 = 1.4826;

/// The rule's knobs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Rule {
    /// A request is slow beyond this many times the fleet's median latency.
    pub slow_factor: f64,
    /// Robust deviations above the fleet's median slow share that flag a device.
    pub threshold: f64,
    /// Slow episodes a device needs before the latency rule may flag it.
    pub min_slow: u64,
}

impl Default for Rule {
    fn default() -> Self {
        Self {
            slow_factor: 4.0,
            threshold: 5.0,
            min_slow: 3,
        }
    }
}

/// One completed request, as the detector sees it.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub device: u32,
    /// When it completed, from the start of the run (ns).
    pub done_ns: u64,
    pub latency_ns: u64,
    pub failed: bool,
}

/// How a device was flagged.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Evidence {
    Errors,
    Latency,
}

/// The first checkpoint at which a device was flagged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Flag {
    pub device: u32,
    pub at_s: f64,
    /// Requests the device had completed by then.
    pub requests: u64,
    pub by: Evidence,
    /// The device's slow episodes per request then, and the fleet's median.
    pub slow_share: f64,
    pub fleet_slow_share: f64,
}

/// Runs the rule at each of `checkpoints_ns` (ascending) over `completions` from `devices`
/// devices; returns each device's first flag, if any.
pub fn detect(
    completions: &mut [Completion],
    devices: usize,
    checkpoints_ns: &[u64],
    rule: &Rule,
) -> Vec<Option<Flag>> {
    completions.sort_unstable_by_key(|c| c.done_ns);
    let mut pooled = Histogram::<u64>::new_with_bounds(1, u64::MAX / 4, 2).expect("valid bounds");
    let mut seen = vec![Seen::default(); devices];
    let mut flags: Vec<Option<Flag>> = vec![None; devices];
    let mut next = 0;
    for &at in checkpoints_ns {
        let from = next;
        while next < completions.len() && completions[next].done_ns <= at {
            pooled.saturating_record(completions[next].latency_ns.max(1));
            next += 1;
        }
        if pooled.is_empty() {
            continue;
        }
        let slow_above = pooled.value_at_quantile(0.5) as f64 * rule.slow_factor;
        for c in &completions[from..next] {
            seen[c.device as usize].add(c, slow_above);
        }
        let observed: Vec<f64> = seen.iter().filter(|s| s.requests > 0).map(Seen::share).collect();
        let median = median_of(observed.clone());
        let deviation = MAD_TO_SIGMA * median_of(observed.iter().map(|x| (x - median).abs()).collect());
        for (d, s) in seen.iter().enumerate() {
            if flags[d].is_some() || s.requests == 0 {
                continue;
            }
            let n = s.requests as f64;
            let floor = (n * median + 1.0).sqrt() / n;
            let by = if s.failed {
                Some(Evidence::Errors)
            } else {
                let outlier = s.share() - median > rule.threshold * deviation.max(floor);
                (outlier && s.episodes >= rule.min_slow).then_some(Evidence::Latency)
            };
            flags[d] = by.map(|by| Flag {
                device: d as u32,
                at_s: at as f64 / 1e9,
                requests: s.requests,
                by,
                slow_share: s.share(),
                fleet_slow_share: median,
            });
        }
    }
    flags
}

/// What the rule has seen of one device.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    requests: u64,
    /// Runs of consecutive slow requests: a queue that backs up behind one burst makes one
    /// episode however many requests it slows, so a busy moment is not mistaken for many bad
    /// sectors.
    episodes: u64,
    last_slow: bool,
    failed: bool,
}

impl Seen {
    fn add(&mut self, c: &Completion, slow_above: f64) {
        let slow = c.latency_ns as f64 > slow_above;
        self.requests += 1;
        self.episodes += u64::from(slow && !self.last_slow);
        self.last_slow = slow;
        self.failed |= c.failed;
    }

    /// Slow episodes per request.
    fn share(&self) -> f64 {
        self.episodes as f64 / self.requests.max(1) as f64
    }
}

/// The median (the mean of the middle two for an even count); 0 for none.
fn median_of(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        f64::midpoint(v[mid - 1], v[mid])
    }
}

/// `count` checkpoints evenly over `[0, span_ns]`, the last at the end.
pub fn checkpoints(span_ns: u64, count: usize) -> Vec<u64> {
    let count = count.max(1) as u64;
    (1..=count)
        .map(|k| span_ns / count * k + (span_ns % count) * k / count)
        .collect()
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // the answers are exact
mod tests {
    use super::*;

    fn fleet(latencies: &[&[u64]]) -> Vec<Completion> {
        latencies
            .iter()
            .enumerate()
            .flat_map(|(d, l)| {
                l.iter().enumerate().map(move |(i, &latency)| Completion {
                    device: d as u32,
                    done_ns: (i as u64 + 1) * 1_000,
                    latency_ns: latency,
                    failed: false,
                })
            })
            .collect()
    }

    #[test]
    fn medians_by_hand() {
        assert_eq!(median_of(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_of(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median_of(vec![]), 0.0);
        assert_eq!(checkpoints(10, 3), [3, 6, 10]);
    }

    #[test]
    fn a_device_with_many_slow_requests_is_flagged_and_no_other() {
        // four devices of 100 requests at 1 ms; device 2 has 10 at 50 ms
        let normal = [1_000_000u64; 100];
        let mut slow = normal;
        for i in (0..100).step_by(10) {
            slow[i] = 50_000_000;
        }
        let mut c = fleet(&[&normal, &normal, &slow, &normal]);
        let flags = detect(&mut c, 4, &[100_000], &Rule::default());
        assert!(flags[0].is_none() && flags[1].is_none() && flags[3].is_none());
        let f = flags[2].as_ref().expect("device 2 flagged");
        // its share is 10 %, the fleet's median 0; the floor sqrt(0·100 + 1)/100 = 1 %, so
        // 10 % is 10 deviations out
        assert_eq!(
            (f.by, f.requests, f.slow_share, f.fleet_slow_share),
            (Evidence::Latency, 100, 0.1, 0.0)
        );
    }

    #[test]
    fn few_or_bunched_slow_requests_are_not_enough_and_checkpoints_see_only_the_past() {
        let normal = [1_000_000u64; 100];
        let mut two = normal;
        two[0] = 50_000_000;
        two[1] = 50_000_000;
        let mut c = fleet(&[&normal, &two, &normal]);
        assert!(detect(&mut c, 3, &[100_000], &Rule::default())
            .iter()
            .all(Option::is_none));

        // ten slow in a row are one episode (a queue backed up once): not flagged
        let mut burst = normal;
        burst[40..50].fill(50_000_000);
        let mut c = fleet(&[&normal, &burst, &normal]);
        assert!(detect(&mut c, 3, &[100_000], &Rule::default())
            .iter()
            .all(Option::is_none));

        // ten apart, late in the run: flagged, but not at a checkpoint before them
        let mut late = normal;
        for i in (80..100).step_by(2) {
            late[i] = 50_000_000;
        }
        let mut c = fleet(&[&normal, &late, &normal]);
        let flags = detect(&mut c, 3, &[50_000, 100_000], &Rule::default());
        let f = flags[1].as_ref().expect("flagged at the end");
        assert_eq!((f.at_s, f.requests), (100_000.0 / 1e9, 100));
    }

    #[test]
    fn one_error_flags_a_device_at_once() {
        let normal = [1_000_000u64; 10];
        let mut c = fleet(&[&normal, &normal]);
        c[13].failed = true; // device 1's fourth request, done at 4 µs
        let flags = detect(&mut c, 2, &[2_000, 5_000], &Rule::default());
        assert!(flags[0].is_none());
        let f = flags[1].as_ref().unwrap();
        assert_eq!((f.by, f.requests), (Evidence::Errors, 5));
    }
}
