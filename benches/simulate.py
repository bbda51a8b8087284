"""Simulator benchmark: simulated requests per second, against characterization of the same trace.

The first million requests of the MSR benchmark trace, closed loop at depth 1, on a single disk
(with its write cache off, as the preset has it, and on), a single SSD (target: >= 2 M
simulated requests/s), and the 28-disk RAID 1+0 array. Then an overloaded disk: hdd-7200
offered 6,700 random IO/s open loop (it serves about 120), 100 k and 1 M requests, whose queue
grows with the trace: time per request must not grow with the queue (bar: the 1 M run's within
1.5x of the 100 k run's, both medians of interleaved runs).

    python benches/simulate.py [--lines 5000000] [--repeat 3]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    sys.path.insert(0, str(HERE))
    from bench_common import OUT, bench_trace, best_of

    args, full = bench_trace(__doc__)
    import iomimic
    from iomimic.sim import simulate

    n = min(1_000_000, len(full))
    t = iomimic.Trace(
        ts_ns=full.ts_ns[:n],
        offset=full.offset[:n],
        size=full.size[:n],
        op=full.op[:n],
        volume=full.volume[:n],
        volumes=full.volumes,
    )
    t_ref, _ = best_of(args.repeat, lambda: iomimic.characterize(t, mrc="none"))
    rows = [("reference: characterize, every figure but the MRC", t_ref)]
    # the disk with its write cache on: every write goes through the dirty-extent map
    cached = OUT / "hdd-7200-write-cache.toml"
    preset = iomimic.sim.device_presets()["hdd-7200"]
    cached.write_text(preset.replace("write_cache = false", "write_cache = true"))
    single = [("hdd-7200", {"device": "hdd-7200"}), ("hdd-7200, write cache on", {"config": cached})]
    for name, where in [*single, ("ssd-nvme", {"device": "ssd-nvme"})]:
        secs, _ = best_of(args.repeat, lambda w=where: simulate(t, iodepth=1, shared=True, **w))
        rows.append((f"simulate on {name}, closed loop depth 1", secs))
    secs, _ = best_of(args.repeat, lambda: simulate(t, "tpc-raid10-28disk", iodepth=1, shared=True))
    rows.append(("simulate on tpc-raid10-28disk, closed loop depth 1", secs))
    print(f"\nsimulate {n:,} requests, best of {args.repeat}")
    print(f"{'work':<56}{'seconds':>9}{'M req/s':>9}{'vs ref':>8}")
    for name, secs in rows:
        print(f"{name:<56}{secs:>9.3f}{n / secs / 1e6:>9.2f}{t_ref / secs:>8.2f}")
    devices = [secs for _, secs in rows[1:4]]
    slowest, fastest = n / max(devices) / 1e6, n / min(devices) / 1e6
    print(f"single device: {slowest:.2f}-{fastest:.2f} M requests/s (target >= 2)")
    growth = overloaded(args.repeat)
    (OUT / "simulate.json").write_text(
        json.dumps({"requests": n, "seconds": dict(rows), "overloaded_growth": growth}, indent=2)
    )
    return 0


def overloaded(repeat: int) -> float:
    """Time per request of a 1 M-request open-loop run on an overloaded disk over a 100 k one's
    (interleaved pairs, the median of their ratios)."""
    import time

    import numpy as np

    import iomimic
    from iomimic.sim import simulate

    def workload(n: int) -> iomimic.Trace:
        rng = np.random.default_rng(n)
        return iomimic.Trace(
            ts_ns=np.cumsum(rng.exponential(1e9 / 6700, n)).astype(np.uint64),
            offset=rng.integers(0, 1 << 26, n) * 4096,
            size=rng.choice([4096, 8192, 65536], n),
            op=(rng.random(n) < 0.3).astype(np.uint8),
        )

    small, large = workload(100_000), workload(1_000_000)

    def per_request(t: iomimic.Trace) -> float:
        start = time.perf_counter()
        _, f = simulate(t, "hdd-7200")
        assert f["requests"] == len(t)
        return (time.perf_counter() - start) / len(t)

    ratios, costs = [], []
    for _ in range(max(repeat, 3)):
        a, b = per_request(small), per_request(large)
        ratios.append(b / a)
        costs.append((a, b))
    growth = float(np.median(ratios))
    a, b = (float(np.median(c)) for c in zip(*costs))
    print(
        f"\noverloaded hdd-7200 (6,700 IO/s offered), open loop: 100 k {a * 1e6:.2f} µs/request, "
        f"1 M {b * 1e6:.2f} µs/request; growth {growth:.2f}x (bar <= 1.5)"
    )
    return growth


if __name__ == "__main__":
    sys.exit(main())
