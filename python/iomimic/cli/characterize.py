"""`iomimic characterize`: every figure of a trace."""

from __future__ import annotations

import argparse
import sys

from iomimic.cli import EXIT_OK
from iomimic.cli.args import TRACE_HELP, add_read_options, count, read_reported, subcommand, write_json


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "characterize",
        handle,
        "Every figure of a trace: mix, sizes, inter-arrival fit, sequentiality, spatial and temporal "
        "locality (miss-ratio curve), fluctuation, latency; per volume and stream; thread types.",
        "  iomimic characterize trace.csv\n"
        "  iomimic characterize trace.csv --json profile.json\n"
        "  iomimic characterize trace.csv --by stream --ranges 4 --window 60s\n"
        "  iomimic characterize big.csv --mrc trace           # skip per-volume/stream curves\n"
        "  iomimic characterize trace.csv --report figures/   # the report's figures as PNG\n",
    )
    p.add_argument("trace", help=TRACE_HELP)
    p.add_argument("--json", metavar="PATH", help="write every figure as JSON (- for stdout only)")
    p.add_argument(
        "--report", metavar="DIR", help="also draw the figures of `iomimic report` as PNG files in DIR"
    )
    p.add_argument("--by", choices=["stream", "volume"], help="classify streams or volumes into thread types")
    p.add_argument("--ranges", type=count, default=4, help="equal ranges of each volume's span (default 4)")
    p.add_argument("--window", help="fluctuation window, e.g. 60s or 500ms (default min(60s, span/100))")
    p.add_argument(
        "--mrc",
        choices=["all", "trace", "none"],
        default="all",
        help="miss-ratio curves for every group, the whole trace only, or none (default all)",
    )
    p.add_argument(
        "--mrc-budget",
        type=count,
        metavar="BLOCKS",
        help="distinct 4 KiB blocks a curve may track, at most 64 bytes each: exact when the trace's "
        "fit, else SHARDS-sampled down to them (default 8388608, about 512 MiB)",
    )
    p.add_argument("--mrc-sampling", type=float, help="force a SHARDS sampling rate in (0, 1]")
    add_read_options(p)


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.progress import working
    from iomimic.profile import characterize
    from iomimic.report import make_console
    from iomimic.report.profile import render_profile

    trace = read_reported(args)
    with working("characterizing", share=True) as progress:
        profile = characterize(
            trace,
            ranges=args.ranges,
            window=args.window,
            by=args.by,
            mrc=args.mrc,
            mrc_sampling=args.mrc_sampling,
            mrc_budget=args.mrc_budget,
            progress=progress,
        )
    if args.report:
        from iomimic.report.figures import prepare, write_pngs

        for path in write_pngs(prepare([("trace", trace)]), args.report):
            print(f"wrote {path}", file=sys.stderr)
    if args.json and write_json(args.json, profile):
        return EXIT_OK
    render_profile(profile, make_console())
    return EXIT_OK
