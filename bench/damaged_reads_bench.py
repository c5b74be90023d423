#!/usr/bin/python3
"""What reads of a dataset with damaged partitions cost in GETs and bytes
(docs/format/remote_format.md, "Verified downloads").

One dataset of one-frame videos with hashed ids, pushed partitioned (64 KiB
partitions) twice, to two prefixes of s3rver behind the test proxy
(tests/harness/s3_proxy.py, which counts every request and body byte):

  clean    the baseline, as pushed;
  damaged  the same objects, with the two largest partitions swapped.

A new node (a fresh cache, a new process) opens each URL and reads the meta
of R random ids (the index only: no frame is fetched), for R = --reads / 10
and --reads. The figures are the GETs and body bytes the proxy served, and
the reads that failed. A damaged partition used to be downloaded three times
for every read that needed it, so the damaged run cost more with every read;
now it costs at most two downloads of each damaged partition more than the
clean run, at any R.

    PYTHONPATH=build/dev/python bench/damaged_reads_bench.py [--videos 6000]
        [--reads 2200] [--out bench/results/damaged]

Prints one JSON object; with --out, writes latest.json and latest.md there.
--smoke: a small run (CTest bench_smoke_damaged_reads) that checks the
figures are consistent, never their size.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "harness"))

import s3_proxy  # noqa: E402  tests/harness/s3_proxy.py: s3rver and the proxy, bounded start/stop

BUCKET = "gulpdb-damaged"
KEY, SECRET = "DAMAGEBENCH", "damage-bench-secret"

# A new node: a new process with its own cache.
NODE = r"""
import json, random, sys
import gulpdb
args = json.loads(sys.argv[1])
with open(args["ids_file"]) as f:
    ids = json.load(f)
rng = random.Random(args["seed"])
failed = 0
with gulpdb.Dataset(args["url"]) as ds:
    for _ in range(args["reads"]):
        try:
            ds.meta(ids[rng.randrange(len(ids))])
        except gulpdb.CorruptionError:
            failed += 1
print(json.dumps({"failed": failed}))
"""


def log(message):
    print("damaged_reads_bench: " + message, file=sys.stderr, flush=True)


def run(cmd, env):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=3600)
    if r.returncode != 0:
        raise SystemExit("damaged_reads_bench: %s failed (%d):\n%s" % (cmd[:3], r.returncode,
                                                                      r.stderr[-4000:]))
    return r.stdout


def make_dataset(path, videos):
    import gulpdb
    import numpy as np

    frame = np.zeros((1, 8, 8, 3), np.uint8)
    ids = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(videos)]
    with gulpdb.Dataset(path, "x", videos_per_chunk=1000) as ds:
        with ds.writer() as w:
            for i, id_ in enumerate(ids):
                w.append(id_, frame + i % 7, {"label": i % 10, "n": i})
    return ids


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--videos", type=int, default=6000)
    parser.add_argument("--reads", type=int, default=2200)
    parser.add_argument("--out", default="")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.videos, args.reads = 1500, 60
    import gulpdb

    with tempfile.TemporaryDirectory(prefix="damaged_bench.") as tmp, \
            s3_proxy.s3rver_behind_proxy(BUCKET, {KEY: SECRET}) as (s3rver, proxy):
        env = dict(os.environ, AWS_ENDPOINT_URL=proxy.endpoint, AWS_ACCESS_KEY_ID=KEY,
                   AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1",
                   GULPDB_CACHE=os.path.join(tmp, "pusher"))
        os.environ.update(env)
        path = os.path.join(tmp, "ds")
        log("writing %d videos" % args.videos)
        ids = make_dataset(path, args.videos)
        import boto3
        from botocore.config import Config

        s3 = boto3.client("s3", endpoint_url=s3rver.endpoint, aws_access_key_id="S3RVER",
                          aws_secret_access_key="S3RVER", region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
        result = {"videos": args.videos, "reads": [args.reads // 10, args.reads]}
        for name in ("clean", "damaged"):
            gulpdb._gulpdb.push(path, "s3://%s/%s" % (BUCKET, name), layout="partitioned",
                                partition_bytes=64 << 10)
        listed = s3.list_objects_v2(Bucket=BUCKET, Prefix="damaged/gulpdb.partitions/")
        parts = sorted(((o["Size"], o["Key"]) for o in listed["Contents"]), reverse=True)
        result["index_bytes"] = sum(size for size, _ in parts)
        result["partitions"] = len(parts)
        (size_a, a), (size_b, b) = parts[:2]
        body_a = s3.get_object(Bucket=BUCKET, Key=a)["Body"].read()
        body_b = s3.get_object(Bucket=BUCKET, Key=b)["Body"].read()
        s3.put_object(Bucket=BUCKET, Key=a, Body=body_b)
        s3.put_object(Bucket=BUCKET, Key=b, Body=body_a)
        result["swapped_bytes"] = size_a + size_b
        ids_file = os.path.join(tmp, "ids.json")
        with open(ids_file, "w") as f:
            json.dump(ids, f)
        rows = []
        for reads in result["reads"]:
            for name in ("clean", "damaged"):
                proxy.reset()
                node_env = dict(env, GULPDB_CACHE=os.path.join(tmp, "%s-%d" % (name, reads)))
                spec = {"url": "s3://%s/%s" % (BUCKET, name), "ids_file": ids_file, "reads": reads,
                        "seed": 7}
                out = json.loads(run([sys.executable, "-c", NODE, json.dumps(spec)],
                                     node_env).strip().splitlines()[-1])
                stats = proxy.stats()
                gets = sum(1 for e in proxy.log() if e["method"] == "GET")
                rows.append({"prefix": name, "reads": reads, "failed": out["failed"],
                             "gets": gets, "bytes": stats["body_bytes_sent"]})
                log("%s, %d reads: %d failed, %d GETs, %d bytes"
                    % (name, reads, out["failed"], gets, stats["body_bytes_sent"]))
        result["rows"] = rows
        by = {(r["prefix"], r["reads"]): r for r in rows}
        few, many = result["reads"]
        result["extra_gets"] = {str(n): by[("damaged", n)]["gets"] - by[("clean", n)]["gets"]
                                for n in (few, many)}
        result["extra_bytes"] = {str(n): by[("damaged", n)]["bytes"] - by[("clean", n)]["bytes"]
                                 for n in (few, many)}
        result["bytes_ratio"] = {str(n): by[("damaged", n)]["bytes"] / by[("clean", n)]["bytes"]
                                 for n in (few, many)}
        # Consistency, not speed: the same reads fail at any R's prefix, and
        # the damaged run fetches at most two downloads of each swapped
        # partition more than the clean one.
        if by[("damaged", many)]["failed"] == 0:
            raise SystemExit("damaged_reads_bench: no read needed a swapped partition")
        for n in (few, many):
            if by[("clean", n)]["failed"] != 0:
                raise SystemExit("damaged_reads_bench: the clean prefix failed a read")
            if result["extra_bytes"][str(n)] > 2 * result["swapped_bytes"]:
                raise SystemExit("damaged_reads_bench: the damaged run fetched %d bytes more "
                                 "than the clean one at %d reads" % (result["extra_bytes"][str(n)],
                                                                     n))
    print(json.dumps(result, indent=1))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "latest.json"), "w") as f:
            json.dump(result, f, indent=1)
        with open(os.path.join(args.out, "latest.md"), "w") as f:
            f.write("Reads of a dataset with two swapped partitions (%d videos, index %d bytes in "
                    "%d partitions; swapped: %d bytes), against the same reads of the clean "
                    "copy; a new node each.\n\n" % (args.videos, result["index_bytes"],
                                                   result["partitions"],
                                                   result["swapped_bytes"]))
            f.write("| reads | clean: GETs, bytes | damaged: failed, GETs, bytes | damaged / "
                    "clean bytes |\n|---|---|---|---|\n")
            for n in (few, many):
                c, d = by[("clean", n)], by[("damaged", n)]
                f.write("| %d | %d, %d | %d, %d, %d | %.2f× |\n"
                        % (n, c["gets"], c["bytes"], d["failed"], d["gets"], d["bytes"],
                           result["bytes_ratio"][str(n)]))


if __name__ == "__main__":
    main()
