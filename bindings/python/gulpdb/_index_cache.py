"""Finding or building the gulpdb index of a directory for the GulpIO API.

A directory is either a gulpdb dataset (it has an index), a plain GulpIO /
GulpIO2 directory (``data*.gulp`` + ``meta*.gmeta`` files, no index), or empty.
A plain GulpIO directory is indexed on first open with the engine's importer,
which never changes a byte of the ``.gulp`` files:

- in the directory itself (``<dir>/gulpdb.index``) when it is writable;
- otherwise in the per-user cache, ``$GULPDB_CACHE`` (``$GULPDB_CACHE_DIR``, its
  older name, still works) or ``${XDG_CACHE_HOME:-~/.cache}/gulpdb``, the
  folder that also holds the index snapshots of remote datasets, under a hash
  of the directory's real path and of the name and size of every GulpIO file;
  when those change (GulpIO2 appended a chunk, say) the index is built again
  in a new place and the old one removed. Modification times are not part of
  it: a byte-identical copy or restore of the directory keeps its index (the
  engine compares the ``.gmeta`` files' content when their times differ, and
  refuses an index whose files were edited in place: it is then built again
  where it is).

A progress message goes to stderr while indexing. An ``s3://`` URL is a
dataset published with :func:`gulpdb.push`, opened read-only as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from typing import Any, List, Optional, Tuple

from . import _gulpdb
from ._dataset import Dataset

__all__ = ["cache_root", "cached_index_dir", "open_for_gulpio"]


def cache_root() -> str:
    """The per-user cache: indexes built for read-only GulpIO directories, and
    the index snapshots of remote datasets (``remote/``).

    The engine's own rule (``gulpdb::CacheDirectory``): ``$GULPDB_CACHE``, else
    ``$GULPDB_CACHE_DIR`` (its older name), else ``$XDG_CACHE_HOME/gulpdb``,
    else ``$HOME/.cache/gulpdb``; ValueError when none of them is set.
    """
    return _gulpdb.cache_directory()


def cached_index_dir(path: str) -> str:
    """Where the index of the read-only GulpIO directory ``path`` is cached.

    The name holds a hash of the directory's real path and one of its GulpIO
    files' names and sizes: when they change, the index gets a new place
    (processes still reading the old one are not disturbed).
    """
    real = os.path.realpath(path)
    key = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    files = json.dumps(_fingerprint(path, _gulpio_files(path)))
    generation = hashlib.sha256(files.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(cache_root(), f"{key}.{generation}")


def _gulpio_files(path: str) -> List[str]:
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if _is_data_file(n) or _is_meta_file(n))


def _is_data_file(name: str) -> bool:
    """data*.gulp: the engine's rule (gulpdb/interop.h)."""
    return _gulpdb.is_gulpio_data_file_name(os.fsencode(name))


def _is_meta_file(name: str) -> bool:
    """meta*.gmeta: the engine's rule (gulpdb/interop.h)."""
    return _gulpdb.is_gulpio_meta_file_name(os.fsencode(name))


def _fingerprint(path: str, names: List[str]) -> List[Tuple[str, int]]:
    out = []
    for name in names:
        st = os.stat(os.path.join(path, name))
        out.append((name, st.st_size))
    return out


def _dir_is_writable(path: str) -> bool:
    return os.access(path, os.W_OK | os.X_OK)


class _Progress:
    """Prints "indexing ..." to stderr: a running count on a terminal."""

    def __init__(self, path: str, where: str, quiet: bool) -> None:
        self._quiet = quiet
        self._tty = sys.stderr.isatty()
        self._start = time.monotonic()
        if not quiet:
            print(f"gulpdb: indexing GulpIO directory {path} into {where}", file=sys.stderr)

    def __call__(self, done: int, total: int) -> None:
        if not self._quiet and self._tty:
            print(f"\rgulpdb: {done}/{total} chunks", end="", file=sys.stderr, flush=True)

    def finish(self, report: Any) -> None:
        if self._quiet:
            return
        if self._tty:
            print(file=sys.stderr)
        seconds = time.monotonic() - self._start
        print(
            f"gulpdb: indexed {report['videos']} videos ({report['frames']} frames, "
            f"{report['chunks']} chunks) in {seconds:.1f} s",
            file=sys.stderr,
        )
        for warning in report["warnings"]:
            print(f"gulpdb: warning: {warning}", file=sys.stderr)


def _import(path: str, index_dir: str, quiet: bool) -> None:
    progress = _Progress(path, _gulpdb.index_directory(path, index_dir), quiet)
    try:
        report = _gulpdb.import_gulpio(path, index_dir=index_dir, progress=progress)
    except (ValueError, _gulpdb.BusyError):
        # Another process indexed it first (the import is all-or-nothing).
        if _gulpdb.NativeDataset.exists(path, index_dir):
            return
        raise
    progress.finish(report)


def _reindex(path: str, quiet: bool, timeout: float = 300.0, index_dir: str = "") -> None:
    """Indexes ``path`` again (its index in place, or at ``index_dir``) after
    GulpIO tools changed it.

    Processes that find the change at once (DataLoader workers) take turns:
    the engine re-indexes under the dataset's writer lock, and a process that
    finds it taken waits until the index describes the directory again.
    """
    deadline = time.monotonic() + timeout
    progress = _Progress(path, _gulpdb.index_directory(path, index_dir), quiet)
    while True:
        try:
            report = _gulpdb.import_gulpio(
                path, index_dir=index_dir, reindex=True, progress=progress
            )
            progress.finish(report)
            return
        except _gulpdb.BusyError:
            pass  # another process holds the lock, probably re-indexing
        try:
            Dataset(path, index_dir=index_dir or None).close()
            return  # someone else brought the index up to date
        except _gulpdb.StaleIndexError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def open_for_gulpio(
    path: str,
    *,
    mode: str = "r",
    index_dir: Optional[str] = None,
    quiet: bool = False,
    decode_threads: int = 0,
    verify_checksums: bool = True,
) -> Tuple[Optional[Dataset], bool]:
    """Opens the dataset behind the GulpIO directory ``path``.

    Returns ``(dataset, cached)``: ``dataset`` is None for a directory with
    neither an index nor GulpIO files (GulpIO2 reads such a directory as
    empty), and ``cached`` is True when the index lives in the per-user cache.
    An explicit ``index_dir`` is used as it is (and built there if missing).
    ``decode_threads`` and ``verify_checksums`` are :class:`Dataset`'s.
    """
    def opened(*args: Any, **kwargs: Any) -> Dataset:
        return Dataset(*args, decode_threads=decode_threads, verify_checksums=verify_checksums,
                       **kwargs)

    if _gulpdb.is_remote_url(path):
        if mode != "r" or index_dir is not None:
            raise ValueError(
                f"{_gulpdb.redact_url(path)} is a dataset in object storage: it opens read-only, "
                "with its own index"
            )
        return opened(path, "r"), False

    if index_dir is not None:
        index_dir = os.fspath(index_dir)
        if not Dataset.exists(path, index_dir):
            _import(path, index_dir, quiet)
        return opened(path, mode, index_dir=index_dir), False

    if Dataset.exists(path):
        try:
            return opened(path, mode), False
        except _gulpdb.StaleIndexError:
            # GulpIO tools changed the directory after it was indexed in
            # place: index it again, as the cache below does. The engine
            # refuses (ValueError) if that would lose videos gulpdb wrote.
            if not quiet:
                print(
                    f"gulpdb: {path} changed since it was indexed; indexing it again",
                    file=sys.stderr,
                )
            _reindex(path, quiet)
            return opened(path, mode), False
    names = _gulpio_files(path)
    if not names and not os.path.exists(path):
        # GulpIO2 reads a missing directory as empty; a mistyped s3:// URL
        # is said to be one instead.
        shown = _gulpdb.redact_url(path)
        typo = _gulpdb.s3_url_typo(shown)
        if typo:
            raise ValueError(f"open {shown}: no such directory, and not an s3:// URL: {typo}")
    if not any(_is_data_file(n) for n in names):
        return None, False
    if _dir_is_writable(path):
        _import(path, "", quiet)
        return opened(path, mode), False

    # A read-only GulpIO directory: index it into the cache.
    cache = cached_index_dir(path)
    if not Dataset.exists(path, cache):
        key = os.path.basename(cache).split(".")[0]
        root = os.path.dirname(cache)
        # Earlier generations only: "<key>.<16 hex digits>" (not another
        # process's import in progress, which the engine names otherwise).
        names = os.listdir(root) if os.path.isdir(root) else []
        stale = [n for n in names if re.fullmatch(re.escape(key) + r"\.[0-9a-f]{16}", n)]
        if stale and not quiet:
            print(
                f"gulpdb: {path} changed since it was indexed; indexing it again",
                file=sys.stderr,
            )
        os.makedirs(root, exist_ok=True)
        _import(path, cache, quiet)
        for name in stale:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    try:
        return opened(path, "r", index_dir=cache), True
    except _gulpdb.StaleIndexError:
        # The same names and sizes, other content (a .gmeta edited in place):
        # index it again where it is.
        if not quiet:
            print(f"gulpdb: {path} changed since it was indexed; indexing it again", file=sys.stderr)
        _reindex(path, quiet, index_dir=cache)
        return opened(path, "r", index_dir=cache), True
