"""`iomimic study NAME`: the what-if studies, one module each (:data:`STUDIES`), sharing how a
workload is named (a trace, a model or a preset) and how reports are written."""

from __future__ import annotations

import argparse
import importlib

from iomimic.cli.args import Parser, add_read_options, count, seed

#: The study modules under iomimic.cli.study, one line each, in `iomimic study --help` order.
STUDIES = ("ssd_cache", "defrag", "early_errors", "cache_alloc", "prefetch", "offload")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "study",
        help="What-if studies: SSD caching, defragmentation, early errors, cache allocation, prefetching, "
        "write off-loading.",
        description="What-if studies on a trace, a model or a preset, run on the simulator.",
    )
    studies = p.add_subparsers(dest="study_command", metavar="STUDY", parser_class=Parser, required=True)
    for name in STUDIES:
        importlib.import_module(f"{__name__}.{name}").register(studies)


def add_workload_arguments(p: argparse.ArgumentParser) -> None:
    """The workload a study runs on, and what every study writes."""
    p.add_argument("workload", help="a trace file, a model (.json) or a preset (tpcc, tpce, tpch, messenger)")
    p.add_argument(
        "-n", "--requests", type=count, help="requests to generate from a model (default: its count)"
    )
    p.add_argument("--seed", type=seed, default=1, help="seed for generated workloads (default 1)")
    p.add_argument("--json", metavar="PATH", help="write the report as JSON (- for stdout only)")
    p.add_argument("--plot", metavar="PNG", help="also draw the report as a plot")
    add_read_options(p)


def workload(args: argparse.Namespace):
    """The workload named on the command line (the part of it the selection options choose),
    and whether it is a trace or generated."""
    from iomimic.cli.args import report_reading, select
    from iomimic.errors import InputError
    from iomimic.io import summary
    from iomimic.study import is_generated, workload

    if args.requests is not None and not is_generated(args.workload):
        raise InputError(
            "--requests: a trace is studied as it is; -n says how many requests to generate from a "
            "model or preset (choose part of a trace with --start, --end, --volume, --op, --stream)"
        )
    trace, kind = workload(
        args.workload,
        requests=args.requests,
        seed=args.seed,
        format=args.format,
        skip_bad=args.skip_bad,
        time_unit=args.time_unit,
        event=args.event,
        columns=args.columns,
        delimiter=args.delimiter,
        volume_names=args.volume_names,
    )
    if kind == "trace":
        report_reading(summary(trace))
    return select(trace, args), kind


def warn_if_saturated(
    trace,
    rate: float,
    served_iops: float,
    device: str,
    remedy: str = "lower --intensity, or study a faster device",
) -> None:
    """Tells stderr when the device a study ran the workload on as it is could not keep up (its
    open-loop latencies then measure a queue that grew for the whole run), as `simulate` does."""
    import sys

    offered = len(trace) / trace.span_s * rate if trace.span_s > 0 else 0.0
    if offered and served_iops < 0.9 * offered:
        print(
            f"iomimic: warning: {device} served {served_iops:,.0f} IOPS of the {offered:,.0f} offered: it is "
            f"saturated, and the latencies measure a queue that grew for the whole run ({remedy})",
            file=sys.stderr,
        )


def note_one_device(trace, device: str) -> None:
    """Tells stderr that a study ran a workload of several volumes on its one device (each
    volume in an equal region of it, as ``simulate --shared``), where ``simulate`` would give
    each volume a device of its own: its figures are that one device's."""
    import sys

    if len(trace.volumes) > 1:
        print(
            f"note: the workload's {len(trace.volumes)} volumes share the one device {device}, each in "
            "an equal region of it (as simulate --shared); --volume NAME studies one alone",
            file=sys.stderr,
        )


def device_text(name: str) -> str:
    """A device file's text: a preset's name or a file's path."""
    from iomimic.sim import device_text

    return device_text(name)


def run(name: str, trace, **options):
    """:func:`iomimic.study.run` with a progress bar on a terminal."""
    from iomimic.cli.progress import working
    from iomimic.study import run

    if options.get("ray") is not None:
        # the points run as tasks: there is nothing here to count
        return run(name, trace, **options)
    with working(f"study {name}") as progress:
        return run(name, trace, progress=progress, **options)


def run_alone(name: str, **options):
    """:func:`iomimic.study.run_alone` with a progress bar on a terminal."""
    from iomimic.cli.progress import working
    from iomimic.study import run_alone

    with working(f"study {name}") as progress:
        return run_alone(name, progress=progress, **options)
