"""`iomimic validate`: the comparison of a synthetic trace with its original, as a table and as
plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from iomimic.report import table


def _target(r: dict[str, Any]) -> str:
    """The target column: the limit each row carries (relative for scalar rows, in points for
    shares)."""
    t = r.get("target")
    if t is None:
        return ""
    if r["kind"] == "scalar":
        return f"±{t:.0%}"
    if r["kind"] == "points":
        return f"±{t:g} points"
    return f"≤ {t}"


def validation_cells(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The Messenger validation table's layout (Delimitrou et al., IISWC 2011) as text cells:
    each metric of both traces, its variation and target (and the baseline's, with one)."""
    has_base = "baseline" in result
    header = ["metric", "original", "synthetic", "variation", "target"]
    if has_base:
        header += ["locality-free", "its variation"]

    def show(r: dict[str, Any], key: str) -> str:
        shown = r.get(f"{key}_shown")
        if shown:
            return shown
        v = r.get(key)
        if v is None or r["kind"] in ("distance", "spatial", "mrc"):
            return "-" if key != "synthetic" or r["kind"] not in ("distance", "spatial", "mrc") else ""
        return _number(v)

    def var(kind: str, v: float | None) -> str:
        if v is None:
            return "-"
        if kind == "points":
            return f"{v:+.2f} pt"
        return f"{100 * v:+.2f}%" if kind in ("scalar", "info") else f"{v:.4f}"

    rows = []
    for r in result["rows"]:
        mark = "" if r["ok"] is None else (" ✓" if r["ok"] else " ✗")
        row = [r["metric"], show(r, "original"), show(r, "synthetic"), var(r["kind"], r["variation"]) + mark]
        row.append(_target(r))
        if has_base:
            b = r.get("baseline")
            shown = "" if b is None or r["kind"] not in ("scalar", "info", "points") else _number(b)
            base_ok = r.get("baseline_ok")
            base_mark = "" if base_ok is None else (" ✓" if base_ok else " ✗")
            row += [shown, var(r["kind"], r.get("baseline_variation")) + base_mark]
        rows.append(row)
    return header, rows


def render_validation(result: dict[str, Any], console: Console) -> None:
    """The validation table on the terminal, then how many targets were met."""
    header, rows = validation_cells(result)
    t = table("validation: original vs synthetic", *header)
    for row in rows:
        t.add_row(*row)
    console.print(t)
    base = ""
    if result.get("baseline_passed") is not None:
        base = f"; the locality-free baseline meets {result['baseline_passed']} of {result['checked']}"
    console.print(
        f"  {result['passed']} of {result['checked']} targets met{base} "
        f"({result['original']['requests']:,} original requests, "
        f"{result['synthetic']['requests']:,} synthetic)"
    )


def plot_report(result: dict[str, Any], directory: str | Path) -> list[Path]:
    """Writes PNG plots (miss-ratio curves, IOPS over time, spatial histogram) to ``directory``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(fig, ax, name: str, xlabel: str | None, ylabel: str, title: str) -> None:
        if xlabel:
            ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend()
        written.append(directory / name)
        fig.savefig(written[-1], dpi=110, bbox_inches="tight")
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, curve in result["curves"].items():
        if curve:
            ax.plot(
                [p["cache_bytes"] / 2**20 for p in curve["curve"]],
                [p["miss_ratio"] for p in curve["curve"]],
                marker="o",
                label=name,
            )
    ax.set_xscale("log", base=2)
    save(fig, ax, "mrc.png", "LRU cache (MiB, 4 KiB blocks)", "miss ratio", "miss-ratio curves")

    fig, ax = plt.subplots(figsize=(7, 4))
    iot = result["iops_over_time"]
    for name in ("original", "synthetic"):
        ax.plot([i * iot["window_s"] for i in range(len(iot[name]))], iot[name], label=name)
    save(fig, ax, "iops.png", "time (s)", "IOPS", f"IOPS per {iot['window_s']:g} s window")

    fig, ax = plt.subplots(figsize=(7, 4))
    sp = result["spatial"]
    xs = range(len(sp["original"]))
    ax.bar([x - 0.2 for x in xs], sp["original"], width=0.4, label="original")
    ax.bar([x + 0.2 for x in xs], sp["synthetic"], width=0.4, label="synthetic")
    ax.set_xticks(list(xs), [f"St{i + 1}" for i in xs])
    save(fig, ax, "spatial.png", None, "share of requests", "spatial locality")
    return written


def _number(v: float) -> str:
    """A figure as a reader takes it in: whole from 10,000 up (a footprint of 93,031 blocks, not
    9.303e+04), four significant digits below.

    >>> _number(93031.0), _number(15420.4), _number(412.66), _number(0.09606)
    ('93,031', '15,420', '412.7', '0.09606')
    """
    return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:,.4g}"
