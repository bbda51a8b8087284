"""The command reference at the end of docs/cli.md: every command's `--help`, as printed.

`make docs` (``python -m iomimic.cli.reference --write``) rewrites it; a test checks that the
page matches what the parsers print, so the page cannot drift from the options.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

#: The generated part of docs/cli.md starts at this line and runs to the end of the page.
MARKER = "<!-- Everything below is generated from --help by `make docs`; do not edit. -->"
#: The width --help is wrapped at on the page (terminals vary; the page must not).
WIDTH = "100"


def _commands(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    """(full command name, parser) for ``parser`` and every subcommand beneath it, in order."""
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _commands(sub, f"{name} {sub_name}")
    return found


def reference() -> str:
    """The generated section: one heading and `--help` block per command."""
    from iomimic.cli import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parts = [MARKER, "", "## Reference: every command's --help", ""]
        for name, parser in _commands(build_parser(), "iomimic"):
            parts += [f"### `{name}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return "\n".join(parts)


def page_with_reference(page: str) -> str:
    """docs/cli.md's text with its generated section replaced by the current one."""
    head = page.split(MARKER)[0].rstrip("\n")
    return f"{head}\n\n{reference()}"


def main() -> int:
    path = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
    text = path.read_text()
    fresh = page_with_reference(text)
    if "--write" in sys.argv[1:]:
        path.write_text(fresh)
        return 0
    return 0 if fresh == text else 1


if __name__ == "__main__":
    sys.exit(main())
