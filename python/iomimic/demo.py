"""The whole loop on the built-in ``tpcc`` preset (what `iomimic demo` shows).

preset model (from the TPC paper's published TPC-C figures) → a trace generated from it → a model
trained on that trace (levels and states chosen automatically) → a synthetic trace from the
trained model → the validation, with the locality-free baseline beside it.

Then the TPC paper's SSD-caching study in small: SSD caches of 8 to 32 GiB in front of the
28-disk array, on a workload, on a synthetic copy made from its model, and on a locality-free
one. The published TPC figures give no reuse (a cache of any size hits nothing on the presets),
so this part runs on a built-in workload that has some: reads by Zipf popularity
(:data:`CACHE_WORKLOAD`), as fio's ``random_distribution=zipf`` makes them.
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
#: The SSD-caching part's workload: 1 MiB reads over 256 GiB by Zipf popularity (θ = 0.8) at 200
#: a second, 30,000 of them (a footprint of about 19 GiB, so 8-32 GiB caches differ).
CACHE_WORKLOAD = "randread 1m zipf=0.8 span=256g rate=200 poisson"
CACHE_REQUESTS = 30_000
CACHE_SIZES_GIB = (8, 16, 32)

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


def run_cache_demo(step: Step, requests: int = CACHE_REQUESTS, seed: int = 7) -> dict[str, Any]:
    """The SSD-caching part: :data:`CACHE_WORKLOAD` with read-only SSD caches of
    :data:`CACHE_SIZES_GIB` in front of ``tpc-raid10-28disk``, on the workload, on a trace of a
    model trained on it and on a locality-free one; returns the study's report
    (:func:`iomimic.study.run`)."""
    from iomimic import study
    from iomimic.pattern import pattern_trace
    from iomimic.sim import device_config

    original = pattern_trace(CACHE_WORKLOAD, requests, seed=seed)
    step(
        f"SSD caching: {len(original):,} requests of the pattern {CACHE_WORKLOAD!r} "
        "(the TPC presets publish no reuse, so no cache would hit on them)",
        (),
    )
    report = study.run(
        "ssd-cache",
        original,
        backend=device_config("tpc-raid10-28disk"),
        ssd=device_config("ssd-sata"),
        ssd_bytes=8 << 30,
        cache_bytes=[gb << 30 for gb in CACHE_SIZES_GIB],
        policies=["lru"],
        write_policy="read-only",
        block_bytes=1 << 20,
        workloads=["original", "synthetic", "locality-free"],
        seed=seed,
        by_stream=False,
    )
    step(
        "simulated LRU SSD caches of "
        + ", ".join(f"{gb} GiB" for gb in CACHE_SIZES_GIB)
        + " on the workload, on a synthetic one from its model, and on a locality-free one",
        (),
    )
    return report
