"""Reading and writing traces: every format in, Parquet or canonical CSV out."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from iomimic import _core, remote
from iomimic.errors import InputError
from iomimic.remote import GLOB_CHARS, origin
from iomimic.trace import DTYPES, Trace, _Columns

PARQUET_MAGIC = b"PAR1"
#: Rows parsed between progress updates.
CHUNK_ROWS = 1 << 20

ProgressCallback = Callable[[int, int], None]


def formats() -> list[tuple[str, str]]:
    """Every format iomimic reads, as (name, description).

    >>> ("msr", "MSR Cambridge") in [(n, d[:13]) for n, d in formats()]
    True
    """
    return list(_core.format_table())


def _is_parquet(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == PARQUET_MAGIC


def read_trace(
    path: str | os.PathLike,
    format: str | None = None,
    *,
    skip_bad: bool = False,
    time_unit: str | None = None,
    event: str | None = None,
    columns: str | None = None,
    delimiter: str | None = None,
    progress: ProgressCallback | None = None,
    volume_names: str = "records",
) -> Trace:
    """Reads a trace file of any supported format (gzip and zstd are undone transparently).

    Parameters
    ----------
    path
        The trace file; or a directory or a glob (``msr/*.csv.gz``) of files read as one trace,
        in time order (each file's times on one clock by its first request); or a URL of either
        that pyarrow's filesystems read (``s3://bucket/msr/*.csv.gz``; :mod:`iomimic.remote`).
    format
        A format name from :func:`formats`; detected from the content when omitted.
    skip_bad
        Skip malformed lines (counted in ``trace.report["skipped"]``) instead of raising
        :class:`~iomimic.errors.TraceParseError` at the first one.
    time_unit
        ``ns``, ``us``, ``ms`` or ``s``: the time unit of ``mqsim``/``disksim`` files (and the
        default for ``generic`` time columns).
    event
        blkparse only: ``D`` (default) or ``Q``, the action that marks a request.
    columns, delimiter
        ``generic`` only: the column mapping (e.g. ``ts=0:us,offset=1,size=2,op=3``) and separator.
    progress
        Called as ``progress(bytes_done, bytes_total)`` while reading.
    volume_names
        Several files only: ``records`` (default) names volumes as the records do, so a volume
        of one name in several files is one volume (a trace split by time); ``file`` prefixes
        each file's volume names with the file's name (``sda:0``), for files of one device each
        whose records do not say which.

    Returns
    -------
    Trace
        Sorted by time, relative to the first request; ``trace.report`` says what was found.

    Examples
    --------
    >>> import gzip, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "hm_0.csv.gz")
    >>> with gzip.open(path, "wt") as f:
    ...     _ = f.write("128166372003061629,hm,0,Read,3216723968,4096,1557\\n")
    >>> t = read_trace(path)
    >>> t.report["format"], len(t), t.volumes, int(t.latency_ns[0])
    ('msr', 1, ['hm_0'], 155700)
    """
    reading = dict(
        skip_bad=skip_bad,
        time_unit=time_unit,
        event=event,
        columns=columns,
        delimiter=delimiter,
        progress=progress,
        volume_names=volume_names,
    )
    if remote.is_url(path):
        with remote.local_copy(str(path)) as local:
            return read_trace(local, format, **reading)
    trace = _read_local(Path(path), format, **reading)
    remote.name_origin(trace.report, path)
    return trace


def _read_local(
    path: Path,
    format: str | None,
    *,
    skip_bad: bool,
    time_unit: str | None,
    event: str | None,
    columns: str | None,
    delimiter: str | None,
    progress: ProgressCallback | None,
    volume_names: str,
) -> Trace:
    """:func:`read_trace` of a local path."""
    if columns is not None and format is None:
        format = "generic"  # a column mapping describes a generic CSV
    parts = trace_parts(path)
    if parts is not None:
        options = dict(
            skip_bad=skip_bad, time_unit=time_unit, event=event, columns=columns, delimiter=delimiter
        )
        return _read_parts(path, parts, format, volume_names, progress, options)
    if format == "parquet" or (format is None and path.is_file() and _is_parquet(path)):
        return _read_parquet(path)
    reader = _core.TraceReader(
        path,
        format=format,
        skip_bad=skip_bad,
        time_unit=time_unit,
        event=event,
        columns=columns,
        delimiter=delimiter,
    )
    _in_chunks(reader, reader.read_some, progress)
    return Trace._from_reader(reader.finish())


def _in_chunks(reader, step: Callable[[int], bool], progress: ProgressCallback | None) -> None:
    """Calls ``step(CHUNK_ROWS)`` of ``reader`` until its input ends, telling ``progress`` after
    each: a chunk at a time, the GIL released inside each, so Python sees Ctrl-C between chunks
    (a whole file read in one call would hear it only at the end)."""
    while step(CHUNK_ROWS):
        if progress is not None:
            progress(*reader.progress())
    if progress is not None:
        progress(*reader.progress())


def trace_parts(path: Path) -> list[Path] | None:
    """The files a directory or a glob names, in name order; None for one file."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise InputError(f"{path}: the directory holds no trace files")
        return files
    text = str(path)
    if path.exists() or not GLOB_CHARS & set(text):
        return None
    import glob

    files = sorted(Path(p) for p in glob.glob(text) if Path(p).is_file())
    if not files:
        raise InputError(f"{text}: no file matches")
    return files


def _read_parts(
    path: Path,
    files: list[Path],
    format: str | None,
    volume_names: str,
    progress: ProgressCallback | None,
    options: dict[str, Any],
) -> Trace:
    """The files as one trace (see :func:`iomimic.read_trace`)."""
    _check_volume_names(volume_names)
    sizes = [f.stat().st_size for f in files]
    total, done = sum(sizes), 0
    parts, reports = [], []
    for file, size in zip(files, sizes, strict=True):
        step = None if progress is None else lambda d, _t, base=done: progress(base + d, total)
        t = read_trace(file, format, progress=step, **options)
        done += size
        prefix = _prefix(file, volume_names)
        parts.append((*t._core_args(), int(t.report.get("start_ns") or 0), prefix))
        reports.append(t.report)
    merged = Trace._from_reader(_core.merge_traces(parts))
    merged.report = _merged_report(path, files, reports, len(merged))
    return merged


def _check_volume_names(volume_names: str) -> None:
    if volume_names not in ("records", "file"):
        raise InputError(f"`volume_names` must be records or file, found {volume_names!r}")


def _prefix(file: Path, volume_names: str) -> str | None:
    """What a file's volume names are prefixed with when it is one of several."""
    return file.name.split(".")[0] if volume_names == "file" else None


def _merged_report(path: Path, files: list[Path], reports: list[dict[str, Any]], requests: int) -> dict:
    """The read report of several files read as one trace, from each file's."""
    formats = sorted({r["format"] for r in reports})
    return {
        "path": str(path),
        "format": formats[0] if len(formats) == 1 else ",".join(formats),
        "compression": None,
        "files": [str(f) for f in files],
        "records": sum(r.get("records", 0) for r in reports),
        "requests": requests,
        "out_of_order": 0,
        "start_ns": min(int(r.get("start_ns") or 0) for r in reports),
        "skipped": _sum_counts([r.get("skipped", []) for r in reports]),
        "skipped_examples": [e for r in reports for e in r.get("skipped_examples", [])][:10],
        "ignored": _sum_counts([r.get("ignored", []) for r in reports]),
        "notes": [f"{len(files)} files read as one trace", *sorted({n for r in reports for n in r["notes"]})],
    }


def _sum_counts(lists: list[list]) -> list:
    """[(key, count), ...] lists added up by key, in first-seen order."""
    out: dict[Any, int] = {}
    for pairs in lists:
        for key, count in pairs:
            out[key] = out.get(key, 0) + count
    return [[k, v] for k, v in out.items()]


def _read_parquet(path: Path) -> Trace:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        meta = pf.metadata

        # a reader per row group, sharing the parsed footer: the groups are read on a thread
        # per core at once. Arrow's own pool decodes a group's columns on every core too only
        # when the groups are too few to keep the cores busy (a file of one group): with both
        # at once, 10 M rows in 10 groups took 0.66 s instead of 0.54 (threads fighting)
        few = meta.num_row_groups < 4 * (os.cpu_count() or 1)

        def read(i: int):
            return pq.ParquetFile(path, metadata=meta).read_row_group(i, use_threads=few)

        counts = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        trace = Trace.from_arrow_pieces(pf.schema_arrow, read, counts, meta.num_rows)
    except (pa.ArrowInvalid, OSError) as e:
        raise InputError(f"{path}: not a readable Parquet file: {e}") from None
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    trace.report = {
        "path": str(path),
        "format": "parquet",
        "compression": None,
        "records": len(trace),
        "requests": len(trace),
        "out_of_order": 0,
        "start_ns": int(trace.report.get("start_ns") or 0),
        "skipped": [],
        "skipped_examples": [],
        "ignored": [],
        "notes": [],
    }
    return trace


class ParquetPieces:
    """A Parquet trace to be issued a row group at a time, so a long one is never all in
    memory: what a run needs to know up front (rows, volumes, time span, whether it writes,
    how far each volume reaches) comes from one pass over four columns, then :meth:`pieces`
    yields each row group's columns with times as stored.

    ``open`` returns None when the file does not suit (columns not of the Trace's types, or
    times not in order): then the trace is read whole as usual."""

    def __init__(self, pf, volumes: list[str], files: list[str], path: Path | None = None) -> None:
        self._pf = pf
        self._path = path
        self.volumes, self.files = volumes, files
        self.rows = pf.metadata.num_rows
        self.first_ts = self.last_ts = 0
        self.write = False
        self.reach = np.zeros(max(len(volumes), 1), dtype=np.uint64)

    @classmethod
    def open(cls, path: str | os.PathLike) -> ParquetPieces | None:
        import pyarrow.parquet as pq

        from iomimic.trace import grow_reach

        path = Path(path)
        lay = _parquet_layout(path)
        if lay is None:
            return None
        pf = pq.ParquetFile(path, metadata=lay["meta"])
        self = cls(pf, lay["volumes"], lay["files"], path)
        previous = None
        for i in range(pf.num_row_groups):
            g = pf.read_row_group(i, columns=["ts_ns", "offset", "size", "op", "volume"])
            ts = g.column("ts_ns").to_numpy()
            if (previous is not None and ts[0] < previous) or bool((ts[1:] < ts[:-1]).any()):
                return None
            if previous is None:
                self.first_ts = int(ts[0])
            previous = self.last_ts = int(ts[-1])
            self.write = self.write or bool((g.column("op").to_numpy() == 1).any())
            volume = g.column("volume").to_numpy()
            if int(volume.max()) >= len(self.volumes):
                return None
            grow_reach(self.reach, g.column("offset").to_numpy(), g.column("size").to_numpy(), volume)
        return self

    def pieces(self) -> Iterator[dict[str, np.ndarray]]:
        for i in range(self._pf.num_row_groups):
            g = self._pf.read_row_group(i)
            n = g.num_rows
            cols = {c: g.column(c).to_numpy() for c in DTYPES if c in g.column_names and c != "latency_ns"}
            cols.setdefault("stream", np.zeros(n, np.uint32))
            # each piece holds the Trace's invariants, as a file read whole would (op codes,
            # offsets past 2^63, sizes of 0)
            try:
                _core.validate(_Columns(cols), self.volumes, self.files)
            except InputError as e:
                raise InputError(f"{self._path}: row group {i}: {e}") from None
            yield cols


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """Yields a temporary path beside ``path`` and moves it into place only on success, so a
    failed or interrupted write never leaves a partial file that looks complete."""
    path = Path(path)
    if path.exists() and not path.is_file():
        # /dev/null, a FIFO, a terminal: written in place (replacing one would be wrong)
        yield path
        return
    if not path.parent.is_dir():
        raise InputError(f"{path}: the folder {path.parent} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent or ".")
    except OSError as e:
        # the error names the file asked for, not the temporary one beside it
        raise InputError(f"{path}: cannot be written there ({e.strerror})") from None
    os.close(fd)
    # mkstemp makes the file private; give it the mode a plain open() would
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def refuse_overwriting_inputs(inputs: dict[str, str], outputs: dict[str, str]) -> None:
    """Raises InputError when an output would be the same file as an input: the same device
    and inode, so a hard link or a symlink to the input counts too. Keys name the parameters
    (shown in backquotes, which the CLI turns into its flags)."""
    seen: dict[tuple[int, int], tuple[str, str, str]] = {}
    for name, given in inputs.items():
        if given in (None, "-"):
            continue
        # a directory or a glob is read as its files: each of them is an input
        try:
            paths = [str(p) for p in trace_parts(Path(given)) or [given]]
        except (InputError, OSError, ValueError):
            paths = [given]
        for path in paths:
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(st.st_mode):
                seen.setdefault((st.st_dev, st.st_ino), (name, path, given))
    written: dict[str, str] = {}
    for name, path in outputs.items():
        if path in (None, "-"):
            continue
        # two outputs of one command at one path: the second would replace the first
        if not name.startswith("map["):
            other = written.setdefault(os.path.realpath(path), name)
            if other != name:
                raise InputError(
                    f"{path}: the outputs `{other}` and `{name}` are the same file; choose two paths"
                )
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        hit = seen.get((st.st_dev, st.st_ino))
        if hit:
            same = "" if os.path.abspath(path) == os.path.abspath(hit[1]) else f"the same file as {hit[1]}, "
            part = "" if hit[1] == hit[2] else f"a file of {hit[2]}, "
            raise InputError(
                f"{path}: the output `{name}` is {same}{part}the input `{hit[0]}`; writing it would destroy "
                "the input, so choose another path"
            )


OUTPUT_FORMATS = ("parquet", "csv", "csv.gz")


#: The output formats by the ends of a file's name.
_OUTPUT_NAMES = (("parquet", (".parquet", ".pq")), ("csv", (".csv",)), ("csv.gz", (".csv.gz", ".csv.gzip")))


def output_format(path: str | os.PathLike, to: str | None = None) -> str:
    """``parquet``, ``csv`` or ``csv.gz`` (canonical CSV, gzip-compressed), from ``to`` or else
    the output file's extension."""
    name = Path(path).name.lower()
    named = next((fmt for fmt, ends in _OUTPUT_NAMES if name.endswith(ends)), None)
    if to is not None:
        if to not in OUTPUT_FORMATS:
            raise InputError(f"cannot write format {to!r}; iomimic writes {', '.join(OUTPUT_FORMATS)}")
        if named is not None and named != to:
            # a file named .parquet holding CSV would be misread by every tool that trusts names
            raise InputError(f"{path}: the name says {named}, the format asked for is {to}: make them agree")
        return to
    if named is not None:
        return named
    raise InputError(
        f"{path}: cannot tell the output format from the extension {Path(path).suffix!r}; "
        "name it .parquet, .csv or .csv.gz"
    )


def write_trace(trace: Trace, path: str | os.PathLike, format: str | None = None) -> None:
    """Writes ``trace`` as Parquet or iomimic's canonical CSV, plain or gzip-compressed (chosen
    by extension or ``format``). Each reads back into an equal Trace.

    >>> import tempfile, os
    >>> t = Trace(ts_ns=[0, 5], offset=[0, 4096], size=[4096, 4096], op=[0, 1], volumes=["sda"])
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> write_trace(t, path)
    >>> read_trace(path) == t
    True
    """
    _write_file([trace], path, output_format(path, format))


@dataclasses.dataclass
class Written:
    """What :func:`write_trace_parts` wrote."""

    requests: int
    span_ns: int
    files: list[Path]


#: The files :func:`write_trace_parts` names in a directory.
PART_NAME = re.compile(r"^part-\d{5,}\.(parquet|csv|csv\.gz)$")


def is_directory_target(path: str | os.PathLike) -> bool:
    """Whether an output path names a directory: one that exists, or a path ending in ``/``."""
    text = os.fspath(path)
    return text.endswith(("/", os.sep)) or Path(text).is_dir()


def write_trace_parts(parts: Iterable[Trace], path: str | os.PathLike, format: str | None = None) -> Written:
    """Writes consecutive parts of one trace (a generation's slices, say) as they come, holding
    one at a time: into one file (as :func:`write_trace` would write them joined), or, when
    ``path`` is a directory (one that exists, or a path ending in ``/``), as one file each,
    ``part-00000.parquet`` and on, which :func:`read_trace` reads back as one trace. Either
    appears only once complete. A directory that exists may hold only such parts (a previous
    run's, which the new ones replace whole)."""
    if not is_directory_target(path):
        return _write_file(parts, path, output_format(path, format))
    fmt = output_format(path, format or "parquet")
    files = []
    requests = span = 0
    with atomic_directory(path) as tmp:
        for part in parts:
            if not len(part):
                continue
            name = f"part-{len(files):05d}.{fmt}"
            _write_file([part], tmp / name, fmt, atomic=False)
            files.append(Path(path) / name)
            requests, span = requests + len(part), int(part.ts_ns[-1])
        if not files:
            raise InputError(f"{path}: refusing to write an empty trace (it could not be read back)")
    return Written(requests, span, files)


def _write_file(parts: Iterable[Trace], path: str | os.PathLike, fmt: str, atomic: bool = True) -> Written:
    """The parts joined into one file of format ``fmt``, written as they come."""
    requests = span = 0
    with atomic_output(path) if atomic else contextlib.nullcontext(Path(path)) as tmp:
        writer = None
        try:
            for part in parts:
                if not len(part):
                    continue
                if fmt == "parquet":
                    import pyarrow.parquet as pq

                    table = part.to_arrow()
                    if writer is None:
                        writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
                    writer.write_table(table)
                else:
                    _core.write_csv(tmp, *part._core_args(), gzip=fmt == "csv.gz", append=requests > 0)
                requests, span = requests + len(part), int(part.ts_ns[-1])
        finally:
            if writer is not None:
                writer.close()
        if not requests:
            raise InputError(f"{path}: refusing to write an empty trace (it could not be read back)")
    return Written(requests, span, [Path(path)])


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Yields a new directory beside ``path`` to fill, and puts it in place of ``path`` only on
    success (a directory of parts there before is replaced whole, never mixed with new parts)."""
    path = Path(os.fspath(path).rstrip("/") or "/")
    if path.exists():
        if not path.is_dir():
            raise InputError(f"{path}: exists and is not a directory")
        others = sorted(p.name for p in path.iterdir() if not PART_NAME.match(p.name))
        if others:
            raise InputError(
                f"{path}: the directory holds files iomimic did not write as parts ({others[0]}"
                f"{', ...' if len(others) > 1 else ''}); choose a new or empty directory"
            )
    if not path.parent.is_dir():
        raise InputError(f"{path}: the folder {path.parent} does not exist")
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    try:
        yield tmp
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old / path.name)
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def summary(trace: Trace) -> dict[str, Any]:
    """The figures ``iomimic info`` prints: counts, bytes, span, volumes and what reading found."""
    report = trace.report
    skipped = dict(report.get("skipped", []))
    return {
        "path": report.get("path"),
        "format": report.get("format"),
        "compression": report.get("compression"),
        **_core.summarize(*trace._core_args()),
        "lines": report.get("records"),
        "out_of_order": report.get("out_of_order", 0),
        "skipped": sum(skipped.values()),
        "skipped_by_reason": skipped,
        "skipped_examples": report.get("skipped_examples", []),
        "ignored_by_reason": dict(report.get("ignored", [])),
        "start_ns": report.get("start_ns", 0),
        "notes": report.get("notes", []),
        "stream_names": {str(k): v for k, v in sorted(trace.stream_names.items())},
        "latency_phases": {name: figures for name, figures in report.get("latency_phases", [])},
    }


def text_summary(
    path: str | os.PathLike,
    format: str | None = None,
    *,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> dict[str, Any] | None:
    """:func:`summary` of one trace file in a text or binary format, counted a chunk of rows at
    a time as it is parsed and dropped: memory holds a chunk whatever the file's length, and the
    figures are those of the file read whole. ``options`` are :func:`read_trace`'s (skip_bad,
    time_unit, event, columns, delimiter). None when ``path`` is not one such file (a
    directory, a glob, Parquet): read it whole then."""
    reader = open_text(path, format, **options)
    if reader is None:
        return None
    _in_chunks(reader, reader.count_some, progress)
    return counted_summary(path, *reader.finish_summary())


def open_text(path: str | os.PathLike, format: str | None = None, **options: Any):
    """A ``_core.TraceReader`` of one trace file in a text or binary format (``options`` as
    :func:`read_trace`'s); None when ``path`` is not one such file."""
    path = Path(path)
    if options.get("columns") is not None and format is None:
        format = "generic"
    if format == "parquet" or not path.is_file() or (format is None and _is_parquet(path)):
        return None
    return _core.TraceReader(path, format=format, **options)


def counted_summary(
    path: str | os.PathLike, counts: dict[str, Any], report: dict[str, Any]
) -> dict[str, Any]:
    """:func:`summary`'s figures of a file whose rows a reader counted (``finish_summary``)."""
    skipped = dict(report["skipped"])
    return {
        "path": origin(Path(path)) or report["path"],
        "format": report["format"],
        "compression": report["compression"],
        **counts,
        "lines": report["records"],
        "out_of_order": report["out_of_order"],
        "skipped": sum(skipped.values()),
        "skipped_by_reason": skipped,
        "skipped_examples": report["skipped_examples"],
        "ignored_by_reason": dict(report["ignored"]),
        "start_ns": report["start_ns"],
        "notes": report["notes"],
        "stream_names": {str(k): v for k, v in sorted(report["stream_names"].items())},
        "latency_phases": {name: figures for name, figures in report["latency_phases"]},
    }


def parquet_summary(path: str | os.PathLike) -> dict[str, Any] | None:
    """:func:`summary` of a Parquet trace (a file, or a directory or glob of files with the same
    name tables, such as the parts ``generate -o DIR/`` writes), counted a row group at a time
    on every core without building the Trace: memory holds a row group per core whatever the
    trace's length, and the figures are those of the trace read whole (counts add up exactly;
    the span runs from the earliest time to the latest). None when the files do not suit (not
    Parquet; columns not of the Trace's types or names not in iomimic's metadata; files naming
    their volumes differently; a row that breaks the Trace's rules): reading the trace whole
    then gives the figures or names the fault."""
    import pyarrow as pa

    from iomimic.trace import _on_threads

    path = _location(path)
    layouts = _parquet_layouts(path)
    if layouts is None:
        return None
    first = layouts[0]
    volumes, names = first["volumes"], first["files"]
    pieces = [(lay, i) for lay in layouts for i in range(lay["meta"].num_row_groups)]
    few = len(pieces) < 4 * (os.cpu_count() or 1)  # see _read_parquet
    parts = _core.SummaryParts()

    def count(piece: int) -> bool:
        lay, i = pieces[piece]
        # only whether latencies are there counts: their column is left unread
        counted = [c for c in lay["present"] if c != "latency_ns"]
        g = _parquet_file(lay).read_row_group(i, columns=counted, use_threads=few)
        cols = {c: _arrow_column(g.column(c), DTYPES[c]) for c in counted}
        if any(v is None for v in cols.values()):
            return False
        cols.setdefault("stream", np.zeros(g.num_rows, np.uint32))
        return parts.add(_Columns(cols), volumes, names, has_latency="latency_ns" in lay["present"])

    try:
        if not all(_on_threads(count, len(pieces))):
            return None
    except (pa.ArrowInvalid, OSError):
        return None
    rows = sum(lay["meta"].num_rows for lay in layouts)
    return {
        "path": origin(path) or str(path),
        "format": "parquet",
        "compression": None,
        **parts.finish(volumes),
        "lines": rows,
        "out_of_order": 0,
        "skipped": 0,
        "skipped_by_reason": {},
        "skipped_examples": [],
        "ignored_by_reason": {},
        "start_ns": parts.start_ns or 0,
        "notes": [f"{len(layouts)} files read as one trace"] if len(layouts) > 1 else [],
        "stream_names": first["streams"],
        "latency_phases": {},
    }


class OutOfOrder(Exception):
    """A row group of a Parquet trace read in pieces lies before the one read last."""


def parquet_traces(
    path: str | os.PathLike, groups: range | None = None, start_ns: int | None = None
) -> Iterator[Trace] | None:
    """A Parquet trace (a file, or a directory or glob of files naming volumes alike, such as
    generated parts) as one Trace per row group, in order, times counted from the trace's first
    request: what the whole read would give, cut in pieces, without holding more than one. None
    when the files do not suit (see :func:`parquet_summary`); the iteration raises
    :class:`OutOfOrder` at a row group whose times go back (the trace must then be read whole,
    which sorts it) and InputError, naming the file and row group, at a row that breaks the
    Trace's rules.

    ``groups``: only these row groups, numbered across the files in order (the others are not
    read); their times are then counted from ``start_ns`` (the trace's first request's, which
    they may not hold) when given."""

    from iomimic.trace import _copy_column

    path = _location(path)
    layouts = _parquet_layouts(path)
    if layouts is None:
        return None

    shown = origin(path) or str(path)

    def pieces() -> Iterator[Trace]:
        start, previous, number = start_ns, None, 0
        for lay in layouts:
            chosen = range(lay["meta"].num_row_groups)
            if groups is not None:
                chosen = range(max(groups.start - number, 0), min(groups.stop - number, len(chosen)))
            number += lay["meta"].num_row_groups
            if not chosen:
                continue
            reader = _parquet_file(lay)
            for i in chosen:
                g = reader.read_row_group(i, columns=lay["present"])
                cols = {}
                for c in lay["present"]:
                    cols[c] = np.empty(g.num_rows, DTYPES[c])
                    _copy_column(c, g.column(c), cols[c])
                if not g.num_rows:
                    continue
                ts = cols["ts_ns"]
                back = (previous is not None and ts[0] < previous) or (start is not None and ts[0] < start)
                if bool((ts[1:] < ts[:-1]).any()) or back:
                    raise OutOfOrder(f"{lay['path']}: row group {i}")
                start = int(ts[0]) if start is None else start
                previous = int(ts[-1])
                cols["ts_ns"] = ts - np.uint64(start)
                cols.setdefault("stream", np.zeros(g.num_rows, np.uint32))
                report = {"stream_names": lay["streams"], "start_ns": start}
                try:
                    t = Trace._from_reader(
                        {**cols, "volumes": lay["volumes"], "files": lay["files"], "report": report}
                    )
                except InputError as e:
                    raise InputError(f"{lay['path']}: row group {i}: {e}") from None
                t.report = {"format": "parquet", "path": shown, "start_ns": start}
                yield t

    return pieces()


def parquet_row_groups(layouts: list[dict[str, Any]]) -> list[int]:
    """The rows of each row group of the files of :func:`_parquet_layouts`, numbered across
    them in order (as ``parquet_traces(groups=)`` numbers them), from the footers."""
    return [lay["meta"].row_group(i).num_rows for lay in layouts for i in range(lay["meta"].num_row_groups)]


def parquet_first_time(layouts: list[dict[str, Any]]) -> int | None:
    """The first time of a Parquet trace in time order (the files of :func:`_parquet_layouts`):
    the least of its first row group with rows, from the footer's statistics (no data read, a
    URL's included); None when the footer has none."""
    for lay in layouts:
        meta = lay["meta"]
        for i in range(meta.num_row_groups):
            group = meta.row_group(i)
            if group.num_rows == 0:
                continue
            for j in range(group.num_columns):
                column = group.column(j)
                if column.path_in_schema == "ts_ns":
                    stats = column.statistics
                    return int(stats.min) if stats is not None and stats.has_min_max else None
            return None
    return None


def _parquet_layouts(path: str | Path) -> list[dict[str, Any]] | None:
    """The :func:`_parquet_layout` of each file ``path`` names (itself, or a directory's or a
    glob's), in name order; None unless every one is a Parquet trace and all name alike. A URL
    (``s3://…``) is read in place through pyarrow's filesystems, its footers only."""
    try:
        if remote.is_url(path):
            fs, names, _ = remote._files(str(path))
            layouts = [_parquet_layout(name, fs) for name in names]
        else:
            path = Path(path)
            layouts = [_parquet_layout(f) for f in trace_parts(path) or [path]]
    except InputError:
        return None
    if any(lay is None for lay in layouts) or len({lay["names"] for lay in layouts}) != 1:
        return None
    return layouts


def _location(path: str | os.PathLike) -> str | Path:
    """A trace argument as the Parquet readers take it: a URL as it is, a local path as a Path."""
    return path if remote.is_url(path) else Path(path)


def _parquet_file(lay: dict[str, Any]):
    """A reader of the file of layout ``lay``, its footer already parsed."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(lay["path"], metadata=lay["meta"], filesystem=lay["fs"])


def _parquet_layout(path: str | Path, fs=None) -> dict[str, Any] | None:
    """What :func:`parquet_summary` needs of one file (``path`` in the filesystem ``fs``, a
    local path without one): its metadata, columns and name tables; None when it is not a
    Parquet trace with the Trace's column types and iomimic's names."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from iomimic.trace import _schema_names

    try:
        if fs is None:
            if not (Path(path).is_file() and _is_parquet(Path(path))):
                return None
        else:
            with fs.open_input_file(path) as f:
                if f.read(4) != PARQUET_MAGIC:
                    return None
        pf = pq.ParquetFile(path, filesystem=fs)
        schema, meta = pf.schema_arrow, pf.metadata
        names = _schema_names(schema)
    except (pa.ArrowInvalid, OSError, InputError):
        return None
    present = [c for c in DTYPES if c in schema.names]
    volumes, files = names["volume"], names["file"]
    if (
        not {"ts_ns", "offset", "size", "op", "volume"} <= set(present)
        or any(schema.field(c).type != pa.from_numpy_dtype(np.dtype(DTYPES[c])) for c in present)
        or not volumes
        or (files is None and "file" in present)
        or meta.num_rows == 0
    ):
        return None
    streams = {str(k): str(v) for k, v in sorted((names["stream"] or {}).items(), key=lambda kv: int(kv[0]))}
    return {
        "path": path,
        "fs": fs,
        "meta": meta,
        "present": present,
        "volumes": volumes,
        "files": files or [],
        "streams": streams,
        # files of one trace name everything alike
        "names": repr((volumes, files or [], streams)),
    }


def _arrow_column(column, dtype) -> np.ndarray | None:
    """A column of a row group as numpy, read in place when it is one chunk without nulls;
    None when it holds nulls (not allowed outside latency_ns)."""
    if column.null_count:
        return None
    chunk = column.chunks[0] if column.num_chunks == 1 else column.combine_chunks()
    data = chunk.buffers()[1]
    return np.frombuffer(data, dtype, len(chunk), chunk.offset * np.dtype(dtype).itemsize)
