#!/usr/bin/python3
"""H.264 datasets against JPEG datasets and PyAV (issue 23's benchmark).

    PYTHONPATH=<build>/python /usr/bin/python3 bench/h264_bench.py \\
        --gulpdb <build>/cli/gulpdb --dir DATA [--scale smoke|quick|full] [--no-s3]
        [--json PATH]

Sources no one tuned for, generated into DATA/h264_sources (kept; rebuilt
when their parameters change): imageio's cockatoo.mp4 (1280x720, 20 fps,
280 frames; scaled to 640x360 here, since --frame-size applies to a whole
ingest and the others keep their size), and ffmpeg's lavfi `testsrc2` and
`mandelbrot` at 320x240 and 640x480, 25 fps, a few seconds each. All are
stored losslessly (FFV1) so that the only lossy step is the ingest's.

Each source set is ingested with `gulpdb ingest --frame-rate 0` (every
frame) four times: `--codec jpeg` (quality 90, the default) and
`--codec h264 --gop 4/8/16` (the default CRF). Then, per source:

  bytes       stored bytes per frame: JPEG (read_jpegs) and H.264
              (read_h264_stream: the packets with their SPS/PPS) at each GOP;
              PSNR of every h264 frame against the JPEG path's decoded frame
              (both through Dataset.read), and of both against the RGB frames
              the ingest encoded (the source through ffmpeg -pix_fmt rgb24).
  contiguous  random 16-frame clips (seeded; the same clips for every
              method), clips/s from 1 thread and from 2 threads each reading
              clips (gulpdb releases the GIL; Dataset(decode_threads=1), so
              one thread is one core; 2 threads at the GOPs PyAV reads):
                gulpdb h264   Dataset.read(id, slice(a, a + 16)) at each GOP
                gulpdb jpeg   the same on the JPEG dataset
                PyAV          the same clips from an MP4 holding the SAME
                              H.264 stream gulpdb stores (read_h264_stream
                              muxed by `ffmpeg -f h264 -r R -i - -c copy`);
                              per clip: av.open, container.seek(pts of the
                              keyframe at or before the clip's first frame,
                              backward=True, stream=...), decode forward to the
                              clip's end, frame.to_ndarray(format="rgb24").
              PyAV's frames are checked: every clip's frames must carry the
              clip's timestamps (a seek that lands elsewhere is counted, not
              hidden), and for a few clips their pixels are compared with
              gulpdb's (colour conversion may differ by a level or two; a
              wrong frame differs by far more).
  segment     8 frames spread over the video (one random frame in each of 8
              equal segments, seeded), 1 thread, at each GOP and for JPEG:
              clips/s and frames decoded per clip (an h264 frame k costs the
              frames from its keyframe to k, each touched GOP decoded once;
              JPEG decodes the 8), and PyAV seeking to each frame's keyframe.
  s3          (not with --no-s3) the JPEG and the h264 GOP 8 datasets pushed
              to a local s3rver and opened by URL behind a proxy adding 20 ms
              to every GET (tests/harness/s3_proxy.py, as bench/run_remote.py):
              read_batch of 16 random 16-frame clips over every source,
              clips/s and bytes and requests per clip (remote_info()).

Repetitions are interleaved across methods after an untimed warm-up; each
figure keeps every repetition (clips/s and clips per CPU-second of this
process). Timings are reported, never asserted. Prints one JSON document as
its last line; bench/run.py --only h264 turns it into figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import gulpdb

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
COCKATOO = "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4"
CLIP = 16
SEGMENTS = 8
S3_BATCH = 16
S3_LATENCY_MS = 20
S3_BUCKET = "gulpdb-h264"


@dataclasses.dataclass
class Scale:
    seconds: float          # length of each lavfi source
    cockatoo: bool          # include cockatoo.mp4
    lavfi_sizes: Tuple[str, ...]
    gops: Tuple[int, ...]
    pyav_gops: Tuple[int, ...]  # GOPs at which PyAV is measured (contiguous and segment)
    clips: int              # contiguous clips per source and repetition
    segment_clips: int      # segment-sampled clips per source and repetition
    reps: int
    check_clips: int        # clips whose PyAV pixels are compared with gulpdb's
    s3_batches: int         # read_batch calls per repetition
    s3_reps: int


SCALES = {
    "smoke": Scale(seconds=1.2, cockatoo=False, lavfi_sizes=("64x48",), gops=(4, 8),
                   pyav_gops=(8,), clips=4, segment_clips=4, reps=1, check_clips=2,
                   s3_batches=1, s3_reps=1),
    "quick": Scale(seconds=4, cockatoo=True, lavfi_sizes=("320x240", "640x480"),
                   gops=(4, 8, 16), pyav_gops=(8,), clips=16, segment_clips=12, reps=3,
                   check_clips=3, s3_batches=2, s3_reps=3),
    "full": Scale(seconds=10, cockatoo=True, lavfi_sizes=("320x240", "640x480"),
                  gops=(4, 8, 16), pyav_gops=(4, 8, 16), clips=60, segment_clips=40, reps=5,
                  check_clips=5, s3_batches=4, s3_reps=5),
}


def log(text: str) -> None:
    print("[h264_bench %s] %s" % (time.strftime("%H:%M:%S"), text), file=sys.stderr, flush=True)


def run(command: Sequence[str], env: Optional[Dict[str, str]] = None,
        stdin: Optional[bytes] = None) -> bytes:
    proc = subprocess.run(list(command), input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env)
    if proc.returncode != 0:
        raise SystemExit("h264_bench: %s failed (exit %d): %s" % (
            " ".join(command), proc.returncode, proc.stderr.decode(errors="replace")[-2000:]))
    return proc.stdout


def rm(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def ensure(path: str, params: Dict[str, Any], build: Callable[[str], None]) -> str:
    """path, rebuilt with build(path) unless its stamp holds the same params."""
    stamp = path + ".stamp.json"
    if os.path.exists(path) and os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == params:
                return path
    rm(path)
    rm(stamp)
    build(path)
    with open(stamp, "w") as f:
        json.dump(params, f)
    return path


# ---- sources and datasets -------------------------------------------------------------


@dataclasses.dataclass
class Source:
    id: str
    rate: int       # frames per second, every frame of which the ingest keeps
    size: str
    origin: str


def sources_of(scale: Scale) -> List[Source]:
    out = []
    if scale.cockatoo:
        out.append(Source("cockatoo", 20, "640x360", "imageio cockatoo.mp4, scaled from 1280x720"))
    for pattern in ("testsrc2", "mandelbrot"):
        for size in scale.lavfi_sizes:
            out.append(Source("%s_%s" % (pattern, size), 25, size,
                              "ffmpeg lavfi %s, %g s" % (pattern, scale.seconds)))
    return out


def make_sources(path: str, scale: Scale, sources: List[Source]) -> None:
    os.makedirs(path)
    for s in sources:
        out = os.path.join(path, s.id + ".mkv")
        if s.id == "cockatoo":
            if not os.path.exists(COCKATOO):
                raise SystemExit("h264_bench: %s is missing (python3-imageio)" % COCKATOO)
            args = ["-i", COCKATOO, "-an", "-vf", "scale=" + s.size.replace("x", ":")]
        else:
            pattern = s.id.split("_")[0]
            args = ["-f", "lavfi", "-i", "%s=size=%s:rate=%d" % (pattern, s.size, s.rate),
                    "-t", str(scale.seconds)]
        run(["ffmpeg", "-nostdin", "-v", "error"] + args + ["-c:v", "ffv1", out])


def ingest(cli: str, sources_dir: str, path: str, codec: str, gop: Optional[int]) -> None:
    args = [cli, "ingest", path, "--videos-dir", sources_dir, "--frame-rate", "0",
            "--codec", codec, "--quiet", "--strict"]
    if gop is not None:
        args += ["--gop", str(gop)]
    run(args)


def mux_mp4(stream: bytes, rate: int, out: str) -> None:
    """The stored H.264 stream in an MP4, packets copied (ffmpeg -c copy)."""
    run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "h264", "-r", str(rate), "-i", "pipe:0",
         "-c", "copy", out], stdin=stream)


# ---- PyAV ---------------------------------------------------------------------------


class PyAvVideo:
    """An MP4 and its packet timestamps and keyframes (read once, as an index)."""

    def __init__(self, path: str) -> None:
        import av
        self.path = path
        with av.open(path) as c:
            stream = c.streams.video[0]
            packets = [(p.pts, bool(p.is_keyframe)) for p in c.demux(stream) if p.size]
            self.thread_type = str(stream.codec_context.thread_type)
            self.thread_count = stream.codec_context.thread_count
        packets.sort()
        self.pts = [p for p, _ in packets]
        self.index = {p: i for i, p in enumerate(self.pts)}
        self.keyframes = [i for i, (_, key) in enumerate(packets) if key]

    def keyframe_at_or_before(self, k: int) -> int:
        best = 0
        for i in self.keyframes:
            if i > k:
                break
            best = i
        return best


class PyAvReader:
    """PyAV's own method per clip: open, seek to the keyframe, decode forward."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wrong_clips = 0      # clips whose frames are not the clip's (seek landed elsewhere)
        self.decoded = 0          # frames decoded, kept or not
        self.clips = 0

    def frames(self, video: PyAvVideo, wanted: List[int], keep: bool = True) -> List[np.ndarray]:
        """Frames `wanted` (sorted) of the video. Decoding goes on forward from one wanted
        frame to the next unless a keyframe after the last decoded frame is nearer: then
        it seeks there (segment sampling; a contiguous clip seeks once)."""
        import av
        out = []
        decoded = 0
        wrong = False
        with av.open(video.path) as c:
            stream = c.streams.video[0]
            frames: Any = None
            position = -1   # index of the last frame decoded; -1: none yet
            for k in wanted:
                key = video.keyframe_at_or_before(k)
                first = False
                if frames is None or not (position < k and key <= position + 1):
                    c.seek(video.pts[key], backward=True, any_frame=False, stream=stream)
                    frames = c.decode(stream)
                    first = True
                target = video.pts[k]
                got = None
                for f in frames:
                    decoded += 1
                    if first and f.pts != video.pts[key]:
                        wrong = True  # the seek landed on another frame
                    first = False
                    position = video.index.get(f.pts, -1)
                    if f.pts is None or f.pts >= target:
                        got = f
                        break
                if got is None or got.pts != target:
                    wrong = True
                if got is not None:
                    out.append(got.to_ndarray(format="rgb24") if keep else None)
                else:
                    break
        with self.lock:
            self.decoded += decoded
            self.clips += 1
            self.wrong_clips += wrong
        return out


# ---- timing -------------------------------------------------------------------------


def timed(fn: Callable[[Any], Any], items: List[Any], threads: int) -> Tuple[float, float]:
    """(wall seconds, CPU seconds of the process) to call fn on every item from `threads`
    threads taking items in turn."""
    lock = threading.Lock()
    queue = iter(items)
    errors: List[BaseException] = []

    def worker() -> None:
        while True:
            with lock:
                item = next(queue, None)
            if item is None or errors:
                return
            try:
                fn(item)
            except BaseException as e:  # re-raised below
                errors.append(e)
                return

    cpu0 = time.process_time()
    t0 = time.perf_counter()
    if threads == 1:
        worker()
    else:
        pool = [threading.Thread(target=worker) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    if errors:
        raise errors[0]
    return wall, cpu


def measure(methods: Dict[str, Tuple[Callable[[Any], Any], int]], items: List[Any],
            reps: int) -> Dict[str, Dict[str, List[float]]]:
    """Interleaved repetitions of each method (fn, threads) over items, after a warm-up."""
    for fn, threads in methods.values():
        timed(fn, items[:2], threads)
    out: Dict[str, Dict[str, List[float]]] = {
        name: {"clips_per_s": [], "clips_per_cpu_s": []} for name in methods}
    for rep in range(reps):
        order = list(methods)
        order = order[rep % len(order):] + order[:rep % len(order)]  # rotate who goes first
        for name in order:
            fn, threads = methods[name]
            wall, cpu = timed(fn, items, threads)
            out[name]["clips_per_s"].append(len(items) / wall)
            out[name]["clips_per_cpu_s"].append(len(items) / cpu if cpu > 0 else None)
    return out


def median(values: List[float]) -> float:
    v = sorted(x for x in values if x is not None)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def decoded_per_clip(frames: List[int], gop: int) -> int:
    """Frames an h264 read decodes: per touched GOP, its keyframe through the last frame
    asked for in it (docs/h264.md, PlanRuns)."""
    last: Dict[int, int] = {}
    for k in frames:
        g = k // gop
        last[g] = max(last.get(g, k), k)
    return sum(k - g * gop + 1 for g, k in last.items())


# ---- the benchmark ------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.scale = SCALES[args.scale]
        self.data = os.path.abspath(args.dir)
        self.cli = os.path.abspath(args.gulpdb)
        self.sources = sources_of(self.scale)
        self.datasets: Dict[str, str] = {}   # "jpeg", "h264_g8" -> path

    def prepare(self) -> None:
        s = self.scale
        os.makedirs(self.data, exist_ok=True)
        src_params = {"sources": [dataclasses.asdict(x) for x in self.sources],
                      "seconds": s.seconds}
        log("sources: %s" % ", ".join(x.id for x in self.sources))
        self.sources_dir = ensure(os.path.join(self.data, "h264_sources_" + self.args.scale),
                                  src_params, lambda p: make_sources(p, s, self.sources))
        crf = self.default_crf()
        ffmpeg = run(["ffmpeg", "-version"]).decode().splitlines()[0]
        for name, codec, gop in [("jpeg", "jpeg", None)] + [
                ("h264_g%d" % g, "h264", g) for g in s.gops]:
            path = os.path.join(self.data, "h264_ds_%s_%s" % (self.args.scale, name))
            # What decides the stored bytes (ffmpeg encodes; any build of the same
            # settings writes the same dataset): rebuilt when a setting changes.
            params = dict(src_params, codec=codec, gop=gop, crf=crf, ffmpeg=ffmpeg)
            t0 = time.perf_counter()
            self.datasets[name] = ensure(path, params, lambda p, c=codec, g=gop: ingest(
                self.cli, self.sources_dir, p, c, g))
            log("dataset %s ready (%.1f s)" % (name, time.perf_counter() - t0))

    def default_crf(self) -> Optional[int]:
        """The CRF `gulpdb ingest --codec h264` uses when given none, from its --help."""
        import re
        text = subprocess.run([self.cli, "ingest", "--help"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True).stdout
        m = re.search(r"--crf arg \(=(\d+)\)", text)
        return int(m.group(1)) if m else None

    def open(self, name: str) -> gulpdb.Dataset:
        return gulpdb.Dataset(self.datasets[name], decode_threads=1)

    def run(self) -> Dict[str, Any]:
        s = self.scale
        self.prepare()
        jpeg = self.open("jpeg")
        h264 = {g: self.open("h264_g%d" % g) for g in s.gops}
        mp4_dir = os.path.join(self.data, "h264_mp4_" + self.args.scale)
        rm(mp4_dir)
        os.makedirs(mp4_dir)
        doc: Dict[str, Any] = {
            "scale": self.args.scale, "clip_frames": CLIP, "segments": SEGMENTS,
            "gops": list(s.gops), "pyav_gops": list(s.pyav_gops), "reps": s.reps,
            "clips": s.clips, "segment_clips": s.segment_clips, "sources": [],
            "per_source": {}, "pyav_version": None, "crf": self.default_crf(),
        }
        import av
        doc["pyav_version"] = av.__version__
        for index, src in enumerate(self.sources):
            log("source %s" % src.id)
            r: Dict[str, Any] = {"size": src.size, "rate": src.rate, "origin": src.origin}
            n = jpeg.frame_count(src.id)
            r["frames"] = n
            r["h264_frames"] = {str(g): h264[g].frame_count(src.id) for g in s.gops}
            for g in s.gops:
                if h264[g].frame_count(src.id) != n:
                    raise SystemExit("h264_bench: %s has %d frames in the h264 GOP %d dataset "
                                     "but %d in the JPEG one" % (
                                         src.id, h264[g].frame_count(src.id), g, n))
            r["bytes"] = self.bytes_and_psnr(src, jpeg, h264, n)
            videos = {}
            for g in s.pyav_gops:
                path = os.path.join(mp4_dir, "%s_g%d.mp4" % (src.id, g))
                mux_mp4(h264[g].read_h264_stream(src.id), src.rate, path)
                videos[g] = PyAvVideo(path)
                if len(videos[g].pts) != n:
                    raise SystemExit("h264_bench: %s holds %d packets, the dataset %d frames" % (
                        path, len(videos[g].pts), n))
                r.setdefault("pyav_decoder", {"thread_type": videos[g].thread_type,
                                              "thread_count": videos[g].thread_count})
            rng = random.Random(1000 + index)
            clips = [rng.randrange(n - CLIP + 1) for _ in range(s.clips)]
            r["contiguous"] = self.contiguous(src, jpeg, h264, videos, clips)
            r["check"] = self.check(src, h264, videos, clips[:s.check_clips])
            segs = [self.segment_frames(n, rng) for _ in range(s.segment_clips)]
            r["segment"] = self.segment(src, jpeg, h264, videos, segs)
            doc["per_source"][src.id] = r
            doc["sources"].append(src.id)
        rm(mp4_dir)
        if not self.args.no_s3:
            doc["s3"] = self.s3()
        return doc

    def source_frames(self, src: Source, n: int) -> np.ndarray:
        """The RGB frames the ingest encoded: the source through `ffmpeg -pix_fmt rgb24`, as
        the ingest decodes it (every frame, no scaling)."""
        width, height = (int(v) for v in src.size.split("x"))
        raw = run(["ffmpeg", "-nostdin", "-v", "error", "-i",
                   os.path.join(self.sources_dir, src.id + ".mkv"), "-f", "rawvideo",
                   "-pix_fmt", "rgb24", "-"])
        frames = np.frombuffer(raw, np.uint8).reshape(-1, height, width, 3)
        if len(frames) != n:
            raise SystemExit("h264_bench: %s decodes to %d frames, the dataset has %d" % (
                src.id, len(frames), n))
        return frames

    def bytes_and_psnr(self, src: Source, jpeg: gulpdb.Dataset, h264: Dict[int, gulpdb.Dataset],
                       n: int) -> Dict[str, Any]:
        """Stored bytes per frame; PSNR of h264 against the JPEG path's frames (the target)
        and of both against the frames the ingest encoded (what each codec lost)."""
        jpeg_bytes = sum(len(b) for b in jpeg.read_jpegs(src.id))
        out: Dict[str, Any] = {"jpeg_per_frame": jpeg_bytes / n, "h264": {}}
        source = self.source_frames(src, n)
        sq = {g: 0.0 for g in h264}
        sq_source = {g: 0.0 for g in h264}
        sq_jpeg_source = 0.0
        worst = {g: math.inf for g in h264}

        def mse_of(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            diff = a.astype(np.int32) - b  # integer arithmetic: float64 took minutes here
            squares = (diff * diff).reshape(len(a), -1)
            return squares.sum(axis=1, dtype=np.int64) / squares.shape[1]

        step = 16
        for a in range(0, n, step):
            ref = jpeg.read(src.id, slice(a, a + step)).astype(np.int32)
            orig = source[a:a + step].astype(np.int32)
            sq_jpeg_source += float(mse_of(ref, orig).sum())
            for g, ds in h264.items():
                frames = ds.read(src.id, slice(a, a + step))
                mse = mse_of(frames, ref)
                sq[g] += float(mse.sum())
                sq_source[g] += float(mse_of(frames, orig).sum())
                worst[g] = min(worst[g], min(psnr(m) for m in mse))
        out["jpeg_psnr_vs_source_db"] = psnr(sq_jpeg_source / n)
        for g, ds in h264.items():
            stream = len(ds.read_h264_stream(src.id))
            out["h264"][str(g)] = {"per_frame": stream / n, "psnr_db": psnr(sq[g] / n),
                                   "psnr_min_frame_db": worst[g],
                                   "psnr_vs_source_db": psnr(sq_source[g] / n),
                                   "jpeg_over_h264": jpeg_bytes / stream}
        log("  bytes/frame: jpeg %.0f, %s; PSNR vs JPEG %s; vs source: jpeg %.1f dB, %s" % (
            jpeg_bytes / n, ", ".join("g%d %.0f" % (g, out["h264"][str(g)]["per_frame"])
                                      for g in h264),
            ", ".join("g%d %.1f dB" % (g, out["h264"][str(g)]["psnr_db"]) for g in h264),
            out["jpeg_psnr_vs_source_db"],
            ", ".join("g%d %.1f dB" % (g, out["h264"][str(g)]["psnr_vs_source_db"])
                      for g in h264)))
        return out

    def contiguous(self, src: Source, jpeg: gulpdb.Dataset, h264: Dict[int, gulpdb.Dataset],
                   videos: Dict[int, PyAvVideo], clips: List[int]) -> Dict[str, Any]:
        s = self.scale
        vid = src.id
        pyav = {g: PyAvReader() for g in videos}
        methods: Dict[str, Tuple[Callable[[Any], Any], int]] = {}
        for threads in (1, 2):
            methods["jpeg_t%d" % threads] = (lambda a: jpeg.read(vid, slice(a, a + CLIP)), threads)
            for g, ds in h264.items():
                if threads == 1 or g in videos:  # 2 threads: at the GOPs PyAV reads
                    methods["h264_g%d_t%d" % (g, threads)] = (
                        lambda a, ds=ds: ds.read(vid, slice(a, a + CLIP)), threads)
            for g, video in videos.items():
                methods["pyav_g%d_t%d" % (g, threads)] = (
                    lambda a, v=video, p=pyav[g]: p.frames(v, list(range(a, a + CLIP))), threads)
        out: Dict[str, Any] = measure(methods, clips, s.reps)
        for g in s.gops:
            out["h264_g%d_decoded_per_clip" % g] = float(np.mean(
                [decoded_per_clip(list(range(a, a + CLIP)), g) for a in clips]))
        for g, p in pyav.items():
            out["pyav_g%d_decoded_per_clip" % g] = p.decoded / max(p.clips, 1)
            out["pyav_g%d_wrong_clips" % g] = p.wrong_clips
            out["pyav_g%d_clips_read" % g] = p.clips
        line = ", ".join("%s %.1f" % (k, median(v["clips_per_s"])) for k, v in out.items()
                         if isinstance(v, dict))
        log("  contiguous clips/s: " + line)
        return out

    def check(self, src: Source, h264: Dict[int, gulpdb.Dataset], videos: Dict[int, PyAvVideo],
              clips: List[int]) -> Dict[str, Any]:
        """PyAV's frames against gulpdb's: the same frames, up to colour conversion."""
        out = {}
        for g, video in videos.items():
            reader = PyAvReader()
            diffs, mismatched = [], 0
            for a in clips:
                ours = h264[g].read(src.id, slice(max(0, a - 1), a + CLIP + 1))
                theirs = reader.frames(video, list(range(a, a + CLIP)))
                for i, frame in enumerate(theirs):
                    d = [float(np.abs(frame.astype(np.int16) - o.astype(np.int16)).mean())
                         for o in ours]
                    expected = a - max(0, a - 1) + i
                    diffs.append(d[expected])
                    if int(np.argmin(d)) != expected and d[int(np.argmin(d))] < d[expected]:
                        mismatched += 1
                mismatched += CLIP - len(theirs)
            out[str(g)] = {"clips": len(clips), "frames": len(clips) * CLIP,
                           "frames_not_gulpdbs": mismatched,
                           "wrong_clips": reader.wrong_clips,
                           "mean_abs_diff": float(np.mean(diffs)) if diffs else None,
                           "max_mean_abs_diff": float(np.max(diffs)) if diffs else None}
        log("  PyAV vs gulpdb frames: %s" % json.dumps(out))
        return out

    @staticmethod
    def segment_frames(n: int, rng: random.Random) -> List[int]:
        bounds = [n * i // SEGMENTS for i in range(SEGMENTS + 1)]
        return [lo + rng.randrange(max(1, hi - lo)) for lo, hi in zip(bounds, bounds[1:])]

    def segment(self, src: Source, jpeg: gulpdb.Dataset, h264: Dict[int, gulpdb.Dataset],
                videos: Dict[int, PyAvVideo], segs: List[List[int]]) -> Dict[str, Any]:
        vid = src.id
        pyav = {g: PyAvReader() for g in videos}
        methods: Dict[str, Tuple[Callable[[Any], Any], int]] = {
            "jpeg": (lambda f: jpeg.read(vid, f), 1)}
        for g, ds in h264.items():
            methods["h264_g%d" % g] = (lambda f, ds=ds: ds.read(vid, f), 1)
        for g, video in videos.items():
            methods["pyav_g%d" % g] = (lambda f, v=video, p=pyav[g]: p.frames(v, f), 1)
        out: Dict[str, Any] = measure(methods, segs, self.scale.reps)
        out["jpeg_decoded_per_clip"] = float(SEGMENTS)
        for g in h264:
            out["h264_g%d_decoded_per_clip" % g] = float(np.mean(
                [decoded_per_clip(f, g) for f in segs]))
        for g, p in pyav.items():
            out["pyav_g%d_decoded_per_clip" % g] = p.decoded / max(p.clips, 1)
            out["pyav_g%d_wrong_clips" % g] = p.wrong_clips
            out["pyav_g%d_clips_read" % g] = p.clips
        log("  segment clips/s: " + ", ".join(
            "%s %.1f" % (k, median(v["clips_per_s"])) for k, v in out.items()
            if isinstance(v, dict)))
        return out

    # ---- S3 ---------------------------------------------------------------------------

    def s3(self) -> Dict[str, Any]:
        sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
        import s3_proxy  # tests/harness/s3_proxy.py: s3rver and the proxy, bounded start/stop

        s = self.scale
        gop = 8 if 8 in s.gops else s.gops[0]
        pushed = {"jpeg": self.datasets["jpeg"], "h264": self.datasets["h264_g%d" % gop]}
        counts = {x.id: gulpdb.Dataset(pushed["jpeg"]).frame_count(x.id) for x in self.sources}
        rng = random.Random(7)
        batches = []
        for _ in range(s.s3_reps + 1):  # + the warm-up; new clips each time (no cache hits)
            rep = []
            for _ in range(s.s3_batches):
                batch = []
                for _ in range(S3_BATCH):
                    src = self.sources[rng.randrange(len(self.sources))].id
                    a = rng.randrange(counts[src] - CLIP + 1)
                    batch.append((src, a))
                rep.append(batch)
            batches.append(rep)
        clips_file = os.path.join(self.data, "h264_s3_clips.json")
        with open(clips_file, "w") as f:
            json.dump(batches, f)
        out: Dict[str, Any] = {"gop": gop, "batch": S3_BATCH, "latency_ms": S3_LATENCY_MS,
                               "batches_per_rep": s.s3_batches, "reps": s.s3_reps}
        log("s3: pushing jpeg and h264 GOP %d" % gop)
        with s3_proxy.S3rverProcess(S3_BUCKET) as server:
            env = dict(os.environ, AWS_ENDPOINT_URL=server.endpoint, AWS_ACCESS_KEY_ID="S3RVER",
                       AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1")
            for name, path in pushed.items():
                run([self.cli, "push", path, "s3://%s/%s" % (S3_BUCKET, name), "--quiet"],
                    env=env)
            proxy = s3_proxy.ProxyProcess(("127.0.0.1", server.port)).start()
            try:
                proxy.add_fault(kind="delay", delay_ms=S3_LATENCY_MS, fraction=1.0, method="GET")
                read_env = dict(env, AWS_ENDPOINT_URL=proxy.endpoint,
                                AWS_SHARED_CREDENTIALS_FILE="/dev/null")
                read_env.pop("AWS_ACCESS_KEY_ID")
                read_env.pop("AWS_SECRET_ACCESS_KEY")
                results = {}
                order = list(pushed)
                for rep in range(s.s3_reps):  # a fresh process per repetition and codec
                    for name in order[rep % 2:] + order[:rep % 2]:
                        cache = os.path.join(self.data, "h264_s3_cache")
                        rm(cache)
                        read_env["GULPDB_CACHE"] = cache
                        r = json.loads(run([sys.executable, os.path.abspath(__file__),
                                            "--s3-read", "s3://%s/%s" % (S3_BUCKET, name),
                                            "--s3-clips", clips_file, "--s3-rep", str(rep + 1)],
                                           env=read_env).decode().strip().splitlines()[-1])
                        results.setdefault(name, []).append(r)
                        rm(cache)
            finally:
                proxy.stop()
        for name, rs in results.items():
            out[name] = {"clips_per_s": [r["clips_per_s"] for r in rs],
                         "bytes_per_clip": [r["bytes_per_clip"] for r in rs],
                         "requests_per_clip": [r["requests_per_clip"] for r in rs]}
            log("s3 %s: %.1f clips/s, %.0f bytes and %.2f requests per clip" % (
                name, median(out[name]["clips_per_s"]), median(out[name]["bytes_per_clip"]),
                median(out[name]["requests_per_clip"])))
        return out


def psnr(mse: float) -> float:
    return float("inf") if mse <= 0 else 10 * math.log10(255.0 ** 2 / mse)


def s3_read(url: str, clips_file: str, rep: int) -> Dict[str, Any]:
    """One repetition of the S3 reads in this (fresh) process: a warm-up set of batches,
    then set `rep`, timed; bytes and requests from remote_info()."""
    with open(clips_file) as f:
        batches = json.load(f)
    ds = gulpdb.Dataset(url, decode_threads=0)
    for batch in batches[0]:  # untimed: the snapshot download, connections
        ds.read_batch([(v, slice(a, a + CLIP)) for v, a in batch])
    before = ds.remote_info
    t0 = time.perf_counter()
    clips = 0
    for batch in batches[rep]:
        ds.read_batch([(v, slice(a, a + CLIP)) for v, a in batch])
        clips += len(batch)
    wall = time.perf_counter() - t0
    after = ds.remote_info
    return {"clips_per_s": clips / wall,
            "bytes_per_clip": (after["bytes_received"] - before["bytes_received"]) / clips,
            "requests_per_clip": (after["requests"] - before["requests"]) / clips,
            "batches": len(batches[rep]), "batch": len(batches[rep][0])}


def smoke_checks(doc: Dict[str, Any]) -> None:
    """What a smoke run asserts: PyAV, reading the stored stream from an MP4, lands on the
    clips' frames and decodes gulpdb's pixels (both convert as `ffmpeg -pix_fmt rgb24`)."""
    for name, r in doc["per_source"].items():
        for gop, c in r["check"].items():
            if c["wrong_clips"] or c["frames_not_gulpdbs"] or c["max_mean_abs_diff"] > 1.0:
                raise SystemExit("h264_bench: PyAV's frames of %s (GOP %s) are not gulpdb's: %s"
                                 % (name, gop, json.dumps(c)))
    log("smoke: PyAV read gulpdb's frames from the muxed stream")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gulpdb", help="the gulpdb program (for ingest and push)")
    p.add_argument("--dir", help="where sources, datasets and MP4s go (kept between runs)")
    p.add_argument("--scale", choices=sorted(SCALES), default="quick")
    p.add_argument("--no-s3", action="store_true", help="skip the S3 part")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--s3-read", help=argparse.SUPPRESS)
    p.add_argument("--s3-clips", help=argparse.SUPPRESS)
    p.add_argument("--s3-rep", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not args.s3_read and not (args.gulpdb and args.dir):
        p.error("--gulpdb and --dir are required")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.s3_read:
        print(json.dumps(s3_read(args.s3_read, args.s3_clips, args.s3_rep)))
        return 0
    t0 = time.perf_counter()
    doc = Bench(args).run()
    if args.scale == "smoke":
        smoke_checks(doc)
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
