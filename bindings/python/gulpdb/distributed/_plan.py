"""The plan of a distributed ingest (step 1 of the package docstring): the
sources listed, ordered and settled exactly as `gulpdb ingest` would, cut into
partitions and written into OUT, or the unfinished job whose plan is reused."""

from __future__ import annotations

import datetime
import hashlib
import itertools
import json
import os
import secrets
import shutil
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import gulpdb
from gulpdb import _gulpdb

from . import _files
from ._files import Job, display_path, partition_name, write_json_atomic
from ._options import CONTENT_OPTIONS, content, flag, listing_options
from ._report import DistributedIngestError

__all__ = ["Planner"]


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


def _sample_paths(todo: List[Dict[str, Any]]) -> List[str]:
    """What the pre-flight asks every worker to see: the first and the last
    source (of the first and last 100) that the driver sees itself. A bad
    source, such as a dangling link, is reported by its task as ``gulpdb
    ingest`` reports it, not taken for a mount that differs between hosts."""
    def first(sources: Iterable[Dict[str, Any]]) -> Optional[str]:
        return next((s["path"] for s in itertools.islice(sources, 100)
                     if s["path"] and os.path.exists(s["path"])), None)
    found = [first(todo), first(reversed(todo))]
    return list(dict.fromkeys(p for p in found if p is not None))


class Planner:
    """Finds or makes the plan of the job that ingests ``options`` into ``out``;
    ``say`` prints a note. Not thread-safe: the driver's thread only."""

    def __init__(self, out: str, options: Dict[str, Any], say: Callable[[str], None]) -> None:
        self.out = out
        self.o = options
        self.say = say
        self._listed: Optional[List[Dict[str, Any]]] = None

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
        # A plan made before an option existed used its default.
        defaults = _gulpdb.ingest_options({})
        for key in CONTENT_OPTIONS:
            if plan["options"].get(key, defaults.get(key)) != self.o[key]:
                there, here = plan["options"].get(key, defaults.get(key)), self.o[key]
                diffs.append(f"{flag(key)}: {there!r} there, {here!r} here")
        if self.o["shuffle"] and self.o["seed"] is not None and self.o["seed"] != plan["seed"]:
            diffs.append(f"--seed: {plan['seed']} there, {self.o['seed']} here")
        given = self.o["partitions"]
        if given is not None and int(given) != len(plan["partitions"]):
            diffs.append(f"--partitions: {len(plan['partitions'])} there, {given} here")
        return diffs

    def list_sources(self) -> List[Dict[str, Any]]:
        if self._listed is None:
            self._listed = _gulpdb.ingest_list_sources(listing_options(self.o, self.out))
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
        # Ids listed twice and sources no dataset can hold, decided by the
        # engine as ingest decides them (ingest::PlanSources), before anything
        # is written.
        planned = _gulpdb.ingest_plan_sources(
            self.out, self.o["on_duplicate"], bool(self.o["strict"]), order
        )
        keep: List[bool] = planned["keep"]
        duplicates = planned["duplicates"]
        bad = [[order[i]["id"], display_path(order[i]["path"]), order[i]["problem"]]
               for i in planned["bad"]]  # fmt: skip
        label_map = _gulpdb.ingest_label_map(self.out, [s for s in order if "problem" not in s])
        present = 0
        if out_exists:
            # Opened read-write: the driver holds OUT's lock, and a read-only
            # open of an index on a network file system may be refused.
            with gulpdb.Dataset(self.out, "r+") as ds:
                keep, present = _gulpdb.ingest_drop_present(
                    ds._native(), self.out, self.o["on_duplicate"], order, keep
                )
        todo = [s for i, s in enumerate(order) if keep[i]]
        if seed is not None and self.o["seed"] is None:
            self.say(f"gulpdb.distributed: shuffled with --seed {seed}")
        samples = _sample_paths(todo)
        return {
            "format": _files.PLAN_FORMAT,
            "gulpdb_version": gulpdb.__version__,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "out": self.out,
            "options": content(self.o),
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

    def commit_plan(
        self, job: Job, plan: Dict[str, Any], out_exists: bool, worker_threads: int
    ) -> Dict[str, Any]:
        """Creates OUT (when new), writes label2idx.json, the sources and plan.json."""
        todo = plan.pop("todo")
        if not out_exists:
            _files.create_dataset(
                self.out,
                {
                    "videos_per_chunk": self.o["videos_per_chunk"],
                    "bytes_per_chunk": self.o["bytes_per_chunk"],
                    "checksums": not self.o["no_checksums"],
                    "codec": self.o["codec"],
                },
            )
        with gulpdb.Dataset(self.out, "r+") as ds:
            stats = ds.stats()
            if ds.codec != self.o["codec"]:
                # The shards would be made, then refused by the merge.
                raise ValueError(
                    f"ingest {self.out}: the dataset stores its frames as {ds.codec}, not "
                    f"{self.o['codec']} (give codec={ds.codec!r}, or ingest into a new dataset)")
        plan["settings"] = {
            "videos_per_chunk": int(stats.videos_per_chunk),
            "bytes_per_chunk": int(stats.bytes_per_chunk),
            "checksums": bool(stats.checksums),
            "codec": self.o["codec"],  # OUT's (checked above): the shards' too
        }
        label_map = dict(plan["label_map"])
        _gulpdb.ingest_update_label_map_file(self.out, label_map)
        if self.o["partitions"] is not None:
            wanted = int(self.o["partitions"])
        else:
            wanted = 4 * max(1, worker_threads)
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
