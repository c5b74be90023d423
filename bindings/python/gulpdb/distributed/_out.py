"""OUT, the dataset a distributed ingest builds: what may be ingested into, and
the driver's hold on it (the engine's writer lock, taken for the whole job)."""

from __future__ import annotations

import fcntl
import os

from gulpdb import _gulpdb

from . import _files
from ._report import DistributedIngestError

__all__ = ["OutDirectory"]


class OutDirectory:
    """OUT as the driver sees it. Not thread-safe: the driver's thread only."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.created_out = False
        self.lock_fd = -1

    def check_out(self) -> bool:
        """Refuses an OUT that is not a dataset (nor a new or empty directory);
        True when OUT is a dataset."""
        out = self.out
        if not os.path.exists(out):
            parent = os.path.dirname(out)
            if not os.path.isdir(parent):
                raise DistributedIngestError(f"{out}: its parent directory {parent} does not exist")
            return False
        if not os.path.isdir(out):
            raise DistributedIngestError(f"{out} exists and is not a directory")
        if _gulpdb.NativeDataset.exists(out, ""):
            return True
        entries = [
            e for e in os.listdir(out)
            if not e.startswith(".gulpdb-preflight-")
        ]  # fmt: skip
        gulpio = sorted(
            e for e in entries
            if _gulpdb.is_gulpio_data_file_name(os.fsencode(e))
            or _gulpdb.is_gulpio_meta_file_name(os.fsencode(e))
        )  # fmt: skip
        if gulpio:
            raise DistributedIngestError(
                f"{out} is a GulpIO directory ({', '.join(gulpio[:2])}, ...), not a gulpdb "
                f"dataset: index it first with `gulpdb import {out}`, then ingest into it"
            )
        if entries and entries != [_files.SHARDS_DIR]:
            raise DistributedIngestError(
                f"{out} exists and is not a gulpdb dataset (no gulpdb.index; it holds "
                f"{', '.join(sorted(entries)[:3])}{', ...' if len(entries) > 3 else ''}): give a "
                "dataset, an empty directory or a new path"
            )
        return False

    def lock_out(self) -> None:
        """Makes sure no other driver works on OUT meanwhile (flock on its directory)."""
        if not os.path.exists(self.out):
            os.mkdir(self.out)
            self.created_out = True
        fd = os.open(self.out, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DistributedIngestError(
                f"another gulpdb.distributed driver is ingesting into {self.out} (its directory "
                "is locked); wait for it to finish"
            ) from None
        self.lock_fd = fd

    def unlock_out(self) -> None:
        if self.lock_fd >= 0:
            os.close(self.lock_fd)
            self.lock_fd = -1

    def remove_created_out(self) -> None:
        """After a failure before anything was committed: leaves no new OUT behind."""
        if self.created_out:
            try:
                os.rmdir(self.out)  # only when empty: nothing of anyone's is removed
            except OSError:
                pass
