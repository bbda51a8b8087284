"""Hands a workload to fio: an I/O log (version 3) and a job file that replays it.

Each volume of the trace becomes one file (``--map`` names them; by default
``iomimic-<volume>.dat``). fio replays a log against existing files, so the job file lists the
size each file must have, and ``--prepare`` creates them (sparse).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from iomimic.errors import InputError
from iomimic.io import atomic_output
from iomimic.realio import bytes_needed, parse_volume_map
from iomimic.trace import Trace

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
            raise InputError(f"--map: fio logs cannot name a path with blanks: {path!r}")
    return mapping


def write_iolog(trace: Trace, path: str | os.PathLike, files: list[str]) -> None:
    """Writes ``trace`` as a fio version 3 log: times in microseconds from the start."""
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
            size = np.where(op == 3, 0, trace.size[s])
            offset = np.where(op == 3, 0, trace.offset[s])
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
    ioengine: str = "libaio",
    iodepth: int = 32,
    direct: bool = False,
    time_scale: float = 1.0,
    no_stall: bool = False,
) -> str:
    """The text of a fio job that replays ``iolog``."""
    lines = [
        f"; written by `iomimic export fio` from {source}: {requests:,} requests over {span_s:,.3f} s",
        "; fio replays the log against existing files; each must hold at least:",
        *(f";   {path}: {size:,} bytes" for path, size in sizes.items()),
        "; (`iomimic export fio --prepare` creates them). Trims need an engine and target that",
        "; support them (a block device); on regular files fio skips them.",
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
    elif time_scale != 1.0:
        # fio's scale is a percentage of the logged times
        lines.append(f"replay_time_scale={max(1, round(100 * time_scale))}")
    return "\n".join(lines) + "\n"


def missing_files(sizes: dict[str, int]) -> list[str]:
    """The files ``--prepare`` must create; refuses one it may not touch or that is too short."""
    missing = []
    for path, size in sizes.items():
        p = Path(path)
        if not p.exists():
            missing.append(path)
        elif not p.is_file():
            raise InputError(f"{path}: not a regular file; --prepare only creates files")
        elif p.stat().st_size < size:
            raise InputError(f"{path}: exists but holds {p.stat().st_size:,} bytes, {size:,} needed")
    return missing


def create_files(paths: list[str], sizes: dict[str, int]) -> None:
    """Creates each file at its size, sparse: fio finds its extent without iomimic writing it."""
    for path in paths:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            f.truncate(sizes[path])


def export_fio(
    trace: Trace,
    job_path: str | os.PathLike,
    iolog_path: str | os.PathLike,
    *,
    source: str = "a trace",
    map: str | None = None,
    prepare: bool = False,
    **job: Any,
) -> dict[str, Any]:
    """Writes the log and the job file; returns what was written.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> t = Trace(ts_ns=[0, 2000], offset=[0, 4096], size=[4096, 4096], op=[0, 1], volumes=["sda"])
    >>> r = export_fio(t, os.path.join(d, "job.fio"), os.path.join(d, "t.iolog"))
    >>> from pathlib import Path
    >>> r["files"], Path(d, "t.iolog").read_text().splitlines()[3:5]
    ({'iomimic-sda.dat': 8192}, ['0 iomimic-sda.dat read 0 4096', '2 iomimic-sda.dat write 4096 4096'])
    """
    if not len(trace):
        raise InputError("nothing to export: the trace is empty")
    if job.get("iodepth", 1) < 1:
        raise InputError(f"--iodepth must be at least 1, found {job['iodepth']}")
    if not job.get("time_scale", 1.0) > 0:
        raise InputError(f"--time-scale must be positive, found {job['time_scale']}")
    mapping = parse_map(map, trace.volumes)
    files = [mapping[v] for v in trace.volumes]
    sizes = bytes_needed(trace, files)
    # refuse before writing anything
    made = missing_files(sizes) if prepare else []
    write_iolog(trace, iolog_path, files)
    text = job_file(
        os.fspath(iolog_path),
        sizes,
        source=source,
        requests=len(trace),
        span_s=float(trace.ts_ns[-1]) / 1e9,
        **job,
    )
    with atomic_output(job_path) as tmp:
        tmp.write_text(text)
    create_files(made, sizes)
    return {"job": os.fspath(job_path), "iolog": os.fspath(iolog_path), "files": sizes, "created": made}
