"""What a push sends after a 1% relabel (docs/edits.md): relabel_bench's
dataset (`bench_data relabel`: hashed ids, 16 tiny frames, meta {"label" of
100 values, "idx", "duration"}, meta indexes on label and duration) pushed
once, relabeled 1% with `gulpdb relabel` (the first round of relabel_bench,
scattered over the key space), and pushed again. Reports the bytes PUT
through the counting proxy (tests/harness) by kind of object for both
pushes (tag_push_bench.py's kinds), the pushes' and the relabel's time, and
the index's size: the LMDB index file and the partitions the bucket holds.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/relabel_push_bench.py \\
        [--videos N] [--build build/release] [--dir SCRATCH] [--out JSON]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import gulpdb

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
from tag_push_bench import CREDENTIALS, KINDS, bytes_put_by_kind, kind, use_proxy  # noqa: E402
from tag_push_bench import s3rver_behind_proxy  # noqa: E402

BUCKET = "gulpdb-relabel-push"


def bucket_bytes_by_kind(s3rver) -> collections.Counter:
    """Bytes of the objects the bucket holds, by kind, listed from s3rver
    directly (not through the proxy, whose log counts the pushes)."""
    import boto3  # a benchmark baseline's dependency (scripts/setup.sh)

    s3 = boto3.client("s3", endpoint_url=s3rver.endpoint, region_name="us-east-1",
                      aws_access_key_id=s3rver.ACCESS_KEY,
                      aws_secret_access_key=s3rver.SECRET_KEY)
    held: collections.Counter = collections.Counter()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for obj in page.get("Contents", []):
            held[kind(obj["Key"])] += obj["Size"]
    return held


def by_kind(counter: collections.Counter) -> dict:
    out = {k: counter.get(k, 0) for k in KINDS}
    out["total"] = sum(counter.values())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=1000000)
    parser.add_argument("--build", default=os.path.join(REPO, "build", "release"))
    parser.add_argument("--dir", default=None, help="scratch directory (default: a new temp dir)")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args()
    if args.videos < 1000:
        parser.error("--videos must be at least 1000")
    bench_data = os.path.join(args.build, "bench", "bench_data")
    cli = os.path.join(args.build, "cli", "gulpdb")
    for program in (bench_data, cli):
        if not os.access(program, os.X_OK):
            parser.error(f"{program} is not built (cmake --build ... --target bench_data gulpdb)")
    tmp = tempfile.mkdtemp(prefix="gulpdb-relabel-push-", dir=args.dir)
    result: dict = {"benchmark": "relabel_push", "videos": args.videos,
                    "load_before": os.getloadavg()}
    try:
        path, labels = os.path.join(tmp, "ds"), os.path.join(tmp, "labels.csv")
        start = time.monotonic()
        made = json.loads(subprocess.run(
            [bench_data, "relabel", "--dir", path, "--videos", str(args.videos), "--list", labels],
            check=True, stdout=subprocess.PIPE).stdout)
        result["build_s"] = time.monotonic() - start
        result["listed"] = made["listed"]
        result["chunks"] = made["chunks"]
        print(f"built {made['videos']} videos in {result['build_s']:.0f} s", file=sys.stderr)
        # A push after a scattered relabel sends a .gmeta object for most
        # chunks: the proxy keeps every request of a push.
        log_size = 4 * made["chunks"] + 100000
        with s3rver_behind_proxy(BUCKET, CREDENTIALS, log_size) as (s3rver, proxy):
            use_proxy(proxy, tmp)
            url = f"s3://{BUCKET}/p"

            def push(name: str) -> None:
                proxy.reset()
                start = time.monotonic()
                gulpdb.push(path, url)
                result[name] = {"seconds": time.monotonic() - start,
                                "put_bytes": by_kind(bytes_put_by_kind(proxy)),
                                "bucket_bytes": by_kind(bucket_bytes_by_kind(s3rver))}
                print(f"{name}: {result[name]}", file=sys.stderr)

            push("first_push")
            start = time.monotonic()
            relabel = subprocess.run([cli, "relabel", path, "--labels", labels], check=True,
                                     stdout=subprocess.PIPE, text=True)
            result["relabel_s"] = time.monotonic() - start
            result["relabel_output"] = relabel.stdout.strip()
            push("push_after_relabel")
        index_file = os.path.join(path, "gulpdb.index", "data.mdb")
        with gulpdb.Dataset(path) as ds:
            result["index_bytes_used"] = ds.stats().index_bytes
        result["index_file_bytes"] = os.path.getsize(index_file)
        second = result["push_after_relabel"]["put_bytes"]
        result["partitions_vs_index_file"] = second["partitions"] / result["index_file_bytes"]
        result["partitions_vs_published_partitions"] = (
            second["partitions"] / result["first_push"]["bucket_bytes"]["partitions"])
        result["load_after"] = os.getloadavg()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = json.dumps(result)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if result["push_after_relabel"]["put_bytes"]["chunks"] != 0:
        sys.exit("the push after a relabel uploaded chunk bytes")


if __name__ == "__main__":
    main()
