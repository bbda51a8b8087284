"""Real I/O against fio on the same file, engine and depth (fio from the system package,
`apt-get install fio`, done here when missing and root; the run notes its version).

1. Peak 4 KiB random O_DIRECT reads: psync at depth 1; iomimic's psync pool at depth 32 against
   fio's psync with 32 jobs; io_uring at depth 32 on both sides; and the generator with no I/O
   (null engines). IOPS, the ratio iomimic / fio (bar: >= 0.95, null >= 1.0), and CPU time per
   I/O on both sides (bar: iomimic's <= fio's). Runs come in fio/iomimic pairs, the order
   alternating; the ratio is the median of the pairs' ratios, so a drifting virtual disk
   favours neither.
2. The four simple tests of Delimitrou et al., IISWC 2011 ("Comparison with IOMeter"): paced
   sequential and random reads and writes, IOPS within
   3.4 % of fio's (fio paced by rate_iops, psync, depth 1).
3. `--no-stall` replay of a 3,000,000-request trace with the null engine: requests/s against
   fio's replay of the same trace as an iolog, and memory per request (peak RSS growth from
   the 3,000,000-request replay to a 6,000,000 one, both sides run as their command-line
   tools; both sizes read in the same 1 M-request pieces, so fixed costs cancel).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
from bench_common import OUT, bench_args

from iomimic import Trace
from iomimic.fio_export import write_iolog
from iomimic.io import write_trace
from iomimic.pattern import pattern_trace
from iomimic.realio import run

FILE_BYTES = 1 << 30
SIMPLE_TESTS = [
    # label in Delimitrou et al. (IISWC 2011), iomimic pattern, fio rw, block size, requests per second
    ("4K Int. Time 10ms Rd Seq", "read seq 4k interarrival=10ms", "read", "4k", 100),
    ("16K Int. Time 1ms Rd Seq", "read seq 16k interarrival=1ms", "read", "16k", 1000),
    ("64K Int. Time 10ms Wr Seq", "write seq 64k interarrival=10ms", "write", "64k", 100),
    ("64K Int. Time 10ms Rd Rnd", "read rand 64k interarrival=10ms", "randread", "64k", 100),
]
# peak RSS of a child command, printed by a tiny wrapper (children's ru_maxrss, in KiB)
RSS_WRAPPER = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def ensure_fio() -> str | None:
    if shutil.which("fio") is None and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "fio"], capture_output=True, check=False)
    if shutil.which("fio") is None:
        return None
    return subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()


def fio_job(args: list[str]) -> dict:
    out = subprocess.run(
        ["fio", "--name=bench", "--output-format=json", "--thread", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out[out.index("{") :])["jobs"][0]


def fio_ios(job: dict) -> int:
    return job["read"]["total_ios"] + job["write"]["total_ios"]


def fio_peak(target: str, engine: str, depth: int, jobs: int, seconds: int) -> tuple[float, float]:
    """(IOPS, CPU µs per I/O) of fio's 4 KiB random reads."""
    args = [f"--filename={target}", f"--size={FILE_BYTES}", "--rw=randread", "--bs=4k",
            f"--ioengine={engine}", f"--iodepth={depth}", f"--numjobs={jobs}", "--group_reporting",
            "--time_based", f"--runtime={seconds}"]  # fmt: skip
    if engine != "null":
        args.append("--direct=1")
    job = fio_job(args)
    runtime_s = job["job_runtime"] / 1000  # summed over jobs with group_reporting
    cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100 * runtime_s
    return job["read"]["iops"], 1e6 * cpu_s / max(fio_ios(job), 1)


def iomimic_peak(target: str, engine: str, depth: int, n: int) -> tuple[float, float]:
    rng = np.random.default_rng(1)
    t = Trace(
        ts_ns=np.zeros(n, dtype=np.int64),
        offset=rng.integers(0, FILE_BYTES // 4096, n) * 4096,
        size=np.full(n, 4096),
        op=np.zeros(n),
    )
    f = run(t, [target], iodepth=depth, direct=engine != "null", engine=engine, keep_requests=False)[1]
    return f["iops"], f["cpu_us_per_io"]


def peak_table(target: str, args) -> None:
    pairs = max(5, args.repeat)
    print(f"\n1. peak, 4 KiB random reads on {target} (1 GiB); {pairs} fio/iomimic pairs, order alternating,")
    print("   medians (the virtual disk moves by +-20 % between runs; a pair sees the same moment)")
    print(
        f"{'work':46s} {'fio IOPS':>10s} {'iomimic':>10s} {'ratio':>6s} {'fio CPU/IO':>11s} {'iomimic':>8s}"
    )
    n = min(args.lines, 400_000)
    rows = [
        ("psync depth 1, O_DIRECT", ("psync", 1, 1), ("psync", 1)),
        ("depth 32, O_DIRECT (fio psync x32 jobs)", ("psync", 1, 32), ("psync", 32)),
        ("io_uring depth 32, O_DIRECT", ("io_uring", 32, 1), ("io_uring", 32)),
        ("null engine, no I/O", ("null", 1, 1), ("null", 1)),
    ]
    for name, (fe, fd, fj), (ie, idepth) in rows:
        fio, ours = [], []
        for k in range(pairs):
            # alternate who goes first
            for side in ("fio", "iomimic") if k % 2 == 0 else ("iomimic", "fio"):
                if side == "fio":
                    fio.append(fio_peak(target, fe, fd, fj, 3))
                else:
                    ours.append(iomimic_peak(target, ie, idepth, n * (10 if ie == "null" else 1)))
        ratio = statistics.median(o[0] / f[0] for o, f in zip(ours, fio, strict=True))
        f_iops, f_cpu = (statistics.median(x) for x in zip(*fio, strict=True))
        o_iops, o_cpu = (statistics.median(x) for x in zip(*ours, strict=True))
        print(f"{name:46s} {f_iops:10,.0f} {o_iops:10,.0f} {ratio:6.2f} {f_cpu:9.2f}us {o_cpu:6.2f}us")


def simple_tests_table(target: str, seconds: int) -> None:
    print(f"\n2. Delimitrou et al.'s simple tests, {seconds} s each, O_DIRECT, psync, one outstanding")
    print(f"{'test':28s} {'fio IOPS':>9s} {'iomimic':>9s} {'diff':>7s}  (paper: IOMeter/DiskSpd 3.4 %)")
    for label, pattern, rw, bs, rate in SIMPLE_TESTS:
        job = fio_job([f"--filename={target}", f"--size={FILE_BYTES}", f"--rw={rw}", f"--bs={bs}",
                       "--ioengine=psync", "--direct=1", f"--rate_iops={rate}", "--time_based",
                       f"--runtime={seconds}"])  # fmt: skip
        fio = fio_ios(job) / (job["job_runtime"] / 1000)
        t = pattern_trace(pattern, rate * seconds + 1, span=FILE_BYTES)
        f = run(t, [target], engine="psync", direct=True, keep_requests=False)[1]
        ours = f["completed"] / f["elapsed_s"]
        print(f"{label:28s} {fio:9.2f} {ours:9.2f} {ours / fio - 1:+7.2%}")


def peak_rss_kib(cmd: list[str]) -> int:
    out = subprocess.run(
        [sys.executable, "-c", RSS_WRAPPER, *cmd], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[-1])


def replay_table(target: str) -> None:
    print("\n3. --no-stall replay with the null engine, as command-line tools")
    rng = np.random.default_rng(1)
    sizes = {}
    for n in (3_000_000, 6_000_000):
        t = Trace(
            ts_ns=np.arange(n) * 1000,
            offset=rng.integers(0, FILE_BYTES // 4096, n) * 4096,
            size=np.full(n, 4096),
            op=(rng.random(n) < 0.3).astype(np.uint8),
        )
        write_trace(t, OUT / f"replay-{n}.parquet")
        write_iolog(t, OUT / f"replay-{n}.iolog", [target])
        sizes[n] = t
    fio_cmd = [
        "fio",
        "--name=replay",
        "--ioengine=null",
        "--replay_no_stall=1",
        "--thread",
        "--output-format=json",
    ]
    ours_cmd = [str(Path(sys.executable).parent / "iomimic"), "replay", "--engine", "null", "--no-stall",
                "--target", target, "--json", "-"]  # fmt: skip
    rss = {
        (who, n): peak_rss_kib(cmd + ([f"--read_iolog={OUT / f'replay-{n}.iolog'}"] if who == "fio" else
                                      [str(OUT / f"replay-{n}.parquet")]))
        for n in sizes for who, cmd in (("fio", fio_cmd), ("iomimic", ours_cmd))
    }  # fmt: skip
    job = fio_job(["--ioengine=null", "--replay_no_stall=1", f"--read_iolog={OUT / 'replay-3000000.iolog'}"])
    fio_rate = fio_ios(job) / (job["job_runtime"] / 1000)
    out = subprocess.run(
        [*ours_cmd, str(OUT / "replay-3000000.parquet")], capture_output=True, text=True, check=True
    )
    ours_rate = json.loads(out.stdout)["iops"]
    growth = {
        who: (rss[(who, 6_000_000)] - rss[(who, 3_000_000)]) * 1024 / 3_000_000 for who in ("fio", "iomimic")
    }
    print(f"{'':34s} {'fio':>12s} {'iomimic':>12s} {'ratio':>6s}")
    label = "requests/s (3,000,000 requests)"
    print(f"{label:34s} {fio_rate:12,.0f} {ours_rate:12,.0f} {ours_rate / fio_rate:6.2f}")
    print(f"{'peak RSS, 3,000,000 requests':34s} {rss[('fio', 3_000_000)] / 1024:10,.0f}MB "
          f"{rss[('iomimic', 3_000_000)] / 1024:10,.0f}MB")  # fmt: skip
    print(f"{'memory per request (RSS growth)':34s} {growth['fio']:11.0f}B {growth['iomimic']:11.0f}B")
    print("  (without -o iomimic keeps nothing per request and reads a Parquet trace a row group at a")
    print("   time while it runs, so its memory does not grow with the trace)")


def main() -> None:
    args = bench_args(__doc__)
    version = ensure_fio()
    if version is None:
        print("fio is not installed and could not be installed here; nothing to compare against")
        return
    OUT.mkdir(exist_ok=True)
    target = str(OUT / "realio.dat")
    if not (OUT / "realio.dat").exists():
        run(Trace(ts_ns=[0], offset=[0], size=[4096], op=[0]), [target], size=FILE_BYTES)
    print(f"real I/O against {version}")
    peak_table(target, args)
    simple_tests_table(target, 5)
    replay_table(target)


if __name__ == "__main__":
    main()
