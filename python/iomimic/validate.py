"""Validation: how faithful a synthetic workload is to the original, figure by figure.

Both traces are characterized with the same options (the original's fluctuation window), then
compared as the seed's Messenger table does: metric / original / synthetic / variation, with the
targets of ``docs/model.md``: every scalar within 2 %, spatial histogram L1/2 ≤ 0.02, miss-ratio
curve error ≤ 0.03.
"""

from __future__ import annotations

from typing import Any

from iomimic import _core
from iomimic.profile import characterize
from iomimic.trace import Trace
from iomimic.units import parse_seed

SCALAR_TARGET = 0.02
SPATIAL_TARGET = 0.02
MRC_TARGET = 0.03


def _rel(a: float, b: float) -> float:
    if a == 0:
        return 0.0 if b == 0 else float("inf")
    return (b - a) / abs(a)


def _l1_half(a: dict[Any, float], b: dict[Any, float]) -> float:
    keys = set(a) | set(b)
    return sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in keys) / 2


def mrc_error(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
    """Mean absolute difference of two miss-ratio curves over the cache sizes of either; past
    the end of the shorter curve (a smaller footprint) its last value stands."""
    if not a or not b:
        return None
    ca = {p["cache_bytes"]: p["miss_ratio"] for p in a["curve"]}
    cb = {p["cache_bytes"]: p["miss_ratio"] for p in b["curve"]}

    def at(curve: dict[int, float], size: int) -> float:
        below = [s for s in curve if s <= size]
        return curve[max(below)] if below else 1.0

    sizes = sorted(set(ca) | set(cb))
    return sum(abs(at(ca, s) - at(cb, s)) for s in sizes) / len(sizes)


def _sizes(p: dict[str, Any]) -> dict[int, float]:
    return {d["bytes"]: d["fraction"] for d in p["size"]["distribution"]}


def _weights(p: dict[str, Any]) -> dict[str, float]:
    total = p["requests"] or 1
    return {s: f["requests"] / total for s, f in p["streams"].items()}


def _iops_over_time(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Mean absolute relative difference of per-window IOPS over the original's windows."""
    xa, xb = a["fluctuation"]["iops"], b["fluctuation"]["iops"]
    n = len(xa)
    xb = (xb + [0.0] * n)[:n]
    mean = sum(xa) / n if n else 0.0
    return sum(abs(x - y) for x, y in zip(xa, xb)) / n / mean if mean else 0.0


def _rows(o: dict[str, Any], s: dict[str, Any]) -> list[dict[str, Any]]:
    def ratio(p: dict[str, Any]) -> str:
        return (
            f"{p['reads'] / p['writes']:,.2f}:1 ({100 * p['read_fraction']:.2f}%)"
            if p["writes"]
            else "reads only"
        )

    def top(p: dict[str, Any], k: int = 2) -> str:
        return " ".join(
            f"{d['bytes'] // 1024}K ({100 * d['fraction']:.1f}%)" for d in p["size"]["distribution"][:k]
        )

    def top_threads(p: dict[str, Any]) -> str:
        w = sorted(_weights(p).items(), key=lambda kv: -kv[1])[:2]
        return " ".join(f"T{k} ({100 * v:.1f}%)" for k, v in w)

    seq_o, seq_s = o["sequentiality"], s["sequentiality"]
    rows = [
        ("read fraction", o["read_fraction"], s["read_fraction"], "scalar", ratio(o), ratio(s)),
        (
            "random %",
            100 * (1 - o["sequential_fraction"]),
            100 * (1 - s["sequential_fraction"]),
            "scalar",
            None,
            None,
        ),
        ("sequential %", 100 * o["sequential_fraction"], 100 * s["sequential_fraction"], "info", None, None),
        ("block-size distribution (L1/2)", 0.0, _l1_half(_sizes(o), _sizes(s)), "distance", top(o), top(s)),
        ("mean request size (B)", o["size"]["mean_bytes"], s["size"]["mean_bytes"], "scalar", None, None),
        (
            "thread weights (L1/2)",
            0.0,
            _l1_half(_weights(o), _weights(s)),
            "distance",
            top_threads(o),
            top_threads(s),
        ),
        (
            "mean inter-arrival (µs)",
            o["interarrival"]["mean_us"],
            s["interarrival"]["mean_us"],
            "scalar",
            None,
            None,
        ),
        ("IOPS", o["iops"], s["iops"], "scalar", None, None),
        ("P(sequential)", seq_o["p_sequential"], seq_s["p_sequential"], "info", None, None),
        ("run count", seq_o["run_count"], seq_s["run_count"], "info", None, None),
        (
            "detangled run count",
            seq_o["detangled_run_count"],
            seq_s["detangled_run_count"],
            "info",
            None,
            None,
        ),
        (
            "relaxed detangled run count",
            seq_o["relaxed_detangled_run_count"],
            seq_s["relaxed_detangled_run_count"],
            "info",
            None,
            None,
        ),
        (
            "spatial histogram (L1/2)",
            0.0,
            sum(abs(x - y) for x, y in zip(o["spatial"]["fractions"], s["spatial"]["fractions"])) / 2,
            "spatial",
            "  ".join(f"{100 * x:.1f}" for x in o["spatial"]["fractions"]),
            "  ".join(f"{100 * x:.1f}" for x in s["spatial"]["fractions"]),
        ),
        ("IOPS over time (mean |Δ|/mean)", 0.0, _iops_over_time(o, s), "distance", None, None),
        ("miss-ratio curve error", 0.0, mrc_error(o.get("mrc"), s.get("mrc")), "mrc", None, None),
    ]
    if o.get("latency") and s.get("latency"):
        rows.append(
            ("mean latency (µs)", o["latency"]["mean_us"], s["latency"]["mean_us"], "info", None, None)
        )
    out = []
    for metric, a, b, kind, shown_a, shown_b in rows:
        if b is None:
            continue
        if kind in ("scalar", "info"):
            variation = _rel(a, b)
            ok = abs(variation) <= SCALAR_TARGET if kind == "scalar" else None
        else:
            variation = b
            target = {"spatial": SPATIAL_TARGET, "mrc": MRC_TARGET}.get(kind)
            ok = None if target is None else variation <= target
        out.append(
            {
                "metric": metric,
                "kind": kind,
                "original": a,
                "synthetic": b,
                "variation": variation,
                "ok": ok,
                "original_shown": shown_a,
                "synthetic_shown": shown_b,
            }
        )
    return out


def validate(
    original: Trace,
    synthetic: Trace,
    *,
    baseline: str | None = None,
    seed: int = 1,
    ranges: int = 4,
) -> dict[str, Any]:
    """Compares ``synthetic`` with ``original``; ``baseline="locality-free"`` also scores an
    IOMeter-like workload (the original's mix, sizes and gaps at uniformly random offsets)."""
    seed = parse_seed(seed)
    po = characterize(original, ranges=ranges, mrc="trace")
    window_ns = po["options"]["window_ns"]
    ps = characterize(synthetic, ranges=ranges, mrc="trace", window=window_ns / 1e9)
    result: dict[str, Any] = {"rows": _rows(po, ps), "original": _brief(po), "synthetic": _brief(ps)}
    if baseline is not None:
        if baseline != "locality-free":
            from iomimic.errors import InputError

            raise InputError(f"unknown baseline {baseline!r}; the one baseline is locality-free")
        d = _core.generate_locality_free(*original._core_args(), requests=len(synthetic), seed=seed)
        base = Trace._from_reader(d)
        pb = characterize(base, ranges=ranges, mrc="trace", window=window_ns / 1e9)
        brow = {r["metric"]: r for r in _rows(po, pb)}
        for r in result["rows"]:
            b = brow.get(r["metric"])
            if b:
                r["baseline"] = b["synthetic"]
                r["baseline_variation"] = b["variation"]
        result["baseline"] = _brief(pb)
        result["baseline_kind"] = baseline
    result["curves"] = {"original": po.get("mrc"), "synthetic": ps.get("mrc")}
    if baseline is not None:
        result["curves"]["baseline"] = pb.get("mrc")
    result["iops_over_time"] = {
        "window_s": po["fluctuation"]["window_s"],
        "original": po["fluctuation"]["iops"],
        "synthetic": ps["fluctuation"]["iops"],
    }
    result["spatial"] = {"original": po["spatial"]["fractions"], "synthetic": ps["spatial"]["fractions"]}
    checked = [r for r in result["rows"] if r["ok"] is not None]
    result["passed"] = sum(bool(r["ok"]) for r in checked)
    result["checked"] = len(checked)
    return result


def _brief(p: dict[str, Any]) -> dict[str, Any]:
    return {"requests": p["requests"], "source": p.get("source")}
