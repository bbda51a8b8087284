//! Several traces read as one: a directory or a glob of files (MSR ships one CSV per volume,
//! Alibaba's traces are split by time), merged into one Trace in time order.
//!
//! Each part's times are placed on one clock by its start (the first request's time in the
//! file's own clock, as its read report gives it), so parts recorded at once interleave as
//! they happened and parts of a time-split trace follow each other. Volumes with the same
//! name are one volume (a time-split corpus names a device the same in every file); a part
//! given a prefix has its volume names prefixed (`FILE:NAME`), so that files whose records do
//! not say which device they are (one per device) stay apart. File names merge the same way.

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::trace::{Trace, TraceView};

/// One trace of several.
pub struct Part<'a> {
    pub trace: TraceView<'a>,
    /// The time of its first request in its source's clock (ns).
    pub start_ns: u64,
    /// Prefix for its volume names, if any.
    pub prefix: Option<&'a str>,
}

/// The parts as one trace, sorted by time (stably: equal times keep part order), relative to
/// the earliest start.
pub fn merge(parts: &[Part<'_>]) -> Result<Trace> {
    let origin = parts.iter().map(|p| p.start_ns).min().unwrap_or(0);
    let rows: usize = parts.iter().map(|p| p.trace.len()).sum();
    let with_latency = parts.iter().any(|p| p.trace.latency_ns.is_some());
    let with_file = parts.iter().any(|p| p.trace.file.is_some());
    let with_status = parts.iter().any(|p| p.trace.status.is_some());
    let mut out = Trace {
        latency_ns: with_latency.then(Vec::new),
        file: with_file.then(Vec::new),
        status: with_status.then(Vec::new),
        ..Trace::default()
    };
    out.reserve(rows);
    let mut volumes = Names::default();
    let mut files = Names::default();
    for part in parts {
        let t = &part.trace;
        let shift = part.start_ns - origin;
        let volume_ids: Vec<u32> = t
            .volumes
            .iter()
            .map(|name| match part.prefix {
                Some(prefix) => volumes.id(&format!("{prefix}:{name}")),
                None => volumes.id(name),
            })
            .collect::<Result<_>>()?;
        let file_ids: Vec<u32> = t.files.iter().map(|name| files.id(name)).collect::<Result<_>>()?;
        for &ts in t.ts_ns {
            out.ts_ns.push(
                ts.checked_add(shift)
                    .ok_or_else(|| Error::Usage("the parts' clocks are too far apart to merge".into()))?,
            );
        }
        out.offset.extend_from_slice(t.offset);
        out.size.extend_from_slice(t.size);
        out.op.extend_from_slice(t.op);
        out.volume
            .extend(t.volume.iter().map(|&v| volume_ids[v as usize]));
        out.stream.extend_from_slice(t.stream);
        if let Some(latency) = &mut out.latency_ns {
            match t.latency_ns {
                Some(l) => latency.extend_from_slice(l),
                None => latency.extend(std::iter::repeat_n(crate::trace::LATENCY_UNKNOWN, t.len())),
            }
        }
        if let Some(file) = &mut out.file {
            match t.file {
                Some(f) => file.extend(f.iter().map(|&f| file_ids[f as usize])),
                None => file.extend(std::iter::repeat_n(files.id("")?, t.len())),
            }
        }
        if let Some(status) = &mut out.status {
            match t.status {
                Some(s) => status.extend_from_slice(s),
                None => status.extend(std::iter::repeat_n(crate::trace::STATUS_OK, t.len())),
            }
        }
    }
    out.volumes = volumes.names;
    out.files = files.names;
    out.sort_by_time();
    Ok(out)
}

/// A name table built as names are met.
#[derive(Default)]
struct Names {
    names: Vec<String>,
    ids: FxHashMap<String, u32>,
}

impl Names {
    fn id(&mut self, name: &str) -> Result<u32> {
        if let Some(&id) = self.ids.get(name) {
            return Ok(id);
        }
        let id = u32::try_from(self.names.len())
            .map_err(|_| Error::Usage("more than 2^32 names across the parts".into()))?;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(ts: &[u64], volumes: &[&str]) -> Trace {
        let n = ts.len();
        Trace {
            ts_ns: ts.to_vec(),
            offset: (0..n as u64).map(|i| i * 4096).collect(),
            size: vec![4096; n],
            op: vec![0; n],
            volume: (0..n as u32).map(|i| i % volumes.len() as u32).collect(),
            stream: vec![0; n],
            volumes: volumes.iter().map(|s| (*s).to_string()).collect(),
            ..Trace::default()
        }
    }

    #[test]
    fn parts_interleave_on_one_clock_and_same_names_are_one_volume() {
        // a starts at 1,000 in its clock, b at 1,500: b's times move 500 later
        let a = part(&[0, 1000], &["hm_0"]);
        let mut b = part(&[0, 200], &["hm_1", "hm_0"]);
        b.latency_ns = Some(vec![7, 8]);
        let merged = merge(&[
            Part {
                trace: a.view(),
                start_ns: 1000,
                prefix: None,
            },
            Part {
                trace: b.view(),
                start_ns: 1500,
                prefix: None,
            },
        ])
        .unwrap();
        assert_eq!(merged.ts_ns, [0, 500, 700, 1000]);
        assert_eq!(merged.volumes, ["hm_0", "hm_1"]);
        // rows: a0 (hm_0), b0 (hm_1), b1 (hm_0), a1 (hm_0)
        assert_eq!(merged.volume, [0, 1, 0, 0]);
        let unknown = crate::trace::LATENCY_UNKNOWN;
        assert_eq!(merged.latency_ns.unwrap(), [unknown, 7, 8, unknown]);
    }

    #[test]
    fn prefixed_parts_keep_their_volumes_apart() {
        let a = part(&[0], &["0"]);
        let b = part(&[0], &["0"]);
        let merged = merge(&[
            Part {
                trace: a.view(),
                start_ns: 0,
                prefix: Some("sda"),
            },
            Part {
                trace: b.view(),
                start_ns: 0,
                prefix: Some("sdb"),
            },
        ])
        .unwrap();
        assert_eq!(merged.volumes, ["sda:0", "sdb:0"]);
        assert_eq!(merged.volume, [0, 1]);
    }
}
