"""Training past memory: a model trained on a trace read a piece at a time (three passes) is
the one the whole trace gives, its memory set by the places the threads touch rather than by
the requests (issue 19), at a speed near the whole run's.

Writes a realistic trace (`msr_synth.realistic_trace`: 16 volumes, 64 streams, re-use, mixed
sizes) repeated end to end into Parquet files: --small and --large requests (default 4 M and
16 M) whose copies touch the same places (a long trace of one workload), and --large requests
whose every copy is moved 512 bytes on (every place new: the worst case, memory growing with the
places). Then, as whole processes measuring their own peak resident memory and wall time:
`iomimic model train SMALL --levels 2 --states 8` read whole (the reference) and with
`--memory 64M` (in pieces), as interleaved pairs (medians of --pairs), checking the two models
equal; and each large file in pieces. Prints the speed ratio (pieces over whole, same run),
each run's peak, the growth per request from the small file to the large one, and per place
new. The files are deleted.

    python benches/train_scale.py [--small 4000000] [--large 16000000] [--pairs 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--small", type=int, default=4_000_000)
    p.add_argument("--large", type=int, default=16_000_000)
    p.add_argument("--pairs", type=int, default=2)
    args = p.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_common import OUT, pieces_table, repeated
    from generate_scale import run
    from msr_synth import realistic_trace

    OUT.mkdir(exist_ok=True)
    unit = 2_000_000
    base = realistic_trace(unit)
    small_n = max(1, args.small // unit) * unit
    large_n = max(1, args.large // unit) * unit
    files = {"small": OUT / "train-scale-small.parquet", "large": OUT / "train-scale-large.parquet"}
    files["moved"] = OUT / "train-scale-moved.parquet"
    for name, n, move in (("small", small_n, 0), ("large", large_n, 0), ("moved", large_n, 512)):
        print(f"writing {n:,} requests to {files[name]} ...", flush=True)
        repeated(base, n // unit, files[name], move)
    models = {k: OUT / f"train-scale-{k}.json" for k in ("whole", "pieces", "large")}
    opts = ["--levels", "2", "--states", "8"]
    whole, pieces = [], []
    try:
        for _ in range(args.pairs):
            whole.append(
                run(["model", "train", str(files["small"]), "-o", str(models["whole"]), *opts], True)
            )
            pieces.append(
                run(
                    [
                        "model",
                        "train",
                        str(files["small"]),
                        "-o",
                        str(models["pieces"]),
                        *opts,
                        "--memory",
                        "64M",
                    ],
                    True,
                )
            )
            assert models["whole"].read_text() == models["pieces"].read_text(), "the models differ"
        budget = [*opts, "--memory", "64M"]
        large = run(["model", "train", str(files["large"]), "-o", str(models["large"]), *budget], True)
        moved = run(["model", "train", str(files["moved"]), "-o", str(models["large"]), *budget], True)
    finally:
        for f in (*files.values(), *models.values()):
            f.unlink(missing_ok=True)
    more = [
        ("in pieces, the same places", large_n, large),
        ("in pieces, every copy's places new", large_n, moved),
    ]
    peak_small = pieces_table(whole, pieces, small_n, more)
    growth = (large[1] - peak_small) / (large_n - small_n)
    span = f"{small_n:,} to {large_n:,} requests"
    print(f"memory growth in pieces from {span}, the same places: {growth:.2f} B a request")
    places = (
        base.to_arrow().select(["volume", "offset"]).group_by(["volume", "offset"]).aggregate([]).num_rows
    )
    new_places = places * (large_n // unit - 1)
    per_place = (moved[1] - large[1]) / new_places
    print(f"every copy's places new ({new_places:,} more places): {per_place:.0f} B a place")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
