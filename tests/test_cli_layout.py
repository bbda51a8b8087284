"""The shape of the command line: one module per command with a parser and a handler, every
--help works, and tables are built only in iomimic.report."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

import iomimic
from iomimic.cli import COMMANDS, build_parser, command_modules, main

PACKAGE = Path(iomimic.__file__).parent


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every (sub)command under ``parser``: (words, its parser)."""
    for name, sub in _subparsers(parser).items():
        yield (*path, name), sub
        yield from _commands(sub, (*path, name))


COMMAND_PATHS = [words for words, _ in _commands(build_parser())]


def test_every_command_module_registers_a_parser_and_handlers() -> None:
    parser = build_parser()
    modules = command_modules()
    # the registry lists the modules in the order --help shows the commands
    assert list(_subparsers(parser)) == list(COMMANDS)
    for module in modules:
        assert callable(getattr(module, "register", None)), module.__name__
    handlers = {}
    for words, sub in _commands(parser):
        if _subparsers(sub):
            continue  # `model`, `export`: their actions run, not they
        handler = sub.get_default("handler")
        assert callable(handler), words
        handlers.setdefault(handler.__module__, []).append(words)
    # each command's handlers live in its own module; a family's (study) in a module each
    from iomimic.cli.study import STUDIES

    families = {"iomimic.cli.study": [f"iomimic.cli.study.{name}" for name in STUDIES]}
    expected = [name for m in modules for name in families.get(m.__name__, [m.__name__])]
    assert sorted(handlers) == sorted(expected)
    for module_name, commands in handlers.items():
        if module_name.startswith("iomimic.cli.study."):
            assert all(words[0] == "study" for words in commands), (module_name, commands)
            continue
        assert all(module_name.endswith("." + words[0]) for words in commands), (module_name, commands)


@pytest.mark.parametrize("words", [(), *COMMAND_PATHS], ids=lambda w: " ".join(w) or "iomimic")
def test_every_help_exits_0(words: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([*words, "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: " + " ".join(("iomimic", *words)))


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_rich_tables_are_built_only_in_report() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        part = path.relative_to(PACKAGE).parts[0]
        imports = _imports(path)
        uses_rich = {m for m in imports if m == "rich" or m.startswith("rich.")}
        if part == "report":
            continue
        # the CLI draws progress bars; tables are the renderers' job
        assert "rich.table" not in uses_rich, path
        if part == "cli":
            continue
        # the library neither prints tables nor reaches for the modules that do
        assert not uses_rich, path
        assert not {m for m in imports if m.startswith(("iomimic.report", "iomimic.cli"))}, path
