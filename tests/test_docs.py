"""The `>>>` examples in the package's docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "iomimic",
    "iomimic.trace",
    "iomimic.io",
    "iomimic.profile",
    "iomimic.units",
    "iomimic.model",
    "iomimic.presets",
    "iomimic.pattern",
    "iomimic.fio_export",
    "iomimic.cache",
    "iomimic.report",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
