//! The streaming driver: reads a file in blocks that end on record boundaries, feeds each block
//! to the format's parser, and collects line errors. Formats whose records are independent are
//! parsed on several threads, a block per thread, and merged back in file order.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::builder::{Builder, LineError, Outcome};
use super::{detect, input, Format, Framing, ReadOptions, ReadReport, RecordParser};
use crate::analyze::summary::{PartialSummary, Summary};
use crate::error::{Error, Result};
use crate::trace::{Trace, LATENCY_UNKNOWN};

const UTF8_BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

/// Bytes per block: big enough that thread hand-offs are rare, small enough to bound memory.
const BLOCK: usize = 1 << 20;
/// How many skipped lines are quoted in the report.
const EXAMPLES: usize = 10;
/// Most threads a read uses.
const MAX_WORKERS: usize = 8;

/// Where a file's records end: at newlines, or every so many bytes (a binary format's record
/// size, found from the file's first bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    Lines,
    Fixed(usize),
}

/// What parsing one block found besides its rows. Line numbers are relative to the block.
#[derive(Debug, Default)]
struct BlockStats {
    records: u64,
    skipped: BTreeMap<&'static str, u64>,
    examples: Vec<(u64, String)>,
    ignored: BTreeMap<&'static str, u64>,
    /// The first bad record when bad records are not skipped: (line in block, error).
    error: Option<(u64, LineError)>,
}

impl BlockStats {
    #[inline]
    fn record(&mut self, result: Result<Outcome, LineError>, skip_bad: bool) -> bool {
        self.records += 1;
        match result {
            Ok(Outcome::Request) => true,
            Ok(Outcome::Ignored(why)) => {
                *self.ignored.entry(why).or_default() += 1;
                true
            }
            Err(e) => self.bad(e, skip_bad),
        }
    }

    #[cold]
    fn bad(&mut self, e: LineError, skip_bad: bool) -> bool {
        if !skip_bad || e.fatal {
            self.error = Some((self.records, e));
            return false;
        }
        *self.skipped.entry(e.key).or_default() += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push((self.records, e.message));
        }
        true
    }
}

/// Reads one trace file incrementally. [`read_trace`] is the one-call form.
pub struct TraceReader {
    path: PathBuf,
    source: BlockSource,
    format: Format,
    parser: Box<dyn RecordParser>,
    framing: Split,
    builder: Builder,
    /// Blocks read ahead while the previous batch was being parsed.
    prefetched: Vec<Vec<u8>>,
    skip_bad: bool,
    workers: usize,
    report: ReadReport,
    consumed: Arc<AtomicU64>,
    file_bytes: u64,
    /// Whether the parser has been told the input ended.
    ended: bool,
}

impl TraceReader {
    /// Opens `path`, detecting compression and (unless `opts.format` is set) the format.
    pub fn open(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Self> {
        let path = path.as_ref();
        let mut input = input::open(path)?;
        let mut head = vec![0u8; BLOCK];
        let len = input::read_full(&mut input.reader, &mut head).map_err(|e| Error::reading(path, e))?;
        head.truncate(len);
        // a UTF-8 byte-order mark (spreadsheets write one) is not part of the first line
        let bom = head.starts_with(&UTF8_BOM);
        if bom {
            head.drain(..UTF8_BOM.len());
        }
        let mut report = ReadReport {
            path: path.to_path_buf(),
            compression: Some(input.compression),
            ..ReadReport::default()
        };
        if len == 0 {
            return Err(Error::Empty {
                path: path.to_path_buf(),
                why: "the file is empty".into(),
            });
        }
        let format = match opts.format {
            Some(f) => f,
            None => {
                let (format, notes) = detect::detect(path, &head, len < BLOCK, opts)?;
                report.notes.extend(notes);
                format
            }
        };
        report.format = Some(format);
        let (parser, mut builder) = (format.spec().make)(opts, &file_stem(path))?;
        let framing = match format.spec().framing {
            Framing::Lines => Split::Lines,
            Framing::Binary(record_size) => Split::Fixed(record_size(&head).map_err(|e| Error::Parse {
                path: path.to_path_buf(),
                line: 1,
                key: e.key,
                message: e.message,
            })?),
            Framing::Whole => {
                return Err(Error::Usage(format!(
                    "format {format} is not read record by record, so the core reader cannot read it"
                )))
            }
        };
        // Size the columns once from the file size: about 40 bytes a record for every text format.
        // Compressed input grows the columns as usual.
        if input.compression == input::Compression::None {
            let record_bytes = match framing {
                Split::Fixed(n) => n as u64,
                Split::Lines => 40,
            };
            builder.reserve(
                usize::try_from(input.file_bytes / record_bytes)
                    .unwrap_or(0)
                    .min(1 << 28),
            );
        }
        let workers = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .min(MAX_WORKERS);
        Ok(Self {
            path: path.to_path_buf(),
            format,
            source: BlockSource {
                path: path.to_path_buf(),
                input: input.reader,
                framing,
                carry: head,
                eof: len < BLOCK,
            },
            parser,
            framing,
            builder,
            prefetched: Vec::new(),
            skip_bad: opts.skip_bad,
            workers,
            report,
            consumed: input.consumed,
            file_bytes: input.file_bytes,
            ended: false,
        })
    }

    /// Caps the threads used for parsing (1 parses on the calling thread only).
    #[must_use]
    pub fn with_workers(mut self, workers: usize) -> Self {
        self.workers = workers.clamp(1, MAX_WORKERS);
        self
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// (compressed bytes consumed so far, file size in bytes), for progress bars.
    pub fn progress(&self) -> (u64, u64) {
        (self.consumed.load(Ordering::Relaxed), self.file_bytes)
    }

    /// Rows read so far.
    pub fn rows(&self) -> usize {
        self.builder.len()
    }

    /// Parses until at least `max_rows` more rows exist or the input ends. Returns `false` once
    /// the input is exhausted.
    pub fn read_some(&mut self, max_rows: usize) -> Result<bool> {
        let target = self.builder.len().saturating_add(max_rows);
        while self.builder.len() < target {
            let forks: Vec<Box<dyn RecordParser>> =
                (1..self.workers).map_while(|_| self.parser.fork()).collect();
            let mut blocks = std::mem::take(&mut self.prefetched);
            self.source.fill(&mut blocks, forks.len() + 1)?;
            if blocks.is_empty() {
                return Ok(false);
            }
            if forks.is_empty() || blocks.len() == 1 {
                for block in &blocks {
                    let mut stats = BlockStats::default();
                    parse_block(
                        block,
                        self.framing,
                        self.parser.as_mut(),
                        &mut self.builder,
                        &mut stats,
                        self.skip_bad,
                    );
                    self.absorb_stats(stats)?;
                }
                continue;
            }
            self.parse_parallel(&blocks, forks)?;
        }
        Ok(!(self.prefetched.is_empty() && self.source.is_done()))
    }

    /// Parses the first block into the trace on this thread and every other block on a thread
    /// of its own, reads the next batch meanwhile, then appends the others' rows in file order.
    fn parse_parallel(&mut self, blocks: &[Vec<u8>], forks: Vec<Box<dyn RecordParser>>) -> Result<()> {
        let (framing, skip_bad) = (self.framing, self.skip_bad);
        let template = self.builder.empty_like();
        let batch = forks.len() + 1;
        let (parser, builder, source) = (&mut self.parser, &mut self.builder, &mut self.source);
        let mut prefetched = Vec::new();
        let (first, others, read_ahead) = std::thread::scope(|scope| {
            let handles: Vec<_> = blocks[1..]
                .iter()
                .zip(forks)
                .map(|(block, mut parser)| {
                    let mut out = template.empty_like();
                    scope.spawn(move || {
                        let mut stats = BlockStats::default();
                        parse_block(block, framing, parser.as_mut(), &mut out, &mut stats, skip_bad);
                        (out, stats)
                    })
                })
                .collect();
            let mut first = BlockStats::default();
            parse_block(
                &blocks[0],
                framing,
                parser.as_mut(),
                builder,
                &mut first,
                skip_bad,
            );
            // Overlap reading the next batch with the other threads' parsing.
            let read_ahead = if first.error.is_none() {
                source.fill(&mut prefetched, batch)
            } else {
                Ok(())
            };
            let others: Vec<(Builder, BlockStats)> = handles
                .into_iter()
                .map(|h| h.join().expect("a parser thread panicked"))
                .collect();
            (first, others, read_ahead)
        });
        self.prefetched = prefetched;
        self.absorb_stats(first)?;
        for (mut out, stats) in others {
            self.builder.append(&mut out);
            self.absorb_stats(stats)?;
        }
        read_ahead
    }

    /// Adds a block's counts to the report, turning block-relative line numbers into file ones.
    fn absorb_stats(&mut self, stats: BlockStats) -> Result<()> {
        let before = self.report.records;
        let r = &mut self.report;
        r.records += stats.records;
        for (k, n) in stats.skipped {
            *r.skipped.entry(k).or_default() += n;
        }
        for (k, n) in stats.ignored {
            *r.ignored.entry(k).or_default() += n;
        }
        for (line, message) in stats.examples {
            if r.skipped_examples.len() < EXAMPLES {
                r.skipped_examples
                    .push(format!("{}:{}: {message}", self.path.display(), before + line));
            }
        }
        match stats.error {
            Some((line, e)) => Err(Error::Parse {
                path: self.path.clone(),
                line: before + line,
                key: e.key,
                message: e.message,
            }),
            None => Ok(()),
        }
    }

    /// Reads the rest and returns the finished trace: sorted by time, relative to the first
    /// request, with the read report.
    pub fn finish(mut self) -> Result<(Trace, ReadReport)> {
        while self.read_some(usize::MAX)? {}
        let mut report = self.end();
        let mut trace = self.builder.take();
        if trace.is_empty() {
            return Err(self.empty(&report));
        }
        let (known, nonzero) = trace.latency_ns.as_ref().map_or((false, false), |l| {
            let known = l.iter().any(|&v| v != LATENCY_UNKNOWN);
            (known, known && l.iter().any(|&v| v != 0 && v != LATENCY_UNKNOWN))
        });
        if !self.latencies_recorded(known, nonzero, &mut report) {
            trace.latency_ns = None;
        }
        trace.sort_by_time();
        report.start_ns = trace.make_relative();
        report.requests = trace.len() as u64;
        Ok((trace, report))
    }

    /// Parses like [`Self::read_some`], then counts the rows read into `counted` and drops
    /// them: a file summarized this way, then by [`Self::finish_summary`], is held a batch at
    /// a time whatever its length.
    pub fn count_some(&mut self, max_rows: usize, counted: &mut Counted) -> Result<bool> {
        let more = self.read_some(max_rows)?;
        counted.add(&self.builder.take());
        Ok(more)
    }

    /// Hands over the rows parsed so far (in file order, times in the file's clock, the name
    /// tables so far), counted into `counted` first when given: a file read a piece at a time.
    pub fn take_rows(&mut self, counted: Option<&mut Counted>) -> Trace {
        let rows = self.builder.take();
        if let Some(counted) = counted {
            counted.add(&rows);
        }
        rows
    }

    /// Rows parsed and not yet handed over.
    pub fn pending(&self) -> usize {
        self.builder.len()
    }

    /// Whether the rows handed over so far came in time order.
    pub fn in_order(&self) -> bool {
        self.builder.out_of_order == 0
    }

    /// Reads the rest into `counted` and returns the summary and report [`Self::finish`] then
    /// `summarize` would give (`start_ns` in the file's clock).
    pub fn finish_summary(mut self, mut counted: Counted) -> Result<(Summary, ReadReport)> {
        while self.count_some(1 << 20, &mut counted)? {}
        let mut report = self.end();
        counted.add(&self.builder.take());
        if counted.total.rows() == 0 {
            return Err(self.empty(&report));
        }
        let recorded = self.latencies_recorded(counted.known, counted.nonzero, &mut report);
        report.start_ns = counted.total.start_ns().unwrap_or(0);
        report.requests = counted.total.rows();
        let volumes = self.builder.volumes.names.clone();
        Ok((counted.total.latency(recorded).finish(&volumes), report))
    }

    /// Ends the parse at the end of the input: a parser may hold requests back until then
    /// (blkparse's unmatched events), which become rows to take.
    pub fn end_parse(&mut self) {
        if !self.ended {
            self.ended = true;
            self.parser.finish(&mut self.builder);
        }
    }

    /// Ends the parse and takes its report.
    fn end(&mut self) -> ReadReport {
        self.end_parse();
        let mut report = std::mem::take(&mut self.report);
        report.out_of_order = self.builder.out_of_order;
        report.stream_names = std::mem::take(&mut self.builder.stream_names);
        report.latency_phases = std::mem::take(&mut self.builder.latency_phases);
        report
    }

    /// The error of a file that gave no request, saying why.
    fn empty(&self, report: &ReadReport) -> Error {
        let why = if report.skipped_total() > 0 {
            format!(
                "all {} request lines were malformed and skipped",
                report.skipped_total()
            )
        } else if report.records > 0 {
            let kinds: Vec<String> = report.ignored.iter().map(|(k, n)| format!("{n} {k}")).collect();
            format!(
                "{} lines read, none a request: {}",
                report.records,
                kinds.join(", ")
            )
        } else {
            "the file is empty".into()
        };
        Error::Empty {
            path: self.path.clone(),
            why,
        }
    }

    /// Whether the file's response times count, from whether any is `known` and any `nonzero`:
    /// a format that can carry them but whose file had none (vscsi v1, blkparse with no
    /// completions) has none; all zero, they were not recorded (MSR files from some tools),
    /// which the report notes; iomimic's own files say what they mean.
    fn latencies_recorded(&self, known: bool, nonzero: bool, report: &mut ReadReport) -> bool {
        if !known {
            return false;
        }
        if !nonzero && self.format.name() != super::canonical::FORMAT.name {
            report
                .notes
                .push("every response time in the file is 0: taken as not recorded".into());
            return false;
        }
        true
    }
}

/// What [`TraceReader::count_some`] has counted of a file's rows so far.
#[derive(Debug, Default)]
pub struct Counted {
    total: PartialSummary,
    /// Whether any response time was known, and any known one not 0.
    known: bool,
    nonzero: bool,
}

impl Counted {
    fn add(&mut self, rows: &Trace) {
        if let Some(l) = &rows.latency_ns {
            self.known |= l.iter().any(|&v| v != LATENCY_UNKNOWN);
            self.nonzero |= l.iter().any(|&v| v != 0 && v != LATENCY_UNKNOWN);
        }
        self.total.add(PartialSummary::of(&rows.view(), 0..rows.len()));
    }
}

/// The file as a sequence of blocks that each end on a record boundary.
struct BlockSource {
    path: PathBuf,
    input: Box<dyn Read + Send>,
    framing: Split,
    /// Bytes read past the last complete record, to start the next block with.
    carry: Vec<u8>,
    eof: bool,
}

impl BlockSource {
    fn is_done(&self) -> bool {
        self.eof && self.carry.is_empty()
    }

    /// Adds blocks to `blocks` until it holds `count` or the input ends.
    fn fill(&mut self, blocks: &mut Vec<Vec<u8>>, count: usize) -> Result<()> {
        while blocks.len() < count {
            match self.next_block()? {
                Some(block) => blocks.push(block),
                None => break,
            }
        }
        Ok(())
    }

    /// The next run of complete records, or `None` at the end of the input.
    fn next_block(&mut self) -> Result<Option<Vec<u8>>> {
        let mut block = std::mem::take(&mut self.carry);
        let mut want = BLOCK.max(block.len());
        loop {
            if !self.eof && block.len() < want {
                let start = block.len();
                block.resize(want, 0);
                let n = input::read_full(&mut self.input, &mut block[start..])
                    .map_err(|e| Error::reading(&self.path, e))?;
                block.truncate(start + n);
                self.eof = start + n < want;
            }
            if self.eof {
                return Ok((!block.is_empty()).then_some(block));
            }
            let end = match self.framing {
                Split::Lines => memchr::memrchr(b'\n', &block).map(|i| i + 1),
                Split::Fixed(n) => Some(block.len() / n * n).filter(|&e| e > 0),
            };
            if let Some(end) = end {
                self.carry = block[end..].to_vec();
                block.truncate(end);
                return Ok(Some(block));
            }
            // A record longer than a block: read on until it ends.
            want = block.len() + BLOCK;
        }
    }
}

/// Reads a whole trace: the usual entry point.
pub fn read_trace(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<(Trace, ReadReport)> {
    TraceReader::open(path, opts)?.finish()
}

fn parse_block(
    block: &[u8],
    framing: Split,
    parser: &mut dyn RecordParser,
    out: &mut Builder,
    stats: &mut BlockStats,
    skip_bad: bool,
) {
    match framing {
        Split::Lines => {
            let body = block.strip_suffix(b"\n").unwrap_or(block);
            let ends = memchr::memchr_iter(b'\n', body).chain(std::iter::once(body.len()));
            let mut start = 0;
            for end in ends {
                let mut line = &body[start..end];
                start = end + 1;
                if let [rest @ .., b'\r'] = line {
                    line = rest;
                }
                let outcome = if line.iter().all(u8::is_ascii_whitespace) {
                    Ok(Outcome::Ignored("blank"))
                } else {
                    parser.parse(line, out)
                };
                if !stats.record(outcome, skip_bad) {
                    return;
                }
            }
        }
        Split::Fixed(size) => {
            let mut records = block.chunks_exact(size);
            for record in &mut records {
                if !stats.record(parser.parse(record, out), skip_bad) {
                    return;
                }
            }
            let rest = records.remainder();
            if !rest.is_empty() {
                let e = LineError::new(
                    "truncated_record",
                    format!(
                        "{} bytes at the end do not make a whole {size}-byte record",
                        rest.len()
                    ),
                );
                stats.record(Err(e), skip_bad);
            }
        }
    }
}

/// The file name without directories and without compression and trace extensions.
pub(crate) fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned());
    let mut stem = name.as_str();
    for ext in [".gz", ".zst", ".zstd", ".csv", ".txt", ".trace", ".bin", ".vscsi"] {
        if let Some(s) = stem.strip_suffix(ext) {
            stem = s;
        }
    }
    if stem.is_empty() {
        name
    } else {
        stem.to_string()
    }
}
