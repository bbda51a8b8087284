"""Parquet benchmark: `iomimic info` against polars reading the same file and counting the same.

Writes a 10-million-request MSR-like trace (26 volumes, mixed sizes, latencies; by
`msr_synth.py`) as Parquet with iomimic's writer into a temporary folder, warms the page cache,
then times whole processes: `iomimic info FILE` and a polars one-liner that reads the file with
`pl.read_parquet` and computes what `info` prints (rows, reads/writes/trims/flushes, bytes read
and written, requests per volume, streams, time span). Five pairs, the order alternating; the
table gives medians and the ratio is the median of the pairs' ratios (polars/iomimic; >= 1.0
means iomimic is at least as fast), so a drift of this shared machine favours neither. With
--before, a third command (an older build's `iomimic`) joins each round, the order turning.

    python benches/read_parquet.py [--lines 10000000] [--repeat 5] [--before OLD_IOMIMIC]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HOSTS = ("hm", "mds", "prn", "proj", "prxy", "rsrch", "src1", "src2", "stg", "ts", "usr", "wdev", "web")

# What `iomimic info` prints, from the same file; printed as JSON so the run can check both agree.
POLARS = """
import json, sys
import polars as pl
df = pl.read_parquet(sys.argv[1])
op, size = pl.col("op"), pl.col("size").cast(pl.UInt64)
s = df.select(
    requests=pl.len(), reads=(op == 0).sum(), writes=(op == 1).sum(), trims=(op == 2).sum(),
    flushes=(op == 3).sum(), bytes_read=size.filter(op == 0).sum(),
    bytes_written=size.filter(op == 1).sum(), streams=pl.col("stream").n_unique(),
    span_ns=pl.col("ts_ns").max() - pl.col("ts_ns").min(),
).row(0, named=True)
per_volume = df.group_by("volume").len().sort("volume")
s["volumes"] = dict(zip(per_volume["volume"].to_list(), per_volume["len"].to_list()))
print(json.dumps(s))
"""


def write_parquet(path: Path, n: int) -> None:
    """`n` requests over 13 hosts x 2 disks, written by iomimic as Parquet."""
    import pyarrow as pa
    from msr_synth import msr_frame

    import iomimic

    f = msr_frame(n, hosts=HOSTS)
    ts = f["Timestamp"].to_numpy()
    volume = (f["Hostname"] + "_" + f["DiskNumber"].cast(str)).to_arrow()
    table = pa.table(
        {
            "ts_ns": (ts - ts[0]).astype("uint64") * 100,  # FILETIME ticks of 100 ns
            "offset": f["Offset"].to_numpy().astype("uint64"),
            "size": f["Size"].to_numpy().astype("uint32"),
            "op": (f["Type"] == "Write").to_numpy().astype("uint8"),
            "volume": volume,
            "latency_ns": f["ResponseTime"].to_numpy().astype("uint64") * 100,
        }
    )
    iomimic.write_trace(iomimic.Trace.from_arrow(table), path)


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) and stdout of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout


def main() -> int:
    sys.path.insert(0, str(HERE))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--lines", type=int, default=10_000_000, help="requests in the trace (default 10,000,000)"
    )
    ap.add_argument("--repeat", type=int, default=5, help="pairs of runs (default 5)")
    ap.add_argument("--iomimic", default=str(Path(sys.executable).with_name("iomimic")), help="the command")
    ap.add_argument("--before", help="another iomimic command (an older build) to time in the same rounds")
    args = ap.parse_args()

    # polars runs from its wheel's cached bytecode; an iomimic checkout may have none (this VM
    # sets PYTHONDONTWRITEBYTECODE), and compiling its modules each run cost ~0.1 s a process
    import compileall

    import iomimic

    compileall.compile_dir(Path(iomimic.__file__).parent, quiet=1)

    with tempfile.TemporaryDirectory(prefix="iomimic-bench-") as tmp:
        path = Path(tmp) / "trace.parquet"
        print(f"writing {args.lines:,} requests to {path} ...", flush=True)
        write_parquet(path, args.lines)
        size = path.stat().st_size
        with open(path, "rb") as f:  # warm the page cache so both readers start equal
            while f.read(1 << 24):
                pass
        ours = [args.iomimic, "info", str(path)]
        theirs = [sys.executable, "-c", POLARS, str(path)]

        # both must have counted the same before their times mean anything
        mine = json.loads(timed([*ours, "--json", "-"])[2])
        ref = json.loads(timed(theirs)[2])
        assert mine["requests"] == ref["requests"] == args.lines, (mine["requests"], ref["requests"])
        for key in ("reads", "writes", "trims", "flushes", "bytes_read", "bytes_written", "streams"):
            assert mine[key] == ref[key], (key, mine[key], ref[key])
        assert round(mine["span_s"] * 1e9) == ref["span_ns"]
        assert {v["id"]: v["requests"] for v in mine["volumes"]} == {
            int(k): c for k, c in ref["volumes"].items()
        }

        commands = {"iomimic info": ours, "polars read_parquet + counts": theirs}
        if args.before:
            commands["iomimic info, --before"] = [args.before, "info", str(path)]
        names = list(commands)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for i in range(args.repeat):
            # the order turns each round, so no command always runs first (or after another)
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                runs[name].append(timed(commands[name])[:2])
            print(f"  round {i + 1}: " + ", ".join(f"{n} {runs[n][-1][0]:.3f} s" for n in order), flush=True)

    polars = runs["polars read_parquet + counts"]
    ratios = {
        name: statistics.median(p[0] / m[0] for m, p in zip(runs[name], polars, strict=True))
        for name in names
        if name.startswith("iomimic")
    }
    print(
        f"\nParquet info, {args.lines:,} requests ({size / 2**20:,.0f} MiB, zstd), whole processes, "
        f"{args.repeat} rounds, order turning, medians, {os.cpu_count()} cores"
    )
    print(f"{'command':<30}{'seconds':>9}{'CPU s':>8}")
    for name in names:
        wall, cpu = (statistics.median(r[k] for r in runs[name]) for k in (0, 1))
        print(f"{name:<30}{wall:>9.3f}{cpu:>8.2f}")
    for name, ratio in ratios.items():
        print(f"ratio polars / {name} (median of rounds): {ratio:.2f}  (target >= 1.0)")
    out = HERE.parent / "bench-out"
    out.mkdir(exist_ok=True)
    (out / "read_parquet.json").write_text(
        json.dumps({"lines": args.lines, "file_bytes": size, "runs": runs, "ratios": ratios}, indent=2)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
