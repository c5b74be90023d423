"""Meta that json cannot encode as it is, creation settings given to an
existing dataset, and an index file that lost its databases."""

from __future__ import annotations

import os
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import gulpdb
from conftest import synthetic_frames


def _stored(tmp_path, meta, id_="v"):
    path = str(tmp_path / "meta")
    with gulpdb.Dataset(path, "a") as ds:
        with ds.writer() as w:
            w.append(id_, synthetic_frames(0, 1), meta)
        return ds.meta(id_), ds.info(id_).meta_data


def test_numpy_values_in_meta_are_stored_as_the_python_values_they_hold(tmp_path):
    meta = {
        "label": np.int64(3),
        "score": np.float32(0.5),
        "double": np.float64(0.1),
        "flag": np.bool_(True),
        "name": np.str_("cat"),
        "zero_d": np.array(7, dtype=np.uint16),
        "vector": np.array([1.5, 2.5], dtype=np.float32),
        "ints": np.arange(3, dtype=np.int8),
        "nested": {"a": [np.int32(1), {"b": np.array([True, False])}], np.int64(2): "two"},
        "tuple": (np.uint8(4), "x"),
        "plain": [1, "s", None, 2.25],
    }
    meta_back, text = _stored(tmp_path, meta)
    assert meta_back == {
        "label": 3,
        "score": 0.5,
        "double": 0.1,
        "flag": True,
        "name": "cat",
        "zero_d": 7,
        "vector": [1.5, 2.5],
        "ints": [0, 1, 2],
        "nested": {"a": [1, {"b": [True, False]}], "2": "two"},
        "tuple": [4, "x"],
        "plain": [1, "s", None, 2.25],
    }
    assert type(meta_back["label"]) is int and type(meta_back["flag"]) is bool
    # Stored as json.dumps writes the converted values.
    assert text.startswith('[{"label": 3, "score": 0.5, "double": 0.1, "flag": true, ')


def test_meta_without_numpy_is_stored_as_json_dumps_writes_it(tmp_path):
    meta = OrderedDict([("z", 1), ("a", float("nan")), ("big", 2**70), ("é", "✓")])
    meta_back, text = _stored(tmp_path, meta)
    assert text == '[{"z": 1, "a": NaN, "big": 1180591620717411303424, "\\u00e9": "\\u2713"}]'
    assert list(meta_back) == ["z", "a", "big", "é"] and meta_back["big"] == 2**70


@pytest.mark.parametrize(
    "meta, path, what",
    [
        ({"a": {"b": [0, 1, {1, 2}]}}, "meta['a']['b'][2]", "builtins.set"),
        ({"when": np.datetime64("2020-01-01")}, "meta['when']", "numpy.datetime64"),
        ({"c": np.complex64(1j)}, "meta['c']", "numpy.complex64"),
        ({"m": np.zeros((2, 2))}, "meta['m']", "2-D array"),
        ({"k": {(1, 2): "tuple key"}}, "meta['k'][(1, 2)]", "a key of type tuple"),
        ({"o": [object()]}, "meta['o'][0]", "builtins.object"),
        ({"b": b"bytes"}, "meta['b']", "builtins.bytes"),
    ],
)
def test_meta_json_cannot_hold_names_the_id_and_the_key_path(tmp_path, meta, path, what):
    path_ = str(tmp_path / "bad_meta")
    with gulpdb.Dataset(path_, "x") as ds:
        with ds.writer() as w:
            with pytest.raises(TypeError) as info:
                w.append(42, synthetic_frames(0, 1), meta)
            message = str(info.value)
            assert "video 42" in message and path in message and what in message, message
            w.append("ok", synthetic_frames(0, 1), {"fine": 1})
        assert ds.ids() == ["ok"]


def test_meta_that_contains_itself_is_a_clear_error(tmp_path):
    meta = {"a": []}
    meta["a"].append(meta)
    with gulpdb.Dataset(str(tmp_path / "loop"), "x") as ds, ds.writer() as w:
        with pytest.raises(ValueError, match=r"contains itself at meta\['a'\]\[0\]"):
            w.append("v", synthetic_frames(0, 1), meta)


def test_settings_given_to_an_existing_dataset_warn_that_they_are_ignored(tmp_path):
    path = str(tmp_path / "settings")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gulpdb.Dataset(path, "x", videos_per_chunk=7, bytes_per_chunk=1000, checksums=False).close()
        gulpdb.Dataset(path, "a").close()  # nothing given: nothing to say
        gulpdb.Dataset(path, "a", videos_per_chunk=7, checksums=False).close()  # the same
    with pytest.warns(UserWarning) as record:
        ds = gulpdb.Dataset(path, "a", videos_per_chunk=50, bytes_per_chunk=0, checksums=True)
    messages = [str(w.message) for w in record]
    assert len(messages) == 3, messages
    assert "videos_per_chunk=50 is ignored" in messages[0] and "videos_per_chunk=7" in messages[0]
    assert "bytes_per_chunk=0 is ignored" in messages[1] and "bytes_per_chunk=1000" in messages[1]
    assert "checksums=True is ignored" in messages[2] and "checksums=False" in messages[2]
    assert record[0].filename == __file__  # points at the caller
    stats = ds.stats()
    assert (stats.videos_per_chunk, stats.bytes_per_chunk, stats.checksums) == (7, 1000, False)
    ds.close()
    with pytest.warns(UserWarning, match="videos_per_chunk=3 is ignored"):
        gulpdb.Dataset(path, "r", videos_per_chunk=3).close()


def test_index_file_without_its_databases_is_a_corruption_error(small_dataset):
    data = os.path.join(small_dataset.path, "gulpdb.index", "data.mdb")
    with open(data, "rb") as f:
        damaged = f.read().replace(b"videos", b"vidzos")  # the main database's record of it
    with open(data, "wb") as f:
        f.write(damaged)
    for mode in ("r", "r+"):
        with pytest.raises(gulpdb.CorruptionError, match="gulpdb check") as info:
            gulpdb.Dataset(small_dataset.path, mode)
        assert not isinstance(info.value, FileNotFoundError)
    with open(data, "rb") as f:
        assert f.read() == damaged  # opening read-write created nothing
