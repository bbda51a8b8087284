"""Simulation past memory: a trace fed to the simulator a piece at a time holds memory flat
however long the trace (issue 19), at a speed near the whole run's.

Writes a realistic trace (`msr_synth.realistic_trace`: 16 volumes, 64 streams, re-use, mixed
sizes) repeated end to end into two Parquet files of --small and --large requests (default 6 M
and 24 M), then, as whole processes measuring their own peak resident memory and wall time:
`iomimic simulate SMALL --device ssd-nvme` read whole (the reference) and with `--memory 256M`
(in pieces), as interleaved pairs (medians of --pairs), and the large file in pieces, without
and with `-o`. Each volume is on an SSD of its own. Prints the speed ratio (pieces over whole,
same run), each run's peak and the memory growth per request from the small file to the large
one. The files are deleted.

    python benches/simulate_scale.py [--small 6000000] [--large 24000000] [--pairs 3]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--small", type=int, default=6_000_000)
    p.add_argument("--large", type=int, default=24_000_000)
    p.add_argument("--pairs", type=int, default=3)
    args = p.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_common import OUT, pieces_table, repeated
    from generate_scale import run
    from msr_synth import realistic_trace

    OUT.mkdir(exist_ok=True)
    unit = 2_000_000
    base = realistic_trace(unit)
    files = {}
    for name, n in (("small", args.small), ("large", args.large)):
        files[name] = OUT / f"sim-scale-{name}.parquet"
        print(f"writing {n // unit * unit:,} requests to {files[name]} ...", flush=True)
        repeated(base, max(1, n // unit), files[name])
    small_n = max(1, args.small // unit) * unit
    large_n = max(1, args.large // unit) * unit
    figures = OUT / "sim-scale.json"
    device = ["--device", "ssd-nvme", "--json", str(figures)]
    whole, pieces = [], []
    try:
        for _ in range(args.pairs):
            whole.append(run(["simulate", str(files["small"]), *device], quiet=True))
            want = json.loads(figures.read_text())
            pieces.append(run(["simulate", str(files["small"]), *device, "--memory", "256M"], quiet=True))
            got = json.loads(figures.read_text())
            assert got["requests"] == want["requests"] == small_n and got["iops"] == want["iops"]
        large = run(["simulate", str(files["large"]), *device, "--memory", "256M"], quiet=True)
        out = OUT / "sim-scale-out.parquet"
        written = run(
            ["simulate", str(files["large"]), *device, "--memory", "256M", "-o", str(out)], quiet=True
        )
        out.unlink()
    finally:
        for f in (*files.values(), figures):
            f.unlink(missing_ok=True)
    more = [("in pieces", large_n, large), ("in pieces, -o Parquet", large_n, written)]
    peak_small = pieces_table(whole, pieces, small_n, more)
    growth = (large[1] - peak_small) / (large_n - small_n)
    print(f"memory growth in pieces from {small_n:,} to {large_n:,} requests: {growth:.2f} B a request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
