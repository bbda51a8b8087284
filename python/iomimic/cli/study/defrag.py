"""`iomimic study defrag`: defragmentation quantified without performing it."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import add_intensity, add_ray, count, intensity, ray_engine, subcommand, write_json
from iomimic.cli.study import add_workload_arguments, device_text, workload


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "defrag",
        handle,
        "Defragmentation without performing it: blocks laid out again so that what is read "
        "together lies together, the workload replayed: random/sequential shares, speedup and "
        "energy before and after.",
        "  iomimic study defrag trace.csv --device hdd-7200 --policy full\n"
        "  iomimic study defrag model.json --policy partial:10% --policy dynamic\n"
        "  iomimic study defrag tpcc -n 100000 --intensity 0.1 --device tpc-raid10-28disk \\\n"
        "      --json defrag.json\n",
    )
    add_workload_arguments(p)
    p.param_aliases = {"policies": "policy", "block_bytes": "block_size"}
    p.add_argument("--device", default="hdd-7200", help="device preset or file (default hdd-7200)")
    p.add_argument(
        "--policy",
        action="append",
        help="full, partial:P%% (only the hottest P%% of blocks move) or dynamic (the layout "
        "follows the workload, window by window); repeat for several (default full)",
    )
    p.add_argument("--block-size", default="4k", help="the unit blocks move in (default 4k)")
    p.add_argument("--windows", type=count, default=10, help="windows of the dynamic policy (default 10)")
    add_intensity(p, "the workload's rate")
    add_ray(p, "run each policy")


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.study import note_one_device, run, warn_if_saturated
    from iomimic.report import make_console
    from iomimic.report.defrag import plot_defrag, render_defrag
    from iomimic.units import parse_size_bytes

    # Ray is connected (or its absence reported) before the workload is read
    ray_engine(args)
    trace, kind = workload(args)
    report = run(
        "defrag",
        trace,
        device=device_text(args.device),
        policies=[p for spec in args.policy or ["full"] for p in spec.split(",") if p],
        block_bytes=parse_size_bytes(args.block_size, "block_size"),
        windows=args.windows,
        intensity=intensity(args),
        ray=args.ray,
    )
    report["source"] = {"workload": str(args.workload), "kind": kind}
    if args.plot:
        plot_defrag(report, args.plot)
    if args.json and write_json(args.json, report):
        return EXIT_OK
    render_defrag(report, make_console())
    note_one_device(trace, args.device)
    warn_if_saturated(trace, intensity(args), report["before_perf"]["iops"], args.device)
    if args.plot:
        print(f"wrote {args.plot}")
    return EXIT_OK
