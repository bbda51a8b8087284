"""`iomimic study ssd-cache`: speedups per workload, policy and cache size, per stream, and the
prediction check, as tables and a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from iomimic.report import human_bytes, pct, table

#: Streams listed per run before the table is cut short.
MAX_STREAM_ROWS = 12


def render_ssd_cache(r: dict[str, Any], console: Console) -> None:
    """One table per workload (baseline, then each policy and size), the per-stream speedups of
    the first workload's largest cache, and how well the synthetic workload predicted."""
    for w in r["workloads"]:
        b = w["baseline"]
        t = table(
            f"{w['workload']}: {w['requests']:,} requests on {r['backend']}, SSD cache of {r['ssd']} "
            f"({r['write_policy']}, keyed by {r['keyed_by']})",
            "policy",
            "cache",
            "SSDs",
            "read hits",
            "read byte hits",
            "mean µs",
            "p99 µs",
            "IOPS",
            "speedup",
            "p99 speedup",
        )
        t.add_row(
            "no cache",
            "-",
            "-",
            "-",
            "-",
            f"{b['mean_us']:,.1f}",
            f"{b['p99_us']:,.1f}",
            f"{b['iops']:,.1f}",
            "1.00",
            "1.00",
        )
        for run in w["runs"]:
            p = run["perf"]
            t.add_row(
                run["policy"],
                human_bytes(run["cache_bytes"]),
                str(run["ssds"]),
                pct(run["hit_ratio"]),
                pct(run["byte_hit_ratio"]),
                f"{p['mean_us']:,.1f}",
                f"{p['p99_us']:,.1f}",
                f"{p['iops']:,.1f}",
                f"{run['speedup']:.2f}",
                f"{run['p99_speedup']:.2f}",
            )
        console.print(t)
    first = r["workloads"][0]["runs"]
    if first and first[-1]["streams"] and len(first[-1]["streams"]) > 1:
        run = first[-1]
        t = table(
            f"per stream, {run['policy']} {human_bytes(run['cache_bytes'])}",
            "stream",
            "requests",
            "reads",
            "read hits",
            "speedup",
        )
        streams = sorted(run["streams"], key=lambda s: -s["requests"])
        for s in streams[:MAX_STREAM_ROWS]:
            t.add_row(
                str(s["stream"]),
                f"{s['requests']:,}",
                pct(s["read_fraction"]),
                pct(s["hit_ratio"]) if s["read_fraction"] > 0 else "-",
                f"{s['speedup']:.2f}",
            )
        if len(streams) > MAX_STREAM_ROWS:
            t.add_row("…", f"{len(streams) - MAX_STREAM_ROWS} more", "", "", "")
        console.print(t)
    predictions = [
        p
        for p in r["predictions"]
        if p["synthetic_speedup"] is not None or p["locality_free_speedup"] is not None
    ]
    if predictions:
        t = table(
            "does the workload predict the original's speedup?",
            "policy",
            "cache",
            "original",
            "synthetic",
            "error",
            "locality-free",
        )
        for p in predictions:
            syn, lf = p["synthetic_speedup"], p["locality_free_speedup"]
            t.add_row(
                p["policy"],
                human_bytes(p["cache_bytes"]),
                f"{p['original_speedup']:.2f}",
                "-" if syn is None else f"{syn:.2f}",
                "-" if p["synthetic_error"] is None else f"{100 * p['synthetic_error']:+.1f}%",
                "-" if lf is None else f"{lf:.2f}",
            )
        console.print(t)


def plot_ssd_cache(r: dict[str, Any], path: str | Path) -> Path:
    """Speedup (mean latency) against cache size: a line per workload and policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for w in r["workloads"]:
        for policy in dict.fromkeys(run["policy"] for run in w["runs"]):
            runs = [x for x in w["runs"] if x["policy"] == policy]
            ax.plot(
                [x["cache_bytes"] / 2**30 for x in runs],
                [x["speedup"] for x in runs],
                marker="o",
                label=f"{w['workload']} ({policy})",
            )
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("SSD cache (GiB)")
    ax.set_ylabel("speedup (mean latency)")
    ax.set_title(f"SSD cache on {r['backend']} ({r['write_policy']})")
    ax.legend()
    path = Path(path)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
