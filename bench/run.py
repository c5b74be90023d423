#!/usr/bin/python3
"""Runs every gulpdb benchmark against its baseline and writes the results.

Usually started by scripts/bench.sh, which builds the release preset first:

    scripts/bench.sh [--scale quick|full] [run.py options]

or directly, with programs built elsewhere:

    /usr/bin/python3 bench/run.py --bin-dir build/release/bench [--scale quick|full|smoke]

It generates the datasets (deterministically; cached under --data-dir and
rebuilt only when their parameters change), runs each benchmark program and
Python baseline in fresh processes, and writes into --out (default
bench/results/):

    latest.json   every measurement, the run's parameters and the machine
    latest.md     one table: each figure, gulpdb against its baseline, the
                  target and whether it is met; then per-benchmark details
    *.png         plots (bench/report.py; it can redraw them from latest.json)

Every figure is the median of several runs with their min and max; the
"x baseline" column is how many times better gulpdb does than the baseline
measured in the same run (higher is better whatever the unit).

Scales: smoke (seconds; the test suite runs it), quick (about 2 minutes),
full (about 20 minutes; large datasets: 10^6 videos, 1 GB of .gmeta).
"""

import argparse
import dataclasses
import datetime
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import report  # noqa: E402  (bench/report.py, next to this file)

PYTHON = "/usr/bin/python3"  # has numpy and Pillow on Debian; the PATH one may not
BASELINES = os.path.join(HERE, "baselines.py")
CLIPS_BENCH = os.path.join(HERE, "clips_bench.py")
SAMPLER_BENCH = os.path.join(HERE, "sampler_bench.py")
COCKATOO = "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4"
FLUSH_SYSCALLS = "fdatasync,fsync,msync"


@dataclasses.dataclass
class Scale:
    """How big each benchmark runs."""

    open_videos: list            # dataset sizes for the open benchmark
    open_runs: int               # fresh-process runs per size, gulpdb
    open_baseline_runs: int      # ... and the .gmeta loader
    lookups: int
    lookup_repeat: int
    realistic_videos: int        # videos of 30-60 real frames
    random_clips: int
    reps: int                    # repetitions of in-process throughput passes
    decode_clips: int
    decode_reps: int
    cold_clips: int
    cold_runs: int
    append_commits: list         # per batch size 1, 10, 100, 1000
    append_strace_commits: list  # (fewer, more) commits per batch size
    gulpio_gmeta_mb: float
    interop_runs: int            # gulpdb import and export runs
    interop_baseline_runs: int   # Python json.load runs (the first also json.dumps)
    index_size_videos: int
    gmeta_reader_mb: int
    gmeta_reader_repeat: int
    clips_videos: int = 24           # DataLoader clips benchmark: videos, clips per epoch,
    clips_count: int = 192           # timed epochs
    clips_reps: int = 3
    # Remote datasets (s3rver on this machine): batches of REMOTE_BATCH clips,
    # clips read one at a time, repetitions, and dataset sizes for opening.
    remote_batches: int = 5
    remote_sequential: int = 64
    remote_reps: int = 3
    remote_python_batches: int = 2
    remote_open_videos: tuple = (1000, 10000, 100000)
    query_videos: int = 2000     # dataset size of the meta query benchmark
    query_repeat: int = 1
    distributed_videos: int = 48  # H.264 clips ingested per distributed-ingest run
    sampler_items: int = 10**6    # VideoSampler resume: items of the epoch, repetitions
    sampler_reps: int = 5
    distributed_runs: int = 3


SCALES = {
    "smoke": Scale(
        open_videos=[100, 1000], open_runs=2, open_baseline_runs=1, lookups=2000,
        lookup_repeat=1, realistic_videos=12, random_clips=50, reps=1, decode_clips=4, decode_reps=1,
        cold_clips=8, cold_runs=1, append_commits=[3, 2, 1, 1],
        append_strace_commits=[(1, 3), (1, 2), (1, 2), (1, 2)], gulpio_gmeta_mb=1,
        interop_runs=1, interop_baseline_runs=1, index_size_videos=300, gmeta_reader_mb=1, gmeta_reader_repeat=1,
        clips_videos=6, clips_count=16, clips_reps=1,
        remote_batches=1, remote_sequential=8, remote_reps=1, remote_python_batches=1,
        remote_open_videos=(100,), query_videos=2000, query_repeat=1,
        distributed_videos=4, distributed_runs=1),
    "quick": Scale(
        open_videos=[1000, 10000, 100000], open_runs=7, open_baseline_runs=3, lookups=100000,
        lookup_repeat=5, realistic_videos=200, random_clips=2000, reps=5, decode_clips=30,
        decode_reps=3,
        cold_clips=100, cold_runs=3, append_commits=[30, 20, 5, 2],
        append_strace_commits=[(5, 15), (2, 6), (1, 3), (1, 2)], gulpio_gmeta_mb=40,
        interop_runs=3, interop_baseline_runs=3, index_size_videos=10000, gmeta_reader_mb=32, gmeta_reader_repeat=2,
        clips_videos=24, clips_count=192, clips_reps=3, query_videos=100000, query_repeat=5),
    "full": Scale(
        open_videos=[1000, 10000, 100000, 1000000], open_runs=9, open_baseline_runs=3,
        lookups=200000, lookup_repeat=7, realistic_videos=2000, random_clips=20000, reps=7,
        decode_clips=150, decode_reps=5, cold_clips=400, cold_runs=5, append_commits=[200, 100, 20, 5],
        append_strace_commits=[(10, 60), (5, 25), (2, 8), (1, 3)], gulpio_gmeta_mb=1100,
        interop_runs=3, interop_baseline_runs=1, index_size_videos=100000, gmeta_reader_mb=512,
        gmeta_reader_repeat=3, clips_videos=60, clips_count=480, clips_reps=5,
        remote_batches=10, remote_sequential=128, remote_reps=5,
        remote_python_batches=3, remote_open_videos=(1000, 10000, 100000, 1000000),
        query_videos=1000000, query_repeat=5, distributed_videos=96, distributed_runs=5),
}

BATCH_SIZES = [1, 10, 100, 1000]
CLIP_FRAMES = 16
REMOTE_BATCH = 64            # clips per read_batch, as a DataLoader batch
REMOTE_CONNECTIONS = 16      # gulpdb's default GULPDB_S3_MAX_CONNECTIONS; the baselines get as many
REMOTE_LATENCY_MS = 20       # per GET, emulated by the S3 proxy: S3's first-byte latency is 10-50 ms


def log(message):
    stamp = time.strftime("%H:%M:%S")
    print("[bench %s] %s" % (stamp, message), file=sys.stderr, flush=True)


def summary(values):
    """median/min/max of a list of numbers (the median of an even count is the mean of the two)."""
    v = sorted(values)
    n = len(v)
    if n == 0:
        return None
    median = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return {"median": median, "min": v[0], "max": v[-1], "count": n}


def from_stats(stats):
    """The summary of a C++ program's Json::Stats object."""
    return {k: stats[k] for k in ("median", "min", "max", "count")}


def rm(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


class Runner:
    def __init__(self, args):
        self.args = args
        self.scale = SCALES[args.scale]
        self.bin_dir = os.path.abspath(args.bin_dir)
        self.data = os.path.abspath(args.data_dir)
        self.out = os.path.abspath(args.out)
        self.log_dir = os.path.join(self.data, "logs")
        os.makedirs(self.log_dir, exist_ok=True)
        self.results = {}
        self.figures = []
        self.notes = []
        self.cold_reason = None

    # ---- processes ----------------------------------------------------------------

    def program(self, name):
        path = os.path.join(self.bin_dir, name)
        if not os.access(path, os.X_OK):
            raise SystemExit("run.py: %s is not built (looked in %s)" % (name, self.bin_dir))
        return path

    def run(self, command, log_name, env=None):
        """Runs a command; returns its stdout. Its stderr goes to a log file."""
        log_path = os.path.join(self.log_dir, log_name + ".log")
        with open(log_path, "a") as log_file:
            log_file.write("$ %s\n" % " ".join(command))
            log_file.flush()
            proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=log_file, text=True,
                                  env=env)
        if proc.returncode != 0:
            with open(log_path) as f:
                tail = f.read()[-3000:]
            raise SystemExit("run.py: %s failed (exit %d):\n%s" %
                             (" ".join(command), proc.returncode, tail))
        return proc.stdout

    def run_json(self, command, log_name, env=None):
        """Runs a program that prints one JSON object as its last line of output."""
        out = self.run(command, log_name, env=env)
        lines = [line for line in out.splitlines() if line.strip()]
        if not lines:
            raise SystemExit("run.py: %s printed nothing" % " ".join(command))
        return json.loads(lines[-1])

    def bench(self, name, *args, log_name=None):
        return self.run_json([self.program(name)] + [str(a) for a in args], log_name or name)

    def python(self, *args, log_name="baselines"):
        return self.run_json([PYTHON, BASELINES] + [str(a) for a in args], log_name)

    # ---- datasets -------------------------------------------------------------------

    def ensure(self, name, params, build):
        """Returns data_dir/name, rebuilding it with build(path) unless its stamp matches."""
        path = os.path.join(self.data, name)
        stamp = path + ".stamp.json"
        if os.path.exists(path) and os.path.exists(stamp):
            with open(stamp) as f:
                saved = json.load(f)
            if saved.get("params") == params:
                return path, saved.get("info", {})
        rm(path)
        rm(stamp)
        log("generating %s" % name)
        info = build(path) or {}
        with open(stamp, "w") as f:
            json.dump({"params": params, "info": info}, f)
        return path, info

    def frames_pool(self):
        params = {"count": 280, "width": 320, "height": 240, "quality": 90, "video": COCKATOO}
        return self.ensure("frames_320x240", params, lambda path: self.bench(
            "bench_data", "frames", "--out", path, "--count", 280, "--width", 320,
            "--height", 240, "--quality", 90, "--video", COCKATOO))

    def realistic(self):
        """A dataset of real frames, its folder-of-JPEGs twin and its manifest."""
        frames, frames_info = self.frames_pool()
        videos = self.scale.realistic_videos
        name = "realistic_%d" % videos
        params = {"videos": videos, "frames": frames_info, "min": 30, "max": 60}

        def build(path):
            os.makedirs(path)
            return self.bench("bench_data", "realistic", "--frames", frames, "--dir",
                              path + "/dataset", "--jboj", path + "/jboj", "--manifest",
                              path + "/manifest.tsv", "--videos", videos)

        path, info = self.ensure(name, params, build)
        info = dict(info, frames_source=frames_info.get("source"),
                    width=frames_info.get("width"), height=frames_info.get("height"),
                    mean_jpeg_bytes=frames_info.get("mean_jpeg_bytes"))
        return path + "/dataset", path + "/jboj", path + "/manifest.tsv", info

    def index_dataset(self, videos, min_frames=16, max_frames=16, checksums=False,
                      minimal_meta=False, export=True):
        params = {"videos": videos, "min": min_frames, "max": max_frames,
                  "checksums": checksums, "minimal_meta": minimal_meta, "export": export}
        name = "index_%d_%d-%d%s%s" % (videos, min_frames, max_frames,
                                       "_crc" if checksums else "",
                                       "_nometa" if minimal_meta else "")
        args = ["index", "--videos", videos, "--min-frames", min_frames,
                "--max-frames", max_frames]
        args += ["--checksums"] if checksums else []
        args += ["--minimal-meta"] if minimal_meta else []
        args += ["--export"] if export else []
        return self.ensure(name, params,
                           lambda path: self.bench("bench_data", *args, "--dir", path))

    def gulpio_dir(self):
        mb = self.scale.gulpio_gmeta_mb
        return self.ensure("gulpio_%gMB" % mb, {"gmeta_mb": mb}, lambda path: self.bench(
            "bench_data", "gulpio", "--dir", path, "--gmeta-mb", mb))

    def clips_file(self, manifest, count, seed, name):
        """Random clips of CLIP_FRAMES consecutive frames: uniform video, uniform start."""
        videos = []
        with open(manifest) as f:
            for line in f:
                video_id, frames = line.rstrip("\n").split("\t")
                videos.append((video_id, int(frames)))
        rng = random.Random(seed)
        path = os.path.join(self.data, name)
        with open(path, "w") as f:
            for _ in range(count):
                video_id, frames = videos[rng.randrange(len(videos))]
                start = rng.randrange(frames - CLIP_FRAMES + 1)
                f.write("%s\t%d\t%d\n" % (video_id, start, CLIP_FRAMES))
        return path

    # ---- figures -------------------------------------------------------------------

    def figure(self, benchmark, name, unit, gulpdb, baseline=None, baseline_name=None,
               higher_is_better=True, target=None, note=None, gulpdb_name="gulpdb"):
        """Records one row of the results table.

        gulpdb/baseline: summaries (median/min/max). The ratio says how many times
        better gulpdb does than the baseline (medians). target: None or
        (text, on, op, threshold) where `on` is "value" or "ratio".
        """
        ratio = None
        if baseline is not None and baseline["median"] and gulpdb["median"]:
            ratio = (gulpdb["median"] / baseline["median"] if higher_is_better
                     else baseline["median"] / gulpdb["median"])
        met = None
        target_text = None
        rule = None
        if target is not None:
            target_text, on, op, threshold = target
            value = ratio if on == "ratio" else gulpdb["median"]
            rule = {"on": on, "op": op, "threshold": threshold, "value": value}
            if value is not None:
                met = {"<": value < threshold, "<=": value <= threshold,
                       ">=": value >= threshold, ">": value > threshold}[op]
        self.figures.append({
            "benchmark": benchmark, "figure": name, "unit": unit,
            "gulpdb_name": gulpdb_name, "gulpdb": gulpdb,
            "baseline_name": baseline_name, "baseline": baseline,
            "higher_is_better": higher_is_better, "ratio": ratio,
            "target": target_text, "target_rule": rule, "met": met, "note": note,
        })

    # ---- benchmarks ----------------------------------------------------------------

    def bench_open(self):
        s = self.scale
        points = []
        rng = random.Random(1)
        for videos in s.open_videos:
            path, info = self.index_dataset(videos)
            ids = [str(100000 + rng.randrange(videos))
                   for _ in range(1 + max(s.open_runs, s.open_baseline_runs))]
            # Page cache warm for both sides; an untimed run of each warms the rest.
            warm_files(path)
            self.bench("open_bench", "--dir", path, "--id", ids[0])
            ours, theirs = [], []
            for i in range(max(s.open_runs, s.open_baseline_runs)):
                if i < s.open_runs:
                    ours.append(self.bench("open_bench", "--dir", path, "--id", ids[i + 1]))
                if i < s.open_baseline_runs:
                    theirs.append(self.python("gmeta-open", "--dir", path, "--id", ids[i + 1]))
            point = {"videos": videos, "gmeta_bytes": info.get("gmeta_bytes"),
                     "gmeta_files": info.get("gmeta_files"),
                     "build_seconds": info.get("build_seconds"), "gulpdb": {}, "gmeta_json": {}}
            if videos == s.open_videos[-1]:
                no_gc = self.python("gmeta-open", "--dir", path, "--id", ids[1], "--no-gc")
                point["gmeta_json_no_gc"] = {k: no_gc[k] for k in ("total_ms", "peak_rss_mb")}
            for key in ("open_ms", "read_ms", "total_ms", "peak_rss_mb", "peak_rss_delta_mb"):
                point["gulpdb"][key] = summary([r[key] for r in ours])
                point["gmeta_json"][key] = summary([r[key] for r in theirs])
            points.append(point)
            log("open %d videos: gulpdb %.2f ms, %.1f MB; .gmeta json.load %.0f ms, %.0f MB" % (
                videos, point["gulpdb"]["total_ms"]["median"],
                point["gulpdb"]["peak_rss_mb"]["median"],
                point["gmeta_json"]["total_ms"]["median"],
                point["gmeta_json"]["peak_rss_mb"]["median"]))
        self.results["open"] = {"points": points,
                                "frames_per_video": 16, "videos_per_chunk": 1000}

        largest = points[-1]["videos"]
        at_scale = "" if largest >= 10 ** 6 else (
            "measured at %s videos (%s scale); the target is for 10^6" %
            (fmt_count(largest), self.args.scale))
        for p in points:
            top = p is points[-1]
            note = None
            if top:
                note = ("%s; the loader spent %.0f ms with Python's garbage collector disabled"
                        % (at_scale or "measured at 10^6", p["gmeta_json_no_gc"]["total_ms"]))
            self.figure("open", "open + read one video, %s videos" % fmt_count(p["videos"]), "ms",
                        p["gulpdb"]["total_ms"], p["gmeta_json"]["total_ms"],
                        "GulpIO-style json.load of every .gmeta", higher_is_better=False,
                        target=("< 5 ms at 10^6", "value", "<", 5.0) if top else None, note=note)
        for p in (points[0], points[-1]):
            self.figure("open", "peak RSS, open + read, %s videos" % fmt_count(p["videos"]), "MB",
                        p["gulpdb"]["peak_rss_mb"], p["gmeta_json"]["peak_rss_mb"],
                        "GulpIO-style json.load of every .gmeta", higher_is_better=False,
                        target=("flat in N", "value", "<=",
                                1.5 * points[0]["gulpdb"]["peak_rss_mb"]["median"])
                        if p is points[-1] else None,
                        note="whole process, libraries included" if p is points[0] else
                        "flat: within 1.5x of the smallest dataset's")
        first, last = points[0]["gulpdb"]["total_ms"], points[-1]["gulpdb"]["total_ms"]
        growth = {k: last[k] / first["median"] for k in ("median", "min", "max")}
        self.figure("open", "open time growth, %s -> %s videos" % (
            fmt_count(points[0]["videos"]), fmt_count(points[-1]["videos"])), "x",
            growth, higher_is_better=False, target=("flat in N (<= 1.5x)", "value", "<=", 1.5),
            note="time at the largest size / median time at the smallest")

    def bench_lookup(self):
        videos = self.scale.open_videos[-1]
        path, _ = self.index_dataset(videos)
        r = self.bench("lookup_bench", "--dir", path, "--videos", videos, "--lookups",
                       self.scale.lookups, "--repeat", self.scale.lookup_repeat)
        self.results["lookup"] = r
        m = r["methods"]
        note = None if videos >= 10 ** 6 else "measured at %s videos (%s scale)" % (
            fmt_count(videos), self.args.scale)
        base = "LMDB read txn + get alone"
        self.figure("lookup", "Find(id) p50, %s videos" % fmt_count(videos), "us",
                    from_stats(m["find"]["p50_us"]), from_stats(m["txn_get"]["p50_us"]), base,
                    higher_is_better=False, target=("p50 <= 2 us", "value", "<=", 2.0), note=note)
        self.figure("lookup", "Find(id) p99, %s videos" % fmt_count(videos), "us",
                    from_stats(m["find"]["p99_us"]), from_stats(m["txn_get"]["p99_us"]), base,
                    higher_is_better=False)
        self.figure("lookup", "ReadJpegs(id, 0:16) p50 (tiny frames)", "us",
                    from_stats(m["read_jpegs"]["p50_us"]), from_stats(m["txn_get"]["p50_us"]),
                    base, higher_is_better=False)

    def bench_random_read(self, dataset, manifest):
        clips = self.clips_file(manifest, self.scale.random_clips, 2, "clips_random.tsv")
        r = self.bench("read_bench", "random", "--dir", dataset, "--clips", clips,
                       "--reps", self.scale.reps)
        self.results["random_read"] = r
        m = r["methods"]
        self.figure("random read", "random 16-frame clips, JPEG bytes, warm cache", "MB/s",
                    from_stats(m["gulpdb_read_jpegs"]["mb_per_s"]), from_stats(m["pread"]["mb_per_s"]),
                    "bare pread, precomputed offsets",
                    target=(">= 0.8x bare pread", "ratio", ">=", 0.8),
                    note="%.0f vs %.0f clips/s; per CPU-second %.2fx" % (
                        m["gulpdb_read_jpegs"]["units_per_s"]["median"],
                        m["pread"]["units_per_s"]["median"],
                        m["gulpdb_read_jpegs"]["mb_per_cpu_s"]["median"] /
                        m["pread"]["mb_per_cpu_s"]["median"]))

    def bench_scan(self, dataset):
        r = self.bench("read_bench", "scan", "--dir", dataset, "--reps", self.scale.reps)
        self.results["sequential_scan"] = r
        m = r["methods"]
        base = from_stats(m["one_read_per_chunk"]["mb_per_s"])
        self.figure("sequential scan", "all frames in chunk order: ForEach + ReadJpegs", "MB/s",
                    from_stats(m["gulpdb_foreach_read_jpegs"]["mb_per_s"]), base,
                    "one large read per chunk file", target=(">= 0.9x", "ratio", ">=", 0.9))
        blocks = from_stats(m["block_reads"]["mb_per_s"])
        self.figure("sequential scan", "ForEach + ReadJpegs against 1 MiB block reads", "MB/s",
                    from_stats(m["gulpdb_foreach_read_jpegs"]["mb_per_s"]), blocks,
                    "chunk files read in 1 MiB preads",
                    note="a stricter baseline than one read per file: its buffer stays in the "
                         "CPU caches")
        self.figure("sequential scan", "ForEach + one read per chunk (proposed scan path)", "MB/s",
                    from_stats(m["gulpdb_foreach_chunk_read"]["mb_per_s"]), base,
                    "one large read per chunk file",
                    note="emulated outside the engine with the public API")

    def bench_decode(self, dataset, jboj, manifest):
        s = self.scale
        clips = self.clips_file(manifest, s.decode_clips, 3, "clips_decode.tsv")
        r = self.bench("decode_bench", "--dir", dataset, "--clips", clips, "--reps",
                       s.decode_reps)
        pillow = {}
        for workers in (1, 2):
            p = self.python("pillow-decode", "--jboj", jboj, "--clips", clips, "--workers",
                            workers, "--reps", s.decode_reps, log_name="pillow")
            pillow[workers] = p
        r["pillow"] = {str(w): dict(p, clips_per_s_summary=summary(p["clips_per_s"]))
                       for w, p in pillow.items()}
        self.results["decode"] = r
        m = r["methods"]
        cps = {k: from_stats(v["clips_per_s"]) for k, v in m.items()}
        shape = "%dx%d" % (r["width"], r["height"])

        def cpu_note(ours, bare):
            return ("per CPU-second (less sensitive to other load): %.2fx the bare loop's" %
                    (m[ours]["clips_per_cpu_s"]["median"] / m[bare]["clips_per_cpu_s"]["median"]))

        self.figure("decode", "1 thread: ReadFrames, %s clips of 16" % shape, "clips/s",
                    cps["read_frames_1t"], cps["bare_1t"], "bare TurboJPEG loop, 1 thread",
                    target=(">= 0.95x", "ratio", ">=", 0.95),
                    note=cpu_note("read_frames_1t", "bare_1t"))
        best2 = max(("read_frames_2t", "read_batch_2t", "read_frames_2callers"),
                    key=lambda k: cps[k]["median"])
        for key, label in (("read_batch_2t", "ReadBatch(8 clips), decode_threads=2"),
                           ("read_frames_2t", "ReadFrames, decode_threads=2"),
                           ("read_frames_2callers", "ReadFrames from 2 threads")):
            note = cpu_note(key, "bare_2t")
            if key == best2:
                note = "the best 2-thread path; " + note
            self.figure("decode", "2 threads: %s" % label, "clips/s", cps[key], cps["bare_2t"],
                        "bare TurboJPEG loop, 2 threads",
                        target=(">= 0.95x", "ratio", ">=", 0.95) if key == "read_batch_2t" else None,
                        note=note)
        p1, p2 = summary(pillow[1]["clips_per_s"]), summary(pillow[2]["clips_per_s"])
        self.figure("decode", "1 thread vs Pillow on a folder of JPEGs", "clips/s",
                    cps["read_frames_1t"], p1, "Pillow + NumPy, JPEG files, 1 process",
                    note="gulpdb's default fast DCT (GulpIO2's pixels); Pillow uses the accurate one")
        if "read_frames_1t_accurate" in cps:
            self.figure("decode", "1 thread, accurate DCT, vs Pillow", "clips/s",
                        cps["read_frames_1t_accurate"], p1, "Pillow + NumPy, JPEG files, 1 process",
                        note="same IDCT and upsampling as Pillow")
        self.figure("decode", "2 threads vs Pillow on a folder of JPEGs", "clips/s", cps[best2],
                    p2, "Pillow + NumPy, JPEG files, 2 processes")

    def bench_cold(self, dataset, jboj, manifest):
        s = self.scale
        method = self.cold_cache_method()
        runs = {"gulpdb": [], "jboj": []}
        for i in range(s.cold_runs):
            # A new clip set per run, so no run benefits from another's reads.
            clips = self.clips_file(manifest, s.cold_clips, 100 + i, "clips_cold_%d.tsv" % i)
            for which in ("gulpdb", "jboj"):
                if method == "drop_caches":
                    self.drop_caches()
                    evict = "none"
                else:
                    evict = "fadvise"
                runs[which].append(self.bench(
                    "read_bench", "cold", "--dir", dataset, "--jboj", jboj, "--clips", clips,
                    "--method", which, "--evict", evict))
        self.results["cold"] = {"method": method, "reason": self.cold_reason, "runs": runs}
        note = ("page cache dropped with /proc/sys/vm/drop_caches before each run"
                if method == "drop_caches" else
                "page cache: posix_fadvise(DONTNEED) on the files (%s); directory and inode "
                "caches stay warm, which favours the folder of files" % self.cold_reason)
        self.figure("cold cache", "random 16-frame clips, cold page cache", "clips/s",
                    summary([r["clips_per_s"] for r in runs["gulpdb"]]),
                    summary([r["clips_per_s"] for r in runs["jboj"]]),
                    "folder of JPEG files (open+read per frame)", note=note)
        self.figure("cold cache", "cold clip latency p50", "ms",
                    summary([r["p50_ms"] for r in runs["gulpdb"]]),
                    summary([r["p50_ms"] for r in runs["jboj"]]),
                    "folder of JPEG files (open+read per frame)", higher_is_better=False)

    def cold_cache_method(self):
        wanted = self.args.cold_cache
        self.cold_reason = "chosen with --cold-cache fadvise"
        if wanted in ("auto", "drop"):
            try:
                self.drop_caches()
                self.cold_reason = "drop_caches is writable"
                return "drop_caches"
            except OSError as e:
                self.cold_reason = "cannot write /proc/sys/vm/drop_caches: %s" % e.strerror
                if wanted == "drop":
                    raise SystemExit("run.py: --cold-cache drop: %s" % self.cold_reason)
                log("cold cache: %s; using posix_fadvise(POSIX_FADV_DONTNEED) instead" %
                    self.cold_reason)
        return "fadvise"

    @staticmethod
    def drop_caches():
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")

    def bench_append(self, frames):
        s = self.scale
        work = os.path.join(self.data, "append")
        rm(work)
        r = self.bench("append_bench", "--dir", work, "--frames", frames, "--batch-sizes",
                       ",".join(map(str, BATCH_SIZES)), "--commits",
                       ",".join(map(str, s.append_commits)))
        fsyncs = self.count_append_fsyncs(work, frames)
        r["flush_syscalls"] = fsyncs
        rm(work)
        self.results["append"] = r
        for row in r["batches"]:
            b = row["batch"]
            per_commit = fsyncs["per_commit"].get(str(b))
            note = None
            if per_commit is not None:
                note = ("%.1f durable writes per commit: %.1f fsync-family calls + %.1f O_DSYNC "
                        "writes (%s)" % (per_commit["total"], per_commit["flush"],
                                         per_commit["dsync_writes"], fsyncs["how"]))
            self.figure("append", "batch %d: committed videos/s" % b, "videos/s",
                        point(row["gulpdb_videos_per_s"]), point(row["bare_videos_per_s"]),
                        "pwritev + 1 fdatasync per batch, no index", note=note)
            self.figure("append", "batch %d: commit latency" % b, "ms",
                        from_stats(row["commit_ms"]), from_stats(row["bare_batch_ms"]),
                        "the bare batch's write + fdatasync", higher_is_better=False,
                        note="latency of Commit() alone; the baseline includes its writes")

    def count_append_fsyncs(self, work, frames):
        """Durable writes per commit, by batch size, counted with strace."""
        if shutil.which("strace") is None:
            self.notes.append(
                "strace is not installed, so durable writes per commit were not counted; by the "
                "commit protocol a commit that stays in one chunk makes 3 (fdatasync of the chunk, "
                "fdatasync of LMDB's data file, LMDB's meta page through an O_DSYNC descriptor), "
                "plus 3 for every chunk it starts (directory fsync, LMDB commit of the new chunk)")
            return {"how": "not counted (strace not installed)",
                    "per_commit": {str(b): None for b in BATCH_SIZES}}
        per_commit, raw = {}, {}
        for b, (fewer, more) in zip(BATCH_SIZES, self.scale.append_strace_commits):
            counts = []
            for commits in (fewer, more):
                counts.append(self.strace_sync_count(
                    [self.program("append_bench"), "--dir", work, "--frames", frames,
                     "--batch-sizes", str(b), "--commits", str(commits), "--no-bare"],
                    "append_strace"))
            per_commit[str(b)] = {k: (counts[1][k] - counts[0][k]) / (more - fewer)
                                  for k in counts[0]}
            raw[str(b)] = {"commits": [fewer, more], "counts": counts}
        return {"how": "strace, difference of two runs with different commit counts",
                "per_commit": per_commit, "raw": raw}

    def strace_sync_count(self, command, log_name):
        """Runs command under strace; counts its durable writes.

        Returns {"flush": fdatasync + fsync + msync + sync_file_range calls,
        "dsync_writes": writes to descriptors opened with O_DSYNC or O_SYNC
        (LMDB writes its meta page that way), "total": the sum}.
        """
        traced = ("openat,open,creat,close,write,writev,pwrite64,pwritev,pwritev2,"
                  + FLUSH_SYSCALLS + ",sync_file_range")
        # LeakSanitizer cannot run under ptrace: in sanitizer builds, leave it out.
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
        with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
            self.run(["strace", "-f", "-qq", "-e", "trace=" + traced, "-o", out.name] + command,
                     log_name, env=env)
            return parse_strace(out)

    def bench_interop(self):
        s = self.scale
        gulpio, info = self.gulpio_dir()
        imports, loads, exports = [], [], []
        export_out = os.path.join(self.data, "export_out")
        dump_out = os.path.join(self.data, "json_dump_out")
        for i in range(max(s.interop_runs, s.interop_baseline_runs)):
            if i < s.interop_runs:
                imports.append(self.bench("interop_bench", "import", "--dir", gulpio))
            if i < s.interop_baseline_runs:
                dump = ["--dump-to", dump_out] if i == 0 else []
                loads.append(self.python("gmeta-load", "--dir", gulpio, *dump))
                rm(dump_out)
            if i < s.interop_runs:
                exports.append(self.bench("interop_bench", "export", "--dir", gulpio,
                                          "--out", export_out))
        rm(export_out)
        # The same import with the index on a tmpfs, where syncing costs nothing:
        # how much of the time is parsing and indexing.
        tmpfs = None
        shm = "/dev/shm"
        if os.path.isdir(shm) and shutil.disk_usage(shm).free > 2 * info["gmeta_bytes"]:
            index_dir = os.path.join(shm, "gulpdb_bench_import_%d" % os.getpid())
            try:
                tmpfs = self.bench("interop_bench", "import", "--dir", gulpio, "--index-dir",
                                   index_dir)
            finally:
                rm(index_dir)
        # `gulpdb import` by default also reads every data file to store a
        # CRC-32C per frame; the figure above is the index-only import.
        with_checksums = self.bench("interop_bench", "import", "--dir", gulpio, "--checksums")
        fsyncs = None
        if shutil.which("strace"):
            fsyncs = self.strace_sync_count(
                [self.program("interop_bench"), "import", "--dir", gulpio], "import_strace")
        self.results["interop"] = {"gulpio": info, "import": imports, "json_load": loads,
                                   "export": exports, "import_flush_syscalls": fsyncs,
                                   "import_index_on_tmpfs": tmpfs,
                                   "import_with_checksums": with_checksums}
        size_mb = info["gmeta_bytes"] / 1e6
        base = "Python json.load of the same files"
        note = "%.0f MB of .gmeta in %d files" % (size_mb, info["chunks"])
        if fsyncs:
            note += "; %d durable writes (fsync family + O_DSYNC writes) per import" % (
                fsyncs["total"])
        self.figure("import/export", "ImportGulpio", "MB/s",
                    summary([r["mb_per_s"] for r in imports]),
                    summary([r["mb_per_s"] for r in loads]), base,
                    target=(">= 200 MB/s", "value", ">=", 200.0), note=note)
        pct = lambda rows: summary([100.0 * r["peak_rss_mb"] * 1048576 / info["gmeta_bytes"]
                                    for r in rows])
        self.figure("import/export", "ImportGulpio peak RSS, % of .gmeta size", "%",
                    pct(imports), pct(loads), "json.load peak RSS", higher_is_better=False,
                    target=("< 25%", "value", "<", 25.0),
                    note="VmHWM of the whole process, %.0f MB (median); at most %.0f MB of it "
                         "private (RssAnon), the rest mapped pages of files, mostly the LMDB "
                         "map of the index being built (%.0f MB)" % (
                             summary([r["peak_rss_mb"] for r in imports])["median"],
                             max(r["peak_rss_anon_mb"] for r in imports),
                             imports[-1]["index_bytes"] / 1048576))
        self.figure("import/export", "ImportGulpio private memory (RssAnon), % of .gmeta size",
                    "%", summary([100.0 * r["peak_rss_anon_mb"] * 1048576 / info["gmeta_bytes"]
                                  for r in imports]),
                    pct(loads), "json.load peak RSS", higher_is_better=False,
                    note="peak of RssAnon sampled every 10 ms")
        if tmpfs:
            self.figure("import/export", "ImportGulpio with the index on tmpfs (no sync cost)",
                        "MB/s", point(tmpfs["mb_per_s"]), summary([r["mb_per_s"] for r in loads]),
                        base, note="one run; shows what parsing and indexing cost without the "
                                   "per-chunk commits' syncs")
        self.figure("import/export", "ExportGmeta", "MB/s",
                    summary([r["mb_per_s"] for r in exports]),
                    summary([r["dump_mb_per_s"] for r in loads if "dump_mb_per_s" in r]),
                    "Python json.dump of the loaded objects (no fsync)",
                    note="gulpdb writes each file atomically: temp file, fsync, rename")

    def bench_index_size(self):
        videos = self.scale.index_size_videos
        rows = []
        configs = [
            ("contiguous, 30-60 frames, no meta, checksums off", False, True),
            ("contiguous, 30-60 frames, no meta, checksums on", True, True),
            ("30-60 frames, GulpIO2-style meta, checksums off", False, False),
            ("30-60 frames, GulpIO2-style meta, checksums on", True, False),
        ]
        for label, checksums, minimal in configs:
            path, _ = self.index_dataset(videos, 30, 60, checksums=checksums,
                                         minimal_meta=minimal)
            st = self.bench("bench_data", "stats", "--dir", path)
            st["label"] = label
            st["mdb_stat"] = mdb_stat(os.path.join(path, "gulpdb.index"))
            rows.append(st)
        # The GulpIO directory the interop benchmark imported, when it ran.
        gulpio = os.path.join(self.data, "gulpio_%gMB" % self.scale.gulpio_gmeta_mb)
        if os.path.isdir(os.path.join(gulpio, "gulpdb.index")):
            st = self.bench("bench_data", "stats", "--dir", gulpio)
            st["label"] = "imported GulpIO directory (2-20 KB frames, GulpIO2-style meta)"
            st["mdb_stat"] = mdb_stat(os.path.join(gulpio, "gulpdb.index"))
            rows.append(st)
        self.results["index_size"] = {"videos": videos, "rows": rows}
        for st in rows:
            per_frame = st["index_bytes"] / st["frames"]
            gmeta = st["gmeta_bytes"] / st["frames"]
            contiguous = st["label"].startswith("contiguous")
            rec = st["records"]
            self.figure("index size", st["label"], "B/frame", point(per_frame), point(gmeta),
                        ".gmeta JSON of the same videos", higher_is_better=False,
                        target=("<= 6 B/frame", "value", "<=", 6.0) if contiguous else None,
                        note="%s videos, %s frames; record payload %.2f B/frame = sizes %.2f + "
                             "checksums %.2f + meta %.2f + FlatBuffers structure %.2f (%.0f B per "
                             "video); keys %.2f, order table %.2f, LMDB pages the rest" % (
                                 fmt_count(st["videos"]), fmt_count(st["frames"]),
                                 rec["record_bytes_per_frame"], rec["jpeg_size_bytes_per_frame"],
                                 rec["checksum_bytes_per_frame"], rec["meta_bytes_per_frame"],
                                 rec["other_record_bytes_per_frame"],
                                 rec["other_record_bytes_per_video"], rec["key_bytes_per_frame"],
                                 rec["order_bytes_per_frame"]))

    def bench_query(self):
        s = self.scale
        path = os.path.join(self.data, "query_%d" % s.query_videos)
        r = self.bench("query_bench", "--dir", path, "--videos", s.query_videos,
                       "--repeat", s.query_repeat)
        self.results["query"] = r
        videos = fmt_count(r["videos"])
        self.figure("meta query", "Select, %s matches of %s videos: meta index vs scan" % (
            fmt_count(r["group_matches"]), videos), "ms",
            from_stats(r["indexed_group_ms"]), from_stats(r["scan_group_ms"]),
            "the same Select on an unindexed key (a scan of every record)",
            higher_is_better=False)
        self.figure("meta query", "Select label=class_7 (%s matches of %s videos)" % (
            fmt_count(r["label_matches"]), videos), "ms",
            from_stats(r["indexed_label_ms"]), from_stats(r["scan_label_ms"]),
            "the same Select before the label has an index (a scan)", higher_is_better=False)
        rows = r["by_matches"]
        first, last = rows[0], rows[-1]
        # O(matches): time per match flat from 100 matches up (fixed costs dominate below).
        base = next((row for row in rows if row["matches"] >= 100), first)
        growth = {k: last["ns_per_match"][k] / base["ns_per_match"]["median"]
                  for k in ("median", "min", "max")}
        self.figure("meta query", "indexed Select time per match, %s -> %s matches" % (
            fmt_count(base["matches"]), fmt_count(last["matches"])), "x", growth,
            higher_is_better=False, target=("O(matches): <= 2x", "value", "<=", 2.0),
            note="; ".join("%s matches %.3f ms" % (fmt_count(row["matches"]),
                                                    row["indexed_ms"]["median"]) for row in rows)
            + "; index built in %.1f s" % r["index_build_seconds"])

    def bench_gmeta_reader(self):
        s = self.scale
        with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
            self.run([self.program("gmeta_bench"), "--size-mb", str(s.gmeta_reader_mb),
                      "--repeat", str(s.gmeta_reader_repeat), "--dir", self.data,
                      "--json", out.name], "gmeta_bench")
            r = json.load(out)
        self.results["gmeta_reader"] = r
        by = {m["method"]: m for m in r["results"]}
        if "gulpdb" in by and "read_only" in by:
            self.figure("import/export", "streaming .gmeta reader alone (one %d MB file)" %
                        round(r["file_bytes"] / 1e6), "MB/s", point(by["gulpdb"]["mb_per_s"]),
                        point(by["read_only"]["mb_per_s"]), "read(2) of the file, no parsing",
                        note="best of %d runs; peak RSS %.1f MB" % (
                            s.gmeta_reader_repeat, by["gulpdb"]["peak_rss_bytes"] / 1e6))

    def python_env(self):
        """The environment of a Python benchmark: PYTHONPATH at the built gulpdb package."""
        python_dir = self.args.python_dir or os.path.join(os.path.dirname(self.bin_dir), "python")
        if not os.path.isdir(os.path.join(python_dir, "gulpdb")):
            raise SystemExit("run.py: the gulpdb Python package is not built in %s "
                             "(--python-dir)" % python_dir)
        return dict(os.environ, PYTHONPATH=python_dir)

    def bench_clips(self):
        """gulpdb.torch.VideoDataset(size=) against a torchvision loader (bench/clips_bench.py)."""
        s = self.scale
        env = self.python_env()
        results = {}
        for crop in ("center", "random"):
            work = os.path.join(self.data, "clips_bench_%s" % crop)
            rm(work)
            command = [PYTHON, CLIPS_BENCH, "--dir", work, "--videos", str(s.clips_videos),
                       "--clips", str(s.clips_count), "--reps", str(s.clips_reps),
                       "--crop", crop]
            if self.args.scale == "smoke":
                command.append("--smoke")
            out = self.run(command, "clips_bench", env=env)
            rm(work)
            lines = [line for line in out.splitlines() if line.strip()]
            results[crop] = json.loads(lines[-1])
        self.results["clips"] = results
        for crop, r in results.items():
            g = summary(r["gulpdb"]["clips_per_s"])
            crop_name = "CenterCrop" if crop == "center" else "RandomCrop"
            for name, label in (("torchvision", "ToTensor"), ("uint8", "PILToTensor")):
                b = summary(r[name]["clips_per_s"])
                cpu = r["cpu_ratio_" + name]
                note = "per CPU-second (less sensitive to other load): %s" % (
                    "%.2fx" % cpu if cpu else "-")
                if r[name]["pixel_mean_abs_diff"] is not None:
                    note += ("; pixels differ by %.2f on average (0-255): bilinear after DCT "
                             "scaling vs Pillow's antialiased bilinear" %
                             r[name]["pixel_mean_abs_diff"])
                self.figure("clips", "DataLoader, %d workers: %dx%d clips of %d frames, crop=%r, "
                            "frames %s" % (r["workers"], r["size"], r["size"], r["clip_frames"],
                                           crop, r["sizes"]),
                            "clips/s", g, b,
                            "JPEG files + PIL + torchvision Resize, %s, %s" % (crop_name, label),
                            target=(">= 3x", "ratio", ">=", 3.0) if name == "torchvision" else None,
                            note=note)

    def bench_sampler(self):
        """VideoSampler's resume mid-epoch against DistributedSampler (bench/sampler_bench.py)."""
        s = self.scale
        env = self.python_env()
        command = [PYTHON, SAMPLER_BENCH]
        if self.args.scale == "smoke":
            command.append("--smoke")
        else:
            command += ["--items", str(s.sampler_items), "--reps", str(s.sampler_reps)]
        out = self.run(command, "sampler_bench", env=env)
        r = json.loads(out[out.index("{"):])
        self.results["sampler"] = r
        ms = {k: {"median": v["median_s"] * 1e3, "min": v["min_s"] * 1e3,
                  "max": v["max_s"] * 1e3, "count": r["reps"]} for k, v in r["results"].items()}
        items = fmt_count(r["items"])
        self.figure("sampler", "resume at %s items: VideoSampler + load_state_dict + first batch"
                    % items, "ms", ms["index_resume"], ms["index_skip"],
                    "DistributedSampler, skipping the indices already consumed",
                    higher_is_better=False, target=("< 1 s", "value", "<", 1000.0),
                    note="construct + load_state_dict alone: %.3f ms" % ms["index_load"]["median"])
        self.figure("sampler", "first batch of an epoch at %s items" % items, "ms",
                    ms["index_fresh"], ms["index_distributed"],
                    "DistributedSampler (builds the list of indices)", higher_is_better=False)

    def bench_remote(self, dataset, manifest):
        """Remote datasets on a local s3rver: clips against a bare libcurl loop and one at a
        time, Python against boto3, opening against dataset size; directly and behind a
        proxy that adds REMOTE_LATENCY_MS to every GET."""
        sys.path.insert(0, os.path.join(REPO, "testing"))
        import s3_proxy  # testing/s3_proxy.py: s3rver and the proxy, bounded start/stop

        s = self.scale
        cli = os.path.join(os.path.dirname(self.bin_dir), "cli", "gulpdb")
        if not os.access(cli, os.X_OK):
            raise SystemExit("run.py: %s is not built" % cli)
        clips = self.clips_file(manifest, REMOTE_BATCH * s.remote_batches, 5, "clips_remote.tsv")
        results = {"batch": REMOTE_BATCH, "connections": REMOTE_CONNECTIONS,
                   "latency_ms": REMOTE_LATENCY_MS, "settings": {}, "open": []}
        with s3_proxy.S3rverProcess("gulpdb-bench") as server:
            env = dict(os.environ, AWS_ENDPOINT_URL=server.endpoint, AWS_ACCESS_KEY_ID="S3RVER",
                       AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1",
                       GULPDB_CACHE=os.path.join(self.data, "remote_cache"),
                       GULPDB_S3_MAX_CONNECTIONS=str(REMOTE_CONNECTIONS),
                       PYTHONPATH=os.path.join(os.path.dirname(self.bin_dir), "python"))
            rm(env["GULPDB_CACHE"])
            data_bytes = sum(os.path.getsize(os.path.join(dataset, n)) for n in os.listdir(dataset)
                             if n.endswith(".gulp"))
            t0 = time.perf_counter()
            self.run([cli, "push", dataset, "s3://gulpdb-bench/realistic", "--quiet"],
                     "remote_push", env=env)
            push_seconds = time.perf_counter() - t0
            results["push"] = {"bytes": data_bytes, "seconds": push_seconds}
            self.figure("remote", "push (first, %s of chunk files)" % fmt_bytes(data_bytes), "MB/s",
                        point(data_bytes / 1e6 / push_seconds),
                        note="gulpdb push --jobs 4 to the local s3rver: uploads, CRC-32C and "
                             ".gmeta of every chunk, the index snapshot, the manifest")
            proxy = s3_proxy.ProxyProcess(("127.0.0.1", server.port)).start()
            try:
                proxy.add_fault(kind="delay", delay_ms=REMOTE_LATENCY_MS, fraction=1.0,
                                method="GET")
                settings = [("direct", server.endpoint, False),
                            ("%d ms latency" % REMOTE_LATENCY_MS, proxy.endpoint, True)]
                for name, endpoint, anonymous in settings:
                    self.remote_setting(name, endpoint, anonymous, dataset, clips, env, results)
            finally:
                proxy.stop()
            for videos in s.remote_open_videos:
                path, _ = self.index_dataset(videos)
                prefix = "index_%d" % videos
                self.run([cli, "push", path, "s3://gulpdb-bench/" + prefix, "--quiet"],
                         "remote_push", env=env)
                r = self.run_json([self.program("remote_read_bench"), "open", "--dataset", path,
                                   "--endpoint", server.endpoint, "--bucket", "gulpdb-bench",
                                   "--prefix", prefix, "--reps", str(max(3, s.remote_reps))],
                                  "remote_read_bench", env=env)
                results["open"].append(r)
                log("remote open %d videos: first %.1f ms (%s), re-open %.2f ms (%d bytes)" % (
                    videos, r["first_open"]["ms"]["median"], fmt_bytes(r["snapshot_bytes"]),
                    r["reopen"]["ms"]["median"], r["reopen"]["bytes"]["median"]))
        self.results["remote"] = results
        for r in results["open"]:
            n = fmt_count(r["videos"])
            self.figure("remote", "first open (index download), %s videos" % n, "ms",
                        from_stats(r["first_open"]["ms"]), from_stats(r["local_open"]["ms"]),
                        "Dataset::Open of the local copy", higher_is_better=False,
                        note="downloads the %s snapshot once per machine (%d requests, %s)" % (
                            fmt_bytes(r["snapshot_bytes"]), r["first_open"]["requests"]["median"],
                            fmt_bytes(r["first_open"]["bytes"]["median"])))
            self.figure("remote", "re-open, %s videos" % n, "ms",
                        from_stats(r["reopen"]["ms"]), from_stats(r["local_open"]["ms"]),
                        "Dataset::Open of the local copy", higher_is_better=False,
                        note="one GET of the manifest: %s" % fmt_bytes(
                            r["reopen"]["bytes"]["median"]))

    def remote_setting(self, name, endpoint, anonymous, dataset, clips, env, results):
        s = self.scale
        args = [self.program("remote_read_bench"), "clips", "--dataset", dataset, "--clips", clips,
                "--endpoint", endpoint, "--bucket", "gulpdb-bench", "--prefix", "realistic",
                "--batch", str(REMOTE_BATCH), "--batches", str(s.remote_batches),
                "--sequential", str(s.remote_sequential), "--connections",
                str(REMOTE_CONNECTIONS), "--reps", str(s.remote_reps)]
        setting_env = dict(env, AWS_ENDPOINT_URL=endpoint)
        if anonymous:
            args.append("--anonymous")
            for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
                setting_env.pop(key, None)
            setting_env["AWS_SHARED_CREDENTIALS_FILE"] = "/dev/null"
        c = self.run_json(args, "remote_read_bench", env=setting_env)
        py = self.run_json([PYTHON, BASELINES, "s3-clips", "--url", "s3://gulpdb-bench/realistic",
                            "--dataset", dataset, "--clips", clips, "--batch", str(REMOTE_BATCH),
                            "--batches", str(s.remote_python_batches), "--threads",
                            str(REMOTE_CONNECTIONS), "--reps", str(s.remote_reps)]
                           + (["--anonymous"] if anonymous else []), "baselines", env=setting_env)
        results["settings"][name] = {"cpp": c, "python": py}
        log("remote %s: batch %.0f clips/s, bare curl %.0f, one at a time %.0f; Python gulpdb "
            "%.0f, boto3 %.0f" % (name, c["gulpdb_batch"]["clips_per_s"]["median"],
                                  c["bare_curl"]["clips_per_s"]["median"],
                                  c["gulpdb_sequential"]["clips_per_s"]["median"],
                                  summary(py["gulpdb_clips_per_s"])["median"],
                                  summary(py["boto3_clips_per_s"])["median"]))
        where = "local s3rver" if name == "direct" else             "local s3rver behind a proxy adding %d ms per GET (anonymous requests)" % (
                REMOTE_LATENCY_MS)
        self.figure("remote", "random 16-frame clips, read_batch of 64, %s" % name, "clips/s",
                    from_stats(c["gulpdb_batch"]["clips_per_s"]),
                    from_stats(c["bare_curl"]["clips_per_s"]),
                    "bare libcurl multi loop, same ranges and %d connections" % REMOTE_CONNECTIONS,
                    target=(">= 0.8x bare libcurl", "ratio", ">=", 0.8),
                    note="%s; %.1f requests per clip; %.0f vs %.0f us of client CPU per clip" % (
                        where, c["gulpdb_batch"]["requests_per_clip"],
                        c["gulpdb_batch"]["cpu_us_per_clip"]["median"],
                        c["bare_curl"]["cpu_us_per_clip"]["median"]))
        self.figure("remote", "read_batch of 64 clips vs one clip at a time, %s" % name,
                    "clips/s", from_stats(c["gulpdb_batch"]["clips_per_s"]),
                    from_stats(c["gulpdb_sequential"]["clips_per_s"]),
                    "ReadJpegs one clip at a time",
                    target=(">= 4x", "ratio", ">=", 4.0) if name != "direct" else None,
                    note=where + ("" if name != "direct" else
                                  "; with no network latency the server's CPU, not waiting, "
                                  "limits both"))
        self.figure("remote", "Python: read_jpeg_batch vs boto3 per frame, %s" % name, "clips/s",
                    summary(py["gulpdb_clips_per_s"]), summary(py["boto3_clips_per_s"]),
                    "boto3 get_object(Range) per frame, ThreadPoolExecutor(%d)" % (
                        REMOTE_CONNECTIONS),
                    target=(">= 3x", "ratio", ">=", 3.0), note=where)

    # ---- the run --------------------------------------------------------------------

    def run_all(self):
        selected = self.args.only.split(",") if self.args.only else ALL_BENCHMARKS
        unknown = set(selected) - set(ALL_BENCHMARKS)
        if unknown:
            raise SystemExit("run.py: unknown benchmark(s) %s; choose from %s" %
                             (", ".join(sorted(unknown)), ", ".join(ALL_BENCHMARKS)))
        started = time.time()
        needs_real = {"random", "scan", "decode", "cold", "append", "remote"} & set(selected)
        if needs_real:
            dataset, jboj, manifest, info = self.realistic()
            frames, _ = self.frames_pool()
            self.results["realistic_dataset"] = info
        steps = {
            "open": lambda: self.bench_open(),
            "lookup": lambda: self.bench_lookup(),
            "random": lambda: self.bench_random_read(dataset, manifest),
            "scan": lambda: self.bench_scan(dataset),
            "decode": lambda: self.bench_decode(dataset, jboj, manifest),
            "cold": lambda: self.bench_cold(dataset, jboj, manifest),
            "append": lambda: self.bench_append(frames),
            "interop": lambda: self.bench_interop(),
            "index_size": lambda: self.bench_index_size(),
            "gmeta_reader": lambda: self.bench_gmeta_reader(),
            "clips": lambda: self.bench_clips(),
            "remote": lambda: self.bench_remote(dataset, manifest),
            "query": lambda: self.bench_query(),
            "distributed": lambda: self.bench_distributed(),
            "sampler": lambda: self.bench_sampler(),
        }
        for name in ALL_BENCHMARKS:
            if name in selected:
                t0 = time.time()
                log("running %s" % name)
                steps[name]()
                self.results.setdefault("seconds", {})[name] = round(time.time() - t0, 1)
        doc = {
            "meta": self.meta(time.time() - started),
            "figures": self.figures,
            "notes": self.notes,
            "results": self.results,
        }
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, "latest.json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False)
            f.write("\n")
        written = report.write_report(doc, self.out)
        log("wrote %s" % ", ".join(os.path.relpath(p, REPO) if p.startswith(REPO) else p
                                   for p in [os.path.join(self.out, "latest.json")] + written))
        missed = [f for f in self.figures if f["met"] is False]
        log("%d figures, %d with a target, %d missed; %.0f s in all" % (
            len(self.figures), sum(f["met"] is not None for f in self.figures), len(missed),
            time.time() - started))

    def bench_distributed(self):
        """gulpdb.distributed on a LocalCluster against `gulpdb ingest -j2` (bench/distributed_bench.py)."""
        build = os.path.dirname(self.bin_dir)
        cli = os.path.join(build, "cli", "gulpdb")
        python_dir = os.path.join(build, "python")
        if not glob_any(os.path.join(python_dir, "gulpdb", "_gulpdb*.so")):
            self.notes.append("distributed: skipped, the Python package is not built in %s"
                              % relative(python_dir))
            return
        s = self.scale
        work = os.path.join(self.data, "distributed")
        rm(work)
        os.makedirs(work)
        command = [PYTHON, os.path.join(HERE, "distributed_bench.py"), "--gulpdb", cli,
                   "--python-dir", python_dir, "--tmp", work]
        if self.args.scale == "smoke":
            command.append("--smoke")
        else:
            command += ["--videos", str(s.distributed_videos), "--runs", str(s.distributed_runs)]
        r = self.run_json(command, "distributed")
        rm(work)
        self.results["distributed"] = r
        rates, cpu = r["rates"], r["cpu_seconds"]
        load = ("%d cores; CPU seconds per run (median): gulpdb ingest %.1f, 2 Dask workers "
                "%.1f, 1 worker %.1f; cluster start (not timed): %s s" % (
                    r["cores"], cpu["plain_2"]["median"], cpu["dask_2"]["median"],
                    cpu["dask_1"]["median"], r["cluster_start_seconds"]))
        self.figure("distributed", "ingest, 2 Dask worker processes", "videos/s",
                    rates["dask_2"], rates["plain_2"], "gulpdb ingest --num-workers 2",
                    target=("≥ 0.9× gulpdb ingest -j2", "ratio", ">=", 0.9), note=load,
                    gulpdb_name="gulpdb.distributed")
        self.figure("distributed", "ingest, 2 Dask workers vs 1", "videos/s",
                    rates["dask_2"], rates["dask_1"], "1 Dask worker process",
                    target=("≥ 1.7×", "ratio", ">=", 1.7), gulpdb_name="gulpdb.distributed",
                    note="%d H.264 clips of %d s at %s, frames at 8 fps" % (
                        r["videos"], r["clip"]["seconds"], r["clip"]["size"]))

    def meta(self, seconds):
        return {
            "scale": self.args.scale,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": round(seconds, 1),
            "commit": git_commit(),
            "host": host_info(),
            "cold_cache": self.cold_method_summary(),
            "python": platform.python_version(),
            "bin_dir": relative(self.bin_dir),
            "data_dir": relative(self.data),
        }

    def cold_method_summary(self):
        cold = self.results.get("cold")
        if not cold:
            return None
        return {"method": cold["method"], "reason": cold["reason"]}


ALL_BENCHMARKS = ["open", "lookup", "random", "scan", "decode", "cold", "append", "interop",
                  "index_size", "gmeta_reader", "clips", "remote", "query", "distributed",
                  "sampler"]



def glob_any(pattern):
    import glob
    return bool(glob.glob(pattern))


def relative(path):
    """path relative to the repository when it is inside it."""
    return os.path.relpath(path, REPO) if path.startswith(REPO + os.sep) else path


def warm_files(path):
    """Reads every file below path once, so that it sits in the page cache."""
    for root, _, names in os.walk(path):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 20):
                    pass


def point(value):
    """A single measurement as a summary (median = min = max)."""
    return {"median": value, "min": value, "max": value, "count": 1}


def fmt_bytes(n):
    """1.2 MB, 34 kB, 512 B."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n


def fmt_count(n):
    """10^k for exact powers of ten, else the number with thousands separators."""
    k = len(str(n)) - 1
    return "10^%d" % k if n == 10 ** k and n >= 1000 else "{:,}".format(n)


def mdb_stat(index_dir):
    """Pages used by each LMDB database (mdb_stat -a), when lmdb-utils is installed."""
    if shutil.which("mdb_stat") is None:
        return None
    try:
        out = subprocess.run(["mdb_stat", "-a", index_dir], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    dbs, name = {}, "main"
    for line in out.splitlines():
        m = re.match(r"Status of (\S+)", line.strip())
        if m:
            name = m.group(1)
            dbs[name] = {}
            continue
        m = re.match(r"\s*(Page size|Tree depth|Branch pages|Leaf pages|Overflow pages|Entries):"
                     r"\s*(\d+)", line)
        if m:
            dbs.setdefault(name, {})[m.group(1).lower().replace(" ", "_")] = int(m.group(2))
    return dbs


def parse_strace(lines):
    """Counts durable writes in `strace -f -o` output (see Runner.strace_sync_count)."""
    flush_calls = set(FLUSH_SYSCALLS.split(",")) | {"sync_file_range"}
    write_calls = {"write", "writev", "pwrite64", "pwritev", "pwritev2"}
    call = re.compile(r"^(\d+)\s+(\w+)\((.*)$")
    resumed = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")
    result = re.compile(r"=\s*(-?\d+)")
    dsync_fds = set()
    pending_open = {}  # pid -> True if the unfinished open asked for O_DSYNC/O_SYNC
    counts = {"flush": 0, "dsync_writes": 0}

    def opened(pid, is_dsync, rest):
        m = result.search(rest.rsplit(")", 1)[-1]) if ")" in rest else None
        if m and int(m.group(1)) >= 0:
            fd = int(m.group(1))
            (dsync_fds.add if is_dsync else dsync_fds.discard)(fd)

    for line in lines:
        m = resumed.match(line)
        if m:
            pid, name, rest = m.groups()
            if name in ("openat", "open", "creat") and pid in pending_open:
                opened(pid, pending_open.pop(pid), ")" + rest)
            continue
        m = call.match(line)
        if not m:
            continue
        pid, name, rest = m.groups()
        if name in ("openat", "open", "creat"):
            is_dsync = "O_DSYNC" in rest or "O_SYNC" in rest
            if "<unfinished" in rest:
                pending_open[pid] = is_dsync
            else:
                opened(pid, is_dsync, rest)
        elif name == "close":
            fd = re.match(r"(\d+)", rest)
            if fd:
                dsync_fds.discard(int(fd.group(1)))
        elif name in flush_calls:
            counts["flush"] += 1
        elif name in write_calls:
            fd = re.match(r"(\d+)", rest)
            if fd and int(fd.group(1)) in dsync_fds:
                counts["dsync_writes"] += 1
    counts["total"] = counts["flush"] + counts["dsync_writes"]
    return counts


def git_commit():
    try:
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               check=True).stdout.strip()
        return commit + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def host_info():
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gb = None
    try:
        with open("/proc/meminfo") as f:
            mem_gb = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb,
            "kernel": platform.release(), "load_average_at_end": list(os.getloadavg())}


def main(argv):
    parser = argparse.ArgumentParser(
        description="Runs every gulpdb benchmark against its baseline; writes latest.json, "
                    "latest.md and plots.")
    parser.add_argument("--scale", choices=sorted(SCALES), default="quick")
    parser.add_argument("--bin-dir", default=os.path.join(REPO, "build", "release", "bench"),
                        help="where the benchmark programs are built")
    parser.add_argument("--data-dir", default=os.path.join(REPO, "build", "bench-data"),
                        help="scratch space for generated datasets (kept between runs)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"),
                        help="where latest.json, latest.md and the plots go")
    parser.add_argument("--only", help="comma-separated subset of: " + ",".join(ALL_BENCHMARKS))
    parser.add_argument("--python-dir",
                        help="where the gulpdb Python package is built (default: "
                             "<bin-dir>/../python)")
    parser.add_argument("--cold-cache", choices=["auto", "drop", "fadvise"], default="auto",
                        help="how to empty the page cache for the cold benchmark: drop_caches "
                             "when permitted (auto), always (drop) or posix_fadvise (fadvise)")
    args = parser.parse_args(argv)
    Runner(args).run_all()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
