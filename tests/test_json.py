"""Every command's JSON gives response times in one shape (docs/json.md): an object of
``count``, ``mean`` and the percentiles, in µs, under a key that ends in ``_us``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, run_cli

#: The one latency object's keys.
LATENCY_KEYS = {"count", "mean", "p50", "p90", "p95", "p99", "p999", "max"}


def percentile_objects(node: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every object in ``node`` that holds percentiles, with its path of keys."""
    found = []
    if isinstance(node, dict):
        if "p50" in node or "p99" in node:
            found.append((path, node))
        for k, v in node.items():
            found += percentile_objects(v, (*path, str(k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += percentile_objects(v, (*path, str(i)))
    return found


def all_keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node).union(*(all_keys(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(all_keys(v) for v in node))
    return set()


def check_shapes(doc: Any) -> list[tuple[str, ...]]:
    """Asserts the rule over one command's JSON; returns the paths of its latency objects."""
    latency_paths = []
    for path, obj in percentile_objects(doc):
        if path[-2:] == ("interarrival", "percentiles_us"):
            continue  # gaps between arrivals, not response times: docs/json.md
        assert path[-1].endswith("_us"), path
        assert set(obj) == LATENCY_KEYS, (path, sorted(obj))
        assert obj["count"] > 0 and obj["p50"] <= obj["p99"] <= obj["max"], (path, obj)
        latency_paths.append(path)
    # the shape that was before: a mean beside its percentiles
    assert "mean_latency_us" not in all_keys(doc)
    return latency_paths


def cli_json(tmp_path: Path, name: str, *args: str) -> Any:
    out = tmp_path / f"{name}.json"
    r = run_cli(*args, "--json", str(out))
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def test_every_command_gives_latency_in_one_shape(tmp_path: Path) -> None:
    model, trace, simulated = tmp_path / "m.json", tmp_path / "t.csv", tmp_path / "sim.parquet"
    assert run_cli("model", "preset", "tpcc", "-o", str(model)).returncode == 0
    assert run_cli("generate", str(model), "-n", "3000", "--seed", "3", "-o", str(trace)).returncode == 0
    docs = {
        "simulate": cli_json(
            tmp_path, "sim", "simulate", str(trace), "--device", "ssd-sata", "-o", str(simulated),
        ),
        "characterize": cli_json(tmp_path, "char", "characterize", str(simulated)),
        "run": cli_json(
            tmp_path, "run", "run", "--pattern", "rw 4k rate=2000 mix=70", "-n", "400",
            "--target", str(tmp_path / "target.dat"), "--size", "8M", "--engine", "psync",
        ),
        "replay": cli_json(
            tmp_path, "replay", "replay", str(trace), "--end", "0.2s", "--no-stall", "--engine", "psync",
            "--map", f"data={tmp_path / 'data.dat'},log={tmp_path / 'log.dat'}", "--size", "64M",
        ),
        "info": cli_json(
            tmp_path, "info", "info", str(FIXTURES / "formats" / "sda.blkparse.txt"), "--event", "Q",
        ),
        "validate": cli_json(tmp_path, "validate", "validate", str(simulated), str(simulated)),
    }  # fmt: skip
    found = {name: check_shapes(doc) for name, doc in docs.items()}
    # the places a user reads response times: the whole, each operation, the schedule's lag
    for name, op in (("simulate", "read"), ("characterize", "write"), ("run", "read")):
        assert ("latency_us",) in found[name] and ("by_op", op, "latency_us") in found[name], found[name]
    assert ("lag_us",) in found["run"] and ("latency_us",) in found["replay"]
    assert any(p[-1] == "q2c_us" for p in found["info"]), found["info"]
    # the same requests give the same figures in the simulator's and characterization's objects
    sim, char = docs["simulate"]["latency_us"], docs["characterize"]["latency_us"]
    assert sim["count"] == char["count"] == 3000
    assert abs(sim["mean"] - char["mean"]) <= 1e-3 * sim["mean"] and sim["p99"] == char["p99"]
