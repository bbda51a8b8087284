"""The Trace: block requests as numpy columns, in issue-time order, with a volume name table."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from iomimic import _core
from iomimic.errors import InputError

#: ``latency_ns`` value of a request whose response time is unknown (null in Parquet/polars).
LATENCY_UNKNOWN = _core.LATENCY_UNKNOWN
#: ``status`` of a request that completed; any other value is the errno it failed with.
STATUS_OK = _core.STATUS_OK

#: Column name → numpy dtype, required columns first.
DTYPES: dict[str, type] = {
    "ts_ns": np.uint64,
    "offset": np.uint64,
    "size": np.uint32,
    "op": np.uint8,
    "volume": np.uint32,
    "stream": np.uint32,
    "latency_ns": np.uint64,
    "file": np.uint32,
    "status": np.uint8,
}
REQUIRED = ("ts_ns", "offset", "size", "op", "volume", "stream")
OPTIONAL = ("latency_ns", "file", "status")
OP_NAMES = ("read", "write", "trim", "flush")


class Op(enum.IntEnum):
    """The ``op`` column's codes by name: ``trace.op == Op.WRITE`` picks the writes."""

    READ = 0
    WRITE = 1
    TRIM = 2
    FLUSH = 3


def _column(name: str, values: Any) -> np.ndarray:
    """Converts ``values`` to the column's dtype, refusing values the dtype cannot hold."""
    dtype = np.dtype(DTYPES[name])
    if isinstance(values, np.ndarray):
        arr = values
    else:
        # Plain Python ints: numpy would turn a list mixing huge and small ints into float64.
        try:
            arr = np.asarray(values, dtype=dtype)
        except (OverflowError, ValueError, TypeError):
            arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise InputError(f"column {name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype == dtype:
        return np.ascontiguousarray(arr)
    if arr.size:
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.floor(arr))):
            raise InputError(f"column {name} must hold whole numbers")
        if arr.dtype.kind not in "iufO":
            raise InputError(f"column {name} must be numeric, got {arr.dtype}")
        try:
            lo, hi = arr.min(), arr.max()
        except TypeError:
            raise InputError(f"column {name} must be numeric") from None
        if lo < 0:
            raise InputError(f"column {name} has a negative value ({lo})")
        if hi > np.iinfo(dtype).max:
            raise InputError(f"column {name} has a value too large for {dtype} ({hi})")
    return np.ascontiguousarray(arr.astype(dtype))


class Trace:
    """Block I/O requests as columns.

    Columns (numpy arrays of equal length): ``ts_ns`` (issue time, ns from the first request),
    ``offset`` and ``size`` (bytes), ``op`` (0 read, 1 write, 2 trim, 3 flush), ``volume`` (id
    into :attr:`volumes`), ``stream`` (thread/process id, else 0), and optionally ``latency_ns``,
    ``file`` (id into :attr:`files`) and ``status`` (0 completed, else the errno it failed with,
    as real runs and simulations with faults record).

    Built from arrays, a Trace is normalised like a file read: rows are stably sorted by time
    and times are shifted so the first request is at 0.

    >>> t = Trace(ts_ns=[30, 10], offset=[4096, 0], size=[4096, 512], op=[1, 0])
    >>> len(t), t.ts_ns.tolist(), t.op.tolist(), t.volumes
    (2, [0, 20], [0, 1], ['0'])
    """

    def __init__(
        self,
        ts_ns: Any,
        offset: Any,
        size: Any,
        op: Any,
        volume: Any = None,
        stream: Any = None,
        *,
        latency_ns: Any = None,
        file: Any = None,
        status: Any = None,
        volumes: Sequence[str] | None = None,
        files: Sequence[str] | None = None,
        report: Mapping[str, Any] | None = None,
        stream_names: Mapping[int, str] | None = None,
    ) -> None:
        n = len(ts_ns)
        cols = {"ts_ns": ts_ns, "offset": offset, "size": size, "op": op}
        cols["volume"] = np.zeros(n, np.uint32) if volume is None else volume
        cols["stream"] = np.zeros(n, np.uint32) if stream is None else stream
        if latency_ns is not None:
            cols["latency_ns"] = latency_ns
        if file is not None:
            cols["file"] = file
        if status is not None:
            cols["status"] = status
        arrays = {name: _column(name, values) for name, values in cols.items()}
        if volumes is None:
            top = int(arrays["volume"].max()) + 1 if n else 1
            volumes = [str(i) for i in range(top)]
        if files is None:
            files = [str(i) for i in range(int(arrays["file"].max()) + 1)] if "file" in arrays and n else []
        ts = arrays["ts_ns"]
        if n > 1 and bool((ts[1:] < ts[:-1]).any()):
            order = np.argsort(ts, kind="stable")
            arrays = {k: np.ascontiguousarray(v[order]) for k, v in arrays.items()}
        report = dict(report or {})
        if n and arrays["ts_ns"][0] != 0:
            # times count from the first request; where that was in the source's clock is kept
            # (a directory of time-split parts is merged by it)
            first = int(arrays["ts_ns"][0])
            arrays["ts_ns"] = arrays["ts_ns"] - arrays["ts_ns"][0]
            report["start_ns"] = int(report.get("start_ns") or 0) + first
        self._init(arrays, list(volumes), list(files), report)
        self.stream_names = {int(k): str(v) for k, v in (stream_names or {}).items()}

    def _init(
        self,
        arrays: dict[str, np.ndarray],
        volumes: list[str],
        files: list[str],
        report: dict,
        *,
        checked: bool = False,
    ) -> None:
        if not checked:  # the caller checked every row already (in pieces, in parallel)
            _core.validate(_Columns(arrays), volumes, files)
        self.ts_ns: np.ndarray = arrays["ts_ns"]
        self.offset: np.ndarray = arrays["offset"]
        self.size: np.ndarray = arrays["size"]
        self.op: np.ndarray = arrays["op"]
        self.volume: np.ndarray = arrays["volume"]
        self.stream: np.ndarray = arrays["stream"]
        self.latency_ns: np.ndarray | None = arrays.get("latency_ns")
        self.file: np.ndarray | None = arrays.get("file")
        #: Completion status per request where recorded: 0 done, else the errno it failed with.
        self.status: np.ndarray | None = arrays.get("status")
        #: Volume names, indexed by the ``volume`` column.
        self.volumes: list[str] = volumes
        #: File names, indexed by the ``file`` column.
        self.files: list[str] = files
        #: What reading the source found: format, skipped and out-of-order lines, ...
        self.report: dict[str, Any] = report

    @classmethod
    def _from_reader(cls, d: dict[str, Any]) -> Trace:
        """Wraps columns that the Rust reader already normalised (no copy, no re-sort)."""
        t = cls.__new__(cls)
        arrays = {k: d[k] for k in (*REQUIRED, *OPTIONAL) if d.get(k) is not None}
        report = dict(d.get("report") or {})
        t._init(arrays, list(d["volumes"]), list(d["files"]), report)
        t.stream_names = {int(k): v for k, v in report.get("stream_names", {}).items()}
        return t

    def _core_args(self) -> tuple[_Columns, list[str], list[str]]:
        """The columns and name tables as the Rust functions take them (their first three
        arguments)."""
        return _Columns(self.columns), self.volumes, self.files

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The present columns by name, required ones first."""
        out = {name: getattr(self, name) for name in REQUIRED}
        for name in OPTIONAL:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def __len__(self) -> int:
        return len(self.ts_ns)

    @property
    def span_s(self) -> float:
        """Seconds from the first request to the last (0 for an empty trace).

        >>> Trace(ts_ns=[0, 1_500_000_000], offset=[0, 0], size=[512, 512], op=[0, 0]).span_s
        1.5
        """
        return float(self.ts_ns[-1]) / 1e9 if len(self) else 0.0

    def __repr__(self) -> str:
        return f"<Trace {len(self)} requests, {len(self.volumes)} volumes, {self.span_s:.3f} s>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trace):
            return NotImplemented
        mine, theirs = self.columns, other.columns
        return (
            mine.keys() == theirs.keys()
            and all(np.array_equal(mine[k], theirs[k]) for k in mine)
            and self.volumes == other.volumes
            and self.files == other.files
            and self.stream_names == other.stream_names
        )

    __hash__ = None  # mutable arrays inside: not hashable

    def select(
        self,
        *,
        start_ns: int | None = None,
        end_ns: int | None = None,
        volumes: Iterable[str] | None = None,
        ops: Iterable[str] | None = None,
        streams: Iterable[int] | None = None,
    ) -> Trace:
        """The requests issued in ``[start_ns, end_ns)`` (times since the trace's first request)
        on the given volumes (names), of the given ops (``read``, ``write``, ``trim``,
        ``flush``) and streams, as a new Trace: its first request at 0 (the original start goes
        into ``report["start_ns"]``) and, when ``volumes`` are given, only those in its name
        table.

        >>> t = Trace(ts_ns=[0, 10, 20, 30], offset=[0] * 4, size=[512] * 4, op=[0, 1, 0, 1],
        ...           volume=[0, 1, 0, 1], volumes=["a", "b"])
        >>> s = t.select(start_ns=10, ops=["write"], volumes=["b"])
        >>> s.ts_ns.tolist(), s.volumes, s.report["start_ns"]
        ([0, 20], ['b'], 10)
        """
        if start_ns is not None and end_ns is not None and start_ns >= end_ns:
            raise InputError(f"`start` ({start_ns / 1e9:g} s) must come before `end` ({end_ns / 1e9:g} s)")
        keep = np.ones(len(self), bool)
        if start_ns is not None:
            keep &= self.ts_ns >= start_ns
        if end_ns is not None:
            keep &= self.ts_ns < end_ns
        if ops is not None:
            codes = []
            for name in ops:
                if name not in OP_NAMES:
                    raise InputError(f"`op`: no op {name!r} (one of {', '.join(OP_NAMES)})")
                codes.append(OP_NAMES.index(name))
            keep &= np.isin(self.op, np.array(codes, np.uint8))
        if streams is not None:
            keep &= np.isin(self.stream, np.array(list(streams), np.uint32))
        volume_names = self.volumes
        volume = self.volume
        if volumes is not None:
            wanted = list(dict.fromkeys(volumes))
            unknown = [v for v in wanted if v not in self.volumes]
            if unknown:
                shown = ", ".join(self.volumes[:10]) + (", ..." if len(self.volumes) > 10 else "")
                raise InputError(f"`volume`: the trace has no volume {unknown[0]!r} (it has {shown})")
            ids = np.array([self.volumes.index(v) for v in wanted], np.uint32)
            keep &= np.isin(self.volume, ids)
            remap = np.zeros(len(self.volumes), np.uint32)
            remap[ids] = np.arange(len(ids), dtype=np.uint32)
            volume, volume_names = remap[self.volume], wanted
        if not keep.any():
            raise InputError(
                f"no request is in the selection (the trace has {len(self):,} over {self.span_s:,.3f} s)"
            )
        cols = {name: values[keep] for name, values in self.columns.items()}
        cols["volume"] = volume[keep]
        # the constructor moves the first kept request to 0 and adds that shift to start_ns
        return Trace(
            **cols, volumes=volume_names, files=self.files, report=self.report, stream_names=self.stream_names
        )

    def to_polars(self, names: bool = False):
        """The columns as a polars DataFrame (unknown latencies become null).

        With ``names=True``, ``op`` holds ``read``/``write``/``trim``/``flush`` and ``volume``
        (and ``file``) the names from the Trace's tables, each as a polars ``Enum``, so
        ``df.filter(pl.col("op") == "write")`` reads as it says; by default they are the ids.

        >>> t = Trace(ts_ns=[0, 5], offset=[0, 8], size=[512, 512], op=[0, 1], volumes=["sda"])
        >>> t.to_polars().columns
        ['ts_ns', 'offset', 'size', 'op', 'volume', 'stream']
        >>> t.to_polars(names=True)["op"].to_list(), t.to_polars(names=True)["volume"].to_list()
        (['read', 'write'], ['sda', 'sda'])
        """
        import polars as pl

        df = pl.from_arrow(self.to_arrow())
        if not names:
            return df
        named = {"op": list(OP_NAMES), "volume": self.volumes}
        if self.file is not None:
            named["file"] = self.files
        return df.with_columns(
            pl.col(col)
            .replace_strict(list(range(len(table))), table, return_dtype=pl.Enum(_unique(table)))
            .alias(col)
            for col, table in named.items()
        )

    def to_pandas(self, names: bool = False):
        """The columns as a pandas DataFrame (needs pandas installed); ``names=True`` gives
        ``op``, ``volume`` and ``file`` as categoricals of names, as in :meth:`to_polars`."""
        try:
            import pandas  # noqa: F401  (polars converts; only its presence is checked here)
        except ImportError:
            raise InputError("to_pandas needs pandas: pip install pandas") from None
        return self.to_polars(names=names).to_pandas()

    def to_arrow(self):
        """The columns as a pyarrow Table carrying the name tables in its schema metadata."""
        import json

        import pyarrow as pa

        arrays = []
        for name, values in self.columns.items():
            if name == "latency_ns":
                arrays.append(pa.array(values, mask=values == LATENCY_UNKNOWN))
            else:
                arrays.append(pa.array(values))
        fields: dict[str, Any] = {"version": 1, "volumes": self.volumes, "files": self.files}
        if self.stream_names:
            fields["stream_names"] = {str(k): v for k, v in sorted(self.stream_names.items())}
        meta = {"iomimic": json.dumps(fields)}
        return pa.Table.from_arrays(arrays, names=list(self.columns), metadata=meta)

    @classmethod
    def from_arrow(cls, table) -> Trace:
        """Builds a Trace from a pyarrow Table with the Trace's columns.

        A ``volume`` (or ``file``) column of strings is turned into ids and a name table;
        integer ids take their names from iomimic's schema metadata when present.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        _require_columns(table.schema)
        cols: dict[str, Any] = {}
        names = _schema_names(table.schema)
        for name in DTYPES:
            if name not in table.column_names:
                continue
            col = table.column(name)
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                if name not in names:
                    raise InputError(f"column {name} holds text; it must hold whole numbers")
                encoded = pc.dictionary_encode(col).combine_chunks()
                names[name] = [str(v) for v in encoded.dictionary.to_pylist()]
                col = encoded.indices
            elif not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
                raise InputError(f"column {name} has type {col.type}; it must hold whole numbers")
            cols[name] = _arrow_to_numpy(name, col)
        return cls(**cols, volumes=names["volume"], files=names["file"], stream_names=names["stream"])

    @classmethod
    def from_arrow_pieces(cls, schema, read: Callable[[int], Any], counts: Sequence[int], rows: int) -> Trace:
        """Builds a Trace from pyarrow tables read a piece at a time (a Parquet file's row
        groups): ``read(i)`` gives piece ``i``, whose metadata says it has ``counts[i]`` rows,
        ``rows`` in all. When the columns already have the Trace's types, the pieces are read
        on every core at once, each copied into its place in the Trace's columns and let go, so
        reading holds at most a piece per core besides the columns; otherwise the pieces are
        joined and read as by :meth:`from_arrow`."""
        import pyarrow as pa

        _require_columns(schema)
        present = [c for c in DTYPES if c in schema.names]
        if any(schema.field(c).type != pa.from_numpy_dtype(np.dtype(DTYPES[c])) for c in present):
            tables = [read(i) for i in range(len(counts))]
            return cls.from_arrow(pa.Table.from_batches([b for t in tables for b in t.to_batches()], schema))
        cols = {c: _empty_column(rows, DTYPES[c]) for c in present}
        starts = np.concatenate(([0], np.cumsum(counts, dtype=np.int64))).tolist()
        names = _schema_names(schema)
        volumes = names["volume"]
        files = names["file"] if names["file"] is not None or "file" in present else []
        # with the name tables known, each piece's time order and rows are checked on the thread
        # that copied it, instead of the whole trace on one core afterwards
        check = volumes is not None and files is not None and "stream" in present

        def fill(i: int) -> tuple[int, bool]:
            piece = read(i)
            n = piece.num_rows
            if n != counts[i] or starts[i] + n > rows:
                return n, False  # not copied: the caller reports the mismatch
            for c in present:
                _copy_column(c, piece.column(c), cols[c][starts[i] : starts[i] + n])
            if not check:
                return n, False
            part = {c: cols[c][starts[i] : starts[i] + n] for c in present}
            ts = part["ts_ns"]
            if n > 1 and bool((ts[1:] < ts[:-1]).any()):
                return n, False
            try:
                _core.validate(_Columns(part), volumes, files)
            except InputError:
                return n, False  # the whole trace is checked again, to name the row in it
            return n, True

        found, good = zip(*_on_threads(fill, len(counts)), strict=True) if counts else ((), ())
        if any(n > count for n, count in zip(found, counts, strict=True)) or starts[-1] > rows:
            raise InputError(f"the file holds more than the {rows:,} rows its metadata says")
        if sum(found) != rows or list(found) != list(counts):
            raise InputError(f"the file holds {sum(found):,} rows where its metadata says {rows:,}")
        ts = cols["ts_ns"]
        if (
            rows
            and all(good)
            and ts[0] == 0
            and all(ts[s - 1] <= ts[s] for s in starts[1:-1] if 0 < s < rows)
        ):
            # what the constructor would do is done: in time order from 0, every row valid
            t = cls.__new__(cls)
            t._init(cols, volumes, files, {}, checked=True)
            t.stream_names = {int(k): str(v) for k, v in (names["stream"] or {}).items()}
            return t
        return cls(**cols, volumes=volumes, files=files, stream_names=names["stream"])


def _on_threads(work: Callable[[int], Any], count: int) -> list:
    """``[work(0), ..., work(count - 1)]``, run a thread per core (pyarrow's reading and numpy's
    copies let go of the GIL); the first error is raised once the pieces under way are done,
    and the pieces not yet begun are dropped."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, min(os.cpu_count() or 1, count))) as pool:
        futures = [pool.submit(work, i) for i in range(count)]
        try:
            return [f.result() for f in futures]
        finally:
            for f in futures:
                f.cancel()


def _empty_column(rows: int, dtype: type) -> np.ndarray:
    """An uninitialised column, a large one in anonymous memory of its own: numpy asks the
    kernel for huge pages for large arrays, and where memory is fragmented (this VM, its page
    cache full of traces) each huge-page fault waits for the kernel to compact memory. Measured
    on a 10 M-request Parquet read: 0.96 s in plain pages, 1.8-1.95 s with numpy's arrays."""
    import mmap

    nbytes = rows * np.dtype(dtype).itemsize
    if nbytes < 1 << 22 or not hasattr(mmap, "MAP_PRIVATE"):
        return np.empty(rows, dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE), dtype)


def _unique(names: list[str]) -> list[str]:
    """The names in order with repeats dropped (an Enum's categories must be distinct; two
    volumes of one name then show as one)."""
    return list(dict.fromkeys(names))


def grow_reach(reach: np.ndarray, offset: np.ndarray, size: np.ndarray, volume: np.ndarray) -> None:
    """Raises ``reach[v]`` to the end of the furthest request of volume ``v`` among these
    (a chunk at a time, so the temporaries stay small next to a long trace)."""
    for start in range(0, len(offset), 1 << 20):
        part = slice(start, start + (1 << 20))
        ends = offset[part] + size[part]
        vol = volume[part]
        for v in np.unique(vol).tolist():
            reach[v] = max(int(reach[v]), int(ends[vol == v].max()))


def _require_columns(schema) -> None:
    missing = [c for c in ("ts_ns", "offset", "size", "op") if c not in schema.names]
    if missing:
        raise InputError(f"table lacks the column(s) {', '.join(missing)}")


def _schema_names(schema) -> dict[str, Any]:
    """Volume and file name tables from iomimic's schema metadata, where present; metadata that
    is not what iomimic writes is refused, naming what is wrong."""
    import json

    raw = (schema.metadata or {}).get(b"iomimic")
    if raw is None:
        return {"volume": None, "file": None, "stream": None}
    try:
        meta = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InputError("the file's iomimic metadata is not JSON") from None
    if not isinstance(meta, dict):
        raise InputError("the file's iomimic metadata is not a JSON object")
    names: dict[str, list[str] | None] = {}
    for key, column in (("volumes", "volume"), ("files", "file")):
        table = meta.get(key)
        if table is not None and not (isinstance(table, list) and all(isinstance(x, str) for x in table)):
            raise InputError(f"the file's iomimic metadata: {key} must be a list of names")
        names[column] = table
    streams = meta.get("stream_names")
    if streams is not None and not (
        isinstance(streams, dict)
        and all(k.isdigit() and int(k) < 2**32 and isinstance(v, str) for k, v in streams.items())
    ):
        raise InputError("the file's iomimic metadata: stream_names must map stream ids to names")
    names["stream"] = streams
    return names


def _arrow_to_numpy(name: str, col) -> np.ndarray:
    """One Arrow column as numpy; unknown latencies (nulls) become ``LATENCY_UNKNOWN``, nulls
    anywhere else are refused."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if col.null_count:
        if name != "latency_ns":
            raise InputError(f"column {name} has {col.null_count} null values")
        col = pc.fill_null(col.cast(pa.uint64()), LATENCY_UNKNOWN)
    return col.to_numpy()


def _copy_column(name: str, column, into: np.ndarray) -> None:
    """Copies a chunked Arrow column of the column's own type into ``into``, chunk by chunk
    (see :func:`_copy_arrow`)."""
    at = 0
    for chunk in column.chunks:
        _copy_arrow(name, chunk, into[at : at + len(chunk)])
        at += len(chunk)


def _copy_arrow(name: str, chunk, into: np.ndarray) -> None:
    """Copies one Arrow array of the column's own type into ``into``, read in place from its
    buffer (``to_numpy`` would import pandas, a third of a second); nulls, allowed in
    ``latency_ns`` only, become ``LATENCY_UNKNOWN``."""
    validity, data = chunk.buffers()[:2]
    into[:] = np.frombuffer(data, into.dtype, len(chunk), chunk.offset * into.itemsize)
    if chunk.null_count:
        if name != "latency_ns":
            raise InputError(f"column {name} has {chunk.null_count} null values")
        bits = np.unpackbits(
            np.frombuffer(validity, np.uint8), count=chunk.offset + len(chunk), bitorder="little"
        )
        into[bits[chunk.offset :] == 0] = LATENCY_UNKNOWN


class _Columns:
    """Attribute access to a dict of arrays, as the Rust ``validate``/``write_csv`` expect."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        for name in DTYPES:
            setattr(self, name, arrays.get(name))
