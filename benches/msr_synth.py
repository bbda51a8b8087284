"""Synthetic MSR-Cambridge-format lines, for the read benchmark and the built-in example.

Requests come in sequential runs at random places on a few volumes, with exponential gaps, so the
file looks like a real MSR trace to every reader (FILETIME stamps, hostnames, Read/Write).
"""

from __future__ import annotations

import numpy as np
import polars as pl

FILETIME_2007 = 128_166_372_000_000_000  # 2007-02-22, when the MSR traces were recorded


def msr_frame(n: int, seed: int = 7, hosts: tuple[str, ...] = ("hm", "web", "prxy")) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(2_000.0, n).astype(np.int64)  # 100 ns ticks: mean 200 µs
    ts = FILETIME_2007 + np.cumsum(gaps)
    size = rng.choice(np.array([512, 4096, 8192, 16384, 65536]), n, p=[0.1, 0.5, 0.2, 0.15, 0.05])
    run_start = rng.random(n) < 0.3
    run_start[0] = True
    starts = np.flatnonzero(run_start)
    run_id = np.cumsum(run_start) - 1
    jump = rng.integers(0, 1 << 24, starts.size) * 4096
    # within a run each request starts where the previous one ended
    within = np.cumsum(size) - size
    offset = jump[run_id] + within - within[starts][run_id]
    # a run stays on one volume, as a sequential stream does
    host_idx = rng.integers(0, len(hosts), starts.size)[run_id]
    disk = rng.integers(0, 2, starts.size)[run_id]
    return pl.DataFrame(
        {
            "Timestamp": ts,
            "Hostname": np.array(hosts)[host_idx],
            "DiskNumber": disk,
            "Type": np.where(rng.random(n) < 0.7, "Read", "Write"),
            "Offset": offset.astype(np.int64),
            "Size": size,
            "ResponseTime": rng.integers(50, 100_000, n),
        }
    )


def realistic_trace(n: int, volumes: int = 16, streams_per_volume: int = 4, seed: int = 3):
    """An iomimic Trace shaped like a many-volume MSR or cloud trace, for the benchmarks that
    must not flatter: volumes of Zipf-like activity, several streams on each, 40 % of requests
    to a hot set of 200,000 blocks per volume re-used with Zipf-like popularity, the rest spread
    over 256 GiB, 30 % continuing the previous request, 512 B to 64 KiB, 35 % writes."""
    import iomimic

    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, volumes + 1)
    vol = rng.choice(volumes, n, p=weights / weights.sum()).astype(np.uint32)
    stream = (vol * streams_per_volume + rng.integers(0, streams_per_volume, n)).astype(np.uint32)
    size = rng.choice(np.array([512, 4096, 8192, 16384, 65536]), n, p=[0.1, 0.5, 0.2, 0.15, 0.05]).astype(
        np.uint32
    )
    hot = rng.random(n) < 0.4
    block = np.where(hot, (rng.pareto(1.0, n) * 100).astype(np.uint64) % 200_000, rng.integers(0, 1 << 26, n))
    offset = block.astype(np.uint64) * 4096
    follows = rng.random(n) < 0.3
    offset[1:] = np.where(follows[1:], offset[:-1] + size[:-1], offset[1:])
    return iomimic.Trace(
        ts_ns=np.cumsum(rng.exponential(200_000, n)).astype(np.uint64),
        offset=offset,
        size=size,
        op=(rng.random(n) < 0.35).astype(np.uint8),
        volume=vol,
        stream=stream,
        volumes=[f"vol{i}" for i in range(volumes)],
    )


def write_msr(path: str, n: int, seed: int = 7) -> None:
    """Writes `n` MSR lines, without a header as the real traces have none."""
    msr_frame(n, seed).write_csv(path, include_header=False)


if __name__ == "__main__":
    import sys

    write_msr(sys.argv[1], int(sys.argv[2]))
