"""The hierarchical state-diagram model: train, load, save, generate, mix."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from iomimic import _core
from iomimic.errors import InputError
from iomimic.trace import Trace
from iomimic.units import parse_duration_ns, parse_seed

#: How a model file's name ends: JSON, or JSON compressed with gzip (written so by
#: :meth:`Model.save`; :meth:`Model.load` reads either whatever the name).
MODEL_SUFFIXES: tuple[str, ...] = (".json", ".json.gz")

#: Requests per slice of a long generation, by default (:meth:`Model.generate_parts`).
SLICE_REQUESTS: int = _core.SLICE_REQUESTS


class Model:
    """A trained (or preset) workload model (``docs/model.md``), held parsed and validated by
    the core.

    >>> offsets = [i * 4096 for i in range(400)]
    >>> t = Trace(ts_ns=range(0, 4000, 10), offset=offsets, size=[4096] * 400, op=[0] * 400)
    >>> m = train(t, levels=1, states=4)
    >>> m.levels, m.states, len(m.threads)
    (1, 4, 1)
    >>> len(m.generate(requests=1000, seed=7))
    1000
    """

    def __init__(self, data: dict[str, Any]) -> None:
        # validated (and normalised) by the core; a bad field raises InputError naming it
        self._m = _core.Model.from_json(json.dumps(data))
        self._data: dict[str, Any] | None = None

    @classmethod
    def _wrap(cls, core_model: _core.Model) -> Model:
        m = cls.__new__(cls)
        m._m = core_model
        m._data = None
        return m

    @property
    def data(self) -> dict[str, Any]:
        """The model as plain data (the JSON's structure): a snapshot; changing it does not
        change the model (build a new one with ``Model(data)``)."""
        if self._data is None:
            self._data = self._m.data
        return self._data

    @property
    def name(self) -> str:
        return self._m.name

    @property
    def levels(self) -> int:
        """Depth of the state hierarchy."""
        return self.data["levels"]

    @property
    def states(self) -> int:
        """States per level."""
        return self.data["states"]

    @property
    def threads(self) -> list[dict[str, Any]]:
        """One entry per thread model: name, stream, weight, chain, ..."""
        return self.data["threads"]

    @property
    def volumes(self) -> list[dict[str, Any]]:
        """The volumes the model addresses: name and span in bytes."""
        return self.data["volumes"]

    @property
    def selection(self) -> dict[str, Any] | None:
        """How levels and states were chosen (or, for a preset, its assumptions)."""
        return self.data["selection"]

    @classmethod
    def load(cls, path: str | os.PathLike) -> Model:
        """Reads a model file (plain or gzip-compressed JSON); a malformed one raises InputError
        naming the file and the field."""
        path = Path(path)
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError, zlib.error) as e:
                raise InputError(f"{path}: a gzip-compressed file that does not decompress: {e}") from None
        elif data[:4] == b"\x28\xb5\x2f\xfd":
            raise InputError(
                f"{path}: compressed with zstd: a model file is JSON, plain or gzip-compressed (.gz)"
            )
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise InputError(f"{path}: not a model file (not text)") from None
        if not text.lstrip().startswith("{"):
            raise InputError(
                f"{path}: not a model file: a model is the JSON `iomimic model train` or `model preset` "
                "writes (a trace is read by `info`, `characterize`, `model train`, ...)"
            )
        try:
            return cls._wrap(_core.Model.from_json(text))
        except InputError as e:
            raise InputError(f"{path}: {e}") from None

    def save(self, path: str | os.PathLike) -> None:
        """Writes the model's JSON, compressed with gzip when the name ends in ``.gz`` (about a
        sixth of the size: ``docs/model.md``). Name it ``.json.gz``: the commands that take a
        trace or a model (``export fio``, ``study``) tell a model by :data:`MODEL_SUFFIXES`."""
        from iomimic.io import atomic_output

        text = self.to_json()
        with atomic_output(path) as tmp:
            if os.fspath(path).lower().endswith(".gz"):
                tmp.write_bytes(gzip.compress(text.encode(), mtime=0))
            else:
                tmp.write_text(text)

    def to_json(self) -> str:
        """The model's JSON."""
        return self._m.to_json()

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
        slice_requests: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Trace:
        """A synthetic trace: ``requests`` of them, or as many as fit ``duration`` (default the
        training trace's count). ``intensity`` multiplies the request rate and nothing else;
        ``reuse=False`` turns the temporal-locality extension off. A trace longer than
        ``slice_requests`` (default 8 Mi) is made as consecutive slices of time, each on its
        own (:meth:`generate_parts` gives them one by one). ``progress(done, total)`` is
        called about ten times a second; Ctrl-C stops the work (KeyboardInterrupt)."""
        args = self._generate_args(requests, duration, intensity, seed, reuse, slice_requests)
        return self._generated(self._m.generate(args, progress=progress))

    def generate_parts(
        self,
        requests: int | None = None,
        *,
        duration: str | float | None = None,
        intensity: float = 1.0,
        seed: int = 1,
        reuse: bool = True,
        slice_requests: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        ray: bool | str | None = None,
    ) -> Iterator[Trace]:
        """The trace :meth:`generate` gives with the same arguments, as its slices of time in
        order, each made when the iteration reaches it: memory holds a slice or two (about
        70 bytes a request of ``slice_requests``) however long the trace. Joined, the parts are
        ``generate``'s trace, field by field. ``ray`` (``True`` or an address) makes the slices
        as Ray tasks, a few ahead of the one given out (``docs/ray.md``).

        >>> m = train(Trace(ts_ns=range(0, 4000, 10), offset=[0] * 400, size=[4096] * 400,
        ...                 op=[0] * 400), levels=1, states=2)
        >>> parts = list(m.generate_parts(2500, slice_requests=1000))
        >>> len(parts), sum(len(p) for p in parts)
        (3, 2500)
        """
        args = self._generate_args(requests, duration, intensity, seed, reuse, slice_requests)
        plan = self._m.generation(args)  # planned here, so a bad argument fails at the call
        if ray is not None and ray is not False:
            from iomimic import cluster

            return cluster.generate_slices(cluster.connect(ray), self, args, len(plan), progress)
        return self._slices(plan, progress)

    def _slices(self, plan: _core.Generation, progress: Callable[[int, int], None] | None) -> Iterator[Trace]:
        """The slices of ``plan``, made one by one, each shifted as the first."""
        total = 2 * plan.requests
        start, done = None, 0
        for s in range(len(plan)):
            step = None if progress is None else lambda d, _t, base=done: progress(base + d, total)
            d = plan.slice(s, start_ns=start, progress=step)
            if not len(d["ts_ns"]):
                break  # past the duration asked for: so is every later slice
            start = d.pop("start_ns")
            done += 2 * len(d["ts_ns"])
            yield self._generated(d)
        if progress is not None:
            progress(total, total)

    def _generated(self, columns: dict[str, Any]) -> Trace:
        """A generated trace (or slice of one) from the core's columns."""
        t = Trace._from_reader(columns)
        t.report = {"format": "generated", "path": f"model {self.name}"}
        return t

    @staticmethod
    def _generate_args(requests, duration, intensity, seed, reuse, slice_requests) -> dict[str, Any]:
        """The core's generation options from the Python call's, checked."""
        if requests is not None and requests <= 0:
            raise InputError(f"`requests` must be positive, found {requests}")
        if slice_requests is not None and slice_requests <= 0:
            raise InputError(f"`slice_requests` must be positive, found {slice_requests}")
        return dict(
            requests=requests,
            duration_ns=None if duration is None else parse_duration_ns(duration),
            intensity=float(intensity),
            seed=parse_seed(seed),
            reuse=reuse,
            slice=slice_requests,
        )


def chain_edges(chain: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Each state's out-edges (``to``, ``p``, ``count``, ``stats``) of a chain of ``Model.data``,
    which lists only the states with edges, as sparse rows (``docs/model.md``)."""
    edges: list[list[dict[str, Any]]] = [[] for _ in chain["states"]]
    for row in chain["transitions"]:
        counts = row.get("count") or [0] * len(row["to"])
        p = row.get("p") or [c / sum(counts) for c in counts]
        stats = row.get("stats") or {}
        edges[row["from"]] = [
            {"to": to, "p": p[i], "count": counts[i], "stats": stats.get(str(to))}
            for i, to in enumerate(row["to"])
        ]
    return edges


def is_model_path(path: str | os.PathLike) -> bool:
    """Whether a file's name says it holds a model (:data:`MODEL_SUFFIXES`)."""
    return os.fspath(path).lower().endswith(MODEL_SUFFIXES)


def chain_initial(chain: dict[str, Any]) -> list[float]:
    """Each state's entry probability of a chain of ``Model.data``, which writes them as
    ``{"at": [...], "p": [...]}`` when most are 0, and as counts where training counted them
    (``docs/model.md``)."""
    initial = chain["initial"]
    if isinstance(initial, list):
        return shares(initial)
    out = [0.0] * len(chain["states"])
    for i, p in zip(initial["at"], shares(initial["p"]), strict=True):
        out[i] = p
    return out


def shares(values: list[float] | list[int]) -> list[float]:
    """A list of shares of ``Model.data`` as fractions: a file writes those training counted as
    the counts (all integers), which are divided by their sum (``docs/model.md``)."""
    if values and all(isinstance(v, int) for v in values):
        total = sum(values)
        return [v / total if total else 0.0 for v in values]
    return [float(v) for v in values]


def stats_shares(stats: dict[str, Any]) -> dict[str, Any]:
    """Stats of ``Model.data`` (an edge's, a volume's, a thread's) with shares: a file writes
    those training counted as counts out of ``n`` — ops of all requests, placements of those
    with an address (all but flushes), each op's placements (``by_op``) of that op's requests
    — and sizes as counts (``docs/model.md``)."""
    placements = ("sequential", "reuse", "continuation", "near")

    def sized(s: dict[str, Any]) -> dict[str, Any]:
        return {**s, "sizes": {**s["sizes"], "p": shares(s["sizes"]["p"])}}

    if "n" not in stats:
        out = sized(stats)
        if "by_op" in stats:
            out["by_op"] = [sized(o) for o in stats["by_op"]]
        return out
    n, ops = stats["n"], stats["ops"]
    out = {k: v for k, v in stats.items() if k != "n"}
    out["ops"] = [k / max(n, 1) for k in ops]
    out.update({k: stats.get(k, 0) / max(n - ops[3], 1) for k in placements})
    out["by_op"] = [
        sized({**o, **{k: o.get(k, 0) / max(total, 1) for k in placements}})
        for o, total in zip(stats.get("by_op", []), ops, strict=False)
    ]
    if not out["by_op"]:
        del out["by_op"]
    return sized(out)


def chain_states(chain: dict[str, Any], parent: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The states of a chain of ``Model.data`` with their ranges (``volume``, ``start``,
    ``end``): a child chain's states leave theirs out when they split their ``parent``
    (ranged, as this returns it) into equal ranges, as training makes them."""
    states = chain["states"]
    if not states or "volume" in states[0]:
        return states
    if parent is None:
        raise ValueError("the states of a child chain need their parent state for their ranges")
    width, k = parent["end"] - parent["start"], len(states)
    if k > max(width, 1):
        raise ValueError(f"{k} child states cannot split a range of {width} bytes equally")
    return [
        {
            **s,
            "volume": parent["volume"],
            "start": parent["start"] + width * j // k,
            "end": parent["start"] + width * (j + 1) // k,
        }
        for j, s in enumerate(states)
    ]


def train(
    trace: Trace,
    *,
    levels: int | None = None,
    states: int | None = None,
    by: str | None = None,
    reuse: bool = True,
    population: bool | None = None,
    name: str | None = None,
    seed: int = 1,
    select_device: str | None = "hdd-7200",
    select_depth: int = 8,
    progress: Callable[[int, int], None] | None = None,
    ray: bool | str | None = None,
) -> Model:
    """Trains a model of ``trace``.

    ``levels`` and ``states`` (per level) are chosen automatically unless given; ``by``
    ``"stream"`` makes one thread model per stream, ``"none"`` one for the whole trace (default:
    per stream when the trace has 2 to 256 streams, streams that re-use each other's requests as
    one thread); ``reuse=False`` leaves out the
    temporal-locality extension. ``population`` (default: chosen by which makes the closer
    trace of the head of the trace) keeps the trace's population of re-used requests, drawn
    without replacement while generating (``True``), or leaves re-use to recency and
    popularity counted while generating (``False``): ``docs/model.md``, Extensions.
    ``progress(done, total)`` is called about ten times a second with the models built so far
    (one per number of levels tried, then the final one).

    Chosen levels are the deeper of two rules: the TPC paper's (until one more level changes
    the IOPS simulated on ``select_device``, closed loop at ``select_depth``, by under 2 %) and a
    fidelity rule (until one more improves the worst figure ``validate`` scores, in units of
    its target, by under 0.02). ``select_device=None`` applies the fidelity rule alone.
    ``model.data["selection"]`` records both.

    ``ray`` (``True`` or a cluster's address) trains each thread as a Ray task
    (``docs/ray.md``): levels, states, model times and threads are worked out here, the
    threads trained on the cluster and the model put together here; the model is the one a
    local run gives. Needs ``pip install 'iomimic[ray]'``.
    """
    source = trace.report.get("path")
    options = _train_options(by, levels, states, reuse, name, source, seed, select_device, select_depth)
    options["population"] = population
    if ray is None or ray is False:
        return Model._wrap(_core.train_model(*trace._core_args(), options, progress=progress))
    from iomimic import cluster

    engine = cluster.connect(ray)
    plan = _core.train_plan(*trace._core_args(), options, progress=progress)
    return Model._wrap(plan.assemble(cluster.train_threads(engine, trace, plan)))


def train_in_pieces(
    path: str | os.PathLike,
    *,
    levels: int | None = None,
    states: int | None = None,
    by: str | None = None,
    reuse: bool = True,
    population: bool | None = None,
    name: str | None = None,
    seed: int = 1,
    select_device: str | None = "hdd-7200",
    select_depth: int = 8,
    progress: Callable[[int, int], None] | None = None,
    ray: bool | str | None = None,
    **read: Any,
) -> Model:
    """:func:`train` of a trace read a piece at a time, never whole (a trace larger than
    memory): the same model, from three passes over the trace in time order (its outline and
    first requests, on which levels are chosen; its requests per window; the threads).
    Parquet goes a row group at a time; other formats a chunk of parsed rows at a time (each
    file in time order), parsed once more first to learn the names. What training keeps grows
    with the places (volume and start offset) each thread touches, not with its requests
    (``docs/scale.md``). ``read`` holds :func:`iomimic.read_trace`'s options;
    ``progress(done, total)`` counts the passes' rows or bytes (here, not the tasks').

    ``ray`` (``True`` or a cluster's address): after the first two passes here, the threads are
    trained by Ray tasks, a share of them each (balanced by requests), each task reading the
    trace once in pieces where it runs (shared storage, or Parquet at a URL), while this
    process makes the third pass for what the model needs besides and puts it together; the
    model is the local one."""
    from iomimic.io import _location
    from iomimic.pieces import time_ordered_passes
    from iomimic.remote import for_tasks, origin

    source = origin(path) or str(_location(path))  # spelt as the whole read's report spells it
    options = _train_options(by, levels, states, reuse, name, source, seed, select_device, select_depth)
    options["population"] = population
    passes = _core.TrainStream.PASSES
    engine = None
    if ray is not None and ray is not False:
        from iomimic import cluster

        engine = cluster.connect(ray)
    volumes, files, pieces = time_ordered_passes(path, passes, progress=progress, **read)
    run = _core.TrainStream(volumes, files, options, threads=None if engine is None else [])
    tasks = None
    for k in range(passes):
        for piece in pieces(k):
            run.feed(*piece)
        model = run.end_pass()
        if engine is not None and k == 1:  # the tasks take up at the third pass
            tasks = cluster.train_threads_in_pieces(engine, for_tasks(path), options, read, run)
    if engine is not None:
        model = run.assemble([part for done in cluster.gather(engine, tasks) for part in done])
    return Model._wrap(model)


def _train_options(
    by: str | None,
    levels: int | None,
    states: int | None,
    reuse: bool,
    name: str | None,
    source: str | None,
    seed: int,
    select_device: str | None,
    select_depth: int,
) -> dict[str, Any]:
    """The core's training options."""
    if by not in (None, "stream", "none"):
        raise InputError(f"`by` must be stream or none, found {by!r}")
    return dict(
        levels=levels,
        states=states,
        by_stream=None if by is None else by == "stream",
        reuse=reuse,
        name=name or (Path(source).name if source else "model"),
        source=source,
        seed=parse_seed(seed),
        simulate_on=None if select_device is None else (select_device, select_depth),
    )


def mix(parts: list[tuple[Model, float]], name: str = "mix") -> Model:
    """A workload assembled from thread models: each part's threads keep their relative
    weights, scaled by the part's share (the seed reassembles Messenger and TPC this way).
    Volumes with the same name are shared; streams are renumbered so each thread keeps its own.
    """
    return Model._wrap(_core.mix_models([(m._m, float(w)) for m, w in parts], name))
