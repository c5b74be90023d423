"""Shared fixtures of the Python tests.

Run with the built package on the path:

    PYTHONPATH=<build dir>/python /usr/bin/python3 -m pytest -q tests/python
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from typing import Any, Dict, List

import numpy as np
import pytest

import gulpdb

# The packaging test (tests/package) runs this suite against an installed
# package and names the directory gulpdb must come from, so that another copy
# (a build tree on the path) cannot pass for it.
_EXPECTED_PACKAGE_DIR = os.environ.get("GULPDB_EXPECT_PACKAGE_DIR")
if _EXPECTED_PACKAGE_DIR and not os.path.realpath(gulpdb.__file__).startswith(
    os.path.realpath(_EXPECTED_PACKAGE_DIR) + os.sep
):
    raise ImportError(f"gulpdb was imported from {gulpdb.__file__}, not from {_EXPECTED_PACKAGE_DIR}")

# Tests that need a codec only some builds have (the .deb and the wheel have
# no H.264: docs/licensing.md) carry @pytest.mark.h264. In a build without it
# they are deselected, never skipped into a pass, and the summary says how
# many; test_errors.py checks what such a build does instead (a clear refusal).
_DESELECTED_FOR_CODEC: List[str] = []


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "h264: needs a build with H.264 support (gulpdb.codecs); deselected without")


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    if "h264" in gulpdb.codecs:
        return
    needs = [item for item in items if item.get_closest_marker("h264") is not None]
    if needs:
        config.hook.pytest_deselected(items=needs)
        items[:] = [item for item in items if item.get_closest_marker("h264") is None]
        _DESELECTED_FOR_CODEC.extend(item.nodeid for item in needs)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _DESELECTED_FOR_CODEC:
        terminalreporter.write_line(
            f"{len(_DESELECTED_FOR_CODEC)} tests need H.264 support, which this build has not "
            f"(gulpdb.codecs == {gulpdb.codecs}): deselected; a build with it runs them")


FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")


def sha256(array: np.ndarray) -> str:
    """SHA-256 of an array's pixels, C-contiguous (as the fixture manifests hash them)."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def load_manifest(name: str) -> Dict[str, Any]:
    with open(os.path.join(FIXTURES, name, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def synthetic_frames(seed: int, count: int, height: int = 24, width: int = 32) -> np.ndarray:
    """count×H×W×3 smooth frames (they compress like images, unlike noise)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    frames = np.empty((count, height, width, 3), np.uint8)
    for i in range(count):
        a, b, c = rng.integers(0, 255, 3)
        frames[i, ..., 0] = (x * 255 // max(width - 1, 1) + a + i) % 256
        frames[i, ..., 1] = (y * 255 // max(height - 1, 1) + b) % 256
        frames[i, ..., 2] = (x + y + c) % 256
    return frames


@pytest.fixture(autouse=True)
def _private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexes of read-only GulpIO directories and snapshots of remote datasets go to a
    temporary cache, not ~/.cache."""
    monkeypatch.setenv("GULPDB_CACHE", str(tmp_path_factory.mktemp("gulpdb_cache")))
    monkeypatch.delenv("GULPDB_CACHE_DIR", raising=False)


@pytest.fixture
def gulpio_copy(tmp_path):
    """Copies a fixture directory to a temporary place and returns its path."""

    def copy(name: str) -> str:
        dst = str(tmp_path / name)
        shutil.copytree(os.path.join(FIXTURES, name), dst)
        return dst

    return copy


class SmallDataset:
    """A dataset of synthetic videos and the frames they were written from."""

    def __init__(self, path: str, videos: int = 12, frames_per_video: int = 6) -> None:
        self.path = path
        self.frames: Dict[str, np.ndarray] = {}
        self.meta: Dict[str, Dict[str, Any]] = {}
        with gulpdb.Dataset(path, "x", videos_per_chunk=4) as ds:
            with ds.writer() as w:
                for i in range(videos):
                    id_ = f"video_{i}"
                    frames = synthetic_frames(i, frames_per_video)
                    self.frames[id_] = frames
                    self.meta[id_] = {"id": id_, "label": f"class_{i % 3}", "idx": i % 3}
                    w.append(id_, frames, self.meta[id_])
        # What the engine decodes (JPEG is lossy): the reference pixels.
        with gulpdb.Dataset(path) as ds:
            self.decoded = {id_: ds.read(id_).copy() for id_ in self.frames}
        self.ids: List[str] = list(self.frames)


@pytest.fixture
def small_dataset(tmp_path) -> SmallDataset:
    return SmallDataset(str(tmp_path / "small"))


def python_subprocess_env() -> Dict[str, str]:
    """The environment for a child /usr/bin/python3 that imports this gulpdb."""
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(gulpdb.__file__))
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    return env


PYTHON = sys.executable


def _gulpdb_command() -> str:
    """The `gulpdb` command that goes with the gulpdb package under test:
    $GULPDB_CLI; else the build tree's (build/<preset>/cli/gulpdb beside
    build/<preset>/python); else the one an installed wheel bundles."""
    explicit = os.environ.get("GULPDB_CLI")
    if explicit:
        return explicit
    package = os.path.dirname(os.path.abspath(gulpdb.__file__))
    candidates = [
        os.path.join(os.path.dirname(os.path.dirname(package)), "cli", "gulpdb"),
        os.path.join(package, "_bin", "gulpdb"),
    ]
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("gulpdb")
    if found is None:
        raise RuntimeError("no gulpdb command for the package in " + package)
    return found


GULPDB_CLI = _gulpdb_command()
