"""`iomimic devices` and `iomimic formats`: what iomimic offers, one line each."""

from __future__ import annotations

from rich.console import Console

from iomimic.report import table


def render_devices(rows: list[tuple[str, str, str, str]], console: Console) -> None:
    """The device presets, a row each: name, what it is, its array and its device (the lines
    the core's device kinds write about themselves)."""
    t = table("device presets (name for --device)")
    for c in ("name", "what", "array", "device"):
        t.add_column(c)
    for row in rows:
        t.add_row(*row)
    console.print(t)


def render_formats(formats: list[tuple[str, str]], console: Console) -> None:
    """The trace formats: name (for ``--format``) and what each is."""
    t = table("trace formats (name for --format)")
    t.add_column("name", style="bold")
    t.add_column("what it is")
    for name, description in formats:
        t.add_row(name, description)
    console.print(t)
