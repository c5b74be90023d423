#!/usr/bin/python3
"""What naming a sampler's items costs: Dataset.ids_digest and the state's size.

    PYTHONPATH=<build>/python bench/ids_digest_bench.py [--bin-dir <build>] \
        [--videos 1000000] [--reps 5] [--data-dir DIR] [--json PATH] [--smoke]

A dataset of --videos videos of 16 tiny frames with hashed ids (`bench_data
hashed` of --bin-dir, the partition benchmark's dataset, kept in --data-dir;
without --bin-dir, written from Python), then, the
methods interleaved after an untimed warm-up, median (min, max) of --reps:

  local_digest     gulpdb.Dataset.ids_digest(N): the engine walks the order
                   table in one read transaction and hashes the ids
  local_ids        baseline: gulpdb.Dataset.ids(), the same walk handing every
                   id to Python (what any digest must read at least)
  python_digest    baseline: ids() and hashlib over the length-prefixed ids in
                   Python (the rule restated in Python)
  list_digest      gulpdb.torch.VideoDataset(ds).ids_digest(N) of a local
                   dataset: its list of ids given to the engine
                   (_gulpdb.ids_digest), the VideoDataset made beforehand

and, in a fresh process with an empty node cache each repetition, the
dataset read through a partitioned snapshot (`gulpdb snapshot --layout
partitioned`, read as on a network file system: the PartitionedIndex a
partitioned s3:// URL uses, its partitions copied into the node cache as a
URL's are downloaded):

  snapshot_digest  open + ids_digest(N): seconds, and the bytes and files the
                   node cache holds after it (what a node fetches)
  snapshot_ids     baseline: open + ids() in the same conditions

With --remote, the same two in fresh processes on the dataset pushed
(partitioned) to a local s3rver behind the test proxy (tests/harness/s3_proxy.py),
which adds --latency-ms to every GET and HEAD (S3's first-byte latency is
10-50 ms) and counts the bytes of every answer:

  remote_digest    open the URL + ids_digest(N): seconds, bytes fetched
  remote_ids       baseline: open + ids()

The state: JSON bytes of VideoSampler.state_dict() over a VideoDataset of the
N videos, for each shuffle mode, mid-epoch, and with shuffle="blocks" after
each of three resumes of the same epoch.

Prints one JSON document (and writes it to --json). Timings are reported,
never asserted. --smoke: 2,000 videos, one repetition (the test suite runs it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

import gulpdb

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable

# A node of a partitioned snapshot: a fresh process, an empty node cache.
NODE = r"""
import json, sys, time
import gulpdb
path, what = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
ds = gulpdb.Dataset(path)
n = len(ds)
out = {"partitioned": (ds.remote_info or {}).get("partitioned")}
if what == "digest":
    out["digest"] = ds.ids_digest(n)
else:
    out["count"] = len(ds.ids())
out["seconds"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--bin-dir", help="the build tree whose bench/bench_data makes the dataset")
    p.add_argument("--videos", type=int, default=10**6)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--data-dir", help="where the dataset is made and kept (default: a temp dir)")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--smoke", action="store_true", help="2,000 videos, one repetition")
    p.add_argument("--remote", action="store_true", help="also through s3rver and the proxy")
    p.add_argument("--latency-ms", type=int, default=20, help="added to every GET with --remote")
    args = p.parse_args(argv)
    if args.smoke:
        args.videos, args.reps = 2000, 1
    return args


def log(message: str) -> None:
    print("ids_digest_bench: " + message, file=sys.stderr, flush=True)


def run(cmd: List[str], env: Optional[Dict[str, str]] = None) -> str:
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=7200)
    if r.returncode != 0:
        raise SystemExit(f"ids_digest_bench: {cmd[:3]} failed ({r.returncode}):\n"
                         f"{r.stdout[-2000:]}{r.stderr[-4000:]}")
    return r.stdout


def summary(values: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def make_dataset(args: argparse.Namespace, data_dir: str) -> str:
    path = os.path.join(data_dir, "hashed_%d" % args.videos)
    if gulpdb.Dataset.exists(path):
        with gulpdb.Dataset(path) as ds:
            if len(ds) == args.videos:
                return path
        shutil.rmtree(path)
    log(f"making {args.videos} videos in {path}")
    if args.bin_dir:
        run([os.path.join(args.bin_dir, "bench", "bench_data"), "hashed", "--dir", path,
             "--videos", str(args.videos)])
        return path
    frame = gulpdb.encode_jpeg(np.zeros((8, 8, 3), np.uint8))
    with gulpdb.Dataset(path, "x") as ds:
        with ds.writer() as w:
            for i in range(args.videos):
                w.append(hashlib.sha1(str(i).encode()).hexdigest(), [frame] * 16,
                         {"label": f"class{i % 100}"})
    return path


def python_digest(ds: gulpdb.Dataset) -> str:
    sha = hashlib.sha256()
    for id_ in ds.ids():
        data = id_.encode("utf-8")
        sha.update(struct.pack("<I", len(data)) + data)
    return sha.hexdigest()


def local_figures(path: str, reps: int) -> Dict[str, Any]:
    import gulpdb.torch as gt

    ds = gulpdb.Dataset(path)
    n = len(ds)
    videos = gt.VideoDataset(ds)
    methods: Dict[str, Callable[[], Any]] = {
        "local_digest": lambda: ds.ids_digest(n),
        "local_ids": lambda: ds.ids(),
        "python_digest": lambda: python_digest(ds),
        # A fresh cache each time: the first digest of a VideoDataset.
        "list_digest": lambda: (videos._reader._digests.clear(), videos.ids_digest(n))[1],
    }
    digests = {ds.ids_digest(n), python_digest(ds), methods["list_digest"]()}
    if len(digests) != 1:
        raise SystemExit(f"ids_digest_bench: the digests disagree: {digests}")
    for fn in methods.values():  # warm-up: the index in the page cache
        fn()
    times: Dict[str, List[float]] = {name: [] for name in methods}
    for _ in range(reps):
        for name, fn in methods.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    out: Dict[str, Any] = {name: summary(t) for name, t in times.items()}
    out["ids_vs_digest"] = out["local_ids"]["median"] / out["local_digest"]["median"]
    out["python_vs_digest"] = out["python_digest"]["median"] / out["local_digest"]["median"]
    out["index_bytes"] = ds.stats().index_bytes
    return out


def cache_bytes(cache: str) -> Dict[str, int]:
    files, size = 0, 0
    for root, _, names in os.walk(cache):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(root, name))
    return {"files": files, "bytes": size}


def snapshot_figures(args: argparse.Namespace, path: str, work: str) -> Dict[str, Any]:
    report = gulpdb._gulpdb.publish_snapshot(path, layout="partitioned")
    env = dict(os.environ, GULPDB_TEST_FS_TYPE="lustre")
    runs: Dict[str, List[Dict[str, Any]]] = {"snapshot_digest": [], "snapshot_ids": []}
    want = None
    with gulpdb.Dataset(path) as ds:
        want = ds.ids_digest(len(ds))
    for rep in range(args.reps + 1):  # the first is the warm-up
        for name, what in (("snapshot_digest", "digest"), ("snapshot_ids", "ids")):
            cache = os.path.join(work, f"cache-{name}-{rep}")
            out = json.loads(run([PYTHON, "-c", NODE, path, what],
                                 dict(env, GULPDB_CACHE=cache)).strip().splitlines()[-1])
            if not out["partitioned"]:
                raise SystemExit("ids_digest_bench: the snapshot was not read partitioned")
            if what == "digest" and out["digest"] != want:
                raise SystemExit("ids_digest_bench: the snapshot's digest is not the local one")
            out.update(cache_bytes(cache))
            shutil.rmtree(cache)
            if rep:
                runs[name].append(out)
    figures: Dict[str, Any] = {
        "partitions": report.get("partitions"),
        "index_bytes": report.get("partition_bytes_uploaded"),
    }
    for name, results in runs.items():
        figures[name] = summary([r["seconds"] for r in results])
        figures[name + "_fetched"] = {"bytes": statistics.median(r["bytes"] for r in results),
                                      "files": statistics.median(r["files"] for r in results)}
    figures["ids_vs_digest"] = (figures["snapshot_ids"]["median"]
                                / figures["snapshot_digest"]["median"])
    figures["report"] = {k: v for k, v in report.items() if isinstance(v, (int, float, str))}
    return figures


def remote_figures(args: argparse.Namespace, path: str, work: str) -> Dict[str, Any]:
    sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
    import s3_proxy  # tests/harness/s3_proxy.py: s3rver and the proxy, bounded start and stop

    bucket = "gulpdb-digest"
    with s3_proxy.S3rverProcess(bucket) as server:
        proxy = s3_proxy.ProxyProcess(("127.0.0.1", server.port),
                                      credentials={"S3RVER": "S3RVER"}, log_size=10).start()
        try:
            env = dict(os.environ, AWS_ENDPOINT_URL=proxy.endpoint, AWS_ACCESS_KEY_ID="S3RVER",
                       AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1")
            env.pop("GULPDB_TEST_FS_TYPE", None)
            url = f"s3://{bucket}/digest"
            log("push")
            t0 = time.perf_counter()
            pushed = run([PYTHON, "-c", "import gulpdb, json, sys; "
                          "print(json.dumps(gulpdb.push(sys.argv[1], sys.argv[2], "
                          "layout='partitioned')))", path, url], env)
            push_seconds = time.perf_counter() - t0
            report = json.loads(pushed.strip().splitlines()[-1])
            with gulpdb.Dataset(path) as ds:
                want = ds.ids_digest(len(ds))
            runs: Dict[str, List[Dict[str, Any]]] = {"remote_digest": [], "remote_ids": []}
            for rep in range(args.reps + 1):  # the first is the warm-up
                for name, what in (("remote_digest", "digest"), ("remote_ids", "ids")):
                    cache = os.path.join(work, f"remote-cache-{name}-{rep}")
                    proxy.reset()
                    for method in ("GET", "HEAD"):
                        proxy.add_fault(kind="delay", delay_ms=args.latency_ms, fraction=1.0,
                                        method=method)
                    out = json.loads(run([PYTHON, "-c", NODE, url, what],
                                         dict(env, GULPDB_CACHE=cache)).strip().splitlines()[-1])
                    if what == "digest" and out["digest"] != want:
                        raise SystemExit("ids_digest_bench: the URL's digest is not the local one")
                    stats = proxy.stats()
                    out.update(bytes=stats["body_bytes_sent"], requests=stats["requests"])
                    shutil.rmtree(cache)
                    if rep:
                        runs[name].append(out)
        finally:
            proxy.stop()
    figures: Dict[str, Any] = {
        "latency_ms": args.latency_ms,
        "push_seconds": push_seconds,
        "partitions": report.get("partitions"),
        "index_bytes": report.get("partition_bytes_uploaded"),
    }
    for name, results in runs.items():
        figures[name] = summary([r["seconds"] for r in results])
        figures[name + "_fetched"] = {
            "bytes": statistics.median(r["bytes"] for r in results),
            "requests": statistics.median(r["requests"] for r in results)}
    figures["ids_vs_digest"] = figures["remote_ids"]["median"] / figures["remote_digest"]["median"]
    return figures


def state_figures(path: str) -> Dict[str, Any]:
    """JSON bytes of a state one third through an epoch of 8 ranks, and with
    shuffle="blocks" after each of three resumes (one segment more each)."""
    import gulpdb.torch as gt

    videos = gt.VideoDataset(path)
    n = len(videos)
    out: Dict[str, Any] = {}
    for name, shuffle in (("global", True), ("natural", False), ("blocks", "blocks")):
        s = gt.VideoSampler(videos, num_replicas=8, rank=0, shuffle=shuffle)
        s.set_epoch(7)
        state = s.state_dict(consumed=len(s) // 3)
        assert state["dataset"]["length"] == n
        out[name] = len(json.dumps(state))
        if shuffle == "blocks":
            for resume in (1, 2, 3):
                r = gt.VideoSampler(videos, num_replicas=8 - resume, rank=0)
                r.load_state_dict(state)
                state = r.state_dict(consumed=len(r) // 3)
                assert len(state["segments"]) == resume + 1
                out[f"blocks_after_{resume}_resumes"] = len(json.dumps(state))
        else:
            out[f"example_{name}"] = state
    return out


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ids_digest_bench-") as work:
        data_dir = args.data_dir or work
        os.makedirs(data_dir, exist_ok=True)
        path = make_dataset(args, data_dir)
        results: Dict[str, Any] = {"videos": args.videos, "reps": args.reps}
        log("local")
        results["local"] = local_figures(path, args.reps)
        log("partitioned snapshot")
        results["snapshot"] = snapshot_figures(args, path, work)
        if args.remote:
            log("remote")
            results["remote"] = remote_figures(args, path, work)
        log("state")
        results["state_bytes"] = state_figures(path)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
