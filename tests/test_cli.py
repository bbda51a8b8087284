"""End-to-end runs of the `iomimic` command: output, exit codes, and no partial files."""

from __future__ import annotations

import gzip
import json
import shlex
import subprocess
import sys
from pathlib import Path

import iomimic

from .conftest import FIXTURES, run_cli

MSR = FIXTURES / "formats" / "hm_0.csv"


def test_info_prints_the_summary_table() -> None:
    r = run_cli("info", str(MSR))
    assert r.returncode == 0, r.stderr
    assert "hm_0.csv (msr)" in r.stdout
    for words in ["requests", "3", "reads", "66.67%", "hm_1", "out-of-order lines"]:
        assert words in r.stdout
    assert "1 line was out of time order" in r.stderr


def test_info_json(tmp_path: Path) -> None:
    out = tmp_path / "hm0.json"
    r = run_cli("info", str(MSR), "--json", str(out))
    assert r.returncode == 0, r.stderr
    s = json.loads(out.read_text())
    assert (s["format"], s["requests"], s["reads"], s["writes"]) == ("msr", 3, 2, 1)
    assert [v["name"] for v in s["volumes"]] == ["hm_0", "hm_1"]
    assert s["bytes_read"] == 65536 + 4096
    assert s["out_of_order"] == 1
    assert s["span_s"] == 12900 / 1e9


def test_info_counts_the_canonical_csv_convert_writes(tmp_path: Path) -> None:
    """Canonical CSV names its volumes after the rows: `info`, counting a batch at a time,
    meets the rows before the names."""
    for name in ("hm_0.csv", "hm_0.csv.gz"):
        out = tmp_path / name
        assert run_cli("convert", str(MSR), "-o", str(out)).returncode == 0
        r = run_cli("info", str(out), "--json", "-")
        assert r.returncode == 0, r.stderr
        s = json.loads(r.stdout)
        assert (s["requests"], s["reads"], s["writes"]) == (3, 2, 1)
        assert [(v["name"], v["requests"]) for v in s["volumes"]] == [("hm_0", 2), ("hm_1", 1)]


def test_convert_to_parquet_and_csv_round_trip(tmp_path: Path) -> None:
    original = iomimic.read_trace(MSR)
    for name, fmt in (("hm_0.parquet", "parquet"), ("hm_0.csv", "csv"), ("hm_0.csv.gz", "csv.gz")):
        out = tmp_path / name
        r = run_cli("convert", str(MSR), "-o", str(out))
        assert r.returncode == 0, r.stderr
        assert f"wrote 3 requests (msr → {fmt})" in r.stdout
        assert iomimic.read_trace(out) == original
    # --to names the format where the extension does not
    out = tmp_path / "hm_0.out"
    r = run_cli("convert", str(MSR), "-o", str(out), "--to", "csv.gz")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:2] == b"\x1f\x8b" and iomimic.read_trace(out) == original
    r = run_cli("convert", str(MSR), "-o", str(tmp_path / "hm_0.txt"))
    assert r.returncode == 2 and "name it .parquet, .csv or .csv.gz" in r.stderr
    assert not (tmp_path / "hm_0.txt").exists()


def test_convert_blkparse_with_skip_bad(tmp_path: Path) -> None:
    src = tmp_path / "trace.blkparse.txt"
    good = (FIXTURES / "formats" / "sda.blkparse.txt").read_text().splitlines()
    src.write_text("\n".join([*good[:2], "  8,0 garbage line", *good[2:]]) + "\n")
    out = tmp_path / "t.parquet"
    r = run_cli("convert", str(src), "--format", "blkparse", "-o", str(out), "--skip-bad")
    assert r.returncode == 0, r.stderr
    assert "skipped 1 malformed line (1 bad_field_count)" in r.stderr
    assert f"{src}:3: expected at least 7 fields, found 3" in r.stderr
    assert len(iomimic.read_trace(out)) == 4


def test_bad_line_exits_2_and_leaves_no_output(tmp_path: Path) -> None:
    src = tmp_path / "hm_0.csv"
    src.write_text(MSR.read_text() + "128166372003061629,hm,0,Read,0,0,1\n")
    out = tmp_path / "out.parquet"
    r = run_cli("convert", str(src), "-o", str(out))
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"iomimic: error: {src}:4: read of size 0 (--skip-bad skips malformed lines and counts them)"
    )
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hm_0.csv"]


def test_user_mistakes_exit_2_without_traceback(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    cases = [
        (["info", "no-such-file.csv"], "no-such-file.csv"),
        (["info", str(empty)], "no requests found"),
        (["info", str(MSR), "--format", "nope"], 'unknown format "nope"'),
        (["convert", str(MSR), "-o", str(tmp_path / "x.txt")], "cannot tell the output format"),
        (["convert", str(MSR)], "the following arguments are required: -o/--output"),
        (
            ["convert", str(MSR), "-o", str(tmp_path / "nowhere" / "x.parquet")],
            f"{tmp_path / 'nowhere' / 'x.parquet'}: the folder {tmp_path / 'nowhere'} does not exist",
        ),
        # a directory is read as one trace of its files: the bad one is named
        (["info", str(tmp_path)], f"{empty}: no requests found"),
        (["info", str(tmp_path / "nowhere" / "*.csv")], "no file matches"),
        (["frobnicate"], "invalid choice"),
        (
            ["generate", "m.json", "-o", "x.parquet", "--seed", "-1"],
            "a seed is a whole number from 0 to 2**64 - 1",
        ),
    ]
    for args, words in cases:
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert words in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr


def test_verbose_shows_the_traceback(tmp_path: Path) -> None:
    r = run_cli("-v", "info", "no-such-file.csv")
    assert r.returncode == 2
    assert "Traceback" in r.stderr


def test_help_teaches_with_examples() -> None:
    r = run_cli("--help")
    assert r.returncode == 0
    for command in ("info", "convert", "formats", "demo"):
        assert command in r.stdout
    r = run_cli("convert", "--help")
    assert r.returncode == 0
    assert "iomimic convert hm_0.csv -o hm_0.parquet" in r.stdout
    assert "--skip-bad" in r.stdout


def test_formats_command_lists_formats() -> None:
    r = run_cli("formats")
    assert r.returncode == 0
    for name in ("msr", "blkparse", "tencent", "generic"):
        assert name in r.stdout


def test_demo_runs_on_the_built_in_example() -> None:
    r = run_cli("demo")
    assert r.returncode == 0, r.stderr
    for words in (
        "preset tpcc",
        "generated 100,000 requests",
        "trained a model",
        "validation: original vs synthetic",
        "locality-free",
        "targets met",
    ):
        assert words in r.stdout, words
    met, checked = r.stdout.split(" targets met")[0].split()[-3::2]
    assert met == checked
    # the SSD-caching part (issue 13): 8-32 GB caches on a workload with reuse, where the
    # synthetic copy predicts the speedup within 5 % and the locality-free one shows little
    assert "SSD caching: mean-latency speedup" in r.stdout
    for size in ("8 GiB", "16 GiB", "32 GiB"):
        assert size in r.stdout
    error = float(r.stdout.split("predicts the speedup within ")[1].split("%")[0])
    assert error < 5, r.stdout
    free = float(r.stdout.split("locality-free workload speeds up at most ")[1].split("x")[0])
    assert free < 1.1, r.stdout


def test_example_trace_reads() -> None:
    from iomimic.demo import example_path

    t = iomimic.read_trace(example_path())
    assert (len(t), t.report["format"], t.report["compression"]) == (5000, "msr", "gzip")


def test_convert_slices_by_time_volume_op_and_stream(tmp_path: Path) -> None:
    # one request a second for 30 minutes on two volumes, alternating reads and writes
    n = 1800
    t = iomimic.Trace(
        ts_ns=[i * 10**9 for i in range(n)],
        offset=[4096 * i for i in range(n)],
        size=[4096] * n,
        op=[i % 2 for i in range(n)],
        volume=[(i // 2) % 2 for i in range(n)],
        stream=[i % 3 for i in range(n)],
        volumes=["sda", "sdb"],
    )
    src = tmp_path / "t.parquet"
    iomimic.write_trace(t, src)
    out = tmp_path / "part.parquet"
    r = run_cli(
        "convert",
        str(src),
        "-o",
        str(out),
        "--start",
        "10m",
        "--end",
        "20m",
        "--volume",
        "sdb",
        "--op",
        "read",
    )
    assert r.returncode == 0, r.stderr
    part = iomimic.read_trace(out)
    # seconds 600..1199 whose index is even (read) and (i // 2) odd (sdb): i = 602, 606, ...
    expected = [i for i in range(600, 1200) if i % 2 == 0 and (i // 2) % 2 == 1]
    assert len(part) == len(expected) and part.volumes == ["sdb"]
    assert part.ts_ns.tolist() == [(i - expected[0]) * 10**9 for i in expected]
    assert part.offset.tolist() == [4096 * i for i in expected]
    same = t.select(start_ns=600 * 10**9, end_ns=1200 * 10**9, volumes=["sdb"], ops=["read"])
    assert same == part and same.report["start_ns"] == expected[0] * 10**9
    r = run_cli("info", str(src), "--op", "write,trim", "--stream", "1", "--json", str(tmp_path / "i.json"))
    assert r.returncode == 0, r.stderr
    info = json.loads((tmp_path / "i.json").read_text())
    assert info["requests"] == sum(1 for i in range(n) if i % 2 == 1 and i % 3 == 1)
    # from the first request: 0 is a time, though not a duration
    r = run_cli("info", str(src), "--start", "0s", "--end", "60s", "--json", str(tmp_path / "j.json"))
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "j.json").read_text())["requests"] == 60
    for args, message in [
        (["--volume", "sdc"], "--volume: the trace has no volume 'sdc' (it has sda, sdb)"),
        (["--op", "wrote"], "--op: no op 'wrote'"),
        (["--start", "2h"], "no request is in the selection"),
        (["--start", "30s", "--end", "10s"], "--start (30 s) must come before --end (10 s)"),
        (["--stream", "x"], "--stream: expected a stream id"),
    ]:
        r = run_cli("convert", str(src), "-o", str(tmp_path / "bad.parquet"), *args)
        assert r.returncode == 2 and message in r.stderr, r.stderr
        assert not (tmp_path / "bad.parquet").exists()


def test_what_a_new_user_trips_on_is_told_plainly(tmp_path: Path) -> None:
    """The errors and notes of the ecosystem issue, through the command as a user meets them."""
    import polars as pl

    # argparse's own errors carry the program's name once
    r = run_cli("info", str(MSR), "--bogus")
    assert r.returncode == 2 and "iomimic: error: unrecognized arguments: --bogus" in r.stderr
    assert "iomimic: error: iomimic:" not in r.stderr
    # a model where a trace is expected: what it is and what to do, not its text
    model = tmp_path / "m.json"
    assert run_cli("model", "preset", "tpcc", "-o", str(model)).returncode == 0
    r = run_cli("info", str(model))
    assert r.returncode == 2 and "this is an iomimic model, not a trace" in r.stderr
    assert len(r.stderr) < 600, r.stderr
    # --columns implies the generic reader
    plain = tmp_path / "plain.csv"
    plain.write_text("1,0,4096\n2,4096,4096\n")
    r = run_cli("info", str(plain), "--columns", "ts=0:ms,offset=1,size=2", "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["requests"] == 2
    # an MSR file whose response times are all zero recorded none
    zero = tmp_path / "zero.csv"
    zero.write_text("128166372000000000,hm,0,Read,0,4096,0\n128166372000010000,hm,0,Write,4096,4096,0\n")
    r = run_cli("info", str(zero))
    assert r.returncode == 0 and any(
        "latency recorded" in line and "no" in line.split("latency recorded")[1]
        for line in r.stdout.splitlines()
    ), r.stdout
    # the mqsim/disksim note: once, and not when the time unit says the user chose
    ambiguous = tmp_path / "t.txt"
    ambiguous.write_text("100 0 8 8 1\n200 0 16 8 0\n")
    assert run_cli("info", str(ambiguous)).stderr.count("also parse as disksim") == 1
    assert "disksim" not in run_cli("info", str(ambiguous), "--time-unit", "ms").stderr
    # iomimic's CSV reads in polars with default options
    out = tmp_path / "t.csv"
    assert run_cli("convert", str(MSR), "-o", str(out)).returncode == 0
    assert pl.read_csv(out).height == len(iomimic.read_trace(MSR))
    # validate --strict gates a CI job: exit 1 on a missed target, the table written first
    synth = tmp_path / "s.csv"
    assert run_cli("generate", str(model), "-o", str(synth), "-n", "2000").returncode == 0
    r = run_cli("validate", str(out), str(synth), "--strict")
    assert r.returncode == 1 and "validate --strict: missed" in r.stderr and "target" in r.stdout
    # a negative duration is told as such, not as an option argparse took it for
    r = run_cli("generate", str(model), "-o", str(synth), "--duration", "-5s")
    assert r.returncode == 2 and "--duration: a duration must be positive, found -5s" in r.stderr, r.stderr
    assert run_cli("validate", str(out), str(out), "--strict").returncode == 0


def test_what_a_review_of_the_studies_found(tmp_path: Path) -> None:
    """A new user's review of the studies and exports: each finding, as the user met it."""
    head = "ts_ns,offset,size,op,volume,stream,volume_name\n"
    rows = [
        f"{i * 10_000_000},{(i * 7919 % 100_000) * 4096},4096,{i % 2},{i % 3 % 2},0,v{i % 3 % 2}"
        for i in range(2000)
    ]
    sel = tmp_path / "sel.csv"
    sel.write_text(head + "\n".join(rows) + "\n")

    def ok(*args: str):
        r = run_cli(*args)
        assert r.returncode == 0, r.stderr
        return r

    def refused(message: str, *args: str) -> None:
        r = run_cli(*args)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr

    # the selection options choose what a study runs on (they were ignored); the first 5 s'
    # reads on v0: i < 500, even, i % 3 % 2 == 0
    chosen = sum(1 for i in range(500) if i % 2 == 0 and i % 3 % 2 == 0)
    for study in ("ssd-cache", "defrag"):
        out = tmp_path / f"{study}.json"
        ok("study", study, str(sel), "--op", "read", "--end", "5s", "--volume", "v0", "--json", str(out))
        report = json.loads(out.read_text())
        requests = report["workloads"][0]["requests"] if study == "ssd-cache" else report["requests"]
        assert requests == chosen, (study, requests)
    refused("a trace is studied as it is", "study", "ssd-cache", str(sel), "-n", "100")
    # an output never replaces the applications file, nor another output
    apps = tmp_path / "apps.toml"
    apps.write_text((Path(__file__).parents[1] / "docs" / "examples" / "tpcw-apps.toml").read_text())
    before = apps.read_text()
    refused("would destroy the input", "study", "cache-alloc", str(apps), "--json", str(apps))
    assert apps.read_text() == before
    one = tmp_path / "one.csv"
    one.write_text(head + "0,512,512,0,0,0,d0\n")
    refused("are the same file", "export", "fio", str(one), "-o", str(tmp_path / "job.iolog"))
    refused(
        "are the same file",
        "export",
        "fio",
        str(one),
        "-o",
        str(tmp_path / "j.fio"),
        "--iolog",
        str(tmp_path / "j.fio"),
    )
    # a refusal for space comes before anything is written
    model = tmp_path / "mess.json"
    ok("model", "preset", "messenger", "-o", str(model))
    deep = tmp_path / "pp"
    deep.mkdir()
    refused(
        "needs", "export", "fio", str(model), "-n", "1000", "-o", str(deep / "m.fio"),
        "--map", f"H={deep}/deep/x/H.dat", "--prepare",
    )  # fmt: skip
    assert list(deep.iterdir()) == []
    # O_DIRECT's realignment is said; without it the log is exact
    r = ok("export", "fio", str(one), "-o", str(tmp_path / "s.fio"), "--direct")
    assert "1 of the requests moved or grew onto whole 4 KiB blocks" in r.stdout
    ok("export", "fio", str(one), "-o", str(tmp_path / "s.fio"), "--no-direct")
    assert (tmp_path / "s.iolog").read_text().splitlines()[-2].endswith("read 512 512")
    flush = tmp_path / "flush.csv"
    flush.write_text(head + "0,0,0,3,0,0,d0\n")
    ok("export", "fio", str(flush), "-o", str(tmp_path / "f.fio"), "--direct")
    # a plot's format is checked before the work, which is not lost; no suffix is a PNG
    out = tmp_path / "o.json"
    refused(
        "cannot draw a .txt file",
        "study",
        "cache-alloc",
        "--example",
        "--json",
        str(out),
        "--plot",
        str(tmp_path / "o.txt"),
    )
    r = ok("study", "cache-alloc", "--example", "--plot", str(tmp_path / "fig"))
    assert (tmp_path / "fig.png").exists() and f"wrote {tmp_path / 'fig.png'}" in r.stdout
    (tmp_path / "rep").write_text("")
    refused("is a file", "validate", str(sel), str(sel), "--report", str(tmp_path / "rep"))
    # a saturated device is said to be
    r = ok("study", "defrag", "tpcc", "-n", "5000")
    assert "hdd-7200 served" in r.stderr and "it is saturated" in r.stderr
    # messages name the flags the user gave
    for message, args in [
        ("--slow-ms must be 0 to 3600000 ms", ["study", "early-errors", str(sel), "--slow-ms", "-5"]),
        (
            "--threshold must be a positive number, found -1",
            ["study", "early-errors", str(sel), "--threshold", "-1"],
        ),
        ("--peak-factor must be a positive number", ["study", "offload", str(sel), "--peak-factor", "0"]),
        ("--store-size must be whole 4096-byte blocks", ["study", "offload", str(sel), "--store-size", "1"]),
        ("P is above 0 % and at most 100 %", ["study", "defrag", str(sel), "--policy", "partial:0%"]),
        (
            "--windows must be 1 to the trace's 2000 requests",
            ["study", "defrag", str(sel), "--policy", "dynamic", "--windows", "100000"],
        ),
        (
            "--block-size must be a positive multiple of 512",
            ["study", "defrag", str(sel), "--block-size", "3"],
        ),
        ("--cache: 1024 bytes hold no block of 4096", ["study", "ssd-cache", str(sel), "--cache", "1k"]),
        (
            # a size without its unit: 8 bytes an SSD would be a billion SSDs, not a crash
            "--ssd-size: a cache of 8589934592 bytes would take 1073741824 SSDs of 8 bytes; at most 256",
            ["study", "ssd-cache", str(sel), "--ssd-size", "8", "--cache", "8G"],
        ),
        (
            "name it .parquet, .csv or .csv.gz",
            ["simulate", str(sel), "--device", "hdd-7200", "-o", str(tmp_path / "s.txt")],
        ),
        ("not a model file", ["model", "mix", str(sel), "-o", str(tmp_path / "m.json")]),
        (
            "--output: " + str(tmp_path / "r.png") + " would hold an HTML page",
            ["report", str(sel), "-o", str(tmp_path / "r.png")],
        ),
        (
            "the name says parquet, the format asked for is csv",
            ["convert", str(sel), "-o", str(tmp_path / "x.parquet"), "--to", "csv"],
        ),
    ]:
        refused(message, *args)
    # sizes with units, and one vocabulary for -n
    r = ok(
        "study",
        "prefetch",
        "--experiment",
        "jumps",
        "--prefetch",
        "0,64k",
        "--point-requests",
        "256",
        "--json",
        "-",
    )
    assert {p["prefetch_kib"] for p in json.loads(r.stdout)["points"]} == {0, 64}
    # (the review, continued) a disk scheduler for an SSD is refused, not ignored; beside a
    # disk it orders the disk's queue
    refused(
        "--scheduler orders a disk's queue, and ssd-sata is an SSD",
        "simulate",
        str(MSR),
        "--device",
        "ssd-sata",
        "--scheduler",
        "sptf",
    )
    ok("simulate", str(MSR), "--device", "hdd-7200,ssd-sata", "--scheduler", "sptf")
    # windows matter to the dynamic layout only; -n is not --point-requests
    tiny = tmp_path / "tiny.csv"
    tiny.write_text(head + "0,0,4096,0,0,0,d\n1000,4096,4096,0,0,0,d\n")
    ok("study", "defrag", str(tiny), "--policy", "full")
    refused(
        "--windows must be 1 to the trace's 2 requests", "study", "defrag", str(tiny), "--policy", "dynamic"
    )
    refused("take --point-requests", "study", "prefetch", "--experiment", "jumps", "--requests", "64")
    ok("study", "early-errors", str(sel), "--slow-ms", "0ms", "--devices", "4", "--faulty", "1")


def test_tables_piped_into_a_reader_that_stops_end_quietly(tmp_path: Path) -> None:
    # `| true` reads nothing and exits at once: every table write then meets a closed pipe
    path = tmp_path / "t.csv"
    rows = "".join(f"{i},{i * 4096},4096,0,0,0,0\n" for i in range(50))
    path.write_text("ts_ns,offset,size,op,volume,stream,volume_name\n" + rows)
    for command in ("info", "characterize"):
        cli = f"{shlex.quote(sys.executable)} -m iomimic.cli {command} {shlex.quote(str(path))}"
        piped = ["bash", "-c", f"set -o pipefail; {cli} | true"]
        r = subprocess.run(piped, capture_output=True, text=True, timeout=120)
        assert (r.returncode, r.stderr) == (0, ""), (command, r.stderr)


def test_a_study_says_when_several_volumes_share_its_one_device(tmp_path: Path) -> None:
    import numpy as np

    n = 2000
    t = iomimic.Trace(
        ts_ns=np.arange(n, dtype=np.uint64) * 10_000_000,
        offset=(np.arange(n, dtype=np.uint64) % 500) * 65536,
        size=np.full(n, 4096, dtype=np.uint32),
        op=np.zeros(n, dtype=np.uint8),
        volume=np.arange(n) % 2,
        volumes=["a", "b"],
    )
    path = tmp_path / "ab.parquet"
    iomimic.write_trace(t, path)
    r = run_cli("study", "defrag", str(path), "--device", "hdd-7200")
    assert r.returncode == 0 and "2 volumes share the one device hdd-7200" in r.stderr, r.stderr
    r = run_cli("study", "defrag", str(path), "--device", "hdd-7200", "--volume", "a")
    assert r.returncode == 0 and "share the one device" not in r.stderr, r.stderr


def test_a_trace_piped_in_as_dash_is_read_from_standard_input(tmp_path: Path) -> None:
    rows = "".join(f"{i},{i * 4096},4096,{i % 2},0,0,0\n" for i in range(40))
    text = "ts_ns,offset,size,op,volume,stream,volume_name\n" + rows

    def piped(*args: str, data: bytes) -> subprocess.CompletedProcess:
        cli = [sys.executable, "-m", "iomimic.cli", *args]
        return subprocess.run(cli, input=data, capture_output=True, timeout=120)

    r = piped("info", "-", "--json", "-", data=text.encode())
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert (info["requests"], info["reads"], info["writes"]) == (40, 20, 20)
    assert info["path"] == "stdin"  # not the temporary copy it was read from
    # compressed, and converted: the same requests as the file read directly
    src = tmp_path / "t.csv"
    src.write_text(text)
    out = tmp_path / "t.parquet"
    r = piped("convert", "-", "-o", str(out), data=gzip.compress(text.encode()))
    assert r.returncode == 0, r.stderr
    assert iomimic.read_trace(out) == iomimic.read_trace(src)
    # a bad line is named by its line in standard input
    r = piped("info", "-", data=(text + "9,x,4096,0,0,0,0\n").encode())
    assert r.returncode == 2 and "stdin:42: offset is not a number" in r.stderr.decode(), r.stderr
    r = piped("info", "-", data=b"")
    assert r.returncode == 2 and "stdin: no requests found" in r.stderr.decode(), r.stderr
