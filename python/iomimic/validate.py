"""Validation: how faithful a synthetic workload is to the original, figure by figure.

Both traces are characterized with the same options (the original's fluctuation window), then
compared as the Messenger table does: metric / original / synthetic / variation, each row
with its target (``docs/model.md``: every scalar within 2 %, spatial histogram L1/2 ≤ 0.02,
miss-ratio curve error ≤ 0.03). The comparison is the core's (``analyze::compare``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from iomimic import _core
from iomimic.trace import Trace
from iomimic.units import parse_seed


def validate(
    original: Trace,
    synthetic: Trace,
    *,
    baseline: str | None = None,
    seed: int = 1,
    ranges: int = 4,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Compares ``synthetic`` with ``original`` (the core's ``analyze::compare``, the one
    definition of fidelity); ``baseline="locality-free"`` also scores an IOMeter-like workload
    (the original's mix, sizes and gaps at uniformly random offsets). ``progress(done, total)``
    is called about ten times a second; Ctrl-C stops the work (KeyboardInterrupt)."""
    result = _core.validate_traces(
        original._core_args()[0],
        (original.volumes, original.files),
        synthetic._core_args()[0],
        (synthetic.volumes, synthetic.files),
        ranges=ranges,
        baseline=baseline,
        seed=parse_seed(seed),
        progress=progress,
    )
    for key, trace in (("original", original), ("synthetic", synthetic)):
        result[key]["source"] = {k: trace.report[k] for k in ("path", "format") if k in trace.report}
    if "baseline" in result:
        result["baseline"]["source"] = {}
    return result
