//! How shares are written: as the counts training took them from, where that is exact.
//!
//! A share of a few requests written as a float takes 17 digits (`0.4166666666666667`) where
//! its count takes two (5 of 12). Version 5 writes a [`Stats`](super::Stats) as counts out of
//! `n`, the requests it was counted on (so a file says how much evidence each edge's shares
//! rest on), and every other list of shares as the smallest integers whose shares of their sum
//! are exactly those floats (training's counts divided by their common divisor, or a preset's
//! 0.6 and 0.4 as 3 and 2); the reader divides them by their sum. It gets back the very floats
//! written: `k / q` rounds to the same double as `k·g / q·g`, and a list is written so only
//! after checking that it does. Shares that no such integers give (most fractions not made
//! from counts) stay floats, and a list is read as counts only when every element is an
//! integer. On wsrch-small this took the plain model from 169 KB to 98 KB.

use std::fmt;

use serde::de::{Deserializer, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use super::{Bucket, Dist, OpStats, Sizes, Stats};

/// Largest denominator a share is written over: counts past 2^40 requests are beyond any trace
/// a model is trained on, and keep `k / q` exact in a double. (Below about 2^26 a double holds
/// one fraction of such denominators, the one training divided; past it the convergents may
/// miss a smaller one, and the share is then written as a float.)
const MAX_DENOMINATOR: u64 = 1 << 40;

/// The smallest `q` whose fraction `k / q` (`k` the nearest integer to `p·q`) divides to `p`
/// exactly, from the continued fraction of `p`'s exact value; `None` past [`MAX_DENOMINATOR`].
fn denominator(p: f64) -> Option<u64> {
    if p == 0.0 || p == 1.0 {
        return Some(1);
    }
    if !(p > 0.0 && p < 1.0) || p < 2f64.powi(-64) {
        return None;
    }
    // p = mantissa / 2^shift exactly; expand it as a continued fraction over u128
    let bits = p.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let mantissa = u128::from((bits & ((1 << 52) - 1)) | (1 << 52));
    let shift = 1075 - exponent;
    let (mut num, mut den) = (mantissa, 1u128 << shift);
    let (mut h0, mut h1, mut k0, mut k1) = (0u128, 1u128, 1u128, 0u128);
    while den != 0 {
        let a = num / den;
        (num, den) = (den, num - a * den);
        (h0, h1) = (h1, a * h1 + h0);
        (k0, k1) = (k1, a * k1 + k0);
        if k1 > u128::from(MAX_DENOMINATOR) {
            return None;
        }
        if h1 as f64 / k1 as f64 == p {
            return Some(k1 as u64);
        }
    }
    None
}

/// Counts whose shares of their sum are exactly `shares` (the smallest, for totals below about
/// 2^26); `None` when none are found within [`MAX_DENOMINATOR`] (or `shares` is empty).
pub(super) fn counts_of(shares: &[f64]) -> Option<Vec<u64>> {
    let mut q: u64 = 1;
    for &p in shares {
        let d = denominator(p)?;
        q = q.checked_mul(d / gcd(q, d)).filter(|&q| q <= MAX_DENOMINATOR)?;
    }
    let counts: Vec<u64> = shares.iter().map(|&p| (p * q as f64).round() as u64).collect();
    let total: u64 = counts.iter().sum();
    (total > 0 && shares_of(&counts) == shares).then_some(counts)
}

/// `counts` over `total`, exactly: `Some` only when each `counts[i] / total` is `shares[i]`.
pub(super) fn counts_over(shares: &[f64], total: u64) -> Option<Vec<u64>> {
    let t = total.max(1) as f64;
    shares
        .iter()
        .map(|&p| {
            let k = (p * t).round();
            (k >= 0.0 && k / t == p).then_some(k as u64)
        })
        .collect()
}

/// `counts` as shares of their sum (all 0 when they sum to 0). The sum is taken wide: a
/// hand-written file's counts may pass 2^64 together (their shares are then refused by
/// validation if they do not add up).
pub(super) fn shares_of(counts: &[u64]) -> Vec<f64> {
    let total: u128 = counts.iter().map(|&c| u128::from(c)).sum();
    if total == 0 {
        return vec![0.0; counts.len()];
    }
    counts.iter().map(|&c| c as f64 / total as f64).collect()
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A list of shares, written as its counts where they are exact, else as floats.
pub(super) struct Shares<'a>(pub &'a [f64]);

impl Serialize for Shares<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match counts_of(self.0) {
            Some(counts) => s.collect_seq(counts),
            None => s.collect_seq(self.0),
        }
    }
}

/// A field of shares (`#[serde(with = "counts::shares")]`): written as [`Shares`], read with
/// integers as counts divided by their sum and a list with a float in it as written.
pub(super) mod shares {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{Number, Shares};

    #[allow(clippy::ptr_arg)] // serde's `with` passes the field as it is
    pub fn serialize<S: Serializer>(shares: &Vec<f64>, s: S) -> Result<S::Ok, S::Error> {
        Shares(shares).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Vec::<Number>::deserialize(d).map(|numbers| Number::shares(&numbers))
    }
}

/// A number as a file writes it: an integer (a count) or not.
#[derive(Clone, Copy)]
pub(super) enum Number {
    Count(u64),
    Float(f64),
}

impl Number {
    /// Shares from numbers: counts over their sum when all are counts, else as written.
    pub(super) fn shares(numbers: &[Number]) -> Vec<f64> {
        let counts: Option<Vec<u64>> = numbers
            .iter()
            .map(|n| match n {
                Number::Count(c) => Some(*c),
                Number::Float(_) => None,
            })
            .collect();
        match counts {
            Some(c) if !c.is_empty() => shares_of(&c),
            _ => numbers.iter().map(|n| n.value()).collect(),
        }
    }

    pub(super) fn value(self) -> f64 {
        match self {
            Number::Count(c) => c as f64,
            Number::Float(f) => f,
        }
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Number, E> {
                Ok(Number::Count(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Number, E> {
                // a negative count is no count: left for validation to refuse as a share
                Ok(Number::Float(v as f64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Number, E> {
                Ok(Number::Float(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// Buckets, their `p` written as counts where those are exact.
pub(super) struct Buckets<'a>(pub &'a [Bucket]);

impl Serialize for Buckets<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Counted {
            from: u64,
            to: u64,
            p: u64,
        }
        let p: Vec<f64> = self.0.iter().map(|b| b.p).collect();
        match counts_of(&p) {
            Some(counts) => s.collect_seq(self.0.iter().zip(counts).map(|(b, p)| Counted {
                from: b.from,
                to: b.to,
                p,
            })),
            None => s.collect_seq(self.0),
        }
    }
}

/// A field of buckets (`#[serde(with = "counts::buckets")]`): written as [`Buckets`], read
/// with their `p` all integers as counts divided by their sum.
pub(super) mod buckets {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{Buckets, Number};
    use crate::model::Bucket;

    #[allow(clippy::ptr_arg)] // serde's `with` passes the field as it is
    pub fn serialize<S: Serializer>(buckets: &Vec<Bucket>, s: S) -> Result<S::Ok, S::Error> {
        Buckets(buckets).serialize(s)
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Read {
        from: u64,
        to: u64,
        p: Number,
    }

    fn of(read: Vec<Read>) -> Vec<Bucket> {
        let p = Number::shares(&read.iter().map(|b| b.p).collect::<Vec<_>>());
        read.into_iter()
            .zip(p)
            .map(|(b, p)| Bucket {
                from: b.from,
                to: b.to,
                p,
            })
            .collect()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Bucket>, D::Error> {
        Vec::<Read>::deserialize(d).map(of)
    }

    /// For a field that may be absent or null.
    pub fn deserialize_some<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Bucket>>, D::Error> {
        Option::<Vec<Read>>::deserialize(d).map(|b| b.map(of))
    }
}

/// A stats' placements, in the order [`StatsCounts`] keeps them.
const PLACEMENTS: [&str; 4] = ["sequential", "reuse", "continuation", "near"];

/// A [`Stats`] as a file holds it: shares, or (with `n`) counts — the ops out of `n`, the
/// placements out of the requests with an address (all but flushes), each op's placements in
/// `by_op` out of that op's requests.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StatsFile {
    #[serde(default)]
    n: Option<u64>,
    ops: [f64; 4],
    // a count of 0 is left out
    #[serde(default)]
    sequential: f64,
    #[serde(default)]
    reuse: f64,
    #[serde(default)]
    continuation: f64,
    #[serde(default)]
    near: f64,
    sizes: Sizes,
    #[serde(default)]
    interarrival: Option<Dist>,
    #[serde(default)]
    by_op: Vec<OpStats>,
}

impl TryFrom<StatsFile> for Stats {
    type Error = String;

    fn try_from(f: StatsFile) -> Result<Stats, String> {
        let mut stats = Stats {
            n: 0,
            ops: f.ops,
            sequential: f.sequential,
            reuse: f.reuse,
            continuation: f.continuation,
            near: f.near,
            sizes: f.sizes,
            interarrival: f.interarrival,
            by_op: f.by_op,
        };
        let Some(n) = f.n else {
            return Ok(stats);
        };
        let count = |what: &str, x: f64| -> Result<u64, String> {
            if x >= 0.0 && x.fract() == 0.0 && x <= MAX_DENOMINATOR as f64 {
                Ok(x as u64)
            } else {
                Err(format!(
                    "{what}: {x} is not a count of requests, a whole number up to 2^40 (stats that give `n` \
                     give counts, not shares)"
                ))
            }
        };
        let ops = [0, 1, 2, 3].map(|i| count("ops", f.ops[i]));
        let ops = ops.into_iter().collect::<Result<Vec<u64>, String>>()?;
        if ops.iter().sum::<u64>() != n {
            return Err(format!(
                "stats: ops count {} requests, but n is {n}",
                ops.iter().sum::<u64>()
            ));
        }
        let over = |k: f64, total: u64, what: &str| -> Result<f64, String> {
            let k = count(what, k)?;
            if k > total {
                return Err(format!("stats: {what} counts {k} of {total} requests"));
            }
            Ok(k as f64 / total.max(1) as f64)
        };
        let placed = n - ops[3];
        stats.n = n;
        stats.ops = [0, 1, 2, 3].map(|i| ops[i] as f64 / n.max(1) as f64);
        let divide = |fields: [&mut f64; 4], total: u64, prefix: &str| -> Result<(), String> {
            for (name, x) in PLACEMENTS.iter().zip(fields) {
                *x = over(*x, total, &format!("{prefix}{name}"))?;
            }
            Ok(())
        };
        let Stats {
            sequential,
            reuse,
            continuation,
            near,
            by_op,
            ..
        } = &mut stats;
        divide([sequential, reuse, continuation, near], placed, "")?;
        for (i, (o, &total)) in by_op.iter_mut().zip(&ops).enumerate() {
            let prefix = format!("by_op[{i}].");
            divide(
                [&mut o.sequential, &mut o.reuse, &mut o.continuation, &mut o.near],
                total,
                &prefix,
            )?;
        }
        Ok(stats)
    }
}

/// A [`Stats`]'s counts, when its shares are exactly counts out of `n` as [`StatsFile`] reads
/// them.
struct StatsCounts {
    ops: Vec<u64>,
    /// sequential, reuse, continuation, near: of all, then of each op in `by_op`
    placements: Vec<Vec<u64>>,
}

impl Stats {
    fn counts(&self) -> Option<StatsCounts> {
        if self.n == 0 {
            return None;
        }
        let ops = counts_over(&self.ops, self.n).filter(|k| k.iter().sum::<u64>() == self.n)?;
        let of = |sequential: f64, reuse: f64, continuation: f64, near: f64, total: u64| {
            counts_over(&[sequential, reuse, continuation, near], total)
        };
        let mut placements = vec![of(
            self.sequential,
            self.reuse,
            self.continuation,
            self.near,
            self.n - ops[3],
        )?];
        for (o, &total) in self.by_op.iter().zip(&ops) {
            placements.push(of(o.sequential, o.reuse, o.continuation, o.near, total)?);
        }
        Some(StatsCounts { ops, placements })
    }
}

impl Serialize for Stats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let counted = self.counts();
        let mut m = s.serialize_struct("Stats", 9)?;
        match &counted {
            Some(c) => {
                m.serialize_field("n", &self.n)?;
                m.serialize_field("ops", &c.ops)?;
                write_placements(&mut m, &c.placements[0])?;
            }
            None => {
                m.serialize_field("ops", &self.ops)?;
                let shares = [self.sequential, self.reuse, self.continuation, self.near];
                for (name, share) in PLACEMENTS.iter().zip(shares) {
                    m.serialize_field(name, &share)?;
                }
            }
        }
        m.serialize_field("sizes", &self.sizes)?;
        if let Some(gap) = &self.interarrival {
            m.serialize_field("interarrival", gap)?;
        }
        if !self.by_op.is_empty() {
            match &counted {
                Some(c) => {
                    let by_op = self.by_op.iter().zip(&c.placements[1..]).map(|(o, k)| OpCounts {
                        placements: k,
                        sizes: &o.sizes,
                    });
                    m.serialize_field("by_op", &by_op.collect::<Vec<_>>())?;
                }
                None => m.serialize_field("by_op", &self.by_op)?,
            }
        }
        m.end()
    }
}

/// Placement counts (sequential, reuse, continuation, near), those that are not 0: most
/// edges see one or two kinds.
fn write_placements<M: SerializeStruct>(m: &mut M, counts: &[u64]) -> Result<(), M::Error> {
    for (name, &k) in PLACEMENTS.iter().zip(counts) {
        if k > 0 {
            m.serialize_field(name, &k)?;
        } else {
            m.skip_field(name)?;
        }
    }
    Ok(())
}

/// One op's placements as counts, beside its sizes.
struct OpCounts<'a> {
    placements: &'a [u64],
    sizes: &'a Sizes,
}

impl Serialize for OpCounts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("OpStats", 5)?;
        write_placements(&mut m, self.placements)?;
        m.serialize_field("sizes", self.sizes)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shares_of_counts_come_back_as_their_smallest_counts() {
        let shares = shares_of(&[10, 6, 8]);
        assert_eq!(counts_of(&shares), Some(vec![5, 3, 4]));
        assert_eq!(counts_of(&[1.0, 0.0]), Some(vec![1, 0]));
        assert_eq!(counts_of(&[0.25; 4]), Some(vec![1; 4]));
        // shares that do not add up to 1 have no counts; percentages that do are counts too
        assert_eq!(counts_of(&[0.1, 0.2, 0.3]), None);
        assert_eq!(counts_of(&[0.6, 0.4]), Some(vec![3, 2]));
        assert_eq!(
            counts_of(&[std::f64::consts::FRAC_1_PI, 1.0 - std::f64::consts::FRAC_1_PI]),
            None
        );
        assert_eq!(counts_of(&[]), None);
        assert_eq!(counts_over(&[0.5, 0.25, 0.25, 0.0], 24), Some(vec![12, 6, 6, 0]));
        assert_eq!(counts_over(&[0.3], 24), None);
    }

    #[test]
    fn a_list_of_integers_is_counts_and_a_list_with_a_float_is_shares() {
        let read = |text: &str| -> Vec<f64> {
            let mut d = serde_json::Deserializer::from_str(text);
            shares::deserialize(&mut d).unwrap()
        };
        assert_eq!(read("[1, 3]"), vec![0.25, 0.75]);
        assert_eq!(read("[0.5, 1]"), vec![0.5, 1.0]);
        assert_eq!(read("[0, 0]"), vec![0.0, 0.0]);
        assert_eq!(read("[]"), Vec::<f64>::new());
        // counts past 2^64 together are shares of their sum still
        assert_eq!(read(&format!("[{}, {}]", u64::MAX, u64::MAX)), vec![0.5, 0.5]);
    }

    proptest! {
        #[test]
        fn counts_round_trip_to_the_same_floats(counts in prop::collection::vec(0u64..100_000, 1..40)) {
            prop_assume!(counts.iter().sum::<u64>() > 0);
            let shares = shares_of(&counts);
            let written = counts_of(&shares).expect("shares of counts have counts");
            prop_assert_eq!(shares_of(&written), shares);
            // the smallest: the written counts divide the originals by a common factor
            let g = counts.iter().fold(0, |g, &c| gcd(g, c));
            prop_assert_eq!(written, counts.iter().map(|c| c / g).collect::<Vec<_>>());
        }
    }
}
