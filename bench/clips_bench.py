#!/usr/bin/env python3
"""Fixed-size clips through a PyTorch DataLoader: gulpdb against torchvision.

    PYTHONPATH=<build>/python /usr/bin/python3 bench/clips_bench.py \\
        [--smoke] [--videos N] [--frames F] [--clips R] [--reps K] [--workers W]
        [--batch B] [--size S] [--sizes WxH,WxH,...] [--crop center|random]
        [--dir PATH] [--json PATH]

Data: N videos of F frames, their sizes cycling through --sizes (default
320x240, 480x360, 160x120: one dataset of mixed sizes), from a real clip
(imageio's cockatoo.mp4, decoded by ffmpeg and scaled to each size) or,
without ffmpeg or the clip, synthetic frames (the output says which). Frames
are encoded once per size (quality 90, 4:4:4); video v holds them rotated by
v. The same JPEG bytes go into a gulpdb dataset and into a folder of JPEG
files per video (<video>/<frame>.jpg).

Workload: R clips of 16 consecutive frames, each clip S×S pixels. Both sides
read the same clips: the items of gulpdb.torch.VideoDataset(sampling="clip",
seed=0) over a list of R video ids; the baseline gets the frame indices that
dataset draws (gulpdb.torch.sample_frame_indices with the same generator).

  gulpdb       gulpdb.torch.VideoDataset(size=(S, S), crop=...): decode,
               resize and crop in C++ (DCT-scaled decode, then bilinear), one
               uint8 T×S×S×3 tensor per clip.
  torchvision  the loader a user would write with torchvision (the baseline
               of the target): per frame PIL.Image.open(path).convert("RGB")
               and transforms.Compose([Resize(S), CenterCrop(S), ToTensor()])
               (Resize on a PIL image: Pillow's antialiased bilinear), the
               frames stacked with torch.stack into a T×3×S×S float tensor.
               With --crop random: Resize(S) and ToTensor() per frame, then
               RandomCrop(S) on the stacked clip, one window per clip as
               gulpdb's (per frame it would crop each frame elsewhere).
  uint8        the same with PILToTensor() for ToTensor(): uint8 tensors, as
               gulpdb's, so no float conversion and a quarter of the bytes
               through collate and the workers' queues. A stricter baseline,
               reported alongside.

Each is iterated by DataLoader(batch_size=B, num_workers=W, persistent_workers)
with the default collate_fn: one untimed epoch (starts the workers, warms the
page cache), then K timed epochs, interleaved between the loaders so that
other load on the machine hits them alike. Reported: clips/s (median and best
of K, wall time) and clips per CPU-second (the CPU time of the main process
and its workers, which other load disturbs much less), and their ratios to
each baseline; the target is >= 3x torchvision in clips/s. Timings are
reported, never asserted.

Also checked on every run: the loaders return the same number of clips of
the same size, and with --crop center their pixels agree (mean absolute
difference on the 0-255 scale, reported: the filters differ, the pictures
must not; random windows are drawn independently on each side).

--smoke: a tiny run (a few seconds) that checks the loaders agree; the test
suite runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.utils.data
from PIL import Image
from torchvision import transforms

import gulpdb
import gulpdb.torch as gt
from video_frames import video_frames

CLIP = 16
DEFAULT_VIDEO = "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="tiny run that checks the loaders agree")
    p.add_argument("--videos", type=int, default=24)
    p.add_argument("--frames", type=int, default=48, help="frames per video (>= 16)")
    p.add_argument("--clips", type=int, default=192, help="clips per epoch")
    p.add_argument("--reps", type=int, default=3, help="timed epochs per loader")
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--batch", type=int, default=8, help="clips per batch")
    p.add_argument("--size", type=int, default=112, help="output clips are SIZE x SIZE")
    p.add_argument("--sizes", default="320x240,480x360,160x120", help="frame sizes, WxH,...")
    p.add_argument("--crop", choices=["center", "random"], default="center")
    p.add_argument("--video", default=DEFAULT_VIDEO, help="source clip for real frames")
    p.add_argument("--dir", help="where to build the data (default: a temporary directory)")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args(argv)
    if args.smoke:
        args.videos, args.frames, args.clips, args.reps, args.batch = 6, 20, 12, 1, 4
        args.sizes, args.size, args.video = "64x48,96x72,32x24", 24, ""
    if args.frames < CLIP:
        p.error(f"--frames must be at least {CLIP}")
    return args


# ---- data ------------------------------------------------------------------------------


def synthetic_frames(count: int, width: int, height: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1),
                     (x * 7 + y * 3) % 256], axis=-1)
    out = np.empty((count, height, width, 3), np.uint8)
    for i in range(count):
        noise = rng.integers(-12, 13, (height, width, 3))
        out[i] = np.clip(np.roll(base, 3 * i, axis=1) + noise, 0, 255)
    return out


class Data:
    """The dataset, the folder-of-JPEGs copy and the clips' ids."""

    def __init__(self, args: argparse.Namespace, root: str) -> None:
        sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
        sources = []
        jpegs_by_size = []
        for width, height in sizes:
            frames = video_frames(args.video, args.frames, width, height)
            source = "cockatoo.mp4" if frames is not None else "synthetic"
            if frames is None:
                frames = synthetic_frames(args.frames, width, height)
            sources.append(f"{width}x{height} ({source})")
            jpegs_by_size.append([gulpdb.encode_jpeg(f, 90, "444") for f in frames])
        self.source = ", ".join(sources)
        self.jpeg_bytes = float(np.mean([len(j) for js in jpegs_by_size for j in js]))
        self.ids = [f"video_{v:05d}" for v in range(args.videos)]
        self.dataset_dir = os.path.join(root, "gulpdb")
        self.folder_dir = os.path.join(root, "folders")
        with gulpdb.Dataset(self.dataset_dir, "x", videos_per_chunk=100) as ds, ds.writer() as w:
            for v, id_ in enumerate(self.ids):
                w.append(id_, self.frames_of(jpegs_by_size, v), {"v": v})
        for v, id_ in enumerate(self.ids):
            os.makedirs(os.path.join(self.folder_dir, id_))
            for i, jpeg in enumerate(self.frames_of(jpegs_by_size, v)):
                with open(frame_path(self.folder_dir, id_, i), "wb") as f:
                    f.write(jpeg)
        rng = np.random.default_rng(1)
        self.clip_ids = [self.ids[p] for p in rng.integers(0, len(self.ids), args.clips)]

    @staticmethod
    def frames_of(jpegs_by_size: List[List[bytes]], v: int) -> List[bytes]:
        jpegs = jpegs_by_size[v % len(jpegs_by_size)]
        k = v % len(jpegs)
        return jpegs[k:] + jpegs[:k]

    def warm_up(self) -> None:
        for root, _, files in os.walk(os.path.dirname(self.dataset_dir)):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    while f.read(1 << 20):
                        pass


def frame_path(folder: str, id_: str, index: int) -> str:
    return os.path.join(folder, id_, f"{index:05d}.jpg")


# ---- the two loaders ------------------------------------------------------------------------


class FolderClips(torch.utils.data.Dataset):
    """The torchvision-style baseline: JPEG files, PIL, transforms, stacked."""

    def __init__(self, folder: str, items: List[Tuple[str, List[int]]], size: int,
                 crop: str, uint8: bool) -> None:
        self.folder = folder
        self.items = items
        to_tensor = transforms.PILToTensor() if uint8 else transforms.ToTensor()
        if crop == "center":
            self.frame_transform = transforms.Compose(
                [transforms.Resize(size), transforms.CenterCrop(size), to_tensor])
            self.clip_transform = None
        else:
            self.frame_transform = transforms.Compose([transforms.Resize(size), to_tensor])
            self.clip_transform = transforms.RandomCrop(size)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> torch.Tensor:
        id_, frames = self.items[index]
        tensors = []
        for i in frames:
            with Image.open(frame_path(self.folder, id_, i)) as image:
                tensors.append(self.frame_transform(image.convert("RGB")))
        clip = torch.stack(tensors)  # T×3×S×S
        return clip if self.clip_transform is None else self.clip_transform(clip)


def gulpdb_dataset(data: Data, args: argparse.Namespace) -> gt.VideoDataset:
    return gt.VideoDataset(data.dataset_dir, ids=data.clip_ids, num_frames=CLIP, sampling="clip",
                           seed=0, size=(args.size, args.size), crop=args.crop)


def same_clips(data: Data, ds: gt.VideoDataset) -> List[Tuple[str, List[int]]]:
    """The frames each item of `ds` reads, drawn as the dataset draws them."""
    native = gulpdb.Dataset(data.dataset_dir)
    items = []
    for index, id_ in enumerate(ds.ids):
        rng = np.random.default_rng([0, 0, index])  # VideoDataset's generator: seed, epoch, index
        frames = gt.sample_frame_indices(native.frame_count(id_), CLIP, "clip", 1, rng)
        items.append((id_, [int(f) for f in frames]))
    return items


def loader(dataset: torch.utils.data.Dataset, args: argparse.Namespace) -> Any:
    return torch.utils.data.DataLoader(dataset, batch_size=args.batch, num_workers=args.workers,
                                       persistent_workers=args.workers > 0)


_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (its threads included), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def worker_pids(batches: Any) -> List[int]:
    """The worker processes of a DataLoader with persistent workers (none before
    its first epoch, or with num_workers=0)."""
    iterator = getattr(batches, "_iterator", None)
    return [w.pid for w in getattr(iterator, "_workers", [])]


def epoch(batches: Any) -> Tuple[float, float, int, List[torch.Tensor]]:
    """One pass: (wall seconds, CPU seconds of this process and the workers, clips, first batches)."""
    pids = worker_pids(batches)
    cpu0 = time.process_time() + sum(process_cpu_seconds(p) for p in pids)
    start = time.perf_counter()
    clips = 0
    kept = []
    for batch in batches:
        clips += batch.shape[0]
        if len(kept) < 2:
            kept.append(batch)
    wall = time.perf_counter() - start
    cpu = time.process_time() + sum(process_cpu_seconds(p) for p in pids) - cpu0
    return wall, cpu, clips, kept


def agreement(ours: List[torch.Tensor], theirs: List[torch.Tensor], size: int) -> float:
    """Mean absolute pixel difference of the first batches (T×S×S×3 uint8 against
    T×3×S×S, uint8 or float in [0, 1])."""
    diffs = []
    for a, b in zip(ours, theirs):
        assert a.shape[2:] == (size, size, 3), a.shape
        assert b.shape[3:] == (size, size) and b.shape[2] == 3, b.shape
        b = b.permute(0, 1, 3, 4, 2).double()
        if not torch.is_floating_point(theirs[0]):
            b = b / 255
        diffs.append((a.double() / 255 - b).abs().mean().item() * 255)
    return float(np.mean(diffs))


def measure(data: Data, args: argparse.Namespace) -> Dict[str, Any]:
    ours_ds = gulpdb_dataset(data, args)
    items = same_clips(data, ours_ds)
    loaders = {
        "gulpdb": loader(ours_ds, args),
        "torchvision": loader(FolderClips(data.folder_dir, items, args.size, args.crop, False),
                              args),
        "uint8": loader(FolderClips(data.folder_dir, items, args.size, args.crop, True), args),
    }
    seconds: Dict[str, List[float]] = {name: [] for name in loaders}
    cpu: Dict[str, List[float]] = {name: [] for name in loaders}
    first: Dict[str, List[torch.Tensor]] = {}
    for name, batches in loaders.items():  # untimed: starts the workers
        _, _, count, first[name] = epoch(batches)
        assert count == len(data.clip_ids), (name, count)
    for _ in range(args.reps):
        for name, batches in loaders.items():
            took, used, count, _ = epoch(batches)
            assert count == len(data.clip_ids), (name, count)
            seconds[name].append(took)
            cpu[name].append(used)
    n = len(data.clip_ids)
    out: Dict[str, Any] = {}
    for name in loaders:
        out[name] = {
            "clips_per_s": [n / t for t in seconds[name]],
            "clips_per_s_median": n / statistics.median(seconds[name]),
            "clips_per_s_best": n / min(seconds[name]),
            "clips_per_cpu_s": [n / c if c > 0 else None for c in cpu[name]],
            "clips_per_cpu_s_median": n / statistics.median(cpu[name])
            if statistics.median(cpu[name]) > 0 else None,
        }
        if name != "gulpdb":
            # Random windows are drawn independently on each side: nothing to compare.
            out[name]["pixel_mean_abs_diff"] = (
                agreement(first["gulpdb"], first[name], args.size) if args.crop == "center"
                else None)
    for name in ("torchvision", "uint8"):
        out["ratio_" + name] = out["gulpdb"]["clips_per_s_median"] / out[name]["clips_per_s_median"]
        g, b = out["gulpdb"]["clips_per_cpu_s_median"], out[name]["clips_per_cpu_s_median"]
        out["cpu_ratio_" + name] = g / b if g and b else None
    del loaders  # stops the persistent workers
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    root = args.dir or tempfile.mkdtemp(prefix="gulpdb_clips_bench.")
    try:
        if os.path.exists(root) and os.listdir(root):
            print(f"clips_bench: {root} already holds data; give an empty --dir", file=sys.stderr)
            return 2
        os.makedirs(root, exist_ok=True)
        data = Data(args, root)
        data.warm_up()
        result = measure(data, args)
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    print(f"clips_bench: {len(data.ids)} videos of {args.frames} frames ({data.source}), "
          f"{data.jpeg_bytes / 1024:.1f} KiB per JPEG; {len(data.clip_ids)} clips of {CLIP} "
          f"frames at {args.size}x{args.size}, crop={args.crop}, DataLoader(batch_size="
          f"{args.batch}, num_workers={args.workers}), {args.reps} timed epochs")
    for name in ("gulpdb", "torchvision", "uint8"):
        r = result[name]
        line = (f"{name:12s} {r['clips_per_s_median']:8.1f} clips/s (best "
                f"{r['clips_per_s_best']:.1f}), {r['clips_per_cpu_s_median'] or 0:7.1f} clips per "
                "CPU-second")
        if name != "gulpdb":
            line += (f"; gulpdb {result['ratio_' + name]:.2f}x ({result['cpu_ratio_' + name] or 0:.2f}x"
                     " per CPU-second)")
            if r["pixel_mean_abs_diff"] is not None:
                line += f"; pixels differ by {r['pixel_mean_abs_diff']:.2f} (0-255)"
        print(line)
    print(f"target: >= 3x torchvision in clips/s: {result['ratio_torchvision']:.2f}x")
    if args.smoke and args.crop == "center":
        for name in ("torchvision", "uint8"):
            assert result[name]["pixel_mean_abs_diff"] < 12, result[name]["pixel_mean_abs_diff"]
        print("smoke: every loader returned every clip at the same size; pixels agree")
    doc = {
        "videos": len(data.ids), "frames": args.frames, "sizes": args.sizes,
        "source": data.source, "mean_jpeg_bytes": data.jpeg_bytes, "clips": len(data.clip_ids),
        "clip_frames": CLIP, "size": args.size, "crop": args.crop, "workers": args.workers,
        "batch": args.batch, "reps": args.reps, **result,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
