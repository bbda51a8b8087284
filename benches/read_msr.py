"""Read benchmark: iomimic against polars.read_csv on the same 5-million-line MSR CSV.

Each reader runs in a fresh interpreter (so peak memory is its own), a few times; the best time
counts. Prints the time ratio polars/iomimic (>= 1.0 means iomimic is at least as fast) and the
peak memory each needed above an idle interpreter with the same imports.

    python benches/read_msr.py [--lines 5000000] [--repeat 3]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Each snippet reads the file once and prints: seconds, peak RSS growth in bytes, rows.
# Peak memory is the kernel's high-water mark of this process image (VmHWM), which a fresh exec
# starts anew; ru_maxrss would not do, as Linux carries it over from the parent across exec.
RUNNER = """
import sys, time
import numpy, polars, pyarrow, iomimic
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
base = hwm()
path = sys.argv[1]
t0 = time.perf_counter()
{read}
secs = time.perf_counter() - t0
print(secs, hwm() - base, rows)
"""
READERS = {
    "iomimic": "t = iomimic.read_trace(path); rows = len(t)",
    "polars.read_csv": "df = polars.read_csv(path, has_header=False); rows = df.height",
}


def run(reader: str, path: Path) -> tuple[float, int, int]:
    code = RUNNER.format(read=READERS[reader])
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    secs, peak, rows = out.stdout.split()
    return float(secs), int(peak), int(rows)


def main() -> int:
    sys.path.insert(0, str(HERE))
    from bench_common import OUT, bench_args, msr_trace

    args = bench_args(__doc__)

    path = msr_trace(args.lines)
    size = path.stat().st_size
    with open(path, "rb") as f:  # warm the page cache so both readers start equal
        while f.read(1 << 24):
            pass

    results = {}
    for reader in READERS:
        runs = [run(reader, path) for _ in range(args.repeat)]
        best = min(runs)
        results[reader] = {"seconds": best[0], "peak_bytes": max(r[1] for r in runs), "rows": best[2]}
        assert best[2] == args.lines, f"{reader} read {best[2]} rows"

    mine, ref = results["iomimic"], results["polars.read_csv"]
    ratio = ref["seconds"] / mine["seconds"]
    columns_bytes = args.lines * (8 + 8 + 4 + 1 + 4 + 4 + 8)  # the Trace's columns, latency included
    mib = size / 2**20
    print(f"\nread {args.lines:,} MSR lines ({mib:,.0f} MiB), best of {args.repeat}, {os.cpu_count()} cores")
    print(f"{'reader':<18}{'seconds':>9}{'MB/s':>9}{'peak MiB':>10}")
    for name, r in results.items():
        print(
            f"{name:<18}{r['seconds']:>9.3f}{size / r['seconds'] / 1e6:>9.0f}{r['peak_bytes'] / 2**20:>10.0f}"
        )
    print(f"ratio polars/iomimic: {ratio:.2f}  (target >= 1.0)")
    print(f"iomimic peak memory / output columns: {mine['peak_bytes'] / columns_bytes:.2f}")
    (OUT / "read_msr.json").write_text(
        json.dumps({"lines": args.lines, "file_bytes": size, "results": results, "ratio": ratio}, indent=2)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
