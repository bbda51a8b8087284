"""Generation at scale: memory stays flat however long the trace (issue 19).

Trains a model of a realistic trace (`msr_synth.realistic_trace`: 16 volumes, 64 streams,
re-use, mixed sizes; 1 M requests), then runs `iomimic generate MODEL -o DIR/ -n N` as whole
processes for N = --small and --large (default 100 M and 500 M requests) into bench-out/,
measuring each process's peak resident memory (its own rusage) and wall time. The bar: memory
grows by under 1 byte a request from the small run to the large one. For reference in the
same run, `Model.generate` of one slice's worth (8 Mi requests) in memory and `write_trace`
of it: the rate of the streamed runs over that rate is printed too. The outputs are deleted.

    python benches/generate_scale.py [--small 100000000] [--large 500000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(args: list[str], quiet: bool = False) -> tuple[float, int]:
    """Wall seconds and peak resident bytes of `iomimic ARGS` as a process of its own (its
    output shown unless `quiet`)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "iomimic.cli", *args], stdout=subprocess.PIPE)
    # read before waiting: output past the pipe's 64 KiB would block the child for ever
    out = proc.stdout.read().decode().strip() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"iomimic {' '.join(args)} failed")
    if not quiet:
        print(f"  {out}", flush=True)
    return wall, usage.ru_maxrss * 1024


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--small", type=int, default=100_000_000)
    p.add_argument("--large", type=int, default=500_000_000)
    args = p.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_common import OUT
    from msr_synth import realistic_trace

    import iomimic
    from iomimic.model import train

    OUT.mkdir(exist_ok=True)
    model_path = OUT / "scale-model.json"
    print("training a model of a realistic 1 M-request trace (16 volumes, 64 streams) ...", flush=True)
    model = train(realistic_trace(1_000_000), levels=1, states=4)
    model.save(model_path)

    from iomimic.model import SLICE_REQUESTS

    t0 = time.perf_counter()
    ref = model.generate(SLICE_REQUESTS, seed=1)
    iomimic.write_trace(ref, OUT / "scale-ref.parquet")
    t_ref = time.perf_counter() - t0
    ref_rate = SLICE_REQUESTS / t_ref
    del ref
    (OUT / "scale-ref.parquet").unlink()

    rows = []
    for n in (args.small, args.large):
        target = OUT / f"scale-{n}"
        print(f"generating {n:,} requests into {target}/ ...", flush=True)
        wall, peak = run(["generate", str(model_path), "-o", f"{target}/", "-n", str(n), "--seed", "1"])
        size = sum(f.stat().st_size for f in target.iterdir())
        shutil.rmtree(target)
        rows.append((n, wall, peak, size))

    print(
        f"\n{'requests':>14}{'seconds':>9}{'M req/s':>9}{'vs in memory':>14}{'peak RSS':>11}{'on disk':>10}"
    )
    print(
        f"{SLICE_REQUESTS:>14,}{t_ref:>9.1f}{ref_rate / 1e6:>9.2f}{1.0:>14.2f}{'':>11}{'':>10}  (in memory)"
    )
    for n, wall, peak, size in rows:
        print(
            f"{n:>14,}{wall:>9.1f}{n / wall / 1e6:>9.2f}{n / wall / ref_rate:>14.2f}"
            f"{peak / 2**20:>9.0f} M{size / 2**30:>8.1f} G"
        )
    (small, _, peak_small, _), (large, _, peak_large, _) = rows
    growth = (peak_large - peak_small) / (large - small)
    print(f"memory growth from {small:,} to {large:,} requests: {growth:.3f} B a request (bar < 1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
