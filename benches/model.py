"""Model benchmark: training and generation speed, against characterization of the same trace.

On the 5-million-request MSR trace of `read_msr.py`, best of --repeat runs:
- the reference: `iomimic.characterize(mrc="none")` of the trace (one pass over it);
- training with fixed levels and states (1 x 4), and with automatic choice of both;
- generation of 5 M requests from the trained model, with the temporal-locality (reuse)
  extension on and off.
Targets: training >= 2 M requests/s, generation >= 10 M requests/s.

Then on a realistic trace (`msr_synth.realistic_trace`: 16 volumes, 64 streams, reuse, mixed
sizes; --lines / 2 requests), each of characterize (every curve), train (levels and states
chosen) and generate timed once, with the process's CPU time over the wall time (bar: at least
1.6 on 2 idle cores), and generation's rate over characterize's (every figure but the MRC) on
the same trace (bar: at least 0.5). Last, what re-use by a stated population costs, as medians
of three interleaved pairs: training 1 x 4 with the population's choice against
`population=False` (the choice skipped), and generating from the model with its population
against the same model without it.

    python benches/model.py [--lines 5000000] [--repeat 3]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    sys.path.insert(0, str(HERE))
    from bench_common import OUT, bench_trace, best_of

    args, trace = bench_trace(__doc__)

    import iomimic
    from iomimic.model import train

    n = len(trace)

    t_ref, _ = best_of(args.repeat, lambda: iomimic.characterize(trace, mrc="none"))
    t_fixed, model = best_of(args.repeat, lambda: train(trace, levels=1, states=4))
    t_auto, auto = best_of(1, lambda: train(trace))
    t_gen, synth = best_of(args.repeat, lambda: model.generate(n, seed=1))
    t_gen_off, _ = best_of(args.repeat, lambda: model.generate(n, seed=1, reuse=False))
    assert len(synth) == n

    rows = [
        ("reference: characterize, every figure but the MRC", t_ref),
        ("train, 1 level x 4 states", t_fixed),
        (f"train, levels and states chosen ({auto.levels} x {auto.states})", t_auto),
        ("generate, temporal-locality extension on", t_gen),
        ("generate, extension off", t_gen_off),
    ]
    print(f"\nmodel {n:,} requests ({len(trace.volumes)} volumes), best of {args.repeat}")
    print(f"{'work':<60}{'seconds':>9}{'M req/s':>9}{'vs ref':>8}")
    for name, secs in rows:
        print(f"{name:<60}{secs:>9.3f}{n / secs / 1e6:>9.2f}{t_ref / secs:>8.2f}")
    print(f"training: {n / t_fixed / 1e6:.2f} M requests/s (target >= 2)")
    with_reuse, without = n / t_gen / 1e6, n / t_gen_off / 1e6
    print(f"generation: {with_reuse:.2f} M requests/s with reuse, {without:.2f} without (target >= 10)")
    realistic = realistic_run(max(n // 2, 10_000))
    (OUT / "model.json").write_text(
        json.dumps({"requests": n, "seconds": dict(rows), "realistic": realistic}, indent=2)
    )
    return 0


def realistic_run(n: int) -> dict:
    """CPU over wall for each command, and generation against characterization, on a
    realistic many-volume trace."""
    import time

    from msr_synth import realistic_trace

    import iomimic
    from iomimic.model import train

    trace = realistic_trace(n)

    def timed(fn):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        return time.perf_counter() - wall, time.process_time() - cpu, result

    ref, _, _ = timed(lambda: iomimic.characterize(trace, mrc="none"))
    steps = {
        "characterize": timed(lambda: iomimic.characterize(trace)),
        "train": timed(lambda: train(trace)),
    }
    model = steps["train"][2]
    steps["generate"] = timed(lambda: model.generate(n, seed=1))
    print(f"\nrealistic trace: {n:,} requests, {len(trace.volumes)} volumes, "
          f"{len(set(trace.stream.tolist()))} streams; model {model.levels} x {model.states}")  # fmt: skip
    print(f"{'work':<40}{'seconds':>9}{'M req/s':>9}{'CPU/wall':>10}")
    print(f"{'reference: characterize, no MRC':<40}{ref:>9.3f}{n / ref / 1e6:>9.2f}")
    for name, (wall, cpu, _) in steps.items():
        print(f"{name:<40}{wall:>9.3f}{n / wall / 1e6:>9.2f}{cpu / wall:>10.2f}")
    ratio = ref / steps["generate"][0]
    least = min(cpu / wall for wall, cpu, _ in steps.values())
    print(f"generation / characterize reference: {ratio:.2f} (bar >= 0.5); "
          f"CPU/wall at least {least:.2f} (bar >= 1.6)")  # fmt: skip
    population = population_cost(trace, model)
    return {"requests": n, "reference_s": ref, "generate_vs_reference": ratio, "population": population,
            **{f"{k}_s": w for k, (w, _, _) in steps.items()},
            **{f"{k}_cpu_per_wall": c / w for k, (w, c, _) in steps.items()}}  # fmt: skip


def population_cost(trace, model) -> dict:
    """Training with the population's choice over training with it skipped (1 x 4), and
    generation with the model's population over generation without it: medians of three
    interleaved pairs (this VM varies by +-20 %)."""
    import copy
    import statistics
    import time

    from iomimic.model import Model, train

    def seconds(fn) -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    stripped = copy.deepcopy(model.data)
    for thread in stripped["threads"]:
        (thread.get("reuse") or {}).pop("population", None)
    without = Model(stripped)
    pairs = {
        "train, choice / skipped": (
            lambda: train(trace, levels=1, states=4),
            lambda: train(trace, levels=1, states=4, population=False),
        ),
        "generate, population / none": (
            lambda: model.generate(len(trace), seed=1),
            lambda: without.generate(len(trace), seed=1),
        ),
    }
    kept = (model.data.get("selection") or {}).get("population", {}).get("kept")
    print(f"re-use by a stated population (kept in the model: {kept}), medians of 3 interleaved pairs")
    out = {"kept": kept}
    for name, (a, b) in pairs.items():
        ratios = []
        for k in range(3):
            if k % 2:
                tb, ta = seconds(b), seconds(a)
            else:
                ta, tb = seconds(a), seconds(b)
            ratios.append(ta / tb)
        out[name] = statistics.median(ratios)
        print(f"  {name:<30}{out[name]:>6.2f}x  ({min(ratios):.2f}-{max(ratios):.2f})")
    return out


if __name__ == "__main__":
    sys.exit(main())
