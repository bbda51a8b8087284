"""What-if studies (``iomimic study NAME``): each runs in the core on a workload with its own
options and returns its report as plain data. A workload is a trace, or is generated from a
model or a preset."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from iomimic import _core
from iomimic.trace import Trace


def studies() -> list[tuple[str, str]]:
    """Every study: (name, what it does)."""
    return list(_core.study_table())


def run(name: str, workload: Trace, **options: Any) -> dict[str, Any]:
    """Runs study ``name`` on ``workload``; ``options`` are the study's own (a bad one raises
    InputError naming it).

    >>> import iomimic
    >>> offsets = [(i % 40) * 4096 for i in range(400)]
    >>> ts = range(0, 400_000_000, 1_000_000)
    >>> t = iomimic.Trace(ts_ns=ts, offset=offsets, size=[4096] * 400, op=[0] * 400)
    >>> from iomimic.sim import device_config
    >>> r = run("ssd-cache", t, backend=device_config("hdd-7200"), ssd=device_config("ssd-sata"),
    ...         cache_bytes=[1 << 20], write_policy="read-only")
    >>> run0 = r["workloads"][0]["runs"][0]
    >>> round(run0["hit_ratio"], 2), run0["speedup"] > 1
    (0.9, True)
    """
    return _core.run_study(name, *workload._core_args(), json.dumps(options))


def workload(
    source: str | os.PathLike, *, requests: int | None = None, seed: int = 1, **read_options: Any
) -> tuple[Trace, str]:
    """The workload a study runs on, and what it is: a trace file (read with
    ``read_options``), a model file (``.json``) or a preset's name, the last two generated
    (``requests`` of them, default the model's count, from ``seed``)."""
    from iomimic.io import read_trace
    from iomimic.model import Model
    from iomimic.presets import PRESETS, preset

    text = os.fspath(source)
    if text in PRESETS and not Path(text).exists():
        return preset(text).generate(requests, seed=seed), "model"
    if text.lower().endswith(".json"):
        return Model.load(text).generate(requests, seed=seed), "model"
    return read_trace(text, **read_options), "trace"
