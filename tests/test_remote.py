"""Traces at URLs, read through pyarrow's filesystems (``file://`` here: the same path as
``s3://`` or ``gs://``, which need a network this machine does not have)."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic.errors import InputError
from iomimic.remote import is_url

from .conftest import run_cli

MSR = {
    "hm_0": "128166372003061629,hm,0,Read,4096,4096,1557\n128166372013061629,hm,0,Write,8192,8192,200\n",
    "web_1": "128166372005061629,web,1,Read,0,512,90\n128166372023061629,web,1,Read,512,512,95\n",
}


def msr_folder(tmp_path: Path) -> Path:
    """Two MSR volumes, one gzipped, and a file the glob below leaves out."""
    folder = tmp_path / "msr"
    folder.mkdir()
    with gzip.open(folder / "hm_0.csv.gz", "wt") as f:
        f.write(MSR["hm_0"])
    (folder / "web_1.csv").write_text(MSR["web_1"])
    (folder / ".hidden").write_text("not a trace\n")
    return folder


def columns(t: iomimic.Trace) -> dict:
    return {c: getattr(t, c).tolist() for c in ("ts_ns", "offset", "size", "op", "volume")} | {
        "volumes": t.volumes
    }


def leftover_copies() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("iomimic-url-*")}


def test_urls_are_told_from_paths() -> None:
    assert is_url("s3://bucket/key.csv") and is_url("file:///tmp/x") and is_url("gs://b/*.csv.gz")
    assert not is_url("/tmp/x.csv") and not is_url("msr/*.csv") and not is_url("C:\\t.csv")
    assert not is_url(Path("/tmp/x"))


def test_a_file_a_directory_and_a_glob_read_as_their_local_paths(tmp_path: Path) -> None:
    folder = msr_folder(tmp_path)
    before = leftover_copies()
    one = iomimic.read_trace(f"file://{folder}/hm_0.csv.gz")
    assert columns(one) == columns(iomimic.read_trace(folder / "hm_0.csv.gz"))
    assert one.report["path"] == f"file://{folder}/hm_0.csv.gz"
    assert one.volumes == ["hm_0"] and len(one) == 2 and int(one.latency_ns[0]) == 155_700

    whole = iomimic.read_trace(folder)
    assert len(whole) == 4 and sorted(whole.volumes) == ["hm_0", "web_1"]
    for url in (f"file://{folder}", f"file://{folder}/", f"file://{folder}/*"):
        t = iomimic.read_trace(url)
        assert columns(t) == columns(whole), url
        assert t.report["path"] == url
        assert t.report["files"] == [f"file://{folder}/hm_0.csv.gz", f"file://{folder}/web_1.csv"]
    only_web = iomimic.read_trace(f"file://{folder}/web_*.csv")
    assert only_web.volumes == ["web_1"] and len(only_web) == 2
    assert leftover_copies() == before, "the copies are removed"


def test_parquet_at_a_url_keeps_every_column(tmp_path: Path) -> None:
    t = iomimic.Trace(
        ts_ns=np.arange(5, dtype=np.uint64) * 1000,
        offset=np.arange(5, dtype=np.uint64) * 4096,
        size=np.full(5, 4096, np.uint32),
        op=np.array([0, 1, 0, 1, 0], np.uint8),
        volume=np.array([0, 1, 0, 1, 0], np.uint32),
        volumes=["a", "b"],
    )
    iomimic.write_trace(t, tmp_path / "t.parquet")
    back = iomimic.read_trace(f"file://{tmp_path}/t.parquet")
    assert columns(back) == columns(t)


def test_bad_urls_are_named_and_leave_nothing(tmp_path: Path) -> None:
    before = leftover_copies()
    with pytest.raises(InputError, match="no such file"):
        iomimic.read_trace(f"file://{tmp_path}/absent.csv")
    with pytest.raises(InputError, match="no file matches"):
        iomimic.read_trace(f"file://{tmp_path}/*.csv")
    with pytest.raises(InputError, match="cannot be read"):
        iomimic.read_trace("nosuchscheme://bucket/t.csv")
    assert leftover_copies() == before


def test_a_copy_that_does_not_fit_is_refused_before_copying(tmp_path: Path, monkeypatch) -> None:
    import shutil
    from collections import namedtuple

    folder = msr_folder(tmp_path)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(10**9, 10**9 - 100, 100))
    before = leftover_copies()
    with pytest.raises(InputError, match=r"MB free; point TMPDIR at a larger disk"):
        iomimic.read_trace(f"file://{folder}/")
    assert leftover_copies() == before


def test_commands_take_urls(tmp_path: Path) -> None:
    folder = msr_folder(tmp_path)
    local = run_cli("characterize", str(folder), "--json", "-")
    remote = run_cli("characterize", f"file://{folder}/*", "--json", "-")
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert b.pop("source") == {"path": f"file://{folder}/*", "format": "msr"}, "the URL is named"
    a.pop("source")
    assert a == b and a["requests"] == 4 and sorted(a["volumes"]) == ["hm_0", "web_1"]

    info = run_cli("info", f"file://{folder}/")
    assert info.returncode == 0 and info.stdout.startswith("msr (msr)"), info.stdout
    assert f"note: copying file://{folder}/ (2 files, 0.0 MB) to local disk" in info.stderr
    parquet = tmp_path / "t.parquet"
    assert run_cli("convert", str(folder), "-o", str(parquet)).returncode == 0
    shown = run_cli("info", f"file://{parquet}", "--json", "-")
    assert shown.returncode == 0 and json.loads(shown.stdout)["path"] == f"file://{parquet}"

    model = tmp_path / "m.json"
    trained = run_cli("model", "train", f"file://{folder}", "-o", str(model))
    assert trained.returncode == 0, trained.stderr
    shown = run_cli("model", "show", f"file://{model}")
    assert shown.returncode == 0, shown.stderr


def test_a_command_on_a_missing_url_exits_2() -> None:
    before = leftover_copies()
    r = run_cli("info", "file:///nonexistent-iomimic/t.csv")
    assert r.returncode == 2
    assert "file:///nonexistent-iomimic/t.csv: no such file or directory" in r.stderr
    assert "Traceback" not in r.stderr
    assert leftover_copies() == before


def test_a_bad_line_at_a_url_is_named_by_the_url_not_its_local_copy(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.csv").write_text("ts_ns,offset,size,op,volume,stream\n1,0,4096,0,0,0\nx,0,4096,0,0,0\n")
    for url, named in (
        (f"file://{folder}/a.csv", f"file://{folder}/a.csv:3:"),
        (f"file://{folder}/*.csv", f"file://{folder}/a.csv:3:"),
        (f"file://{folder}/", f"file://{folder}/a.csv:3:"),
    ):
        r = run_cli("info", url)
        assert r.returncode == 2, r.stderr
        assert f"error: {named} ts_ns is not a number" in r.stderr, r.stderr
        assert "iomimic-url-" not in r.stderr


def no_copies(monkeypatch) -> None:
    """Makes any copy of a URL to local disk fail the test."""
    import iomimic.remote as remote

    def refuse(url, note=None):
        raise AssertionError(f"{url} was copied")

    monkeypatch.setattr(remote, "local_copy", refuse)


def test_parquet_at_a_url_is_read_in_pieces_in_place(tmp_path: Path, monkeypatch) -> None:
    """A Parquet trace (a file, and a directory of parts) at a URL is counted, characterized,
    trained on and simulated a row group at a time through pyarrow's filesystem, never copied,
    with the local figures; the reports name the URL."""
    import pyarrow.parquet as pq

    from iomimic.io import parquet_summary, parquet_traces
    from iomimic.model import train_in_pieces
    from iomimic.profile import characterize_parquet
    from iomimic.sim import simulate_in_pieces

    from .test_characterize_pieces import exact_differences, mixed_trace, write_in_row_groups

    path = write_in_row_groups(mixed_trace(8_000), tmp_path / "t.parquet", rows=1_000)
    parts = tmp_path / "parts"
    parts.mkdir()
    table = mixed_trace(8_000).to_arrow()
    for k, lo in enumerate(range(0, 8_000, 3_000)):
        pq.write_table(table.slice(lo, 3_000), parts / f"part-{k}.parquet", row_group_size=1_000)
    local = {
        "summary": parquet_summary(path),
        "pieces": [len(t) for t in parquet_traces(path)],
        "profile": characterize_parquet(path, memory=1 << 34),
        "model": train_in_pieces(path, levels=1, select_device=None).data,
        "simulated": simulate_in_pieces(path, "ssd-sata"),
        "parts": parquet_summary(parts),
    }
    no_copies(monkeypatch)
    url = f"file://{path}"
    summary = parquet_summary(url)
    assert summary.pop("path") == url and local["summary"].pop("path") == str(path)
    assert summary == local["summary"]
    assert [len(t) for t in parquet_traces(url)] == local["pieces"] == [1_000] * 8
    profile = characterize_parquet(url, memory=1 << 34)
    assert profile["source"]["path"] == url
    assert exact_differences(dict(local["profile"]), dict(profile), skip={"source"}) == []
    model = train_in_pieces(url, levels=1, select_device=None).data
    assert model.pop("source") == url and local["model"].pop("source") == str(path)
    assert model == local["model"]
    assert simulate_in_pieces(url, "ssd-sata")["iops"] == local["simulated"]["iops"]
    parts_summary = parquet_summary(f"file://{parts}/")
    assert parts_summary["requests"] == local["parts"]["requests"] == 8_000
    # text at a URL is not read in pieces: read_trace copies it
    with pytest.raises(InputError, match="only Parquet is read in pieces at a URL"):
        train_in_pieces(f"file://{msr_folder(tmp_path)}/", levels=1)


def test_commands_read_parquet_urls_in_place_past_memory(tmp_path: Path) -> None:
    from .test_characterize_pieces import mixed_trace, write_in_row_groups

    path = write_in_row_groups(mixed_trace(8_000), tmp_path / "t.parquet", rows=1_000)
    url = f"file://{path}"
    info = run_cli("info", url, "--json", "-")
    assert info.returncode == 0 and "copying" not in info.stderr, info.stderr
    assert json.loads(info.stdout)["path"] == url
    local, remote = tmp_path / "local.json", tmp_path / "remote.json"
    quick = ["--levels", "1", "--select-device", "none", "--memory", "1K"]
    assert run_cli("model", "train", str(path), "-o", str(local), *quick).returncode == 0
    trained = run_cli("model", "train", url, "-o", str(remote), *quick)
    assert trained.returncode == 0 and "copying" not in trained.stderr, trained.stderr
    assert "a piece at a time" in trained.stderr  # no copy, read in place
    a, b = json.loads(local.read_text()), json.loads(remote.read_text())
    assert (a.pop("source"), b.pop("source")) == (str(path), url) and a == b
    simulated = run_cli("simulate", url, "--device", "ssd-sata", "--memory", "1K", "--json", "-")
    assert simulated.returncode == 0 and "copying" not in simulated.stderr, simulated.stderr
    assert json.loads(simulated.stdout)["requests"] == 8_000
    # read whole (it fits), the URL is copied first, as any other
    whole = run_cli("characterize", url, "--json", "-")
    assert whole.returncode == 0 and f"note: copying {url}" in whole.stderr, whole.stderr
    assert json.loads(whole.stdout)["source"]["path"] == url
