"""Everest off-loading end to end: `iomimic offload init|status|recover` on real files, the
Python API, the write guard on bases and stores, and `iomimic study offload`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic import offload
from iomimic.errors import InputError
from iomimic.io import write_trace

from .conftest import run_cli

K = 4096


def _init(tmp_path: Path, *extra: str) -> tuple[Path, list[Path]]:
    base = tmp_path / "vol.dat"
    stores = [tmp_path / "a.log", tmp_path / "b.log"]
    r = run_cli(
        "offload", "init", "--base", str(base), "--base-size", "1M", "--stores",
        ",".join(map(str, stores)), "--store-size", "1M", "--mode", "always", *extra,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert str(stores[0]) in r.stdout
    return base, stores


def test_init_write_status_recover_and_reclaim(tmp_path: Path) -> None:
    base, stores = _init(tmp_path, "--n-way", "2")
    v = offload.Volume(base)
    v.write(0, b"a" * K)  # store a (turn 0)
    v.write(3 * K, b"b" * 2 * K)  # store b (turn 1)
    # A read across both stores and the base in between: split three ways.
    before = base.read_bytes()[K : 3 * K]
    assert v.read(0, 5 * K) == b"a" * K + before + b"b" * 2 * K
    del v  # the client goes away: only the stores' logs know
    r = run_cli("offload", "status", str(base), "--json", "-")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["offloaded_blocks"] == 3
    assert s["extents"] == [[0, 1, s["extents"][0][2]], [3, 2, s["extents"][1][2]]]
    assert s["extents"][1][2] > s["extents"][0][2]  # versions grow
    assert [st["client_blocks"] for st in s["stores"]] == [1, 2]
    assert [st["name"] for st in s["stores"]] == [str(p) for p in stores]
    # Nothing was written home yet; recover --reclaim puts it there.
    assert base.read_bytes()[:K] != b"a" * K
    r = run_cli("offload", "recover", str(base), "--reclaim", "--json", "-")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert (rec["recovered_blocks"], rec["reclaimed_now"], rec["offloaded_blocks"]) == (3, 3, 0)
    data = base.read_bytes()
    assert data[:K] == b"a" * K and data[3 * K : 5 * K] == b"b" * 2 * K
    r = run_cli("offload", "status", str(base))
    assert r.returncode == 0 and "0 blocks off-loaded" in r.stdout


def test_a_lost_store_is_survived_with_two_replicas(tmp_path: Path) -> None:
    base, stores = _init(tmp_path, "--n-way", "2", "--replicas", "2")
    v = offload.Volume(base)
    for b in range(8):
        v.write(b * K, bytes([b + 1]) * K)
    v.write(2 * K, b"z" * K)
    del v
    stores[0].write_bytes(bytes(1 << 20))  # store a is wiped: its header is gone
    r = run_cli("offload", "status", str(base), "--json", "-")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert [st["state"] for st in s["stores"]] == ["lost", "up"]
    assert "a.log" in s["notes"][0] and "nothing is lost" in s["notes"][0]
    v = offload.Volume(base)  # every write reads back from the other copy; a is retired
    want = [b"z" * K if b == 2 else bytes([b + 1]) * K for b in range(8)]
    assert [v.read(b * K, K) for b in range(8)] == want
    assert offload.store_set(base)["retired"] == [0]
    assert v.reclaim_all() == 8
    assert base.read_bytes()[2 * K : 3 * K] == b"z" * K


def test_a_lost_store_is_reported_and_refused_when_it_held_data(tmp_path: Path) -> None:
    base, stores = _init(tmp_path, "--n-way", "2")  # one replica
    v = offload.Volume(base)
    v.write(0, b"a" * K)  # store a
    v.write(K, b"b" * K)  # store b
    del v
    stores[0].unlink()
    for action in ("status", "recover"):
        r = run_cli("offload", action, str(base))
        assert r.returncode == 2, r.stderr
        assert str(stores[0]) in r.stderr and "--accept-loss" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(InputError, match=r"a\.log"):
        offload.Volume(base)
    assert "retired" not in offload.store_set(base)
    r = run_cli("offload", "recover", str(base), "--accept-loss", "--json", "-")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert "LOSS ACCEPTED" in s["notes"][0] and s["offloaded_blocks"] == 1
    assert offload.store_set(base)["retired"] == [0]
    v = offload.Volume(base)  # accepted once: later opens go on, and say so
    assert v.read(K, K) == b"b" * K and v.read(0, K) != b"a" * K
    assert "retired earlier" in v.status()["notes"][0]


def test_status_on_read_only_files_changes_nothing(tmp_path: Path) -> None:
    base, stores = _init(tmp_path, "--n-way", "2", "--replicas", "2")
    v = offload.Volume(base)
    v.write(0, b"q" * 3 * K)
    del v
    files = [base, base.with_name(base.name + ".everest"), *stores]
    for f in files:
        f.chmod(0o444)
    before = [(f.read_bytes(), f.stat().st_mtime_ns) for f in files]
    r = run_cli("offload", "status", str(base), "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["offloaded_blocks"] == 3
    assert offload.status(base)["offloaded_blocks"] == 3
    assert [(f.read_bytes(), f.stat().st_mtime_ns) for f in files] == before


def test_the_write_guard_protects_bases_and_stores(tmp_path: Path) -> None:
    foreign = tmp_path / "precious.log"
    foreign.write_bytes(b"\x01" * (1 << 20))
    r = run_cli(
        "offload", "init", "--base", str(tmp_path / "v.dat"), "--base-size", "1M",
        "--stores", str(foreign), "--store-size", "1M",
    )  # fmt: skip
    assert r.returncode == 2
    assert "--overwrite" in r.stderr  # the library's `overwrite`, shown as the flag
    assert foreign.read_bytes() == b"\x01" * (1 << 20)
    base, _ = _init(tmp_path)
    again = run_cli(
        "offload", "init", "--base", str(base), "--stores", str(tmp_path / "c.log"), "--store-size", "1M"
    )
    assert again.returncode == 2 and "already set up" in again.stderr
    r = run_cli("offload", "status", str(tmp_path / "nothing.dat"))
    assert r.returncode == 2 and "offload init" in r.stderr
    r = run_cli(
        "offload", "init", "--base", str(tmp_path / "w.dat"), "--base-size", "1M", "--stores",
        str(tmp_path / "d.log"), "--store-size", "1M", "--replicas", "2",
    )  # fmt: skip
    assert r.returncode == 2 and "--replicas" in r.stderr


def test_unaligned_io_is_refused(tmp_path: Path) -> None:
    base, _ = _init(tmp_path)
    v = offload.Volume(base)
    with pytest.raises(InputError, match="whole 4096-byte blocks"):
        v.write(100, b"x" * K)


def _peak_trace() -> iomimic.Trace:
    """`peaky` 20 requests/s with 1,000 random writes/s from 2 s to 4 s; `busy` 120 reads/s;
    `idle` 10 reads/s (as the core's study test)."""
    rng = np.random.default_rng(3)
    parts = []
    for vol, start, end, rate, writes in (
        (0, 0, 10, 20, 0.5),
        (0, 2, 4, 1000, 1.0),
        (1, 0, 10, 120, 0),
        (2, 0, 10, 10, 0),
    ):
        ts = np.arange(start * 10**9, end * 10**9, 10**9 // rate, dtype=np.uint64)
        op = (rng.random(len(ts)) < writes).astype(np.uint8)
        off = rng.integers(0, (8 << 30) // K, len(ts), dtype=np.uint64) * K
        parts.append((ts, off, op, np.full(len(ts), vol, np.uint32)))
    ts, off, op, vol = (np.concatenate([p[i] for p in parts]) for i in range(4))
    order = np.argsort(ts, kind="stable")
    return iomimic.Trace(
        ts_ns=ts[order], offset=off[order], size=np.full(len(ts), K, np.uint32), op=op[order],
        volume=vol[order], volumes=["peaky", "busy", "idle"],
    )  # fmt: skip


def test_study_offload_from_the_cli(tmp_path: Path) -> None:
    trace = tmp_path / "peaks.parquet"
    write_trace(_peak_trace(), trace)
    device = tmp_path / "hdd-wc.toml"
    from iomimic.sim import device_config

    device.write_text(device_config("hdd-7200").replace("write_cache = false", "write_cache = true"))
    out, png = tmp_path / "peaks.json", tmp_path / "peaks.png"
    r = run_cli(
        "study", "offload", str(trace), "--device", str(device), "--stores", "3", "--n-way", "2",
        "--json", str(out), "--plot", str(png),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert png.stat().st_size > 0
    rep = json.loads(out.read_text())
    [peak] = rep["peaks"]
    assert (peak["volume"], peak["start_s"], peak["end_s"]) == ("peaky", 2.0, 4.0)
    assert peak["writes"]["on_mean_ms"] * 20 < peak["writes"]["off_mean_ms"]
    stores = {s["host"]: s for s in rep["stores"]}
    assert stores["busy"]["offloads"] == 0 and stores["peaky"]["offloads"] == 0
    assert stores["idle"]["offloads"] > 0
    assert rep["unreclaimed_blocks"] == 0 and rep["volumes"][0]["reclaim_s"] is not None
    # The table, on the terminal.
    r = run_cli("study", "offload", str(trace), "--device", str(device), "--volumes", "peaky,idle")
    assert r.returncode == 0, r.stderr
    assert "peaky" in r.stdout and "busy" not in r.stdout
    r = run_cli("study", "offload", str(trace), "--volumes", "peaky,nope")
    assert r.returncode == 2 and "nope" in r.stderr


def test_run_through_an_everest_target_with_verify(tmp_path: Path) -> None:
    base, _ = _init(tmp_path, "--n-way", "2")
    r = run_cli(
        "run", "--pattern", "rw 4k rate=2000 mix=50", "--target", f"everest:{base}", "-n", "400",
        "--iodepth", "4", "--verify", "--json", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    f = json.loads((tmp_path / "r.json").read_text())
    assert f["completed"] == 400 and f["engine"] == "psync"
    assert f["verify"]["failures"] == 0 and f["verify"]["sectors_checked"] > 0
    # The writes went to the stores (mode always) and read back from them; nothing went home.
    s = offload.Volume(base).status()
    assert s["offloaded_blocks"] > 0
    assert sum(st["client_blocks"] for st in s["stores"]) >= s["offloaded_blocks"]
    # io_uring cannot drive it: a usage error naming the flag.
    r = run_cli(
        "run", "--pattern", "randread 4k", "--target", f"everest:{base}", "-n", "5", "--engine", "io_uring"
    )
    assert r.returncode == 2 and "--engine" in r.stderr


def test_replay_of_a_trace_through_an_everest_target(tmp_path: Path) -> None:
    base, _ = _init(tmp_path)
    # 100 writes and 100 reads of 8 KiB, alternating, over the first 256 KiB, 2 ms apart
    n = 200
    t = iomimic.Trace(
        ts_ns=np.arange(n, dtype=np.uint64) * 2_000_000,
        offset=(np.arange(n, dtype=np.uint64) * 8192) % (64 * K),
        size=np.full(n, 8192, np.uint32),
        op=(np.arange(n) % 2 == 0).astype(np.uint8),
    )
    trace = tmp_path / "t.parquet"
    write_trace(t, trace)
    out = tmp_path / "r.json"
    r = run_cli("replay", str(trace), "--target", f"everest:{base}", "--verify", "--json", str(out))
    assert r.returncode == 0, r.stderr
    f = json.loads(out.read_text())
    assert f["completed"] == n and f["verify"]["failures"] == 0
    # the writes (even requests) land on 16 places of 8 KiB: 32 blocks, all on the stores (always)
    assert offload.Volume(base).status()["offloaded_blocks"] == 32
