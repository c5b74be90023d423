"""Ids and frame indices at the edges: a str where ids are expected, integer
ids, ids of other types, ids the index cannot hold, frame indices beyond
64 bits. Each case gets a clear error or the right answer, never a wrong
answer or an internal message."""

from __future__ import annotations

import numpy as np
import pytest

import gulpdb
from conftest import synthetic_frames


@pytest.fixture
def numbered(tmp_path):
    """A dataset with videos "0".."12" (a few frames each) and "x"."""
    path = str(tmp_path / "numbered")
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        for i in range(13):
            w.append(str(i), synthetic_frames(i, 3 + i % 3), {"n": i})
        w.append("x", synthetic_frames(99, 2), {"n": "x"})
    return path


def _ids(path):
    with gulpdb.Dataset(path) as ds:
        return set(ds.ids())


# ---- a str where a collection of ids is expected -----------------------------------


def test_remove_refuses_a_bare_string(numbered):
    before = _ids(numbered)
    with gulpdb.Dataset(numbered, "r+") as ds:
        for bad in ("12", b"12", bytearray(b"12")):
            with pytest.raises(TypeError, match=r"not a single .*pass \[.*12.*\] for one id"):
                ds.remove(bad)
        with pytest.raises(TypeError, match="pass"):
            ds.native.remove("12")
    assert _ids(numbered) == before  # "1" and "2" are still there
    with gulpdb.Dataset(numbered, "r+") as ds:
        assert ds.remove(["12"]) == 1
        assert ds.remove(("1", 2)) == 2  # any iterable; ints are ids too
        assert ds.remove(i for i in ["3", "nope"]) == 1
    assert _ids(numbered) == before - {"12", "1", "2", "3"}


def test_batch_reads_refuse_a_bare_string(numbered):
    with gulpdb.Dataset(numbered) as ds:
        for call in (ds.read_batch, ds.read_jpeg_batch):
            with pytest.raises(TypeError, match=r"pass \['12'\] for one video"):
                call("12")
            with pytest.raises(TypeError, match="pass"):
                call(b"12")
        with pytest.raises(TypeError, match=r"ids must be a collection.*pass \['12'\]"):
            ds.native.read_batch("12")
        with pytest.raises(TypeError, match="frames must be None or a list"):
            ds.native.read_batch(["12"], "0:2")
        assert [len(f) for f in ds.read_batch(["12"])] == [3]
        assert [len(f) for f in ds.read_jpeg_batch([12, ("1", [0])])] == [3, 1]


def test_chunk_iteration_refuses_a_bare_string_of_accepted_ids(numbered):
    gd = gulpdb.GulpDirectory(numbered)
    (chunk,) = list(gd)
    with pytest.raises(TypeError, match="accepted_ids"):
        list(chunk.iter_all(accepted_ids="12"))
    assert [meta["n"] for _, meta in chunk.iter_all(accepted_ids=["12", 1])] == [1, 12]


# ---- integer ids and ids of other types ---------------------------------------------


def test_integer_ids_stand_for_their_decimal_string(tmp_path):
    path = str(tmp_path / "ints")
    with gulpdb.Dataset(path, "x") as ds:
        with ds.writer() as w:
            assert w.append(5, synthetic_frames(5, 2), {"n": 5})
            assert w.append(np.int64(7), synthetic_frames(7, 3))
            assert w.remove(np.uint8(7))
            assert w.append(np.int32(7), synthetic_frames(7, 4))
    with gulpdb.Dataset(path, "r+") as ds:
        assert ds.ids() == ["5", "7"]
        assert 5 in ds and np.int16(7) in ds and 6 not in ds
        assert ds.frame_count(7) == 4 and ds.meta(5) == {"n": 5} and ds.meta_data(5) == [{"n": 5}]
        assert ds.info(5).id == "5"
        assert np.array_equal(ds.read(5), ds.read("5"))
        assert np.array_equal(ds[7, 0:2], ds["7", 0:2])
        assert ds.read_jpegs(5, [1]) == ds.read_jpegs("5", [1])
        assert ds.native.find(5).id == "5"
        assert ds.remove([5]) == 1 and "5" not in ds


@pytest.mark.parametrize("bad", [1.0, None, object(), True, np.bool_(False), b"5", [5]])
def test_other_id_types_are_type_errors_naming_the_accepted_types(numbered, bad):
    ds = gulpdb.Dataset(numbered, "r+")
    calls = [
        lambda: ds.read(bad),
        lambda: ds.read_jpegs(bad),
        lambda: ds.meta(bad),
        lambda: ds.info(bad),
        lambda: ds.frame_count(bad),
        lambda: bad in ds,
        lambda: ds.native.find(bad),
        lambda: ds.read_batch([bad]),
        lambda: ds.remove([bad]),
    ]
    with ds.writer() as w:
        calls += [lambda: w.append(bad, synthetic_frames(0, 1)), lambda: w.remove(bad)]
        for call in calls:
            with pytest.raises(TypeError) as info:
                call()
            message = str(info.value)
            assert "str" in message and "int" in message, message
            assert "incompatible function arguments" not in message
            assert "Invoked with" not in message
    ds.close()


# ---- ids the index cannot hold --------------------------------------------------------


@pytest.mark.parametrize("id_", ["", "k" * 512, "k" * 4096])
def test_ids_the_index_cannot_hold_are_absent(numbered, id_):
    with gulpdb.Dataset(numbered, "r+") as ds:
        assert id_ not in ds
        assert ds.native.find(id_) is None
        for call in (ds.read, ds.read_jpegs, ds.meta, ds.info, ds.frame_count):
            with pytest.raises(KeyError) as info:
                call(id_)
            assert "MDB_" not in str(info.value)
        with pytest.raises(KeyError):
            ds.read_batch(["x", id_])
        assert ds.remove([id_]) == 0
        assert ds.remove([id_, "x"]) == 1
        with ds.writer() as w:
            assert not w.remove(id_)
            with pytest.raises(ValueError, match="empty|longer than"):  # a clear refusal
                w.append(id_, synthetic_frames(0, 1))
    gd = gulpdb.GulpDirectory(numbered)
    assert id_ not in gd and id_ not in gd.merged_meta_dict
    with pytest.raises(KeyError):
        gd[id_]


# ---- frame indices beyond 64 bits ---------------------------------------------------------


@pytest.mark.parametrize(
    "frames, shown",
    [
        ([2**63], str(2**63)),
        ([0, 2**64], str(2**64)),
        ([-(2**63) - 1], str(-(2**63) - 1)),
        (2**70, str(2**70)),
        (np.array([1, 2**64 - 1], dtype=np.uint64), str(2**64 - 1)),
        (np.uint64(2**63), str(2**63)),
        (np.array(2**63, dtype=np.uint64), str(2**63)),
    ],
)
def test_huge_frame_indices_are_index_errors_naming_id_and_index(numbered, frames, shown):
    with gulpdb.Dataset(numbered) as ds:
        for call in (
            lambda: ds.read("x", frames),
            lambda: ds.read_jpegs("x", frames),
            lambda: ds.read_batch([("x", frames)]),
            lambda: ds.read_jpeg_batch(["x"], frames),
        ):
            with pytest.raises(IndexError) as info:
                call()
            message = str(info.value)
            assert "of x:" in message and shown in message and "2 frames" in message, message
        with pytest.raises(KeyError):  # a missing id is still a KeyError first
            ds.read("nope", frames)


def test_slices_with_huge_bounds_select_what_python_selects(numbered):
    big = 2**70
    slices = [
        slice(0, big),
        slice(-big, None),
        slice(-big, big, 2),
        slice(big, None),
        slice(big, None, -1),
        slice(None, -big, -1),
        slice(None, None, big),
        slice(None, None, -big),
        slice(1, big, big),
        slice(2**63, -(2**63) - 1, -(2**63) - 1),
    ]
    with gulpdb.Dataset(numbered) as ds:
        everything = ds.read("5")  # 5 frames
        jpegs = ds.read_jpegs("5")
        for s in slices:
            expected = np.arange(5)[s]
            got = ds.read("5", s)
            assert got.shape[0] == len(expected), s
            if len(expected):
                assert np.array_equal(got, everything[expected]), s
            assert ds.read_jpegs("5", s) == [jpegs[i] for i in expected], s
