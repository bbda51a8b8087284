"""`iomimic study prefetch`: array prefetching for nearly sequential workloads, Keeton et al.'s
synthetic experiments or a trace's sequentiality and prefetch benefit."""

from __future__ import annotations

import argparse
from typing import Any

from iomimic.cli import EXIT_OK
from iomimic.cli.args import add_read_options, count, seed, subcommand, write_json
from iomimic.cli.study import device_text


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "prefetch",
        handle,
        "Array prefetching (Keeton et al.): --experiment jumps (runs of 4 and 256 4 KiB reads at "
        "50/s with a sweep of jumps between runs) or streams (interleaved streams at 100/s in "
        "all), each with the controller's minimum prefetch 0 and 64 KiB, on the FC-60 RAID 5 "
        "LUN; or a trace's sequentiality metrics with its predicted and simulated benefit.",
        "  iomimic study prefetch --experiment jumps --plot jumps.png\n"
        "  iomimic study prefetch --experiment streams --json streams.json\n"
        "  iomimic study prefetch trace.csv\n",
    )
    p.param_aliases = {"prefetch_kib": "prefetch"}
    p.add_argument("workload", nargs="?", help="a trace file, a model (.json) or a preset")
    p.add_argument("--experiment", choices=("jumps", "streams"), help="run a synthetic experiment instead")
    p.add_argument("--device", default="fc60-r5-4disk", help="array preset or file (default fc60-r5-4disk)")
    p.add_argument(
        "--prefetch",
        default="0,64",
        help="minimum prefetch sizes: KiB counts or sizes such as 64k, 1M (default 0,64)",
    )
    p.add_argument(
        "--point-requests",
        type=count,
        default=2048,
        help="requests per point of an --experiment (default 2048)",
    )
    p.add_argument(
        "-n", "--requests", type=count, help="requests to generate from a model (default: its count)"
    )
    p.add_argument("--seed", type=seed, default=1, help="seed (default 1)")
    p.add_argument("--json", metavar="PATH", help="write the report as JSON (- for stdout only)")
    p.add_argument("--plot", metavar="PNG", help="also draw the report as a plot")
    add_read_options(p)


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.study import note_one_device, run, run_alone, warn_if_saturated
    from iomimic.errors import InputError
    from iomimic.report import make_console
    from iomimic.report.prefetch import plot_prefetch, render_prefetch

    if bool(args.experiment) == bool(args.workload):
        raise InputError("give a workload or --experiment (not both)")
    if args.experiment and args.requests is not None:
        raise InputError(
            "--requests sizes a workload generated from a model; an experiment's points take --point-requests"
        )
    sizes = [_kib(x.strip()) for x in args.prefetch.split(",") if x.strip()]
    options: dict[str, Any] = {
        "device": device_text(args.device),
        "prefetch_kib": sizes,
        "requests": args.point_requests,
        "seed": args.seed,
    }
    if args.experiment:
        report = run_alone("prefetch", experiment=args.experiment, **options)
    else:
        from iomimic.cli.study import workload

        trace, _ = workload(args)
        report = run("prefetch", trace, **options)
        slowest = min(report["runs"], key=lambda r: r["iops"])
        note_one_device(trace, args.device)
        warn_if_saturated(trace, 1.0, slowest["iops"], args.device, "study a faster array with --device")
    if args.plot:
        plot_prefetch(report, args.plot)
    if args.json and write_json(args.json, report):
        return EXIT_OK
    render_prefetch(report, make_console())
    if args.plot:
        print(f"wrote {args.plot}")
    return EXIT_OK


def _kib(text: str) -> int:
    """A minimum prefetch in KiB: a bare number counts KiB (as the controller's settings do),
    a size with a unit (64k, 1M) is converted."""
    from iomimic.errors import InputError
    from iomimic.units import parse_size_bytes

    if text.isdigit():
        return int(text)
    size = parse_size_bytes(text, "prefetch")
    if size % 1024:
        raise InputError(f"--prefetch: {text} is not a whole number of KiB")
    return size // 1024
