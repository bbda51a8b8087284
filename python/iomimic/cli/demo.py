"""`iomimic demo`: the whole loop on the built-in tpcc preset, step by step."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from iomimic.cli import EXIT_OK
from iomimic.cli.args import subcommand


def register(subparsers) -> None:
    subcommand(
        subparsers,
        "demo",
        handle,
        "Run the whole loop on the built-in tpcc preset: preset, trace, model, trace, validation; "
        "then an SSD-caching study (8-32 GiB) on a built-in workload with reuse, its synthetic copy "
        "and a locality-free one.",
        "  iomimic demo\n",
    )


def handle(args: argparse.Namespace) -> int:
    from iomimic.demo import run_cache_demo, run_demo
    from iomimic.report import make_console
    from iomimic.report.validation import render_validation

    console = make_console()
    start = time.perf_counter()

    def step(text: str, details: Sequence[str]) -> None:
        # each step as it ends, with the seconds since the start: the loop takes a while
        console.print(f"[bold]{time.perf_counter() - start:5.1f}s[/bold]  {text}")
        for line in details:
            console.print(f"        {line}")

    render_validation(run_demo(step), console)
    render_cache_demo(run_cache_demo(step), console)
    return EXIT_OK


def render_cache_demo(report: dict, console) -> None:
    """The SSD-caching part: speedups per cache size for the three workloads, and what the
    synthetic one predicts."""
    from iomimic.report import table

    t = table("SSD caching: mean-latency speedup (hit ratio)")
    for name in ("cache", "original", "synthetic", "locality-free", "synthetic vs original"):
        t.add_column(name, justify="right")
    runs = {w["workload"]: w["runs"] for w in report["workloads"]}
    for i, p in enumerate(report["predictions"]):
        cells = [f"{p['cache_bytes'] >> 30} GiB"]
        for w in ("original", "synthetic", "locality-free"):
            r = runs[w][i]
            cells.append(f"{r['speedup']:.2f}x ({100 * r['hit_ratio']:.0f}%)")
        cells.append(f"{100 * p['synthetic_error']:+.1f}%")
        t.add_row(*cells)
    console.print(t)
    worst = max(abs(p["synthetic_error"]) for p in report["predictions"])
    lf = max(runs["locality-free"][i]["speedup"] for i in range(len(report["predictions"])))
    console.print(
        f"  the synthetic copy predicts the speedup within {100 * worst:.1f}% at every size", soft_wrap=True
    )
    console.print(f"  the locality-free workload speeds up at most {lf:.2f}x", soft_wrap=True)
