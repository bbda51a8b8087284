"""Model benchmark: training and generation speed, against characterization of the same trace.

On the 5-million-request MSR trace of `read_msr.py`, best of --repeat runs:
- the reference: `iomimic.characterize(mrc="none")` of the trace (one pass over it);
- training with fixed levels and states (1 x 4), and with automatic choice of both;
- generation of 5 M requests from the trained model, with the temporal-locality (reuse)
  extension on and off.
Targets: training >= 2 M requests/s, generation >= 10 M requests/s.

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
    (OUT / "model.json").write_text(json.dumps({"requests": n, "seconds": dict(rows)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
