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


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size_bytes(text: str | int) -> int:
    """Bytes in a size such as ``8G``, ``512M``, ``4KiB`` or a bare number (binary units).

    >>> parse_size_bytes("8G"), parse_size_bytes("4KiB"), parse_size_bytes(4096)
    (8589934592, 4096, 4096)
    """
    if isinstance(text, int):
        value, unit = float(text), ""
    else:
        m = _SIZE.match(text)
        if not m:
            raise InputError(f"cannot read {text!r} as a size; write e.g. 8G, 512M, 4KiB")
        value, unit = float(m.group(1)), m.group(2).lower()
    n = round(value * 1024 ** "kmgtp".find(unit) * 1024) if unit else round(value)
    if n <= 0:
        raise InputError(f"a size must be positive, found {text!r}")
    return n


def parse_seed(value: str | int) -> int:
    """A random seed: a whole number from 0 to 2**64 - 1 (the engines' seeds are unsigned).

    >>> parse_seed("7"), parse_seed(2**64 - 1)
    (7, 18446744073709551615)
    """
    try:
        seed = int(value)
    except (TypeError, ValueError):
        seed = -1
    if isinstance(value, float) or not 0 <= seed < 1 << 64:
        raise InputError(f"a seed is a whole number from 0 to 2**64 - 1, found {value!r}")
    return seed
