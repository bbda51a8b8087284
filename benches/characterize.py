"""Characterization benchmark: iomimic.characterize against a polars reference pipeline.

On the 5-million-request MSR trace of `read_msr.py` (three hosts x two disks), times:
- the reference: a polars pipeline computing read fraction, the size histogram and the
  sequential fraction (requests starting where the previous request of the same volume ended);
- iomimic.characterize without miss-ratio curves (every other figure, for the trace, each volume
  and each stream), which must reach 5 M requests/s on one core (it runs on one thread);
- the exact miss-ratio curve of the whole trace, reported as block accesses per second.

    python benches/characterize.py [--lines 5000000] [--repeat 3]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def polars_reference(df) -> dict:
    import polars as pl

    rw = df.filter(pl.col("op") < 2)
    read_fraction = (rw["op"] == 0).mean()
    sizes = df.group_by("size").len().sort("len", descending=True)
    seq = (
        df.with_columns((pl.col("offset") + pl.col("size")).alias("end"))
        .with_columns(pl.col("end").shift(1).over("volume").alias("prev_end"))
        .select((pl.col("offset") == pl.col("prev_end")).fill_null(False).mean())
        .item()
    )
    return {"read_fraction": read_fraction, "sizes": sizes.height, "sequential_fraction": seq}


def main() -> int:
    sys.path.insert(0, str(HERE))
    from bench_common import OUT, bench_trace, best_of

    args, trace = bench_trace(__doc__)

    import polars as pl

    import iomimic

    df = trace.to_polars()
    n = len(trace)

    ref = polars_reference(df)
    profile = iomimic.characterize(trace, mrc="none")
    # both compute the same three figures
    assert abs(ref["read_fraction"] - profile["read_fraction"]) < 1e-12
    assert abs(ref["sequential_fraction"] - profile["sequential_fraction"]) < 1e-12
    assert ref["sizes"] == profile["size"]["distinct_sizes"]

    t_ref, _ = best_of(args.repeat, lambda: polars_reference(df))
    t_all, _ = best_of(args.repeat, lambda: iomimic.characterize(trace, mrc="none"))
    t_mrc = best_of(args.repeat, lambda: iomimic.characterize(trace, mrc="trace"))[0] - t_all
    accesses = iomimic.characterize(trace, mrc="trace")["mrc"]["accesses"]

    threads = pl.thread_pool_size()
    print(f"\ncharacterize {n:,} requests ({len(trace.volumes)} volumes), best of {args.repeat}")
    print(f"{'work':<52}{'seconds':>9}{'M req/s':>9}")
    print(f"{f'polars reference, 3 figures ({threads} threads)':<52}{t_ref:>9.3f}{n / t_ref / 1e6:>9.2f}")
    print(f"{'iomimic, every figure but the MRC (1 thread)':<52}{t_all:>9.3f}{n / t_all / 1e6:>9.2f}")
    print(f"{'iomimic, exact MRC of the trace':<52}{t_mrc:>9.3f}{n / t_mrc / 1e6:>9.2f}")
    print(f"ratio polars/iomimic: {t_ref / t_all:.2f}  (iomimic computes every figure, the reference three)")
    print(f"iomimic figures: {n / t_all / 1e6:.2f} M requests/s (target >= 5)")
    print(f"MRC: {accesses / t_mrc / 1e6:.2f} M block accesses/s ({accesses:,} accesses)")
    (OUT / "characterize.json").write_text(
        json.dumps(
            {
                "requests": n,
                "reference_seconds": t_ref,
                "figures_seconds": t_all,
                "mrc_seconds": t_mrc,
                "mrc_accesses": accesses,
                "ratio": t_ref / t_all,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
