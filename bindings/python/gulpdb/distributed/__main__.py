"""``python3 -m gulpdb.distributed [--scheduler ADDRESS] ingest OUT ...``: the command
line of :func:`gulpdb.distributed.ingest` (see the package docstring).

Exit status: 0 when every partition was ingested and attached, 1 for an error
(one line per problem, ``gulpdb.distributed: error: ...``), 2 for a usage
error, 130 when interrupted (re-running resumes).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import warnings
from typing import Any, Dict, List, Optional

from .. import _gulpdb
from . import _driver
from ._options import JOB_DEFAULTS, ingest_option_names, normalize_options
from ._report import DistributedIngestError, IngestFailed, IngestReport

PROG = "gulpdb.distributed"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python3 -m {PROG}",
        description="Builds one gulpdb dataset on a Dask cluster, every source exactly once.",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="the Dask scheduler (tcp://host:8786); default: a LocalCluster on 127.0.0.1",
    )
    parser.add_argument(
        "--connect-timeout", type=float, metavar="S",
        help=f"seconds to reach the scheduler (default {JOB_DEFAULTS['connect_timeout']:g})",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    p = sub.add_parser(
        "ingest",
        help="ingest videos, frame folders or images into OUT",
        description="Ingests sources into the dataset OUT as `gulpdb ingest` does, one shard per "
        "partition, the shards attached to OUT at the end. Re-running the same command after "
        "any failure resumes the job.",
    )
    p.add_argument("out", metavar="OUT", help="the dataset (created if missing), shared")
    p.add_argument("--scheduler", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    p.add_argument(
        "--connect-timeout", type=float, default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    _add_ingest_options(p.add_argument_group("ingest options (as gulpdb ingest)"))
    job = p.add_argument_group("the job").add_argument
    job("--partitions", metavar="N", help="tasks and shards (default: 4 per worker thread)")
    job("--task-threads", metavar="N",
        help=f"decode threads per task (default {JOB_DEFAULTS['task_threads']})")
    job("--lock-timeout", type=float, metavar="S",
        help="seconds a duplicate task waits for its shard's writer lock "
        f"(default {JOB_DEFAULTS['lock_timeout']:g})")
    job("--worker-timeout", type=float, metavar="S",
        help="seconds to wait for a first worker and for the pre-flight answers "
        f"(default {JOB_DEFAULTS['worker_timeout']:g})")
    job("--local-workers", metavar="N",
        help="processes of the LocalCluster started without --scheduler (default: cores)")
    job("--json", action="store_true", help="print the report as JSON on stdout")
    job("--verbose", action="store_true", help="show Dask's own log messages")
    return parser


def _add_ingest_options(group: Any) -> None:
    """The options of `gulpdb ingest` that a distributed ingest takes, from the
    ingest library's option table: names, defaults, help and (when the
    options are read) the rules are that one table's."""
    for info in _gulpdb.ingest_command_options():
        if not info["distributed"]:
            continue
        flags = ["--" + info["name"]]
        if info["short_name"]:
            flags.append("-" + info["short_name"])
        dest = info["name"].replace("-", "_")
        text = info["help"].replace("%", "%%")
        if info["kind"] == "switch":
            group.add_argument(*flags, dest=dest, action="store_true", default=None, help=text)
            continue
        if info["default"]:
            text += f" (default: {info['default']})"
        group.add_argument(*flags, dest=dest, default=None, metavar=info["value_name"], help=text)


def _options(args: argparse.Namespace) -> Dict[str, Any]:
    """The options given (None: not given, the default applies)."""
    keys = ingest_option_names() + [k for k in JOB_DEFAULTS if k != "progress"]
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


def _error(text: str) -> None:
    for line in text.splitlines() or [""]:
        sys.stderr.write(f"{PROG}: error: {line}\n")


def _print_report(report: IngestReport, as_json: bool) -> None:
    for b in report.warnings:
        sys.stderr.write(f"{PROG}: warning: '{b.id}': {b.message}\n")
    for b in report.bad:
        sys.stderr.write(f"{PROG}: skipping '{b.id}': {b.message}\n")
    for f in report.failed:
        sys.stderr.write(f"{PROG}: partition {f.partition} failed: {f.error}\n")
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), ensure_ascii=False) + "\n")
    else:
        done = " (already done: nothing to do)" if report.already_done else ""
        sys.stdout.write(report.summary() + done + "\n")
    sys.stdout.flush()


def _os_error_text(e: OSError) -> str:
    """gulpdb's own messages name the file already; Python's get it appended."""
    if e.strerror and e.filename:
        return f"{e.strerror}: {e.filename}"
    return e.strerror or str(e)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _show_warning(message: Any, category: Any, filename: str, lineno: int, *rest: Any) -> None:
    sys.stderr.write(f"{PROG}: warning: {message}\n")
    sys.stderr.flush()


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if not args.verbose:
        logging.getLogger("distributed").setLevel(logging.ERROR)
    try:
        options = normalize_options(_options(args))
    except (ValueError, TypeError) as e:
        _error(str(e))
        return 2
    signal.signal(signal.SIGTERM, _interrupt)
    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        warnings.showwarning = _show_warning
        return _run(args, options)


def _run(args: argparse.Namespace, options: Dict[str, Any]) -> int:
    try:
        report = _driver._Driver(args.out, options).run(args.scheduler)
    except IngestFailed as e:
        _print_report(e.report, args.json)
        _error(str(e))
        return 1
    except KeyboardInterrupt:
        _error(
            f"interrupted: the work committed so far is kept in {args.out}/shards; re-run the "
            "same command to resume"
        )
        return 130
    except OSError as e:
        _error(_os_error_text(e))
        return 1
    except (DistributedIngestError, ValueError) as e:
        _error(str(e))
        return 1
    _print_report(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
