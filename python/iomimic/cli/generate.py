"""`iomimic generate`: a synthetic trace from a model."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import add_intensity, add_ray, count, intensity, ray_engine, seed, subcommand
from iomimic.io import OUTPUT_FORMATS


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "generate",
        handle,
        "Generate a synthetic trace from a model.",
        "  iomimic generate model.json -o synth.parquet -n 1000000 --seed 7\n"
        "  iomimic generate model.json -o fast.parquet --duration 60s --intensity 4  # 4x the rate\n"
        "  iomimic generate model.json -o big/ -n 500000000     # a directory: one Parquet file a slice\n"
        "  iomimic generate model.json -o big/ -n 500000000 --ray  # the slices made as Ray tasks\n"
        "\n"
        "A trace is made a slice of time at a time (8 Mi requests; about half a GiB of memory) and\n"
        "written as it is made, so its length is bounded by the disk, not by memory. Into a\n"
        "directory, each slice is a file (part-00000.parquet, ...) that read_trace and every\n"
        "command read back as one trace.\n",
    )
    p.add_argument("model", help="model file")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="trace to write: .parquet, .csv or .csv.gz; or a directory (a path ending in /, or one "
        "that exists) to get one file per slice (Parquet unless --to says otherwise)",
    )
    p.add_argument(
        "-n",
        "--requests",
        type=count,
        help="requests to generate (default: the model's count; with --duration, at most this many, "
        "cut where the duration ends)",
    )
    p.add_argument(
        "--duration",
        help="generate this long a trace, e.g. 60s or 10m (with -n, the requests past it are cut)",
    )
    add_intensity(p, "the request rate")
    p.add_argument("--seed", type=seed, default=1, help="random seed; the same seed gives the same trace")
    p.add_argument("--no-reuse", action="store_true", help="turn the temporal-locality extension off")
    p.add_argument("--to", choices=OUTPUT_FORMATS, help="output format (default: from the extension)")
    add_ray(p, "make the slices")


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.progress import working
    from iomimic.io import is_directory_target, output_format, write_trace_parts
    from iomimic.model import Model

    into_directory = is_directory_target(args.output)
    fmt = args.to if into_directory else output_format(args.output, args.to)
    model = Model.load(args.model)
    ray_engine(args)  # connected (or its absence reported) before any work
    with working("generating" + (" (slices)" if args.ray else ""), share=True) as progress:
        parts = model.generate_parts(
            args.requests,
            duration=args.duration,
            intensity=intensity(args),
            seed=args.seed,
            reuse=not args.no_reuse,
            progress=progress,
            ray=args.ray,
        )
        written = write_trace_parts(parts, args.output, fmt)
    where = f"{len(written.files)} files in {args.output}" if into_directory else args.output
    print(f"wrote {written.requests:,} requests over {written.span_ns / 1e9:,.3f} s to {where}")
    return EXIT_OK
