"""The whole loop on the built-in ``tpcc`` preset (what `iomimic demo` shows).

preset model (from the TPC paper's published TPC-C figures) → a trace generated from it → a model
trained on that trace (levels and states chosen automatically) → a synthetic trace from the
trained model → the validation, with the locality-free baseline beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from iomimic.model import train
from iomimic.presets import assumptions, preset
from iomimic.validate import validate

EXAMPLE = "example-msr.csv.gz"
DEMO_REQUESTS = 100_000

#: Told each step as it ends: what was done, and lines of detail.
Step = Callable[[str, Sequence[str]], None]


def example_path() -> Path:
    """A small built-in trace: 5,000 synthetic requests in MSR Cambridge format, gzip-compressed."""
    return Path(str(resources.files("iomimic") / "data" / EXAMPLE))


def run_demo(step: Step, requests: int = DEMO_REQUESTS, seed: int = 7) -> dict[str, Any]:
    """Runs the loop, telling ``step`` what each stage did; returns the validation (the result
    of :func:`iomimic.validate.validate`)."""
    model = preset("tpcc")
    threads = ", ".join(f"{t['name']} ({t['weight']:.3g})" for t in model.data["threads"])
    step(
        f"preset tpcc: {len(model.data['threads'])} thread types: {threads}",
        [f"assumption: {line}" for line in assumptions("tpcc")],
    )
    original = model.generate(requests, seed=seed)
    step(f"generated {len(original):,} requests over {original.span_s:,.1f} s from the preset", ())
    trained = train(original, name="tpcc-demo", seed=seed)
    d = trained.data
    step(
        f"trained a model on them: {len(d['threads'])} threads, "
        f"{d['levels']} level(s) x {d['states']} states",
        (),
    )
    synthetic = trained.generate(requests, seed=seed + 1)
    step(f"generated {len(synthetic):,} synthetic requests from the trained model", ())
    result = validate(original, synthetic, baseline="locality-free", seed=seed)
    step("validated (the 'locality-free' columns score an IOMeter-like workload with the same mix)", ())
    return result
