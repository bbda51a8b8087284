"""Cache policies against libCacheSim (the `libcachesim` package): requests per second for the same
trace, policy and cache size in both, in one process.

The trace: 2,000,000 requests (or --lines, if fewer), seeded: 80 % to 1,000,000 objects with
Zipf-like popularity (alpha 0.9), 20 % a sequential scan over another 2,000,000; every object has
a size of 512 B to 256 KiB. Cache sizes: 1 % and 10 % of the bytes of distinct objects.

What each timing holds:
- libCacheSim: `cache.process_trace(reader)`, its C loop reading the oracleGeneral file (24-byte
  records, in the page cache after the first run) and replaying every request. The cache (with
  its default 2^24-slot hash table, enough for every object, so it never grows) and the reader
  are made before the clock starts.
- iomimic: `iomimic.cache.replay(keys, sizes, policy, capacity=...)` from Python on numpy arrays
  in memory: argument checks, building the cache, the replay, and dropping the cache.

Before timing, both must report the same miss ratio and byte miss ratio. Runs come in
libCacheSim/iomimic pairs, the order alternating; the table shows median requests/s and the
median of the pairs' ratios (iomimic / libCacheSim), so a drift of the machine favours neither.

    python benches/cache.py [--lines 2000000] [--repeat 5]
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np
from bench_common import OUT, bench_args

from iomimic import cache

REFERENCE = {
    "lru": "LRU",
    "fifo": "FIFO",
    "clock": "Clock",
    "lfu": "LFU",
    "arc": "ARC",
    "2q": "TwoQ",
    "s3fifo": "S3FIFO",
}
FRACTIONS = (0.01, 0.1)


def bench_trace(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2023)
    objects = 1_000_000
    weights = 1.0 / np.arange(1, objects + 1) ** 0.9
    zipf = rng.permutation(objects)[rng.choice(objects, n, p=weights / weights.sum())]
    scan = rng.random(n) < 0.2
    keys = np.where(scan, objects + np.cumsum(scan) % 2_000_000, zipf).astype(np.uint64)
    sizes = rng.integers(512, 256 * 1024 + 1, objects + 2_000_000).astype(np.uint32)[keys]
    return keys, sizes


def main() -> int:
    args = bench_args(__doc__)
    try:
        import libcachesim as lcs
    except ImportError:
        print("libcachesim is not installed (pip install libcachesim); nothing to compare against")
        return 1

    n = min(args.lines, 2_000_000)
    keys, sizes = bench_trace(n)
    OUT.mkdir(exist_ok=True)
    path = OUT / f"cache-{n}.oracleGeneral"
    cache.write_oracle_general(path, keys, sizes)
    _, first = np.unique(keys, return_index=True)
    footprint = int(sizes[first].sum(dtype=np.uint64))

    def reference(policy: str, capacity: int) -> tuple[float, tuple[float, float]]:
        c = getattr(lcs, REFERENCE[policy])(capacity)
        reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
        t0 = time.perf_counter()
        ratios = c.process_trace(reader)
        return time.perf_counter() - t0, ratios

    def ours(policy: str, capacity: int) -> tuple[float, cache.Replay]:
        t0 = time.perf_counter()
        r = cache.replay(keys, sizes, policy, capacity=capacity)
        return time.perf_counter() - t0, r

    pairs = max(3, args.repeat)
    print(f"\n{n:,} requests, {len(first):,} objects, {footprint / 2**30:.1f} GiB of them; libcachesim "
          f"{lcs.__version__}; {pairs} pairs, order alternating, medians")  # fmt: skip
    print(
        f"{'policy':8s} {'cache':>9s} {'miss ratio':>10s} {'libCacheSim':>13s} {'iomimic':>13s} {'ratio':>6s}"
    )
    results = []
    for fraction in FRACTIONS:
        capacity = int(footprint * fraction)
        for policy in REFERENCE:
            _, (miss, byte_miss) = reference(policy, capacity)
            _, r = ours(policy, capacity)
            if r.hits != n - round(miss * n) or abs(r.byte_miss_ratio - byte_miss) > 1e-9:
                print(f"{policy}: miss ratios differ: libCacheSim {miss}, iomimic {r.miss_ratio}")
                return 1
            theirs, mine = [], []
            for k in range(pairs):
                for side in ("lcs", "ours") if k % 2 == 0 else ("ours", "lcs"):
                    if side == "lcs":
                        theirs.append(reference(policy, capacity)[0])
                    else:
                        mine.append(ours(policy, capacity)[0])
            ratio = statistics.median(t / m for t, m in zip(theirs, mine, strict=True))
            lcs_rate, our_rate = n / statistics.median(theirs), n / statistics.median(mine)
            print(f"{policy:8s} {fraction:>8.0%} {miss:>10.4f} {lcs_rate / 1e6:>9.2f} M/s "
                  f"{our_rate / 1e6:>9.2f} M/s {ratio:>6.2f}")  # fmt: skip
            results.append(
                {"policy": policy, "cache_fraction": fraction, "miss_ratio": miss,
                 "libcachesim_per_s": lcs_rate, "iomimic_per_s": our_rate, "ratio": ratio}
            )  # fmt: skip
    (OUT / "cache.json").write_text(json.dumps({"requests": n, "results": results}, indent=2))
    slowest = min(r["ratio"] for r in results)
    print(f"iomimic / libCacheSim: {slowest:.2f} at the least (target >= 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
