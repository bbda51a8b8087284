"""Trace-driven simulation of disks, SSDs and RAID arrays (``docs/simulate.md``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from iomimic import _core
from iomimic.errors import InputError
from iomimic.remote import for_tasks
from iomimic.trace import Trace


def device_presets() -> dict[str, str]:
    """The built-in device files, name → TOML text."""
    return dict(_core.device_presets())


def device_table() -> list[tuple[str, str, str, str]]:
    """A line per built-in device file: name, description, its array and its device."""
    return list(_core.device_table())


def device_config(device: str | None = None, config: str | os.PathLike | None = None) -> str:
    """The TOML text of a preset (``device``) or of a device file (``config``)."""
    if (device is None) == (config is None):
        raise InputError("name a preset with `device` or a device file with `config` (one of them)")
    if device is not None:
        presets = device_presets()
        if device not in presets:
            raise InputError(
                f"unknown device {device!r}; presets are {', '.join(presets)} (see `iomimic devices`)"
            )
        return presets[device]
    path = Path(config)
    text = path.read_text()
    try:
        _core.check_device(text)
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    return text


def simulate(
    trace: Trace,
    device: str | None = None,
    *,
    config: str | os.PathLike | None = None,
    map: str | dict[str, str] | None = None,
    shared: bool = False,
    iodepth: int | None = None,
    intensity: float = 1.0,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Trace, dict[str, Any]]:
    """Replays ``trace`` on a simulated device or array.

    Open loop by default (requests arrive at their trace times, divided by ``intensity``);
    ``iodepth`` makes it closed loop with that many outstanding. Returns the trace with
    ``latency_ns`` filled in (times as simulated), a ``status`` column when injected failed
    sectors failed requests (``EIO``), and the run's figures.

    A trace of several volumes puts each volume on a device of its own, as the servers it
    was traced on had them: ``device`` (a preset) or ``config`` (a device file) for each,
    unless ``map`` names others (``"data=ssd-sata,log=hdd-7200"`` or a dict; a device is a
    preset or a ``.toml`` file; ``data+log=ssd-sata`` puts two volumes on one device). The
    figures are then the whole run's, with ``placements`` holding each device's (docs/simulate.md).
    ``shared=True`` puts every volume on the one device instead, each in an equal region of it.
    In a closed loop each device keeps ``iodepth`` of its own requests outstanding.
    ``progress(done, total)`` is called about ten times a second with the requests completed.

    >>> t = Trace(ts_ns=[0, 10**6], offset=[0, 1 << 30], size=[4096, 4096], op=[0, 0])
    >>> out, figures = simulate(t, "hdd-7200")
    >>> len(out), figures["requests"], out.latency_ns.min() > 0
    (2, 2, True)
    """
    where = _where(trace.volumes, device, config, map, shared)
    options = {"iodepth": iodepth, "intensity": float(intensity), "scheduler": scheduler}
    d = _simulate(trace._core_args(), where, options, progress)
    cols = dict(trace.columns)
    cols["ts_ns"] = d["issue_ns"]
    cols["latency_ns"] = d["latency_ns"]
    # the simulated outcome replaces any recorded one; a status column only where faults failed some
    cols.pop("status", None)
    if d["status"].any():
        cols["status"] = d["status"]
    out = Trace(**cols, volumes=trace.volumes, files=trace.files)
    out.report = {**trace.report, "simulated_on": d["figures"]["device"]}
    return out, d["figures"]


def simulate_in_pieces(
    path: str | os.PathLike,
    device: str | None = None,
    *,
    config: str | os.PathLike | None = None,
    map: str | dict[str, str] | None = None,
    shared: bool = False,
    iodepth: int | None = None,
    intensity: float = 1.0,
    scheduler: str | None = None,
    output: str | os.PathLike | None = None,
    output_format: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    **read: Any,
) -> dict[str, Any]:
    """:func:`simulate` of a trace read a piece at a time (a trace larger than memory): the
    run holds the requests from the first not yet done to the last read (as many as the devices
    have queued), and with ``output`` each request is written, with its issue time and latency,
    once it and every request before it are done. Parquet goes a row group at a time; other
    formats a chunk of parsed rows at a time, twice (the first pass learns the volumes; each
    file must be in time order). The figures are :func:`simulate`'s, but for the latency
    percentiles, taken on HDR histograms (within 0.1 %; the mean and maximum exact); the output
    holds the trace's requests in trace order (times out of order where a closed loop over
    several devices issued them so: reading it back sorts them, as :func:`simulate`'s output
    is). ``read`` holds :func:`iomimic.read_trace`'s options; ``progress(done, total)`` counts
    the passes' rows or bytes."""
    from collections import deque

    from iomimic.io import _write_file
    from iomimic.io import output_format as format_of
    from iomimic.pieces import time_ordered_pieces
    from iomimic.trace import DTYPES, _Columns

    if device is not None or config is not None:
        device_config(device, config)  # a bad device is said before the trace is read
    volumes, files, pieces = time_ordered_pieces(path, progress=progress, **read)
    where = _where(volumes, device, config, map, shared)
    one = isinstance(where, str)
    run = _core.SimStream(
        volumes,
        config_toml=where if one else None,
        placements=None if one else where,
        iodepth=iodepth,
        intensity=float(intensity),
        scheduler=scheduler,
    )
    # a status column where faults are injected, whether or not a request fails (simulate's has
    # one only when some did: the outcomes come after the first rows are written)
    texts = [where] if one else [text for text, _ in where]
    faulty = any(_core.check_device(text)["faults"] is not None for text in texts)
    held: deque[dict[str, np.ndarray]] = deque()  # rows read, waiting for their outcomes
    figures: dict[str, Any] = {}

    def outcomes(done: dict[str, np.ndarray]) -> Trace | None:
        """The first rows held, as many as ``done`` has outcomes for, with them."""
        n = len(done["issue_ns"])
        if not n:
            return None
        taken, need = [], n
        while need:
            cols = held[0]
            k = min(need, len(cols["offset"]))
            taken.append({c: v[:k] for c, v in cols.items()})
            if k == len(cols["offset"]):
                held.popleft()
            else:
                held[0] = {c: v[k:] for c, v in cols.items()}
            need -= k
        cols = {c: np.concatenate([t[c] for t in taken]) for c in taken[0]}
        cols["ts_ns"], cols["latency_ns"] = done["issue_ns"], done["latency_ns"]
        if faulty:
            cols["status"] = done["status"]
        return Trace._from_reader({**cols, "volumes": volumes, "files": files, "report": {}})

    def fed() -> Iterator[dict[str, np.ndarray]]:
        """The outcomes of each slice of a piece fed: a piece of a million rows fed at once
        would hold them all in the run until its last arrival (some 200 bytes each)."""
        for columns, _, _ in pieces:
            n = len(columns.ts_ns)
            for lo in range(0, n, FEED_ROWS):
                present = {c: getattr(columns, c, None) for c in DTYPES}
                cut = _Columns({c: v[lo : lo + FEED_ROWS] for c, v in present.items() if v is not None})
                if output is not None:
                    kept = {c: getattr(cut, c) for c in ("offset", "size", "op", "volume", "stream", "file")}
                    held.append({c: v for c, v in kept.items() if v is not None})
                yield run.feed(cut, volumes, files)
        done, ends = run.finish()
        figures.update(ends)
        yield done

    def traced() -> Iterator[Trace]:
        """The output in parts of a million rows or so (Parquet row groups, not slivers)."""
        batch: list[Trace] = []
        for done in fed():
            if (t := outcomes(done)) is not None:
                batch.append(t)
            if sum(len(b) for b in batch) >= 1 << 20:
                yield _joined(batch, volumes, files)
                batch = []
        if batch:
            yield _joined(batch, volumes, files)

    if output is None:
        for _ in fed():
            pass
    else:
        _write_file(traced(), output, format_of(output, output_format))
    return figures


#: Rows fed to a simulation in pieces at a time.
FEED_ROWS = 1 << 16


def _joined(parts: list[Trace], volumes: list[str], files: list[str]) -> Trace:
    """Consecutive parts of a trace as one (their times as they are)."""
    if len(parts) == 1:
        return parts[0]
    cols = {c: np.concatenate([p.columns[c] for p in parts]) for c in parts[0].columns}
    return Trace._from_reader({**cols, "volumes": volumes, "files": files, "report": {}})


def sweep(
    trace: Trace,
    devices: list[str],
    *,
    intensities: list[float] = (1.0,),
    iodepths: list[int | None] = (None,),
    map: str | dict[str, str] | None = None,
    shared: bool = False,
    scheduler: str | None = None,
    ray: bool | str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """The figures of :func:`simulate` at every point of a sweep: each of ``devices`` (a preset
    or a ``.toml`` device file) at each of ``intensities`` and ``iodepths`` (``None``: open
    loop), in that order (device first, then intensity, then depth); each point's figures say
    which point it is in ``sweep`` (``device`` as named, ``intensity``, ``iodepth``). ``map``
    and ``shared`` place the volumes as for :func:`simulate`, the point's device taking the
    volumes ``map`` leaves out.

    The points run on this machine's cores, or with ``ray`` (``True`` or a cluster's address)
    each as one Ray task; the figures are the same either way. ``progress(done, total)``
    counts points.

    >>> t = Trace(ts_ns=[0, 10**6], offset=[0, 1 << 30], size=[4096, 4096], op=[0, 0])
    >>> [tuple(f["sweep"].values()) for f in sweep(t, ["hdd-7200", "ssd-sata"], intensities=[1, 4])]
    [('hdd-7200', 1.0, None), ('hdd-7200', 4.0, None), ('ssd-sata', 1.0, None), ('ssd-sata', 4.0, None)]
    """
    if not devices:
        raise InputError("a sweep needs at least one device")
    wheres = [(d, _where(trace.volumes, *_device_or_file(d), map, shared)) for d in devices]
    points = [
        (name, where, {"iodepth": depth, "intensity": float(k), "scheduler": scheduler})
        for name, where in wheres
        for k in intensities
        for depth in iodepths
    ]
    if ray is not None and ray is not False:
        from iomimic import cluster

        engine = cluster.connect(ray)
        shared_data = (trace.columns, trace.volumes, trace.files)
        return cluster.run_tasks(engine, _sweep_point, shared_data, points)
    from concurrent.futures import ThreadPoolExecutor

    # a simulation runs in the core without the GIL: the points share this machine's cores
    args = trace._core_args()
    done = 0
    if progress is not None:
        progress(0, len(points))
    with ThreadPoolExecutor(max_workers=min(len(points), os.cpu_count() or 1)) as pool:
        futures = [pool.submit(_point_figures, args, *point) for point in points]
        figures = []
        for f in futures:
            figures.append(f.result())
            done += 1
            if progress is not None:
                progress(done, len(points))
    return figures


def sweep_in_pieces(
    path: str | os.PathLike,
    devices: list[str],
    *,
    intensities: list[float] = (1.0,),
    iodepths: list[int | None] = (None,),
    map: str | dict[str, str] | None = None,
    shared: bool = False,
    scheduler: str | None = None,
    ray: bool | str | None = None,
    progress: Callable[[int, int], None] | None = None,
    **read: Any,
) -> list[dict[str, Any]]:
    """:func:`sweep` of a trace too large for memory: each run reads it a piece at a time
    (:func:`simulate_in_pieces`), one after another here (memory is one run's), or with ``ray``
    each as a Ray task reading ``path`` where it runs (shared storage). The runs' figures as
    :func:`sweep` gives them, latency percentiles taken on HDR histograms. ``progress`` counts
    runs; ``read`` holds :func:`iomimic.read_trace`'s options."""
    if not devices:
        raise InputError("a sweep needs at least one device")
    for name in devices:
        device_text(name)  # a bad device is said before any run
    points = [(name, float(k), depth) for name in devices for k in intensities for depth in iodepths]
    shared_data = (for_tasks(path), {"map": map, "shared": shared, "scheduler": scheduler, **read})
    if ray is not None and ray is not False:
        from iomimic import cluster

        return cluster.run_tasks(cluster.connect(ray), _piece_point, shared_data, points)
    runs = []
    for point in points:
        if progress is not None:
            progress(len(runs), len(points))
        runs.append(_piece_point(shared_data, point))
    if progress is not None:
        progress(len(runs), len(points))
    return runs


def _piece_point(shared: tuple[str, dict[str, Any]], point: tuple[str, float, int | None]) -> dict[str, Any]:
    """One run of a sweep in pieces (a Ray task, or a step here): its figures."""
    path, options = shared
    name, intensity, iodepth = point
    device, config = _device_or_file(name)
    figures = simulate_in_pieces(path, device, config=config, intensity=intensity, iodepth=iodepth, **options)
    return {**figures, "sweep": {"device": name, "intensity": intensity, "iodepth": iodepth}}


def _sweep_point(shared: tuple[dict[str, Any], list[str], list[str]], point: tuple) -> dict[str, Any]:
    """A Ray task: one point of a sweep, its figures."""
    from iomimic.trace import _Columns

    columns, volumes, files = shared
    return _point_figures((_Columns(columns), volumes, files), *point)


def _point_figures(core_args: tuple, name: str, where: str | list, options: dict[str, Any]) -> dict[str, Any]:
    figures = _simulate(core_args, where, options, None)["figures"]
    point = {"device": name, "intensity": options["intensity"], "iodepth": options["iodepth"]}
    return {**figures, "sweep": point}


def _simulate(core_args: tuple, where: str | list, options: dict[str, Any], progress) -> dict[str, Any]:
    """The core's simulation on one device (its TOML text) or on placements."""
    if isinstance(where, str):
        return _core.simulate(*core_args, where, **options, progress=progress)
    return _core.simulate_mapped(*core_args, where, **options, progress=progress)


def _where(
    volumes: list[str],
    device: str | None,
    config: str | os.PathLike | None,
    map: str | dict[str, str] | None,
    shared: bool,
) -> str | list[tuple[str, list[int]]]:
    """Where the volumes go: one device's TOML text, or a device's text per placement."""
    if shared and map is not None:
        raise InputError("`shared` and `map`: give one of them (`shared` puts every volume on one device)")
    if shared or (len(volumes) <= 1 and map is None):
        return device_config(device, config)
    return placements(volumes, map, device, config)


def device_text(name: str) -> str:
    """A device file's text, the device named by a preset's name or a file's path."""
    return device_config(*_device_or_file(name))


def _device_or_file(name: str) -> tuple[str | None, str | None]:
    """(preset, None) or (None, file) for a device named by either."""
    return (None, name) if name.endswith(".toml") or Path(name).is_file() else (name, None)


def placements(
    volumes: list[str],
    map: str | dict[str, str] | None,
    device: str | None,
    config: str | os.PathLike | None,
) -> list[tuple[str, list[int]]]:
    """(device file text, volume ids) per device: the ``map``'s, then one device of
    ``device``/``config`` for each volume it leaves out."""
    items = (
        [_map_item(item) for item in filter(None, map.split(","))]
        if isinstance(map, str)
        else (map or {}).items()
    )
    ids = {v: i for i, v in enumerate(volumes)}
    placed: list[tuple[str, list[int]]] = []
    seen: set[str] = set()
    for names, dev in items:
        group = [names] if names in ids else names.split("+")
        for v in group:
            if v not in ids:
                raise InputError(f"`map`: the trace has no volume {v!r} (it has {', '.join(volumes)})")
            if v in seen:
                raise InputError(f"`map`: volume {v!r} is named twice")
            seen.add(v)
        text = device_text(dev)
        placed.append((text, [ids[v] for v in group]))
    rest = [v for v in volumes if v not in seen]
    if rest:
        if device is None and config is None and placed:
            raise InputError(
                f"volume {rest[0]!r} has no device: name one for every volume in `map`, or a "
                "`device`/`config` for the volumes it leaves out"
            )
        text = device_config(device, config)
        placed += [(text, [ids[v]]) for v in rest]
    return placed


def _map_item(item: str) -> tuple[str, str]:
    volumes, sep, dev = item.partition("=")
    if not sep or not volumes or not dev:
        raise InputError(f"`map`: expected VOLUME=DEVICE, found {item!r}")
    return volumes, dev
