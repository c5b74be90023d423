"""What a distributed ingest reports: its report and failures, and its errors."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

from . import _worker

__all__ = [
    "BadSource",
    "DistributedIngestError",
    "IngestFailed",
    "IngestReport",
    "PartitionFailure",
    "describe",
]


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


def describe(exc: BaseException) -> str:
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
