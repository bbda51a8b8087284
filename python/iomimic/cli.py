"""The `iomimic` command line. Each subcommand checks its arguments, calls the library, and
prints a table (or JSON with --json). Exit codes: 0 success, 1 runtime failure, 2 bad input."""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iomimic import __version__
from iomimic.errors import InputError, IomimicError

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2
#: Files smaller than this read too fast for a progress bar to help.
PROGRESS_MIN_BYTES = 32 << 20


class UsageError(InputError):
    """A bad command line; argparse's own errors are raised as this so main() decides the exit."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print and exit(2) itself; keep one exit path
        raise UsageError(f"{self.prog}: {message}")


def _add_read_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("reading the trace")
    g.add_argument(
        "-f", "--format", help="trace format (see `iomimic formats`); detected from the content if omitted"
    )
    g.add_argument("--skip-bad", action="store_true", help="skip malformed lines, count them and report them")
    g.add_argument("--time-unit", choices=["ns", "us", "ms", "s"], help="time unit of mqsim/disksim files")
    g.add_argument(
        "--event", choices=["D", "Q"], help="blkparse: the action that marks a request (default D)"
    )
    g.add_argument(
        "--columns", help="generic format: column mapping, e.g. ts=0:us,offset=4:bytes,size=5:bytes,op=3"
    )
    g.add_argument("--delimiter", help="generic format: field separator (default: detected)")


def _progress_reader(path: str) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A progress callback for big files on a terminal, and a function that closes the bar."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    if not sys.stderr.isatty() or size < PROGRESS_MIN_BYTES:
        return None, lambda: None
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        transient=True,
    )
    task = bar.add_task(f"reading {Path(path).name}", total=size)
    bar.start()
    return (lambda done, total: bar.update(task, completed=done, total=total)), bar.stop


def _read(args: argparse.Namespace):
    from iomimic.io import read_trace

    progress, close = _progress_reader(args.trace)
    try:
        return read_trace(
            args.trace,
            format=args.format,
            skip_bad=args.skip_bad,
            time_unit=args.time_unit,
            event=args.event,
            columns=args.columns,
            delimiter=args.delimiter,
            progress=progress,
        )
    finally:
        close()


def _write_json(path: str, data: Any) -> None:
    from iomimic.io import atomic_output

    text = json.dumps(data, indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    with atomic_output(path) as tmp:
        tmp.write_text(text)


def _report_reading(s: dict[str, Any]) -> None:
    """Tells stderr what reading skipped or reordered, so nothing is lost silently."""
    err = sys.stderr
    for note in s["notes"]:
        print(f"note: {note}", file=err)
    if s["skipped"]:
        reasons = ", ".join(f"{n} {k}" for k, n in s["skipped_by_reason"].items())
        print(f"warning: skipped {s['skipped']} malformed lines ({reasons}); first ones:", file=err)
        for example in s["skipped_examples"]:
            print(f"  {example}", file=err)
    if s["out_of_order"]:
        print(
            f"note: {s['out_of_order']} lines were out of time order; requests were sorted stably", file=err
        )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "-"


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def cmd_info(args: argparse.Namespace) -> int:
    from rich.table import Table

    from iomimic.io import summary
    from iomimic.report import make_console

    trace = _read(args)
    s = summary(trace)
    _report_reading(s)
    if args.json:
        _write_json(args.json, s)
        if args.json == "-":
            return EXIT_OK
    n = s["requests"]
    compression = f", {s['compression']}" if s["compression"] not in (None, "none") else ""
    name = Path(s["path"]).name if s["path"] else "trace"
    table = Table(title=f"{name} ({s['format']}{compression})", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right")
    table.add_column("share", justify="right")
    rows = [
        ("requests", f"{n:,}", ""),
        ("reads", f"{s['reads']:,}", _pct(s["reads"], n)),
        ("writes", f"{s['writes']:,}", _pct(s["writes"], n)),
        ("trims", f"{s['trims']:,}", _pct(s["trims"], n)),
        ("flushes", f"{s['flushes']:,}", _pct(s["flushes"], n)),
        ("volumes", f"{len(s['volumes']):,}", ""),
        ("streams", f"{s['streams']:,}", ""),
        ("span", f"{s['span_s']:,.3f} s", ""),
        ("bytes read", _mib(s["bytes_read"]), ""),
        ("bytes written", _mib(s["bytes_written"]), ""),
        ("latency recorded", "yes" if s["has_latency"] else "no", ""),
        ("lines read", f"{s['lines']:,}", ""),
        ("out-of-order lines", f"{s['out_of_order']:,}", ""),
        ("skipped lines", f"{s['skipped']:,}", ""),
    ]
    for row in rows:
        table.add_row(*row)
    console = make_console()
    console.print(table)
    vols = Table(title="volumes", title_justify="left")
    vols.add_column("id", justify="right")
    vols.add_column("name")
    vols.add_column("requests", justify="right")
    vols.add_column("share", justify="right")
    shown = s["volumes"][: args.max_volumes]
    for v in shown:
        vols.add_row(str(v["id"]), v["name"], f"{v['requests']:,}", _pct(v["requests"], n))
    if len(s["volumes"]) > len(shown):
        vols.add_row("…", f"{len(s['volumes']) - len(shown)} more (--max-volumes)", "", "")
    console.print(vols)
    return EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from iomimic.io import output_format, summary, write_trace

    fmt = output_format(args.output, args.to)  # fail on a bad extension before reading
    if Path(args.output).resolve() == Path(args.trace).resolve():
        raise UsageError("the output would overwrite the input; choose another -o")
    trace = _read(args)
    _report_reading(summary(trace))
    write_trace(trace, args.output, fmt)
    print(f"wrote {len(trace):,} requests ({trace.report.get('format')} → {fmt}) to {args.output}")
    return EXIT_OK


def cmd_characterize(args: argparse.Namespace) -> int:
    from iomimic.io import summary
    from iomimic.profile import characterize
    from iomimic.report import make_console, render_profile

    trace = _read(args)
    _report_reading(summary(trace))
    profile = characterize(
        trace,
        ranges=args.ranges,
        window=args.window,
        by=args.by,
        mrc=args.mrc,
        mrc_sampling=args.mrc_sampling,
    )
    if args.json:
        _write_json(args.json, profile)
        if args.json == "-":
            return EXIT_OK
    render_profile(profile, make_console())
    return EXIT_OK


def cmd_formats(args: argparse.Namespace) -> int:
    from rich.table import Table

    from iomimic.io import formats
    from iomimic.report import make_console

    table = Table(title="trace formats (name for --format)", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("what it is")
    for name, description in formats():
        table.add_row(name, description)
    make_console().print(table)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from iomimic.demo import run_demo

    return run_demo()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="iomimic",
        description="Read block I/O traces, characterize them, model them, and generate faithful "
        "synthetic I/O.",
        epilog="Run `iomimic COMMAND --help` for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"iomimic {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, handler: Callable[[argparse.Namespace], int], help: str, examples: str):
        p = sub.add_parser(
            name,
            help=help,
            description=help,
            epilog="examples:\n" + examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.set_defaults(handler=handler)
        return p

    p = command(
        "info",
        cmd_info,
        "Summarise a trace: format, requests, reads/writes, volumes, span, bytes.",
        "  iomimic info wsrch-small.trace\n"
        "  iomimic info hm_0.csv.gz --json hm0.json\n"
        "  iomimic info trace.txt --format blkparse --skip-bad\n",
    )
    p.add_argument("trace", help="trace file (plain, .gz or .zst)")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON (- for stdout only)")
    p.add_argument("--max-volumes", type=int, default=20, help="volumes listed in the table (default 20)")
    _add_read_options(p)

    p = command(
        "convert",
        cmd_convert,
        "Convert a trace to Parquet or iomimic's canonical CSV (lossless either way).",
        "  iomimic convert hm_0.csv -o hm_0.parquet\n"
        "  iomimic convert trace.blkparse.txt --format blkparse -o t.parquet --skip-bad\n"
        "  iomimic convert web.spc -o web.csv\n",
    )
    p.add_argument("trace", help="trace file (plain, .gz or .zst)")
    p.add_argument("-o", "--output", required=True, help="output file: .parquet or .csv")
    p.add_argument("--to", choices=["parquet", "csv"], help="output format (default: from the extension)")
    _add_read_options(p)

    p = command(
        "characterize",
        cmd_characterize,
        "Every figure of a trace: mix, sizes, inter-arrival fit, sequentiality, spatial and temporal "
        "locality (miss-ratio curve), fluctuation, latency; per volume and stream; thread types.",
        "  iomimic characterize trace.csv\n"
        "  iomimic characterize trace.csv --json profile.json\n"
        "  iomimic characterize trace.csv --by stream --ranges 4 --window 60s\n"
        "  iomimic characterize big.csv --mrc trace           # skip per-volume/stream curves\n",
    )
    p.add_argument("trace", help="trace file (any format iomimic reads, or Parquet)")
    p.add_argument("--json", metavar="PATH", help="write every figure as JSON (- for stdout only)")
    p.add_argument("--by", choices=["stream", "volume"], help="classify streams or volumes into thread types")
    p.add_argument("--ranges", type=int, default=4, help="equal ranges of each volume's span (default 4)")
    p.add_argument("--window", help="fluctuation window, e.g. 60s or 500ms (default min(60s, span/100))")
    p.add_argument(
        "--mrc",
        choices=["all", "trace", "none"],
        default="all",
        help="miss-ratio curves for every group, the whole trace only, or none (default all)",
    )
    p.add_argument(
        "--mrc-sampling", type=float, help="SHARDS sampling rate in (0, 1] (default exact to 10 M)"
    )
    _add_read_options(p)

    command("formats", cmd_formats, "List the trace formats iomimic reads.", "  iomimic formats\n")
    command("demo", cmd_demo, "Run iomimic on its built-in example trace.", "  iomimic demo\n")
    return parser


def main(argv: list[str] | None = None) -> int:
    verbose = "-v" in (argv or sys.argv[1:]) or "--verbose" in (argv or sys.argv[1:])
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_BAD_INPUT
        return args.handler(args)
    except IomimicError as e:
        return _fail(e, EXIT_BAD_INPUT if isinstance(e, InputError) else EXIT_FAILURE, verbose)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as e:
        return _fail(e, EXIT_BAD_INPUT, verbose)
    except BrokenPipeError:
        # Output piped into `head` that exited: not an error. Silence the flush at exit too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        print("iomimic: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        return _fail(e, EXIT_FAILURE, verbose)


def _fail(e: BaseException, code: int, verbose: bool) -> int:
    if verbose:
        traceback.print_exc()
    message = str(e) if not isinstance(e, OSError) or not e.filename else f"{e.filename}: {e.strerror}"
    print(f"iomimic: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
