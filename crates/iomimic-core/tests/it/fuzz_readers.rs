//! Every reader against mutated real samples: flipped, inserted and deleted bytes, cut files,
//! repeated lines, gzip around them and damage inside the gzip. A reader may refuse (an error
//! that says where and why) but never panics, and what it accepts holds the Trace's
//! invariants. `PROPTEST_CASES` sets the cases per run (`make fuzz` runs many more).

use std::io::Write;
use std::path::{Path, PathBuf};

use iomimic_core::{read_trace, Format, ReadOptions};
use proptest::prelude::*;

/// A sample: the file's bytes and the options that read it as its own format.
struct Sample {
    name: String,
    bytes: Vec<u8>,
    format: Option<Format>,
    columns: Option<String>,
}

fn samples() -> Vec<Sample> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats");
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the format fixtures")
        .map(|e| e.expect("a fixture").path())
        .filter(|p| !p.to_string_lossy().ends_with(".expected.json"))
        .collect();
    entries.sort();
    for path in entries {
        let expected = path.with_file_name(format!(
            "{}.expected.json",
            path.file_name().unwrap().to_string_lossy()
        ));
        let want: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(expected).expect("expected answers")).unwrap();
        let options = &want["options"];
        out.push(Sample {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            bytes: std::fs::read(&path).unwrap(),
            format: want["format"].as_str().and_then(|f| f.parse().ok()),
            columns: options["columns"].as_str().map(str::to_owned),
        });
    }
    // a binary vscsi v2 file: four 40-byte records {cmd, ver, sn, len, nSG, lbn, ts, rt}
    let mut vscsi = Vec::new();
    for i in 0..4u64 {
        vscsi.extend_from_slice(&0x28u16.to_le_bytes()); // READ(10)
        vscsi.extend_from_slice(&(2u16 << 8).to_le_bytes()); // version 2
        vscsi.extend_from_slice(&(i as u32).to_le_bytes()); // serial number
        vscsi.extend_from_slice(&4096u32.to_le_bytes()); // length
        vscsi.extend_from_slice(&1u32.to_le_bytes()); // scatter-gather entries
        vscsi.extend_from_slice(&(i * 8).to_le_bytes()); // lbn
        vscsi.extend_from_slice(&(i * 1_000_000).to_le_bytes()); // ts (µs)
        vscsi.extend_from_slice(&500u64.to_le_bytes()); // response time (µs)
    }
    out.push(Sample {
        name: "w.vscsi".into(),
        bytes: vscsi,
        format: "vscsi".parse().ok(),
        columns: None,
    });
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
    RepeatLine(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, v)| Mutation::Flip(p, v)),
        (
            any::<usize>(),
            prop::collection::vec(
                prop_oneof![
                    Just(b','),
                    Just(b'\n'),
                    Just(b' '),
                    Just(b'-'),
                    Just(b'9'),
                    Just(b'.'),
                    Just(0u8),
                    any::<u8>()
                ],
                1..12
            )
        )
            .prop_map(|(p, b)| Mutation::Insert(p, b)),
        (any::<usize>(), 1..64usize).prop_map(|(p, n)| Mutation::Delete(p, n)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1..200usize).prop_map(|(l, n)| Mutation::RepeatLine(l, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let at = |p: usize, len: usize| p % (len + 1);
    match m {
        Mutation::Flip(p, v) => {
            let i = p % bytes.len();
            bytes[i] ^= v | 1;
        }
        Mutation::Insert(p, b) => {
            let i = at(*p, bytes.len());
            bytes.splice(i..i, b.iter().copied());
        }
        Mutation::Delete(p, n) => {
            let i = p % bytes.len();
            let end = (i + n).min(bytes.len());
            bytes.drain(i..end);
        }
        Mutation::Truncate(p) => bytes.truncate(at(*p, bytes.len())),
        Mutation::RepeatLine(l, n) => {
            let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
            let line = lines[l % lines.len()].to_vec();
            let mut out = bytes.clone();
            for _ in 0..*n {
                out.extend_from_slice(&line);
            }
            *bytes = out;
        }
    }
}

/// How the mutated bytes reach the reader.
#[derive(Debug, Clone, Copy)]
enum Wrapping {
    Plain,
    Gzip,
    /// gzip, then a byte of the compressed stream damaged
    DamagedGzip(usize, u8),
}

fn wrapping() -> impl Strategy<Value = Wrapping> {
    prop_oneof![
        4 => Just(Wrapping::Plain),
        1 => Just(Wrapping::Gzip),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(p, v)| Wrapping::DamagedGzip(p, v)),
    ]
}

fn wrap(bytes: &[u8], wrapping: Wrapping) -> Vec<u8> {
    let gz = || {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    };
    match wrapping {
        Wrapping::Plain => bytes.to_vec(),
        Wrapping::Gzip => gz(),
        Wrapping::DamagedGzip(at, flip) => {
            let mut zipped = gz();
            let i = at % zipped.len();
            zipped[i] ^= flip | 1;
            zipped
        }
    }
}

fn read_every_way(path: &Path, sample: &Sample) {
    let own = ReadOptions {
        format: sample.format,
        columns: sample.columns.clone(),
        ..ReadOptions::default()
    };
    let detected = ReadOptions {
        columns: sample.columns.clone(),
        ..ReadOptions::default()
    };
    for mut opts in [detected, own] {
        for skip_bad in [false, true] {
            opts.skip_bad = skip_bad;
            match read_trace(path, &opts) {
                Ok((trace, _)) => {
                    assert!(!trace.is_empty(), "{}: an empty trace was accepted", sample.name);
                    trace
                        .validate()
                        .unwrap_or_else(|e| panic!("{}: accepted a broken trace: {e}", sample.name));
                }
                // every refusal says something
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(48)
}

/// The test run's mutants are the same every time (`PROPTEST_RNG_SEED` picks others; `make
/// fuzz` draws a new seed each run): a test suite must not pass or fail, or take minutes, by
/// the luck of the draw.
fn rng_seed() -> proptest::test_runner::RngSeed {
    let seed = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|s| s.parse().ok());
    proptest::test_runner::RngSeed::Fixed(seed.unwrap_or(20_261_123))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        rng_seed: rng_seed(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_samples_never_panic_the_readers(
        which in any::<usize>(),
        mutations in prop::collection::vec(mutation(), 1..8),
        wrapping in wrapping(),
    ) {
        let all = samples();
        let sample = &all[which % all.len()];
        let mut bytes = sample.bytes.clone();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        let dir = std::env::temp_dir().join(format!("iomimic-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(&sample.name);
        std::fs::write(&path, wrap(&bytes, wrapping)).unwrap();
        read_every_way(&path, sample);
    }
}

#[test]
fn every_sample_reads_as_it_is() {
    for sample in samples() {
        let dir = std::env::temp_dir().join(format!("iomimic-fuzz-clean-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(&sample.name);
        std::fs::write(&path, &sample.bytes).unwrap();
        let opts = ReadOptions {
            format: sample.format,
            columns: sample.columns.clone(),
            ..ReadOptions::default()
        };
        let (t, _) = read_trace(&path, &opts).unwrap_or_else(|e| panic!("{}: {e}", sample.name));
        assert!(!t.is_empty(), "{}", sample.name);
    }
}
