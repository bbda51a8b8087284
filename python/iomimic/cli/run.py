"""`iomimic run`: a model's workload, or a simple pattern, issued against files or a device;
and :func:`issue`, which `replay` shares."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from iomimic.cli import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK
from iomimic.cli.args import (
    add_intensity,
    add_target_options,
    count,
    intensity,
    seed,
    subcommand,
    wall_clock,
    write_json,
)
from iomimic.errors import InputError


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "run",
        handle,
        "Generate a model's workload and issue it against files or a device.",
        "  iomimic run model.json --target /data/iomimic.dat --size 8G --duration 60s -o done.parquet\n"
        "  iomimic run model.json --map data=/data/a.dat,log=/data/b.dat --intensity 3\n"
        "  iomimic run model.json --target f.dat -n 100000 --iodepth 32   # closed loop\n"
        '  iomimic run --pattern "read seq 4k interarrival=10ms" --target f.dat --size 1G --duration 20s\n'
        '  iomimic run --pattern "randread 4k" --iodepth 32 --target f.dat --duration 20s\n',
    )
    p.add_argument("model", nargs="?", help="model file (see `iomimic model`)")
    p.add_argument(
        "--pattern",
        help='a simple test instead of a model, e.g. "randread 4k", "write seq 64k rate=500", '
        '"rw 8k rate=2000 mix=70 poisson". Words: read, write, randread, randwrite or rw; seq or '
        "rand; a size; rate=PER_SECOND or interarrival=TIME (fixed gaps; none: back to back); "
        "poisson (exponential gaps); mix=READ_PERCENT for rw; span=SIZE for random offsets "
        "(default --size); zipf=THETA for random offsets by Zipf popularity (fio's "
        "random_distribution=zipf:THETA). See docs/realio.md",
    )
    p.add_argument("-n", "--requests", type=count, help="requests to generate (default: the model's count)")
    p.add_argument(
        "--duration",
        help="run this long, wall-clock (fio's runtime), e.g. 60s: as many requests are generated as "
        "that takes at --intensity (after any --ramp)",
    )
    add_intensity(p, "the request rate")
    p.add_argument("--seed", type=seed, default=1, help="random seed")
    add_target_options(p)


def handle(args: argparse.Namespace) -> int:
    if (args.model is None) == (args.pattern is None):
        raise InputError("run a model (MODEL.json) or a --pattern, one of them")
    speed = intensity(args)
    ramp_s, until_s = wall_clock(args)
    # --duration is wall-clock: at intensity i a second of the run covers i seconds of the
    # workload's own time, so that much is generated and the run stops at the deadline
    model_s = None if until_s is None else until_s * speed
    if args.model is not None:
        from iomimic.cli.progress import working
        from iomimic.model import Model

        model = Model.load(args.model)
        with working("generating the workload", share=True) as progress:
            trace = model.generate(
                args.requests, duration=None if args.requests else model_s, seed=args.seed, progress=progress
            )
        return issue(args, trace, speed, until_s, ramp_s)
    from iomimic.pattern import parse_pattern, pattern_trace, requests_for_duration
    from iomimic.units import parse_size_bytes

    span = parse_size_bytes(args.size) if args.size else None
    if args.requests is None and args.duration is None:
        raise InputError("a --pattern run needs -n REQUESTS or --duration")
    parse_pattern(args.pattern)  # a bad spec is reported before anything else
    n = args.requests
    if n is None:
        n = requests_for_duration(args.pattern, round(until_s * 1e9), speed)
    trace = pattern_trace(args.pattern, n, span=span, seed=args.seed)
    return issue(args, trace, speed, until_s, ramp_s)


def issue(
    args: argparse.Namespace, trace, intensity: float, deadline_s: float | None = None, ramp_s: float = 0.0
) -> int:
    """Issues ``trace`` (a Trace, or ParquetPieces to issue a row group at a time) with the
    options of :func:`iomimic.cli.args.add_target_options`, and reports the run."""
    from iomimic.cli.progress import running
    from iomimic.io import ParquetPieces, output_format, write_trace
    from iomimic.realio import parse_targets, run, run_pieces
    from iomimic.report import make_console
    from iomimic.report.run import fold_warning, render_run
    from iomimic.units import parse_size_bytes

    fmt = output_format(args.output, None) if args.output else None
    paths = parse_targets(args.target, args.map, trace.volumes)
    settings = {
        "size": parse_size_bytes(args.size) if args.size else None,
        "engine": args.engine,
        "iodepth": args.iodepth,
        "workers": args.workers,
        "intensity": intensity,
        "no_stall": args.no_stall,
        "sqpoll": not args.no_sqpoll,
        "direct": args.direct,
        "allow_device": args.allow_device,
        "overwrite": args.overwrite,
        "deadline_s": deadline_s,
        "ramp_s": ramp_s,
        "verify": args.verify,
        # without -o nothing per request is kept: memory stays flat however long the run
        "keep_requests": bool(args.output),
    }
    # SIGTERM, like Ctrl-C, stops issuing and drains (the run sees it as an interrupt)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    pieces = isinstance(trace, ParquetPieces)
    progress, close = running(trace.rows if pieces else len(trace))
    try:

        def warn(fold: dict[str, Any]) -> None:
            print(f"iomimic: warning: {fold_warning(fold)}", file=sys.stderr)

        if pieces:
            done, figures = None, run_pieces(trace, paths, progress=progress, warn=warn, **settings)
        else:
            done, figures = run(trace, paths, progress=progress, warn=warn, **settings)
    finally:
        close()
    if args.output and done is not None and len(done):
        write_trace(done, args.output, fmt)
    if args.json and write_json(args.json, figures):
        return EXIT_OK
    render_run(figures, make_console())
    if figures.get("verify", {}).get("failures"):
        for line in figures["verify"]["first"]:
            print(f"iomimic: verify: {line}", file=sys.stderr)
        return EXIT_FAILURE
    if "failed" in figures:
        for line in figures["failed"]["first"]:
            print(f"iomimic: I/O error: {line}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_INTERRUPTED if figures["partial"] else EXIT_OK
