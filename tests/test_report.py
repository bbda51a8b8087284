"""`iomimic report`: one self-contained HTML page, checked in a real headless browser, and
`characterize --report` writing the same figures as PNG."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import iomimic
from iomimic import presets

from .conftest import ROOT, run_cli

FIGURES = ["lba-time", "rates", "sizes", "interarrival", "heat", "mrc"]
#: Where the browser's screenshot of the page is kept after the test (ignored by git).
SCREENSHOT = ROOT / "target" / "test-output" / "report.png"


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    """A preset's trace and a synthetic one from a model trained on it."""
    d = tmp_path_factory.mktemp("report")
    original = presets.preset("tpcc").generate(20_000, seed=1)
    original.stream_names = {0: "postgres: checkpointer"}
    synthetic = iomimic.model.train(original).generate(20_000, seed=2)
    iomimic.write_trace(original, d / "original.parquet")
    iomimic.write_trace(synthetic, d / "synthetic.parquet")
    return d / "original.parquet", d / "synthetic.parquet"


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    pytest.skip("no Chromium: `make test` installs it from the OS packages (apt-get install chromium)")


def test_page_is_self_contained_and_draws_every_chart(pair: tuple[Path, Path], tmp_path: Path) -> None:
    original, synthetic = pair
    page = tmp_path / "report.html"
    r = run_cli("report", str(original), str(synthetic), "-o", str(page))
    assert r.returncode == 0, r.stderr
    text = page.read_text()
    # nothing fetched at view time: no external scripts, styles, images or fonts
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "url(http" not in text and "@import" not in text
    assert [m for m in re.findall(r'data-chart="([a-z-]+)"', text)] == FIGURES
    assert text.count("<svg") >= len(FIGURES)
    assert "Validation: original against synthetic" in text and "targets met" in text
    assert "0 (postgres: checkpointer)" in text  # the streams table names the process

    browser = _browser()
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    run = subprocess.run(
        [
            *base,
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    body = re.search(r"<body[^>]*>", run.stdout).group(0)
    assert f'data-charts="{len(FIGURES)}"' in body and f'data-charts-drawn="{len(FIGURES)}"' in body, body
    console = [line for line in run.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    shot = subprocess.run(
        [*base, "--window-size=1400,5200", f"--screenshot={SCREENSHOT}", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.returncode == 0 and SCREENSHOT.stat().st_size > 50_000, shot.stderr[-2000:]


def test_single_trace_page_and_pngs(pair: tuple[Path, Path], tmp_path: Path) -> None:
    original, _ = pair
    page = tmp_path / "one.html"
    r = run_cli("report", str(original), "-o", str(page), "--title", "TPC-C, 20k", "--op", "read")
    assert r.returncode == 0, r.stderr
    text = page.read_text()
    assert "<title>TPC-C, 20k</title>" in text and "Validation" not in text
    r = run_cli("characterize", str(original), "--mrc", "none", "--report", str(tmp_path / "png"))
    assert r.returncode == 0, r.stderr
    for name in FIGURES:
        png = tmp_path / "png" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5_000


def test_report_refuses_to_overwrite_its_input(pair: tuple[Path, Path]) -> None:
    original, _ = pair
    r = run_cli("report", str(original), "-o", str(original))
    assert r.returncode == 2
    assert f"{original}: the output --output is the input trace; writing it would destroy" in r.stderr


def test_a_trace_of_one_request_draws_without_warnings(tmp_path: Path) -> None:
    """One request spans no time: every chart still gets a width, and nothing leaks to stderr."""
    path = tmp_path / "one.parquet"
    iomimic.write_trace(iomimic.Trace(ts_ns=[0], offset=[0], size=[4096], op=[0]), path)
    r = run_cli("report", str(path), "-o", str(tmp_path / "one.html"))
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr, r.stderr
    assert (tmp_path / "one.html").stat().st_size > 0
