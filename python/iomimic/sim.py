"""Trace-driven simulation of disks, SSDs and RAID arrays (``docs/simulate.md``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iomimic import _core
from iomimic.errors import InputError
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
    options = {
        "iodepth": iodepth,
        "intensity": float(intensity),
        "scheduler": scheduler,
        "progress": progress,
    }
    if shared and map is not None:
        raise InputError("`shared` and `map`: give one of them (`shared` puts every volume on one device)")
    if shared or (len(trace.volumes) <= 1 and map is None):
        d = _core.simulate(*trace._core_args(), device_config(device, config), **options)
    else:
        where = placements(trace.volumes, map, device, config)
        d = _core.simulate_mapped(*trace._core_args(), where, **options)
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
        is_file = dev.endswith(".toml") or Path(dev).is_file()
        text = device_config(config=dev) if is_file else device_config(dev)
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
