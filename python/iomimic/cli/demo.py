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
        "Run the whole loop on the built-in tpcc preset: preset, trace, model, trace, validation.",
        "  iomimic demo\n",
    )


def handle(args: argparse.Namespace) -> int:
    from iomimic.demo import run_demo
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
    return EXIT_OK
