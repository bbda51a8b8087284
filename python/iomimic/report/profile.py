"""`iomimic characterize`: a Profile's figures, laid out like the papers' tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from iomimic.profile import summary_row
from iomimic.report import human_bytes, pct, table

#: Rows of the per-volume / per-stream tables before they are cut short.
MAX_GROUP_ROWS = 20


def render_profile(p: dict[str, Any], console: Console) -> None:
    src = p.get("source", {})
    head = table(
        f"{src.get('path', 'trace')} ({src.get('format', '?')})", "figure", "value", show_header=False
    )
    rw = p["reads"] + p["writes"]
    rows = [
        ("requests", f"{p['requests']:,}"),
        (
            "reads : writes",
            f"{p['reads']:,} : {p['writes']:,}  ({pct(p['read_fraction'])} of them reads)" if rw else "-",
        ),
        ("trims, flushes", f"{p['trims']:,}, {p['flushes']:,}"),
        ("duration", f"{p['duration_s']:,.3f} s"),
        ("throughput", f"{p['iops']:,.1f} IOPS, {p['mb_per_s']:,.2f} MB/s"),
        ("bytes read / written", f"{human_bytes(p['bytes_read'])} / {human_bytes(p['bytes_written'])}"),
        ("sequential", pct(p["sequential_fraction"])),
        ("random", pct(1 - p["sequential_fraction"])),
    ]
    for row in rows:
        head.add_row(*row)
    console.print(head)
    _interarrival(p["interarrival"], console)
    _sizes(p["size"], console)
    _sequentiality(p["sequentiality"], console)
    _spatial(p["spatial"], console)
    if p.get("mrc"):
        _mrc(p["mrc"], console)
    _fluctuation(p["fluctuation"], console)
    if p.get("latency_us"):
        t = table("latency (µs)", "requests", "mean", "p50", "p90", "p99", "p99.9", "max")
        # the whole, then each operation apart when the trace has more than one
        by_op = p.get("by_op", {})
        parts = [("all", p["latency_us"])] + [(f"{op}s", o["latency_us"]) for op, o in by_op.items()]
        for label, lat in parts:
            figures = (lat[k] for k in ("mean", "p50", "p90", "p99", "p999", "max"))
            t.add_row(f"{label}: {lat['count']:,}", *(f"{v:,.1f}" for v in figures))
        console.print(t)
    for key, label in (("volumes", "volume"), ("streams", "stream")):
        if len(p[key]) > 1:
            _groups(p[key], label, console, p.get("stream_names", {}) if key == "streams" else {})
    if p.get("threads"):
        _threads(p["threads"], p["thread_thresholds"], console)
    if p.get("peak_correlation"):
        _correlation(p["peak_correlation"], console)


def _interarrival(ia: dict[str, Any], console: Console) -> None:
    pc = ia.get("percentiles_us") or {}
    t = table("inter-arrival time (µs)", "mean", "cv", "same instant", "p50", "p90", "p99", "p99.9", "max")
    if pc:
        t.add_row(
            f"{ia['mean_us']:,.1f}",
            f"{ia['cv']:.2f}",
            pct(ia["zero_fraction"]),
            *(f"{pc[k]:,.1f}" for k in ("p50", "p90", "p99", "p999", "max")),
        )
    console.print(t)
    fit = ia.get("fit")
    if fit:
        f = table(
            f"distribution fit (positive gaps, µs; by KS distance on {fit['sample_size']:,} values)",
            "candidate",
            "parameters",
            "KS",
        )
        for c in fit["candidates"]:
            params = ", ".join(f"{k}={v:,.4g}" for k, v in c["params"])
            f.add_row(("* " if c["name"] == fit["best"] else "  ") + c["name"], params, f"{c['ks']:.4f}")
        console.print(f)


def _sizes(size: dict[str, Any], console: Console) -> None:
    t = table("request sizes", "", "mean", "most common")
    for label, s in (("all", size), ("reads", size["read"]), ("writes", size["write"])):
        common = "  ".join(f"{human_bytes(d['bytes'])} ({pct(d['fraction'])})" for d in s["distribution"][:4])
        t.add_row(label, human_bytes(s["mean_bytes"]) if s["distinct_sizes"] else "-", common)
    console.print(t)


def _sequentiality(s: dict[str, Any], console: Console) -> None:
    t = table(
        "sequentiality (Keeton et al.)",
        "P(backward)",
        "P(sequential)",
        "P(forward)",
        "run count",
        "interference",
        "detangled run",
        "relaxed detangled",
    )
    t.add_row(
        f"{s['p_backward']:.2f}",
        f"{s['p_sequential']:.2f}",
        f"{s['p_forward']:.2f}",
        f"{s['run_count']:.2f}",
        f"{s['interference_frequency']:.1f}",
        f"{s['detangled_run_count']:.2f}",
        f"{s['relaxed_detangled_run_count']:.2f}",
    )
    console.print(t)


def _spatial(sp: dict[str, Any], console: Console) -> None:
    n = sp["ranges"]
    t = table(
        f"spatial locality ({n} equal ranges of each volume's span)", "", *(f"St{i + 1}" for i in range(n))
    )
    for label, key in (("all", "fractions"), ("reads", "read_fractions"), ("writes", "write_fractions")):
        t.add_row(label, *(f"{100 * x:.1f}" for x in sp[key]))
    console.print(t)


def _mrc(m: dict[str, Any], console: Console) -> None:
    sampled = (
        ""
        if m["sampling_rate"] >= 1
        else f", SHARDS sampled at {m['sampling_rate']:.3g}, error ±{m.get('sampling_error', 0):.4f}"
    )
    t = table(
        f"LRU miss ratio, 4 KiB blocks (footprint {human_bytes(m['footprint_bytes'])}{sampled})",
        "cache",
        "miss ratio",
    )
    curve = m["curve"]
    step = max(1, len(curve) // 12)
    shown = curve[::step] + ([curve[-1]] if (len(curve) - 1) % step else [])
    for point in shown:
        t.add_row(human_bytes(point["cache_bytes"]), f"{point['miss_ratio']:.4f}")
    console.print(t)


def _fluctuation(fl: dict[str, Any], console: Console) -> None:
    peaks = fl["peaks"]
    listed = ", ".join(f"{pk['start_s']:,.0f}s ({pk['iops']:,.0f})" for pk in peaks[:5])
    more = f" and {len(peaks) - 5} more" if len(peaks) > 5 else ""
    t = table(f"fluctuation ({fl['window_s']:g} s windows)", "mean IOPS", "cv", f"peaks ({fl['peak_rule']})")
    t.add_row(f"{fl['mean_iops']:,.1f}", f"{fl['cv']:.2f}", f"{len(peaks)}: {listed}{more}" if peaks else "0")
    console.print(t)


def _groups(groups: dict[str, Any], label: str, console: Console, names: dict[str, str]) -> None:
    """One row per volume or stream, busiest first; a stream shows its process name beside its
    id where the trace records one (blkparse's comm)."""
    rows = sorted(
        (summary_row(f"{key} ({names[key]})" if key in names else key, f) for key, f in groups.items()),
        key=lambda r: -r["requests"],
    )
    t = table(
        f"{label}s ({len(rows)})",
        label,
        "requests",
        "reads",
        "sequential",
        "IOPS",
        "mean size",
        "mean gap µs",
    )
    for r in rows[:MAX_GROUP_ROWS]:
        t.add_row(
            r["name"],
            f"{r['requests']:,}",
            pct(r["read_fraction"]),
            pct(r["sequential_fraction"]),
            f"{r['iops']:,.1f}",
            human_bytes(r["mean_bytes"]),
            f"{r['mean_interarrival_us']:,.1f}",
        )
    if len(rows) > MAX_GROUP_ROWS:
        t.add_row(f"… {len(rows) - MAX_GROUP_ROWS} more (see --json)", "", "", "", "", "", "")
    console.print(t)


def _threads(threads: list[dict[str, Any]], th: dict[str, Any], console: Console) -> None:
    t = table("thread types", "thread", "functionality", "intensity", "fluctuation", "weight")
    kinds = {"log": "Log", "data": "Data"}
    t.add_row("Total", " + ".join(sorted({kinds[x["functionality"]] for x in threads})), "", "", "1.00")
    for i, x in enumerate(threads[:MAX_GROUP_ROWS]):
        name = f"{kinds[x['functionality']]} #{i} ({x['group']})"
        t.add_row(
            name,
            kinds[x["functionality"]],
            x["intensity"].capitalize(),
            x["fluctuation"].capitalize(),
            f"{x['weight']:.3g}",
        )
    console.print(t)
    console.print(
        f"  log: ≥ {th['log_min_write_fraction']:.0%} writes, "
        f"mean ≤ {human_bytes(th['log_max_mean_bytes'])}, "
        f"≥ {th['log_min_relaxed_sequential_fraction']:.0%} relaxed-sequential; high intensity: weight ≥ "
        f"{th['high_intensity_min_weight']:.3g}; "
        f"high fluctuation: window IOPS cv ≥ {th['high_fluctuation_min_cv']}"
    )


def _correlation(pc: dict[str, Any], console: Console) -> None:
    names, m = pc["volumes"], pc["matrix"]
    off = [m[a][b] for a in range(len(names)) for b in range(len(names)) if a != b and m[a][b] is not None]
    mean = sum(off) / len(off) if off else float("nan")
    if len(names) <= 8:
        t = table("peak correlation (per-window IOPS, Pearson)", "", *names)
        for a, name in enumerate(names):
            t.add_row(name, *("-" if v is None else f"{v:.2f}" for v in m[a]))
        console.print(t)
    console.print(f"  mean correlation between volumes: {mean:.2f} ({len(names)} volumes)")
