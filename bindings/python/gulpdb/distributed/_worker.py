"""What runs on the Dask workers: the pre-flight check and one partition's ingest.

Both are plain module-level functions (Dask pickles them by reference), so
every worker must import the same ``gulpdb`` as the driver; the pre-flight
check says so when one does not.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from typing import Any, Dict, List, Optional

import gulpdb
from gulpdb import _gulpdb

from ._files import create_dataset, display_path, read_json

# Progress events are sent at most this often per task (and once at the end).
_EVENT_INTERVAL = 0.5
# The stop file is looked for at most this often per task.
_STOP_INTERVAL = 1.0


class Stopped(Exception):
    """The driver asked running tasks to stop (``--strict`` or an interrupt)."""


def _worker() -> Any:
    """The Dask worker running this call, or None outside one."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def worker_label() -> str:
    w = _worker()
    if w is None:
        return f"pid {os.getpid()}"
    name = str(w.name)
    return w.address if name == w.address else f"{w.address} ({name})"


def _errno_text(e: OSError) -> str:
    return e.strerror or str(e)


def preflight(check: Dict[str, Any]) -> Dict[str, Any]:
    """Checks that this worker can take part; returns its problems, one line each.

    ``check`` holds ``out``, ``token_name`` and ``token`` (a file the driver
    wrote in OUT), ``version`` (the driver's gulpdb), ``ffmpeg`` (the program,
    or None when no source needs it) and ``paths`` (a few source paths).
    """
    problems: List[str] = []
    out = check["out"]
    if gulpdb.__version__ != check["version"]:
        problems.append(
            f"runs gulpdb {gulpdb.__version__} and the driver {check['version']}: install the "
            "same gulpdb on every worker"
        )
    token_path = os.path.join(out, check["token_name"])
    try:
        with open(token_path, encoding="utf-8") as f:
            seen = f.read()
    except OSError as e:
        problems.append(
            f"cannot see OUT: {token_path}, written by the driver, cannot be read "
            f"({_errno_text(e)}); OUT must be on a file system that every worker mounts at "
            "the same path"
        )
    else:
        if seen != check["token"]:
            problems.append(
                f"sees another {out} than the driver (the token in {token_path} differs): OUT "
                "must be one shared directory, mounted at the same path everywhere"
            )
        else:
            problems.extend(_check_writable(out, check["token_name"]))
    ffmpeg: Optional[str] = check.get("ffmpeg")
    if ffmpeg:
        problems.extend(_check_ffmpeg(ffmpeg))
    for path in check.get("paths", []):
        if not os.path.exists(path):
            problems.append(
                f"cannot see the source {path}: sources must be on a file system that every "
                "worker mounts at the same path"
            )
            break
    return {"worker": worker_label(), "problems": problems}


def _check_writable(out: str, token_name: str) -> List[str]:
    """Write, fsync and flock on OUT's file system, in a probe file removed afterwards."""
    suffix = hashlib.sha1(f"{worker_label()}:{os.getpid()}".encode()).hexdigest()[:12]
    probe = os.path.join(out, f"{token_name}-{suffix}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as e:
        return [f"cannot write to OUT ({probe}: {_errno_text(e)})"]
    problems: List[str] = []
    second = -1
    try:
        try:
            os.write(fd, b"gulpdb pre-flight\n")
            os.fsync(fd)
            dir_fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as e:
            return [f"fsync fails on OUT's file system ({probe}: {_errno_text(e)})"]
        # The engine's writer lock is flock(2): it must work, and exclude a
        # second open file description (as it does across hosts on a shared
        # file system that supports it).
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            return [
                f"flock fails on OUT's file system ({probe}: {_errno_text(e)}); the engine's "
                "writer lock needs it"
            ]
        second = os.open(probe, os.O_RDONLY)
        try:
            fcntl.flock(second, fcntl.LOCK_EX | fcntl.LOCK_NB)
            problems.append(
                f"flock does not exclude on OUT's file system ({probe}): two writers of one "
                "shard would not wait for each other"
            )
        except BlockingIOError:
            pass
        except OSError as e:
            problems.append(f"flock fails on OUT's file system ({probe}: {_errno_text(e)})")
    finally:
        if second >= 0:
            os.close(second)
        os.close(fd)
        try:
            os.unlink(probe)
        except OSError:
            pass
    return problems


def _check_ffmpeg(ffmpeg: str) -> List[str]:
    found = shutil.which(ffmpeg)
    if found is None:
        return [
            f"ffmpeg ({ffmpeg!r}) is not on the worker's PATH ({os.environ.get('PATH', '')}); "
            "video sources need it"
        ]
    try:
        subprocess.run(
            [found, "-hide_banner", "-version"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as e:
        return [f"ffmpeg ({found}) does not run: {e}"]
    return []


def run_partition(task: Dict[str, Any]) -> Dict[str, Any]:
    """Ingests one partition into its shard, resuming what an earlier attempt committed.

    ``task`` holds ``version``, ``job_dir``, ``partition`` (its name),
    ``index``, ``size``, ``settings`` (the shard's creation settings, OUT's),
    ``options`` (ingest options for ``_gulpdb.ingest_run``), ``label_map``,
    ``topic`` (of progress events) and ``stop_file``.

    Returns the partition's result: the shard's videos and frames, the bad
    sources and warnings of this (complete) run, the worker and seconds.
    Raises the ingest's error (a bad source under ``strict`` included),
    :class:`Stopped` when the driver asked to stop.
    """
    start = time.monotonic()
    where = worker_label()
    if gulpdb.__version__ != task["version"]:
        raise RuntimeError(
            f"worker {where} runs gulpdb {gulpdb.__version__} and the driver "
            f"{task['version']}: install the same gulpdb on every worker"
        )
    job_dir = task["job_dir"]
    name = task["partition"]
    sources_file = os.path.join(job_dir, "sources", name + ".json")
    try:
        sources = read_json(sources_file)
    except OSError as e:
        raise RuntimeError(
            f"worker {where} cannot read {sources_file} ({_errno_text(e)}): OUT must be on a "
            "file system that every worker mounts at the same path"
        ) from None
    except ValueError as e:
        raise RuntimeError(f"{sources_file} is damaged: {e}") from None
    shard = os.path.join(job_dir, name)
    # Created with OUT's settings, whole or not at all (a worker may be killed
    # in the middle, and a duplicate of this task may race here); Ingest then
    # only opens it.
    if not _gulpdb.NativeDataset.exists(shard, ""):
        create_dataset(shard, task["settings"])

    worker = _worker()
    topic = task["topic"]
    index = task["index"]
    size = task["size"]
    stop_file = task["stop_file"]
    state = {"sent": 0.0, "checked": time.monotonic()}

    def send(done: int) -> None:
        if worker is not None:
            worker.log_event(topic, {"p": index, "done": done})

    def on_progress(done: int, total: int) -> None:
        # total excludes ids the shard already holds (an earlier attempt).
        now = time.monotonic()
        if now - state["sent"] >= _EVENT_INTERVAL or done == total:
            state["sent"] = now
            send(size - total + done)
        if now - state["checked"] >= _STOP_INTERVAL:
            state["checked"] = now
            if os.path.exists(stop_file):
                raise Stopped(f"partition {name}: stopped by the driver")

    bad: List[List[str]] = []
    warnings: List[List[str]] = []

    def on_problem(video_id: str, path: str, message: str, skipped: bool) -> None:
        (bad if skipped else warnings).append([video_id, display_path(path), message])

    options = dict(task["options"])
    options["dir"] = shard
    report = _gulpdb.ingest_run(
        options,
        sources=sources,
        label_map=task["label_map"],
        on_progress=on_progress,
        on_problem=on_problem,
        on_note=_ignore,
    )
    if report["interrupted_by"]:
        raise RuntimeError(
            f"partition {name} on worker {where}: interrupted by signal {report['interrupted_by']}"
        )
    with gulpdb.Dataset(shard, "r+") as ds:  # a read-only open of a network index may be refused
        stats = ds.stats()
    send(size)
    return {
        "partition": name,
        "sources": size,
        "videos": int(stats.videos),
        "frames": int(stats.frames),
        "added": int(report["added"]),
        "resumed": int(report["present"]),
        "bad": bad,
        "warnings": warnings,
        "worker": where,
        "seconds": round(time.monotonic() - start, 3),
    }


def _ignore(_: str) -> None:
    pass

