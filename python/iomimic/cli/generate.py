"""`iomimic generate`: a synthetic trace from a model."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import add_intensity, count, intensity, seed, subcommand
from iomimic.io import OUTPUT_FORMATS


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "generate",
        handle,
        "Generate a synthetic trace from a model.",
        "  iomimic generate model.json -o synth.parquet -n 1000000 --seed 7\n"
        "  iomimic generate model.json -o fast.parquet --duration 60s --intensity 4  # 4x the rate\n",
    )
    p.add_argument("model", help="model file")
    p.add_argument("-o", "--output", required=True, help="trace to write: .parquet, .csv or .csv.gz")
    p.add_argument("-n", "--requests", type=count, help="requests to generate (default: the model's count)")
    p.add_argument("--duration", help="generate this long a trace, e.g. 60s or 10m")
    add_intensity(p, "the request rate")
    p.add_argument("--seed", type=seed, default=1, help="random seed; the same seed gives the same trace")
    p.add_argument("--no-reuse", action="store_true", help="turn the temporal-locality extension off")
    p.add_argument("--to", choices=OUTPUT_FORMATS, help="output format (default: from the extension)")


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.progress import working
    from iomimic.io import output_format, write_trace
    from iomimic.model import Model

    fmt = output_format(args.output, args.to)
    model = Model.load(args.model)
    with working("generating", share=True) as progress:
        trace = model.generate(
            args.requests,
            duration=args.duration,
            intensity=intensity(args),
            seed=args.seed,
            reuse=not args.no_reuse,
            progress=progress,
        )
    write_trace(trace, args.output, fmt)
    print(f"wrote {len(trace):,} requests over {trace.span_s:,.3f} s to {args.output}")
    return EXIT_OK
