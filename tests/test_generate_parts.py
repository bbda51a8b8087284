"""Generation in slices of time: the parts of a long trace, made and written one at a time,
are the trace made whole; written as one file or a directory of parts, it reads back equal."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic.errors import InputError
from iomimic.io import read_trace, write_trace_parts
from iomimic.model import Model, train

from .conftest import run_cli
from .test_ray import volumes_and_streams


@pytest.fixture(scope="module")
def model() -> Model:
    # six streams on three volumes: six threads, each with its own activity
    return train(volumes_and_streams(12_000, seed=4), levels=1, states=4)


def joined(parts: list[iomimic.Trace]) -> iomimic.Trace:
    cols = {c: np.concatenate([p.columns[c] for p in parts]) for c in parts[0].columns}
    return iomimic.Trace(**cols, volumes=parts[0].volumes)


@pytest.mark.parametrize("kw", [dict(requests=50_000, seed=3), dict(duration="20s", seed=8, intensity=3.0)])
def test_the_parts_joined_are_the_trace_made_whole(model: Model, kw: dict) -> None:
    parts = list(model.generate_parts(slice_requests=6_000, **kw))
    whole = model.generate(slice_requests=6_000, **kw)
    assert len(parts) >= 5
    assert joined(parts) == whole
    # each part lies after the one before it, and the first starts the trace at 0
    assert parts[0].ts_ns[0] == 0
    for a, b in itertools.pairwise(parts):
        assert a.ts_ns[-1] <= b.ts_ns[0]
    # slices change the walks, not the mix: the streams keep their shares
    one = model.generate(slice_requests=10**9, **kw)
    share = np.bincount(whole.stream, minlength=6) / len(whole)
    assert np.abs(share - np.bincount(one.stream, minlength=6) / len(one)).max() < 0.01


def test_a_trace_of_one_slice_is_the_usual_generation(model: Model) -> None:
    (only,) = model.generate_parts(20_000, seed=5)
    assert only == model.generate(20_000, seed=5)


def test_progress_counts_to_its_total_across_the_slices(model: Model) -> None:
    seen = []
    parts = model.generate_parts(
        30_000, seed=2, slice_requests=7_000, progress=lambda d, t: seen.append((d, t))
    )
    assert sum(len(p) for p in parts) == 30_000
    assert seen[-1] == (60_000, 60_000)
    assert all(d <= t == 60_000 for d, t in seen)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "csv.gz"])
def test_parts_written_as_one_file_or_a_directory_read_back_equal(
    model: Model, tmp_path: Path, fmt: str
) -> None:
    whole = model.generate(25_000, seed=6, slice_requests=8_000)
    one = tmp_path / f"one.{fmt}"
    w = write_trace_parts(model.generate_parts(25_000, seed=6, slice_requests=8_000), one)
    assert (w.requests, w.span_ns, w.files) == (25_000, int(whole.ts_ns[-1]), [one])
    assert read_trace(one) == whole
    d = tmp_path / "parts"
    w = write_trace_parts(model.generate_parts(25_000, seed=6, slice_requests=8_000), f"{d}/", fmt)
    assert [f.name for f in w.files] == [f"part-0000{i}.{fmt}" for i in range(4)]
    assert sorted(p.name for p in d.iterdir()) == [f.name for f in w.files]
    assert read_trace(d) == whole
    # a second run replaces the parts whole
    w = write_trace_parts(model.generate_parts(9_000, seed=6, slice_requests=8_000), d, fmt)
    assert sorted(p.name for p in d.iterdir()) == [f"part-0000{i}.{fmt}" for i in range(2)]
    assert read_trace(d) == model.generate(9_000, seed=6, slice_requests=8_000)


def test_a_directory_holding_other_files_is_refused_and_kept(model: Model, tmp_path: Path) -> None:
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match=r"notes\.txt"):
        write_trace_parts(model.generate_parts(1000), d)
    assert [p.name for p in d.iterdir()] == ["notes.txt"]


def test_a_failed_generation_leaves_no_parts_behind(model: Model, tmp_path: Path) -> None:
    def failing():
        yield from model.generate_parts(20_000, slice_requests=8_000)
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError):
        write_trace_parts(failing(), f"{tmp_path}/out/")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError):
        write_trace_parts(failing(), tmp_path / "out.parquet")
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments_fail_at_the_call_not_at_the_first_part(model: Model) -> None:
    with pytest.raises(InputError, match="slice_requests"):
        model.generate_parts(100, slice_requests=0)
    with pytest.raises(InputError, match="requests"):
        model.generate_parts(0)


def test_cli_generate_into_a_directory(model: Model, tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    model.save(path)
    out = tmp_path / "synth"
    r = run_cli("generate", str(path), "-o", f"{out}/", "-n", "30000", "--seed", "4")
    assert r.returncode == 0, r.stderr
    assert "wrote 30,000 requests" in r.stdout and "1 files in" in r.stdout
    assert read_trace(out) == model.generate(30_000, seed=4)
    r = run_cli("generate", str(path), "-o", str(tmp_path / "x.txt"), "-n", "10")
    assert r.returncode == 2 and "x.txt" in r.stderr


def test_info_counts_a_directory_of_parts_as_the_trace_read_whole(model: Model, tmp_path: Path) -> None:
    from iomimic.io import parquet_summary, summary

    d = tmp_path / "parts"
    write_trace_parts(model.generate_parts(30_000, seed=2, slice_requests=7_000), f"{d}/")
    whole = summary(read_trace(d))
    assert parquet_summary(d) == whole
    assert parquet_summary(f"{d}/part-0000[0-2].parquet")["requests"] == sum(
        len(read_trace(d / f"part-0000{i}.parquet")) for i in range(3)
    )
    r = run_cli("info", str(d), "--json", "-")
    assert r.returncode == 0, r.stderr
    # files naming their volumes differently are read whole, and merged by name
    other = iomimic.Trace(ts_ns=[0, 9], offset=[0, 0], size=[512, 512], op=[0, 0], volumes=["elsewhere"])
    iomimic.write_trace(other, d / "part-00099.parquet")
    assert parquet_summary(d) is None
    assert summary(read_trace(d))["requests"] == 30_002


@pytest.mark.parametrize("to", ["one.parquet", "one.csv.gz"])
def test_convert_goes_across_parts_a_row_group_at_a_time(model: Model, tmp_path: Path, to: str) -> None:
    import pyarrow.parquet as pq

    from iomimic.io import parquet_traces

    d = tmp_path / "parts"
    write_trace_parts(model.generate_parts(30_000, seed=5, slice_requests=7_000), f"{d}/")
    whole = read_trace(d)
    pieces = list(parquet_traces(d))
    assert len(pieces) == 5 and joined(pieces) == whole
    r = run_cli("convert", str(d), "-o", str(tmp_path / to))
    assert r.returncode == 0, r.stderr
    assert "30,000 requests" in r.stdout
    assert read_trace(tmp_path / to) == whole
    # out of time order: read whole instead, and the same trace comes out (sorted)
    table = whole.to_arrow()
    shuffled = tmp_path / "shuffled.parquet"
    pq.write_table(
        table.take(np.random.default_rng(1).permutation(len(whole))), shuffled, row_group_size=4000
    )
    r = run_cli("convert", str(shuffled), "-o", str(tmp_path / "sorted.parquet"))
    assert r.returncode == 0, r.stderr
    assert read_trace(tmp_path / "sorted.parquet") == whole
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_empty_parts_are_skipped_and_an_empty_trace_refused(tmp_path: Path) -> None:
    empty = iomimic.Trace(ts_ns=[], offset=[], size=[], op=[])
    a = iomimic.Trace(ts_ns=[0, 5], offset=[0, 4096], size=[512, 512], op=[0, 1])
    b = iomimic.Trace(ts_ns=[7, 9], offset=[0, 0], size=[512, 512], op=[0, 0])
    b.ts_ns[:] = [7, 9]  # a later part keeps its place on the trace's clock
    w = write_trace_parts([empty, a, empty, b], f"{tmp_path}/d/")
    assert [f.name for f in w.files] == ["part-00000.parquet", "part-00001.parquet"]
    assert w.requests == 4
    assert read_trace(tmp_path / "d").ts_ns.tolist() == [0, 5, 7, 9]
    with pytest.raises(InputError, match="empty trace"):
        write_trace_parts([empty], f"{tmp_path}/e/")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_one_thread_takes_the_arrival_times_whole_or_in_parts() -> None:
    # one thread with an arrival process: its walk draws no gaps and its column takes the
    # arrival times, which neither the walk nor a faster clock may move
    from .workloads import hot_and_cold

    one = train(hot_and_cold(20_000), levels=1, states=4)
    assert len(one.data["threads"]) == 1 and one.data["rate"]["arrivals"] is not None
    kw = dict(duration="4s", seed=8, intensity=3.0)
    whole = one.generate(slice_requests=2_000, **kw)
    parts = list(one.generate_parts(slice_requests=2_000, **kw))
    assert len(parts) >= 3
    assert joined(parts) == whole
    # the duration holds to its end (about 2,000 IOPS at 3x: 4 s hold about 24,000 requests),
    # in time order
    assert 3.9 * 10**9 <= whole.ts_ns[-1] <= 4 * 10**9
    assert len(whole) == pytest.approx(24_000, rel=0.05)
    assert np.all(np.diff(whole.ts_ns.astype(np.int64)) >= 0)
    slow = one.generate(duration="12s", seed=8, slice_requests=2_000)
    assert len(slow) == len(whole)
    assert np.array_equal(slow.offset, whole.offset)
    assert np.abs(slow.ts_ns.astype(np.float64) / 3.0 - whole.ts_ns).max() <= 1.0
    # a count and a duration: whichever ends first
    short = one.generate(50_000, duration="2s", seed=8)
    assert short.ts_ns[-1] <= 2 * 10**9 and len(short) == pytest.approx(4_000, rel=0.05)
    assert len(one.generate(1_000, duration="2s", seed=8)) == 1_000
    # a weight a rounding off 1 (as validation allows) still gives every arrival a request
    odd = json.loads(json.dumps(one.data))
    odd["threads"][0]["weight"] = 0.999995
    t = Model(odd).generate(1_000_000, seed=2)
    assert len(t) == 1_000_000 and int(np.asarray(t.size).min()) > 0
