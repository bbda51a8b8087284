//! MSR Cambridge block traces (as distributed by SNIA IOTTA).
//!
//! ## Format
//! CSV without a header, one request a line:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, e.g.
//! `128166372003061629,hm,0,Read,3216723968,4096,1557`.
//!
//! ## Fields
//! - `Timestamp`: Windows FILETIME, 100 ns ticks since 1601-01-01 → `ts_ns` (relative).
//! - `Hostname`, `DiskNumber` → volume `Hostname_DiskNumber` (e.g. `hm_0`).
//! - `Type`: `Read` or `Write` (also all lower or upper case) → `op`.
//! - `Offset`, `Size`: bytes.
//! - `ResponseTime`: 100 ns ticks → `latency_ns`.
//!
//! ## Source
//! Narayanan, Donnelly, Rowstron: "Write Off-Loading: Practical Power Management for Enterprise
//! Storage" (FAST 2008); SNIA IOTTA repository, trace set 388.

use super::builder::{Builder, LineError, Outcome, Request};
use super::lex;
use super::spec::{FormatSpec, Framing};
use crate::trace::Op;

pub(crate) const FORMAT: FormatSpec = FormatSpec {
    name: "msr",
    aliases: &["snia", "msrc"],
    description:
        "MSR Cambridge / SNIA CSV: Timestamp(FILETIME),Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
    framing: Framing::Lines,
    detect: Some(50),
    make: |_, _| Ok((Box::new(MsrParser), Builder::new(true, false))),
};

const TICK_NS: u64 = 100;
const OPS: &[(&[u8], Op)] = &[
    (b"Read", Op::Read),
    (b"Write", Op::Write),
    (b"read", Op::Read),
    (b"write", Op::Write),
    (b"READ", Op::Read),
    (b"WRITE", Op::Write),
];

#[derive(Default, Clone)]
pub struct MsrParser;

impl super::RecordParser for MsrParser {
    super::stateless_fork!();

    #[inline]
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let mut c = lex::Cursor::new(line, b',', 7);
        parse_fields(line, &mut c, out).map_err(|e| c.explain(e))
    }
}

/// The fields of one line, left to right; errors are refined by the caller.
#[inline]
fn parse_fields(line: &[u8], c: &mut lex::Cursor<'_>, out: &mut Builder) -> Result<Outcome, LineError> {
    let ts_ns = lex::scaled(c.u64("Timestamp")?, TICK_NS, "Timestamp")?;
    let key_start = c.position();
    let host = c.raw()?;
    let disk = c.raw()?;
    // Key on the raw `Hostname,DiskNumber` bytes so the common case is one slice compare.
    let key = &line[key_start..c.position() - 1];
    let op = lex::op_field(c.raw()?, OPS, "Type must be Read or Write")?;
    let offset = c.u64("Offset")?;
    let size = c.u64("Size")?;
    let response = c.u64("ResponseTime")?;
    c.end()?;
    let volume = out.volumes.intern_with(key, || {
        format!(
            "{}_{}",
            String::from_utf8_lossy(lex::trim(host)),
            String::from_utf8_lossy(lex::trim(disk))
        )
    });
    let mut r = Request::new(ts_ns, offset, size, op, volume);
    r.latency_ns = response
        .checked_mul(TICK_NS)
        .filter(|&l| l != crate::trace::LATENCY_UNKNOWN)
        .ok_or_else(|| {
            LineError::new(
                "number_too_large",
                format!("ResponseTime {response} ticks of 100 ns passes 2^64 ns"),
            )
        })?;
    out.push(r)
}

#[cfg(test)]
mod tests {
    use super::super::{Builder, RecordParser};
    use super::*;

    #[test]
    fn known_line() {
        let mut b = Builder::new(true, false);
        let mut p = MsrParser;
        p.parse(b"128166372003061629,hm,0,Read,3216723968,4096,1557", &mut b)
            .unwrap();
        p.parse(b"128166372016382155,hm,1,write,3216756736,512,10", &mut b)
            .unwrap();
        let t = b.take();
        assert_eq!(t.ts_ns, [12_816_637_200_306_162_900, 12_816_637_201_638_215_500]);
        assert_eq!(t.offset, [3_216_723_968, 3_216_756_736]);
        assert_eq!(t.size, [4096, 512]);
        assert_eq!(t.op, [0, 1]);
        assert_eq!(t.volume, [0, 1]);
        assert_eq!(t.volumes, ["hm_0", "hm_1"]);
        assert_eq!(t.latency_ns.unwrap(), [155_700, 1000]);
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let mut b = Builder::new(true, false);
        let mut p = MsrParser;
        let err = |p: &mut MsrParser, b: &mut Builder, l: &[u8]| p.parse(l, b).unwrap_err();
        assert_eq!(
            err(&mut p, &mut b, b"1,hm,0,Read,0,4096").message,
            "expected 7 fields, found 6"
        );
        assert_eq!(err(&mut p, &mut b, b"1,hm,0,Flush,0,4096,1").key, "bad_op");
        assert_eq!(err(&mut p, &mut b, b"1,hm,0,Read,0,0,1").key, "zero_size");
        assert_eq!(err(&mut p, &mut b, b"1,hm,0,Read,-5,512,1").key, "negative");
        assert_eq!(
            err(&mut p, &mut b, b"1,hm,0,Read,9223372036854775808,512,1").key,
            "offset_overflow"
        );
        assert_eq!(err(&mut p, &mut b, b"1,hm,0,Read,x,512,1").key, "bad_number");
    }
}
