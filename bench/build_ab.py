#!/usr/bin/python3
"""Two builds of gulpdb, interleaved round by round on the same data: does a
change move a benchmark figure by more than noise?

    bench/build_ab.py --old OLD_BIN_DIR --new NEW_BIN_DIR [--rounds 5]
                      [--reps 3] [--no-warm] [--data DIR] [--json OUT] [--smoke]
                      [--only lookup|decode|read|remote ...]

Each BIN_DIR is a build's bench/ directory (both built with the release
preset: the old one from a `git worktree` of the base commit into its own
build directory). Every round runs, for each build in turn (the order
alternates between rounds, so that a drift in the machine's load hits both
alike), the benchmarks whose figures a change of the read path could move:

  lookup       lookup_bench: Find(id) p50 (us), 10^5 videos
  decode       decode_bench: ReadFrames, one thread, clips per CPU-second
  raw read     read_bench random: ReadJpegs of random 16-frame clips, MB
               per CPU-second (CRC-32C checked, the default)
  remote clips remote_read_bench clips: batches of 16-frame clips from a
               partitioned snapshot pushed to s3rver on 127.0.0.1, clips/s
  remote CPU   the same run's client CPU time per clip (us): s3rver, which
               bounds the wall time on a shared machine, does not move it

The data come from the new build's bench_data; the push from the new
build's command (the snapshot format is the same for both). An untimed pass
of each build warms the caches before the rounds (--no-warm: none; the first
round then pays for it, which the median of enough rounds outvotes). Each
benchmark repeats its measurement --reps times within a run (its median is
the run's figure); fewer repetitions make a round shorter on a busy machine. Per figure it
prints the median of the rounds for each build and new/old, and says
whether that is within --tolerance (3% by default). Per CPU-second figures
are used where the program gives them: other load on a shared machine
disturbs them much less than wall time.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from run_common import REPO, write_clips


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_json(args, env=None):
    out = subprocess.run([str(a) for a in args], check=True, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, timeout=1800)
    return json.loads(out.stdout)


def make_data(new_bin, data, smoke):
    os.makedirs(data, exist_ok=True)
    prog = lambda name: os.path.join(new_bin, name)
    frames = os.path.join(data, "frames")
    if not os.path.isdir(frames):
        run_json([prog("bench_data"), "frames", "--out", frames, "--count", 80 if smoke else 280])
    real = os.path.join(data, "realistic")
    if not os.path.isdir(real):
        os.makedirs(real)
        run_json([prog("bench_data"), "realistic", "--frames", frames, "--dir", real + "/dataset",
                  "--jboj", real + "/jboj", "--manifest", real + "/manifest.tsv", "--videos",
                  20 if smoke else 300])
    videos = 2000 if smoke else 100000
    index = os.path.join(data, "index_%d" % videos)
    if not os.path.isdir(index):
        run_json([prog("bench_data"), "index", "--videos", videos, "--dir", index])
    manifest = real + "/manifest.tsv"
    return {
        "dataset": real + "/dataset",
        "index": index,
        "videos": videos,
        "decode_clips": write_clips(manifest, 20 if smoke else 200, 3,
                                   os.path.join(data, "clips_decode.tsv")),
        "random_clips": write_clips(manifest, 100 if smoke else 3000, 2,
                                   os.path.join(data, "clips_random.tsv")),
        "remote_clips": write_clips(manifest, 64 * (1 if smoke else 4), 5,
                                   os.path.join(data, "clips_remote.tsv")),
    }


# name -> (unit, higher is better, how to take it from one build's run)
FIGURES = {
    "lookup p50": ("us", False, lambda r: r["lookup"]["methods"]["find"]["p50_us"]["median"]),
    "decode": ("clips/CPU-s", True,
               lambda r: r["decode"]["methods"]["read_frames_1t"]["clips_per_cpu_s"]["median"]),
    "raw read": ("MB/CPU-s", True,
                 lambda r: r["read"]["methods"]["gulpdb_read_jpegs"]["mb_per_cpu_s"]["median"]),
    "remote clips": ("clips/s", True,
                     lambda r: r["remote"]["gulpdb_batch"]["clips_per_s"]["median"]),
    # The client's own CPU per clip: what a change of the client moves, and
    # what s3rver's speed (the wall time's bottleneck) does not.
    "remote CPU": ("us/clip", False,
                   lambda r: r["remote"]["gulpdb_batch"]["cpu_us_per_clip"]["median"]),
}
# The benchmark each figure comes from (--only runs those benchmarks alone).
BENCHMARK_OF = {"lookup p50": "lookup", "decode": "decode", "raw read": "read",
                "remote clips": "remote", "remote CPU": "remote"}


def one_build(bin_dir, d, server, args):
    prog = lambda name: os.path.join(bin_dir, name)
    reps = 1 if args.smoke else args.reps
    out = {}
    runs = lambda bench: not args.only or bench in args.only
    if runs("lookup"):
        out["lookup"] = run_json([prog("lookup_bench"), "--dir", d["index"], "--videos",
                                  d["videos"], "--lookups", 2000 if args.smoke else 100000,
                                  "--repeat", reps])
    if runs("decode"):
        out["decode"] = run_json([prog("decode_bench"), "--dir", d["dataset"], "--clips",
                                  d["decode_clips"], "--reps", reps])
    if runs("read"):
        out["read"] = run_json([prog("read_bench"), "random", "--dir", d["dataset"], "--clips",
                                d["random_clips"], "--reps", reps])
    if runs("remote"):
        env = dict(os.environ, AWS_ENDPOINT_URL=server.endpoint, AWS_ACCESS_KEY_ID="S3RVER",
                   AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1",
                   GULPDB_CACHE=os.path.join(args.data, "remote_cache"))
        out["remote"] = run_json([prog("remote_read_bench"), "clips", "--dataset", d["dataset"],
                                  "--clips", d["remote_clips"], "--endpoint", server.endpoint,
                                  "--bucket", "gulpdb-ab", "--prefix", "realistic", "--batch",
                                  64, "--batches", 1 if args.smoke else 4, "--sequential", 16,
                                  "--connections", 16, "--reps", reps], env=env)
    return {name: take(out) for name, (_, _, take) in FIGURES.items()
            if BENCHMARK_OF[name] in out}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True, help="the base build's bench/ directory")
    p.add_argument("--new", required=True, help="the changed build's bench/ directory")
    p.add_argument("--cli", help="a gulpdb command to push with (default: <new>/../cli/gulpdb)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=3, help="repetitions inside each benchmark run")
    p.add_argument("--no-warm", action="store_true", help="no untimed pass before the rounds")
    p.add_argument("--tolerance", type=float, default=0.03)
    p.add_argument("--data", default=os.path.join(REPO, "build", "bench-ab"))
    p.add_argument("--json", help="also write every measurement to this file")
    p.add_argument("--smoke", action="store_true", help="tiny data, one repetition")
    p.add_argument("--only", action="append", choices=sorted(set(BENCHMARK_OF.values())),
                   help="run only this benchmark (repeatable; default: all)")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.reps < 1:
        p.error("--rounds and --reps must be at least 1")
    cli = args.cli or os.path.join(os.path.dirname(os.path.abspath(args.new)), "cli", "gulpdb")
    d = make_data(args.new, args.data, args.smoke)
    sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
    import s3_proxy  # tests/harness/s3_proxy.py: s3rver with a bounded start and stop

    builds = {"old": args.old, "new": args.new}
    rounds = []
    with s3_proxy.S3rverProcess("gulpdb-ab") as server:
        env = dict(os.environ, AWS_ENDPOINT_URL=server.endpoint, AWS_ACCESS_KEY_ID="S3RVER",
                   AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1")
        subprocess.run([cli, "push", d["dataset"], "s3://gulpdb-ab/realistic", "--quiet"],
                       check=True, env=env, timeout=600, stdout=subprocess.DEVNULL)
        # An untimed pass of each build first: the page cache, the node cache
        # of the remote dataset's partitions and the connections all warm.
        for name in builds if not args.no_warm else []:
            one_build(builds[name], d, server, args)
        for k in range(args.rounds):
            order = ["old", "new"] if k % 2 == 0 else ["new", "old"]
            row = {}
            for name in order:
                t0 = time.perf_counter()
                row[name] = one_build(builds[name], d, server, args)
                log("round %d %s (%.0f s): %s" % (k + 1, name, time.perf_counter() - t0,
                                                   json.dumps(row[name])))
            rounds.append(row)
    summary = {}
    ok = True
    print("| figure | unit | old (median of %d) | new | new/old | within %.0f%% |" %
          (args.rounds, 100 * args.tolerance))
    print("|---|---|---|---|---|---|")
    for name, (unit, higher, _) in FIGURES.items():
        if name not in rounds[0]["old"]:
            continue
        old = statistics.median(r["old"][name] for r in rounds)
        new = statistics.median(r["new"][name] for r in rounds)
        ratio = new / old
        # Worse by more than the tolerance fails; better never does.
        within = (ratio >= 1 - args.tolerance) if higher else (ratio <= 1 + args.tolerance)
        ok = ok and within
        summary[name] = {"unit": unit, "old": old, "new": new, "ratio": ratio, "within": within}
        print("| %s | %s | %.3g | %.3g | %.3f | %s |" % (name, unit, old, new, ratio,
                                                         "yes" if within else "NO"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": rounds, "summary": summary, "tolerance": args.tolerance,
                       "old": args.old, "new": args.new}, f, indent=1)
    return 0 if ok or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
