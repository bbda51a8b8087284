"""What the benchmark scripts share: the synthetic MSR trace they all read, and best-of timing."""

from __future__ import annotations

import time
from pathlib import Path

from msr_synth import write_msr

OUT = Path(__file__).resolve().parent.parent / "bench-out"


def msr_trace(lines: int) -> Path:
    """The benchmark trace of `lines` MSR lines, written once into bench-out/."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"msr-{lines}.csv"
    if not path.exists():
        print(f"writing {lines:,} MSR lines to {path} ...", flush=True)
        write_msr(str(path), lines)
    return path


def best_of(repeat: int, fn) -> tuple[float, object]:
    """The shortest of `repeat` timed calls of `fn`, and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result
