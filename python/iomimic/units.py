"""Parsing human-friendly quantities from the command line."""

from __future__ import annotations

import re

from iomimic.errors import InputError

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ns|us|µs|ms|s|m|min|h)?\s*$")
_NS_PER = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "min": 60_000_000_000,
    "h": 3_600_000_000_000,
}


def parse_duration_ns(text: str | float | int) -> int:
    """Nanoseconds in a duration such as ``60s``, ``250ms``, ``1.5h`` or a bare number of seconds.

    >>> parse_duration_ns("60s"), parse_duration_ns("250ms"), parse_duration_ns(2)
    (60000000000, 250000000, 2000000000)
    """
    if isinstance(text, (int, float)):
        value, unit = float(text), "s"
    else:
        m = _DURATION.match(text)
        if not m:
            raise InputError(f"cannot read {text!r} as a duration; write e.g. 60s, 250ms, 1.5h")
        value, unit = float(m.group(1)), m.group(2) or "s"
    ns = round(value * _NS_PER[unit])
    if ns <= 0:
        raise InputError(f"a duration must be positive, found {text!r}")
    return ns
