"""`iomimic model train|show|preset|mix`: the hierarchical state-diagram model."""

from __future__ import annotations

import argparse
import sys

from iomimic.cli import EXIT_OK
from iomimic.cli.args import (
    TRACE_HELP,
    Parser,
    UsageError,
    add_ray,
    add_read_options,
    count,
    model_part,
    ray_engine,
    read_reported,
    seed,
    subcommand,
)


def register(subparsers) -> None:
    model_cmd = subparsers.add_parser(
        "model",
        help="Train, show, assemble or load preset workload models.",
        description="The hierarchical state-diagram model: train | show | preset | mix.",
    )
    actions = model_cmd.add_subparsers(
        dest="model_command", metavar="ACTION", parser_class=Parser, required=True
    )

    p = subcommand(
        actions,
        "train",
        handle_train,
        "Train a model of a trace (levels and states chosen automatically unless given).",
        "  iomimic model train trace.csv -o model.json\n"
        "  iomimic model train trace.csv -o model.json --levels 2 --states 4 --by stream\n"
        "  iomimic model train 'msr/*.csv.gz' -o model.json --ray head-node:6379\n"
        "  iomimic model train big.parquet -o model.json --memory 2G\n",
    )
    p.add_argument("trace", help=TRACE_HELP)
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="model file to write (JSON; compressed with gzip if it ends in .gz)",
    )
    p.add_argument("--levels", type=count, help="levels of the state hierarchy (default: chosen)")
    p.add_argument("--states", type=count, help="states per level (default: chosen among 4, 8, 16)")
    p.add_argument(
        "--by",
        choices=["stream", "none"],
        help="one thread model per stream, or one for all (default: per stream when there are 2 to "
        "256, streams that re-use each other's requests as one)",
    )
    p.add_argument(
        "--no-reuse", action="store_true", help="leave out the temporal-locality (reuse) extension"
    )
    p.add_argument(
        "--population",
        choices=["auto", "on", "off"],
        default="auto",
        help="re-use by the trace's population of re-used requests drawn without replacement (on), "
        "by recency and popularity counted while generating (off), or whichever generates the closer "
        "trace of the trace's head (auto, the default; costs a model and two generations of at most "
        "100,000 requests)",
    )
    p.add_argument("--name", help="model name (default: the trace's file name)")
    p.add_argument("--seed", type=seed, default=1, help="seed for the generation runs of level selection")
    p.add_argument(
        "--select-device",
        default="hdd-7200",
        metavar="DEVICE",
        help="device preset level selection simulates each level's trace on (the TPC paper adds levels "
        "until one more changes the simulated IOPS by under 2%%); 'none': the fidelity rule alone "
        "(default hdd-7200; see `iomimic devices`)",
    )
    p.add_argument(
        "--select-depth",
        type=count,
        default=8,
        metavar="N",
        help="requests outstanding per device in that simulation (closed loop; default 8)",
    )
    add_ray(p, "train the threads")
    p.add_argument(
        "--memory",
        metavar="SIZE",
        help="memory to stay within, e.g. 2G (default: half of this machine's). A trace too large to "
        "train on within it read whole (about 100 bytes a request) is read in pieces, three times: "
        "Parquet a row group at a time, files of other formats (one, or a directory or glob) a chunk "
        "of parsed rows at a time, each file in time order. The model is the one the whole trace "
        "gives; what training holds grows with the places each thread touches (docs/scale.md)",
    )
    add_read_options(p)
    p.set_defaults(parquet_in_place=True)  # a Parquet URL is read in place (iomimic.remote)

    p = subcommand(
        actions,
        "show",
        handle_show,
        "Print a model: threads, states, transitions, distributions.",
        "  iomimic model show model.json\n",
    )
    p.add_argument("model", help="model file")
    p.add_argument("--max-states", type=count, default=16, help="states listed per chain (default 16)")

    p = subcommand(
        actions,
        "preset",
        handle_preset,
        "Write a model built from the papers' published figures: tpcc, tpce, tpch, messenger.",
        "  iomimic model preset tpch -o tpch.json\n",
    )
    p.add_argument("name", choices=["tpcc", "tpce", "tpch", "messenger"])
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="model file to write (JSON; compressed with gzip if it ends in .gz)",
    )

    p = subcommand(
        actions,
        "mix",
        handle_mix,
        "Assemble a workload from thread models, each with a share of the requests.",
        "  iomimic model mix data.json:0.9 log.json:0.1 -o mix.json\n",
    )
    p.add_argument("parts", nargs="+", help="MODEL.json[:SHARE] (share default 1)")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="model file to write (JSON; compressed with gzip if it ends in .gz)",
    )
    p.add_argument("--name", default="mix", help="name of the mixed model")


def _save(model, path: str) -> None:
    model.save(path)
    from iomimic.report.model import hierarchy

    d = model.data
    print(
        f"wrote model {d['name']!r} to {path}: {len(d['threads'])} thread(s), {hierarchy(d)}, "
        f"{len(d['volumes'])} volume(s)"
    )


def handle_train(args: argparse.Namespace) -> int:
    from iomimic.cli.progress import working
    from iomimic.model import train

    # Ray is connected (or its absence reported) before the trace is read
    ray_engine(args)
    options = dict(
        levels=args.levels,
        states=args.states,
        by=args.by,
        reuse=not args.no_reuse,
        population={"auto": None, "on": True, "off": False}[args.population],
        name=args.name,
        seed=args.seed,
        select_device=None if args.select_device == "none" else args.select_device,
        select_depth=args.select_depth,
    )
    model = _train_in_pieces(args, options)
    if model is None:
        trace = read_reported(args)
        with working("training (models tried)") as progress:
            model = train(trace, **options, progress=progress, ray=args.ray)
    _save(model, args.output)
    return EXIT_OK


def _train_in_pieces(args: argparse.Namespace, options: dict):
    """The model of a trace too large for --memory read whole, trained a piece at a time (with
    --ray, the threads by Ray tasks that each read it where they run); None when it fits, or
    cannot go in pieces after all (Parquet row groups out of time order)."""
    from iomimic.cli.args import read_options, too_large
    from iomimic.cli.progress import working
    from iomimic.io import OutOfOrder
    from iomimic.model import train_in_pieces
    from iomimic.profile import memory_budget

    why = too_large(args, memory_budget(args.memory))
    if why is None:
        return None
    on_ray = " (the threads on Ray, each task reading it where it runs)" if args.ray is not None else ""
    print(f"note: the trace {why}: training on it a piece at a time, three passes{on_ray}", file=sys.stderr)
    read = {**read_options(args), "volume_names": args.volume_names}
    try:
        with working("training (three passes)", share=True) as progress:
            return train_in_pieces(args.trace, **options, progress=progress, ray=args.ray, **read)
    except OutOfOrder:
        print("note: its row groups go back in time: reading it whole to sort it", file=sys.stderr)
        return None


def handle_show(args: argparse.Namespace) -> int:
    from iomimic.model import Model
    from iomimic.report import make_console
    from iomimic.report.model import render_model

    render_model(Model.load(args.model), make_console(), max_states=args.max_states)
    return EXIT_OK


def handle_preset(args: argparse.Namespace) -> int:
    from iomimic.presets import preset

    _save(preset(args.name), args.output)
    return EXIT_OK


def handle_mix(args: argparse.Namespace) -> int:
    from iomimic.model import Model, mix

    parts = []
    for spec in args.parts:
        path, weight = model_part(spec)
        try:
            parts.append((Model.load(path), float(weight)))
        except ValueError:
            raise UsageError(f"{spec!r}: the weight after ':' must be a number") from None
    _save(mix(parts, name=args.name), args.output)
    return EXIT_OK
