"""Simple IOMeter/fio-style tests as workloads: ``"read seq 4k interarrival=10ms"``,
``"randread 4k"``, ``"write rand 64k rate=500 mix=70"``. The grammar and the generator live in
the core (``synth::pattern``); this module checks arguments and forwards.

Words, in any order:

- the operation: ``read``, ``write``, ``randread``, ``randwrite``, ``readwrite`` / ``rw``
  (mixed; ``mix=P`` percent reads, default 50), optionally with ``seq`` or ``rand``
  (default ``rand``; ``randread`` and the like say it themselves);
- a request size: ``4k``, ``64KiB``, ``1m`` (default 4 KiB);
- the timing: ``interarrival=10ms`` (fixed gaps), ``rate=500`` (requests per second, fixed
  gaps), add ``poisson`` for exponential gaps at that mean; none: back-to-back (for
  closed-loop runs with ``--iodepth``);
- ``span=1g``: the address range random requests fall in (default: the target's size, 1 GiB
  when unknown);
- ``zipf=0.9``: random offsets by Zipf popularity, as fio's ``random_distribution=zipf:0.9``
  (the k-th most popular block drawn with probability ∝ 1/k^θ, hot blocks spread over the
  span): a workload with reuse, for cache studies.
"""

from __future__ import annotations

from dataclasses import dataclass

from iomimic import _core
from iomimic.trace import Trace
from iomimic.units import parse_seed


@dataclass(frozen=True)
class Pattern:
    """What a ``--pattern`` spec says: the read percentage, sequential or random offsets, the
    request size, the mean gap between requests (0: back to back), whether gaps are
    exponential, the span random offsets fall in (``None``: the caller's default), and the
    Zipf exponent of their popularity (``None``: uniform)."""

    read_pct: int
    sequential: bool
    size: int
    gap_ns: int
    poisson: bool
    span: int | None
    zipf: float | None = None


def parse_pattern(spec: str) -> Pattern:
    """Reads a ``--pattern`` spec; a bad word raises InputError naming it.

    >>> parse_pattern("rw 64k rate=500 mix=70 poisson")
    Pattern(read_pct=70, sequential=False, size=65536, gap_ns=2000000, poisson=True, span=None, zipf=None)
    """
    return Pattern(*_core.parse_pattern(spec))


def requests_for_duration(spec: str, duration_ns: int, intensity: float = 1.0) -> int:
    """How many requests a run of ``spec`` needs to last ``duration_ns`` at ``intensity`` times
    its rate (the run's deadline then stops it): the schedule's count for fixed gaps; five
    standard deviations more (and 10) for exponential ones, which add up to the duration only
    on average; 5,000,000 for a back-to-back pattern (a run faster than that many requests in
    its duration ends early).

    >>> requests_for_duration("read 4k rate=1000", 2 * 10**9)
    2000
    >>> requests_for_duration("read 4k rate=1000 poisson", 2 * 10**9, intensity=2)
    4326
    >>> requests_for_duration("randread 4k", 60 * 10**9)
    5000000
    """
    return _core.pattern_requests(spec, duration_ns, float(intensity))


def pattern_trace(spec: str, requests: int, *, span: int | None = None, seed: int = 1) -> Trace:
    """The workload ``spec`` describes, ``requests`` long; random offsets fall in the
    pattern's ``span=``, else ``span``, else 1 GiB.

    >>> t = pattern_trace("read seq 4k interarrival=10ms", 3)
    >>> t.offset.tolist(), t.size.tolist(), t.ts_ns.tolist(), t.op.tolist()
    ([0, 4096, 8192], [4096, 4096, 4096], [0, 10000000, 20000000], [0, 0, 0])
    """
    if requests <= 0:
        from iomimic.errors import InputError

        raise InputError("a pattern needs a positive request count (`requests` or `duration`)")
    return Trace._from_reader(_core.pattern_trace(spec, requests, span=span, seed=parse_seed(seed)))
