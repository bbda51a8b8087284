"""What the commands print: rich tables of the figures the library computes, one module per kind
of output (``info``, ``profile``, ``simulation``, ``model``, ``validation``, ``run``, ``catalog``).

Every renderer takes the figures (a dict, as ``--json`` writes them) and a console, so the
library never imports rich and the tables can be written anywhere. This module holds what the
renderers share: the console, byte and percentage formatting, the table constructors.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

#: Width of tables written to a pipe or file (a terminal's own width is used otherwise).
PIPE_WIDTH = 120


class _Console(Console):
    """rich's console, but output piped into a reader that stopped (``| head``) ends the
    command quietly and successfully, as it does for the rest of the CLI (rich would exit 1)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def make_console() -> Console:
    """A console for tables: the terminal's width, or a fixed wide one when output is piped."""
    console = _Console(highlight=False)
    if not console.is_terminal:
        console = _Console(highlight=False, width=PIPE_WIDTH)
    return console


def human_bytes(n: float) -> str:
    """``n`` bytes in the largest binary unit it reaches.

    >>> human_bytes(512), human_bytes(65536), human_bytes(3 * 2**30)
    ('512 B', '64.0 KiB', '3.0 GiB')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,.0f} B"


def mib(n: int) -> str:
    """``n`` bytes in MiB, so amounts in one table compare at a glance; an amount that would
    read 0.0 MiB but is not nothing in its own unit.

    >>> mib(69632), mib(32768), mib(0)
    ('0.1 MiB', '32.0 KiB', '0.0 MiB')
    """
    if 0 < n < 2**20 / 20:
        return human_bytes(n)
    return f"{n / 2**20:,.1f} MiB"


def micros(us: float) -> str:
    """A time given in µs, in the unit that reads best: 12.3 µs, 4.56 ms, 79.76 s.

    >>> micros(12.34), micros(4560), micros(79_755_703.8)
    ('12.3 µs', '4.56 ms', '79.76 s')
    """
    if us < 1000:
        return f"{us:,.1f} µs"
    if us < 1_000_000:
        return f"{us / 1000:,.2f} ms"
    return f"{us / 1e6:,.2f} s"


def pct(part: float, whole: float = 1) -> str:
    """``part`` as a percentage of ``whole`` (a fraction when ``whole`` is left out), ``-`` when
    there is no whole.

    >>> pct(2, 3), pct(0.25), pct(0, 0)
    ('66.67%', '25.00%', '-')
    """
    return f"{100 * part / whole:.2f}%" if whole else "-"


def table(title: str, *columns: str, **options: Any) -> Table:
    """A table titled on the left; ``columns`` are added with the first left-justified and the
    rest (numbers) right-justified. ``options`` go to rich's ``Table``."""
    t = Table(title=title, title_justify="left", **options)
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right")
    return t


def latency_text(lat: dict[str, Any]) -> str:
    """A latency object (docs/json.md) as ``mean / p50 / p99 / max``, each in the unit that
    reads best."""
    return " / ".join(micros(lat[k]) for k in ("mean", "p50", "p99", "max"))


def figures_table(title: str, *more: str) -> Table:
    """A headless two-column table of named figures (bold names, right-justified values), with
    ``more`` right-justified columns after the value."""
    t = table(title, show_header=False)
    t.add_column("figure", style="bold")
    t.add_column("value", justify="right")
    for c in more:
        t.add_column(c, justify="right")
    return t
