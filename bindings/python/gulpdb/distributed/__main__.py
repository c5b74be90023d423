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
from typing import Any, Dict, List, Optional

from . import _driver
from ._driver import DistributedIngestError, IngestFailed, IngestReport

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
        "--connect-timeout", type=float, default=10.0, metavar="S",
        help="seconds to reach the scheduler (default 10)",
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
    src = p.add_argument_group("sources (as gulpdb ingest)").add_argument
    src("--videos-dir", metavar="D", help="videos, each D/<id>.<ext> or the file in D/<id>/")
    src("--frames-dir", metavar="D", help="one sub-folder of JPEG frames per video")
    src("--images-dir", metavar="D",
        help="one sub-folder of images per class (with --image-list: the root of its paths)")
    src("--image-list", metavar="FILE", help="image paths, one per line, optionally ;label")
    src("--labels", metavar="LIST", help="20BN-style JSON list or id;label CSV")
    src("--label-name", default="label", metavar="KEY", help="key of the label in a JSON list")
    enc = p.add_argument_group("encoding (as gulpdb ingest)").add_argument
    enc("--frame-rate", type=float, default=8.0, help="frames per second taken from videos")
    enc("--frame-size", type=int, default=0, help="short edge after resizing (0: keep)")
    enc("--quality", type=int, default=90, help="JPEG quality")
    enc("--keep-jpeg", action="store_true", help="store JPEG sources byte for byte")
    enc("--shuffle", action="store_true", help="ingest the sources in random order")
    enc("--seed", type=int, help="seed of --shuffle (default: random, kept in the plan)")
    enc("--on-duplicate", default="skip", choices=("error", "skip", "replace"),
        help="an id listed twice or already in OUT (default skip)")
    enc("--strict", action="store_true", help="stop the job at the first bad source")
    enc("--videos-per-chunk", type=int, default=100, help="for a new OUT (shards take OUT's)")
    enc("--batch", type=int, default=100, help="videos per committed transaction of a shard")
    job = p.add_argument_group("the job").add_argument
    job("--partitions", type=int, help="tasks and shards (default: 4 per worker thread)")
    job("--task-threads", type=int, default=1, help="decode threads per task (default 1)")
    job("--lock-timeout", type=float, default=3600.0, metavar="S",
        help="seconds a duplicate task waits for its shard's writer lock")
    job("--worker-timeout", type=float, default=60.0, metavar="S",
        help="seconds to wait for a first worker and for the pre-flight answers")
    job("--local-workers", type=int, metavar="N",
        help="processes of the LocalCluster started without --scheduler (default: cores)")
    job("--ffmpeg", default="ffmpeg", help="the program the workers run for videos")
    job("--quiet", "-q", action="store_true", help="no progress output")
    job("--json", action="store_true", help="print the report as JSON on stdout")
    job("--verbose", action="store_true", help="show Dask's own log messages")
    return parser


def _options(args: argparse.Namespace) -> Dict[str, Any]:
    keys = (
        "videos_dir", "frames_dir", "images_dir", "image_list", "labels", "label_name",
        "frame_rate", "frame_size", "quality", "keep_jpeg", "shuffle", "seed", "on_duplicate",
        "strict", "videos_per_chunk", "batch", "partitions", "task_threads", "lock_timeout",
        "connect_timeout", "worker_timeout", "local_workers", "ffmpeg", "quiet",
    )  # fmt: skip
    return {k: getattr(args, k) for k in keys}


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


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if not args.verbose:
        logging.getLogger("distributed").setLevel(logging.ERROR)
    try:
        options = _driver.normalize_options(_options(args))
    except (ValueError, TypeError) as e:
        _error(str(e))
        return 2
    signal.signal(signal.SIGTERM, _interrupt)
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
