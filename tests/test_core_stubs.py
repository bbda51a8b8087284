"""`python/iomimic/_core.pyi` against the compiled module: the same names, the same parameters
and defaults, and results with the keys the stubs declare."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import iomimic
from iomimic import _core

STUBS = Path(iomimic.__file__).with_name("_core.pyi")


def _stub_module() -> ast.Module:
    return ast.parse(STUBS.read_text())


def _is_type_only(node: ast.ClassDef) -> bool:
    """TypedDicts and Protocols describe data; they have no runtime counterpart."""
    bases = {ast.unparse(b) for b in node.bases}
    return bool(bases & {"TypedDict", "Protocol"}) or any(
        isinstance(b, ast.Name) and b.id in _TYPED_DICTS for b in node.bases
    )


_TYPED_DICTS = {
    n.name
    for n in ast.parse(STUBS.read_text()).body
    if isinstance(n, ast.ClassDef) and "TypedDict" in {ast.unparse(b) for b in n.bases}
}


def _params(fn: ast.FunctionDef) -> list[tuple[str, str | None]]:
    """(name, default source) of each parameter but self."""
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    defaults: list[ast.expr | None] = [None] * (
        len(fn.args.posonlyargs + fn.args.args) - len(fn.args.defaults)
    )
    defaults += fn.args.defaults + fn.args.kw_defaults
    return [(a.arg, None if d is None else ast.unparse(d)) for a, d in zip(args, defaults) if a.arg != "self"]


def _runtime_params(obj) -> list[tuple[str, str | None]]:
    sig = inspect.signature(obj)
    return [
        (p.name, None if p.default is inspect.Parameter.empty else repr(p.default))
        for p in sig.parameters.values()
        if p.name != "self"
    ]


def test_every_name_is_declared_with_its_parameters() -> None:
    stubs = _stub_module()
    declared: dict[str, ast.AST] = {}
    for node in stubs.body:
        if isinstance(node, ast.FunctionDef) or (isinstance(node, ast.ClassDef) and not _is_type_only(node)):
            declared[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared[node.target.id] = node
    runtime = {n for n in dir(_core) if not n.startswith("__")}
    assert runtime == set(declared), runtime ^ set(declared)
    for name, node in declared.items():
        obj = getattr(_core, name)
        if isinstance(node, ast.FunctionDef):
            assert _runtime_params(obj) == _params(node), name
        elif isinstance(node, ast.ClassDef) and not issubclass(obj, BaseException):
            for item in node.body:
                if not isinstance(item, ast.FunctionDef):
                    continue
                decorators = {ast.unparse(d) for d in item.decorator_list}
                if "property" in decorators:
                    assert hasattr(obj, item.name), (name, item.name)
                    continue
                target = obj if item.name == "__init__" else getattr(obj, item.name)
                assert _runtime_params(target) == _params(item), (name, item.name)


def _keys(name: str) -> tuple[set[str], bool]:
    node = next(n for n in _stub_module().body if isinstance(n, ast.ClassDef) and n.name == name)
    keys = {item.target.id for item in node.body if isinstance(item, ast.AnnAssign)}
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in _TYPED_DICTS:
            keys |= _keys(base.id)[0]
    total = not any(k.arg == "total" and ast.unparse(k.value) == "False" for k in node.keywords)
    return keys, total


def _check(name: str, value: dict) -> None:
    keys, total = _keys(name)
    if total:
        assert set(value) == keys, (name, set(value) ^ keys)
    else:
        assert set(value) <= keys, (name, set(value) - keys)


@pytest.fixture(scope="module")
def trace() -> iomimic.Trace:
    n = 2000
    rng = np.random.default_rng(1)
    return iomimic.Trace(
        ts_ns=np.arange(n) * 100_000,
        offset=rng.integers(0, 1000, n) * 4096,
        size=np.full(n, 4096),
        op=rng.integers(0, 2, n),
        stream=rng.integers(0, 2, n),
    )


def test_results_have_the_declared_keys(trace: iomimic.Trace, tmp_path: Path) -> None:
    args = trace._core_args()
    _check("SummaryDict", _core.summarize(*args))
    _check("ProfileDict", _core.characterize(*args))
    v = _core.validate_traces(args[0], args[1:], args[0], args[1:], baseline="locality-free")
    _check("ValidationDict", v)
    plots = _core.plot_data(*args, bin_ns=10**6)
    _check("PlotDataDict", plots)
    for key, name in (("over_time", "OverTimeDict"), ("scatter", "ScatterDict"), ("heat", "HeatDict")):
        _check(name, plots[key])
    _check("SizeBarDict", plots["sizes"][0])
    _check("GapBinDict", plots["interarrival"][0])
    for row in v["rows"]:
        _check("ValidationRowDict", row)
    sim = _core.simulate(*args, dict(_core.device_presets())["hdd-7200"])
    _check("SimResult", sim)
    _check("SimFiguresDict", sim["figures"])
    hdd = dict(_core.device_presets())["hdd-7200"]
    mapped = _core.simulate_mapped(*args, [(hdd, [0])])
    _check("MappedSimResult", mapped)
    _check("MappedFiguresDict", mapped["figures"])
    _check("PlacedDict", mapped["figures"]["placements"][0])
    _check("PresetDict", _core.preset_info("tpcc"))
    _check("TraceColumns", _core.preset_model("tpcc").generate({"requests": 100, "seed": 1}))
    _check("SliceColumns", _core.preset_model("tpcc").generation({"requests": 100, "seed": 1}).slice(0))
    parts = _core.SummaryParts()
    assert parts.add(*args)
    _check("SummaryDict", parts.finish(args[1]))
    path = tmp_path / "t.csv"
    iomimic.write_trace(trace, path)
    read = _core.TraceReader(str(path)).finish()
    _check("ReadTrace", read)
    _check("ReadReportDict", read["report"])
