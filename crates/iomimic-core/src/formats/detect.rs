//! Format detection: every candidate parser tries the first lines; the first that reads them
//! cleanly wins. A format named in the file name (`x.blkparse.txt`) is tried first. The
//! candidates and their order come from the registry in the read options (each spec's
//! `detect` rank), so nothing here names a format.

use std::path::Path;

use super::{Format, Framing, Outcome, ReadOptions, Registry};
use crate::error::{Error, Result};

const SAMPLE_BYTES: usize = 64 << 10;
const SAMPLE_LINES: usize = 200;

struct Trial {
    format: Format,
    requests: usize,
    errors: usize,
    first_error: Option<String>,
    /// Whether the first line that was not ignored (header, comment) held a good request.
    first_data_ok: bool,
}

/// Picks the format of a file from its first bytes. Returns it with remarks for the user.
pub(crate) fn detect(
    path: &Path,
    head: &[u8],
    eof: bool,
    opts: &ReadOptions,
) -> Result<(Format, Vec<String>)> {
    let probe = &head[..head.len().min(4096)];
    if probe.contains(&0) {
        return detect_binary(path, head, &opts.registry);
    }
    if let Some(what) = json_document(head) {
        return Err(Error::Usage(format!("{}: {what}", path.display())));
    }
    let sample = text_sample(head, eof);
    // comment lines do not count towards the sample's lines
    let mut data_lines = 0;
    let lines: Vec<&[u8]> = sample
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .take_while(|l| {
            data_lines += usize::from(l.first() != Some(&b'#'));
            data_lines <= SAMPLE_LINES
        })
        .collect();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let mut order = opts.registry.detected(false);
    order.sort_by_key(|f| !name.split(['.', '_', '-']).any(|part| part == f.name()));

    let trials: Vec<Trial> = order.iter().filter_map(|&f| trial(f, &lines, opts)).collect();
    let clean: Vec<&Trial> = trials
        .iter()
        .filter(|t| t.requests > 0 && t.errors == 0)
        .collect();
    // One odd line must not decide: a reader earlier in the order that read all but a few of
    // the lines (one in a hundred) beats a later one that read them all (mqsim's whole
    // nanoseconds against disksim's fractional milliseconds, say), and the notes say so.
    let nearly = clean.first().and_then(|&c| {
        let rank = |f: Format| trials.iter().position(|t| t.format == f);
        trials.iter().find(|t| {
            t.errors > 0
                && t.first_data_ok
                && t.errors * 100 <= t.requests + t.errors
                && rank(t.format) < rank(c.format)
        })
    });
    // Without a clean reader (a file with bad lines), take the reader that got the first data
    // line right, or else one that read more lines than it rejected; fewest errors wins.
    let chosen = nearly.or_else(|| clean.first().copied()).or_else(|| {
        trials
            .iter()
            .filter(|t| t.requests > 0 && (t.first_data_ok || t.requests >= t.errors))
            .min_by_key(|t| t.errors)
    });
    if chosen.is_none() && eof {
        // the whole file seen: say what it holds rather than that no format matches
        let empty = |why: String| Error::Empty {
            path: path.to_path_buf(),
            why,
        };
        if lines.iter().all(|l| l.first() == Some(&b'#')) {
            return Err(empty("it holds no line but blank ones and comments".into()));
        }
        // read as a format's header (or lines it ignores) and nothing else
        if let Some(t) = trials.iter().find(|t| t.first_error.is_none() && t.requests == 0) {
            return Err(empty(if lines.len() == 1 {
                format!(
                    "its one line reads as a {} header, with no request after it",
                    t.format
                )
            } else {
                format!(
                    "its {} lines read as {} with no request among them",
                    lines.len(),
                    t.format
                )
            }));
        }
    }
    match chosen {
        Some(t) => {
            let mut notes = Vec::new();
            let others: Vec<&str> = clean
                .iter()
                .filter(|o| o.format != t.format)
                .map(|o| o.format.name())
                .collect();
            if let (Some(_), Some(c)) = (nearly, clean.first()) {
                notes.push(format!(
                    "detected {} though {} of the first {} lines do not parse as it; they all parse \
                     as {} (use `format` to choose)",
                    t.format,
                    t.errors,
                    t.requests + t.errors,
                    c.format
                ));
            } else if !others.is_empty() && t.errors == 0 && opts.time_unit.is_none() {
                // (a time unit given says the user already chose among formats that differ by it)
                notes.push(format!(
                    "detected {}; the first lines also parse as {} (use `format` to choose)",
                    t.format,
                    others.join(", ")
                ));
            }
            Ok((t.format, notes))
        }
        None => {
            let tried: Vec<String> = trials
                .iter()
                .map(|t| match &t.first_error {
                    Some(e) => format!("{} ({e})", t.format),
                    None => format!("{} (no request in the first {} lines)", t.format, lines.len()),
                })
                .chain(
                    opts.registry
                        .detected(true)
                        .into_iter()
                        .map(|f| format!("{f} (not a binary file)")),
                )
                .collect();
            Err(Error::UnknownFormat {
                path: path.to_path_buf(),
                tried: tried.join("; "),
            })
        }
    }
}

/// What a JSON document given as a trace is, said plainly (no trace format is JSON): an
/// iomimic model, a profile, or some other JSON.
fn json_document(head: &[u8]) -> Option<String> {
    let start = head.iter().position(|b| !b.is_ascii_whitespace())?;
    if !matches!(head[start], b'{' | b'[') {
        return None;
    }
    let probe = &head[..head.len().min(4096)];
    let has = |needle: &[u8]| probe.windows(needle.len()).any(|w| w == needle);
    Some(
        if has(br#""format":"iomimic-model""#) || has(br#""format": "iomimic-model""#) {
            "this is an iomimic model, not a trace; generate a trace from it (`iomimic generate \
         MODEL -o trace.parquet`), or give it where a model is taken (generate, run, export fio, \
         study)"
                .into()
        } else if has(br#""format_version""#) && has(br#""interarrival""#) {
            "this is an iomimic profile (characterize --json), not a trace".into()
        } else {
            "this is a JSON document, not a trace; see `iomimic formats` for what can be read".into()
        },
    )
}

/// A file with NUL bytes near its start is binary: the first binary format that finds its
/// record size in the first bytes is the file's.
fn detect_binary(path: &Path, head: &[u8], registry: &Registry) -> Result<(Format, Vec<String>)> {
    let mut refusals = Vec::new();
    for format in registry.detected(true) {
        let Framing::Binary(record_size) = format.spec().framing else {
            continue;
        };
        match record_size(head) {
            Ok(_) => return Ok((format, Vec::new())),
            Err(e) => refusals.push(format!("{format} ({})", e.message)),
        }
    }
    let tried = match refusals.len() {
        0 => "no binary format".to_string(),
        1 => format!("the binary format {}", refusals[0]),
        _ => format!("the binary formats {}", refusals.join(", ")),
    };
    Err(Error::UnknownFormat {
        path: path.to_path_buf(),
        tried: format!("{tried}; the file is not text, so no text format applies"),
    })
}

/// The first lines of the file, cut at a line end (unless the whole file is in hand): the
/// leading comment lines whole (iomimic's CSV names its volumes there, thousands of them for
/// some traces) and [`SAMPLE_BYTES`] after them.
fn text_sample(head: &[u8], eof: bool) -> &[u8] {
    let mut comments = 0;
    while head.get(comments) == Some(&b'#') {
        match memchr::memchr(b'\n', &head[comments..]) {
            Some(i) => comments += i + 1,
            None => break,
        }
    }
    let end = head.len().min(comments + SAMPLE_BYTES);
    let sample = &head[..end];
    if eof && end == head.len() {
        return sample;
    }
    memchr::memrchr(b'\n', sample).map_or(sample, |i| &sample[..i])
}

fn trial(format: Format, lines: &[&[u8]], opts: &ReadOptions) -> Option<Trial> {
    // A candidate that cannot even be built (generic without --columns) is not a candidate.
    let (mut parser, mut builder) = (format.spec().make)(opts, "trace").ok()?;
    let mut t = Trial {
        format,
        requests: 0,
        errors: 0,
        first_error: None,
        first_data_ok: false,
    };
    for (i, line) in lines.iter().enumerate() {
        match parser.parse(line, &mut builder) {
            Ok(Outcome::Request) => {
                t.first_data_ok |= t.requests == 0 && t.errors == 0;
                t.requests += 1;
            }
            Ok(Outcome::Ignored(_)) => {}
            Err(e) => {
                t.errors += 1;
                if t.first_error.is_none() {
                    t.first_error = Some(format!("line {}: {}", i + 1, e.message));
                }
            }
        }
    }
    parser.finish(&mut builder);
    Some(t)
}
