"""`iomimic offload` and `iomimic study offload`: the store set, a volume's off-loading state,
and the peak-load study's tables and plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from iomimic.report import human_bytes, pct, table


def render_store_set(base: str, s: dict[str, Any], console: Console) -> None:
    p = s["policy"]
    t = table(
        f"{base} off-loads to {len(s['stores'])} store(s): client {s['client_id']}, "
        f"{human_bytes(s['block_bytes'])} blocks, mode {p['mode']}, loaded from {p['loaded_iops']:g}/s, "
        f"stores light below {p['light_iops']:g}/s, {p['n_way']}-way, {p['replicas']} replica(s)",
        "store",
    )
    for path in s["stores"]:
        t.add_row(path)
    console.print(t)


def render_status(s: dict[str, Any], title: str, console: Console) -> None:
    c = s["counters"]
    console.print(
        f"{title}\n{s['offloaded_blocks']:,} blocks off-loaded "
        f"({human_bytes(s['offloaded_blocks'] * s['block_bytes'])}) "
        f"of a {human_bytes(s['base_bytes'])} base volume; this session: {c['offloaded_writes']:,} writes "
        f"off-loaded, {c['base_writes']:,} home, {c['reclaimed_blocks']:,} blocks reclaimed"
    )
    for note in s.get("notes", []):
        console.print(f"[bold yellow]note:[/] {note}")
    t = table(
        "stores", "store", "state", "used", "of", "live blocks", "this client's", "records", "head", "tail"
    )
    for st in s["stores"]:
        u = st["usage"]
        if u is None:
            t.add_row(st["name"], st["state"], *["-"] * 7)
            continue
        t.add_row(
            st["name"], st["state"], human_bytes(u["used_bytes"]), human_bytes(u["area_bytes"]),
            f"{u['live_blocks']:,}", f"{st['client_blocks']:,}", f"{u['records']:,}", f"{u['head']:,}",
            f"{u['tail']:,}",
        )  # fmt: skip
    console.print(t)
    if s["extents"]:
        e = table("off-loaded ranges (first 100)", "first block", "blocks", "version")
        for first, n, version in s["extents"]:
            e.add_row(f"{first:,}", f"{n:,}", str(version))
        console.print(e)


def _ms(x: float) -> str:
    return f"{x:,.2f}"


def _pair(c: dict[str, Any], figure: str) -> str:
    """A figure without off-loading → with it ("-" where there was no such request)."""
    if not c.get("requests", 1):
        return "-"
    return f"{_ms(c[f'off_{figure}_ms'])} → {_ms(c[f'on_{figure}_ms'])}"


def render_offload_study(r: dict[str, Any], console: Console) -> None:
    v = table(
        f"write off-loading on {r['device']}: {r['requests']:,} requests, {len(r['stores'])} stores, "
        f"{r['n_way']}-way, {r['replicas']} replica(s)",
        "volume", "requests", "writes", "median/s", "loaded from/s", "off-loaded", "reclaim s",
        "read mean ms off→on", "write mean ms off→on",
    )  # fmt: skip
    for x in r["volumes"]:
        v.add_row(
            x["name"], f"{x['requests']:,}", pct(x["write_share"]), f"{x['median_iops']:,.0f}",
            f"{x['loaded_iops']:,.0f}", f"{x['offloaded_writes']:,}",
            "-" if x["reclaim_s"] is None else f"{x['reclaim_s']:,.1f}",
            _pair(x["reads"], "mean"), _pair(x["writes"], "mean"),
        )  # fmt: skip
    console.print(v)
    p = table(
        "peaks: response time without and with off-loading (ms)",
        "volume", "from s", "to s", "peak/s", "writes", "read mean", "read p99", "write mean", "write p99",
    )  # fmt: skip
    for x in r["peaks"]:
        rd, wr = x["reads"], x["writes"]
        p.add_row(
            x["volume"], f"{x['start_s']:,.1f}", f"{x['end_s']:,.1f}", f"{x['peak_iops']:,.0f}",
            pct(x["write_share"]),
            _pair(rd, "mean"), _pair(rd, "p99"), _pair(wr, "mean"), _pair(wr, "p99"),
        )  # fmt: skip
    console.print(p if r["peaks"] else "no peaks: no volume reached its threshold")
    s = table("stores", "on volume", "size", "most used", "off-loads", "reclaimed")
    for x in r["stores"]:
        s.add_row(
            x["host"], human_bytes(x["capacity_bytes"]), human_bytes(x["max_used_bytes"]),
            f"{x['offloads']:,}", human_bytes(x["reclaimed_bytes"]),
        )  # fmt: skip
    console.print(s)
    console.print(
        f"peak correlation across volumes: mean {r['mean_correlation']:+.2f} "
        f"over {len(r['correlation'])} pair(s); "
        f"{r['unreclaimed_blocks']:,} blocks never reclaimed"
    )


def plot_offload_study(r: dict[str, Any], path: str | Path) -> Path:
    """The paper's figures: mean and 99th-percentile response time per peak, reads and writes,
    without and with off-loading (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, off_mean, on_mean, off_p99, on_p99 = [], [], [], [], []
    for i, x in enumerate(r["peaks"], 1):
        for kind in ("reads", "writes"):
            c = x[kind]
            if c["requests"]:
                labels.append(f"peak {i} {kind}\n{x['volume']}")
                off_mean.append(c["off_mean_ms"])
                on_mean.append(c["on_mean_ms"])
                off_p99.append(c["off_p99_ms"])
                on_p99.append(c["on_p99_ms"])
    fig, axes = plt.subplots(1, 2, figsize=(max(6, 1.6 * len(labels) + 2), 3.8))
    xs = range(len(labels))
    for ax, off, on, name in (
        (axes[0], off_mean, on_mean, "mean"),
        (axes[1], off_p99, on_p99, "99th percentile"),
    ):
        ax.bar([x - 0.2 for x in xs], off, width=0.4, label="no off-load")
        ax.bar([x + 0.2 for x in xs], on, width=0.4, label="off-load")
        ax.set_xticks(list(xs), labels, fontsize=7)
        ax.set_ylabel(f"{name} response time (ms)")
        if any(v > 0 for v in off + on):
            ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.suptitle(f"write off-loading on {r['device']} ({r['n_way']}-way)")
    path = Path(path)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
