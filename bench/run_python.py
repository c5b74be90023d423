"""The benchmarks of the Python package: clips through gulpdb.torch, the
sampler, and distributed ingest on a LocalCluster.
"""

import json
import os

from run_common import (
    CLIPS_BENCH,
    HERE,
    PYTHON,
    SAMPLER_BENCH,
    fmt_count,
    glob_any,
    relative,
    rm,
    summary,
)


class PythonBenchmarks:
    """A part of Runner (bench/run.py): uses its processes, datasets and figures."""

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
