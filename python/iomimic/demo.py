"""`iomimic demo`: the whole loop on the built-in ``tpcc`` preset.

preset model (from the seeds' published TPC-C figures) → a trace generated from it → a model
trained on that trace (levels and states chosen automatically) → a synthetic trace from the
trained model → the validation table, with the locality-free baseline beside it.
"""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path

from iomimic.model import train
from iomimic.presets import assumptions, preset
from iomimic.report import make_console
from iomimic.validate import render, validate

EXAMPLE = "example-msr.csv.gz"
DEMO_REQUESTS = 100_000


def example_path() -> Path:
    """A small built-in trace: 5,000 synthetic requests in MSR Cambridge format, gzip-compressed."""
    return Path(str(resources.files("iomimic") / "data" / EXAMPLE))


def run_demo(requests: int = DEMO_REQUESTS, seed: int = 7) -> int:
    console = make_console()
    start = time.perf_counter()

    def step(text: str) -> None:
        console.print(f"[bold]{time.perf_counter() - start:5.1f}s[/bold]  {text}")

    model = preset("tpcc")
    threads = ", ".join(f"{t['name']} ({t['weight']:.3g})" for t in model.data["threads"])
    step(f"preset tpcc: {len(model.data['threads'])} thread types: {threads}")
    for line in assumptions("tpcc"):
        console.print(f"        assumption: {line}")
    original = model.generate(requests, seed=seed)
    step(f"generated {len(original):,} requests over {original.ts_ns[-1] / 1e9:,.1f} s from the preset")
    trained = train(original, name="tpcc-demo", seed=seed)
    d = trained.data
    step(
        f"trained a model on them: {len(d['threads'])} threads, {d['levels']} level(s) x {d['states']} states"
    )
    synthetic = trained.generate(requests, seed=seed + 1)
    step(f"generated {len(synthetic):,} synthetic requests from the trained model")
    result = validate(original, synthetic, baseline="locality-free", seed=seed)
    step("validated (the 'locality-free' columns score an IOMeter-like workload with the same mix)")
    render(result, console)
    return 0
