"""Everest write off-loading on real files and devices (``iomimic offload``): a base volume
whose writes go to stores (circular logs) while it is loaded, read back whole, reclaimed home
when it is idle, and recovered from the stores' logs after a crash. The core does the work;
this module checks and names the parameters.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = init(d / "vol.dat", [d / "a.log", d / "b.log"], store_size=1 << 20, base_size=1 << 20,
...          mode="always")
>>> v = Volume(d / "vol.dat")
>>> v.write(8192, b"x" * 4096)
>>> v.read(8192, 4096) == b"x" * 4096, v.status()["offloaded_blocks"]
(True, 1)
>>> Volume(d / "vol.dat").status()["offloaded_blocks"]  # recovered from the stores' logs
1
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from iomimic import _core

__all__ = ["Volume", "init", "policy", "status", "store_set"]


def policy(
    mode: str = "auto",
    loaded_iops: float = 200.0,
    light_iops: float = 50.0,
    n_way: int = 1,
    replicas: int = 1,
) -> dict[str, Any]:
    """The off-loading policy: off-load while the base takes ``loaded_iops`` or more
    (``mode="auto"``; ``"always"`` or ``"never"`` to force it), to the ``n_way`` least-loaded
    stores below ``light_iops``, each write on ``replicas`` of them."""
    return {
        "mode": mode,
        "loaded_iops": float(loaded_iops),
        "light_iops": float(light_iops),
        "n_way": int(n_way),
        "replicas": int(replicas),
    }


def init(
    base: str | os.PathLike[str],
    stores: Sequence[str | os.PathLike[str]],
    store_size: int,
    *,
    base_size: int | None = None,
    block_size: int = 4096,
    overwrite: bool = False,
    allow_device: bool = False,
    **policy_options: Any,
) -> dict[str, Any]:
    """Sets ``base`` up to off-load to ``stores``, each created (or checked) at ``store_size``
    bytes and formatted empty, under the engine's write guard; returns the store set written
    beside the base (``BASE.everest``). ``policy_options`` are :func:`policy`'s."""
    return _core.offload_init(
        os.fspath(base),
        [os.fspath(s) for s in stores],
        int(store_size),
        None if base_size is None else int(base_size),
        int(block_size),
        json.dumps(policy(**policy_options)),
        overwrite,
        allow_device,
    )


def store_set(base: str | os.PathLike[str]) -> dict[str, Any]:
    """The store set ``init`` wrote for ``base``."""
    return _core.offload_store_set(os.fspath(base))


def status(base: str | os.PathLike[str], *, accept_loss: bool = False) -> dict[str, Any]:
    """The off-loading state of ``base``, rebuilt from the stores' logs without writing
    anything: base, stores and store set are opened read-only (no recovery writes, no store
    retired). A lost store that held the only copy of some data is refused unless
    ``accept_loss``."""
    return _core.OffloadClient(os.fspath(base), None, accept_loss, True).status()


class Volume:
    """A base volume with its stores, opened (and recovered from the stores' logs).

    Reads and writes are whole blocks (``block_bytes`` of the store set, 4 KiB by default);
    a write is durable when it returns.

    A store that cannot be opened is *lost*: when every off-load has a copy on another store
    the volume opens without it; otherwise the open is refused (naming the store) unless
    ``accept_loss``, as the latest data of ranges off-loaded only there is gone. Either way the
    store is retired from the store set and never used again."""

    def __init__(
        self, base: str | os.PathLike[str], *, accept_loss: bool = False, **policy_options: Any
    ) -> None:
        text = json.dumps(policy(**policy_options)) if policy_options else None
        self._c = _core.OffloadClient(os.fspath(base), text, accept_loss, False)

    def write(self, offset: int, data: bytes) -> None:
        self._c.write(int(offset), bytes(data))

    def read(self, offset: int, length: int) -> bytes:
        return self._c.read(int(offset), int(length))

    def reclaim_step(self) -> int | None:
        """Reclaims one extent if the base is idle: blocks copied home, None when nothing was due."""
        return self._c.reclaim_step()

    def reclaim_all(self) -> int:
        """Copies everything off-loaded home now; blocks reclaimed."""
        return self._c.reclaim_all()

    def readmit(self, store: int) -> None:
        """Takes store number ``store`` back after an I/O error made it unavailable."""
        self._c.readmit(int(store))

    def status(self) -> dict[str, Any]:
        return self._c.status()
