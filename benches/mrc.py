"""Exact LRU miss-ratio curves: how their time grows with the data, their memory per distinct
block, and their speed against libCacheSim's LRU simulating one cache size.

The traces: MSR-like, 8 volumes, requests of 4-64 KiB at 64 KiB-aligned places, their
popularity Zipf-like (alpha 0.9), seeded; the small one of --lines / 5 requests (default
1,000,000), the large one 10 times that, drawn from the same distribution. Two kinds:
"wide", over 4,000,000 places (the footprint grows about 7 times with the data, to 38 M blocks),
and "hot", over 250,000 places (it grows about 4.5 times, to 17 M blocks).

- Growth: `iomimic.cache.miss_ratio_curve` (exact: the budget holds every block) on the small
  and on the large trace, in pairs, the order alternating; the median of the pairs' time ratios
  (bar: 10 times the data costs at most 12 times the time). Each side of a pair is a fresh
  process that reads the trace (Parquet, written once) and takes its curve twice, keeping the
  faster: as a command would, without the memory a previous curve of the same process left
  behind, and without the first touch of memory this VM's host had not yet given the guest
  (about 3 s a GiB here, the same for any program).
- Memory: in a fresh process, the peak resident memory (VmHWM, reset just before) while the
  large wide trace's curve is taken, less what was resident before, over its distinct blocks
  (bar: at most 64 bytes a block).
- Against libCacheSim: the small trace's 4 KiB block accesses as 4 KiB objects keyed by
  (volume, block), replayed through libCacheSim's LRU at one size (a point of the curve near
  10 % of the footprint) from its oracleGeneral file; iomimic's exact curve (every size) of the
  same trace. Both must give the same miss ratio at that size first. Pairs, the order
  alternating; ratio = libCacheSim's time / iomimic's (bar: at least 1).

    python benches/mrc.py [--lines 5000000] [--repeat 3]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from bench_common import OUT, bench_args

import iomimic
from iomimic import cache

BLOCK = 4096
BUDGET = 1 << 26  # every block of these traces: the curves are exact


WIDE, HOT = 4_000_000, 250_000


def zipf_trace(n: int, seed: int, places: int = WIDE) -> iomimic.Trace:
    rng = np.random.default_rng(seed)
    blocks = places
    weights = 1.0 / np.arange(1, blocks + 1) ** 0.9
    cdf = np.cumsum(weights / weights.sum())
    rank = np.minimum(np.searchsorted(cdf, rng.random(n)), blocks - 1)
    block = rng.permutation(blocks)[rank].astype(np.uint64)
    return iomimic.Trace(
        ts_ns=np.arange(n, dtype=np.uint64) * 100_000,
        offset=block * BLOCK * 16,
        size=(rng.integers(1, 17, n) * BLOCK).astype(np.uint32),
        op=(rng.random(n) < 0.3).astype(np.uint8),
        volume=rng.integers(0, 8, n).astype(np.uint32),
        volumes=[f"v{i}" for i in range(8)],
    )


def timed(trace: iomimic.Trace) -> tuple[float, dict]:
    t0 = time.perf_counter()
    m = cache.miss_ratio_curve(trace, budget=BUDGET)
    return time.perf_counter() - t0, m


def timing_child(path: str) -> None:
    """Prints the faster of two curves of the trace at `path`, and the curve's figures."""
    trace = iomimic.read_trace(path)
    took, m = min((timed(trace) for _ in range(2)), key=lambda r: r[0])
    blocks = m["footprint_bytes"] // BLOCK
    print(json.dumps({"seconds": took, "accesses": m["accesses"], "blocks": blocks}))


def timed_in_child(path: Path) -> dict:
    child = subprocess.run(
        [sys.executable, __file__, "--timing-child", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(child.stdout)


def memory_child(path: str) -> None:
    """Prints the peak memory grown by the curve of the trace at `path`, and its distinct
    blocks."""

    def status(field: str) -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))

    trace = iomimic.read_trace(path)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) starts again from what is resident now
    before = status("VmRSS")
    m = cache.miss_ratio_curve(trace, budget=BUDGET)
    grown = status("VmHWM") - before
    print(json.dumps({"grown": grown, "blocks": m["footprint_bytes"] // BLOCK}))


def block_accesses(trace: iomimic.Trace) -> np.ndarray:
    """The 4 KiB blocks each request touches, in order, keyed by (volume, block)."""
    first = trace.offset // BLOCK
    count = ((trace.offset + trace.size - 1) // BLOCK - first + 1).astype(np.int64)
    within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    blocks = np.repeat(first, count) + within.astype(np.uint64)
    return (np.repeat(trace.volume.astype(np.uint64), count) << np.uint64(40)) | blocks


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--memory-child":
        memory_child(sys.argv[2])
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--timing-child":
        timing_child(sys.argv[2])
        return 0
    args = bench_args(__doc__)
    small_n = max(args.lines // 5, 10_000)
    pairs = max(3, args.repeat)
    result: dict[str, object] = {"requests": small_n}
    print(f"\nexact curve, {small_n:,} then {10 * small_n:,} requests; {pairs} pairs, order alternating")
    OUT.mkdir(exist_ok=True)
    for kind, places in (("hot", HOT), ("wide", WIDE)):
        paths = {}
        for name, n, seed in (("small", small_n, 1), ("large", 10 * small_n, 2)):
            paths[name] = OUT / f"mrc-{kind}-{n}.parquet"
            if not paths[name].exists():
                iomimic.write_trace(zipf_trace(n, seed, places), paths[name])
        runs: dict[str, list[dict]] = {"small": [], "large": []}
        for k in range(pairs):
            for side in ("small", "large") if k % 2 == 0 else ("large", "small"):
                runs[side].append(timed_in_child(paths[side]))
        times = {side: [r["seconds"] for r in rs] for side, rs in runs.items()}
        growth = statistics.median(b / a for a, b in zip(times["small"], times["large"], strict=True))
        for name in ("small", "large"):
            took, m = statistics.median(times[name]), runs[name][0]
            print(f"  {kind:5s} {name:6s} {m['accesses']:>12,} accesses {m['blocks']:>11,} blocks "
                  f"{took:7.3f} s {m['accesses'] / took / 1e6:6.2f} M accesses/s")  # fmt: skip
        print(f"  {kind}: 10x the data, {growth:.2f}x the time (bar <= 12)")
        result[f"growth_{kind}"] = growth
    small = zipf_trace(small_n, 1)
    m_small = timed(small)[1]

    child = subprocess.run(
        [sys.executable, __file__, "--memory-child", str(OUT / f"mrc-wide-{10 * small_n}.parquet")],
        capture_output=True,
        text=True,
        check=True,
    )
    mem = json.loads(child.stdout)
    per_block = mem["grown"] / mem["blocks"]
    print(f"memory: {mem['grown'] / 2**20:.0f} MiB for {mem['blocks']:,} distinct blocks: "
          f"{per_block:.1f} B a block (bar <= 64)")  # fmt: skip

    result["bytes_per_block"] = per_block
    try:
        import libcachesim as lcs
    except ImportError:
        print("libcachesim is not installed (pip install libcachesim); no comparison against it")
    else:
        keys = block_accesses(small)
        OUT.mkdir(exist_ok=True)
        path = OUT / f"mrc-{small_n}.oracleGeneral"
        cache.write_oracle_general(path, keys, np.full(len(keys), BLOCK, dtype=np.uint32))
        footprint = m_small["footprint_bytes"]
        point = min(m_small["curve"], key=lambda p: abs(p["cache_bytes"] - footprint / 10))

        def reference() -> tuple[float, float]:
            c = lcs.LRU(point["cache_bytes"])
            reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
            t0 = time.perf_counter()
            miss, _ = c.process_trace(reader)
            return time.perf_counter() - t0, miss

        _, miss = reference()
        if abs(miss - point["miss_ratio"]) > 1e-9:
            print(
                f"miss ratios differ at {point['cache_bytes']:,} B: libCacheSim {miss}, "
                f"iomimic {point['miss_ratio']}"
            )
            return 1
        theirs, mine = [], []
        for k in range(pairs):
            for side in ("lcs", "ours") if k % 2 == 0 else ("ours", "lcs"):
                (theirs if side == "lcs" else mine).append(
                    reference()[0] if side == "lcs" else timed(small)[0]
                )
        ratio = statistics.median(t / m for t, m in zip(theirs, mine, strict=True))
        print(f"libCacheSim LRU at {point['cache_bytes'] / 2**20:.0f} MiB (miss ratio {miss:.4f}): "
              f"{statistics.median(theirs):.3f} s; iomimic's exact curve, every size: "
              f"{statistics.median(mine):.3f} s; "
              f"ratio {ratio:.2f} (bar >= 1)")  # fmt: skip
        result["vs_libcachesim_lru"] = ratio
    (OUT / "mrc.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
