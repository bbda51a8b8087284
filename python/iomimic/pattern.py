"""Simple IOMeter/fio-style tests as workloads: ``"read seq 4k interarrival=10ms"``,
``"randread 4k"``, ``"write rand 64k rate=500 mix=70"``.

Words, in any order:

- the operation: ``read``, ``write``, ``randread``, ``randwrite``, ``readwrite`` / ``rw``
  (mixed; ``mix=P`` percent reads, default 50), optionally with ``seq`` or ``rand``
  (default ``rand``; ``randread`` and the like say it themselves);
- a request size: ``4k``, ``64KiB``, ``1m`` (default 4 KiB);
- the timing: ``interarrival=10ms`` (fixed gaps), ``rate=500`` (requests per second, fixed
  gaps), add ``poisson`` for exponential gaps at that mean; none: back-to-back (for
  closed-loop runs with ``--iodepth``);
- ``span=1g``: the address range random requests fall in (default: the target's size, 1 GiB
  when unknown).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iomimic.errors import InputError
from iomimic.trace import Trace
from iomimic.units import parse_duration_ns, parse_seed, parse_size_bytes

_OPS = {
    "read": (100, None),
    "write": (0, None),
    "randread": (100, "rand"),
    "randwrite": (0, "rand"),
    "readwrite": (None, None),
    "rw": (None, None),
    "randrw": (None, "rand"),
}


@dataclass(frozen=True)
class Pattern:
    """What a ``--pattern`` spec says: the read percentage, ``seq``/``rand`` order, request
    size, the mean gap between requests (0: back to back), whether gaps are exponential, and
    the span random offsets fall in (``None``: the caller's default)."""

    read_pct: int
    order: str | None
    size: int
    gap_ns: int
    poisson: bool
    span: int | None


def parse_pattern(spec: str, span: int | None = None) -> Pattern:
    """Reads a ``--pattern`` spec (``span`` is the default for ``span=``).

    >>> parse_pattern("rw 64k rate=500 mix=70 poisson")
    Pattern(read_pct=70, order=None, size=65536, gap_ns=2000000, poisson=True, span=None)
    """
    reads, order, size, gap_ns, poisson, mix = None, None, 4096, 0, False, 50
    for word in spec.lower().split():
        key, eq, value = word.partition("=")
        if word in _OPS:
            reads, implied = _OPS[word]
            order = implied or order
        elif word in ("seq", "sequential", "rand", "random"):
            order = "seq" if word.startswith("seq") else "rand"
        elif word == "poisson":
            poisson = True
        elif eq and key == "interarrival":
            gap_ns = parse_duration_ns(value)
        elif eq and key == "rate":
            try:
                rate = float(value)
            except ValueError:
                rate = 0.0
            if not (rate > 0 and rate != float("inf")):
                raise InputError(f"--pattern: rate must be requests per second, found {value!r}")
            gap_ns = round(1e9 / rate)
        elif eq and key == "mix":
            if not (value.isdigit() and 0 <= int(value) <= 100):
                raise InputError(f"--pattern: mix is a whole percentage of reads, found {value!r}")
            mix = int(value)
        elif eq and key == "span":
            span = parse_size_bytes(value)
        elif word[0].isdigit():
            size = parse_size_bytes(word)
        else:
            raise InputError(f"--pattern: cannot read {word!r}; see `iomimic run --help`")
    if reads is None and not any(w in _OPS for w in spec.lower().split()):
        raise InputError("--pattern: name the operation (read, write, randread, randwrite, rw)")
    return Pattern(mix if reads is None else reads, order, size, gap_ns, poisson, span)


#: Requests generated for a back-to-back pattern (no ``rate=`` or ``interarrival=``) run for a
#: duration. Its rate is the device's, unknown before the run, so no count is exact; the
#: deadline stops the run, so the count only needs to outlast it. It is bounded because the
#: workload is built whole before the run starts (the Trace alone holds 29 bytes a request,
#: about 145 MB at this count). A device faster than ``BACK_TO_BACK_REQUESTS / duration`` IOPS
#: (83 k for a one-minute run) finishes the requests before the deadline, and the run ends then.
BACK_TO_BACK_REQUESTS = 5_000_000

#: A Poisson schedule's length in requests varies by about √n around n; this many standard
#: deviations more requests make it outlast the duration all but always.
POISSON_MARGIN_SD = 5


def requests_for_duration(pattern: Pattern, duration_s: float, intensity: float = 1.0) -> int:
    """How many requests a run of ``pattern`` needs to last ``duration_s`` seconds at
    ``intensity`` times its rate (the run's deadline then stops it).

    Fixed gaps need exactly the duration's worth. Exponential gaps add up to the duration
    only on average, so the count gets ``POISSON_MARGIN_SD`` standard deviations more, and 10
    for short runs where that margin is small. A back-to-back pattern gets
    :data:`BACK_TO_BACK_REQUESTS`.

    >>> requests_for_duration(parse_pattern("read 4k rate=1000"), 2.0)
    2000
    >>> requests_for_duration(parse_pattern("read 4k rate=1000 poisson"), 2.0, intensity=2)
    4326
    >>> requests_for_duration(parse_pattern("randread 4k"), 60.0)
    5000000
    """
    if not pattern.gap_ns:
        return BACK_TO_BACK_REQUESTS
    n = max(1, round(duration_s * 1e9 * intensity / pattern.gap_ns))
    if pattern.poisson:
        n += round(POISSON_MARGIN_SD * n**0.5) + 10
    return n


def pattern_trace(spec: str, requests: int, *, span: int | None = None, seed: int = 1) -> Trace:
    """The workload ``spec`` describes, ``requests`` long.

    >>> t = pattern_trace("read seq 4k interarrival=10ms", 3)
    >>> t.offset.tolist(), t.size.tolist(), t.ts_ns.tolist(), t.op.tolist()
    ([0, 4096, 8192], [4096, 4096, 4096], [0, 10000000, 20000000], [0, 0, 0])
    """
    if requests <= 0:
        raise InputError("a pattern needs a positive request count (-n or --duration)")
    p = parse_pattern(spec, span)
    rng = np.random.default_rng(parse_seed(seed))
    if p.order == "seq":
        offset = np.arange(requests, dtype=np.uint64) * p.size
    else:
        room = max((p.span or 1 << 30) // p.size, 1)
        offset = rng.integers(0, room, requests).astype(np.uint64) * p.size
    op = (rng.random(requests) * 100 >= p.read_pct).astype(np.uint8)
    if p.poisson and p.gap_ns:
        ts = np.concatenate([[0], np.cumsum(rng.exponential(p.gap_ns, requests - 1))]).astype(np.int64)
    else:
        ts = np.arange(requests, dtype=np.int64) * p.gap_ns
    return Trace(ts_ns=ts, offset=offset, size=np.full(requests, p.size), op=op, volumes=["pattern"])
