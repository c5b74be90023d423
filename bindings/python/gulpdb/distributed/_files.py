"""Files of a distributed ingest inside OUT: the job directories, the plan,
the partition results, and atomic JSON writes.

Layout (one job per ``gulpdb.distributed ingest`` run that had work to do)::

    OUT/shards/driver.lock               flock'ed by the running driver
    OUT/shards/ingest-0001/plan.json     written last when the job is planned
    OUT/shards/ingest-0001/sources/part-00000.json   the sources of partition 0
    OUT/shards/ingest-0001/part-00000/   partition 0's shard dataset
    OUT/shards/ingest-0001/results/part-00000.json   its task's result
    OUT/shards/ingest-0001/done.json     the report, once every shard is attached
    OUT/shards/ingest-0001/stop          present: running tasks stop (--strict, Ctrl-C)

Every JSON file is written to a temporary name, fsynced, renamed into place
and its directory fsynced: a reader sees the whole file or none.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from typing import Any, Dict, List, Optional

SHARDS_DIR = "shards"
DRIVER_LOCK = "driver.lock"
PLAN_FORMAT = "gulpdb-distributed-ingest/1"
_JOB_RE = re.compile(r"^ingest-(\d{4,})$")


def write_json_atomic(path: str, value: Any) -> None:
    """Writes ``value`` as JSON to ``path``: whole or not at all, durable on return.

    Strings with surrogate escapes (file names that are not UTF-8, as
    ``os.fsdecode`` gives them) are written as their original bytes, and
    :func:`read_json` gives them back the same.
    """
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    data = json.dumps(value, ensure_ascii=False, indent=1).encode("utf-8", "surrogateescape")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)
    fsync_dir(directory)


def fsync_dir(directory: str) -> None:
    """Makes a rename or creation in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return json.load(f)


def display_path(path: str) -> str:
    """A path for a report: bytes that are not UTF-8 as \\xNN escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def create_dataset(path: str, settings: Dict[str, Any]) -> None:
    """Creates the dataset ``path`` (a missing or empty directory), unless
    another process made it first, whose dataset (and settings) then stay.

    Killed at any point, it leaves no dataset or a whole one: the engine
    builds the index beside its place and renames it in (Dataset::Create).
    """
    import gulpdb

    with warnings.catch_warnings():
        # Settings of a dataset made meanwhile are its own; that is not news.
        warnings.simplefilter("ignore", UserWarning)
        gulpdb.Dataset(path, "a", **settings).close()


def partition_name(index: int) -> str:
    return f"part-{index:05d}"


class Job:
    """One distributed ingest into OUT: ``OUT/shards/ingest-<number>``."""

    def __init__(self, out: str, number: int) -> None:
        self.out = out
        self.number = number
        self.name = f"ingest-{number:04d}"
        self.dir = os.path.join(out, SHARDS_DIR, self.name)

    def __repr__(self) -> str:
        return f"<gulpdb.distributed job {self.dir}>"

    @property
    def plan_path(self) -> str:
        return os.path.join(self.dir, "plan.json")

    @property
    def done_path(self) -> str:
        return os.path.join(self.dir, "done.json")

    @property
    def stop_path(self) -> str:
        return os.path.join(self.dir, "stop")

    def sources_path(self, partition: str) -> str:
        return os.path.join(self.dir, "sources", partition + ".json")

    def result_path(self, partition: str) -> str:
        return os.path.join(self.dir, "results", partition + ".json")

    def shard_path(self, partition: str) -> str:
        return os.path.join(self.dir, partition)

    def planned(self) -> bool:
        return os.path.exists(self.plan_path)

    def done(self) -> bool:
        return os.path.exists(self.done_path)

    def plan(self) -> Dict[str, Any]:
        plan = read_json(self.plan_path)
        if not isinstance(plan, dict) or plan.get("format") != PLAN_FORMAT:
            raise ValueError(
                f"{self.plan_path}: not a plan of this gulpdb version's distributed ingest "
                f"(format {plan.get('format') if isinstance(plan, dict) else None!r}, "
                f"expected {PLAN_FORMAT!r})"
            )
        return plan

    def results(self) -> Dict[str, Dict[str, Any]]:
        """The results saved so far, by partition name."""
        out: Dict[str, Dict[str, Any]] = {}
        directory = os.path.join(self.dir, "results")
        if not os.path.isdir(directory):
            return out
        for entry in sorted(os.listdir(directory)):
            if entry.endswith(".json") and not entry.startswith("."):
                out[entry[: -len(".json")]] = read_json(os.path.join(directory, entry))
        return out


def jobs(out: str) -> List[Job]:
    """The jobs in OUT, oldest first."""
    directory = os.path.join(out, SHARDS_DIR)
    if not os.path.isdir(directory):
        return []
    found = []
    for entry in os.listdir(directory):
        m = _JOB_RE.match(entry)
        if m and os.path.isdir(os.path.join(directory, entry)):
            found.append(Job(out, int(m.group(1))))
    return sorted(found, key=lambda j: j.number)


def latest_job(out: str) -> Optional[Job]:
    found = jobs(out)
    return found[-1] if found else None
