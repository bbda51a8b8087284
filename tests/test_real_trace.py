"""The real WebSearch trace from ../shared/traces (skipped when that folder is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import iomimic

from .conftest import run_cli


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
