//! fio I/O logs (`write_iolog` / `read_iolog`), versions 2 and 3.
//!
//! ## Format
//! The first line is `fio version 2 iolog` or `fio version 3 iolog`. Then, blank-separated:
//! - v2: `file action [offset length]`, with `action` one of `add`, `open`, `close` (file
//!   actions), `read`, `write`, `trim`, `sync`, `datasync`, or `wait` (`file wait N 0`).
//! - v3: the same with a leading timestamp: `time_us file action [offset length]`.
//!
//! ## Fields
//! - `file` → volume, named by the file; `add` lines register files in order.
//! - `offset`, `length`: bytes. `sync`/`datasync` → flush (size 0).
//! - v2 times: `wait N` means "not before N milliseconds after the job started" — that is what
//!   fio's replay code does (`read_iolog_get` sleeps until `mtime_since_genesis() >= N`),
//!   although fio's HOWTO describes the value as microseconds after the previous wait. Requests
//!   take the latest wait's time; a wait earlier than one already passed changes nothing.
//! - v3 times: microseconds from the start of the run (what fio's `log_io_u` writes). fio
//!   ignores `wait` in v3 logs, and so does iomimic (counted as `wait_in_v3`).
//!
//! ## Source
//! fio's `iolog.c` (`read_iolog`, `read_iolog_get`, `log_io_u`) and HOWTO, `read_iolog`.

use super::builder::{Builder, LineError, Outcome, Request};
use super::lex;
use super::spec::{FormatSpec, Framing};
use crate::trace::Op;

pub(crate) const FORMAT: FormatSpec = FormatSpec {
    name: "fio",
    aliases: &["iolog"],
    description:
        "fio iolog version 2 (file action offset length; wait N) or 3 (time_us file action offset length)",
    framing: Framing::Lines,
    detect: Some(20),
    make: |_, _| Ok((Box::new(FioParser::default()), Builder::new(false, false))),
};

#[derive(Default)]
pub struct FioParser {
    version: Option<u8>,
    /// v2: the time the latest `wait` lets requests start at.
    now_ns: u64,
}

impl super::RecordParser for FioParser {
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let Some(version) = self.version else {
            return match lex::trim(line) {
                b"fio version 2 iolog" => {
                    self.version = Some(2);
                    Ok(Outcome::Ignored("header"))
                }
                b"fio version 3 iolog" => {
                    self.version = Some(3);
                    Ok(Outcome::Ignored("header"))
                }
                _ => Err(LineError::new(
                    "bad_header",
                    "expected `fio version 2 iolog` or `fio version 3 iolog` on the first line",
                )),
            };
        };
        let mut all = [&b""[..]; 5];
        let n = lex::split_whitespace(line, &mut all);
        let (ts_ns, f, n) = if version == 3 {
            lex::expect_fields(n, 3, true)?;
            let ts = lex::scaled(lex::u64_field(all[0], "time")?, 1000, "time")?;
            (Some(ts), &all[1..], n - 1)
        } else {
            (None, &all[..4], n)
        };
        if n > 4 {
            return Err(LineError::new(
                "bad_field_count",
                format!(
                    "expected at most {} fields, found {}",
                    4 + usize::from(version == 3),
                    n + usize::from(version == 3)
                ),
            ));
        }
        lex::expect_fields(n, 2, true)?;
        let (file, action) = (f[0], f[1]);
        let op = match action {
            b"add" => {
                out.volumes.intern(file);
                return Ok(Outcome::Ignored("file_action"));
            }
            b"open" | b"close" => return Ok(Outcome::Ignored("file_action")),
            b"wait" if version == 3 => return Ok(Outcome::Ignored("wait_in_v3")),
            b"wait" => {
                lex::expect_fields(n, 3, true)?;
                let ms = lex::u64_field(f[2], "wait time")?;
                self.now_ns = self.now_ns.max(lex::scaled(ms, 1_000_000, "wait time")?);
                return Ok(Outcome::Ignored("wait"));
            }
            b"read" => Op::Read,
            b"write" => Op::Write,
            b"trim" => Op::Trim,
            b"sync" | b"datasync" => Op::Flush,
            other => {
                return Err(LineError::new(
                    "bad_op",
                    format!("unknown iolog action {:?}", String::from_utf8_lossy(other)),
                ))
            }
        };
        let (offset, size) = if op == Op::Flush && n == 2 {
            (0, 0)
        } else {
            lex::expect_fields(n, 4, false)?;
            (lex::u64_field(f[2], "offset")?, lex::u64_field(f[3], "length")?)
        };
        let size = if op == Op::Flush { 0 } else { size };
        let volume = out.volumes.intern(file);
        out.push(Request::new(
            ts_ns.unwrap_or(self.now_ns),
            offset,
            size,
            op,
            volume,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Builder, RecordParser};
    use super::*;

    fn parse(text: &str) -> crate::trace::Trace {
        let mut b = Builder::new(false, false);
        let mut p = FioParser::default();
        for line in text.lines() {
            p.parse(line.as_bytes(), &mut b).unwrap();
        }
        b.take()
    }

    #[test]
    fn v2_waits_are_absolute_milliseconds() {
        let t = parse(
            "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 0 4096\n/dev/sdb wait 5 0\n\
             /dev/sdb write 8192 512\n/dev/sdb wait 3 0\n/dev/sdb trim 0 1048576\n/dev/sdb sync 0 0\n/dev/sdb close",
        );
        assert_eq!(t.ts_ns, [0, 5_000_000, 5_000_000, 5_000_000]);
        assert_eq!(t.op, [0, 1, 2, 3]);
        assert_eq!(t.size, [4096, 512, 1_048_576, 0]);
        assert_eq!(t.volumes, ["/dev/sdb"]);
    }

    #[test]
    fn v3_times_are_microseconds() {
        let t = parse("fio version 3 iolog\n0 f.dat add\n0 f.dat open\n15 f.dat read 4096 4096\n2500 f.dat write 0 8192\n");
        assert_eq!(t.ts_ns, [15_000, 2_500_000]);
        assert_eq!(t.offset, [4096, 0]);
    }

    #[test]
    fn wrong_header_is_named() {
        let mut b = Builder::new(false, false);
        let e = FioParser::default()
            .parse(b"fio version 1 iolog", &mut b)
            .unwrap_err();
        assert_eq!(e.key, "bad_header");
    }
}
