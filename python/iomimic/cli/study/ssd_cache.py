"""`iomimic study ssd-cache`: an SSD cache in front of a backend, per size, policy and stream."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import add_intensity, add_ray, intensity, ray_engine, subcommand, write_json
from iomimic.cli.study import add_workload_arguments, device_text, workload


def register(subparsers) -> None:
    p = subcommand(
        subparsers,
        "ssd-cache",
        handle,
        "An SSD cache in front of a backend: hit ratios and speedups (mean, p99 latency, IOPS) per "
        "cache size, policy and stream, and whether a synthetic workload predicts them.",
        "  iomimic study ssd-cache trace.csv --backend tpc-raid10-28disk --ssd ssd-sata \\\n"
        "      --cache 8G,16G,24G,32G\n"
        "  iomimic study ssd-cache trace.csv --compare synthetic,locality-free --plot speedup.png\n"
        "  iomimic study ssd-cache model.json --policy lru,fifo --write-policy write-back\n"
        "  iomimic study ssd-cache tpcc -n 200000 --intensity 0.1 --block-size request\n"
        "  iomimic study ssd-cache trace.csv --cache 1G,2G,4G,8G,16G --policy lru,arc,s3fifo --ray\n",
    )
    add_workload_arguments(p)
    p.param_aliases = {
        "policies": "policy",
        "cache_bytes": "cache",
        "ssd_bytes": "ssd_size",
        "block_bytes": "block_size",
    }
    g = p.add_argument_group("the storage")
    g.add_argument(
        "--backend",
        default="tpc-raid10-28disk",
        help="backend device preset or file (default tpc-raid10-28disk)",
    )
    g.add_argument("--ssd", default="ssd-sata", help="SSD device preset or file (default ssd-sata)")
    g.add_argument(
        "--ssd-size", default="8G", help="bytes per SSD; a cache takes as many as it needs (default 8G)"
    )
    g = p.add_argument_group("the cache")
    g.add_argument("--cache", default="8G,16G,24G,32G", help="cache sizes (default 8G,16G,24G,32G)")
    g.add_argument("--policy", default="lru", help="policies, comma-separated (default lru)")
    g.add_argument(
        "--write-policy",
        choices=["read-only", "write-through", "write-back"],
        default="write-through",
        help="what writes do: go around the cache, through it, or into it with a destage behind "
        "(default write-through)",
    )
    g.add_argument(
        "--block-size",
        default="4k",
        help="cache block size (default 4k), or `request`: each request one object keyed by its offset "
        "(libCacheSim's convention)",
    )
    g = p.add_argument_group("the study")
    g.add_argument(
        "--compare",
        help="also run synthetic (a model trained on the trace) and/or locality-free (its mix at "
        "random offsets)",
    )
    add_intensity(g, "the workload's rate")
    g.add_argument("--no-streams", action="store_true", help="leave out per-stream speedups")
    add_ray(g, "run each policy and cache size")


def handle(args: argparse.Namespace) -> int:
    from iomimic.cli.study import note_one_device, run, warn_if_saturated
    from iomimic.errors import InputError
    from iomimic.report import make_console
    from iomimic.report.ssd_cache import plot_ssd_cache, render_ssd_cache
    from iomimic.units import parse_size_bytes

    # Ray is connected (or its absence reported) before the workload is read
    ray_engine(args)
    trace, kind = workload(args)
    compare = [w.strip() for w in (args.compare or "").split(",") if w.strip()]
    unknown = set(compare) - {"synthetic", "locality-free", "original"}
    if unknown:
        raise InputError(
            f"--compare: choose synthetic and/or locality-free, found {', '.join(sorted(unknown))}"
        )
    # a model's workload is already synthetic: it is the one the others compare with
    workloads = ["original", *[w for w in compare if w != "original"]]
    block = None if args.block_size == "request" else parse_size_bytes(args.block_size, "block_size")
    report = run(
        "ssd-cache",
        trace,
        backend=device_text(args.backend),
        ssd=device_text(args.ssd),
        ssd_bytes=parse_size_bytes(args.ssd_size, "ssd_size"),
        cache_bytes=[parse_size_bytes(s, "cache") for s in args.cache.split(",") if s],
        policies=[p.strip() for p in args.policy.split(",") if p.strip()],
        write_policy=args.write_policy,
        block_bytes=block,
        workloads=workloads,
        intensity=intensity(args),
        seed=args.seed,
        by_stream=not args.no_streams,
        ray=args.ray,
    )
    report["source"] = {"workload": str(args.workload), "kind": kind}
    if args.plot:
        plot_ssd_cache(report, args.plot)
    if args.json and write_json(args.json, report):
        return EXIT_OK
    render_ssd_cache(report, make_console())
    # the backend alone, on the workload as it is
    note_one_device(trace, args.backend)
    warn_if_saturated(trace, intensity(args), report["workloads"][0]["baseline"]["iops"], args.backend)
    if args.plot:
        print(f"wrote {args.plot}")
    return EXIT_OK
