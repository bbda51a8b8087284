"""Traces at URLs: ``s3://bucket/msr/hm_0.csv.gz``, ``gs://…``, ``hdfs://…``, ``file:///…``.

A URL names a file, a directory (a prefix, in an object store) or a glob in its last part
(``s3://bucket/msr/*.csv.gz``), as a local path does. It is read through pyarrow's filesystems
(``pyarrow.fs.FileSystem.from_uri``: credentials and regions come from the environment, as
for any Arrow program, e.g. ``AWS_ACCESS_KEY_ID``, ``AWS_REGION``), copied byte for byte
(compressed files stay compressed) into a temporary directory under the file's own name, and
read from there as a local file; the copy is removed when the reading is done. Copying, not
reading in place, keeps one path for every format (the text formats' reader is the core's, on
local files) and streams in constant memory however large the file; it needs the file's size
free in the temporary directory (``TMPDIR``). Parquet is also read in place, a row group at a
time, where a trace is read in pieces (``info``, and ``characterize``, ``simulate`` and
``model train`` past ``--memory``): a trace in an object store larger than the local disk.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from iomimic.errors import InputError

#: Characters that make a trace argument's last part a glob (here and in :mod:`iomimic.io`).
GLOB_CHARS = frozenset("*?[")

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: Bytes copied at a time.
_COPY_CHUNK = 8 << 20


def is_url(path: object) -> bool:
    """Whether ``path`` is a URL (``scheme://…``) rather than a local path.

    >>> is_url("s3://bucket/t.parquet"), is_url("/tmp/t.parquet"), is_url("C:/t.csv")
    (True, False, False)
    """
    return isinstance(path, str) and bool(_URL.match(path))


def _files(url: str) -> tuple[object, list[str], bool]:
    """The filesystem, the paths within it of the files ``url`` names (itself, a directory's
    files but not its subdirectories' nor hidden ones, or a glob's matches, in name order), and
    whether ``url`` names one file itself."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    base, _, last = url.rstrip("/").rpartition("/")
    pattern = last if GLOB_CHARS & set(last) else None
    try:
        fs, inner = pafs.FileSystem.from_uri(base if pattern else url)
        info = fs.get_file_info(inner)
        if pattern is None and info.type == pafs.FileType.File:
            return fs, [inner], True
        if info.type != pafs.FileType.Directory:
            raise InputError(f"{url}: no such file or directory")
        listed = fs.get_file_info(pafs.FileSelector(inner))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
        raise InputError(f"{url}: cannot be read: {e}") from None
    names = sorted(
        f.path
        for f in listed
        if f.type == pafs.FileType.File
        and not f.base_name.startswith(".")
        and (pattern is None or fnmatch.fnmatchcase(f.base_name, pattern))
    )
    if not names:
        raise InputError(f"{url}: " + ("no file matches" if pattern else "the directory holds no files"))
    return fs, names, False


@contextlib.contextmanager
def local_copy(url: str, note: Callable[[str], None] | None = None) -> Iterator[Path]:
    """A local copy of what ``url`` names, removed on leaving: the path of the copied file, or,
    for a directory or a glob, of a directory holding the files it names (which
    :func:`iomimic.read_trace` reads as one trace, as it would the originals). ``note`` is told
    what is copied before the copying starts."""
    fs, names, single = _files(url)
    size = sum(max(f.size or 0, 0) for f in fs.get_file_info(names))
    free = shutil.disk_usage(tempfile.gettempdir()).free
    if size > free:
        raise InputError(
            f"{url}: copying it takes {size / 1e6:,.1f} MB and the temporary directory "
            f"({tempfile.gettempdir()}) has {free / 1e6:,.1f} MB free; point TMPDIR at a larger disk"
        )
    if note is not None:
        files = f"{len(names)} files, " if len(names) > 1 else ""
        note(f"copying {url} ({files}{size / 1e6:,.1f} MB) to local disk to read it")
    with tempfile.TemporaryDirectory(prefix="iomimic-url-") as tmp:
        # under the folder's own name, which the commands show
        folder = Path(tmp) / (names[0].rpartition("/")[0].rpartition("/")[2] or "trace")
        folder.mkdir()
        for name in names:
            target = folder / name.rpartition("/")[2]
            try:
                # compression=None: a .gz stays gzip, for the reader to detect
                with fs.open_input_stream(name, compression=None) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, _COPY_CHUNK)
            except OSError as e:
                raise InputError(f"{url}: cannot copy {name}: {e}") from None
        if single:
            with _named(folder / names[0].rpartition("/")[2], url, shown=url) as local:
                yield local
        else:
            with _named(folder, url, shown=_folder_url(url)) as local:
                yield local


@contextlib.contextmanager
def stdin_copy() -> Iterator[Path]:
    """A local copy of standard input (a trace piped in), removed on leaving; what reads it
    names it ``stdin``, as a URL's copy is named by its URL. A copy, as every reader seeks
    (detection reads the start twice, Parquet its footer first)."""
    with tempfile.TemporaryDirectory(prefix="iomimic-stdin-") as tmp:
        local = Path(tmp) / "stdin"
        with open(local, "wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out, _COPY_CHUNK)
        with _named(local, "stdin", shown="stdin"):
            yield local


#: The URL (or ``stdin``) each local copy in use came from, so that what reads it names that.
_ORIGINS: dict[str, str] = {}
#: Every local copy this process made, and how messages show it: its URL (a folder's files
#: under the folder's URL) or ``stdin``. Kept once the copy is gone, as errors are reported
#: after the command has left it.
_SHOWN: dict[str, str] = {}


@contextlib.contextmanager
def _named(local: Path, origin: str, shown: str) -> Iterator[Path]:
    """Registers ``local`` as a copy of ``origin`` while it is in use (and as ``shown`` in
    messages for good)."""
    _ORIGINS[str(local)] = origin
    _SHOWN[str(local)] = shown
    try:
        yield local
    finally:
        del _ORIGINS[str(local)]


def _folder_url(url: str) -> str:
    """The folder a folder's or a glob's URL names, without a trailing slash."""
    base, _, last = url.rstrip("/").rpartition("/")
    return base if GLOB_CHARS & set(last) else url.rstrip("/")


def shown(message: str) -> str:
    """``message`` with every local copy's path written as what it copied."""
    for local, name in _SHOWN.items():
        message = message.replace(local, name)
    return message


def for_tasks(path: str | os.PathLike) -> str:
    """A trace's path as tasks running elsewhere (on Ray) read it: a URL as it is, a local path
    made absolute (a worker's working directory is not the driver's)."""
    return str(path) if is_url(path) else str(Path(path).resolve())


def origin(path: object) -> str | None:
    """The URL of which ``path`` is a :func:`local_copy` in use, if it is one."""
    return _ORIGINS.get(str(path))


def name_origin(report: dict, path: object) -> None:
    """Makes the read report of ``path``, when it is a local copy, name the URL it came from
    (and the files of a folder or glob by their URLs)."""
    url = origin(path)
    if url is None:
        return
    report["path"] = url
    if "files" in report:
        report["files"] = [f"{_folder_url(url)}/{Path(f).name}" for f in report["files"]]


#: The arguments of a command that name a trace or model it reads.
URL_ARGUMENTS = ("trace", "model", "original", "synthetic", "workload")


@contextlib.contextmanager
def local_arguments(
    args: argparse.Namespace, note: Callable[[str], None], readable: Callable[[str], bool] = lambda _: False
) -> Iterator[None]:
    """For a command's duration, each of its :data:`URL_ARGUMENTS` that is a URL names a local
    copy instead (copied once, removed at the end; ``note`` told of each copy). A command that
    sets ``parquet_in_place`` keeps its trace at its URL when ``readable(url)`` (Parquet the
    command reads a row group at a time in place; a whole read copies it then)."""
    with contextlib.ExitStack() as stack:
        for name in URL_ARGUMENTS:
            value = getattr(args, name, None)
            if not is_url(value):
                continue
            if name == "trace" and getattr(args, "parquet_in_place", False) and readable(value):
                continue
            setattr(args, name, str(stack.enter_context(local_copy(value, note))))
        yield
