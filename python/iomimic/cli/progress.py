"""Progress bars on stderr, only on a terminal: reading a big file, real I/O, and the core's
long work (simulation, training, studies)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from iomimic.errors import InputError

#: Files smaller than this read too fast for a progress bar to help.
PROGRESS_MIN_BYTES = 32 << 20


def _live_bar(description: str, total: int | None, *columns, **fields):
    """A transient rich progress bar on stderr, started: (bar, task)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        *columns,
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task(description, total=total, **fields)
    bar.start()
    return bar, task


def reading(path: str) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A progress callback for big files on a terminal, and a function that closes the bar."""
    from iomimic.io import trace_parts

    try:
        parts = trace_parts(Path(path)) or [Path(path)]
        size = sum(p.stat().st_size for p in parts)
    except (OSError, InputError):
        size = 0  # the reader says what is wrong
    if not sys.stderr.isatty() or size < PROGRESS_MIN_BYTES:
        return None, lambda: None
    from rich.progress import DownloadColumn, TimeRemainingColumn, TransferSpeedColumn

    bar, task = _live_bar(
        f"reading {Path(path).name}", size, DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn()
    )
    return (lambda done, total: bar.update(task, completed=done, total=total)), bar.stop


def running(
    total: int,
) -> tuple[Callable[[int, float, float | None], None] | None, Callable[[], None]]:
    """On a terminal: a live line with requests done, elapsed time, IOPS and (open loop) the
    issue lag during real I/O."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.progress import MofNCompleteColumn, TimeElapsedColumn

    columns = (MofNCompleteColumn(), TimeElapsedColumn(), "{task.fields[iops]}")
    bar, task = _live_bar("running", total, *columns, iops="")

    def report(done: int, elapsed: float, lag_us: float | None) -> None:
        rate = f"{done / elapsed:,.0f} IOPS" if elapsed > 0 else ""
        lag = f"  lag {lag_us:,.0f} µs" if lag_us is not None else ""
        bar.update(task, completed=done, iops=rate + lag)

    return report, bar.stop


@contextmanager
def working(description: str, *, share: bool = False) -> Iterator[Callable[[int, int], None] | None]:
    """On a terminal: a live bar for work in the core, which calls the callback yielded here
    with (units done, units in all; 0 while unknown): requests simulated, models tried,
    workloads studied. With ``share`` the bar shows the share done and the time left rather
    than the units (a characterization counts requests once per pass: its units mean little
    to a reader). Elsewhere it yields None."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import MofNCompleteColumn, TaskProgressColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TaskProgressColumn(), TimeRemainingColumn()) if share else (MofNCompleteColumn(),)
    bar, task = _live_bar(description, None, *columns, TimeElapsedColumn())

    def report(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total or None)

    try:
        yield report
    finally:
        bar.stop()
