"""`iomimic formats`: the trace formats iomimic reads."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import subcommand


def register(subparsers) -> None:
    subcommand(subparsers, "formats", handle, "List the trace formats iomimic reads.", "  iomimic formats\n")


def handle(args: argparse.Namespace) -> int:
    from iomimic.io import formats
    from iomimic.report import make_console
    from iomimic.report.catalog import render_formats

    render_formats(formats(), make_console())
    return EXIT_OK
