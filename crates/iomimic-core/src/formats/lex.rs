//! Field splitting and number parsing shared by the text formats.
//!
//! Hand-written rather than going through `str::parse`: the readers must beat a multi-threaded
//! CSV reader on one core, and these loops work on bytes with no UTF-8 validation or allocation.

use super::builder::LineError;

/// Splits `line` on `sep` into `fields`, returning how many fields the line has. Stops filling
/// after `fields.len()` but keeps counting, so a wrong field count can be reported exactly.
#[inline]
pub fn split<'a>(line: &'a [u8], sep: u8, fields: &mut [&'a [u8]]) -> usize {
    // Eight bytes at a time (SWAR): a byte-by-byte loop mispredicts a branch at every separator,
    // which profiling showed costs more than the rest of the MSR parser, and fields are too short
    // for memchr's SIMD set-up to pay off.
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let pattern = u64::from_ne_bytes([sep; 8]);
    let mut count = 0;
    let mut start = 0;
    let mut base = 0;
    let mut mark = |pos: usize, count: &mut usize, start: &mut usize| {
        if *count < fields.len() {
            fields[*count] = &line[*start..pos];
        }
        *count += 1;
        *start = pos + 1;
    };
    let mut words = line.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ pattern;
        // high bit set exactly in the bytes of `x` that are zero, i.e. separators
        let mut hits = !(((x & LOW7) + LOW7) | x | LOW7);
        while hits != 0 {
            mark(
                base + (hits.trailing_zeros() / 8) as usize,
                &mut count,
                &mut start,
            );
            hits &= hits - 1;
        }
        base += 8;
    }
    for (i, &b) in words.remainder().iter().enumerate() {
        if b == sep {
            mark(base + i, &mut count, &mut start);
        }
    }
    if count < fields.len() {
        fields[count] = &line[start..];
    }
    count + 1
}

/// Splits a CSV line at `sep` outside double quotes (a quoted field may hold the separator;
/// `""` inside one is a quote). Fields keep their quotes. Returns the field count, as
/// [`split`]. Slower than `split`: used only where a quoted field may occur.
pub fn split_quoted<'a>(line: &'a [u8], sep: u8, fields: &mut [&'a [u8]]) -> usize {
    let mut count = 0;
    let mut start = 0;
    let mut quoted = false;
    for (i, &b) in line.iter().enumerate() {
        if b == b'"' {
            quoted = !quoted;
        } else if b == sep && !quoted {
            if count < fields.len() {
                fields[count] = &line[start..i];
            }
            count += 1;
            start = i + 1;
        }
    }
    if count < fields.len() {
        fields[count] = &line[start..];
    }
    count + 1
}

/// Reads the fields of a delimited line left to right, parsing numbers in the same pass.
///
/// This is the hot path of the CSV readers: one pass over the bytes with no field table, which
/// profiling showed at a third of the instructions of splitting first and parsing after. Any
/// field the fast path cannot take (blanks, overflow, junk) is re-read by the exact, slower
/// functions below so error messages stay precise.
pub struct Cursor<'a> {
    line: &'a [u8],
    pos: usize,
    sep: u8,
    want: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `line`, which must have exactly `want` fields separated by `sep`.
    #[inline]
    pub fn new(line: &'a [u8], sep: u8, want: usize) -> Self {
        Self {
            line,
            pos: 0,
            sep,
            want,
        }
    }

    #[cold]
    fn field_count_error(&self) -> LineError {
        let found = self.line.iter().filter(|&&b| b == self.sep).count() + 1;
        LineError::new(
            "bad_field_count",
            format!("expected {} fields, found {found}", self.want),
        )
    }

    /// The error to report for this line: a wrong field count explains everything after it, so
    /// it wins over whatever field-level error `e` the parser met first.
    #[cold]
    pub fn explain(&self, e: LineError) -> LineError {
        let found = self.line.iter().filter(|&&b| b == self.sep).count() + 1;
        if found == self.want {
            e
        } else {
            self.field_count_error()
        }
    }

    /// Byte offset of the next field in the line.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The next field's raw bytes.
    #[inline]
    pub fn raw(&mut self) -> Result<&'a [u8], LineError> {
        if self.pos > self.line.len() {
            return Err(self.field_count_error());
        }
        let rest = &self.line[self.pos..];
        let len = rest.iter().position(|&b| b == self.sep).unwrap_or(rest.len());
        self.pos += len + 1;
        Ok(&rest[..len])
    }

    /// The next field as an unsigned integer.
    #[allow(clippy::inline_always)] // five calls a line on the hottest path; measured faster
    #[inline(always)]
    pub fn u64(&mut self, what: &str) -> Result<u64, LineError> {
        let (line, start) = (self.line, self.pos);
        if start > line.len() {
            return Err(self.field_count_error());
        }
        let mut value: u64 = 0;
        let mut i = start;
        // Eight digits at a time while they last (timestamps and offsets are long), then singly.
        // Wrapping arithmetic is fine: more than 19 digits falls to the exact path below.
        while let Some(v) = line.get(i..i + 8).and_then(eight_digits) {
            value = value.wrapping_mul(100_000_000).wrapping_add(v);
            i += 8;
        }
        while i < line.len() {
            let d = line[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            value = value.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        let clean_end = i == line.len() || line[i] == self.sep;
        if i > start && i - start <= 19 && clean_end {
            self.pos = i + 1;
            return Ok(value);
        }
        u64_field(self.raw()?, what)
    }

    /// Fails unless every field has been read.
    #[inline]
    pub fn end(&self) -> Result<(), LineError> {
        if self.pos == self.line.len() + 1 {
            Ok(())
        } else {
            Err(self.field_count_error())
        }
    }
}

/// Splits on runs of spaces and tabs (leading and trailing blanks ignored).
#[inline]
pub fn split_whitespace<'a>(line: &'a [u8], fields: &mut [&'a [u8]]) -> usize {
    let mut count = 0;
    let mut i = 0;
    let n = line.len();
    while i < n {
        while i < n && (line[i] == b' ' || line[i] == b'\t') {
            i += 1;
        }
        if i == n {
            break;
        }
        let start = i;
        while i < n && line[i] != b' ' && line[i] != b'\t' {
            i += 1;
        }
        if count < fields.len() {
            fields[count] = &line[start..i];
        }
        count += 1;
    }
    count
}

/// Fails unless the line has exactly `want` fields (or at least `want` when `at_least`).
pub fn expect_fields(found: usize, want: usize, at_least: bool) -> Result<(), LineError> {
    if found == want || (at_least && found > want) {
        Ok(())
    } else {
        let qualifier = if at_least { "at least " } else { "" };
        Err(LineError::new(
            "bad_field_count",
            format!("expected {qualifier}{want} fields, found {found}"),
        ))
    }
}

/// Trims ASCII spaces and tabs on both sides.
#[inline]
pub fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

fn show(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    if text.chars().count() > 40 {
        format!("{}...", text.chars().take(40).collect::<String>())
    } else {
        text.into_owned()
    }
}

fn number_error(what: &str, field: &[u8]) -> LineError {
    let field = trim(field);
    if field.is_empty() {
        LineError::new("empty_field", format!("{what} is empty"))
    } else if field[0] == b'-' && field.len() > 1 {
        LineError::new("negative", format!("{what} is negative: {}", show(field)))
    } else if field.iter().all(u8::is_ascii_digit) {
        LineError::new(
            "number_too_large",
            format!("{what} is too large: {}", show(field)),
        )
    } else {
        LineError::new("bad_number", format!("{what} is not a number: {:?}", show(field)))
    }
}

/// Value of eight ASCII digits (first digit in the lowest byte), or `None` if any byte is not a
/// digit. Three multiply-and-shift steps combine digit pairs, then quads, then halves (SWAR).
#[inline]
fn eight_digits(chunk: &[u8]) -> Option<u64> {
    let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
    let is_digits = (word & 0xf0f0_f0f0_f0f0_f0f0) == 0x3030_3030_3030_3030
        && (word.wrapping_add(0x0606_0606_0606_0606) & 0xf0f0_f0f0_f0f0_f0f0) == 0x3030_3030_3030_3030;
    if !is_digits {
        return None;
    }
    let v = word - 0x3030_3030_3030_3030;
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    Some((v.wrapping_mul(10_000) + (v >> 32)) & 0xffff_ffff)
}

/// Parses an unsigned decimal integer (surrounding blanks allowed).
#[inline]
pub fn u64_field(field: &[u8], what: &str) -> Result<u64, LineError> {
    let digits = trim(field);
    let n = digits.len();
    if n == 0 || n > 20 {
        return Err(number_error(what, field));
    }
    // Leading digits one at a time, the rest eight at a time. Up to 19 digits cannot overflow;
    // only a 20-digit number needs the checked path.
    let head = n % 8;
    let mut value: u64 = 0;
    let mut bad = false;
    for &b in &digits[..head] {
        let d = b.wrapping_sub(b'0');
        bad |= d > 9;
        value = value.wrapping_mul(10).wrapping_add(u64::from(d));
    }
    for chunk in digits[head..].chunks_exact(8) {
        match eight_digits(chunk) {
            Some(v) if n < 20 => value = value.wrapping_mul(100_000_000).wrapping_add(v),
            Some(v) => {
                value = match value.checked_mul(100_000_000).and_then(|x| x.checked_add(v)) {
                    Some(x) => x,
                    None => return Err(number_error(what, field)),
                }
            }
            None => bad = true,
        }
    }
    if bad {
        Err(number_error(what, field))
    } else {
        Ok(value)
    }
}

/// Parses an unsigned hexadecimal integer, with or without a `0x` prefix.
pub fn hex_field(field: &[u8], what: &str) -> Result<u64, LineError> {
    let mut digits = trim(field);
    if let [b'0', b'x' | b'X', rest @ ..] = digits {
        digits = rest;
    }
    let text = std::str::from_utf8(digits).map_err(|_| number_error(what, field))?;
    u64::from_str_radix(text, 16).map_err(|_| {
        LineError::new(
            "bad_number",
            format!("{what} is not a hexadecimal number: {:?}", show(field)),
        )
    })
}

/// Parses a non-negative decimal number (`12`, `12.5`, `1.25e3`) and scales it by
/// `10^scale_exp`, rounding to the nearest integer: e.g. seconds to nanoseconds with 9.
/// Plain decimals are converted exactly, with no floating point, so nanoseconds are not lost.
pub fn scaled_decimal(field: &[u8], scale_exp: u32, what: &str) -> Result<u64, LineError> {
    let text = trim(field);
    let (int_part, frac_part) = match memchr::memchr(b'.', text) {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &text[..0]),
    };
    let plain = !text.is_empty()
        && int_part.iter().chain(frac_part).all(u8::is_ascii_digit)
        && !(int_part.is_empty() && frac_part.is_empty());
    if !plain {
        return scaled_float(text, scale_exp, what).map_err(|()| number_error(what, field));
    }
    let scale = 10u64.pow(scale_exp);
    let whole = if int_part.is_empty() {
        0
    } else {
        u64_field(int_part, what)?
    };
    let mut frac: u64 = 0;
    let mut frac_scale = scale;
    let mut round_up = false;
    for (i, &b) in frac_part.iter().enumerate() {
        let d = u64::from(b - b'0');
        if frac_scale >= 10 {
            frac_scale /= 10;
            frac += d * frac_scale;
        } else if i == scale_exp as usize {
            round_up = d >= 5;
        }
    }
    whole
        .checked_mul(scale)
        .and_then(|v| v.checked_add(frac + u64::from(round_up)))
        .ok_or_else(|| {
            LineError::new(
                "number_too_large",
                format!("{what} is too large: {}", show(field)),
            )
        })
}

fn scaled_float(text: &[u8], scale_exp: u32, _what: &str) -> Result<u64, ()> {
    let value: f64 = std::str::from_utf8(text)
        .map_err(|_| ())?
        .parse()
        .map_err(|_| ())?;
    let scaled = value * 10f64.powi(i32::try_from(scale_exp).map_err(|_| ())?);
    if !scaled.is_finite() || scaled < 0.0 || scaled >= u64::MAX as f64 {
        return Err(());
    }
    #[allow(clippy::cast_sign_loss)] // checked non-negative and in range just above
    Ok(scaled.round() as u64)
}

/// The op named by `field` (blanks trimmed) in `choices`, or a `bad_op` error saying what was
/// expected (`rule`, e.g. "Opcode must be r or w") and what was found.
#[inline]
pub fn op_field(
    field: &[u8],
    choices: &[(&[u8], crate::trace::Op)],
    rule: &str,
) -> Result<crate::trace::Op, LineError> {
    let value = trim(field);
    choices
        .iter()
        .find(|(name, _)| *name == value)
        .map(|&(_, op)| op)
        .ok_or_else(|| {
            LineError::new(
                "bad_op",
                format!("{rule}, found {:?}", String::from_utf8_lossy(value)),
            )
        })
}

/// Multiplies a count of units into bytes, failing past 2^63 (`what` names the field).
#[inline]
pub fn to_bytes(count: u64, unit_bytes: u64, what: &str) -> Result<u64, LineError> {
    match count.checked_mul(unit_bytes) {
        Some(b) if b < crate::trace::MAX_OFFSET => Ok(b),
        _ => Err(LineError::new(
            "offset_overflow",
            format!("{what} {count} x {unit_bytes} bytes passes 2^63"),
        )),
    }
}

/// Multiplies a value by a unit factor (e.g. microseconds to nanoseconds), failing on overflow.
#[inline]
pub fn scaled(value: u64, factor: u64, what: &str) -> Result<u64, LineError> {
    value
        .checked_mul(factor)
        .ok_or_else(|| LineError::new("number_too_large", format!("{what} {value} is too large")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_count_every_field() {
        let mut f = [&b""[..]; 3];
        assert_eq!(split(b"a,b,c,d", b',', &mut f), 4);
        assert_eq!(f, [&b"a"[..], b"b", b"c"]);
        assert_eq!(split(b"", b',', &mut f), 1);
        // separators in every position of an 8-byte word, and in the tail
        let line = b",a,bb,ccc,,dddddddddd,e,";
        let mut all = [&b""[..]; 9];
        assert_eq!(split(line, b',', &mut all), 8);
        assert_eq!(
            all[..8],
            [&b""[..], b"a", b"bb", b"ccc", b"", b"dddddddddd", b"e", b""]
        );
        // bytes that differ from the separator in one bit are not separators
        assert_eq!(split(b"-+.-+.-+.-+.", b',', &mut all), 1);
        assert_eq!(split_whitespace(b"  1 \t 2  3 ", &mut f), 3);
        assert_eq!(f, [&b"1"[..], b"2", b"3"]);
    }

    #[test]
    fn cursor_reads_fields_and_counts_them() {
        let mut c = Cursor::new(b"12,ab, 7 ,", b',', 4);
        assert_eq!(c.u64("a").unwrap(), 12);
        assert_eq!(c.raw().unwrap(), b"ab");
        assert_eq!(c.u64("c").unwrap(), 7); // blanks take the slow path
        assert_eq!(c.raw().unwrap(), b"");
        assert!(c.end().is_ok());
        let mut c = Cursor::new(b"1,2", b',', 3);
        c.u64("a").unwrap();
        c.u64("b").unwrap();
        assert_eq!(c.u64("c").unwrap_err().message, "expected 3 fields, found 2");
        let mut c = Cursor::new(b"1,2,3", b',', 2);
        c.u64("a").unwrap();
        c.u64("b").unwrap();
        assert_eq!(c.end().unwrap_err().message, "expected 2 fields, found 3");
        assert_eq!(
            Cursor::new(b"4x,1", b',', 2).u64("a").unwrap_err().key,
            "bad_number"
        );
        assert_eq!(
            Cursor::new(b"-4,1", b',', 2).u64("a").unwrap_err().key,
            "negative"
        );
    }

    #[test]
    fn integers_and_their_errors() {
        assert_eq!(u64_field(b" 42 ", "x").unwrap(), 42);
        assert_eq!(u64_field(b"18446744073709551615", "x").unwrap(), u64::MAX);
        assert_eq!(
            u64_field(b"18446744073709551616", "x").unwrap_err().key,
            "number_too_large"
        );
        assert_eq!(u64_field(b"-3", "x").unwrap_err().key, "negative");
        assert_eq!(
            u64_field(b"128166372003061629", "x").unwrap(),
            128_166_372_003_061_629
        );
        assert_eq!(
            u64_field(b"99999999999999999999", "x").unwrap_err().key,
            "number_too_large"
        );
        assert_eq!(u64_field(b"1234567:", "x").unwrap_err().key, "bad_number");
        assert_eq!(u64_field(b"12345678/", "x").unwrap_err().key, "bad_number");
        assert_eq!(u64_field(b"", "x").unwrap_err().key, "empty_field");
        let e = u64_field(b"12a", "offset").unwrap_err();
        assert_eq!(
            (e.key, e.message.as_str()),
            ("bad_number", "offset is not a number: \"12a\"")
        );
        assert_eq!(hex_field(b"2a", "op").unwrap(), 0x2a);
        assert_eq!(hex_field(b"0xA8", "op").unwrap(), 0xa8);
    }

    proptest::proptest! {
        #[test]
        fn integers_match_std(v: u64, pad in 0usize..3) {
            let text = format!("{}{v}", "0".repeat(pad));
            let parsed = u64_field(text.as_bytes(), "x");
            if text.len() <= 20 {
                proptest::prop_assert_eq!(parsed.unwrap(), v);
            } else {
                proptest::prop_assert!(parsed.is_err());
            }
        }

        #[test]
        fn garbage_is_never_a_number(s in "[0-9]{0,8}[^0-9 \t][0-9]{0,12}") {
            proptest::prop_assert!(u64_field(s.as_bytes(), "x").is_err());
        }
    }

    #[test]
    fn decimals_scale_exactly() {
        assert_eq!(scaled_decimal(b"1.5", 9, "t").unwrap(), 1_500_000_000);
        assert_eq!(scaled_decimal(b"0.000000001", 9, "t").unwrap(), 1);
        assert_eq!(scaled_decimal(b"12", 6, "t").unwrap(), 12_000_000);
        assert_eq!(scaled_decimal(b".25", 3, "t").unwrap(), 250);
        // digits past the scale round to nearest
        assert_eq!(scaled_decimal(b"0.0000000015", 9, "t").unwrap(), 2);
        assert_eq!(scaled_decimal(b"1.5e-3", 9, "t").unwrap(), 1_500_000);
        assert_eq!(scaled_decimal(b"-1.0", 9, "t").unwrap_err().key, "negative");
        assert_eq!(scaled_decimal(b"abc", 9, "t").unwrap_err().key, "bad_number");
        assert_eq!(scaled_decimal(b".", 9, "t").unwrap_err().key, "bad_number");
    }

    #[test]
    fn byte_conversions_stop_at_2_pow_63() {
        assert_eq!(to_bytes(3, 512, "lba").unwrap(), 1536);
        assert_eq!(to_bytes(1 << 54, 512, "lba").unwrap_err().key, "offset_overflow");
    }
}
