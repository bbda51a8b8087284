"""`iomimic study early-errors`: per intensity, how soon the faulty devices were found, and
what was flagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from iomimic.report import table


def _seconds(value: float | None) -> str:
    return "missed" if value is None else f"{value:,.2f}"


def render_early_errors(r: dict[str, Any], console: Console) -> None:
    faulty = r["faulty"]
    f = r.get("faults") or {}
    kinds = ", ".join(
        f"{name} {f[key]:g}"
        for name, key in (("slow sectors", "slow_sector_rate"), ("failed sectors", "failed_sector_rate"),
                          ("slow writes", "slow_write_rate"))
        if f.get(key)
    )  # fmt: skip
    title = f"early errors on {r['devices']} × {r['device']}: {r['requests_per_device']:,} requests each" + (
        f", devices {', '.join(map(str, faulty))} faulty ({kinds})" if faulty else ""
    )
    t = table(
        title, "intensity", "span s", "found", "false alarms", "time to find all s", "each s", "failed I/Os"
    )
    for o in r["intensities"]:
        found = f"{o['true_positives']} of {len(faulty)}" if faulty else f"{len(o['flags'])} flagged"
        alarms = str(o["false_positives"]) if faulty else "-"
        t.add_row(
            f"{o['intensity']:g}×", f"{o['span_s']:,.1f}", found, alarms,
            _seconds(o["time_to_detect_all_s"]) if faulty else "-",
            ", ".join(_seconds(s) for s in o["time_to_detect_s"]) or "-", f"{o['failed_requests']:,}",
        )  # fmt: skip
    console.print(t)
    busy = [f"{o['intensity']:g}×" for o in r["intensities"] if o.get("overloaded")]
    if busy:
        console.print(
            f"overloaded at {', '.join(busy)}: the devices fell behind the workload, so queueing, not "
            "faults, set the latencies there (try lower intensities or a lighter workload)"
        )
    flags = [(o["intensity"], flag) for o in r["intensities"] for flag in o["flags"]]
    if flags:
        t = table("flagged devices", "intensity", "device", "at s", "requests", "by", "slow share", "fleet's")
        for k, flag in flags:
            name = r["targets"][flag["device"]] if "targets" in r else str(flag["device"])
            t.add_row(
                f"{k:g}×", name, f"{flag['at_s']:,.2f}", f"{flag['requests']:,}", flag["by"],
                f"{100 * flag['slow_share']:.2f}%", f"{100 * flag['fleet_slow_share']:.2f}%",
            )  # fmt: skip
        console.print(t)


def plot_early_errors(r: dict[str, Any], path: str | Path) -> Path:
    """Time to find every faulty device against intensity."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for o in r["intensities"]:
        times = [s for s in o["time_to_detect_s"] if s is not None]
        ax.scatter([o["intensity"]] * len(times), times, color="tab:blue", s=18)
    found = [(o["intensity"], o["time_to_detect_all_s"]) for o in r["intensities"]]
    found = [(k, s) for k, s in found if s is not None]
    if found:
        ax.plot(*zip(*found), color="tab:blue", label="all faulty devices found")
        ax.legend()
    levels = [o["intensity"] for o in r["intensities"]]
    ax.set_xscale("log", base=2)
    ax.set_xlim(min(levels) / 1.5, max(levels) * 1.5)
    ax.set_xlabel("intensity (× the workload's rate)")
    ax.set_ylabel("time to detection (s)")
    ax.set_title(f"early errors on {r['devices']} × {r['device']}")
    path = Path(path)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
