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


def handle(args: argparse.Namespace) -> int:
    from iomimic.io import parquet_summary, summary
    from iomimic.report import make_console
    from iomimic.report.info import render_info

    # Parquet (a file, or a directory of parts) is counted a row group at a time, and one file
    # of another format a chunk of parsed rows at a time: neither is read whole
    whole = selecting(args) or args.volume_names != "records"
    s = None if whole or args.format not in (None, "parquet") else parquet_summary(args.trace)
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
    """:func:`iomimic.io.text_summary` of the one file named, with a progress bar on a
    terminal; None when it is not one file of a text or binary format."""
    from iomimic.cli.progress import reading
    from iomimic.io import text_summary

    progress, close = reading(args.trace)
    try:
        return text_summary(
            args.trace,
            args.format,
            skip_bad=args.skip_bad,
            time_unit=args.time_unit,
            event=args.event,
            columns=args.columns,
            delimiter=args.delimiter,
            progress=progress,
        )
    finally:
        close()
