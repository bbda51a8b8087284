"""Human-friendly quantities: durations and sizes (parsed by the core's one grammar) and seeds."""

from __future__ import annotations

import re

from iomimic import _core
from iomimic.errors import InputError


def parse_duration_ns(text: str | float | int, what: str = "duration") -> int:
    """Nanoseconds in a duration such as ``60s``, ``250ms``, ``1.5h`` or a bare number of seconds
    (the core's grammar; ``what`` names the parameter in messages).

    >>> parse_duration_ns("60s"), parse_duration_ns("250ms"), parse_duration_ns(2)
    (60000000000, 250000000, 2000000000)
    """
    if isinstance(text, bool):
        raise InputError(f"`{what}`: a duration is a number or text such as 60s, found {text!r}")
    if isinstance(text, (int, float)):
        if not (text == text and abs(text) != float("inf")):
            raise InputError(f"`{what}`: a duration must be a finite number, found {text!r}")
        text = repr(float(text)) if isinstance(text, float) else str(text)
        if "e" in text:  # a float repr in exponent form: spell it out for the grammar
            text = f"{float(text):.9f}"
    if text.lstrip().startswith("-"):
        raise InputError(f"`{what}`: a duration must be positive, found {text.strip()}")
    return _core.parse_duration_ns(text, what)


def parse_time_ns(text: str | float | int, what: str = "time") -> int:
    """A point in time since a trace's first request, as :func:`parse_duration_ns` reads a
    duration, and 0 (``0``, ``0s``, ``0.0ms``) for the first request itself.

    >>> parse_time_ns("0s"), parse_time_ns("10m")
    (0, 600000000000)
    """
    if isinstance(text, str) and re.fullmatch(r"\s*0+(\.0*)?\s*(ns|us|µs|ms|s|m|min|h|d)?\s*", text):
        return 0
    if isinstance(text, (int, float)) and not isinstance(text, bool) and text == 0:
        return 0
    return parse_duration_ns(text, what)


def parse_size_bytes(text: str | int, what: str = "size") -> int:
    """Bytes in a size such as ``8G``, ``512M``, ``4KiB`` or a bare number (binary units).

    >>> parse_size_bytes("8G"), parse_size_bytes("4KiB"), parse_size_bytes(4096)
    (8589934592, 4096, 4096)
    """
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise InputError(f"`{what}`: a size is a whole number or text such as 8G, found {text!r}")
    return _core.parse_size_bytes(str(text), what)


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
