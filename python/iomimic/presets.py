"""Models built from the seeds' published figures, shipped with iomimic.

- ``tpch``: seed 003, Table 1 (per thread type: read share, % sequential, request size, spatial
  locality St1–St4) and Table 2 (thread types' weights); total rate from Table 1's Total row.
- ``tpcc``, ``tpce``: seed 003, Table 2 (thread types and weights) and seed 000's
  defragmentation table (aggregate read/write and random/sequential split).
- ``messenger``: seed 000's validation table (read:write 1.8:1, 83.67 % random, 8 K 87 % /
  64 K 7.4 %, 4.63 ms mean inter-arrival) and per-thread table (weights of Data #0–#3, Log #4–#5).

Where a per-type figure is unpublished an assumption fills it; each is listed in ``ASSUMPTIONS``
and in ``docs/model.md``. Every preset is one level of four states (the seeds' St1–St4, equal
quarters of a volume) per thread, with exponential inter-arrival times.
"""

from __future__ import annotations

from typing import Any

from iomimic.errors import InputError
from iomimic.model import Model

KIB = 1024
TB = 10**12
DURATION_NS = 60 * 10**9

#: Table 1 of seed 003 (TPCH), per thread type: (read %, read seq %, read KB, read St1-4 %,
#: write seq %, write KB, write St1-4 %).
TABLE1 = {
    "#0": (0, None, None, None, 0, 4.1, (100, 0, 0, 0)),
    "#2": (100, 74.8, 524.2, (97.8, 2.2, 0, 0), None, None, None),
    "#3": (100, 72.1, 524.8, (91.8, 8.9, 0.3, 0), None, None, None),
    "#4": (99, 63.9, 128.9, (95.4, 4.3, 0, 0), 2.8, 2.14, (80, 20, 0, 0)),
    "#5": (100, 50.9, 524.8, (80, 0, 20, 0), None, None, None),
    "#6": (81, 70.2, 65.5, (100, 0, 0, 0), 12.8, 4.01, (80, 0, 20, 0)),
    "#7": (100, 25.6, 65.5, (100, 0, 0, 0), None, None, None),
}
#: Table 2 of seed 003: thread-type weights.
TABLE2 = {
    "tpcc": {"#0": 4.8e-4, "#1": 0.012, "#2": 0.17, "#3": 0.726, "#6": 0.12},
    "tpce": {"#0": 0.003, "#1": 1.9e-4, "#2": 0.308, "#3": 0.432, "#6": 0.245},
    "tpch": {"#0": 6.3e-5, "#2": 0.696, "#3": 0.26, "#4": 0.026, "#5": 0.006, "#6": 0.007, "#7": 3e-7},
}
#: Seed 000's defragmentation table, before defragmentation: (read %, sequential %).
DEFRAG = {"tpcc": (68.8, 2.8), "tpce": (91.3, 8.2), "tpch": (96.7, 35.5), "messenger": (62.8, 15.35)}
#: TPCH Total row of Table 1: read and write IOPS.
TPCH_IOPS = 3188 + 108.4

ASSUMPTIONS = {
    "tpch": [
        "Per-type inter-arrival times of Table 1 are not used: with the published weights they would give a "
        "different total; every type runs at weight x the Total row's 3,296 IOPS, exponentially spaced.",
        "A type's read and write rows are combined by its read share into one request mix, sequential "
        "probability and spatial distribution (the model keeps them per state, not per op).",
        "Data types use a 2.7 TB data volume (half the 5.4 TB of the RAID 1+0 server); "
        "log types a 100 GB log volume.",
    ],
    "tpcc": [
        "Per-type figures are TPCH's (Table 1) for the shared types #0, #2, #3 and #6; "
        "type #1 (a log thread with low activity) is assumed to behave like #0.",
        "Data types' read share and every type's sequential probability are scaled so the "
        "aggregate matches the defragmentation table (68.8 % reads, 2.8 % sequential).",
        "Total rate assumed equal to TPCH's, 3,296 IOPS (unpublished for TPCC).",
    ],
    "tpce": [
        "As tpcc, matching the defragmentation table's 91.3 % reads and 8.2 % sequential.",
    ],
    "messenger": [
        "Spatial locality is unpublished: data threads spread evenly over St1-St4, "
        "logs write St1 of a log volume.",
        "Logs write 4 KiB sequentially; data requests are 8 K / 64 K / 4 K so the aggregate is "
        "87 % / 7.4 % / rest.",
        "The table's 255 IOPS and 4.63 ms mean inter-arrival disagree (1 / 4.63 ms is 216 IOPS); the "
        "inter-arrival is kept.",
        "Data threads' read share and sequential probability are set so the aggregate is 1.8:1 "
        "and 83.67 % random.",
    ],
}

PRESETS = ("tpcc", "tpce", "tpch", "messenger")


def _thread(
    name: str,
    stream: int,
    weight: float,
    volume: int,
    span: int,
    read: float,
    seq: float,
    read_sizes: dict[int, float],
    write_sizes: dict[int, float],
    read_st: list[float],
    write_st: list[float],
    gap_ns: float,
) -> dict[str, Any]:
    """One thread type: four equal states of its volume, independent moves between them."""
    occupancy = [read * r + (1 - read) * w for r, w in zip(read_st, write_st)]
    total = sum(occupancy)
    occupancy = [o / total for o in occupancy]
    states, edges_to = [], []
    for j in range(4):
        states.append({"volume": volume, "start": span * j // 4, "end": span * (j + 1) // 4})

    def stats(r: float) -> dict[str, Any]:
        sizes: dict[int, float] = {}
        for b, p in read_sizes.items():
            sizes[b] = sizes.get(b, 0) + r * p
        for b, p in write_sizes.items():
            sizes[b] = sizes.get(b, 0) + (1 - r) * p
        keys = sorted(k for k, v in sizes.items() if v > 0)
        s = sum(sizes[k] for k in keys)
        return {
            "ops": [r, 1 - r, 0.0, 0.0],
            "sequential": seq,
            "reuse": 0.0,
            "sizes": {"bytes": keys, "p": [sizes[k] / s for k in keys]},
            "interarrival": {"kind": "exponential", "mean_ns": gap_ns},
        }

    for j in range(4):
        if occupancy[j] > 0:
            r_j = read * read_st[j] / total / occupancy[j]
            edges_to.append((j, occupancy[j], stats(min(1.0, max(0.0, r_j)))))
    row = [{"to": j, "p": p, "count": 0, "stats": st} for j, p, st in edges_to]
    return {
        "name": name,
        "stream": stream,
        "weight": weight,
        "alignment": 4096,
        "defaults": stats(read),
        "chain": {"states": states, "initial": occupancy, "transitions": [row for _ in range(4)]},
        "reuse": None,
    }


def _model(name: str, volumes: list[tuple[str, int]], threads: list[dict[str, Any]], iops: float) -> Model:
    requests = round(iops * DURATION_NS / 1e9)
    return Model(
        {
            "format": "iomimic-model",
            "version": 1,
            "name": name,
            "source": f"preset {name}",
            "requests": requests,
            "duration_ns": DURATION_NS,
            "levels": 1,
            "states": 4,
            "volumes": [{"name": n, "span_bytes": s} for n, s in volumes],
            "threads": threads,
            "rate": {"window_ns": DURATION_NS, "shares": [1.0]},
            "selection": {"preset": name, "assumptions": ASSUMPTIONS[name]},
        }
    )


def _tpc(name: str) -> Model:
    weights = TABLE2[name]
    total_w = sum(weights.values())
    types = {t: w / total_w for t, w in weights.items()}
    figures = {t: TABLE1[t if t != "#1" else "#0"] for t in types}
    is_log = {t: t in ("#0", "#1") for t in types}
    read = {t: f[0] / 100 for t, f in figures.items()}
    seq = {
        t: (f[0] / 100) * (f[1] or 0) / 100 + (1 - f[0] / 100) * (f[4] or 0) / 100 for t, f in figures.items()
    }
    if name != "tpch":
        target_read, target_seq = DEFRAG[name][0] / 100, DEFRAG[name][1] / 100
        data_w = sum(w for t, w in types.items() if not is_log[t])
        for t in types:
            read[t] = 0.0 if is_log[t] else min(1.0, target_read / data_w)
        agg_seq = sum(types[t] * seq[t] for t in types)
        scale = target_seq / agg_seq if agg_seq else 0.0
        seq = {t: min(1.0, s * scale) for t, s in seq.items()}
    data_span, log_span = int(2.7 * TB), 100 * 10**9
    threads = []
    gap_total = 1e9 / TPCH_IOPS
    for i, (t, w) in enumerate(sorted(types.items())):
        f = figures[t]
        read_st = [x / 100 for x in (f[3] or (0, 0, 0, 0))]
        write_st = [x / 100 for x in (f[6] or f[3] or (100, 0, 0, 0))]
        read_sizes = {round((f[2] or 4) * KIB / 512) * 512: 1.0}
        write_sizes = {round((f[5] or f[2] or 4) * KIB / 512) * 512: 1.0}
        if read[t] > 0 and sum(read_st) == 0:
            read_st = write_st
        if read[t] < 1 and sum(write_st) == 0:
            write_st = read_st
        volume, span = (1, log_span) if is_log[t] else (0, data_span)
        label = f"{'Log' if is_log[t] else 'Data'} {t}"
        threads.append(
            _thread(
                label,
                i,
                w,
                volume,
                span,
                read[t],
                seq[t],
                read_sizes,
                write_sizes,
                read_st,
                write_st,
                gap_total / w,
            )
        )
    return _model(name, [("data", data_span), ("log", log_span)], threads, TPCH_IOPS)


def _messenger() -> Model:
    weights = {
        "Data #0": 0.42,
        "Data #1": 0.27,
        "Data #2": 0.13,
        "Data #3": 0.18,
        "Log #4": 5e-3,
        "Log #5": 4e-4,
    }
    total_w = sum(weights.values())
    weights = {k: v / total_w for k, v in weights.items()}
    data_w = sum(v for k, v in weights.items() if k.startswith("Data"))
    log_w = 1 - data_w
    target_read = 1.8 / 2.8
    target_seq = 1 - 0.8367
    read_data = target_read / data_w
    seq_data = (target_seq - log_w * 1.0) / data_w
    s8, s64 = 0.87 / data_w, 0.074 / data_w
    data_sizes = {8192: s8, 65536: s64, 4096: 1 - s8 - s64}
    iops = 1e9 / 4.63e6
    span = int(2.3 * TB)
    threads = []
    for i, (k, w) in enumerate(weights.items()):
        gap = 1e9 / iops / w
        if k.startswith("Log"):
            threads.append(
                _thread(
                    k,
                    i,
                    w,
                    1,
                    100 * 10**9,
                    0.0,
                    1.0,
                    {4096: 1.0},
                    {4096: 1.0},
                    [1, 0, 0, 0],
                    [1, 0, 0, 0],
                    gap,
                )
            )
        else:
            even = [0.25] * 4
            threads.append(
                _thread(k, i, w, 0, span, read_data, seq_data, data_sizes, data_sizes, even, even, gap)
            )
    return _model("messenger", [("H", span), ("L", 100 * 10**9)], threads, iops)


def preset(name: str) -> Model:
    """The named preset model (``tpcc``, ``tpce``, ``tpch`` or ``messenger``).

    >>> preset("tpcc").data["threads"][0]["name"]
    'Log #0'
    """
    if name == "messenger":
        return _messenger()
    if name in TABLE2:
        return _tpc(name)
    raise InputError(f"unknown preset {name!r}; presets are {', '.join(PRESETS)}")


def published(name: str) -> dict[str, Any]:
    """The published figures a preset was built from, as the preset test checks them."""
    if name == "messenger":
        return {
            "read_fraction": 1.8 / 2.8,
            "sequential_fraction": 1 - 0.8367,
            "mean_interarrival_us": 4630.0,
            "sizes": {8192: 0.87, 65536: 0.074},
            "weights": {"Data #0": 0.42, "Data #1": 0.27, "Data #2": 0.13, "Data #3": 0.18},
        }
    weights = TABLE2[name]
    total_w = sum(weights.values())
    out: dict[str, Any] = {"weights": {k: v / total_w for k, v in weights.items()}}
    if name == "tpch":
        out["read_fraction"] = 3188 / TPCH_IOPS
        out["iops"] = TPCH_IOPS
        out["types"] = {t: TABLE1[t] for t in weights}
    else:
        out["read_fraction"] = DEFRAG[name][0] / 100
        out["sequential_fraction"] = DEFRAG[name][1] / 100
    return out
