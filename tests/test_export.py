"""`iomimic export fio`: the log reads back as the same workload, and fio replays all of it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from iomimic import Trace
from iomimic.fio_export import export_fio
from iomimic.io import read_trace, write_trace

from .conftest import run_cli


def two_volume_trace(n: int = 500, ops: tuple[int, ...] = (0, 1, 2)) -> Trace:
    rng = np.random.default_rng(4)
    return Trace(
        ts_ns=np.sort(rng.integers(0, 2 * 10**9, n)) // 1000 * 1000,
        offset=rng.integers(0, 4096, n) * 4096,
        size=rng.choice([512, 4096, 65536], n),
        op=rng.choice(ops, n),
        volume=rng.integers(0, 2, n),
        volumes=["sda", "disk 1"],
    )


def test_the_log_reads_back_as_the_same_workload(tmp_path: Path) -> None:
    t = two_volume_trace()
    # without O_DIRECT the log is exact (with it, requests move onto whole blocks, and say so)
    r = export_fio(t, tmp_path / "job.fio", tmp_path / "t.iolog", map="sda=/data/a.dat", direct=False)
    assert r["realigned"] == 0
    aligned = export_fio(t, tmp_path / "d.fio", tmp_path / "d.iolog", map="sda=/data/a.dat", direct=True)
    assert aligned["realigned"] == int(((t.offset % 4096 != 0) | (t.size % 4096 != 0)).sum()) > 0
    back = read_trace(tmp_path / "t.iolog")
    assert back.volumes == ["/data/a.dat", "iomimic-disk_1.dat"]
    assert np.array_equal(back.ts_ns, t.ts_ns - t.ts_ns[0] + (t.ts_ns[0] // 1000) * 1000)
    for column in ("offset", "size", "op", "volume"):
        assert np.array_equal(getattr(back, column), getattr(t, column)), column
    ends = t.offset + t.size
    assert r["files"] == {
        "/data/a.dat": int(ends[t.volume == 0].max()),
        str(tmp_path / "iomimic-disk_1.dat"): int(ends[t.volume == 1].max()),
    }
    job = (tmp_path / "job.fio").read_text()
    assert "read_iolog=t.iolog" in job and "ioengine=psync" in job and "iodepth=1" in job


def test_job_options(tmp_path: Path) -> None:
    t = two_volume_trace(20)
    export_fio(t, tmp_path / "a.fio", tmp_path / "a.iolog", intensity=2, direct=True, iodepth=4)
    job = (tmp_path / "a.fio").read_text()
    # twice as fast: fio's scale is a percentage of the logged rate (gaps times 100 / scale)
    assert "replay_time_scale=200" in job and "direct=1" in job and "iodepth=4" in job
    export_fio(t, tmp_path / "h.fio", tmp_path / "h.iolog", intensity=0.5)
    assert "replay_time_scale=50" in (tmp_path / "h.fio").read_text()
    export_fio(t, tmp_path / "b.fio", tmp_path / "b.iolog", no_stall=True)
    assert "replay_no_stall=1" in (tmp_path / "b.fio").read_text()


def test_cli_from_a_model_and_its_errors(tmp_path: Path) -> None:
    assert run_cli("model", "preset", "tpcc", "-o", str(tmp_path / "m.json")).returncode == 0
    r = run_cli("export", "fio", str(tmp_path / "m.json"), "-o", "job.fio", "-n", "300", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "fio job.fio" in r.stdout
    assert len(read_trace(tmp_path / "job.iolog")) == 300
    # a gzip-compressed model is a model too, here and to generate
    assert run_cli("model", "preset", "tpcc", "-o", str(tmp_path / "m.json.gz")).returncode == 0
    r = run_cli("export", "fio", str(tmp_path / "m.json.gz"), "-o", "gz.fio", "-n", "300", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (
        read_trace(tmp_path / "gz.iolog").offset.tolist()
        == read_trace(tmp_path / "job.iolog").offset.tolist()
    )
    r = run_cli("generate", str(tmp_path / "m.json.gz"), "-o", str(tmp_path / "g.csv"), "-n", "50")
    assert r.returncode == 0 and len(read_trace(tmp_path / "g.csv")) == 50, r.stderr
    r = run_cli("export", "fio", str(tmp_path / "m.json"), "-o", "x.fio", "--map", "nope=/a", cwd=tmp_path)
    assert r.returncode == 2 and "--map: the trace has no volume 'nope'" in r.stderr
    assert not (tmp_path / "x.fio").exists() and not (tmp_path / "x.iolog").exists()
    for bad, words in (
        (["--iodepth", "0"], "argument --iodepth: a whole number of at least 1"),
        (["--time-scale", "0"], "--time-scale"),
    ):
        r = run_cli("export", "fio", str(tmp_path / "m.json"), "-o", "x.fio", *bad, cwd=tmp_path)
        assert r.returncode == 2 and words in r.stderr, r.stderr
        assert not (tmp_path / "x.fio").exists() and not (tmp_path / "x.iolog").exists()
    # the job's files follow a run's rules: a foreign file is refused without --overwrite, one
    # too short for the log is refused without --prepare, and --prepare grows it (a trace of a
    # few MiB: the preset's volumes span terabytes)
    (tmp_path / "short.dat").write_bytes(b"x")
    write_trace(two_volume_trace(50), tmp_path / "small.parquet")
    volume = "sda"
    args = ["export", "fio", str(tmp_path / "small.parquet"), "-o", "y.fio"]
    r = run_cli(*args, "--prepare", "--map", f"{volume}=short.dat", cwd=tmp_path)
    assert r.returncode == 2 and "short.dat: exists and iomimic did not create it" in r.stderr
    assert "--overwrite" in r.stderr and (tmp_path / "short.dat").read_bytes() == b"x"
    r = run_cli(*args, "--overwrite", "--map", f"{volume}=short.dat", cwd=tmp_path)
    assert r.returncode == 2 and "short.dat: holds 1 bytes but the workload reaches" in r.stderr
    assert "--prepare" in r.stderr and not (tmp_path / "y.fio").exists()
    r = run_cli(*args, "--overwrite", "--prepare", "--map", f"{volume}=short.dat", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "short.dat").stat().st_size > 1 and (tmp_path / "y.fio").exists()


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fio_replays_every_request(tmp_path: Path) -> None:
    # reads and writes: fio skips trims on regular files
    t = two_volume_trace(400, ops=(0, 1))
    r = export_fio(t, tmp_path / "job.fio", tmp_path / "t.iolog", prepare=True, no_stall=True)
    # direct=1 (the files take O_DIRECT): 512-byte requests go where a --direct run puts them,
    # on 4 KiB boundaries, in files of whole 4 KiB blocks
    assert r["direct"] and all(size % 4096 == 0 for size in r["files"].values())
    back = read_trace(tmp_path / "t.iolog")
    assert not (back.offset % 4096).any() and not (back.size % 4096).any()
    out = subprocess.run(
        ["fio", "job.fio", "--output-format=json"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    job = json.loads(out.stdout[out.stdout.index("{") :])["jobs"][0]
    assert [job["read"]["total_ios"], job["write"]["total_ios"]] == np.bincount(t.op, minlength=2).tolist()


def test_outputs_get_the_usual_file_mode(tmp_path: Path) -> None:
    export_fio(two_volume_trace(5), tmp_path / "job.fio", tmp_path / "t.iolog")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "job.fio").stat().st_mode & 0o777 == 0o666 & ~umask


def _loop_on_ram(tmp_name: str, mib: int) -> str | None:
    """Why a RAM-backed loop device cannot be had here, or None when it can."""
    if shutil.which("fio") is None:
        return "fio is not installed (`make test` installs it)"
    if os.geteuid() != 0 or shutil.which("losetup") is None or not Path("/dev/shm").is_dir():
        return "needs root, losetup and /dev/shm for a RAM-backed loop device"
    return None


@pytest.mark.skipif(_loop_on_ram("", 0) is not None, reason=str(_loop_on_ram("", 0)))
def test_fio_times_the_exported_job_as_iomimic_times_the_run(tmp_path: Path) -> None:
    """The exported job, run by real fio, gives the IOPS iomimic's own run of the same workload
    on the same device gives (within 20 %), and its latency (within 1.5x; medians of interleaved
    runs).
    The device is a loop device over RAM, whose service time holds still between runs (a
    virtual disk's wanders by more than the bar). Before the fix, libaio at depth 32 showed
    64 ms for requests that took 150 µs.

    Requests are 4 MiB, so the device's own work (about a millisecond of copying) is what is
    timed. With 4 KiB requests the figure is mostly how long an idle CPU takes to wake for the
    loop device's completion, and that is a property of the machine and of whether the tool
    keeps a CPU busy, not of the job: CI machines showed fio 53-80 µs against iomimic 18-24 µs
    for the same 4 KiB requests, where this machine showed about 40 µs for both. Latency is
    compared with both sides issuing back to back (fio's ``replay_no_stall``, iomimic's
    ``no_stall``) for the same reason; the depth, engine and direct flag the export sets are
    what this compares, and they show back to back as well as timed."""
    import iomimic

    rng = np.random.default_rng(7)
    n, rate, mib, size = 300, 120.0, 128, 4 << 20
    trace = Trace(
        ts_ns=np.cumsum(rng.exponential(1e9 / rate, n)).astype(np.uint64),
        offset=rng.integers(0, (mib << 20) // size, n) * size,
        size=np.full(n, size),
        op=(rng.random(n) < 0.3).astype(np.uint8),
        volumes=["vol"],
    )
    image = Path("/dev/shm") / f"iomimic-test-{os.getpid()}.img"
    image.write_bytes(rng.integers(0, 256, mib << 20, dtype=np.uint8).tobytes())  # data, not holes
    try:
        dev = subprocess.run(
            ["losetup", "-f", "--show", str(image)], capture_output=True, text=True, check=True
        ).stdout.strip()
    except subprocess.CalledProcessError as e:
        image.unlink()
        pytest.skip(f"cannot attach a loop device here: {e.stderr.strip()}")
    try:
        r = export_fio(
            trace, tmp_path / "job.fio", tmp_path / "job.iolog", map=f"vol={dev}", allow_device=True
        )
        assert r["direct"] is True
        job = (tmp_path / "job.fio").read_text()
        assert "ioengine=psync" in job and "iodepth=1" in job and "direct=1" in job
        (tmp_path / "back-to-back.fio").write_text(
            job.replace("[global]\n", "[global]\nreplay_no_stall=1\n", 1)
        )
        weights = np.bincount(trace.op, minlength=2)

        def fio(job_file: str) -> tuple[float, float]:
            """fio's median completion latency (µs, reads and writes weighed by count) and IOPS."""
            out = subprocess.run(
                ["fio", "--output-format=json", job_file],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert out.returncode == 0, out.stderr + out.stdout[-2000:]
            j = json.loads(out.stdout[out.stdout.index("{") :])["jobs"][0]
            assert [j["read"]["total_ios"], j["write"]["total_ios"]] == weights.tolist()
            # medians, not means: a virtual machine's rare stalls of a millisecond move a mean
            # of tens of microseconds by more than the bar, on both sides alike
            p50 = [j[op]["clat_ns"]["percentile"]["50.000000"] for op in ("read", "write")]
            return float(np.average(p50, weights=weights)) / 1e3, j["read"]["iops"] + j["write"]["iops"]

        def ours(no_stall: bool) -> tuple[float, float]:
            # one worker, as the job has one request in flight: sixteen idle workers yielding
            # on two CPUs delay the loop device's completion thread by ~10 µs of ~40
            _, f = iomimic.run(
                trace,
                [dev],
                engine="psync",
                workers=1,
                direct=True,
                allow_device=True,
                no_stall=no_stall,
                keep_requests=False,
            )
            p50 = [f["by_op"][op]["latency_us"]["p50"] for op in ("read", "write")]
            return float(np.average(p50, weights=weights)), f["iops"]

        runs: dict[str, list[float]] = {k: [] for k in ("fio_iops", "our_iops", "fio_lat", "our_lat")}
        for i in range(6):  # the first round warms everything up and is not counted
            timed_fio, timed_ours = fio("job.fio"), ours(False)
            fast_fio, fast_ours = fio("back-to-back.fio"), ours(True)
            if i:
                runs["fio_iops"].append(timed_fio[1])
                runs["our_iops"].append(timed_ours[1])
                runs["fio_lat"].append(fast_fio[0])
                runs["our_lat"].append(fast_ours[0])
        # the median of each round's ratio: a round's two runs are seconds apart, so a spell
        # of a busier machine weighs on both sides of a ratio alike. IOPS follow the schedule
        # (within 20 %); latency, within 1.5x: what this guards against is a job timed unlike
        # the run (the bug was 400x), and how close the two tools come is the realio
        # benchmark's to measure (a loaded CI machine once gave 0.79 here)
        for what, bar in (("iops", 1.2), ("lat", 1.5)):
            ratio = float(np.median(np.divide(runs[f"fio_{what}"], runs[f"our_{what}"])))
            assert 1 / bar < ratio < bar, (what, ratio, runs)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
        image.unlink()
