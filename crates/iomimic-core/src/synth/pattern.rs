//! Simple IOMeter/fio-style tests as workloads: `"read seq 4k interarrival=10ms"`,
//! `"randread 4k"`, `"rw 8k rate=2000 mix=70 poisson"`.
//!
//! ## Format
//! Words, in any order:
//! - the operation: `read`, `write`, `randread`, `randwrite`, `readwrite` / `rw`, `randrw`
//!   (mixed: `mix=P` percent reads, default 50), optionally with `seq` or `rand` (default
//!   `rand`; `randread` and the like say it themselves);
//! - a request size: `4k`, `64KiB`, `1m` (default 4 KiB);
//! - the timing: `interarrival=10ms` (fixed gaps) or `rate=500` (requests per second, fixed
//!   gaps); add `poisson` for exponential gaps at that mean; neither: back to back (for
//!   closed-loop runs with a queue depth);
//! - `span=1g`: the address range random requests fall in (default: the caller's, else 1 GiB);
//! - `zipf=0.9`: random offsets by Zipf popularity, as fio's `random_distribution=zipf:0.9`:
//!   the k-th most popular size-aligned block of the span is drawn with probability ∝ 1/k^θ
//!   (θ ≥ 0; 0 is uniform), the ranks scattered over the span so hot blocks do not sit together.
//!   A workload with reuse, for cache studies, in one word.

// Float-to-count casts are of values checked positive (rates, gaps, counts).
#![allow(clippy::cast_sign_loss)]

use crate::error::{Error, Result};
use crate::random::Prng;
use crate::trace::Trace;
use crate::units::{parse_duration_ns, parse_size_bytes};

/// Default span of random offsets when neither the pattern nor the caller gives one.
pub const DEFAULT_SPAN: u64 = 1 << 30;
/// Requests a back-to-back pattern is given when only a duration bounds it: more than any
/// device of today completes in a typical test (the run's deadline ends it first), and at
/// 25 bytes a request, small enough to hold.
pub const BACK_TO_BACK_REQUESTS: u64 = 5_000_000;

/// What a pattern says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pattern {
    /// Percent of requests that read.
    pub read_pct: u32,
    /// Sequential offsets (else uniformly random, size-aligned).
    pub sequential: bool,
    pub size: u32,
    /// Mean gap between requests; 0: back to back.
    pub gap_ns: u64,
    /// Exponential gaps at that mean (else fixed).
    pub poisson: bool,
    /// The range random offsets fall in, when the pattern names it.
    pub span: Option<u64>,
    /// Zipf exponent of random offsets' popularity (uniform when `None`).
    pub zipf: Option<f64>,
}

fn bad(message: impl std::fmt::Display) -> Error {
    Error::Usage(format!("`pattern`: {message}"))
}

impl std::str::FromStr for Pattern {
    type Err = Error;

    fn from_str(spec: &str) -> Result<Pattern> {
        // (reads %, implied order): None reads means a mix
        let op = |w: &str| match w {
            "read" => Some((Some(100), None)),
            "write" => Some((Some(0), None)),
            "randread" => Some((Some(100), Some(false))),
            "randwrite" => Some((Some(0), Some(false))),
            "readwrite" | "rw" => Some((None, None)),
            "randrw" => Some((None, Some(false))),
            _ => None,
        };
        let mut reads: Option<Option<u32>> = None;
        let mut sequential = None;
        let (mut size, mut gap_ns, mut poisson, mut mix, mut span) = (4096u64, 0u64, false, 50u32, None);
        let mut zipf = None;
        for word in spec.to_lowercase().split_whitespace() {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            if let Some((r, implied)) = op(word) {
                reads = Some(r);
                sequential = implied.or(sequential);
            } else if matches!(word, "seq" | "sequential" | "rand" | "random") {
                sequential = Some(word.starts_with("seq"));
            } else if word == "poisson" {
                poisson = true;
            } else if key == "interarrival" && word.contains('=') {
                gap_ns = parse_duration_ns(value, "pattern")?;
            } else if key == "rate" && word.contains('=') {
                let rate: f64 = value.parse().unwrap_or(0.0);
                if !(rate > 0.0 && rate.is_finite()) {
                    return Err(bad(format!("rate must be requests per second, found {value:?}")));
                }
                gap_ns = (1e9 / rate).round().max(1.0) as u64;
            } else if key == "mix" && word.contains('=') {
                mix = value
                    .parse()
                    .ok()
                    .filter(|m| *m <= 100 && value.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| bad(format!("mix is a whole percentage of reads, found {value:?}")))?;
            } else if key == "zipf" && word.contains('=') {
                let theta: f64 = value.parse().unwrap_or(f64::NAN);
                if !(theta >= 0.0 && theta.is_finite()) {
                    return Err(bad(format!(
                        "zipf is the popularity exponent, a number >= 0 (0.8 to 1.2 is typical), found {value:?}"
                    )));
                }
                zipf = Some(theta);
            } else if key == "span" && word.contains('=') {
                span = Some(parse_size_bytes(value, "pattern")?);
            } else if word.starts_with(|c: char| c.is_ascii_digit()) {
                size = parse_size_bytes(word, "pattern")?;
            } else {
                return Err(bad(format!("cannot read {word:?}; see `iomimic run --help`")));
            }
        }
        let Some(reads) = reads else {
            return Err(bad("name the operation (read, write, randread, randwrite, rw)"));
        };
        let size = u32::try_from(size)
            .map_err(|_| bad(format!("a request of {size} bytes does not fit 32 bits")))?;
        Ok(Pattern {
            read_pct: reads.unwrap_or(mix),
            sequential: sequential.unwrap_or(false),
            size,
            gap_ns,
            poisson,
            span,
            zipf,
        })
    }
}

/// Draws size-aligned block indices in `[0, blocks)` by Zipf popularity, rank `r` (0 the most
/// popular) placed at `r · stride mod blocks` with `stride` coprime to `blocks`: a bijection,
/// so each block keeps one rank, and consecutive ranks land far apart (the stride is near the
/// golden section of the span).
struct ZipfBlocks {
    ranks: rand_distr::Zipf<f64>,
    blocks: u64,
    stride: u64,
}

impl ZipfBlocks {
    fn new(blocks: u64, theta: f64) -> Result<Self> {
        let ranks = rand_distr::Zipf::new(blocks as f64, theta)
            .map_err(|e| bad(format!("zipf={theta} over {blocks} blocks: {e}")))?;
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let mut stride = ((blocks as f64 * 0.618_033_988_7) as u64).max(1);
        while gcd(stride, blocks) != 1 {
            stride += 1;
        }
        Ok(Self {
            ranks,
            blocks,
            stride,
        })
    }

    #[inline]
    fn draw(&self, rng: &mut Prng) -> u64 {
        use rand_distr::Distribution;
        // Zipf gives ranks 1..=blocks as floats
        let rank = (self.ranks.sample(rng.inner()) as u64).clamp(1, self.blocks) - 1;
        ((u128::from(rank) * u128::from(self.stride)) % u128::from(self.blocks)) as u64
    }
}

impl Pattern {
    /// How many requests a run of `duration_ns` at `intensity` needs: the schedule's count
    /// (random gaps add up to the duration only on average, so enough more that the schedule
    /// outlasts it by five standard deviations; the deadline ends the run), or
    /// [`BACK_TO_BACK_REQUESTS`] for a pattern without gaps.
    pub fn requests_for(&self, duration_ns: u64, intensity: f64) -> Result<u64> {
        crate::trace::check_intensity(intensity)?;
        if self.gap_ns == 0 {
            return Ok(BACK_TO_BACK_REQUESTS);
        }
        let n = (duration_ns as f64 * intensity / self.gap_ns as f64)
            .round()
            .max(1.0);
        let n = if self.poisson {
            n + (5.0 * n.sqrt()).round() + 10.0
        } else {
            n
        };
        if n > crate::limits::MAX_REQUESTS as f64 {
            return Err(Error::Usage(format!(
                "`duration`: {n:.0} requests would be needed, more than the {} one workload may hold",
                crate::limits::MAX_REQUESTS
            )));
        }
        Ok(n as u64)
    }

    /// The workload, `requests` long; random choices from `seed`; random offsets within the
    /// pattern's span, else `span`, else [`DEFAULT_SPAN`].
    pub fn generate(&self, requests: u64, span: Option<u64>, seed: u64) -> Result<Trace> {
        if requests == 0 {
            return Err(Error::Usage(
                "a pattern needs a positive request count (`requests` or `duration`)".into(),
            ));
        }
        crate::limits::check_requests(requests, "requests")?;
        let n = requests as usize;
        let mut rng = Prng::new(seed);
        let size = u64::from(self.size);
        let room = (self.span.or(span).unwrap_or(DEFAULT_SPAN) / size).max(1);
        let zipf = self.zipf.map(|theta| ZipfBlocks::new(room, theta)).transpose()?;
        let mut t = Trace {
            volumes: vec!["pattern".into()],
            ..Trace::default()
        };
        t.reserve(n);
        let mut ts = 0u64;
        for i in 0..requests {
            let offset = if self.sequential {
                i * size
            } else if let Some(z) = &zipf {
                z.draw(&mut rng) * size
            } else {
                rng.below(room) * size
            };
            let write = rng.f64() * 100.0 >= f64::from(self.read_pct);
            if i > 0 && self.gap_ns > 0 {
                ts += if self.poisson {
                    // inverse transform of a uniform in (0, 1]
                    (-(1.0 - rng.f64()).ln() * self.gap_ns as f64) as u64
                } else {
                    self.gap_ns
                };
            }
            t.ts_ns.push(ts);
            t.offset.push(offset);
            t.size.push(self.size);
            t.op.push(u8::from(write));
            t.volume.push(0);
            t.stream.push(0);
        }
        t.validate()
            .map_err(|e| bad(format!("the workload would be invalid: {e}")))?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_in_any_order() {
        let p: Pattern = "rw 64k rate=500 mix=70 poisson".parse().unwrap();
        assert_eq!(
            p,
            Pattern {
                read_pct: 70,
                sequential: false,
                size: 65536,
                gap_ns: 2_000_000,
                poisson: true,
                span: None,
                zipf: None,
            }
        );
        let p: Pattern = "randread 64k zipf=0.9 span=1g".parse().unwrap();
        assert_eq!(p.zipf, Some(0.9));
        let p: Pattern = "seq 4k read interarrival=10ms".parse().unwrap();
        assert!(p.sequential && p.read_pct == 100 && p.gap_ns == 10_000_000);
        for (spec, words) in [
            ("", "name the operation"),
            ("read fast", "cannot read \"fast\""),
            ("rw mix=abc", "mix is a whole percentage"),
            ("rw mix=101", "mix is a whole percentage"),
            ("read rate=-5", "rate must be requests per second"),
            ("read zipf=-1", "zipf is the popularity exponent"),
            ("read zipf=hot", "zipf is the popularity exponent"),
        ] {
            let e = spec.parse::<Pattern>().unwrap_err().to_string();
            assert!(e.contains(words) && e.starts_with("`pattern`"), "{spec}: {e}");
        }
    }

    #[test]
    fn workloads_by_hand() {
        let p: Pattern = "read seq 4k interarrival=10ms".parse().unwrap();
        let t = p.generate(3, None, 1).unwrap();
        assert_eq!(t.offset, [0, 4096, 8192]);
        assert_eq!(t.ts_ns, [0, 10_000_000, 20_000_000]);
        assert_eq!(t.op, [0, 0, 0]);
        // random offsets are size-aligned inside the span; a mix splits by its share
        let p: Pattern = "rw 8k mix=25 span=1m".parse().unwrap();
        let t = p.generate(4000, None, 7).unwrap();
        assert!(t.offset.iter().all(|&o| o % 8192 == 0 && o + 8192 <= 1 << 20));
        let reads = t.op.iter().filter(|&&o| o == 0).count();
        assert!((900..1100).contains(&reads), "{reads}");
        assert_eq!(p.generate(4000, None, 7).unwrap(), t);
    }

    #[test]
    fn zipf_offsets_follow_their_popularity() {
        // 100 blocks of 4 KiB, θ = 1: block of rank k drawn with probability (1/k) / H_100,
        // H_100 = 5.187..., so the hottest takes 19.3 % of the draws and the ten hottest 56.6 %
        let p: Pattern = "randread 4k zipf=1 span=400k".parse().unwrap();
        let t = p.generate(200_000, None, 3).unwrap();
        let mut counts = std::collections::HashMap::new();
        for &o in &t.offset {
            assert!(o % 4096 == 0 && o < 100 * 4096);
            *counts.entry(o).or_insert(0u32) += 1;
        }
        let mut by_count: Vec<u32> = counts.into_values().collect();
        by_count.sort_unstable_by(|a, b| b.cmp(a));
        let share = |k: usize| f64::from(by_count[..k].iter().sum::<u32>()) / 200_000.0;
        assert!((share(1) - 0.1928).abs() < 0.01, "{}", share(1));
        assert!((share(10) - 0.5666).abs() < 0.01, "{}", share(10));
        // the hottest ranks are spread over the span, not packed at its start
        let hottest: Vec<u64> = (0..5u64)
            .map(|r| r * ZipfBlocks::new(100, 1.0).unwrap().stride % 100)
            .collect();
        assert!(hottest.iter().any(|&b| b > 50), "{hottest:?}");
        // θ = 0 is uniform
        let flat = "randread 4k zipf=0 span=400k".parse::<Pattern>().unwrap();
        let t = flat.generate(100_000, None, 3).unwrap();
        let first = t.offset.iter().filter(|&&o| o == 0).count();
        assert!((800..1200).contains(&first), "{first}");
    }

    #[test]
    fn requests_for_a_duration() {
        let p: Pattern = "read rate=1000".parse().unwrap();
        assert_eq!(p.requests_for(2_000_000_000, 1.0).unwrap(), 2000);
        assert_eq!(p.requests_for(2_000_000_000, 2.0).unwrap(), 4000);
        let p: Pattern = "read rate=1000 poisson".parse().unwrap();
        // 2,000 plus 5 sd (224) plus 10
        assert_eq!(p.requests_for(2_000_000_000, 1.0).unwrap(), 2234);
        let p: Pattern = "randread".parse().unwrap();
        assert_eq!(p.requests_for(1, 1.0).unwrap(), BACK_TO_BACK_REQUESTS);
        let p: Pattern = "read rate=1000000".parse().unwrap();
        assert!(p.requests_for(u64::MAX, 1e6).is_err());
    }
}
