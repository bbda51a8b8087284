"""`iomimic simulate`: a trace replayed on a simulated disk, SSD or array."""

from __future__ import annotations

import argparse
import sys

from iomimic.cli import EXIT_OK
from iomimic.cli.args import (
    TRACE_HELP,
    add_intensity,
    add_ray,
    add_read_options,
    count,
    intensities,
    ray_engine,
    read_reported,
    subcommand,
    write_json,
)
from iomimic.errors import InputError


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
        "  iomimic simulate trace.csv --map data+log=tpc-raid10-28disk     # two volumes on one array\n"
        "  iomimic simulate trace.csv --device hdd-7200,ssd-sata --intensity 1,2,4  # a sweep: 6 runs\n"
        "  iomimic simulate trace.csv --device ssd-nvme --iodepth 1,4,16,64 --ray  # each run a Ray task\n",
    )
    p.add_argument("trace", help=TRACE_HELP)
    p.add_argument(
        "--device",
        help="a preset (see `iomimic devices`); A,B,... simulates on each in turn (a sweep: a table "
        "of every run)",
    )
    p.add_argument("--config", help="a device file (TOML; see docs/simulate.md); A,B,... for several")
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
        "--iodepth",
        help="closed loop with this many outstanding (default: open loop); A,B,... runs at each",
    )
    add_intensity(p, "the trace's rate (open loop)", many=True)
    p.add_argument(
        "--scheduler", choices=["fifo", "sstf", "sptf"], help="override the device file's disk scheduler"
    )
    p.add_argument(
        "-o", "--output", help="write the trace with simulated latencies (.parquet, .csv or .csv.gz)"
    )
    p.add_argument(
        "--json",
        metavar="PATH",
        help="write the figures as JSON (- for stdout only); a sweep's are a list, one per run",
    )
    add_ray(p, "run each point of a sweep")
    p.add_argument(
        "--memory",
        metavar="SIZE",
        help="memory to stay within, e.g. 2G (default: half of this machine's). A trace too large to "
        "simulate within it read whole (about 100 bytes a request) is fed to the simulator a piece "
        "at a time: Parquet a row group at a time, other formats a chunk of parsed rows at a time "
        "(each file in time order), by each run of a sweep in turn; -o is written as requests "
        "complete. Figures exact but latency percentiles, to 0.1 %% (docs/simulate.md)",
    )
    add_read_options(p)
    p.set_defaults(parquet_in_place=True)  # a Parquet URL is read in place (iomimic.remote)


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.progress import working
    from iomimic.io import output_format

    devices = _names(args.device) + _names(args.config)
    if not devices and args.map is None:
        raise InputError(
            "simulate: name a preset with --device or a device file with --config (or each volume's "
            "device with --map)"
        )
    if args.scheduler and args.map is None and all(_kind(d) == "ssd" for d in devices):
        # (a sweep over disks and SSDs orders the disks' queues and leaves the SSDs as they are)
        raise InputError(
            f"--scheduler orders a disk's queue, and {', '.join(devices)} "
            f"{'is an SSD' if len(devices) == 1 else 'are SSDs'} (dies serve their queues in order, "
            "reads first)"
        )
    levels = intensities(args)
    depths = [None] if args.iodepth is None else [_depth(d) for d in _names(args.iodepth)]
    too_large = _too_large(args)
    if max(len(devices), 1) * len(levels) * len(depths) > 1 or args.ray is not None:
        if not devices:
            raise InputError("simulate: a sweep runs each --device (or --config) in turn: name them too")
        if args.output:
            raise InputError("simulate: -o writes one run's trace; a sweep runs several (drop -o)")
        ray_engine(args)
        return _sweep(args, devices, levels, depths, too_large)
    from iomimic.io import write_trace
    from iomimic.sim import _device_or_file, simulate

    fmt = output_format(args.output, None) if args.output else None
    if not devices:
        device, config = None, None  # --map names every volume's device
    else:
        device, config = _device_or_file(devices[0]) if args.config is None else (None, devices[0])
    run = dict(
        config=config,
        map=args.map,
        shared=args.shared,
        iodepth=depths[0],
        intensity=levels[0],
        scheduler=args.scheduler,
    )
    figures = _in_pieces(args, device, run, too_large) if too_large else None
    if figures is None:
        trace = read_reported(args)
        volumes = len(trace.volumes)
        with working("simulating") as progress:
            out, figures = simulate(trace, device, **run, progress=progress)
        if args.output:
            write_trace(out, args.output, fmt)
    else:
        volumes = None  # read in pieces: not counted here
    if args.json and write_json(args.json, figures):
        return EXIT_OK
    from iomimic.report import make_console
    from iomimic.report.simulation import fold_warnings, render_simulation, saturation_warnings

    render_simulation(figures, make_console())
    _shared_note(args, volumes)
    for warning in fold_warnings(figures, volumes) + saturation_warnings(figures):
        print(f"iomimic: warning: {warning}", file=sys.stderr)
    return EXIT_OK


def _too_large(args: argparse.Namespace):
    """Why the trace goes to the simulator a piece at a time, or None (see ``too_large``)."""
    from iomimic.cli.args import too_large
    from iomimic.profile import memory_budget

    return too_large(args, memory_budget(args.memory))


def _in_pieces(args: argparse.Namespace, device, run: dict, why: str) -> dict | None:
    """:func:`iomimic.sim.simulate_in_pieces` with the command's options; None when the trace
    cannot go in pieces after all (Parquet row groups out of time order): read it whole."""
    from iomimic.cli.args import read_options
    from iomimic.cli.progress import working
    from iomimic.io import OutOfOrder
    from iomimic.sim import simulate_in_pieces

    read = read_options(args)
    print(f"note: the trace {why}: simulating it a piece at a time", file=sys.stderr)
    try:
        with working("simulating", share=True) as progress:
            return simulate_in_pieces(
                args.trace,
                device,
                **run,
                output=args.output,
                progress=progress,
                volume_names=args.volume_names,
                **read,
            )
    except OutOfOrder:
        print("note: its row groups go back in time: reading it whole to sort it", file=sys.stderr)
        return None


def _sweep(args: argparse.Namespace, devices: list[str], levels: list[float], depths: list, too_large) -> int:
    """Every device × intensity × depth: a table of runs. A trace too large for --memory is
    read a piece at a time by each run."""
    from iomimic.cli.args import read_options
    from iomimic.cli.progress import working
    from iomimic.sim import sweep, sweep_in_pieces

    options = {"map": args.map, "shared": args.shared, "scheduler": args.scheduler, "ray": args.ray}
    if too_large:
        print(f"note: the trace {too_large}: each run reads it a piece at a time", file=sys.stderr)
        trace, volumes = args.trace, None
        options |= {**read_options(args), "volume_names": args.volume_names}
        each = sweep_in_pieces
    else:
        trace = read_reported(args)
        volumes, each = len(trace.volumes), sweep
    if args.ray is not None:
        # the runs are Ray tasks: there is nothing here to count
        runs = each(trace, devices, intensities=levels, iodepths=depths, **options)
    else:
        with working("simulating") as progress:
            runs = each(trace, devices, intensities=levels, iodepths=depths, progress=progress, **options)
    if args.json and write_json(args.json, runs):
        return EXIT_OK
    from iomimic.report import make_console
    from iomimic.report.simulation import render_sweep, sweep_warning

    render_sweep(runs, make_console())
    _shared_note(args, volumes)
    warning = sweep_warning(runs)
    if warning:
        print(f"iomimic: warning: {warning}", file=sys.stderr)
    return EXIT_OK


def _shared_note(args: argparse.Namespace, volumes: int | None) -> None:
    if args.shared and (volumes is None or volumes > 1):
        print(
            f"note: the trace's {volumes or ''} volumes share this one device, each in an equal "
            "region of it (without --shared each has its own)".replace("'s  ", "'s "),
            file=sys.stderr,
        )


def _names(text: str | None) -> list[str]:
    return [] if text is None else [x.strip() for x in text.split(",") if x.strip()]


def _depth(text: str) -> int:
    try:
        return count(text)
    except argparse.ArgumentTypeError as e:
        raise InputError(f"simulate: argument --iodepth: {e}") from None


def _kind(device: str) -> str:
    """A device's kind (disk, ssd, raid, ...) as its file says."""
    import tomllib

    from iomimic.sim import device_text

    return str(tomllib.loads(device_text(device)).get("device", {}).get("kind", ""))
