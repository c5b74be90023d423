"""Positional ids (Dataset.id_at, ids_at, order_blocks) and VideoDataset reading its
ids by position, lazily, instead of loading every id when it is made."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gulpdb
import gulpdb.torch as gt
from conftest import synthetic_frames
from torch.utils.data import DataLoader


def _make(path: str, videos: int) -> None:
    frame = synthetic_frames(0, 1, 8, 8)
    with gulpdb.Dataset(path, "x", videos_per_chunk=7) as ds:
        with ds.writer() as w:
            for i in range(videos):
                w.append(f"v{i:05d}", frame, {"i": i})


def test_positions_follow_ids(tmp_path):
    path = str(tmp_path / "d")
    _make(path, 2100)
    with gulpdb.Dataset(path, "a") as ds:
        ds.remove([f"v{i:05d}" for i in range(0, 2100, 5)] + [f"v{i:05d}" for i in range(14, 21)])
    with gulpdb.Dataset(path) as ds:
        ids = ds.ids()
        assert len(ids) == len(ds) == 2100 - 420 - 6
        assert [ds.id_at(i) for i in range(len(ids))] == ids
        with pytest.raises(IndexError):
            ds.id_at(len(ids))
        assert ds.ids_at(0, len(ids)) == ids
        assert ds.ids_at(100, 50) == ids[100:150]
        assert ds.ids_at(len(ids) - 2, 10) == ids[-2:]
        assert ds.ids_at(len(ids), 10) == []
        assert ds.order_blocks() == [0]
    _make(str(tmp_path / "big"), 4500)
    with gulpdb.Dataset(str(tmp_path / "big")) as ds:
        assert ds.order_blocks() == [0, 2048, 4096]


def test_video_dataset_reads_ids_by_position_not_all_at_once(small_dataset, monkeypatch):
    def no_ids(self):
        raise AssertionError("VideoDataset loaded every id")

    monkeypatch.setattr(gulpdb.Dataset, "ids", no_ids)
    calls = []
    real_ids_at = gulpdb.Dataset.ids_at

    def counted_ids_at(self, start, count):
        calls.append((start, count))
        return real_ids_at(self, start, count)

    monkeypatch.setattr(gulpdb.Dataset, "ids_at", counted_ids_at)
    ds = gt.VideoDataset(small_dataset.path, label="idx")
    assert calls == [] and len(ds) == 12
    for i in (3, 0, 11, -1, 7):
        clip, _ = ds[i]
        want = small_dataset.ids[i]
        assert np.array_equal(clip.numpy(), small_dataset.decoded[want])
    assert len(calls) == 1  # one block held every id asked for
    assert ds.ids == small_dataset.ids
    with pytest.raises(IndexError):
        ds[12]
    images = gt.ImageDataset(small_dataset.path)
    assert len(images) == 12 and images.ids == small_dataset.ids
    # Pickled (as DataLoader workers under spawn get it): the ids still read lazily.
    copy = pickle.loads(pickle.dumps(ds))
    assert np.array_equal(copy[5][0].numpy(), small_dataset.decoded[small_dataset.ids[5]])
    loader = DataLoader(ds, batch_size=4, num_workers=2)
    labels = [int(x) for _, batch in loader for x in batch]
    assert labels == [i % 3 for i in range(12)]


def test_lazy_ids_span_several_blocks(tmp_path, monkeypatch):
    path = str(tmp_path / "d")
    _make(path, 50)
    monkeypatch.setattr(gt._LazyIds, "BLOCK", 8)
    monkeypatch.setattr(gt._LazyIds, "MAX_BLOCKS", 2)
    ds = gt.VideoDataset(path, label="i")
    got = [ds[i][1] for i in list(range(50)) + list(range(49, -1, -3))]
    assert got == list(range(50)) + list(range(49, -1, -3))
    assert len(ds._reader.ids._blocks) <= 2
