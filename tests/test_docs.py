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
    "iomimic.offload",
    "iomimic.report",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0


def test_pages_name_the_papers_they_cite() -> None:
    """Pages cite papers by author, venue and year (docs/references.md), never by the internal
    file names of the specification ("seed 004", "the seeds")."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    pages = [root / "README.md", root / "CHANGELOG.md", *sorted((root / "docs").glob("*.md"))]
    internal = re.compile(r"\bseed 00\d|\bthe seeds?\b|\bseeds'|\bseed's\b", re.IGNORECASE)
    found = [
        f"{p.name}:{n}"
        for p in pages
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if internal.search(line)
    ]
    assert not found, found
    references = (root / "docs" / "references.md").read_text()
    for venue in ("IISWC 2011", "TPCTC 2011", "OSDI 2008", "CAECW 2001", "Tang et al., 2018"):
        assert venue in references


def test_cli_page_matches_help() -> None:
    """docs/cli.md ends with every command's --help as the parsers print it (`make docs`)."""
    from pathlib import Path

    from iomimic.cli.reference import MARKER, page_with_reference

    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    assert MARKER in page
    assert page_with_reference(page) == page, "docs/cli.md is out of date with --help: run `make docs`"
