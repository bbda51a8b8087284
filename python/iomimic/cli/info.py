"""`iomimic info`: a trace's summary."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import (
    TRACE_HELP,
    add_read_options,
    count,
    read,
    report_reading,
    selecting,
    subcommand,
    write_json,
)


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "info",
        handle,
        "Summarise a trace: format, requests, reads/writes, volumes, span, bytes.",
        "  iomimic info wsrch-small.trace\n"
        "  iomimic info hm_0.csv.gz --json hm0.json\n"
        "  iomimic info trace.txt --format blkparse --skip-bad\n",
    )
    p.add_argument("trace", help=TRACE_HELP)
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON (- for stdout only)")
    p.add_argument("--max-volumes", type=count, default=20, help="volumes listed in the table (default 20)")
    add_read_options(p)
    p.set_defaults(parquet_in_place=True)  # a Parquet URL is read in place (iomimic.remote)


def handle(args: argparse.Namespace) -> int:
    from iomimic.io import parquet_summary, summary
    from iomimic.report import make_console
    from iomimic.report.info import render_info

    # Parquet (a file, or a directory of parts) is counted a row group at a time, and files of
    # other formats a chunk of parsed rows at a time: none is read whole
    whole = selecting(args)
    parquet = not whole and args.volume_names == "records" and args.format in (None, "parquet")
    s = parquet_summary(args.trace) if parquet else None
    if s is None and not whole:
        s = _counted(args)
    if s is None:
        s = summary(read(args))
    report_reading(s)
    if args.json and write_json(args.json, s):
        return EXIT_OK
    render_info(s, make_console(), max_volumes=args.max_volumes)
    return EXIT_OK


def _counted(args: argparse.Namespace):
    """:func:`iomimic.io.text_summary` of the one file named, or
    :func:`iomimic.pieces.text_parts_summary` of the files of a directory or glob, with a progress
    bar on a terminal; None when they are not files of text or binary formats."""
    from iomimic.cli.args import read_options
    from iomimic.cli.progress import reading
    from iomimic.io import text_summary
    from iomimic.pieces import text_parts_summary
    from iomimic.remote import is_url

    if is_url(args.trace):
        return None  # Parquet kept at its URL that does not suit counting: read whole, copied
    options = read_options(args)
    progress, close = reading(args.trace)
    try:
        s = text_summary(args.trace, progress=progress, **options)
        if s is None:
            s = text_parts_summary(args.trace, volume_names=args.volume_names, progress=progress, **options)
        return s
    finally:
        close()
