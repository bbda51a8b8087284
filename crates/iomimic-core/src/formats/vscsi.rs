//! CloudPhysics vscsi traces, binary and as libCacheSim's CSV export.
//!
//! ## Format
//! Binary: little-endian fixed-size records with no padding and no file header. Version 1 is
//! 32 bytes `{u32 sn; u32 len; u32 nSG; u16 cmd; u16 ver; u64 lbn; u64 ts}`; version 2 is
//! 40 bytes `{u16 cmd; u16 ver; u32 sn; u32 len; u32 nSG; u64 lbn; u64 ts; u64 rt}`. The version
//! is `ver >> 8`, recognised from the first records.
//!
//! CSV: a `version,time,op,size,lbn` header, then e.g. `2,3,28,4096,1234`.
//!
//! ## Fields
//! - `cmd`/`op`: SCSI opcode (hex in the CSV, without `0x`): READ 08/28/88/a8 → read,
//!   WRITE 0a/2a/8a/aa → write, SYNCHRONIZE CACHE 35/91 → flush; other commands (INQUIRY,
//!   TEST UNIT READY, ...) move no data and are ignored, counted as `scsi_not_io`.
//! - `len`/`size`: bytes. `lbn`: 512-byte sectors.
//! - `ts`: microseconds (binary), whole seconds (CSV). `rt` (v2): response time in µs →
//!   `latency_ns`.
//! - No device field: the volume is named after the file (`w01.vscsi` → `w01`).
//!
//! ## Source
//! Waldspurger et al.: "Efficient MRC Construction with SHARDS" (FAST 2015) for the traces;
//! libCacheSim's vscsi reader and CSV export for the record layouts.

use super::builder::{Builder, LineError, Outcome, Request};
use super::lex;
use super::spec::{FormatSpec, Framing};
use crate::trace::Op;

pub(crate) const BINARY: FormatSpec = FormatSpec {
    name: "vscsi",
    aliases: &["vscsi-bin"],
    description: "CloudPhysics vscsi binary, v1 (32-byte) or v2 (40-byte) little-endian records",
    framing: Framing::Binary(record_size),
    detect: Some(10),
    make: |_, stem| Ok((Box::new(VscsiBinParser::new(stem)), Builder::new(true, false))),
};

pub(crate) const CSV: FormatSpec = FormatSpec {
    name: "vscsi-csv",
    aliases: &["libcachesim-csv"],
    description:
        "CloudPhysics vscsi as libCacheSim CSV: version,time(s),op(SCSI hex),size(bytes),lbn(sectors)",
    framing: Framing::Lines,
    detect: Some(30),
    make: |_, stem| Ok((Box::new(VscsiCsvParser::new(stem)), Builder::new(false, false))),
};

const V1_SIZE: usize = 32;
const V2_SIZE: usize = 40;
/// Records inspected to recognise the version.
const PROBE_RECORDS: usize = 64;

fn scsi_op(code: u64) -> Option<Op> {
    match code {
        0x08 | 0x28 | 0x88 | 0xa8 => Some(Op::Read),
        0x0a | 0x2a | 0x8a | 0xaa => Some(Op::Write),
        0x35 | 0x91 => Some(Op::Flush),
        _ => None,
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Record size (32 for v1, 40 for v2) recognised from the version field of the first records.
pub fn record_size(head: &[u8]) -> Result<usize, LineError> {
    let consistent = |size: usize, ver_at: usize, version: u16| {
        let records: Vec<&[u8]> = head.chunks_exact(size).take(PROBE_RECORDS).collect();
        !records.is_empty() && records.iter().all(|r| u16_at(r, ver_at) >> 8 == version)
    };
    if consistent(V2_SIZE, 2, 2) {
        Ok(V2_SIZE)
    } else if consistent(V1_SIZE, 14, 1) {
        Ok(V1_SIZE)
    } else {
        Err(LineError::new(
            "bad_version",
            "no vscsi version in the first records (expected ver >> 8 == 1 at byte 14 of 32-byte records, or == 2 at byte 2 of 40-byte records)",
        ))
    }
}

#[derive(Clone)]
pub struct VscsiBinParser {
    stem: String,
}

impl VscsiBinParser {
    pub fn new(stem: &str) -> Self {
        Self {
            stem: stem.to_string(),
        }
    }
}

impl super::RecordParser for VscsiBinParser {
    super::stateless_fork!();

    fn parse(&mut self, r: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let (cmd, len, lbn, ts_us, rt_us) = match r.len() {
            V1_SIZE => (u16_at(r, 12), u32_at(r, 4), u64_at(r, 16), u64_at(r, 24), None),
            V2_SIZE => (
                u16_at(r, 0),
                u32_at(r, 8),
                u64_at(r, 16),
                u64_at(r, 24),
                Some(u64_at(r, 32)),
            ),
            n => return Err(LineError::new("truncated_record", format!("record of {n} bytes"))),
        };
        let Some(op) = scsi_op(u64::from(cmd & 0xff)) else {
            return Ok(Outcome::Ignored("scsi_not_io"));
        };
        let offset = lex::to_bytes(lbn, 512, "lbn")?;
        let ts_ns = lex::scaled(ts_us, 1000, "ts")?;
        let volume = out.volumes.intern(self.stem.as_bytes());
        let mut req = Request::new(ts_ns, offset, u64::from(len), op, volume);
        if let Some(rt) = rt_us {
            req.latency_ns = lex::scaled(rt, 1000, "rt")?;
        }
        out.push(req)
    }
}

#[derive(Clone)]
pub struct VscsiCsvParser {
    stem: String,
    seen_header: bool,
}

impl VscsiCsvParser {
    pub fn new(stem: &str) -> Self {
        Self {
            stem: stem.to_string(),
            seen_header: false,
        }
    }
}

const CSV_HEADER: [&[u8]; 5] = [b"version", b"time", b"op", b"size", b"lbn"];

impl super::RecordParser for VscsiCsvParser {
    // Lines are independent once the header is behind us.
    fn fork(&self) -> Option<Box<dyn super::RecordParser>> {
        self.seen_header
            .then(|| Box::new(self.clone()) as Box<dyn super::RecordParser>)
    }

    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let mut f = [&b""[..]; 5];
        let n = lex::split(line, b',', &mut f);
        // The header is what tells this export from any other five-number CSV.
        if !self.seen_header {
            if n == 5 && f.iter().map(|x| lex::trim(x)).eq(CSV_HEADER) {
                self.seen_header = true;
                return Ok(Outcome::Ignored("header"));
            }
            return Err(LineError::new(
                "bad_header",
                "expected the header version,time,op,size,lbn on the first line",
            ));
        }
        lex::expect_fields(n, 5, false)?;
        lex::u64_field(f[0], "version")?;
        let ts_ns = lex::scaled_decimal(f[1], 9, "time")?;
        let code = lex::hex_field(f[2], "op")?;
        // a SCSI opcode is one byte: anything larger is damage, not a command we skip
        if code > 0xff {
            return Err(LineError::new(
                "bad_op",
                format!("op {code:#x} is not a SCSI opcode (one byte, 00 to ff)"),
            ));
        }
        let Some(op) = scsi_op(code) else {
            return Ok(Outcome::Ignored("scsi_not_io"));
        };
        let size = lex::u64_field(f[3], "size")?;
        let offset = lex::to_bytes(lex::u64_field(f[4], "lbn")?, 512, "lbn")?;
        let volume = out.volumes.intern(self.stem.as_bytes());
        out.push(Request::new(ts_ns, offset, size, op, volume))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Builder, RecordParser};
    use super::*;

    fn v2(cmd: u16, len: u32, lbn: u64, ts: u64, rt: u64) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&cmd.to_le_bytes());
        r.extend_from_slice(&(2u16 << 8).to_le_bytes());
        r.extend_from_slice(&7u32.to_le_bytes());
        r.extend_from_slice(&len.to_le_bytes());
        r.extend_from_slice(&1u32.to_le_bytes());
        r.extend_from_slice(&lbn.to_le_bytes());
        r.extend_from_slice(&ts.to_le_bytes());
        r.extend_from_slice(&rt.to_le_bytes());
        r
    }

    #[test]
    fn binary_v2_record() {
        let rec = v2(0x2a, 8192, 100, 1_000_000, 250);
        assert_eq!(record_size(&rec).unwrap(), 40);
        let mut b = Builder::new(true, false);
        let mut p = VscsiBinParser::new("w01");
        p.parse(&rec, &mut b).unwrap();
        assert_eq!(
            p.parse(&v2(0x12, 0, 0, 5, 0), &mut b).unwrap(),
            Outcome::Ignored("scsi_not_io")
        );
        let t = b.take();
        assert_eq!(
            (t.op[0], t.size[0], t.offset[0], t.ts_ns[0]),
            (1, 8192, 51_200, 1_000_000_000)
        );
        assert_eq!(t.latency_ns.unwrap(), [250_000]);
        assert_eq!(t.volumes, ["w01"]);
    }

    #[test]
    fn csv_header_and_lines() {
        let mut b = Builder::new(false, false);
        let mut p = VscsiCsvParser::new("w02");
        assert_eq!(
            p.parse(b"version,time,op,size,lbn", &mut b).unwrap(),
            Outcome::Ignored("header")
        );
        p.parse(b"2,3,28,4096,8", &mut b).unwrap();
        p.parse(b"2,4,aa,512,16", &mut b).unwrap();
        let t = b.take();
        assert_eq!(t.ts_ns, [3_000_000_000, 4_000_000_000]);
        assert_eq!(t.op, [0, 1]);
        assert_eq!(t.offset, [4096, 8192]);
        assert_eq!(p.parse(b"2,4,zz,512,16", &mut b).unwrap_err().key, "bad_number");
    }
}
