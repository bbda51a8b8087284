"""Trace-driven simulation of disks, SSDs and RAID arrays (``docs/simulate.md``)."""

from __future__ import annotations

import os
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
    iodepth: int | None = None,
    intensity: float = 1.0,
    scheduler: str | None = None,
) -> tuple[Trace, dict[str, Any]]:
    """Replays ``trace`` on a simulated device or array.

    Open loop by default (requests arrive at their trace times, divided by ``intensity``);
    ``iodepth`` makes it closed loop with that many outstanding. Returns the trace with
    ``latency_ns`` filled in (times as simulated), a ``status`` column when injected failed
    sectors failed requests (``EIO``), and the run's figures.

    >>> t = Trace(ts_ns=[0, 10**6], offset=[0, 1 << 30], size=[4096, 4096], op=[0, 0])
    >>> out, figures = simulate(t, "hdd-7200")
    >>> len(out), figures["requests"], out.latency_ns.min() > 0
    (2, 2, True)
    """
    text = device_config(device, config)
    d = _core.simulate(
        *trace._core_args(),
        text,
        iodepth=iodepth,
        intensity=float(intensity),
        scheduler=scheduler,
    )
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
