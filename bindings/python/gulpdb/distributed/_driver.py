"""The driver of a distributed ingest: plan, pre-flight, tasks, progress, attach.

See the package docstring (``gulpdb.distributed``) for what each step
guarantees; this module is the implementation.
"""

from __future__ import annotations

import dataclasses
import datetime
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import gulpdb
from gulpdb import _gulpdb

from . import _files, _worker
from ._files import Job, display_path, partition_name, read_json, write_json_atomic
from ._progress import ProgressBar

# Options that decide what the job writes: a re-run of an unfinished job must
# give the same ones (its plan keeps them). `seed` and `partitions` are
# compared only when given, since by default they are chosen by the first run.
CONTENT_OPTIONS = (
    "videos_dir",
    "frames_dir",
    "images_dir",
    "image_list",
    "labels",
    "label_name",
    "frame_rate",
    "frame_size",
    "quality",
    "keep_jpeg",
    "shuffle",
    "on_duplicate",
    "videos_per_chunk",
)
_PATH_OPTIONS = ("videos_dir", "frames_dir", "images_dir", "image_list", "labels")

# The options of the job itself, with their defaults. The ingest options, their
# defaults and their rules are the ingest library's (the option table that
# `gulpdb ingest` reads too): see ingest_option_names().
JOB_DEFAULTS: Dict[str, Any] = {
    "partitions": None,
    "task_threads": 1,
    "lock_timeout": 3600.0,
    "connect_timeout": 10.0,
    "worker_timeout": 60.0,
    "local_workers": None,
    "progress": None,
}

# Shards attached per Merge call: bounds the shard datasets open at once.
_MERGE_GROUP = 64
_POLL = 0.1


def flag(option: str) -> str:
    """The command-line spelling of an option."""
    return "--" + option.replace("_", "-")


class DistributedIngestError(RuntimeError):
    """A distributed ingest could not start or finish; the message says why, one
    line per problem (for example one per worker that failed the pre-flight check)."""


class IngestFailed(DistributedIngestError):
    """Some partitions failed (or ``strict`` stopped the job at a bad source).

    ``report`` is the :class:`IngestReport` of what was done: the shards of
    the partitions that completed are attached (except after a ``strict``
    stop, which attaches nothing); re-running the same command resumes the
    rest.
    """

    def __init__(self, message: str, report: "IngestReport") -> None:
        super().__init__(message)
        self.report = report


@dataclasses.dataclass
class BadSource:
    """A source that was skipped (or, among warnings, ingested with a warning)."""

    id: str
    path: str
    message: str


@dataclasses.dataclass
class PartitionFailure:
    """A partition whose task failed; its shard keeps what it committed."""

    partition: str
    error: str


@dataclasses.dataclass
class IngestReport:
    """What a distributed ingest did.

    ``videos`` and ``frames`` count the videos the job's shards hold (every
    one attached to OUT once the job is complete), ``bad`` the sources
    skipped, ``present`` the ids already in OUT when the job was planned,
    ``duplicates`` the ids listed twice, ``listed`` the sources listed.
    ``seconds`` is the wall time of this call; a re-run of a finished job
    reports the same totals and does nothing. ``attached`` is False when
    the job stopped (``strict``) before attaching its shards to OUT.
    """

    out: str
    job: str
    videos: int = 0
    frames: int = 0
    bad: List[BadSource] = dataclasses.field(default_factory=list)
    warnings: List[BadSource] = dataclasses.field(default_factory=list)
    present: int = 0
    duplicates: int = 0
    listed: int = 0
    partitions: int = 0
    failed: List[PartitionFailure] = dataclasses.field(default_factory=list)
    seed: Optional[int] = None
    workers: int = 0
    seconds: float = 0.0
    already_done: bool = False
    attached: bool = True

    def to_dict(self) -> Dict[str, Any]:
        """The report as plain JSON-able values."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "IngestReport":
        """The report :meth:`to_dict` gave."""
        d = dict(d)
        d["bad"] = [BadSource(**b) for b in d.get("bad", [])]
        d["warnings"] = [BadSource(**b) for b in d.get("warnings", [])]
        d["failed"] = [PartitionFailure(**f) for f in d.get("failed", [])]
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def summary(self) -> str:
        """One line, as `gulpdb ingest` prints it."""
        extra = f", {self.duplicates} listed twice" if self.duplicates else ""
        failed = f", {len(self.failed)} partitions failed" if self.failed else ""
        where = self.out if self.attached else f"the shards of {self.out} (not attached)"
        return (
            f"ingested {self.videos} videos ({self.frames} frames) into {where}; "
            f"{self.present} already present, {len(self.bad)} bad sources skipped{extra}{failed} "
            f"({self.partitions} partitions, {self.workers} workers, {self.seconds:.1f} s)"
        )


def ingest_option_names() -> List[str]:
    """The ingest options a distributed ingest takes: those of the option table
    that ``gulpdb ingest`` reads (``_`` for ``-``), but ``num_workers`` (each
    task decodes on ``task_threads``)."""
    return [
        info["name"].replace("-", "_")
        for info in _gulpdb.ingest_command_options()
        if info["distributed"]
    ]


def normalize_options(given: Dict[str, Any]) -> Dict[str, Any]:
    """The options with defaults filled in and paths made absolute; raises
    TypeError for an unknown option and ValueError for an invalid one.

    Ingest options (None: not given) are read by the ingest library with the
    rules of ``gulpdb ingest``'s command line, which also supplies their
    defaults; ``"given"`` lists those given, for the warnings about options
    the job would not use (:func:`ignored_option_warnings`).
    """
    names = ingest_option_names()
    unknown = sorted(set(given) - set(names) - set(JOB_DEFAULTS))
    if unknown:
        raise TypeError(f"unknown option(s): {', '.join(unknown)}")
    ingest_given = {k: given[k] for k in names if given.get(k) is not None}
    every = _gulpdb.ingest_options(ingest_given)
    o: Dict[str, Any] = {k: every[k] for k in names}
    for key in _PATH_OPTIONS:
        if o[key] is not None:
            o[key] = os.path.abspath(o[key])
    o.update(JOB_DEFAULTS)
    o.update({k: given[k] for k in JOB_DEFAULTS if given.get(k) is not None})
    for key in ("partitions", "task_threads", "local_workers"):
        if o[key] is not None:
            o[key] = _positive_int(o[key], flag(key))
    for key in ("lock_timeout", "connect_timeout", "worker_timeout"):
        o[key] = float(o[key])
        if not o[key] > 0:
            raise ValueError(f"{flag(key)} must be positive")
    o["given"] = sorted(ingest_given)
    problem = _gulpdb.ingest_validate(_listing_options(o, "."))
    if problem:
        raise ValueError(problem)
    return o


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            number = int(str(value), 10)
        except ValueError:
            raise ValueError(f"{name} must be a whole number >= 1, not {value!r}") from None
    else:
        number = value
    if number < 1:
        raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    return number


def ignored_option_warnings(o: Dict[str, Any], out: str) -> List[str]:
    """What ``gulpdb ingest`` warns about the given options that this job would
    not use (``--seed`` without ``--shuffle``, ``--videos-per-chunk`` for an
    existing OUT, ...): the ingest library's own list."""
    return list(_gulpdb.ingest_warnings(_listing_options(o, out), o["given"]))


def _listing_options(o: Dict[str, Any], out: str) -> Dict[str, Any]:
    """The options of ``_gulpdb.ingest_list_sources`` / ``ingest_validate``."""
    d: Dict[str, Any] = {k: o[k] for k in ingest_option_names() if o[k] is not None}
    d["dir"] = out
    return d


def _content(o: Dict[str, Any]) -> Dict[str, Any]:
    return {k: o[k] for k in CONTENT_OPTIONS}


def _digest(sources: Sequence[Dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for s in sources:
        h.update(
            json.dumps(s, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogateescape")
        )
        h.update(b"\n")
    return h.hexdigest()


def _needs_ffmpeg(sources: Sequence[Dict[str, Any]]) -> bool:
    for s in sources:
        if s["kind"] == "video":
            return True
        if s["kind"] == "image" and not s["path"].lower().endswith((".jpg", ".jpeg")):
            return True
    return False


def _split(n: int, k: int) -> List[Tuple[int, int]]:
    """[start, stop) of k nearly equal contiguous parts of n items."""
    base, extra = divmod(n, k)
    bounds, start = [], 0
    for i in range(k):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def _describe(exc: BaseException) -> str:
    """One line for an exception raised on a worker."""
    name = type(exc).__name__
    if name == "KilledWorker":
        return (
            "its worker died each time it ran it (Dask gave up: see the workers' logs, for "
            "example for running out of memory)"
        )
    text = str(exc).strip().splitlines()
    message = text[0] if text else ""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror if not exc.filename else f"{exc.strerror}: {exc.filename}"
    if isinstance(exc, (OSError, ValueError, KeyError, RuntimeError, _worker.Stopped)):
        return message or name
    return f"{name}: {message}" if message else name


def local_cluster(workers: int) -> Any:
    """The LocalCluster of a driver started without a scheduler: `workers`
    processes of one thread on 127.0.0.1, no dashboard, and no statistical
    profiler (it samples the workers' threads every 10 ms for the dashboard:
    about half of an idle worker's CPU time, measured here)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.worker.profile.enabled": False}):
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )


class _Driver:
    def __init__(self, out: str, options: Dict[str, Any]) -> None:
        self.out = os.path.abspath(os.fspath(out))
        self.o = options
        self.start = time.monotonic()
        self.nonce = secrets.token_hex(6)
        self.created_out = False
        self.lock_fd = -1
        self.client: Any = None
        self.cluster: Any = None
        self.owns_client = False
        self.bar: Optional[ProgressBar] = None
        self.counts: Dict[int, int] = {}
        self.counts_lock = threading.Lock()
        self._listed: Optional[List[Dict[str, Any]]] = None

    # ---- output -------------------------------------------------------------------

    def say(self, text: str) -> None:
        if self.o["quiet"]:
            return
        if self.bar is not None:
            self.bar.line(text)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    # ---- OUT ----------------------------------------------------------------------

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

    # ---- the plan ------------------------------------------------------------------

    def find_job(self, out_exists: bool) -> Tuple[Job, Optional[Dict[str, Any]], bool]:
        """The job to run: (job, its plan or None when to be planned, finished)."""
        latest = _files.latest_job(self.out) if out_exists else None
        if latest is None:
            return Job(self.out, 1), None, False
        if not latest.planned():
            # Planning was interrupted before plan.json was written: no task
            # ran, so the directory holds only sources files; start again.
            # Anything else (shards) is not ours to remove.
            others = [e for e in os.listdir(latest.dir) if e not in ("sources", "results")]
            if others:
                raise DistributedIngestError(
                    f"{latest.dir} has no plan.json but holds {', '.join(sorted(others)[:3])}: "
                    "it is not a job this driver can resume or replace; move it away if it is "
                    "not attached to the dataset"
                )
            shutil.rmtree(latest.dir)
            return Job(self.out, latest.number), None, False
        plan = latest.plan()
        diffs = self.differences(plan)
        if latest.done():
            if not diffs and plan["listing_digest"] == _digest(self.list_sources()):
                return latest, plan, True
            return Job(self.out, latest.number + 1), None, False
        if diffs:
            raise DistributedIngestError(
                f"{latest.dir} is an unfinished ingest planned with other options "
                f"({'; '.join(diffs)}): re-run it with the options of its plan to finish it"
            )
        return latest, plan, False

    def differences(self, plan: Dict[str, Any]) -> List[str]:
        diffs = []
        for key in CONTENT_OPTIONS:
            if plan["options"].get(key) != self.o[key]:
                there, here = plan["options"].get(key), self.o[key]
                diffs.append(f"{flag(key)}: {there!r} there, {here!r} here")
        if self.o["shuffle"] and self.o["seed"] is not None and self.o["seed"] != plan["seed"]:
            diffs.append(f"--seed: {plan['seed']} there, {self.o['seed']} here")
        given = self.o["partitions"]
        if given is not None and int(given) != len(plan["partitions"]):
            diffs.append(f"--partitions: {len(plan['partitions'])} there, {given} here")
        return diffs

    def list_sources(self) -> List[Dict[str, Any]]:
        if self._listed is None:
            self._listed = _gulpdb.ingest_list_sources(_listing_options(self.o, self.out))
        return self._listed

    def prepare_plan(self, out_exists: bool) -> Dict[str, Any]:
        """Everything of a new plan that needs no cluster; writes nothing."""
        listed = self.list_sources()
        digest = _digest(listed)
        seed = None
        order = listed
        if self.o["shuffle"]:
            seed = self.o["seed"] if self.o["seed"] is not None else secrets.randbits(32)
            order = [listed[i] for i in _gulpdb.ingest_shuffled_order(len(listed), seed)]
        # Ids listed twice, as ingest treats them: an error, or the first
        # (skip) or last (replace) entry kept.
        keep = [True] * len(order)
        seen: set = set()
        duplicates = 0
        indices = range(len(order))
        if self.o["on_duplicate"] == "replace":
            indices = range(len(order) - 1, -1, -1)
        for i in indices:
            if order[i]["id"] in seen:
                if self.o["on_duplicate"] == "error":
                    raise ValueError(
                        f"ingest {self.out}: id '{order[i]['id']}' is listed twice (see "
                        "--on-duplicate)"
                    )
                keep[i] = False
                duplicates += 1
            else:
                seen.add(order[i]["id"])
        # Sources no dataset can hold (an id or label that is not UTF-8): bad
        # sources, reported as ingest reports them, before anything is written.
        bad: List[List[str]] = []
        for i, s in enumerate(order):
            if keep[i] and "problem" in s:
                if self.o["strict"]:
                    raise ValueError(f"ingest '{s['id']}': {s['problem']}")
                bad.append([s["id"], display_path(s["path"]), s["problem"]])
                keep[i] = False
        label_map = _gulpdb.ingest_label_map(self.out, [s for s in order if "problem" not in s])
        present = 0
        if out_exists and self.o["on_duplicate"] != "replace":
            # Opened read-write: the driver holds OUT's lock, and a read-only
            # open of an index on a network file system may be refused.
            with gulpdb.Dataset(self.out, "r+") as ds:
                for i, s in enumerate(order):
                    if keep[i] and s["id"] in ds:
                        if self.o["on_duplicate"] == "error":
                            raise ValueError(
                                f"ingest {self.out}: id '{s['id']}' is already in the dataset "
                                "(see --on-duplicate)"
                            )
                        keep[i] = False
                        present += 1
        todo = [s for i, s in enumerate(order) if keep[i]]
        if seed is not None and self.o["seed"] is None:
            self.say(f"gulpdb.distributed: shuffled with --seed {seed}")
        samples = [s["path"] for s in (todo[:1] + todo[-1:]) if s["path"]]
        return {
            "format": _files.PLAN_FORMAT,
            "gulpdb_version": gulpdb.__version__,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "out": self.out,
            "options": _content(self.o),
            "seed": seed,
            "listing_digest": digest,
            "listed": len(listed),
            "duplicates": duplicates,
            "present": present,
            "label_map": sorted(label_map.items(), key=lambda kv: kv[1]),
            "bad": bad,
            "needs_ffmpeg": _needs_ffmpeg(todo),
            "sample_paths": samples,
            "todo": todo,  # not stored in plan.json: split into the sources files
        }

    def commit_plan(self, job: Job, plan: Dict[str, Any], out_exists: bool) -> Dict[str, Any]:
        """Creates OUT (when new), writes label2idx.json, the sources and plan.json."""
        todo = plan.pop("todo")
        if not out_exists:
            _files.create_dataset(
                self.out,
                {
                    "videos_per_chunk": self.o["videos_per_chunk"],
                    "bytes_per_chunk": self.o["bytes_per_chunk"],
                    "checksums": not self.o["no_checksums"],
                },
            )
        with gulpdb.Dataset(self.out, "r+") as ds:
            stats = ds.stats()
        plan["settings"] = {
            "videos_per_chunk": int(stats.videos_per_chunk),
            "bytes_per_chunk": int(stats.bytes_per_chunk),
            "checksums": bool(stats.checksums),
        }
        label_map = dict(plan["label_map"])
        _gulpdb.ingest_update_label_map_file(self.out, label_map)
        if self.o["partitions"] is not None:
            wanted = int(self.o["partitions"])
        else:
            wanted = 4 * max(1, sum(self.client.nthreads().values()))
        count = min(wanted, len(todo))
        os.makedirs(os.path.join(job.dir, "sources"), exist_ok=True)
        os.makedirs(os.path.join(job.dir, "results"), exist_ok=True)
        partitions = []
        for index, (start, stop) in enumerate(_split(len(todo), count) if count else []):
            name = partition_name(index)
            write_json_atomic(job.sources_path(name), todo[start:stop])
            partitions.append({"name": name, "size": stop - start})
        plan["partitions"] = partitions
        write_json_atomic(job.plan_path, plan)
        return plan

    # ---- the cluster ---------------------------------------------------------------

    def connect(self, client_or_address: Any) -> None:
        from distributed import Client

        if isinstance(client_or_address, Client):
            self.client = client_or_address
            return
        self.owns_client = True
        if client_or_address is None:
            self.cluster = local_cluster(self.o["local_workers"] or os.cpu_count() or 1)
            self.client = Client(self.cluster, set_as_default=False)
            return
        address = str(client_or_address)
        timeout = self.o["connect_timeout"]
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DistributedIngestError(
                f"cannot reach the Dask scheduler at {address} within {timeout:g} s: {reason}"
            ) from None

    def wait_for_workers(self) -> Dict[str, int]:
        timeout = self.o["worker_timeout"]
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            raise DistributedIngestError(
                f"no worker joined the Dask scheduler at {self.client.scheduler.address} within "
                f"{timeout:g} s"
            ) from None
        return dict(self.client.nthreads())

    def close(self) -> None:
        if self.owns_client and self.client is not None:
            try:
                self.client.close(timeout=10)
            except Exception:  # closing after a lost scheduler: nothing left to do
                pass
        if self.cluster is not None:
            try:
                self.cluster.close(timeout=20)
            except Exception:
                pass
        self.client = self.cluster = None

    def preflight(self, plan: Dict[str, Any], workers: Dict[str, int]) -> None:
        """Runs the pre-flight check on every worker; raises one line per problem."""
        token_name = f".gulpdb-preflight-{self.nonce}"
        token = secrets.token_hex(16)
        token_path = os.path.join(self.out, token_name)
        fd = os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, token.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        check = {
            "out": self.out,
            "token_name": token_name,
            "token": token,
            "version": gulpdb.__version__,
            "ffmpeg": self.o["ffmpeg"] if plan["needs_ffmpeg"] else None,
            "paths": plan["sample_paths"],
        }
        futures = {}
        try:
            for i, address in enumerate(sorted(workers)):
                futures[address] = self.client.submit(
                    _worker.preflight,
                    check,
                    workers=[address],
                    allow_other_workers=False,
                    pure=False,
                    key=f"gulpdb-preflight-{self.nonce}-{i}",
                )
            timeout = self.o["worker_timeout"]
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and any(
                f.status == "pending" for f in futures.values()
            ):
                time.sleep(0.05)
            problems = []
            for address, future in futures.items():
                if future.status == "finished":
                    result = future.result()
                    problems += [f"worker {result['worker']}: {p}" for p in result["problems"]]
                elif future.status == "error":
                    exc = future.exception()
                    if isinstance(exc, ImportError):
                        problems.append(
                            f"worker {address}: cannot import gulpdb ({exc}): install the same "
                            "gulpdb on every worker (or put it on the workers' PYTHONPATH)"
                        )
                    else:
                        problems.append(
                            f"worker {address}: pre-flight check failed: {_describe(exc)}"
                        )
                else:
                    problems.append(
                        f"worker {address}: no answer to the pre-flight check within {timeout:g} s"
                    )
            if problems:
                raise DistributedIngestError("\n".join(problems))
        finally:
            for future in futures.values():
                future.cancel()
            try:
                os.unlink(token_path)
            except OSError:
                pass

    # ---- running -------------------------------------------------------------------

    def on_event(self, event: Any) -> None:
        msg = event[1] if isinstance(event, (tuple, list)) else event
        try:
            p, done = int(msg["p"]), int(msg["done"])
        except (TypeError, KeyError, ValueError):
            return
        with self.counts_lock:
            if done > self.counts.get(p, 0):
                self.counts[p] = done

    def run_tasks(
        self, job: Job, plan: Dict[str, Any], results: Dict[str, Dict[str, Any]]
    ) -> List[PartitionFailure]:
        """Runs the partitions without a result; saves each result as it arrives."""
        parts = plan["partitions"]
        sizes = {i: p["size"] for i, p in enumerate(parts)}
        total = sum(sizes.values())
        self.bar = ProgressBar("ingest", total, quiet=self.o["quiet"])
        done_before = sum(sizes[i] for i, p in enumerate(parts) if p["name"] in results)
        self.bar.begin(done_before)
        todo = [i for i, p in enumerate(parts) if p["name"] not in results]
        if not todo:
            self.bar.finish()
            return []
        try:
            os.unlink(job.stop_path)  # from an interrupted run
        except FileNotFoundError:
            pass
        topic = f"gulpdb-ingest-{self.nonce}"
        self.client.subscribe_topic(topic, self.on_event)
        options = {
            "frame_rate": self.o["frame_rate"],
            "frame_size": self.o["frame_size"],
            "quality": self.o["quality"],
            "keep_jpeg": self.o["keep_jpeg"],
            "ffmpeg": self.o["ffmpeg"],
            "num_workers": self.o["task_threads"],
            "batch": self.o["batch"],
            # Resuming: ids the shard already holds are skipped. Duplicates
            # across the job were settled by the plan.
            "on_duplicate": "skip",
            "strict": self.o["strict"],
            "quiet": True,
            "lock_timeout": self.o["lock_timeout"],
            "catch_signals": False,
            "write_label_map": True,
        }
        label_map = dict(plan["label_map"])
        futures = {}
        for i in todo:
            name = parts[i]["name"]
            task = {
                "version": gulpdb.__version__,
                "job_dir": job.dir,
                "partition": name,
                "index": i,
                "size": sizes[i],
                "settings": plan["settings"],
                "options": options,
                "label_map": label_map,
                "topic": topic,
                "stop_file": job.stop_path,
            }
            futures[i] = self.client.submit(
                _worker.run_partition,
                task,
                key=f"gulpdb-ingest-{job.name}-{name}-{self.nonce}",
                pure=False,
            )
        failures: List[PartitionFailure] = []
        finished: Dict[int, int] = {}
        progress: Optional[Callable[[int, int], Any]] = self.o["progress"]
        try:
            while futures:
                for i, future in list(futures.items()):
                    status = future.status
                    if status == "finished":
                        result = future.result()
                        write_json_atomic(job.result_path(parts[i]["name"]), result)
                        results[parts[i]["name"]] = result
                        finished[i] = sizes[i]
                        del futures[i]
                    elif status in ("error", "cancelled"):
                        # ("lost" is not an end: the worker holding a finished
                        # result died before it was fetched, and Dask runs the
                        # task again, which finds its shard complete.)
                        exc = future.exception() if status == "error" else None
                        text = _describe(exc) if exc is not None else f"the task was {status}"
                        failures.append(PartitionFailure(parts[i]["name"], text))
                        with self.counts_lock:
                            finished[i] = min(self.counts.get(i, 0), sizes[i])
                        del futures[i]
                        if self.o["strict"]:
                            self.stop(job, futures)
                            return failures
                if self.client.status not in ("running", "connecting"):
                    raise DistributedIngestError(
                        f"lost the connection to the Dask scheduler ({self.client.status}); "
                        "re-run the same command to resume"
                    )
                with self.counts_lock:
                    counts = dict(self.counts)
                done = done_before + sum(
                    finished.get(i, min(counts.get(i, 0), sizes[i])) for i in todo
                )
                self.bar.update(done)
                if progress is not None:
                    progress(self.bar.done, total)
                if futures:
                    time.sleep(_POLL)
        except KeyboardInterrupt:
            self.stop(job, futures)
            raise
        finally:
            try:
                self.client.unsubscribe_topic(topic)
            except Exception:
                pass
        self.bar.finish()
        if progress is not None:
            progress(self.bar.done, total)
        return failures

    def stop(self, job: Job, futures: Dict[int, Any]) -> None:
        """Asks running tasks to stop (they look for the stop file) and cancels the rest."""
        try:
            with open(job.stop_path, "w", encoding="utf-8") as f:
                f.write("stop\n")
        except OSError:
            pass
        for future in futures.values():
            future.cancel()
        if self.bar is not None:
            self.bar.finish()

    def attach(self, job: Job, plan: Dict[str, Any], names: Sequence[str]) -> None:
        """Attaches the shards of `names` to OUT in place (engine Merge: one
        transaction per shard; shards attached by an earlier run are skipped)."""
        shards = [job.shard_path(n) for n in names]
        if not shards:
            return
        self.say(f"gulpdb.distributed: attaching {len(shards)} shards to {self.out}")
        for start in range(0, len(shards), _MERGE_GROUP):
            _gulpdb.merge(
                self.out,
                shards[start : start + _MERGE_GROUP],
                on_duplicate=plan["options"]["on_duplicate"],
                lock_timeout=self.o["lock_timeout"],
            )

    # ---- the whole job -------------------------------------------------------------

    def report(
        self, job: Job, plan: Dict[str, Any], results: Dict[str, Dict[str, Any]],
        failures: List[PartitionFailure], workers: int,
    ) -> IngestReport:
        r = IngestReport(out=self.out, job=job.dir)
        r.bad += [BadSource(*b) for b in plan.get("bad", [])]
        for p in plan["partitions"]:
            res = results.get(p["name"])
            if res is None:
                continue
            r.videos += int(res["videos"])
            r.frames += int(res["frames"])
            r.bad += [BadSource(*b) for b in res["bad"]]
            r.warnings += [BadSource(*w) for w in res["warnings"]]
        r.present = int(plan["present"])
        r.duplicates = int(plan["duplicates"])
        r.listed = int(plan["listed"])
        r.partitions = len(plan["partitions"])
        r.failed = failures
        r.seed = plan["seed"]
        r.workers = workers
        r.seconds = round(time.monotonic() - self.start, 3)
        return r

    def run(self, client_or_address: Any) -> IngestReport:
        out_exists = self.check_out()
        for text in ignored_option_warnings(self.o, self.out):
            warnings.warn(text, UserWarning, stacklevel=3)
        committed = False
        try:
            if out_exists:
                self.lock_out()
            job, plan, finished = self.find_job(out_exists)
            if finished:
                assert plan is not None
                saved = IngestReport.from_dict(read_json(job.done_path))
                saved.seconds = round(time.monotonic() - self.start, 3)
                saved.already_done = True
                return saved
            new_plan = self.prepare_plan(out_exists) if plan is None else None
            self.connect(client_or_address)
            workers = self.wait_for_workers()
            if not out_exists:
                self.lock_out()
            checked = plan if plan is not None else new_plan
            assert checked is not None
            self.preflight(checked, workers)
            if plan is None:
                assert new_plan is not None
                plan = self.commit_plan(job, new_plan, out_exists)
            committed = True
            results = job.results()
            failures = self.run_tasks(job, plan, results)
            if failures and self.o["strict"]:
                report = self.report(job, plan, results, failures, len(workers))
                report.attached = False
                first = failures[0]
                raise IngestFailed(
                    f"stopped (--strict): partition {first.partition}: {first.error}; nothing "
                    f"was attached, the work done is kept in {job.dir} and re-running resumes it",
                    report,
                )
            done = [p["name"] for p in plan["partitions"] if p["name"] in results]
            self.attach(job, plan, done)
            report = self.report(job, plan, results, failures, len(workers))
            if failures:
                raise IngestFailed(
                    f"{len(failures)} of {len(plan['partitions'])} partitions failed; the "
                    f"others are attached to {self.out}; re-run the same command to retry them",
                    report,
                )
            write_json_atomic(job.done_path, report.to_dict())
            return report
        except BaseException:
            if not committed:
                self.unlock_out()
                self.remove_created_out()
            raise
        finally:
            self.close()
            self.unlock_out()


def run(client_or_address: Any, out: str, options: Dict[str, Any]) -> IngestReport:
    """:func:`gulpdb.distributed.ingest` with its options in a dict."""
    return _Driver(out, normalize_options(options)).run(client_or_address)
