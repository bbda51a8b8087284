//! iomimic's canonical CSV: every column of a Trace, as a plain CSV that polars, pandas and
//! DuckDB read with their default options.
//!
//! ## Format
//! Written (v2):
//! ```text
//! ts_ns,offset,size,op,volume,stream,latency_ns,file,volume_name,file_name
//! 0,3216723968,4096,0,0,0,155700,0,hm_0,/data/a.db
//! ```
//! The header names the columns; `latency_ns`, `file` and the name columns are optional. Names
//! are quoted as CSV quotes them when they hold a comma or a quote, and newlines and other
//! control characters are escaped (`\\`, `\n`, `\xHH`) so a record stays one line. Without
//! name columns, a volume or file is named by its id. The name tables hold the names the rows
//! use: a name no request uses is not kept (Parquet keeps everything).
//!
//! Read too (v1, what earlier versions wrote): a first line `# iomimic trace v1`, then
//! `# volume ID NAME` and `# file ID NAME` lines defining the name tables in id order, then
//! the header and the rows without name columns.
//!
//! ## Fields
//! As the Trace: `ts_ns` and `latency_ns` in ns (an empty `latency_ns` is unknown), `offset` and
//! `size` in bytes, `op` 0 read, 1 write, 2 trim, 3 flush; `volume` and `file` are ids into the
//! name tables.
//!
//! ## Source
//! iomimic's own.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::builder::{Builder, LineError, Outcome, Request};
use super::lex;
use super::spec::{FormatSpec, Framing};
use crate::trace::{Op, TraceView, LATENCY_UNKNOWN};

pub(crate) const FORMAT: FormatSpec = FormatSpec {
    name: "csv",
    aliases: &["iomimic-csv", "canonical"],
    description: "iomimic canonical CSV (what `iomimic convert -o x.csv` writes)",
    framing: Framing::Lines,
    detect: Some(10),
    make: |_, _| Ok((Box::new(CanonicalParser::default()), Builder::new(false, false))),
};

const MAGIC: &str = "# iomimic trace v1";
const REQUIRED: [&str; 6] = ["ts_ns", "offset", "size", "op", "volume", "stream"];
/// Every column the header may name, in the order roles are numbered here.
const ALL: [&str; 11] = [
    "ts_ns",
    "offset",
    "size",
    "op",
    "volume",
    "stream",
    "latency_ns",
    "file",
    "volume_name",
    "file_name",
    "status",
];

/// Names go on one line of text: backslash, newline and other control characters are escaped
/// (`\\`, `\n`, `\xHH`) so any name survives, NUL included.
fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32); // writing to a String cannot fail
            }
            c => out.push(c),
        }
    }
    out
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(b) => out.push(char::from(b)),
                    Err(_) => {
                        out.push_str("\\x");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// A name as a CSV field: escaped to one line, quoted when it holds a comma or a quote.
fn csv_name(name: &str) -> String {
    let escaped = escape(name);
    if escaped.contains([',', '"']) || escaped.starts_with(' ') || escaped.ends_with(' ') {
        format!("\"{}\"", escaped.replace('"', "\"\""))
    } else {
        escaped
    }
}

/// Writes `trace` as canonical CSV (v2: a plain CSV with name columns).
pub fn write_csv(trace: &TraceView<'_>, w: impl Write) -> io::Result<()> {
    write_csv_part(trace, w, true)
}

/// [`write_csv`], with its header line only when `header`: a later part of the same trace
/// appended to a file that has one.
pub fn write_csv_part(trace: &TraceView<'_>, w: impl Write, header: bool) -> io::Result<()> {
    let mut w = io::BufWriter::with_capacity(1 << 20, w);
    let mut names = REQUIRED.join(",");
    if trace.latency_ns.is_some() {
        names.push_str(",latency_ns");
    }
    if trace.file.is_some() {
        names.push_str(",file");
    }
    names.push_str(",volume_name");
    if trace.file.is_some() {
        names.push_str(",file_name");
    }
    if trace.status.is_some() {
        names.push_str(",status");
    }
    if header {
        writeln!(w, "{names}")?;
    }
    let volumes: Vec<String> = trace.volumes.iter().map(|n| csv_name(n)).collect();
    let files: Vec<String> = trace.files.iter().map(|n| csv_name(n)).collect();
    let mut num = itoa::Buffer::new();
    let mut line = Vec::with_capacity(128);
    for i in 0..trace.len() {
        line.clear();
        let fields = [
            trace.ts_ns[i],
            trace.offset[i],
            u64::from(trace.size[i]),
            u64::from(trace.op[i]),
            u64::from(trace.volume[i]),
            u64::from(trace.stream[i]),
        ];
        for (k, v) in fields.into_iter().enumerate() {
            if k > 0 {
                line.push(b',');
            }
            line.extend_from_slice(num.format(v).as_bytes());
        }
        if let Some(lat) = trace.latency_ns {
            line.push(b',');
            if lat[i] != LATENCY_UNKNOWN {
                line.extend_from_slice(num.format(lat[i]).as_bytes());
            }
        }
        if let Some(file) = trace.file {
            line.push(b',');
            line.extend_from_slice(num.format(file[i]).as_bytes());
        }
        line.push(b',');
        line.extend_from_slice(volumes[trace.volume[i] as usize].as_bytes());
        if let Some(file) = trace.file {
            line.push(b',');
            line.extend_from_slice(files[file[i] as usize].as_bytes());
        }
        if let Some(status) = trace.status {
            line.push(b',');
            line.extend_from_slice(num.format(status[i]).as_bytes());
        }
        line.push(b'\n');
        w.write_all(&line)?;
    }
    w.flush()
}

#[derive(Default)]
pub struct CanonicalParser {
    /// The first line was read: v1's `# iomimic trace v1`, or v2's header.
    started: bool,
    /// v1: names come from `# volume` / `# file` lines.
    v1: bool,
    /// Column positions, by role (see [`ALL`]).
    columns: Option<[Option<usize>; 11]>,
    width: usize,
    /// v2: names by id, as the rows give them.
    volume_names: Vec<Option<String>>,
    file_names: Vec<Option<String>>,
}

/// Sets `names[id]` to the name in `field` (the first name a row gives an id stands).
fn learn(names: &mut Vec<Option<String>>, id: u32, field: Option<&[u8]>) {
    let id = id as usize;
    if names.len() <= id {
        names.resize(id + 1, None);
    }
    if names[id].is_none() {
        names[id] = Some(field.map_or_else(|| id.to_string(), |f| unescape(&unquote(f))));
    }
}

/// A CSV field without its quotes (`"a ""b"""` is `a "b"`).
fn unquote(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => text.into_owned(),
    }
}

impl CanonicalParser {
    fn comment(line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let text = String::from_utf8_lossy(line);
        let mut parts = text.splitn(4, ' ');
        let (hash, kind, id, name) = (parts.next(), parts.next(), parts.next(), parts.next());
        let table = match kind {
            Some("volume") => &mut out.volumes,
            Some("file") => &mut out.files,
            _ => return Ok(Outcome::Ignored("comment")),
        };
        let id: u32 = id
            .and_then(|s| s.parse().ok())
            .filter(|_| hash == Some("#"))
            .ok_or_else(|| {
                LineError::new(
                    "bad_name_table",
                    "expected `# volume ID NAME` or `# file ID NAME`",
                )
            })?;
        table.define(id, &unescape(name.unwrap_or("")))?;
        Ok(Outcome::Ignored("name_table"))
    }

    fn header(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        let names: Vec<&[u8]> = line.split(|&b| b == b',').map(lex::trim).collect();
        let mut columns = [None; 11];
        for (pos, name) in names.iter().enumerate() {
            let role = ALL.iter().position(|r| r.as_bytes() == *name).ok_or_else(|| {
                LineError::new(
                    "bad_header",
                    format!("unknown column {:?}", String::from_utf8_lossy(name)),
                )
            })?;
            columns[role] = Some(pos);
        }
        if let Some(missing) = REQUIRED.iter().zip(columns).find(|(_, c)| c.is_none()) {
            return Err(LineError::new(
                "bad_header",
                format!("the header lacks the column {}", missing.0),
            ));
        }
        out.set_optional_columns(columns[6].is_some(), columns[7].is_some());
        if columns[10].is_some() {
            out.with_status();
        }
        self.columns = Some(columns);
        self.width = names.len();
        Ok(Outcome::Ignored("header"))
    }
}

impl super::RecordParser for CanonicalParser {
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        if !self.started {
            self.started = true;
            if lex::trim(line) == MAGIC.as_bytes() {
                self.v1 = true;
                return Ok(Outcome::Ignored("header"));
            }
            if !line.starts_with(b"ts_ns,") {
                return Err(LineError::new(
                    "bad_header",
                    format!("expected a header `ts_ns,offset,size,...` or `{MAGIC}` on the first line"),
                ));
            }
            return self.header(line, out);
        }
        if self.v1 && line.first() == Some(&b'#') {
            return Self::comment(line, out);
        }
        let Some(columns) = self.columns else {
            return self.header(line, out);
        };
        let mut f = [&b""[..]; 11];
        let fields = if columns[8].is_some() || columns[9].is_some() {
            lex::split_quoted(line, b',', &mut f)
        } else {
            lex::split(line, b',', &mut f)
        };
        lex::expect_fields(fields, self.width, false)?;
        let col = |role: usize| columns[role].map_or(&b""[..], |i| f[i]);
        let code = lex::u64_field(col(3), "op")?;
        let op = u8::try_from(code).ok().and_then(Op::from_code).ok_or_else(|| {
            LineError::new(
                "bad_op",
                format!("op must be 0 (read), 1 (write), 2 (trim) or 3 (flush), found {code}"),
            )
        })?;
        let id = |role: usize, what: &str| -> Result<u32, LineError> {
            let v = lex::u64_field(col(role), what)?;
            u32::try_from(v)
                .map_err(|_| LineError::new("number_too_large", format!("{what} {v} is too large")))
        };
        let volume = id(4, "volume")?;
        if self.v1 && volume as usize >= out.volumes.names.len() {
            return Err(LineError::new(
                "unknown_volume",
                format!("volume {volume} has no `# volume {volume} NAME` line"),
            ));
        }
        let mut r = Request::new(
            lex::u64_field(col(0), "ts_ns")?,
            lex::u64_field(col(1), "offset")?,
            lex::u64_field(col(2), "size")?,
            op,
            volume,
        );
        r.stream = id(5, "stream")?;
        if columns[6].is_some() {
            let text = lex::trim(col(6));
            r.latency_ns = if text.is_empty() {
                LATENCY_UNKNOWN
            } else {
                lex::u64_field(text, "latency_ns")?
            };
        }
        if columns[7].is_some() {
            r.file = id(7, "file")?;
            if self.v1 && r.file as usize >= out.files.names.len() {
                return Err(LineError::new(
                    "unknown_file",
                    format!("file {} has no `# file {} NAME` line", r.file, r.file),
                ));
            }
        }
        if columns[10].is_some() {
            let code = lex::u64_field(col(10), "status")?;
            r.status = u8::try_from(code)
                .map_err(|_| LineError::new("number_too_large", format!("status {code} is not 0..=255")))?;
        }
        let outcome = out.push(r)?;
        if !self.v1 {
            learn(&mut self.volume_names, volume, columns[8].map(|i| f[i]));
            if columns[7].is_some() {
                learn(&mut self.file_names, r.file, columns[9].map(|i| f[i]));
            }
        }
        Ok(outcome)
    }

    /// v2: the name tables, from the names the rows gave.
    fn finish(&mut self, out: &mut Builder) {
        if self.v1 {
            return;
        }
        for (names, table) in [
            (&self.volume_names, &mut out.volumes),
            (&self.file_names, &mut out.files),
        ] {
            for (id, name) in names.iter().enumerate() {
                let name = name.clone().unwrap_or_else(|| id.to_string());
                // ids count up from 0 here, so the table takes each in turn
                let _ = table.define(id as u32, &name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Builder, RecordParser};
    use super::*;
    use crate::trace::Trace;
    use proptest::prelude::*;

    fn read_back(text: &[u8]) -> Trace {
        let mut p = CanonicalParser::default();
        let mut b = Builder::default();
        for line in text.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            p.parse(line, &mut b).unwrap();
        }
        p.finish(&mut b);
        b.take()
    }

    prop_compose! {
        fn any_trace()(n in 0usize..40, with_latency in any::<bool>(), with_file in any::<bool>(), with_status in any::<bool>(), names in prop::collection::vec("[a-z\\\\\n\x00\x1f ,é]{0,6}", 1..4))
            (ts in prop::collection::vec(any::<u64>(), n), offset in prop::collection::vec(0u64..(1 << 62), n),
             size in prop::collection::vec(1u32.., n), op in prop::collection::vec(0u8..3, n),
             volume in prop::collection::vec(0..names.len() as u32, n), stream in prop::collection::vec(any::<u32>(), n),
             latency in prop::collection::vec(any::<u64>(), n), file in prop::collection::vec(0u32..2, n),
             status in prop::collection::vec(any::<u8>(), n), with_status in Just(with_status),
             names in Just(names), with_latency in Just(with_latency), with_file in Just(with_file)) -> Trace {
            Trace {
                ts_ns: ts, offset, size, op, volume, stream,
                latency_ns: with_latency.then_some(latency),
                file: with_file.then_some(file),
                status: with_status.then_some(status),
                volumes: names,
                files: if with_file { vec!["f0".into(), "f\n1".into()] } else { vec![] },
            }
        }
    }

    /// What a name table reads back as: the names the rows use, up to the highest id used
    /// (an id in between that no row uses is named by its number).
    fn used(names: &[String], ids: &[u32]) -> Vec<String> {
        let Some(&top) = ids.iter().max() else {
            return Vec::new();
        };
        (0..=top)
            .map(|id| {
                if ids.contains(&id) {
                    names[id as usize].clone()
                } else {
                    id.to_string()
                }
            })
            .collect()
    }

    proptest! {
        #[test]
        fn csv_round_trip_is_lossless(t in any_trace()) {
            let mut bytes = Vec::new();
            write_csv(&t.view(), &mut bytes).unwrap();
            let mut want = t.clone();
            want.volumes = used(&t.volumes, &t.volume);
            want.files = t.file.as_ref().map_or_else(Vec::new, |f| used(&t.files, f));
            prop_assert_eq!(read_back(&bytes), want);
        }
    }

    #[test]
    fn earlier_csv_with_name_lines_still_reads() {
        let text = b"# iomimic trace v1\n# volume 0 a\n# volume 1 b,c\nts_ns,offset,size,op,volume,stream\n0,0,512,0,1,0\n";
        let t = read_back(text);
        assert_eq!(t.volumes, ["a", "b,c"]);
        assert_eq!(t.volume, [1]);
    }

    #[test]
    fn a_plain_csv_without_names_names_volumes_by_id() {
        let t = read_back(b"ts_ns,offset,size,op,volume,stream\n0,0,512,0,2,0\n5,512,512,1,0,0\n");
        assert_eq!(t.volumes, ["0", "1", "2"]);
        assert_eq!(t.volume, [2, 0]);
    }

    #[test]
    fn unknown_volume_in_v1_is_named() {
        let mut p = CanonicalParser::default();
        let mut b = Builder::default();
        for l in [
            &b"# iomimic trace v1"[..],
            b"# volume 0 a",
            b"ts_ns,offset,size,op,volume,stream",
        ] {
            p.parse(l, &mut b).unwrap();
        }
        assert_eq!(
            p.parse(b"0,0,512,0,1,0", &mut b).unwrap_err().key,
            "unknown_volume"
        );
        assert_eq!(p.parse(b"0,0,512,7,0,0", &mut b).unwrap_err().key, "bad_op");
    }
}
