"""`iomimic info`: a trace's summary and its volumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from iomimic.report import figures_table, mib, micros, pct, table


def render_info(s: dict[str, Any], console: Console, max_volumes: int = 20) -> None:
    """The figures of :func:`iomimic.io.summary`, then up to ``max_volumes`` volumes."""
    n = s["requests"]
    compression = f", {s['compression']}" if s["compression"] not in (None, "none") else ""
    name = Path(s["path"]).name if s["path"] else "trace"
    t = figures_table(f"{name} ({s['format']}{compression})", "share")
    rows = [
        ("requests", f"{n:,}", ""),
        ("reads", f"{s['reads']:,}", pct(s["reads"], n)),
        ("writes", f"{s['writes']:,}", pct(s["writes"], n)),
        ("trims", f"{s['trims']:,}", pct(s["trims"], n)),
        ("flushes", f"{s['flushes']:,}", pct(s["flushes"], n)),
        ("volumes", f"{len(s['volumes']):,}", ""),
        ("streams", f"{s['streams']:,}", ""),
        ("span", f"{s['span_s']:,.3f} s" if s["span_s"] >= 1 else micros(s["span_s"] * 1e6), ""),
        ("bytes read", mib(s["bytes_read"]), ""),
        ("bytes written", mib(s["bytes_written"]), ""),
        ("latency recorded", "yes" if s["has_latency"] else "no", ""),
        *_failed(s.get("failed"), n),
        ("lines read", f"{s['lines']:,}", ""),
        ("out-of-order lines", f"{s['out_of_order']:,}", ""),
        ("skipped lines", f"{s['skipped']:,}", ""),
    ]
    for row in rows:
        t.add_row(*row)
    console.print(t)
    vols = table("volumes")
    vols.add_column("id", justify="right")
    vols.add_column("name")
    vols.add_column("requests", justify="right")
    vols.add_column("share", justify="right")
    shown = s["volumes"][:max_volumes]
    for v in shown:
        vols.add_row(str(v["id"]), v["name"], f"{v['requests']:,}", pct(v["requests"], n))
    if len(s["volumes"]) > len(shown):
        vols.add_row("…", f"{len(s['volumes']) - len(shown)} more (--max-volumes)", "", "")
    console.print(vols)
    if s.get("latency_phases"):
        _phases(s["latency_phases"], console)


def _failed(failed: dict[str, int] | None, n: int) -> list[tuple[str, str, str]]:
    """The failed-requests row, when the trace records each request's status."""
    if failed is None:
        return []
    total = sum(failed.values())
    by = errno_counts(failed)
    return [("failed requests", f"{total:,}" + (f" ({by})" if by else ""), pct(total, n))]


def errno_counts(by_errno: dict[str, int]) -> str:
    """``{"5": 3}`` as ``EIO 3``: errno names as the C library spells them."""
    import errno

    return ", ".join(f"{errno.errorcode.get(int(e), f'errno {e}')} {c:,}" for e, c in by_errno.items())


#: What each block-layer phase measures, as btt names them.
PHASES = {
    "q2d_us": "Q2D  queued → dispatched (I/O scheduler)",
    "d2c_us": "D2C  dispatched → complete (driver, device)",
    "q2c_us": "Q2C  queued → complete (the whole)",
}


def _phases(phases: dict[str, Any], console: Console) -> None:
    """The response time split as btt reports it (blkparse traces with Q, D and C events)."""
    t = table("block-layer phases (µs)", "phase", "requests", "mean", "p50", "p90", "p99", "max")
    for name, f in phases.items():
        figures = (f["mean"], f["p50"], f["p90"], f["p99"], f["max"])
        t.add_row(PHASES.get(name, name), f"{f['count']:,}", *(f"{v:,.1f}" for v in figures))
    console.print(t)
