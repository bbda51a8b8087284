"""Characterization: every figure of a trace, for the whole trace, each volume and each stream."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from iomimic import _core
from iomimic.trace import Trace
from iomimic.units import parse_duration_ns


class Profile(dict):
    """A trace's figures: a dict (keys as in ``docs/characterize.md``) with :meth:`to_json`.

    >>> t = Trace(ts_ns=[0, 10**6, 2 * 10**6], offset=[0, 4096, 8192], size=[4096] * 3, op=[0, 0, 1])
    >>> p = characterize(t, mrc="none")
    >>> p["requests"], round(p["read_fraction"], 3), p["sequential_fraction"]
    (3, 0.667, 0.6666666666666666)
    >>> p["volumes"]["0"]["requests"]
    3
    """

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self, indent=indent)

    def __repr__(self) -> str:
        """One line of the figures people look at first (the dict itself is ``dict(profile)``).

        >>> t = Trace(ts_ns=[0, 10**9], offset=[0, 4096], size=[4096] * 2, op=[0, 1])
        >>> characterize(t, mrc="none")  # doctest: +NORMALIZE_WHITESPACE
        <Profile 2 requests, 1 volume, 1 stream, 1.000 s, 2.0 IOPS, 50.0% reads, 4.0 KiB mean,
         50.0% sequential>
        """
        if "requests" not in self:
            return f"<Profile {dict.__repr__(self)}>"
        volumes, streams = len(self.get("volumes", {})), len(self.get("streams", {}))
        return (
            f"<Profile {self['requests']:,} requests, {volumes} volume{'s' * (volumes != 1)}, "
            f"{streams} stream{'s' * (streams != 1)}, {self['duration_s']:.3f} s, "
            f"{self['iops']:,.1f} IOPS, {100 * self['read_fraction']:.1f}% reads, "
            f"{self['size']['mean_bytes'] / 1024:,.1f} KiB mean, "
            f"{100 * self['sequential_fraction']:.1f}% sequential>"
        )

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """IPython shows the same line rather than the whole nested dict."""
        printer.text(repr(self))


def characterize(
    trace: Trace,
    *,
    ranges: int = 4,
    window: str | float | None = None,
    by: str | None = None,
    mrc: str = "all",
    mrc_sampling: float | None = None,
    mrc_budget: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Profile:
    """Computes every characterization figure of ``trace``.

    Parameters
    ----------
    ranges
        Equal ranges of each volume's address span in the spatial histogram (the papers use 4).
    window
        Fluctuation window (``"60s"``, ``"500ms"`` or seconds); default min(60 s, span/100).
    by
        ``"stream"`` or ``"volume"``: also classify those groups into thread types.
    mrc
        Miss-ratio curves for ``"all"`` groups, the whole ``"trace"`` only, or ``"none"``.
    mrc_sampling
        Force a SHARDS sampling rate in (0, 1]; default from ``mrc_budget``.
    mrc_budget
        Distinct 4 KiB blocks a curve may track (at most 64 bytes each; default 8,388,608,
        about 512 MiB): exact when the trace's fit, else SHARDS-sampled down to it, the
        estimated error in ``mrc.sampling_error``.
    progress
        Called about ten times a second with (requests taken, requests to take) counted over
        every pass; Ctrl-C stops the work (KeyboardInterrupt) within a pass.
    """
    window_ns = None if window is None else parse_duration_ns(window, "window")
    figures = _core.characterize(
        *trace._core_args(),
        ranges=ranges,
        window_ns=window_ns,
        by=by,
        mrc=mrc,
        mrc_sampling=mrc_sampling,
        mrc_budget=mrc_budget,
        progress=progress,
    )
    profile = Profile(figures)
    profile["source"] = {k: trace.report.get(k) for k in ("path", "format") if k in trace.report}
    if trace.stream_names:
        # per-stream figures are keyed by stream id; the process names say who each one is
        profile["stream_names"] = {str(k): v for k, v in sorted(trace.stream_names.items())}
    return profile


def summary_row(name: str, f: dict[str, Any]) -> dict[str, Any]:
    """The few figures shown per volume or stream in the report."""
    return {
        "name": name,
        "requests": f["requests"],
        "read_fraction": f["read_fraction"],
        "sequential_fraction": f["sequential_fraction"],
        "iops": f["iops"],
        "mean_bytes": f["size"]["mean_bytes"],
        "mean_interarrival_us": f["interarrival"]["mean_us"],
    }
