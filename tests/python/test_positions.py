"""Positional ids (Dataset.id_at, ids_at, order_blocks): the id at every position
of a local dataset after removals, and the blocks of its order."""

from __future__ import annotations

import pytest

import gulpdb
from conftest import synthetic_frames


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
        assert len(ids) == len(ds) == 2100 - 420 - 5  # 15 and 20 are multiples of 5
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
