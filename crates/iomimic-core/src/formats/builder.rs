//! The growing columns a reader fills, with volume and file name interning and per-request checks.

use std::collections::{BTreeMap, HashMap};

use crate::latency::LatencyUs;
use crate::trace::{Op, Trace, LATENCY_UNKNOWN, MAX_OFFSET};

/// Why one line (or binary record) was rejected. `key` is stable, for counting and for scripts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub key: &'static str,
    pub message: String,
    /// The file as a whole does not fit the reading (a mapped column it lacks): `skip_bad`
    /// does not skip it, since every line after it would be read wrong.
    pub fatal: bool,
}

impl LineError {
    pub fn new(key: &'static str, message: impl Into<String>) -> Self {
        Self {
            key,
            message: message.into(),
            fatal: false,
        }
    }

    /// An error that stops the read even under `skip_bad`.
    pub fn fatal(key: &'static str, message: impl Into<String>) -> Self {
        Self {
            fatal: true,
            ..Self::new(key, message)
        }
    }
}

/// What a parser did with a line that was not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// One request was appended.
    Request,
    /// Nothing appended, for a stated reason (header, comment, a non-I/O event, ...).
    Ignored(&'static str),
}

/// One request as a parser sees it, before it becomes a row.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub ts_ns: u64,
    pub offset: u64,
    pub size: u64,
    pub op: Op,
    pub volume: u32,
    pub stream: u32,
    pub latency_ns: u64,
    pub file: u32,
    /// [`crate::trace::STATUS_OK`] or an errno; kept when the builder has a status column.
    pub status: u8,
}

impl Request {
    pub fn new(ts_ns: u64, offset: u64, size: u64, op: Op, volume: u32) -> Self {
        Self {
            ts_ns,
            offset,
            size,
            op,
            volume,
            stream: 0,
            latency_ns: LATENCY_UNKNOWN,
            file: 0,
            status: crate::trace::STATUS_OK,
        }
    }
}

/// A name table with a one-entry cache: consecutive requests usually hit the same volume.
#[derive(Debug, Default)]
pub struct Interner {
    ids: HashMap<Vec<u8>, u32>,
    pub names: Vec<String>,
    /// The key each name was interned under (e.g. MSR's `hm,0` for the name `hm_0`), so tables
    /// built by parallel workers can be merged.
    keys: Vec<Vec<u8>>,
    last: Option<(Vec<u8>, u32)>,
}

impl Interner {
    /// Id for `key`, creating it with the name `make_name()` on first sight.
    #[inline]
    pub fn intern_with(&mut self, key: &[u8], make_name: impl FnOnce() -> String) -> u32 {
        if let Some((last_key, id)) = &self.last {
            if last_key.as_slice() == key {
                return *id;
            }
        }
        let id = if let Some(&id) = self.ids.get(key) {
            id
        } else {
            let id = self.names.len() as u32;
            self.names.push(make_name());
            self.keys.push(key.to_vec());
            self.ids.insert(key.to_vec(), id);
            id
        };
        match &mut self.last {
            Some((last_key, last_id)) => {
                last_key.clear();
                last_key.extend_from_slice(key);
                *last_id = id;
            }
            None => self.last = Some((key.to_vec(), id)),
        }
        id
    }

    /// Id for a name used as its own key.
    #[inline]
    pub fn intern(&mut self, name: &[u8]) -> u32 {
        self.intern_with(name, || String::from_utf8_lossy(name).into_owned())
    }

    /// Registers `name` under an explicit id (the canonical CSV's `# volume ID NAME` lines).
    pub fn define(&mut self, id: u32, name: &str) -> Result<(), LineError> {
        if id as usize != self.names.len() {
            return Err(LineError::new(
                "bad_name_table",
                format!(
                    "name ids must count up from 0: expected {}, found {id}",
                    self.names.len()
                ),
            ));
        }
        self.names.push(name.to_owned());
        self.keys.push(name.as_bytes().to_vec());
        self.ids.insert(name.as_bytes().to_vec(), id);
        Ok(())
    }

    /// Maps every id of `other` to an id here, adding names this table lacks.
    pub fn absorb(&mut self, other: &Interner) -> Vec<u32> {
        other
            .keys
            .iter()
            .zip(&other.names)
            .map(|(key, name)| self.intern_with(key, || name.clone()))
            .collect()
    }
}

/// A request size in bytes, which must fit the u32 `size` column.
#[inline]
pub fn size_u32(bytes: u64) -> Result<u32, LineError> {
    u32::try_from(bytes).map_err(|_| {
        LineError::new(
            "size_too_large",
            format!("size {bytes} bytes does not fit in 32 bits (4 GiB)"),
        )
    })
}

/// Columns under construction.
#[derive(Debug, Default)]
pub struct Builder {
    pub trace: Trace,
    pub volumes: Interner,
    pub files: Interner,
    /// Rows whose time is earlier than the row before them, in arrival order.
    pub out_of_order: u64,
    last_ts: u64,
    /// Process names of streams, where the format records them (blkparse's `comm`).
    pub stream_names: BTreeMap<u32, String>,
    /// Response-time phases the format can split (blkparse: Q2D, D2C, Q2C), in order.
    pub latency_phases: Vec<(&'static str, LatencyUs)>,
}

impl Builder {
    pub fn new(with_latency: bool, with_file: bool) -> Self {
        let mut b = Builder::default();
        b.set_optional_columns(with_latency, with_file);
        b
    }

    /// Declares which optional columns exist; only before the first row.
    pub fn set_optional_columns(&mut self, with_latency: bool, with_file: bool) {
        debug_assert!(self.trace.is_empty());
        self.trace.latency_ns = with_latency.then(Vec::new);
        self.trace.file = with_file.then(Vec::new);
    }

    /// Declares a status column (iomimic's own files record one); only before the first row.
    pub fn with_status(&mut self) {
        debug_assert!(self.trace.is_empty());
        self.trace.status = Some(Vec::new());
    }

    pub fn len(&self) -> usize {
        self.trace.len()
    }

    pub fn is_empty(&self) -> bool {
        self.trace.is_empty()
    }

    /// Reserves room for `rows` more rows so large reads grow the columns once.
    pub fn reserve(&mut self, rows: usize) {
        self.trace.reserve(rows);
    }

    /// Checks and appends one request.
    #[inline]
    pub fn push(&mut self, r: Request) -> Result<Outcome, LineError> {
        if r.size == 0 && r.op.needs_size() {
            return Err(LineError::new("zero_size", format!("{} of size 0", r.op.name())));
        }
        let size = size_u32(r.size)?;
        if r.offset >= MAX_OFFSET || MAX_OFFSET - r.offset < r.size {
            return Err(LineError::new(
                "offset_overflow",
                format!("offset {} + size {} passes 2^63", r.offset, r.size),
            ));
        }
        if r.ts_ns < self.last_ts {
            self.out_of_order += 1;
        }
        self.last_ts = r.ts_ns;
        let t = &mut self.trace;
        t.ts_ns.push(r.ts_ns);
        t.offset.push(r.offset);
        t.size.push(size);
        t.op.push(r.op as u8);
        t.volume.push(r.volume);
        t.stream.push(r.stream);
        if let Some(l) = &mut t.latency_ns {
            l.push(r.latency_ns);
        }
        if let Some(f) = &mut t.file {
            f.push(r.file);
        }
        if let Some(s) = &mut t.status {
            s.push(r.status);
        }
        Ok(Outcome::Request)
    }

    /// Appends the rows of `other` (a later stretch of the same file, parsed separately),
    /// translating its volume and file ids into this builder's tables.
    pub fn append(&mut self, other: &mut Builder) {
        let (Some(&first), Some(&last)) = (other.trace.ts_ns.first(), other.trace.ts_ns.last()) else {
            return;
        };
        let volumes = self.volumes.absorb(&other.volumes);
        let files = self.files.absorb(&other.files);
        self.out_of_order += other.out_of_order + u64::from(!self.is_empty() && first < self.last_ts);
        for (stream, name) in std::mem::take(&mut other.stream_names) {
            self.stream_names.entry(stream).or_insert(name);
        }
        self.last_ts = last;
        let (t, o) = (&mut self.trace, &mut other.trace);
        t.ts_ns.append(&mut o.ts_ns);
        t.offset.append(&mut o.offset);
        t.size.append(&mut o.size);
        t.op.append(&mut o.op);
        t.stream.append(&mut o.stream);
        t.volume.extend(o.volume.drain(..).map(|v| volumes[v as usize]));
        if let (Some(mine), Some(theirs)) = (&mut t.latency_ns, &mut o.latency_ns) {
            mine.append(theirs);
        }
        if let (Some(mine), Some(theirs)) = (&mut t.file, &mut o.file) {
            mine.extend(theirs.drain(..).map(|f| files[f as usize]));
        }
        if let (Some(mine), Some(theirs)) = (&mut t.status, &mut o.status) {
            mine.append(theirs);
        }
    }

    /// A fresh builder with the same optional columns.
    #[must_use]
    pub fn empty_like(&self) -> Builder {
        let mut b = Builder::new(self.trace.latency_ns.is_some(), self.trace.file.is_some());
        b.trace.status = self.trace.status.as_ref().map(|_| Vec::new());
        b
    }

    /// Hands over the columns and name tables built so far, leaving the builder empty.
    pub fn take(&mut self) -> Trace {
        let mut trace = std::mem::take(&mut self.trace);
        self.trace.latency_ns = trace.latency_ns.as_ref().map(|_| Vec::new());
        self.trace.file = trace.file.as_ref().map(|_| Vec::new());
        self.trace.status = trace.status.as_ref().map(|_| Vec::new());
        trace.volumes.clone_from(&self.volumes.names);
        trace.files.clone_from(&self.files.names);
        trace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_must_fit_the_column() {
        assert_eq!(size_u32(4096), Ok(4096));
        assert_eq!(size_u32(1 << 32).unwrap_err().key, "size_too_large");
    }
}
