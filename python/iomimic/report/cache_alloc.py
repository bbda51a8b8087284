"""`iomimic study cache-alloc`: per scenario, each scheme's split of the cache (with the hit
ratios it gives), the applications' latency and the mean; transaction latencies where a
workload mixes several; the closed loop's timeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from iomimic.report import human_bytes, pct, table


def _num(x: float) -> str:
    # latencies are in the applications file's time unit; Tang et al.'s example needs 5 decimals
    return f"{x:.6g}"


def render_cache_alloc(r: dict[str, Any], console: Console) -> None:
    vms = [v["name"] for v in r["vms"]]
    for s in r["scenarios"]:
        apps = [a["app"] + f" ({a['workload']})" for a in s["schemes"][0]["apps"]]
        t = table(f"scenario {s['name']}: cache (hit ratio) per VM, latency per application", "scheme",
                  *vms, *apps, "mean")  # fmt: skip
        for k in s["schemes"]:
            cells = [
                f"{human_bytes(b)} {100 * h:.0f}%" for b, h in zip(k["allocation"], k["hit"], strict=True)
            ]
            t.add_row(k["scheme"], *cells, *[_num(a["latency"]) for a in k["apps"]], _num(k["overall"]))
        console.print(t)
        if s["ga_shortfall"] is not None:
            console.print(f"  the GA's plan is {pct(s['ga_shortfall'])} slower than the optimum")
        if any(len(a["transactions"]) > 1 for a in s["schemes"][0]["apps"]):
            _transactions(s, console)
    if r.get("adapt"):
        _timeline(r["adapt"], console)


def _transactions(s: dict[str, Any], console: Console) -> None:
    t = table(f"scenario {s['name']}: transaction latency", "app", "transaction", "dominant IO",
              *[k["scheme"] for k in s["schemes"]])  # fmt: skip
    for i, app in enumerate(s["schemes"][0]["apps"]):
        for j, tx in enumerate(app["transactions"]):
            values = [_num(k["apps"][i]["transactions"][j]["latency"]) for k in s["schemes"]]
            t.add_row(app["app"], tx["name"], tx["io"] or "-", *values)
    console.print(t)


def _timeline(a: dict[str, Any], console: Console) -> None:
    t = table(
        f"closed loop: {len(a['windows'])} windows of {a['window_s']:g} s, {a['replans']} re-plans",
        "start s", "workloads", "detected", "re-plan", "adaptive", "static", "equal", "optimal",
    )  # fmt: skip
    for w in a["windows"]:
        t.add_row(
            f"{w['start_s']:g}", ", ".join(w["workloads"]), ", ".join(w["detected"]),
            "yes" if w["replanned"] else "", _num(w["adaptive"]), _num(w["static"]), _num(w["equal"]),
            _num(w["optimal"]),
        )  # fmt: skip
    console.print(t)
    means = ", ".join(f"{k} {_num(v)}" for k, v in zip(("adaptive", "static", "equal", "optimal"), a["mean"]))
    console.print(f"  mean latency: {means}")


def plot_cache_alloc(r: dict[str, Any], path: str | Path) -> Path:
    """The loop's latency and allocation over time, or each scheme's mean latency per scenario."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = r.get("adapt")
    if a:
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
        ts = [w["start_s"] for w in a["windows"]]
        for key in ("adaptive", "static", "equal", "optimal"):
            top.step(ts, [w[key] for w in a["windows"]], where="post", label=key)
        for w in a["windows"]:
            if w["replanned"]:
                top.axvline(w["start_s"] + a["window_s"], color="grey", linewidth=0.5, linestyle=":")
        top.set_ylabel("mean transaction latency")
        top.legend(fontsize=8)
        shares = [[w["allocation"][v] for w in a["windows"]] for v in range(len(a["vms"]))]
        bottom.stackplot(ts, [[b / 2**30 for b in s] for s in shares], labels=a["vms"], step="post")
        bottom.set_ylabel("cache (GiB)")
        bottom.set_xlabel("time (s)")
        bottom.legend(fontsize=8, loc="upper right")
        fig.suptitle("closed-loop cache allocation")
    else:
        fig, ax = plt.subplots(figsize=(9, 3.5))
        names = [s["name"] for s in r["scenarios"]]
        schemes = [k["scheme"] for k in r["scenarios"][0]["schemes"]]
        width = 0.8 / len(schemes)
        for i, k in enumerate(schemes):
            xs = [j + i * width for j in range(len(names))]
            ax.bar(xs, [s["schemes"][i]["overall"] for s in r["scenarios"]], width, label=k)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(names))], names)
        ax.set_ylabel("mean transaction latency")
        ax.legend(fontsize=8)
        fig.suptitle("SSD cache allocation by scheme")
    path = Path(path)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
