"""bench/python_read_bench.py --smoke keeps running (its timings are not checked)."""

from __future__ import annotations

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
