"""Metadata queries and named splits from Python.

``Dataset.select`` is compared with a scan written here in Python over
``meta()`` of every id (the documented equality: JSON types, numbers by value,
True is not 1, "1" is not 1), with and without a meta index, after appends,
removals, replacements, compaction and merge; splits are all or nothing,
follow removals, survive export and import, and feed the torch datasets.
"""

from __future__ import annotations

import glob
import json
import math
import os
import random
import shutil
import subprocess
import warnings
from typing import Any, Dict, List

import numpy as np
import pytest

import gulpdb
from conftest import GULPDB_CLI

# The values meta may hold for "label" (and its unindexed twin "mirror"),
# each also the value a query asks for. 3 and 3.0 are one value; True, 1 and
# "1" are three.
UNIVERSE: List[Any] = [
    "cat",
    "dog",
    "caf\u00e9",
    "1",
    1,
    3,
    3.0,
    -0.5,
    True,
    False,
    None,
    float("nan"),
    [1, "a"],
    {"x": 1, "y": [True]},
    "x" * 450,  # stored in the index by length and checksum
]


def json_equal(a: Any, b: Any) -> bool:
    """The documented equality of meta values, written independently of gulpdb."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def reference(ds: gulpdb.Dataset, **conditions: Any) -> List[str]:
    """select() computed in Python from meta() of every id."""
    out = []
    for id_ in ds.ids():
        meta = ds.meta(id_)
        if isinstance(meta, dict) and all(
            key in meta and json_equal(meta[key], value) for key, value in conditions.items()
        ):
            out.append(id_)
    return out


def assert_select_matches(ds: gulpdb.Dataset, when: str) -> None:
    for value in UNIVERSE:
        for key in ("label", "mirror"):
            assert ds.select(**{key: value}) == reference(ds, **{key: value}), (when, key, value)
        assert ds.select(label=value, mirror=value) == reference(ds, label=value, mirror=value)
    assert ds.select(label="cat", other=1) == reference(ds, label="cat", other=1)
    assert ds.select() == ds.ids()
    # Every video with a label was found under some value of the universe.
    found = {i for value in UNIVERSE for i in ds.select(label=value)}
    assert found == {i for i in ds.ids() if "label" in ds.meta(i)}, when


def random_meta(rng: random.Random, id_: str) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"id": id_}
    if rng.random() < 0.9:
        meta["label"] = rng.choice(UNIVERSE)
        meta["mirror"] = meta["label"]
        meta["other"] = rng.choice([1, 1.0, 2, "1"])
    return meta


def frames(seed: int) -> List[bytes]:
    return [gulpdb.encode_jpeg(np.full((8, 8, 3), seed % 256, np.uint8))]


def test_select_matches_a_python_scan_through_every_write(tmp_path):
    cli = GULPDB_CLI
    rng = random.Random(5)
    path = str(tmp_path / "ds")
    ds = gulpdb.Dataset(path, "x", videos_per_chunk=6)
    with ds.writer() as w:
        for i in range(50):
            w.append(f"v{i}", frames(i), random_meta(rng, f"v{i}"))
    assert_select_matches(ds, "no index")
    assert ds.create_meta_index("label") is True
    assert ds.create_meta_index("label") is False
    assert ds.meta_indexes() == ["label"]
    assert_select_matches(ds, "indexed")

    for round_ in range(3):
        with ds.writer(on_duplicate="replace") as w:
            for _ in range(12):
                id_ = f"v{rng.randrange(70)}"
                if rng.random() < 0.3:
                    w.remove(id_)
                else:
                    w.append(id_, frames(rng.randrange(256)), random_meta(rng, id_))
        assert_select_matches(ds, f"writes {round_}")

    subprocess.run([cli, "compact", path, "--quiet"], check=True, capture_output=True)
    assert_select_matches(ds, "compacted")

    # Merge: a shard inside the dataset is attached, one elsewhere copied;
    # both replace ids the dataset has.
    for shard, prefix in ((os.path.join(path, "shard_a"), "a"), (str(tmp_path / "b"), "b")):
        with gulpdb.Dataset(shard, "x") as s, s.writer() as w:
            for i in range(10):
                id_ = f"v{i}" if i < 3 and prefix == "a" else f"{prefix}{i}"
                w.append(id_, frames(i), random_meta(rng, id_))
    subprocess.run(
        [cli, "merge", path, os.path.join(path, "shard_a"), str(tmp_path / "b"),
         "--on-duplicate", "replace", "--quiet"],
        check=True, capture_output=True,
    )
    assert_select_matches(ds, "merged")
    assert gulpdb.check(path)["healthy"]

    assert ds.drop_meta_index("label") is True
    assert ds.meta_indexes() == []
    assert_select_matches(ds, "index dropped")


def test_select_arguments(tmp_path):
    ds = gulpdb.Dataset(str(tmp_path / "ds"), "x")
    with ds.writer() as w:
        w.append("a", frames(1), {"n": 2, "s": "x", "arr": [1, 2]})
        w.append("b", frames(2), {"n": 2.5})
    assert ds.select(n=np.int64(2)) == ["a"]
    assert ds.select(n=np.float32(2.5)) == ["b"]
    assert ds.select(arr=np.array([1, 2])) == ["a"]
    assert ds.select(arr=(1, 2)) == ["a"]  # a tuple is a JSON list
    assert ds.select(**{"n": 2, "s": "x"}) == ["a"]
    for bad in ({1, 2}, object(), b"x", np.zeros((2, 2))):
        with pytest.raises(TypeError, match="select"):
            ds.select(n=bad)
    ro = gulpdb.Dataset(str(tmp_path / "ds"))
    with pytest.raises(ValueError, match="read-only"):
        ro.create_meta_index("n")
    with pytest.raises(ValueError):
        ds.create_meta_index("")
    with ds.writer():
        with pytest.raises(gulpdb.BusyError):
            ds.create_meta_index("n")


def test_splits_are_all_or_nothing_and_follow_removals(tmp_path):
    ds = gulpdb.Dataset(str(tmp_path / "ds"), "x", videos_per_chunk=3)
    with ds.writer() as w:
        for i in range(8):
            w.append(i, frames(i), {"label": i % 2})
    assert ds.splits() == {}
    with ds.writer() as w:
        w.set_split("train", [5, "1", 7, 0])
        w.set_split("val", ds.select(label=1))
        with pytest.raises(KeyError, match=r"2 ids are not in the dataset: 'ghost', 'zz'"):
            w.set_split("bad", ["2", "ghost", "zz"])
        with pytest.raises(ValueError, match="more than once"):
            w.set_split("dup", ["2", "2"])
        with pytest.raises(TypeError):
            w.set_split("str", "12")
    assert ds.splits() == {"train": 4, "val": 4}
    assert ds.split("train") == ["5", "1", "7", "0"]
    with pytest.raises(KeyError, match="known splits: train, val"):
        ds.split("bad")
    ds.remove(["1", "3"])
    assert ds.split("train") == ["5", "7", "0"]
    assert ds.split("val") == ["5", "7"]
    assert ds.splits() == {"train": 3, "val": 2}
    with ds.writer() as w:
        assert w.remove_split("val") is True
        assert w.remove_split("nope") is False
    assert ds.splits() == {"train": 3}
    with ds.writer() as w:
        w.set_split("train", ["2"])  # replaces the split of that name
    assert ds.split("train") == ["2"]
    # A rolled-back batch changes no split.
    with pytest.raises(RuntimeError):
        with ds.writer() as w:
            w.set_split("train", ["4"])
            raise RuntimeError("roll back")
    assert ds.split("train") == ["2"]
    assert gulpdb.check(ds.path)["healthy"]


def read_like_gulpio2(directory: str) -> Dict[str, List[bytes]]:
    """What GulpIO2's reader does: pair meta_*.gmeta with data_*.gulp, nothing else."""
    metas = sorted(glob.glob(os.path.join(directory, "meta_*.gmeta")))
    datas = sorted(glob.glob(os.path.join(directory, "data_*.gulp")))
    assert len(metas) == len(datas)  # gulpio2's sanity check on the directory
    out: Dict[str, List[bytes]] = {}
    for meta_path in metas:
        data_path = meta_path.replace("meta_", "data_").replace(".gmeta", ".gulp")
        with open(meta_path) as f:
            meta = json.load(f)
        with open(data_path, "rb") as f:
            data = f.read()
        for id_, entry in meta.items():
            out[id_] = [data[o : o + length - pad] for o, pad, length in entry["frame_info"]]
    return out


def test_splits_survive_export_and_import(tmp_path):
    path = str(tmp_path / "ds")
    ds = gulpdb.Dataset(path, "x", videos_per_chunk=3)
    with ds.writer() as w:
        for i in range(7):
            w.append(f"v{i}", frames(i), {"label": i % 2})
        w.set_split("train", ["v6", "v0", "v3"])
        w.set_split("\u00e9val", ["v1"])
    out = str(tmp_path / "exported")
    os.makedirs(out)
    report = gulpdb.export_gmeta(ds, out)
    assert report["splits"] == 2
    for data in glob.glob(os.path.join(path, "data_*.gulp")):
        shutil.copy(data, out)
    # GulpIO2's way of reading the directory ignores gulpdb_splits.json.
    assert os.path.exists(os.path.join(out, "gulpdb_splits.json"))
    assert read_like_gulpio2(out) == {i: ds.read_jpegs(i) for i in ds.ids()}
    imported = gulpdb.import_gulpio(out, meta_index_keys=["label"])
    assert imported["splits"] == 2
    back = gulpdb.Dataset(out)
    assert back.splits() == {"train": 3, "\u00e9val": 1}
    assert back.split("train") == ["v6", "v0", "v3"]
    assert back.meta_indexes() == ["label"]
    assert back.select(label=1) == reference(back, label=1)


def test_torch_datasets_take_a_split(tmp_path):
    torch_module = pytest.importorskip("gulpdb.torch")
    ds = gulpdb.Dataset(str(tmp_path / "ds"), "x")
    with ds.writer() as w:
        for i in range(6):
            w.append(f"v{i}", np.full((2, 8, 8, 3), i * 40, np.uint8), {"label": i})
        w.set_split("train", ["v4", "v1", "v2"])
    videos = torch_module.VideoDataset(ds.path, split="train", label="label")
    assert videos.ids == ["v4", "v1", "v2"]
    assert [videos[k][1] for k in range(len(videos))] == [4, 1, 2]
    images = torch_module.ImageDataset(ds, split="train", label="label")
    assert images.ids == ["v4", "v1", "v2"]
    iterable = torch_module.IterableVideoDataset(ds, split="train", return_id=True)
    assert [id_ for id_, _ in iterable] == ["v4", "v1", "v2"]
    with pytest.raises(ValueError, match="not both"):
        torch_module.VideoDataset(ds, ids=["v1"], split="train")
    with pytest.raises(KeyError, match="known splits: train"):
        torch_module.VideoDataset(ds, split="test")


def test_a_query_or_index_over_a_key_no_video_has_says_so(tmp_path):
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "x") as ds:
        with ds.writer() as w:
            for i in range(5):
                w.append(f"v{i}", [np.zeros((8, 8, 3), np.uint8)],
                         {"id": f"v{i}", "label": "pattern", "idx": i % 2})
        # The key exists: an empty answer is a plain answer.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert ds.select(label="nothing") == []
            assert ds.select(idx=1) == ["v1", "v3"]
        # Something-something's "template" is stored as GulpIO's "label".
        with pytest.warns(UserWarning, match=r"no video's meta has the key 'template' .*'label'"):
            assert ds.select(template="pattern") == []
        with pytest.warns(UserWarning, match="'templat'"):
            assert ds.select(templat="x", idx=1) == []
        with pytest.warns(UserWarning, match="create_meta_index .* key 'template'"):
            assert ds.create_meta_index("template")
        with pytest.warns(UserWarning, match="key 'template'"):  # now from the index
            assert ds.select(template="pattern") == []
        assert ds.native.absent_meta_keys(["template", "label", "idx", "x"]) == ["template", "x"]
        ds.create_meta_index("label")
        assert ds.native.absent_meta_keys(["label"]) == []


def test_the_command_line_says_so_too(tmp_path):
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "x") as ds:
        with ds.writer() as w:
            for i in range(3):
                w.append(f"v{i}", [np.zeros((8, 8, 3), np.uint8)],
                         {"id": f"v{i}", "label": "pattern", "idx": i})

    def cli(*args):
        return subprocess.run([GULPDB_CLI, *args], capture_output=True, text=True, timeout=60)

    ls = cli("ls", path, "--where", "template=pattern")
    assert ls.returncode == 0 and ls.stdout == ""
    assert "gulpdb ls: warning: no video's meta has the key 'template'" in ls.stderr
    assert '"label": "pattern"' in ls.stderr  # the first video's meta shows what there is
    quiet = cli("ls", path, "--where", "label=other")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    index = cli("index", path, "--meta-key", "template")
    assert index.returncode == 0 and "gulpdb index: warning: no video's meta has the key" in (
        index.stderr
    )
    split = cli("split", path, "holdout", "--where", "label=3")
    assert split.returncode == 1
    assert "set split 'holdout'" in split.stderr and "no video matches label=3" in split.stderr
    assert "nothing was changed" in split.stderr
    absent = cli("split", path, "holdout", "--where", "template=pattern")
    assert absent.returncode == 1 and "no video's meta has the key 'template'" in absent.stderr
    assert gulpdb.Dataset(path).splits() == {}
    made = cli("split", path, "holdout", "--where", "idx=2")
    assert made.returncode == 0 and gulpdb.Dataset(path).split("holdout") == ["v2"]
