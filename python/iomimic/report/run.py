"""`iomimic run` and `iomimic replay`: the figures of real I/O."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from iomimic.report import figures_table, human_bytes, latency_text

#: Row names of the operations, as fio names its sections (plural).
PLURAL = {"read": "reads", "write": "writes", "trim": "trims", "flush": "flushes"}


def render_run(f: dict[str, Any], console: Console) -> None:
    """Requests done, rate, CPU, and latency and issue-lag percentiles (per operation in a mix)."""
    t = figures_table(f"real I/O ({f['engine']}, {f['mode']})")
    if f["time_limited"] and not f["partial"]:
        done = f"{f['completed']:,} (until the --duration)"
    else:
        done = f"{f['completed']:,} of {f['requests']:,}" + (" (stopped: partial)" if f["partial"] else "")
    t.add_row("requests", done)
    if f.get("ramp_s"):
        t.add_row("warm-up (left out)", f"{f['ramp_s']:,.3f} s, {f['warmup_requests']:,} requests")
    t.add_row("elapsed", f"{f['elapsed_s']:,.3f} s")
    t.add_row("throughput", f"{f['iops']:,.1f} IOPS, {f['mb_per_s']:,.2f} MB/s")
    t.add_row("CPU per I/O", f"{f['cpu_us_per_io']:,.2f} µs")
    if "submission" in f:
        t.add_row("submissions by", f["submission"])
    if "failed" in f:
        from iomimic.report.info import errno_counts

        failed = f["failed"]
        t.add_row("failed requests", f"{failed['requests']:,} ({errno_counts(failed['by_errno'])})")
    if "verify" in f:
        v = f["verify"]
        t.add_row("verify", f"{v['sectors_checked']:,} sectors checked, {v['failures']:,} wrong")
    if f.get("scheduled_iops"):
        t.add_row("scheduled rate", f"{f['scheduled_iops']:,.1f} IOPS")
    percentiles = [("latency", f.get("latency_us")), ("issue lag", f.get("lag_us"))]
    by_op = f.get("by_op") or {}
    if len(by_op) > 1:
        # a mix: each operation's own rate and latency, as fio shows reads and writes apart
        for op, o in by_op.items():
            rate = "" if op == "flush" else f", {o['mb_per_s']:,.2f} MB/s"
            t.add_row(PLURAL.get(op, f"{op}s"), f"{o['completed']:,}: {o['iops']:,.1f} IOPS{rate}")
        percentiles[1:1] = [(f"{op} latency", o["latency_us"]) for op, o in by_op.items()]
    for label, lat in percentiles:
        if lat:
            t.add_row(f"{label} mean / p50 / p99 / max", latency_text(lat))
    if f.get("last_request_lag_us") is not None:
        t.add_row("last request's lag (drift)", f"{f['last_request_lag_us']:,.1f} µs")
    console.print(t)


def fold_warning(fold: dict[str, Any]) -> str:
    """What to tell about a volume folded into a smaller target."""
    return (
        f"{fold['path']} holds {human_bytes(fold['size_bytes'])} but the workload reaches "
        f"{human_bytes(fold['reach_bytes'])} there: offsets fold into it {fold['factor']:,.1f} times "
        "over, so requests that were apart meet (give --size, or a larger target)"
    )
