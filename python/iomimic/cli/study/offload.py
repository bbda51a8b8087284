"""`iomimic study offload`: Everest write off-loading for peak loads, on the simulator."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import add_intensity, count, intensity, subcommand, write_json
from iomimic.cli.study import add_workload_arguments, device_text, workload


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "offload",
        handle,
        "Everest write off-loading for peak loads: each volume a client on its own simulated "
        "device, stores on the other volumes; peaks detected, off-load on vs off, mean and p99 "
        "read/write response time per peak, store occupancy, reclaim time, peak correlation.",
        "  iomimic study offload trace.csv --stores 3 --n-way 2 --json peaks.json --plot peaks.png\n"
        "  iomimic study offload trace.csv --volumes web,mail,db --device hdd-15k --store-size 1G\n",
    )
    add_workload_arguments(p)
    p.param_aliases = {"store_bytes": "store_size", "window_ms": "window"}
    p.add_argument("--volumes", default="all", help="volumes to study, comma-separated (default all)")
    p.add_argument(
        "--device", default="hdd-7200", help="device preset or file of every volume (default hdd-7200)"
    )
    p.add_argument("--stores", type=count, default=3, help="stores, store i on volume i mod V (default 3)")
    p.add_argument(
        "--n-way", type=count, default=1, help="stores a volume spreads off-loads over (default 1)"
    )
    p.add_argument("--replicas", type=count, default=1, help="stores each off-load goes to (default 1)")
    p.add_argument("--store-size", help="each store's size (default 3%% of its volume's span, at least 16M)")
    p.add_argument(
        "--loaded-iops",
        type=float,
        help="a volume is loaded from this rate (default: peak factor × its median)",
    )
    p.add_argument(
        "--light-iops",
        type=float,
        help="a store's volume is lightly loaded below this (default: half the above)",
    )
    p.add_argument(
        "--peak-factor",
        type=float,
        default=3.0,
        help="peak threshold over a volume's median rate (default 3)",
    )
    p.add_argument("--window", default="1s", help="window of the peak and correlation figures (default 1s)")
    p.add_argument("--workers", type=count, default=4, help="reclaim workers per volume (default 4)")
    add_intensity(p, "the workload's rate")


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.study import run
    from iomimic.report import make_console
    from iomimic.report.offload import plot_offload_study, render_offload_study
    from iomimic.units import parse_duration_ns, parse_size_bytes

    trace, kind = workload(args)
    options = {
        "device": device_text(args.device),
        "stores": args.stores,
        "n_way": args.n_way,
        "replicas": args.replicas,
        "peak_factor": args.peak_factor,
        "window_ms": parse_duration_ns(args.window, "window_ms") / 1e6,
        "workers": args.workers,
        "intensity": intensity(args),
    }
    if args.volumes != "all":
        options["volumes"] = [v for v in args.volumes.split(",") if v]
    if args.store_size:
        options["store_bytes"] = parse_size_bytes(args.store_size, "store_bytes")
    if args.loaded_iops is not None:
        options["loaded_iops"] = args.loaded_iops
    if args.light_iops is not None:
        options["light_iops"] = args.light_iops
    report = run("offload", trace, **options)
    report["source"] = {"workload": str(args.workload), "kind": kind}
    if args.plot:
        plot_offload_study(report, args.plot)
    if args.json and write_json(args.json, report):
        return EXIT_OK
    render_offload_study(report, make_console())
    if args.plot:
        print(f"wrote {args.plot}")
    return EXIT_OK
