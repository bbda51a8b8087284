"""Characterization of a Parquet trace read a row group at a time (issue 19): the same figures
as the trace read whole, exactly where they are counts, within the histograms' 0.1 % where they
are percentiles; and the CLI choosing it when the trace is too large for --memory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import iomimic
from iomimic.model import train
from iomimic.profile import characterize, characterize_parquet

from .conftest import run_cli

#: Figures that are estimates when read in pieces: percentiles (HDR histograms) and the fit's
#: KS distances (taken on them).
ESTIMATED = {"percentiles_us", "latency_us", "by_op", "fit"}


def mixed_trace(n: int = 40_000, seed: int = 5) -> iomimic.Trace:
    """Three volumes, six streams, runs and reuse, requests at the same instant, trims and
    flushes, and latencies."""
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.choice([0, 1_000, 50_000, 2_000_000], n)).astype(np.uint64)
    size = rng.choice([512, 4096, 8192, 65536], n).astype(np.uint32)
    offset = (rng.integers(0, 1 << 14, n) * 4096).astype(np.uint64)
    follows = rng.random(n) < 0.4
    offset[1:] = np.where(follows[1:], offset[:-1] + size[:-1], offset[1:])
    op = rng.choice([0, 0, 1, 1, 2, 3], n).astype(np.uint8)
    size[op == 3] = 0
    return iomimic.Trace(
        ts_ns=ts,
        offset=offset,
        size=size,
        op=op,
        volume=rng.integers(0, 3, n).astype(np.uint32),
        stream=(rng.integers(0, 6, n) * 11).astype(np.uint32),
        latency_ns=rng.integers(10_000, 5_000_000, n).astype(np.uint64),
        volumes=["sda", "sdb", "nvme0"],
    )


def write_in_row_groups(trace: iomimic.Trace, path: Path, rows: int) -> Path:
    pq.write_table(trace.to_arrow(), path, row_group_size=rows)
    return path


def exact_differences(a, b, path: str = "", skip: set[str] = ESTIMATED) -> list[str]:
    """Where two profiles' exact figures differ (floats to 1e-9 relative), keys in `skip` left out."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        return [d for k in a if k not in skip for d in exact_differences(a[k], b[k], f"{path}.{k}", skip)]
    if isinstance(a, list):
        assert len(a) == len(b), path
        return [
            d for i, (x, y) in enumerate(zip(a, b)) for d in exact_differences(x, y, f"{path}[{i}]", skip)
        ]
    if isinstance(a, float) and isinstance(b, float):
        return [] if abs(a - b) <= 1e-9 * max(abs(a), abs(b)) else [f"{path}: {a} vs {b}"]
    return [] if a == b else [f"{path}: {a} vs {b}"]


def percentile_pairs(a, b):
    """Every (whole, pieces) percentile pair of two profiles."""
    if isinstance(a, dict):
        for k in a:
            if k in ("p50", "p90", "p95", "p99", "p999", "max") and isinstance(a[k], float):
                yield a[k], b[k]
            else:
                yield from percentile_pairs(a[k], b[k])


def test_row_groups_give_the_whole_reads_figures(tmp_path: Path) -> None:
    trace = mixed_trace()
    path = write_in_row_groups(trace, tmp_path / "t.parquet", rows=3_333)
    whole = characterize(iomimic.read_trace(path), by="stream")
    pieces = characterize_parquet(path, memory=1 << 34, by="stream")
    assert pieces is not None
    assert exact_differences(dict(whole), dict(pieces)) == []
    pairs = list(percentile_pairs(dict(whole), dict(pieces)))
    assert len(pairs) > 100  # gaps and latencies of the trace, each volume, stream and op
    assert all(abs(w - p) <= 1e-3 * w for w, p in pairs)
    # the fit: the same candidates, from the same moments; its KS distances on histogram bins
    fit_w, fit_p = whole["interarrival"]["fit"], pieces["interarrival"]["fit"]
    gaps = whole["interarrival"]
    assert fit_p["criterion"] == "ks-binned"
    assert fit_p["sample_size"] == round(gaps["count"] * (1 - gaps["zero_fraction"]))  # every positive gap
    params = {c["name"]: c["params"] for c in fit_w["candidates"]}
    for c in fit_p["candidates"]:
        assert np.allclose([v for _, v in c["params"]], [v for _, v in params[c["name"]]], rtol=1e-9)
        assert abs(c["ks"] - next(x["ks"] for x in fit_w["candidates"] if x["name"] == c["name"])) < 0.02


def test_a_small_budget_samples_the_curves_and_says_so(tmp_path: Path) -> None:
    path = write_in_row_groups(mixed_trace(), tmp_path / "t.parquet", rows=10_000)
    exact = characterize_parquet(path, memory=1 << 34)
    small = characterize_parquet(path, memory=1 << 20)  # 2,730 blocks a curve
    assert exact["mrc"]["sampling_rate"] == 1.0
    assert small["mrc"]["sampling_rate"] < 0.2 and small["mrc"]["sampling_error"] > 0
    assert small["volumes"]["sdb"]["mrc"]["sampling_rate"] == small["mrc"]["sampling_rate"]
    # the same sampled curve as the trace read whole at that rate
    rate = small["mrc"]["sampling_rate"]
    whole = characterize(iomimic.read_trace(path), mrc_sampling=rate)
    assert [p["miss_ratio"] for p in whole["mrc"]["curve"]] == [
        p["miss_ratio"] for p in small["mrc"]["curve"]
    ]


def test_generated_parts_read_in_pieces_as_one_trace(tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    train(mixed_trace(20_000), levels=1, states=2).save(model)
    parts = tmp_path / "parts"
    result = run_cli("generate", str(model), "-o", f"{parts}/", "-n", "30000", "--seed", "2")
    assert result.returncode == 0, result.stderr
    whole = characterize(iomimic.read_trace(parts))
    pieces = characterize_parquet(parts, memory=1 << 34)
    assert exact_differences(dict(whole), dict(pieces)) == []


def test_out_of_order_row_groups_are_read_whole_instead(tmp_path: Path) -> None:
    trace = mixed_trace(6_000)
    table = trace.to_arrow()
    path = tmp_path / "swapped.parquet"
    with pq.ParquetWriter(path, table.schema) as w:
        w.write_table(table.slice(3_000))
        w.write_table(table.slice(0, 3_000))
    assert characterize_parquet(path, memory=1 << 34) is None


def test_the_cli_reads_in_pieces_past_memory(tmp_path: Path) -> None:
    path = write_in_row_groups(mixed_trace(), tmp_path / "t.parquet", rows=4_096)
    out_whole, out_pieces = tmp_path / "whole.json", tmp_path / "pieces.json"
    whole = run_cli("characterize", str(path), "--json", str(out_whole))
    pieces = run_cli("characterize", str(path), "--json", str(out_pieces), "--memory", "1M")
    assert whole.returncode == 0 and pieces.returncode == 0, pieces.stderr
    assert "row group at a time" in pieces.stderr and "row group" not in whole.stderr
    a, b = json.loads(out_whole.read_text()), json.loads(out_pieces.read_text())
    assert b["source"]["path"] == str(path)
    # the curves sampled to fit 1 MiB, and the budget lowered for them
    assert exact_differences(a, b, skip=ESTIMATED | {"mrc", "options"}) == []
    assert b["mrc"]["sampling_rate"] < 1.0 and a["mrc"]["sampling_rate"] == 1.0
    # asking for the report's figures or a part of the trace needs it whole: said, then done
    chosen = run_cli("characterize", str(path), "--json", "-", "--memory", "1M", "--volume", "sdb")
    assert chosen.returncode == 0 and "read whole" in chosen.stderr
    assert json.loads(chosen.stdout)["requests"] == int((mixed_trace().volume == 1).sum())


def test_a_memory_budget_must_be_a_size(tmp_path: Path) -> None:
    path = write_in_row_groups(mixed_trace(1_000), tmp_path / "t.parquet", rows=500)
    for bad in ("0", "lots"):
        r = run_cli("characterize", str(path), "--memory", bad)
        assert r.returncode == 2 and "memory" in r.stderr and "Traceback" not in r.stderr


def msr_lines(path: Path, n: int = 60_000, shuffle_every: int | None = None) -> Path:
    """MSR Cambridge lines of two volumes (times in 100 ns ticks, latencies in them too): in time
    order, or with every ``shuffle_every``-th line put back in time."""
    rng = np.random.default_rng(9)
    ts = 128166372003061629 + np.cumsum(rng.integers(0, 3_000, n))
    if shuffle_every:
        ts[::shuffle_every] -= 1_000_000
    lines = [
        f"{t},{'web' if i % 3 else 'hm'},{i % 2},{'Read' if i % 4 else 'Write'},"
        f"{4096 * int(rng.integers(0, 5_000))},{4096 * (1 + i % 4)},{int(rng.integers(1, 500))}"
        for i, t in enumerate(ts.tolist())
    ]
    path.write_text("\n".join(lines) + "\n")  # about 3 MB: several of the reader's blocks
    return path


def test_a_text_file_past_memory_is_read_twice_in_chunks(tmp_path: Path, monkeypatch) -> None:
    import iomimic.io as io
    from iomimic.profile import characterize_text

    path = msr_lines(tmp_path / "msr.csv")
    whole = characterize(iomimic.read_trace(path))
    summary_whole = io.summary(iomimic.read_trace(path))
    monkeypatch.setattr(io, "CHUNK_ROWS", 5_000)
    profile, summary = characterize_text(path, memory=1 << 20, read={})
    assert exact_differences(dict(whole), dict(profile), skip=ESTIMATED | {"mrc", "options", "source"}) == []
    assert summary == summary_whole
    assert profile["mrc"]["sampling_rate"] < 1.0 and profile["source"]["format"] == "msr"
    # a file that fits is read whole on the way, not twice
    small = characterize_text(path, memory=1 << 40, read={})
    assert isinstance(small, iomimic.Trace) and len(small) == 60_000


def test_a_text_file_out_of_order_past_memory_is_refused(tmp_path: Path, monkeypatch) -> None:
    import iomimic.io as io
    from iomimic.errors import InputError
    from iomimic.profile import characterize_text

    path = msr_lines(tmp_path / "msr.csv", shuffle_every=1_000)
    monkeypatch.setattr(io, "CHUNK_ROWS", 5_000)
    with pytest.raises(InputError, match=r"not in time order.*raise --memory"):
        characterize_text(path, memory=1 << 20, read={})
    # within memory it is read whole and sorted, as always
    assert isinstance(characterize_text(path, memory=1 << 40, read={}), iomimic.Trace)


def test_the_cli_reads_a_text_file_past_memory_in_chunks(tmp_path: Path) -> None:
    path = msr_lines(tmp_path / "msr.csv", n=1_500_000)
    out_whole, out_pieces = tmp_path / "whole.json", tmp_path / "pieces.json"
    whole = run_cli("characterize", str(path), "--json", str(out_whole), "--mrc", "none")
    pieces = run_cli(
        "characterize", str(path), "--json", str(out_pieces), "--mrc", "none", "--memory", "100M"
    )
    assert whole.returncode == 0 and pieces.returncode == 0, pieces.stderr
    assert "a chunk at a time, twice" in pieces.stderr
    a, b = json.loads(out_whole.read_text()), json.loads(out_pieces.read_text())
    assert exact_differences(a, b, skip=ESTIMATED | {"options"}) == []


def msr_corpus(d: Path) -> Path:
    """A directory of three MSR files as MSR ships them, read as one trace: two with the same
    volumes and the same times (every row ties with one of the other file's), and a gzipped one
    of other volumes starting later, without response times."""
    import gzip

    d.mkdir()
    msr_lines(d / "a.csv", n=30_000)
    msr_lines(d / "b.csv", n=20_000)
    rng = np.random.default_rng(2)
    ts = 128166372003061629 + 7_000_000 + np.cumsum(rng.integers(0, 4_000, 25_000))
    lines = [
        f"{t},prxy,{i % 3},{'Read' if i % 5 else 'Write'},{4096 * int(rng.integers(0, 3000))},"
        f"{512 * (1 + i % 8)},0"
        for i, t in enumerate(ts.tolist())
    ]
    (d / "c.csv.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return d


@pytest.mark.parametrize("volume_names", ["records", "file"])
def test_text_files_of_a_directory_past_memory_are_merged_a_chunk_at_a_time(
    tmp_path: Path, volume_names: str, monkeypatch
) -> None:
    """Each file is surveyed in turn, then the files' chunks are merged in time order (ties in
    file order, as the files read whole are merged): the figures of the directory read whole."""
    import iomimic.io as io
    from iomimic.profile import characterize_text_parts

    d = msr_corpus(tmp_path / "msr")
    whole_trace = iomimic.read_trace(d, volume_names=volume_names)
    whole = characterize(whole_trace, by="stream")
    monkeypatch.setattr(io, "CHUNK_ROWS", 5_000)
    profile, summary = characterize_text_parts(
        d, memory=1 << 34, read={}, volume_names=volume_names, by="stream"
    )
    assert exact_differences(dict(whole), dict(profile), skip=ESTIMATED | {"source"}) == []
    pairs = list(percentile_pairs(dict(whole), dict(profile)))
    assert len(pairs) > 100 and all(abs(w - p) <= 1e-3 * w for w, p in pairs)
    assert summary == io.summary(whole_trace)
    assert profile["source"] == {"path": str(d), "format": "msr"}
    assert len(profile["volumes"]) == (7 if volume_names == "records" else 11)
    # one file is not for this path, nor a directory holding Parquet
    assert characterize_text_parts(d / "a.csv", memory=1 << 20, read={}) is None


def test_a_file_out_of_order_in_a_directory_past_memory_is_refused(tmp_path: Path, monkeypatch) -> None:
    import iomimic.io as io
    from iomimic.errors import InputError
    from iomimic.profile import characterize_text_parts

    d = msr_corpus(tmp_path / "msr")
    msr_lines(d / "b.csv", n=20_000, shuffle_every=1_000)
    monkeypatch.setattr(io, "CHUNK_ROWS", 5_000)
    with pytest.raises(InputError, match=r"b\.csv: its requests are not in time order.*raise --memory"):
        characterize_text_parts(d, memory=1 << 20, read={})


def test_the_cli_characterizes_a_glob_of_text_files_past_memory_in_chunks(tmp_path: Path) -> None:
    d = msr_corpus(tmp_path / "msr")
    out_whole, out_pieces = tmp_path / "whole.json", tmp_path / "pieces.json"
    source = str(d / "*.csv*")
    whole = run_cli("characterize", source, "--json", str(out_whole), "--mrc", "none")
    pieces = run_cli("characterize", source, "--json", str(out_pieces), "--mrc", "none", "--memory", "4M")
    assert whole.returncode == 0 and pieces.returncode == 0, pieces.stderr
    assert "a chunk at a time, twice" in pieces.stderr and "3 files read as one trace" in pieces.stderr
    a, b = json.loads(out_whole.read_text()), json.loads(out_pieces.read_text())
    assert exact_differences(a, b, skip=ESTIMATED | {"options"}) == []


def test_parquet_parts_named_by_file_past_memory_are_read_whole(tmp_path: Path) -> None:
    """--volume-names file prefixes each part's volumes as the parts are merged whole: past
    --memory the parts are then read whole, saying so, rather than in pieces under other names."""
    d = tmp_path / "parts"
    d.mkdir()
    for k in range(2):
        write_in_row_groups(mixed_trace(2_000, seed=k), d / f"p{k}.parquet", rows=500)
    for command in (["characterize", "--mrc", "none"], ["simulate", "--device", "ssd-sata"]):
        r = run_cli(
            *command[:1], str(d), *command[1:], "--volume-names", "file", "--memory", "10K", "--json", "-"
        )
        assert r.returncode == 0, r.stderr
        assert "--volume-names file of Parquet parts needs it whole" in r.stderr, r.stderr
        if command[0] == "characterize":
            assert (
                "p0:sda" in json.loads(r.stdout)["volumes"] and "p1:nvme0" in json.loads(r.stdout)["volumes"]
            )
