"""Simulator benchmark: simulated requests per second, against characterization of the same trace.

The first million requests of the MSR benchmark trace, closed loop at depth 1, on a single disk
(with its write cache off, as the preset has it, and on), a single SSD (target: >= 2 M
simulated requests/s), and the 28-disk RAID 1+0 array.

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
    (OUT / "simulate.json").write_text(json.dumps({"requests": n, "seconds": dict(rows)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
