"""Training on a trace read a piece at a time (issue 19): the model the whole trace gives, from
Parquet row groups and from text files merged in time order, and the CLI choosing it past
--memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import iomimic
from iomimic.errors import InputError
from iomimic.model import train, train_in_pieces

from .conftest import run_cli
from .test_characterize_pieces import mixed_trace, msr_lines, write_in_row_groups

QUICK = dict(select_device=None)  # the fidelity rule alone: no simulations while choosing levels


def same_model(a: iomimic.Model, b: iomimic.Model) -> None:
    assert json.loads(a.to_json()) == json.loads(b.to_json())


def test_row_groups_train_the_whole_traces_model(tmp_path: Path, monkeypatch) -> None:
    trace = mixed_trace()
    path = write_in_row_groups(trace, tmp_path / "t.parquet", rows=3_333)
    whole = train(iomimic.read_trace(path), **QUICK)
    pieces = train_in_pieces(path, **QUICK)
    same_model(whole, pieces)
    # its six streams take turns at one workload: one thread of six members
    (thread,) = pieces.data["threads"]
    assert len(thread["members"]) == 6 and pieces.data["source"] == str(path)
    # one thread for all, re-use off, levels and states given; a path spelt relative, with "./"
    opts = dict(by="none", reuse=False, levels=2, states=4)
    monkeypatch.chdir(tmp_path)
    same_model(train(iomimic.read_trace("./t.parquet"), **opts), train_in_pieces("./t.parquet", **opts))


def test_msr_files_merged_in_time_order_train_as_read_whole(tmp_path: Path, monkeypatch) -> None:
    import iomimic.io as io

    folder = tmp_path / "msr"
    folder.mkdir()
    for k in range(3):
        msr_lines(folder / f"part{k}.csv", n=8_000 + 1_000 * k)
    whole = train(iomimic.read_trace(folder), levels=2, **QUICK)
    monkeypatch.setattr(io, "CHUNK_ROWS", 2_000)  # many chunks of each file
    seen: list[tuple[int, int]] = []
    pieces = train_in_pieces(
        folder, levels=2, progress=lambda done, total: seen.append((done, total)), **QUICK
    )
    same_model(whole, pieces)
    # four parses of the files (one learning the names), counted as one whole
    assert seen and seen[-1][0] == seen[-1][1] and all(b == seen[0][1] for _, b in seen)


def test_a_file_out_of_order_cannot_be_trained_in_pieces(tmp_path: Path) -> None:
    path = msr_lines(tmp_path / "msr.csv", n=6_000, shuffle_every=1_000)
    with pytest.raises(InputError, match="not in time order"):
        train_in_pieces(path, levels=1, **QUICK)


def test_the_cli_trains_in_pieces_past_memory(tmp_path: Path) -> None:
    path = write_in_row_groups(mixed_trace(20_000), tmp_path / "t.parquet", rows=4_096)
    out_whole, out_pieces = tmp_path / "whole.json", tmp_path / "pieces.json"
    args = ["--levels", "1", "--select-device", "none"]
    whole = run_cli("model", "train", str(path), "-o", str(out_whole), *args)
    pieces = run_cli("model", "train", str(path), "-o", str(out_pieces), "--memory", "1M", *args)
    assert whole.returncode == 0 and pieces.returncode == 0, pieces.stderr
    assert "a piece at a time, three passes" in pieces.stderr and "piece" not in whole.stderr
    assert json.loads(out_whole.read_text()) == json.loads(out_pieces.read_text())
    # choosing requests needs the trace whole: said, then done
    chosen = run_cli(
        "model",
        "train",
        str(path),
        "-o",
        str(tmp_path / "c.json"),
        "--memory",
        "1M",
        "--volume",
        "sdb",
        *args,
    )
    assert chosen.returncode == 0 and "read whole" in chosen.stderr
    # a text file out of order past the budget: exit 2, no model left behind
    bad = msr_lines(tmp_path / "bad.csv", n=6_000, shuffle_every=1_000)
    out = tmp_path / "bad.json"
    refused = run_cli("model", "train", str(bad), "-o", str(out), "--memory", "1K", *args)
    assert refused.returncode == 2 and "not in time order" in refused.stderr
    assert "Traceback" not in refused.stderr and not out.exists()
