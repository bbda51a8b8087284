//! Alibaba Cloud block traces (2020).
//!
//! ## Format
//! CSV without a header: `device_id,opcode,offset,length,timestamp`, e.g.
//! `0,R,126703644672,4096,1577808000000047`.
//!
//! ## Fields
//! - `device_id` → volume, named by its number.
//! - `opcode`: `R` or `W` (either case).
//! - `offset`, `length`: bytes.
//! - `timestamp`: microseconds (Unix epoch) → `ts_ns` (relative).
//!
//! ## Source
//! Li et al.: "An In-Depth Analysis of Cloud Block Storage Workloads in Large-Scale Production"
//! (IISWC 2020); alibaba/block-traces.

use super::builder::{Builder, LineError, Outcome, Request};
use super::lex;
use super::spec::{FormatSpec, Framing};
use crate::trace::Op;

pub(crate) const FORMAT: FormatSpec = FormatSpec {
    name: "alibaba",
    aliases: &[],
    description: "Alibaba block traces 2020: device_id,opcode(R/W),offset(bytes),length(bytes),timestamp(us)",
    framing: Framing::Lines,
    detect: Some(70),
    make: |_, _| Ok((Box::new(AlibabaParser), Builder::new(false, false))),
};

const OPS: &[(&[u8], Op)] = &[
    (b"R", Op::Read),
    (b"W", Op::Write),
    (b"r", Op::Read),
    (b"w", Op::Write),
];

#[derive(Clone)]
pub struct AlibabaParser;

impl super::RecordParser for AlibabaParser {
    super::stateless_fork!();

    #[inline]
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let mut f = [&b""[..]; 5];
        lex::expect_fields(lex::split(line, b',', &mut f), 5, false)?;
        let device = lex::trim(f[0]);
        lex::u64_field(device, "device_id")?;
        let op = lex::op_field(f[1], OPS, "opcode must be R or W")?;
        let offset = lex::u64_field(f[2], "offset")?;
        let size = lex::u64_field(f[3], "length")?;
        let ts_ns = lex::scaled(lex::u64_field(f[4], "timestamp")?, 1000, "timestamp")?;
        let volume = out.volumes.intern(device);
        out.push(Request::new(ts_ns, offset, size, op, volume))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_lines() {
        let mut p = AlibabaParser;
        let t = super::super::parse_ok(
            &mut p,
            false,
            &[
                "0,R,126703644672,4096,1577808000000047",
                "7,W,512,8192,1577808000000050",
            ],
        );
        assert_eq!(t.ts_ns, [1_577_808_000_000_047_000, 1_577_808_000_000_050_000]);
        assert_eq!(t.op, [0, 1]);
        assert_eq!(t.offset, [126_703_644_672, 512]);
        assert_eq!(t.volumes, ["0", "7"]);
    }
}
