"""Test workloads made with numpy (never with iomimic's own model): traces with the properties a
model must keep, to measure it against."""

from __future__ import annotations

import numpy as np

from iomimic import Trace

S = 10**9
KIB = 1024
GIB = 1 << 30


def _events(rng: np.random.Generator, events_seed: int | None) -> np.random.Generator:
    """The generator of a trace's events: its layout's own (one stream, as the traces were first
    made) or, given `events_seed`, one of its own, so that the same layout (where the hot set
    lies, its sizes and popularity) can be drawn again with other events."""
    return rng if events_seed is None else np.random.default_rng(events_seed)


def hot_and_cold(n: int = 60_000, seed: int = 3, events_seed: int | None = None) -> Trace:
    """80 % of reads go to a hot set of 2,000 blocks (8 MiB), the rest anywhere in 40 GiB, with
    sequential runs of 4 KiB writes in between: temporal locality a model must keep."""
    rng = np.random.default_rng(seed)
    hot = rng.integers(0, 1 << 20, 2000) * 4096
    rng = _events(rng, events_seed)
    kind = rng.random(n)
    offset = np.where(kind < 0.8, hot[rng.integers(0, 2000, n)], rng.integers(0, 10 << 20, n) * 4096)
    op = np.zeros(n, np.uint8)
    writes = kind > 0.9
    op[writes] = 1
    # writes append sequentially to a log region
    offset[writes] = (20 << 30) + np.arange(writes.sum()) * 4096
    ts = np.cumsum(rng.exponential(500_000, n)).astype(np.uint64)
    return Trace(ts_ns=ts, offset=offset, size=np.full(n, 4096), op=op)


def _on_off_background(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Arrival times (s) of a background that alternates busy stretches (8/s, ~5 s long) and
    quiet ones (0.3/s, ~1 s long)."""
    times, t, busy = [], 0.0, True
    while t < seconds:
        length = rng.lognormal(np.log(5.0 if busy else 1.0), 0.6)
        rate = 8.0 if busy else 0.3
        k = rng.poisson(rate * length)
        times.append(t + np.sort(rng.uniform(0, length, k)))
        t += length
        busy = not busy
    out = np.concatenate(times)
    return out[out < seconds]


def _bursts(rng: np.random.Generator, seconds: float, every_s: float) -> list[np.ndarray]:
    """Bursts: starts spaced exponentially (mean ``every_s``), lengths lognormal (median 250
    requests, up to 6,000), gaps inside a burst exponential with a 0.25 ms mean (4,000 IOPS)."""
    bursts, t = [], rng.exponential(every_s)
    while t < seconds:
        k = int(min(8000, max(5, rng.lognormal(np.log(300), 1.2))))
        bursts.append(t + np.cumsum(rng.exponential(0.25e-3, k)))
        t += rng.exponential(every_s)
    return bursts


def burst_reuse_trace(
    seconds: float = 3600, seed: int = 7, burst_every_s: float = 25.0, events_seed: int | None = None
) -> Trace:
    """A virtual-machine-disk-like trace: one volume, on/off arrivals whose one-second peaks are
    over 100x the mean, and heavy reuse.

    Background requests read a hot set of 20,000 objects (4-64 KiB, Zipf-like popularity,
    exponent 0.9), overwrite hot objects, re-read recent writes, append 4 KiB journal writes
    (a 256 MiB journal that wraps) and write fresh blocks anywhere in 64 GiB. Bursts either
    scan 64 KiB reads sequentially through a 1 GiB region (most re-scanning where an earlier
    scan started) or storm the hot set with reads or writes. `events_seed`: the same hot set
    (places, sizes, popularity), other requests.
    """
    rng = np.random.default_rng(seed)
    hot_n = 20_000
    hot_off = rng.choice(2 * GIB // (4 * KIB), hot_n, replace=False).astype(np.uint64) * 4 * KIB
    hot_size = rng.choice([4, 8, 16, 32, 64], hot_n, p=[0.55, 0.2, 0.1, 0.05, 0.1]).astype(np.uint64) * KIB
    zipf = 1.0 / np.arange(1, hot_n + 1) ** 0.9
    read_rank = rng.permutation(hot_n)
    write_rank = rng.permutation(hot_n)
    p_zipf = zipf / zipf.sum()
    rng = _events(rng, events_seed)

    reqs: list[tuple[float, int, int, int]] = []  # (time s, offset, size, op)
    journal, journal_base, journal_len = 0, 40 * GIB, 256 << 20
    recent_writes: list[tuple[int, int]] = []
    bg = _on_off_background(rng, seconds)
    kinds = rng.random(len(bg))
    picks_r = read_rank[rng.choice(hot_n, len(bg), p=p_zipf)]
    picks_w = write_rank[rng.choice(hot_n, len(bg), p=p_zipf)]
    for t, u, r, w in zip(bg, kinds, picks_r, picks_w):
        if u < 0.30:
            reqs.append((t, int(hot_off[r]), int(hot_size[r]), 0))
        elif u < 0.55:
            reqs.append((t, int(hot_off[w]), int(hot_size[w]), 1))
            recent_writes.append((int(hot_off[w]), int(hot_size[w])))
        elif u < 0.70 and recent_writes:
            back = min(len(recent_writes), 1 + int(rng.geometric(0.02)))
            off, size = recent_writes[-back]
            reqs.append((t, off, size, 0))
        elif u < 0.90:
            reqs.append((t, journal_base + journal, 4 * KIB, 1))
            journal = (journal + 4 * KIB) % journal_len
        else:
            off = int(rng.integers(0, 64 * GIB // (4 * KIB))) * 4 * KIB
            size = int(rng.choice([4, 8])) * KIB
            reqs.append((t, off, size, 1))
            recent_writes.append((off, size))
        del recent_writes[:-2000]
    scanned: list[int] = []
    for times in _bursts(rng, seconds, burst_every_s):
        kind = rng.random()
        if kind < 0.3:
            if scanned and rng.random() < 0.7:
                start = scanned[int(rng.integers(len(scanned)))]
            else:
                start = int(rng.integers(4 * GIB // (64 * KIB), 5 * GIB // (64 * KIB))) * 64 * KIB
                scanned.append(start)
            reqs.extend((t, start + i * 64 * KIB, 64 * KIB, 0) for i, t in enumerate(times))
        else:
            # a storm on the hot set: reads, or a flush of dirty hot objects
            op = 0 if kind < 0.7 else 1
            picks = (read_rank if op == 0 else write_rank)[rng.choice(hot_n, len(times), p=p_zipf)]
            reqs.extend((t, int(hot_off[r]), int(hot_size[r]), op) for t, r in zip(times, picks))
    reqs = [r for r in reqs if r[0] < seconds]
    reqs.sort(key=lambda r: r[0])
    cols = np.array(reqs, dtype=np.float64)
    return Trace(
        ts_ns=(cols[:, 0] * S).astype(np.uint64),
        offset=cols[:, 1].astype(np.uint64),
        size=cols[:, 2].astype(np.uint32),
        op=cols[:, 3].astype(np.uint8),
    )
