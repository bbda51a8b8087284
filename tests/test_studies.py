"""The what-if studies through the library and the CLI: SSD caching and defragmentation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic.sim import device_config
from iomimic.study import run, studies

from .conftest import run_cli


def hot_reads(n: int = 30_000, seed: int = 3, gap_ns: int = 20_000_000) -> iomimic.Trace:
    """Reads of a Zipf-popular hot set of 2,000 blocks (80 %) and of anywhere in 40 GiB, with
    a log of sequential writes: a workload an SSD cache helps, at a rate a disk keeps up with."""
    rng = np.random.default_rng(seed)
    hot = rng.integers(0, 1 << 20, 2000) * 4096
    kind = rng.random(n)
    offset = np.where(kind < 0.8, hot[rng.zipf(1.3, n) % 2000], rng.integers(0, 10 << 20, n) * 4096)
    op = np.zeros(n, np.uint8)
    writes = kind > 0.9
    op[writes] = 1
    offset[writes] = (20 << 30) + np.arange(writes.sum()) * 4096
    ts = np.cumsum(rng.exponential(gap_ns, n)).astype(np.uint64)
    return iomimic.Trace(
        ts_ns=ts, offset=offset, size=np.full(n, 4096), op=op, stream=(kind < 0.8).astype(int)
    )


@pytest.fixture(scope="module")
def cache_report() -> dict:
    return run(
        "ssd-cache",
        hot_reads(),
        backend=device_config("hdd-7200"),
        ssd=device_config("ssd-sata"),
        cache_bytes=[2 << 20, 8 << 20, 32 << 20],
        write_policy="read-only",
        workloads=["original", "synthetic", "locality-free"],
    )


def test_the_studies_are_listed() -> None:
    assert {"ssd-cache", "defrag"} <= {name for name, _ in studies()}


def test_an_ssd_cache_speeds_up_a_workload_with_locality(cache_report: dict) -> None:
    original, _synthetic, free = cache_report["workloads"]
    assert [w["workload"] for w in cache_report["workloads"]] == ["original", "synthetic", "locality-free"]
    hits = [r["hit_ratio"] for r in original["runs"]]
    speedups = [r["speedup"] for r in original["runs"]]
    # a larger cache holds more and helps more
    assert hits == sorted(hits) and hits[-1] > 0.8
    assert speedups == sorted(speedups) and speedups[0] > 1.5
    # per stream: the hot reads gain, the other stream's cold reads and log writes barely
    streams = {s["stream"]: s for s in original["runs"][-1]["streams"]}
    assert streams[1]["speedup"] > 2 * streams[0]["speedup"]
    # the papers' finding: the synthetic workload predicts the speedup (within the issue's 5 %),
    # a workload without locality shows none. Measured 1.1, 0.9 and 0.3 % at 2, 8 and 32 MiB
    # (over four training seeds within 1.1 / 2.3 / 3.0 %) since the model keeps the trace's
    # population of re-used requests; 9.2, 1.0 and -3.6 % before (the synthetic stream found
    # its hot set too slowly and re-used the few it found: docs/model.md, Extensions)
    for p in cache_report["predictions"]:
        assert abs(p["synthetic_error"]) < 0.05, p
        assert p["locality_free_speedup"] < 1.02, p
    assert all(r["hit_ratio"] < 0.01 for r in free["runs"])


def test_write_policies_differ_as_they_should() -> None:
    t = hot_reads(8000)
    common = {
        "backend": device_config("hdd-7200"),
        "ssd": device_config("ssd-sata"),
        "cache_bytes": [8 << 20],
    }
    by = {
        wp: run("ssd-cache", t, write_policy=wp, **common)["workloads"][0]["runs"][0]
        for wp in ("read-only", "write-through", "write-back")
    }
    # write-back takes writes off the disk's path: the fastest; write-through waits for both tiers
    assert by["write-back"]["perf"]["mean_us"] < by["read-only"]["perf"]["mean_us"]
    assert by["write-through"]["perf"]["mean_us"] >= by["read-only"]["perf"]["mean_us"] * 0.95


def test_request_keyed_caching_and_bad_options() -> None:
    t = hot_reads(4000)
    r = run(
        "ssd-cache",
        t,
        backend=device_config("hdd-7200"),
        ssd=device_config("ssd-sata"),
        cache_bytes=[8 << 20],
        write_policy="read-only",
        block_bytes=None,
    )
    assert r["keyed_by"] == "requests" and r["workloads"][0]["runs"][0]["hit_ratio"] > 0.5
    with pytest.raises(iomimic.InputError, match="unknown `policies` entry"):
        run("ssd-cache", t, backend=device_config("hdd-7200"), ssd=device_config("ssd-sata"),
            cache_bytes=[1 << 20], write_policy="read-only", policies=["belady"])  # fmt: skip
    with pytest.raises(iomimic.InputError, match="option `write_policy`"):
        run("ssd-cache", t, backend="", ssd="", cache_bytes=[1], write_policy="sometimes")
    with pytest.raises(iomimic.InputError, match="unknown study"):
        run("crystal-ball", t)


def test_defragmentation_helps_a_scattered_workload_and_leaves_a_sequential_one() -> None:
    rng = np.random.default_rng(5)
    # four threads each reading a fragmented file of 250 blocks, scattered over the disk, in
    # file order, interleaved, twice over
    blocks = rng.integers(0, 1 << 26, (4, 250)) * 4096
    k = np.arange(2000)
    stream = k % 4
    offset = blocks[stream, (k // 4) % 250]
    scattered = iomimic.Trace(
        ts_ns=k * 15_000_000, offset=offset, size=np.full(2000, 4096), op=np.zeros(2000), stream=stream
    )
    r = run(
        "defrag", scattered, device=device_config("hdd-7200"), policies=["full", "partial:50%", "dynamic"]
    )
    full, partial, dynamic = r["runs"]
    assert r["before"]["sequential_fraction"] < 0.01
    assert full["shape"]["sequential_fraction"] > 0.9
    assert full["speedup"] > 3 and full["energy_change"] < 0
    # half the blocks moved gains less; the dynamic layout gains on the second pass only
    assert 1 < partial["speedup"] < full["speedup"]
    assert 1.2 < dynamic["speedup"] < full["speedup"]
    sequential = iomimic.Trace(
        ts_ns=np.arange(500) * 10**6, offset=np.arange(500) * 4096, size=np.full(500, 4096), op=np.zeros(500)
    )
    r = run("defrag", sequential, device=device_config("hdd-7200"), policies=["full", "dynamic"])
    for policy_run in r["runs"]:
        assert policy_run["moved_bytes"] == 0 and policy_run["speedup"] == pytest.approx(1.0)


def test_cli_studies(tmp_path: Path) -> None:
    trace = tmp_path / "hot.parquet"
    iomimic.write_trace(hot_reads(6000), trace)
    r = run_cli(
        "study", "ssd-cache", str(trace), "--backend", "hdd-7200", "--cache", "1M,8M",
        "--compare", "locality-free", "--json", str(tmp_path / "c.json"), "--plot", str(tmp_path / "c.png"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "c.json").read_text())
    assert [w["workload"] for w in report["workloads"]] == ["original", "locality-free"]
    assert (tmp_path / "c.png").stat().st_size > 1000
    r = run_cli("study", "ssd-cache", str(trace), "--cache", "1M", "--policy", "belady")
    assert r.returncode == 2 and "unknown --policy entry" in r.stderr, r.stderr
    r = run_cli("study", "ssd-cache", str(trace), "--compare", "future")
    assert r.returncode == 2 and "--compare" in r.stderr
    r = run_cli("study", "defrag", "tpcc", "-n", "3000", "--policy", "full,dynamic", "--device", "hdd-15k")
    assert r.returncode == 0, r.stderr
    assert "full" in r.stdout and "dynamic" in r.stdout and "sequential" in r.stdout
    r = run_cli("study", "defrag", "tpcc", "-n", "100", "--policy", "shuffle")
    assert r.returncode == 2 and "--policy" in r.stderr
    r = run_cli("study", "--help")
    assert r.returncode == 0 and "ssd-cache" in r.stdout and "defrag" in r.stdout


def random_reads(n: int, iops: float, seed: int = 5) -> iomimic.Trace:
    """8 KiB random reads over 4 GiB at ``iops``: a load a disk keeps up with."""
    rng = np.random.default_rng(seed)
    ts = (np.arange(n) * (1e9 / iops)).astype(np.uint64)
    return iomimic.Trace(
        ts_ns=ts, offset=rng.integers(0, 1 << 19, n) * 8192, size=np.full(n, 8192), op=np.zeros(n)
    )


def test_early_errors_find_the_faulty_devices_sooner_at_higher_intensity(tmp_path: Path) -> None:
    trace = tmp_path / "reads.parquet"
    iomimic.write_trace(random_reads(2400, 20), trace)
    r = run_cli(
        "study", "early-errors", str(trace), "--devices", "10", "--faulty", "2",
        "--fault", "slow-sectors:0.01", "--intensity", "1,4",
        "--json", str(tmp_path / "e.json"), "--plot", str(tmp_path / "e.png"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "e.json").read_text())
    slow, fast = report["intensities"]
    assert len(report["faulty"]) == 2
    for o in (slow, fast):
        assert (o["true_positives"], o["false_positives"], o["overloaded"]) == (2, 0, False)
    assert fast["time_to_detect_all_s"] < slow["time_to_detect_all_s"] / 2
    assert (tmp_path / "e.png").stat().st_size > 1000
    # failed sectors fail requests with EIO and flag by errors
    r = run_cli(
        "study", "early-errors", str(trace), "--devices", "6", "--fault", "failed-sectors:0.005",
        "--intensity", "1", "--json", "-",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)["intensities"][0]
    assert o["failed_requests"] > 0 and {f["by"] for f in o["flags"]} == {"errors"}
    for bad, named in (("--fault", "hot-sectors:0.1"), ("--intensity", "1,x"), ("--faulty", "10")):
        r = run_cli(
            "study",
            "early-errors",
            str(trace),
            "--devices",
            "10",
            bad,
            named.split(",")[0] if bad == "--faulty" else named,
        )
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr


def test_the_helps_preset_example_shows_detection_speeding_up_with_load() -> None:
    """The preset example `--help` teaches runs at every default intensity without overloading
    its fleet (an overloaded fleet hides the faults in queueing, and the study shows nothing)."""
    help_text = run_cli("study", "early-errors", "--help").stdout
    example = next(line.split() for line in help_text.splitlines() if "early-errors messenger" in line)
    r = run_cli(*example[1:], "--json", "-")
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["intensities"]
    assert [o["intensity"] for o in runs] == [1, 2, 4, 8]
    for o in runs:
        assert (o["true_positives"], o["false_positives"], o["overloaded"]) == (2, 0, False), o
    times = [o["time_to_detect_all_s"] for o in runs]
    assert times == sorted(times, reverse=True) and times[-1] < times[0] / 4


def test_a_simulated_failed_sector_fails_its_request(tmp_path: Path) -> None:
    t = random_reads(200, 50)
    from iomimic.sim import simulate

    device = tmp_path / "bad.toml"
    device.write_text(device_config("hdd-7200") + "\n[faults]\nfailed_sector_rate = 1.0\nfail_ms = 2.0\n")
    out, figures = simulate(t, config=device)
    assert figures["failed_ios"] == 200
    assert out.status is not None and set(out.status.tolist()) == {5}  # EIO
    healthy, _ = simulate(t, "hdd-7200")
    assert healthy.status is None


def test_early_errors_on_real_targets_judges_measured_latencies(tmp_path: Path) -> None:
    from iomimic.study import early_errors_on_targets

    targets = [str(tmp_path / f"disk{i}.dat") for i in range(3)]
    report = early_errors_on_targets(
        random_reads(300, 2000), targets, intensities=[1.0, 2.0], size=4 << 30, engine="psync"
    )
    assert [o["intensity"] for o in report["intensities"]] == [1.0, 2.0]
    for o in report["intensities"]:
        # three healthy files: every request ran, nothing failed, no device flagged by errors
        assert o["run"]["requests"] == 900 and o["failed_requests"] == 0
        assert all(f["by"] == "latency" for f in o["flags"])
    with pytest.raises(iomimic.InputError, match="at least two"):
        early_errors_on_targets(random_reads(10, 100), targets[:1], intensities=[1.0], size=1 << 20)
