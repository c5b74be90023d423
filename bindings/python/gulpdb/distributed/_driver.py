"""The driver of a distributed ingest: plan, pre-flight, tasks, progress, attach.

See the package docstring (``gulpdb.distributed``) for what each step
guarantees; this module is the implementation.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import gulpdb
from gulpdb import _gulpdb

from . import _worker
from ._cluster import Cluster
from ._files import Job, read_json, write_json_atomic
from ._options import ignored_option_warnings, normalize_options
from ._out import OutDirectory
from ._plan import Planner
from ._progress import ProgressBar
from ._report import (
    BadSource,
    DistributedIngestError,
    IngestFailed,
    IngestReport,
    PartitionFailure,
    describe,
)

# Shards attached per Merge call: bounds the shard datasets open at once.
_MERGE_GROUP = 64
_POLL = 0.1


class _Driver:
    """Runs one job: OUT (OutDirectory), the plan (Planner) and the cluster
    (Cluster) are its parts; the tasks, their progress and the attach are its
    own."""

    def __init__(self, out: str, options: Dict[str, Any]) -> None:
        self.out = os.path.abspath(os.fspath(out))
        self.o = options
        self.start = time.monotonic()
        self.nonce = secrets.token_hex(6)
        self.bar: Optional[ProgressBar] = None
        self.counts: Dict[int, int] = {}
        self.counts_lock = threading.Lock()
        self.out_dir = OutDirectory(self.out)
        self.planner = Planner(self.out, options, self.say)
        self.cluster = Cluster(self.out, options, self.nonce)

    @property
    def client(self) -> Any:
        return self.cluster.client

    def say(self, text: str) -> None:
        if self.o["quiet"]:
            return
        if self.bar is not None:
            self.bar.line(text)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

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
            "codec": self.o["codec"],
            "gop": self.o["gop"],
            "crf": self.o["crf"],
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
                        text = describe(exc) if exc is not None else f"the task was {status}"
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
        out_exists = self.out_dir.check_out()
        for text in ignored_option_warnings(self.o, self.out):
            warnings.warn(text, UserWarning, stacklevel=3)
        committed = False
        try:
            if out_exists:
                self.out_dir.lock_out()
            job, plan, finished = self.planner.find_job(out_exists)
            if finished:
                assert plan is not None
                saved = IngestReport.from_dict(read_json(job.done_path))
                saved.seconds = round(time.monotonic() - self.start, 3)
                saved.already_done = True
                return saved
            new_plan = self.planner.prepare_plan(out_exists) if plan is None else None
            self.cluster.connect(client_or_address)
            workers = self.cluster.wait_for_workers()
            if not out_exists:
                self.out_dir.lock_out()
            checked = plan if plan is not None else new_plan
            assert checked is not None
            self.cluster.preflight(checked, workers)
            if plan is None:
                assert new_plan is not None
                plan = self.planner.commit_plan(
                    job, new_plan, out_exists, sum(workers.values())
                )
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
                self.out_dir.unlock_out()
                self.out_dir.remove_created_out()
            raise
        finally:
            self.cluster.close()
            self.out_dir.unlock_out()


def run(client_or_address: Any, out: str, options: Dict[str, Any]) -> IngestReport:
    """:func:`gulpdb.distributed.ingest` with its options in a dict."""
    return _Driver(out, normalize_options(options)).run(client_or_address)
