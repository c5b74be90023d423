"""bench/python_read_bench.py and bench/frame_cache_bench.py --smoke keep running (their
timings are not checked)."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import PYTHON, python_subprocess_env

BENCH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "bench", "python_read_bench.py",
)


def test_python_read_bench_smoke(tmp_path):
    out = subprocess.run(
        [PYTHON, BENCH, "--smoke", "--json", str(tmp_path / "result.json")],
        env=python_subprocess_env(), capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("smoke: ") == 4
    for path in ("cpp", "python", "batch", "gulpio2", "pillow"):
        assert any(line.startswith(path + " ") for line in out.stdout.splitlines()), path
    assert (tmp_path / "result.json").exists()


FRAME_CACHE_BENCH = os.path.join(os.path.dirname(BENCH), "frame_cache_bench.py")


def test_frame_cache_bench_smoke(tmp_path):
    # bench/frame_cache_bench.py at a tiny size, one round: every figure is
    # measured and reported (its values are not checked here).
    out = subprocess.run(
        [PYTHON, FRAME_CACHE_BENCH, "--smoke", "--out", str(tmp_path)],
        env=python_subprocess_env(), capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    table = (tmp_path / "frame_cache.md").read_text()
    for figure in ("epoch 2, cache ≥ dataset", "cache 25%", "prefetch_batches=",
                   "two processes", "whole shards"):
        assert figure in table, figure
    result = json.loads((tmp_path / "frame_cache.json").read_text())
    assert result["median"]["cold_bytes"] > 0
