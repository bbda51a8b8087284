"""The Trace: normalisation, validation, polars/arrow views and lossless round trips."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import iomimic
from iomimic import LATENCY_UNKNOWN, Trace


def test_constructor_sorts_stably_and_makes_times_relative() -> None:
    t = Trace(ts_ns=[50, 20, 20, 90], offset=[1, 2, 3, 4], size=[512] * 4, op=[0, 1, 0, 1])
    assert t.ts_ns.tolist() == [0, 0, 30, 70]
    assert t.offset.tolist() == [2, 3, 1, 4]
    assert t.volumes == ["0"]


def test_constructor_refuses_what_columns_cannot_hold() -> None:
    with pytest.raises(iomimic.InputError, match="column offset has a negative value"):
        Trace(ts_ns=[0], offset=[-1], size=[512], op=[0])
    with pytest.raises(iomimic.InputError, match=r"op 7 is not 0\.\.=3"):
        Trace(ts_ns=[0], offset=[0], size=[512], op=[7])
    with pytest.raises(iomimic.InputError, match="volume 2 has no name"):
        Trace(ts_ns=[0], offset=[0], size=[512], op=[0], volume=[2], volumes=["a"])
    with pytest.raises(iomimic.InputError, match="passes 2"):
        Trace(ts_ns=[0], offset=[2**63 - 1], size=[512], op=[0])
    with pytest.raises(iomimic.InputError, match="column size has a value too large"):
        Trace(ts_ns=[0], offset=[0], size=[2**32], op=[0])


def test_to_polars_has_nulls_for_unknown_latency() -> None:
    t = Trace(ts_ns=[0, 1], offset=[0, 0], size=[1, 1], op=[0, 0], latency_ns=[5, LATENCY_UNKNOWN])
    df = t.to_polars()
    assert df["latency_ns"].to_list() == [5, None]
    assert df.columns == ["ts_ns", "offset", "size", "op", "volume", "stream", "latency_ns"]
    assert Trace.from_arrow(t.to_arrow()) == t


def test_named_views_give_op_volume_and_file_names_as_enums() -> None:
    import pandas as pd
    import polars as pl

    t = Trace(
        ts_ns=[0, 1, 2, 3],
        offset=[0] * 4,
        size=[512] * 4,
        op=[0, 1, 2, 3],
        volume=[1, 0, 1, 0],
        file=[0, 0, 1, 1],
        volumes=["sda", "nvme0n1"],
        files=["/a", "/b"],
    )
    df = t.to_polars(names=True)
    assert df["op"].to_list() == ["read", "write", "trim", "flush"]
    assert df["volume"].to_list() == ["nvme0n1", "sda", "nvme0n1", "sda"]
    assert df["file"].to_list() == ["/a", "/a", "/b", "/b"]
    assert df.schema["op"] == pl.Enum(["read", "write", "trim", "flush"])
    assert df.filter(pl.col("op") == "write")["ts_ns"].to_list() == [1]
    assert t.to_polars()["op"].to_list() == [0, 1, 2, 3]  # ids stay the default
    pdf = t.to_pandas(names=True)
    assert isinstance(pdf["op"].dtype, pd.CategoricalDtype)
    assert pdf["volume"].tolist() == ["nvme0n1", "sda", "nvme0n1", "sda"]
    assert t.to_pandas()["size"].tolist() == [512] * 4
    assert (t.op == iomimic.Op.WRITE).sum() == 1 and iomimic.Op(2).name == "TRIM"


def test_profile_repr_is_one_line_and_top_level_names_exist() -> None:
    t = Trace(ts_ns=[0, 10**9], offset=[0, 4096], size=[4096, 4096], op=[0, 1])
    text = repr(iomimic.characterize(t, mrc="none"))
    assert "\n" not in text and len(text) < 200
    assert text.startswith("<Profile 2 requests, 1 volume, 1 stream") and "50.0% reads" in text
    for name in ("validate", "simulate", "run", "characterize", "read_trace", "Op"):
        assert name in iomimic.__all__ and callable(getattr(iomimic, name))


def test_from_arrow_turns_string_volumes_into_a_name_table() -> None:
    import pyarrow as pa

    table = pa.table(
        {
            "ts_ns": [0, 1, 2],
            "offset": [0, 1, 2],
            "size": [8, 8, 8],
            "op": [0, 0, 1],
            "volume": ["sdb", "sda", "sdb"],
        }
    )
    t = Trace.from_arrow(table)
    assert [t.volumes[v] for v in t.volume] == ["sdb", "sda", "sdb"]


names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)


@st.composite
def traces(draw) -> Trace:
    n = draw(st.integers(1, 30))
    volumes = draw(st.lists(names, min_size=1, max_size=4))
    files = draw(st.lists(names, min_size=1, max_size=3))
    col = lambda lo, hi: draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))  # noqa: E731
    kwargs = {}
    if draw(st.booleans()):
        kwargs["latency_ns"] = col(0, 2**64 - 1)
    if draw(st.booleans()):
        kwargs["file"] = col(0, len(files) - 1)
        kwargs["files"] = files
    if draw(st.booleans()):
        kwargs["status"] = col(0, 255)
    return Trace(
        ts_ns=col(0, 2**64 - 1),
        offset=col(0, 2**62),
        size=col(1, 2**32 - 1),
        op=col(0, 3),
        volume=col(0, len(volumes) - 1),
        stream=col(0, 2**32 - 1),
        volumes=volumes,
        **kwargs,
    )


def used_names(names: list[str], ids: np.ndarray) -> list[str]:
    """A name table as the CSV reads it back: up to the highest id used, unused ids by number."""
    used = set(ids.tolist())
    return [names[i] if i in used else str(i) for i in range(max(used) + 1)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trace=traces(), fmt=st.sampled_from(["parquet", "csv", "csv.gz"]))
def test_any_trace_survives_write_and_read(trace: Trace, fmt: str, tmp_path: Path) -> None:
    path = tmp_path / f"t.{fmt}"
    iomimic.write_trace(trace, path)
    back = iomimic.read_trace(path)
    if fmt != "parquet":
        # the CSV keeps the names its rows use (Parquet keeps every name)
        trace.volumes = used_names(trace.volumes, trace.volume)
        if trace.file is not None:
            trace.files = used_names(trace.files, trace.file)
    assert back == trace
    assert back.report["format"] == fmt.removesuffix(".gz")
    if fmt != "parquet":
        assert back.report["compression"] == ("gzip" if fmt == "csv.gz" else "none")


def test_parquet_is_read_a_row_group_at_a_time(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    n = 10_000
    latency = rng.integers(1, 10**6, n).astype(np.uint64)
    latency[::7] = LATENCY_UNKNOWN
    t = Trace(
        ts_ns=np.arange(n) * 1000,
        offset=rng.integers(0, 1 << 30, n),
        size=rng.choice([512, 4096], n),
        op=rng.integers(0, 2, n),
        volume=rng.integers(0, 3, n),
        latency_ns=latency,
        volumes=["a", "b", "c"],
    )
    path = tmp_path / "t.parquet"
    iomimic.write_trace(t, path)
    # rewritten in many small row groups (the pieces the reader copies one by one)
    pq.write_table(pq.read_table(path), path, row_group_size=999)
    assert pq.ParquetFile(path).num_row_groups == 11
    back = iomimic.read_trace(path)
    assert back == t and back.volumes == ["a", "b", "c"]
    # columns of other integer types take the general path, with the same checks
    table = pa.table({"ts_ns": [0, 5], "offset": [0, 512], "size": [512, 512], "op": [0, 1]})
    pq.write_table(table, tmp_path / "int64.parquet")
    assert iomimic.read_trace(tmp_path / "int64.parquet").offset.tolist() == [0, 512]
    pq.write_table(pa.table({"ts_ns": [0], "offset": [-1], "size": [1], "op": [0]}), tmp_path / "neg.parquet")
    with pytest.raises(iomimic.InputError, match="negative"):
        iomimic.read_trace(tmp_path / "neg.parquet")


def test_parquet_row_groups_read_in_parallel_round_trip_exactly(tmp_path: Path) -> None:
    """Every column and name table of a file of many row groups comes back as written: the
    groups are copied into their places on several threads, so an off-by-one place or a
    mixed-up group would show here."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    n = 25_000
    latency = rng.integers(0, 2**64 - 1, n, dtype=np.uint64)
    latency[rng.random(n) < 0.1] = LATENCY_UNKNOWN
    t = Trace(
        ts_ns=np.sort(rng.integers(0, 2**63, n, dtype=np.uint64)),
        offset=rng.integers(0, 2**62, n, dtype=np.uint64),
        size=rng.integers(1, 2**32 - 1, n, dtype=np.uint32),
        op=rng.integers(0, 4, n).astype(np.uint8),
        volume=rng.integers(0, 5, n),
        stream=rng.integers(0, 2**32 - 1, n, dtype=np.uint32),
        latency_ns=latency,
        file=rng.integers(0, 3, n),
        status=rng.integers(0, 256, n).astype(np.uint8),
        volumes=["sda", "sdb", "nvme0n1", "", "sda"],
        files=["a.log", "b.db", "c"],
        stream_names={7: "fio", 2**32 - 2: "postgres"},
    )
    path = tmp_path / "t.parquet"
    iomimic.write_trace(t, path)
    pq.write_table(pq.read_table(path), path, row_group_size=1_000)  # 25 groups, of rows in order
    assert pq.ParquetFile(path).num_row_groups == 25
    back = iomimic.read_trace(path)
    assert back == t
    assert (back.volumes, back.files, back.stream_names) == (t.volumes, t.files, t.stream_names)
    assert all(back.columns[c].flags.writeable for c in back.columns)
    # rows out of time order, or one invalid, take the constructor's way: sorted, or the row
    # named by its place in the whole file
    table = pq.read_table(path)
    shuffled = table.take(rng.permutation(n))
    pq.write_table(shuffled, path, row_group_size=1_000)
    assert iomimic.read_trace(path) == t
    op = table.column("op").to_numpy().copy()
    op[17_123] = 9
    pq.write_table(table.set_column(3, "op", pa.array(op)), path, row_group_size=1_000)
    with pytest.raises(iomimic.InputError, match=r"t\.parquet: row 17123: op 9 is not 0\.\.=3"):
        iomimic.read_trace(path)


def test_arrow_copy_reads_slices_and_nulls_in_place() -> None:
    import pyarrow as pa

    from iomimic.trace import _copy_arrow

    values = np.arange(20, dtype=np.uint64)
    chunk = pa.array(values, mask=values % 3 == 0).slice(5, 11)  # an offset into the buffers
    out = np.zeros(11, np.uint64)
    _copy_arrow("latency_ns", chunk, out)
    assert out.tolist() == [LATENCY_UNKNOWN if v % 3 == 0 else v for v in range(5, 16)]
    with pytest.raises(iomimic.InputError, match="column offset has 4 null values"):
        _copy_arrow("offset", chunk, out)


def test_truncated_or_garbage_parquet_is_an_input_error(tmp_path: Path) -> None:
    t = Trace(ts_ns=np.arange(5000), offset=np.arange(5000) * 512, size=[512] * 5000, op=[0] * 5000)
    path = tmp_path / "t.parquet"
    iomimic.write_trace(t, path)
    whole = path.read_bytes()
    cases = {
        "truncated.parquet": whole[: len(whole) // 2],  # the footer gone
        "cut-before-footer.parquet": whole[:8] + whole[-(len(whole) // 3) :],  # pages gone, footer kept
        "garbage.parquet": b"PAR1" + bytes(range(256)) * 8 + b"PAR1",
    }
    for name, data in cases.items():
        bad = tmp_path / name
        bad.write_bytes(data)
        with pytest.raises(iomimic.InputError, match=f"{name}: not a readable Parquet file"):
            iomimic.read_trace(bad)


def test_write_is_atomic_and_leaves_nothing_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Trace(ts_ns=[0], offset=[0], size=[512], op=[0])
    import pyarrow.parquet as pq

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        iomimic.write_trace(t, tmp_path / "out.parquet")
    assert list(tmp_path.iterdir()) == []


def test_read_trace_progress_callback(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("128166372003061629,hm,0,Read,3216723968,4096,1557\n" * 10)
    calls = []
    t = iomimic.read_trace(path, progress=lambda done, total: calls.append((done, total)))
    assert len(t) == 10
    assert calls[-1] == (path.stat().st_size, path.stat().st_size)


def test_summary_counts() -> None:
    t = Trace(
        ts_ns=[0, 10**9, 2 * 10**9], offset=[0] * 3, size=[512, 1024, 0], op=[0, 1, 3], stream=[1, 2, 2]
    )
    s = iomimic.summary(t)
    assert (s["reads"], s["writes"], s["flushes"], s["trims"]) == (1, 1, 1, 0)
    assert (s["bytes_read"], s["bytes_written"], s["streams"], s["span_s"]) == (512, 1024, 2, 2.0)
    assert np.isclose(s["span_s"], 2.0)


def parquet_in_groups(t: Trace, path: Path, rows: int, order=None, **table_changes) -> Path:
    """``t`` written as Parquet in row groups of ``rows``, its rows in ``order`` when given,
    with columns replaced as given."""
    import pyarrow.parquet as pq

    table = t.to_arrow()
    if order is not None:
        table = table.take(order)
    for name, values in table_changes.items():
        table = table.set_column(table.schema.get_field_index(name), name, values)
    pq.write_table(table, path, row_group_size=rows)
    return path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 400),
    rows=st.integers(1, 150),
    latency=st.booleans(),
    status=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_parquet_file_counted_by_row_groups_gives_the_whole_reads_summary(
    tmp_path: Path, n: int, rows: int, latency: bool, status: bool, seed: int
) -> None:
    from iomimic.io import parquet_summary

    rng = np.random.default_rng(seed)
    # times not in order, starting past 0; several volumes, streams with names, failures
    t = Trace(
        ts_ns=rng.integers(10**9, 2 * 10**9, n),
        offset=rng.integers(0, 1000, n) * 4096,
        size=rng.choice([512, 4096, 65536], n),
        op=rng.integers(0, 3, n),
        volume=rng.integers(0, 3, n),
        stream=rng.integers(0, 5, n),
        latency_ns=np.where(
            rng.random(n) < 0.2, np.uint64(LATENCY_UNKNOWN), rng.integers(1, 10**6, n).astype(np.uint64)
        )
        if latency
        else None,
        status=np.where(rng.random(n) < 0.1, 5, 0) if status else None,
        volumes=["a", "b", "c"],
        stream_names={0: "init", 3: "db"},
    )
    path = parquet_in_groups(t, tmp_path / f"t{seed}.parquet", rows, order=rng.permutation(n))
    assert parquet_summary(path) == iomimic.summary(iomimic.read_trace(path))


def test_parquet_that_does_not_suit_counting_in_place_is_read_whole(tmp_path: Path) -> None:
    import pyarrow as pa

    from iomimic.io import parquet_summary

    t = Trace(ts_ns=[0, 5, 9], offset=[0, 4096, 0], size=[4096] * 3, op=[0, 1, 0], volumes=["sda"])
    # volume names as strings, a size of 0 (the whole read names it), not Parquet at all
    strings = parquet_in_groups(t, tmp_path / "s.parquet", 2, volume=pa.array(["x", "y", "x"]))
    bad = parquet_in_groups(t, tmp_path / "bad.parquet", 2, size=pa.array([4096, 0, 4096], pa.uint32()))
    csv = tmp_path / "t.csv"
    iomimic.write_trace(t, csv)
    assert [parquet_summary(p) for p in (strings, bad, csv)] == [None, None, None]
    assert iomimic.summary(iomimic.read_trace(strings))["requests"] == 3
    with pytest.raises(iomimic.InputError, match="size 0"):
        iomimic.read_trace(bad)


def test_outputs_that_are_not_regular_files_are_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    iomimic.write_trace(Trace(ts_ns=[0], offset=[0], size=[512], op=[0]), fifo, "csv")
    reader.join(timeout=10)
    assert fifo.exists() and not fifo.is_file()  # still the FIFO, not replaced by a file
    assert got and b"ts_ns,offset" in got[0] and got[0].endswith(b"0,0,512,0,0,0,0\n")
