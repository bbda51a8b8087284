"""Known answers for every format: hand-written fixtures with their expected columns.

Each `tests/fixtures/formats/NAME` has a `NAME.expected.json` holding the columns worked out by
hand; it is read with format detection and with the format named, plain and compressed.
"""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np
import pytest
import zstandard

import iomimic
from iomimic import LATENCY_UNKNOWN

from .conftest import FIXTURES, run_cli

CASES = sorted(p for p in (FIXTURES / "formats").iterdir() if not p.name.endswith(".expected.json"))


def expected_of(path: Path) -> dict:
    return json.loads(path.with_name(path.name + ".expected.json").read_text())


def check(trace: iomimic.Trace, want: dict) -> None:
    for col in ("ts_ns", "offset", "size", "op", "volume", "stream"):
        assert getattr(trace, col).tolist() == want[col], col
    if "latency_ns" in want:
        assert trace.latency_ns is not None
        got = [None if v == LATENCY_UNKNOWN else v for v in trace.latency_ns.tolist()]
        assert got == want["latency_ns"]
    else:
        assert trace.latency_ns is None
    if "file" in want:
        assert trace.file.tolist() == want["file"]
        assert trace.files == want["files"]
    assert trace.volumes == want["volumes"]
    assert trace.report["out_of_order"] == want["out_of_order"]
    if "start_ns" in want:
        assert trace.report["start_ns"] == want["start_ns"]
    if "ignored" in want:
        assert dict(trace.report["ignored"]) == want["ignored"]
    assert trace.report["skipped"] == []


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_known_answers_with_detection(path: Path) -> None:
    want = expected_of(path)
    options = want.get("options", {})
    trace = iomimic.read_trace(path, **options)
    assert trace.report["format"] == want["format"]
    check(trace, want)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_known_answers_with_format_named(path: Path) -> None:
    want = expected_of(path)
    options = {**want.get("options", {}), "format": want["format"]}
    check(iomimic.read_trace(path, **options), want)


@pytest.mark.parametrize("compress", ["gz", "zst"])
@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_compressed_input_reads_the_same(path: Path, compress: str, tmp_path: Path) -> None:
    want = expected_of(path)
    raw = path.read_bytes()
    packed = gzip.compress(raw) if compress == "gz" else zstandard.ZstdCompressor().compress(raw)
    target = tmp_path / f"{path.name}.{compress}"
    target.write_bytes(packed)
    trace = iomimic.read_trace(target, **want.get("options", {}))
    assert trace.report["compression"] == {"gz": "gzip", "zst": "zstd"}[compress]
    # the volume named after the file must not take the compression suffix
    check(trace, want)


def vscsi_v1(sn: int, length: int, cmd: int, lbn: int, ts: int) -> bytes:
    return struct.pack("<IIIHHQQ", sn, length, 1, cmd, 1 << 8, lbn, ts)


def vscsi_v2(cmd: int, sn: int, length: int, lbn: int, ts: int, rt: int) -> bytes:
    return struct.pack("<HHIIIQQQ", cmd, 2 << 8, sn, length, 1, lbn, ts, rt)


def test_vscsi_binary_v1(tmp_path: Path) -> None:
    path = tmp_path / "w05.vscsi"
    records = [
        vscsi_v1(1, 4096, 0x28, 10, 1_000_000),
        vscsi_v1(2, 8192, 0x2A, 20, 1_000_500),
        vscsi_v1(3, 0, 0x00, 0, 1_000_600),  # TEST UNIT READY: no data, ignored
        vscsi_v1(4, 512, 0x88, 1 << 30, 999_000),  # READ(16), earlier than the rest
    ]
    assert all(len(r) == 32 for r in records)
    path.write_bytes(b"".join(records))
    t = iomimic.read_trace(path)
    assert t.report["format"] == "vscsi"
    assert t.ts_ns.tolist() == [0, 1_000_000, 1_500_000]
    assert t.offset.tolist() == [(1 << 30) * 512, 5120, 10240]
    assert t.size.tolist() == [512, 4096, 8192]
    assert t.op.tolist() == [0, 0, 1]
    assert t.latency_ns is None  # v1 records carry no response time
    assert t.volumes == ["w05"]
    assert t.report["out_of_order"] == 1
    assert dict(t.report["ignored"]) == {"scsi_not_io": 1}


def test_vscsi_binary_v2_has_latency(tmp_path: Path) -> None:
    path = tmp_path / "w06.vscsi.gz"
    records = [vscsi_v2(0xA8, 1, 65536, 7, 5, 120), vscsi_v2(0xAA, 2, 4096, 8, 9, 33)]
    assert all(len(r) == 40 for r in records)
    path.write_bytes(gzip.compress(b"".join(records)))
    t = iomimic.read_trace(path)
    assert t.report["format"] == "vscsi"
    assert t.ts_ns.tolist() == [0, 4000]
    assert t.op.tolist() == [0, 1]
    assert t.latency_ns.tolist() == [120_000, 33_000]
    assert t.volumes == ["w06"]


def test_vscsi_binary_truncated_record_is_named(tmp_path: Path) -> None:
    path = tmp_path / "cut.vscsi"
    path.write_bytes(vscsi_v2(0x28, 1, 512, 1, 1, 1) + b"\x00" * 12)
    with pytest.raises(iomimic.TraceParseError, match=r"cut.vscsi:2: 12 bytes at the end"):
        iomimic.read_trace(path)


def test_cross_format_equivalence(tmp_path: Path) -> None:
    """The same requests written as MSR, SPC, MQSim and canonical CSV read to equal columns."""
    rows = [(0, 0, 4096, 0), (1_000_000, 8192, 512, 1), (2_500_000, 4096, 8192, 0)]  # ns, bytes, bytes, op
    msr = "".join(
        f"{128166372000000000 + t // 100},hm,0,{'Read' if op == 0 else 'Write'},{o},{s},0\n"
        for t, o, s, op in rows
    )
    spc = "".join(f"0,{o // 512},{s},{'rw'[op]},{t / 1e9:.6f}\n" for t, o, s, op in rows)
    mqsim = "".join(f"{t} 0 {o // 512} {s // 512} {1 - op}\n" for t, o, s, op in rows)
    traces = []
    for name, text in [("a.csv", msr), ("b.spc", spc), ("c.mqsim", mqsim)]:
        (tmp_path / name).write_text(text)
        traces.append(iomimic.read_trace(tmp_path / name))
    assert [t.report["format"] for t in traces] == ["msr", "spc", "mqsim"]
    for t in traces:
        for col in ("ts_ns", "offset", "size", "op", "volume", "stream"):
            assert np.array_equal(getattr(t, col), getattr(traces[0], col)), (t.report["format"], col)


def test_large_file_parallel_read_matches_known_rows(tmp_path: Path) -> None:
    """Enough lines for several blocks, so the multi-threaded path and its merge are exercised:
    volume ids must agree across blocks and rows stay in file order."""
    n = 120_000
    lines = [
        f"{128166372000000000 + i * 10},{'ab'[i % 2]}host,{i % 3},"
        f"{'Read' if i % 5 else 'Write'},{i * 4096},4096,{i}\n"
        for i in range(n)
    ]
    path = tmp_path / "big.csv"
    path.write_text("".join(lines))
    t = iomimic.read_trace(path)
    assert len(t) == n
    assert t.ts_ns.tolist() == [i * 1000 for i in range(n)]
    assert t.offset.tolist() == [i * 4096 for i in range(n)]
    names = [f"{'ab'[i % 2]}host_{i % 3}" for i in range(n)]
    assert [t.volumes[v] for v in t.volume.tolist()] == names
    assert int((t.op == 1).sum()) == n // 5
    assert t.latency_ns.tolist() == [i * 100 for i in range(n)]


def test_detection_note_for_ambiguous_ascii(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("100 0 8 8 1\n")
    t = iomimic.read_trace(path)
    assert t.report["format"] == "mqsim"
    assert any("disksim" in note for note in t.report["notes"])
    assert iomimic.read_trace(path, time_unit="ms").ts_ns.tolist() == [0]


def test_blkparse_queue_events(tmp_path: Path) -> None:
    t = iomimic.read_trace(FIXTURES / "formats" / "sda.blkparse.txt", event="Q")
    assert t.ts_ns.tolist() == [0]
    assert t.latency_ns.tolist() == [412_000]


def test_formats_lists_every_reader() -> None:
    names = [n for n, _ in iomimic.formats()]
    expected = "msr spc mqsim disksim vscsi vscsi-csv blkparse fio alibaba tencent generic csv parquet"
    for name in expected.split():
        assert name in names


def test_blkparse_process_names_and_btt_phases(tmp_path: Path) -> None:
    """A capture with Q, D and C events: the process names name the streams, survive Parquet,
    and `info --json` splits the response time into Q2D, D2C and Q2C (µs, by hand below)."""
    path = tmp_path / "cap.blkparse.txt"
    path.write_text(
        "  8,0 0 1 0.000000000 100 Q R 0 + 8 [postgres: writer]\n"
        "  8,0 0 2 0.000004000 100 D R 0 + 8 [postgres: writer]\n"
        "  8,0 1 3 0.000010000 200 Q W 64 + 16 [jbd2/sda1-8]\n"
        "  8,0 1 4 0.000030000 200 D W 64 + 16 [jbd2/sda1-8]\n"
        "  8,0 0 5 0.000104000 0 C R 0 + 8 [0]\n"
        "  8,0 1 6 0.000530000 0 C W 64 + 16 [0]\n"
    )
    t = iomimic.read_trace(path)
    assert t.stream_names == {100: "postgres: writer", 200: "jbd2/sda1-8"}
    assert t.latency_ns.tolist() == [100_000, 500_000]  # D2C by default
    iomimic.write_trace(t, tmp_path / "cap.parquet")
    assert iomimic.read_trace(tmp_path / "cap.parquet").stream_names == t.stream_names
    r = run_cli("info", str(path), "--json", str(tmp_path / "info.json"))
    assert r.returncode == 0, r.stderr
    assert "Q2D" in r.stdout and "D2C" in r.stdout
    phases = json.loads((tmp_path / "info.json").read_text())["latency_phases"]
    assert list(phases) == ["q2d_us", "d2c_us", "q2c_us"]
    assert (phases["q2d_us"]["count"], phases["q2d_us"]["mean"], phases["q2d_us"]["max"]) == (2, 12.0, 20.0)
    assert (phases["d2c_us"]["mean"], phases["d2c_us"]["p50"]) == (300.0, 100.0)
    assert (phases["q2c_us"]["mean"], phases["q2c_us"]["max"]) == (312.0, 520.0)
    r = run_cli("characterize", str(path), "--mrc", "none")
    assert "100 (postgres: writer)" in r.stdout and "200 (jbd2/sda1-8)" in r.stdout


def test_generic_columns_by_header_name(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("time,dev,rw,lba,len\n0.5,sda,R,8,4096\n0.75,sdb,W,16,512\n")
    t = iomimic.read_trace(path, columns="ts=time:s,offset=lba:sectors,size=len,op=rw,volume=dev")
    assert t.ts_ns.tolist() == [0, 250_000_000] and t.offset.tolist() == [4096, 8192]
    assert t.op.tolist() == [0, 1] and t.volumes == ["sda", "sdb"]
    # a name the header lacks stops the read, --skip-bad or not, without the --skip-bad hint
    for extra in ([], ["--skip-bad"]):
        r = run_cli("info", str(path), "--columns", "ts=when:s,offset=lba,size=len", *extra)
        assert r.returncode == 2
        assert f'{path}:1: --columns: ts=when, but the header has no column "when"' in r.stderr
        assert "(it has time, dev, rw, lba, len)" in r.stderr and "skip" not in r.stderr


def test_a_directory_or_glob_of_files_is_one_trace_in_time_order(tmp_path: Path) -> None:
    # MSR ships one CSV per volume, with absolute times: the files interleave on one clock
    d = tmp_path / "msr"
    d.mkdir()
    (d / "hm_0.csv.gz").write_bytes(
        gzip.compress(b"128166372000000000,hm,0,Read,0,4096,10\n128166372000000010,hm,0,Write,4096,4096,20\n")
    )
    (d / "hm_1.csv").write_text("128166372000000005,hm,1,Read,8192,4096,30\n")
    (d / ".hidden").write_text("not a trace")
    for source in (d, str(d / "hm_*")):
        t = iomimic.read_trace(source)
        assert t.ts_ns.tolist() == [0, 500, 1000]  # 100 ns ticks
        assert [t.volumes[v] for v in t.volume] == ["hm_0", "hm_1", "hm_0"]
        assert t.latency_ns.tolist() == [1000, 3000, 2000]
        assert t.report["format"] == "msr" and len(t.report["files"]) == 2
    # files of one device each whose records do not name it: --volume-names file keeps them apart
    for name in ("sda", "sdb"):
        (tmp_path / f"{name}.disksim").write_text("0.0 0 100 8 1\n1.0 0 200 8 1\n")
    t = iomimic.read_trace(tmp_path / "*.disksim", volume_names="file")
    assert sorted(t.volumes) == ["sda:0", "sdb:0"] and len(t) == 4
    assert iomimic.read_trace(tmp_path / "*.disksim").volumes == ["0"]
    r = run_cli("info", str(tmp_path / "*.disksim"), "--volume-names", "file", "--json", "-")
    assert r.returncode == 0 and len(json.loads(r.stdout)["volumes"]) == 2, r.stdout + r.stderr
    r = run_cli("info", str(tmp_path / "none*.csv"))
    assert r.returncode == 2 and "no file matches" in r.stderr
    r = run_cli("convert", str(d / "*.csv*"), "-o", str(tmp_path / "all.parquet"))
    assert r.returncode == 0, r.stderr
    assert len(iomimic.read_trace(tmp_path / "all.parquet")) == 3


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_a_file_counted_in_chunks_gives_the_summary_of_it_read_whole(path: Path, monkeypatch) -> None:
    """`iomimic info` of a text or binary file counts each chunk of parsed rows and drops it:
    the figures of every format are those of the file read whole."""
    import iomimic.io as io

    options = expected_of(path).get("options", {})
    whole = io.summary(iomimic.read_trace(path, **options))
    monkeypatch.setattr(io, "CHUNK_ROWS", 3)
    counted = io.text_summary(path, **options)
    assert counted == whole


def test_a_long_file_counted_in_chunks_gives_the_summary_of_it_read_whole(
    tmp_path: Path, monkeypatch
) -> None:
    """Many blocks of MSR lines, some out of time order, some malformed (skipped), latencies all
    0 on one volume: counted a chunk at a time, the same figures, notes and report."""
    import iomimic.io as io

    rng = np.random.default_rng(3)
    n = 120_000
    ts = 128166372003061629 + np.cumsum(rng.integers(0, 5_000, n))
    ts[::97] -= 50_000  # out of order
    lines = [
        f"{t},{'web' if i % 3 else 'hm'},{i % 2},{'Read' if i % 4 else 'Write'},{4096 * (i % 1000)},4096,0"
        for i, t in enumerate(ts.tolist())
    ]
    lines[500] = "not,a,line"
    path = tmp_path / "long.csv"
    path.write_text("\n".join(lines) + "\n")  # about 6 MB: several read blocks
    whole = io.summary(iomimic.read_trace(path, skip_bad=True))
    monkeypatch.setattr(io, "CHUNK_ROWS", 1_000)
    counted = io.text_summary(path, skip_bad=True)
    assert counted == whole
    assert counted["out_of_order"] > 0 and counted["skipped"] == 1 and not counted["has_latency"]
    assert any("response time" in note for note in counted["notes"])


@pytest.mark.parametrize("volume_names", ["records", "file"])
def test_files_of_a_directory_counted_in_chunks_give_the_summary_of_them_read_whole(
    tmp_path: Path, volume_names: str, monkeypatch
) -> None:
    """`iomimic info` of a directory or glob of text files counts each file a chunk at a time:
    the figures of the files read whole and merged, whatever the formats, with volumes of one
    name counted as one, stream ids shared across files, a file with response times and one
    with them all 0, out-of-order and malformed lines, and gzip."""
    import iomimic.io as io
    from iomimic.pieces import text_parts_summary

    rng = np.random.default_rng(8)
    d = tmp_path / "corpus"
    d.mkdir()
    for name in ("sda.blkparse.txt", "hm_0.csv", "w01.vscsi.csv"):
        (d / name).write_bytes((FIXTURES / "formats" / name).read_bytes())
    (d / "sdb.blkparse.txt").write_bytes((FIXTURES / "formats" / "sda.blkparse.txt").read_bytes())
    for k, latency in enumerate(("0", "155")):
        n = 5_000
        ts = 128166372003061629 + np.cumsum(rng.integers(0, 5_000, n))
        ts[::41] -= 20_000  # out of order
        lines = [
            f"{t},{'web' if i % 3 else 'hm'},{(i + k) % 2},{'Read' if i % 4 else 'Write'},"
            f"{4096 * (i % 700)},{4096 * (1 + i % 3)},{latency}"
            for i, t in enumerate(ts.tolist())
        ]
        lines[100 + k] = "not,a,line"
        text = ("\n".join(lines) + "\n").encode()
        (d / f"msr{k}.csv.gz").write_bytes(gzip.compress(text) if k else text)
    for source in (tmp_path / "corpus" / "*", d):
        whole = io.summary(iomimic.read_trace(source, skip_bad=True, volume_names=volume_names))
        monkeypatch.setattr(io, "CHUNK_ROWS", 1_000)
        counted = text_parts_summary(source, skip_bad=True, volume_names=volume_names)
        monkeypatch.undo()
        assert counted == whole
    assert counted["requests"] == len(iomimic.read_trace(d, skip_bad=True)) and counted["skipped"] == 2
    assert counted["has_latency"] and counted["streams"] > 1
    r = run_cli("info", str(d), "--skip-bad", "--volume-names", volume_names, "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(json.dumps(whole))
    # one file, or Parquet among them, is not for this path
    assert text_parts_summary(d / "hm_0.csv") is None
    iomimic.write_trace(iomimic.read_trace(d / "hm_0.csv"), d / "more.parquet")
    assert text_parts_summary(d) is None
