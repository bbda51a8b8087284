"""`iomimic study early-errors`: a fleet with a few faulty devices, found by a robust latency
rule, sooner at higher intensity; or the same rule on real targets."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import add_ray, count, positive_numbers, ray_engine, subcommand, write_json
from iomimic.cli.study import add_workload_arguments, device_text, workload


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "early-errors",
        handle,
        "Early error detection (infant mortality): a fleet of simulated devices runs the "
        "workload, a few with injected faults (slow or failed sectors, slow writes); a robust "
        "outlier rule on their latencies and errors flags the faulty ones. Per intensity: time "
        "to detection, true and false positives. With --targets, the rule runs on real devices "
        "through the engine. See docs/studies.md for the rule.",
        "  iomimic study early-errors model.json --devices 28 --faulty 2 --fault slow-sectors:0.001 "
        "--intensity 1,2,4,8\n"
        "  iomimic study early-errors messenger -n 20000 --device ssd-nvme --fault failed-sectors:1e-4\n"
        "  iomimic study early-errors trace.csv --targets /dev/sdb,/dev/sdc,/dev/sdd --allow-device\n"
        "  iomimic study early-errors model.json --intensity 1,2,4,8,16 --ray   # a fleet per Ray task\n",
    )
    add_workload_arguments(p)
    p.param_aliases = {
        "intensities": "intensity",
        "faults": "fault",
        "rule.threshold": "threshold",
        "rule.slow_factor": "slow_factor",
    }
    p.add_argument(
        "--device", default="hdd-7200", help="the fleet's device: preset or file (default hdd-7200)"
    )
    p.add_argument("--devices", type=count, default=28, help="devices in the fleet (default 28)")
    p.add_argument("--faulty", type=int, default=2, help="how many carry the faults (default 2)")
    p.add_argument(
        "--fault",
        action="append",
        help="KIND:RATE with KIND slow-sectors or failed-sectors (RATE a share of 4 KiB blocks) or "
        "slow-writes (a share of writes); repeat or comma-separate (default slow-sectors:0.001)",
    )
    p.add_argument(
        "--slow-ms",
        type=milliseconds,
        help="extra time of a slow sector or write: ms, or a duration such as 50ms (default 50)",
    )
    p.add_argument(
        "--fail-ms",
        type=milliseconds,
        help="time a failed sector takes before its error, the drive's retries: ms, or a duration "
        "such as 1s (default 1000)",
    )
    p.add_argument(
        "--intensity", default="1,2,4,8", help="intensities to run at, comma-separated (default 1,2,4,8)"
    )
    p.add_argument(
        "--checkpoints",
        type=count,
        default=100,
        help="times the rule runs, evenly over each run (default 100)",
    )
    p.add_argument(
        "--threshold", type=float, default=5.0, help="robust deviations that flag a device (default 5)"
    )
    p.add_argument(
        "--slow-factor",
        type=float,
        default=4.0,
        help="a request is slow beyond this many fleet medians (default 4)",
    )
    add_ray(p, "run each intensity's fleet (simulated)")
    g = p.add_argument_group("real devices")
    g.add_argument("--targets", help="A,B,C: run on these files or devices instead of the simulator")
    g.add_argument("--size", help="bytes of each target to use (needed to create a file)")
    g.add_argument("--allow-device", action="store_true", help="allow block devices (never a mounted one)")
    g.add_argument(
        "--overwrite", action="store_true", help="write into existing files iomimic did not create"
    )
    g.add_argument("--engine", default="auto", help="io_uring, psync or auto (default)")


def handle(args: argparse.Namespace) -> int:
    from iomimic.report import make_console
    from iomimic.report.early_errors import plot_early_errors, render_early_errors

    if args.targets and args.ray is not None:
        from iomimic.errors import InputError

        raise InputError("--ray runs simulated fleets; --targets runs here, on this machine's devices")
    ray_engine(args)
    trace, kind = workload(args)
    rule = {"threshold": args.threshold, "slow_factor": args.slow_factor}
    if args.targets:
        report = on_targets(args, trace, rule)
    else:
        from iomimic.cli.study import run

        report = run(
            "early-errors",
            trace,
            device=device_text(args.device),
            devices=args.devices,
            faulty=args.faulty,
            faults=[f for spec in args.fault or ["slow-sectors:0.001"] for f in spec.split(",") if f],
            slow_ms=args.slow_ms,
            fail_ms=args.fail_ms,
            intensities=positive_numbers(args.intensity, "--intensity"),
            checkpoints=args.checkpoints,
            rule=rule,
            seed=args.seed,
            ray=args.ray,
        )
    report["source"] = {"workload": str(args.workload), "kind": kind}
    if args.plot:
        plot_early_errors(report, args.plot)
    if args.json and write_json(args.json, report):
        return EXIT_OK
    render_early_errors(report, make_console())
    if args.plot:
        print(f"wrote {args.plot}")
    return EXIT_OK


def on_targets(args: argparse.Namespace, trace, rule: dict) -> dict:
    from iomimic.cli.progress import running
    from iomimic.study import early_errors_on_targets
    from iomimic.units import parse_size_bytes

    targets = [t for t in args.targets.split(",") if t]
    levels = positive_numbers(args.intensity, "--intensity")
    progress, close = running(len(trace) * len(targets) * len(levels))
    try:
        return early_errors_on_targets(
            trace,
            targets,
            intensities=levels,
            checkpoints=args.checkpoints,
            rule=rule,
            progress=progress,
            size=parse_size_bytes(args.size) if args.size else None,
            engine=args.engine,
            allow_device=args.allow_device,
            overwrite=args.overwrite,
        )
    finally:
        close()


def milliseconds(text: str) -> float:
    """Milliseconds: a bare number, or a duration with its unit (50ms, 1s, 250us)."""
    try:
        return float(text)
    except ValueError:
        pass
    from iomimic.errors import InputError
    from iomimic.units import parse_time_ns

    try:
        return parse_time_ns(text, "ms") / 1e6  # a time: 0 (no delay) is one
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("`ms`: ")) from None
