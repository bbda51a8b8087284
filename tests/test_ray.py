"""`--ray` and ``ray=``: work run as Ray tasks on a local Ray gives exactly what the local run
gives; without Ray, `--ray` says how to install it."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import iomimic
from iomimic.cli import main
from iomimic.errors import InputError
from iomimic.model import train

from .conftest import run_cli


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray of two CPUs for the module (starting one takes seconds)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


def volumes_and_streams(n: int = 12_000, seed: int = 5) -> iomimic.Trace:
    """Three volumes with two streams each, of different shapes: sequential runs, random
    reads, a small re-written set."""
    rng = np.random.default_rng(seed)
    stream = rng.choice(6, n, p=[0.3, 0.1, 0.2, 0.15, 0.15, 0.1]).astype(np.uint32)
    volume = (stream // 2).astype(np.uint32)
    kind = stream % 3
    size = np.where(kind == 0, 65536, rng.choice([4096, 8192], n)).astype(np.uint32)
    random = rng.integers(0, 1 << 20, n).astype(np.uint64) * 4096
    hot = rng.integers(0, 64, n).astype(np.uint64) * 4096
    offset = np.where(kind == 0, np.arange(n, dtype=np.uint64) * 65536, np.where(kind == 1, random, hot))
    op = np.where(kind == 2, 1, (rng.random(n) < 0.2).astype(np.uint8)).astype(np.uint8)
    return iomimic.Trace(
        ts_ns=np.cumsum(rng.exponential(100_000, n)).astype(np.uint64),
        offset=offset,
        size=size,
        op=op,
        volume=volume,
        stream=stream,
        volumes=["data", "log", "index"],
    )


def assert_same_model(got: iomimic.Model, want: iomimic.Model) -> None:
    """Field by field (so a difference names its place), then the whole JSON."""
    a, b = got.data, want.data
    assert a.keys() == b.keys()
    for key in a:
        if key != "threads":
            assert a[key] == b[key], key
    assert len(a["threads"]) == len(b["threads"])
    for ta, tb in zip(a["threads"], b["threads"]):
        for key in tb:
            assert ta[key] == tb[key], (tb["name"], key)
    assert got.to_json() == want.to_json()


def test_training_each_thread_as_a_ray_task_gives_the_local_model(local_ray):
    t = volumes_and_streams()
    # levels and states chosen (on the driver), then six threads as tasks
    local = train(t, name="mixed")
    on_ray = train(t, name="mixed", ray=True)
    assert len(local.threads) == 6
    assert_same_model(on_ray, local)


def test_training_in_pieces_with_the_threads_on_ray_gives_the_local_model(local_ray, tmp_path, capsys):
    """Past memory, the threads are trained by Ray tasks that each read the trace in pieces
    where they run (a share of the threads each), and the driver, training none, assembles the
    model: the one the trace read whole gives; through the API, on a Parquet file and at its
    URL, and through the CLI."""
    import pyarrow.parquet as pq

    from iomimic.model import train_in_pieces

    t = volumes_and_streams()
    path = tmp_path / "mixed.parquet"
    pq.write_table(t.to_arrow(), path, row_group_size=2_500)
    local = train(iomimic.read_trace(path), select_device=None)
    assert len(local.threads) == 6
    assert_same_model(train_in_pieces(path, select_device=None, ray=True), local)
    on_ray = train_in_pieces(f"file://{path}", levels=2, by="none", select_device=None, ray=True)
    alone = train(iomimic.read_trace(path), levels=2, by="none", select_device=None)
    assert on_ray.data.pop("source") == f"file://{path}" and alone.data.pop("source") == str(path)
    assert on_ray.data == alone.data
    out = tmp_path / "m.json"
    quick = ["--levels", "1", "--select-device", "none"]
    # in this process: its Ray is the one the test started
    assert main(["model", "train", str(path), "-o", str(out), "--memory", "1K", "--ray", *quick]) == 0
    assert "the threads on Ray" in capsys.readouterr().err
    assert_same_model(iomimic.Model.load(out), train(iomimic.read_trace(path), levels=1, select_device=None))


def assert_same_figures(got, want, path: str = "profile") -> None:
    """Equal field by field, floats to 1e-9 relative (sums taken in another order); a
    difference names its place."""
    if isinstance(want, dict):
        assert got.keys() == want.keys(), path
        for key in want:
            assert_same_figures(got[key], want[key], f"{path}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), path
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same_figures(a, b, f"{path}[{i}]")
    elif isinstance(want, float) or isinstance(got, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), path
    else:
        assert got == want, path


def test_characterizing_by_partition_on_ray_gives_the_local_profile(local_ray, tmp_path, capsys):
    """`characterize --ray`: each partition of a Parquet trace's row groups (two files, row
    groups numbered across them) is counted by a Ray task where it runs and taken in on the
    driver, in time order: the profile the trace read in pieces gives, field by field, and the
    whole read's figures wherever they are exact."""
    import pyarrow.parquet as pq

    from iomimic.profile import characterize, characterize_parquet

    t = volumes_and_streams()
    folder = tmp_path / "parts"
    folder.mkdir()
    table = t.to_arrow()
    # the first file without statistics: the trace's start is then read, not taken from them
    pq.write_table(
        table.slice(0, 7_000), folder / "part-0.parquet", row_group_size=1_000, write_statistics=False
    )
    pq.write_table(table.slice(7_000), folder / "part-1.parquet", row_group_size=1_000)
    options = {"by": "stream", "window": "100ms"}
    in_pieces = characterize_parquet(folder, memory=1 << 30, **options)
    out = tmp_path / "ray.json"
    cli = ["characterize", str(folder), "--ray", "--memory", "1G", "--by", "stream", "--window", "100ms"]
    assert main([*cli, "--json", str(out)]) == 0
    on_ray = json.loads(out.read_text())
    assert_same_figures(on_ray, json.loads(json.dumps(in_pieces)))
    whole = characterize(iomimic.read_trace(folder), **options)
    for group in [on_ray, on_ray["volumes"]["log"], on_ray["streams"]["3"]]:
        assert group["mrc"]["sampling_rate"] == 1.0
    for key in [
        "requests",
        "reads",
        "bytes_written",
        "sequentiality",
        "mrc",
        "spatial",
        "fluctuation",
        "size",
    ]:
        assert_same_figures(on_ray[key], whole[key], key)
        assert_same_figures(on_ray["volumes"]["index"][key], whole["volumes"]["index"][key], key)
        assert_same_figures(on_ray["streams"]["4"][key], whole["streams"]["4"][key], key)
    gaps = on_ray["interarrival"]
    assert (gaps["count"], gaps["mean_us"]) == (
        whole["interarrival"]["count"],
        pytest.approx(whole["interarrival"]["mean_us"]),
    )


def test_a_real_trace_by_many_partitions_on_ray_gives_its_profile_in_pieces(
    local_ray, wsrch_small, tmp_path, monkeypatch
):
    """The WebSearch trace (six volumes, reads at random with re-use), as Parquet of 24 row
    groups cut into 13 partitions of at most 2,000 requests (more than the CPUs, and more than
    the 8 kept in flight: they queue), each starting in the middle of the volumes' runs and
    re-uses: the profile the trace read in pieces gives."""
    import pyarrow.parquet as pq

    from iomimic import cluster
    from iomimic.profile import characterize_parquet

    path = tmp_path / "wsrch.parquet"
    pq.write_table(iomimic.read_trace(wsrch_small).to_arrow(), path, row_group_size=1_033)
    assert pq.ParquetFile(path).metadata.num_row_groups == 24
    monkeypatch.setattr(local_ray, "cluster_resources", lambda: {"CPU": 7.0})
    monkeypatch.setattr(cluster, "PARTITION_ROWS", 2_000)
    assert len(cluster._even_ranges([1_033] * 24, 13)) == 13
    in_pieces = characterize_parquet(path, memory=1 << 30, by="volume")
    on_ray = characterize_parquet(path, memory=1 << 30, by="volume", ray=local_ray)
    assert_same_figures(json.loads(json.dumps(on_ray)), json.loads(json.dumps(in_pieces)))


def test_cli_characterize_with_ray_joins_the_cluster_at_ray_address(local_ray, tmp_path, monkeypatch):
    """A fresh `iomimic characterize --ray` process joins the test's Ray through RAY_ADDRESS:
    its profile is the one the trace read in pieces gives."""
    import pyarrow.parquet as pq

    path = tmp_path / "mixed.parquet"
    pq.write_table(volumes_and_streams(6_000, seed=3).to_arrow(), path, row_group_size=1_500)
    pieces, on_ray = tmp_path / "pieces.json", tmp_path / "ray.json"
    # --memory 1K: too small to read it whole, so it is read in pieces here
    r = run_cli("characterize", str(path), "--memory", "1K", "--json", str(pieces))
    assert r.returncode == 0, r.stderr
    monkeypatch.setenv("RAY_ADDRESS", local_ray.get_runtime_context().gcs_address)
    r = run_cli("characterize", str(path), "--memory", "1K", "--ray", "--json", str(on_ray))
    assert r.returncode == 0, r.stderr
    assert "characterizing it here" not in r.stderr
    assert_same_figures(json.loads(on_ray.read_text()), json.loads(pieces.read_text()))


def test_row_groups_that_go_back_in_time_are_characterized_whole_here(local_ray, tmp_path, capsys):
    import pyarrow.parquet as pq

    t = volumes_and_streams(3_000)
    table = t.to_arrow()
    path = tmp_path / "back.parquet"
    with pq.ParquetWriter(path, table.schema) as w:
        for a, b in [(0, 1_000), (2_000, 3_000), (1_000, 2_000)]:  # two partitions, the second goes back
            w.write_table(table.slice(a, b - a))
    # and files named out of time order: the second one wholly before the first one's start
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(table.slice(1_500), folder / "a.parquet", row_group_size=500)
    pq.write_table(table.slice(0, 1_500), folder / "b.parquet", row_group_size=500)
    for trace in [path, folder]:
        plain, on_ray = tmp_path / "plain.json", tmp_path / "ray.json"
        assert main(["characterize", str(trace), "--json", str(plain)]) == 0
        assert main(["characterize", str(trace), "--ray", "--json", str(on_ray)]) == 0
        assert "its row groups go back in time: characterizing it here" in capsys.readouterr().err
        assert json.loads(on_ray.read_text()) == json.loads(plain.read_text())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1_000), min_size=1, max_size=40), st.integers(1, 50))
def test_partitions_are_consecutive_ranges_of_the_row_groups(sizes, count):
    from iomimic.cluster import _even_ranges

    parts = _even_ranges(sizes, count)
    assert 1 <= len(parts) <= count
    assert [i for r in parts for i in r] == list(range(len(sizes)))
    assert all(len(r) > 0 for r in parts)


def test_characterize_with_ray_counts_other_formats_here_and_says_so(local_ray, tmp_path, capsys):
    path = tmp_path / "t.csv"
    iomimic.write_trace(volumes_and_streams(2_000), path)
    plain, on_ray = tmp_path / "plain.json", tmp_path / "ray.json"
    assert main(["characterize", str(path), "--json", str(plain)]) == 0
    assert main(["characterize", str(path), "--ray", "--json", str(on_ray)]) == 0
    assert "only a Parquet trace is cut into partitions" in capsys.readouterr().err
    assert json.loads(on_ray.read_text()) == json.loads(plain.read_text())


def test_one_thread_without_reuse_on_ray_is_the_local_one_too(local_ray):
    t = volumes_and_streams(4000, seed=9)
    local = train(t, levels=2, states=4, by="none", reuse=False)
    on_ray = train(t, levels=2, states=4, by="none", reuse=False, ray=True)
    assert len(on_ray.threads) == 1
    assert on_ray.threads[0]["reuse"] is None
    assert_same_model(on_ray, local)


def test_cli_train_with_ray_connects_to_the_cluster_at_ray_address(local_ray, tmp_path, monkeypatch):
    trace = tmp_path / "mixed.parquet"
    iomimic.write_trace(volumes_and_streams(6000, seed=3), trace)
    plain, ray_made = tmp_path / "plain.json", tmp_path / "ray.json"
    r = run_cli("model", "train", str(trace), "-o", str(plain), "--levels", "2", "--states", "8")
    assert r.returncode == 0, r.stderr
    # the command joins the test's Ray rather than starting one of its own
    monkeypatch.setenv("RAY_ADDRESS", local_ray.get_runtime_context().gcs_address)
    r = run_cli("model", "train", str(trace), "-o", str(ray_made), "--levels", "2", "--states", "8", "--ray")
    assert r.returncode == 0, r.stderr
    assert "6 thread(s)" in r.stdout
    assert json.loads(ray_made.read_text()) == json.loads(plain.read_text())


def test_without_ray_the_flag_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    trace = tmp_path / "t.parquet"
    iomimic.write_trace(volumes_and_streams(500), trace)
    # an import of a module mapped to None fails, as when Ray is not installed
    monkeypatch.setitem(sys.modules, "ray", None)
    code = main(["model", "train", str(trace), "-o", str(tmp_path / "m.json"), "--ray"])
    assert code == 2
    err = capsys.readouterr().err
    assert "pip install 'iomimic[ray]'" in err
    assert "Traceback" not in err
    assert not (tmp_path / "m.json").exists()
    with pytest.raises(InputError, match=r"iomimic\[ray\]"):
        train(volumes_and_streams(500), ray=True)


def test_a_trace_taken_for_the_ray_address_is_refused_plainly(tmp_path, capsys):
    code = main(["model", "train", "-o", str(tmp_path / "m.json"), "--ray", "trace.csv", "x"])
    assert code == 2
    err = capsys.readouterr().err
    assert "'trace.csv' is not a Ray address" in err
    assert "give --ray after the trace" in err


def test_a_thread_with_model_times_of_another_length_is_refused():
    from iomimic import _core

    t = volumes_and_streams(500)
    plan = _core.train_plan(*t._core_args(), {"levels": 1, "states": 4, "seed": 1})
    columns, u = plan.thread_trace(0, *t._core_args())
    sub = iomimic.Trace._from_reader(columns)
    assert len(sub) == plan.sizes[0] == len(u)
    with pytest.raises(InputError, match=rf"{len(u) - 1} model times for {len(u)} requests"):
        _core.train_part(*sub._core_args(), u[:-1], plan.shared)
    with pytest.raises(InputError, match="thread 6 of a plan of 6 threads"):
        plan.thread_trace(6, *t._core_args())
    with pytest.raises(InputError, match="trained thread could not be read"):
        plan.assemble(["{}"] * len(plan.sizes))


def ssd_cache_options(**extra):
    from iomimic.sim import device_config

    return dict(
        backend=device_config("hdd-7200"),
        ssd=device_config("ssd-sata"),
        cache_bytes=[1 << 20, 4 << 20, 16 << 20],
        policies=["lru", "fifo"],
        write_policy="write-back",
        **extra,
    )


def test_an_ssd_cache_sweep_as_ray_tasks_gives_the_local_report(local_ray):
    from iomimic.study import run

    t = volumes_and_streams(3000, seed=11)
    # the synthetic workload is trained and generated in every task: the same in each
    options = ssd_cache_options(workloads=["original", "synthetic", "locality-free"])
    local = run("ssd-cache", t, **options)
    on_ray = run("ssd-cache", t, ray=True, **options)
    assert [len(w["runs"]) for w in on_ray["workloads"]] == [6, 6, 6]
    assert [(r["policy"], r["cache_bytes"]) for r in on_ray["workloads"][0]["runs"]] == [
        (p, b) for p in ("lru", "fifo") for b in (1 << 20, 4 << 20, 16 << 20)
    ]
    assert on_ray.keys() == local.keys()
    for key in local:
        assert on_ray[key] == local[key], key


def test_cli_ssd_cache_with_ray_writes_the_local_report(local_ray, tmp_path, monkeypatch):
    trace = tmp_path / "mixed.parquet"
    iomimic.write_trace(volumes_and_streams(2000, seed=4), trace)
    args = [
        "study",
        "ssd-cache",
        str(trace),
        "--backend",
        "hdd-7200",
        "--cache",
        "1M,8M",
        "--policy",
        "lru,arc",
    ]
    r = run_cli(*args, "--json", str(tmp_path / "plain.json"))
    assert r.returncode == 0, r.stderr
    monkeypatch.setenv("RAY_ADDRESS", local_ray.get_runtime_context().gcs_address)
    r = run_cli(*args, "--json", str(tmp_path / "ray.json"), "--ray")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "ray.json").read_text()) == json.loads(
        (tmp_path / "plain.json").read_text()
    )


def test_defrag_policies_as_ray_tasks_give_the_local_report(local_ray):
    from iomimic.sim import device_config
    from iomimic.study import run

    t = volumes_and_streams(3000, seed=2)
    options = dict(device=device_config("hdd-7200"), policies=["full", "partial:10%", "dynamic"])
    local = run("defrag", t, **options)
    on_ray = run("defrag", t, ray=True, **options)
    assert [r["policy"] for r in on_ray["runs"]] == ["full", "partial:10%", "dynamic"]
    assert on_ray == local


def test_early_errors_fleets_as_ray_tasks_give_the_local_report(local_ray):
    from iomimic.sim import device_config
    from iomimic.study import run

    t = volumes_and_streams(3000, seed=8)
    options = dict(
        device=device_config("hdd-7200"),
        devices=6,
        faulty=1,
        faults=["slow-sectors:0.01", "failed-sectors:0.001"],
        intensities=[1.0, 3.0, 9.0],
        seed=4,
    )
    local = run("early-errors", t, **options)
    on_ray = run("early-errors", t, ray=True, **options)
    assert [o["intensity"] for o in on_ray["intensities"]] == [1.0, 3.0, 9.0]
    assert on_ray == local


def test_a_simulation_sweep_as_ray_tasks_gives_the_local_figures(local_ray, tmp_path, monkeypatch):
    from iomimic.sim import sweep

    t = volumes_and_streams(2000, seed=6)
    options = dict(intensities=[1.0, 5.0], iodepths=[None, 4], map="log=ssd-sata")
    local = sweep(t, ["hdd-7200", "ssd-nvme"], **options)
    on_ray = sweep(t, ["hdd-7200", "ssd-nvme"], ray=True, **options)
    assert len(on_ray) == 8
    for a, b in zip(on_ray, local):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == b[key], (a["sweep"], key)
    trace = tmp_path / "mixed.parquet"
    iomimic.write_trace(t, trace)
    args = ["simulate", str(trace), "--device", "hdd-7200,ssd-sata", "--shared", "--iodepth", "2,8"]
    r = run_cli(*args, "--json", str(tmp_path / "plain.json"))
    assert r.returncode == 0, r.stderr
    monkeypatch.setenv("RAY_ADDRESS", local_ray.get_runtime_context().gcs_address)
    r = run_cli(*args, "--json", str(tmp_path / "ray.json"), "--ray")
    assert r.returncode == 0, r.stderr
    plain = json.loads((tmp_path / "plain.json").read_text())
    assert [f["sweep"]["iodepth"] for f in plain] == [2, 8, 2, 8]
    assert json.loads((tmp_path / "ray.json").read_text()) == plain


def test_a_sweep_in_pieces_as_ray_tasks_gives_the_local_figures(local_ray, tmp_path):
    import pyarrow.parquet as pq

    from iomimic.sim import sweep_in_pieces

    path = tmp_path / "mixed.parquet"
    pq.write_table(volumes_and_streams(3_000, seed=9).to_arrow(), path, row_group_size=700)
    options = dict(intensities=[1.0, 3.0], map="log=ssd-sata")
    local = sweep_in_pieces(path, ["hdd-7200", "ssd-nvme"], **options)
    # the tasks read the trace where they run: here at its URL, in place (an object store's)
    on_ray = sweep_in_pieces(f"file://{path}", ["hdd-7200", "ssd-nvme"], ray=True, **options)
    assert [f["sweep"]["device"] for f in on_ray] == ["hdd-7200"] * 2 + ["ssd-nvme"] * 2
    assert on_ray == local


def test_a_study_that_runs_as_one_piece_is_refused_on_ray(local_ray):
    from iomimic.study import run

    with pytest.raises(InputError, match="runs as one piece"):
        run("prefetch", volumes_and_streams(500), ray=True)


def test_a_task_that_fails_is_reported_without_ray_in_the_way(local_ray):
    from iomimic.cluster import run_tasks
    from iomimic.errors import IomimicError

    # defined here, so Ray ships the functions themselves to its workers
    def refuses(shared, point):
        raise InputError(f"point {point}: {shared}")

    def breaks(shared, point):
        raise KeyError(point)

    with pytest.raises(InputError, match="point 2: no such size"):
        run_tasks(local_ray, refuses, "no such size", [2])
    with pytest.raises(IomimicError, match=r"a Ray task failed: KeyError\('x'\)"):
        run_tasks(local_ray, breaks, None, ["x"])


def test_an_address_where_nothing_listens_is_refused_at_once(tmp_path):
    # in a process of its own, where no Ray is initialised (Ray would keep trying for minutes)
    r = run_cli("model", "train", "t.parquet", "-o", str(tmp_path / "m.json"), "--ray", "127.0.0.1:1")
    assert r.returncode == 2
    assert "nothing answers at 127.0.0.1:1" in r.stderr
    assert "ray start --head" in r.stderr
    assert "Traceback" not in r.stderr


def test_ray_addresses_of_every_kind_are_told_from_file_names():
    from iomimic.cluster import is_address

    for address in ["auto", "local", "10.0.0.7:6379", "head-node:6379", "ray://head:10001", "[::1]:6379"]:
        assert is_address(address), address
    for name in ["trace.csv", "msr/*.csv.gz", "6379", "head", "s3://bucket/t.parquet", ""]:
        assert not is_address(name), name


def test_generation_sliced_into_ray_tasks_gives_the_local_trace(local_ray):
    m = train(volumes_and_streams(8000, seed=2), levels=1, states=4)
    for kw in [dict(requests=40_000, seed=4), dict(duration="15s", seed=1)]:
        local = list(m.generate_parts(slice_requests=6_000, **kw))
        on_ray = list(m.generate_parts(slice_requests=6_000, ray=True, **kw))
        assert len(on_ray) == len(local) >= 3
        for a, b in zip(on_ray, local):
            for name in b.columns:
                assert np.array_equal(a.columns[name], b.columns[name]), name
            assert a == b


def test_cli_generate_with_ray_writes_the_local_parts(local_ray, tmp_path, monkeypatch):
    path = tmp_path / "m.json"
    train(volumes_and_streams(6000, seed=3), levels=1, states=4).save(path)
    r = run_cli("generate", str(path), "-o", f"{tmp_path}/plain/", "-n", "20000")
    assert r.returncode == 0, r.stderr
    monkeypatch.setenv("RAY_ADDRESS", local_ray.get_runtime_context().gcs_address)
    r = run_cli("generate", str(path), "-o", f"{tmp_path}/ray/", "-n", "20000", "--ray")
    assert r.returncode == 0, r.stderr
    assert iomimic.read_trace(tmp_path / "ray") == iomimic.read_trace(tmp_path / "plain")
