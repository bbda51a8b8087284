//! A format defined outside the crate: its spec, one line adding it to the built-in registry,
//! and the normal reader detecting it, reading it and taking it by name.
//!
//! The toy format: one request a line, `TIME_US OFFSET SIZE R|W` separated by blanks (offsets
//! and sizes in bytes), `#` lines are comments; no device field, so the volume is the file's
//! name. No built-in format reads four blank-separated fields, so detection can only pick it.

use std::path::PathBuf;

use iomimic_core::formats::{
    Builder, Format, FormatSpec, Framing, LineError, Outcome, ReadOptions, RecordParser, Registry, Request,
};
use iomimic_core::{read_trace, Error, Op, TraceReader};

static TOY: FormatSpec = FormatSpec {
    name: "toy",
    aliases: &["toy-trace"],
    description: "a test's toy format: TIME_US OFFSET SIZE R|W",
    framing: Framing::Lines,
    // after every headerless built-in text format, before generic
    detect: Some(500),
    make: |_, stem| {
        Ok((
            Box::new(ToyParser { stem: stem.into() }),
            Builder::new(false, false),
        ))
    },
};

#[derive(Clone)]
struct ToyParser {
    stem: String,
}

impl RecordParser for ToyParser {
    fn parse(&mut self, line: &[u8], out: &mut Builder) -> Result<Outcome, LineError> {
        if line.starts_with(b"#") {
            return Ok(Outcome::Ignored("comment"));
        }
        let text = std::str::from_utf8(line).map_err(|_| LineError::new("bad_text", "not UTF-8"))?;
        let fields: Vec<&str> = text.split_ascii_whitespace().collect();
        let [time, offset, size, op] = fields[..] else {
            return Err(LineError::new(
                "bad_field_count",
                format!("expected 4 fields, found {}", fields.len()),
            ));
        };
        let number = |s: &str, what: &str| {
            s.parse::<u64>()
                .map_err(|_| LineError::new("bad_number", format!("{what} is not a number: {s:?}")))
        };
        let op = match op {
            "R" => Op::Read,
            "W" => Op::Write,
            other => {
                return Err(LineError::new(
                    "bad_op",
                    format!("op must be R or W, found {other:?}"),
                ))
            }
        };
        let ts_ns = number(time, "time")? * 1000;
        let volume = out.volumes.intern(self.stem.as_bytes());
        out.push(Request::new(
            ts_ns,
            number(offset, "offset")?,
            number(size, "size")?,
            op,
            volume,
        ))
    }

    fn fork(&self) -> Option<Box<dyn RecordParser>> {
        Some(Box::new(self.clone()))
    }
}

/// The built-in formats and the toy one.
fn registry() -> Registry {
    Registry::builtin().with(&TOY)
}

/// A toy trace in a file whose name says nothing of its format, so content decides.
fn toy_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("iomimic-it-toy-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ops.txt");
    std::fs::write(
        &path,
        "# a toy trace\n100 4096 512 R\n250 0 8192 W\n\n175 1048576 4096 R\n",
    )
    .unwrap();
    path
}

#[test]
fn a_registered_format_is_detected_and_read() {
    let path = toy_file("detect");
    let opts = ReadOptions {
        registry: registry(),
        ..ReadOptions::default()
    };
    let (t, report) = read_trace(&path, &opts).unwrap();
    assert_eq!(report.format.map(Format::name), Some("toy"));
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    // sorted by time, relative to the first request
    assert_eq!(t.ts_ns, [0, 75_000, 150_000]);
    assert_eq!(t.offset, [4096, 1_048_576, 0]);
    assert_eq!(t.size, [512, 4096, 8192]);
    assert_eq!(t.op, [Op::Read as u8, Op::Read as u8, Op::Write as u8]);
    assert_eq!(t.volume, [0, 0, 0]);
    assert_eq!(t.volumes, ["ops"]);
    assert_eq!(t.latency_ns, None);
    assert_eq!(
        (report.records, report.requests, report.start_ns),
        (5, 3, 100_000)
    );
    assert_eq!(report.ignored.get("comment"), Some(&1));
    assert_eq!(report.ignored.get("blank"), Some(&1));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_registered_format_is_read_by_name() {
    let path = toy_file("named");
    let registry = registry();
    let toy = registry.get("TOY-trace").unwrap();
    assert_eq!(toy, Format::of(&TOY));
    let opts = ReadOptions {
        format: Some(toy),
        registry,
        ..ReadOptions::default()
    };
    let reader = TraceReader::open(&path, &opts).unwrap().with_workers(1);
    assert_eq!(reader.format().name(), "toy");
    let (t, report) = reader.finish().unwrap();
    assert_eq!(t.ts_ns, [0, 75_000, 150_000]);
    assert_eq!(t.size, [512, 4096, 8192]);
    assert!(report.notes.is_empty());
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn the_built_in_registry_does_not_know_it() {
    let path = toy_file("builtin");
    let err = read_trace(&path, &ReadOptions::default()).unwrap_err();
    let Error::UnknownFormat { tried, .. } = &err else {
        panic!("{err}");
    };
    assert!(
        tried.contains("mqsim (line 2: expected 5 fields, found 4)"),
        "{tried}"
    );
    assert!(!tried.contains("toy"), "{tried}");
    let err = "toy".parse::<Format>().unwrap_err().to_string();
    assert!(
        err.starts_with("unknown format \"toy\"; known formats: msr, spc,"),
        "{err}"
    );
    assert!(err.ends_with(", parquet"), "{err}");
    assert!(registry()
        .get("nope")
        .unwrap_err()
        .to_string()
        .ends_with(", parquet, toy"));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
