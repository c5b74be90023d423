"""Decoded frames of a real video for the Python benchmarks (clips_bench.py,
python_read_bench.py): ffmpeg scales it to the benchmark's size and a short
clip is looped to the count asked for."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Optional

import numpy as np


def video_frames(path: str, count: int, width: int, height: int) -> Optional[np.ndarray]:
    """The first `count` frames of `path` as RGB at width×height, or None without
    ffmpeg or the file."""
    if not path or not os.path.exists(path) or shutil.which("ffmpeg") is None:
        return None
    cmd = [
        "ffmpeg", "-v", "error", "-i", path, "-vf", f"scale={width}:{height}",
        "-frames:v", str(count), "-f", "rawvideo", "-pix_fmt", "rgb24", "-",
    ]
    try:
        raw = subprocess.run(cmd, capture_output=True, check=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    n = len(raw) // (width * height * 3)
    if n == 0:
        return None
    frames = np.frombuffer(raw[: n * width * height * 3], np.uint8).reshape(n, height, width, 3)
    reps = -(-count // n)  # a short clip is looped
    return np.concatenate([frames] * reps)[:count]
