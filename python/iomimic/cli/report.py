"""`iomimic report`: one self-contained HTML page of a trace's figures (or a synthetic trace's
beside its original, with the validation table on top)."""

from __future__ import annotations

import argparse
from pathlib import Path

from iomimic.cli import EXIT_OK
from iomimic.cli.args import add_read_options, read_reported, select, subcommand
from iomimic.errors import InputError


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "report",
        handle,
        "Write one self-contained HTML page of a trace's figures: offset against time, IOPS and MB/s "
        "over time, sizes, gaps, a heat map, the miss-ratio curve, the busiest streams; with a "
        "synthetic trace, both on every figure and the validation table on top.",
        "  iomimic report hm_0.csv -o hm_0.html\n"
        "  iomimic report hm_0.csv synth.parquet -o fidelity.html\n"
        "  iomimic report trace.blkparse.txt -o t.html --start 10s --end 70s\n",
    )
    p.add_argument("trace", help="the trace (the original, when a synthetic one follows)")
    p.add_argument(
        "synthetic",
        nargs="?",
        help="a synthetic trace to draw beside it (any format; --start, --end, ... choose from both)",
    )
    p.add_argument("-o", "--output", required=True, help="the HTML page to write")
    p.add_argument("--title", help="the page's title (default: the trace's path)")
    add_read_options(p)


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.progress import working
    from iomimic.io import atomic_output, read_trace
    from iomimic.report.html import build_page

    suffix = Path(args.output).suffix.lower()
    if suffix not in ("", ".html", ".htm"):
        # (checked before the work: a page named .png or .pdf would open as nothing)
        raise InputError(f"--output: {args.output} would hold an HTML page: name it .html")
    original = read_reported(args)
    # the selection options choose the same part of both: compared whole, a cut original
    # would be judged against the whole synthetic trace
    synthetic = select(read_trace(args.synthetic), args) if args.synthetic else None
    # characterizing, validating and drawing: several stages of unknown length, so the bar
    # only shows that work goes on and for how long
    with working("building the report"):
        page = build_page(original, synthetic, title=args.title)
    with atomic_output(args.output) as tmp:
        tmp.write_text(page, encoding="utf-8")
    print(f"wrote {args.output} ({len(page) / 1e6:.1f} MB, self-contained)")
    return EXIT_OK
