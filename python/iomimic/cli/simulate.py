"""`iomimic simulate`: a trace replayed on a simulated disk, SSD or array."""

from __future__ import annotations

import argparse
import sys

from iomimic.cli import EXIT_OK
from iomimic.cli.args import (
    TRACE_HELP,
    add_intensity,
    add_read_options,
    count,
    intensity,
    read_reported,
    subcommand,
    write_json,
)


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "simulate",
        handle,
        "Replay a trace on a simulated disk, SSD or RAID array: latency, IOPS, utilisation, energy.",
        "  iomimic simulate trace.csv --device hdd-7200\n"
        "  iomimic simulate trace.csv --device fc60-r5-4disk --json sim.json -o with_latency.parquet\n"
        "  iomimic simulate trace.csv --config my_array.toml --intensity 2\n"
        "  iomimic simulate trace.csv --device ssd-nvme --iodepth 32       # closed loop\n"
        "  iomimic simulate trace.csv --device hdd-7200 --map log=ssd-sata  # data on a disk, log on an SSD\n"
        "  iomimic simulate trace.csv --map data+log=tpc-raid10-28disk     # two volumes on one array\n",
    )
    p.add_argument("trace", help=TRACE_HELP)
    p.add_argument("--device", help="a preset (see `iomimic devices`)")
    p.add_argument("--config", help="a device file (TOML; see docs/simulate.md)")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--map",
        metavar="VOLUME=DEVICE,...",
        help="a trace of several volumes puts each on its own device of --device/--config; this "
        "names others (a preset or a .toml device file; A+B=DEVICE puts two volumes on one)",
    )
    g.add_argument(
        "--shared",
        action="store_true",
        help="put every volume on the one device instead, each in an equal region of it",
    )
    p.add_argument(
        "--iodepth", type=count, help="closed loop with this many outstanding (default: open loop)"
    )
    add_intensity(p, "the trace's rate (open loop)")
    p.add_argument(
        "--scheduler", choices=["fifo", "sstf", "sptf"], help="override the device file's disk scheduler"
    )
    p.add_argument(
        "-o", "--output", help="write the trace with simulated latencies (.parquet, .csv or .csv.gz)"
    )
    p.add_argument("--json", metavar="PATH", help="write the figures as JSON (- for stdout only)")
    add_read_options(p)


def handle(args: argparse.Namespace) -> int:
    from iomimic.io import output_format, write_trace
    from iomimic.report import make_console
    from iomimic.report.simulation import render_simulation, saturation_warnings
    from iomimic.sim import simulate

    fmt = output_format(args.output, None) if args.output else None
    from iomimic.cli.progress import working

    trace = read_reported(args)
    with working("simulating") as progress:
        out, figures = simulate(
            trace,
            args.device,
            config=args.config,
            map=args.map,
            shared=args.shared,
            iodepth=args.iodepth,
            intensity=intensity(args),
            scheduler=args.scheduler,
            progress=progress,
        )
    if args.output:
        write_trace(out, args.output, fmt)
    if args.json and write_json(args.json, figures):
        return EXIT_OK
    render_simulation(figures, make_console())
    if args.shared and len(trace.volumes) > 1:
        print(
            f"note: the trace's {len(trace.volumes)} volumes share this one device, each in an equal "
            "region of it (without --shared each has its own)",
            file=sys.stderr,
        )
    for warning in saturation_warnings(figures):
        print(f"iomimic: warning: {warning}", file=sys.stderr)
    return EXIT_OK
