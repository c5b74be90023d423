#!/usr/bin/env python3
"""Resuming mid-epoch with gulpdb.torch.VideoSampler: what a resume costs.

    PYTHONPATH=<build>/python /usr/bin/python3 bench/sampler_bench.py \
        [--smoke] [--items N] [--reps K] [--videos V] [--json PATH]

Prints one JSON document. Every figure is the median of K runs (with min and
max), the methods interleaved after an untimed warm-up pass.

Index only, over a dataset-like object of N items (default 10^6; a length is
all a sampler reads, and item i is the int i), rank 3 of 8, batches of 256
from a DataLoader with no workers:

  index_resume        construct a VideoSampler, load_state_dict of a state one
                      third through epoch 5, set_epoch, and take the first batch
  index_load          the same without the batch: construct + load_state_dict
  index_fresh         a VideoSampler at the start of epoch 5: the first batch
  index_distributed   torch's DistributedSampler at the start of epoch 5: the
                      first batch (it builds a list of N ints first)
  index_skip          resuming DistributedSampler the usual way: skipping the
                      indices this rank already consumed, then the first batch
                      (skipped at the sampler, reading no data: its cheapest form)

With a real gulpdb.torch.VideoDataset over V small videos (default 64 of 4
frames of 32x32), rank 1 of 2, batches of 8 clips:

  video_resume        construct + load_state_dict + the first batch
  video_distributed   DistributedSampler's first batch at the start of an epoch

Ratios are baseline / VideoSampler (higher: the resume is cheaper):
distributed_vs_resume and skip_vs_resume for the index case,
video_distributed_vs_resume for the video one. The first batch after each
resume is checked against the epoch's order (the script fails otherwise).
Timings are reported, never asserted. --smoke: 10^4 items, 8 videos, one
repetition (a second or two); the test suite runs it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler

import gulpdb
import gulpdb.torch as gt

EPOCH = 5
SEED = 11


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="a tiny run that checks the batches")
    p.add_argument("--items", type=int, default=10**6, help="items of the index-only case")
    p.add_argument("--reps", type=int, default=7, help="timed repetitions of each figure")
    p.add_argument("--videos", type=int, default=64, help="videos of the VideoDataset case")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args(argv)
    if args.smoke:
        args.items, args.reps, args.videos = 10**4, 1, 8
    return args


class Indices(torch.utils.data.Dataset):
    """N items, item i being i: the sampler and the DataLoader's own cost, no data."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        return index


def resume_state(n: int, consumed: int) -> Dict[str, Any]:
    """The state a run saves one third through epoch EPOCH (made by the sampler itself)."""
    saver = gt.VideoSampler(Indices(n), num_replicas=4, rank=0, seed=SEED)
    saver.set_epoch(EPOCH)
    return saver.state_dict(consumed=consumed // 4)


def expected_first(n: int, state: Dict[str, Any], world: int, rank: int, size: int) -> List[int]:
    reference = gt.VideoSampler(Indices(n), num_replicas=1, rank=0, seed=SEED)
    reference.set_epoch(EPOCH)
    order = reference.epoch_order()
    start = state["consumed"]
    return [int(i) for i in order[start + rank : start + rank + world * size : world]]


def first_batch(loader: DataLoader) -> Any:
    return next(iter(loader))


def index_methods(n: int) -> Dict[str, Callable[[], Any]]:
    dataset = Indices(n)
    world, rank, size = 8, 3, 256
    state = resume_state(n, n // 3)
    expected = expected_first(n, state, world, rank, size)

    def resume() -> None:
        sampler = gt.VideoSampler(dataset, num_replicas=world, rank=rank)
        sampler.load_state_dict(state)
        sampler.set_epoch(EPOCH)
        batch = first_batch(DataLoader(dataset, batch_size=size, sampler=sampler))
        if batch.tolist() != expected:
            raise AssertionError("the first batch after the resume is not the rank's share")

    def load() -> None:
        gt.VideoSampler(dataset, num_replicas=world, rank=rank).load_state_dict(state)

    def fresh() -> None:
        sampler = gt.VideoSampler(dataset, num_replicas=world, rank=rank, seed=SEED)
        sampler.set_epoch(EPOCH)
        first_batch(DataLoader(dataset, batch_size=size, sampler=sampler))

    def distributed() -> None:
        sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=SEED)
        sampler.set_epoch(EPOCH)
        first_batch(DataLoader(dataset, batch_size=size, sampler=sampler))

    skipped = (state["consumed"] // world // size) * size  # whole batches this rank took

    def skip() -> None:
        sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=SEED)
        sampler.set_epoch(EPOCH)
        rest = itertools.islice(iter(sampler), skipped, None)
        next(iter(BatchSampler(rest, size, drop_last=False)))  # type: ignore[arg-type]

    return {
        "index_resume": resume, "index_load": load, "index_fresh": fresh,
        "index_distributed": distributed, "index_skip": skip,
    }


def write_videos(path: str, count: int) -> None:
    rng = np.random.default_rng(0)
    with gulpdb.Dataset(path, "x", videos_per_chunk=32) as ds:
        with ds.writer() as w:
            for i in range(count):
                frames = rng.integers(0, 256, (4, 32, 32, 3), dtype=np.uint8)
                w.append(f"v{i}", frames, {"n": i})


def video_methods(path: str, videos: int) -> Dict[str, Callable[[], Any]]:
    dataset = gt.VideoDataset(path, label="n")
    world, rank, size = 2, 1, 8
    saver = gt.VideoSampler(dataset, num_replicas=2, rank=0, seed=SEED)
    saver.set_epoch(EPOCH)
    state = saver.state_dict(consumed=videos // 6)
    expected = expected_first(videos, state, world, rank, size)

    def resume() -> None:
        sampler = gt.VideoSampler(dataset, num_replicas=world, rank=rank)
        sampler.load_state_dict(state)
        sampler.set_epoch(EPOCH)
        _, labels = first_batch(DataLoader(dataset, batch_size=size, sampler=sampler))
        if labels.tolist() != expected:
            raise AssertionError("the first clips after the resume are not the rank's share")

    def distributed() -> None:
        sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=SEED)
        sampler.set_epoch(EPOCH)
        first_batch(DataLoader(dataset, batch_size=size, sampler=sampler))

    return {"video_resume": resume, "video_distributed": distributed}


def measure(methods: Dict[str, Callable[[], Any]], reps: int) -> Dict[str, Dict[str, float]]:
    for method in methods.values():  # warm-up, untimed
        method()
    times: Dict[str, List[float]] = {name: [] for name in methods}
    for _ in range(reps):
        for name, method in methods.items():
            start = time.perf_counter()
            method()
            times[name].append(time.perf_counter() - start)
    return {
        name: {"median_s": statistics.median(t), "min_s": min(t), "max_s": max(t)}
        for name, t in times.items()
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    results = measure(index_methods(args.items), args.reps)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "videos")
        write_videos(path, args.videos)
        results.update(measure(video_methods(path, args.videos), args.reps))

    def ratio(baseline: str, ours: str) -> float:
        return results[baseline]["median_s"] / results[ours]["median_s"]

    report = {
        "benchmark": "sampler",
        "smoke": args.smoke,
        "items": args.items,
        "videos": args.videos,
        "reps": args.reps,
        "results": results,
        "ratios": {
            "distributed_vs_resume": ratio("index_distributed", "index_resume"),
            "skip_vs_resume": ratio("index_skip", "index_resume"),
            "video_distributed_vs_resume": ratio("video_distributed", "video_resume"),
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
