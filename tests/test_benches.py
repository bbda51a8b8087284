"""The fidelity benchmark's arithmetic, and one round of it end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parent.parent / "benches"


@pytest.fixture(scope="module")
def fidelity():
    sys.path.insert(0, str(BENCHES))
    import fidelity

    return fidelity


def _run(seed: int, variation: float, baseline: float, redraw: float | None = None) -> dict:
    row = {"variation": variation, "target": 0.02, "ok": abs(variation) <= 0.02}
    row |= {"baseline_variation": baseline, "baseline_ok": abs(baseline) <= 0.02}
    row |= {"redraw_variation": redraw, "redraw_ok": None if redraw is None else abs(redraw) <= 0.02}
    return {"seed": seed, "rows": {"IOPS": row}, "passed": int(row["ok"]), "checked": 1, "baseline_passed": 0}


def test_the_summary_by_hand(fidelity) -> None:
    # errors 0.01 and 0.03 (signs dropped): mean 0.02, sample deviation 0.01·√2, so a standard
    # error of 0.01; one seed within the target of 0.02; the baseline 0.5 both times
    (f,) = fidelity.summary([_run(1, 0.01, 0.5), _run(2, -0.03, -0.5)])
    assert f["metric"] == "IOPS" and f["target"] == 0.02 and f["seeds"] == 2
    assert f["mean"] == pytest.approx(0.02) and f["stderr"] == pytest.approx(0.01)
    assert f["worst"] == pytest.approx(0.03) and f["within"] == 1
    assert f["baseline_mean"] == pytest.approx(0.5) and f["baseline_within"] == 0
    assert f["redraw_mean"] is None and f["redraw_within"] == 0  # a trace without a process
    # another draw of the process 0.01 and 0.04 off: mean 0.025, one within
    (f,) = fidelity.summary([_run(1, 0.01, 0.5, -0.01), _run(2, -0.03, -0.5, 0.04)])
    assert f["redraw_mean"] == pytest.approx(0.025) and f["redraw_within"] == 1


def test_one_round_on_the_hot_set_trace(tmp_path: Path) -> None:
    out = tmp_path / "fidelity.json"
    args = ["--seeds", "1", "--first", "4", "--trace", "hot-and-cold", "--jobs", "1", "--json", str(out)]
    r = subprocess.run([sys.executable, str(BENCHES / "fidelity.py"), *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "hot-and-cold seed 4:" in r.stdout and "targets met:" in r.stdout
    run = json.loads(out.read_text())["hot-and-cold"]["runs"][0]
    assert run["seed"] == 4
    # the hot set's curve is what the model keeps and the locality-free baseline loses
    curve = run["rows"]["miss-ratio curve error"]
    assert curve["ok"] and not curve["baseline_ok"]
    # another draw of the same hot set's requests meets it too; the summary counts the draw
    assert curve["redraw_ok"] and run["redraw_passed"] >= 15
    assert "another draw of its process" in r.stdout
