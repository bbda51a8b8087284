"""Hands a workload to fio: an I/O log (version 3) and a job file that replays it.

Each volume of the trace becomes one file (``--map`` names them; by default
``iomimic-<volume>.dat``). fio replays a log against existing files, so the job file lists the
size each file must have, and ``--prepare`` creates them, laid out with data as a run's targets
are. The files are held to a run's rules (the core's write guard).

The job's defaults are the ones under which fio's figures mean what they say. fio replays a
log on one thread and, with an asynchronous engine (libaio, io_uring), reaps completions only
when its queue is full or between requests: while it sleeps until the next logged time, a
finished request waits, and that wait is counted as its latency (at depth 32 a 150 µs read
showed as 64 ms). A synchronous engine (psync) at depth 1 measures each request from submit
to completion, as iomimic's own run does; requests that overlapped in the trace are then
issued one after another (fio falls behind the log when the device is slower than the
requests come). ``direct=1`` wherever the files accept O_DIRECT, so the page cache does not
answer in the device's place.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from iomimic import _core
from iomimic.errors import InputError
from iomimic.io import atomic_output
from iomimic.realio import bytes_needed, parse_volume_map
from iomimic.trace import Trace

#: Offsets and sizes of a direct=1 job are multiples of this (as a --direct run's are).
DIRECT_ALIGN = 4096
# the trace's op codes as fio log actions
_ACTIONS = np.array(["read", "write", "trim", "sync"])
# lines per formatting batch: bounded memory on traces of any length
_BATCH = 1 << 18


def parse_map(text: str | None, volumes: list[str]) -> dict[str, str]:
    """``vol0=/data/a.dat,vol1=/data/b.dat`` → {volume: path}; unnamed volumes get defaults."""
    mapping = parse_volume_map(text or "", volumes)
    for volume in volumes:
        mapping.setdefault(volume, f"iomimic-{re.sub(r'[^A-Za-z0-9_.-]+', '_', volume)}.dat")
    for path in mapping.values():
        if any(c.isspace() for c in path):
            raise InputError(f"`map`: fio logs cannot name a path with blanks: {path!r}")
    return mapping


def write_iolog(
    trace: Trace,
    path: str | os.PathLike,
    files: list[str],
    placed: tuple[np.ndarray, np.ndarray] | None = None,
) -> None:
    """Writes ``trace`` as a fio version 3 log: times in microseconds from the start; offsets
    and sizes are ``placed`` (where a run puts each request) when given."""
    offsets, sizes = placed if placed is not None else (trace.offset, trace.size)
    names = np.array(files)
    us = trace.ts_ns // 1000
    end = int(us[-1]) if len(trace) else 0
    with atomic_output(path) as tmp, open(tmp, "w") as out:
        out.write("fio version 3 iolog\n")
        for name in dict.fromkeys(files):
            out.write(f"0 {name} add\n0 {name} open\n")
        for start in range(0, len(trace), _BATCH):
            s = slice(start, start + _BATCH)
            op = trace.op[s]
            size = np.where(op == 3, 0, sizes[s])
            offset = np.where(op == 3, 0, offsets[s])
            lines = [
                f"{t} {f} {a} {o} {n}\n"
                for t, f, a, o, n in zip(
                    us[s].tolist(),
                    names[trace.volume[s]].tolist(),
                    _ACTIONS[op].tolist(),
                    offset.tolist(),
                    size.tolist(),
                    strict=True,
                )
            ]
            out.write("".join(lines))
        for name in dict.fromkeys(files):
            out.write(f"{end} {name} close\n")


def job_file(
    iolog: str,
    sizes: dict[str, int],
    *,
    source: str,
    requests: int,
    span_s: float,
    ioengine: str = "psync",
    iodepth: int = 1,
    direct: bool = True,
    intensity: float = 1.0,
    no_stall: bool = False,
) -> str:
    """The text of a fio job that replays ``iolog``."""
    lines = [
        f"; written by `iomimic export fio` from {source}: {requests:,} requests over {span_s:,.3f} s",
        "; run fio from this file's directory: relative paths below are relative to it.",
        "; fio replays the log against existing files; each must hold at least:",
        *(f";   {path}: {size:,} bytes" for path, size in sizes.items()),
        "; (`iomimic export fio --prepare` creates them). Trims need an engine and target that",
        "; support them (a block device); on regular files fio skips them.",
        *_engine_note(ioengine, iodepth),
        "[global]",
        f"ioengine={ioengine}",
        f"iodepth={iodepth}",
        f"direct={int(direct)}",
        "",
        "[iomimic]",
        f"read_iolog={iolog}",
    ]
    if no_stall:
        lines.append("replay_no_stall=1")
    elif intensity != 1.0:
        # fio's scale is a percentage of the logged rate: fio waits each logged gap times
        # 100 / replay_time_scale (iolog.c), so 200 replays twice as fast
        lines.append(f"replay_time_scale={max(1, round(100 * intensity))}")
    return "\n".join(lines) + "\n"


#: Engines that complete each request inside the call that submits it.
SYNC_ENGINES = ("psync", "sync", "pvsync", "pvsync2", "vsync")


def _engine_note(ioengine: str, iodepth: int) -> list[str]:
    """The job file's word on what its latencies mean under the chosen engine and depth."""
    if ioengine in SYNC_ENGINES or iodepth == 1:
        return [
            f"; {ioengine} at depth {iodepth}: each request is timed from submit to completion;",
            "; requests that overlapped in the log are issued one after another.",
        ]
    return [
        f"; WARNING: {ioengine} at depth {iodepth}: fio reaps completions only when its queue is",
        "; full or between logged requests, so clat includes time waiting to be reaped (up to",
        "; the gap to the next request); use psync at depth 1 for honest latencies.",
    ]


def direct_allowed(path: str) -> bool:
    """Whether ``path`` (or, if it does not exist yet, a new file beside it) opens with
    O_DIRECT: tmpfs and some network file systems refuse it."""
    import tempfile

    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return False
    try:
        if os.path.exists(path):
            os.close(os.open(path, os.O_RDONLY | flag))
        else:
            # where `prepare` will create it: the nearest directory that exists holds the file system
            with tempfile.NamedTemporaryFile(dir=_existing_dir(path)) as probe:
                os.close(os.open(probe.name, os.O_RDONLY | flag))
    except OSError:
        return False
    return True


def _existing_dir(path: str) -> str:
    """The nearest directory above ``path`` that exists (the file system a new file lands on)."""
    here = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(here):
        here = os.path.dirname(here)
    return here


def check_space(paths: list[str], sizes: dict[str, int]) -> None:
    """Refuses, before anything is written, files to create that their file systems cannot hold."""
    import shutil

    def gib(n: int) -> str:
        return f"{n / 2**30:,.1f} GiB"

    by_device: dict[int, tuple[int, str, list[str]]] = {}
    for path in paths:
        where = _existing_dir(path)
        device = os.stat(where).st_dev
        total, _, names = by_device.get(device, (0, where, []))
        by_device[device] = (total + sizes[path], where, [*names, path])
    for total, where, names in by_device.values():
        free = shutil.disk_usage(where).free
        if total > free:
            raise InputError(
                f"{names[0]}: laying out {', '.join(names)} needs {gib(total)}, and the file "
                f"system of {where} has {gib(free)} free; map the volumes to bigger file "
                "systems or devices (--map)"
            )


def check_files(
    sizes: dict[str, int], *, write: bool, prepare: bool, allow_device: bool, overwrite: bool
) -> list[str]:
    """Holds every file the job uses to the rules a run follows (the core's write guard): a
    foreign file is written only with ``overwrite``, a block device only with ``allow_device``
    and never while in use. Returns the files ``prepare`` must create; refuses before anything
    is written."""
    from iomimic.realio import prepare_target

    missing = []
    for path, needed in sizes.items():
        if not os.path.lexists(path):
            missing.append(path)
            continue
        have = prepare_target(path, needed, write=write, allow_device=allow_device, overwrite=overwrite)
        if have < needed:
            if not prepare:
                raise InputError(
                    f"{path}: holds {have:,} bytes but the workload reaches {needed:,}; `prepare` "
                    "grows a file iomimic created (or, with `overwrite`, any file)"
                )
            prepare_target(
                path, needed, write=write, size=needed, allow_device=allow_device, overwrite=overwrite
            )
    return missing


def create_files(paths: list[str], sizes: dict[str, int], *, write: bool) -> None:
    """Creates each file at its size and lays it out with data, as a run does: a sparse file
    would make fio's reads of holes look free (they never reach the device)."""
    from iomimic.realio import prepare_target

    for path in paths:
        prepare_target(path, sizes[path], write=write, size=sizes[path])


def export_fio(
    trace: Trace,
    job_path: str | os.PathLike,
    iolog_path: str | os.PathLike,
    *,
    source: str = "a trace",
    map: str | None = None,
    prepare: bool = False,
    allow_device: bool = False,
    overwrite: bool = False,
    direct: bool | None = None,
    **job: Any,
) -> dict[str, Any]:
    """Writes the log and the job file; returns what was written. The files the job uses are
    held to a run's rules (a foreign file needs ``overwrite``, a block device ``allow_device``);
    ``prepare`` creates the missing ones, laid out with data. ``direct`` (O_DIRECT) defaults
    to whether every file accepts it; the job's engine and depth default to psync at depth 1
    (see the module's notes).

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> t = Trace(ts_ns=[0, 2000], offset=[0, 4096], size=[4096, 4096], op=[0, 1], volumes=["sda"])
    >>> data = os.path.join(d, "sda.dat")
    >>> r = export_fio(t, os.path.join(d, "job.fio"), os.path.join(d, "t.iolog"), map=f"sda={data}")
    >>> from pathlib import Path
    >>> r["files"] == {data: 8192}, Path(d, "t.iolog").read_text().splitlines()[3].split()[2:]
    (True, ['read', '0', '4096'])
    """
    if not len(trace):
        raise InputError("nothing to export: the trace is empty")
    if job.get("iodepth", 1) < 1:
        raise InputError(f"`iodepth` must be at least 1, found {job['iodepth']}")
    if not job.get("intensity", 1.0) > 0:
        raise InputError(f"`intensity` must be positive, found {job['intensity']}")
    mapping = parse_map(map, trace.volumes)
    files = [mapping[v] for v in trace.volumes]
    sizes = bytes_needed(trace, files)
    # fio runs from the job file's directory: relative names in the log are relative to it
    here = os.path.dirname(os.path.abspath(job_path))
    on_disk = {name: os.path.join(here, name) for name in sizes}
    if direct is None:
        direct = all(direct_allowed(path) for path in on_disk.values())
    placed = None
    if direct:
        # O_DIRECT wants block-aligned offsets and sizes: the log holds them where a --direct
        # run puts them (the core's placement), in files rounded up to whole blocks
        sizes = {name: -(-max(size, 1) // DIRECT_ALIGN) * DIRECT_ALIGN for name, size in sizes.items()}
        placed = _core.place_requests(
            trace.offset, trace.size, trace.volume, [sizes[f] for f in files], DIRECT_ALIGN
        )
    disk_sizes = {on_disk[name]: size for name, size in sizes.items()}
    write = bool((trace.op == 1).any() or (trace.op == 2).any())
    # refuse before writing anything
    missing = check_files(
        disk_sizes, write=write, prepare=prepare, allow_device=allow_device, overwrite=overwrite
    )
    made = missing if prepare else []
    check_space(made, disk_sizes)
    if os.path.realpath(job_path) == os.path.realpath(iolog_path):
        raise InputError(
            f"{os.fspath(job_path)}: the job file and the I/O log are the same file; choose two paths"
        )
    # the files first: a job file written means the whole export is in place
    create_files(made, disk_sizes, write=write)
    write_iolog(trace, iolog_path, files, placed)
    iolog = os.path.relpath(os.path.abspath(iolog_path), here)
    text = job_file(
        iolog if not iolog.startswith("..") else os.path.abspath(iolog_path),
        sizes,
        source=source,
        requests=len(trace),
        span_s=float(trace.ts_ns[-1]) / 1e9,
        direct=direct,
        **job,
    )
    with atomic_output(job_path) as tmp:
        tmp.write_text(text)
    return {
        "job": os.fspath(job_path),
        "iolog": os.fspath(iolog_path),
        "files": disk_sizes,
        "created": made,
        "direct": direct,
        # requests O_DIRECT moved or resized onto whole blocks (the log is exact without it)
        "realigned": 0
        if placed is None
        else int(
            np.count_nonzero(((placed[0] != trace.offset) | (placed[1] != trace.size)) & (trace.size > 0))
        ),
    }
