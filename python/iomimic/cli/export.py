"""`iomimic export fio`: a workload handed to another tool."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from iomimic.cli import EXIT_OK
from iomimic.cli.args import (
    Parser,
    add_intensity,
    add_read_options,
    count,
    intensity,
    read_reported,
    seed,
    subcommand,
)


def register(subparsers) -> None:
    export_cmd = subparsers.add_parser(
        "export",
        help="Hand a workload to another tool (fio).",
        description="Write a workload in another tool's terms: fio.",
    )
    tools = export_cmd.add_subparsers(
        dest="export_command", metavar="TOOL", parser_class=Parser, required=True
    )
    p = subcommand(
        tools,
        "fio",
        handle_fio,
        "Write a fio job file and a version 3 I/O log that replay a trace or a model's workload.",
        "  iomimic export fio trace.csv -o job.fio                 # job.fio + job.iolog\n"
        "  iomimic export fio model.json -o job.fio --iolog trace.iolog -n 100000 --seed 7\n"
        "  iomimic export fio trace.csv -o job.fio --map sda=/data/a.dat --prepare --direct\n"
        "  fio job.fio\n",
    )
    p.add_argument("trace", help="a trace file, or a model (.json, .json.gz) to generate from")
    p.add_argument("-o", "--output", required=True, help="fio job file to write")
    p.add_argument("--iolog", help="I/O log to write (default: the job file with .iolog)")
    p.add_argument("--map", help="VOLUME=PATH,... files fio uses (default iomimic-VOLUME.dat)")
    p.add_argument(
        "--prepare", action="store_true", help="create missing files at the sizes needed, laid out with data"
    )
    p.add_argument(
        "--overwrite", action="store_true", help="let the job write existing files iomimic did not create"
    )
    p.add_argument("--allow-device", action="store_true", help="allow block devices (never one in use)")
    p.add_argument(
        "--ioengine",
        default="psync",
        help="fio ioengine (default psync: each request timed from submit to completion; an async "
        "engine at depth > 1 counts the wait to be reaped in clat)",
    )
    p.add_argument("--iodepth", type=count, default=1, help="fio iodepth (default 1)")
    p.add_argument(
        "--direct",
        action=argparse.BooleanOptionalAction,
        help="O_DIRECT (direct=1); default: on when every file accepts it",
    )
    add_intensity(p, "the logged rate in the job (replay_time_scale)")
    p.add_argument("--no-stall", action="store_true", help="replay as fast as possible (replay_no_stall)")
    g = p.add_argument_group("generating from a model")
    g.add_argument("-n", "--requests", type=count, help="requests to generate (default: the model's count)")
    g.add_argument("--duration", help="generate this long a workload, e.g. 60s")
    g.add_argument("--seed", type=seed, default=1, help="random seed")
    add_read_options(p)


def handle_fio(args: argparse.Namespace) -> int:
    from iomimic.fio_export import DIRECT_ALIGN, SYNC_ENGINES, export_fio
    from iomimic.model import is_model_path

    if is_model_path(args.trace):
        from iomimic.cli.progress import working
        from iomimic.model import Model

        with working("generating the workload", share=True) as progress:
            trace = Model.load(args.trace).generate(
                args.requests, duration=args.duration, seed=args.seed, progress=progress
            )
        source = f"model {args.trace} (seed {args.seed})"
    else:
        trace = read_reported(args)
        source = args.trace
    iolog = args.iolog or str(Path(args.output).with_suffix(".iolog"))
    if not args.iolog:
        from iomimic.io import refuse_overwriting_inputs

        refuse_overwriting_inputs({"trace": args.trace}, {"output": args.output, "iolog": iolog})
    r = export_fio(
        trace,
        args.output,
        iolog,
        source=source,
        map=args.map,
        prepare=args.prepare,
        allow_device=args.allow_device,
        overwrite=args.overwrite,
        ioengine=args.ioengine,
        iodepth=args.iodepth,
        direct=args.direct,
        intensity=intensity(args),
        no_stall=args.no_stall,
    )
    job_dir = Path(args.output).resolve().parent
    run = (
        f"fio {Path(args.output).name}"
        if job_dir == Path.cwd()
        else f"cd {job_dir} && fio {Path(args.output).name}"
    )
    requests = f"{len(trace):,} request" + ("" if len(trace) == 1 else "s")
    print(f"wrote {args.output} and {iolog} ({requests}); run it with: {run}")
    for path in r["created"]:
        print(f"created {path} ({r['files'][path]:,} bytes, laid out with data)")
    if r["realigned"]:
        print(
            f"note: direct=1: {r['realigned']:,} of the requests moved or grew onto whole "
            f"{DIRECT_ALIGN // 1024} KiB blocks, as O_DIRECT needs (--no-direct keeps the log exact)"
        )
    if args.direct is None and not r["direct"]:
        print("note: direct=0: a file does not accept O_DIRECT (tmpfs?), so the page cache may answer reads")
    if args.ioengine not in SYNC_ENGINES and args.iodepth > 1:
        print(
            f"note: {args.ioengine} at depth {args.iodepth}: fio reaps completions late in a replay, so its "
            "clat includes that wait (see the job file)",
            file=sys.stderr,
        )
    return EXIT_OK
