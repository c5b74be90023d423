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
import datetime
import json
import os
import platform
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import report  # noqa: E402  (bench/report.py, next to this file)
from run_common import (  # noqa: E402
    ALL_BENCHMARKS,
    BASELINES,
    CLIP_FRAMES,
    COCKATOO,
    HERE,
    PYTHON,
    REPO,
    SCALES,
    git_commit,
    host_info,
    log,
    relative,
    rm,
)
from run_engine import EngineBenchmarks  # noqa: E402
from run_h264 import H264Benchmarks  # noqa: E402
from run_python import PythonBenchmarks  # noqa: E402
from run_remote import RemoteBenchmarks  # noqa: E402


class Runner(EngineBenchmarks, PythonBenchmarks, RemoteBenchmarks, H264Benchmarks):
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
            "crc32c": lambda: self.bench_crc32c(),
            "random": lambda: self.bench_random_read(dataset, manifest),
            "scan": lambda: self.bench_scan(dataset),
            "decode": lambda: self.bench_decode(dataset, jboj, manifest),
            "cold": lambda: self.bench_cold(dataset, jboj, manifest),
            "append": lambda: self.bench_append(frames),
            "small_commits": lambda: self.bench_small_commits(),
            "interop": lambda: self.bench_interop(),
            "index_size": lambda: self.bench_index_size(),
            "gmeta_reader": lambda: self.bench_gmeta_reader(),
            "clips": lambda: self.bench_clips(),
            "remote": lambda: self.bench_remote(dataset, manifest),
            "query": lambda: self.bench_query(),
            "query_lang": lambda: self.bench_query_lang(),
            "distributed": lambda: self.bench_distributed(),
            "sampler": lambda: self.bench_sampler(),
            "h264": lambda: self.bench_h264(),
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
