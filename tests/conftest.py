"""Shared helpers for the test suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SHARED_TRACES = ROOT.parent / "shared" / "traces"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs `iomimic ARGS` in a fresh interpreter, as a user would, capturing its output."""
    return subprocess.run(
        [sys.executable, "-m", "iomimic.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def start_cli(*args: str, cwd: Path | None = None) -> subprocess.Popen:
    """Starts `iomimic ARGS` in the background, for tests that act on it while it runs."""
    return subprocess.Popen(
        [sys.executable, "-m", "iomimic.cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def wsrch_small() -> Path:
    path = SHARED_TRACES / "wsrch-small.trace"
    if not path.exists():
        pytest.skip(f"the shared real trace is absent ({path}); it lives beside the repository, not in it")
    return path
