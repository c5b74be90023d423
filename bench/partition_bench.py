#!/usr/bin/python3
"""Partitioned index snapshots on many nodes (docs/remote_datasets.md,
"Partitioned snapshots"): what a node fetches, and what a push uploads, as a
dataset grows.

For each size (10^5, 10^6, ... videos of 16 tiny frames, hashed ids, a
"label" meta field of 100 values with a meta index, default chunk sizes;
`bench_data hashed`), against s3rver behind the test proxy
(tests/harness/s3_proxy.py), which adds the latency of every GET and counts every
byte in both directions per request:

  push        `gulpdb push --layout partitioned` of the whole dataset: bytes of
              partitions, root, manifest;
  fresh       a new node (an empty cache, a new process): open + read one
              random video by its id; bytes fetched and seconds (median of
              --reps nodes, each a different video);
  first batch a new node, rank 0 of 64 with the partition-aware shuffle
              (a VideoDataset on the URL, VideoSampler shuffle="blocks"):
              open + read its first 64 clips; index bytes fetched against
              1/32 of the index;
  append 1%   `bench_data hashed --first N --videos N/100` (ids all over the
              key space), then a push: bytes uploaded besides the new frames
              (partitions, root, manifest, the .gmeta of the new chunks);
  warm        the node of `fresh` opening the new generation and reading a
              random video: bytes fetched;
  epoch       rank 0 of --world reading every video of its epoch's share:
              index bytes fetched against the whole index / world.

Every byte count is the proxy's (body bytes of each request and answer),
for the whole process: the manifest, the root, the partitions and the
frames. The index's size is the sum of the partitions the newest root lists.

Run alone:
    bench/partition_bench.py --bin-dir build/release --sizes 100000,1000000
or from bench/run.py (--only partitions). Prints one JSON object and writes
it to --out/partitions.json with a table in --out/partitions.md.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))

import s3_proxy  # noqa: E402  tests/harness/s3_proxy.py: s3rver and the proxy, bounded start/stop

PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
BUCKET = "gulpdb-parts"
LATENCY_MS = 20
WORLD = 64
BATCH = 64

# What a node runs, in a new process so that nothing is shared with the
# previous node but the cache directory it is given.
NODE = r"""
import json, os, random, sys, time
t0 = time.perf_counter()
import gulpdb
t_import = time.perf_counter() - t0
args = json.loads(sys.argv[1])
t0 = time.perf_counter()
ds = gulpdb.Dataset(args["url"])
out = {"videos": len(ds)}
if args["mode"] == "one":
    # A random id (drawn from the local copy, which the proxy does not see),
    # read by id: the lookup a user makes.
    vid = args["id"]
    frames = ds.read_jpegs(vid)
    out["frames"] = len(frames)
elif args["mode"] in ("batch", "epoch"):
    # What a training job builds: a VideoDataset on the URL (its ids read by
    # position as items need them) and the sampler over it.
    from gulpdb.torch import VideoDataset, VideoSampler
    video_ds = VideoDataset(ds)
    extra = {"shuffle": "blocks"} if args["layout"] == "partitioned" else {}
    sampler = VideoSampler(video_ds, num_replicas=args["world"], rank=0, seed=args["seed"],
                           **extra)
    positions = list(iter(sampler))
    if args["mode"] == "batch":
        positions = positions[:args["batch"]]
    ids = [video_ds.ids[p] for p in positions]
    for i in range(0, len(ids), 64):
        ds.read_jpeg_batch([(v, None) for v in ids[i:i + 64]])
    out["clips"] = len(ids)
out["seconds"] = time.perf_counter() - t0
out["import_seconds"] = t_import
print(json.dumps(out))
"""


def log(message):
    print("partition_bench: " + message, file=sys.stderr, flush=True)


def kind_of(path):
    """What an object is, from its key (docs/format/remote_format.md)."""
    name = path.split("?")[0].rsplit("/", 1)[-1]
    if name.endswith(".gulp"):
        return "chunks"
    if name.endswith(".gmeta"):
        return "gmeta"
    if "manifest" in path or "push-lease" in path or "chunk-pages" in path:
        return "manifest"  # the chunk list's pages belong to the manifest
    if "partition" in path or "gulpdb.roots" in path:
        return "index"
    if "snapshot" in path:
        return "index"
    if name.endswith(".json"):
        return "labels"
    return "other"


class Counted:
    """Bytes by kind of object seen by the proxy since the last reset."""

    def __init__(self, proxy):
        self.proxy = proxy

    def reset(self):
        self.proxy.reset()
        self.proxy.add_fault(kind="delay", delay_ms=LATENCY_MS, fraction=1.0, method="GET")
        self.proxy.add_fault(kind="delay", delay_ms=LATENCY_MS, fraction=1.0, method="HEAD")

    def take(self):
        sent, received, requests = {}, {}, 0
        for e in self.proxy.log():
            k = kind_of(e["path"])
            sent[k] = sent.get(k, 0) + e.get("response_bytes", 0)
            received[k] = received.get(k, 0) + e.get("request_bytes", 0)
            requests += 1
        stats = self.proxy.stats()
        if stats["requests"] != requests:
            raise SystemExit("partition_bench: the proxy's log lost requests (%d of %d)"
                             % (requests, stats["requests"]))
        return {"fetched": sent, "uploaded": received, "requests": requests,
                "fetched_total": stats["body_bytes_sent"],
                "uploaded_total": stats["body_bytes_received"]}


def run(cmd, env, what):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=7200)
    if r.returncode != 0:
        raise SystemExit("partition_bench: %s failed (%d):\n%s%s"
                         % (what, r.returncode, r.stdout[-2000:], r.stderr[-4000:]))
    return r.stdout


def random_id(env, dataset, seed):
    """A random id of the local dataset (read locally: the proxy never sees it)."""
    code = ("import gulpdb, random, sys; ds = gulpdb.Dataset(sys.argv[1]); "
            "print(ds.id_at(random.Random(int(sys.argv[2])).randrange(len(ds))))")
    return run([PYTHON, "-c", code, dataset, str(seed)], env, "random id").strip()


def node(env, cache, url, mode, seed, layout, vid=None):
    env = dict(env, GULPDB_CACHE=cache)
    args = dict(url=url, mode=mode, seed=seed, world=WORLD, batch=BATCH, layout=layout, id=vid)
    out = run([PYTHON, "-c", NODE, json.dumps(args)], env, "node " + mode)
    return json.loads(out.strip().splitlines()[-1])


def bench_size(n, layout, args, env, counted, data_dir):
    bench_data = os.path.join(args.bin_dir, "bench", "bench_data")
    cli = os.path.join(args.bin_dir, "cli", "gulpdb")
    dataset = os.path.join(data_dir, "hashed_%d" % n)
    stamp = os.path.join(dataset, ".bench-complete")
    if not os.path.exists(stamp):
        shutil.rmtree(dataset, ignore_errors=True)
        log("building %d videos" % n)
        made = json.loads(run([bench_data, "hashed", "--dir", dataset, "--videos", str(n)], env,
                              "bench_data hashed"))
        with open(stamp, "w") as f:
            json.dump(made, f)
    work = dataset + ".appended"
    shutil.rmtree(work, ignore_errors=True)
    log("copying %d videos" % n)
    shutil.copytree(dataset, work, symlinks=True)
    url = "s3://%s/%s%d" % (BUCKET, layout, n)
    row = {"videos": n, "layout": layout}
    push = [cli, "push", work, url, "--quiet", "--layout",
            "partitioned" if layout == "partitioned" else "whole"]

    log("push %d" % n)
    counted.reset()
    t0 = time.perf_counter()
    run(push, env, "push")
    row["push_seconds"] = time.perf_counter() - t0
    row["push"] = counted.take()
    row["index_bytes"] = row["push"]["uploaded"].get("index", 0)

    caches = tempfile.mkdtemp(prefix="gulpdb-partbench-")
    try:
        fresh = []
        for rep in range(args.reps):
            counted.reset()
            r = node(env, os.path.join(caches, "fresh%d" % rep), url, "one", rep, layout,
                     random_id(env, work, rep))
            c = counted.take()
            fresh.append({"seconds": r["seconds"], "bytes": c["fetched_total"],
                          "by_kind": c["fetched"], "requests": c["requests"]})
        row["fresh"] = fresh
        row["fresh_bytes"] = statistics.median(f["bytes"] for f in fresh)
        row["fresh_seconds"] = statistics.median(f["seconds"] for f in fresh)

        counted.reset()
        node(env, os.path.join(caches, "batch"), url, "batch", 0, layout)
        c = counted.take()
        row["first_batch"] = c
        row["first_batch_index_bytes"] = c["fetched"].get("index", 0)

        log("append 1%% to %d" % n)
        run([bench_data, "hashed", "--dir", work, "--first", str(n), "--videos",
             str(max(1, n // 100))], env, "bench_data hashed (append)")
        counted.reset()
        run(push, env, "push (append)")
        c = counted.take()
        row["append_push"] = c
        row["append_push_bytes"] = sum(v for k, v in c["uploaded"].items() if k != "chunks")

        counted.reset()
        r = node(env, os.path.join(caches, "fresh0"), url, "one", 1000, layout,
                 random_id(env, work, 1000))
        c = counted.take()
        row["warm"] = {"seconds": r["seconds"], "bytes": c["fetched_total"],
                       "by_kind": c["fetched"]}
        row["warm_index_bytes"] = c["fetched"].get("index", 0) + c["fetched"].get("manifest", 0)

        if n <= args.epoch_max:
            counted.reset()
            r = node(env, os.path.join(caches, "epoch"), url, "epoch", 0, layout)
            c = counted.take()
            row["epoch"] = {"seconds": r["seconds"], "clips": r["clips"], "fetched": c["fetched"]}
            row["epoch_index_bytes"] = c["fetched"].get("index", 0)
    finally:
        shutil.rmtree(caches, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return row


def table(rows):
    def mb(b):
        return "%.2f MB" % (b / 1e6)
    lines = ["| videos | layout | index | fresh open+read | fresh time | rank 0/64 first batch: "
             "index fetched (1/32 of index) | 1% append: push bytes (3% of index) | "
             "warm re-open (3% of index) | epoch, rank 0/64: index fetched (1/64) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ib = r["index_bytes"]
        epoch = ("%s (%s)" % (mb(r["epoch_index_bytes"]), mb(ib / WORLD))
                 if "epoch_index_bytes" in r else "not run")
        lines.append("| %d | %s | %s | %s | %.0f ms | %s (%s) | %s (%s) | %s | %s |" % (
            r["videos"], r["layout"], mb(ib), mb(r["fresh_bytes"]), r["fresh_seconds"] * 1e3,
            mb(r["first_batch_index_bytes"]), mb(ib / 32), mb(r["append_push_bytes"]),
            mb(0.03 * ib), mb(r["warm_index_bytes"]), epoch))
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin-dir", default=os.path.join(REPO, "build", "release"))
    p.add_argument("--python-dir", help="the built gulpdb package (default: BIN_DIR/python)")
    p.add_argument("--data-dir", default=os.path.join(REPO, "build", "bench-data", "partitions"))
    p.add_argument("--sizes", default="100000,1000000")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--layouts", default="partitioned,snapshot",
                   help="partitioned (push --layout partitioned) and/or snapshot (--layout "
                        "whole: the whole index snapshot, the baseline)")
    p.add_argument("--snapshot-max", type=int, default=100000,
                   help="measure the whole-snapshot baseline up to this size (every node "
                        "downloads the whole index: 0.6 GB at 10^6)")
    p.add_argument("--epoch-max", type=int, default=1000000,
                   help="run the epoch measurement up to this size")
    p.add_argument("--root-page-bytes", type=int,
                   help="pages of two-level roots (GULPDB_TEST_ROOT_PAGE_BYTES; default: "
                        "push's, 64 KiB, which pages a group of partitions past 256 KiB of "
                        "root entries): a smaller size shows at 10^6 the root a larger "
                        "dataset has")
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    args = p.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    python_dir = args.python_dir or os.path.join(args.bin_dir, "python")
    os.makedirs(args.data_dir, exist_ok=True)
    rows = []
    with s3_proxy.S3rverProcess(BUCKET) as server:
        proxy = s3_proxy.ProxyProcess(("127.0.0.1", server.port),
                                      credentials={"S3RVER": "S3RVER"}, log_size=10 ** 7).start()
        try:
            env = dict(os.environ, AWS_ENDPOINT_URL=proxy.endpoint, AWS_ACCESS_KEY_ID="S3RVER",
                       AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1",
                       PYTHONPATH=python_dir)
            if args.root_page_bytes:
                env["GULPDB_TEST_ROOT_PAGE_BYTES"] = str(args.root_page_bytes)
            counted = Counted(proxy)
            for n in [int(s) for s in args.sizes.split(",")]:
                for layout in args.layouts.split(","):
                    if layout == "snapshot" and n > args.snapshot_max:
                        continue
                    rows.append(bench_size(n, layout, args, env, counted, args.data_dir))
                    write(args, rows)
                log(json.dumps({k: v for k, v in rows[-1].items() if not isinstance(v, (dict, list))}))
        finally:
            proxy.stop()
    write(args, rows)
    print(table(rows))


def write(args, rows):
    """The results so far (after each row: a long run that fails keeps its rows)."""
    result = {"latency_ms": LATENCY_MS, "world": WORLD, "batch": BATCH,
              "root_page_bytes": args.root_page_bytes, "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "partitions.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, "partitions.md"), "w") as f:
        f.write(table(rows))


if __name__ == "__main__":
    main()
