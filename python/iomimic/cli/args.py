"""What several commands share: the parser class, subcommands with examples, the option groups
for reading a trace and for where real I/O goes, ``--seed``, and reading and ``--json`` writing
as the commands do them."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import Any

from iomimic.errors import InputError

Handler = Callable[[argparse.Namespace], int]


class UsageError(InputError):
    """A bad command line; argparse's own errors are raised as this so main() decides the exit."""


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A value that starts with a minus and a digit ("-5s", "-2x") is a value, as argparse
        # already takes "-5": a negative duration then meets its option's own message, not
        # "expected one argument". No option of iomimic's is spelt like a number.
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str):  # argparse would print and exit(2) itself; keep one exit path
        # "iomimic: error: simulate: ..." — the program's name is said once, by main()
        command = self.prog.removeprefix("iomimic").strip()
        raise UsageError(f"{command}: {message}" if command else message)


def subcommand(subparsers, name: str, handler: Handler, help: str, examples: str) -> argparse.ArgumentParser:
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


def seed(text: str) -> int:
    """An argparse type for ``--seed`` (argparse reports the error with the option's name)."""
    from iomimic.units import parse_seed

    try:
        return parse_seed(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def count(text: str) -> int:
    """An argparse type for counts (requests, depths, ranges, workers): a whole number of at
    least 1 (argparse names the option in the error; a huge one is refused where it is used)."""
    try:
        value = int(text.replace("_", ""), 10)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number of at least 1, found {text!r}")
    return value


def positive_numbers(text: str, option: str) -> list[float]:
    """A comma-separated list of positive numbers (``1,2,4``), the error naming ``option``."""
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{option}: {text!r} is not a comma-separated list of numbers") from None
    if not values or not all(0 < v < float("inf") for v in values):
        raise InputError(f"{option}: every value must be a positive number, found {text!r}")
    return values


def add_intensity(p: argparse.ArgumentParser, what: str = "the request rate", many: bool = False) -> None:
    """``--intensity X`` (X times as fast), the one speed knob of every command, and
    ``--time-scale`` (multiply times: 0.5 is twice as fast), as fio calls it, meaning 1/X.
    ``many``: ``--intensity A,B,...`` runs at each (read with :func:`intensities`)."""
    g = p.add_mutually_exclusive_group()
    if many:
        g.add_argument(
            "--intensity",
            help=f"multiply {what} (2: twice as fast; default 1); A,B,... runs at each in turn",
        )
    else:
        g.add_argument("--intensity", type=float, help=f"multiply {what} (2: twice as fast; default 1)")
    g.add_argument(
        "--time-scale",
        type=float,
        help="multiply the times instead (0.5 = --intensity 2: half the gaps, twice the rate)",
    )


def add_ray(p: argparse.ArgumentParser, what: str) -> None:
    """``--ray [ADDRESS]``: run the independent pieces of the work as Ray tasks."""
    p.add_argument(
        "--ray",
        nargs="?",
        const=True,
        metavar="ADDRESS",
        help=f"{what} as Ray tasks: on the cluster at ADDRESS (host:port), else RAY_ADDRESS, else a "
        "local Ray (docs/ray.md; needs pip install 'iomimic[ray]')",
    )


def ray_engine(args: argparse.Namespace):
    """The Ray that ``--ray`` asks for (checked before any work), or None."""
    if getattr(args, "ray", None) is None:
        return None
    from iomimic.cluster import connect

    return connect(args.ray)


def intensity(args: argparse.Namespace) -> float:
    """The speed ``--intensity`` or ``--time-scale`` asked for (1 when neither)."""
    if getattr(args, "time_scale", None) is not None:
        if not args.time_scale > 0:
            raise InputError(f"--time-scale must be positive, found {args.time_scale}")
        return 1.0 / args.time_scale
    value = 1.0 if args.intensity is None else args.intensity
    if not (value > 0 and value != float("inf")):
        raise InputError(f"--intensity must be a positive number, found {value}")
    return value


def intensities(args: argparse.Namespace) -> list[float]:
    """The speeds of an ``--intensity A,B,...`` (``add_intensity(many=True)``), or the one
    ``--time-scale`` asks for."""
    if args.intensity is None:
        return [intensity(args)]
    return positive_numbers(args.intensity, "--intensity")


#: What a command's trace argument takes.
TRACE_HELP = (
    "trace file (any format iomimic reads, plain, .gz or .zst, or Parquet), a directory or glob of "
    "files read as one, a URL of either (s3://, gs://, file://; see docs/formats.md), or - for "
    "standard input (blkparse ... | iomimic info -)"
)


def add_read_options(p: argparse.ArgumentParser) -> None:
    """The options of :func:`read` (every command that reads a trace of any format)."""
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
        "--columns",
        help="generic format: column mapping by field number or header name, e.g. "
        "ts=0:us,offset=4:bytes,size=5:bytes,op=3 or ts=time:s,offset=lba:sectors,size=len,op=rw",
    )
    g.add_argument("--delimiter", help="generic format: field separator (default: detected)")
    g.add_argument(
        "--volume-names",
        choices=["records", "file"],
        default="records",
        help="a directory or glob of files: name volumes as the records do (default; one name in "
        "several files is one volume, as in traces split by time) or prefix them with each file's "
        "name (files of one device each)",
    )
    g = p.add_argument_group("choosing requests (times from the trace's first request)")
    g.add_argument(
        "--start", metavar="TIME", help="only requests issued at or after this time, e.g. 10m, 90s"
    )
    g.add_argument("--end", metavar="TIME", help="only requests issued before this time, e.g. 20m")
    g.add_argument(
        "--volume", action="append", metavar="NAME", help="only this volume (name; repeat or VOL1,VOL2)"
    )
    g.add_argument("--op", action="append", help="only these ops: read, write, trim, flush (repeat or a,b)")
    g.add_argument(
        "--stream", action="append", metavar="ID", help="only this stream id (pid; repeat or ID1,ID2)"
    )


def add_target_options(p: argparse.ArgumentParser) -> None:
    """The options of real I/O (`run` and `replay`): where it goes, how, and its results."""
    g = p.add_argument_group("where the I/O goes")
    g.add_argument(
        "--target",
        help="a file (created and preallocated with --size if missing) or a block device; "
        "everest:BASE for a base volume set up with `iomimic offload init` (its writes off-loaded)",
    )
    g.add_argument("--map", help="VOLUME=PATH,... one target per volume")
    g.add_argument(
        "--size", help="bytes of each target to use, e.g. 8G; needed to create one (default: its size)"
    )
    g.add_argument(
        "--overwrite", action="store_true", help="write into an existing file iomimic did not create"
    )
    g.add_argument("--allow-device", action="store_true", help="allow a block device (never a mounted one)")
    g = p.add_argument_group("how")
    g.add_argument(
        "--engine",
        default="auto",
        help="io_uring, psync (thread pool), null (no I/O), or auto (default: io_uring where the "
        "kernel allows it, else psync)",
    )
    g.add_argument(
        "--iodepth", type=count, help="closed loop with this many outstanding (default: open loop)"
    )
    g.add_argument(
        "--workers",
        type=count,
        default=16,
        help="open loop: most requests in flight (psync threads, io_uring ring slots; default 16)",
    )
    g.add_argument("--no-stall", action="store_true", help="open loop without waiting for request times")
    g.add_argument(
        "--ramp",
        metavar="TIME",
        help="warm up this long first (wall-clock, e.g. 10s): requests issued then run but are left "
        "out of every figure, as fio's ramp_time",
    )
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


def wall_clock(args: argparse.Namespace) -> tuple[float, float | None]:
    """(warm-up, warm-up + --duration) in wall-clock seconds from --ramp and --duration: how
    long a run issues (None: until the workload ends)."""
    from iomimic.units import parse_duration_ns

    ramp = parse_duration_ns(args.ramp, "ramp") / 1e9 if getattr(args, "ramp", None) else 0.0
    duration = getattr(args, "duration", None)
    return ramp, None if duration is None else ramp + parse_duration_ns(duration, "duration") / 1e9


def model_part(spec: str) -> tuple[str, str]:
    """``MODEL.json[:SHARE]`` of `model mix` as (path, share text); the share defaults to 1."""
    path, _, share = spec.rpartition(":")
    return (path, share) if path else (spec, "1")


def read(args: argparse.Namespace):
    """The trace named on the command line, read with the options of :func:`add_read_options`
    (a progress bar on a terminal for big files)."""
    from iomimic.cli.progress import reading
    from iomimic.io import read_trace
    from iomimic.remote import is_url, local_copy

    if is_url(args.trace):  # Parquet kept at its URL, read whole: copied first, as other URLs are
        with local_copy(args.trace, lambda text: print(f"note: {text}", file=sys.stderr)) as local:
            return read(argparse.Namespace(**{**vars(args), "trace": str(local)}))
    progress, close = reading(args.trace)
    try:
        trace = read_trace(
            args.trace,
            format=args.format,
            skip_bad=args.skip_bad,
            time_unit=args.time_unit,
            event=args.event,
            columns=args.columns,
            delimiter=args.delimiter,
            progress=progress,
            volume_names=args.volume_names,
        )
    finally:
        close()
    return select(trace, args)


def selecting(args: argparse.Namespace) -> bool:
    """Whether the command line chooses a part of the trace (--start, --end, --volume, ...)."""
    return any(getattr(args, k, None) is not None for k in ("start", "end", "volume", "op", "stream"))


class TooLarge(str):
    """Why a trace is read in pieces: what it would cost read whole (``exact``: its requests
    are counted, a Parquet trace's; else its files' size bounds them)."""

    exact: bool


def too_large(args: argparse.Namespace, memory: int, needs_whole: str | None = None) -> TooLarge | None:
    """Why the trace should be read a piece at a time (too large for ``memory`` read whole), or
    None when it surely fits. A selection (--start, --volume, ...), or the option
    ``needs_whole`` names, needs it whole: then it is read whole, and that is said."""
    from iomimic.pieces import estimated_requests
    from iomimic.profile import BYTES_PER_REQUEST

    try:
        requests, exact = estimated_requests(args.trace)
    except (OSError, InputError):
        return None  # reading it whole names what is wrong
    if requests * BYTES_PER_REQUEST <= memory:
        return None
    gib = requests * BYTES_PER_REQUEST / 2**30
    why = TooLarge(
        f"has {requests:,} requests: about {gib:.1f} GiB read whole"
        if exact and gib >= 0.1
        else "is too large for --memory read whole"
    )
    why.exact = exact
    if exact and getattr(args, "volume_names", "records") != "records":
        needs_whole = needs_whole or "--volume-names file of Parquet parts"  # named in the merge
    whole = needs_whole or ("choosing requests (--start, --volume, ...)" if selecting(args) else None)
    if whole:
        print(f"note: the trace {why}; {whole} needs it whole, so it is read whole", file=sys.stderr)
        return None
    return why


def read_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of :func:`iomimic.read_trace` the command line gives (but the selection and
    volume names)."""
    return {k: getattr(args, k) for k in ("format", "skip_bad", "time_unit", "event", "columns", "delimiter")}


def select(trace, args: argparse.Namespace):
    """The part of ``trace`` the selection options choose (the whole trace when none is given)."""
    from iomimic.units import parse_time_ns

    if not selecting(args):
        return trace

    def items(values: list[str] | None) -> list[str] | None:
        return None if values is None else [x.strip() for v in values for x in v.split(",") if x.strip()]

    streams = items(args.stream)
    bad = next((s for s in streams or [] if not s.isdigit()), None)
    if bad is not None:
        raise InputError(f"--stream: expected a stream id (a whole number), found {bad!r}")
    return trace.select(
        start_ns=None if args.start is None else parse_time_ns(args.start, "start"),
        end_ns=None if args.end is None else parse_time_ns(args.end, "end"),
        volumes=items(args.volume),
        ops=items(args.op),
        streams=None if streams is None else [int(s) for s in streams],
    )


def read_reported(args: argparse.Namespace):
    """:func:`read`, with what reading found told on stderr."""
    from iomimic.io import summary

    trace = read(args)
    report_reading(summary(trace))
    return trace


#: The parser of the command running, whose flags library messages are shown with.
_command_parser: argparse.ArgumentParser | None = None


def set_command_parser(parser: argparse.ArgumentParser | None) -> None:
    global _command_parser
    _command_parser = parser


def flags_for_parameters(message: str, parser: argparse.ArgumentParser | None = None) -> str:
    """The library names its parameters in backquotes (`allow_device`); on the command line
    they are the flags of the command running (--allow-device)."""
    import re

    parser = parser or _command_parser
    if parser is None:
        return message
    flags = {a.dest: max(a.option_strings, key=len) if a.option_strings else a.dest for a in parser._actions}
    # a library parameter the command fills from a flag of another name (--cache → cache_bytes)
    for param, dest in getattr(parser, "param_aliases", {}).items():
        if dest in flags:
            flags[param] = flags[dest]

    def flag(m: re.Match) -> str:
        name, index = m.group(1), m.group(2) or ""
        return flags[name] + index if name in flags else m.group(0)

    return re.sub(r"`([\w.]+)(\[\d+\])?`", flag, message)


def report_reading(s: dict[str, Any]) -> None:
    """Tells stderr what reading skipped or reordered, so nothing is lost silently."""
    err = sys.stderr
    for note in s["notes"]:
        print(f"note: {flags_for_parameters(note)}", file=err)
    if s["skipped"]:
        reasons = ", ".join(f"{n} {k}" for k, n in s["skipped_by_reason"].items())
        n, lines = s["skipped"], "line" if s["skipped"] == 1 else "lines"
        print(f"iomimic: warning: skipped {n} malformed {lines} ({reasons}); first ones:", file=err)
        for example in s["skipped_examples"]:
            print(f"  {example}", file=err)
    if s["out_of_order"]:
        n = s["out_of_order"]
        were = "lines were" if n != 1 else "line was"
        print(f"note: {n} {were} out of time order; requests were sorted stably", file=err)


def write_json(path: str, data: Any) -> bool:
    """Writes ``--json PATH`` (``-``: stdout); True when that was stdout, which then holds only
    the JSON, so the command prints nothing else."""
    from iomimic.io import atomic_output

    text = json.dumps(data, indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return True
    with atomic_output(path) as tmp:
        tmp.write_text(text)
    return False
