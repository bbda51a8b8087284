"""`iomimic study cache-alloc`: Tang et al.'s worked example number for number, measured
curves, the closed loop, and errors that name the field, through the library and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic.study import run_alone

from .conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
TPCW = ROOT / "docs" / "examples" / "tpcw-apps.toml"
CHANGES = ROOT / "docs" / "examples" / "mix-changes.toml"


def by_scheme(scenario: dict) -> dict[str, dict]:
    return {k["scheme"]: k for k in scenario["schemes"]}


def test_the_example_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "example.json"
    r = run_cli("study", "cache-alloc", "--example", "--json", str(out))
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    names = [s["name"] for s in report["scenarios"]]
    assert names == ["Browsing", "Shopping", "Ordering"]
    gb = 2**30
    for s, ta, best in zip(report["scenarios"], [0.53875, 0.71875, 0.80875], [0.37, 0.55, 0.73], strict=True):
        k = by_scheme(s)
        assert k["working-set"]["overall"] == pytest.approx(0.82, abs=1e-12)
        assert k["working-set"]["allocation"] == pytest.approx([1.6 * gb, 0.4 * gb])
        assert k["transaction-aware"]["overall"] == pytest.approx(ta, abs=1e-12)
        assert k["optimal"]["overall"] == pytest.approx(best, abs=1e-12)
        assert all(k["optimal"]["overall"] <= x["overall"] + 1e-12 for x in k.values())
        assert s["ga_shortfall"] == pytest.approx(ta / best - 1)
    shown = run_cli("study", "cache-alloc", "--example")
    assert shown.returncode == 0, shown.stderr
    assert "0.53875" in shown.stdout and "0.71875" in shown.stdout and "0.80875" in shown.stdout
    assert "0.82" in shown.stdout


def test_the_example_file_is_what_the_library_runs() -> None:
    """--example is the same file read by the same path as any applications file."""
    from_text = run_alone(
        "cache-alloc", apps=(ROOT / "crates/iomimic-core/src/study/cache_alloc/example.toml").read_text()
    )
    assert from_text["scenarios"] == run_alone("cache-alloc")["scenarios"]


def write_apps(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "apps.toml"
    p.write_text(body)
    return p


APPS = """
[[hypervisors]]
name = "h"
cache = "8M"

[[vms]]
name = "hot"
trace = "hot.csv"

[[vms]]
name = "flat"
working_set = "16M"

[[apps]]
name = "a"
vms = ["hot", "flat"]
transactions = [{ name = "t", io = "random read", time = { hot = 1.0, flat = 1.0 } }]
workloads = [{ name = "W", mix = { t = 1 } }]
"""


def hot_trace(path: Path) -> None:
    # 3 MiB read round and round: LRU misses everything below 3 MiB and hits all but the first
    # round from there (the measured curve has points at 1, 2 MiB and the 3 MiB footprint: a cliff)
    n = 768 * 100
    offset = (np.arange(n) % 768) * 4096
    t = iomimic.Trace(ts_ns=np.arange(n) * 1000, offset=offset, size=[4096] * n, op=[0] * n)
    iomimic.write_trace(t, path)


def test_a_vm_curve_measured_from_its_trace(tmp_path: Path) -> None:
    hot_trace(tmp_path / "hot.csv")
    apps = write_apps(tmp_path, APPS)
    out = tmp_path / "r.json"
    r = run_cli("study", "cache-alloc", str(apps), "--json", str(out))
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    assert [v["curve"] for v in report["vms"]] == ["measured", "linear"]
    k = by_scheme(report["scenarios"][0])
    # not concave, so the optimum is the programme: 3 MiB to the loop (hit 0.99) and 5 MiB to
    # the flat VM (5/16) save more than any other split (all to the flat VM: 0.5)
    best = k["optimal"]
    assert best["methods"][0].startswith("dynamic programme")
    assert best["hit"] == pytest.approx([0.99, 5 / 16], abs=1e-9)
    assert best["allocation"] == pytest.approx([3 * 2**20, 5 * 2**20])
    assert all(best["overall"] <= x["overall"] + 1e-12 for x in k.values())


def test_errors_name_the_field_and_exit_2(tmp_path: Path) -> None:
    apps = write_apps(
        tmp_path, APPS.replace("time = { hot = 1.0, flat = 1.0 }", "time = { hot = 1.0, cold = 1.0 }")
    )
    hot_trace(tmp_path / "hot.csv")
    r = run_cli("study", "cache-alloc", str(apps))
    assert r.returncode == 2
    assert "apps.toml: field `apps[0].transactions[0].time.cold`" in r.stderr
    missing = write_apps(tmp_path, APPS.replace("hot.csv", "nowhere.csv"))
    r = run_cli("study", "cache-alloc", str(missing))
    assert r.returncode == 2 and "field `vms[0].trace`" in r.stderr
    r = run_cli("study", "cache-alloc", "--example", "--scheme", "fastest")
    assert r.returncode == 2 and "--scheme" in r.stderr and "fastest" in r.stderr
    r = run_cli("study", "cache-alloc")
    assert r.returncode == 2 and "--example" in r.stderr
    r = run_cli("study", "cache-alloc", "--example", "--adapt")
    assert r.returncode == 2 and "--timeline" in r.stderr


def test_the_tpcw_evaluation_and_the_closed_loop(tmp_path: Path) -> None:
    out, png = tmp_path / "loop.json", tmp_path / "alloc.png"
    r = run_cli(
        "study",
        "cache-alloc",
        str(TPCW),
        "--adapt",
        "--timeline",
        str(CHANGES),
        "--plot",
        str(png),
        "--json",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    assert png.stat().st_size > 10_000
    assert [h["cache_bytes"] for h in report["hypervisors"]] == [768 * 2**20] * 2
    for s in report["scenarios"]:
        k = by_scheme(s)
        assert k["equal"]["allocation"] == pytest.approx([256 * 2**20] * 6)
        assert len(k["equal"]["apps"][0]["transactions"]) == 14
        assert all(k["optimal"]["overall"] <= x["overall"] + 1e-9 for x in k.values())
    loop = report["adapt"]
    w = loop["windows"]
    # app1 turns to Ordering at 450 s (window 15): seen in that window, planned for the next
    assert w[14]["detected"][0] == "Browsing" and w[15]["detected"][0] == "Ordering"
    assert w[15]["replanned"] and not w[16]["replanned"]
    # app3's load quadruples at 900 s: the loop gives its VMs more cache
    assert w[30]["replanned"]
    assert w[31]["allocation"][4] > w[29]["allocation"][4]
    assert w[31]["adaptive"] < w[31]["static"]
    assert all(x["optimal"] <= x["adaptive"] + 1e-9 for x in w)
