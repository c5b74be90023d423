"""gulpdb.torch.VideoSampler(shuffle="blocks"): the partition-aware shuffle.

Each rank's epoch stays on about 1/W of the blocks of the order (the
partitions a remote node fetches), every item is taken once per epoch, and a
run stopped with W ranks resumes with any W' ranks on exactly the unseen items.
"""

from __future__ import annotations

import collections
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

import torch
from torch.utils.data import DataLoader

import gulpdb
import gulpdb.torch as gt
from conftest import synthetic_frames


class Length:
    """A dataset-like object with a length and no block layout (blocks of 2048)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


class Stored(Length):
    """A dataset-like object that says how its items are stored, as VideoDataset does."""

    def __init__(self, n: int, blocks: Sequence[int]) -> None:
        super().__init__(n)
        self.blocks = list(blocks)

    def order_blocks(self) -> List[int]:
        return self.blocks


def sampler(dataset: Any, world: int, rank: int, **kw: Any) -> gt.VideoSampler:
    kw.setdefault("seed", 11)
    return gt.VideoSampler(dataset, num_replicas=world, rank=rank, shuffle="blocks", **kw)


def block_of(starts: Sequence[int]):
    starts = np.asarray(starts)
    return lambda items: set(np.searchsorted(starts, np.asarray(items), side="right") - 1)


def run(
    dataset: Any,
    world: int,
    state: Optional[Dict[str, Any]] = None,
    per_rank: Optional[int] = None,
    **kw: Any,
) -> Tuple[List[List[int]], Dict[str, Any]]:
    """Every rank of a world takes `per_rank` samples (None: all); their items and the state."""
    got, states = [], []
    for rank in range(world):
        s = sampler(dataset, world, rank, **kw)
        if state is not None:
            s.load_state_dict(state)
        items = list(s)
        assert len(items) == len(s)
        if per_rank is not None:
            items = items[:per_rank]
        got.append(items)
        states.append(s.state_dict(consumed=len(items)))
    assert all(st == states[0] for st in states), states
    return got, states[0]


def check_epoch(got: List[List[int]], n: int, world: int, drop_last: bool) -> None:
    """One whole epoch: every item once, plus DistributedSampler's padding or drop."""
    flat = [i for items in got for i in items]
    assert len({len(items) for items in got}) <= 1
    counts = collections.Counter(flat)
    if drop_last:
        assert all(c == 1 for c in counts.values())
        assert len(flat) == n - n % world
    else:
        assert set(flat) == set(range(n))
        assert sum(c - 1 for c in counts.values()) == -n % world


# -- one epoch ---------------------------------------------------------------------


@pytest.mark.parametrize("drop_last", [False, True])
def test_every_item_once_per_epoch_for_several_world_sizes(drop_last):
    for n, blocks in [(0, None), (1, None), (5, None), (23, [0, 5, 10, 15, 20]),
                      (20000, None), (20000, range(0, 20000, 300))]:
        for world in (1, 2, 3, 4, 7, 64):
            kw = {} if blocks is None else {"blocks": list(blocks)}
            got, state = run(Length(n), world, drop_last=drop_last, **kw)
            check_epoch(got, n, world, drop_last)
            theirs = torch.utils.data.DistributedSampler(
                Length(n), num_replicas=world, rank=0, drop_last=drop_last)
            assert len(got[0]) == len(theirs), (n, world)
            # (A rank with nothing to take, drop_last with n < world, consumed nothing.)
            assert state["consumed"] == (n if got[0] else 0) and state["segments"] == []
            assert state["version"] == 3 and state["shuffle"] == "blocks"


def test_a_rank_touches_its_share_of_the_blocks():
    """10^5 items in blocks of 2048 (49 blocks): rank 0 of 64 stays on 1-2 blocks,
    rank 0 of 4 on about a quarter; the global shuffle touches most of them at once."""
    n, blocks = 10**5, 49
    of = block_of(range(0, n, 2048))
    got, _ = run(Length(n), 64)
    assert len(of(got[0][:64])) <= 2 and len(of(got[0])) <= 2
    assert max(len(of(items)) for items in got) <= 2
    got4, _ = run(Length(n), 4)
    assert len(of(got4[0][:64])) <= 8164 // 2048 + 2  # one window of 4 blocks
    assert len(of(got4[0])) <= blocks // 4 + 2
    # The ranks share blocks only where their sections meet.
    assert sum(len(of(items)) for items in got4) <= blocks + 3
    # The same measure can fail: the global shuffle is spread over the blocks.
    spread = list(gt.VideoSampler(Length(n), num_replicas=64, rank=0, seed=11))
    assert len(of(spread[:64])) > 25 and len(of(spread)) == blocks


def test_blocks_come_from_the_dataset_or_the_argument():
    n = 3000
    starts = [0, 100, 1000, 1100, 2500]
    of = block_of(starts)
    got, state = run(Stored(n, starts), 5, window=50)
    assert state["blocks"] == 5 and state["window"] == 50
    # 600 items each: at most a block's tail, the small block of 100, another's head.
    assert max(len(of(items)) for items in got) <= 3
    assert run(Length(n), 5, blocks=starts, window=50)[0] == got  # the same layout
    assert run(Length(n), 5, window=50)[0] != got  # blocks of 2048: another layout
    # Within one window of 50 items only; the first 50 are a shuffle of the section's first 50.
    s = sampler(Stored(n, starts), 5, 0, window=50)
    items = list(s)
    base = s.epoch_order()
    assert sorted(items[:50]) == sorted(base[:50].tolist()) and items[:50] != base[:50].tolist()
    for bad, match in [([1, 5], "start with position 0"), ([0, 7, 7], "strictly ascending"),
                       ([0, 3000], "past the dataset's 3000"), ([[0]], "flat")]:
        with pytest.raises((ValueError, TypeError), match=match):
            list(sampler(Stored(n, bad), 2, 0))
    with pytest.raises(ValueError, match="blocks"):
        gt.VideoSampler(Length(5), shuffle="global")
    with pytest.raises(TypeError):
        gt.VideoSampler(Length(5), shuffle=1)
    with pytest.raises(ValueError, match="window"):
        gt.VideoSampler(Length(5), shuffle="blocks", window=0)


def test_video_dataset_order_blocks(tmp_path, monkeypatch):
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "x", videos_per_chunk=8) as ds:
        with ds.writer() as w:
            for i in range(30):
                w.append(f"v{i:03d}", synthetic_frames(i, 1, 8, 8), {"n": i})
    dataset = gt.VideoDataset(path, label="n")
    assert dataset.order_blocks() == [0]  # one block of a local dataset (2048 positions)
    assert gt.VideoDataset(path, ids=["v003", "v001"]).order_blocks() == [0]
    # The dataset's own layout (a partitioned snapshot's partitions), in its order only.
    with monkeypatch.context() as m:
        m.setattr(gulpdb.Dataset, "order_blocks", lambda self: [0, 10, 20], raising=False)
        assert gt.VideoDataset(path).order_blocks() == [0, 10, 20]
        assert sampler(gt.VideoDataset(path), 2, 0).order_blocks().tolist() == [0, 10, 20]
        assert gt.VideoDataset(path, ids=[f"v{i:03d}" for i in range(29, -1, -1)]
                               ).order_blocks() == [0]
    s = sampler(dataset, 2, 1)
    assert s.order_blocks().tolist() == [0]
    # Through a DataLoader, tracked, with its own blocks: stop 3 ranks, resume on 2.
    starts = [0, 6, 12, 18, 24]
    before, state = [], None
    for world, batches in [(3, 2), (2, None)]:
        after = []
        for rank in range(world):
            s = sampler(dataset, world, rank, blocks=starts, window=4)
            if state is not None:
                s.load_state_dict(state)
            loader = DataLoader(dataset, batch_size=2, sampler=s)
            mine = []
            for step, (_, labels) in enumerate(s.track(loader)):
                mine += labels.tolist()
                if step + 1 == batches:
                    break
            after.append(mine)
            new_state = s.state_dict()
        state = new_state
        if batches is not None:
            assert all(len(m) == 4 for m in after) and state["segments"] == [[3, 4]]
            before = [i for m in after for i in m]
    flat = [i for m in after for i in m]
    assert state["consumed"] == 30 and not set(before) & set(flat)
    assert sorted(before + flat) == list(range(30))  # 18 left for 2 ranks: no padding


# -- resuming ----------------------------------------------------------------------

SCENARIOS = [  # (world size, samples each rank takes before stopping); the last runs to the end
    [(4, 700), (3, None)],
    [(2, 1500), (5, None)],
    [(4, 1), (3, 999), (5, None)],
    [(3, 3000), (3, None)],
    [(7, 2856), (2, None)],  # the first run stops one sample short of its end
]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: "-".join(str(w) for w, _ in s))
def test_elastic_resume_gives_exactly_the_unseen_items(scenario, drop_last):
    n = 20001
    starts = list(range(0, n, 500))
    of = block_of(starts)
    dataset = Stored(n, starts)
    before: List[int] = []
    state = None
    for world, per_rank in scenario:
        got, state = run(dataset, world, state, per_rank, drop_last=drop_last)
        flat = [i for items in got for i in items]
        if per_rank is not None:
            assert len(flat) == world * per_rank and len(set(flat)) == len(flat)
            assert not set(flat) & set(before), "an item came back after a resume"
            before += flat
            assert state["consumed"] == len(before)
            assert [w for w, _ in state["segments"]] == [w for w, k in scenario if k][: len(
                state["segments"])]
            continue
        assert state["consumed"] == n and state["segments"] == []
        assert not set(flat) & set(before), "an item came back after a resume"
        remaining = n - len(before)
        counts = collections.Counter(flat)
        if drop_last:
            assert all(c == 1 for c in counts.values())
            assert len(flat) == remaining - remaining % world
        else:
            assert set(before) | set(flat) == set(range(n))
            assert sum(c - 1 for c in counts.values()) == -remaining % world
        # After the resume, a rank is still on a fraction of the blocks.
        assert max(len(of(items)) for items in got) < 0.75 * len(starts)


def test_resume_at_10_5_items_from_4_ranks_to_3_and_from_2_to_5():
    n = 10**5
    for first, second, per_rank in [(4, 3, 1000), (2, 5, 7777)]:
        got, state = run(Length(n), first, per_rank=per_rank)
        seen = {i for items in got for i in items}
        assert state["segments"] == [[first, per_rank]] and state["consumed"] == len(seen)
        rest, final = run(Length(n), second, state)
        flat = [i for items in rest for i in items]
        assert not seen & set(flat) and seen | set(flat) == set(range(n))
        assert len(flat) - len(set(flat)) == -(n - len(seen)) % second
        assert final["consumed"] == n


# -- determinism and state ------------------------------------------------------------


def test_deterministic_from_seed_and_epoch():
    def epoch(seed: int, e: int, world: int = 3) -> List[List[int]]:
        out = []
        for rank in range(world):
            s = sampler(Length(5000), world, rank, seed=seed)
            s.set_epoch(e)
            out.append(list(s))
        return out

    a = epoch(1, 0)
    assert epoch(1, 0) == a
    assert epoch(1, 1) != a and epoch(2, 0) != a
    check_epoch(epoch(1, 1), 5000, 3, False)
    s = sampler(Length(5000), 3, 0, seed=1)
    order = s.epoch_order()
    assert sorted(order.tolist()) == list(range(5000)) and not order.flags.writeable
    # The base order keeps each block together: blocks of 2048 in a shuffled order.
    runs = [order[i : i + 2048] // 2048 for i in range(0, 5000, 2048)]
    assert len({int(b) for r in runs for b in set(r.tolist())}) == 3
    assert all(len(set(r.tolist())) in (1, 2) for r in runs)
    first = order[:500]  # within the first block placed, the items are shuffled
    assert len(set((first // 2048).tolist())) == 1 and not np.all(np.diff(first) > 0)


def test_blocks_state_round_trips_and_is_checked(tmp_path):
    s = sampler(Length(3000), 4, 2)
    s.set_epoch(3)
    state = s.state_dict(consumed=100)
    assert state["segments"] == [[4, 100]] and state["consumed"] == 400
    assert state == json.loads(json.dumps(state))
    torch.save(state, tmp_path / "s.pt")
    assert torch.load(tmp_path / "s.pt") == state
    r = gt.VideoSampler(Length(3000), num_replicas=2, rank=1, seed=99)  # global shuffle
    r.load_state_dict(state)
    assert (r.shuffle, r.seed, r.epoch, len(r)) == ("blocks", 11, 3, 1300)
    assert r.state_dict() == dict(state, num_replicas=2)
    r.set_epoch(3)
    assert r.state_dict()["consumed"] == 400
    r.set_epoch(4)
    assert r.state_dict()["consumed"] == 0 and r.state_dict()["segments"] == []
    # A state of the global shuffle makes a blocks sampler global again.
    g = gt.VideoSampler(Length(3000), num_replicas=2, rank=0).state_dict()
    assert g["version"] == 3 and "segments" not in g
    r.load_state_dict(g)
    assert r.shuffle is True and "segments" not in r.state_dict()
    # Another layout, damaged segments, a version 2 state without its keys.
    other = gt.VideoSampler(Length(3000), num_replicas=2, rank=0, blocks=[0, 1000])
    with pytest.raises(ValueError, match="counted over 2 blocks"):
        other.load_state_dict(state)
    for bad, match in [(dict(state, segments=[[4, 2000]]), "more than the 750"),
                       (dict(state, segments=[[4, 100], [3, 10]]), "do not leave"),
                       (dict(state, segments=[[4]]), "segment"),
                       (dict(state, shuffle=True), "shuffle 'blocks'"),
                       ({k: v for k, v in state.items() if k != "window"}, "lacks window")]:
        with pytest.raises(ValueError, match=match):
            r.load_state_dict(bad)
    with pytest.raises(TypeError):
        r.load_state_dict(dict(state, segments="4,100"))
    r.load_state_dict(state)  # a refused state changed nothing that a good one does not set
    assert r.state_dict() == dict(state, num_replicas=2)
