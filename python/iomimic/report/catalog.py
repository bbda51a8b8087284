"""`iomimic devices` and `iomimic formats`: what iomimic offers, one line each."""

from __future__ import annotations

from rich.console import Console

from iomimic.report import table


def render_devices(presets: dict[str, str], console: Console) -> None:
    """The device presets (name → device file text): what each is, its array and its device."""
    import tomllib  # Python 3.11+: imported here so `iomimic formats` works on 3.10 too

    t = table("device presets (name for --device)")
    for c in ("name", "what", "array", "device"):
        t.add_column(c)
    for name, text in presets.items():
        cfg = tomllib.loads(text)
        a = cfg.get("array")
        array = f"{a['level']} x{a['devices']}, {a['stripe_kib']} KiB units" if a else "-"
        t.add_row(name, cfg.get("description", ""), array, _device(cfg["device"]))
    console.print(t)


def _device(dev: dict) -> str:
    if dev["kind"] == "hdd":
        return (
            f"HDD {dev['rpm']:g} rpm, {dev['capacity_gb']:g} GB, seek {dev['track_to_track_ms']:g}/"
            f"{dev['average_seek_ms']:g}/{dev['full_stroke_ms']:g} ms, "
            f"{dev['outer_mb_s']:g}-{dev['inner_mb_s']:g} MB/s"
        )
    return (
        f"SSD {dev['capacity_gb']:g} GB, {dev['channels']}x{dev['dies_per_channel']} dies, "
        f"read {dev['read_us']:g} µs, program {dev['program_us']:g} µs, erase {dev['erase_us']:g} µs"
    )


def render_formats(formats: list[tuple[str, str]], console: Console) -> None:
    """The trace formats: name (for ``--format``) and what each is."""
    t = table("trace formats (name for --format)")
    t.add_column("name", style="bold")
    t.add_column("what it is")
    for name, description in formats:
        t.add_row(name, description)
    console.print(t)
