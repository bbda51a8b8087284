//! Tencent Cloud Block Storage traces (2018).
//!
//! ## Format
//! CSV without a header: `Timestamp,Offset,Size,IOType,VolumeID`, e.g.
//! `1538323200,18876264,8,1,1283`.
//!
//! ## Fields
//! - `Timestamp`: seconds (Unix epoch) → `ts_ns` (relative).
//! - `Offset`, `Size`: 512-byte sectors.
//! - `IOType`: `0` read, `1` write.
//! - `VolumeID` → volume, named by its number.
//!
//! ## Source
//! Zhang et al.: "OSCA: An Online-Model Based Cache Allocation Scheme in Cloud Block Storage
//! Systems" (USENIX ATC 2020); SNIA IOTTA trace set 27917.

use super::builder::{Builder, LineError, Outcome, Request};
use super::lex;
use super::spec::{FormatSpec, Framing};
use crate::trace::Op;

pub(crate) const FORMAT: FormatSpec = FormatSpec {
    name: "tencent",
    aliases: &[],
    description:
        "Tencent CBS 2018: Timestamp(s),Offset(sectors),Size(sectors),IOType(0 read, 1 write),VolumeID",
    framing: Framing::Lines,
    detect: Some(80),
    make: |_, _| Ok((Box::new(TencentParser), Builder::new(false, false))),
};

const OPS: &[(&[u8], Op)] = &[(b"0", Op::Read), (b"1", Op::Write)];

#[derive(Clone)]
pub struct TencentParser;

impl super::RecordParser for TencentParser {
    super::stateless_fork!();

    #[inline]
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let mut f = [&b""[..]; 5];
        lex::expect_fields(lex::split(line, b',', &mut f), 5, false)?;
        let ts_ns = lex::scaled_decimal(f[0], 9, "Timestamp")?;
        let offset = lex::to_bytes(lex::u64_field(f[1], "Offset")?, 512, "Offset")?;
        let size = lex::to_bytes(lex::u64_field(f[2], "Size")?, 512, "Size")?;
        let op = lex::op_field(f[3], OPS, "IOType must be 0 (read) or 1 (write)")?;
        let vol = lex::trim(f[4]);
        lex::u64_field(vol, "VolumeID")?;
        let volume = out.volumes.intern(vol);
        out.push(Request::new(ts_ns, offset, size, op, volume))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_lines() {
        let mut p = TencentParser;
        let t = super::super::parse_ok(
            &mut p,
            false,
            &["1538323200,18876264,8,1,1283", "1538323201,100,16,0,77"],
        );
        assert_eq!(t.ts_ns, [1_538_323_200_000_000_000, 1_538_323_201_000_000_000]);
        assert_eq!(t.offset, [18_876_264 * 512, 51_200]);
        assert_eq!(t.size, [4096, 8192]);
        assert_eq!(t.op, [1, 0]);
        assert_eq!(t.volumes, ["1283", "77"]);
    }
}
