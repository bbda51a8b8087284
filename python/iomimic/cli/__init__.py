"""The `iomimic` command line. Each subcommand checks its arguments, calls the library, and
hands the result to a renderer in :mod:`iomimic.report` (or writes JSON with --json). Exit
codes: 0 success, 1 runtime failure, 2 bad input.

One module per command (:data:`COMMANDS`), each with a ``register(subparsers)`` that adds its
parser and the handler the parser runs; what several share is in :mod:`iomimic.cli.args`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Iterator
from types import ModuleType

from iomimic import __version__
from iomimic.cli.args import Parser, UsageError, flags_for_parameters, set_command_parser
from iomimic.errors import InputError, IomimicError, TraceParseError

__all__ = [
    "COMMANDS",
    "EXIT_BAD_INPUT",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "UsageError",
    "build_parser",
    "command_modules",
    "main",
]

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2
#: Stopped by Ctrl-C or SIGTERM: 128 + SIGINT, as a shell reports a process it interrupted.
EXIT_INTERRUPTED = 130

#: The command modules under iomimic.cli, in the order `iomimic --help` lists them. Imported
#: by name when the parser is built, so they can import the exit codes from this module.
COMMANDS = (
    "info",
    "convert",
    "characterize",
    "model",
    "generate",
    "validate",
    "report",
    "simulate",
    "devices",
    "study",
    "replay",
    "run",
    "export",
    "offload",
    "formats",
    "demo",
)


def command_modules() -> list[ModuleType]:
    """The modules of :data:`COMMANDS`, imported."""
    return [importlib.import_module(f"{__name__}.{name}") for name in COMMANDS]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="iomimic",
        description="Read block I/O traces, characterize them, model them, and generate faithful "
        "synthetic I/O.",
        epilog="Run `iomimic COMMAND --help` for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"iomimic {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in command_modules():
        module.register(sub)
    return parser


#: Arguments that name files a command reads, and files (or targets) it writes.
_INPUTS = ("trace", "model", "original", "synthetic", "config", "parts", "workload", "apps", "timeline")
_OUTPUTS = ("output", "json", "iolog", "target", "map", "plot", "report")


def _refuse_overwriting_inputs(args: argparse.Namespace) -> None:
    """No command writes over a file it reads (checked once here, for every command)."""
    from iomimic.cli.args import model_part
    from iomimic.io import refuse_overwriting_inputs

    def paths(name: str, value) -> dict[str, str]:
        if value is None:
            return {}
        if name == "parts":
            return {f"{name}[{i}]": model_part(v)[0] for i, v in enumerate(value)}
        if name == "map":
            items = [item.partition("=")[2] for item in str(value).split(",")]
            return {f"{name}[{i}]": p for i, p in enumerate(items) if p}
        return {name: str(value)}

    inputs = {k: v for n in _INPUTS for k, v in paths(n, getattr(args, n, None)).items()}
    outputs = {k: v for n in _OUTPUTS for k, v in paths(n, getattr(args, n, None)).items()}
    refuse_overwriting_inputs(inputs, outputs)


def _check_plot(args: argparse.Namespace) -> None:
    """Where plots go is checked before the work they draw: a plot's format (one without a
    suffix is a PNG, named so), a report directory that is not a file."""
    report = getattr(args, "report", None)
    if report and os.path.exists(report) and not os.path.isdir(report):
        raise InputError(f"--report: {report} is a file; plots are written to a directory")
    plot = getattr(args, "plot", None)
    if not plot or plot == "-":
        return
    suffix = os.path.splitext(plot)[1].lower().lstrip(".")
    if not suffix:
        # a device or FIFO (/dev/null) is written as given, a PNG
        if not (os.path.exists(plot) and not os.path.isfile(plot)):
            args.plot = f"{plot}.png"
        return
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    if suffix not in formats:
        known = ", ".join(sorted(formats))
        raise InputError(f"--plot: cannot draw a .{suffix} file; write .png, .pdf or .svg (or: {known})")


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
        set_command_parser(command_parser)
        _check_plot(args)
        _refuse_overwriting_inputs(args)
        from iomimic.io import _parquet_layouts
        from iomimic.remote import local_arguments

        def note(text: str) -> None:
            print(f"note: {text}", file=sys.stderr)

        with (
            local_arguments(args, note, readable=lambda url: _parquet_layouts(url) is not None),
            _stdin_trace(args),
        ):
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
        return EXIT_INTERRUPTED
    except OSError as e:
        return _fail(e, EXIT_FAILURE, verbose, command_parser)


@contextlib.contextmanager
def _stdin_trace(args: argparse.Namespace) -> Iterator[None]:
    """A trace given as ``-`` is read from standard input (``blkparse ... | iomimic info -``),
    through a local copy (:func:`iomimic.remote.stdin_copy`; messages name it ``stdin``)."""
    if getattr(args, "trace", None) != "-":
        yield
        return
    if sys.stdin.isatty():
        raise InputError("the trace is - (standard input), but nothing is piped in: pipe a trace in")
    from iomimic.remote import stdin_copy

    with stdin_copy() as local:
        args.trace = str(local)
        yield


def _dests(parser: argparse.ArgumentParser) -> set[str]:
    return {a.dest for a in parser._actions}


def _fail(e: BaseException, code: int, verbose: bool, parser: argparse.ArgumentParser | None = None) -> int:
    if verbose:
        traceback.print_exc()
    message = str(e) if not isinstance(e, OSError) or not e.filename else f"{e.filename}: {e.strerror}"
    # a mapping that does not fit the file is not a malformed line: skipping would not help
    fixable_by_skipping = getattr(e, "key", "") not in ("no_such_column", "bad_header")
    if (
        isinstance(e, TraceParseError)
        and fixable_by_skipping
        and parser is not None
        and "skip_bad" in _dests(parser)
    ):
        message += " (`skip_bad` skips malformed lines and counts them)"
    if parser is not None:
        message = flags_for_parameters(message, parser)
    from iomimic.remote import shown

    message = shown(message)  # a local copy's path as what it copied: its URL, or stdin
    print(f"iomimic: error: {message}", file=sys.stderr)
    return code
