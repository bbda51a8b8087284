"""Real I/O against files: a trace or a model's workload issued open loop at its scheduled times
(or closed loop at a fixed depth), with latencies, issue lag and throughput measured.

Safety first, enforced by the core's write guard whoever calls it: a target that does not exist
is created and written once (laid out); an existing regular file is written only if iomimic
created it or ``overwrite`` is set; block devices need ``allow_device`` and are refused while
anything uses them.
"""

from __future__ import annotations

import os
import time
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
    (``realio::guard``): a foreign file needs ``overwrite``, a block device ``allow_device`` and
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
    verify: bool = False
    keep_requests: bool = True


def _session(paths: list[str], reach: dict[str, int], write: bool, s: RunSettings):
    """The engine's session over the targets, which it checks under the write guard and opens
    (creating and laying out those that are missing)."""
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
        # sectors as block traces have them; O_DIRECT wants the page size
        align=4096 if s.direct else 512,
        deadline_ns=None if s.deadline_s is None else round(s.deadline_s * 1e9),
        verify=s.verify,
        record=s.keep_requests,
    )


def _finish(session, cpu0: float, s: RunSettings, requests: int, span_ns: int) -> dict[str, Any]:
    d = session.finish()
    d["cpu_s"] = time.process_time() - cpu0
    d["time_limited"] = s.deadline_s is not None
    d["verify"] = s.verify
    d["engine"] = engine_used(s.engine)
    return figures(d, requests, span_ns, s)


def run(
    trace: Trace,
    paths: list[str],
    *,
    progress: Callable[[int, float, float | None], None] | None = None,
    **settings: Any,
) -> tuple[Trace | None, dict[str, Any]]:
    """Issues ``trace`` against ``paths`` (one per volume); returns the completed requests as a
    Trace (issue times, placed offsets, ``latency_ns``) and the run's figures. Keywords are
    :class:`RunSettings`'s: ``size``, ``engine`` (auto, io_uring, psync, null), ``iodepth``
    (closed loop), ``workers``, ``intensity``, ``no_stall``, ``direct``, ``allow_device``,
    ``overwrite``, ``deadline_s`` (stop issuing that long after the start: a time-limited
    run, not marked partial), ``verify``, and ``keep_requests=False`` to keep no per-request
    record (the Trace is then ``None``, and the run's memory does not grow with its length;
    the figures are the same)."""
    s = RunSettings(**settings)
    if not len(trace):
        raise InputError("nothing to run: the workload is empty")
    if len(paths) != len(trace.volumes):
        raise InputError(f"{len(paths)} target(s) for {len(trace.volumes)} volume(s)")
    session = _session(paths, bytes_needed(trace, paths), bool(np.any(trace.op == 1)), s)
    cpu0 = time.process_time()
    d = session.run_piece(*trace._core_args(), progress=progress)
    f = _finish(session, cpu0, s, len(trace), int(trace.ts_ns[-1] - trace.ts_ns[0]))
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
    }
    return Trace(volumes=trace.volumes, **cols), f


def run_pieces(
    source: ParquetPieces,
    paths: list[str],
    *,
    progress: Callable[[int, float, float | None], None] | None = None,
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
    session = _session(paths, _per_path(paths, source.reach), source.write, s)
    cpu0 = time.process_time()
    pieces = source.pieces()
    # the next piece is read while this one runs (two in memory at most), so the schedule
    # never waits for the file
    with ThreadPoolExecutor(max_workers=1) as reader:
        ahead = reader.submit(next, pieces, None)
        while (cols := ahead.result()) is not None:
            ahead = reader.submit(next, pieces, None)
            if session.run_piece(_Columns(cols), source.volumes, source.files, progress=progress)["over"]:
                break
    return _finish(session, cpu0, s, source.rows, source.last_ts - source.first_ts)


def engine_used(engine: str) -> str:
    """What ``auto`` (the default) resolves to: io_uring where the kernel allows it, else psync."""
    if engine == "auto":
        return "io_uring" if _core.io_uring_available() else "psync"
    return "io_uring" if engine == "uring" else engine


def over_time(summary: dict[str, Any], elapsed_s: float) -> dict[str, Any]:
    """IOPS and MB/s per window, by issue time: the engine's windows (1 ms, doubled as a run
    grows) merged up to about 1 s, or a hundredth of a run shorter than 10 s."""
    count = np.asarray(summary["window_requests"], dtype=np.float64)
    moved = np.asarray(summary["window_bytes"], dtype=np.float64)
    window_s = summary["window_ns"] / 1e9
    want = 1.0 if elapsed_s >= 10 else max(elapsed_s / 100, window_s)
    factor = max(1, round(want / window_s))
    if factor > 1:
        pad = -len(count) % factor
        count = np.pad(count, (0, pad)).reshape(-1, factor).sum(axis=1)
        moved = np.pad(moved, (0, pad)).reshape(-1, factor).sum(axis=1)
        window_s *= factor
    return {
        "window_s": window_s,
        "iops": (count / window_s).tolist(),
        "mb_per_s": (moved / 1e6 / window_s).tolist(),
    }


def figures(d: dict, requests: int, span_ns: int, s: RunSettings) -> dict[str, Any]:
    """The run's figures, from the engine's summary (HDR histograms and window counts);
    ``requests`` and ``span_ns`` describe the workload (its length and time span)."""
    summary = d["summary"]
    elapsed_s = d["elapsed_ns"] / 1e9
    n = int(summary["completed"])
    f: dict[str, Any] = {
        "engine": d["engine"],
        "mode": f"closed loop, depth {s.iodepth}"
        if s.iodepth
        else ("open loop, no stall" if s.no_stall else "open loop"),
        "requests": requests,
        "completed": n,
        "partial": bool(d["interrupted"]) or (n < requests and not d["time_limited"]),
        "elapsed_s": elapsed_s,
        "iops": n / elapsed_s if elapsed_s > 0 else 0.0,
        "mb_per_s": summary["bytes"] / 1e6 / elapsed_s if elapsed_s > 0 else 0.0,
        "latency_us": summary["latency_us"] or {},
        # reads, writes, trims and flushes apart (those that ran), as fio reports them
        "by_op": {
            op: {
                "completed": int(o["completed"]),
                "iops": o["completed"] / elapsed_s if elapsed_s > 0 else 0.0,
                "mb_per_s": o["bytes"] / 1e6 / elapsed_s if elapsed_s > 0 else 0.0,
                "latency_us": o["latency_us"] or {},
            }
            for op, o in summary["by_op"].items()
        },
        "time_limited": bool(d["time_limited"]),
        "cpu_us_per_io": 1e6 * d["cpu_s"] / n if n else 0.0,
        "over_time": over_time(summary, elapsed_s),
    }
    if d["engine"] == "io_uring":
        # on a schedule a kernel thread takes the submissions (SQPOLL), and costs a CPU
        f["submission"] = "kernel polling thread" if d["kernel_submits"] else "system call"
    if d["verify"]:
        failures = list(d["verify_failures"])
        f["verify"] = {
            "sectors_checked": d["verified_sectors"],
            "failures": len(failures),
            "first": failures[:10],
        }
    if not s.iodepth and not s.no_stall:
        span_s = span_ns / 1e9
        f["scheduled_iops"] = s.intensity * (requests - 1) / span_s if span_s > 0 else None
        f["lag_us"] = summary["lag_us"] or {}
        f["last_request_lag_us"] = summary["last_lag_us"]
    return f
