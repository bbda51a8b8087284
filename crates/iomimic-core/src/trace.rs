//! The Trace: block requests as columns, in issue-time order, with a volume name table.

/// `latency_ns` value for a request whose response time the trace does not record
/// (e.g. a blkparse dispatch with no matching completion). Maps to null in Parquet and polars.
pub const LATENCY_UNKNOWN: u64 = u64::MAX;

/// `status` value of a request that completed without error; any other value is the `errno`
/// it failed with (5, EIO, for a medium error), capped at 255.
pub const STATUS_OK: u8 = 0;

/// Largest byte offset (exclusive) a request may reach, so offsets survive Parquet's signed int64.
pub const MAX_OFFSET: u64 = 1 << 63;

/// What a request does. The numeric codes are the `op` column's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    Read = 0,
    Write = 1,
    Trim = 2,
    Flush = 3,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Read, Op::Write, Op::Trim, Op::Flush];

    pub fn from_code(code: u8) -> Option<Op> {
        Op::ALL.get(usize::from(code)).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Trim => "trim",
            Op::Flush => "flush",
        }
    }

    /// Flushes carry no data; every other op must have a size.
    pub fn needs_size(self) -> bool {
        self != Op::Flush
    }
}

/// Requests as a struct of columns. Row `i` of every column is request `i`.
///
/// Invariants kept by the readers: rows are sorted by `ts_ns` (stably, so equal times keep file
/// order), the first request is at `ts_ns == 0`, every `volume` id indexes `volumes`, and every
/// `file` id indexes `files`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    pub ts_ns: Vec<u64>,
    pub offset: Vec<u64>,
    pub size: Vec<u32>,
    pub op: Vec<u8>,
    pub volume: Vec<u32>,
    pub stream: Vec<u32>,
    /// Response time per request, when the format records it.
    pub latency_ns: Option<Vec<u64>>,
    /// File id per request, when the format records it.
    pub file: Option<Vec<u32>>,
    /// Completion status per request ([`STATUS_OK`] or an errno), where recorded: real runs,
    /// simulations with injected faults, and iomimic's own files.
    pub status: Option<Vec<u8>>,
    /// Volume names; `volume` ids index this table.
    pub volumes: Vec<String>,
    /// File names; `file` ids index this table.
    pub files: Vec<String>,
}

/// Checks that a rate multiplier (`intensity`) is a positive, finite number.
pub fn check_intensity(intensity: f64) -> crate::error::Result<()> {
    if intensity.is_finite() && intensity > 0.0 {
        Ok(())
    } else {
        Err(crate::error::Error::Usage(format!(
            "`intensity` must be a positive number, found {intensity}"
        )))
    }
}

/// Checks that `span_ns` divided by `intensity` stays on the nanosecond clock (2^62 ns, about
/// 146 years): a tiny intensity would otherwise stretch times until they saturate.
pub fn check_time_scale(span_ns: u64, intensity: f64) -> crate::error::Result<()> {
    check_intensity(intensity)?;
    let limit = (1u64 << 62) as f64;
    if span_ns as f64 / intensity > limit {
        return Err(crate::error::Error::Usage(format!(
            "`intensity` {intensity:e} stretches this {:.3} s workload past the {:.0} years a trace's \
             clock holds",
            span_ns as f64 / 1e9,
            limit / 3.156e16
        )));
    }
    Ok(())
}

/// A borrowed, read-only view of a trace's columns (from a [`Trace`] or from foreign arrays).
#[derive(Debug, Clone, Copy)]
pub struct TraceView<'a> {
    pub ts_ns: &'a [u64],
    pub offset: &'a [u64],
    pub size: &'a [u32],
    pub op: &'a [u8],
    pub volume: &'a [u32],
    pub stream: &'a [u32],
    pub latency_ns: Option<&'a [u64]>,
    pub file: Option<&'a [u32]>,
    pub status: Option<&'a [u8]>,
    pub volumes: &'a [String],
    pub files: &'a [String],
}

impl Trace {
    /// Reserves room for `rows` more rows in every column it has, so appending many grows
    /// each column once.
    pub fn reserve(&mut self, rows: usize) {
        self.ts_ns.reserve(rows);
        self.offset.reserve(rows);
        self.size.reserve(rows);
        self.op.reserve(rows);
        self.volume.reserve(rows);
        self.stream.reserve(rows);
        if let Some(l) = &mut self.latency_ns {
            l.reserve(rows);
        }
        if let Some(f) = &mut self.file {
            f.reserve(rows);
        }
        if let Some(s) = &mut self.status {
            s.reserve(rows);
        }
    }

    /// Appends the rows of `v` (whose names are this trace's), with the optional columns this
    /// trace has.
    pub fn extend_from(&mut self, v: &TraceView<'_>) {
        self.ts_ns.extend_from_slice(v.ts_ns);
        self.offset.extend_from_slice(v.offset);
        self.size.extend_from_slice(v.size);
        self.op.extend_from_slice(v.op);
        self.volume.extend_from_slice(v.volume);
        self.stream.extend_from_slice(v.stream);
        if let (Some(to), Some(from)) = (&mut self.latency_ns, v.latency_ns) {
            to.extend_from_slice(from);
        }
        if let (Some(to), Some(from)) = (&mut self.file, v.file) {
            to.extend_from_slice(from);
        }
        if let (Some(to), Some(from)) = (&mut self.status, v.status) {
            to.extend_from_slice(from);
        }
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts_ns.is_empty()
    }

    pub fn view(&self) -> TraceView<'_> {
        TraceView {
            ts_ns: &self.ts_ns,
            offset: &self.offset,
            size: &self.size,
            op: &self.op,
            volume: &self.volume,
            stream: &self.stream,
            latency_ns: self.latency_ns.as_deref(),
            file: self.file.as_deref(),
            status: self.status.as_deref(),
            volumes: &self.volumes,
            files: &self.files,
        }
    }

    /// Sorts rows by issue time, keeping file order among equal times. Returns how many rows
    /// arrived earlier than the row before them (the trace's out-of-order count).
    pub fn sort_by_time(&mut self) -> u64 {
        let out_of_order = self.ts_ns.windows(2).filter(|w| w[1] < w[0]).count() as u64;
        if out_of_order == 0 {
            return 0;
        }
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_by_key(|&i| self.ts_ns[i as usize]);
        permute(&mut self.ts_ns, &order);
        permute(&mut self.offset, &order);
        permute(&mut self.size, &order);
        permute(&mut self.op, &order);
        permute(&mut self.volume, &order);
        permute(&mut self.stream, &order);
        if let Some(latency) = &mut self.latency_ns {
            permute(latency, &order);
        }
        if let Some(file) = &mut self.file {
            permute(file, &order);
        }
        if let Some(status) = &mut self.status {
            permute(status, &order);
        }
        out_of_order
    }

    /// Shifts times so the earliest request is at 0; returns the shift (the original start, ns).
    pub fn make_relative(&mut self) -> u64 {
        let start = self.ts_ns.iter().copied().min().unwrap_or(0);
        if start != 0 {
            for t in &mut self.ts_ns {
                *t -= start;
            }
        }
        start
    }

    /// Checks the invariants a trace built outside the readers must hold; names the first breach.
    pub fn validate(&self) -> Result<(), String> {
        self.view().validate()
    }
}

impl<'a> TraceView<'a> {
    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The rows in `rows`, as a view of their own (names shared).
    #[must_use]
    pub fn rows(&self, rows: std::ops::Range<usize>) -> TraceView<'a> {
        TraceView {
            ts_ns: &self.ts_ns[rows.clone()],
            offset: &self.offset[rows.clone()],
            size: &self.size[rows.clone()],
            op: &self.op[rows.clone()],
            volume: &self.volume[rows.clone()],
            stream: &self.stream[rows.clone()],
            latency_ns: self.latency_ns.map(|c| &c[rows.clone()]),
            file: self.file.map(|c| &c[rows.clone()]),
            status: self.status.map(|c| &c[rows.clone()]),
            volumes: self.volumes,
            files: self.files,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ts_ns.is_empty()
    }

    /// Checks column lengths, id ranges, op codes and offset bounds.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.len();
        let lengths = [
            ("offset", self.offset.len()),
            ("size", self.size.len()),
            ("op", self.op.len()),
            ("volume", self.volume.len()),
            ("stream", self.stream.len()),
            ("latency_ns", self.latency_ns.map_or(n, <[u64]>::len)),
            ("file", self.file.map_or(n, <[u32]>::len)),
            ("status", self.status.map_or(n, <[u8]>::len)),
        ];
        for (name, len) in lengths {
            if len != n {
                return Err(format!("column {name} has {len} rows, ts_ns has {n}"));
            }
        }
        if let Some(i) = self.op.iter().position(|&o| Op::from_code(o).is_none()) {
            return Err(format!("row {i}: op {} is not 0..=3", self.op[i]));
        }
        // one rule everywhere, as the readers apply it: only a flush may have no size
        if let Some(i) = (0..n).find(|&i| self.size[i] == 0 && self.op[i] != Op::Flush as u8) {
            let op = Op::from_code(self.op[i]).map_or("request", Op::name);
            return Err(format!("row {i}: a {op} of size 0"));
        }
        if let Some(i) = self.volume.iter().position(|&v| v as usize >= self.volumes.len()) {
            return Err(format!(
                "row {i}: volume {} has no name ({} volume names)",
                self.volume[i],
                self.volumes.len()
            ));
        }
        if let Some(file) = self.file {
            if let Some(i) = file.iter().position(|&f| f as usize >= self.files.len()) {
                return Err(format!(
                    "row {i}: file {} has no name ({} file names)",
                    file[i],
                    self.files.len()
                ));
            }
        }
        let past_end = |i: usize| {
            self.offset[i]
                .checked_add(u64::from(self.size[i]))
                .is_none_or(|end| end > MAX_OFFSET)
        };
        if let Some(i) = (0..n).find(|&i| past_end(i)) {
            return Err(format!(
                "row {i}: offset {} + size {} passes 2^63",
                self.offset[i], self.size[i]
            ));
        }
        Ok(())
    }
}

fn permute<T: Copy>(column: &mut Vec<T>, order: &[u32]) {
    let sorted: Vec<T> = order.iter().map(|&i| column[i as usize]).collect();
    *column = sorted;
}

/// Traces for unit tests across the crate.
#[cfg(test)]
pub(crate) mod testing {
    use super::Trace;

    /// Reads of `size` bytes at `offsets`, issued at `ts`, on one volume.
    pub fn reads(ts: &[u64], offsets: &[u64], size: u32) -> Trace {
        let n = ts.len();
        Trace {
            ts_ns: ts.to_vec(),
            offset: offsets.to_vec(),
            size: vec![size; n],
            op: vec![0; n],
            volume: vec![0; n],
            stream: vec![0; n],
            volumes: vec!["v".into()],
            ..Trace::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(ts: &[u64]) -> Trace {
        testing::reads(ts, &(0..ts.len() as u64).collect::<Vec<_>>(), 512)
    }

    #[test]
    fn sort_is_stable_and_counts_out_of_order_rows() {
        let mut t = trace(&[10, 5, 5, 20, 1]);
        assert_eq!(t.sort_by_time(), 2);
        assert_eq!(t.ts_ns, [1, 5, 5, 10, 20]);
        // the two rows at t=5 keep their file order (offsets 1 then 2)
        assert_eq!(t.offset, [4, 1, 2, 0, 3]);
    }

    #[test]
    fn relative_times_start_at_zero() {
        let mut t = trace(&[100, 150, 300]);
        assert_eq!(t.make_relative(), 100);
        assert_eq!(t.ts_ns, [0, 50, 200]);
    }

    #[test]
    fn validate_names_the_breach() {
        let mut t = trace(&[0, 1]);
        assert!(t.validate().is_ok());
        t.volume[1] = 3;
        assert!(t.validate().unwrap_err().contains("row 1: volume 3"));
        let mut t = trace(&[0]);
        t.offset[0] = MAX_OFFSET - 100;
        assert!(t.validate().unwrap_err().contains("passes 2^63"));
        let mut t = trace(&[0, 1]);
        t.size[1] = 0;
        assert_eq!(t.validate().unwrap_err(), "row 1: a read of size 0");
        t.op[1] = Op::Flush as u8;
        assert!(t.validate().is_ok());
    }
}
