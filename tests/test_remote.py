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
