//! Quantities as people write them: durations (`60s`, `250ms`, `1.5h`) and sizes (`8G`,
//! `4KiB`), one grammar for the command line, the Python API and the workload patterns.

// Casts of rounded values are made after checking they are at least 1 and below 2^64.
#![allow(clippy::cast_sign_loss)]

use crate::error::{Error, Result};

const NS_PER: [(&str, f64); 8] = [
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("m", 60e9),
    ("min", 60e9),
    ("h", 3600e9),
];

/// Splits `text` into a non-negative decimal number and the unit after it.
fn number_and_unit(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.'))
        .map_or(t.len(), |(i, _)| i);
    let (number, unit) = t.split_at(end);
    // digits with at most one point, at least one digit (".5" and "5" but not "5." alone)
    let ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && !number.ends_with('.')
        && number.chars().any(|c| c.is_ascii_digit());
    ok.then(|| number.parse().ok().map(|n| (n, unit.trim())))?
}

/// Nanoseconds in a duration such as `60s`, `250ms`, `1.5h` or a bare number of seconds.
/// `what` names the parameter in messages.
pub fn parse_duration_ns(text: &str, what: &str) -> Result<u64> {
    let bad = || {
        Error::Usage(format!(
            "`{what}`: cannot read {text:?} as a duration; write e.g. 60s, 250ms, 1.5h"
        ))
    };
    let (value, unit) = number_and_unit(text).ok_or_else(bad)?;
    let unit = if unit.is_empty() { "s" } else { unit };
    let scale = NS_PER.iter().find(|(u, _)| *u == unit).ok_or_else(bad)?.1;
    duration_from_f64(value * scale, text, what)
}

/// Nanoseconds in `ns` (a computed duration), refused when not positive or past 2^64 − 1.
pub fn duration_from_f64(ns: f64, text: &str, what: &str) -> Result<u64> {
    let rounded = ns.round();
    if rounded.is_nan() || rounded < 1.0 {
        return Err(Error::Usage(format!(
            "`{what}`: a duration must be positive, found {text:?}"
        )));
    }
    if rounded >= u64::MAX as f64 {
        return Err(Error::Usage(format!(
            "`{what}`: {text:?} is longer than iomimic can count (about 584 years)"
        )));
    }
    Ok(rounded as u64)
}

/// Bytes in a size such as `8G`, `512M`, `4KiB` or a bare number (binary units).
pub fn parse_size_bytes(text: &str, what: &str) -> Result<u64> {
    let bad = || {
        Error::Usage(format!(
            "`{what}`: cannot read {text:?} as a size; write e.g. 8G, 512M, 4KiB"
        ))
    };
    let (value, unit) = number_and_unit(text).ok_or_else(bad)?;
    let unit = unit.to_ascii_lowercase();
    let (prefix, rest) = unit.split_at(unit.find(|c: char| !"kmgtp".contains(c)).unwrap_or(unit.len()));
    if prefix.len() > 1 || !matches!(rest, "" | "b" | "ib" | "i") {
        return Err(bad());
    }
    let power = prefix
        .chars()
        .next()
        .and_then(|p| "kmgtp".find(p))
        .map_or(0, |i| i + 1);
    let bytes = (value * 1024f64.powf(power as f64)).round();
    if bytes.is_nan() || bytes < 1.0 {
        return Err(Error::Usage(format!(
            "`{what}`: a size must be positive, found {text:?}"
        )));
    }
    if bytes >= u64::MAX as f64 {
        return Err(Error::Usage(format!("`{what}`: {text:?} is too large")));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration_ns("60s", "d").unwrap(), 60_000_000_000);
        assert_eq!(parse_duration_ns(" 250ms ", "d").unwrap(), 250_000_000);
        assert_eq!(parse_duration_ns("1.5h", "d").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration_ns("2", "d").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration_ns(".5us", "d").unwrap(), 500);
        for bad in ["", "s", "1.2.3s", "5 parsecs", "-1s", "0s", "1000000000h"] {
            assert!(
                parse_duration_ns(bad, "duration")
                    .unwrap_err()
                    .to_string()
                    .contains("`duration`"),
                "{bad}"
            );
        }
        assert_eq!(parse_size_bytes("8G", "s").unwrap(), 8 << 30);
        assert_eq!(parse_size_bytes("4KiB", "s").unwrap(), 4096);
        assert_eq!(parse_size_bytes("512m", "s").unwrap(), 512 << 20);
        assert_eq!(parse_size_bytes("4096", "s").unwrap(), 4096);
        assert_eq!(parse_size_bytes("1.5k", "s").unwrap(), 1536);
        for bad in ["", "0", "4x", "4kk", "-1", "99999999999P"] {
            assert!(parse_size_bytes(bad, "size").is_err(), "{bad}");
        }
    }
}
