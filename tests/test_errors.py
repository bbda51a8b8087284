"""Bad input: the exact line and reason, --skip-bad counting, empty files and unknown formats."""

from __future__ import annotations

from pathlib import Path

import pytest

import iomimic

from .conftest import FIXTURES, run_cli

MSR_OK = "128166372003061629,hm,0,Read,3216723968,4096,1557\n"

# (format, second line of the file, error key, words the message must contain)
BAD_LINES = [
    ("msr", "128166372003061630,hm,0,Read,0,0,1", "zero_size", "read of size 0"),
    ("msr", "128166372003061630,hm,0,Read,-4096,512,1", "negative", "Offset is negative: -4096"),
    ("msr", "128166372003061630,hm,0,Read,9223372036854775808,512,1", "offset_overflow", "passes 2^63"),
    ("msr", "128166372003061630,hm,0,Read,4x96,512,1", "bad_number", 'Offset is not a number: "4x96"'),
    ("msr", "128166372003061630,hm,0,Read,0,512", "bad_field_count", "expected 7 fields, found 6"),
    ("msr", "128166372003061630,hm,0,Erase,0,512,1", "bad_op", "Type must be Read or Write"),
    ("msr", "128166372003061630,hm,0,Read,0,99999999999,1", "size_too_large", "does not fit in 32 bits"),
    ("msr", "99999999999999999999999,hm,0,Read,0,512,1", "number_too_large", "Timestamp is too large"),
    (
        "spc",
        "0,18014398509481984,512,r,0.1",
        "offset_overflow",
        "LBA 18014398509481984 x 512 bytes passes 2^63",
    ),
    ("spc", "0,5,512,r,abc", "bad_number", "Timestamp is not a number"),
    ("spc", "0,5,512,r,-0.5", "negative", "Timestamp is negative"),
    ("mqsim", "12 0 8 0 1", "zero_size", "read of size 0"),
    ("mqsim", "12 0 8 8 2", "bad_op", "type must be 1 (read) or 0 (write)"),
    ("alibaba", "0,X,0,512,100", "bad_op", "opcode must be R or W"),
    ("tencent", "1538323200,100,8,5,1", "bad_op", "IOType must be 0"),
]
FIRST_LINES = {
    "msr": MSR_OK,
    "spc": "0,303567,3584,w,0.000000\n",
    "mqsim": "11413000 0 657728 16 1\n",
    "alibaba": "0,R,126703644672,4096,1577808000000047\n",
    "tencent": "1538323200,18876264,8,1,1283\n",
}


@pytest.mark.parametrize(
    ("fmt", "line", "key", "words"), BAD_LINES, ids=[f"{c[0]}-{c[2]}" for c in BAD_LINES]
)
def test_bad_line_names_file_line_and_reason(
    fmt: str, line: str, key: str, words: str, tmp_path: Path
) -> None:
    path = tmp_path / "t.txt"
    path.write_text(FIRST_LINES[fmt] + line + "\n" + FIRST_LINES[fmt])
    with pytest.raises(iomimic.TraceParseError) as info:
        iomimic.read_trace(path, format=fmt)
    err = info.value
    assert str(err).startswith(f"{path}:2: ")
    assert words in str(err)
    assert (err.path, err.line, err.key) == (str(path), 2, key)


def test_skip_bad_counts_and_quotes_skipped_lines(tmp_path: Path) -> None:
    path = tmp_path / "hm_0.csv"
    bad = ["128166372003061630,hm,0,Read,0,0,1", "junk", "128166372003061631,hm,0,Read,x,512,1"]
    path.write_text(MSR_OK + "\n".join(bad) + "\n" + MSR_OK)
    t = iomimic.read_trace(path, skip_bad=True)
    assert len(t) == 2
    assert dict(t.report["skipped"]) == {"zero_size": 1, "bad_field_count": 1, "bad_number": 1}
    assert t.report["skipped_examples"][0] == f"{path}:2: read of size 0"
    assert t.report["skipped_examples"][1].startswith(f"{path}:3: expected 7 fields")


def test_skip_bad_line_numbers_are_exact_across_blocks(tmp_path: Path) -> None:
    """Blocks parsed on different threads still report file line numbers."""
    lines = [MSR_OK] * 60_000
    lines[45_000] = "bad line\n"
    path = tmp_path / "big.csv"
    path.write_text("".join(lines))
    t = iomimic.read_trace(path, skip_bad=True, format="msr")
    assert len(t) == 59_999
    assert t.report["skipped_examples"] == [f"{path}:45001: expected 7 fields, found 1"]
    with pytest.raises(iomimic.TraceParseError, match=r":45001: expected 7 fields"):
        iomimic.read_trace(path, format="msr")


def test_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(iomimic.EmptyTraceError, match=r"empty.csv: no requests found \(the file is empty\)"):
        iomimic.read_trace(path)


def test_header_only_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("version,time,op,size,lbn\n")
    with pytest.raises(iomimic.EmptyTraceError, match="1 lines read, none a request: 1 header"):
        iomimic.read_trace(path, format="vscsi-csv")


def test_files_of_blank_lines_or_a_header_alone_say_so_without_a_format(tmp_path: Path) -> None:
    # not "no known trace format matches" over eleven formats: there is nothing to match
    blank = tmp_path / "blank.csv"
    blank.write_text("\n \n\n")
    with pytest.raises(iomimic.EmptyTraceError, match="no line but blank ones and comments"):
        iomimic.read_trace(blank)
    header = tmp_path / "h.csv"
    header.write_text("ts_ns,offset,size,op,volume,stream,volume_name\n")
    with pytest.raises(iomimic.EmptyTraceError, match="its one line reads as a csv header, with no request"):
        iomimic.read_trace(header)
    r = run_cli("info", str(header))
    assert r.returncode == 2 and "h.csv: no requests found" in r.stderr, r.stderr


def test_all_bad_lines_skipped_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\nc,d\n")
    with pytest.raises(iomimic.EmptyTraceError, match="all 2 request lines were malformed"):
        iomimic.read_trace(path, format="msr", skip_bad=True)


def test_unknown_format_lists_what_was_tried(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello world\nthis is not a trace\n")
    with pytest.raises(iomimic.UnknownFormatError) as info:
        iomimic.read_trace(path)
    message = str(info.value)
    for name in [
        "msr (line 1: expected 7 fields, found 1)",
        "spc",
        "blkparse",
        "fio",
        "tencent",
        "mqsim",
        "vscsi",
    ]:
        assert name in message
    assert "`format`" in message


def test_binary_garbage_is_not_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(iomimic.UnknownFormatError, match="vscsi"):
        iomimic.read_trace(path)


def test_missing_file_and_bad_options() -> None:
    with pytest.raises(FileNotFoundError, match="no/such/file"):
        iomimic.read_trace("no/such/file")
    with pytest.raises(iomimic.InputError, match='unknown format "nope"; known formats: msr'):
        iomimic.read_trace(__file__, format="nope")
    with pytest.raises(iomimic.InputError, match="format generic needs `columns`"):
        iomimic.read_trace(__file__, format="generic")


def test_errors_share_one_hierarchy() -> None:
    for exc in (iomimic.TraceParseError, iomimic.UnknownFormatError, iomimic.EmptyTraceError):
        assert issubclass(exc, iomimic.InputError)
        assert issubclass(exc, iomimic.IomimicError)


def test_workloads_that_cannot_be_held_are_refused_before_any_allocation(tmp_path: Path) -> None:
    """A model asked for 10^12 requests, or stretched past what a nanosecond clock holds, is
    refused at once with the flag named (it used to grow until the system killed it)."""
    from .conftest import run_cli

    model = tmp_path / "tpcc.json"
    assert run_cli("model", "preset", "tpcc", "-o", str(model)).returncode == 0
    out = str(tmp_path / "g.parquet")
    for args, message in [
        (
            ["-n", "1000000000000"],
            "--requests: 1000000000000 requests are more than one in-memory workload holds",
        ),
        (
            ["-n", "1000", "--intensity", "1e-305"],
            "--intensity 1e-305 stretches 1000 requests over unbounded time",
        ),
        (["-n", "1000", "--intensity", "1e-12"], "a trace spans at most 146 years"),
        (["-n", "5000000000"], "more than one in-memory workload holds"),
    ]:
        r = run_cli("generate", str(model), "-o", out, *args)
        assert r.returncode == 2 and message in r.stderr, (args, r.stderr)
        assert not Path(out).exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no file can be made")
def test_an_output_that_cannot_be_made_is_named_as_given() -> None:
    # not the temporary file written beside it first
    r = run_cli("convert", str(FIXTURES / "formats" / "canonical.csv"), "-o", "/proc/x.parquet")
    assert r.returncode == 2 and "/proc/x.parquet: cannot be written there" in r.stderr, r.stderr
    assert ".partial" not in r.stderr
