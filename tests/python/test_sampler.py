"""gulpdb.torch.VideoSampler: resuming across world sizes, through real DataLoaders and DDP."""

from __future__ import annotations

import collections
import datetime
import json
import os
import socket
import subprocess
import time
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

import torch
import torch.distributed as dist
import torch.multiprocessing
from torch.utils.data import BatchSampler, DataLoader, Subset

import gulpdb
import gulpdb.torch as gt
from conftest import PYTHON, python_subprocess_env, synthetic_frames

N = 23  # not a multiple of any world size used here, so padding and dropping happen
BATCH = 2


def write_numbered(path: str, count: int) -> str:
    """A dataset of `count` one-frame videos whose meta "n" is their item index."""
    with gulpdb.Dataset(path, "x", videos_per_chunk=8) as ds:
        with ds.writer() as w:
            for i in range(count):
                w.append(f"v{i:03d}", synthetic_frames(i, 1, 8, 8), {"n": i})
    return path


@pytest.fixture(scope="module")
def numbered(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_numbered(str(tmp_path_factory.mktemp("sampler") / "numbered"), N)


class Length:
    """A dataset-like object: only a length, which is all the sampler reads."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- orders -----------------------------------------------------------------------


def test_same_seed_same_order_epochs_differ_and_no_shuffle_is_natural_order():
    def order(seed: int, epoch: int, shuffle: bool = True) -> List[int]:
        s = gt.VideoSampler(Length(50), num_replicas=1, rank=0, shuffle=shuffle, seed=seed)
        s.set_epoch(epoch)
        return list(s)

    a = order(4, 0)
    assert sorted(a) == list(range(50)) and a != list(range(50))
    assert order(4, 0) == a
    assert order(4, 1) != a and sorted(order(4, 1)) == list(range(50))
    assert order(5, 0) != a
    assert order(4, 0, shuffle=False) == list(range(50)) == order(4, 3, shuffle=False)
    # Ranks interleave the one global order, as DistributedSampler does.
    ranks = [gt.VideoSampler(Length(50), num_replicas=3, rank=r, seed=4) for r in range(3)]
    assert [list(s) for s in ranks] == [(a + a[:1])[r::3] for r in range(3)]
    assert list(ranks[0].epoch_order()) == a


def test_without_a_process_group_the_sampler_is_one_rank(numbered):
    assert not (dist.is_available() and dist.is_initialized())
    s = gt.VideoSampler(gt.VideoDataset(numbered), shuffle=False)
    assert (s.num_replicas, s.rank, len(s)) == (1, 0, N)
    assert "VideoSampler rank 0 of 1" in repr(s)


def test_lengths_match_distributed_sampler():
    for n in (0, 1, 5, 23, 24):
        for w in (1, 3, 4, 5):
            for drop in (False, True):
                theirs = torch.utils.data.DistributedSampler(
                    Length(n), num_replicas=w, rank=w - 1, drop_last=drop
                )
                ours = gt.VideoSampler(Length(n), num_replicas=w, rank=w - 1, drop_last=drop)
                assert len(ours) == len(theirs) == len(list(ours)), (n, w, drop)


# -- resuming across world sizes, through real DataLoaders -------------------------------


class PluggableBatches:
    """A batch sampler over whichever VideoSampler is plugged in.

    One DataLoader with persistent workers then serves every simulated rank of
    every run in turn (each VideoSampler is still a separate object iterated
    by the DataLoader's own machinery, prefetching included); starting spawn
    workers afresh for each of dozens of ranks would cost seconds each.
    """

    def __init__(self) -> None:
        self.sampler: Optional[gt.VideoSampler] = None

    def _batches(self) -> BatchSampler:
        assert self.sampler is not None
        return BatchSampler(self.sampler, BATCH, drop_last=False)

    def __iter__(self):
        return iter(self._batches())

    def __len__(self) -> int:
        return len(self._batches())


def run_world(
    loader: DataLoader,
    plug: PluggableBatches,
    world: int,
    state: Optional[Dict[str, Any]],
    stop_after: Optional[int],
    drop_last: bool,
) -> Tuple[List[List[int]], Dict[str, Any]]:
    """Runs `world` ranks one after another for `stop_after` batches (None: to the end).

    Returns what each rank's loop received and the state to resume from,
    checking that every rank yields as much and reports the same state.
    """
    received, states, lengths, batch_counts = [], [], [], []
    for rank in range(world):
        sampler = gt.VideoSampler(
            loader.dataset, num_replicas=world, rank=rank, seed=17, drop_last=drop_last
        )
        if state is not None:
            sampler.load_state_dict(state)
        sampler.set_epoch(2)
        plug.sampler = sampler
        lengths.append(len(sampler))
        got: List[int] = []
        batches = 0
        for _, labels in loader:
            got += labels.tolist()
            batches += 1
            if batches == stop_after:
                break
        if stop_after is None:
            assert len(got) == len(sampler) and batches == len(loader)
        received.append(got)
        batch_counts.append(batches)
        states.append(sampler.state_dict(consumed=len(got)))
    assert len(set(lengths)) == 1, lengths
    assert len(set(batch_counts)) == 1, batch_counts
    assert len({len(g) for g in received}) == 1, [len(g) for g in received]
    assert all(s == states[0] for s in states), states
    return received, states[0]


def check_resumed(before: List[int], after: List[int], world: int, drop_last: bool) -> None:
    """The samples before and after the last resume are the epoch, each once (plus padding)."""
    assert len(set(before)) == len(before), "a sample was consumed twice before the resume"
    assert not set(before) & set(after), "a consumed sample came back after the resume"
    remaining = N - len(before)
    counts = collections.Counter(after)
    if drop_last:
        assert all(c == 1 for c in counts.values())
        assert len(after) == remaining - remaining % world
        assert len(set(before) | set(after)) == N - remaining % world
    else:
        assert set(before) | set(after) == set(range(N))
        repeats = sum(c - 1 for c in counts.values())
        assert repeats == -remaining % world  # the padding, and nothing else


SCENARIOS = [  # (world size, batches each rank takes before stopping), the last to the end
    [(4, 1), (3, None)],
    [(2, 2), (5, None)],
    [(3, 3), (3, None)],
    [(4, 1), (3, 1), (5, None)],
]


@pytest.mark.parametrize(
    "workers, context",
    [(0, None), (1, "fork"), (2, "fork"), (2, "spawn")],
    ids=["0_workers", "1_worker_fork", "2_workers_fork", "2_workers_spawn"],
)
def test_resume_across_world_sizes_through_dataloaders(numbered, workers, context):
    dataset = gt.VideoDataset(numbered, label="n")
    plug = PluggableBatches()
    loader = DataLoader(
        dataset, batch_sampler=plug, num_workers=workers, multiprocessing_context=context,
        persistent_workers=workers > 0,
    )
    for drop_last in (False, True):
        for scenario in SCENARIOS:
            before: List[int] = []
            state = None
            for world, stop_after in scenario:
                received, state = run_world(loader, plug, world, state, stop_after, drop_last)
                flat = [i for got in received for i in got]
                if stop_after is None:
                    check_resumed(before, flat, world, drop_last)
                    assert state["consumed"] == N and state["num_replicas"] == world
                else:
                    assert len(flat) == world * stop_after * BATCH
                    before += flat
                    assert state["consumed"] == len(before)
                    assert state["epoch"] == 2 and state["dataset_length"] == N


def test_tracked_loader_counts_what_the_loop_took_not_what_was_prefetched(numbered):
    """2 ranks stop after 2 batches while workers have prefetched more; 3 ranks finish."""
    dataset = gt.VideoDataset(numbered, label="n")

    def loaders(world: int, state: Optional[Dict[str, Any]]):
        for rank in range(world):
            sampler = gt.VideoSampler(dataset, num_replicas=world, rank=rank, seed=3)
            if state is not None:
                sampler.load_state_dict(state)
            loader = DataLoader(
                dataset, batch_size=BATCH, sampler=sampler, num_workers=2, prefetch_factor=2,
                multiprocessing_context="fork",
            )
            yield sampler, loader

    before, states = [], []
    for sampler, loader in loaders(2, None):
        untracked = iter(loader)
        next(untracked)
        with pytest.raises(RuntimeError, match="prefetch"):
            sampler.state_dict()  # indices were handed out; how many were used is unknown
        del untracked
        for step, (_, labels) in enumerate(sampler.track(loader)):
            before += labels.tolist()
            if step == 1:
                break
        assert sampler._handed > 2 * BATCH  # the workers had taken more than the loop used
        states.append(sampler.state_dict())
    assert states[0] == states[1] and states[0]["consumed"] == 2 * 2 * BATCH

    after, lengths = [], []
    for sampler, loader in loaders(3, states[0]):
        tracked = sampler.track(loader)
        assert len(tracked) == len(loader) == 3  # 15 remaining: 5 each, batches of 2
        got = [i for _, labels in tracked for i in labels.tolist()]
        lengths.append(len(got))
        after += got
        assert sampler.state_dict()["consumed"] == N  # ran to the end
    assert lengths == [5, 5, 5]
    check_resumed(before, after, 3, drop_last=False)


def test_tracked_loader_without_batching_and_with_a_dropped_last_batch(numbered):
    dataset = gt.VideoDataset(numbered, label="n")
    sampler = gt.VideoSampler(dataset, num_replicas=2, rank=1, seed=1)
    loader = DataLoader(dataset, batch_size=None, sampler=sampler)  # one item at a time
    taken = []
    for _, label in sampler.track(loader):
        taken.append(label)
        if len(taken) == 5:
            break
    assert sampler.state_dict()["consumed"] == 10
    # A loader that drops its last partial batch still ends the epoch when it ends.
    sampler = gt.VideoSampler(dataset, num_replicas=2, rank=0, seed=1)
    loader = DataLoader(dataset, batch_size=5, sampler=sampler, drop_last=True)
    assert sum(len(labels) for _, labels in sampler.track(loader)) == 10  # of 12
    assert sampler.state_dict()["consumed"] == N
    sampler.set_epoch(1)
    assert sampler.state_dict()["consumed"] == 0 and sampler.state_dict()["epoch"] == 1
    with pytest.raises(ValueError, match="sampler=this VideoSampler"):
        gt.VideoSampler(dataset).track(loader)
    batched = DataLoader(dataset, batch_sampler=BatchSampler(sampler, 3, False))
    with pytest.raises(ValueError):
        sampler.track(batched)


def test_an_untracked_iteration_after_a_tracked_one_is_not_counted_as_tracked(numbered):
    dataset = gt.VideoDataset(numbered, label="n")
    sampler = gt.VideoSampler(dataset, num_replicas=1, rank=0)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    for _ in sampler.track(loader):
        pass
    assert sampler.state_dict()["consumed"] == N
    next(iter(loader))  # the same epoch again, untracked
    with pytest.raises(RuntimeError):
        sampler.state_dict()


def test_subset_of_a_dataset(numbered):
    subset = Subset(gt.VideoDataset(numbered, label="n"), list(range(3, 20, 2)))  # 9 items
    sampler = gt.VideoSampler(subset, num_replicas=2, rank=0, seed=2)
    loader = DataLoader(subset, batch_size=2, sampler=sampler)
    first = []
    for _, labels in sampler.track(loader):
        first += labels.tolist()
        break
    state = sampler.state_dict()
    assert state["dataset_length"] == 9 and state["consumed"] == 4
    rest = []
    for rank in range(3):
        s = gt.VideoSampler(subset, num_replicas=3, rank=rank)
        s.load_state_dict(state)
        rest += [label for _, labels in DataLoader(subset, batch_size=2, sampler=s)
                 for label in labels.tolist()]
    # Rank 1 of the first world consumed its half of the first 4, as rank 0 did.
    order = sampler.epoch_order()
    rank1 = [subset.indices[i] for i in order[1:4:2]]
    padding = [subset.indices[order[4]]]  # 5 remaining for 3 ranks: the first repeats
    assert sorted(first + rank1 + rest) == sorted(list(range(3, 20, 2)) + padding)
    full = gt.VideoSampler(gt.VideoDataset(numbered), num_replicas=1, rank=0)
    with pytest.raises(ValueError, match="dataset of 9 items, but this dataset has 23"):
        full.load_state_dict(state)


# -- state handling ------------------------------------------------------------------


def test_set_epoch_keeps_a_loaded_position_only_in_its_epoch():
    s = gt.VideoSampler(Length(20), num_replicas=2, rank=0, seed=8)
    s.set_epoch(5)
    state = s.state_dict(consumed=3)  # rank 0 took 3, so the world took 6
    assert state["consumed"] == 6 and state["epoch"] == 5
    r = gt.VideoSampler(Length(20), num_replicas=4, rank=0, seed=99, shuffle=False)
    r.load_state_dict(state)
    assert (r.seed, r.shuffle, r.epoch, len(r)) == (8, True, 5, 4)
    r.set_epoch(5)
    assert len(r) == 4 and list(r) == list(s.epoch_order()[6::4])
    r.set_epoch(6)
    assert len(r) == 5 and r.state_dict()["consumed"] == 0


def test_bad_arguments_and_states_are_refused():
    s = gt.VideoSampler(Length(10), num_replicas=2, rank=1)
    good = s.state_dict()
    with pytest.raises(ValueError, match="rank 2"):
        gt.VideoSampler(Length(10), num_replicas=2, rank=2)
    with pytest.raises(ValueError):
        gt.VideoSampler(Length(10), num_replicas=0, rank=0)
    with pytest.raises(ValueError):
        gt.VideoSampler(Length(10), num_replicas=1, rank=0, seed=-1)
    with pytest.raises(ValueError, match="consumed=6 is more than the 5"):
        s.state_dict(consumed=6)
    with pytest.raises(ValueError, match="lacks consumed"):
        s.load_state_dict({k: v for k, v in good.items() if k != "consumed"})
    with pytest.raises(ValueError, match="version"):
        s.load_state_dict(dict(good, version=99))
    with pytest.raises(ValueError, match="consumed 11 of only 10"):
        s.load_state_dict(dict(good, consumed=11))
    with pytest.raises(ValueError, match="dataset of 12 items, but this dataset has 10"):
        s.load_state_dict(dict(good, dataset_length=12))
    with pytest.raises(TypeError):
        s.load_state_dict(dict(good, consumed="3"))
    with pytest.raises(TypeError):
        s.load_state_dict([("consumed", 3)])  # type: ignore[arg-type]
    s.load_state_dict(good)
    assert s.state_dict() == good


def test_state_survives_torch_save_and_json(tmp_path):
    s = gt.VideoSampler(Length(30), num_replicas=3, rank=2, seed=6)
    s.set_epoch(4)
    state = s.state_dict(consumed=4)
    torch.save({"sampler": state}, tmp_path / "ckpt.pt")
    loaded = torch.load(tmp_path / "ckpt.pt")["sampler"]
    assert loaded == state == json.loads(json.dumps(state))
    r = gt.VideoSampler(Length(30), num_replicas=2, rank=1)
    r.load_state_dict(loaded)
    assert list(r) == list(s.epoch_order()[12 + 1 :: 2])


# -- DDP: two ranks stop mid-epoch, one rank finishes ----------------------------------


def _ddp_rank(
    rank: int, world: int, port: int, path: str, checkpoint: str, stop_after: int, out: str
) -> None:
    """One rank: trains on epoch 1 from the checkpoint (if any), stops after `stop_after` steps."""
    import faulthandler

    from torch.nn.parallel import DistributedDataParallel

    faulthandler.dump_traceback_later(90, exit=True)  # a stuck rank shows where it is stuck
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        dataset = gt.VideoDataset(path, label="n")
        sampler = gt.VideoSampler(dataset, seed=9)  # the process group's rank and size
        assert (sampler.rank, sampler.num_replicas) == (rank, world)
        loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler, num_workers=2)
        torch.manual_seed(0)
        model = DistributedDataParallel(torch.nn.Linear(3, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        if os.path.exists(checkpoint):
            saved = torch.load(checkpoint)
            model.module.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
            sampler.load_state_dict(saved["sampler"])
        sampler.set_epoch(1)
        seen: List[int] = []
        for step, (clips, labels) in enumerate(sampler.track(loader)):
            loss = model(clips.float().mean(dim=(1, 2, 3))).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen += labels.tolist()
            if step + 1 == stop_after:
                break
        state = sampler.state_dict()
        states: List[Any] = [None] * world
        dist.all_gather_object(states, state)
        if rank == 0 and stop_after:
            torch.save(
                {"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                 "sampler": state},
                checkpoint,
            )
        with open(f"{out}.{rank}.json", "w") as f:
            json.dump({"seen": seen, "states": states, "handed": sampler._handed}, f)
        dist.barrier()
        # Free DDP's reducer while the process group still holds the group: a
        # reducer holding the last reference destroys the group with the GIL
        # held, and in torch 1.13 that deadlocks against the group's worker
        # threads (they need the GIL to free tensors Python created).
        released = weakref.ref(model)
        del model, optimizer
        assert released() is None
    finally:
        dist.destroy_process_group()


def spawn_ranks(world: int, args: Sequence[Any], seconds: float = 120) -> None:
    """Runs _ddp_rank in `world` spawned processes; fails the test after `seconds`."""
    context = torch.multiprocessing.start_processes(
        _ddp_rank, args=(world, *args), nprocs=world, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + seconds
    while not context.join(timeout=1):  # raises if a rank failed
        if time.monotonic() > deadline:
            for p in context.processes:
                p.kill()
            pytest.fail(f"{world} DDP ranks did not finish in {seconds} s")


def test_ddp_two_ranks_stopped_mid_epoch_finish_on_one_rank(numbered, tmp_path):
    checkpoint = str(tmp_path / "checkpoint.pt")
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    spawn_ranks(2, (free_port(), numbered, checkpoint, 2, first))
    ranks = []
    for rank in range(2):
        with open(f"{first}.{rank}.json") as f:
            ranks.append(json.load(f))
    states = ranks[0]["states"]
    assert states[0] == states[1] and states[0]["consumed"] == 2 * 2 * BATCH
    assert all(len(r["seen"]) == 2 * BATCH for r in ranks)
    assert all(r["handed"] > 2 * BATCH for r in ranks)  # workers prefetched past the stop

    spawn_ranks(1, (free_port(), numbered, checkpoint, 0, second))  # a process group of one
    with open(f"{second}.0.json") as f:
        resumed = json.load(f)
    assert resumed["states"][0]["consumed"] == N and resumed["states"][0]["epoch"] == 1
    seen = ranks[0]["seen"] + ranks[1]["seen"] + resumed["seen"]
    assert sorted(seen) == list(range(N))  # every sample of the epoch exactly once


# -- the benchmark keeps running ------------------------------------------------------

BENCH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "bench", "sampler_bench.py",
)


def test_sampler_bench_smoke(tmp_path):
    out = subprocess.run(
        [PYTHON, BENCH, "--smoke", "--json", str(tmp_path / "result.json")],
        env=python_subprocess_env(), capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report == json.loads((tmp_path / "result.json").read_text())
    assert report["smoke"] and report["items"] == 10**4
    for name in ("index_resume", "index_load", "index_fresh", "index_distributed", "index_skip",
                 "video_resume", "video_distributed"):
        assert report["results"][name]["median_s"] > 0, name
    assert set(report["ratios"]) == {
        "distributed_vs_resume", "skip_vs_resume", "video_distributed_vs_resume"
    }
