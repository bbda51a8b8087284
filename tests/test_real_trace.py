"""The real WebSearch trace from ../shared/traces (skipped when that folder is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import iomimic

from .conftest import run_cli


def split_by_device(trace: Path, folder: Path) -> Path:
    """``folder`` holding the MQSim trace's lines of each device as a file of their own (as MSR
    ships its volumes)."""
    folder.mkdir()
    lines = trace.read_text().splitlines(keepends=True)
    for device in sorted({line.split()[1] for line in lines}):
        (folder / f"dev{device}.trace").write_text("".join(x for x in lines if x.split()[1] == device))
    return folder


def test_wsrch_small_reads_as_mqsim(wsrch_small: Path) -> None:
    t = iomimic.read_trace(wsrch_small, format="mqsim")
    assert len(t) == 24_783
    assert int((t.op == 1).sum()) == 4
    assert len(t.volumes) == 6
    assert abs(t.ts_ns[-1] / 1e9 - 60.06) < 0.01
    assert t.report["skipped"] == []
    # detection agrees with the named format
    assert iomimic.read_trace(wsrch_small) == t


def test_wsrch_small_survives_parquet(wsrch_small: Path, tmp_path: Path) -> None:
    out = tmp_path / "w.parquet"
    r = run_cli("convert", str(wsrch_small), "-o", str(out))
    assert r.returncode == 0, r.stderr
    back = iomimic.read_trace(out)
    assert back == iomimic.read_trace(wsrch_small)
    assert np.all(np.diff(back.ts_ns.astype(np.int64)) >= 0)


def test_wsrch_small_characterized_in_row_groups_as_read_whole(wsrch_small: Path, tmp_path: Path) -> None:
    """The real trace in 25 row groups, characterized a row group at a time: every exact figure
    as read whole, percentiles within 0.1 %, the same curve and the same best fit."""
    import pyarrow.parquet as pq

    from iomimic.profile import characterize, characterize_parquet

    from .test_characterize_pieces import ESTIMATED, exact_differences, percentile_pairs

    path = tmp_path / "w.parquet"
    pq.write_table(iomimic.read_trace(wsrch_small).to_arrow(), path, row_group_size=1_000)
    whole = characterize(iomimic.read_trace(path), by="stream")
    pieces = characterize_parquet(path, memory=1 << 34, by="stream")
    assert exact_differences(dict(whole), dict(pieces), skip=ESTIMATED | {"source"}) == []
    assert all(abs(w - p) <= 1e-3 * w for w, p in percentile_pairs(dict(whole), dict(pieces)))
    assert whole["mrc"]["curve"] == pieces["mrc"]["curve"]
    assert whole["interarrival"]["fit"]["best"] == pieces["interarrival"]["fit"]["best"]


def test_wsrch_small_split_by_device_is_characterized_in_chunks_as_the_one_file(
    wsrch_small: Path, tmp_path: Path, monkeypatch
) -> None:
    """The real trace written as one MQSim file per device (as MSR ships its volumes), read as a
    directory a chunk of 1,000 rows at a time and merged in time order: every exact figure as
    the directory read whole, and the same requests, curve and summary counts as the one file."""
    import iomimic.io as io
    from iomimic.profile import characterize, characterize_text_parts

    from .test_characterize_pieces import ESTIMATED, exact_differences

    d = split_by_device(wsrch_small, tmp_path / "by-device")
    read = {"format": "mqsim"}
    whole = iomimic.read_trace(d, **read)
    monkeypatch.setattr(io, "CHUNK_ROWS", 1_000)
    profile, summary = characterize_text_parts(d, memory=1 << 34, read=read, by="volume")
    monkeypatch.undo()
    assert (
        exact_differences(dict(characterize(whole, by="volume")), dict(profile), skip=ESTIMATED | {"source"})
        == []
    )
    assert summary == io.summary(whole)
    one = characterize(iomimic.read_trace(wsrch_small, **read), by="volume")
    assert profile["requests"] == one["requests"] == 24_783
    assert profile["mrc"] == one["mrc"] and profile["read_fraction"] == one["read_fraction"]


def test_wsrch_small_simulated_in_pieces_as_read_whole(
    wsrch_small: Path, tmp_path: Path, monkeypatch
) -> None:
    """The real trace fed to the simulator 2,000 parsed rows at a time, each of its 6 volumes on
    an SSD of its own: the output trace equals the whole run's, and so does every figure but
    the latency percentiles (HDR histograms, within 0.1 %)."""
    import iomimic.io as io
    from iomimic.sim import simulate, simulate_in_pieces

    from .test_sim import sketched_alike

    out, whole = simulate(iomimic.read_trace(wsrch_small, format="mqsim"), "ssd-sata")
    monkeypatch.setattr(io, "CHUNK_ROWS", 2_000)
    written = tmp_path / "out.parquet"
    figures = simulate_in_pieces(wsrch_small, "ssd-sata", output=written, format="mqsim")
    sketched_alike(whole, figures)
    assert figures["requests"] == 24_783 and len(figures["placements"]) == 6
    assert iomimic.read_trace(written) == out


def test_wsrch_small_trained_in_pieces_as_read_whole(wsrch_small: Path, tmp_path: Path, monkeypatch) -> None:
    """The real trace, as one file and as one MQSim file per device merged in time order, trained
    1,500 parsed rows at a time (levels chosen, with the simulations of the default rule): the
    model of the trace read whole, field by field."""
    import json

    import iomimic.io as io
    from iomimic.model import train, train_in_pieces

    d = split_by_device(wsrch_small, tmp_path / "by-device")
    for path in (wsrch_small, d):
        whole = train(iomimic.read_trace(path, format="mqsim"))
        monkeypatch.setattr(io, "CHUNK_ROWS", 1_500)
        pieces = train_in_pieces(path, format="mqsim")
        monkeypatch.undo()
        assert json.loads(pieces.to_json()) == json.loads(whole.to_json())
        assert pieces.data["requests"] == 24_783
