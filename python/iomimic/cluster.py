"""Work spread over a Ray cluster (``--ray``, ``ray=``; the optional extra ``iomimic[ray]``).

The driver (this process) does what needs the whole trace; each independent piece (a thread's
training, a point of a sweep) runs as one Ray task calling the same core function the local
run calls, and the driver puts the results together with the core, so a run on Ray gives the
same result as a run here. Only this module imports Ray, and only when a run asks for it.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from iomimic.errors import InputError, IomimicError

INSTALL = "pip install 'iomimic[ray]'"

#: What ``--ray ADDRESS`` accepts: host:port, ray://host:port, or Ray's own ``auto``/``local``.
_ADDRESS = re.compile(r"^(auto|local|(ray://)?[\w.\-\[\]:]+:\d+)$")


def is_address(text: str) -> bool:
    """Whether ``text`` has the form of a Ray address."""
    return bool(_ADDRESS.match(text))


def check_address(address: str | bool | None) -> None:
    """Refuses an ``--ray`` address that is none (most likely a file name taken as one)."""
    if isinstance(address, str) and not is_address(address):
        raise InputError(
            f"--ray: {address!r} is not a Ray address (host:port, ray://host:port, auto or local);"
            " to use RAY_ADDRESS or a local Ray, give --ray after the trace with no value"
        )


def check_answers(address: str, timeout_s: float = 5.0) -> None:
    """Refuses an address where nothing listens: Ray itself would retry for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, ValueError) as e:
        raise InputError(
            f"--ray: nothing answers at {address} ({e}); is `ray start --head` running there?"
        ) from None


def connect(address: str | bool | None = True):
    """Ray, initialised: connected to ``address`` when it is one, else to ``RAY_ADDRESS`` when
    set, else to a Ray started here for this process. An initialised Ray (a caller's own
    ``ray.init``) is used as it is."""
    check_address(address)
    try:
        import ray
    except ImportError:
        raise InputError(f"--ray needs Ray, which is not installed: {INSTALL}") from None
    if ray.is_initialized():
        return ray
    target = address if isinstance(address, str) else os.environ.get("RAY_ADDRESS") or None
    if target not in (None, "auto", "local"):
        check_answers(target)
    # a Ray started here for one command needs no dashboard; a cluster's is the cluster's
    starting = {"include_dashboard": False} if target in (None, "local") else {}
    try:
        ray.init(address=target, logging_level="WARNING", **starting)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = target or "a local Ray"
        raise InputError(f"--ray: could not connect to {where}: {e}") from None
    return ray


def train_threads(ray, trace, plan) -> list[str]:
    """Each thread of ``plan`` (a ``_core.TrainPlan`` of ``trace``) trained as one Ray task on
    its own rows and model times; the trained threads in order, for ``plan.assemble``."""
    shared = ray.put((plan.shared, list(trace.volumes)))
    task = ray.remote(_train_thread)
    sizes = plan.sizes
    refs: list[Any] = [None] * len(sizes)
    # the largest threads first, so the small ones fill in around them (Ray starts tasks in
    # the order they come) and the last to finish is a small one
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        # only the thread's rows travel (Ray keeps large arguments in its object store), one
        # thread's at a time; the name tables go once, in `shared`
        columns, u = plan.thread_trace(i, *trace._core_args())
        del columns["volumes"], columns["files"]
        refs[i] = task.remote(shared, columns, u)
    return gather(ray, refs)


def _train_thread(shared: tuple[str, list[str]], columns: dict[str, np.ndarray], u: np.ndarray) -> str:
    """A Ray task: one thread trained from a trace of its requests alone."""
    from iomimic import _core
    from iomimic.trace import _Columns

    text, volumes = shared
    return _core.train_part(_Columns(columns), volumes, [], u, text)


def train_threads_in_pieces(ray, path: str, options: dict[str, Any], read: dict[str, Any], run) -> list[Any]:
    """Ray tasks training the threads of the trace at ``path`` in its third pass, a piece at a
    time, from the clock ``run`` (a ``_core.TrainStream`` past its second pass) counted: a share
    of the threads each (one task per CPU of the cluster at most, the threads dealt largest
    first to the task with the fewest requests). Their refs, each task's result a list of
    (place in the model, thread JSON) for ``run.assemble``."""
    threads = run.threads
    tasks = max(1, min(len(threads), int(ray.cluster_resources().get("CPU", 1))))
    shares: list[list[int]] = [[] for _ in range(tasks)]
    load = [0] * tasks
    for k in sorted(range(len(threads)), key=lambda k: -threads[k][1]):
        least = load.index(min(load))
        shares[least].append(k)
        load[least] += threads[k][1]
    shared = ray.put((path, options, read, run.clocked()))
    task = ray.remote(_train_threads_in_pieces)
    return [task.remote(shared, share) for share in shares if share]


def _train_threads_in_pieces(shared: tuple[str, dict[str, Any], dict[str, Any], str], threads: list[int]):
    """A Ray task: the threads ``threads`` of a trace trained in its third pass, a piece at a
    time, from the driver's clock."""
    from iomimic import _core
    from iomimic.pieces import time_ordered_passes

    path, options, read, clocked = shared
    volumes, files, pieces = time_ordered_passes(path, 1, **read)
    run = _core.TrainStream.resume(volumes, files, options, clocked, threads=threads)
    for piece in pieces(0):
        run.feed(*piece)
    run.end_pass()
    return run.parts()


def characterize_partitions(ray, path, memory: int, options: dict[str, Any], progress=None):
    """The profile of the Parquet trace at ``path`` (``_core.ChunkedProfile``'s ``options``,
    within ``memory``) taken by partitions: ranges of its row groups, so of its time, the rows
    dealt evenly (at least one per CPU of the cluster, at most ``PARTITION_ROWS`` requests each,
    one task per CPU and one more in flight). Two rounds of Ray tasks, each task reading its row
    groups where it runs: the first surveys each partition and the driver merges the surveys;
    the second counts each partition from the setup that gives, and the driver takes the counts
    in, in time order (docs/scale.md). The driver reads the footers (the trace's start, which
    every task counts times from, is the first row group's least time) and, rarely, a partition
    again (a key whose requests there must be counted again). Returns the profile and the
    streams' names; raises OutOfOrder when row groups go back in time (the trace must then be
    read whole)."""
    from iomimic import _core
    from iomimic.io import (
        OutOfOrder,
        _parquet_layouts,
        parquet_first_time,
        parquet_row_groups,
        parquet_traces,
    )
    from iomimic.remote import for_tasks

    layouts = _parquet_layouts(path)
    sizes = parquet_row_groups(layouts)
    start = parquet_first_time(layouts)
    if start is None:  # the footer does not say: read the first row group with rows
        first = next(iter(parquet_traces(path) or ()), None)
        if first is None:
            raise InputError(f"{path}: cannot characterize an empty trace")
        start = first.report["start_ns"]
    cpus = int(ray.cluster_resources().get("CPU", 1))
    # at least one partition per CPU, and small enough that the few in flight hold little
    parts = _even_ranges(sizes, max(cpus, -(-sum(sizes) // PARTITION_ROWS)))
    total, done = 2 * sum(sizes), 0

    def step(groups: range) -> None:
        nonlocal done
        done += sum(sizes[i] for i in groups)
        if progress:
            progress(done, total)

    shared = ray.put((for_tasks(path), start, memory, options))
    chunked = _core.ChunkedProfile(memory, **options)
    survey = ray.remote(_survey_partition)
    for groups, surveyed in in_order(ray, lambda g: survey.remote(shared, g), parts, cpus + 1):
        if not chunked.take_survey(surveyed):
            raise OutOfOrder(f"{path}: row group {groups.start}")
        step(groups)
    chunked.start(list(layouts[0]["volumes"]))
    setup = ray.put(chunked.setup())
    count = ray.remote(_count_partition)
    rows = sum(sizes)

    def counting(groups: range):
        return count.remote(shared, setup, groups, sum(sizes[i] for i in groups) / max(rows, 1))

    # the driver takes the partitions in one after another: a few ahead of it are enough, and
    # the object store holds those, not every partition's counts
    for groups, counted in in_order(ray, counting, parts, cpus + 1):
        if not chunked.absorb(counted):
            for piece in _partition(path, groups, start):
                chunked.redo(*piece)
            chunked.redone()
        step(groups)
    return chunked.finish(), {int(k): v for k, v in layouts[0]["streams"].items()}


# Requests a partition of `characterize --ray` holds at most (its counts are about 65 bytes a
# request): more partitions than CPUs, so the driver takes one in while others are counted.
PARTITION_ROWS = 8 << 20


def in_order(ray, submit, items: Iterable[Any], ahead: int) -> Iterator[tuple[Any, Any]]:
    """Each item with the result of the Ray task ``submit(item)`` made for it, in the items'
    order, at most ``ahead`` tasks submitted and not yet given out (their results are what the
    object store holds); the tasks still pending are cancelled when the caller stops early."""
    from collections import deque

    pending: deque = deque()
    upcoming = iter(items)
    try:
        while True:
            for item in upcoming:
                pending.append((item, submit(item)))
                if len(pending) >= ahead:
                    break
            if not pending:
                return
            item, ref = pending.popleft()
            yield item, gather(ray, [ref])[0]
    finally:
        for _, ref in pending:
            ray.cancel(ref)


def _even_ranges(sizes: list[int], count: int) -> list[range]:
    """``count`` or fewer consecutive, non-empty ranges of the indices of ``sizes``, each ending
    where the running total first reaches its share."""
    total, ranges, start, running = sum(sizes), [], 0, 0
    for i, size in enumerate(sizes):
        running += size
        share = len(ranges) + 1
        if (share < count and running * count >= total * share) or i == len(sizes) - 1:
            ranges.append(range(start, i + 1))
            start = i + 1
    return ranges


def _survey_partition(shared: tuple[str, int, int, dict[str, Any]], groups: range) -> bytes:
    """A Ray task: the survey of row groups ``groups`` of a Parquet trace, read where it runs."""
    from iomimic import _core

    path, start, memory, options = shared
    chunked = _core.ChunkedProfile(memory, **options)
    for columns, volumes, files in _partition(path, groups, start):
        chunked.survey(columns, volumes, files)
    return chunked.surveyed()


def _count_partition(
    shared: tuple[str, int, int, dict[str, Any]], setup: str, groups: range, share: float
) -> bytes:
    """A Ray task: the counts of row groups ``groups`` of a Parquet trace (``share`` of its
    requests), read where it runs."""
    from iomimic import _core

    path, start, _, _ = shared
    part = _core.ChunkedPartition(setup, share)
    for piece in _partition(path, groups, start):
        part.add(*piece)
    return part.finish()


def _partition(path: str, groups: range, start_ns: int):
    """Row groups ``groups`` of a Parquet trace as the core takes them, times from ``start_ns``."""
    from iomimic.io import parquet_traces

    for piece in parquet_traces(path, groups=groups, start_ns=start_ns) or ():
        yield piece._core_args()


def generate_slices(ray, model, args: dict[str, Any], count: int, progress=None) -> Iterator[Any]:
    """The ``count`` slices of a generation (``args`` as ``_core.Model.generation`` takes them),
    each made by one Ray task, given out in order as Traces. The first slice is made first (its
    first time is the whole trace's start, which every other slice is shifted by); then a few
    slices run ahead of the one given out, one per CPU of the cluster and one more, so memory
    holds that many slices however long the trace."""
    shared = ray.put((model.to_json(), args))
    task = ray.remote(_generate_slice)
    first = gather(ray, [task.remote(shared, 0, None)])[0]
    if not len(first["ts_ns"]):
        return
    start = first.pop("start_ns")
    ahead = max(2, int(ray.cluster_resources().get("CPU", 1)) + 1)
    if progress is not None:
        progress(1, count)  # slices made, of all
    yield model._generated(first)
    made = in_order(ray, lambda s: task.remote(shared, s, start), range(1, count), ahead)
    for s, d in made:
        if not len(d["ts_ns"]):
            made.close()  # past the duration asked for: so is every later slice (cancelled)
            break
        del d["start_ns"]
        if progress is not None:
            progress(s + 1, count)
        yield model._generated(d)
    if progress is not None:
        progress(count, count)


# a worker's last model parsed and planned: the slices of one generation that land on the same
# worker parse the model once
_PLANNED: dict[str, Any] = {}


def _generate_slice(shared: tuple[str, dict[str, Any]], s: int, start_ns: int | None) -> dict[str, Any]:
    """A Ray task: slice ``s`` of a generation, its times less ``start_ns``."""
    from iomimic import _core

    text, args = shared
    key = repr((hash(text), sorted(args.items())))
    if _PLANNED.get("key") != key:
        _PLANNED.clear()
        _PLANNED.update(key=key, plan=_core.Model.from_json(text).generation(args))
    return dict(_PLANNED["plan"].slice(s, start_ns=start_ns))


def run_tasks(ray, work, shared: Any, points: list[Any]) -> list[Any]:
    """``work(shared, point)`` for every point, each as one Ray task (``shared`` put in the
    object store once); the results in the points' order."""
    ref = ray.put(shared)
    task = ray.remote(work)
    return gather(ray, [task.remote(ref, p) for p in points])


def gather(ray, refs: list[Any]) -> list[Any]:
    """The tasks' results in order. A task's own iomimic error is raised as it is (a bad input
    exits 2, as it would here); any other failure (a worker without iomimic, a lost node)
    becomes an IomimicError naming it, not a traceback."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as e:
        from iomimic.io import OutOfOrder

        if isinstance(e.cause, (IomimicError, OutOfOrder)):  # OutOfOrder: read the trace whole
            raise e.cause from None
        raise IomimicError(f"a Ray task failed: {e.cause!r}") from None
    except ray.exceptions.RayError as e:
        raise IomimicError(f"Ray: {e}") from None
