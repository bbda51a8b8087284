"""`iomimic.cache` (crates/iomimic-core/src/cache/): the policies against libCacheSim, the field's
reference simulator, run on the same accesses in the same process.

iomimic's miss ratio and byte miss ratio must equal libCacheSim's for every policy, at several
cache sizes, on seeded traces (Zipf-like popularity; sizes of 512 B to 256 KiB; a scan mixed with
a hot set) and on a real block trace. "Equal" is the same hit count and the same hit bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import iomimic
from iomimic import cache
from iomimic.errors import InputError

try:
    import libcachesim as lcs
except ImportError:  # the reference is a dev dependency (requirements-dev.txt)
    lcs = None

needs_reference = pytest.mark.skipif(
    lcs is None, reason="libcachesim (the reference simulator) is not installed: pip install libcachesim"
)

#: iomimic's policy names → libCacheSim's classes, each with its default parameters.
REFERENCE = {
    "lru": "LRU",
    "fifo": "FIFO",
    "clock": "Clock",
    "lfu": "LFU",
    "arc": "ARC",
    "2q": "TwoQ",
    "s3fifo": "S3FIFO",
}
#: Cache sizes as fractions of the bytes of distinct objects: from one where many objects do
#: not fit at all (or not in S3-FIFO's and 2Q's small queues) to one holding much of the set.
FRACTIONS = (0.002, 0.01, 0.05, 0.2, 0.6)


def _zipf_keys(rng: np.random.Generator, n: int, objects: int, alpha: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, objects + 1) ** alpha
    return rng.permutation(objects)[rng.choice(objects, n, p=weights / weights.sum())].astype(np.uint64)


def _seeded(name: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, name)))
    n, objects = 40_000, 5_000
    if name == "zipf, 4 KiB":
        return _zipf_keys(rng, n, objects, 0.9), np.full(n, 4096, np.uint32)
    if name == "zipf, 512 B to 256 KiB":
        keys = _zipf_keys(rng, n, objects, 1.0)
        sizes = rng.integers(512, 256 * 1024 + 1, objects).astype(np.uint32)[keys]
        # a request in 20 asks for another size: a hit counts it, the stored size stays
        other = rng.random(n) < 0.05
        sizes[other] = rng.integers(512, 256 * 1024 + 1, other.sum())
        return keys, sizes
    if name == "scan and hot set, 512 B to 64 KiB":
        scan = rng.random(n) < 0.6
        keys = np.where(scan, 10**6 + np.cumsum(scan) % 8_000, rng.integers(0, 400, n)).astype(np.uint64)
        return keys, (512 + keys * 2_654_435_761 % (64 * 1024 - 511)).astype(np.uint32)
    raise ValueError(name)


def _footprint(keys: np.ndarray, sizes: np.ndarray) -> int:
    _, first = np.unique(keys, return_index=True)
    return int(sizes[first].sum(dtype=np.uint64))


def _reference(policy: str, capacity: int, path: Path) -> tuple[float, float]:
    reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
    # a hash table of 2^18 slots to start (the default, 2^24, takes longer to allocate than
    # these traces take to replay; it grows as needed and does not change what is cached)
    return getattr(lcs, REFERENCE[policy])(capacity, hashpower=18).process_trace(reader)


def _check_against_reference(keys: np.ndarray, sizes: np.ndarray, path: Path) -> None:
    cache.write_oracle_general(path, keys, sizes)
    n, total = len(keys), int(sizes.sum(dtype=np.uint64))
    footprint = _footprint(keys, sizes)
    for fraction in FRACTIONS:
        capacity = int(footprint * fraction)
        for policy in REFERENCE:
            miss, byte_miss = _reference(policy, capacity, path)
            ours = cache.replay(keys, sizes, policy, capacity=capacity)
            where = f"{policy} at {capacity:,} bytes"
            # libCacheSim reports ratios; back to counts (exact well within a double)
            assert ours.hits == n - round(miss * n), where
            assert ours.byte_hits == total - round(byte_miss * total), where


def test_the_policies_are_the_registry() -> None:
    assert set(cache.policies()) == set(REFERENCE)


def test_replay_checks_its_arguments() -> None:
    with pytest.raises(InputError, match="`policy`"):
        cache.replay([1], [1], "belady", capacity=10)
    with pytest.raises(InputError, match="same length"):
        cache.replay([1, 2], [1], capacity=10)
    with pytest.raises(InputError, match="`sizes`"):
        cache.replay([1], [-1], capacity=10)
    with pytest.raises(InputError, match="`keys`"):
        cache.replay([0.5], [1], capacity=10)
    assert cache.replay([], [], capacity=10).miss_ratio == 0.0


def test_a_hit_counts_the_size_asked_now() -> None:
    # 7 is stored at 100 bytes; asked again at 300 it hits, counts 300, and still takes 100,
    # so 8 (50 bytes) fits beside it in 150
    r = cache.replay([7, 7, 8, 7], [100, 300, 50, 100], "lru", capacity=150)
    assert (r.hits, r.byte_hits, r.bytes) == (2, 400, 550)


@needs_reference
@pytest.mark.parametrize(
    "name", ["zipf, 4 KiB", "zipf, 512 B to 256 KiB", "scan and hot set, 512 B to 64 KiB"]
)
def test_equals_libcachesim_on_seeded_traces(name: str, tmp_path: Path) -> None:
    keys, sizes = _seeded(name)
    _check_against_reference(keys, sizes, tmp_path / "trace.og")


@needs_reference
def test_the_policies_differ_on_the_seeded_traces() -> None:
    # guards the comparison above against a trace on which every policy looks alike
    keys, sizes = _seeded("scan and hot set, 512 B to 64 KiB")
    capacity = _footprint(keys, sizes) // 10
    ratios = {p: cache.replay(keys, sizes, p, capacity=capacity).miss_ratio for p in REFERENCE}
    assert len({round(r, 4) for r in ratios.values()}) == len(ratios), ratios


@needs_reference
@pytest.mark.parametrize("passes", [1, 2])
def test_equals_libcachesim_on_a_real_block_trace(passes: int, wsrch_small: Path, tmp_path: Path) -> None:
    # every request an object keyed by (volume, offset), sized by its length. The first minute
    # of WebSearch barely repeats a request (3 of 24,783), so once through mostly checks
    # admission and eviction with real sizes; played twice, every request recurs.
    keys, sizes = cache.requests(iomimic.read_trace(wsrch_small))
    assert len(keys) == 24_783
    _check_against_reference(np.tile(keys, passes), np.tile(sizes, passes), tmp_path / "wsrch.og")


@needs_reference
def test_the_exact_curve_equals_libcachesim_lru_on_a_real_trace(wsrch_small: Path, tmp_path: Path) -> None:
    # every 4 KiB block access an object of 4 KiB keyed by (volume, block): libCacheSim's LRU at
    # each of the curve's sizes misses exactly what the one-pass curve says
    t = iomimic.read_trace(wsrch_small)
    m = cache.miss_ratio_curve(t)
    first = t.offset // 4096
    count = ((t.offset + t.size - 1) // 4096 - first + 1).astype(np.int64)
    within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    keys = (np.repeat(t.volume.astype(np.uint64), count) << np.uint64(40)) | (
        np.repeat(first, count) + within.astype(np.uint64)
    )
    assert m["accesses"] == len(keys) and len(m["curve"]) > 5
    path = tmp_path / "blocks.og"
    cache.write_oracle_general(path, keys, np.full(len(keys), 4096, dtype=np.uint32))
    for point in m["curve"]:
        reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
        miss, _ = lcs.LRU(point["cache_bytes"]).process_trace(reader)
        assert miss == pytest.approx(point["miss_ratio"], abs=1e-12), point
    # sampled down to a tenth of its blocks, it stays within three stated errors of exact
    sampled = cache.miss_ratio_curve(t, budget=m["footprint_bytes"] // 4096 // 10)
    gaps = [
        abs(a["miss_ratio"] - b["miss_ratio"]) for a, b in zip(sampled["curve"], m["curve"], strict=False)
    ]
    assert sampled["sampling_error"] > 0 and max(gaps) <= 3 * sampled["sampling_error"]


@needs_reference
@settings(max_examples=150, deadline=None)
@given(
    accesses=st.lists(st.tuples(st.integers(0, 30), st.integers(1, 40)), max_size=300),
    capacity=st.integers(0, 400),
    policy=st.sampled_from(sorted(REFERENCE)),
)
def test_any_small_trace_equals_libcachesim_access_by_access(
    accesses: list[tuple[int, int]], capacity: int, policy: str
) -> None:
    # few keys, sizes near the capacity and its queues' shares: the corners of every policy
    if policy == "s3fifo":
        # libCacheSim aborts the process when S3-FIFO's small queue would get 0 bytes
        capacity = max(capacity, 10)
    reference = getattr(lcs, REFERENCE[policy])(capacity, hashpower=8)
    hits = [reference.get(lcs.Request(obj_size=s, obj_id=k)) for k, s in accesses]
    keys = np.array([k for k, _ in accesses], dtype=np.uint64)
    sizes = np.array([s for _, s in accesses], dtype=np.uint32)
    # every prefix: the first access where the two differ fails
    for n in range(len(accesses) + 1):
        r = cache.replay(keys[:n], sizes[:n], policy, capacity=capacity)
        assert r.hits == sum(hits[:n]), (policy, n)
    assert r.byte_hits == int(sizes[np.array(hits, dtype=bool)].sum(dtype=np.uint64))
