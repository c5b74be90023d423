#!/usr/bin/env python3
"""Random access to decoded 16-frame clips from Python, against two baselines.

    PYTHONPATH=<build>/python /usr/bin/python3 bench/python_read_bench.py \
        [--smoke] [--videos N] [--frames F] [--clips R] [--reps K] [--size WxH]
        [--dir PATH] [--json PATH]

Data: N videos of F frames each, from a real clip (the first F frames of
imageio's cockatoo.mp4, decoded by ffmpeg and scaled to --size) or, without
ffmpeg or the clip, synthetic gradient + noise frames (the output says which).
Frames are encoded once with gulpdb's encoder (quality 90, 4:4:4, GulpIO2's
settings); video v holds them rotated by v, so videos differ. The same JPEG
bytes are stored in a gulpdb dataset and, as one file per frame, in a
folder-of-JPEGs layout (<video>/<frame>.jpg).

Workload: R clips of 16 consecutive frames, each of a random video from a
random start; the same list for every path. Every file is read once before
timing, so all paths run from the page cache.

Paths, each timed K times, interleaved (the median and the best run are
reported):
  cpp        the read loop in C++ (python_read_loop, built beside the other
             benchmark programs: Dataset::ReadFrames per clip): what the engine
             delivers without Python
  python     gulpdb.Dataset.read(id, slice(s, s + 16)) from Python threads
  batch      gulpdb.Dataset.read_batch of 8 clips at a time (one call decodes
             all 128 frames in parallel)
  gulpio2    GulpDirectory[id, s:s + 16] (GulpIO2's API: a list of arrays)
  pillow     the folder-of-JPEGs loader: PIL.Image.open(...).convert("RGB")
             per file, numpy.stack per clip, from Python threads
Threads: 1 and 2 (the "python"/"pillow" rows split the clips between threads;
"cpp" runs the same split in C++). In the 1- and 2-thread rows the dataset
decodes on the calling threads (decode_threads=1), so both sides use the same
number of cores; the "pool" rows let one calling thread use gulpdb's decode
pool (one thread per core).

Also measured: the per-call cost of the Python layer, on clips of 16 frames of
8×8 pixels (where decoding costs almost nothing), Python loop against C++ loop.

Ratios are against baselines measured in the same run: python/cpp (the cost
of the Python layer; 1.0 is free) and gulpdb/pillow (the speed-up over the
folder of JPEGs; the fair one compares the accurate DCT, which Pillow uses,
and both are printed). Timings are reported, never asserted.

--smoke: a tiny synthetic run (a second or two) that checks that every path
returns the same clips; the test suite runs it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import gulpdb
from video_frames import video_frames

CLIP = 16
DEFAULT_VIDEO = "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4"
# $GULPDB_BENCH_DIR, else <build>/python/gulpdb/__init__.py -> <build>/bench (an
# installed gulpdb has no build tree beside it: the packaging test sets the variable).
DEFAULT_BIN_DIR = os.environ.get("GULPDB_BENCH_DIR") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(gulpdb.__file__)))), "bench"
)


def cpp_reads(bin_dir: str, path: str, decode_threads: int, ids: Sequence[str],
              starts: Sequence[int], threads: int, dct: str = "fast") -> Tuple[float, int]:
    """Times the clips [start, start + CLIP) of ``ids`` read by the C++ loop
    (python_read_loop) on a read-only open of the dataset ``path`` with
    ``decode_threads``, ``threads`` threads splitting the clips. Returns
    (seconds, bytes decoded)."""
    with tempfile.NamedTemporaryFile("w", suffix=".clips") as clips:
        clips.writelines(f"{i}\t{s}\n" for i, s in zip(ids, starts))
        clips.flush()
        command = [os.path.join(bin_dir, "python_read_loop"), "--dir", path,
                   "--clips", clips.name, "--length", str(CLIP), "--threads", str(threads),
                   "--decode-threads", str(decode_threads), "--dct", dct]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    return result["seconds"], result["bytes"]


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="tiny run that checks the paths agree")
    p.add_argument("--videos", type=int, default=32)
    p.add_argument("--frames", type=int, default=48, help="frames per video (>= 16)")
    p.add_argument("--clips", type=int, default=192, help="clips read per measurement")
    p.add_argument("--reps", type=int, default=3, help="repetitions of each measurement")
    p.add_argument("--size", default="340x256", help="frame size WxH")
    p.add_argument("--video", default=DEFAULT_VIDEO, help="source clip for real frames")
    p.add_argument("--dir", help="where to build the data (default: a temporary directory)")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--bin-dir", default=DEFAULT_BIN_DIR,
                   help="where python_read_loop is built (default: $GULPDB_BENCH_DIR, else the "
                   "bench folder of the build that holds the imported gulpdb package)")
    args = p.parse_args(argv)
    if args.smoke:
        args.videos, args.frames, args.clips, args.reps, args.size = 4, 20, 16, 1, "64x48"
        args.video = ""
    if args.frames < CLIP:
        p.error(f"--frames must be at least {CLIP}")
    return args


# ---- data ------------------------------------------------------------------------------


def synthetic_frames(count: int, width: int, height: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1),
                     (x + y) * 127 // max(width + height - 2, 1)], axis=-1)
    out = np.empty((count, height, width, 3), np.uint8)
    for i in range(count):
        noise = rng.integers(-12, 13, (height, width, 3))
        out[i] = np.clip(np.roll(base, 3 * i, axis=1) + noise, 0, 255)
    return out


class Data:
    """The dataset, the folder-of-JPEGs copy and the clip list."""

    def __init__(self, args: argparse.Namespace, root: str) -> None:
        width, height = (int(v) for v in args.size.split("x"))
        frames = video_frames(args.video, args.frames, width, height)
        self.source = f"{args.frames} frames of {os.path.basename(args.video)}"
        if frames is None:
            frames = synthetic_frames(args.frames, width, height)
            self.source = f"{args.frames} synthetic frames (no ffmpeg or video)"
        self.source += f", {width}x{height}"
        jpegs = [gulpdb.encode_jpeg(f, 90, "444") for f in frames]
        self.jpeg_bytes = sum(len(j) for j in jpegs) / len(jpegs)
        self.ids = [f"video_{v:05d}" for v in range(args.videos)]
        self.dataset_dir = os.path.join(root, "gulpdb")
        self.folder_dir = os.path.join(root, "folders")
        with gulpdb.Dataset(self.dataset_dir, "x", videos_per_chunk=100) as ds:
            with ds.writer() as w:
                for v, id_ in enumerate(self.ids):
                    w.append(id_, jpegs[v % len(jpegs):] + jpegs[: v % len(jpegs)], {"v": v})
        for v, id_ in enumerate(self.ids):
            os.makedirs(os.path.join(self.folder_dir, id_))
            rotated = jpegs[v % len(jpegs):] + jpegs[: v % len(jpegs)]
            for i, jpeg in enumerate(rotated):
                with open(self.frame_path(id_, i), "wb") as f:
                    f.write(jpeg)
        rng = np.random.default_rng(1)
        picks = rng.integers(0, len(self.ids), args.clips)
        self.clip_ids = [self.ids[p] for p in picks]
        self.starts = [int(s) for s in rng.integers(0, args.frames - CLIP + 1, args.clips)]

    def frame_path(self, id_: str, index: int) -> str:
        return os.path.join(self.folder_dir, id_, f"{index:05d}.jpg")

    def warm_up(self) -> None:
        for root, _, files in os.walk(os.path.dirname(self.dataset_dir)):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    while f.read(1 << 20):
                        pass


# ---- the paths -----------------------------------------------------------------------------


def split(n: int, threads: int) -> List[range]:
    return [range(t, n, threads) for t in range(threads)]


def run_threads(threads: int, n: int, body: Callable[[range], int]) -> Tuple[float, int]:
    """Runs body over `threads` interleaved shares of range(n); (seconds, bytes)."""
    shares = split(n, threads)
    start = time.perf_counter()
    if threads == 1:
        total = body(shares[0])
    else:
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            total = sum(pool.map(body, shares))
    return time.perf_counter() - start, total


def pillow_clip(data: Data, id_: str, start: int) -> np.ndarray:
    from PIL import Image

    frames = []
    for i in range(start, start + CLIP):
        with Image.open(data.frame_path(id_, i)) as image:
            frames.append(np.asarray(image.convert("RGB")))
    return np.stack(frames)


def measure(data: Data, args: argparse.Namespace) -> List[Dict[str, Any]]:
    n = len(data.clip_ids)
    ids, starts = data.clip_ids, data.starts
    single = gulpdb.Dataset(data.dataset_dir, decode_threads=1)
    pooled = gulpdb.Dataset(data.dataset_dir, decode_threads=0)
    gd = gulpdb.GulpDirectory(data.dataset_dir, decode_threads=1, quiet=True)

    def python_read(ds: gulpdb.Dataset, dct: str) -> Callable[[range], int]:
        def body(share: range) -> int:
            total = 0
            for i in share:
                total += ds.read(ids[i], slice(starts[i], starts[i] + CLIP), dct=dct).nbytes
            return total
        return body

    def batch_read(ds: gulpdb.Dataset) -> Callable[[range], int]:
        def body(share: range) -> int:
            items = list(share)
            total = 0
            for b in range(0, len(items), 8):
                requests = [(ids[i], slice(starts[i], starts[i] + CLIP)) for i in items[b : b + 8]]
                total += sum(c.nbytes for c in ds.read_batch(requests))
            return total
        return body

    def gulpio_read(share: range) -> int:
        total = 0
        for i in share:
            frames, _ = gd[ids[i], starts[i] : starts[i] + CLIP]
            total += sum(f.nbytes for f in frames)
        return total

    def pillow_read(share: range) -> int:
        return sum(pillow_clip(data, ids[i], starts[i]).nbytes for i in share)

    def cpp(decode_threads: int, threads: int, dct: str) -> Callable[[], Tuple[float, int]]:
        return lambda: cpp_reads(
            args.bin_dir, data.dataset_dir, decode_threads, ids, starts, threads, dct
        )

    cases: List[Tuple[str, int, str, Callable[[], Tuple[float, int]]]] = []
    for threads in (1, 2):
        for dct in ("fast", "accurate"):
            cases.append(("cpp", threads, dct, cpp(1, threads, dct)))
            cases.append(("python", threads, dct,
                          lambda t=threads, d=dct: run_threads(t, n, python_read(single, d))))
        cases.append(("gulpio2", threads, "fast", lambda t=threads: run_threads(t, n, gulpio_read)))
        cases.append(("pillow", threads, "accurate",
                      lambda t=threads: run_threads(t, n, pillow_read)))
    cases.append(("cpp", 0, "fast", cpp(0, 1, "fast")))
    cases.append(("python", 0, "fast", lambda: run_threads(1, n, python_read(pooled, "fast"))))
    cases.append(("batch", 0, "fast", lambda: run_threads(1, n, batch_read(pooled))))

    for _, _, _, run in cases:
        run()  # warm: opens files, starts pools
    # Repetitions are interleaved (every case once, then again...), so that a
    # busy host slows all cases alike rather than a few of them.
    times: List[List[float]] = [[] for _ in cases]
    nbytes = [0] * len(cases)
    for _ in range(args.reps):
        for k, (_, _, _, run) in enumerate(cases):
            seconds, nbytes[k] = run()
            times[k].append(seconds)
    results = []
    for k, (path, threads, dct, _) in enumerate(cases):
        results.append({
            "path": path, "threads": threads, "dct": dct,
            "clips_per_s": n / statistics.median(times[k]),
            "clips_per_s_best": n / min(times[k]),
            "mb_per_s": nbytes[k] / statistics.median(times[k]) / 1e6,
            "bytes": nbytes[k],
        })
    return results


def call_overhead(root: str, args: argparse.Namespace) -> Dict[str, float]:
    """Per-clip cost of the Python layer, measured where decoding costs almost
    nothing: clips of 16 frames of 8×8 pixels, read from Python and in C++."""
    path = os.path.join(root, "tiny")
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        for v in range(64):
            w.append(f"t{v}", np.full((32, 8, 8, 3), v, np.uint8))
    ds = gulpdb.Dataset(path, decode_threads=1)
    n = 200 if args.smoke else 4000
    rng = np.random.default_rng(2)
    ids = [f"t{v}" for v in rng.integers(0, 64, n)]
    starts = [int(s) for s in rng.integers(0, 16, n)]
    python_us, cpp_us = [], []
    for _ in range(max(args.reps, 3)):
        start = time.perf_counter()
        for id_, s in zip(ids, starts):
            ds.read(id_, slice(s, s + CLIP))
        python_us.append((time.perf_counter() - start) / n * 1e6)
        seconds, _ = cpp_reads(args.bin_dir, path, 1, ids, starts, 1)
        cpp_us.append(seconds / n * 1e6)
    return {"python_us_per_clip": min(python_us), "cpp_us_per_clip": min(cpp_us)}


def smoke_check(data: Data, bin_dir: str) -> None:
    """Every path returns the same clip (Pillow: the same shape; pixels compared)."""
    ds = gulpdb.Dataset(data.dataset_dir)
    gd = gulpdb.GulpDirectory(data.dataset_dir, quiet=True)
    for id_, start in zip(data.clip_ids[:4], data.starts[:4]):
        clip = ds.read(id_, slice(start, start + CLIP))
        frames, _ = gd[id_, start : start + CLIP]
        batch = ds.read_batch([(id_, slice(start, start + CLIP))])[0]
        assert clip.shape[0] == CLIP and np.array_equal(np.stack(frames), clip)
        assert np.array_equal(batch, clip)
        folder = pillow_clip(data, id_, start)
        accurate = ds.read(id_, slice(start, start + CLIP), dct="accurate")
        assert folder.shape == accurate.shape
        same = np.array_equal(folder, accurate)
        print(f"smoke: {id_}[{start}:{start + CLIP}] ok; Pillow pixels "
              f"{'identical to' if same else 'differ from'} gulpdb's accurate DCT")
    seconds, nbytes = cpp_reads(bin_dir, data.dataset_dir, 0, data.clip_ids, data.starts, 2)
    expected = sum(
        ds.read(i, slice(s, s + CLIP)).nbytes for i, s in zip(data.clip_ids, data.starts)
    )
    assert nbytes == expected, (nbytes, expected)


def report(results: List[Dict[str, Any]], data: Data, args: argparse.Namespace) -> None:
    def find(path: str, threads: int, dct: str) -> Optional[Dict[str, Any]]:
        for r in results:
            if (r["path"], r["threads"], r["dct"]) == (path, threads, dct):
                return r
        return None

    def ratio(r: Dict[str, Any], base: Optional[Dict[str, Any]], key: str) -> Optional[float]:
        return r[key] / base[key] if base is not None and base is not r else None

    def cell(value: Optional[float]) -> str:
        return f"{value:.2f}" if value is not None else "-"

    print(f"python_read_bench: {len(data.ids)} videos, {data.source}, "
          f"{data.jpeg_bytes / 1024:.1f} KiB per JPEG; {len(data.clip_ids)} random {CLIP}-frame "
          f"clips per run, {args.reps} runs; {os.cpu_count()} cores")
    print(f"{'path':<8} {'threads':>7} {'dct':>8} {'clips/s':>8} {'best':>8} {'MB/s':>7} "
          f"{'vs cpp':>13} {'vs pillow':>13}")
    for r in results:
        threads = "pool" if r["threads"] == 0 else str(r["threads"])
        cpp = None if r["path"] == "pillow" else find("cpp", r["threads"], r["dct"])
        pillow = find("pillow", max(r["threads"], 1), "accurate")
        for name, base in (("vs_cpp", cpp), ("vs_pillow", pillow)):
            r[name] = ratio(r, base, "clips_per_s")
            r[name + "_best"] = ratio(r, base, "clips_per_s_best")
        vs_cpp = f"{cell(r['vs_cpp'])} / {cell(r['vs_cpp_best'])}"
        vs_pillow = f"{cell(r['vs_pillow'])} / {cell(r['vs_pillow_best'])}"
        print(f"{r['path']:<8} {threads:>7} {r['dct']:>8} {r['clips_per_s']:>8.1f} "
              f"{r['clips_per_s_best']:>8.1f} {r['mb_per_s']:>7.1f} {vs_cpp:>13} {vs_pillow:>13}")
    print("clips/s: median run; best: fastest run. Ratios (median / best): vs cpp is against the "
          "C++ loop with the same threads and DCT (1.00: Python costs nothing); vs pillow against "
          "the folder of JPEGs with as many threads (Pillow uses the accurate DCT).")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    root = args.dir or tempfile.mkdtemp(prefix="gulpdb_python_bench_")
    try:
        if args.dir and os.path.exists(os.path.join(root, "gulpdb")):
            print(f"python_read_bench: {root} already holds data; give an empty --dir",
                  file=sys.stderr)
            return 2
        os.makedirs(root, exist_ok=True)
        data = Data(args, root)
        data.warm_up()
        if args.smoke:
            smoke_check(data, args.bin_dir)
        results = measure(data, args)
        overhead = call_overhead(root, args)
        report(results, data, args)
        print(f"per-call cost (16-frame clips of 8x8 pixels, best of runs): Python "
              f"{overhead['python_us_per_clip']:.1f} us per clip, C++ loop "
              f"{overhead['cpp_us_per_clip']:.1f} us: the Python layer adds "
              f"{overhead['python_us_per_clip'] - overhead['cpp_us_per_clip']:.1f} us per call")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"source": data.source, "videos": len(data.ids), "frames": args.frames,
                           "clips": len(data.clip_ids), "reps": args.reps, "cores": os.cpu_count(),
                           "results": results, "call_overhead": overhead}, f, indent=2)
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
