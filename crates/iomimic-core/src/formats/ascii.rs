//! The ASCII trace layout read by the MQSim and DiskSim simulators.
//!
//! ## Format
//! One request a line, five fields separated by blanks: `time device lba size type`, e.g.
//! `11413000 0 657728 16 1`.
//!
//! ## Fields
//! - `time`: nanoseconds for `mqsim` (whole numbers), milliseconds for `disksim` (decimal);
//!   `--time-unit` overrides either.
//! - `device` → volume, named by its number.
//! - `lba` and `size`: 512-byte sectors.
//! - `type`: `1` read, `0` write (DiskSim's flag word: bit 0 set means read).
//!
//! ## Source
//! MQSim (Tavakkol et al., FAST 2018) `ASCII_Trace` input; DiskSim 4.0 user manual, "ascii"
//! input trace format.

use super::builder::{Builder, LineError, Outcome, Request};
use super::spec::{FormatSpec, Framing};
use super::{lex, TimeUnit};
use crate::trace::Op;

// Two formats, one layout: they differ only in the default time unit.
pub(crate) const MQSIM: FormatSpec = FormatSpec {
    name: "mqsim",
    aliases: &[],
    description: "MQSim ASCII: time(ns) device lba(sectors) size(sectors) type(1 read, 0 write)",
    framing: Framing::Lines,
    detect: Some(90),
    make: |opts, _| {
        let unit = opts.time_unit.unwrap_or(TimeUnit::Ns);
        Ok((Box::new(AsciiParser::new(unit)), Builder::new(false, false)))
    },
};

pub(crate) const DISKSIM: FormatSpec = FormatSpec {
    name: "disksim",
    aliases: &[],
    description: "DiskSim ASCII: time(ms) device lba(sectors) size(sectors) type(1 read, 0 write)",
    framing: Framing::Lines,
    detect: Some(100),
    make: |opts, _| {
        let unit = opts.time_unit.unwrap_or(TimeUnit::Ms);
        Ok((Box::new(AsciiParser::new(unit)), Builder::new(false, false)))
    },
};

const OPS: &[(&[u8], Op)] = &[(b"1", Op::Read), (b"0", Op::Write)];

#[derive(Clone)]
pub struct AsciiParser {
    unit: TimeUnit,
}

impl AsciiParser {
    pub fn new(unit: TimeUnit) -> Self {
        Self { unit }
    }
}

impl super::RecordParser for AsciiParser {
    super::stateless_fork!();

    #[inline]
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        if line.first() == Some(&b'#') {
            return Ok(Outcome::Ignored("comment"));
        }
        let mut f = [&b""[..]; 5];
        lex::expect_fields(lex::split_whitespace(line, &mut f), 5, false)?;
        let ts_ns = if self.unit == TimeUnit::Ns {
            // A fraction of a nanosecond means the times are in another unit.
            lex::u64_field(f[0], "time").map_err(|e| {
                if f[0].contains(&b'.') {
                    LineError::new("bad_number", "time has a fraction, but mqsim times are whole nanoseconds (for millisecond times use `format` disksim or `time_unit`)")
                } else {
                    e
                }
            })?
        } else {
            lex::scaled_decimal(f[0], self.unit.exp_to_ns(), "time")?
        };
        let device = f[1];
        lex::u64_field(device, "device")?;
        let offset = lex::to_bytes(lex::u64_field(f[2], "lba")?, 512, "lba")?;
        let size = lex::to_bytes(lex::u64_field(f[3], "size")?, 512, "size")?;
        let op = lex::op_field(f[4], OPS, "type must be 1 (read) or 0 (write)")?;
        let volume = out.volumes.intern(device);
        out.push(Request::new(ts_ns, offset, size, op, volume))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Builder, RecordParser};
    use super::*;

    #[test]
    fn readme_example_line() {
        // the shared trace README's example: an 8 KiB read at byte 336,756,736, 11.413 ms in
        let mut b = Builder::new(false, false);
        AsciiParser::new(TimeUnit::Ns)
            .parse(b"11413000 0 657728 16 1", &mut b)
            .unwrap();
        let t = b.take();
        assert_eq!(
            (t.ts_ns[0], t.offset[0], t.size[0], t.op[0]),
            (11_413_000, 336_756_736, 8192, 0)
        );
    }

    #[test]
    fn disksim_times_are_milliseconds() {
        let mut b = Builder::new(false, false);
        let mut p = AsciiParser::new(TimeUnit::Ms);
        p.parse(b"2.500000 3 8 8 0", &mut b).unwrap();
        let t = b.take();
        assert_eq!((t.ts_ns[0], t.op[0]), (2_500_000, 1));
        assert_eq!(t.volumes, ["3"]);
        let e = AsciiParser::new(TimeUnit::Ns)
            .parse(b"2.5 3 8 8 0", &mut b)
            .unwrap_err();
        assert!(e.message.contains("`format` disksim"));
    }
}
