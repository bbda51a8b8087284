"""Characterization past memory: a 200 M-request Parquet dataset read a row group at a time
(issue 19).

Trains a model of a realistic trace (`msr_synth.realistic_trace`: 16 volumes, 64 streams,
re-use, mixed sizes), generates --large requests (default 200 M) of it into partitioned Parquet
in bench-out/, and cuts its first --small requests (default 10 M) into a slice. Then, each
`iomimic characterize` a process of its own (wall time, peak RSS from its rusage):
- the slice read whole (the in-memory reference speed; the median of three runs, one before
  the dataset's and two after);
- the dataset with `--memory 2G` (read in pieces);
- the slice with a small --memory (read in pieces) and the slice's exact curve, to compare.

Bars: the dataset's peak RSS under 2 GB; its requests/s at least 0.8 x the slice's read whole;
the slice's figures read in pieces equal to those read whole where exact (counts, sizes,
sequentiality, spatial, fluctuation, gap mean and CV); its percentiles within 0.1 %; and the
slice's curve sampled at the dataset's rate within 0.01 of the exact curve. The outputs are
deleted.

    python benches/characterize_scale.py [--small 10000000] [--large 200000000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Figures of a profile that are estimates when read in pieces (histograms, binned KS).
ESTIMATED = {"percentiles_us", "fit", "latency_us", "by_op"}
#: Keys left out of the comparison: the curves (compared on their own) and the options asked.
APART = ESTIMATED | {"mrc", "options"}


def differences(a, b, path: str = "") -> list[str]:
    """Where two profiles' exact figures differ (floats to 1e-9 relative)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a if k not in APART for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        ok = a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)
        return [] if ok else [f"{path}: {a} vs {b}"]
    return [] if a == b else [f"{path}: {a} vs {b}"]


def worst_percentile(a, b, path: str = "") -> float:
    """The largest relative difference of the percentiles of two profiles."""
    if isinstance(a, dict):
        if "p50" in a and "max" in a:
            return max(
                abs(a[k] - b[k]) / max(abs(a[k]), 1e-300) for k in ("p50", "p90", "p99", "p999", "max")
            )
        return max((worst_percentile(a[k], b[k]) for k in a if isinstance(a[k], dict)), default=0.0)
    return 0.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--small", type=int, default=10_000_000)
    p.add_argument("--large", type=int, default=200_000_000)
    args = p.parse_args()
    sys.path.insert(0, str(HERE))
    import pyarrow.parquet as pq
    from bench_common import OUT
    from generate_scale import run
    from msr_synth import realistic_trace

    from iomimic.model import train

    OUT.mkdir(exist_ok=True)
    model_path, data = OUT / "char-scale-model.json", OUT / "char-scale"
    slice_path = OUT / "char-scale-slice.parquet"
    print("training a model of a realistic 1 M-request trace (16 volumes, 64 streams) ...", flush=True)
    train(realistic_trace(1_000_000), levels=1, states=4).save(model_path)
    shutil.rmtree(data, ignore_errors=True)
    print(f"generating {args.large:,} requests into {data}/ ...", flush=True)
    run(["generate", str(model_path), "-o", f"{data}/", "-n", str(args.large), "--seed", "1"])
    # the slice: the dataset's first requests, with its name tables
    parts = sorted(data.glob("*.parquet"))
    schema = pq.read_schema(parts[0])
    with pq.ParquetWriter(slice_path, schema, compression="zstd") as w:
        left = args.small
        for part in parts:
            f = pq.ParquetFile(part)
            for i in range(f.num_row_groups):
                g = f.read_row_group(i).slice(0, left)
                w.write_table(g)
                left -= g.num_rows
                if left <= 0:
                    break
            if left <= 0:
                break

    def characterize(target: Path, name: str, *options: str) -> tuple[float, int, dict]:
        out = OUT / f"char-scale-{name}.json"
        wall, peak = run(["characterize", str(target), "--json", str(out), *options], quiet=True)
        profile = json.loads(out.read_text())
        out.unlink()
        return wall, peak, profile

    # the reference three times, around the long run (this VM varies by 20 %): its median
    print("characterizing the slice read whole ...", flush=True)
    refs = [characterize(slice_path, "whole")]
    print(f"characterizing {args.large:,} requests within --memory 2G ...", flush=True)
    t_big, peak_big, big = characterize(Path(f"{data}/"), "big", "--memory", "2G")
    refs += [characterize(slice_path, "whole") for _ in range(2)]
    t_ref, peak_ref, whole = sorted(refs, key=lambda r: r[0])[1]
    rate = big["mrc"]["sampling_rate"]
    print("characterizing the slice in pieces, and its exact curve ...", flush=True)
    _, _, pieces = characterize(slice_path, "pieces", "--memory", "256M", "--mrc-sampling", str(rate))
    _, _, exact = characterize(slice_path, "exact", "--mrc", "trace", "--mrc-budget", str(1 << 28))
    shutil.rmtree(data)
    slice_path.unlink()

    speed = (args.large / t_big) / (args.small / t_ref)
    diffs = differences(whole, pieces)
    worst = worst_percentile(whole, pieces)
    mrc_off = max(
        abs(e["miss_ratio"] - s["miss_ratio"]) for e, s in zip(exact["mrc"]["curve"], pieces["mrc"]["curve"])
    )
    print(f"\n{'':<34}{'requests':>14}{'seconds':>9}{'M req/s':>9}{'peak RSS':>11}")
    print(
        f"{'slice read whole (reference)':<34}{args.small:>14,}{t_ref:>9.1f}{args.small / t_ref / 1e6:>9.2f}"
        f"{peak_ref / 2**20:>9.0f} M"
    )
    print(
        f"{'dataset in pieces, --memory 2G':<34}{args.large:>14,}{t_big:>9.1f}"
        f"{args.large / t_big / 1e6:>9.2f}"
        f"{peak_big / 2**20:>9.0f} M"
    )
    print(f"peak RSS {peak_big / 1e9:.2f} GB (bar < 2 GB): {'met' if peak_big < 2e9 else 'NOT met'}")
    print(f"speed vs in memory {speed:.2f} (bar >= 0.8): {'met' if speed >= 0.8 else 'NOT met'}")
    print(
        f"slice in pieces vs whole: {len(diffs)} exact figures differ{': ' + diffs[0] if diffs else ''}; "
        f"percentiles within {100 * worst:.3f} %"
    )
    stated = pieces["mrc"]["sampling_error"]
    print(
        f"slice curve sampled at {rate:.4f} (the dataset's rate) vs exact: off by {mrc_off:.4f} "
        f"(stated ±{stated:.4f}; bar 0.01: {'met' if mrc_off <= 0.01 else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
