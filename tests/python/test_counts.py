"""Counts and sizes given to the Python API never wrap around or pass silently:
a negative or zero count where zero means nothing is a ValueError naming the
setting, a non-integer a TypeError (the CLI's rule, exit 2, in Python terms)."""

from __future__ import annotations

import numpy as np
import pytest

import gulpdb
import gulpdb.torch
from conftest import synthetic_frames

BAD_DATASET_SETTINGS = [
    ("videos_per_chunk", -5, ValueError),
    ("videos_per_chunk", 0, ValueError),
    ("videos_per_chunk", 2**32, ValueError),
    ("bytes_per_chunk", -1, ValueError),
    ("decode_threads", -1, ValueError),
    ("max_open_chunk_files", -2, ValueError),
    ("videos_per_chunk", 2.5, TypeError),
    ("decode_threads", "4", TypeError),
    ("videos_per_chunk", True, TypeError),
]


@pytest.mark.parametrize("name,value,error", BAD_DATASET_SETTINGS)
def test_dataset_settings_are_checked(tmp_path, name, value, error):
    path = tmp_path / "ds"
    with pytest.raises(error, match=name):
        gulpdb.Dataset(path, "x", **{name: value})
    assert not path.exists() or not gulpdb.Dataset.exists(str(path))


def test_numpy_integers_are_counts(tmp_path):
    with gulpdb.Dataset(tmp_path / "ds", "x", videos_per_chunk=np.int64(3)) as ds:
        assert ds.stats().videos_per_chunk == 3


def test_the_thread_cap_is_the_engines():
    """Python checks decode and encode threads against the engine's cap, and
    the engine itself refuses more (a caller of the native module too)."""
    assert gulpdb._gulpdb.MAX_THREADS == 1024


@pytest.mark.parametrize("value,error", [(-1, ValueError), (1.5, TypeError), (2000, ValueError)])
def test_writer_encode_threads_are_checked(tmp_path, value, error):
    with gulpdb.Dataset(tmp_path / "ds", "x") as ds:
        with pytest.raises(error, match="encode_threads"):
            ds.writer(encode_threads=value)


@pytest.mark.parametrize(
    "kwargs,error",
    [
        (dict(stride=-1), ValueError),
        (dict(stride=0), ValueError),
        (dict(num_frames=-2, sampling="clip"), ValueError),
        (dict(num_frames=0, sampling="segments"), ValueError),
        (dict(num_frames=2.0, sampling="clip"), TypeError),
        (dict(decode_threads=-3), ValueError),
    ],
)
def test_video_dataset_counts_are_checked_when_it_is_made(tmp_path, kwargs, error):
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        w.append("a", synthetic_frames(1, 4))
    name = next(k for k in kwargs if k != "sampling")
    with pytest.raises(error, match=name):
        gulpdb.torch.VideoDataset(path, **kwargs)


@pytest.mark.parametrize("value", [2**70, 2**64, 2**63])
def test_a_generation_beyond_any_published_one_is_named_with_its_range(value):
    # Checked before any request: no server is needed to refuse it.
    with pytest.raises(ValueError) as e:
        gulpdb.Dataset("s3://some-bucket/ssv2", generation=value)
    message = str(e.value)
    assert "generation" in message and "1 to 9223372036854775807" in message, message
    assert str(value) in message and "at least" not in message
    with pytest.raises(ValueError, match=r"generation .* must be at least 1, not 0|1 to"):
        gulpdb.Dataset("s3://some-bucket/ssv2", generation=0)
    with pytest.raises(TypeError, match="generation"):
        gulpdb.Dataset("s3://some-bucket/ssv2", generation=2.0)
