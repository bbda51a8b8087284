//! UMass Trace Repository SPC traces (Financial1/2, WebSearch1-3).
//!
//! ## Format
//! CSV without a header: `ASU,LBA,Size,Opcode,Timestamp[,...]`, e.g. `0,303567,3584,w,0.000000`.
//! Extra trailing fields (some files carry more) are ignored.
//!
//! ## Fields
//! - `ASU` (application storage unit) → volume, named by its number.
//! - `LBA`: 512-byte sectors → `offset` in bytes.
//! - `Size`: bytes.
//! - `Opcode`: `r` or `w`, either case.
//! - `Timestamp`: seconds since the trace start, decimal → `ts_ns`.
//!
//! ## Source
//! UMass Trace Repository, "OLTP Application I/O" and "Search Engine I/O"; SPC trace format
//! specification 1.0.1.

use super::builder::{Builder, LineError, Outcome, Request};
use super::lex;
use super::spec::{FormatSpec, Framing};
use crate::trace::Op;

pub(crate) const FORMAT: FormatSpec = FormatSpec {
    name: "spc",
    aliases: &["umass"],
    description: "UMass SPC (Financial, WebSearch): ASU,LBA(sectors),Size(bytes),Opcode,Timestamp(s)",
    framing: Framing::Lines,
    detect: Some(60),
    make: |_, _| Ok((Box::new(SpcParser), Builder::new(false, false))),
};

const OPS: &[(&[u8], Op)] = &[
    (b"r", Op::Read),
    (b"w", Op::Write),
    (b"R", Op::Read),
    (b"W", Op::Write),
];

#[derive(Clone)]
pub struct SpcParser;

impl super::RecordParser for SpcParser {
    super::stateless_fork!();

    #[inline]
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let mut f = [&b""[..]; 5];
        lex::expect_fields(lex::split(line, b',', &mut f), 5, true)?;
        let asu = lex::trim(f[0]);
        lex::u64_field(asu, "ASU")?;
        let offset = lex::to_bytes(lex::u64_field(f[1], "LBA")?, 512, "LBA")?;
        let size = lex::u64_field(f[2], "Size")?;
        let op = lex::op_field(f[3], OPS, "Opcode must be r or w")?;
        let ts_ns = lex::scaled_decimal(f[4], 9, "Timestamp")?;
        let volume = out.volumes.intern(asu);
        out.push(Request::new(ts_ns, offset, size, op, volume))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Builder, RecordParser};
    use super::*;

    #[test]
    fn known_lines() {
        let mut p = SpcParser;
        let t = super::super::parse_ok(
            &mut p,
            false,
            &["0,303567,3584,w,0.000000", "1,55590,512,R,0.026214,extra"],
        );
        assert_eq!(t.offset, [303_567 * 512, 55_590 * 512]);
        assert_eq!(t.size, [3584, 512]);
        assert_eq!(t.op, [1, 0]);
        assert_eq!(t.ts_ns, [0, 26_214_000]);
        assert_eq!(t.volumes, ["0", "1"]);
        let mut b = Builder::new(false, false);
        assert_eq!(p.parse(b"0,1,512,x,0.1", &mut b).unwrap_err().key, "bad_op");
    }
}
