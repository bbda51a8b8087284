"""`iomimic study prefetch`: mean array service time per run count and jump (or streams) with
each minimum prefetch, as Keeton et al. plot them; for a trace, its sequentiality metrics and
prefetching's predicted and simulated benefit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from iomimic.report import human_bytes, pct, table


def _x(r: dict[str, Any], x: int) -> str:
    return human_bytes(x) if r["experiment"] == "jumps" else str(x)


def render_prefetch(r: dict[str, Any], console: Console) -> None:
    if r["experiment"]:
        sizes = sorted({p["prefetch_kib"] for p in r["points"]})
        what = "jump" if r["experiment"] == "jumps" else "streams"
        t = table(
            f"{r['experiment']} on {r['device']}: mean service time (µs) by minimum prefetch",
            "run count", what, *[f"prefetch {k} KiB" for k in sizes],
        )  # fmt: skip
        rows: dict[tuple[int, int], dict[int, float]] = {}
        for p in r["points"]:
            rows.setdefault((p["run_count"], p["x"]), {})[p["prefetch_kib"]] = p["mean_service_us"]
        for (run, x), by in rows.items():
            t.add_row(str(run), _x(r, x), *[f"{by[k]:,.0f}" for k in sizes])
        console.print(t)
        return
    s = r["sequentiality"]
    t = table(f"sequentiality (Keeton et al.'s metrics), for {r['device']}", "metric", "value")
    for name, value in (
        ("P(backward jump)", pct(s["p_backward"])),
        ("P(sequential)", pct(s["p_sequential"])),
        ("P(forward jump)", pct(s["p_forward"])),
        ("run count", f"{s['run_count']:.2f}"),
        ("interference frequency", f"{s['interference_frequency']:.3f}"),
        ("detangled run count", f"{s['detangled_run_count']:.2f}"),
        ("relaxed detangled run count", f"{s['relaxed_detangled_run_count']:.2f}"),
    ):
        t.add_row(name, value)
    console.print(t)
    j = table("jump distances", "from", "to", "jumps")
    for b in s["jump_histogram"]:
        j.add_row(f"{b['from_bytes']:,.0f}", f"{b['to_bytes']:,.0f}", f"{b['count']:,}")
    console.print(j)
    p = table("prefetching: predicted and simulated", "min prefetch", "prefetchable reads",
              "predicted µs", "simulated µs", "cache hits")  # fmt: skip
    for run in r["runs"]:
        p.add_row(
            f"{run['prefetch_kib']} KiB", pct(run["prefetchable_fraction"]), f"{run['predicted_us']:,.0f}",
            f"{run['mean_service_us']:,.0f}", pct(run["cache_hit_ratio"]),
        )  # fmt: skip
    console.print(p)


def plot_prefetch(r: dict[str, Any], path: str | Path) -> Path:
    """Service time against jump distance (or streams), a line per run count and prefetch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    if r["experiment"]:
        lines: dict[tuple[int, int], list[tuple[int, float]]] = {}
        for p in r["points"]:
            lines.setdefault((p["run_count"], p["prefetch_kib"]), []).append((p["x"], p["mean_service_us"]))
        for (run, kib), pts in lines.items():
            xs = [max(x, 1) for x, _ in pts]
            ax.plot(xs, [y / 1000 for _, y in pts], marker="o", label=f"run {run}, prefetch {kib} KiB")
        ax.set_xscale("log")
        ax.set_xlabel("jump distance (bytes)" if r["experiment"] == "jumps" else "interleaved streams")
    else:
        names = [f"{run['prefetch_kib']} KiB" for run in r["runs"]]
        ax.bar(names, [run["mean_service_us"] / 1000 for run in r["runs"]], label="simulated")
        ax.plot(names, [run["predicted_us"] / 1000 for run in r["runs"]], "ko", label="predicted")
        ax.set_xlabel("minimum prefetch")
    ax.set_ylabel("mean service time (ms)")
    ax.legend(fontsize=8)
    fig.suptitle(f"array prefetching on {r['device']}")
    path = Path(path)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
