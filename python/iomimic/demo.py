"""`iomimic demo`: the whole available pipeline on the built-in example trace.

For now the pipeline is read → summarise → convert to Parquet → read back and compare; later
stages join it as they land.
"""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path

from iomimic.io import read_trace, write_trace

EXAMPLE = "example-msr.csv.gz"


def example_path() -> Path:
    """The built-in example: 5,000 synthetic requests in MSR Cambridge format, gzip-compressed."""
    return Path(str(resources.files("iomimic") / "data" / EXAMPLE))


def run_demo() -> int:
    from iomimic.cli import main

    path = example_path()
    print(f"iomimic demo: the built-in example trace {path.name}\n")
    code = main(["info", str(path)])
    if code:
        return code
    trace = read_trace(path)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("example.parquet", "example.csv"):
            out = Path(tmp) / name
            write_trace(trace, out)
            same = read_trace(out) == trace
            print(
                f"round trip through {out.suffix[1:]:8} {out.stat().st_size:>9,} bytes: "
                + ("identical" if same else "DIFFERENT")
            )
            if not same:
                return 1
    return 0
