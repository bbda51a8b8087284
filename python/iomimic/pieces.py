"""Traces read a piece at a time, never held whole: files of text formats read as one trace
(a directory or glob, as :func:`iomimic.read_trace` reads them) counted file by file or merged
in time order a chunk of each at a time; the time-ordered pieces a simulation takes, and the
passes over them training takes; and the estimate that tells whether a trace surely fits in
memory read whole (docs/scale.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from iomimic import _core, io, remote
from iomimic.errors import InputError
from iomimic.io import ProgressCallback
from iomimic.remote import is_url
from iomimic.trace import DTYPES, LATENCY_UNKNOWN, REQUIRED, STATUS_OK, _Columns


def text_parts_summary(
    path: str | os.PathLike,
    format: str | None = None,
    *,
    volume_names: str = "records",
    progress: ProgressCallback | None = None,
    **options: Any,
) -> dict[str, Any] | None:
    """:func:`iomimic.io.summary` of a directory or glob of trace files in text or binary formats, read as
    one trace (:func:`iomimic.read_trace`), each file counted a chunk of parsed rows at a time: memory
    holds a chunk whatever the files' length, and the figures are those of the files read whole
    and merged (the counts add up, volumes of one name are one, stream ids are shared, the span
    runs from the earliest time to the latest on the files' own clocks, as the merge places
    them). None when ``path`` names one file or a Parquet file is among them."""
    parts = TextParts.of(path, format, volume_names=volume_names, **options)
    if parts is None:
        return None
    total = _core.SummaryParts()
    for piece in parts.by_file(progress):
        if not total.add(*piece):
            return None  # a row the Trace refuses: reading whole names it
    return parts.summary(total)


class TextParts:
    """Trace files of text or binary formats read as one trace, as :func:`iomimic.read_trace` reads a
    directory or glob, a chunk of parsed rows at a time and never whole: first file after file
    (:meth:`by_file`: for what does not depend on order, a summary's counts or a survey), then,
    when asked, merged in time order (:meth:`in_time_order`), which the first pass prepares by
    learning every file's names. Pieces are (columns, volume names, file names), with the
    volumes numbered as the merge of the files read whole numbers them."""

    def __init__(self, path: Path, files: list[Path], format: str | None, volume_names: str, options: dict):
        self.path, self.files, self.format = path, files, format
        self.volume_names, self.options = volume_names, options
        self.volumes: dict[str, int] = {}  # the merged table: each file's names in turn
        # per file, learnt by by_file: its volume ids in the merged table, its file names,
        # which optional columns it has, whether its rows came in time order, its read report
        self.volume_ids: list[np.ndarray] = []
        self.file_names: list[list[str]] = []
        self.columns: list[set[str]] = []
        self.in_order: list[bool] = []
        self.reports: list[dict[str, Any]] = []

    @classmethod
    def of(
        cls,
        path: str | os.PathLike,
        format: str | None = None,
        *,
        volume_names: str = "records",
        one_file: bool = False,
        **options,
    ) -> TextParts | None:
        """The files of a directory or glob (with ``one_file``, a file alone too); None for one
        file, or when one of them is Parquet."""
        path = Path(path)
        files = io.trace_parts(path)
        if files is None and one_file and path.is_file():
            files, volume_names = [path], "records"  # a file alone is named by its records
        if files is None or format == "parquet" or (format is None and any(io._is_parquet(f) for f in files)):
            return None
        io._check_volume_names(volume_names)
        if options.get("columns") is not None and format is None:
            format = "generic"
        return cls(path, files, format, volume_names, options)

    def _chunks(self, file: Path, rows: int, count: bool) -> Iterator[tuple[Any, dict[str, Any]]]:
        """(reader, rows taken) for each chunk of about ``rows`` rows of ``file``; with
        ``count`` the reader counts them for its ``finish_summary``."""
        reader = _core.TraceReader(file, format=self.format, **self.options)
        more = True
        while more:
            more = reader.read_some(rows)
            if not more:
                reader.end_parse()  # the requests a parser held back become the last rows
            yield reader, reader.take_rows(count=count)

    def by_file(self, progress: ProgressCallback | None = None) -> Iterator[tuple]:
        """Each file's pieces in turn, without their latencies (the files' own order: times go
        back between files). ``progress(bytes, total)`` over all the files."""
        sizes = [f.stat().st_size for f in self.files]
        total, base = sum(sizes), 0
        for file, size in zip(self.files, sizes, strict=True):
            prefix = io._prefix(file, self.volume_names)
            present: set[str] = set()
            for reader, rows in self._chunks(file, io.CHUNK_ROWS, count=True):
                names = [n if prefix is None else f"{prefix}:{n}" for n in rows["volumes"]]
                ids = np.asarray([self.volumes.setdefault(n, len(self.volumes)) for n in names], np.uint32)
                if len(rows["ts_ns"]):
                    cols = _columns_of(rows, exclude="latency_ns")
                    present |= {c for c in ("file", "status") if c in cols}
                    cols["volume"] = ids[rows["volume"]]
                    yield _Columns(cols), list(self.volumes), rows["files"]
                if progress is not None:
                    progress(base + reader.progress()[0], total)
            counts, report = reader.finish_summary()
            if counts["has_latency"]:
                present.add("latency_ns")
            self.volume_ids.append(ids)
            self.file_names.append(rows["files"])
            self.columns.append(present)
            self.in_order.append(bool(rows["in_order"]))
            self.reports.append(report)
            base += size

    def file_table(self) -> tuple[list[str], list[np.ndarray]]:
        """The file names of the files read as one, numbered as their merge numbers them, and
        each file's ids in that table (after :meth:`by_file`)."""
        files: dict[str, int] = {}
        file_ids = []
        for names, columns in zip(self.file_names, self.columns, strict=True):
            ids = [files.setdefault(n, len(files)) for n in names]
            if self.has("file") and "file" not in columns:
                ids = [files.setdefault("", len(files))]  # the name of a file's rows without one
            file_ids.append(np.asarray(ids, np.uint32))
        return list(files), file_ids

    def summary(self, counted) -> dict[str, Any]:
        """:func:`iomimic.io.summary`'s figures from the ``_core.SummaryParts`` of every piece
        of :meth:`by_file`."""
        report = io._merged_report(
            self.path, self.files, self.reports, sum(r["requests"] for r in self.reports)
        )
        counts = {**counted.finish(list(self.volumes)), "has_latency": self.has("latency_ns")}
        return io.counted_summary(self.path, counts, {**report, "stream_names": {}, "latency_phases": []})

    def has(self, column: str) -> bool:
        """Whether the files read as one have ``column`` (any of them has: the rest fill it in)."""
        return any(column in c for c in self.columns)

    def in_time_order(self, progress: ProgressCallback | None = None) -> Iterator[tuple]:
        """The files' rows merged in time order (on the files' own clocks, as a merge of them
        read whole places them; equal times in file order), a piece at a time, after
        :meth:`by_file` went through them. Each file is read a chunk at a time, a chunk of
        each file held at once: every row earlier than the earliest of the files' last rows
        held can go. The files must each be in time order: InputError names one that is not
        (sorting it would take the whole of it)."""
        for file, in_order in zip(self.files, self.in_order, strict=True):
            if not in_order:
                raise InputError(
                    f"{file}: its requests are not in time order, and the trace is too large to sort "
                    "within --memory: raise --memory (about 100 bytes a request)"
                )
        file_names, file_ids = self.file_table()
        volumes = list(self.volumes)
        fill = {"latency_ns": LATENCY_UNKNOWN, "status": STATUS_OK, "file": 0}
        kept = [c for c in ("latency_ns", "file", "status") if self.has(c)]
        step = max(io.CHUNK_ROWS // len(self.files), 1 << 14)  # a chunk of each file is held

        def converted(k: int, rows: dict[str, Any]) -> dict[str, np.ndarray]:
            cols = _columns_of(rows, exclude="")
            n = len(cols["ts_ns"])
            cols["volume"] = self.volume_ids[k][rows["volume"]]
            for c in kept:
                if c not in self.columns[k]:
                    cols[c] = np.full(n, fill[c], DTYPES[c])
            if "file" in kept:
                cols["file"] = file_ids[k][cols["file"]]
            return {c: cols[c] for c in (*REQUIRED, *kept)}

        sources = [self._chunks(f, step, count=False) for f in self.files]
        held: list[dict[str, np.ndarray] | None] = [None] * len(sources)
        live = set(range(len(sources)))
        done = [0] * len(sources)  # bytes of each file parsed
        total = sum(f.stat().st_size for f in self.files)

        def refill(k: int) -> None:
            for reader, rows in sources[k]:
                done[k] = reader.progress()[0]
                if len(rows["ts_ns"]):
                    new = converted(k, rows)
                    old = held[k]
                    held[k] = new if old is None else {c: np.concatenate([old[c], new[c]]) for c in new}
                    return
            live.discard(k)

        def empty(k: int) -> bool:
            return held[k] is None or not len(held[k]["ts_ns"])

        for k in range(len(sources)):
            refill(k)
        while True:
            for k in sorted(live):
                while k in live and empty(k):
                    refill(k)
            if not live and all(empty(k) for k in range(len(held))):
                return
            # rows before the earliest last row held of a file still being read come before any
            # row not yet read
            mark = min(held[k]["ts_ns"][-1] for k in live) if live else None
            taken = []
            for k, cols in enumerate(held):
                if cols is None:
                    continue
                cut = len(cols["ts_ns"]) if mark is None else int(np.searchsorted(cols["ts_ns"], mark))
                if cut:
                    taken.append({c: v[:cut] for c, v in cols.items()})
                    held[k] = {c: v[cut:] for c, v in cols.items()}
            if taken:
                ts = np.concatenate([t["ts_ns"] for t in taken])
                order = np.argsort(ts, kind="stable")  # equal times keep file order
                del ts
                piece = {c: np.concatenate([t[c] for t in taken])[order] for c in taken[0]}
                del taken, order  # a piece's worth held at once, not three
                yield _Columns(piece), volumes, file_names
                del piece
                if progress is not None:
                    progress(sum(done), total)
            for k in list(live):
                if held[k]["ts_ns"][-1] == mark:
                    refill(k)


def time_ordered_pieces(
    path: str | os.PathLike,
    format: str | None = None,
    *,
    volume_names: str = "records",
    progress: ProgressCallback | None = None,
    **options: Any,
) -> tuple[list[str], list[str], Iterator[tuple]]:
    """A trace read a piece at a time in time order, for work that needs its names before its
    rows (a simulation): (volume names, file names, the pieces as (columns, volumes, files)).
    Parquet (a file, or a directory or glob of parts) goes a row group at a time (its names are
    in its footer; a row group back in time raises :class:`iomimic.io.OutOfOrder` on the way); files of
    other formats are parsed a chunk at a time, twice (the first pass learns the names), and
    merged in time order when there are several (:class:`TextParts`): each must be in time
    order, else InputError. ``options`` are :func:`iomimic.read_trace`'s."""
    volumes, files, passes = time_ordered_passes(
        path, 1, format, volume_names=volume_names, progress=progress, **options
    )
    return volumes, files, passes(0)


def time_ordered_passes(
    path: str | os.PathLike,
    passes: int,
    format: str | None = None,
    *,
    volume_names: str = "records",
    progress: ProgressCallback | None = None,
    **options: Any,
) -> tuple[list[str], list[str], Callable[[int], Iterator[tuple]]]:
    """:func:`time_ordered_pieces` for work that goes over the trace ``passes`` times (training):
    (volume names, file names, a function giving pass k's pieces, k from 0). Files of other
    formats than Parquet are parsed once more than that (the first learns the names);
    ``progress(done, total)`` counts over all of them."""
    layouts = None if format not in (None, "parquet") else io._parquet_layouts(path)
    if layouts is None and is_url(path):
        raise InputError(f"{path}: only Parquet is read in pieces at a URL; read_trace copies other formats")
    path = io._location(path)
    if layouts is not None:
        parts = not remote._files(str(path))[2] if is_url(path) else io.trace_parts(path) is not None
        if volume_names != "records" and parts:
            raise InputError("`volume_names` file: Parquet parts in pieces keep their volumes' names")
        total = sum(lay["meta"].num_rows for lay in layouts)

        def row_groups(k: int) -> Iterator[tuple]:
            done = 0
            for t in io.parquet_traces(path) or ():
                yield t._core_args()
                done += len(t)
                if progress is not None:
                    progress(k * total + done, passes * total)

        return layouts[0]["volumes"], layouts[0]["files"], row_groups
    parts = TextParts.of(path, format, volume_names=volume_names, one_file=True, **options)
    if parts is None:
        raise InputError(f"{path}: not a trace that can be read in pieces")

    def after(k: int) -> ProgressCallback | None:
        """Progress of parse k (the learning one first) of the passes + 1."""
        if progress is None:
            return None
        return lambda done, total: progress(k * total + done, (passes + 1) * total)

    for _ in parts.by_file(after(0)):
        pass
    return list(parts.volumes), parts.file_table()[0], lambda k: parts.in_time_order(after(k + 1))


def estimated_requests(path: str | os.PathLike) -> tuple[int, bool]:
    """(requests, exact): a Parquet trace's from its footers; else the most its files can hold
    (a request takes at least 20 bytes of a text line, and a compressed file may hold ten times
    its size), an upper bound to tell whether a trace surely fits in memory."""
    layouts = io._parquet_layouts(path)
    if layouts is not None:
        return sum(lay["meta"].num_rows for lay in layouts), True
    if is_url(path):
        return 0, False  # read whole, it is copied to local disk first (iomimic.remote)
    path = Path(path)
    files = io.trace_parts(path) or ([path] if path.is_file() else [])
    packed = (".gz", ".zst", ".zstd")
    return sum(f.stat().st_size * (10 if f.suffix in packed else 1) for f in files) // 20, False


def _columns_of(rows: dict[str, Any], exclude: str) -> dict[str, np.ndarray]:
    """The columns of rows a reader handed over, but ``exclude``."""
    return {c: rows[c] for c in DTYPES if rows.get(c) is not None and c != exclude}
