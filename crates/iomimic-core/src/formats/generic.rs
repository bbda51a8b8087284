//! Any delimited text trace, described by a column mapping.
//!
//! ## Format
//! Fields separated by `--delimiter` or, when absent, by the first of tab, comma or semicolon
//! found in the first line (else runs of blanks). Lines starting with `#` are comments; a first
//! line whose time field is not a number is a header.
//!
//! ## Fields
//! `--columns` maps roles to 0-based field numbers with optional units:
//! `ts=0:us,offset=4:bytes,size=5:sectors,op=3,volume=1,stream=2,latency=6:us,file=7`, or to
//! the names in the file's header line: `ts=time:s,offset=lba:sectors,size=len,op=rw` (a
//! name must match a header field exactly, surrounding quotes and blanks aside; the header is
//! then required, and a name it lacks is an error listing the names it has).
//! - `ts` (required) and `latency`: unit `ns`, `us`, `ms` or `s` (`--time-unit` gives a default).
//! - `offset`, `size` (required): `bytes` (default), `sectors` (512 B), `kib`, or a number of bytes.
//! - `op`: words `read`/`r`/`rs`, `write`/`w`/`ws`, `trim`/`discard`/`d`, `flush`/`sync`/`f` in any
//!   case, or iomimic's codes 0-3. `op=3:read=1` instead makes the value `1` a read and every
//!   other value a write (`op=3:write=W` the reverse). Without `op`, every request is a read.
//! - `volume`, `file`: any text, interned into name tables; without `volume`, one volume named
//!   after the file. `stream`: an unsigned integer.
//!
//! ## Source
//! iomimic's own convention, for traces no built-in format covers.

use super::builder::{Builder, LineError, Outcome, Request};
use super::spec::{FormatSpec, Framing};
use super::{lex, TimeUnit};
use crate::error::{Error, Result};
use crate::trace::{Op, LATENCY_UNKNOWN};

pub(crate) const FORMAT: FormatSpec = FormatSpec {
    name: "generic",
    aliases: &[],
    description: "any CSV/TSV/space-separated trace, described by a column mapping (never detected)",
    framing: Framing::Lines,
    // tried last, and only when --columns is given (without it `make` refuses)
    detect: Some(900),
    make: |opts, stem| {
        let spec = opts.columns.as_deref().ok_or_else(|| {
            Error::Usage(
                "format generic needs `columns`, e.g. ts=0:us,offset=1:bytes,size=2:bytes,op=3".into(),
            )
        })?;
        let parser = GenericParser::new(spec, opts.delimiter, opts.time_unit, stem)?;
        let builder = Builder::new(parser.has_latency(), parser.has_file());
        Ok((Box::new(parser), builder))
    },
};

#[derive(Debug, Clone)]
enum OpRule {
    Words,
    ReadIs(Vec<u8>),
    WriteIs(Vec<u8>),
}

#[derive(Debug, Clone, Copy)]
struct Col {
    index: usize,
    /// Multiplier to the column's base unit (ns for times, bytes for sizes); as a power of ten
    /// for times so decimals convert exactly.
    scale: u64,
}

#[derive(Debug)]
pub struct GenericParser {
    ts: Col,
    offset: Col,
    size: Col,
    op: Option<(usize, OpRule)>,
    volume: Option<usize>,
    stream: Option<usize>,
    latency: Option<Col>,
    file: Option<usize>,
    delimiter: Option<u8>,
    default_volume: Vec<u8>,
    width: usize,
    /// A line other than a comment was read: only the first may be a header.
    seen_line: bool,
    /// Roles mapped by header name, (role, name), resolved from the first line read.
    by_name: Vec<(String, String)>,
}

fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(format!("`columns`: {}", msg.into()))
}

fn time_exp(unit: Option<&str>, default: Option<TimeUnit>, role: &str) -> Result<u64> {
    let unit = match (unit, default) {
        (Some(u), _) => u.parse::<TimeUnit>().map_err(|e| usage(format!("{role}: {e}")))?,
        (None, Some(d)) => d,
        (None, None) => {
            return Err(usage(format!(
                "{role} needs a unit, e.g. {role}=0:us (ns, us, ms or s)"
            )))
        }
    };
    Ok(u64::from(unit.exp_to_ns()))
}

fn byte_scale(unit: Option<&str>, role: &str) -> Result<u64> {
    match unit.map(str::to_ascii_lowercase).as_deref() {
        None | Some("bytes" | "b") => Ok(1),
        Some("sectors" | "sector" | "512") => Ok(512),
        Some("kib" | "k") => Ok(1024),
        Some(other) => other.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
            usage(format!(
                "{role}: unknown unit {other:?}; use bytes, sectors, kib or a number of bytes"
            ))
        }),
    }
}

impl GenericParser {
    /// `default_volume` names the single volume when no `volume` column is mapped.
    pub fn new(
        spec: &str,
        delimiter: Option<u8>,
        time_unit: Option<TimeUnit>,
        default_volume: &str,
    ) -> Result<Self> {
        let mut ts = None;
        let mut offset = None;
        let mut size = None;
        let mut parser = GenericParser {
            ts: Col { index: 0, scale: 0 },
            offset: Col { index: 0, scale: 1 },
            size: Col { index: 0, scale: 1 },
            op: None,
            volume: None,
            stream: None,
            latency: None,
            file: None,
            delimiter,
            default_volume: default_volume.as_bytes().to_vec(),
            width: 0,
            seen_line: false,
            by_name: Vec::new(),
        };
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (role, rest) = item
                .split_once('=')
                .ok_or_else(|| usage(format!("{item:?} is not ROLE=COLUMN[:UNIT]")))?;
            let mut parts = rest.split(':');
            let column = parts.next().unwrap_or("").trim();
            let index = match column.parse::<usize>() {
                Ok(index) => index,
                Err(_) if !column.is_empty() && !column.starts_with(|c: char| c.is_ascii_digit()) => {
                    // a header name: its field number comes from the first line
                    parser.by_name.push((role.trim().to_string(), column.to_string()));
                    0
                }
                Err(_) => {
                    return Err(usage(format!(
                        "{role}: column must be a 0-based field number or a header name, found {rest:?}"
                    )))
                }
            };
            let unit = parts.next();
            parser.width = parser.width.max(index + 1);
            match role.trim() {
                "ts" | "time" => {
                    ts = Some(Col {
                        index,
                        scale: time_exp(unit, time_unit, "ts")?,
                    });
                }
                "offset" => {
                    offset = Some(Col {
                        index,
                        scale: byte_scale(unit, "offset")?,
                    });
                }
                "size" => {
                    size = Some(Col {
                        index,
                        scale: byte_scale(unit, "size")?,
                    });
                }
                "latency" => {
                    parser.latency = Some(Col {
                        index,
                        scale: time_exp(unit, time_unit, "latency")?,
                    });
                }
                "op" => {
                    let rule = match unit.map(|u| u.split_once('=')) {
                        None => OpRule::Words,
                        Some(Some(("read", v))) => OpRule::ReadIs(v.as_bytes().to_vec()),
                        Some(Some(("write", v))) => OpRule::WriteIs(v.as_bytes().to_vec()),
                        Some(_) => {
                            return Err(usage("op takes op=COL, op=COL:read=VALUE or op=COL:write=VALUE"))
                        }
                    };
                    parser.op = Some((index, rule));
                }
                "volume" => parser.volume = Some(index),
                "stream" => parser.stream = Some(index),
                "file" => parser.file = Some(index),
                other => {
                    return Err(usage(format!(
                    "unknown role {other:?}; roles are ts, offset, size, op, volume, stream, latency, file"
                )))
                }
            }
        }
        parser.ts = ts.ok_or_else(|| usage("ts is required, e.g. ts=0:us"))?;
        parser.offset = offset.ok_or_else(|| usage("offset is required, e.g. offset=1:bytes"))?;
        parser.size = size.ok_or_else(|| usage("size is required, e.g. size=2:bytes"))?;
        Ok(parser)
    }

    /// Points the roles mapped by name at their fields in `header` (the file's first line).
    fn resolve_names(&mut self, header: &[&[u8]]) -> Result<(), LineError> {
        let names: Vec<String> = header
            .iter()
            .map(|f| {
                String::from_utf8_lossy(lex::trim(f))
                    .trim_matches('"')
                    .trim()
                    .to_string()
            })
            .collect();
        for (role, name) in std::mem::take(&mut self.by_name) {
            let Some(index) = names.iter().position(|n| *n == name) else {
                return Err(LineError::fatal(
                    "no_such_column",
                    format!(
                        "`columns`: {role}={name}, but the header has no column {name:?} (it has {})",
                        names.join(", ")
                    ),
                ));
            };
            match role.as_str() {
                "ts" | "time" => self.ts.index = index,
                "offset" => self.offset.index = index,
                "size" => self.size.index = index,
                "latency" => self.latency.as_mut().expect("role parsed").index = index,
                "op" => self.op.as_mut().expect("role parsed").0 = index,
                "volume" => self.volume = Some(index),
                "stream" => self.stream = Some(index),
                _ => self.file = Some(index),
            }
            self.width = self.width.max(index + 1);
        }
        Ok(())
    }

    pub fn has_latency(&self) -> bool {
        self.latency.is_some()
    }

    pub fn has_file(&self) -> bool {
        self.file.is_some()
    }

    fn op(&self, field: &[u8]) -> Result<Op, LineError> {
        let v = lex::trim(field);
        let bad = || {
            LineError::new(
                "bad_op",
                format!("op {:?} is not a known operation", String::from_utf8_lossy(v)),
            )
        };
        match &self.op {
            None => Ok(Op::Read),
            Some((_, OpRule::ReadIs(r))) => Ok(if v == r.as_slice() { Op::Read } else { Op::Write }),
            Some((_, OpRule::WriteIs(w))) => Ok(if v == w.as_slice() { Op::Write } else { Op::Read }),
            Some((_, OpRule::Words)) => match v.to_ascii_lowercase().as_slice() {
                b"r" | b"read" | b"rs" | b"0" => Ok(Op::Read),
                b"w" | b"write" | b"ws" | b"1" => Ok(Op::Write),
                b"d" | b"trim" | b"discard" | b"2" => Ok(Op::Trim),
                b"f" | b"flush" | b"sync" | b"3" => Ok(Op::Flush),
                _ => Err(bad()),
            },
        }
    }
}

impl super::RecordParser for GenericParser {
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        if line.first() == Some(&b'#') {
            return Ok(Outcome::Ignored("comment"));
        }
        let delimiter = *self.delimiter.get_or_insert_with(|| {
            [b'\t', b',', b';']
                .into_iter()
                .find(|d| line.contains(d))
                .unwrap_or(b' ')
        });
        let first = !std::mem::replace(&mut self.seen_line, true);
        if first && !self.by_name.is_empty() {
            let mut header = vec![&b""[..]; line.len() + 1];
            let n = if delimiter == b' ' {
                lex::split_whitespace(line, &mut header)
            } else {
                lex::split(line, delimiter, &mut header)
            };
            self.resolve_names(&header[..n])?;
            return Ok(Outcome::Ignored("header"));
        }
        let mut fields = vec![&b""[..]; self.width];
        let n = if delimiter == b' ' {
            lex::split_whitespace(line, &mut fields)
        } else {
            lex::split(line, delimiter, &mut fields)
        };
        lex::expect_fields(n, self.width, true)?;
        let ts_ns = match lex::scaled_decimal(fields[self.ts.index], self.ts.scale as u32, "ts") {
            Ok(t) => t,
            // the first line may name the columns; any later one is data, good or bad
            Err(_) if first => return Ok(Outcome::Ignored("header")),
            Err(e) => return Err(e),
        };
        let offset = lex::to_bytes(
            lex::u64_field(fields[self.offset.index], "offset")?,
            self.offset.scale,
            "offset",
        )?;
        let size = lex::to_bytes(
            lex::u64_field(fields[self.size.index], "size")?,
            self.size.scale,
            "size",
        )?;
        let op = self.op(self.op.as_ref().map_or(&b""[..], |(i, _)| fields[*i]))?;
        let volume = match self.volume {
            Some(i) => out.volumes.intern(lex::trim(fields[i])),
            None => out.volumes.intern(&self.default_volume),
        };
        let mut r = Request::new(ts_ns, offset, size, op, volume);
        if let Some(i) = self.stream {
            let s = lex::u64_field(fields[i], "stream")?;
            r.stream = u32::try_from(s)
                .map_err(|_| LineError::new("number_too_large", format!("stream {s} is too large")))?;
        }
        if let Some(c) = self.latency {
            r.latency_ns = lex::scaled_decimal(fields[c.index], c.scale as u32, "latency")?;
        } else {
            r.latency_ns = LATENCY_UNKNOWN;
        }
        if let Some(i) = self.file {
            r.file = out.files.intern(lex::trim(fields[i]));
        }
        out.push(r)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Builder, RecordParser};
    use super::*;

    #[test]
    fn mapped_columns_with_units_and_header() {
        let mut p = GenericParser::new(
            "ts=0:ms,volume=1,op=2:read=1,offset=3:sectors,size=4:kib,latency=5:us",
            None,
            None,
            "t",
        )
        .unwrap();
        let mut b = Builder::new(true, false);
        assert_eq!(
            p.parse(b"time\tdisk\trw\tlba\tkib\tlat", &mut b).unwrap(),
            Outcome::Ignored("header")
        );
        p.parse(b"1.5\tsda\t1\t8\t4\t100", &mut b).unwrap();
        p.parse(b"2\tsdb\t0\t16\t1\t7.5", &mut b).unwrap();
        let t = b.take();
        assert_eq!(t.ts_ns, [1_500_000, 2_000_000]);
        assert_eq!(t.op, [0, 1]);
        assert_eq!(t.offset, [4096, 8192]);
        assert_eq!(t.size, [4096, 1024]);
        assert_eq!(t.latency_ns.unwrap(), [100_000, 7500]);
        assert_eq!(t.volumes, ["sda", "sdb"]);
        // after data, a non-numeric time is an error, not a header
        assert_eq!(
            p.parse(b"x\tsda\t1\t8\t4\t1", &mut b).unwrap_err().key,
            "bad_number"
        );
        // and after a header, a corrupt first data row is an error too
        let mut p = GenericParser::new("ts=0:ms,offset=1,size=2", None, None, "t").unwrap();
        assert_eq!(
            p.parse(b"time,offset,size", &mut b).unwrap(),
            Outcome::Ignored("header")
        );
        assert_eq!(p.parse(b"1?,0,512", &mut b).unwrap_err().key, "bad_number");
    }

    #[test]
    fn columns_by_header_name() {
        let mut p = GenericParser::new(
            "ts=time:s,offset=lba:sectors,size=len,op=rw,volume=2",
            None,
            None,
            "t",
        )
        .unwrap();
        let mut b = Builder::new(false, false);
        assert_eq!(
            p.parse(b"\"rw\",\"time\",dev,len,lba", &mut b).unwrap(),
            Outcome::Ignored("header")
        );
        p.parse(b"W,0.5,sdb,4096,8", &mut b).unwrap();
        let t = b.take();
        assert_eq!(
            (t.ts_ns[0], t.offset[0], t.size[0], t.op[0]),
            (500_000_000, 4096, 4096, 1)
        );
        assert_eq!(t.volumes, ["sdb"]);
        // a name the header lacks is an error on the header line, naming what it has
        let mut p = GenericParser::new("ts=when:s,offset=1,size=2", None, None, "t").unwrap();
        let e = p.parse(b"time,offset,size", &mut b).unwrap_err();
        assert_eq!(e.key, "no_such_column");
        assert!(
            e.message
                .contains("no column \"when\" (it has time, offset, size)"),
            "{}",
            e.message
        );
        let e = GenericParser::new("ts=0x:s,offset=1,size=2", None, None, "t").unwrap_err();
        assert!(e.to_string().contains("field number or a header name"));
    }

    #[test]
    fn spec_errors_name_the_role() {
        let e = |s: &str| GenericParser::new(s, None, None, "t").unwrap_err().to_string();
        assert!(e("offset=1,size=2").contains("ts is required"));
        assert!(e("ts=0,offset=1,size=2").contains("ts needs a unit"));
        assert!(e("ts=0:us,offset=1:parsecs,size=2").contains("unknown unit \"parsecs\""));
        assert!(e("ts=0:us,offset=1,size=2,colour=3").contains("unknown role \"colour\""));
        assert!(GenericParser::new("ts=0,offset=1,size=2", None, Some(TimeUnit::Us), "t").is_ok());
    }
}
