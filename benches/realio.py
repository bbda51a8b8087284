"""Real I/O against fio on the same file, engine and depth: peak 4 KiB random O_DIRECT reads
(psync at depth 1; iomimic's psync pool at depth 32 against fio's psync with 32 jobs; io_uring at
depth 32 on both sides), and the generator with no I/O (iomimic's null engine, fio's null).

fio comes from the system package (`apt-get install fio`, done here when missing and root);
the run notes its version. Prints IOPS and the ratio iomimic / fio."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
from bench_common import OUT, bench_args

from iomimic import Trace
from iomimic.realio import run

FILE_BYTES = 1 << 30


def ensure_fio() -> str | None:
    if shutil.which("fio") is None and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "fio"], capture_output=True, check=False)
    if shutil.which("fio") is None:
        return None
    return subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()


def fio_iops(target: str, engine: str, depth: int, jobs: int, seconds: int) -> float:
    cmd = [
        "fio", "--name=bench", f"--filename={target}", f"--size={FILE_BYTES}", "--rw=randread", "--bs=4k",
        f"--ioengine={engine}", f"--iodepth={depth}", f"--numjobs={jobs}", "--group_reporting",
        "--time_based", f"--runtime={seconds}", "--output-format=json", "--thread",
    ]  # fmt: skip
    if engine != "null":
        cmd.append("--direct=1")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out[out.index("{") :])["jobs"][0]["read"]["iops"]


def iomimic_iops(target: str, engine: str, depth: int, n: int) -> float:
    rng = np.random.default_rng(1)
    t = Trace(
        ts_ns=np.zeros(n, dtype=np.int64),
        offset=rng.integers(0, FILE_BYTES // 4096, n) * 4096,
        size=np.full(n, 4096),
        op=np.zeros(n),
    )
    return run(t, [target], iodepth=depth, direct=engine != "null", engine=engine)[1]["iops"]


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
    print(f"real I/O on {target} (1 GiB), 4 KiB random reads; reference {version}")
    print(f"{'work':46s} {'fio IOPS':>12s} {'iomimic':>12s} {'ratio':>7s}")
    n = min(args.lines, 400_000)
    rows = [
        ("psync depth 1, O_DIRECT", ("psync", 1, 1), ("psync", 1)),
        ("depth 32, O_DIRECT (fio psync x32 jobs)", ("psync", 1, 32), ("psync", 32)),
        ("depth 32, O_DIRECT, psync pool vs fio io_uring", ("io_uring", 32, 1), ("psync", 32)),
        ("io_uring depth 32, O_DIRECT", ("io_uring", 32, 1), ("io_uring", 32)),
        ("null engine, no I/O", ("null", 1, 1), ("null", 1)),
    ]
    for name, (fe, fd, fj), (ie, idepth) in rows:
        fio = max(fio_iops(target, fe, fd, fj, 3) for _ in range(args.repeat))
        ours = max(
            iomimic_iops(target, ie, idepth, n * (10 if ie == "null" else 1)) for _ in range(args.repeat)
        )
        print(f"{name:46s} {fio:12,.0f} {ours:12,.0f} {ours / fio:7.2f}")


if __name__ == "__main__":
    main()
