"""gulpdb.torch.VideoSampler on a dataset that grows: the state names what it
counts over (the dataset's UUID and the engine's digest of the ids in order),
and load_state_dict(state, grow="next_epoch") finishes the saved epoch
exactly on a dataset that grew by appends, then counts every video from the
next epoch; another dataset, removed or reordered videos, and growth without
grow= are refused; states of versions 1 and 2 still load with their rule.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import os
import shutil
import struct
import subprocess
import zlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.utils.data import Subset

import gulpdb
import gulpdb.torch as gt
from conftest import PYTHON, python_subprocess_env, synthetic_frames

N = 23  # not a multiple of the world sizes used, so padding and dropping happen
MODES = [True, False, "blocks"]
MODE_IDS = ["global", "natural", "blocks"]


def append_numbered(path: str, start: int, count: int, mode: str = "a") -> str:
    """Appends one-frame videos v<start>... whose meta "n" is their number."""
    with gulpdb.Dataset(path, mode, videos_per_chunk=8) as ds:
        with ds.writer() as w:
            for i in range(start, start + count):
                w.append(f"v{i:03d}", synthetic_frames(i, 1, 8, 8), {"n": i})
    return path


def reference_digest(ids: Sequence[str]) -> str:
    """The documented rule, with Python's own SHA-256: each id's UTF-8 bytes
    after their length as 4 bytes, little-endian."""
    sha = hashlib.sha256()
    for id_ in ids:
        data = id_.encode("utf-8")
        sha.update(struct.pack("<I", len(data)) + data)
    return sha.hexdigest()


class Named:
    """Items named by ids, as a VideoDataset names them: a UUID and the engine's
    digest of the ids (gulpdb._gulpdb.ids_digest), blocks of `block` items."""

    def __init__(self, ids: Sequence[str], uuid: str = "d1", block: int = 2048) -> None:
        self.ids, self.uuid, self.block = list(ids), uuid, block

    def __len__(self) -> int:
        return len(self.ids)

    def ids_digest(self, count: int) -> str:
        return gulpdb._gulpdb.ids_digest(self.ids[:count])

    def order_blocks(self) -> List[int]:
        return list(range(0, len(self.ids), self.block)) or [0]


def run_world(
    dataset: Any,
    world: int,
    *,
    state: Optional[Dict[str, Any]] = None,
    per_rank: Optional[int] = None,
    grow: Optional[str] = None,
    epoch: int = 3,
    **kw: Any,
) -> Tuple[List[List[int]], Dict[str, Any]]:
    """`world` ranks, each from `state` (or the start of `epoch`), taking
    `per_rank` samples (None: to the end); what each took and the state after,
    checked to be the same on every rank."""
    kw.setdefault("seed", 5)
    got, states = [], []
    for rank in range(world):
        s = gt.VideoSampler(dataset, num_replicas=world, rank=rank, **kw)
        if state is not None:
            s.load_state_dict(state, grow=grow)
            epoch = state["epoch"]
        s.set_epoch(epoch)
        items = list(itertools.islice(iter(s), per_rank))
        if per_rank is None:
            assert len(items) == len(s)
        got.append(items)
        states.append(s.state_dict(consumed=len(items)))
    assert all(st_ == states[0] for st_ in states), states
    assert len({len(g) for g in got}) == 1
    return got, states[0]


def check_epoch(before: List[int], after: List[int], n: int, world: int, drop_last: bool) -> None:
    """The samples before and after the last resume are the epoch's `n`
    items, each once, plus the padding or minus the drop of the last world."""
    assert len(set(before)) == len(before), "a sample was consumed twice before the resume"
    assert not set(before) & set(after), "a consumed sample came back after the resume"
    assert all(0 <= i < n for i in after), f"an item past the epoch's {n}: {max(after)}"
    remaining = n - len(before)
    counts = collections.Counter(after)
    if drop_last:
        assert all(c == 1 for c in counts.values())
        assert len(after) == remaining - remaining % world
    else:
        assert set(before) | set(after) == set(range(n))
        assert sum(c - 1 for c in counts.values()) == -remaining % world


def flat(got: List[List[int]]) -> List[int]:
    return [i for items in got for i in items]


# -- the engine's digest and the dataset's identity -----------------------------------------


def test_ids_digest_is_the_documented_rule_and_names_the_first_ids(tmp_path):
    path = append_numbered(str(tmp_path / "d"), 0, N, "x")
    with gulpdb.Dataset(path) as ds:
        ids = ds.ids()
        for count in (0, 1, 7, N):
            assert ds.ids_digest(count) == reference_digest(ids[:count])
            assert gulpdb._gulpdb.ids_digest(ids[:count]) == reference_digest(ids[:count])
        assert ds.ids_digest(0) == hashlib.sha256(b"").hexdigest()
        assert ds.uuid == ds.stats().uuid and len(ds.uuid) == 36
        with pytest.raises(IndexError, match="past the end"):
            ds.ids_digest(N + 1)
        with pytest.raises(ValueError, match="count"):
            ds.ids_digest(-1)
        with pytest.raises(TypeError):
            ds.ids_digest("3")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            ds.ids_digest(None)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="single str"):
            gulpdb._gulpdb.ids_digest("v000")
        # Non-ASCII ids count by their UTF-8 bytes; an int id by its text.
        assert gulpdb._gulpdb.ids_digest(["vidé", 12]) == reference_digest(["vidé", "12"])
        before = ds.ids_digest(N)
    append_numbered(path, 100, 3)
    with gulpdb.Dataset(path, "a") as ds:
        assert ds.ids_digest(N) == before  # appends come after
        assert ds.ids_digest(N + 3) == reference_digest(ds.ids())
        ds.remove(["v005"])
        assert ds.ids_digest(N) != before
    vds = gt.VideoDataset(path)
    assert vds.uuid == gulpdb.Dataset(path).uuid
    assert vds.ids_digest(N + 2) == reference_digest(vds.ids)
    with pytest.raises(IndexError):
        vds.ids_digest(N + 3)
    images = gt.ImageDataset(path, ids=["v007", "v003"])
    assert images.uuid == vds.uuid
    assert images.ids_digest(2) == reference_digest(["v007", "v003"])
    assert images.ids_digest(1) == reference_digest(["v007"])


# -- exact continuation after an append -------------------------------------------------------


SCENARIOS = [(4, 1, 3), (2, 3, 5), (3, 2, 1), (1, 7, 2), (5, 0, 4)]  # (W, samples per rank, W')


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> str:
    return append_numbered(str(tmp_path_factory.mktemp("growth") / "base"), 0, N, "x")


@pytest.mark.parametrize("shuffle", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("drop_last", [False, True])
def test_a_grown_dataset_finishes_the_saved_epoch_exactly(base, tmp_path, shuffle, drop_last):
    """W ranks stop mid-epoch; 9 videos are appended; W' ranks resume with
    grow="next_epoch" and take exactly what an ungrown resume would have (the
    same indices, the same videos), then the next epoch has every video."""
    for k, (world, per_rank, world2) in enumerate(SCENARIOS):
        path = str(tmp_path / f"d{k}")
        shutil.copytree(base, path)  # the same dataset (UUID) each time, not grown yet
        kw: Dict[str, Any] = dict(shuffle=shuffle, drop_last=drop_last, seed=5)
        if shuffle == "blocks":
            kw["blocks"] = [0, 5, 11, 17]  # blocks of the 23 items
        old = gt.VideoDataset(path)  # its ids are fixed when it is made
        got, state = run_world(old, world, per_rank=per_rank, **kw)
        before = flat(got)
        assert state["version"] == 3 and state["dataset_length"] == N
        assert state["dataset"] == {"uuid": old.uuid, "length": N,
                                    "ids_digest": reference_digest(old.ids)}
        assert old.uuid != ""
        # What the world of W' ranks would take, had nothing been appended.
        reference, _ = run_world(old, world2, state=state, **kw)

        append_numbered(path, 100, 9)
        grown = gt.VideoDataset(path)
        n = len(grown)
        assert n == N + 9
        if shuffle == "blocks":
            kw["blocks"] = [0, 5, 11, 17, 23, 28]  # the last block of the 23 grew on
        with pytest.raises(ValueError, match="grew by 9 .*grow='next_epoch'"):
            gt.VideoSampler(grown, **kw).load_state_dict(state)
        resumed, end = run_world(grown, world2, state=state, grow="next_epoch", **kw)
        assert resumed == reference  # the same indices on every rank
        after = flat(resumed)
        check_epoch(before, after, N, world2, drop_last)
        assert [grown.ids[i] for i in after] == [old.ids[i] for i in after]  # the same videos
        assert end["consumed"] == N and end["dataset"] == state["dataset"]
        # JSON and back: the same resume.
        again, _ = run_world(grown, world2, state=json.loads(json.dumps(state)),
                             grow="next_epoch", **kw)
        assert again == resumed

        # The next epoch counts every video, as a fresh sampler of the grown dataset.
        nxt = []
        for rank in range(world2):
            s = gt.VideoSampler(grown, num_replicas=world2, rank=rank, **kw)
            s.load_state_dict(state, grow="next_epoch")
            s.set_epoch(state["epoch"] + 1)
            fresh = gt.VideoSampler(grown, num_replicas=world2, rank=rank, **kw)
            fresh.set_epoch(state["epoch"] + 1)
            assert list(s.epoch_order()) == list(fresh.epoch_order())
            nxt.append(list(s))
            assert nxt[-1] == list(fresh) and len(s) == len(fresh)
        check_epoch([], flat(nxt), n, world2, drop_last)
        if not drop_last:
            assert {grown.ids[i] for i in flat(nxt)} >= {f"v{i}" for i in range(100, 109)}


def test_set_epoch_after_a_growth_resume():
    old = Named([f"v{i}" for i in range(20)])
    _, state = run_world(old, 2, per_rank=3, shuffle=True)
    grown = Named(old.ids + ["w1", "w2", "w3"])
    s = gt.VideoSampler(grown, num_replicas=4, rank=0)
    s.load_state_dict(state, grow="next_epoch")
    assert (s.epoch, len(s)) == (3, 4)  # 14 of the saved 20 left, over 4 ranks
    assert "of 20 (the saved epoch's; 23 now)" in repr(s)
    s.set_epoch(3)  # the saved epoch keeps its position and its items
    assert len(s) == 4 and s.state_dict()["dataset_length"] == 20
    s.set_epoch(4)
    assert len(s) == 6 and s.state_dict()["dataset_length"] == 23
    assert s.state_dict()["dataset"]["ids_digest"] == grown.ids_digest(23)
    s.set_epoch(3)  # the saved epoch was left: epoch 3 is now an epoch like any other
    assert len(s) == 6 and s.state_dict()["consumed"] == 0


def test_a_second_growth_before_the_epoch_finishes():
    """4 ranks stop; 5 videos come; 3 ranks resume and stop again (their state
    still counts the first 30); 7 more come; 2 ranks finish the epoch."""
    ids = [f"v{i}" for i in range(30)]
    before, state = run_world(Named(ids), 4, per_rank=2, shuffle="blocks", window=3)
    first = dict(state["dataset"])
    middle, state = run_world(Named(ids + [f"w{i}" for i in range(5)]), 3, state=state,
                              per_rank=3, grow="next_epoch", shuffle="blocks")
    assert state["dataset"] == first and state["dataset_length"] == 30
    assert len(state["segments"]) == 2
    grown = Named(ids + [f"w{i}" for i in range(5)] + [f"x{i}" for i in range(7)])
    with pytest.raises(ValueError, match="grew by 12"):
        gt.VideoSampler(grown).load_state_dict(state)
    after, end = run_world(grown, 2, state=state, grow="next_epoch", shuffle="blocks")
    check_epoch(flat(before) + flat(middle), flat(after), 30, 2, drop_last=False)
    assert end["consumed"] == 30


# -- refusals ---------------------------------------------------------------------------------


def test_another_dataset_removals_and_replacements_are_refused(tmp_path):
    path = append_numbered(str(tmp_path / "d"), 0, N, "x")
    _, state = run_world(gt.VideoDataset(path), 3, per_rank=2, shuffle=True)
    # The same ids in another dataset: another UUID.
    twin = append_numbered(str(tmp_path / "twin"), 0, N, "x")
    for grow in (None, "next_epoch"):
        with pytest.raises(ValueError, match="another dataset"):
            gt.VideoSampler(gt.VideoDataset(twin)).load_state_dict(state, grow=grow)
    # A copy (cp -r) is the same dataset, and resumes.
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    run_world(gt.VideoDataset(copy), 2, state=state, shuffle=True)
    # A video removed: fewer items; one removed and one appended: the digest.
    with gulpdb.Dataset(copy, "a") as ds:
        ds.remove(["v010"])
    for grow in (None, "next_epoch"):
        with pytest.raises(ValueError, match="has only 22: items were removed"):
            gt.VideoSampler(gt.VideoDataset(copy)).load_state_dict(state, grow=grow)
    append_numbered(copy, 200, 1)
    for grow in (None, "next_epoch"):
        with pytest.raises(ValueError, match="removed, replaced or reordered"):
            gt.VideoSampler(gt.VideoDataset(copy)).load_state_dict(state, grow=grow)
    # A replacement moves the id to the end of the order: the first 23 differ.
    with gulpdb.Dataset(path, "a") as ds:
        with ds.writer(on_duplicate="replace") as w:
            w.append("v004", synthetic_frames(9, 1, 8, 8), {"n": 4})
        assert ds.ids()[-1] == "v004" and len(ds) == N
    for grow in (None, "next_epoch"):
        with pytest.raises(ValueError, match="removed, replaced or reordered"):
            gt.VideoSampler(gt.VideoDataset(path)).load_state_dict(state, grow=grow)
    # A failed load changes nothing.
    s = gt.VideoSampler(gt.VideoDataset(path), seed=9)
    s.set_epoch(2)
    with pytest.raises(ValueError):
        s.load_state_dict(state, grow="next_epoch")
    assert (s.epoch, s.seed, len(s)) == (2, 9, N)


def test_a_state_of_ids_or_a_split_names_those_items(tmp_path):
    """A VideoDataset of a list of ids counts over that list: its identity is
    the list's, and a list that grows at its end resumes with grow=."""
    path = append_numbered(str(tmp_path / "d"), 0, N, "x")
    chosen = [f"v{i:03d}" for i in range(0, N, 2)]  # 12 ids
    _, state = run_world(gt.VideoDataset(path, ids=chosen), 2, per_rank=2)
    assert state["dataset"]["ids_digest"] == reference_digest(chosen)
    with pytest.raises(ValueError, match="grew by 3"):
        gt.VideoSampler(gt.VideoDataset(path, ids=chosen + ["v001", "v003", "v005"])
                        ).load_state_dict(state)
    run_world(gt.VideoDataset(path, ids=chosen + ["v001", "v003", "v005"]), 3, state=state,
              grow="next_epoch")
    with pytest.raises(ValueError, match="removed, replaced or reordered"):
        gt.VideoSampler(gt.VideoDataset(path, ids=chosen[::-1])).load_state_dict(state)


def test_grow_is_checked():
    s = gt.VideoSampler(Named(["a", "b", "c"]))
    state = s.state_dict()
    for bad in ("next", "", "NEXT_EPOCH", "next_epoch "):
        with pytest.raises(ValueError, match="grow must be None or \"next_epoch\""):
            s.load_state_dict(state, grow=bad)
    for bad in (True, 1, ["next_epoch"], b"next_epoch"):
        with pytest.raises(TypeError, match="grow must be"):
            s.load_state_dict(state, grow=bad)  # type: ignore[arg-type]
    s.load_state_dict(state, grow="next_epoch")  # nothing grew: a plain resume
    s.load_state_dict(state, grow=None)


def test_a_malformed_dataset_field_is_refused():
    s = gt.VideoSampler(Named(["a", "b", "c"]))
    good = s.state_dict()
    digest = good["dataset"]["ids_digest"]
    cases = [
        (dict(good, dataset="x"), TypeError, "dataset must be a dict"),
        (dict(good, dataset={"uuid": "d1", "length": 3}), ValueError, "lacks ids_digest"),
        (dict(good, dataset=dict(good["dataset"], length=2)), ValueError, "names 2 items"),
        (dict(good, dataset=dict(good["dataset"], uuid=7)), TypeError, "uuid must be a str"),
        (dict(good, dataset=dict(good["dataset"], ids_digest=digest[:10])), ValueError, "64"),
        (dict(good, dataset=dict(good["dataset"], ids_digest=digest.upper())), ValueError, "64"),
        ({k: v for k, v in good.items() if k != "dataset"}, ValueError, "lacks dataset"),
        (dict(good, dataset=dict(good["dataset"], ids_digest="0" * 64)), ValueError,
         "reordered"),
    ]
    for state, error, match in cases:
        with pytest.raises(error, match=match):
            s.load_state_dict(state)
    s.load_state_dict(good)
    assert s.state_dict() == good


def test_a_dataset_made_before_uuids_names_no_uuid_and_the_digest_still_checks():
    ids = [f"v{i}" for i in range(10)]
    _, state = run_world(Named(ids, uuid=""), 2, per_rank=1)
    assert state["dataset"]["uuid"] == ""
    # Its first push gives it a UUID: the state still resumes on it.
    run_world(Named(ids + ["w"], uuid="now-one"), 2, state=state, grow="next_epoch")
    with pytest.raises(ValueError, match="reordered"):
        gt.VideoSampler(Named(ids[::-1], uuid="now-one")).load_state_dict(state)
    # A state that names a UUID, on a dataset without one (a copy made before
    # the original's first push): the digest decides.
    _, named = run_world(Named(ids, uuid="d1"), 2, per_rank=1)
    run_world(Named(ids, uuid=""), 3, state=named)
    with pytest.raises(ValueError, match="reordered"):
        gt.VideoSampler(Named(ids[::-1], uuid="")).load_state_dict(named)
    with pytest.raises(ValueError, match="another dataset"):
        gt.VideoSampler(Named(ids, uuid="d2")).load_state_dict(named)


# -- what names nothing keeps the old rule ---------------------------------------------------


def test_a_subset_names_nothing_and_keeps_the_length_rule(tmp_path):
    path = append_numbered(str(tmp_path / "d"), 0, N, "x")
    subset = Subset(gt.VideoDataset(path), list(range(3, 20, 2)))  # 9 items
    _, state = run_world(subset, 2, per_rank=1)
    assert state["dataset"] is None and state["version"] == 3
    run_world(Subset(gt.VideoDataset(path), list(range(3, 20, 2))), 3, state=state)
    bigger = Subset(gt.VideoDataset(path), list(range(3, 22, 2)))
    with pytest.raises(ValueError, match="dataset of 9 items, but this dataset has 10"):
        gt.VideoSampler(bigger).load_state_dict(state)
    with pytest.raises(ValueError, match="does not name the items it counted"):
        gt.VideoSampler(bigger).load_state_dict(state, grow="next_epoch")
    # A state that names its items, loaded on a Subset: the length rule.
    _, named = run_world(gt.VideoDataset(path), 2, per_rank=1)
    with pytest.raises(ValueError, match="Subset cannot name its items"):
        gt.VideoSampler(Subset(gt.VideoDataset(path), list(range(N)) + [0, 1])).load_state_dict(
            named, grow="next_epoch")
    run_world(Subset(gt.VideoDataset(path), list(range(N))), 2, state=named)


def _crc_of_starts(starts: Sequence[int]) -> int:
    return zlib.crc32(np.asarray(starts, "<i8").tobytes())


def test_states_of_versions_1_and_2_still_load_with_their_rule():
    """States as gulpdb wrote them before version 3 (literals): the same
    position as then, on a dataset of the same length; a grown one is refused,
    with grow= too (they do not name what they counted)."""
    ids = [f"v{i}" for i in range(N)]
    v1 = {"version": 1, "epoch": 2, "seed": 5, "shuffle": True, "dataset_length": N,
          "consumed": 8, "num_replicas": 4}
    s = gt.VideoSampler(Named(ids), num_replicas=1, rank=0)
    s.load_state_dict(v1)
    order = np.random.default_rng([5, 2]).permutation(N)
    assert list(s) == order[8:].tolist()
    assert s.state_dict(consumed=0)["version"] == 3
    v1_natural = dict(v1, shuffle=False, consumed=20)
    s.load_state_dict(v1_natural)
    assert list(s) == [20, 21, 22]
    v2 = {"version": 2, "epoch": 1, "seed": 3, "shuffle": "blocks", "dataset_length": N,
          "consumed": 8, "num_replicas": 4, "segments": [[4, 2]], "blocks": 3,
          "blocks_digest": _crc_of_starts([0, 8, 16]), "window": 4}
    blocked = Named(ids, block=8)
    got = []
    for rank in range(3):
        r = gt.VideoSampler(blocked, num_replicas=3, rank=rank)
        r.load_state_dict(v2)
        got += list(r)
    # The same as a version 3 state of the same position.
    v3 = dict(v2, version=3, dataset={"uuid": "d1", "length": N,
                                      "ids_digest": blocked.ids_digest(N)})
    want = []
    for rank in range(3):
        r = gt.VideoSampler(blocked, num_replicas=3, rank=rank)
        r.load_state_dict(v3)
        want += list(r)
    assert got == want and len(set(got)) == N - 8
    grown = Named(ids + ["w1"], block=8)
    for old in (v1, v2):
        with pytest.raises(ValueError, match=f"dataset of {N} items, but this dataset has 24"):
            gt.VideoSampler(grown).load_state_dict(old)
        with pytest.raises(ValueError, match=f"version {old['version']}.*does not name"):
            gt.VideoSampler(grown).load_state_dict(old, grow="next_epoch")
    with pytest.raises(ValueError, match="version 2 must have shuffle 'blocks'"):
        s.load_state_dict(dict(v2, shuffle=True))
    with pytest.raises(ValueError, match="reads versions 1, 2, 3"):
        s.load_state_dict(dict(v1, version=4))


# -- properties over random sizes, worlds and growth ------------------------------------------


@settings(max_examples=120, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(
    n=st.integers(0, 60),
    world=st.integers(1, 5),
    fraction=st.floats(0, 1),
    appended=st.integers(0, 25),
    world2=st.integers(1, 5),
    shuffle=st.sampled_from(MODES),
    drop_last=st.booleans(),
    seed=st.integers(0, 2**31),
    block=st.integers(1, 9),
    change=st.sampled_from(["append", "append", "remove", "swap", "other dataset"]),
)
def test_property_growth_resumes_exactly_and_changes_are_refused(
    n, world, fraction, appended, world2, shuffle, drop_last, seed, block, change
):
    ids = [f"v{i}" for i in range(n)]
    kw = dict(shuffle=shuffle, drop_last=drop_last, seed=seed)
    old = Named(ids, block=block)
    per_rank = int(fraction * len(gt.VideoSampler(old, num_replicas=world, rank=0, **kw)))
    got, state = run_world(old, world, per_rank=per_rank, **kw)
    before = flat(got)
    reference, _ = run_world(old, world2, state=state, **kw)
    more = ids + [f"w{i}" for i in range(appended)]
    if change == "append":
        grown = Named(more, block=block)
        if appended:
            with pytest.raises(ValueError, match="grew by"):
                gt.VideoSampler(grown, **kw).load_state_dict(state)
        resumed, end = run_world(grown, world2, state=state, grow="next_epoch", **kw)
        assert resumed == reference
        if state["consumed"] == n:  # the epoch was over
            assert flat(resumed) == []
        else:
            check_epoch(before, flat(resumed), n, world2, drop_last)
        assert end["dataset_length"] == n and end["dataset"] == state["dataset"]
        nxt = []
        for rank in range(world2):
            s = gt.VideoSampler(grown, num_replicas=world2, rank=rank, **kw)
            s.load_state_dict(state, grow="next_epoch")
            s.set_epoch(state["epoch"] + 1)
            nxt.append(list(s))
        check_epoch([], flat(nxt), len(more), world2, drop_last)
        return
    if change == "remove" and n:
        changed = Named(ids[: n // 2] + ids[n // 2 + 1 :] + [f"w{i}" for i in range(appended)])
        match = "removed"
    elif change == "swap" and n >= 2:
        changed = Named([ids[1], ids[0]] + ids[2:] + [f"w{i}" for i in range(appended)])
        match = "removed, replaced or reordered"
    elif change == "other dataset":
        changed = Named(more, uuid="d2", block=block)
        match = "another dataset"
    else:
        return
    for grow in (None, "next_epoch"):
        with pytest.raises(ValueError, match=match):
            gt.VideoSampler(changed, **kw).load_state_dict(state, grow=grow)


def test_ids_digest_bench_smoke(tmp_path):
    """bench/ids_digest_bench.py --smoke runs (its timings are not checked)."""
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "bench", "ids_digest_bench.py")
    out = subprocess.run([PYTHON, bench, "--smoke", "--json", str(tmp_path / "r.json")],
                         env=python_subprocess_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report == json.loads((tmp_path / "r.json").read_text())
    assert report["videos"] == 2000
    for name in ("local_digest", "local_ids", "python_digest", "list_digest"):
        assert report["local"][name]["median"] > 0, name
    assert report["snapshot"]["snapshot_digest_fetched"]["bytes"] > 0
    assert 200 < report["state_bytes"]["global"] < 1000
