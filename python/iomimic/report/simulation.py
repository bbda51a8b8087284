"""`iomimic simulate`: a simulation's figures and its devices."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from rich.console import Console

from iomimic.report import figures_table, human_bytes, latency_text, micros, pct, table

#: Busy share past which a device is saturated: an open-loop queue then grows without bound.
SATURATED = 0.99

#: Devices listed in the table (`--json` has every one).
MAX_DEVICE_ROWS = 32


def render_simulation(f: dict[str, Any], console: Console) -> None:
    """One device's figures; with volumes on several devices, the whole run's and then each
    device's."""
    if "placements" not in f:
        _render_device(f"simulated on {f['device']} ({f['mode']})", f, console)
        return
    t = figures_table(f"simulated with each volume on its own device ({f['mode']})")
    for row in _whole_rows(f):
        t.add_row(*row)
    console.print(t)
    for p in f["placements"]:
        _render_device(f"{'+'.join(p['volumes'])} on {p['device']}", p, console)


def _whole_rows(f: dict[str, Any]) -> list[tuple[str, str]]:
    """The figures of the requests, whatever served them."""
    rows = [
        ("requests", f"{f['requests']:,}"),
        ("duration", f"{f['duration_s']:,.3f} s"),
        ("throughput", f"{f['iops']:,.1f} IOPS, {f['mb_per_s']:,.2f} MB/s"),
    ]
    if f.get("latency_us"):
        rows.append(("latency mean / p50 / p99 / max", latency_text(f["latency_us"])))
    by_op = f.get("by_op") or {}
    if len(by_op) > 1:
        # a mix: each operation's latency apart (a write cache shows here)
        for op, o in by_op.items():
            lat = o["latency_us"]
            rows.append((f"{op}s ({lat['count']:,}): mean / p50 / p99 / max", latency_text(lat)))
    rows.append(("energy", "-" if f.get("energy_j") is None else f"{f['energy_j']:,.1f} J"))
    return rows


def _render_device(title: str, f: dict[str, Any], console: Console) -> None:
    t = figures_table(title)
    rows = _whole_rows(f)
    service = f"{micros(f['mean_service_us'])} over {f['device_ios']:,} device I/Os"
    rows.append(("mean device service", service))
    for key, label in (
        ("gc_erases", "garbage-collection erases"),
        ("gc_page_moves", "garbage-collection page moves"),
        ("write_buffer_waits", "writes waiting for the write buffer"),
        ("cache_hits", "controller cache hits"),
        ("folded_requests", "requests folded into their volume's region"),
        ("slow_ios", "slow I/Os (injected)"),
        ("failed_ios", "failed I/Os (injected)"),
        ("spin_ups", "spin-ups from standby"),
        ("destages", "disk write-cache destages"),
    ):
        if f.get(key):
            rows.append((label, f"{f[key]:,}"))
    if f.get("prefetched_kib"):
        # prefetch is paid for in disk time: say how much of it no request read
        rows.append(
            (
                "controller prefetch",
                f"{f['prefetched_kib']:,} KiB read ahead, {f.get('prefetch_unused_kib', 0):,} KiB never read",
            )
        )
    for key, label in (
        ("die_utilization", "SSD dies busy"),
        ("channel_utilization", "SSD channels busy"),
        ("host_utilization", "SSD host link busy"),
    ):
        if f.get(key) is not None:
            rows.append((label, f"{100 * f[key]:.1f}%"))
    if f.get("write_amplification") is not None:
        rows.append(("write amplification", f"{f['write_amplification']:.2f}"))
    for row in rows:
        t.add_row(*row)
    console.print(t)
    d = table("devices")
    for c in ("device", "I/Os", "utilisation", "buffer hits"):
        d.add_column(c, justify="right")
    for i, dev in enumerate(f["devices"][:MAX_DEVICE_ROWS]):
        # buffer hits are a disk's counter; other kinds have none
        hits = f"{dev['buffer_hits']:,}" if "buffer_hits" in dev else "-"
        d.add_row(str(i), f"{dev['ios']:,}", f"{100 * dev['utilization']:.1f}%", hits)
    console.print(d)


def render_sweep(runs: list[dict[str, Any]], console: Console) -> None:
    """A sweep's runs, a row each: what ran (device, intensity, loop), what it gave, and how
    busy its busiest part was (a saturated open loop measures its own backlog)."""
    t = table(
        f"simulated: {len(runs)} runs",
        "device", "intensity", "loop", "IOPS", "MB/s", "mean", "p50", "p99", "busiest", "energy",
    )  # fmt: skip
    for f in runs:
        lat = f.get("latency_us") or {}
        busy = _busiest(f)
        point = f["sweep"]
        t.add_row(
            PurePath(point["device"]).name,  # a device file by its name: the table stays narrow
            f"{point['intensity']:g}×",
            "open" if point["iodepth"] is None else f"depth {point['iodepth']}",
            f"{f['iops']:,.1f}",
            f"{f['mb_per_s']:,.2f}",
            *(micros(lat[k]) if k in lat else "-" for k in ("mean", "p50", "p99")),
            "-" if busy is None else f"{100 * busy[1]:.0f}% {busy[0]}",
            "-" if f.get("energy_j") is None else f"{f['energy_j']:,.1f} J",
        )
    console.print(t)


def _busiest(f: dict[str, Any]) -> tuple[str, float] | None:
    """The busiest part of a run's devices, (what, busy share): a disk, or an SSD's dies,
    channels or host link."""
    parts = [
        (f"{'+'.join(p['volumes'])}: {what}" if "placements" in f else what, busy)
        for p in f.get("placements", [f])
        for what, busy in _parts(p)
    ]
    return max(parts, key=lambda p: p[1]) if parts else None


def _parts(f: dict[str, Any]) -> list[tuple[str, float]]:
    """(part, busy share) of one device's figures."""
    parts = [(f"device {i}", d["utilization"]) for i, d in enumerate(f["devices"])]
    return parts + [(label, f[key]) for key, label in (
        ("die_utilization", "dies"), ("channel_utilization", "channels"),
        ("host_utilization", "host link"),
    ) if f.get(key) is not None]  # fmt: skip


def saturation_warnings(f: dict[str, Any]) -> list[str]:
    """What to say of each device an open-loop run overloaded."""
    devices = f.get("placements", [f])
    return [w for w in map(saturation_warning, devices) if w]


def fold_warnings(f: dict[str, Any], volumes: int | None = None) -> list[str]:
    """What to say of each device whose volumes reached past the region each was given (an
    equal part of the device per volume on it; ``volumes``: how many a one-device run put on
    it): those requests were folded into it, so their places, and the locality a cache or a
    disk's seeks see, are not the trace's."""
    out = []
    for d in f.get("placements", [f]):
        folded = d.get("folded_requests", 0)
        if not folded:
            continue
        names = d.get("volumes", [])
        sharing = len(names) if names else (volumes or 1)
        who = _device_serving(d)
        remedy = "give each volume a device of its own or " if sharing > 1 else ""
        out.append(
            f"{folded:,} of {d['requests']:,} requests ({pct(folded, d['requests'])}) lie past the "
            f"{human_bytes(d['region_bytes'])} region their volume has on {who} and were folded "
            f"into it (offset modulo the region), so their places are not the trace's: {remedy}"
            "simulate a larger device"
        )
    return out


def _device_serving(f: dict[str, Any]) -> str:
    """A device as warnings name it: with the volumes it serves, when a mapped run placed them."""
    return f"{f['device']} (serving {'+'.join(f['volumes'])})" if f.get("volumes") else f["device"]


def sweep_warning(runs: list[dict[str, Any]]) -> str | None:
    """One line for the runs of a sweep that saturated a device (its table shows which)."""
    saturated = [f for f in runs if saturation_warnings(f)]
    if not saturated:
        return None
    return (
        f"{len(saturated)} of {len(runs)} runs saturated a device (the 'busiest' column): "
        "their open-loop latencies measure a queue that grew for the whole run"
    )


def saturation_warning(f: dict[str, Any]) -> str | None:
    """What to say when an open-loop run overloaded its device: the busiest part's share."""
    if f.get("mode", "").startswith("closed"):
        return None
    parts = _parts(f)
    if not parts:
        return None
    name, busy = max(parts, key=lambda p: p[1])
    name = name if name.startswith("device") else f"the SSD's {name}"
    if busy < SATURATED:
        return None
    return (
        f"{_device_serving(f)} is saturated ({name} {100 * busy:.0f}% busy): requests arrive faster than it "
        "serves them, so the queue grows for the whole run and the latencies measure that backlog; "
        "try a faster device or an array, --intensity below 1, or --iodepth for a closed loop"
    )
