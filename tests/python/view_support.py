"""What the viewer's tests share: a dataset whose frames are easy to tell
apart, HTTP requests that say exactly what they send, the `gulpdb view`
command run with bounded time, and headless Chromium driven by Selenium.

Chromium (tests/harness/headless_chromium.py, shared with the benchmark),
chromedriver and python3-selenium are installed by scripts/setup.sh; a test
that needs them fails (never skips) without them.
"""

from __future__ import annotations

import http.client
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from typing import Dict, List, Optional, Tuple

import numpy as np

import gulpdb
from conftest import GULPDB_CLI

LABELS = ["cat", "dog", "owl"]
URL_LINE = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{43})$")


def frame_pixels(video: int, frame: int, height: int = 240, width: int = 320) -> np.ndarray:
    """A frame no other frame resembles: a colour per video, a bright bar
    whose place is the frame's index, and a gradient."""
    y, x = np.mgrid[0:height, 0:width]
    img = np.empty((height, width, 3), np.uint8)
    img[..., 0] = (x * 255 // (width - 1) + video * 53) % 256
    img[..., 1] = (y * 255 // (height - 1) + video * 97) % 256
    img[..., 2] = (video * 71) % 256
    bar = width // 8
    left = (frame * bar) % (width - bar)
    img[:, left:left + bar, :] = (255, 255, 255) if frame % 2 == 0 else (0, 0, 0)
    img[height // 2:, left:left + bar, :] = (frame * 29 % 256, 255 - frame * 29 % 256, 128)
    return img


def h264_stream(clip: np.ndarray) -> bytes:
    """`clip` (N x H x W x 3) as a raw H.264 stream as ingest encodes one
    (libx264, no B-frames, GOP 4, 4:4:4 so that colours survive)."""
    n, height, width, _ = clip.shape
    return subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s",
         f"{width}x{height}", "-r", "8", "-i", "-", "-c:v", "libx264", "-g", "4",
         "-keyint_min", "4", "-sc_threshold", "0", "-bf", "0", "-crf", "12",
         "-pix_fmt", "yuv444p", "-f", "h264", "-"],
        input=np.ascontiguousarray(clip).tobytes(), check=True, capture_output=True,
        timeout=120).stdout


def make_dataset(path: str, videos: int = 24, frames: int = 8, codec: str = "jpeg",
                 split: bool = True) -> List[str]:
    """`videos` videos vid_00.. of `frames` frames each (320x240), labels
    cycling through LABELS, a meta index on "label" and a split "train" of
    every third video. Returns the ids in the dataset's order."""
    ids = [f"vid_{i:02d}" for i in range(videos)]
    with gulpdb.Dataset(path, "x", videos_per_chunk=5, codec=codec) as ds:
        with ds.writer() as w:
            for i, id_ in enumerate(ids):
                clip = np.stack([frame_pixels(i, k) for k in range(frames)])
                meta = {"id": id_, "label": LABELS[i % 3], "idx": i % 3}
                if codec == "h264":
                    w.append_h264(id_, h264_stream(clip), meta)
                else:
                    w.append(id_, clip, meta)
            if split:
                w.set_split("train", ids[::3])
        ds.create_meta_index("label")
    return ids


# ---- HTTP ----------------------------------------------------------------------------


def get(port: int, path: str, token: Optional[str] = None, cookie: Optional[str] = None,
        method: str = "GET") -> Tuple[int, Dict[str, str], bytes]:
    """One request of exactly `path` (nothing normalized: "../" goes as written),
    with `token` added to the query when given. Returns (status, headers, body)."""
    if token is not None:
        path += ("&" if "?" in path else "?") + "token=" + token
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Cookie": cookie} if cookie else {}
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def quote(id_: str) -> str:
    return urllib.parse.quote(id_, safe="")


# ---- the command -------------------------------------------------------------------


class ViewCommand:
    """`gulpdb view DIR ... --no-browser`: started, its first line read within
    `timeout` seconds, stopped by a signal within `timeout` seconds (else the
    test fails: killed, with what it printed)."""

    def __init__(self, *args: str, timeout: float = 60.0) -> None:
        self.args = [GULPDB_CLI, "view", *args, "--no-browser"]
        self.timeout = timeout
        self.proc: Optional[subprocess.Popen] = None
        self.first_line = ""
        self.port = 0
        self.token = ""

    def __enter__(self) -> "ViewCommand":
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.timeout
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, left))
            if not ready:
                self.kill()
                raise AssertionError(f"gulpdb view printed no address in {self.timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 1)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace")
                self.proc.wait()
                raise AssertionError(f"gulpdb view exited ({self.proc.returncode}): {err}")
            line += chunk
        self.first_line = line.decode().rstrip("\n")
        match = URL_LINE.match(self.first_line)
        if match is None:
            self.kill()
            raise AssertionError(f"first line is not the address: {self.first_line!r}")
        self.port, self.token = int(match.group(1)), match.group(2)
        return self

    def stop(self, sig: int = signal.SIGTERM) -> Tuple[int, str]:
        """Sends `sig`; returns (exit status, stderr)."""
        assert self.proc is not None
        self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"gulpdb view did not stop within {self.timeout} s of {sig!r}")
        return self.proc.returncode, err.decode(errors="replace")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()

    def __exit__(self, *exc_info: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.stop()


# ---- the browser ----------------------------------------------------------------

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "harness"))
from headless_chromium import browser, run_async, wait_ready  # noqa: E402,F401


def javascript_errors(driver: "webdriver.Chrome") -> List[dict]:  # noqa: F821
    """The browser console's errors since the last call (every SEVERE entry)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def screenshot_dir() -> str:
    """Where screenshots go: GULPDB_SCREENSHOT_DIR, else <build folder>/screenshots
    for the build tree's package, else a temporary folder."""
    explicit = os.environ.get("GULPDB_SCREENSHOT_DIR")
    if explicit:
        path = explicit
    else:
        build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(gulpdb.__file__))))
        if os.path.exists(os.path.join(build, "CMakeCache.txt")):
            path = os.path.join(build, "screenshots")
        else:  # an installed package: no build folder beside it
            path = os.path.join(tempfile.gettempdir(), "gulpdb-screenshots")
    os.makedirs(path, exist_ok=True)
    return path
