"""Open-loop precision: a Poisson schedule at 10,000 IOPS of 4 KiB random O_DIRECT reads for
--seconds (default 60), on each engine, judged against the issue's bars:

- achieved rate within 1 % of the schedule's;
- issue-time error against the schedule (lag), p99 <= 50 us (HDR histogram);
- actual inter-issue gaps at KS distance <= 0.02 from the exponential of the schedule's rate
  (the schedule's own distance is printed as the floor);
- no cumulative drift: the last request within 1 ms of its scheduled time.

fio is not run here: it has no open loop to compare (before each rate sleep it waits for its
in-flight I/O), and its issue times are not logged finer than a millisecond; the issue quotes
its figures (KS 0.04-0.06, replay drift 0.2-0.4 %).

    python benches/openloop.py [--seconds 60] [--rate 10000]
    python benches/openloop.py --neighbour --seconds 10 --rounds 7   # a busy process holds one CPU

With --neighbour a spinning process is pinned to one CPU for the whole benchmark and the
default engine (io_uring, which uses a kernel polling thread only when a CPU is idle) is run
beside io_uring --no-sqpoll and psync, in --rounds rounds (default 3), the engines' order
rotating; the bar is that the default's median lag p99 stays within 1.2x the best of the three
medians.

Every run starts after `sync`: dirty page cache written back while a run reads (a build's or a
benchmark's output) queues its reads behind the writes on this VM's one virtual disk, and made
whichever run it fell on collapse (once the first run's rate 53 % low and its lag 12 s; with
2 GB dirty before a round, the run it fell on had a lag p99 of 1.05 s), whatever its engine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FILE_BYTES = 1 << 30


def ks_exponential(gaps: np.ndarray, mean: float) -> float:
    """Kolmogorov-Smirnov distance between the gaps' empirical CDF and Exp(mean)."""
    x = np.sort(gaps)
    n = len(x)
    cdf = 1 - np.exp(-x / mean)
    return float(max((np.arange(1, n + 1) / n - cdf).max(), (cdf - np.arange(n) / n).max()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="length of each run (default 60)")
    ap.add_argument("--rate", type=float, default=10_000.0, help="scheduled IOPS (default 10,000)")
    ap.add_argument("--engines", default="io_uring,psync", help="engines to run (default io_uring,psync)")
    ap.add_argument("--neighbour", action="store_true", help="a busy process on one CPU throughout")
    ap.add_argument("--rounds", type=int, default=3, help="with --neighbour: rounds of the three (default 3)")
    args = ap.parse_args()
    neighbour = busy_neighbour() if args.neighbour else None
    try:
        return bench(args)
    finally:
        if neighbour is not None:
            neighbour.kill()


def busy_neighbour():
    """A process spinning on the last CPU (another program's busy thread)."""
    import os
    import subprocess

    cpu = max(os.sched_getaffinity(0))
    return subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"]
    )


def bench(args) -> int:

    sys.path.insert(0, str(HERE))
    from bench_common import OUT

    from iomimic import Trace
    from iomimic.realio import engine_used, run

    OUT.mkdir(exist_ok=True)
    target = str(OUT / "realio.dat")
    if not Path(target).exists():
        run(Trace(ts_ns=[0], offset=[0], size=[4096], op=[0]), [target], size=FILE_BYTES)
    n = int(args.seconds * args.rate)
    rng = np.random.default_rng(7)
    gaps = rng.exponential(1e9 / args.rate, n)
    gaps[0] = 0
    schedule = np.cumsum(gaps).astype(np.int64)
    t = Trace(
        ts_ns=schedule,
        offset=rng.integers(0, FILE_BYTES // 4096, n) * 4096,
        size=np.full(n, 4096),
        op=np.zeros(n),
    )
    mean_gap = 1e9 / args.rate
    floor = ks_exponential(np.diff(schedule).astype(np.float64), mean_gap)
    print(f"open loop: {n:,} Poisson-scheduled 4 KiB random O_DIRECT reads at {args.rate:,.0f} IOPS")
    print(f"(the schedule itself sits at KS {floor:.4f} from the exponential)")
    columns = " ".join(f"{c:>9s}" for c in ("rate err", "lag p50", "lag p99"))
    print(f"{'engine':10s} {columns} {'KS':>7s} {'last lag':>10s} {'CPU/IO':>9s}  bars met")
    results = {}
    runs = [(name, {}) for name in args.engines.split(",")]
    if args.neighbour:
        three = [("io_uring", {}), ("io_uring", {"sqpoll": False}), ("psync", {})]
        runs = [three[(r + k) % 3] for r in range(max(args.rounds, 1)) for k in range(3)]
    p99s: dict[str, list[float]] = {}
    for name, extra in runs:
        engine = engine_used(name)
        if name == "io_uring" and engine != "io_uring":
            print(f"{name:10s} not available here")
            continue
        os.sync()  # no write-back of earlier output competing with this run's reads
        done, f = run(t, [target], engine=engine, direct=True, **extra)
        engine = engine + ("/no-sqpoll" if extra else "")
        issue = done.ts_ns.astype(np.float64)
        ks = ks_exponential(np.diff(issue), mean_gap)
        rate_err = f["iops"] / f["scheduled_iops"] - 1
        lag, last = f["lag_us"], f["last_request_lag_us"]
        bars = {
            "rate within 1 %": bool(abs(rate_err) <= 0.01),
            "lag p99 <= 50 us": lag["p99"] <= 50,
            "KS <= 0.02": bool(ks <= 0.02),
            "last request within 1 ms": last is not None and last <= 1000,
        }
        met = sum(bars.values())
        print(
            f"{engine:10s} {rate_err:>+9.2%} {lag['p50']:>7.1f}us {lag['p99']:>7.1f}us {ks:>7.4f}"
            f" {last:>8.1f}us {f['cpu_us_per_io']:>7.1f}us  {met}/4"
            + ("" if met == 4 else f" (missed: {', '.join(k for k, v in bars.items() if not v)})")
        )
        p99s.setdefault(engine, []).append(lag["p99"])
        results[engine] = {
            "rate_error": rate_err,
            "lag_us": lag,
            "ks": ks,
            "last_lag_us": last,
            "cpu_us_per_io": f["cpu_us_per_io"],
            "submission": f.get("submission"),
            "bars": bars,
        }
    if "io_uring" in results:
        print(f"(io_uring submissions by: {results['io_uring']['submission']}; its CPU includes that thread)")
    if args.neighbour and "io_uring" in results:
        medians = {e: statistics.median(v) for e, v in p99s.items()}
        shown = ", ".join(f"{e} {m:.0f}us" for e, m in medians.items())
        best = min(medians.values())
        ratio = medians["io_uring"] / best if best > 0 else 1.0
        print(f"lag p99, medians of {len(p99s['io_uring'])} rounds: {shown}")
        print(f"busy neighbour: default engine lag p99 / best of three = {ratio:.2f} (bar <= 1.2)")
        results["neighbour"] = {"p99_us": p99s, "ratio": ratio}
    name = "openloop-neighbour.json" if args.neighbour else "openloop.json"
    (OUT / name).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
