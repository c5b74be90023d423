"""docs/training.md's train.py runs as written: two ranks stop mid-epoch, videos
are appended, one rank finishes the epoch over the videos it counted and then
trains on all of them."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from typing import List

import torch

import gulpdb
from conftest import PYTHON, python_subprocess_env, synthetic_frames

DOC = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "docs", "training.md",
)


def example_script() -> str:
    """The ```python block of the document that starts with "# train.py"."""
    with open(DOC, encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    scripts = [b for b in blocks if b.startswith("# train.py")]
    assert len(scripts) == 1, f"{DOC} should hold one train.py block, not {len(scripts)}"
    return scripts[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(ranks: int, script: str, args: List[str], log_dir: str) -> str:
    """Runs the script with torchrun, as the document does; returns its stdout.

    The rendezvous is on 127.0.0.1 at a free port (``--standalone`` would take
    the fixed port 29400, which concurrent runs would share); torchrun checks
    its workers every 0.5 s instead of 5 s.
    """
    command = [
        PYTHON, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={ranks}",
        "--master_addr=127.0.0.1", f"--master_port={free_port()}", "--redirects=2", "--tee=2",
        f"--log_dir={log_dir}", "--monitor_interval=0.5", script, *args,
    ]
    env = dict(python_subprocess_env(), OMP_NUM_THREADS="1")
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=150)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_training_example_resumes_on_another_number_of_ranks(small_dataset, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(example_script(), encoding="utf-8")
    checkpoint = str(tmp_path / "checkpoint.pt")
    common = [small_dataset.path, checkpoint, "--classes", "3", "--epochs", "2",
              "--batch-size", "2", "--workers", "2", "--save-every", "1"]

    # 12 videos, 2 ranks: 6 samples, 3 batches each. Both stop after 2 steps,
    # while their workers have already prefetched the third batch.
    first = torchrun(2, str(script), common + ["--max-steps", "2"], str(tmp_path / "logs1"))
    assert "epoch" not in first
    state = torch.load(checkpoint)["sampler"]
    assert (state["epoch"], state["consumed"], state["num_replicas"]) == (0, 8, 2)

    # The weekly append: 3 more videos.
    with gulpdb.Dataset(small_dataset.path, "a") as ds:
        with ds.writer() as w:
            for i in range(12, 15):
                w.append(f"video_{i}", synthetic_frames(i, 6), {"idx": i % 3})

    second = torchrun(1, str(script), common, str(tmp_path / "logs2"))
    lines = [line for line in second.splitlines() if line.startswith("epoch")]
    assert lines == ["epoch 0: 4 samples in this run", "epoch 1: 15 samples in this run"]
    saved = torch.load(checkpoint)
    assert (saved["sampler"]["epoch"], saved["sampler"]["consumed"]) == (1, 15)
    assert saved["sampler"]["dataset"]["length"] == 15
    assert set(saved["model"]) >= {"0.weight", "4.weight"}
