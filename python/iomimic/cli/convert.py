"""`iomimic convert`: a trace to Parquet or the canonical CSV."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import add_read_options, read_reported, selecting, subcommand
from iomimic.io import OUTPUT_FORMATS


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "convert",
        handle,
        "Convert a trace to Parquet or iomimic's canonical CSV, plain or gzipped (lossless every way).",
        "  iomimic convert hm_0.csv -o hm_0.parquet\n"
        "  iomimic convert trace.blkparse.txt --format blkparse -o t.parquet --skip-bad\n"
        "  iomimic convert web.spc -o web.csv\n"
        "  iomimic convert web.spc -o web.csv.gz          # canonical CSV, gzipped\n"
        "  iomimic convert hm_0.csv -o part.parquet --start 10m --end 20m --volume hm_0 --op read\n",
    )
    p.add_argument(
        "trace",
        help="trace file (plain, .gz or .zst), a directory or glob of files read as one, or a URL "
        "of either (s3://, gs://, file://); Parquet in time order is converted a row group at a "
        "time, in the memory of one",
    )
    p.add_argument("-o", "--output", required=True, help="output file: .parquet, .csv or .csv.gz")
    p.add_argument("--to", choices=OUTPUT_FORMATS, help="output format (default: from the extension)")
    add_read_options(p)


def handle(args: argparse.Namespace) -> int:
    from iomimic.io import OutOfOrder, output_format, parquet_traces, write_trace, write_trace_parts

    fmt = output_format(args.output, args.to)  # fail on a bad extension before reading
    whole = args.format not in (None, "parquet") or selecting(args) or args.volume_names != "records"
    pieces = None if whole else parquet_traces(args.trace)
    if pieces is not None:
        # Parquet in time order (a file, or generated parts) goes across a row group at a time;
        # out of order, the partial output is dropped and the trace read whole (which sorts it)
        try:
            written = write_trace_parts(pieces, args.output, fmt)
        except OutOfOrder:
            pass
        else:
            print(f"wrote {written.requests:,} requests (parquet → {fmt}) to {args.output}")
            return EXIT_OK
    trace = read_reported(args)
    write_trace(trace, args.output, fmt)
    print(f"wrote {len(trace):,} requests ({trace.report.get('format')} → {fmt}) to {args.output}")
    return EXIT_OK
