"""What-if studies (``iomimic study NAME``): each runs in the core on a workload with its own
options and returns its report as plain data. A workload is a trace, or is generated from a
model or a preset."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iomimic import _core
from iomimic.errors import InputError
from iomimic.trace import Trace


def studies() -> list[tuple[str, str]]:
    """Every study: (name, what it does)."""
    return list(_core.study_table())


def run(
    name: str,
    workload: Trace,
    *,
    progress: Callable[[int, int], None] | None = None,
    ray: bool | str | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Runs study ``name`` on ``workload``; ``options`` are the study's own (a bad one raises
    InputError naming it). ``progress(done, total)`` is called about ten times a second with
    what the study counts (workloads, configurations; ``total`` 0 while unknown).

    ``ray`` (``True`` or a cluster's address) runs each point of a sweep (ssd-cache: each
    policy and cache size; defrag: each policy; early-errors: each intensity) as a Ray task
    and joins their reports into the one a local run gives (``docs/ray.md``); the other
    studies run as one piece.

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
    text = json.dumps(options)
    if ray is None or ray is False:
        return _core.run_study(name, *workload._core_args(), text, progress=progress)
    from iomimic import cluster

    engine = cluster.connect(ray)
    points = _core.study_points(name, text)
    if points is None:
        raise InputError(f"study {name} runs as one piece: run it without ray")
    shared = (name, workload.columns, workload.volumes, workload.files)
    reports = cluster.run_tasks(engine, _study_point, shared, points)
    return _core.join_study(name, text, reports)


def _study_point(shared: tuple[str, dict[str, Any], list[str], list[str]], point: str) -> str:
    """A Ray task: one point of a study's sweep, its report as JSON text."""
    from iomimic.trace import _Columns

    name, columns, volumes, files = shared
    return json.dumps(_core.run_study(name, _Columns(columns), volumes, files, point))


def run_alone(
    name: str, *, progress: Callable[[int, int], None] | None = None, **options: Any
) -> dict[str, Any]:
    """Runs study ``name``, one whose inputs are all in its ``options`` (no workload);
    ``progress`` as for :func:`run`.

    >>> r = run_alone("cache-alloc", schemes=["working-set", "transaction-aware"])
    >>> [round(s["schemes"][1]["overall"], 5) for s in r["scenarios"]]
    [0.53875, 0.71875, 0.80875]
    """
    return _core.run_study_alone(name, json.dumps(options), progress=progress)


def workload(
    source: str | os.PathLike, *, requests: int | None = None, seed: int = 1, **read_options: Any
) -> tuple[Trace, str]:
    """The workload a study runs on, and what it is: a trace file (read with
    ``read_options``), a model file (``.json``, ``.json.gz``) or a preset's name, the last two generated
    (``requests`` of them, default the model's count, from ``seed``)."""
    from iomimic.io import read_trace
    from iomimic.model import Model, is_model_path
    from iomimic.presets import preset

    text = os.fspath(source)
    if not is_generated(text):
        return read_trace(text, **read_options), "trace"
    if is_model_path(text):
        return Model.load(text).generate(requests, seed=seed), "model"
    return preset(text).generate(requests, seed=seed), "model"


def is_generated(source: str | os.PathLike) -> bool:
    """Whether a study's workload is generated: a model file (``.json``, ``.json.gz``) or a
    preset's name (a file of that name is read instead)."""
    from iomimic.model import is_model_path
    from iomimic.presets import PRESETS

    text = os.fspath(source)
    return (text in PRESETS and not Path(text).exists()) or is_model_path(text)


def early_errors_on_targets(
    trace: Trace,
    targets: list[str],
    *,
    intensities: list[float],
    checkpoints: int = 100,
    rule: dict[str, Any] | None = None,
    progress: Callable[[int, float, float | None], None] | None = None,
    **run_settings: Any,
) -> dict[str, Any]:
    """The early-error rule on real devices: at each intensity, every target runs the
    workload (each from its own point of it, all at once, through the engine), and the rule
    judges their measured latencies and errors. ``run_settings`` are :func:`iomimic.run`'s
    (``size``, ``engine``, ``allow_device``, ``overwrite``, ...); no fault is injected, so every
    flag is a finding."""
    from iomimic.realio import run as run_io

    if len(targets) < 2:
        raise InputError("--targets: the rule compares devices with each other, give at least two")
    outcomes = []
    for level, k in enumerate(intensities):
        fleet = Trace._from_reader(_core.fleet_workload(*trace._core_args(), len(targets), float(k)))
        # one count over every run: requests done in earlier intensities come first
        base = level * len(fleet)
        step = None if progress is None else lambda done, t, lag, base=base: progress(base + done, t, lag)
        done, figures = run_io(fleet, targets, progress=step, **run_settings)
        outcome = _core.judge_fleet(*done._core_args(), float(k), checkpoints, json.dumps(rule or {}))
        outcome["run"] = {key: figures[key] for key in ("requests", "iops", "failed") if key in figures}
        outcomes.append(outcome)
    return {
        "device": "real targets",
        "targets": list(targets),
        "devices": len(targets),
        "faulty": [],
        "requests_per_device": len(trace),
        "rule": rule or {},
        "intensities": outcomes,
    }
