"""What the benchmark scripts share: the synthetic MSR trace they all read, best-of timing, and
for the scale benchmarks a trace repeated end to end and the table of whole against in-pieces
runs they print."""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from msr_synth import write_msr

OUT = Path(__file__).resolve().parent.parent / "bench-out"


def msr_trace(lines: int) -> Path:
    """The benchmark trace of `lines` MSR lines, written once into bench-out/."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"msr-{lines}.csv"
    if not path.exists():
        print(f"writing {lines:,} MSR lines to {path} ...", flush=True)
        write_msr(str(path), lines)
    return path


def best_of(repeat: int, fn) -> tuple[float, object]:
    """The shortest of `repeat` timed calls of `fn`, and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def bench_trace(doc: str | None) -> tuple[argparse.Namespace, object]:
    """The options every benchmark takes, and the benchmark trace (of --lines) read by iomimic."""
    args = bench_args(doc)
    import iomimic

    return args, iomimic.read_trace(msr_trace(args.lines))


def bench_args(doc: str | None) -> argparse.Namespace:
    """--lines and --repeat, the options every benchmark takes."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=5_000_000, help="requests in the trace (default 5,000,000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the best counts")
    return ap.parse_args()


Run = tuple[float, int]  # seconds, peak bytes


def pieces_table(whole: list[Run], pieces: list[Run], small_n: int, more: list[tuple[str, int, Run]]) -> int:
    """Prints the runs of a command read whole (the reference) and in pieces on the small file
    (interleaved pairs of (seconds, peak bytes): their medians), then the ``more`` runs as
    (label, requests, (seconds, peak)), and the speed ratio; returns the pieces' median peak."""
    t_whole = statistics.median(w for w, _ in whole)
    t_pieces = statistics.median(w for w, _ in pieces)
    peak_small = statistics.median(m for _, m in pieces)
    rows = [
        ("whole (reference)", small_n, (t_whole, statistics.median(m for _, m in whole))),
        ("in pieces", small_n, (t_pieces, peak_small)),
        *more,
    ]
    width = max(len(label) for label, _, _ in rows) + 4
    print(f"\n{'run':<{width}}{'requests':>13}{'seconds':>9}{'peak RSS':>11}")
    for label, n, (t, m) in rows:
        print(f"{label:<{width}}{n:>13,}{t:>9.1f}{m / 2**20:>9.0f} M")
    print(f"speed in pieces / whole (medians of {len(whole)} interleaved pairs): {t_whole / t_pieces:.2f}x")
    return peak_small


def repeated(trace, times: int, path: Path, move: int = 0) -> None:
    """``trace`` written ``times`` times end to end (each copy after the last in time, and its
    offsets ``move`` bytes on from the last's)."""
    import pyarrow.parquet as pq

    table = trace.to_arrow()
    gap = int(trace.ts_ns[-1]) + 1_000
    with pq.ParquetWriter(path, table.schema, compression="zstd") as writer:
        for k in range(times):
            copy = table.set_column(0, "ts_ns", [table.column("ts_ns").to_numpy() + k * gap])
            if move:
                at = copy.schema.get_field_index("offset")
                copy = copy.set_column(at, "offset", [copy.column("offset").to_numpy() + k * move])
            writer.write_table(copy, row_group_size=1 << 20)
