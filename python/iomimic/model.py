"""The hierarchical state-diagram model: train, load, save, generate, mix."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

from iomimic import _core
from iomimic.errors import InputError
from iomimic.trace import Trace
from iomimic.units import parse_duration_ns, parse_seed


class Model:
    """A trained (or preset) workload model: a validated JSON document (``docs/model.md``).

    >>> offsets = [i * 4096 for i in range(400)]
    >>> t = Trace(ts_ns=range(0, 4000, 10), offset=offsets, size=[4096] * 400, op=[0] * 400)
    >>> m = train(t, levels=1, states=4)
    >>> m.levels, m.states, len(m.threads)
    (1, 4, 1)
    >>> len(m.generate(requests=1000, seed=7))
    1000
    """

    def __init__(self, data: dict[str, Any]) -> None:
        # validated (and normalised) by the Rust loader; a bad field raises InputError naming it
        self._text: str = _core.check_model(json.dumps(data))
        self._data: dict[str, Any] | None = None

    @property
    def data(self) -> dict[str, Any]:
        """The model as a dict (parsed on first use: a fine-grained model is megabytes of JSON)."""
        if self._data is None:
            self._data = json.loads(self._text)
        return self._data

    @classmethod
    def load(cls, path: str | os.PathLike) -> Model:
        """Reads a model file; a malformed one raises InputError naming the file and the field."""
        path = Path(path)
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            raise InputError(f"{path}: not a model file (not text)") from None
        try:
            return cls._from_text(text)
        except InputError as e:
            raise InputError(f"{path}: {e}") from None

    @classmethod
    def _from_text(cls, text: str, *, checked: bool = False) -> Model:
        m = cls.__new__(cls)
        m._text = text if checked else _core.check_model(text)
        m._data = None
        return m

    def save(self, path: str | os.PathLike) -> None:
        from iomimic.io import atomic_output

        with atomic_output(path) as tmp:
            tmp.write_text(self.to_json())

    def to_json(self) -> str:
        """The model's JSON (changes made through ``data`` included)."""
        if self._data is not None:
            return json.dumps(self._data)
        return self._text

    def _name(self) -> str:
        """The model's name without parsing all of it (serde writes `name` near the start)."""
        if self._data is not None:
            return self._data["name"]
        m = re.search(r'"name":("(?:[^"\\]|\\.)*")', self._text)
        return json.loads(m.group(1)) if m else "model"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        data = self.data
        if name in data:
            return data[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        d = self.data
        return (
            f"<Model {d['name']!r}: {len(d['threads'])} threads, {d['levels']} levels x {d['states']} states,"
            f" {len(d['volumes'])} volumes>"
        )

    def generate(
        self,
        requests: int | None = None,
        *,
        duration: str | float | None = None,
        intensity: float = 1.0,
        seed: int = 1,
        reuse: bool = True,
    ) -> Trace:
        """A synthetic trace: ``requests`` of them, or as many as fit ``duration`` (default the
        training trace's count). ``intensity`` multiplies the request rate and nothing else;
        ``reuse=False`` turns the temporal-locality extension off."""
        if requests is not None and requests <= 0:
            raise InputError(f"-n must be positive, found {requests}")
        seed = parse_seed(seed)
        duration_ns = None if duration is None else parse_duration_ns(duration)
        d = _core.generate(
            self.to_json(),
            requests=requests,
            duration_ns=duration_ns,
            intensity=float(intensity),
            seed=seed,
            reuse=reuse,
        )
        t = Trace._from_reader(d)
        t.report = {"format": "generated", "path": f"model {self._name()}"}
        return t


def train(
    trace: Trace,
    *,
    levels: int | None = None,
    states: int | None = None,
    by: str | None = None,
    reuse: bool = True,
    name: str | None = None,
    seed: int = 1,
) -> Model:
    """Trains a model of ``trace``.

    ``levels`` and ``states`` (per level) are chosen automatically unless given; ``by``
    ``"stream"`` makes one thread model per stream, ``"none"`` one for the whole trace (default:
    per stream when the trace has 2 to 256 streams); ``reuse=False`` leaves out the
    temporal-locality extension.
    """
    if by not in (None, "stream", "none"):
        raise InputError(f"--by must be stream or none, found {by!r}")
    seed = parse_seed(seed)
    source = trace.report.get("path")
    text = _core.train_model(
        *trace._core_args(),
        levels=levels,
        states=states,
        by_stream=None if by is None else by == "stream",
        reuse=reuse,
        name=name or (Path(source).name if source else "model"),
        source=source,
        seed=seed,
    )
    # the Rust trainer validated what it built: no need to check it twice
    return Model._from_text(text, checked=True)


def mix(parts: list[tuple[Model, float]], name: str = "mix") -> Model:
    """A workload assembled from thread models: each part's threads keep their relative
    weights, scaled by the part's share (the seed reassembles Messenger and TPC this way).
    Volumes with the same name are shared; streams are renumbered so each thread keeps its own.
    """
    if not parts:
        raise InputError("model mix needs at least one model")
    total = sum(w for _, w in parts)
    if total <= 0 or any(w < 0 for _, w in parts):
        raise InputError("mix weights must be non-negative and not all zero")
    volumes: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    threads: list[dict[str, Any]] = []
    requests = 0.0
    duration = max(m.data["duration_ns"] for m, _ in parts)
    for m, w in parts:
        remap = []
        for v in m.data["volumes"]:
            if v["name"] not in index:
                index[v["name"]] = len(volumes)
                volumes.append(dict(v))
            i = index[v["name"]]
            volumes[i]["span_bytes"] = max(volumes[i]["span_bytes"], v["span_bytes"])
            remap.append(i)
        for t in m.data["threads"]:
            t = copy.deepcopy(t)
            t["weight"] = t["weight"] * w / total
            t["stream"] = len(threads)
            t["name"] = f"{m.data['name']}: {t['name']}"
            _remap_volumes(t["chain"], remap)
            threads.append(t)
        # the mix runs at the share-weighted average of the parts' request rates
        requests += m.data["requests"] * duration / m.data["duration_ns"] * w / total
    weight_sum = sum(t["weight"] for t in threads)
    for t in threads:
        t["weight"] /= weight_sum
    first = parts[0][0].data
    data = {
        **first,
        "name": name,
        "source": None,
        "volumes": volumes,
        "threads": threads,
        "requests": max(1, round(requests)),
        "duration_ns": duration,
        "selection": None,
        "levels": max(m.data["levels"] for m, _ in parts),
    }
    if any(m.data["rate"] != first["rate"] for m, _ in parts):
        data["rate"] = {"window_ns": duration, "shares": [1.0]}  # flat: the parts' profiles differ
        for t in threads:
            t["activity"] = None  # kept over the parts' windows, which this rate no longer has
    return Model(data)


def _remap_volumes(chain: dict[str, Any], remap: list[int]) -> None:
    """Renumbers volumes, then restores the (volume, start) order of states, edges following."""
    for s in chain["states"]:
        s["volume"] = remap[s["volume"]]
        if s.get("children"):
            _remap_volumes(s["children"], remap)
    order = sorted(
        range(len(chain["states"])), key=lambda i: (chain["states"][i]["volume"], chain["states"][i]["start"])
    )
    new_index = {old: new for new, old in enumerate(order)}
    chain["states"] = [chain["states"][i] for i in order]
    chain["initial"] = [chain["initial"][i] for i in order]
    chain["transitions"] = [
        sorted(({**e, "to": new_index[e["to"]]} for e in chain["transitions"][i]), key=lambda e: e["to"])
        for i in order
    ]
