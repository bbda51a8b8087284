"""The `iomimic` command line. Each subcommand checks its arguments, calls the library, and
prints a table (or JSON with --json). Exit codes: 0 success, 1 runtime failure, 2 bad input."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iomimic import __version__
from iomimic.errors import InputError, IomimicError
from iomimic.io import OUTPUT_FORMATS

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


def _live_bar(description: str, total: int, *columns, **fields):
    """A transient rich progress bar on stderr, started: (bar, task)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        *columns,
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task(description, total=total, **fields)
    bar.start()
    return bar, task


def _progress_reader(path: str) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A progress callback for big files on a terminal, and a function that closes the bar."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    if not sys.stderr.isatty() or size < PROGRESS_MIN_BYTES:
        return None, lambda: None
    from rich.progress import DownloadColumn, TimeRemainingColumn, TransferSpeedColumn

    bar, task = _live_bar(
        f"reading {Path(path).name}", size, DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn()
    )
    return (lambda done, total: bar.update(task, completed=done, total=total)), bar.stop


def _progress_run(
    total: int,
) -> tuple[Callable[[int, float, float | None], None] | None, Callable[[], None]]:
    """On a terminal: a live line with requests done, elapsed time, IOPS and (open loop) the
    issue lag during real I/O."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.progress import MofNCompleteColumn, TimeElapsedColumn

    columns = (MofNCompleteColumn(), TimeElapsedColumn(), "{task.fields[iops]}")
    bar, task = _live_bar("running", total, *columns, iops="")

    def report(done: int, elapsed: float, lag_us: float | None) -> None:
        rate = f"{done / elapsed:,.0f} IOPS" if elapsed > 0 else ""
        lag = f"  lag {lag_us:,.0f} µs" if lag_us is not None else ""
        bar.update(task, completed=done, iops=rate + lag)

    return report, bar.stop


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


def _read_reported(args: argparse.Namespace):
    """The trace named on the command line, with what reading it found told on stderr."""
    from iomimic.io import summary

    trace = _read(args)
    _report_reading(summary(trace))
    return trace


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


def _seed(text: str) -> int:
    """An argparse type for ``--seed`` (argparse reports the error with the option's name)."""
    from iomimic.units import parse_seed

    try:
        return parse_seed(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


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
    from iomimic.io import output_format, write_trace

    fmt = output_format(args.output, args.to)  # fail on a bad extension before reading
    trace = _read_reported(args)
    write_trace(trace, args.output, fmt)
    print(f"wrote {len(trace):,} requests ({trace.report.get('format')} → {fmt}) to {args.output}")
    return EXIT_OK


def cmd_characterize(args: argparse.Namespace) -> int:
    from iomimic.profile import characterize
    from iomimic.report import make_console, render_profile

    trace = _read_reported(args)
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


def _save_model(model, path: str) -> None:
    model.save(path)
    d = model.data
    print(
        f"wrote model {d['name']!r} to {path}: {len(d['threads'])} thread(s), {d['levels']} level(s) x "
        f"{d['states']} states, {len(d['volumes'])} volume(s)"
    )


def cmd_model_train(args: argparse.Namespace) -> int:
    from iomimic.model import train

    trace = _read_reported(args)
    model = train(
        trace,
        levels=args.levels,
        states=args.states,
        by=args.by,
        reuse=not args.no_reuse,
        name=args.name,
        seed=args.seed,
    )
    _save_model(model, args.output)
    return EXIT_OK


def cmd_model_show(args: argparse.Namespace) -> int:
    from iomimic.model import Model
    from iomimic.model_show import render_model
    from iomimic.report import make_console

    render_model(Model.load(args.model), make_console(), max_states=args.max_states)
    return EXIT_OK


def cmd_model_preset(args: argparse.Namespace) -> int:
    from iomimic.presets import preset

    _save_model(preset(args.name), args.output)
    return EXIT_OK


def cmd_model_mix(args: argparse.Namespace) -> int:
    from iomimic.model import Model, mix

    parts = []
    for spec in args.parts:
        path, _, weight = spec.rpartition(":")
        if not path:
            path, weight = spec, "1"
        try:
            parts.append((Model.load(path), float(weight)))
        except ValueError:
            raise UsageError(f"{spec!r}: the weight after ':' must be a number") from None
    _save_model(mix(parts, name=args.name), args.output)
    return EXIT_OK


def cmd_generate(args: argparse.Namespace) -> int:
    from iomimic.io import output_format, write_trace
    from iomimic.model import Model

    fmt = output_format(args.output, args.to)
    model = Model.load(args.model)
    trace = model.generate(
        args.requests,
        duration=args.duration,
        intensity=args.intensity,
        seed=args.seed,
        reuse=not args.no_reuse,
    )
    write_trace(trace, args.output, fmt)
    span = trace.ts_ns[-1] / 1e9 if len(trace) else 0.0
    print(f"wrote {len(trace):,} requests over {span:,.3f} s to {args.output}")
    return EXIT_OK


def cmd_export_fio(args: argparse.Namespace) -> int:
    from iomimic.fio_export import export_fio

    if Path(args.trace).suffix.lower() == ".json":
        from iomimic.model import Model

        trace = Model.load(args.trace).generate(args.requests, duration=args.duration, seed=args.seed)
        source = f"model {args.trace} (seed {args.seed})"
    else:
        trace = _read_reported(args)
        source = args.trace
    iolog = args.iolog or str(Path(args.output).with_suffix(".iolog"))
    if not args.iolog:
        from iomimic.io import refuse_overwriting_inputs

        refuse_overwriting_inputs({"trace": args.trace}, {"iolog": iolog})
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
        time_scale=args.time_scale,
        no_stall=args.no_stall,
    )
    print(f"wrote {args.output} and {iolog} ({len(trace):,} requests); run it with: fio {args.output}")
    for path in r["created"]:
        print(f"created {path} ({r['files'][path]:,} bytes, laid out with data)")
    return EXIT_OK


def _run_io(args: argparse.Namespace, trace, intensity: float, deadline_s: float | None = None) -> int:
    """Issues ``trace`` (a Trace, or ParquetPieces to issue a row group at a time)."""
    from iomimic.io import ParquetPieces, output_format, write_trace
    from iomimic.realio import parse_targets, run, run_pieces
    from iomimic.report import make_console
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
        "verify": args.verify,
        # without -o nothing per request is kept: memory stays flat however long the run
        "keep_requests": bool(args.output),
    }
    # SIGTERM, like Ctrl-C, stops issuing and drains (the run sees it as an interrupt)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    pieces = isinstance(trace, ParquetPieces)
    progress, close = _progress_run(trace.rows if pieces else len(trace))
    try:
        if pieces:
            done, figures = None, run_pieces(trace, paths, progress=progress, **settings)
        else:
            done, figures = run(trace, paths, progress=progress, **settings)
    finally:
        close()
    if args.output and done is not None and len(done):
        write_trace(done, args.output, fmt)
    if args.json:
        _write_json(args.json, figures)
        if args.json == "-":
            return EXIT_OK
    _render_run(figures, make_console())
    if figures.get("verify", {}).get("failures"):
        for line in figures["verify"]["first"]:
            print(f"iomimic: verify: {line}", file=sys.stderr)
        return EXIT_FAILURE
    return 130 if figures["partial"] else EXIT_OK


def _render_run(f: dict[str, Any], console) -> None:
    from rich.table import Table

    t = Table(title=f"real I/O ({f['engine']}, {f['mode']})", title_justify="left", show_header=False)
    t.add_column("figure", style="bold")
    t.add_column("value", justify="right")
    if f["time_limited"] and not f["partial"]:
        done = f"{f['completed']:,} (until the --duration)"
    else:
        done = f"{f['completed']:,} of {f['requests']:,}" + (" (stopped: partial)" if f["partial"] else "")
    t.add_row("requests", done)
    t.add_row("elapsed", f"{f['elapsed_s']:,.3f} s")
    t.add_row("throughput", f"{f['iops']:,.1f} IOPS, {f['mb_per_s']:,.2f} MB/s")
    t.add_row("CPU per I/O", f"{f['cpu_us_per_io']:,.2f} µs")
    if "submission" in f:
        t.add_row("submissions by", f["submission"])
    if "verify" in f:
        v = f["verify"]
        t.add_row("verify", f"{v['sectors_checked']:,} sectors checked, {v['failures']:,} wrong")
    if f.get("scheduled_iops"):
        t.add_row("scheduled rate", f"{f['scheduled_iops']:,.1f} IOPS")
    percentiles = [("latency", f.get("latency_us")), ("issue lag", f.get("lag_us"))]
    by_op = f.get("by_op") or {}
    if len(by_op) > 1:
        # a mix: each operation's own rate and latency, as fio shows reads and writes apart
        for op, o in by_op.items():
            t.add_row(f"{op}s", f"{o['completed']:,}: {o['iops']:,.1f} IOPS, {o['mb_per_s']:,.2f} MB/s")
        percentiles[1:1] = [(f"{op} latency", o["latency_us"]) for op, o in by_op.items()]
    for label, p in percentiles:
        if p:
            t.add_row(
                f"{label} mean / p50 / p99 / max",
                f"{p['mean']:,.1f} / {p['p50']:,.1f} / {p['p99']:,.1f} / {p['max']:,.1f} µs",
            )
    if f.get("last_request_lag_us") is not None:
        t.add_row("last request's lag (drift)", f"{f['last_request_lag_us']:,.1f} µs")
    console.print(t)


def cmd_replay(args: argparse.Namespace) -> int:
    if not args.time_scale > 0:
        raise InputError(f"--time-scale must be positive, found {args.time_scale}")
    from iomimic.io import ParquetPieces

    # a Parquet trace with nothing to keep per request is issued a row group at a time, so a
    # long one never sits in memory whole
    pieces = None
    if not (args.output or args.verify) and args.format in (None, "parquet"):
        pieces = ParquetPieces.open(args.trace)
    return _run_io(args, pieces or _read_reported(args), 1.0 / args.time_scale)


def cmd_run(args: argparse.Namespace) -> int:
    if (args.model is None) == (args.pattern is None):
        raise InputError("run a model (MODEL.json) or a --pattern, one of them")
    if args.model is not None:
        from iomimic.model import Model

        trace = Model.load(args.model).generate(args.requests, duration=args.duration, seed=args.seed)
        return _run_io(args, trace, args.intensity)
    from iomimic.pattern import parse_pattern, pattern_trace
    from iomimic.units import parse_duration_ns, parse_size_bytes

    span = parse_size_bytes(args.size) if args.size else None
    if args.requests is None and args.duration is None:
        raise InputError("a --pattern run needs -n REQUESTS or --duration")
    pattern = parse_pattern(args.pattern, span)
    deadline_s = parse_duration_ns(args.duration) / 1e9 if args.duration else None
    if args.requests is not None:
        n = args.requests
    elif pattern.gap_ns:
        n = max(1, round(deadline_s * 1e9 * args.intensity / pattern.gap_ns))
        if pattern.poisson:
            # random gaps add up to the duration only on average: enough more that the
            # schedule outlasts it (by 5 standard deviations), and the deadline ends the run
            n += round(5 * n**0.5) + 10
    else:
        # back to back until the deadline: enough requests for any device this decade
        n = 5_000_000
    trace = pattern_trace(args.pattern, n, span=span, seed=args.seed)
    return _run_io(args, trace, args.intensity, deadline_s)


def cmd_validate(args: argparse.Namespace) -> int:
    from iomimic.io import read_trace
    from iomimic.report import make_console
    from iomimic.validate import plot_report, render, validate

    original = read_trace(args.original, format=args.format, skip_bad=args.skip_bad)
    synthetic = read_trace(args.synthetic)
    result = validate(original, synthetic, baseline=args.baseline, seed=args.seed, ranges=args.ranges)
    if args.json:
        _write_json(args.json, result)
        if args.json == "-":
            return EXIT_OK
    render(result, make_console())
    if args.report:
        for path in plot_report(result, args.report):
            print(f"wrote {path}")
    return EXIT_OK


def cmd_simulate(args: argparse.Namespace) -> int:
    from iomimic.io import output_format, write_trace
    from iomimic.report import make_console
    from iomimic.sim import simulate
    from iomimic.sim_report import render_simulation

    fmt = output_format(args.output, None) if args.output else None
    trace = _read_reported(args)
    out, figures = simulate(
        trace,
        args.device,
        config=args.config,
        iodepth=args.iodepth,
        intensity=args.intensity,
        scheduler=args.scheduler,
    )
    if args.output:
        write_trace(out, args.output, fmt)
    if args.json:
        _write_json(args.json, figures)
        if args.json == "-":
            return EXIT_OK
    render_simulation(figures, make_console())
    return EXIT_OK


def cmd_devices(args: argparse.Namespace) -> int:
    import tomllib
    from rich.table import Table

    from iomimic.report import make_console
    from iomimic.sim import device_presets

    presets = device_presets()
    if args.show:
        # the device file alone, so it can be redirected to a file and edited
        if args.show not in presets:
            raise InputError(f"unknown device {args.show!r}; presets are {', '.join(presets)}")
        print(presets[args.show], end="")
        return EXIT_OK
    table = Table(title="device presets (name for --device)", title_justify="left")
    for c in ("name", "what", "array", "device"):
        table.add_column(c)
    for name, text in presets.items():
        cfg = tomllib.loads(text)
        dev = cfg["device"]
        if dev["kind"] == "hdd":
            summary = (
                f"HDD {dev['rpm']:g} rpm, {dev['capacity_gb']:g} GB, seek {dev['track_to_track_ms']:g}/"
                f"{dev['average_seek_ms']:g}/{dev['full_stroke_ms']:g} ms, "
                f"{dev['outer_mb_s']:g}-{dev['inner_mb_s']:g} MB/s"
            )
        elif dev["kind"] == "ssd":
            summary = (
                f"SSD {dev['capacity_gb']:g} GB, {dev['channels']}x{dev['dies_per_channel']} dies, "
                f"read {dev['read_us']:g} µs, program {dev['program_us']:g} µs, erase {dev['erase_us']:g} µs"
            )
        else:
            summary = dev["kind"]
        a = cfg.get("array")
        array = f"{a['level']} x{a['devices']}, {a['stripe_kib']} KiB units" if a else "-"
        table.add_row(name, cfg.get("description", ""), array, summary)
    make_console().print(table)
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


def _subcommand(
    subparsers, name: str, handler: Callable[[argparse.Namespace], int], help: str, examples: str
):
    """A subcommand whose --help ends with worked examples."""
    p = subparsers.add_parser(
        name,
        help=help,
        description=help,
        epilog="examples:\n" + examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(handler=handler, parser=p)
    return p


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
        return _subcommand(sub, name, handler, help, examples)

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
        "Convert a trace to Parquet or iomimic's canonical CSV, plain or gzipped (lossless every way).",
        "  iomimic convert hm_0.csv -o hm_0.parquet\n"
        "  iomimic convert trace.blkparse.txt --format blkparse -o t.parquet --skip-bad\n"
        "  iomimic convert web.spc -o web.csv\n"
        "  iomimic convert web.spc -o web.csv.gz          # canonical CSV, gzipped\n",
    )
    p.add_argument("trace", help="trace file (plain, .gz or .zst)")
    p.add_argument("-o", "--output", required=True, help="output file: .parquet, .csv or .csv.gz")
    p.add_argument("--to", choices=OUTPUT_FORMATS, help="output format (default: from the extension)")
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

    model_cmd = sub.add_parser(
        "model",
        help="Train, show, assemble or load preset workload models.",
        description="The hierarchical state-diagram model: train | show | preset | mix.",
    )
    model_sub = model_cmd.add_subparsers(
        dest="model_command", metavar="ACTION", parser_class=_Parser, required=True
    )

    def model_action(name: str, handler: Callable[[argparse.Namespace], int], help: str, examples: str):
        return _subcommand(model_sub, name, handler, help, examples)

    p = model_action(
        "train",
        cmd_model_train,
        "Train a model of a trace (levels and states chosen automatically unless given).",
        "  iomimic model train trace.csv -o model.json\n"
        "  iomimic model train trace.csv -o model.json --levels 2 --states 4 --by stream\n",
    )
    p.add_argument("trace", help="trace file")
    p.add_argument("-o", "--output", required=True, help="model file to write (JSON)")
    p.add_argument("--levels", type=int, help="levels of the state hierarchy (default: chosen)")
    p.add_argument("--states", type=int, help="states per level (default: chosen among 4, 8, 16)")
    p.add_argument(
        "--by",
        choices=["stream", "none"],
        help="one thread model per stream, or one for all (default: per stream when there are 2 to 256)",
    )
    p.add_argument(
        "--no-reuse", action="store_true", help="leave out the temporal-locality (reuse) extension"
    )
    p.add_argument("--name", help="model name (default: the trace's file name)")
    p.add_argument("--seed", type=_seed, default=1, help="seed for the generation runs of level selection")
    _add_read_options(p)

    p = model_action(
        "show",
        cmd_model_show,
        "Print a model: threads, states, transitions, distributions.",
        "  iomimic model show model.json\n",
    )
    p.add_argument("model", help="model file")
    p.add_argument("--max-states", type=int, default=16, help="states listed per chain (default 16)")

    p = model_action(
        "preset",
        cmd_model_preset,
        "Write a model built from the seeds' published figures: tpcc, tpce, tpch, messenger.",
        "  iomimic model preset tpch -o tpch.json\n",
    )
    p.add_argument("name", choices=["tpcc", "tpce", "tpch", "messenger"])
    p.add_argument("-o", "--output", required=True, help="model file to write")

    p = model_action(
        "mix",
        cmd_model_mix,
        "Assemble a workload from thread models, each with a share of the requests.",
        "  iomimic model mix data.json:0.9 log.json:0.1 -o mix.json\n",
    )
    p.add_argument("parts", nargs="+", help="MODEL.json[:SHARE] (share default 1)")
    p.add_argument("-o", "--output", required=True, help="model file to write")
    p.add_argument("--name", default="mix", help="name of the mixed model")

    p = command(
        "generate",
        cmd_generate,
        "Generate a synthetic trace from a model.",
        "  iomimic generate model.json -o synth.parquet -n 1000000 --seed 7\n"
        "  iomimic generate model.json -o fast.parquet --duration 60s --intensity 4  # 4x the rate\n",
    )
    p.add_argument("model", help="model file")
    p.add_argument("-o", "--output", required=True, help="trace to write: .parquet, .csv or .csv.gz")
    p.add_argument("-n", "--requests", type=int, help="requests to generate (default: the model's count)")
    p.add_argument("--duration", help="generate this long a trace, e.g. 60s or 10m")
    p.add_argument("--intensity", type=float, default=1.0, help="multiply the request rate (default 1)")
    p.add_argument("--seed", type=_seed, default=1, help="random seed; the same seed gives the same trace")
    p.add_argument("--no-reuse", action="store_true", help="turn the temporal-locality extension off")
    p.add_argument("--to", choices=OUTPUT_FORMATS, help="output format (default: from the extension)")

    p = command(
        "validate",
        cmd_validate,
        "Compare a synthetic trace with the original: the seed's validation table, and more.",
        "  iomimic validate trace.csv synth.parquet\n"
        "  iomimic validate trace.csv synth.parquet --baseline locality-free --report plots/\n",
    )
    p.add_argument("original", help="the original trace")
    p.add_argument("synthetic", help="the synthetic trace")
    p.add_argument("--baseline", choices=["locality-free"], help="also score an IOMeter-like workload")
    p.add_argument("--json", metavar="PATH", help="write the comparison as JSON (- for stdout only)")
    p.add_argument("--report", metavar="DIR", help="also write plots (PNG) to DIR")
    p.add_argument("--ranges", type=int, default=4, help="spatial ranges (default 4)")
    p.add_argument("--seed", type=_seed, default=1, help="seed of the baseline")
    p.add_argument("-f", "--format", help="format of the original (default: detected)")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed lines of the original")

    p = command(
        "simulate",
        cmd_simulate,
        "Replay a trace on a simulated disk, SSD or RAID array: latency, IOPS, utilisation, energy.",
        "  iomimic simulate trace.csv --device hdd-7200\n"
        "  iomimic simulate trace.csv --device fc60-r5-4disk --json sim.json -o with_latency.parquet\n"
        "  iomimic simulate trace.csv --config my_array.toml --intensity 2\n"
        "  iomimic simulate trace.csv --device ssd-nvme --iodepth 32       # closed loop\n",
    )
    p.add_argument("trace", help="trace file")
    p.add_argument("--device", help="a preset (see `iomimic devices`)")
    p.add_argument("--config", help="a device file (TOML; see docs/simulate.md)")
    p.add_argument("--iodepth", type=int, help="closed loop with this many outstanding (default: open loop)")
    p.add_argument("--intensity", type=float, default=1.0, help="divide trace times by this (open loop)")
    p.add_argument("--scheduler", choices=["fifo", "sstf"], help="override the device file's disk scheduler")
    p.add_argument(
        "-o", "--output", help="write the trace with simulated latencies (.parquet, .csv or .csv.gz)"
    )
    p.add_argument("--json", metavar="PATH", help="write the figures as JSON (- for stdout only)")
    _add_read_options(p)

    p = command(
        "devices",
        cmd_devices,
        "List the device presets and their parameters.",
        "  iomimic devices\n  iomimic devices --show fc60-r5-4disk\n",
    )
    p.add_argument(
        "--show", metavar="NAME", help="print only that preset's device file (TOML), e.g. to edit a copy"
    )

    def add_run_options(p: argparse.ArgumentParser) -> None:
        g = p.add_argument_group("where the I/O goes")
        g.add_argument(
            "--target", help="a file (created and preallocated with --size if missing) or a block device"
        )
        g.add_argument("--map", help="VOLUME=PATH,... one target per volume")
        g.add_argument(
            "--size", help="bytes of each target to use, e.g. 8G; needed to create one (default: its size)"
        )
        g.add_argument(
            "--overwrite", action="store_true", help="write into an existing file iomimic did not create"
        )
        g.add_argument(
            "--allow-device", action="store_true", help="allow a block device (never a mounted one)"
        )
        g = p.add_argument_group("how")
        g.add_argument(
            "--engine",
            default="auto",
            help="io_uring, psync (thread pool), null (no I/O), or auto (default: io_uring where the "
            "kernel allows it, else psync)",
        )
        g.add_argument(
            "--iodepth", type=int, help="closed loop with this many outstanding (default: open loop)"
        )
        g.add_argument(
            "--workers",
            type=int,
            default=16,
            help="open loop: most requests in flight (psync threads, io_uring ring slots; default 16)",
        )
        g.add_argument("--no-stall", action="store_true", help="open loop without waiting for request times")
        g.add_argument(
            "--no-sqpoll",
            action="store_true",
            help="io_uring open loop: submit from the timing thread instead of a kernel polling thread "
            "(saves that thread's CPU; requests due during a submission, a few µs, go out late)",
        )
        g.add_argument("--direct", action="store_true", help="O_DIRECT, 4 KiB-aligned offsets and sizes")
        g.add_argument(
            "--verify",
            action="store_true",
            help="checksummed sector headers on writes, checked on reads and at the end",
        )
        g = p.add_argument_group("results")
        g.add_argument("-o", "--output", help="the completed requests as a trace (.parquet, .csv or .csv.gz)")
        g.add_argument("--json", metavar="PATH", help="write the figures as JSON (- for stdout only)")

    p = command(
        "replay",
        cmd_replay,
        "Issue a trace's requests against files or a device at their times (or faster).",
        "  iomimic replay trace.csv --target /data/f.dat --size 8G -o done.parquet\n"
        "  iomimic replay trace.csv --target f.dat --time-scale 0.5     # twice as fast\n"
        "  iomimic replay trace.csv --target f.dat --no-stall --engine null\n",
    )
    p.add_argument("trace", help="trace file")
    p.add_argument("--time-scale", type=float, default=1.0, help="multiply trace times (0.5: twice as fast)")
    add_run_options(p)
    _add_read_options(p)

    p = command(
        "run",
        cmd_run,
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
        "(default --size). See docs/realio.md",
    )
    p.add_argument("-n", "--requests", type=int, help="requests to generate (default: the model's count)")
    p.add_argument("--duration", help="generate this long a workload, e.g. 60s")
    p.add_argument("--intensity", type=float, default=1.0, help="multiply the request rate (default 1)")
    p.add_argument("--seed", type=_seed, default=1, help="random seed")
    add_run_options(p)

    export_cmd = sub.add_parser(
        "export",
        help="Hand a workload to another tool (fio).",
        description="Write a workload in another tool's terms: fio.",
    )
    export_sub = export_cmd.add_subparsers(
        dest="export_command", metavar="TOOL", parser_class=_Parser, required=True
    )
    p = _subcommand(
        export_sub,
        "fio",
        cmd_export_fio,
        "Write a fio job file and a version 3 I/O log that replay a trace or a model's workload.",
        "  iomimic export fio trace.csv -o job.fio                 # job.fio + job.iolog\n"
        "  iomimic export fio model.json -o job.fio --iolog trace.iolog -n 100000 --seed 7\n"
        "  iomimic export fio trace.csv -o job.fio --map sda=/data/a.dat --prepare --direct\n"
        "  fio job.fio\n",
    )
    p.add_argument("trace", help="a trace file, or a model (.json) to generate from")
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
    p.add_argument("--ioengine", default="libaio", help="fio ioengine (default libaio)")
    p.add_argument("--iodepth", type=int, default=32, help="fio iodepth (default 32)")
    p.add_argument("--direct", action="store_true", help="O_DIRECT (direct=1)")
    p.add_argument("--time-scale", type=float, default=1.0, help="replay at this multiple of logged times")
    p.add_argument("--no-stall", action="store_true", help="replay as fast as possible (replay_no_stall)")
    g = p.add_argument_group("generating from a model")
    g.add_argument("-n", "--requests", type=int, help="requests to generate (default: the model's count)")
    g.add_argument("--duration", help="generate this long a workload, e.g. 60s")
    g.add_argument("--seed", type=_seed, default=1, help="random seed")
    _add_read_options(p)

    command("formats", cmd_formats, "List the trace formats iomimic reads.", "  iomimic formats\n")
    command(
        "demo",
        cmd_demo,
        "Run the whole loop on the built-in tpcc preset: preset, trace, model, trace, validation.",
        "  iomimic demo\n",
    )
    return parser


#: Arguments that name files a command reads, and files (or targets) it writes.
_INPUTS = ("trace", "model", "original", "synthetic", "config", "parts")
_OUTPUTS = ("output", "json", "iolog", "target", "map")


def _refuse_overwriting_inputs(args: argparse.Namespace) -> None:
    """No command writes over a file it reads (checked once here, for every command)."""
    from iomimic.io import refuse_overwriting_inputs

    def paths(name: str, value) -> dict[str, str]:
        if value is None:
            return {}
        if name == "parts":
            return {f"{name}[{i}]": v.rpartition(":")[0] or v for i, v in enumerate(value)}
        if name == "map":
            items = [item.partition("=")[2] for item in str(value).split(",")]
            return {f"{name}[{i}]": p for i, p in enumerate(items) if p}
        return {name: str(value)}

    inputs = {k: v for n in _INPUTS for k, v in paths(n, getattr(args, n, None)).items()}
    outputs = {k: v for n in _OUTPUTS for k, v in paths(n, getattr(args, n, None)).items()}
    refuse_overwriting_inputs(inputs, outputs)


def main(argv: list[str] | None = None) -> int:
    verbose = "-v" in (argv or sys.argv[1:]) or "--verbose" in (argv or sys.argv[1:])
    command_parser = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_BAD_INPUT
        command_parser = getattr(args, "parser", None)
        _refuse_overwriting_inputs(args)
        return args.handler(args)
    except IomimicError as e:
        code = EXIT_BAD_INPUT if isinstance(e, InputError) else EXIT_FAILURE
        return _fail(e, code, verbose, command_parser)
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
        return _fail(e, EXIT_FAILURE, verbose, command_parser)


def _fail(e: BaseException, code: int, verbose: bool, parser: argparse.ArgumentParser | None = None) -> int:
    if verbose:
        traceback.print_exc()
    message = str(e) if not isinstance(e, OSError) or not e.filename else f"{e.filename}: {e.strerror}"
    if parser is not None:
        message = _flags_for_parameters(message, parser)
    print(f"iomimic: error: {message}", file=sys.stderr)
    return code


def _flags_for_parameters(message: str, parser: argparse.ArgumentParser) -> str:
    """The library names its parameters in backquotes (`allow_device`); on the command line
    they are the command's flags (--allow-device)."""
    import re

    flags = {a.dest: max(a.option_strings, key=len) if a.option_strings else a.dest for a in parser._actions}

    def flag(m: re.Match) -> str:
        name, index = m.group(1), m.group(2) or ""
        return flags[name] + index if name in flags else m.group(0)

    return re.sub(r"`(\w+)(\[\d+\])?`", flag, message)


if __name__ == "__main__":
    sys.exit(main())
