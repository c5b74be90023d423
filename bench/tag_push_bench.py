"""What a push sends for tags (docs/versions.md, "Tags in a bucket"): bytes
PUT through the counting proxy (tests/harness) by kind of object, for a
first push, a push after a tag, a push after a 1% relabel and a second tag,
and an unchanged push. Counts bytes, not time.

    PYTHONPATH=build/dev/python /usr/bin/python3 bench/tag_push_bench.py [VIDEOS]
"""

from __future__ import annotations

import collections
import os
import shutil
import sys
import tempfile

import numpy as np

import gulpdb

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from s3_processes import s3rver_behind_proxy  # noqa: E402


def kind(key: str) -> str:
    if "gulpdb.tags/" in key:
        return "tag objects"
    if "gulpdb.partitions/" in key:
        return "partitions"
    if "gulpdb.roots/" in key:
        return "roots/pages"
    if "gulpdb.chunk-pages/" in key:
        return "chunk pages"
    if key.endswith(".gulp"):
        return "chunks"
    if key.endswith(".gmeta"):
        return "gmeta"
    return "manifest, lease, other"


KINDS = ("partitions", "roots/pages", "chunk pages", "tag objects", "gmeta", "chunks",
         "manifest, lease, other")


def bytes_put_by_kind(proxy) -> collections.Counter:
    """Bytes of the PUT requests the proxy saw (since its last reset), by kind.
    Raises RuntimeError when its log lost requests (start the proxy with a
    larger log_size)."""
    log = proxy.log()
    if proxy.stats()["requests"] != len(log):
        raise RuntimeError(f"the proxy's log kept {len(log)} of {proxy.stats()['requests']} "
                           "requests: count with a larger log_size")
    sent: collections.Counter = collections.Counter()
    for e in log:
        if e["method"] == "PUT":
            sent[kind(e["path"].split("?")[0])] += e["request_bytes"]
    return sent


def use_proxy(proxy, tmp: str) -> None:
    """Points gulpdb's S3 client (this process and its children) at the proxy."""
    os.environ.update(AWS_ENDPOINT_URL=proxy.endpoint, AWS_ACCESS_KEY_ID="K",
                      AWS_SECRET_ACCESS_KEY="S", AWS_REGION="us-east-1",
                      GULPDB_CACHE=os.path.join(tmp, "cache"))


CREDENTIALS = {"K": "S"}


def main() -> None:
    videos = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    tmp = tempfile.mkdtemp(prefix="gulpdb-tag-push-")
    try:
        with s3rver_behind_proxy("gulpdb-tag-push", CREDENTIALS) as (_, proxy):
            use_proxy(proxy, tmp)
            path, url = os.path.join(tmp, "ds"), "s3://gulpdb-tag-push/p"
            with gulpdb.Dataset(path, "a", videos_per_chunk=200) as ds:
                with ds.writer() as w:
                    for i in range(videos):
                        w.append(f"{i:08x}", np.full((2, 8, 8, 3), i % 256, np.uint8),
                                 {"label": f"l{i % 100}", "n": i})

            def push(what: str) -> None:
                proxy.reset()
                gulpdb.push(path, url)
                sent = bytes_put_by_kind(proxy)
                print(f"{what}: {dict(sent)}, total {sum(sent.values())}")

            push("first push (no tags)")
            with gulpdb.Dataset(path, "r+") as ds:
                ds.tag("a")
            push("push after tag a")
            objects = os.path.join(path, "gulpdb.versions", "objects")
            print("local tag objects:",
                  sum(os.path.getsize(os.path.join(objects, f)) for f in os.listdir(objects)))
            with gulpdb.Dataset(path, "r+") as ds:
                with ds.writer() as w:
                    for i in range(0, videos, 100):
                        w.update_meta(f"{i:08x}", {"label": "fixed"})
                ds.tag("b")
            push("push after a 1% relabel and tag b")
            push("push again, unchanged")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
