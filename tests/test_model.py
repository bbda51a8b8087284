"""The state-diagram model: training, generation, the knobs, the schema, presets and fidelity."""

from __future__ import annotations

import gzip
import itertools
import json
import time
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic import Trace
from iomimic.model import Model, chain_edges, chain_initial, chain_states, mix, shares, stats_shares, train
from iomimic.presets import PRESETS, preset, published
from iomimic.validate import validate

from .conftest import run_cli
from .workloads import hot_and_cold

S = 10**9


@pytest.fixture(scope="module")
def locality_trace() -> Trace:
    return hot_and_cold()


@pytest.fixture(scope="module")
def locality_model(locality_trace: Trace) -> Model:
    return train(locality_trace, levels=1, states=4)


def test_generation_is_deterministic_and_sized(locality_model: Model) -> None:
    a = locality_model.generate(5000, seed=7)
    b = locality_model.generate(5000, seed=7)
    c = locality_model.generate(5000, seed=8)
    assert len(a) == 5000
    assert a == b
    assert not np.array_equal(a.offset, c.offset)
    assert len(locality_model.generate(seed=1)) == 60_000  # default: the training trace's count


def test_intensity_scales_time_and_nothing_else(locality_model: Model) -> None:
    base = locality_model.generate(10_000, seed=7)
    fast = locality_model.generate(10_000, seed=7, intensity=4)
    assert np.array_equal(base.offset, fast.offset)
    assert np.array_equal(base.size, fast.size)
    assert np.array_equal(base.op, fast.op)
    ratio = base.ts_ns[-1] / fast.ts_ns[-1]
    assert ratio == pytest.approx(4.0, rel=1e-6)
    pb = iomimic.characterize(base, mrc="none")
    pf = iomimic.characterize(fast, mrc="none")
    assert pf["iops"] == pytest.approx(4 * pb["iops"], rel=1e-6)


def test_duration_limits_the_trace(locality_model: Model) -> None:
    t = locality_model.generate(duration="2s", seed=1)
    assert t.ts_ns[-1] <= 2 * S
    # the training trace runs at about 2,000 IOPS: 2 s hold about 4,000 requests
    assert len(t) == pytest.approx(4000, rel=0.05)
    twice = locality_model.generate(duration="2s", intensity=2, seed=1)
    assert len(twice) == pytest.approx(2 * len(t), rel=0.05)


def test_temporal_locality_extension_reproduces_the_mrc(locality_trace: Trace, locality_model: Model) -> None:
    def mrc_error(synthetic: Trace) -> float:
        rows = validate(locality_trace, synthetic)["rows"]
        return next(r["variation"] for r in rows if r["metric"] == "miss-ratio curve error")

    err_with = mrc_error(locality_model.generate(seed=5))
    err_without = mrc_error(locality_model.generate(seed=5, reuse=False))
    assert err_with <= 0.03
    assert err_without >= 3 * err_with  # the switch shows what the extension buys
    no_reuse_model = train(locality_trace, levels=1, states=4, reuse=False)
    assert all(t["reuse"] is None for t in no_reuse_model.data["threads"])


def test_trims_keep_their_sizes_and_flushes_have_none() -> None:
    """Reads of 4 KiB, writes of 8 KiB, trims of 32 KiB and flushes (no address, no size, as
    blkparse records them): each op comes out with its own sizes (trims were once sized as
    writes, and flushes given a write's size: the mean size +72 %)."""
    rng = np.random.default_rng(5)
    n = 6000
    op = rng.choice(4, n, p=[0.5, 0.3, 0.1, 0.1]).astype(np.uint8)
    size = np.array([4096, 8192, 32768, 0])[op]
    offset = np.where(op == 3, 0, rng.integers(0, 1 << 30, n) * 4096)  # no re-use
    t = Trace(ts_ns=np.arange(n) * 1_000_000, offset=offset, size=size, op=op)
    g = train(t, levels=1, states=4, seed=1).generate(seed=2)
    g_op, g_size, g_offset = np.asarray(g.op), np.asarray(g.size), np.asarray(g.offset)
    for k, want in enumerate([4096, 8192, 32768, 0]):
        assert set(np.unique(g_size[g_op == k]).tolist()) == {want}, k
    assert not g_offset[g_op == 3].any()
    shares = np.bincount(g_op, minlength=4) / len(g)
    assert np.allclose(shares, [0.5, 0.3, 0.1, 0.1], atol=0.03), shares
    rows = {r["metric"]: r for r in validate(t, g)["rows"]}
    assert abs(rows["mean request size (B)"]["variation"]) < 0.02


def test_a_hot_set_is_found_as_early_as_the_trace_found_it(
    locality_trace: Trace, locality_model: Model, tmp_path: Path
) -> None:
    """Where requests come back by popularity, independently (the hot set of 2,000 blocks),
    the model keeps the trace's population: its hot set is found early and re-used later as in
    the trace, so the footprint and the share re-accessed hold (without it the hot set is found
    late: the second half of the synthetic trace reads 1.3 times as many blocks first; the
    footprint was +11-13 % too until the log was kept as one run and re-use depths were cut at
    their stacks' sizes in their class)."""
    chosen = locality_model.data["selection"]["population"]
    assert chosen["kept"] and chosen["mean_deviation_with"] < chosen["mean_deviation_without"] - 0.02
    populations = [p for p in locality_model.data["threads"][0]["reuse"]["population"] if p["touches"]]
    # every block placed afresh in the trace is there once, with how often it was touched
    placed = sum(n for p in populations for _, n in p["touches"])
    touched = sum(k * n for p in populations for k, n in p["touches"])
    assert 2000 <= placed < len(locality_trace) and touched > 2 * placed

    def by_halves(t: Trace) -> list[int]:
        blocks = np.asarray(t.offset)[np.asarray(t.op) == 0] // 4096
        half = len(blocks) // 2
        seen = set(blocks[:half].tolist())
        return [len(seen), len(set(blocks.tolist()) - seen)]

    synthetic = locality_model.generate(seed=3)
    rows = {r["metric"]: r for r in validate(locality_trace, synthetic)["rows"]}
    assert abs(rows["footprint (4 KiB blocks)"]["variation"]) < 0.05
    assert abs(rows["blocks re-accessed (%)"]["variation"]) < 2
    assert rows["miss-ratio curve error"]["variation"] < 0.015
    # fresh blocks come early: the blocks the second half reads first (the trace 3,031, the
    # synthetic trace 3,240-3,335 over three seeds; 4,290-4,330 without the population)
    (_, second_o), (_, second_s) = by_halves(locality_trace), by_halves(synthetic)
    assert abs(second_s / second_o - 1) < 0.12, (second_o, second_s)
    # without it (as chosen where it does not help, or told: --population off) the model drifts
    stacks = train(locality_trace, levels=1, states=4, population=False)
    assert stacks.data["selection"]["population"] == {"kept": False, "given": True}
    assert all(not th["reuse"].get("population") for th in stacks.data["threads"])
    drifted = stacks.generate(seed=3)
    assert by_halves(drifted)[1] / second_o > 1.3
    # a population is checked like every field
    data = json.loads(json.dumps(locality_model.data))
    data["threads"][0]["reuse"]["population"] = [{"touches": [[2, 5], [1, 3]], "other": 0}]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    with pytest.raises(iomimic.InputError, match=r"population\[0\]\.touches\[1\]"):
        Model.load(path)
    # more hot cells than the state has requests re-used
    data["threads"][0]["reuse"]["population"] = [{"touches": [[1, 3], [2, 1]], "other": 0, "hot": [5, 9]}]
    path.write_text(json.dumps(data))
    with pytest.raises(
        iomimic.InputError, match=r"population\[0\]\.hot: places 2 requests, more than the state's 1"
    ):
        Model.load(path)
    # cells: 256 of them, counting at most the requests placed afresh
    data["threads"][0]["reuse"]["population"] = [{"touches": [[1, 3]], "other": 0, "cells": [[1, 0]] * 4}]
    path.write_text(json.dumps(data))
    with pytest.raises(
        iomimic.InputError, match=r"population\[0\]\.cells: needs 256 cells .*\(4 cells, 4 counted\)"
    ):
        Model.load(path)


def test_a_dense_hot_set_is_re_used_not_taken_for_runs() -> None:
    """A hot set of 2,000 adjacent blocks: nearly every re-read lands at or just past the end of
    some recent request, far back among the heads, and was learnt as a run continued at a
    fresh place (block miss-ratio curve error 0.21-0.24, footprint +36-50 % on 200,000 such
    requests). A re-touch that deep is a re-use."""
    rng = np.random.default_rng(5)
    n = 100_000
    hot = rng.random(n) < 0.4
    block = np.where(hot, (1 << 20) + rng.integers(0, 2000, n), rng.integers(0, 1 << 26, n))
    t = Trace(
        ts_ns=np.cumsum(rng.exponential(200_000, n)).astype(np.uint64),
        offset=block.astype(np.uint64) * 4096,
        size=np.full(n, 4096),
        op=(rng.random(n) < 0.35).astype(np.uint8),
    )
    m = train(t, levels=1, states=4, seed=1)
    rows = {r["metric"]: r for r in validate(t, m.generate(seed=3))["rows"]}
    # measured: footprint +6 %, curve error 0.030 (seeds 1-3: +6 to +8 %, 0.030-0.033)
    assert abs(rows["footprint (4 KiB blocks)"]["variation"]) < 0.1
    assert rows["miss-ratio curve error"]["variation"] < 0.045


def test_requests_that_come_back_in_bursts_keep_the_stacks(wsrch_small: Path) -> None:
    """The real wsrch-small trace (little re-use, by recency) does not keep a population: the
    model generates as before it existed."""
    model = train(iomimic.read_trace(wsrch_small), seed=1)
    chosen = model.data["selection"]["population"]
    assert not chosen["kept"], chosen
    assert all(not th["reuse"].get("population") for th in model.data["threads"])


def test_popular_blocks_stay_popular() -> None:
    """On a hot set of Zipf-like popularity the synthetic trace's hottest blocks take the share
    the trace's do, so caches that count touches (LFU) and a disk's track buffer see the same
    workload; re-use by recency alone gave the hottest block 0.7 % of the stream (25 % in the
    trace) and LFU at 16 blocks 14 % hits (61 %)."""
    from iomimic import cache
    from iomimic.sim import simulate

    from .test_studies import hot_reads

    original = hot_reads().select(streams=[1])
    synthetic = train(original, select_device=None, seed=1).generate(seed=3)

    def figures(t: Trace) -> tuple[float, float, float]:
        _, counts = np.unique(t.offset, return_counts=True)
        top = np.sort(counts)[::-1][:16].sum() / len(t)
        k, s = cache.requests(t)
        lfu = cache.replay(k, s, "lfu", capacity=16 * 4096).hits / len(k)
        lru = cache.replay(k, s, "lru", capacity=512 * 4096).hits / len(k)
        return top, lfu, lru

    (top_o, lfu_o, lru_o), (top_s, lfu_s, lru_s) = figures(original), figures(synthetic)
    assert top_o > 0.6 and abs(top_s - top_o) < 0.08, (top_o, top_s)
    assert abs(lfu_s - lfu_o) < 0.08, (lfu_o, lfu_s)
    assert abs(lru_s - lru_o) < 0.03, (lru_o, lru_s)
    # the disk's track buffer serves re-reads of popular blocks nearly alike (38 % of the
    # trace's reads, 30 % of the synthetic's; 22 % by recency alone)
    hits = [simulate(t, "hdd-7200")[1]["buffer_hits"] / len(t) for t in (original, synthetic)]
    assert abs(hits[1] - hits[0]) < 0.1, hits


def test_a_state_without_edges_takes_an_edges_stats_not_the_threads(tmp_path: Path) -> None:
    """A walk that reaches a state the trace only ever left by a move of a level above (no edges
    of its own) is entered afresh and draws its move from there: its request keeps the edges'
    stats (4 KiB sequential reads here), not the thread's averages (64 KiB random writes here),
    which broke scans off on a VM-disk-like trace."""
    n = 20_000
    i = np.arange(n)
    trace = Trace(ts_ns=i * 100_000, offset=(i % 5000) * 4096, size=np.full(n, 4096), op=np.zeros(n, int))
    path = tmp_path / "m.json"
    train(trace, levels=2, states=4, seed=1).save(path)
    data = json.loads(path.read_text())
    thread = data["threads"][0]
    reads = {"ops": [1.0, 0.0, 0.0, 0.0], "sequential": 1.0, "reuse": 0.0, "continuation": 0.0,
             "near": 0.0, "sizes": {"bytes": [4096], "p": [1.0]}}  # fmt: skip
    writes = {**reads, "ops": [0.0, 1.0, 0.0, 0.0], "sequential": 0.0, "sizes": {"bytes": [65536]}}
    writes["sizes"]["p"] = [1.0]
    # the thread's and the volume's stats are what edges without their own take (as shares:
    # without the counts' `n`)
    thread["defaults"].pop("n", None)
    thread["defaults"].update(writes)
    for v in thread.get("volumes", []):
        v["stats"].pop("n", None)
        v["stats"].update(writes)
    # the walk stays in the first top-level state (its trained moves carry no stats of their
    # own, so they would take the writes), enters its leaves at the first, and every leaf edge
    # reads; the third leaf keeps no edges of its own
    top = thread["chain"]
    top["transitions"] = [{"from": k, "to": [k], "count": [1]} for k in range(len(top["states"]))]
    top["initial"] = [1.0] + [0.0] * (len(top["states"]) - 1)
    for state in top["states"]:
        for row in state["children"]["transitions"]:
            row["stats"] = {str(to): reads for to in row["to"]}
    first = top["states"][0]["children"]
    first["initial"] = [1.0] + [0.0] * (len(first["states"]) - 1)
    first["transitions"] = [row for row in first["transitions"] if row["from"] != 2]
    path.write_text(json.dumps(data))
    synthetic = Model.load(path).generate(4000, seed=5)
    offsets = np.asarray(synthetic.offset)
    leaf = chain_states(first, top["states"][0])[2]
    assert ((offsets >= leaf["start"]) & (offsets < leaf["end"])).sum() > 100  # it was reached
    assert (np.asarray(synthetic.op) == 0).all()
    assert (np.asarray(synthetic.size) == 4096).all()


def test_validation_with_locality_free_baseline(locality_trace: Trace, locality_model: Model) -> None:
    result = validate(locality_trace, locality_model.generate(seed=9), baseline="locality-free")
    rows = {r["metric"]: r for r in result["rows"]}
    mrc = rows["miss-ratio curve error"]
    # 0.029-0.032 over seeds since reuse is drawn per state and class (the bar is 0.03; see
    # docs/model.md, Known limits)
    assert mrc["variation"] <= 0.035
    assert mrc["baseline_variation"] > 5 * mrc["variation"]
    assert rows["spatial histogram (L1/2)"]["ok"]
    for metric in ("read fraction", "mean request size (B)", "mean inter-arrival (µs)", "IOPS", "random %"):
        assert rows[metric]["ok"], (metric, rows[metric])


def test_hierarchy_and_threads_per_stream() -> None:
    t = hot_and_cold(8000)
    stream = np.where(np.arange(8000) % 4 == 0, 9, 3)
    t = Trace(ts_ns=t.ts_ns, offset=t.offset, size=t.size, op=t.op, stream=stream)
    # (the two streams read one hot set: by default they would train as one thread)
    m = train(t, levels=2, states=4, by="stream")
    d = m.data
    assert (d["levels"], d["states"]) == (2, 4)
    assert [th["stream"] for th in d["threads"]] == [3, 9]
    assert [th["weight"] for th in d["threads"]] == [0.75, 0.25]
    top = d["threads"][0]["chain"]["states"]
    assert any(s.get("children") for s in top)
    child = next(s["children"] for s in top if s.get("children"))
    assert all(row["from"] < 4 for row in child["transitions"]) and len(child["states"]) == 4
    g = m.generate(8000, seed=2)
    weights = np.bincount(g.stream)[[3, 9]] / len(g)
    assert weights.tolist() == [0.75, 0.25]


def test_streams_that_share_data_train_as_one_thread() -> None:
    """Four streams taking turns at one hot set: a thread per stream gives each its own hot
    set (footprint +30 %, curve error 0.10); trained as one thread they keep the trace's, and
    the synthetic trace still labels its requests with the four streams by their shares."""
    rng = np.random.default_rng(8)
    n = 60_000
    hot = rng.choice(1 << 22, 5000, replace=False)
    p = 1 / np.arange(1, 5001) ** 0.9
    block = np.where(
        rng.random(n) < 0.7, hot[rng.choice(5000, n, p=p / p.sum())], rng.integers(0, 1 << 24, n)
    )
    t = Trace(
        ts_ns=np.cumsum(rng.exponential(300_000, n)).astype(np.uint64),
        offset=block.astype(np.uint64) * 4096,
        size=np.full(n, 4096),
        op=(rng.random(n) < 0.3).astype(np.uint8),
        stream=rng.integers(0, 4, n),
    )
    shared = train(t, levels=1, states=4, seed=1)
    (thread,) = shared.data["threads"]
    assert thread["name"] == "streams 0+1+2+3" and thread["stream"] == 0
    counts = np.bincount(t.stream) / n
    assert [s for s, _ in thread["members"]] == [0, 1, 2, 3]
    assert np.allclose([share for _, share in thread["members"]], counts)
    g = shared.generate(seed=3)
    assert np.allclose(np.bincount(g.stream, minlength=4) / len(g), counts, atol=0.01)
    # the labels are drawn from the seed
    assert np.array_equal(shared.generate(seed=3).stream, g.stream)
    rows = {r["metric"]: r for r in validate(t, g)["rows"]}
    assert abs(rows["footprint (4 KiB blocks)"]["variation"]) < 0.05
    assert rows["request miss-ratio curve error"]["variation"] < 0.02
    # `model show` lists the members with their shares
    from rich.console import Console

    from iomimic.report.model import render_model

    console = Console(record=True, width=200)
    render_model(shared, console)
    assert "0 (25%), 1 (25%), 2 (25%), 3 (25%)" in console.export_text()
    apart = train(t, levels=1, states=4, seed=1, by="stream")
    assert len(apart.data["threads"]) == 4 and "members" not in apart.data["threads"][0]
    rows = {r["metric"]: r for r in validate(t, apart.generate(seed=3))["rows"]}
    assert rows["footprint (4 KiB blocks)"]["variation"] > 0.15


def test_thread_weights_hold_over_short_intervals() -> None:
    # stream 1 issues in the first half of the run only, stream 2 throughout
    rng = np.random.default_rng(4)
    early = np.sort(rng.uniform(0, 50 * S, 3000))
    steady = np.sort(rng.uniform(0, 100 * S, 3000))
    ts = np.concatenate([early, steady])
    order = np.argsort(ts, kind="stable")
    n = len(ts)
    stream = np.concatenate([np.ones(3000), np.full(3000, 2)])[order]
    t = Trace(
        ts_ns=ts[order].astype(np.uint64),
        offset=rng.integers(0, 1 << 20, n) * 4096,
        size=np.full(n, 4096),
        op=np.zeros(n),
        stream=stream,
    )
    m = train(t, levels=1, states=4)
    first = {th["stream"]: th["activity"] for th in m.data["threads"]}
    assert sum(first[1][len(first[1]) // 2 + 1 :]) == 0  # nothing of stream 1 in the second half
    g = m.generate(seed=5)
    half = g.ts_ns < g.ts_ns[-1] / 2
    # in the first half the two streams share the load, in the second stream 2 has it alone
    assert np.mean(g.stream[half] == 1) == pytest.approx(2 / 3, abs=0.05)
    assert np.mean(g.stream[~half] == 1) < 0.02
    # across the run the weights are the trace's
    assert np.mean(g.stream == 1) == pytest.approx(0.5, abs=0.01)
    # one thread for the whole trace needs no activity of its own
    assert train(t, levels=1, states=4, by="none").data["threads"][0]["activity"] is None
    # a bad activity is named on load
    bad = json.loads(m.to_json())
    bad["threads"][0]["activity"] = [1.0]
    with pytest.raises(iomimic.InputError, match=r"threads\[0\]\.activity"):
        Model(bad).generate(10)


def test_automatic_choice_is_recorded() -> None:
    m = train(hot_and_cold(6000))
    sel = m.data["selection"]
    assert m.data["states"] in (4, 8, 16)
    assert 1 <= m.data["levels"] <= 3
    assert "levels_tried" in sel and "rule" in sel


def _first_settled(tried: list[dict], key: str, below: float) -> int:
    """The level a rule keeps: the one before the first whose change (``key``) is under ``below``."""
    for t in tried:
        if t[key] is not None and t[key] < below:
            return t["levels"] - 1
    return 3


def test_levels_are_the_deeper_of_the_simulated_iops_rule_and_the_fidelity_rule(tmp_path: Path) -> None:
    """Issue 12: the TPC paper adds levels until one more changes the simulated IOPS by under
    2 %. Each level's synthetic trace is simulated (hdd-7200, depth 8, by default) beside the
    fidelity figures; the model keeps the deeper choice, and the selection records both."""
    t = hot_and_cold(20_000)
    m = train(t, seed=2)
    sel = m.data["selection"]
    tried = sel["levels_tried"]
    assert [x["levels"] for x in tried] == list(range(1, len(tried) + 1))
    assert all(x["simulated_iops"] > 0 for x in tried)
    # each change is what the recorded IOPS say
    for before, now in itertools.pairwise(tried):
        change = abs(now["simulated_iops"] - before["simulated_iops"]) / before["simulated_iops"]
        assert now["iops_change"] == pytest.approx(change)
    assert sel["levels_by_iops"] == _first_settled(tried, "iops_change", 0.02)
    assert sel["levels_by_fidelity"] == _first_settled(tried, "improvement", 0.02)
    assert m.data["levels"] == max(sel["levels_by_iops"], sel["levels_by_fidelity"])
    # the original's IOPS on the same device, for comparison
    assert sel["original_simulated_iops"] > 0 and "hdd-7200 at depth 8" in sel["rule"]
    # without a device only the fidelity rule applies
    plain = train(t, seed=2, select_device=None).data
    assert plain["selection"]["levels_by_iops"] is None
    assert all(x["simulated_iops"] is None for x in plain["selection"]["levels_tried"])
    assert plain["levels"] == plain["selection"]["levels_by_fidelity"]
    # a device that is not a preset is named
    with pytest.raises(iomimic.InputError, match="unknown device"):
        train(t, select_device="no-such-disk")
    # through the CLI: the choice and how it was made are shown
    path = tmp_path / "t.csv"
    iomimic.write_trace(t, path)
    r = run_cli("model", "train", str(path), "-o", str(tmp_path / "m.json"), "--select-device", "ssd-sata")
    assert r.returncode == 0, r.stderr
    assert "ssd-sata at depth 8" in json.loads((tmp_path / "m.json").read_text())["selection"]["rule"]
    r = run_cli("model", "show", str(tmp_path / "m.json"))
    assert "levels chosen by" in r.stdout and "simulated IOPS" in r.stdout and "states chosen by" in r.stdout
    r = run_cli("model", "train", str(path), "-o", str(tmp_path / "x.json"), "--select-device", "nope")
    assert r.returncode == 2 and "unknown device" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.json").exists()


def test_states_the_transition_ratio_cannot_tell_apart_are_told_apart_by_fidelity() -> None:
    """A hot set beside a cold sweep and a log: no choice of 4, 8 or 16 equal ranges holds its
    consecutive requests together (ratios about 1), so the lowest ratio picked 16 by noise. Each
    choice within 2 % gets its levels chosen; the fewest states whose model's worst deviation is
    within 0.02 of the best are kept, and the selection says so."""
    m = train(hot_and_cold(20_000), seed=2)
    sel = m.data["selection"]
    ratios = {x["states"]: x["transition_ratio"] for x in sel["states_tried"]}
    assert sorted(ratios) == [4, 8, 16] and all(0.9 < r < 1.1 for r in ratios.values())
    tied = sel["states_by_fidelity"]
    assert [x["states"] for x in tied] == [k for k in (4, 8, 16) if ratios[k] <= min(ratios.values()) * 1.02]
    best = min(x["worst_deviation"] for x in tied)
    chosen = next(x for x in tied if x["worst_deviation"] <= best + 0.02)
    assert (m.data["states"], m.data["levels"]) == (chosen["states"], chosen["levels"])
    assert "within 2 % of it" in sel["rule"]
    # states given: nothing to choose
    given = train(hot_and_cold(20_000), seed=2, states=16).data["selection"]
    assert given["states_given"] and "states_tried" not in given and "states_by_fidelity" not in given


def test_rate_profile_follows_a_burst() -> None:
    rng = np.random.default_rng(1)
    quiet = np.sort(rng.uniform(0, 100 * S, 5000))
    burst = np.sort(rng.uniform(40 * S, 50 * S, 5000))
    ts = np.sort(np.concatenate([quiet, burst])).astype(np.uint64)
    n = len(ts)
    t = Trace(ts_ns=ts, offset=rng.integers(0, 1 << 20, n) * 4096, size=np.full(n, 4096), op=np.zeros(n))
    m = train(t, levels=1, states=4)
    result = validate(t, m.generate(seed=3))
    rows = {r["metric"]: r for r in result["rows"]}
    assert rows["IOPS over time (mean |Δ|/mean)"]["variation"] < 0.15
    synth = iomimic.characterize(m.generate(seed=3), window="1s", mrc="none")["fluctuation"]["iops"]
    assert max(range(len(synth)), key=synth.__getitem__) in range(40, 50)


def test_poisson_arrivals_keep_their_spread() -> None:
    # exponential gaps (CV 1): inside each octave of gap the generator follows the slope of the
    # neighbouring octaves; log-uniform draws there gave CVs of 1.05 (1,000 requests a second)
    # and 1.08 (50 a second)
    def cv(trace: Trace) -> float:
        gaps = np.diff(trace.ts_ns.astype(np.int64))
        return float(gaps.std() / gaps.mean())

    for mean_gap_ns, bar in ((1e6, 0.015), (20e6, 0.05)):
        rng = np.random.default_rng(4)
        n = 30_000
        ts = np.cumsum(rng.exponential(mean_gap_ns, n)).astype(np.uint64)
        t = Trace(ts_ns=ts, offset=rng.integers(0, 1 << 22, n) * 4096, size=np.full(n, 4096), op=np.zeros(n))
        m = train(t, levels=1, states=4)
        for seed in (1, 2):
            assert abs(cv(m.generate(seed=seed)) / cv(t) - 1) < bar, (mean_gap_ns, seed)


def test_seeds_are_checked_where_they_enter(locality_model: Model) -> None:
    from iomimic.errors import InputError
    from iomimic.pattern import pattern_trace

    t = locality_model.generate(50, seed=2**64 - 1)  # the largest seed works
    for call in (
        lambda: locality_model.generate(50, seed=-1),
        lambda: train(t, seed=2**64),
        lambda: validate(t, t, baseline="locality-free", seed=-3),
        lambda: pattern_trace("read 4k", 3, seed=1.5),
    ):
        with pytest.raises(InputError, match="a seed is a whole number from 0 to 2\\*\\*64 - 1"):
            call()


def test_a_model_named_gz_is_written_compressed_and_read_back(locality_model: Model, tmp_path: Path) -> None:
    plain, packed = tmp_path / "m.json", tmp_path / "m.json.gz"
    locality_model.save(plain)
    locality_model.save(packed)
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    assert len(packed.read_bytes()) < len(plain.read_bytes()) / 3
    assert Model.load(packed).generate(2_000, seed=3) == locality_model.generate(2_000, seed=3)
    # the content decides, not the name; a broken or zstd file is named
    renamed = tmp_path / "other.json"
    renamed.write_bytes(packed.read_bytes())
    assert Model.load(renamed).data == locality_model.data
    renamed.write_bytes(packed.read_bytes()[:40])
    with pytest.raises(iomimic.InputError, match="gzip-compressed file that does not decompress"):
        Model.load(renamed)
    renamed.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 16)
    with pytest.raises(iomimic.InputError, match="compressed with zstd"):
        Model.load(renamed)


def _runs(size_class: int, cell: int) -> dict:
    """A state's runs of 64 KiB reads as a model file writes them: one fresh run of 8 requests
    in `cell`, their class said to be `size_class`."""
    return {
        "op": 0,
        "size_class": size_class,
        "sizes": {"bytes": [65536], "p": [1]},
        "fresh": [[cell, 8, 9, 1]],
        "alignment": 65536,
    }


def test_model_file_round_trip_and_schema_errors(locality_model: Model, tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    locality_model.save(path)
    again = Model.load(path)
    assert again.data == locality_model.data
    cases = [
        (lambda d: d.update(format="other"), 'model field format: expected "iomimic-model"'),
        (
            lambda d: d.update(version=6),
            "model field version: this iomimic reads versions 1, 2, 3, 4, 5, found 6",
        ),
        (lambda d: d["threads"][0].update(weight="heavy"), "model field threads[0].weight: invalid type"),
        (lambda d: d["threads"][0].update(weight=1.5), "field threads[0].weight: 1.5 is not a probability"),
        (lambda d: d["threads"][0].update(weight=0.5), "field threads[].weight: probabilities sum to 0.5"),
        (
            lambda d: d["threads"][0]["defaults"].update(sequential=1.5),
            "threads[0].defaults: sequential: 1.5 is not a count of requests",
        ),
        (
            lambda d: d["threads"][0].update(
                defaults={**stats_shares(d["threads"][0]["defaults"]), "sequential": 1.5}
            ),
            "threads[0].defaults.sequential: 1.5",
        ),
        (
            lambda d: d["threads"][0]["chain"]["initial"].append(0.0),
            "threads[0].chain: 4 states but 5 initial",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(volume=7),
            "chain.states[0].volume: no volume 7",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(stays=[{"from": 3, "to": 2, "p": 1.0}]),
            "chain.states[0].stays[0]: needs 1 <= from < to",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(stays=[]),
            "chain.states[0].stays: needs at least one bucket",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(runs=[_runs(size_class=2, cell=256)]),
            "chain.states[0].runs[0].fresh[0]: needs [cell, from, to, count] with cell below cells (256)",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(
                runs=[{**_runs(size_class=2, cell=3), "cells": 0}]
            ),
            "chain.states[0].runs[0].cells: needs 1 to 1048576 cells",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(profile=[1] * 64),
            "chain.states[0].profile: only a top-level state with stays has a profile: 64 counts",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(
                stays=[{"from": 1, "to": 2, "p": 1.0}], profile=[10**9] * 64
            ),
            "threads[0].chain.states[].profile: count 64000000000 requests, more than the thread's",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(
                runs=[{**_runs(size_class=2, cell=3), "sequence": [[256, 5]]}]
            ),
            "chain.states[0].runs[0].sequence[0]: needs [start, length]",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(runs=[_runs(size_class=0, cell=3)]),
            "chain.states[0].runs[0].sizes.bytes[0]: a size outside the runs' size class",
        ),
        (
            lambda d: d["threads"][0]["chain"]["states"][0].update(fine=[3, 1], fine_reused=[1, 2]),
            "chain.states[0].fine_reused: needs `fine`, as many counts, and none above its count",
        ),
        (lambda d: d.pop("rate"), "missing field `rate`"),
        (lambda d: d.update(colour="blue"), "unknown field `colour`"),
    ]
    for mutate, words in cases:
        data = json.loads(path.read_text())
        mutate(data)
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(data))
        with pytest.raises(iomimic.InputError) as info:
            Model.load(bad)
        assert words in str(info.value), str(info.value)
        assert str(info.value).startswith(str(bad))


def test_mix_assembles_thread_models(locality_model: Model) -> None:
    log = preset("messenger")
    m = mix([(locality_model, 0.6), (log, 0.4)], name="both")
    weights = [t["weight"] for t in m.data["threads"]]
    assert sum(weights) == pytest.approx(1.0)
    assert weights[0] == pytest.approx(0.6)
    assert sum(weights[1:]) == pytest.approx(0.4)
    assert [v["name"] for v in m.data["volumes"]] == ["0", "H", "L"]
    g = m.generate(20_000, seed=1)
    assert np.bincount(g.stream)[0] / len(g) == pytest.approx(0.6, abs=1e-3)
    # each part keeps its hierarchy, and `model show` says which is which
    from iomimic.report.model import hierarchy

    parts = m.data["selection"]["mixed"]
    assert [(p["levels"], p["states"], p["share"]) for p in parts] == [(1, 4, 0.6), (1, 4, 0.4)]
    deeper = mix([(m, 1), (train(hot_and_cold(5000), levels=2, states=8), 1)], name="mixed")
    assert (deeper.data["levels"], deeper.data["states"]) == (2, 8)
    assert hierarchy(deeper.data) == "up to 2 level(s) x 8 states (parts: both 1 x 4, model 2 x 8)"


@pytest.mark.parametrize("name", PRESETS)
def test_presets_reproduce_their_published_figures(name: str) -> None:
    n = 200_000
    m = preset(name)
    t = m.generate(n, seed=11)
    p = iomimic.characterize(t, mrc="none")
    pub = published(name)
    names = {th["stream"]: th["name"] for th in m.data["threads"]}
    weights = {names[int(s)]: f["requests"] / n for s, f in p["streams"].items()}
    for label, w in pub["weights"].items():
        if w * n < 1000:  # types too rare to measure in this many requests are left out
            continue
        key = next(k for k in weights if k.endswith(label))
        assert weights[key] == pytest.approx(w, rel=0.05), (label, weights[key], w)
    within = lambda got, want: abs(got - want) <= 0.05 * want  # noqa: E731
    if name != "tpch":
        assert within(p["read_fraction"], pub["read_fraction"])
        # sequentiality is per thread (a stream continuing itself), as the published splits are
        seq = sum(f["sequential_fraction"] * f["requests"] for f in p["streams"].values()) / n
        assert within(seq, pub["sequential_fraction"]), seq
    if name == "tpch":
        assert within(p["iops"], pub["iops"])
        for fig in pub["threads"]:
            stream = next(s for s, nm in names.items() if nm == fig["name"])
            f = p["streams"].get(str(stream))
            if f is None or f["requests"] < 5000:  # enough requests that sampling noise stays under 5 %
                continue
            read = fig["read"]
            assert f["read_fraction"] == pytest.approx(read, abs=0.05 * max(read, 0.05))
            if fig["spatial"]:
                # St1-St4 are quarters of the volume the preset describes (a generated trace
                # rarely reaches its end, so characterize's observed span would not do)
                span = m.data["volumes"][0]["span_bytes"]
                quarters = np.bincount((t.offset[t.stream == stream] * 4 // span).astype(int), minlength=4)
                for got, want in zip(quarters / quarters.sum(), fig["spatial"]):
                    assert abs(got - want) <= 0.05 * max(want, 0.05), (fig["name"], got, want)
    if name == "messenger":
        assert within(p["interarrival"]["mean_us"], pub["mean_interarrival_us"])
        sizes = {d["bytes"]: d["fraction"] for d in p["size"]["distribution"]}
        for size, share in pub["sizes"].items():
            assert within(sizes[int(size)], share)


def test_wsrch_small_fidelity(wsrch_small: Path) -> None:
    original = iomimic.read_trace(wsrch_small)
    model = train(original, seed=1)
    result = validate(original, model.generate(seed=3), baseline="locality-free")
    rows = {r["metric"]: r for r in result["rows"]}
    for r in result["rows"]:
        if r["ok"] is not None:
            assert r["ok"], r
    assert rows["spatial histogram (L1/2)"]["variation"] <= 0.02
    assert rows["miss-ratio curve error"]["variation"] <= 0.03
    # the locality-free baseline misses where requests land
    assert (
        rows["spatial histogram (L1/2)"]["baseline_variation"]
        > 10 * rows["spatial histogram (L1/2)"]["variation"]
    )


def test_cli_train_show_generate_validate(tmp_path: Path) -> None:
    src = tmp_path / "t.parquet"
    iomimic.write_trace(hot_and_cold(5000), src)
    model, synth, report = tmp_path / "m.json", tmp_path / "s.parquet", tmp_path / "plots"
    r = run_cli("model", "train", str(src), "-o", str(model), "--levels", "2", "--states", "4")
    assert r.returncode == 0, r.stderr
    assert "2 level(s) x 4 states" in r.stdout
    r = run_cli("model", "show", str(model))
    assert r.returncode == 0 and "top-level states" in r.stdout
    r = run_cli("generate", str(model), "-o", str(synth), "-n", "3000", "--seed", "7", "--intensity", "2")
    assert r.returncode == 0, r.stderr
    assert len(iomimic.read_trace(synth)) == 3000
    out = tmp_path / "v.json"
    r = run_cli("validate", str(src), str(synth), "--baseline", "locality-free", "--json", str(out),
                "--report", str(report))  # fmt: skip
    assert r.returncode == 0, r.stderr
    v = json.loads(out.read_text())
    assert {row["metric"] for row in v["rows"]} >= {"read fraction", "IOPS", "miss-ratio curve error"}
    assert sorted(p.name for p in report.iterdir()) == ["iops.png", "mrc.png", "spatial.png"]
    r = run_cli("model", "preset", "tpch", "-o", str(tmp_path / "tpch.json"))
    assert r.returncode == 0 and "Data #2" in (tmp_path / "tpch.json").read_text()
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "iomimic-model"}')
    r = run_cli("generate", str(bad), "-o", str(tmp_path / "x.parquet"))
    assert r.returncode == 2
    assert "missing field" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.parquet").exists()


def test_re_used_data_lies_where_the_traces_did() -> None:
    """The hot set lies below 4 GiB; the cold reads anywhere. A top-level state over [2.5, 5)
    GiB holds both, and placed where the walk is (or by all its fresh placements) hot requests
    landed above 4 GiB too (where, once re-used, they drew 2.4 % of the synthetic accesses
    against the trace's 0.24 %). The population keeps where its requests placed afresh lay,
    those re-used later apart from the rest, and places them by those counts. (16 states: the
    top-level states this is about; chosen, they are fewer and split further.)"""
    original = hot_and_cold()
    model = train(original, seed=1, states=16)
    gib = 1 << 30
    states = model.data["threads"][0]["chain"]["states"]
    s = next(i for i, st in enumerate(states) if st["start"] <= 3 * gib < st["end"])
    state, cells = states[s], model.data["threads"][0]["reuse"]["population"][s]["cells"]
    width = state["end"] - state["start"]
    above = [j for j in range(len(cells)) if state["start"] + j * width // len(cells) >= 4 * gib]
    assert above and sum(cells[j][0] for j in above) > 50 and all(cells[j][1] == 0 for j in above), cells

    def cold(t: Trace) -> float:
        off = np.asarray(t.offset)
        return float(np.mean((off >= 4 * gib + gib // 16) & (off < 5 * gib)))

    assert cold(original) < 0.003
    assert cold(model.generate(seed=3)) < 2 * cold(original)
    # without a population the leaves' fine counts place fresh requests, as before
    plain = train(original, seed=1, states=16, population=False).data["threads"][0]
    assert plain["chain"]["states"][0].get("fine") and not plain["reuse"].get("population")


def test_the_hottest_requests_lie_where_the_traces_did() -> None:
    """4 KiB random reads and writes by Zipf popularity over 4 GiB: the hottest few blocks take
    a large share of the accesses, so where they lie decides the spatial histogram. Each
    top-level state's population keeps the cells of its 256 hottest requests (and where the
    others lay), and the synthetic trace's hottest blocks are the trace's; without those cells
    they land wherever the walk was, and the 64-range histogram is no closer than the
    locality-free baseline's."""
    from iomimic.pattern import pattern_trace

    original = pattern_trace("randrw 4k zipf=0.9 span=4g rate=2000 poisson", 100_000, seed=3)
    model = train(original, seed=1)
    populations = [p for th in model.data["threads"] for p in th["reuse"]["population"]]
    for p in populations:
        reused = sum(n for touches, n in p["touches"] if touches >= 2)
        assert len(p["hot"]) == min(256, reused)
        assert all(0 <= c < 1 << 16 for c in p["hot"])
        # the others, where they lay: placed afresh = the hottest + the cells' counts
        assert len(p["cells"]) == 256
        assert sum(n for _, n in p["touches"]) == len(p["hot"]) + sum(a + b for a, b in p["cells"])
    without = json.loads(json.dumps(model.data))
    for th in without["threads"]:
        for p in th["reuse"]["population"]:
            del p["hot"], p["cells"]

    def hottest(t: Trace, k: int) -> set[int]:
        blocks, counts = np.unique(np.asarray(t.offset) >> 12, return_counts=True)
        return set(blocks[np.argsort(-counts, kind="stable")[:k]].tolist())

    def spatial(synthetic: Trace) -> dict:
        rows = validate(original, synthetic, baseline="locality-free")["rows"]
        return next(r for r in rows if r["metric"] == "spatial histogram, 64 ranges (L1/2)")

    synthetic, placed_anywhere = model.generate(seed=3), Model(without).generate(seed=3)
    assert hottest(original, 50) <= hottest(synthetic, 200)
    # placed anywhere in their leaves, a few may land on a hot block by chance (1 in 10 seeds)
    assert len(hottest(original, 50) & hottest(placed_anywhere, 200)) <= 2
    kept, lost = spatial(synthetic), spatial(placed_anywhere)
    assert kept["ok"] and not kept["baseline_ok"], kept
    assert lost["variation"] > 0.08 and kept["variation"] < 0.6 * lost["variation"], (kept, lost)
    # placed where the trace placed its new data, not in the hot leaves the walk is in most,
    # the other requests do not pile onto one another: the footprint and re-accessed share hold
    rows = {r["metric"]: r for r in validate(original, synthetic)["rows"]}
    assert abs(rows["footprint (4 KiB blocks)"]["variation"]) < 0.01
    assert abs(rows["blocks re-accessed (%)"]["variation"]) < 0.5
    assert rows["request miss-ratio curve error"]["variation"] < 0.005


def test_bursty_reuse_heavy_fidelity() -> None:
    """On a VM-disk-like trace (one volume, on/off bursts with one-second peaks over 100x the
    mean, a Zipf-like hot set re-read and re-written) the bursts, the one-second rate, where
    requests land, the miss-ratio curves (block, request- and byte-keyed), the footprint and the
    share of blocks re-accessed hold — every row of issue 12's table — and the locality-free
    baseline misses them. (One generation: over 27 seeds, `make fidelity`, the curves and the
    footprint hold on 20-27 and the share re-accessed on 17.)"""
    from .workloads import burst_reuse_trace

    original = burst_reuse_trace()
    model = train(original, seed=1)
    result = validate(original, model.generate(seed=3), baseline="locality-free")
    rows = {r["metric"]: r for r in result["rows"]}
    peak = rows["peak-to-mean IOPS (1 s bins)"]
    assert peak["original"] > 100  # the trace is as bursty as the VM disk the issue measured
    # (the read, random and per-volume shares move by about ±3 % between seeds on this trace:
    # whole bursts of one kind decide them, so they are not asserted here)
    held = (
        "IOPS",
        "spatial histogram (L1/2)",
        "spatial histogram, 64 ranges (L1/2)",
        "IOPS over time, 1 s bins (mean |Δ|/mean)",
        "inter-arrival CV",
        "idle 1 s bins (%)",
        "peak-to-mean IOPS (1 s bins)",
        "miss-ratio curve error",
        "request miss-ratio curve error",
        "byte miss-ratio curve error",
        "footprint (4 KiB blocks)",
        "blocks re-accessed (%)",
    )
    for metric in held:
        assert rows[metric]["ok"], rows[metric]
    # what the baseline (IOMeter-like: the original's mix at random offsets) cannot keep
    for metric in (
        "peak-to-mean IOPS (1 s bins)",
        "IOPS over time, 1 s bins (mean |Δ|/mean)",
        "miss-ratio curve error",
        "request miss-ratio curve error",
        "footprint (4 KiB blocks)",
        "blocks re-accessed (%)",
        "spatial histogram, 64 ranges (L1/2)",
    ):
        assert rows[metric]["baseline_ok"] is False, rows[metric]
    # the model is far closer than the baseline where the baseline misses
    for metric in ("miss-ratio curve error", "blocks re-accessed (%)"):
        assert abs(rows[metric]["variation"]) < abs(rows[metric]["baseline_variation"]) / 4, rows[metric]
    assert result["passed"] > result["baseline_passed"]


def _long_visit_shares(trace: Trace, model: Model) -> dict[int, float]:
    """Per top-level state of the model's one thread: the share of its requests made in visits
    (requests in a row in the state) of 100 or more."""
    states = model.data["threads"][0]["chain"]["states"]
    starts = np.array([s["volume"] * 2**50 + s["start"] for s in states])
    keys = np.asarray(trace.volume).astype(np.int64) * 2**50 + np.asarray(trace.offset).astype(np.int64)
    state = np.searchsorted(starts, keys, side="right") - 1
    bounds = np.r_[0, np.flatnonzero(np.diff(state)) + 1, len(state)]
    lengths, visited = np.diff(bounds), state[bounds[:-1]]
    shares = {}
    for s in np.unique(visited):
        mine = lengths[visited == s]
        shares[int(s)] = float(mine[mine >= 100].sum() / mine.sum())
    return shares


def test_bursty_storms_and_scans_stay_whole_visits() -> None:
    """On the VM-disk-like trace the hot set's storms and the scans are long visits of their
    top-level states (hundreds to thousands of requests in a row), amid many visits of one or
    two requests: a self-loop's odds alone would make every visit geometric (measured: 1 % of
    the hot state's requests in visits of 100 or more, against 78 %). The model keeps those
    states' stays, and the synthetic trace's visits are as long."""
    from .workloads import burst_reuse_trace

    original = burst_reuse_trace()
    model = train(original, seed=1)
    states = model.data["threads"][0]["chain"]["states"]
    kept = [i for i, s in enumerate(states) if "stays" in s]
    assert kept == [0, 1]  # the hot set's state and the scans'; the rest visit as a chain would
    before, after = _long_visit_shares(original, model), _long_visit_shares(model.generate(seed=3), model)
    for s in kept:
        assert before[s] > 0.7
        assert abs(after[s] - before[s]) < 0.1, (s, before[s], after[s])


def test_a_bursty_state_is_visited_when_and_as_often_as_in_the_trace() -> None:
    """A top-level state that keeps its stays keeps its requests per 64th of the thread too
    (`profile`), and the walk leaving a state is steered towards the states it is behind in:
    on the VM-disk-like trace the scans' state gets the trace's number of requests (it varied
    21.4–24.0 k against 22.7 k from one generation to the next by the chain's odds alone) and
    gets them when the trace did (its quietest eighth, 1,275 requests, and its busiest, 5,004,
    came out in any order)."""
    from .workloads import burst_reuse_trace

    original = burst_reuse_trace()
    model = train(original, seed=1)
    states = model.data["threads"][0]["chain"]["states"]
    assert [i for i, s in enumerate(states) if "profile" in s] == [0, 1]
    assert all(len(s["profile"]) == 64 for s in states if "profile" in s)

    def eighths(t: Trace) -> list[int]:
        off = np.asarray(t.offset, dtype=np.int64)
        return [int(x.sum()) for x in np.array_split((off >= 4 << 30) & (off < 8 << 30), 8)]

    # mixed with another model half and half, the thread makes half its requests: its profiles
    # count half as many
    halves = mix([(model, 1.0), (model, 1.0)]).data["threads"]
    assert [t["weight"] for t in halves] == [0.5, 0.5]
    for t in halves:
        for s, half in zip(states, t["chain"]["states"]):
            if "profile" in s:
                assert abs(sum(half["profile"]) - sum(s["profile"]) / 2) <= 32

    trace = eighths(original)
    assert (trace[4], trace[5], sum(trace)) == (1275, 5004, 22749)
    for seed in (3, 4, 5):
        made = eighths(model.generate(seed=seed))
        assert sum(made) == pytest.approx(sum(trace), rel=0.05), made
        assert made[5] > 2 * made[4], made


def _runs_of(trace: Trace, lo: int, hi: int, op: int, size: int) -> tuple[int, int, int, int]:
    """The runs of `trace`'s requests of `op` and `size` in [lo, hi): each request continuing
    one of the 16 latest runs where it ended, or starting a run. Returns (requests, runs of 5
    requests or more, of those the ones starting afresh, requests on a `size` grid)."""
    off = np.asarray(trace.offset, dtype=np.int64)
    mine = (off >= lo) & (off < hi) & (np.asarray(trace.op) == op) & (np.asarray(trace.size) == size)
    heads: list[tuple[int, int]] = []  # (end, run)
    runs: list[list] = []  # [length, fresh]
    starts: set[int] = set()
    for o in off[mine].tolist():
        at = next((i for i in range(len(heads) - 1, -1, -1) if heads[i][0] == o), None)
        if at is None:
            runs.append([0, o not in starts])
            starts.add(o)
            heads = [*heads[-15:], (o, len(runs) - 1)]
            at = len(heads) - 1
        _, run = heads.pop(at)
        runs[run][0] += 1
        heads.append((o + size, run))
    long = [fresh for length, fresh in runs if length >= 5]
    return int(mine.sum()), len(long), sum(long), int((off[mine] % size == 0).sum())


def _blocks(trace: Trace, lo: int, hi: int, op: int | None = None) -> np.ndarray:
    """Each 4 KiB block that `trace`'s requests in [lo, hi) (of `op`, if given) touch, once per
    touch."""
    off = np.asarray(trace.offset, dtype=np.int64)
    size = np.asarray(trace.size, dtype=np.int64)
    mine = (off >= lo) & (off < hi) & ((np.asarray(trace.op) == op) if op is not None else True)
    first, n = off[mine] // 4096, (size[mine] + 4095) // 4096
    return np.repeat(first, n) + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)


def test_scans_and_a_journal_are_kept_as_runs() -> None:
    """The VM-disk-like trace's 50 scans (14 at fresh places, 36 re-scans from where an earlier
    scan started, hundreds of 64 KiB reads each) and its journal (one run of 4 KiB appends) are
    runs of their classes in their top-level states: the model keeps them (in order, with
    where the fresh ones started and how long each ran), and the synthetic trace makes as many
    scans, on the scans' grid, reaching as many blocks, and writes its journal once. Placed a
    request at a time, the scans broke into about 250 runs that reached a fifth fewer blocks,
    and a quarter of the journal's blocks were written twice (now a few per cent, re-uses over the
    state's rare edges, which take the volume's placement). (A few of the scans' requests are
    also re-used one at a time, by requests of other classes that the walk draws there.)"""
    from .workloads import burst_reuse_trace

    original = burst_reuse_trace()
    gib = 1 << 30
    scans = (4 * gib, 6 * gib, 0, 65536)
    assert _runs_of(original, *scans)[1:3] == (50, 14)
    model = train(original, seed=1)
    states = model.data["threads"][0]["chain"]["states"]
    kept = {(i, r["op"], r["size_class"]): r for i, s in enumerate(states) for r in s.get("runs", [])}
    scan_state = next(i for i, s in enumerate(states) if s["start"] <= 4 * gib < s["end"])
    journal_state = next(i for i, s in enumerate(states) if s["start"] <= 40 * gib < s["end"])
    assert set(kept) == {(scan_state, 0, 2), (journal_state, 1, 0)}
    scan = kept[(scan_state, 0, 2)]
    assert len(scan["sequence"]) == 50 and scan["restart"] == pytest.approx(36 / 50)
    assert scan["alignment"] == 65536 and scan["sizes"]["bytes"] == [65536]
    # a fresh scan started in the scan region's cells; a re-scan names the fresh run it repeats
    top, cells = states[scan_state], scan["cells"]
    cells_in_region = (gib * cells // (top["end"] - top["start"])) + 1
    fresh = [c for c, _ in scan["sequence"] if c < cells]
    assert len(fresh) == 14 and max(fresh) < cells_in_region
    assert all(c - cells < 14 for c, _ in scan["sequence"] if c >= cells)
    assert max(length for _, length in kept[(journal_state, 1, 0)]["sequence"]) > 4000

    synthetic = model.generate(seed=3)
    # the runs (and the stays' occupancy profiles) survive the file: the same trace again
    again = Model(json.loads(model.to_json())).generate(seed=3)
    for column in ("offset", "size", "op", "ts_ns"):
        assert np.array_equal(np.asarray(getattr(again, column)), np.asarray(getattr(synthetic, column)))
    requests, runs, fresh_runs, on_grid = _runs_of(synthetic, *scans)
    # (the walk may make a few hundred scan reads more than the trace: a few runs drawn past it)
    assert 48 <= runs <= 55 and abs(fresh_runs - 14) <= 2 and on_grid == requests
    reach = len(np.unique(_blocks(synthetic, 4 * gib, 6 * gib))) / len(
        np.unique(_blocks(original, 4 * gib, 6 * gib))
    )
    assert reach == pytest.approx(1.0, abs=0.08)
    journal = _blocks(synthetic, 40 * gib, 40 * gib + (256 << 20), op=1)
    assert len(journal) > 4000 and len(np.unique(journal)) / len(journal) > 0.93


def test_requests_touched_once_come_back_as_often_as_in_the_trace() -> None:
    """A re-use whose depth its stack does not hold yet is drawn again in its class, cut at the
    stack's size, as training's depths were cut: drawn in another class instead, re-uses moved
    from requests touched once (re-used late) to requests re-used soon, and the VM-disk-like
    hot set's requests touched once went from the trace's 37.5 % to 46 % (its blocks
    re-accessed 5 points low)."""
    from .workloads import burst_reuse_trace

    original = burst_reuse_trace()

    def once(t: Trace) -> float:
        off = np.asarray(t.offset, dtype=np.int64)
        _, counts = np.unique(off[off < 2 << 30], return_counts=True)
        return float((counts == 1).mean())

    assert once(original) == pytest.approx(0.375, abs=0.001)
    assert once(train(original, seed=1).generate(seed=3)) == pytest.approx(0.375, abs=0.05)


def _as_version_1(node: object) -> None:
    """Strips what version 2 added (in place), leaving a version 1 document."""
    if isinstance(node, dict):
        for key in (
            "arrivals",
            "by_op",
            "fine",
            "fine_reused",
            "stays",
            "classes",
            "tail_fresh",
            "rank_share",
            "ranks",
        ):
            node.pop(key, None)
        if isinstance(node.get("volumes"), list) and node.get("volumes") and "stats" in node["volumes"][0]:
            node.pop("volumes")
        for v in node.values():
            _as_version_1(v)
    elif isinstance(node, list):
        for v in node:
            _as_version_1(v)


def _as_version_4(node: object) -> object:
    """Writes every share as version 4 did (in place): fractions, not the counts training took
    them from (stats without `n`). Returns the node."""
    if isinstance(node, dict):
        if "n" in node and "ops" in node:
            as_shares = stats_shares(node)
            node.clear()
            node.update(as_shares)
        for key, v in node.items():
            if key in ("p", "initial", "shares", "continuation_depth", "near_depth") and isinstance(v, list):
                node[key] = shares(v)
            else:
                _as_version_4(v)
    elif isinstance(node, list):
        if node and all(isinstance(b, dict) and set(b) == {"from", "to", "p"} for b in node):
            for b, p in zip(node, shares([b["p"] for b in node]), strict=True):
                b["p"] = p
        for v in node:
            _as_version_4(v)
    return node


def _as_version_3(node: object, parent: dict | None = None) -> None:
    """Writes every chain as version 3 did (in place): each state with its range, and a
    probability of entry per state."""
    if isinstance(node, dict):
        if "transitions" in node and "states" in node:
            node["initial"] = chain_initial(node)
            node["states"] = chain_states(node, parent)
            for state in node["states"]:
                if state.get("children"):
                    _as_version_3(state["children"], state)
            return
        for v in node.values():
            _as_version_3(v)
    elif isinstance(node, list):
        for v in node:
            _as_version_3(v)


def test_version_3_models_load_and_generate_exactly_as_before(tmp_path: Path) -> None:
    """Version 4 leaves out child states' ranges where they split their parent equally and
    writes mostly-zero entry probabilities sparsely: the same model, in fewer bytes."""
    # two far places of a volume: most of its top-level states are never entered
    rng = np.random.default_rng(2)
    n = 20_000
    far = rng.random(n) < 0.5
    offset = rng.integers(0, 1 << 16, n) * 4096 + far * (15 << 30)
    t = Trace(ts_ns=np.arange(n, dtype=np.uint64) * 50_000, offset=offset.astype(np.uint64),
              size=np.full(n, 4096, np.uint32), op=(rng.random(n) < 0.3).astype(np.uint8))  # fmt: skip
    m = train(t, levels=3, states=16)
    data = json.loads(m.to_json())
    assert data["version"] == 5
    chains = _chains(data["threads"][0]["chain"])
    assert any(isinstance(c["initial"], dict) for c in chains)  # sparse where mostly 0
    children = [c for c in chains[1:] if c["states"]]
    assert children and all("start" not in s for c in children for s in c["states"])
    # grandchildren too: their parents' ranges are put back first
    assert any(s.get("children") for c in children for s in c["states"])
    _as_version_4(data)
    _as_version_3(data)
    data["version"] = 3
    path = tmp_path / "v3.json"
    path.write_text(json.dumps(data))
    assert len(path.read_text()) > len(m.to_json())
    old = Model.load(path)
    # the same model, its stats shares now (the file had no counts)
    assert _as_version_4(json.loads(old.to_json())) == _as_version_4(json.loads(m.to_json()))
    assert old.generate(20_000, seed=4) == m.generate(20_000, seed=4)


def test_shares_training_counted_are_written_as_the_counts_and_read_back_exactly(tmp_path: Path) -> None:
    """Version 5 writes a share of a few requests as its count (5 of 12), not as 17 digits
    (0.4166666666666667): the reader divides and gets the very floats training made, so a
    version 4 file of the same model loads and generates exactly as the version 5 one."""
    m = train(hot_and_cold(20_000), levels=2, states=4, seed=1)
    data = json.loads(m.to_json())
    assert data["version"] == 5
    thread = data["threads"][0]
    stats = [thread["defaults"]] + [
        st
        for c in _chains(thread["chain"])
        for row in c["transitions"]
        for st in row.get("stats", {}).values()
    ]
    assert len(stats) > 1
    for st in stats:
        # ops out of n, placements out of the requests with an address, sizes as counts
        assert st["ops"] and all(isinstance(k, int) for k in st["ops"]) and sum(st["ops"]) == st["n"]
        assert all(isinstance(st.get(k, 0), int) for k in ("sequential", "reuse", "continuation", "near"))
        assert all(isinstance(k, int) for k in st["sizes"]["p"])
        shares_of = stats_shares(st)
        assert abs(sum(shares_of["ops"]) - 1) < 1e-12 and abs(sum(shares_of["sizes"]["p"]) - 1) < 1e-12
    assert all(isinstance(k, int) for k in data["rate"]["shares"])
    version_4 = _as_version_4(json.loads(m.to_json()))
    version_4["version"] = 4
    assert not any(isinstance(k, int) for k in version_4["rate"]["shares"])
    path = tmp_path / "v4.json"
    path.write_text(json.dumps(version_4, separators=(",", ":")))
    # the counts are fewer characters than the fractions
    assert len(m.to_json()) < 0.9 * len(path.read_text())
    old = Model.load(path)
    assert _as_version_4(json.loads(old.to_json())) == _as_version_4(json.loads(m.to_json()))
    assert old.generate(20_000, seed=4) == m.generate(20_000, seed=4)
    # written back, the old file's stats are shares (it had no counts), its sizes counts still:
    # the helper gives fractions of either, each op's too
    defaults = json.loads(old.to_json())["threads"][0]["defaults"]
    assert "n" not in defaults and defaults["by_op"]
    assert all(isinstance(p, int) for o in defaults["by_op"] for p in o["sizes"]["p"])
    assert all(isinstance(p, float) for o in stats_shares(defaults)["by_op"] for p in o["sizes"]["p"])
    m.save(tmp_path / "v5.json")
    again = Model.load(tmp_path / "v5.json")
    assert again.to_json() == m.to_json()
    assert again.generate(20_000, seed=4) == m.generate(20_000, seed=4)
    # a file's counts that do not add up are refused, naming what is wrong
    thread["defaults"]["ops"][0] += 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(iomimic.InputError, match=r"ops count .* but n is"):
        Model.load(bad)


def test_compact_chains_refuse_what_they_cannot_place(tmp_path: Path) -> None:
    m = train(hot_and_cold(20_000), levels=2, states=4)
    text = m.to_json()

    def refused(mutate: object, words: str) -> None:
        data = json.loads(text)
        mutate(data)  # type: ignore[operator]
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(data))
        with pytest.raises(iomimic.InputError) as info:
            Model.load(bad)
        assert words in str(info.value), str(info.value)

    top = lambda d: d["threads"][0]["chain"]  # noqa: E731
    parent = lambda d: next(s for s in top(d)["states"] if s.get("children"))  # noqa: E731
    refused(lambda d: top(d)["states"][0].pop("start"), "gives its volume, start and end, or none of them")
    refused(
        lambda d: [top(d)["states"][0].pop(k) for k in ("volume", "start", "end")],
        "no range: only the children of a state, split equally, leave out volume, start and end",
    )
    refused(
        lambda d: parent(d)["children"]["states"][0].update(volume=0, start=0, end=1),
        "children: every state gives its range or none does",
    )
    refused(lambda d: parent(d).update(end=parent(d)["start"]), "its children cannot split it")
    refused(lambda d: top(d).update(initial={"at": [0, 99], "p": [0.5, 0.5]}), "initial: state 99, but")
    refused(
        lambda d: top(d).update(initial={"at": [1, 0], "p": [0.5, 0.5]}), "initial: `at` must be ascending"
    )
    refused(lambda d: top(d).update(initial={"at": [0], "p": [0.5, 0.5]}), "initial: 1 states (`at`) but 2 p")


def _as_version_2(node: object) -> None:
    """Writes every chain's transitions as version 2 did (in place): a list of edge objects for
    every state, with or without edges."""
    if isinstance(node, dict):
        if "transitions" in node and "states" in node:
            node["transitions"] = chain_edges(node)
        for v in node.values():
            _as_version_2(v)
    elif isinstance(node, list):
        for v in node:
            _as_version_2(v)


def _chains(chain: dict) -> list[dict]:
    """A chain and every chain below it."""
    out = [chain]
    for s in chain["states"]:
        if s.get("children"):
            out += _chains(s["children"])
    return out


def test_model_size_grows_with_the_edges_seen_not_with_pairs_of_states(tmp_path: Path) -> None:
    """Issue 20: a model of 16 volumes and 64 streams was 1.03 GB. Transitions are written as
    sparse rows: only states with edges, and per edge its target and count (p and stats only
    where they are not implied). Sixteen volumes read one after another, 2 levels of 16 states:
    thousands of states, about two edges each."""
    n, volumes = 64_000, 16
    i = np.arange(n)
    per = n // volumes
    t = Trace(
        ts_ns=i * 100_000,
        offset=(i % per) * 65536,
        size=np.full(n, 65536),
        op=np.zeros(n, np.uint8),
        volume=i // per,
    )
    m = train(t, levels=2, states=16)
    text = m.to_json()
    d = json.loads(text)
    chains = [c for th in d["threads"] for c in _chains(th["chain"])]
    states = sum(len(c["states"]) for c in chains)
    edges = sum(len(r["to"]) for c in chains for r in c["transitions"])
    stats = sum(
        len(json.dumps(r.get("stats", {}), separators=(",", ":"))) for c in chains for r in c["transitions"]
    )
    assert states > 4000 and edges < 3 * states
    rows = sum(len(c["transitions"]) for c in chains)
    # everything but the chains: thread stats, rate profile, arrivals, reuse
    rest = len(
        json.dumps({**d, "threads": [{**th, "chain": None} for th in d["threads"]]}, separators=(",", ":"))
    )
    # The stated bound. A state: its volume and range and its initial probability (90 bytes); a
    # chain: its field names and brackets (80); a row: its state and field names (40); an edge:
    # its target and count in two lists (16: up to 5 + 9 digits and the commas); and the stats
    # of the edges that carry their own.
    transitions = sum(len(json.dumps(c["transitions"], separators=(",", ":"))) for c in chains)
    assert transitions <= 40 * rows + 16 * edges + stats, (transitions, rows, edges)
    bound = rest + 90 * states + 80 * len(chains) + 40 * rows + 16 * edges + stats
    assert len(text) <= bound, (len(text), bound, states, edges)
    # version 2's form (an object per edge, a list per state) takes about 48 bytes an edge
    dense = json.loads(text)
    _as_version_2(dense)
    dense_chains = [c for th in dense["threads"] for c in _chains(th["chain"])]
    dense_transitions = sum(len(json.dumps(c["transitions"], separators=(",", ":"))) for c in dense_chains)
    assert dense_transitions > 40 * rows + 16 * edges + stats
    path = tmp_path / "m.json"
    m.save(path)
    again = Model.load(path)
    assert again.data == m.data
    assert again.generate(5000, seed=3) == m.generate(5000, seed=3)


def test_a_model_of_4_gib_requests_generates_quickly() -> None:
    """Issue 20: 4 GiB requests took 14-27 ms each (every 4 KiB block marked used). The work per
    request is bounded (counted in ``walk::tests``); here, generously, 1,000 take under 5 s."""
    d = preset("tpch").data
    huge = 4096 * (2**20 - 1)

    def resize(x: object) -> None:
        if isinstance(x, dict):
            if isinstance(x.get("bytes"), list) and "p" in x:
                x.update(bytes=[huge], p=[1.0])
            for v in x.values():
                resize(v)
        elif isinstance(x, list):
            for v in x:
                resize(v)

    resize(d)
    for v in d["volumes"]:
        v["span_bytes"] = 1 << 50
    start = time.perf_counter()
    g = Model(d).generate(1000, seed=1)
    assert time.perf_counter() - start < 5
    assert (g.size == huge).all()


def test_version_2_models_load_and_generate_exactly_as_before(tmp_path: Path) -> None:
    m = train(hot_and_cold(20_000), levels=2, states=4)
    data = json.loads(m.to_json())
    assert data["version"] == 5
    _as_version_4(data)
    _as_version_3(data)
    _as_version_2(data)
    data["version"] = 2
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(data))
    old = Model.load(path)
    assert (
        _as_version_4(json.loads(old.to_json()))["threads"]
        == _as_version_4(json.loads(m.to_json()))["threads"]
    )
    assert old.generate(20_000, seed=4) == m.generate(20_000, seed=4)


def test_version_1_models_still_load_and_generate(locality_model: Model, tmp_path: Path) -> None:
    data = json.loads(locality_model.to_json())
    assert data["version"] == 5
    _as_version_4(data)
    _as_version_3(data)
    _as_version_2(data)
    _as_version_1(data)
    data["version"] = 1
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data))
    old = Model.load(path)
    synth = old.generate(20_000, seed=1)
    assert len(synth) == 20_000
    # a version 1 model has no arrival process: its times follow the rate profile, at its rate
    new = locality_model.generate(20_000, seed=1)
    assert abs(synth.span_s - new.span_s) < 0.1 * new.span_s


def test_multi_stream_span_holds_through_train_and_generate() -> None:
    """Issue 17: a model trained on the tpcc preset's output (five threads) generated a trace
    11 % longer (6.73 s against 6.07 s). The arrival process times the workload as a whole, so
    the span and IOPS hold."""
    original = preset("tpcc").generate(100_000, seed=1)
    synth = train(original, seed=1).generate(seed=2)
    assert len(synth) == len(original)
    assert abs(synth.span_s - original.span_s) < 0.02 * original.span_s
    rows = {r["metric"]: r for r in validate(original, synth)["rows"]}
    assert rows["IOPS"]["ok"], rows["IOPS"]
    assert rows["IOPS over time, 1 s bins (mean |Δ|/mean)"]["ok"]
