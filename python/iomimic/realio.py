"""Real I/O against files: a trace or a model's workload issued open loop at its scheduled times
(or closed loop at a fixed depth), with latencies, issue lag and throughput measured.

Safety first, enforced by the core's write guard whoever calls it: a target that does not exist
is created and written once (laid out); an existing regular file is written only if iomimic
created it or ``overwrite`` is set; block devices need ``allow_device`` and are refused while
anything uses them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from iomimic import _core
from iomimic.errors import InputError
from iomimic.trace import Trace, _Columns, grow_reach

if TYPE_CHECKING:
    from iomimic.io import ParquetPieces


def prepare_target(
    path: str | os.PathLike,
    needed: int,
    *,
    size: int | None = None,
    write: bool,
    allow_device: bool = False,
    overwrite: bool = False,
) -> int:
    """Checks one target under the write guard (and, if it is missing, creates it at ``size``
    and lays it out with data); returns the bytes requests may use. The rules live in the core
    (``guard``): a foreign file needs ``overwrite``, a block device ``allow_device`` and
    is refused while in use, in any mount namespace."""
    usable, _created = _core.prepare_target(
        os.fspath(path), max(int(needed), 1), write, size=size, allow_device=allow_device, overwrite=overwrite
    )
    return usable


def parse_volume_map(text: str, volumes: list[str]) -> dict[str, str]:
    """``vol0=/data/a.dat,vol1=/data/b.dat`` → {volume: path}, each volume one the workload has."""
    mapping: dict[str, str] = {}
    for item in filter(None, text.split(",")):
        volume, sep, path = item.partition("=")
        if not sep or not path:
            raise InputError(f"`map`: expected VOLUME=PATH, found {item!r}")
        if volume not in volumes:
            raise InputError(f"`map`: the trace has no volume {volume!r} (it has {', '.join(volumes)})")
        mapping[volume] = path
    return mapping


def bytes_needed(trace: Trace, paths: list[str]) -> dict[str, int]:
    """The bytes each path (one per volume) must hold for the trace's requests to stay inside it."""
    per_volume = np.zeros(len(paths), dtype=np.uint64)
    grow_reach(per_volume, trace.offset, trace.size, trace.volume)
    return _per_path(paths, per_volume)


def _per_path(paths: list[str], per_volume: np.ndarray) -> dict[str, int]:
    """The bytes each path must hold, from how far each volume (one path each) reaches."""
    needed: dict[str, int] = {}
    for path, size in zip(paths, per_volume.tolist(), strict=True):
        needed[path] = max(needed.get(path, 0), int(size))
    return needed


def parse_targets(target: str | None, map: str | None, volumes: list[str]) -> list[str]:
    """One path per volume: ``--target`` for all, or ``--map vol=path,...`` (others fold onto
    the first mapped target)."""
    if target is not None and map is not None:
        raise InputError("`target` and `map`: give one of them (`target` for every volume)")
    if target is None and map is None:
        raise InputError("name where the I/O goes: `target` PATH or `map` VOLUME=PATH,...")
    if target is not None:
        return [target] * len(volumes)
    mapping = parse_volume_map(map, volumes)
    if not mapping:
        raise InputError("`map`: name at least one VOLUME=PATH")
    first = next(iter(mapping.values()))
    return [mapping.get(v, first) for v in volumes]


@dataclass
class RunSettings:
    """How a workload is issued (the keywords of :func:`run`)."""

    size: int | None = None
    engine: str = "auto"
    iodepth: int | None = None
    workers: int = 16
    intensity: float = 1.0
    no_stall: bool = False
    # io_uring on a schedule: a kernel thread picks submissions up (precise issue times, a CPU)
    sqpoll: bool = True
    direct: bool = False
    allow_device: bool = False
    overwrite: bool = False
    deadline_s: float | None = None
    ramp_s: float = 0.0
    verify: bool = False
    keep_requests: bool = True


def _session(
    paths: list[str],
    reach: dict[str, int],
    write: bool,
    s: RunSettings,
    warn: Callable[[dict[str, Any]], None] | None = None,
):
    """The engine's session over the targets, which it checks under the write guard and opens
    (creating and laying out those that are missing); ``warn`` is given each volume that will fold
    into a target smaller than it, before anything is issued."""
    session = _session_of(paths, reach, write, s)
    for fold in session.folded() if warn else []:
        warn(fold)
    return session


#: How a target names a base volume set up with `iomimic offload init` (its I/O goes through
#: the off-loading client).
EVEREST_PREFIX = "everest:"


def _align(paths: list[str], direct: bool) -> int:
    """Sectors as block traces have them; O_DIRECT wants the page size; an Everest target
    whole blocks of its store set."""
    align = 4096 if direct else 512
    for p in paths:
        if p.startswith(EVEREST_PREFIX):
            block = _core.offload_store_set(p[len(EVEREST_PREFIX) :])["block_bytes"]
            align = max(align, block)
    return align


def _session_of(paths: list[str], reach: dict[str, int], write: bool, s: RunSettings):
    return _core.RunSession(
        paths,
        [reach[p] for p in paths],
        write,
        s.direct,
        size=s.size,
        allow_device=s.allow_device,
        overwrite=s.overwrite,
        engine=s.engine,
        iodepth=s.iodepth,
        workers=s.workers,
        intensity=float(s.intensity),
        no_stall=s.no_stall,
        sqpoll=s.sqpoll,
        align=_align(paths, s.direct),
        deadline_ns=None if s.deadline_s is None else round(s.deadline_s * 1e9),
        ramp_ns=round(s.ramp_s * 1e9),
        verify=s.verify,
        record=s.keep_requests,
    )


def run(
    trace: Trace,
    paths: list[str],
    *,
    progress: Callable[[int, float, float | None], None] | None = None,
    warn: Callable[[dict[str, Any]], None] | None = None,
    **settings: Any,
) -> tuple[Trace | None, dict[str, Any]]:
    """Issues ``trace`` against ``paths`` (one per volume); returns the completed requests as a
    Trace (issue times, placed offsets, ``latency_ns``) and the run's figures. Keywords are
    :class:`RunSettings`'s: ``size``, ``engine`` (auto, io_uring, psync, null), ``iodepth``
    (closed loop), ``workers``, ``intensity``, ``no_stall``, ``direct``, ``allow_device``,
    ``overwrite``, ``deadline_s`` (stop issuing that long after the start: a time-limited
    run, not marked partial), ``ramp_s`` (a warm-up left out of the figures, as fio's
    ``ramp_time``), ``verify``, and ``keep_requests=False`` to keep no per-request
    record (the Trace is then ``None``, and the run's memory does not grow with its length;
    the figures are the same). ``warn`` is given, before the run, each volume whose target is
    smaller than the part it reaches (a dict: ``path``, ``reach_bytes``, ``size_bytes``,
    ``factor``; its offsets fold, and ``folded`` in the figures says it too)."""
    s = RunSettings(**settings)
    if not len(trace):
        raise InputError("nothing to run: the workload is empty")
    if len(paths) != len(trace.volumes):
        raise InputError(f"{len(paths)} target(s) for {len(trace.volumes)} volume(s)")
    session = _session(paths, bytes_needed(trace, paths), bool(np.any(trace.op == 1)), s, warn)
    d = session.run_piece(*trace._core_args(), progress=progress)
    f = session.finish(len(trace), int(trace.ts_ns[-1] - trace.ts_ns[0]))
    if not s.keep_requests:
        return None, f
    ran = d["ran"].astype(bool)
    cols = {
        "ts_ns": d["issue_ns"][ran],
        "offset": d["offset"][ran],
        "size": d["size"][ran],
        "op": trace.op[ran],
        "volume": trace.volume[ran],
        "stream": trace.stream[ran],
        "latency_ns": d["latency_ns"][ran],
        "status": d["status"][ran],
    }
    return Trace(volumes=trace.volumes, **cols), f


def run_pieces(
    source: ParquetPieces,
    paths: list[str],
    *,
    progress: Callable[[int, float, float | None], None] | None = None,
    warn: Callable[[dict[str, Any]], None] | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """Issues a Parquet trace a row group at a time on one schedule (see :func:`run`; no
    per-request record is kept, and ``verify`` is not available): memory stays flat however
    long the trace. Returns the run's figures."""
    s = RunSettings(**settings)
    if s.keep_requests or s.verify:
        raise InputError("a trace issued in pieces keeps no per-request record and cannot `verify`")
    if len(paths) != len(source.volumes):
        raise InputError(f"{len(paths)} target(s) for {len(source.volumes)} volume(s)")
    if len(os.sched_getaffinity(0)) < 3:
        # reading the next piece needs a CPU while this one runs: with two, a kernel
        # submission thread would take one whole and leave the timing thread sharing the other
        # with the reader (issue lag p99 of milliseconds, against tens of µs without it)
        s.sqpoll = False
    session = _session(paths, _per_path(paths, source.reach), source.write, s, warn)
    pieces = source.pieces()
    # the next piece is read while this one runs (two in memory at most), so the schedule
    # never waits for the file
    with ThreadPoolExecutor(max_workers=1) as reader:
        ahead = reader.submit(next, pieces, None)
        while (cols := ahead.result()) is not None:
            ahead = reader.submit(next, pieces, None)
            if session.run_piece(_Columns(cols), source.volumes, source.files, progress=progress)["over"]:
                break
    return session.finish(source.rows, source.last_ts - source.first_ts)


def engine_used(engine: str) -> str:
    """The engine a name stands for (``auto``: io_uring where the kernel allows it, else psync)."""
    return _core.engine_name(engine)
