"""`iomimic study defrag`: the defragmentation table (as the modelling paper lays it out:
read/write split, random and sequential shares before and after) with speedups and energy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from iomimic.report import human_bytes, pct, table


def render_defrag(r: dict[str, Any], console: Console) -> None:
    b, bp = r["before"], r["before_perf"]
    t = table(
        f"defragmentation on {r['device']}: {r['requests']:,} requests, "
        f"{human_bytes(r['block_bytes'])} blocks ({pct(b['read_fraction'])} reads, "
        f"{pct(b['write_fraction'])} writes)",
        "layout",
        "random",
        "sequential",
        "mean µs",
        "p99 µs",
        "speedup",
        "p99 speedup",
        "energy",
        "moved",
    )
    t.add_row(
        "as traced", pct(b["random_fraction"]), pct(b["sequential_fraction"]), f"{bp['mean_us']:,.1f}",
        f"{bp['p99_us']:,.1f}", "1.00", "1.00", "-", "-",
    )  # fmt: skip
    for run in r["runs"]:
        s, p = run["shape"], run["perf"]
        energy = "-" if run["energy_change"] is None else f"{100 * run['energy_change']:+.1f}%"
        t.add_row(
            run["policy"], pct(s["random_fraction"]), pct(s["sequential_fraction"]), f"{p['mean_us']:,.1f}",
            f"{p['p99_us']:,.1f}", f"{run['speedup']:.2f}", f"{run['p99_speedup']:.2f}", energy,
            human_bytes(run["moved_bytes"]),
        )  # fmt: skip
    console.print(t)


def plot_defrag(r: dict[str, Any], path: str | Path) -> Path:
    """Sequential share and speedup of each layout."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["as traced", *[run["policy"] for run in r["runs"]]]
    seq = [r["before"]["sequential_fraction"], *[run["shape"]["sequential_fraction"] for run in r["runs"]]]
    speed = [1.0, *[run["speedup"] for run in r["runs"]]]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.bar(names, [100 * s for s in seq])
    a.set_ylabel("sequential requests (%)")
    b.bar(names, speed)
    b.axhline(1.0, color="grey", linewidth=0.8)
    b.set_ylabel("speedup (mean latency)")
    fig.suptitle(f"defragmentation on {r['device']}")
    path = Path(path)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
