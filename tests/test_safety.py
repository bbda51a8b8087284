"""Never destroy data: devices in use, outputs over inputs, compressed data read whole, and
files that are not iomimic's. Each test here failed before its fix."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import iomimic
from iomimic import Trace
from iomimic.io import write_trace

from .conftest import run_cli

MSR_LINE = "128166372003061629,hm,0,Read,3216723968,4096,1557\n"


def small_trace(n: int = 200, writes: bool = True) -> Trace:
    return Trace(
        ts_ns=[i * 1000 for i in range(n)],
        offset=[(i * 7 % 64) * 4096 for i in range(n)],
        size=[4096] * n,
        op=[i % 2 if writes else 0 for i in range(n)],
        volumes=["v"],
    )


# --- 1. block devices in use, whatever the mount namespace -----------------------------------


def _can_make_loop_devices() -> str | None:
    if os.geteuid() != 0:
        return "needs root to attach loop devices"
    for tool in ("losetup", "mkfs.ext4", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    if not Path("/dev/loop-control").exists():
        return "no loop device support"
    return None


@contextlib.contextmanager
def loop_device(image: Path, mib: int = 32) -> Iterator[str]:
    with open(image, "wb") as f:
        f.truncate(mib << 20)
    try:
        dev = subprocess.run(
            ["losetup", "-f", "--show", str(image)], capture_output=True, text=True, check=True
        ).stdout.strip()
    except subprocess.CalledProcessError as e:
        pytest.skip(f"cannot attach a loop device here: {e.stderr.strip()}")
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def _exclusively_busy(dev: str) -> bool:
    try:
        fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    except OSError:
        return True
    os.close(fd)
    return False


@pytest.mark.skipif(_can_make_loop_devices() is not None, reason=str(_can_make_loop_devices()))
def test_a_device_mounted_in_another_mount_namespace_is_never_written(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img") as dev:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True)
        (tmp_path / "mnt").mkdir()
        # mounted only inside a private mount namespace, as a container would: invisible in
        # this process's mountinfo
        holder = subprocess.Popen(
            ["unshare", "-m", "sh", "-c", f"mount {dev} {tmp_path / 'mnt'} && exec sleep 60"],
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 10
            while not _exclusively_busy(dev) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _exclusively_busy(dev), "the namespace's mount did not come up"
            r = run_cli("run", "--pattern", "write seq 1m", "-n", "8", "--target", dev, "--allow-device")
            assert r.returncode == 2, r.stdout + r.stderr
            assert "in use" in r.stderr and "Traceback" not in r.stderr
            # export fio follows the same rule
            r = run_cli(
                "export", "fio", str(_trace_file(tmp_path)), "-o", str(tmp_path / "j.fio"),
                "--map", f"v={dev}", "--allow-device",
            )  # fmt: skip
            assert r.returncode == 2 and "in use" in r.stderr, r.stderr
            assert not (tmp_path / "j.fio").exists()
        finally:
            os.killpg(holder.pid, 9)
            holder.wait()
        deadline = time.monotonic() + 10
        while _exclusively_busy(dev) and time.monotonic() < deadline:
            time.sleep(0.05)
        # the file system came through whole
        if shutil.which("e2fsck"):
            check = subprocess.run(["e2fsck", "-fn", dev], capture_output=True, text=True)
            assert check.returncode == 0, check.stdout + check.stderr
        # once free, the device is used when allowed, and only then
        r = run_cli("run", "--pattern", "write seq 64k", "-n", "8", "--target", dev)
        assert r.returncode == 2 and "--allow-device" in r.stderr
        r = run_cli("run", "--pattern", "write seq 64k", "-n", "8", "--target", dev, "--allow-device")
        assert r.returncode == 0, r.stderr


def _trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "t.parquet"
    if not path.exists():
        write_trace(small_trace(), path)
    return path


# --- 2. outputs never overwrite inputs -------------------------------------------------------


def test_no_command_writes_over_its_input(tmp_path: Path) -> None:
    csv = tmp_path / "hm_0.csv"
    csv.write_text(MSR_LINE * 3 + MSR_LINE.replace("629,", "700,").replace("Read", "Write"))
    model = tmp_path / "m.json"
    assert (
        run_cli("model", "train", str(csv), "-o", str(model), "--levels", "1", "--states", "1").returncode
        == 0
    )
    link = tmp_path / "link.csv"
    os.link(csv, link)
    sym = tmp_path / "sym.csv"
    sym.symlink_to(csv)
    t, m = str(csv), str(model)
    cases = [
        ["info", t, "--json", t],
        ["characterize", t, "--json", t],
        ["model", "train", t, "-o", t],
        ["simulate", t, "--device", "hdd-7200", "-o", t],
        ["simulate", t, "--device", "hdd-7200", "--json", t],
        ["validate", t, t, "--json", t],
        ["export", "fio", t, "-o", t],
        ["export", "fio", t, "-o", str(tmp_path / "j.fio"), "--iolog", t],
        ["export", "fio", m, "-o", str(tmp_path / "m.fio"), "--iolog", m],
        ["replay", t, "--target", str(tmp_path / "f.dat"), "--size", "1M", "-o", t],
        ["replay", t, "--target", str(tmp_path / "f.dat"), "--size", "1M", "--json", t],
        ["generate", m, "-o", m, "--to", "csv"],
        ["run", m, "--target", str(tmp_path / "g.dat"), "--size", "1M", "-n", "5", "--json", m],
        ["convert", t, "-o", str(link), "--to", "csv"],
        ["convert", t, "-o", str(sym), "--to", "csv"],
        ["model", "mix", f"{m}:1", "-o", m],
    ]
    before = csv.read_bytes(), model.read_bytes()
    for args in cases:
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "would destroy the input" in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert (csv.read_bytes(), model.read_bytes()) == before, args
    # the message names the flag and the input
    r = run_cli("info", t, "--json", t)
    assert "the output --json is the input trace" in r.stderr


def test_no_output_overwrites_a_file_of_a_directory_or_glob_input(tmp_path: Path) -> None:
    """A directory or a glob is read as its files, so each of them is an input too."""
    parts = tmp_path / "parts"
    parts.mkdir()
    a, b = parts / "a.csv", parts / "b.csv"
    a.write_text(MSR_LINE * 20)
    b.write_text(MSR_LINE * 20)
    before = a.read_bytes(), b.read_bytes()
    for args in (
        ["convert", f"{parts}/*.csv", "-o", str(b), "--to", "csv"],
        ["model", "train", str(parts), "-o", str(a)],
        ["info", str(parts), "--json", str(a)],
        ["characterize", f"{parts}/*.csv", "--json", str(b)],
    ):
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "is a file of" in r.stderr and "would destroy the input" in r.stderr, (args, r.stderr)
        assert (a.read_bytes(), b.read_bytes()) == before, args
    # beside the files it reads, a new output is fine
    r = run_cli("info", str(parts), "--json", str(tmp_path / "s.json"))
    assert r.returncode == 0, r.stderr


# --- 3. compressed traces are read whole, or refused -----------------------------------------


def test_every_zstd_frame_is_read_and_damage_is_an_error(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    text = (MSR_LINE * 250).encode()
    c = zstandard.ZstdCompressor(write_checksum=True)
    one, two = c.compress(text), c.compress(text)

    def read(name: str, data: bytes):
        path = tmp_path / name
        path.write_bytes(data)
        return path, run_cli("info", str(path), "--json", "-")

    path, r = read("two.csv.zst", one + two)
    assert r.returncode == 0 and '"requests": 500' in r.stdout, r.stderr
    # pzstd writes a skippable frame first
    skippable = struct.pack("<II", 0x184D2A50, 4) + b"\0\0\0\0"
    path, r = read("pz.csv.zst", skippable + one + skippable + two)
    assert r.returncode == 0 and '"requests": 500' in r.stdout, r.stderr
    for name, data, words in (
        ("cut.csv.zst", one + two[:-12], "truncated"),
        ("cut1.csv.zst", one[: len(one) // 2], "truncated"),
        ("junk.csv.zst", one + b"not a zstd frame at all", "not another zstd frame"),
    ):
        path, r = read(name, data)
        assert r.returncode == 2, (name, r.stdout)
        assert f"{path}: damaged zstd data" in r.stderr and words in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


def test_damaged_gzip_is_bad_input_naming_the_file(tmp_path: Path) -> None:
    data = gzip.compress((MSR_LINE * 100).encode())
    for name, blob in (("cut.csv.gz", data[:-20]), ("junk.csv.gz", data + b"trailing garbage bytes!")):
        path = tmp_path / name
        path.write_bytes(blob)
        r = run_cli("info", str(path))
        assert r.returncode == 2 and f"{path}: damaged gzip data" in r.stderr, r.stderr
    # several members back to back are one stream, as gunzip reads them
    path = tmp_path / "two.csv.gz"
    path.write_bytes(data + data)
    assert len(iomimic.read_trace(path)) == 200


# --- 4. a mark never stands for another file --------------------------------------------------


def test_only_the_file_iomimic_created_counts_as_its_own(tmp_path: Path) -> None:
    trace = _trace_file(tmp_path)
    target = tmp_path / "f.dat"
    replay = ["replay", str(trace), "--target", str(target), "--iodepth", "4"]
    assert run_cli(*replay, "--size", "1M").returncode == 0
    assert run_cli(*replay).returncode == 0  # iomimic's own file: no --overwrite needed
    # someone else's file takes the name
    target.unlink()
    target.write_bytes(b"precious" * 1000)
    r = run_cli(*replay)
    assert r.returncode == 2 and "--overwrite" in r.stderr
    assert target.read_bytes() == b"precious" * 1000
    # a planted sidecar mark (the fallback on file systems without xattrs) names another inode
    (tmp_path / ".f.dat.iomimic").write_text("iomimic created this file; identity: dev=1 ino=2 btime=3\n")
    assert run_cli(*replay).returncode == 2
    # a symlink under the name of iomimic's file, pointing at a foreign file
    ours = tmp_path / "ours.dat"
    assert run_cli("replay", str(trace), "--target", str(ours), "--size", "1M").returncode == 0
    ours.unlink()
    ours.symlink_to(target)
    r = run_cli("replay", str(trace), "--target", str(ours), "--iodepth", "4")
    assert r.returncode == 2 and "--overwrite" in r.stderr
    assert target.read_bytes() == b"precious" * 1000


# --- 5. export fio follows a run's rules ------------------------------------------------------


def test_export_fio_refuses_what_a_run_would(tmp_path: Path) -> None:
    trace = _trace_file(tmp_path)
    theirs = tmp_path / "theirs.dat"
    theirs.write_bytes(b"x" * (1 << 20))
    for extra in ([], ["--prepare"]):
        r = run_cli(
            "export", "fio", str(trace), "-o", str(tmp_path / "j.fio"), "--map", f"v={theirs}", *extra
        )
        assert r.returncode == 2 and "iomimic did not create it" in r.stderr and "--overwrite" in r.stderr
        assert theirs.read_bytes() == b"x" * (1 << 20) and not (tmp_path / "j.fio").exists()
    blocks = [p for p in Path("/dev").iterdir() if p.is_block_device()]
    if blocks:
        r = run_cli("export", "fio", str(trace), "-o", str(tmp_path / "j.fio"), "--map", f"v={blocks[0]}")
        assert r.returncode == 2 and "--allow-device" in r.stderr
    # a read-only workload may use any file
    reads = tmp_path / "reads.parquet"
    write_trace(small_trace(writes=False), reads)
    r = run_cli("export", "fio", str(reads), "-o", str(tmp_path / "r.fio"), "--map", f"v={theirs}")
    assert r.returncode == 0, r.stderr


# --- crashes and tracebacks: a clear error and exit 2 (or 130 when interrupted) ------------------


def test_ctrl_c_while_reading_a_large_trace_exits_130_promptly(tmp_path: Path) -> None:
    import signal

    # about a gigabyte of text in a few MB of gzip: seconds of reading
    member = gzip.compress(b"11413000 0 657728 16 1\n" * 1_000_000)
    path = tmp_path / "big.mqsim.gz"
    path.write_bytes(member * 40)
    proc = subprocess.Popen(
        [sys.executable, "-m", "iomimic.cli", "info", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 5, "the interrupt waited for the whole file"
    assert "interrupted" in err and "Traceback" not in err and "PanicException" not in err


def _busy_trace(n: int, size: int = 4096) -> Trace:
    import numpy as np

    rng = np.random.default_rng(3)
    return Trace(
        ts_ns=np.arange(n, dtype=np.uint64) * 1000,
        offset=rng.integers(0, 1 << 22, n) * 4096,
        size=np.full(n, size),
        op=(rng.random(n) < 0.3).astype(np.uint8),
        stream=rng.integers(0, 8, n).astype(np.uint32),
    )


@pytest.mark.parametrize("work", ["characterize", "validate", "generate", "miss-ratio curve"])
def test_ctrl_c_stops_the_cores_long_work_within_a_pass(work: str) -> None:
    """Ctrl-C during characterization, validation, generation or a miss-ratio curve (work in
    the core, watched from Python) raises KeyboardInterrupt at the work's next check, not at
    its end; the progress it reported before counts up towards a fixed total."""
    import signal

    from iomimic import cache

    trace = _busy_trace(2_000_000)  # seconds of work for each
    calls: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        calls.append((done, total))
        # once the total is known (before it, validation is still setting up: under load a
        # report can come first, and the stop then lands before any counted one)
        if total > 0 and sum(t > 0 for _, t in calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C would

    with pytest.raises(KeyboardInterrupt):
        if work == "characterize":
            iomimic.characterize(trace, progress=progress)
        elif work == "validate":
            iomimic.validate(trace, trace, progress=progress)
        elif work == "miss-ratio curve":
            # 64 KiB requests: 2 M of 4 KiB take a tenth of a second, done before the first report
            cache.miss_ratio_curve(_busy_trace(2_000_000, size=64 << 10), progress=progress)
        else:
            model = iomimic.model.train(_busy_trace(20_000), levels=1, states=2)
            model.generate(20_000_000, progress=progress)
    counted = [(d, t) for d, t in calls if t > 0]  # a total of 0: not known yet
    assert counted, calls
    done, total = counted[-1]
    assert done < total, calls
    assert len({t for _, t in counted}) == 1, calls


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["generate", "{model}", "-o", "{tmp}/x.parquet", "--duration", "1000000000h"], "--duration"),
        (["run", "{model}", "--target", "{tmp}/f.dat", "--size", "1M", "--workers", "-1"], "--workers"),
        (["simulate", "{trace}", "--device", "hdd-7200", "--iodepth", "-1"], "--iodepth"),
        (["characterize", "{trace}", "--ranges", "-1"], "--ranges"),
        (["characterize", "{trace}", "--ranges", "1000000000"], "--ranges"),
        (["simulate", "{trace}", "--device", "hdd-7200", "--intensity", "1e-300"], "--intensity"),
        (["generate", "{model}", "-o", "{tmp}/x.parquet", "-n", "0"], "--requests"),
    ],
)
def test_out_of_range_numbers_are_clear_errors(args: list[str], flag: str, tmp_path: Path) -> None:
    trace = _trace_file(tmp_path)
    model = tmp_path / "m.json"
    if not model.exists():
        assert (
            run_cli(
                "model", "train", str(trace), "-o", str(model), "--levels", "1", "--states", "1"
            ).returncode
            == 0
        )
    filled = [a.format(model=model, trace=trace, tmp=tmp_path) for a in args]
    r = run_cli(*filled)
    assert r.returncode == 2, r.stdout + r.stderr
    assert flag in r.stderr and "Traceback" not in r.stderr and "OverflowError" not in r.stderr, r.stderr


# --- silently wrong: exit 0 with wrong answers no more ---------------------------------------


def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    for name, text in (("hm_0.csv", MSR_LINE * 3), ("w.mqsim", "11413000 0 657728 16 1\n" * 3)):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert len(iomimic.read_trace(path)) == 3, name


def test_one_fractional_time_does_not_turn_mqsim_into_disksim(tmp_path: Path) -> None:
    lines = [f"{11413000 + i * 1000} 0 {657728 + 8 * i} 8 1\n" for i in range(300)]
    lines[150] = "11563000.5 0 657728 8 1\n"
    path = tmp_path / "t.trace"
    path.write_text("".join(lines))
    with pytest.raises(iomimic.TraceParseError) as info:
        iomimic.read_trace(path)
    assert ":151:" in str(info.value) and "mqsim" in str(info.value)
    t = iomimic.read_trace(path, skip_bad=True)
    assert t.report["format"] == "mqsim" and len(t) == 299
    assert any("do not parse as it" in note for note in t.report["notes"])
    # a file whose times are fractional milliseconds is still DiskSim's
    path.write_text("".join(f"{i}.25 0 {8 * i} 8 1\n" for i in range(100)))
    assert iomimic.read_trace(path).report["format"] == "disksim"


def test_a_corrupt_first_row_after_a_header_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("time,offset,size\n1?,0,512\n2,512,512\n")
    with pytest.raises(iomimic.TraceParseError, match=":2:"):
        iomimic.read_trace(path, format="generic", columns="ts=0:us,offset=1,size=2")


def test_iomimic_csv_with_many_volumes_is_detected_and_round_trips(tmp_path: Path) -> None:
    n = 600
    t = Trace(
        ts_ns=list(range(n)),
        offset=[4096 * i for i in range(n)],
        size=[4096] * n,
        op=[0] * n,
        volume=list(range(n)),
        volumes=[f"volume-with-a-long-name-{i:04d}" for i in range(n)],
    )
    path = tmp_path / "many.csv"
    write_trace(t, path)
    back = iomimic.read_trace(path)
    assert back.report["format"] == "csv" and back == t


def test_out_of_range_fields_are_errors_not_skips(tmp_path: Path) -> None:
    path = tmp_path / "w.vscsi.csv"
    path.write_text("version,time,op,size,lbn\n2,1,28,4096,8\n2,2,100000028,4096,8\n")
    with pytest.raises(iomimic.TraceParseError, match="not a SCSI opcode"):
        iomimic.read_trace(path)
    path = tmp_path / "hm_0.csv"
    path.write_text(MSR_LINE + "128166372003061630,hm,0,Read,0,4096,184467440737095517\n")
    with pytest.raises(iomimic.TraceParseError, match="ResponseTime"):
        iomimic.read_trace(path)


def test_size_zero_is_refused_wherever_it_comes_from(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "ts_ns": pa.array([0, 1], pa.uint64()),
            "offset": pa.array([0, 4096], pa.uint64()),
            "size": pa.array([0, 4096], pa.uint32()),
            "op": pa.array([0, 1], pa.uint8()),
            "volume": pa.array([0, 0], pa.uint32()),
        }
    )
    pq.write_table(table, tmp_path / "z.parquet")
    with pytest.raises(iomimic.InputError, match=r"z\.parquet: .*a read of size 0"):
        iomimic.read_trace(tmp_path / "z.parquet")
    model = json.loads(iomimic.model.train(small_trace(), levels=1, states=1).to_json())
    model["threads"][0]["defaults"]["sizes"] = {"bytes": [0], "p": [1.0]}
    with pytest.raises(iomimic.InputError, match=r"sizes\.bytes\[0\]"):
        iomimic.Model(model)
    with pytest.raises(iomimic.InputError, match="size 0"):
        Trace(ts_ns=[0], offset=[0], size=[0], op=[1])
    assert len(Trace(ts_ns=[0], offset=[0], size=[0], op=[3])) == 1  # a flush has no size


def test_parquet_with_foreign_metadata_or_types_is_refused_clearly(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = {
        "ts_ns": pa.array([0, 1], pa.uint64()),
        "offset": pa.array([0, 4096], pa.uint64()),
        "size": pa.array([4096, 4096], pa.uint32()),
        "op": pa.array([0, 1], pa.uint8()),
        "volume": pa.array([0, 0], pa.uint32()),
    }
    for name, columns, meta, words in (
        ("notjson", base, {"iomimic": "{not json"}, "metadata is not JSON"),
        ("list", base, {"iomimic": "[1, 2]"}, "not a JSON object"),
        ("intnames", base, {"iomimic": '{"volumes": [1, 2]}'}, "volumes must be a list of names"),
        ("textts", {**base, "ts_ns": pa.array(["0", "1"])}, None, "column ts_ns holds text"),
        ("boolop", {**base, "op": pa.array([True, False])}, None, "column op has type bool"),
    ):
        table = pa.table(columns)
        if meta:
            table = table.replace_schema_metadata(meta)
        path = tmp_path / f"{name}.parquet"
        pq.write_table(table, path)
        r = run_cli("info", str(path))
        assert r.returncode == 2 and f"{path}:" in r.stderr and words in r.stderr, (name, r.stderr)
        assert "Traceback" not in r.stderr
    table = pa.table({**base, "volume": pa.array(["a", "b"]).dictionary_encode()})
    pq.write_table(table, tmp_path / "dict.parquet")
    assert iomimic.read_trace(tmp_path / "dict.parquet").volumes == ["a", "b"]


def test_a_streamed_parquet_replay_validates_each_piece(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 100
    table = pa.table(
        {
            "ts_ns": pa.array(range(n), pa.uint64()),
            "offset": pa.array([(1 << 64) - 1 if i == 60 else 0 for i in range(n)], pa.uint64()),
            "size": pa.array([4096] * n, pa.uint32()),
            "op": pa.array([0] * n, pa.uint8()),
            "volume": pa.array([0] * n, pa.uint32()),
        }
    ).replace_schema_metadata({"iomimic": json.dumps({"version": 1, "volumes": ["v"], "files": []})})
    pq.write_table(table, tmp_path / "bad.parquet", row_group_size=25)
    r = run_cli("replay", str(tmp_path / "bad.parquet"), "--target", str(tmp_path / "f.dat"), "--size", "1M")
    assert r.returncode == 2 and "passes 2^63" in r.stderr and "row group 2" in r.stderr, r.stderr
