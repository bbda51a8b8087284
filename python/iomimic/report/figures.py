"""The figures people look at, drawn from the core's plot data (``_core.plot_data``) and a
Profile: LBA against time (as seekwatcher and iowatcher draw it), IOPS and MB/s over time,
request sizes, inter-arrival gaps, a time × position heat map, and the miss-ratio curve. With
a second (synthetic) trace each figure shows both, on the same bins and axes.

Used by `iomimic report` (inline SVG in one HTML page) and `characterize --report DIR` (PNG).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from iomimic import _core
from iomimic.profile import Profile, characterize
from iomimic.trace import Trace

#: Colours of the original and the synthetic trace, and of reads and writes.
ORIGINAL, SYNTHETIC = "#1f5fa8", "#d9822b"
READ, WRITE = "#1f77b4", "#d62728"


@dataclass
class Drawn:
    """One trace ready to draw: its plot data and profile, under a label."""

    label: str
    plots: dict[str, Any]
    profile: Profile


def prepare(traces: list[tuple[str, Trace]]) -> list[Drawn]:
    """Plot data and profiles of one or two traces; the second shares the first's time bins."""
    drawn: list[Drawn] = []
    for label, trace in traces:
        bin_ns = drawn[0].plots["over_time"]["bin_ns"] if drawn else None
        plots = _core.plot_data(*trace._core_args(), bin_ns=bin_ns)
        drawn.append(Drawn(label, plots, characterize(trace, mrc="trace")))
    return drawn


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def lba_time(drawn: list[Drawn]):
    """Offset against time, a sample of requests, reads and writes apart (seekwatcher)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(drawn), figsize=(6.5 * len(drawn), 4), squeeze=False, sharey=True)
    for ax, d in zip(axes[0], drawn):
        s = d.plots["scatter"]
        t, off, op = np.array(s["t_s"]), np.array(s["offset"], dtype=float) / 2**30, np.array(s["op"])
        for code, name, colour in ((0, "read", READ), (1, "write", WRITE)):
            pick = op == code
            if pick.any():
                ax.scatter(t[pick], off[pick], s=2, c=colour, label=name, linewidths=0, rasterized=True)
        every = f", every {s['every']}th request" if s["every"] > 1 else ""
        ax.set_title(f"{d.label}{every}")
        ax.set_xlabel("time (s)")
        ax.legend(loc="upper right", markerscale=4)
    axes[0][0].set_ylabel("offset (GiB)")
    return fig


def rates(drawn: list[Drawn]):
    """IOPS and MB/s per bin over time, the traces overlaid."""
    plt = _pyplot()
    fig, (iops, mbps) = plt.subplots(2, 1, figsize=(10, 5), sharex=True)
    for d, colour in zip(drawn, (ORIGINAL, SYNTHETIC)):
        ot = d.plots["over_time"]
        t = np.arange(len(ot["mb_per_s"])) * ot["bin_ns"] / 1e9
        iops.plot(t, np.add(ot["read_iops"], ot["write_iops"]), color=colour, lw=1, label=d.label)
        mbps.plot(t, ot["mb_per_s"], color=colour, lw=1, label=d.label)
    bin_s = drawn[0].plots["over_time"]["bin_ns"] / 1e9
    iops.set_ylabel("IOPS")
    iops.set_title(f"per {bin_s:.3g} s")
    mbps.set_ylabel("MB/s")
    mbps.set_xlabel("time (s)")
    iops.legend(loc="upper right")
    return fig


def sizes(drawn: list[Drawn]):
    """Share of requests by size (the most common sizes), the traces side by side."""
    plt = _pyplot()
    all_sizes = sorted({b["bytes"] for d in drawn for b in d.plots["sizes"]})
    x = np.arange(len(all_sizes))
    width = 0.8 / len(drawn)
    fig, ax = plt.subplots(figsize=(10, 3.8))
    for i, (d, colour) in enumerate(zip(drawn, (ORIGINAL, SYNTHETIC))):
        by_size = {b["bytes"]: b["reads"] + b["writes"] for b in d.plots["sizes"]}
        total = d.plots["requests"]
        ax.bar(
            x + (i - (len(drawn) - 1) / 2) * width,
            [by_size.get(s, 0) / total for s in all_sizes],
            width,
            color=colour,
            label=d.label,
        )
    ax.set_xticks(x, [_size_label(s) for s in all_sizes], rotation=45, ha="right")
    ax.set_ylabel("share of requests")
    ax.legend()
    return fig


def _size_label(n: int) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % (scale // 8 or 1) == 0:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def interarrival(drawn: list[Drawn]):
    """Share of gaps per power-of-two bin of microseconds (the first bin: same instant)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.8))
    for d, colour in zip(drawn, (ORIGINAL, SYNTHETIC)):
        bins = d.plots["interarrival"]
        total = max(sum(b["count"] for b in bins), 1)
        edges = [max(b["from_us"], 0.5) for b in bins] + [bins[-1]["to_us"]]
        ax.stairs([b["count"] / total for b in bins], edges, color=colour, lw=1.5, label=d.label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("gap between requests (µs; the first step holds gaps under 1 µs)")
    ax.set_ylabel("share of gaps")
    ax.legend()
    return fig


def heat(drawn: list[Drawn]):
    """Requests per (time, position in the volume) cell: where on the disk, when."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(drawn), figsize=(6.5 * len(drawn), 4), squeeze=False)
    for ax, d in zip(axes[0], drawn):
        h = d.plots["heat"]
        grid = np.array(h["counts"], dtype=float).reshape(h["time_bins"], h["position_bins"]).T
        # (a trace of one instant still gets a width to draw in)
        span = d.plots["span_s"] or 1e-6
        image = ax.imshow(
            np.log1p(grid), origin="lower", aspect="auto", cmap="magma", extent=(0, span, 0, 100)
        )
        ax.set_title(d.label)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("position in the volume (%)")
        fig.colorbar(image, ax=ax, label="log(1 + requests)")
    return fig


def mrc(drawn: list[Drawn]):
    """LRU miss ratio against cache size (4 KiB blocks)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.8))
    for d, colour in zip(drawn, (ORIGINAL, SYNTHETIC)):
        curve = (d.profile.get("mrc") or {}).get("curve") or []
        if curve:
            ax.plot(
                [p["cache_bytes"] / 2**20 for p in curve],
                [p["miss_ratio"] for p in curve],
                marker="o",
                color=colour,
                label=d.label,
            )
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("LRU cache (MiB)")
    ax.set_ylabel("miss ratio")
    ax.legend()
    return fig


#: (file name, title, builder) of every figure, in page order.
FIGURES: list[tuple[str, str, Callable[[list[Drawn]], Any]]] = [
    ("lba-time", "Offset against time", lba_time),
    ("rates", "IOPS and MB/s over time", rates),
    ("sizes", "Request sizes", sizes),
    ("interarrival", "Inter-arrival times", interarrival),
    ("heat", "Where on the volume, when", heat),
    ("mrc", "Miss-ratio curve", mrc),
]


def render(fig, fmt: str) -> bytes:
    """One figure as ``svg`` or ``png`` bytes; the figure is closed."""
    import io

    plt = _pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def write_pngs(drawn: list[Drawn], directory: str | Path) -> list[Path]:
    """Every figure as DIR/NAME.png; returns the paths written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, _title, build in FIGURES:
        path = directory / f"{name}.png"
        path.write_bytes(render(build(drawn), "png"))
        written.append(path)
    return written
