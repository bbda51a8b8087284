"""`iomimic study cache-alloc`: an SSD cache split among the VMs of transactional applications,
judged by transaction latency; with --adapt, the MAPE-K loop over a timeline of changes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from iomimic.cli import EXIT_OK
from iomimic.cli.args import count, seed, subcommand, write_json

SCHEMES = "equal,working-set,transaction-aware,optimal"


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "cache-alloc",
        handle,
        "Transaction-aware SSD cache allocation (Tang et al.): applications are sets of VMs, "
        "workloads mixes of transaction types, a transaction's latency the sum of its times on "
        "the VMs, each VM's time falling with its hit ratio. Schemes: equal, working-set, "
        "transaction-aware (Tang et al.'s GA) and optimal (from the hit curves). See "
        "docs/studies.md for the applications file.",
        "  iomimic study cache-alloc --example\n"
        f"  iomimic study cache-alloc apps.toml --scheme {SCHEMES} --json out.json\n"
        "  iomimic study cache-alloc apps.toml --adapt --timeline mix-changes.toml --plot alloc.png\n",
    )
    p.param_aliases = {"schemes": "scheme", "timeline_file": "timeline", "ga.units": "units"}
    p.add_argument("apps", nargs="?", help="the applications file (TOML; see docs/studies.md)")
    p.add_argument(
        "--example",
        action="store_true",
        help="Tang et al.'s worked example (two VMs, 8 GB and 2 GB, 2 GB cache)",
    )
    p.add_argument(
        "--scheme", default=SCHEMES, help=f"schemes to compare, comma-separated (default {SCHEMES})"
    )
    p.add_argument("--adapt", action="store_true", help="run the closed loop over --timeline")
    p.add_argument("--timeline", metavar="TOML", help="when workloads and rates change (with --adapt)")
    p.add_argument(
        "--seed", type=seed, default=1, help="seed of the GA, the loop and generated VMs (default 1)"
    )
    p.add_argument("--generations", type=count, default=200, help="GA generations (default 200)")
    p.add_argument("--population", type=count, default=60, help="GA population (default 60)")
    p.add_argument(
        "--units", type=count, default=1000, help="grain of a plan: 1/UNITS of a cache (default 1000)"
    )
    p.add_argument("--json", metavar="PATH", help="write the report as JSON (- for stdout only)")
    p.add_argument("--plot", metavar="PNG", help="also draw the report as a plot")


def measured_curves(text: str, path: Path, seed: int) -> dict[str, Any]:
    """The LRU miss-ratio curve of every VM that names a trace, a model (a file or a preset) or
    a pattern, files relative to the applications file."""
    import tomllib

    from iomimic.errors import InputError, IomimicError
    from iomimic.profile import characterize

    try:
        vms = tomllib.loads(text).get("vms", [])
    except tomllib.TOMLDecodeError:
        return {}  # the core reads the file again and says where it is broken
    curves = {}
    for i, vm in enumerate(vms if isinstance(vms, list) else []):
        key = next((k for k in ("trace", "model", "pattern") if k in vm), None)
        if key is None or not isinstance(vm.get(key), str) or not isinstance(vm.get("name"), str):
            continue  # the core names what is wrong
        try:
            trace = vm_workload(key, vm[key], vm.get("requests"), path, seed + i)
        except (IomimicError, OSError) as e:
            raise InputError(f"{path}: field `vms[{i}].{key}`: {e}") from None
        p = characterize(trace, mrc="trace")
        curves[vm["name"]] = {
            "footprint_bytes": float(p["mrc"]["footprint_bytes"]),
            "mean_request_bytes": float(p["size"]["mean_bytes"]),
            "points": [(float(c["cache_bytes"]), float(c["miss_ratio"])) for c in p["mrc"]["curve"]],
        }
    return curves


def vm_workload(key: str, source: str, requests: Any, path: Path, seed: int):
    """A VM's I/O: its trace, or generated from its model or pattern."""
    from iomimic.errors import InputError
    from iomimic.pattern import pattern_trace
    from iomimic.presets import PRESETS
    from iomimic.study import workload

    if requests is not None and not (isinstance(requests, int) and requests > 0):
        raise InputError(f"`requests` must be a positive whole number, found {requests!r}")
    if key == "pattern":
        return pattern_trace(source, requests or 100_000, seed=seed)
    named = source if key == "model" and source in PRESETS else str(path.parent / source)
    return workload(named, requests=requests, seed=seed)[0]


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.study import run_alone
    from iomimic.errors import InputError
    from iomimic.report import make_console
    from iomimic.report.cache_alloc import plot_cache_alloc, render_cache_alloc

    if args.example == bool(args.apps):
        raise InputError("give an applications file or --example (not both)")
    if args.adapt != bool(args.timeline):
        raise InputError("--adapt runs over a --timeline: give both or neither")
    options: dict[str, Any] = {
        "schemes": [s for s in args.scheme.split(",") if s.strip()],
        "ga": {"population": args.population, "generations": args.generations, "units": args.units},
        "seed": args.seed,
    }
    if args.apps:
        path = Path(args.apps)
        text = read_text(path, "apps")
        options.update(apps=text, apps_file=str(path), curves=measured_curves(text, path, args.seed))
    if args.timeline:
        options.update(timeline=read_text(Path(args.timeline), "timeline"), timeline_file=args.timeline)
    report = run_alone("cache-alloc", **options)
    report["source"] = {"apps": args.apps or "example", "timeline": args.timeline}
    if args.plot:
        plot_cache_alloc(report, args.plot)
    if args.json and write_json(args.json, report):
        return EXIT_OK
    render_cache_alloc(report, make_console())
    if args.plot:
        print(f"wrote {args.plot}")
    return EXIT_OK


def read_text(path: Path, what: str) -> str:
    from iomimic.errors import InputError

    try:
        return path.read_text()
    except OSError as e:
        raise InputError(f"`{what}`: cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"`{what}`: {path} is not a text file") from None
