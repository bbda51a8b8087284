"""The storage simulator through the Python API and the CLI: calibration, devices, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic import Trace
from iomimic.io import write_trace
from iomimic.sim import simulate

from .conftest import run_cli


def synthetic(size: int, sequential: bool, n: int, seed: int = 1) -> Trace:
    rng = np.random.default_rng(seed)
    if sequential:
        offset = np.arange(n, dtype=np.uint64) * size
    else:
        # distinct locations: the figures measure the disks, so no request repeats one the
        # controller's cache still holds
        offset = (rng.choice((40 * 10**9) // size, n, replace=False) * size).astype(np.uint64)
    return Trace(ts_ns=np.zeros(n), offset=offset, size=np.full(n, size), op=np.zeros(n))


# The FC-60 paper's figures (Keeton et al.; 4-disk RAID 5 LUN, 16 KB stripe unit), all at one
# closed-loop depth: 8 requests outstanding.
FC60 = [
    ("2 KB random reads", 2048, False, "iops", 381.76),
    ("2 KB sequential reads", 2048, True, "iops", 3656.4),
    ("256 KB random reads", 256 * 1024, False, "mb_per_s", 17.6),
    ("256 KB sequential reads", 256 * 1024, True, "mb_per_s", 40.3),
]


@pytest.mark.parametrize(
    ("name", "size", "sequential", "figure", "published"), FC60, ids=[c[0] for c in FC60]
)
def test_fc60_preset_reproduces_the_paper_at_one_depth(name, size, sequential, figure, published) -> None:
    n = 4000 if size < 65536 else 1500
    _, f = simulate(synthetic(size, sequential, n), "fc60-r5-4disk", iodepth=8)
    assert f[figure] == pytest.approx(published, rel=0.10), (name, f[figure])


def test_fc60_never_passes_the_controller_ceiling() -> None:
    # 11,000 IO/s per controller at most, however deep the queue
    for depth in (1, 8, 64):
        _, f = simulate(synthetic(2048, True, 4000), "fc60-r5-4disk", iodepth=depth)
        assert f["iops"] < 11_000, (depth, f["iops"])


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
    assert busy["latency_us"]["mean"] > 3 * f["latency_us"]["mean"]
    _, ssd = simulate(t, "ssd-nvme", intensity=10)
    assert ssd["latency_us"]["mean"] < f["latency_us"]["mean"] / 10


def test_closed_loop_depth_raises_disk_throughput_with_sstf() -> None:
    t = synthetic(4096, False, 3000)
    _, fifo = simulate(t, "hdd-15k", iodepth=16, scheduler="fifo")
    _, sstf = simulate(t, "hdd-15k", iodepth=16, scheduler="sstf")
    assert sstf["iops"] > 1.1 * fifo["iops"]


def test_ssd_sequential_writes_run_at_the_sata_link_and_collect_without_moves() -> None:
    t = Trace(
        ts_ns=np.zeros(50_000),
        offset=np.arange(50_000) * 16384,
        size=np.full(50_000, 16384),
        op=np.ones(50_000),
    )
    _, f = simulate(t, "ssd-sata", iodepth=32)
    # the preset's SATA link moves 550 MB/s: it, not the flash, is the limit
    assert f["mb_per_s"] == pytest.approx(550, rel=0.02)
    assert f["host_utilization"] > 0.99 and f["die_utilization"] < 0.5
    # whole blocks rewritten in order are erased with nothing valid left to move
    assert f["gc_erases"] > 0 and f["gc_page_moves"] == 0
    assert f["write_amplification"] == pytest.approx(1.0)


def test_cli_simulate_devices_and_errors(tmp_path: Path) -> None:
    src = Path(__file__).parent / "fixtures" / "formats" / "hm_0.csv"
    out, figs = tmp_path / "lat.parquet", tmp_path / "sim.json"
    r = run_cli("simulate", str(src), "--device", "fc60-r5-4disk", "--json", str(figs), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "hm_0 on fc60-r5-4disk" in r.stdout
    figures = json.loads(figs.read_text())
    assert figures["requests"] == 3
    # the fixture's two reads and one write, apart
    assert {op: o["latency_us"]["count"] for op, o in figures["by_op"].items()} == {"read": 2, "write": 1}
    assert "writes (1): mean / p50 / p99 / max" in r.stdout
    assert iomimic.read_trace(out).latency_ns is not None
    r = run_cli("devices")
    assert r.returncode == 0 and "tpc-raid10-28disk" in r.stdout and "raid5 x4" in r.stdout
    # --show prints the device file alone: redirected and edited, it runs as a --config
    r = run_cli("devices", "--show", "hdd-7200")
    assert r.returncode == 0 and r.stdout == iomimic.sim.device_presets()["hdd-7200"]
    cached = tmp_path / "cached.toml"
    cached.write_text(r.stdout.replace("write_cache = false", "write_cache = true"))
    latencies = []
    for device in (["--device", "hdd-7200"], ["--config", str(cached)]):
        r = run_cli("simulate", str(src), *device, "-o", str(out))
        assert r.returncode == 0, r.stderr
        t = iomimic.read_trace(out)
        latencies.append(int(t.latency_ns[t.op == 1][0]))
    # the fixture's one write queues behind its two reads either way and continues where the
    # second left the head: uncached it streams on without losing a turn (no command overhead,
    # queued), cached it completes after the 0.1 ms overhead and a 512-byte bus transfer
    assert abs(latencies[0] - latencies[1]) < 200_000, latencies
    r = run_cli("devices", "--show", "floppy")
    assert r.returncode == 2 and "unknown device 'floppy'; presets are hdd-7200" in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[device]\nkind = "hdd"\nrpm = 7200\n')
    for args, words in [
        (["--device", "floppy"], "unknown device 'floppy'"),
        (["--config", str(bad)], "missing field `capacity_gb`"),
        ([], "name a preset with --device or a device file with --config"),
        (["--device", "hdd-7200", "--iodepth", "0"], "argument --iodepth: a whole number of at least 1"),
    ]:
        r = run_cli("simulate", str(src), *args)
        assert r.returncode == 2, (args, r.stderr)
        assert words in r.stderr, (args, r.stderr)


# The FC-60 paper's (Keeton et al.) synthetic experiments on the FC-60 LUN: 4 KB reads arriving
# open loop, service time as the mean latency. The preset has MinPrefetch 0 (it reads ahead
# only of streams it has detected); the file below forces a 64 KB minimum, as the paper's
# comparison does.
def fc60_with_min_prefetch(tmp_path: Path, kib: int) -> Path:
    text = iomimic.sim.device_presets()["fc60-r5-4disk"]
    path = tmp_path / f"fc60-min{kib}.toml"
    path.write_text(text.replace("prefetch_min_kib = 0", f"prefetch_min_kib = {kib}"))
    return path


def runs_with_jumps(run: int, jump: int, n: int = 1200, rate: int = 50) -> Trace:
    """Runs of `run` sequential 4 KB reads, each run starting `jump` bytes past the last one's end."""
    i = np.arange(n, dtype=np.uint64)
    offset = 10**9 + i * 4096 + (i // run) * jump
    return Trace(ts_ns=i * (10**9 // rate), offset=offset, size=np.full(n, 4096), op=np.zeros(n))


def interleaved(streams: int, n: int = 2400, rate: int = 100, seed: int = 3) -> Trace:
    """`streams` sequential 4 KB read streams, taking turns, at a constant aggregate rate."""
    rng = np.random.default_rng(seed)
    starts = rng.choice(10**7, streams, replace=False).astype(np.uint64) * 4096
    i = np.arange(n, dtype=np.uint64)
    offset = starts[i % streams] + (i // streams) * 4096
    return Trace(ts_ns=i * (10**9 // rate), offset=offset, size=np.full(n, 4096), op=np.zeros(n))


def service_ms(trace: Trace, config: Path) -> float:
    return simulate(trace, config=config)[1]["latency_us"]["mean"] / 1000


JUMPS = [0, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]


def test_fc60_shapes_run_length_and_jumps(tmp_path: Path) -> None:
    plain, forced = fc60_with_min_prefetch(tmp_path, 0), fc60_with_min_prefetch(tmp_path, 64)
    short = {j: service_ms(runs_with_jumps(4, j), plain) for j in JUMPS}
    long = {j: service_ms(runs_with_jumps(256, j), plain) for j in JUMPS}
    # long runs have consistently low service time; short ones only with small jumps
    assert all(long[j] <= short[j] * 1.05 for j in JUMPS), (short, long)
    assert max(long.values()) < 1.5 * min(long.values())
    assert max(short[0], short[16 << 10]) < 0.5 * min(short[j] for j in JUMPS if j >= 1 << 20)
    # forced prefetching cuts short runs' service time by a third or more for jumps under ~1 MB, and
    # helps less once jumps pass it; with no jump the array's own prefetch of strictly
    # sequential streams already serves them
    gain = {j: short[j] / service_ms(runs_with_jumps(4, j), forced) for j in JUMPS}
    small = [gain[j] for j in JUMPS if 0 < j < 1 << 20]
    assert min(small) > 1.5, gain
    large = [gain[j] for j in JUMPS if j >= 1 << 20]
    assert sum(large) / len(large) < sum(small) / len(small), gain


def test_fc60_shape_interleaved_streams(tmp_path: Path) -> None:
    plain = fc60_with_min_prefetch(tmp_path, 0)
    t = {k: service_ms(interleaved(k), plain) for k in (1, 2, 4, 8, 12, 16, 32)}
    # flat up to the disks' eight read-ahead segments, then rising: the paper's ~10-stream knee
    few = max(t[k] for k in (1, 2, 4, 8))
    assert min(t[k] for k in (12, 16, 32)) > 2 * few, t
    assert t[32] >= t[12], t


def two_volumes(n: int = 4000, gap_ns: int = 100_000, seed: int = 2) -> Trace:
    """Random 4 KiB reads alternating between volumes a and b (10,000 IOPS by default: far
    past one disk)."""
    rng = np.random.default_rng(seed)
    return Trace(
        ts_ns=np.arange(n) * gap_ns,
        offset=rng.integers(0, 1 << 28, n) * 4096,
        size=np.full(n, 4096),
        op=(rng.random(n) < 0.3).astype(np.uint8),
        volume=np.arange(n) % 2,
        volumes=["a", "b"],
    )


def alone(t: Trace, volume: int) -> Trace:
    """The requests of one volume, as a trace of that volume only."""
    keep = t.volume == volume
    return Trace(
        ts_ns=t.ts_ns[keep], offset=t.offset[keep], size=t.size[keep], op=t.op[keep],
        volumes=[t.volumes[volume]],
    )  # fmt: skip


def test_each_volume_on_its_own_device_runs_as_that_volume_alone() -> None:
    t = two_volumes(n=2000, gap_ns=2_000_000)
    out, f = simulate(t, "hdd-7200")
    assert [p["volumes"] for p in f["placements"]] == [["a"], ["b"]]
    assert f["device"] == "a on hdd-7200, b on hdd-7200"
    for v in (0, 1):
        solo_out, solo = simulate(alone(t, v), "hdd-7200")
        mine = t.volume == v
        # the same latencies, request for request; issue times on the trace's clock
        assert np.array_equal(out.latency_ns[mine], solo_out.latency_ns)
        first = t.ts_ns[mine][0]
        assert np.array_equal(out.ts_ns[mine], solo_out.ts_ns + first)
        assert f["placements"][v]["latency_us"] == solo["latency_us"]
    # the whole: every request, from the first arrival to the last completion
    assert f["requests"] == 2000 and f["latency_us"]["count"] == 2000
    end = (out.ts_ns + out.latency_ns).max()
    assert f["duration_s"] == pytest.approx(end / 1e9, rel=1e-6)
    assert f["latency_us"]["mean"] == pytest.approx(out.latency_ns.mean() / 1e3, rel=1e-9)
    assert sum(o["latency_us"]["count"] for o in f["by_op"].values()) == 2000
    # sharing one disk, the volumes queue at each other and seek between their regions
    _, shared = simulate(t, "hdd-7200", shared=True)
    assert "placements" not in shared and shared["latency_us"]["mean"] > f["latency_us"]["mean"]
    # two volumes named on one device are exactly the shared run
    out_ab, ab = simulate(t, "ssd-sata", map="a+b=hdd-7200")
    out_sh, _ = simulate(t, "hdd-7200", shared=True)
    assert np.array_equal(out_ab.latency_ns, out_sh.latency_ns)
    assert ab["placements"][0]["volumes"] == ["a", "b"]


def test_map_names_each_volumes_device(tmp_path: Path) -> None:
    t = two_volumes(n=1000, gap_ns=2_000_000)
    config = tmp_path / "ssd.toml"
    config.write_text(iomimic.sim.device_presets()["ssd-sata"])
    for where in ("b=ssd-sata", f"b={config}", {"b": "ssd-sata"}):
        out, f = simulate(t, "hdd-7200", map=where)
        placed = [(p["volumes"], p["device"]) for p in f["placements"]]
        assert placed == [(["b"], "ssd-sata"), (["a"], "hdd-7200")]
        b = t.volume == 1
        # the SSD's reads are far faster than the disk's
        assert np.median(out.latency_ns[b]) * 10 < np.median(out.latency_ns[~b])
        assert np.array_equal(out.latency_ns[b], simulate(alone(t, 1), "ssd-sata")[0].latency_ns)
    for where, message in (
        ("c=ssd-sata", "the trace has no volume 'c' (it has a, b)"),
        ("a=ssd-sata,a=hdd-7200", "volume 'a' is named twice"),
        ("a+b=ssd-sata,b=hdd-7200", "volume 'b' is named twice"),
        ("a", "expected VOLUME=DEVICE, found 'a'"),
        ("a=floppy", "unknown device 'floppy'"),
    ):
        with pytest.raises(iomimic.InputError, match=re.escape(message)):
            simulate(t, "hdd-7200", map=where)
    with pytest.raises(iomimic.InputError, match="volume 'b' has no device"):
        simulate(t, map="a=ssd-sata")
    with pytest.raises(iomimic.InputError, match="give one of them"):
        simulate(t, "hdd-7200", map="a=ssd-sata", shared=True)
    # the command needs no --device when --map names every volume's (as its --help shows)
    path = tmp_path / "ab.parquet"
    iomimic.write_trace(t, path)
    r = run_cli("simulate", str(path), "--map", "a+b=ssd-sata", "--json", "-")
    assert r.returncode == 0, r.stderr
    assert [p["volumes"] for p in json.loads(r.stdout)["placements"]] == [["a", "b"]]
    r = run_cli("simulate", str(path), "--map", "a=ssd-sata")
    assert r.returncode == 2 and "volume 'b' has no device" in r.stderr, r.stderr
    r = run_cli("simulate", str(path), "--map", "a+b=ssd-sata", "--intensity", "1,2")
    assert r.returncode == 2 and "a sweep runs each --device" in r.stderr, r.stderr
    r = run_cli("simulate", str(path))
    assert r.returncode == 2 and "or each volume's device with --map" in r.stderr, r.stderr


def test_simulate_says_where_volumes_went_and_when_a_device_is_saturated(tmp_path: Path) -> None:
    from iomimic.report import micros

    assert (micros(12.34), micros(4560), micros(79_755_703.8)) == ("12.3 µs", "4.56 ms", "79.76 s")
    path = tmp_path / "busy.parquet"
    iomimic.write_trace(two_volumes(), path)
    r = run_cli("simulate", str(path), "--device", "hdd-7200", "--map", "b=ssd-sata")
    assert r.returncode == 0, r.stderr
    assert "each volume on its own device" in r.stdout
    assert "a on hdd-7200" in r.stdout and "b on ssd-sata" in r.stdout
    # 5,000 IOPS of random reads overload the disk, not the SSD
    assert "hdd-7200 (serving a) is saturated" in r.stderr and "--intensity below 1" in r.stderr
    assert "ssd-sata (serving b) is saturated" not in r.stderr
    assert " s\n" in r.stdout or " s " in r.stdout  # latencies of seconds read as seconds
    r = run_cli("simulate", str(path), "--device", "hdd-7200", "--shared")
    assert r.returncode == 0 and "2 volumes share this one device" in r.stderr, r.stderr
    r = run_cli("simulate", str(path), "--device", "hdd-7200", "--volume", "a", "--intensity", "0.005")
    assert r.returncode == 0 and "saturated" not in r.stderr and "share" not in r.stderr, r.stderr
    r = run_cli("simulate", str(path), "--device", "hdd-7200", "--map", "z=ssd-sata")
    assert r.returncode == 2 and "--map: the trace has no volume 'z'" in r.stderr, r.stderr


def test_a_sweep_is_each_of_its_runs_alone(tmp_path: Path) -> None:
    t = two_volumes()
    calls: list[tuple[int, int]] = []
    runs = iomimic.sim.sweep(
        t, ["ssd-sata", "hdd-7200"], intensities=[0.5, 2], iodepths=[None, 3], map="b=ssd-nvme",
        progress=lambda done, total: calls.append((done, total)),
    )  # fmt: skip
    points = [(d, k, q) for d in ("ssd-sata", "hdd-7200") for k in (0.5, 2.0) for q in (None, 3)]
    assert [tuple(f["sweep"].values()) for f in runs] == points
    assert calls[0] == (0, 8) and calls[-1] == (8, 8)
    for (device, k, depth), f in zip(points, runs):
        _, alone = simulate(t, device, map="b=ssd-nvme", intensity=k, iodepth=depth)
        assert {key: v for key, v in f.items() if key != "sweep"} == alone, (device, k, depth)
    # open loop, the SSD keeps up: its rate follows the intensity
    by = {p: f for p, f in zip(points, runs)}
    assert by[("ssd-sata", 2.0, None)]["iops"] > 3 * by[("ssd-sata", 0.5, None)]["iops"]
    path = tmp_path / "two.parquet"
    iomimic.write_trace(t, path)
    config = tmp_path / "slow.toml"
    config.write_text(iomimic.sim.device_presets()["hdd-7200"])
    r = run_cli(
        "simulate", str(path), "--device", "ssd-sata,hdd-7200", "--config", str(config),
        "--intensity", "1,0.005", "--shared",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "simulated: 6 runs" in r.stdout and "slow.toml" in r.stdout and "0.005×" in r.stdout
    # the disks at full rate are overloaded: said once for the sweep, not once a device
    assert r.stderr.count("warning") == 1 and "2 of 6 runs saturated a device" in r.stderr, r.stderr
    assert "2 volumes share this one device" in r.stderr
    for args, words in [
        (["-o", str(tmp_path / "x.csv")], "-o writes one run's trace; a sweep runs several"),
        (["--iodepth", "4,0"], "argument --iodepth: a whole number of at least 1, found '0'"),
        (["--intensity", "1,fast"], "--intensity: '1,fast' is not a comma-separated list"),
        (["--intensity", "1,-2"], "--intensity: every value must be a positive number"),
    ]:
        r = run_cli("simulate", str(path), "--device", "ssd-sata,hdd-7200", *args)
        assert r.returncode == 2 and words in r.stderr, (args, r.stderr)
    assert not (tmp_path / "x.csv").exists()


def test_a_long_simulation_reports_its_progress() -> None:
    """Long enough (a RAID array, a closed loop, 1.5 M requests) for the watcher's ticks of
    100 ms: each report counts requests completed, out of the trace's."""
    n = 1_500_000
    rng = np.random.default_rng(5)
    t = Trace(
        ts_ns=np.arange(n) * 1000, offset=rng.integers(0, 1 << 26, n) * 4096, size=np.full(n, 4096),
        op=(rng.random(n) < 0.3).astype(np.uint8),
    )  # fmt: skip
    calls: list[tuple[int, int]] = []
    _, f = simulate(t, "fc60-r5-4disk", iodepth=8, progress=lambda done, total: calls.append((done, total)))
    assert f["requests"] == n and calls, calls
    assert all(total == n and 0 <= done <= n for done, total in calls), calls[:5]
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_the_device_files_docs_simulate_shows_load_and_run(tmp_path: Path) -> None:
    """Every TOML example of docs/simulate.md, as a user would copy it: the device and array
    file alone, and with the page's controller and faults sections added, runs `simulate
    --config` (no field the docs leave out is required)."""
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "simulate.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", page, flags=re.S)
    assert len(blocks) >= 3, "docs/simulate.md lost its device-file examples"
    device, *sections = blocks
    rng = np.random.default_rng(3)
    n = 500
    trace = tmp_path / "t.parquet"
    write_trace(
        Trace(
            ts_ns=np.arange(n) * 2_000_000,
            offset=rng.integers(0, 1 << 20, n) * 4096,
            size=np.full(n, 4096),
            op=(rng.random(n) < 0.3).astype(np.uint8),
        ),
        trace,
    )
    for k, text in enumerate([device, *(device + "\n" + s for s in sections)]):
        config = tmp_path / f"example{k}.toml"
        config.write_text(text)
        r = run_cli("simulate", str(trace), "--config", str(config), "--json", "-")
        assert r.returncode == 0, (k, r.stderr)
        assert json.loads(r.stdout)["requests"] == n


def sketched_alike(whole: dict, pieces: dict, path: str = "") -> None:
    """Every figure equal but latency percentiles (HDR histograms read in pieces: within 0.1 %)."""
    assert whole.keys() == pieces.keys(), path
    for key, value in whole.items():
        where = f"{path}.{key}"
        if isinstance(value, dict):
            sketched_alike(value, pieces[key], where)
        elif isinstance(value, list):
            assert len(value) == len(pieces[key]), where
            for i, (a, b) in enumerate(zip(value, pieces[key])):
                sketched_alike(a, b, f"{where}[{i}]") if isinstance(a, dict) else None
                assert isinstance(a, dict) or a == b, where
        elif path.endswith("latency_us") and key.startswith("p"):
            assert abs(value - pieces[key]) <= 1e-3 * value + 1e-6, (where, value, pieces[key])
        elif isinstance(value, float):
            assert abs(value - pieces[key]) <= 1e-9 * abs(value), (where, value, pieces[key])
        else:
            assert value == pieces[key], where


def three_volumes(n: int = 20_000, seed: int = 4) -> Trace:
    rng = np.random.default_rng(seed)
    return Trace(
        ts_ns=np.cumsum(rng.exponential(300_000, n)).astype(np.uint64),
        offset=(rng.integers(0, 1 << 22, n) * 4096).astype(np.uint64),
        size=rng.choice([4096, 8192, 65536], n).astype(np.uint32),
        op=rng.choice([0, 0, 1, 2], n).astype(np.uint8),
        volume=rng.integers(0, 3, n).astype(np.uint32),
        volumes=["a", "b", "c"],
        latency_ns=rng.integers(1000, 100_000, n).astype(np.uint64),
    )


@pytest.mark.parametrize(
    "options",
    [{"shared": True}, {}, {"iodepth": 8}, {"map": "b=ssd-sata", "intensity": 0.5}],
    ids=["one device", "a disk each", "closed loop", "mapped"],
)
def test_a_trace_simulated_in_pieces_gives_the_whole_runs_trace_and_figures(
    tmp_path: Path, options: dict, monkeypatch
) -> None:
    """Parquet row groups, chunks of one text file, and text files merged in time order, fed to
    the simulator a piece at a time: the output trace equal to the whole run's, every figure
    equal but latency percentiles (within 0.1 %)."""
    import pyarrow.parquet as pq

    import iomimic.io as io
    from iomimic.sim import simulate_in_pieces

    t = three_volumes()
    pq.write_table(t.to_arrow(), tmp_path / "t.parquet", row_group_size=3_000)
    iomimic.write_trace(t, tmp_path / "t.csv")
    parts = tmp_path / "parts"
    parts.mkdir()
    for name in t.volumes:  # a file per volume, as MSR ships them
        iomimic.write_trace(t.select(volumes=[name]), parts / f"{name}.csv")
    for source in ("t.parquet", "t.csv", "parts"):
        out, whole = simulate(iomimic.read_trace(tmp_path / source), "hdd-7200", **options)
        written = tmp_path / f"out-{source}.parquet"
        monkeypatch.setattr(io, "CHUNK_ROWS", 2_000)
        figures = simulate_in_pieces(tmp_path / source, "hdd-7200", output=written, **options)
        monkeypatch.undo()
        sketched_alike(whole, figures, source)
        assert iomimic.read_trace(written) == out, source


def test_the_cli_simulates_a_trace_past_memory_in_pieces(tmp_path: Path) -> None:
    t = three_volumes(30_000)
    path = tmp_path / "t.parquet"
    import pyarrow.parquet as pq

    pq.write_table(t.to_arrow(), path, row_group_size=5_000)
    runs = {}
    for name, memory in (("whole", []), ("pieces", ["--memory", "1M"])):
        out, figures = tmp_path / f"{name}.csv.gz", tmp_path / f"{name}.json"
        r = run_cli(
            "simulate", str(path), "--device", "ssd-sata", "-o", str(out), "--json", str(figures), *memory
        )
        assert r.returncode == 0, r.stderr
        runs[name] = (iomimic.read_trace(out), json.loads(figures.read_text()), r.stderr)
    assert "simulating it a piece at a time" in runs["pieces"][2]
    assert "piece" not in runs["whole"][2]
    assert runs["pieces"][0] == runs["whole"][0]
    sketched_alike(runs["whole"][1], runs["pieces"][1])
    # choosing requests needs the trace whole, and says so
    r = run_cli("simulate", str(path), "--device", "ssd-sata", "--memory", "1M", "--volume", "a")
    assert r.returncode == 0 and "needs it whole, so it is read whole" in r.stderr, r.stderr


def test_a_text_file_out_of_order_past_memory_is_refused_by_simulate(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    ticks = [128166372003061629 + 1_000 * i - (30_000 if i % 50 == 0 else 0) for i in range(5_000)]
    lines = [f"{t},hm,0,Read,{4096 * i},4096,100" for i, t in enumerate(ticks)]  # MSR, back every 50
    path.write_text("\n".join(lines) + "\n")
    r = run_cli(
        "simulate", str(path), "--device", "ssd-sata", "--memory", "100K", "-o", str(tmp_path / "o.csv")
    )
    assert r.returncode == 2 and "not in time order" in r.stderr and "raise --memory" in r.stderr, r.stderr
    assert not (tmp_path / "o.csv").exists()


def test_a_faulty_device_in_pieces_gives_every_request_a_status(tmp_path: Path) -> None:
    """With faults injected the output of a run in pieces has a status column (its first rows
    are written before later ones may fail); the failures are the whole run's."""
    from iomimic.sim import simulate_in_pieces

    text = iomimic.sim.device_presets()["hdd-7200"] + "\n[faults]\nfailed_sector_rate = 0.02\nseed = 5\n"
    config = tmp_path / "failing.toml"
    config.write_text(text)
    t = three_volumes(3_000)
    iomimic.write_trace(t, tmp_path / "t.parquet")
    out, whole = simulate(t, config=config, shared=True, intensity=0.05)
    figures = simulate_in_pieces(
        tmp_path / "t.parquet", config=config, shared=True, intensity=0.05, output=tmp_path / "o.parquet"
    )
    back = iomimic.read_trace(tmp_path / "o.parquet")
    assert whole["failed_ios"] == figures["failed_ios"] > 0
    assert np.array_equal(back.status, out.status) and np.array_equal(back.latency_ns, out.latency_ns)


def test_a_sweep_past_memory_reads_the_trace_in_pieces_for_each_run(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    t = three_volumes(12_000)
    path = tmp_path / "t.parquet"
    pq.write_table(t.to_arrow(), path, row_group_size=2_000)
    sweep = ["--device", "ssd-sata,hdd-7200", "--intensity", "1,0.25", "--shared"]
    runs, notes = {}, {}
    for name, memory in (("whole", []), ("pieces", ["--memory", "100K"])):
        out = tmp_path / f"{name}.json"
        r = run_cli("simulate", str(path), *sweep, "--json", str(out), *memory)
        assert r.returncode == 0, r.stderr
        runs[name], notes[name] = json.loads(out.read_text()), r.stderr
    assert "each run reads it a piece at a time" in notes["pieces"]
    assert "piece" not in notes["whole"]
    assert [f["sweep"] for f in runs["pieces"]] == [f["sweep"] for f in runs["whole"]]
    for whole, pieces in zip(runs["whole"], runs["pieces"]):
        sketched_alike(whole, pieces, str(whole["sweep"]))


def test_simulate_says_how_many_requests_it_folded_into_a_device_too_small(tmp_path: Path) -> None:
    # one volume on its own device, another reaching 2 TiB past a 1.8 TiB region (once alone,
    # once sharing the device with the first: half of it)
    tib = 1 << 40
    t = Trace(
        ts_ns=np.arange(4, dtype=np.uint64) * 1_000_000,
        offset=np.array([0, 2 * tib, 4096, 3 * tib], dtype=np.uint64),
        size=np.full(4, 4096, dtype=np.uint32),
        op=np.zeros(4, dtype=np.uint8),
        volume=np.array([0, 1, 0, 1], dtype=np.uint32),
        volumes=["a", "b"],
    )
    path = tmp_path / "wide.parquet"
    iomimic.write_trace(t, path)
    figs = tmp_path / "f.json"
    r = run_cli("simulate", str(path), "--device", "ssd-nvme", "--json", str(figs))
    assert r.returncode == 0, r.stderr
    placed = {tuple(p["volumes"]): p for p in json.loads(figs.read_text())["placements"]}
    assert placed[("a",)]["folded_requests"] == 0 and placed[("b",)]["folded_requests"] == 2
    r = run_cli("simulate", str(path), "--device", "ssd-nvme")
    assert "2 of 2 requests (100.00%) lie past the 1,862.6 GiB region" in r.stderr, r.stderr
    assert "ssd-nvme (serving b)" in r.stderr and "of its own" not in r.stderr
    assert "requests folded into their volume's region" in r.stdout
    r = run_cli("simulate", str(path), "--device", "ssd-nvme", "--shared")
    assert "2 of 4 requests (50.00%) lie past the 931.3 GiB region" in r.stderr, r.stderr
    assert "give each volume a device of its own" in r.stderr
    r = run_cli("simulate", str(path), "--device", "ssd-nvme", "--volume", "a")
    assert r.returncode == 0 and "folded" not in r.stderr, r.stderr
