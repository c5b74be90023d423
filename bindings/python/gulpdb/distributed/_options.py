"""The options of a distributed ingest: the ingest library's option table (what
`gulpdb ingest` reads: names, defaults, rules, and the warnings for options a
run would not use), plus the options of the job itself."""

from __future__ import annotations

import os
from typing import Any, Dict, List

from gulpdb import _gulpdb

__all__ = [
    "CONTENT_OPTIONS",
    "JOB_DEFAULTS",
    "content",
    "flag",
    "ignored_option_warnings",
    "ingest_option_names",
    "listing_options",
    "normalize_options",
]

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
    "codec",
    "gop",
    "crf",
    "shuffle",
    "on_duplicate",
    "videos_per_chunk",
)

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


def flag(option: str) -> str:
    """The command-line spelling of an option."""
    return "--" + option.replace("_", "-")


def ingest_option_names() -> List[str]:
    """The ingest options a distributed ingest takes: those of the option table
    that ``gulpdb ingest`` reads (``_`` for ``-``), but ``num_workers`` (each
    task decodes on ``task_threads``)."""
    return [
        info["name"].replace("-", "_")
        for info in _gulpdb.ingest_command_options()
        if info["distributed"]
    ]


def _path_options() -> List[str]:
    """The ingest options that name a file or directory (made absolute)."""
    return [
        info["name"].replace("-", "_")
        for info in _gulpdb.ingest_command_options()
        if info["distributed"] and info["kind"] == "path"
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
    for key in _path_options():
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
    problem = _gulpdb.ingest_validate(listing_options(o, "."))
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
    return list(_gulpdb.ingest_warnings(listing_options(o, out), o["given"]))


def listing_options(o: Dict[str, Any], out: str) -> Dict[str, Any]:
    """The options of ``_gulpdb.ingest_list_sources`` / ``ingest_validate``."""
    d: Dict[str, Any] = {k: o[k] for k in ingest_option_names() if o[k] is not None}
    d["dir"] = out
    return d


def content(o: Dict[str, Any]) -> Dict[str, Any]:
    return {k: o[k] for k in CONTENT_OPTIONS}
