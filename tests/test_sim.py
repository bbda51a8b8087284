"""The storage simulator through the Python API and the CLI: calibration, devices, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic import Trace
from iomimic.sim import simulate

from .conftest import run_cli


def synthetic(size: int, sequential: bool, n: int, seed: int = 1) -> Trace:
    rng = np.random.default_rng(seed)
    if sequential:
        offset = np.arange(n, dtype=np.uint64) * size
    else:
        offset = (rng.integers(0, (40 * 10**9) // size, n) * size).astype(np.uint64)
    return Trace(ts_ns=np.zeros(n), offset=offset, size=np.full(n, size), op=np.zeros(n))


# Seed 004's FC-60 figures (4-disk RAID 5 LUN, 16 KB stripe unit) and the closed-loop depth each
# is reproduced at: random tests with 8 requests outstanding, sequential streams with 2.
FC60 = [
    ("2 KB random reads", 2048, False, 8, "iops", 381.76),
    ("2 KB sequential reads", 2048, True, 2, "iops", 3656.4),
    ("256 KB random reads", 256 * 1024, False, 8, "mb_per_s", 17.6),
    ("256 KB sequential reads", 256 * 1024, True, 2, "mb_per_s", 40.3),
]


@pytest.mark.parametrize(
    ("name", "size", "sequential", "depth", "figure", "published"), FC60, ids=[c[0] for c in FC60]
)
def test_fc60_preset_reproduces_seed_004(name, size, sequential, depth, figure, published) -> None:
    n = 4000 if size < 65536 else 1500
    _, f = simulate(synthetic(size, sequential, n), "fc60-r5-4disk", iodepth=depth)
    assert f[figure] == pytest.approx(published, rel=0.10), (name, f[figure])


def test_latency_column_and_open_loop_intensity() -> None:
    rng = np.random.default_rng(2)
    n = 2000
    t = Trace(
        ts_ns=np.arange(n) * 10_000_000,
        offset=rng.integers(0, 1 << 28, n) * 4096,
        size=np.full(n, 4096),
        op=rng.integers(0, 2, n),
    )
    out, f = simulate(t, "hdd-7200")
    assert out.latency_ns is not None and len(out) == n
    assert f["mode"] == "open loop" and f["requests"] == n
    assert 0 < f["devices"][0]["utilization"] < 1
    assert f["energy_j"] > 0
    # ten times the rate on the same disk: it saturates and requests wait
    _, busy = simulate(t, "hdd-7200", intensity=10)
    assert busy["mean_latency_us"] > 3 * f["mean_latency_us"]
    _, ssd = simulate(t, "ssd-nvme", intensity=10)
    assert ssd["mean_latency_us"] < f["mean_latency_us"] / 10


def test_closed_loop_depth_raises_disk_throughput_with_sstf() -> None:
    t = synthetic(4096, False, 3000)
    _, fifo = simulate(t, "hdd-15k", iodepth=16, scheduler="fifo")
    _, sstf = simulate(t, "hdd-15k", iodepth=16, scheduler="sstf")
    assert sstf["iops"] > 1.1 * fifo["iops"]


def test_ssd_writes_show_gc_stalls() -> None:
    t = Trace(
        ts_ns=np.zeros(50_000),
        offset=np.arange(50_000) * 16384,
        size=np.full(50_000, 16384),
        op=np.ones(50_000),
    )
    _, f = simulate(t, "ssd-sata", iodepth=32)
    assert f["gc_stalls"] > 0
    assert f["latency_us"]["p999"] > 10 * f["latency_us"]["p50"]  # collections stall the writes behind them


def test_cli_simulate_devices_and_errors(tmp_path: Path) -> None:
    src = Path(__file__).parent / "fixtures" / "formats" / "hm_0.csv"
    out, figs = tmp_path / "lat.parquet", tmp_path / "sim.json"
    r = run_cli("simulate", str(src), "--device", "fc60-r5-4disk", "--json", str(figs), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "simulated on fc60-r5-4disk" in r.stdout
    assert json.loads(figs.read_text())["requests"] == 3
    assert iomimic.read_trace(out).latency_ns is not None
    r = run_cli("devices")
    assert r.returncode == 0 and "tpc-raid10-28disk" in r.stdout and "raid5 x4" in r.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[device]\nkind = "hdd"\nrpm = 7200\n')
    for args, words in [
        (["--device", "floppy"], "unknown device 'floppy'"),
        (["--config", str(bad)], "missing field `capacity_gb`"),
        ([], "name a preset with --device or a device file with --config"),
        (["--device", "hdd-7200", "--iodepth", "0"], "--iodepth must be at least 1"),
    ]:
        r = run_cli("simulate", str(src), *args)
        assert r.returncode == 2, (args, r.stderr)
        assert words in r.stderr, (args, r.stderr)
