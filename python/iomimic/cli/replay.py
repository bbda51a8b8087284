"""`iomimic replay`: a trace's requests issued against files or a device at their times."""

from __future__ import annotations

import argparse

from iomimic.cli.args import (
    TRACE_HELP,
    add_intensity,
    add_read_options,
    add_target_options,
    intensity,
    read_reported,
    selecting,
    subcommand,
    wall_clock,
)
from iomimic.cli.run import issue


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "replay",
        handle,
        "Issue a trace's requests against files or a device at their times (or faster).",
        "  iomimic replay trace.csv --target /data/f.dat --size 8G -o done.parquet\n"
        "  iomimic replay trace.csv --target f.dat --intensity 2     # twice as fast\n"
        "  iomimic replay trace.csv --target f.dat --no-stall --engine null\n",
    )
    p.add_argument("trace", help=TRACE_HELP)
    add_intensity(p, "the trace's rate")
    p.add_argument(
        "--duration",
        help="stop issuing after this long, wall-clock (fio's runtime), e.g. 60s; after any --ramp",
    )
    add_target_options(p)
    add_read_options(p)


def handle(args: argparse.Namespace) -> int:
    from iomimic.io import ParquetPieces

    speed = intensity(args)

    # a Parquet trace with nothing to keep per request is issued a row group at a time, so a
    # long one never sits in memory whole
    pieces = None
    if not (args.output or args.verify or selecting(args)) and args.format in (None, "parquet"):
        pieces = ParquetPieces.open(args.trace)
    ramp_s, until_s = wall_clock(args)
    return issue(args, pieces or read_reported(args), speed, until_s, ramp_s)
