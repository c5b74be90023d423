"""Distributed ingest on dask.distributed: one dataset built by many machines, exactly once.

The command::

    python3 -m gulpdb.distributed --scheduler tcp://sched:8786 ingest /shared/ssv2 \\
        --videos-dir /shared/raw/videos --labels /shared/raw/train.json --label-name template \\
        --frame-size 128

takes the options of ``gulpdb ingest`` — one table in the ingest library
gives both commands their names, defaults, help and rules, and the same
warnings for options a run would not use (``--seed`` without ``--shuffle``,
``--videos-per-chunk`` for an existing OUT, ...) — except ``--num-workers``
(``--task-threads`` per task) and ``--index-dir``, plus ``--partitions N``;
without ``--scheduler`` it starts a ``LocalCluster`` on 127.0.0.1. From
Python (the keyword arguments are the same options, ``_`` for ``-``)::

    from gulpdb.distributed import ingest
    report = ingest("tcp://sched:8786", "/shared/ssv2", videos_dir=..., labels=...)
    report = ingest(client, "/shared/ssv2", frames_dir=...)   # a distributed.Client
    print(report.videos, report.frames, report.bad, report.seconds)

How a job runs, and what each step guarantees:

1. **Plan** (on the driver). The sources are listed and the label map is
   computed by the same C++ library as ``gulpdb ingest`` (``ListSources``,
   ``ComputeLabelMap``, ``ShuffledOrder``), so the ids, labels, ``idx``
   values and order are exactly those of a one-machine ingest. Ids listed
   twice are settled as ingest settles them (an error, the first entry kept
   under ``skip``, the last under ``replace``); ids already in OUT are
   dropped (``skip``) or refused (``error``). The list is cut into
   ``--partitions`` contiguous partitions (default: 4 per worker thread).
   The plan is written inside OUT: ``OUT/shards/ingest-0001/plan.json``
   (options, seed, label map, partitions), each partition's sources in
   ``sources/part-NNNNN.json``; OUT (created if new, with
   ``--videos-per-chunk``) gets its ``label2idx.json`` first, as with
   ``gulpdb ingest``. A re-run of an unfinished job reuses its plan — the
   same partitions and the same shuffle, even for ``--shuffle`` without
   ``--seed`` — and refuses different options with an error naming them.
2. **Pre-flight** (one small task per worker, before anything is
   committed): the worker must read a token file the driver wrote in OUT
   (OUT visible at the same path), write and fsync a file there, take and
   be refused a second ``flock`` on it (the engine's writer lock), find and
   run ``ffmpeg`` when sources need it, see the sources, and run the same
   gulpdb version as the driver. Each failure is one line naming the
   worker; an unreachable scheduler fails within ``--connect-timeout``, a
   cluster without workers within ``--worker-timeout``.
3. **Tasks**: partition ``p`` is ingested into its own shard dataset,
   ``OUT/shards/ingest-0001/part-0000p``, created with OUT's settings
   (videos per chunk, bytes per chunk, checksums), with the plan's label
   map. A task that Dask runs again (its worker died, it was stolen, or a
   duplicate runs alongside) resumes the shard: ids already committed are
   skipped, a half-written batch was rolled back by the engine, and a
   concurrent duplicate waits for the shard's writer lock
   (``--lock-timeout``, default an hour) instead of failing. The driver
   keeps each finished task's result in ``results/part-0000p.json``.
4. **Attach**: when every task is done, the shards are attached to OUT in
   place with the engine's merge (no frame copied, one transaction per
   shard, a shard attached before is not attached twice), and the report is
   saved in ``done.json``. Re-running the command then does nothing and
   reports the same totals; a run with other options, or whose source
   listing changed, is a new job (``ingest-0002``) that extends OUT.

So a driver killed at any point is re-run with the same command: the plan
is reused, finished partitions are not run again, unfinished ones resume,
and attaching is idempotent — no video is lost or duplicated.

Failures: a bad source is skipped and listed at the end (``skipping 'id':
...``, as ``gulpdb ingest`` does; a source whose file name is not UTF-8 is
one, found by the plan and named escaped), or with ``strict`` stops the job: running
tasks stop (they look for ``OUT/shards/ingest-N/stop``), nothing is attached,
and a re-run resumes. A task that fails otherwise (an I/O error, a worker
that died every time it ran it) is a partition failure: the other shards
are attached, the failures are listed and :class:`IngestFailed` is raised
(the command exits 1); re-running retries them. Ctrl-C stops the tasks and
exits 130; re-running resumes.

The shared directory: OUT must be one directory that the driver and every
worker mount at the same path (NFS, CephFS, Lustre, GPFS, ...), supporting
``flock`` between hosts (the engine's writer lock: one writer per shard; on
NFS, a mount without ``nolock``/``local_lock``) and ``fsync`` (commits);
source paths too must be the same on every worker. Each shard is written by
one worker at a time and read by nobody until it is attached; OUT's own
index is written only by the driver. Readers on other hosts should read a
copy of the index, not the live file (LMDB's lock table is per host).
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable, Optional, Union

from .. import _gulpdb
from . import _driver
from ._options import JOB_DEFAULTS
from ._report import (
    BadSource,
    DistributedIngestError,
    IngestFailed,
    IngestReport,
    PartitionFailure,
)

__all__ = [
    "ingest",
    "IngestReport",
    "BadSource",
    "PartitionFailure",
    "DistributedIngestError",
    "IngestFailed",
]

_Path = Union[str, "os.PathLike[str]"]


def ingest(
    client_or_address: Any,
    out: _Path,
    *,
    progress: Optional[Callable[[int, int], Any]] = None,
    **options: Any,
) -> IngestReport:
    """Ingests sources into the dataset ``out`` on a Dask cluster, exactly once.

    Args:
        client_or_address: a ``distributed.Client`` (left open), a scheduler
            address (``"tcp://host:8786"``), or None to start a
            ``LocalCluster`` on 127.0.0.1 (``local_workers`` processes, one
            per core by default) for the call.
        out: the dataset, created when missing (an empty directory is
            fine); on a file system every worker mounts at the same path.
        videos_dir, frames_dir, images_dir, image_list, labels, label_name,
        frame_rate, frame_size, quality, keep_jpeg, codec, gop, crf, ffmpeg,
        shuffle, seed, batch, on_duplicate, strict, quiet, videos_per_chunk,
        bytes_per_chunk, no_checksums: the options of ``gulpdb ingest``
            (``--frame-rate`` is ``frame_rate``, ...), read by the same
            rules, with the same defaults (None: the default; ``gulpdb
            ingest --help`` lists them); ``ffmpeg`` is the program the
            workers run. An option this job would not use is a UserWarning
            (as ``gulpdb ingest`` warns).
        partitions: tasks (and shards); default 4 per worker thread.
        task_threads: decode threads of each task (default 1; a Dask worker
            runs as many tasks at once as it has threads).
        lock_timeout: seconds a task waits for its shard's writer lock
            while a duplicate of it runs, and the attach for OUT's (default
            3600).
        connect_timeout: seconds to reach the scheduler (default 10).
        worker_timeout: seconds to wait for a first worker, and for the
            pre-flight answers (default 60).
        local_workers: processes of the LocalCluster started when
            ``client_or_address`` is None (default: one per core; at least 1).
        progress: called as ``progress(videos_done, videos_total)`` while
            the tasks run.

    Returns:
        the :class:`IngestReport` (videos, frames, bad sources, seconds, ...).

    Raises:
        ValueError: invalid options, a malformed label list, an id listed
            twice or already in OUT under ``on_duplicate="error"``.
        FileNotFoundError: a missing source directory or list.
        TypeError: an unknown option.
        DistributedIngestError: the scheduler cannot be reached, no worker
            joins, a worker fails the pre-flight check (one line each), OUT
            is not a dataset, another driver works on OUT, or an unfinished
            job in OUT was planned with other options. Nothing was
            committed.
        IngestFailed: partitions failed, or ``strict`` stopped the job;
            ``.report`` says what was done.
    """
    return _driver.run(client_or_address, os.fspath(out), dict(options, progress=progress))


def _signature() -> inspect.Signature:
    """ingest()'s signature as help() and IDEs show it: one keyword argument
    per option of the ingest library's table (``_`` for ``-``) and of the job,
    all None by default (None: the option's own default)."""
    kinds = {"path": _Path, "text": str, "choice": str, "whole_number": int,
             "number": float, "switch": bool}
    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("client_or_address", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=Any),
        inspect.Parameter("out", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=_Path),
    ]
    for info in _gulpdb.ingest_command_options():
        if info["distributed"]:
            kind = kinds[info["kind"]]
            hint = Optional[kind]
            params.append(inspect.Parameter(info["name"].replace("-", "_"), keyword, default=None,
                                            annotation=hint))
    for name in JOB_DEFAULTS:
        if name != "progress":
            params.append(inspect.Parameter(name, keyword, default=None, annotation=Optional[Any]))
    params.append(inspect.Parameter("progress", keyword, default=None,
                                    annotation=Optional[Callable[[int, int], Any]]))
    return inspect.Signature(params, return_annotation=IngestReport)


ingest.__signature__ = _signature()  # type: ignore[attr-defined]
