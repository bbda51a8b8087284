"""Models built from published figures, shipped with iomimic as data files the core loads
(``crates/iomimic-core/src/model/presets/*.toml``): ``tpcc``, ``tpce``, ``tpch`` and
``messenger``. Each file says where every number comes from; what the sources leave open is
listed under its assumptions, also shown by :func:`assumptions` and in ``docs/model.md``.
"""

from __future__ import annotations

from typing import Any

from iomimic import _core
from iomimic.model import Model

#: The preset names.
PRESETS: tuple[str, ...] = tuple(_core.model_presets())


def preset(name: str) -> Model:
    """The named preset model.

    >>> preset("tpcc").data["threads"][0]["name"]
    'Log #0'
    """
    return Model._wrap(_core.preset_model(name))


def info(name: str) -> dict[str, Any]:
    """A preset's file as data: description, references, assumptions, volumes, threads and the
    published figures it must reproduce."""
    return _core.preset_info(name)


def assumptions(name: str) -> list[str]:
    """What the preset assumes where its sources are silent."""
    return info(name)["assumptions"]


def published(name: str) -> dict[str, Any]:
    """The published figures a workload generated from the preset must reproduce."""
    return info(name)["published"]
