"""Known answers for every characterization figure, on traces small enough to work by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic import Trace, cache

from .conftest import run_cli

S = 10**9  # ns per second
K4 = 4096


def approx(x: float) -> pytest.approx:
    return pytest.approx(x, rel=1e-9, abs=1e-12)


@pytest.fixture
def mix() -> dict:
    """Four requests, one a second: two sequential reads, a sequential write, a far read."""
    t = Trace(
        ts_ns=[0, S, 2 * S, 3 * S],
        offset=[0, K4, 2 * K4, 100 * K4],
        size=[K4, K4, 2 * K4, 512],
        op=[0, 0, 1, 0],
    )
    return iomimic.characterize(t)


def test_counts_rates_and_bytes(mix: dict) -> None:
    assert (mix["requests"], mix["reads"], mix["writes"], mix["trims"], mix["flushes"]) == (4, 3, 1, 0, 0)
    assert mix["read_fraction"] == 0.75
    assert (mix["bytes_read"], mix["bytes_written"]) == (4096 + 4096 + 512, 8192)
    assert mix["duration_s"] == 3.0
    assert mix["iops"] == approx(4 / 3)
    assert mix["mb_per_s"] == approx(16896 / 1e6 / 3)


def test_interarrival_of_constant_gaps(mix: dict) -> None:
    ia = mix["interarrival"]
    assert (ia["count"], ia["mean_us"], ia["cv"], ia["zero_fraction"]) == (3, 1e6, 0.0, 0.0)
    assert set(ia["percentiles_us"].values()) == {1e6}
    assert ia["fit"]["best"] == "fixed"
    assert ia["fit"]["criterion"] == "ks"
    assert ia["fit"]["candidates"][0] == {"name": "fixed", "params": [["value", 1e6]], "ks": 0.0}
    assert {c["name"] for c in ia["fit"]["candidates"]} == {"fixed", "exponential", "poisson"}


def test_size_distribution_most_common_first(mix: dict) -> None:
    size = mix["size"]
    assert size["mean_bytes"] == 16896 / 4
    assert size["distribution"] == [
        {"bytes": 4096, "fraction": 0.5},
        {"bytes": 512, "fraction": 0.25},  # ties ordered by size
        {"bytes": 8192, "fraction": 0.25},
    ]
    assert size["read"]["mean_bytes"] == approx(8704 / 3)
    assert [d["bytes"] for d in size["read"]["distribution"]] == [4096, 512]
    assert size["write"]["distribution"] == [{"bytes": 8192, "fraction": 1.0}]
    assert size["other_fraction"] == 0.0


def test_sequential_fraction_and_jumps(mix: dict) -> None:
    assert mix["sequential_fraction"] == 0.5  # requests 2 and 3 of 4
    s = mix["sequentiality"]
    assert (s["p_backward"], s["p_sequential"], s["p_forward"]) == (0.0, approx(2 / 3), approx(1 / 3))
    assert s["run_count"] == 2.0  # runs [0, 4K, 8K] and [400K]
    # the forward jump 409600 - 16384 = 393216 = 1.5 * 2^18 is in [2^18, 2^19): bucket 19
    assert [(b["log2_bucket"], b["count"]) for b in s["jump_histogram"]] == [(0, 2), (19, 1)]
    assert s["relaxed_gap_bytes"] == 65536


def test_spatial_ranges_of_the_volume_span(mix: dict) -> None:
    sp = mix["spatial"]
    # span [0, 409600 + 512): the far read lands in the last quarter
    assert sp["ranges"] == 4
    assert sp["fractions"] == [0.75, 0.0, 0.0, 0.25]
    assert sp["read_fractions"] == [approx(2 / 3), 0.0, 0.0, approx(1 / 3)]
    assert sp["write_fractions"] == [1.0, 0.0, 0.0, 0.0]


def test_all_cold_miss_ratio(mix: dict) -> None:
    m = mix["mrc"]
    # blocks 0, 1, 2, 3 (the 8 KiB write spans two) and 100: all first touches
    assert (m["accesses"], m["cold_misses"], m["footprint_bytes"], m["sampling_rate"]) == (5, 5, 5 * K4, 1.0)
    assert m["curve"] == [{"cache_bytes": 1 << 20, "miss_ratio": 1.0}]


def test_mrc_of_a_loop_falls_at_its_size() -> None:
    blocks = list(range(512)) * 2  # a 2 MiB loop, twice
    t = Trace(ts_ns=range(1024), offset=[b * K4 for b in blocks], size=[K4] * 1024, op=[0] * 1024)
    m = iomimic.characterize(t)["mrc"]
    assert m["curve"] == [
        {"cache_bytes": 1 << 20, "miss_ratio": 1.0},
        {"cache_bytes": 2 << 20, "miss_ratio": 0.5},
    ]
    assert m["footprint_bytes"] == 2 << 20
    # every reuse has the 511 other blocks between: bucket [256, 512)
    assert m["reuse_histogram"] == [{"from_blocks": 256, "to_blocks": 512, "count": 512}]
    sampled = iomimic.characterize(t, mrc_sampling=0.5)["mrc"]
    assert sampled["sampling_rate"] == 0.5
    assert abs(sampled["curve"][-1]["miss_ratio"] - 0.5) < 0.05


def test_the_curve_is_exact_while_its_blocks_fit_the_budget_and_states_its_error_past_it(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(4)
    # 20,000 blocks with skewed popularity, 60,000 accesses, two volumes
    blocks = (rng.random(60_000) ** 3 * 20_000).astype(np.uint64)
    volume = rng.integers(0, 2, 60_000).astype(np.uint32)
    t = Trace(
        ts_ns=np.arange(60_000), offset=blocks * K4, size=[K4] * 60_000, op=[0] * 60_000,
        volume=volume, volumes=["a", "b"],
    )  # fmt: skip
    exact = cache.miss_ratio_curve(t)
    distinct = len({(int(v), int(b)) for v, b in zip(volume, blocks, strict=True)})
    assert exact["footprint_bytes"] == distinct * K4
    assert (exact["sampling_rate"], exact["sampling_error"]) == (1.0, 0.0)
    assert cache.miss_ratio_curve(t, budget=distinct)["curve"] == exact["curve"]
    # the characterization's curve is the same one
    assert iomimic.characterize(t, mrc="trace", mrc_budget=distinct)["mrc"] == exact

    sampled = cache.miss_ratio_curve(t, budget=distinct // 10)
    assert 0.08 < sampled["sampling_rate"] < 0.12  # about budget / distinct blocks
    error = sampled["sampling_error"]
    assert 0 < error < 0.05
    gaps = [
        abs(a["miss_ratio"] - b["miss_ratio"]) for a, b in zip(sampled["curve"], exact["curve"], strict=False)
    ]
    assert max(gaps) <= 3 * error

    # through the CLI: the table says it is sampled, with its error
    path = tmp_path / "t.parquet"
    iomimic.write_trace(t, path)
    r = run_cli("characterize", str(path), "--mrc", "trace", "--mrc-budget", str(distinct // 10))
    assert r.returncode == 0, r.stderr
    words = " ".join(r.stdout.split())  # the title may wrap
    assert f"SHARDS sampled at {sampled['sampling_rate']:.3g}, error ±{error:.4f}" in words
    r = run_cli("characterize", str(path), "--mrc-budget", "0")
    assert r.returncode == 2 and "--mrc-budget: a whole number of at least 1" in r.stderr
    # a budget of a block would sample next to nothing (once reported a miss ratio of 0)
    r = run_cli("characterize", str(path), "--mrc-budget", "1")
    assert r.returncode == 2 and "--mrc-budget must be at least 1024 blocks" in r.stderr, r.stderr

    # watched (test_safety stops one with Ctrl-C), the same curve
    seen: list[tuple[int, int]] = []
    assert cache.miss_ratio_curve(t, progress=lambda done, total: seen.append((done, total))) == exact
    assert all(done <= total == 60_000 for done, total in seen if total)


def test_interleaved_streams_are_detangled() -> None:
    ts, offset, stream = [], [], []
    for i in range(4):
        for s, base in ((1, 0), (2, 1 << 20)):
            ts.append(len(ts))
            offset.append(base + i * K4)
            stream.append(s)
    t = Trace(ts_ns=ts, offset=offset, size=[K4] * 8, op=[0] * 8, stream=stream)
    p = iomimic.characterize(t)
    seq = p["sequentiality"]
    assert p["sequential_fraction"] == 0.0
    assert seq["run_count"] == 1.0
    assert seq["detangled_run_count"] == 4.0
    assert seq["interference_frequency"] == 1.0
    assert sorted(p["streams"]) == ["1", "2"]
    for s in ("1", "2"):
        f = p["streams"][s]
        assert f["requests"] == 4
        assert f["sequential_fraction"] == 0.75
        assert f["sequentiality"]["p_sequential"] == 1.0
        assert f["interarrival"]["mean_us"] == 0.002  # 2 ns apart within a stream


def test_fluctuation_finds_the_peak() -> None:
    ts = [i * S for i in range(30)] + [12 * S + j for j in range(1, 31)]  # one a second, 30 more in second 12
    t = Trace(ts_ns=ts, offset=[0] * 60, size=[512] * 60, op=[0] * 60)
    fl = iomimic.characterize(t, window="1s", mrc="none")["fluctuation"]
    assert fl["window_s"] == 1.0
    assert fl["iops"] == [1.0] * 12 + [31.0] + [1.0] * 17
    assert fl["mean_iops"] == 2.0
    assert fl["cv"] == approx(29**0.5 / 2)  # sd sqrt((29 * 1 + 29^2) / 30)
    assert fl["peaks"] == [{"start_s": 12.0, "iops": 31.0}]


def test_latency_percentiles() -> None:
    t = Trace(
        ts_ns=[0, 1, 2, 3], offset=[0] * 4, size=[512] * 4, op=[0] * 4, latency_ns=[4000, 1000, 3000, 2000]
    )
    p = iomimic.characterize(t, mrc="none")
    lat = p["latency_us"]
    assert (lat["count"], lat["mean"], lat["p50"], lat["max"]) == (4, 2.5, 2.0, 4.0)
    assert p["by_op"] == {}  # reads only: nothing to split
    # each operation apart: reads 1 and 3 µs, writes 4 and 2 µs, a flush 5 µs
    mixed = Trace(
        ts_ns=[0, 1, 2, 3, 4], offset=[0] * 5, size=[512] * 5, op=[1, 0, 0, 1, 3],
        latency_ns=[4000, 1000, 3000, 2000, 5000],
    )  # fmt: skip
    p = iomimic.characterize(mixed, mrc="none")
    assert (p["latency_us"]["count"], p["latency_us"]["mean"]) == (5, 3.0)
    ops = {op: o["latency_us"] for op, o in p["by_op"].items()}
    assert (ops["read"]["count"], ops["read"]["mean"], ops["read"]["max"]) == (2, 2.0, 3.0)
    assert (ops["write"]["count"], ops["write"]["mean"], ops["write"]["p50"]) == (2, 3.0, 2.0)
    assert (ops["flush"]["count"], ops["flush"]["max"]) == (1, 5.0)
    no_latency = Trace(ts_ns=[0], offset=[0], size=[512], op=[0])
    assert iomimic.characterize(no_latency, mrc="none")["latency_us"] is None


def test_thread_types_by_stream() -> None:
    # stream 7: a log, one small sequential write a second; stream 9: a burst of big random reads
    ts = [i * S for i in range(100)] + [50 * S + j * 1000 for j in range(300)]
    offset = [i * K4 for i in range(100)] + [((j * 7919) % 1000) * (1 << 20) for j in range(300)]
    size = [K4] * 100 + [65536] * 300
    op = [1] * 100 + [0] * 300
    stream = [7] * 100 + [9] * 300
    t = Trace(ts_ns=ts, offset=offset, size=size, op=op, stream=stream)
    p = iomimic.characterize(t, by="stream", window="1s", mrc="none")
    threads = {x["group"]: x for x in p["threads"]}
    assert (threads["9"]["functionality"], threads["9"]["intensity"], threads["9"]["fluctuation"]) == (
        "data",
        "high",
        "high",
    )
    assert (threads["7"]["functionality"], threads["7"]["intensity"], threads["7"]["fluctuation"]) == (
        "log",
        "low",
        "low",
    )
    assert threads["9"]["weight"] == 0.75
    assert [x["group"] for x in p["threads"]] == ["9", "7"]  # heaviest first
    assert p["thread_thresholds"]["high_intensity_min_weight"] == 0.5


def test_peak_correlation_across_volumes() -> None:
    # volumes a and b busy in the same windows, c in the others
    ts, volume = [], []
    for w in range(10):
        busy = (0, 1) if w % 2 == 0 else (2,)
        for v in busy:
            for j in range(5):
                ts.append(w * S + j)
                volume.append(v)
    n = len(ts)
    t = Trace(ts_ns=ts, offset=[0] * n, size=[512] * n, op=[0] * n, volume=volume, volumes=["a", "b", "c"])
    pc = iomimic.characterize(t, window="1s", mrc="none")["peak_correlation"]
    assert pc["volumes"] == ["a", "b", "c"]
    m = np.array(pc["matrix"])
    assert m[0, 1] == pytest.approx(1.0)
    assert m[0, 2] == pytest.approx(-1.0)
    assert np.allclose(np.diag(m), 1.0)


def test_per_volume_figures_add_up(mix: dict) -> None:
    t = iomimic.read_trace(Path(__file__).parent / "fixtures" / "formats" / "hm_0.csv")
    p = iomimic.characterize(t)
    assert sorted(p["volumes"]) == ["hm_0", "hm_1"]
    assert sum(v["requests"] for v in p["volumes"].values()) == p["requests"]
    assert sum(v["iops"] for v in p["volumes"].values()) == approx(p["iops"])
    assert p["volumes"]["hm_0"]["sequential_fraction"] == 0.5
    assert p["latency_us"]["mean"] == approx((10_000_000 + 155_700 + 2_000) / 3 / 1e3)


def test_profile_json_round_trips(mix: dict) -> None:
    again = json.loads(mix.to_json())
    assert again["requests"] == 4
    assert again["options"]["ranges"] == 4


def test_bad_options_are_input_errors() -> None:
    t = Trace(ts_ns=[0], offset=[0], size=[512], op=[0])
    with pytest.raises(iomimic.InputError, match="`by` must be stream or volume"):
        iomimic.characterize(t, by="thread")
    with pytest.raises(iomimic.InputError, match="`ranges` must be at least 1"):
        iomimic.characterize(t, ranges=0)
    for budget in (0, 1, 1023):
        with pytest.raises(iomimic.InputError, match="`mrc_budget` must be at least 1024 blocks"):
            iomimic.characterize(t, mrc_budget=budget)
    with pytest.raises(iomimic.InputError, match=r"`sampling` must be in \(0, 1\]"):
        cache.miss_ratio_curve(t, sampling=1.5)
    with pytest.raises(iomimic.InputError, match='`window`: cannot read "soon" as a duration'):
        iomimic.characterize(t, window="soon")
    ten_seconds = Trace(ts_ns=[0, 10 * S], offset=[0, 0], size=[512, 512], op=[0, 0])
    with pytest.raises(
        iomimic.InputError, match="at most 1000000 are kept, so use a window of at least 10001 ns"
    ):
        iomimic.characterize(ten_seconds, window="1us")


def test_wsrch_small_figures_are_sane(wsrch_small: Path) -> None:
    p = iomimic.characterize(iomimic.read_trace(wsrch_small), by="volume")
    assert p["requests"] == 24_783
    assert p["read_fraction"] == pytest.approx(0.9998, abs=5e-5)
    assert p["duration_s"] == pytest.approx(60.06, abs=0.01)
    assert p["iops"] == pytest.approx(24_783 / 60.055, rel=1e-3)
    assert len(p["volumes"]) == 6
    assert sum(p["spatial"]["fractions"]) == pytest.approx(1.0)
    curve = [pt["miss_ratio"] for pt in p["mrc"]["curve"]]
    assert all(0 <= a <= 1 for a in curve) and curve == sorted(curve, reverse=True)
    s = p["sequentiality"]
    assert s["p_backward"] + s["p_sequential"] + s["p_forward"] == pytest.approx(1.0)
    assert 0 < p["sequential_fraction"] < 0.5
    assert len(p["interarrival"]["fit"]["candidates"]) == 6
    assert len(p["threads"]) == 6


def test_cli_characterize_table_and_json(tmp_path: Path) -> None:
    src = Path(__file__).parent / "fixtures" / "formats" / "sda.blkparse.txt"
    out = tmp_path / "profile.json"
    r = run_cli("characterize", str(src), "--json", str(out), "--by", "stream", "--window", "10us")
    assert r.returncode == 0, r.stderr
    for words in (
        "sequentiality (Keeton et al.)",
        "spatial locality",
        "LRU miss ratio",
        "thread types",
        "latency",
    ):
        assert words in r.stdout
    p = json.loads(out.read_text())
    for key in (
        "requests",
        "interarrival",
        "size",
        "sequential_fraction",
        "sequentiality",
        "spatial",
        "mrc",
        "fluctuation",
        "latency_us",
        "volumes",
        "streams",
        "threads",
        "peak_correlation",
    ):
        assert key in p
    assert p["options"]["window_ns"] == 10_000
    assert len(p["fluctuation"]["iops"]) == 3  # a 29 us trace in 10 us windows
    r = run_cli("characterize", str(src), "--window", "soon")
    assert r.returncode == 2
    assert '--window: cannot read "soon" as a duration' in r.stderr
