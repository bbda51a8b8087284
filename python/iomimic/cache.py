"""Cache policies replayed over keyed, sized accesses, as libCacheSim replays them
(``docs/cache.md``).

Every access is an object: a key and a size in bytes. A hit counts the size asked now (the
stored size is not updated); a miss admits the object, evicting until it fits, unless it is
larger than the cache. The policies and their libCacheSim counterparts: ``lru`` (LRU),
``fifo`` (FIFO), ``clock`` (Clock), ``lfu`` (LFU), ``arc`` (ARC), ``2q`` (TwoQ) and
``s3fifo`` (S3FIFO), each with libCacheSim's default parameters.

>>> from iomimic import cache
>>> r = cache.replay([1, 2, 1, 3, 1], [4096] * 5, "lru", capacity=8192)
>>> r.hits, r.miss_ratio
(2, 0.6)
>>> sorted(cache.policies())
['2q', 'arc', 'clock', 'fifo', 'lfu', 'lru', 's3fifo']
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from iomimic import _core
from iomimic.errors import InputError
from iomimic.trace import Trace

__all__ = ["Replay", "miss_ratio_curve", "policies", "replay", "requests", "write_oracle_general"]

#: libCacheSim's "oracleGeneral" binary record: time (s), object id, size, next access (-1).
ORACLE_GENERAL = np.dtype([("time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"), ("next_access", "<i8")])


@dataclass(frozen=True)
class Replay:
    """What replaying accesses through a cache found."""

    policy: str
    capacity: int
    accesses: int
    hits: int
    #: Bytes asked for, and of those, bytes found cached.
    bytes: int
    byte_hits: int

    @property
    def miss_ratio(self) -> float:
        return 0.0 if self.accesses == 0 else (self.accesses - self.hits) / self.accesses

    @property
    def byte_miss_ratio(self) -> float:
        return 0.0 if self.bytes == 0 else (self.bytes - self.byte_hits) / self.bytes


def policies() -> dict[str, str]:
    """The built-in policies, name → description."""
    return dict(_core.cache_policies())


def _array(name: str, values: Sequence[int] | np.ndarray, dtype: type) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"`{name}` must be one-dimensional, got shape {arr.shape}")
    if arr.dtype == dtype:
        return np.ascontiguousarray(arr)
    if arr.size and arr.dtype.kind not in "iu":
        raise InputError(f"`{name}` must hold integers, got {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() > np.iinfo(dtype).max):
        raise InputError(f"`{name}` must hold values in [0, {np.iinfo(dtype).max}]")
    return np.ascontiguousarray(arr, dtype=dtype)


def replay(
    keys: Sequence[int] | np.ndarray,
    sizes: Sequence[int] | np.ndarray,
    policy: str = "lru",
    *,
    capacity: int,
) -> Replay:
    """Replays accesses to objects ``keys[i]`` of ``sizes[i]`` bytes through a cache of
    ``capacity`` bytes under ``policy`` (a name from :func:`policies`).

    ``keys`` are any 64-bit unsigned integers, ``sizes`` bytes up to 2^32 − 1 (libCacheSim's
    object size). The replay runs in Rust without the GIL; numpy arrays of ``uint64`` and
    ``uint32`` are used without a copy.

    >>> r = replay([7, 7, 8, 7], [100, 300, 100, 100], "fifo", capacity=150)
    >>> r.hits, r.byte_hits, r.bytes
    (1, 300, 600)
    """
    k = _array("keys", keys, np.uint64)
    s = _array("sizes", sizes, np.uint32)
    if capacity < 0:
        raise InputError(f"`capacity` must be at least 0 bytes, found {capacity}")
    hits, byte_hits = _core.cache_replay(policy, capacity, k, s)
    return Replay(policy, capacity, len(k), hits, int(s.sum(dtype=np.uint64)), byte_hits)


def miss_ratio_curve(
    trace: Trace,
    *,
    budget: int | None = None,
    sampling: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The LRU miss-ratio curve of the trace's 4 KiB blocks, every cache size in one pass: the
    ``mrc`` of :func:`iomimic.characterize`, alone (``docs/characterize.md``).

    Exact while the trace's distinct blocks fit ``budget`` (default 8,388,608; at most 64
    bytes each), else SHARDS-sampled down to it, with the estimated error in
    ``sampling_error``; ``sampling`` forces a rate in (0, 1]. ``progress`` is called with
    (requests taken, requests to take); Ctrl-C stops the work (KeyboardInterrupt).

    >>> t = Trace(ts_ns=[0, 1, 2, 3], offset=[0, 4096, 0, 4096], size=[4096] * 4, op=[0] * 4)
    >>> m = miss_ratio_curve(t)
    >>> m["accesses"], m["cold_misses"], m["curve"][0]["miss_ratio"], m["sampling_rate"]
    (4, 2, 0.5, 1.0)
    """
    return _core.miss_ratio_curve(*trace._core_args(), budget=budget, sampling=sampling, progress=progress)


def requests(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The trace's reads and writes as cache accesses (libCacheSim's block-trace convention):
    each request an object keyed by its (volume, offset) and sized by its length.

    Keys are dense ids (0, 1, … in order of (volume, offset)), so the pairs map one to one.

    >>> t = Trace(ts_ns=[0, 1, 2], offset=[0, 4096, 0], size=[4096, 512, 8192], op=[0, 1, 0])
    >>> keys, sizes = requests(t)
    >>> keys.tolist(), sizes.tolist()
    ([0, 1, 0], [4096, 512, 8192])
    """
    data = (trace.op == 0) | (trace.op == 1)
    pairs = np.stack([trace.volume[data].astype(np.uint64), trace.offset[data]])
    if pairs.shape[1] == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint32)
    _, ids = np.unique(pairs, axis=1, return_inverse=True)
    return ids.reshape(-1).astype(np.uint64), np.ascontiguousarray(trace.size[data])


def write_oracle_general(
    path: str | os.PathLike, keys: Sequence[int] | np.ndarray, sizes: Sequence[int] | np.ndarray
) -> None:
    """Writes accesses as a libCacheSim "oracleGeneral" binary trace (24-byte little-endian
    records: ``u32 time, u64 obj_id, u32 obj_size, i64 next_access_vtime``), for replaying the
    same accesses in libCacheSim (``TraceType.ORACLE_GENERAL_TRACE``).

    Times are written as 0, so libCacheSim's default time-to-live never expires an object (as
    here, where there is none); next-access times as -1 (unknown; only its offline-optimal
    policies read them).
    """
    k = _array("keys", keys, np.uint64)
    s = _array("sizes", sizes, np.uint32)
    if len(k) != len(s):
        raise InputError(f"`keys` and `sizes` must have the same length, found {len(k)} and {len(s)}")
    records = np.zeros(len(k), dtype=ORACLE_GENERAL)
    records["obj_id"] = k
    records["obj_size"] = s
    records["next_access"] = -1
    records.tofile(os.fspath(path))
