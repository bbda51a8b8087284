"""`iomimic devices`: the device presets of the simulator."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import subcommand
from iomimic.errors import InputError


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "devices",
        handle,
        "List the device presets and their parameters.",
        "  iomimic devices\n  iomimic devices --show fc60-r5-4disk\n",
    )
    p.add_argument(
        "--show", metavar="NAME", help="print only that preset's device file (TOML), e.g. to edit a copy"
    )


def handle(args: argparse.Namespace) -> int:
    from iomimic.report import make_console
    from iomimic.report.catalog import render_devices
    from iomimic.sim import device_presets, device_table

    presets = device_presets()
    if args.show:
        # the device file alone, so it can be redirected to a file and edited
        if args.show not in presets:
            raise InputError(f"unknown device {args.show!r}; presets are {', '.join(presets)}")
        print(presets[args.show], end="")
        return EXIT_OK
    render_devices(device_table(), make_console())
    return EXIT_OK
