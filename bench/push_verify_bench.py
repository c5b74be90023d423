#!/usr/bin/python3
"""What a push pays to check the objects it names (docs/remote_datasets.md,
"What a push checks"), and what Content-MD5 adds to every upload.

For a dataset of N videos of 16 tiny frames (hashed ids, a meta index on a
"label" of 100 values; `bench_data hashed`), pushed partitioned to a local
s3rver:

  record      `gulpdb push` of the unchanged dataset (it builds the
              partitions, checks every object its generation names, and
              publishes nothing), with this machine's record of checked
              ETags in place: no object is read locally for the check. The
              baseline, as a push checked before (size only, no local read).
  no record   the same push after the record is deleted, as on the first
              push from a machine: every partition in the node cache is read
              for its MD5 (and SHA-256), the root fetched once.
  append 1%   a push after a 1% append (record in place), for scale.

Pushes of the two kinds take turns, --reps rounds; each figure is the
median. And the hashing every upload does, in this process (OpenSSL through
hashlib, as gulpdb's libcrypto): SHA-256 alone (the payload hash, before)
against SHA-256 and MD5 of the same 64 MiB (now, for Content-MD5).

Run alone:
    bench/push_verify_bench.py --bin-dir build/release --videos 100000
Prints one JSON object and writes it, with a table, to --out/latest.json
and --out/latest.md. --smoke: 2,000 videos, 2 rounds (a CTest entry).
"""

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))

import s3_proxy  # noqa: E402  tests/harness/s3_proxy.py: s3rver, bounded start/stop

BUCKET = "gulpdb-verify"


def log(text):
    print("push_verify_bench: " + text, file=sys.stderr, flush=True)


def run(cmd, env, what):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=7200)
    if r.returncode != 0:
        raise SystemExit("push_verify_bench: %s failed (%d):\n%s%s"
                         % (what, r.returncode, r.stdout[-2000:], r.stderr[-4000:]))
    return r.stdout


def timed(cmd, env, what):
    t0 = time.perf_counter()
    out = run(cmd, env, what)
    return time.perf_counter() - t0, out


def hashing(mib, reps):
    """Seconds per pass over `mib` MiB: SHA-256 alone, SHA-256 and MD5."""
    data = os.urandom(mib << 20)
    view = memoryview(data)
    one, two = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        h = hashlib.sha256()
        for i in range(0, len(data), 1 << 20):
            h.update(view[i:i + (1 << 20)])
        h.hexdigest()
        one.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        h, m = hashlib.sha256(), hashlib.md5()
        for i in range(0, len(data), 1 << 20):
            h.update(view[i:i + (1 << 20)])
            m.update(view[i:i + (1 << 20)])
        h.hexdigest(), m.hexdigest()
        two.append(time.perf_counter() - t0)
    return statistics.median(one), statistics.median(two)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin-dir", default=os.path.join(REPO, "build", "release"))
    p.add_argument("--videos", type=int, default=100000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--data-dir", default=os.path.join(REPO, "build", "bench-data"))
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results", "push_verify"))
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args()
    if args.smoke:
        args.videos, args.reps = 2000, 2
        args.data_dir = tempfile.mkdtemp(prefix="push-verify-")
        args.out = os.path.join(args.data_dir, "out")
    cli = os.path.join(args.bin_dir, "cli", "gulpdb")
    bench_data = os.path.join(args.bin_dir, "bench", "bench_data")
    for program in (cli, bench_data):
        if not os.access(program, os.X_OK):
            raise SystemExit("push_verify_bench: %s is not built" % program)
    os.makedirs(args.data_dir, exist_ok=True)
    n = args.videos
    work = os.path.join(args.data_dir, "verify_%d" % n)
    shutil.rmtree(work, ignore_errors=True)
    log("building %d videos" % n)
    run([bench_data, "hashed", "--dir", work, "--videos", str(n)], dict(os.environ),
        "bench_data hashed")
    cache = work + ".cache"
    shutil.rmtree(cache, ignore_errors=True)
    result = {"videos": n, "reps": args.reps}
    with s3_proxy.S3rverProcess(BUCKET) as server:
        env = dict(os.environ, AWS_ENDPOINT_URL=server.endpoint, AWS_ACCESS_KEY_ID="S3RVER",
                   AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1", GULPDB_CACHE=cache)
        url = "s3://%s/v%d" % (BUCKET, n)
        push = [cli, "push", work, url, "--quiet", "--layout", "partitioned"]
        log("first push")
        result["first_push_seconds"], _ = timed(push, env, "first push")
        parts = os.path.join(cache, "partitions")
        result["cached_partition_bytes"] = sum(
            os.path.getsize(os.path.join(parts, f)) for f in os.listdir(parts)
            if not f.startswith("."))
        record = os.path.join(cache, "pushed")
        with_record, without_record = [], []
        for rep in range(args.reps):
            log("round %d" % (rep + 1))
            seconds, _ = timed(push, env, "push (record)")
            with_record.append(seconds)
            shutil.rmtree(record, ignore_errors=True)
            seconds, _ = timed(push, env, "push (no record)")
            without_record.append(seconds)
        result["record_seconds"] = with_record
        result["no_record_seconds"] = without_record
        run([bench_data, "hashed", "--dir", work, "--first", str(n),
             "--videos", str(max(1, n // 100))], env, "bench_data hashed (append)")
        log("push after a 1% append")
        result["append_push_seconds"], _ = timed(push, env, "push (append 1%)")
    one, two = hashing(16 if args.smoke else 64, 3 if args.smoke else 7)
    result["hash_mib"] = 16 if args.smoke else 64
    result["sha256_seconds"], result["sha256_md5_seconds"] = one, two
    rec = statistics.median(with_record)
    norec = statistics.median(without_record)
    mib = result["hash_mib"]
    rows = [
        ("push of the unchanged dataset, no record (every cached partition read: %.1f MB)"
         % (result["cached_partition_bytes"] / 1e6), "%.2f s" % norec,
         "the same push with the record: %.2f s" % rec, "%.2f×" % (norec / rec)),
        ("push after a 1% append (record)", "%.2f s" % result["append_push_seconds"],
         "first push: %.2f s" % result["first_push_seconds"], ""),
        ("hashing of an upload, SHA-256 + MD5 (%d MiB)" % mib,
         "%.0f MB/s" % (mib * 1.048576 / two), "SHA-256 alone: %.0f MB/s" % (mib * 1.048576 / one),
         "%.2f×" % (two / one)),
    ]
    table = ["| figure | now | baseline (same run) | ratio |", "|---|---|---|---|"]
    table += ["| %s | %s | %s | %s |" % r for r in rows]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "latest.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, "latest.md"), "w") as f:
        f.write("\n".join(table) + "\n")
    print(json.dumps(result))
    print("\n".join(table))
    if args.smoke:
        shutil.rmtree(args.data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
