"""Characterization: every figure of a trace, for the whole trace, each volume and each stream."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from iomimic import _core
from iomimic.remote import origin
from iomimic.trace import Trace
from iomimic.units import parse_duration_ns


class Profile(dict):
    """A trace's figures: a dict (keys as in ``docs/characterize.md``) with :meth:`to_json`.

    >>> t = Trace(ts_ns=[0, 10**6, 2 * 10**6], offset=[0, 4096, 8192], size=[4096] * 3, op=[0, 0, 1])
    >>> p = characterize(t, mrc="none")
    >>> p["requests"], round(p["read_fraction"], 3), p["sequential_fraction"]
    (3, 0.667, 0.6666666666666666)
    >>> p["volumes"]["0"]["requests"]
    3
    """

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self, indent=indent)

    def __repr__(self) -> str:
        """One line of the figures people look at first (the dict itself is ``dict(profile)``).

        >>> t = Trace(ts_ns=[0, 10**9], offset=[0, 4096], size=[4096] * 2, op=[0, 1])
        >>> characterize(t, mrc="none")  # doctest: +NORMALIZE_WHITESPACE
        <Profile 2 requests, 1 volume, 1 stream, 1.000 s, 2.0 IOPS, 50.0% reads, 4.0 KiB mean,
         50.0% sequential>
        """
        if "requests" not in self:
            return f"<Profile {dict.__repr__(self)}>"
        volumes, streams = len(self.get("volumes", {})), len(self.get("streams", {}))
        return (
            f"<Profile {self['requests']:,} requests, {volumes} volume{'s' * (volumes != 1)}, "
            f"{streams} stream{'s' * (streams != 1)}, {self['duration_s']:.3f} s, "
            f"{self['iops']:,.1f} IOPS, {100 * self['read_fraction']:.1f}% reads, "
            f"{self['size']['mean_bytes'] / 1024:,.1f} KiB mean, "
            f"{100 * self['sequential_fraction']:.1f}% sequential>"
        )

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """IPython shows the same line rather than the whole nested dict."""
        printer.text(repr(self))


def characterize(
    trace: Trace,
    *,
    ranges: int = 4,
    window: str | float | None = None,
    by: str | None = None,
    mrc: str = "all",
    mrc_sampling: float | None = None,
    mrc_budget: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Profile:
    """Computes every characterization figure of ``trace``.

    Parameters
    ----------
    ranges
        Equal ranges of each volume's address span in the spatial histogram (the papers use 4).
    window
        Fluctuation window (``"60s"``, ``"500ms"`` or seconds); default min(60 s, span/100).
    by
        ``"stream"`` or ``"volume"``: also classify those groups into thread types.
    mrc
        Miss-ratio curves for ``"all"`` groups, the whole ``"trace"`` only, or ``"none"``.
    mrc_sampling
        Force a SHARDS sampling rate in (0, 1]; default from ``mrc_budget``.
    mrc_budget
        Distinct 4 KiB blocks a curve may track (at most 64 bytes each; default 8,388,608,
        about 512 MiB): exact when the trace's fit, else SHARDS-sampled down to it, the
        estimated error in ``mrc.sampling_error``.
    progress
        Called about ten times a second with (requests taken, requests to take) counted over
        every pass; Ctrl-C stops the work (KeyboardInterrupt) within a pass.
    """
    options = dict(
        ranges=ranges, window=window, by=by, mrc=mrc, mrc_sampling=mrc_sampling, mrc_budget=mrc_budget
    )
    profile = Profile(_core.characterize(*trace._core_args(), **_core_options(options), progress=progress))
    source = {k: trace.report.get(k) for k in ("path", "format") if k in trace.report}
    return _name(profile, source, trace.stream_names)


#: Bytes a request costs characterized in memory (its columns, the groups' rows, the curves'
#: stacks at the default budget): measured 97 on a 10 M-request trace of 16 volumes.
BYTES_PER_REQUEST = 100


def memory_budget(text: str | int | None = None) -> int:
    """Bytes a command may use: ``text`` as a size (``2G``), or by default half of this machine's
    memory."""
    import os

    from iomimic.units import parse_size_bytes

    if text is not None:
        budget = parse_size_bytes(text, "memory")
        if budget <= 0:
            from iomimic.errors import InputError

            raise InputError("`memory` must be more than 0 bytes")
        return budget
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def parquet_rows(path) -> int | None:
    """Requests of a Parquet trace (a file, or a directory or glob of parts) read from the files'
    footers alone; None when the files are not a Parquet trace that can be read in pieces."""
    from iomimic.io import _parquet_layouts

    layouts = _parquet_layouts(path)
    return None if layouts is None else sum(lay["meta"].num_rows for lay in layouts)


def characterize_parquet(
    path,
    *,
    memory: int,
    progress: Callable[[int, int], None] | None = None,
    ray=None,
    **options: Any,
) -> Profile | None:
    """:func:`characterize` (``options`` its keywords) of a Parquet trace read a row group at a
    time, twice (a survey of its span, reach, streams and blocks, then the counting), so memory
    holds the counters, the curves and two row groups, not the trace. Every count equals the
    whole read's; percentiles of gaps and latencies are within 0.1 % (HDR histograms) and the
    fit's KS distances are taken on those histograms (``fit.criterion`` says ``ks-binned``). The
    curves track at most ``mrc_budget`` blocks each, and no more than 3/8 of ``memory`` allows
    all of them together (SHARDS-sampled past that, with the error stated).

    With ``ray`` (the module, connected), Ray tasks survey and count the trace, one partition
    of its row groups each (a range of time), each reading its row groups where it runs; the
    driver takes their results in, in time order (docs/scale.md), and the profile is the same.

    None when the files do not suit reading in pieces (see :func:`iomimic.io.parquet_traces`,
    including times that go back between row groups): then read the trace whole."""
    from iomimic.io import OutOfOrder, parquet_traces

    rows = parquet_rows(path)
    if rows is None or parquet_traces(path) is None:
        return None
    done = 0
    first: list[Trace] = []

    def pieces():
        nonlocal done
        for piece in _read_ahead(parquet_traces(path)):
            if not first:
                first.append(piece)
            yield piece._core_args()
            done += len(piece)
            if progress:
                progress(done, 2 * rows)

    try:
        if ray is None:
            profile = _in_two_passes(memory, options, pieces(), pieces)
            names = first[0].stream_names
        else:
            from iomimic.cluster import characterize_partitions

            counted, names = characterize_partitions(ray, path, memory, _core_options(options), progress)
            profile = Profile(counted)
    except OutOfOrder:
        return None
    return _name(profile, {"path": origin(path) or str(path), "format": "parquet"}, names)


def characterize_text(
    path,
    *,
    memory: int,
    read: dict[str, Any],
    progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> tuple[Profile, dict[str, Any]] | Trace | None:
    """:func:`characterize` of one trace file in a text or binary format too large for
    ``memory`` read whole: parsed twice, a chunk of rows at a time (a survey, then the counting,
    as :func:`characterize_parquet`), the profile returned with :func:`iomimic.io.summary`'s
    figures of the file. When the file turns out to fit, the Trace read whole is returned
    instead (nothing parsed twice); None when ``path`` is not one such file. ``read`` holds
    :func:`iomimic.read_trace`'s options (format, skip_bad, ...); ``options`` characterize's.
    A file whose requests go back in time past ``memory`` cannot be sorted: InputError."""
    from iomimic.errors import InputError
    from iomimic.io import CHUNK_ROWS, counted_summary, open_text
    from iomimic.trace import DTYPES, _Columns

    reading = dict(read)
    format = reading.pop("format", None)
    reader = open_text(path, format, **reading)
    if reader is None:
        return None
    while reader.read_some(CHUNK_ROWS):
        if reader.pending * BYTES_PER_REQUEST > memory:
            break
        if progress:
            progress(*reader.progress())
    else:
        from iomimic.remote import name_origin

        trace = Trace._from_reader(reader.finish())
        name_origin(trace.report, path)
        return trace

    def pieces(reader, latency: bool, before: int):
        """The reader's rows a chunk at a time (the pending ones first), as the core takes them;
        progress counts both passes over the file."""
        more = True
        while True:
            if not more:
                reader.end_parse()  # the requests a parser held back become the last rows
            rows = reader.take_rows(count=before == 0)  # the first pass counts for the summary
            if not rows["in_order"]:
                raise InputError(
                    f"{path}: its requests are not in time order, and it is too large to sort within "
                    "--memory: raise --memory (about 100 bytes a request)"
                )
            cols = {c: rows[c] for c in DTYPES if rows.get(c) is not None and (latency or c != "latency_ns")}
            if len(cols["ts_ns"]):
                yield _Columns(cols), rows["volumes"], rows["files"]
            if not more:
                return
            more = reader.read_some(CHUNK_ROWS)
            if progress:
                done, size = reader.progress()
                progress(before * size + done, 2 * size)

    summary: dict[str, Any] = {}

    def counting():
        counts, report = reader.finish_summary()
        summary.update(counted_summary(path, counts, report))
        second = open_text(path, format, **reading)
        second.read_some(CHUNK_ROWS)
        # response times the first pass found all unknown or all 0 are left out, as a whole
        # read leaves them
        return pieces(second, latency=counts["has_latency"], before=1)

    profile = _in_two_passes(memory, options, pieces(reader, latency=True, before=0), counting)
    source = {"path": summary["path"], "format": summary["format"]}
    return _name(profile, source, {int(k): v for k, v in summary["stream_names"].items()}), summary


def characterize_text_parts(
    path,
    *,
    memory: int,
    read: dict[str, Any],
    volume_names: str = "records",
    progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> tuple[Profile, dict[str, Any]] | None:
    """:func:`characterize` of a directory or glob of trace files in text or binary formats,
    read as one trace (:func:`iomimic.read_trace`), when they are too large for ``memory`` read
    whole: the files are parsed a chunk of rows at a time, twice (a survey of each file in turn,
    then the counting of their rows merged in time order, a chunk of each file held), as
    :func:`characterize_parquet` does; the profile is returned with
    :func:`iomimic.io.summary`'s figures of the files. None when ``path`` is not such files.
    ``read`` holds :func:`iomimic.read_trace`'s options; ``options`` characterize's. The files
    must each be in time order (a file that is not cannot be sorted within ``memory``:
    InputError)."""
    from iomimic.pieces import TextParts

    reading = dict(read)
    format = reading.pop("format", None)
    parts = TextParts.of(path, format, volume_names=volume_names, **reading)
    if parts is None:
        return None
    counted = _core.SummaryParts()

    def surveyed():
        step = None if progress is None else lambda done, total: progress(done, 2 * total)
        for piece in parts.by_file(step):
            if not counted.add(*piece):
                raise _Unsuited  # a row the Trace refuses: reading whole names it
            yield piece

    def counting():
        step = None if progress is None else lambda done, total: progress(total + done, 2 * total)
        return parts.in_time_order(step)

    try:
        profile = _in_two_passes(
            memory, options, surveyed(), counting, in_order=False, volumes=lambda: list(parts.volumes)
        )
    except _Unsuited:
        return None
    summary = parts.summary(counted)
    return _name(profile, {"path": summary["path"], "format": summary["format"]}, {}), summary


class _Unsuited(Exception):
    """Files that cannot be characterized in pieces after all: read them whole."""


def _in_two_passes(
    memory: int,
    options: dict[str, Any],
    survey,
    counting: Callable[[], Any],
    *,
    in_order: bool = True,
    volumes: Callable[[], list[str]] | None = None,
) -> Profile:
    """The profile of a trace given a piece at a time, twice: ``survey`` yields each piece's
    (columns, volumes, files) for the first pass (in time order, or any with ``in_order``
    False), then ``counting()`` yields them again in time order. ``volumes()``: the trace's
    volume names once surveyed, when the last piece's may not be all of them."""
    chunked = _core.ChunkedProfile(memory, **_core_options(options))
    names: list[str] = []
    for columns, names, files in survey:
        chunked.survey(columns, names, files, in_order=in_order)
    chunked.start(volumes() if volumes else names)  # else the last piece's: every one the trace has
    for piece in counting():
        chunked.add(*piece)
    return Profile(chunked.finish())


def _name(profile: Profile, source: dict[str, Any], stream_names: dict[int, str]) -> Profile:
    """``profile`` with where it came from and, where known, its streams' process names (its
    per-stream figures are keyed by stream id; the names say who each one is)."""
    profile["source"] = source
    if stream_names:
        profile["stream_names"] = {str(k): v for k, v in sorted(stream_names.items())}
    return profile


def _core_options(options: dict[str, Any]) -> dict[str, Any]:
    """Characterize's options as the core takes them (the window in ns)."""
    window = options.get("window")
    out = {k: v for k, v in options.items() if k != "window"}
    out["window_ns"] = None if window is None else parse_duration_ns(window, "window")
    return out


def _read_ahead(pieces):
    """The pieces, the next one read on a thread while the caller works on the current one
    (Arrow decodes without the GIL, and the core counts without it)."""
    from concurrent.futures import ThreadPoolExecutor

    done = object()
    with ThreadPoolExecutor(1) as pool:
        ahead = pool.submit(next, pieces, done)
        while (piece := ahead.result()) is not done:
            ahead = pool.submit(next, pieces, done)
            yield piece


def summary_row(name: str, f: dict[str, Any]) -> dict[str, Any]:
    """The few figures shown per volume or stream in the report."""
    return {
        "name": name,
        "requests": f["requests"],
        "read_fraction": f["read_fraction"],
        "sequential_fraction": f["sequential_fraction"],
        "iops": f["iops"],
        "mean_bytes": f["size"]["mean_bytes"],
        "mean_interarrival_us": f["interarrival"]["mean_us"],
    }
