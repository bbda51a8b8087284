"""`iomimic study prefetch`: Keeton et al.'s jumps and streams experiments on the FC-60 array,
and a trace's sequentiality with prefetching's predicted and simulated benefit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import iomimic

from .conftest import run_cli


def mean(report: dict, run: int, x: int, kib: int) -> float:
    (p,) = [p for p in report["points"] if (p["run_count"], p["x"], p["prefetch_kib"]) == (run, x, kib)]
    return p["mean_service_us"]


def test_jumps_on_the_command_line(tmp_path: Path) -> None:
    out, png = tmp_path / "jumps.json", tmp_path / "jumps.png"
    r = run_cli(
        "study",
        "prefetch",
        "--experiment",
        "jumps",
        "--point-requests",
        "512",
        "--json",
        str(out),
        "--plot",
        str(png),
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    assert report["device"] == "fc60-r5-4disk" and png.stat().st_size > 10_000
    kib = 1024
    # long runs fast; short runs fast under 64 KiB jumps; prefetch helps jumps under 1 MiB
    assert mean(report, 256, 64 << 20, 0) < 0.5 * mean(report, 4, 64 << 20, 0)
    assert mean(report, 4, 16 * kib, 0) < 0.5 * mean(report, 4, 64 << 20, 0)
    assert mean(report, 4, 256 * kib, 64) < 0.7 * mean(report, 4, 256 * kib, 0)
    # prefetch is paid for: runs of four far apart leave most of each 64 KiB unread
    (far,) = [p for p in report["points"] if (p["run_count"], p["x"], p["prefetch_kib"]) == (4, 64 << 20, 64)]
    assert far["prefetch_unused"] > 0.75
    shown = run_cli("study", "prefetch", "--experiment", "streams", "--point-requests", "256")
    assert shown.returncode == 0, shown.stderr
    assert "streams" in shown.stdout and "prefetch 64 KiB" in shown.stdout


def test_a_trace_with_short_jumps_is_predicted_to_gain_and_does(tmp_path: Path) -> None:
    # runs of four 4 KiB reads, 32 KiB apart, 50 a second
    n = 1000
    offset = np.arange(n) * 4096 + (np.arange(n) // 4) * 32768
    t = iomimic.Trace(ts_ns=np.arange(n) * 20_000_000, offset=offset, size=[4096] * n, op=[0] * n)
    path = tmp_path / "jumpy.csv"
    iomimic.write_trace(t, path)
    out = tmp_path / "r.json"
    r = run_cli("study", "prefetch", str(path), "--json", str(out))
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    s = report["sequentiality"]
    assert abs(s["p_sequential"] - 0.75) < 0.01 and abs(s["p_forward"] - 0.25) < 0.01
    assert s["run_count"] == 4.0
    off, on = report["runs"]
    assert off["prefetch_kib"] == 0 and on["prefetch_kib"] == 64
    assert on["prefetchable_fraction"] > 0.99
    # the disks' own read-ahead already serves part of each run without the controller's
    # (0.48 ms against 0.30 ms with it, on the disk model that reads ahead across segments)
    assert on["mean_service_us"] < 0.75 * off["mean_service_us"]
    assert on["predicted_us"] < on["mean_service_us"] < 2 * on["predicted_us"]


def test_prefetch_errors_exit_2() -> None:
    r = run_cli("study", "prefetch")
    assert r.returncode == 2 and "--experiment" in r.stderr
    r = run_cli("study", "prefetch", "--experiment", "jumps", "--prefetch", "4096")
    assert r.returncode == 2 and "--prefetch" in r.stderr and "prefetch_max_kib" in r.stderr
    r = run_cli("study", "prefetch", "--experiment", "jumps", "--device", "hdd-7200")
    assert r.returncode == 2 and "[controller]" in r.stderr


def test_simulate_reports_what_prefetch_read_and_left_unread(tmp_path: Path) -> None:
    # 64 sequential 4 KiB reads: the FC-60's controller detects the stream and reads ahead of it
    n = 64
    i = np.arange(n)
    t = iomimic.Trace(ts_ns=i * 10_000_000, offset=i * 4096, size=[4096] * n, op=[0] * n)
    path, figs = tmp_path / "seq.csv", tmp_path / "f.json"
    iomimic.write_trace(t, path)
    r = run_cli("simulate", str(path), "--device", "fc60-r5-4disk", "--json", str(figs))
    assert r.returncode == 0, r.stderr
    f = json.loads(figs.read_text())
    assert 0 < f["prefetch_unused_kib"] < f["prefetched_kib"]
    assert "controller prefetch" in r.stdout and "never read" in r.stdout


def test_prefetch_on_a_trace_says_when_the_array_could_not_keep_up(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)

    def reads(gap_ns: int) -> Path:
        n = 3000
        t = iomimic.Trace(
            ts_ns=np.arange(n, dtype=np.uint64) * gap_ns,
            offset=rng.integers(0, 1 << 22, n).astype(np.uint64) * 4096,
            size=np.full(n, 4096, dtype=np.uint32),
            op=np.zeros(n, dtype=np.uint8),
        )
        path = tmp_path / f"r{gap_ns}.parquet"
        iomimic.write_trace(t, path)
        return path

    # 10,000 random reads a second are past four disks; 50 a second are not
    r = run_cli("study", "prefetch", str(reads(100_000)), "--json", str(tmp_path / "busy.json"))
    assert r.returncode == 0 and "fc60-r5-4disk served" in r.stderr and "saturated" in r.stderr, r.stderr
    runs = json.loads((tmp_path / "busy.json").read_text())["runs"]
    assert all(0 < run["iops"] < 5000 for run in runs)
    r = run_cli("study", "prefetch", str(reads(20_000_000)))
    assert r.returncode == 0 and "saturated" not in r.stderr, r.stderr
