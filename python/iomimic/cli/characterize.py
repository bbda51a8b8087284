"""`iomimic characterize`: every figure of a trace."""

from __future__ import annotations

import argparse
import sys

from iomimic.cli import EXIT_OK
from iomimic.cli.args import (
    TRACE_HELP,
    add_ray,
    add_read_options,
    count,
    read_reported,
    report_reading,
    subcommand,
    write_json,
)


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "characterize",
        handle,
        "Every figure of a trace: mix, sizes, inter-arrival fit, sequentiality, spatial and temporal "
        "locality (miss-ratio curve), fluctuation, latency; per volume and stream; thread types.",
        "  iomimic characterize trace.csv\n"
        "  iomimic characterize trace.csv --json profile.json\n"
        "  iomimic characterize trace.csv --by stream --ranges 4 --window 60s\n"
        "  iomimic characterize big.csv --mrc trace           # skip per-volume/stream curves\n"
        "  iomimic characterize trace.csv --report figures/   # the report's figures as PNG\n"
        "  iomimic characterize 's3://bucket/trace/*.parquet' --ray   # partitions counted on Ray\n",
    )
    p.add_argument("trace", help=TRACE_HELP)
    p.add_argument("--json", metavar="PATH", help="write every figure as JSON (- for stdout only)")
    p.add_argument(
        "--report", metavar="DIR", help="also draw the figures of `iomimic report` as PNG files in DIR"
    )
    p.add_argument("--by", choices=["stream", "volume"], help="classify streams or volumes into thread types")
    p.add_argument("--ranges", type=count, default=4, help="equal ranges of each volume's span (default 4)")
    p.add_argument("--window", help="fluctuation window, e.g. 60s or 500ms (default min(60s, span/100))")
    p.add_argument(
        "--mrc",
        choices=["all", "trace", "none"],
        default="all",
        help="miss-ratio curves for every group, the whole trace only, or none (default all)",
    )
    p.add_argument(
        "--mrc-budget",
        type=count,
        metavar="BLOCKS",
        help="distinct 4 KiB blocks a curve may track, at most 64 bytes each: exact when the trace's "
        "fit, else SHARDS-sampled down to them (at least 1024; default 8388608, about 512 MiB)",
    )
    p.add_argument("--mrc-sampling", type=float, help="force a SHARDS sampling rate in (0, 1]")
    p.add_argument(
        "--memory",
        metavar="SIZE",
        help="memory to stay within, e.g. 2G (default: half of this machine's; the interpreter's own "
        "150 MB or so aside). A trace too large to characterize within it read whole (about 100 "
        "bytes a request) is read in pieces, twice: Parquet (file, directory or glob of parts) a row "
        "group at a time, files of other formats (one, or a directory or glob) a chunk of parsed rows at "
        "a time. Every count "
        "exact, percentiles of gaps and latencies to 0.1 %%, curves SHARDS-sampled to fit "
        "(docs/scale.md)",
    )
    add_ray(
        p,
        "count a Parquet trace's partitions (ranges of its row groups, so of its time) with the "
        "same figures as --memory's pieces,",
    )
    add_read_options(p)
    p.set_defaults(parquet_in_place=True)  # a Parquet URL is read in place (iomimic.remote)


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.progress import working
    from iomimic.profile import characterize, memory_budget
    from iomimic.report import make_console
    from iomimic.report.profile import render_profile

    memory = memory_budget(args.memory)
    options = {k: getattr(args, k) for k in ("ranges", "window", "by", "mrc", "mrc_sampling", "mrc_budget")}
    streamed = _characterize_on_ray(args, memory, options)
    if streamed is None:
        streamed = _characterize_in_pieces(args, memory, options)
    if isinstance(streamed, dict):
        if args.json and write_json(args.json, streamed):
            return EXIT_OK
        render_profile(streamed, make_console())
        return EXIT_OK
    if streamed is None:
        trace = read_reported(args)
    else:  # a file found to fit while it was being read in pieces: read whole already
        from iomimic.io import summary

        trace = streamed
        report_reading(summary(trace))
    with working("characterizing", share=True) as progress:
        profile = characterize(trace, **options, progress=progress)
    if args.report:
        from iomimic.report.figures import prepare, write_pngs

        for path in write_pngs(prepare([("trace", trace)]), args.report):
            print(f"wrote {path}", file=sys.stderr)
    if args.json and write_json(args.json, profile):
        return EXIT_OK
    render_profile(profile, make_console())
    return EXIT_OK


def _characterize_on_ray(args: argparse.Namespace, memory: int, options: dict):
    """With --ray, the profile of a Parquet trace counted by partitions on Ray (whatever its
    size); None without --ray, or when the trace is not one Ray can partition (then it is
    characterized here, and that is said)."""
    from iomimic.cli.args import ray_engine, selecting
    from iomimic.cli.progress import working
    from iomimic.errors import InputError
    from iomimic.profile import characterize_parquet, parquet_rows

    if args.ray is None:
        return None
    if args.report:
        raise InputError("--report draws from the whole trace read here: drop --ray, or --report")
    ray = ray_engine(args)
    why = None
    if selecting(args) or getattr(args, "volume_names", "records") != "records":
        why = "choosing requests (--start, --volume, ...) or naming volumes by file needs it whole"
    elif parquet_rows(args.trace) is None:
        why = "only a Parquet trace is cut into partitions (iomimic convert makes one)"
    if why is None:
        with working("characterizing (partitions on Ray)", share=True) as progress:
            profile = characterize_parquet(args.trace, memory=memory, **options, progress=progress, ray=ray)
        if profile is not None:
            return profile
        why = "its row groups go back in time"
    print(f"note: --ray: {why}: characterizing it here", file=sys.stderr)
    return None


def _characterize_in_pieces(args: argparse.Namespace, memory: int, options: dict):
    """The profile (with ``options``) of a trace too large for ``memory`` read whole, read a
    piece at a time: a Parquet trace a row group at a time, files of other formats (one, or a
    directory or glob of them) a chunk of parsed rows at a time. A Trace when a file read in
    pieces turned out to fit (read whole on the way); None when the trace fits or cannot be
    read in pieces: read it whole as usual."""
    from pathlib import Path

    from iomimic.cli.args import read_options, too_large
    from iomimic.cli.progress import working
    from iomimic.io import trace_parts
    from iomimic.profile import characterize_parquet, characterize_text, characterize_text_parts

    why = too_large(args, memory, needs_whole="--report" if args.report else None)
    if why is None:
        return None
    with working("characterizing", share=True) as progress:
        if why.exact:
            print(
                f"note: the trace {why}: reading it a row group at a time, twice, within --memory",
                file=sys.stderr,
            )
            return characterize_parquet(args.trace, memory=memory, **options, progress=progress)
        read = read_options(args)
        path = Path(args.trace)
        if trace_parts(path) is not None:
            done = characterize_text_parts(
                path, memory=memory, read=read, volume_names=args.volume_names, **options, progress=progress
            )
            if done is None:
                return None
        else:
            done = characterize_text(args.trace, memory=memory, read=read, **options, progress=progress)
        if isinstance(done, tuple):
            profile, summary = done
            report_reading(summary)
            print(f"note: the trace {why}: it was read a chunk at a time, twice", file=sys.stderr)
            return profile
        return done
