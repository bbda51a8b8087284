"""`iomimic validate`: a synthetic trace against its original."""

from __future__ import annotations

import argparse
import sys

from iomimic.cli import EXIT_FAILURE, EXIT_OK
from iomimic.cli.args import count, seed, subcommand, write_json


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "validate",
        handle,
        "Compare a synthetic trace with the original: the modelling papers' validation table, and more.",
        "  iomimic validate trace.csv synth.parquet\n"
        "  iomimic validate trace.csv synth.parquet --baseline locality-free --report plots/\n",
    )
    p.add_argument("original", help="the original trace")
    p.add_argument("synthetic", help="the synthetic trace")
    p.add_argument("--baseline", choices=["locality-free"], help="also score an IOMeter-like workload")
    p.add_argument("--json", metavar="PATH", help="write the comparison as JSON (- for stdout only)")
    p.add_argument("--report", metavar="DIR", help="also write plots (PNG) to DIR")
    p.add_argument("--ranges", type=count, default=4, help="spatial ranges (default 4)")
    p.add_argument("--seed", type=seed, default=1, help="seed of the baseline")
    p.add_argument("-f", "--format", help="format of the original (default: detected)")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed lines of the original")
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a target is missed (to gate a CI job); the table and --json are written first",
    )


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.progress import working
    from iomimic.io import read_trace
    from iomimic.report import make_console
    from iomimic.report.validation import plot_report, render_validation
    from iomimic.validate import validate

    original = read_trace(args.original, format=args.format, skip_bad=args.skip_bad)
    synthetic = read_trace(args.synthetic)
    with working("validating", share=True) as progress:
        result = validate(
            original, synthetic, baseline=args.baseline, seed=args.seed, ranges=args.ranges, progress=progress
        )
    verdict = EXIT_FAILURE if args.strict and result["passed"] < result["checked"] else EXIT_OK
    if args.json and write_json(args.json, result):
        return verdict
    render_validation(result, make_console())
    if args.report:
        for path in plot_report(result, args.report):
            print(f"wrote {path}")
    if verdict != EXIT_OK:
        missed = [r["metric"] for r in result["rows"] if r["ok"] is False]
        print(f"iomimic: validate --strict: missed {', '.join(missed)}", file=sys.stderr)
    return verdict
