"""gulpdb.Dataset and gulpdb.Writer: opening, lookups, reads, writes, zero copy."""

from __future__ import annotations

import gc
import json
import math
import os
import pickle

import numpy as np
import pytest

import gulpdb
from conftest import synthetic_frames


# ---- opening --------------------------------------------------------------------


def test_modes_create_open_and_refuse(tmp_path):
    path = str(tmp_path / "ds")
    with pytest.raises(FileNotFoundError):
        gulpdb.Dataset(path)
    with pytest.raises(FileNotFoundError):
        gulpdb.Dataset(path, "r+")
    with gulpdb.Dataset(path, "x") as ds:
        assert len(ds) == 0 and not ds.read_only
    assert gulpdb.Dataset.exists(path)
    with pytest.raises(FileExistsError):
        gulpdb.Dataset(path, "x")
    with gulpdb.Dataset(path, "a") as ds:  # opens the existing one
        assert ds.mode == "a"
    with pytest.raises(ValueError):
        gulpdb.Dataset(path, "w")
    ds = gulpdb.Dataset(path)
    assert ds.read_only
    with pytest.raises(ValueError, match="read-only"):
        ds.writer()


def test_close_and_context_manager(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    assert "videos=12" in repr(ds)
    with ds:
        assert len(ds) == 12
    assert ds.closed and "closed" in repr(ds)
    with pytest.raises(ValueError, match="closed"):
        len(ds)


# ---- lookups --------------------------------------------------------------------


def test_len_contains_ids_iteration(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    assert len(ds) == 12
    assert "video_3" in ds and "nope" not in ds and 3 not in ds
    assert ds.ids() == small_dataset.ids  # (chunk, insertion) order
    assert list(ds) == small_dataset.ids
    assert [c.number for c in ds.chunks()] == [0, 1, 2]
    assert [c.live_videos for c in ds.chunks()] == [4, 4, 4]
    stats = ds.stats()
    assert (stats.videos, stats.frames, stats.chunks) == (12, 72, 3)
    assert stats.videos_per_chunk == 4 and stats.checksums


def test_meta_frame_count_and_info(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    assert ds.meta("video_5") == small_dataset.meta["video_5"]
    assert ds.meta_data("video_5") == [small_dataset.meta["video_5"]]
    assert ds.frame_count("video_5") == 6
    info = ds.info("video_5")
    assert info.id == "video_5" and info.chunk == 1 and info.frame_count == 6
    assert len(info.frame_info) == 6 and len(info.checksums) == 6
    offset, pad, length = info.frame_info[1]
    assert offset == info.frame_info[0][0] + info.frame_info[0][2]
    assert (length - pad) == len(ds.read_jpegs("video_5", [1])[0])
    assert json.loads(info.meta_data) == [small_dataset.meta["video_5"]]
    assert "video_5" in repr(info)


def test_meta_keeps_big_ints_nan_infinity_and_unicode(tmp_path):
    meta = {
        "big": 2**70 + 1,
        "neg_big": -(2**65),
        "nan": math.nan,
        "inf": math.inf,
        "ninf": -math.inf,
        "text": "ü✓😀",
        "nested": {"a": [1, 2.5, None, True]},
    }
    with gulpdb.Dataset(str(tmp_path / "ds"), "x") as ds, ds.writer() as w:
        w.append("ïd😀", synthetic_frames(0, 1), meta)
    back = gulpdb.Dataset(str(tmp_path / "ds")).meta("ïd😀")
    assert back["big"] == 2**70 + 1 and back["neg_big"] == -(2**65)
    assert math.isnan(back["nan"]) and back["inf"] == math.inf and back["ninf"] == -math.inf
    assert back["text"] == "ü✓😀" and back["nested"] == meta["nested"]
    # Stored as Python's json.dumps writes it (ensure_ascii, default separators).
    raw = gulpdb.Dataset(str(tmp_path / "ds")).info("ïd😀").meta_data
    assert raw == "[" + json.dumps(meta) + "]"


# ---- reads --------------------------------------------------------------------------


def test_read_all_frames(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    frames = ds.read("video_2")
    assert frames.shape == (6, 24, 32, 3) and frames.dtype == np.uint8
    # Lossy but close to what was written.
    diff = np.abs(frames.astype(int) - small_dataset.frames["video_2"].astype(int))
    assert diff.mean() < 4
    assert np.array_equal(ds["video_2"], frames)


@pytest.mark.parametrize(
    "selection, expected",
    [
        (slice(1, 5, 2), [1, 3]),
        (slice(None, None, -2), [5, 3, 1]),
        (slice(-2, None), [4, 5]),
        (slice(10, 20), []),
        ([5, 0, 0, -1], [5, 0, 0, 5]),
        ((1, 2), [1, 2]),
        (range(0, 6, 3), [0, 3]),
        (np.array([4, 1], dtype=np.int64), [4, 1]),
        (np.array([2], dtype=np.uint8), [2]),
        (np.int32(3), [3]),
        (4, [4]),
        ("1:6:2", [1, 3, 5]),
        ("0,5", [0, 5]),
        ("all", [0, 1, 2, 3, 4, 5]),
        (None, [0, 1, 2, 3, 4, 5]),
    ],
)
def test_read_selection_forms(small_dataset, selection, expected):
    ds = gulpdb.Dataset(small_dataset.path)
    reference = small_dataset.decoded["video_7"]
    frames = ds.read("video_7", selection)
    if expected:
        assert np.array_equal(frames, reference[expected])
    else:
        assert frames.shape == (0, 0, 0, 3)
    assert np.array_equal(ds["video_7", selection], frames)
    jpegs = ds.read_jpegs("video_7", selection)
    assert len(jpegs) == len(expected)
    for jpeg, index in zip(jpegs, expected):
        assert np.array_equal(gulpdb.decode_jpeg(jpeg), reference[index])


def test_read_selection_type_errors(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    with pytest.raises(TypeError):
        ds.read("video_0", np.array([0.5]))
    with pytest.raises(TypeError, match="flatnonzero"):
        ds.read("video_0", np.array([True, False]))
    with pytest.raises(TypeError):
        ds.read("video_0", 1.5)
    with pytest.raises(TypeError):
        ds.read("video_0", ["a"])
    with pytest.raises(ValueError):
        ds.read("video_0", np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError):
        ds.read("video_0", "1:2:3:4")


def test_decode_options(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    rgb = ds.read("video_1", [0])
    bgr = ds.read("video_1", [0], colorspace="bgr")
    assert np.array_equal(bgr, rgb[..., ::-1])
    gray = ds.read("video_1", [0], colorspace="gray")
    assert gray.shape == (1, 24, 32, 1)
    auto = ds.read("video_1", [0], colorspace="auto")  # colour JPEG: RGB
    assert np.array_equal(auto, rgb)
    accurate = ds.read("video_1", [0], dct="accurate")
    assert accurate.shape == rgb.shape and np.abs(accurate.astype(int) - rgb).max() < 16
    for d, shape in ((2, (12, 16)), (4, (6, 8)), (8, (3, 4))):
        assert ds.read("video_1", [0], downscale=d).shape == (1, *shape, 3)
    with pytest.raises(ValueError, match="downscale"):
        ds.read("video_1", downscale=3)
    with pytest.raises(ValueError, match="colorspace"):
        ds.read("video_1", colorspace="cmyk")
    with pytest.raises(ValueError, match="dct"):
        ds.read("video_1", dct="slow")


def test_grayscale_and_mixed_shapes(tmp_path):
    gray = np.arange(64, dtype=np.uint8).reshape(8, 8)
    colour = synthetic_frames(1, 1, 8, 8)[0]
    big = synthetic_frames(2, 1, 16, 8)[0]
    with gulpdb.Dataset(str(tmp_path / "ds"), "x") as ds:
        with ds.writer() as w:
            w.append("gray", [gray, gray])
            w.append("mixed", [colour, big, gray])
            w.append("stack_gray", np.stack([gray, gray, gray]))  # N×H×W
        # GulpIO2's convention: a grayscale JPEG comes back as H×W.
        assert ds.read("gray", colorspace="auto").shape == (2, 8, 8)
        assert ds.read("gray").shape == (2, 8, 8, 3)
        assert ds.read("gray", colorspace="gray").shape == (2, 8, 8, 1)
        assert ds.read("stack_gray", colorspace="auto").shape == (3, 8, 8)
        # Frames of different shapes: a list of arrays sharing one buffer.
        mixed = ds.read("mixed", colorspace="auto")
        assert isinstance(mixed, list)
        assert [f.shape for f in mixed] == [(8, 8, 3), (16, 8, 3), (8, 8)]
        assert mixed[0].base is mixed[1].base is mixed[2].base
        assert [f.shape for f in ds.read("gray", as_list=True)] == [(8, 8, 3), (8, 8, 3)]
        assert ds.read("gray", [], as_list=True) == []
        assert ds.read("gray", [], colorspace="gray").shape == (0, 0, 0, 1)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_read_is_zero_copy_and_frees_memory(tmp_path):
    frames = synthetic_frames(0, 16, 256, 256)  # 3 MiB decoded per read
    with gulpdb.Dataset(str(tmp_path / "ds"), "x") as ds, ds.writer() as w:
        w.append("big", frames)
    ds = gulpdb.Dataset(str(tmp_path / "ds"))
    clip = ds.read("big")
    assert not clip.flags["OWNDATA"] and clip.flags["C_CONTIGUOUS"]
    assert clip.flags["WRITEABLE"]
    assert type(clip.base).__name__ == "PyCapsule"
    reference = clip.copy()
    view = clip[2]
    del clip
    gc.collect()
    # The capsule keeps the buffer alive while any view of it lives.
    assert np.array_equal(view, reference[2])
    del view
    # ... and frees it with the last one: 200 reads (600 MiB) must not add up.
    # What keeps freed memory by design, and is bounded, fills first: the
    # engine's buffer pool (at most 128 MiB) and, under AddressSanitizer, its
    # quarantine of freed blocks.
    for _ in range(200 if "libasan" in os.environ.get("LD_PRELOAD", "") else 20):
        ds.read("big")
    before = _rss_bytes()
    for _ in range(200):
        clip = ds.read("big")
        del clip
    assert _rss_bytes() - before < 64 * 2**20


def test_read_batch(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    ids = small_dataset.ids[:5]
    out = ds.read_batch(ids)
    assert len(out) == 5
    for id_, frames in zip(ids, out):
        assert np.array_equal(frames, small_dataset.decoded[id_])
    out = ds.read_batch(ids, slice(0, 2))
    assert all(f.shape == (2, 24, 32, 3) for f in out)
    mixed = ds.read_batch([("video_1", [5]), "video_2", ("video_3", slice(None, None, -1))])
    assert np.array_equal(mixed[0], small_dataset.decoded["video_1"][[5]])
    assert np.array_equal(mixed[1], small_dataset.decoded["video_2"])
    assert np.array_equal(mixed[2], small_dataset.decoded["video_3"][::-1])
    assert ds.read_batch([]) == []
    jpegs = ds.read_jpeg_batch(["video_1", ("video_2", [0, 1])])
    assert [len(j) for j in jpegs] == [6, 2]
    with pytest.raises(KeyError):
        ds.read_batch(["video_1", "missing"])
    with pytest.raises(TypeError):
        ds.read_batch("video_1")


# ---- writes -----------------------------------------------------------------------


def test_writer_commits_on_exit_and_rolls_back_on_exception(tmp_path):
    path = str(tmp_path / "ds")
    ds = gulpdb.Dataset(path, "x")
    with ds.writer() as w:
        assert w.append("a", synthetic_frames(0, 2), {"n": 1})
        assert w.pending_videos == 1
        assert "pending_videos=1" in repr(w)
    assert w.closed and ds.ids() == ["a"]
    with pytest.raises(RuntimeError, match="boom"):
        with ds.writer() as w:
            w.append("b", synthetic_frames(1, 2))
            raise RuntimeError("boom")
    assert ds.ids() == ["a"]
    # Explicit batches: commit, then rollback.
    with ds.writer() as w:
        w.append("c", synthetic_frames(2, 1))
        w.commit()
        w.append("d", synthetic_frames(3, 1))
        w.rollback()
        assert w.remove("a") and not w.remove("zzz")
    assert ds.ids() == ["c"]
    with pytest.raises(ValueError, match="closed"):
        w.append("e", synthetic_frames(4, 1))


def test_append_jpeg_bytes_are_stored_verbatim(tmp_path):
    jpeg = gulpdb.encode_jpeg(synthetic_frames(5, 1)[0], quality=75)
    with gulpdb.Dataset(str(tmp_path / "ds"), "x") as ds:
        with ds.writer() as w:
            w.append("bytes", [jpeg, bytearray(jpeg), memoryview(jpeg)])
            w.append("mixed", [jpeg, synthetic_frames(6, 1)[0]])
        assert ds.read_jpegs("bytes") == [jpeg, jpeg, jpeg]
        stored = ds.read_jpegs("mixed")
        assert stored[0] == jpeg and stored[1] != jpeg
        # Arrays are encoded like GulpIO2 (quality 90, 4:4:4).
        assert stored[1] == gulpdb.encode_jpeg(synthetic_frames(6, 1)[0], 90, "444")


def test_append_rejects_bad_frames(tmp_path):
    with gulpdb.Dataset(str(tmp_path / "ds"), "x") as ds, ds.writer() as w:
        with pytest.raises(ValueError):
            w.append("x", [b"not a jpeg"])
        with pytest.raises(TypeError, match="uint8"):
            w.append("x", [np.zeros((4, 4, 3), np.float32)])
        with pytest.raises(ValueError, match="channels"):
            w.append("x", [np.zeros((4, 4, 4), np.uint8)])
        with pytest.raises(ValueError):
            w.append("x", np.zeros((4, 4), np.uint8))  # one image is not a video
        with pytest.raises(TypeError):
            w.append("x", "frames")
        with pytest.raises(TypeError):
            w.append("x", [object()])
        with pytest.raises(TypeError, match="dict"):
            w.append("x", synthetic_frames(0, 1), ["not", "a", "dict"])
        with pytest.raises(ValueError):
            w.append("", synthetic_frames(0, 1))
        with pytest.raises(ValueError):
            w.append("x" * 600, synthetic_frames(0, 1))
        # Non-contiguous arrays are accepted (copied before encoding).
        frames = synthetic_frames(0, 2)
        assert w.append("strided", frames[:, ::2, ::2])
        assert w.append("fortran", [np.asfortranarray(frames[0])])


def test_duplicates_skip_replace_and_remove(tmp_path):
    ds = gulpdb.Dataset(str(tmp_path / "ds"), "x")
    with ds.writer() as w:
        w.append("a", synthetic_frames(0, 1))
    with pytest.raises(ValueError):
        with ds.writer() as w:
            w.append("a", synthetic_frames(1, 1))
    with ds.writer(on_duplicate="skip") as w:
        assert not w.append("a", synthetic_frames(1, 2))
    assert ds.frame_count("a") == 1
    with ds.writer(on_duplicate="replace") as w:
        assert w.append("a", synthetic_frames(1, 3), {"v": 2})
    assert ds.frame_count("a") == 3 and ds.meta("a") == {"v": 2}
    with pytest.raises(ValueError):
        ds.writer(on_duplicate="merge")
    assert ds.remove(["a", "b"]) == 1
    assert len(ds) == 0 and ds.stats().garbage_bytes > 0


def test_writer_encodes_in_parallel_and_matches_single_thread(tmp_path):
    frames = synthetic_frames(3, 16, 48, 64)
    ds = gulpdb.Dataset(str(tmp_path / "ds"), "x")
    with ds.writer(encode_threads=1) as w:
        w.append("one", frames)
    with ds.writer(encode_threads=4) as w:
        w.append("four", list(frames))
    assert ds.read_jpegs("one") == ds.read_jpegs("four")


def test_encode_decode_functions():
    image = synthetic_frames(9, 1, 17, 23)[0]
    jpeg = gulpdb.encode_jpeg(image)
    assert jpeg[:2] == b"\xff\xd8" and jpeg[-2:] == b"\xff\xd9"
    decoded = gulpdb.decode_jpeg(jpeg)
    assert decoded.shape == (17, 23, 3) and decoded.flags["OWNDATA"]
    assert gulpdb.decode_jpeg(bytearray(jpeg)).shape == (17, 23, 3)
    assert gulpdb.decode_jpeg(jpeg, downscale=2).shape == (9, 12, 3)
    gray_jpeg = gulpdb.encode_jpeg(image[..., 0])
    assert gulpdb.decode_jpeg(gray_jpeg).shape == (17, 23)
    assert gulpdb.decode_jpeg(gray_jpeg, colorspace="rgb").shape == (17, 23, 3)
    assert gulpdb.decode_jpeg(gulpdb.encode_jpeg(image, subsampling="gray")).shape == (17, 23)
    with pytest.raises(ValueError):
        gulpdb.encode_jpeg(image, quality=0)
    with pytest.raises(ValueError):
        gulpdb.encode_jpeg(image, subsampling="411")
    with pytest.raises(TypeError):
        gulpdb.decode_jpeg("text")


# ---- pickling ---------------------------------------------------------------------


def test_pickle_keeps_path_and_options(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path, decode_threads=1, verify_checksums=True)
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.path == ds.path and clone.read_only
    assert clone._options == ds._options
    assert np.array_equal(clone.read("video_4"), small_dataset.decoded["video_4"])
    ds.close()
    assert pickle.loads(pickle.dumps(ds)).closed
    clone.close()
    # (A process cannot hold one index read-only and read-write at once.)
    writable = gulpdb.Dataset(small_dataset.path, "a")
    assert pickle.loads(pickle.dumps(writable)).mode == "r+"  # never re-creates


def test_native_handle_properties(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    native = ds.native
    assert native.path == small_dataset.path and native.read_only
    assert native.in_owner_process and not native.closed
    assert native.find("nope") is None
    assert native.find("video_0").id == "video_0"
    assert native.chunk_ids(1) == small_dataset.ids[4:8]
    assert [v.id for v in native.chunk_videos(2)] == small_dataset.ids[8:]
    assert os.path.isdir(os.path.join(small_dataset.path, "gulpdb.index"))


def test_writer_defaults_are_the_engines_in_one_place(tmp_path):
    """The writer's defaults are C++'s WriterOptions / EncodeOptions: the
    native writer's defaults and its stub say the same, and Dataset.writer()
    passes only what it is given."""
    import ast
    import inspect

    defaults = gulpdb._gulpdb.writer_defaults()
    assert defaults == {"on_duplicate": "error", "lock_timeout": 0.0, "check_jpeg_markers": True,
                        "quality": 90, "subsampling": "444", "rollover": True}  # fmt: skip
    stub = os.path.join(os.path.dirname(gulpdb.__file__), "_gulpdb.pyi")
    tree = ast.parse(open(stub, encoding="utf-8").read())
    native = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "NativeDataset")
    writer = next(f for f in native.body if isinstance(f, ast.FunctionDef) and f.name == "writer")
    args = writer.args.args[-len(writer.args.defaults):]
    stubbed = {a.arg: ast.literal_eval(d) for a, d in zip(args, writer.args.defaults)}
    assert {k: stubbed[k] for k in defaults} == defaults
    signature = inspect.signature(gulpdb.Dataset.writer)
    assert all(signature.parameters[k].default is None for k in defaults)
    with gulpdb.Dataset(tmp_path / "ds", "x") as ds, ds.writer() as w:
        w.append("a", synthetic_frames(1, 2))
    with gulpdb.Dataset(tmp_path / "ds", "a") as ds:
        with pytest.raises(ValueError, match="listed|already|exists|duplicate"):
            with ds.writer() as w:  # on_duplicate: the engine's "error"
                w.append("a", synthetic_frames(1, 2))
