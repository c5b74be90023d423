"""GulpIO2's API (GulpDirectory, GulpChunk, ChunkWriter, GulpIngestor) over gulpdb.

The fixture directories were written by the real GulpIO/GulpIO2; their
manifests hold the SHA-256 of every frame's pixels as GulpIO2 decodes them
(fast DCT, fast upsampling), which is what gulpdb must return.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
from typing import Any, Dict, List

import numpy as np
import pytest

import gulpdb
import gulpdb._index_cache
from conftest import FIXTURES, load_manifest, sha256, synthetic_frames

GULP_FIXTURES = [
    "gulpio2_csv_jpeg",
    "gulpio2_json_videos",
    "gulpio2_edge_cases",
    "gulpio1_csv_jpeg",
]


def expected_items(manifest: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {item["id"]: item for item in manifest["items"]}


def assert_frames_match(frames: List[np.ndarray], manifest_frames: List[Dict[str, Any]]) -> None:
    assert len(frames) == len(manifest_frames)
    for frame, expected in zip(frames, manifest_frames):
        assert list(frame.shape) == expected["decoded_shape"]
        assert frame.dtype == np.uint8
        assert sha256(frame) == expected["decoded_sha256_fast"]


def same_json(a: Any, b: Any) -> bool:
    """Equality that treats NaN as equal to itself (as the .gmeta text does)."""
    return json.dumps(a) == json.dumps(b)


# ---- GulpIO2's documented usage, with only the import line changed ---------------------

DOCUMENTED_USAGE = """
import gulpdb as gulpio2

gulp_directory = gulpio2.GulpDirectory(GULP_DIR)
# iterate over all chunks
for chunk in gulp_directory:
    # for each 'video' get the metadata and all frames
    for frames, meta in chunk:
        # do something with the metadata
        SEEN_META.append(meta)
        for i, f in enumerate(frames):
            # do something with the frames
            SEEN_FRAMES.append(f)

frames, meta = gulp_directory[VIDEO_ID]
BY_ID.append((frames, meta))
frames, meta = gulp_directory[VIDEO_ID, slice(1, 10, 2)]
BY_ID.append((frames, meta))
frames, meta = gulp_directory[VIDEO_ID, [1, 5, 6, 8]]
BY_ID.append((frames, meta))
frames, meta = gulp_directory[VIDEO_ID, 1:10:2]
BY_ID.append((frames, meta))
"""


def test_documented_usage_reads_gulpio2_pixels(gulpio_copy):
    # Written by GulpIO2's gulp2_20bn_json_videos: videos of 10 frames, long
    # enough for every selection of the snippet.
    name = "gulpio2_json_videos"
    directory = gulpio_copy(name)
    manifest = load_manifest(name)
    items = expected_items(manifest)
    namespace: Dict[str, Any] = {
        "GULP_DIR": directory,
        "VIDEO_ID": "102",
        "SEEN_META": [],
        "SEEN_FRAMES": [],
        "BY_ID": [],
    }
    exec(compile(DOCUMENTED_USAGE, "documented_usage", "exec"), namespace)

    # Iteration: chunks in GulpIO2's order, videos in insertion order, exact pixels.
    order = [id_ for chunk in manifest["chunks"] for id_ in chunk["ids_in_order"]]
    assert [m["id"] for m in namespace["SEEN_META"]] == order
    assert namespace["SEEN_META"] == [items[i]["meta_data"][0] for i in order]
    assert_frames_match(namespace["SEEN_FRAMES"], [f for i in order for f in items[i]["frames"]])

    video = items["102"]
    selections = [list(range(10)), [1, 3, 5, 7, 9], [1, 5, 6, 8], [1, 3, 5, 7, 9]]
    assert len(namespace["BY_ID"]) == len(selections)
    for (frames, meta), picked in zip(namespace["BY_ID"], selections):
        assert meta == video["meta_data"][0]
        assert_frames_match(frames, [video["frames"][i] for i in picked])

    # As in GulpIO2, indices past the end are an IndexError.
    gd = gulpdb.GulpDirectory(directory)
    with pytest.raises(IndexError):
        gd["102", [1, 10]]


@pytest.mark.parametrize("name", GULP_FIXTURES)
def test_every_video_of_every_fixture(gulpio_copy, name):
    directory = gulpio_copy(name)
    manifest = load_manifest(name)
    items = expected_items(manifest)
    gd = gulpdb.GulpDirectory(directory, quiet=True)

    assert list(gd.chunk_objs_lookup) == manifest["glob_sorted_chunk_order"]
    assert gd.num_chunks == len(manifest["chunks"])
    for chunk, chunk_manifest in zip(gd, manifest["chunks"]):
        assert chunk.chunk_id == chunk_manifest["chunk_id"]
        assert os.path.basename(chunk.data_file_path) == chunk_manifest["data_file"]
        assert list(chunk.meta_dict) == chunk_manifest["ids_in_order"]
        seen = 0
        for (frames, meta), id_ in zip(chunk, chunk_manifest["ids_in_order"]):
            assert same_json(meta, items[id_]["meta_data"][0])
            assert_frames_match(frames, items[id_]["frames"])
            seen += 1
        assert seen == len(chunk_manifest["ids_in_order"])

    for id_, item in items.items():
        frames, meta = gd[id_]
        assert same_json(meta, item["meta_data"][0])
        assert_frames_match(frames, item["frames"])
        n = len(item["frames"])
        frames, _ = gd[id_, 1:n:2]
        assert_frames_match(frames, item["frames"][1:n:2])
        if n:
            picks = [n - 1, 0, -1]
            frames, _ = gd[id_, picks]
            assert_frames_match(frames, [item["frames"][p] for p in picks])
            frames, _ = gd[id_, np.array([0])]
            assert_frames_match(frames, item["frames"][:1])


def test_edge_cases_fixture(gulpio_copy):
    gd = gulpdb.GulpDirectory(gulpio_copy("gulpio2_edge_cases"), quiet=True)
    frames, meta = gd[42]  # an integer id, as GulpIO2 accepts it
    assert meta["id"] == 42 and len(frames) == 1
    frames, meta = gd["dup"]  # appended twice to one chunk: meta is the first entry
    assert meta == {"which": "first append"} and len(frames) == 3
    assert len(gd.merged_meta_dict["dup"]["meta_data"]) == 2
    frames, meta = gd["empty_frames"]
    assert frames == [] and "note" in meta
    frames, _ = gd["gray"]
    assert all(f.shape == (16, 24) for f in frames)
    frames, meta = gd["nested_meta"]
    assert meta["big_int"] == 2**64 + 1 and np.isnan(meta["nan"]) and meta["neg_inf"] == -np.inf
    assert "unicode_é✓😀" in gd.merged_meta_dict
    frames, meta = gd["unicode_é✓😀"]
    assert meta["label"] == "ü"


def test_meta_mappings_match_the_gmeta_files(gulpio_copy):
    name = "gulpio2_edge_cases"
    directory = gulpio_copy(name)
    manifest = load_manifest(name)
    gd = gulpdb.GulpDirectory(directory, quiet=True)
    merged = gd.merged_meta_dict
    assert len(merged) == len(manifest["items"])
    assert list(merged) == [i for c in manifest["chunks"] for i in c["ids_in_order"]]
    for item in manifest["items"]:
        entry = merged[item["id"]]
        assert entry["frame_info"] == item["frame_info"]
        assert same_json(entry["meta_data"], item["meta_data"])
        assert gd.chunk_lookup[item["id"]] == item["chunk_id"]
    assert "missing" not in merged and "missing" not in gd.chunk_lookup
    with pytest.raises(KeyError):
        merged["missing"]
    with pytest.raises(KeyError):
        gd.chunk_lookup["missing"]
    with pytest.raises(TypeError):  # read-only
        merged["x"] = {}  # type: ignore[index]
    assert len(gd.all_meta_dicts) == gd.num_chunks
    for meta_dict, chunk in zip(gd.all_meta_dicts, manifest["chunks"]):
        assert list(meta_dict) == chunk["ids_in_order"]
        assert len(meta_dict) == len(chunk["ids_in_order"])
        with open(os.path.join(directory, chunk["meta_file"])) as f:
            assert same_json(dict(meta_dict), json.load(f))
    first_chunk = gd.all_meta_dicts[0]
    assert "pad0" not in first_chunk  # lives in chunk 1
    with pytest.raises(KeyError):
        first_chunk["pad0"]


def test_open_does_not_load_meta_files(gulpio_copy):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    gulpdb.GulpDirectory(directory, quiet=True)  # builds the index
    # Without any .gmeta file: the index describes every byte (a missing
    # .gmeta is not a change; `gulpdb export` writes it again), and open
    # reads no .gmeta byte.
    for name in os.listdir(directory):
        if name.endswith(".gmeta"):
            os.remove(os.path.join(directory, name))
    gd = gulpdb.GulpDirectory(directory)
    frames, meta = gd["3"]
    assert meta["label"] == "square" and len(frames) == 1
    assert len(gd.merged_meta_dict) == 22
    assert gulpdb.check(directory)["healthy"]


def test_index_is_built_once_in_place_with_progress(gulpio_copy, capsys):
    directory = gulpio_copy("gulpio2_json_videos")
    gulpdb.GulpDirectory(directory)
    err = capsys.readouterr().err
    assert "indexing GulpIO directory" in err and "indexed 4 videos" in err
    assert os.path.isdir(os.path.join(directory, "gulpdb.index"))
    gulpdb.GulpDirectory(directory)
    assert capsys.readouterr().err == ""


def test_read_only_directory_is_indexed_in_the_user_cache(gulpio_copy, monkeypatch, capsys):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    monkeypatch.setattr(gulpdb._index_cache, "_dir_is_writable", lambda path: False)
    before = sorted(os.listdir(directory))
    gd = gulpdb.GulpDirectory(directory)
    assert "indexing GulpIO directory" in capsys.readouterr().err
    assert sorted(os.listdir(directory)) == before  # nothing written into it
    cache = gulpdb._index_cache.cached_index_dir(directory)
    assert cache.startswith(os.environ["GULPDB_CACHE"])
    assert gd.dataset.index_dir == cache and "user cache" in repr(gd)
    frames, meta = gd["0"]
    assert meta["id"] == "0" and len(frames) == 5

    gulpdb.GulpDirectory(directory)  # reused
    assert capsys.readouterr().err == ""

    # A chunk added by GulpIO2 later makes the cached index stale: rebuilt.
    os.remove(os.path.join(directory, "data_10.gulp"))
    os.remove(os.path.join(directory, "meta_10.gmeta"))
    gd = gulpdb.GulpDirectory(directory)
    assert "indexing it again" in capsys.readouterr().err
    assert "20" not in gd and len(gd.merged_meta_dict) == 20
    with pytest.raises(PermissionError):
        gd.new_chunk().append("x", {}, [synthetic_frames(0, 1)[0]])


def _rewrite_gmeta(directory: str) -> None:
    path = os.path.join(directory, "meta_3.gmeta")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace('"square"', '"SQUARE"'))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def _append_pair(directory: str) -> None:
    # As GulpIO2's writers do: the next chunk number after the existing files.
    n = 1 + max(int(name[5:-5]) for name in os.listdir(directory) if name.startswith("data_"))
    shutil.copyfile(os.path.join(directory, "data_0.gulp"), os.path.join(directory, f"data_{n}.gulp"))
    with open(os.path.join(directory, "meta_0.gmeta")) as f:
        meta = json.load(f)
    with open(os.path.join(directory, f"meta_{n}.gmeta"), "w") as f:
        json.dump({"new_" + k: v for k, v in meta.items()}, f)


def _append_bytes(directory: str) -> None:
    with open(os.path.join(directory, "data_4.gulp"), "ab") as f:
        f.write(b"\xff\xd8zz")


def _remove_pair(directory: str) -> None:
    os.remove(os.path.join(directory, "data_10.gulp"))
    os.remove(os.path.join(directory, "meta_10.gmeta"))


# What GulpIO/GulpIO2 tools may do to a directory after gulpdb indexed it,
# and how the directory reads when indexed afresh afterwards.
GULPIO_CHANGES = [
    ("gmeta rewritten", _rewrite_gmeta, lambda gd: gd["7"][1]["label"] == "SQUARE"),
    ("pair appended", _append_pair, lambda gd: "new_0" in gd and len(gd.merged_meta_dict) == 24),
    ("bytes appended", _append_bytes, lambda gd: len(gd.merged_meta_dict) == 22),
    ("pair removed", _remove_pair, lambda gd: "20" not in gd and len(gd.merged_meta_dict) == 20),
]


def test_append_mode_refuses_a_plain_gulpio_directory(gulpio_copy):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    before = sorted(os.listdir(directory))
    with pytest.raises(ValueError, match="gulpdb import"):
        gulpdb.Dataset(directory, "a")
    assert sorted(os.listdir(directory)) == before
    assert len(gulpdb.GulpDirectory(directory, quiet=True).merged_meta_dict) == 22


def _all_reads(gd: Any) -> Dict[str, Any]:
    return {i: (meta, [f.tobytes() for f in frames]) for i in gd.merged_meta_dict for frames, meta in [gd[i]]}


def _copy_with_new_times(src: str, dst: str) -> None:
    """As ``cp -r`` does: the same bytes, new files, new modification times."""
    os.makedirs(dst)
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        for d in dirs:
            os.makedirs(os.path.join(dst, rel, d))
        for f in files:
            shutil.copyfile(os.path.join(root, f), os.path.join(dst, rel, f))


def test_copies_of_an_indexed_directory_keep_their_index(gulpio_copy, tmp_path, capsys):
    # A byte-identical copy (with or without the modification times) opens
    # with the index it carries: nothing is indexed again.
    directory = gulpio_copy("gulpio2_csv_jpeg")
    expected = _all_reads(gulpdb.GulpDirectory(directory, quiet=True))
    for name, copy in [("copytree", shutil.copytree), ("new times", _copy_with_new_times)]:
        target = str(tmp_path / name)
        copy(directory, target)
        capsys.readouterr()
        gd = gulpdb.GulpDirectory(target)
        assert capsys.readouterr().err == "", name
        assert _all_reads(gd) == expected
        assert gulpdb.check(target)["healthy"]


def test_cached_index_survives_a_byte_identical_restore(gulpio_copy, tmp_path, monkeypatch, capsys):
    # A read-only directory indexed in the user cache, then restored from a
    # copy (same bytes, new times): the cached index still serves it.
    directory = gulpio_copy("gulpio2_csv_jpeg")
    monkeypatch.setattr(gulpdb._index_cache, "_dir_is_writable", lambda path: False)
    expected = _all_reads(gulpdb.GulpDirectory(directory, quiet=True))
    cache = gulpdb._index_cache.cached_index_dir(directory)
    backup = str(tmp_path / "backup")
    shutil.copytree(directory, backup)
    shutil.rmtree(directory)
    _copy_with_new_times(backup, directory)
    assert gulpdb._index_cache.cached_index_dir(directory) == cache
    capsys.readouterr()
    gd = gulpdb.GulpDirectory(directory)
    assert capsys.readouterr().err == ""
    assert gd.dataset.index_dir == cache
    assert _all_reads(gd) == expected
    # An edit that keeps every size is still caught, and indexed again.
    _rewrite_gmeta(directory)
    gd = gulpdb.GulpDirectory(directory)
    assert "indexing it again" in capsys.readouterr().err
    assert gd["7"][1]["label"] == "SQUARE"


@pytest.mark.parametrize("name,change,check", GULPIO_CHANGES, ids=[c[0] for c in GULPIO_CHANGES])
def test_in_place_index_refuses_a_directory_changed_by_gulpio(gulpio_copy, name, change, check):
    # The native API refuses a stale in-place index, naming the way out.
    directory = gulpio_copy("gulpio2_csv_jpeg")
    gulpdb.GulpDirectory(directory, quiet=True)
    change(directory)
    with pytest.raises(gulpdb.StaleIndexError, match="changed since it was indexed.*--reindex"):
        gulpdb.Dataset(directory)
    assert issubclass(gulpdb.StaleIndexError, gulpdb.CorruptionError)
    gulpdb.import_gulpio(directory, reindex=True)
    assert check(gulpdb.GulpDirectory(directory, quiet=True))


@pytest.mark.parametrize("name,change,check", GULPIO_CHANGES, ids=[c[0] for c in GULPIO_CHANGES])
def test_gulpio_api_indexes_a_changed_directory_again(gulpio_copy, capsys, name, change, check):
    # GulpIO2's API indexed the directory by itself, so it indexes it again by
    # itself: code written for GulpIO2 keeps working beside GulpIO2's writers.
    directory = gulpio_copy("gulpio2_csv_jpeg")
    gulpdb.GulpDirectory(directory, quiet=True)
    change(directory)
    gd = gulpdb.GulpDirectory(directory)
    assert check(gd)
    assert "changed since it was indexed; indexing it again" in capsys.readouterr().err
    assert gulpdb.check(directory)["healthy"]


def test_gulpio_api_reindex_never_drops_videos_gulpdb_wrote(gulpio_copy):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    gulpdb.GulpDirectory(directory, quiet=True)  # indexes it in place
    with gulpdb.Dataset(directory, "r+") as ds:
        with ds.writer() as w:
            w.append("written_by_gulpdb", synthetic_frames(1, 2))
    _append_pair(directory)
    with pytest.raises(ValueError, match="discard"):
        gulpdb.GulpDirectory(directory, quiet=True)
    with pytest.raises(gulpdb.StaleIndexError):
        gulpdb.Dataset(directory)  # nothing was changed by the refused re-index


@pytest.mark.parametrize("name,change,check", GULPIO_CHANGES, ids=[c[0] for c in GULPIO_CHANGES])
def test_cached_index_follows_changes_made_by_gulpio(
    gulpio_copy, monkeypatch, capsys, name, change, check
):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    monkeypatch.setattr(gulpdb._index_cache, "_dir_is_writable", lambda path: False)
    assert len(gulpdb.GulpDirectory(directory).merged_meta_dict) == 22
    capsys.readouterr()
    change(directory)
    gd = gulpdb.GulpDirectory(directory)
    assert "indexing it again" in capsys.readouterr().err
    assert check(gd)


def test_gulp_chunk_api(gulpio_copy):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    items = expected_items(load_manifest("gulpio2_csv_jpeg"))
    gd = gulpdb.GulpDirectory(directory, quiet=True)
    chunk = gd.chunk_objs_lookup[10]
    assert "20" in chunk and 21 in chunk and "0" not in chunk and len(chunk) == 2
    frames, meta = chunk.read_frames("21", slice(0, 2))
    assert_frames_match(frames, items["21"]["frames"][:2])
    frames, meta = chunk["21", [2]]
    assert_frames_match(frames, items["21"]["frames"][2:])
    with pytest.raises(KeyError):
        chunk.read_frames("0")  # in another chunk
    with chunk.open("rb"):
        assert [m["id"] for _, m in chunk.iter_all()] == ["20", "21"]
    assert [m["id"] for _, m in chunk.iter_all(accepted_ids=["21", "999"])] == ["21"]
    np.random.seed(3)
    first = [m["id"] for _, m in gd.chunk_objs_lookup[0].iter_all(shuffle=True)]
    assert sorted(first) == ["0", "1"]
    with pytest.raises(NotImplementedError):
        with chunk.open("xb"):
            pass

    # A chunk built from its paths, as GulpIO2 code does.
    direct = gulpdb.GulpChunk(
        os.path.join(directory, "data_10.gulp"), os.path.join(directory, "meta_10.gmeta")
    )
    assert direct.chunk_id == 10 and list(direct.meta_dict) == ["20", "21"]
    frames, meta = direct.read_frames("20")
    assert_frames_match(frames, items["20"]["frames"])


def test_colorspace_and_custom_decoder(gulpio_copy):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    rgb = gulpdb.GulpDirectory(directory, colorspace="RGB", quiet=True)
    frames, _ = rgb["2"]  # a grayscale video
    assert all(f.shape == (20, 20, 3) for f in frames)
    gray = gulpdb.GulpDirectory(directory, colorspace="GRAY")
    frames, _ = gray["0"]
    assert all(f.shape == (24, 32) for f in frames)
    with pytest.raises(ValueError):
        gulpdb.GulpDirectory(directory, colorspace="CMYK")

    calls = []

    def decoder(jpeg: bytes) -> int:
        calls.append(jpeg)
        return len(jpeg)

    custom = gulpdb.GulpDirectory(directory, jpeg_decoder=decoder)
    frames, meta = custom["1"]
    items = expected_items(load_manifest("gulpio2_csv_jpeg"))
    assert frames == [f["jpeg_len"] for f in items["1"]["frames"]]
    assert all(c[:2] == b"\xff\xd8" for c in calls)
    chunk_frames = [f for f, _ in custom.chunk_objs_lookup[0]]
    assert chunk_frames[1] == frames


def test_writes_through_chunks_are_transactional(gulpio_copy):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    gd = gulpdb.GulpDirectory(directory, quiet=True)
    new = list(gd.new_chunks(2))
    assert [c.chunk_id for c in new] == [11, 12]
    images = [synthetic_frames(k, 1)[0] for k in range(3)]
    with new[0].open("wb"):
        new[0].append("n1", {"id": "n1"}, images)
        new[0].flush()  # committed: visible to a new reader already
        assert "n1" in gulpdb.GulpDirectory(directory)
        new[0].append(222, {"id": 222}, images[:1])
    with pytest.raises(RuntimeError):
        with new[1].open("wb"):
            new[1].append("lost", {}, images)
            raise RuntimeError("interrupted")
    assert "n1" in gd and "222" in gd and "lost" not in gd
    frames, meta = gd["222"]
    assert meta == {"id": 222} and len(frames) == 1
    np.testing.assert_allclose(frames[0], images[0], atol=12)

    chunk_0 = gd.chunk_objs_lookup[0]
    with pytest.raises(ValueError, match="overwrites"):
        with chunk_0.open("wb"):
            pass
    # An imported chunk's file never changes (GulpIO2 would append to it).
    with pytest.raises(ValueError, match="appends only to the last chunk"):
        chunk_0.append("into_imported", {}, images)
    assert "into_imported" not in gd
    # The rolled-back chunk stays, empty, and is the last one: it takes appends.
    last = gd.chunk_objs_lookup[12]
    assert len(last) == 0
    last.append("outside_open", {"x": 1}, images)  # commits at once
    assert gd["outside_open"][1] == {"x": 1}
    assert gd.chunk_lookup["outside_open"] == 12
    with pytest.raises(ValueError):  # GulpIO2 would extend the entry; gulpdb refuses
        last.append("outside_open", {"x": 2}, images)
    # Frames as JPEG bytes are stored as they are.
    jpeg = gulpdb.encode_jpeg(images[0], quality=50)
    last.append("as_bytes", {}, [jpeg])
    assert gd.dataset.read_jpegs("as_bytes") == [jpeg]


def test_writing_into_an_empty_directory(tmp_path):
    target = str(tmp_path / "new_gulps")
    gd = gulpdb.GulpDirectory(target)
    assert gd.dataset is None and gd.num_chunks == 0 and list(gd) == []
    assert len(gd.merged_meta_dict) == 0
    with pytest.raises(KeyError):
        gd["x"]
    chunk = gd.new_chunk()
    with chunk.open("wb"):
        chunk.append("x", {"label": 1}, [synthetic_frames(0, 1)[0]])
    assert gulpdb.Dataset.exists(target)
    frames, meta = gd["x"]
    assert meta == {"label": 1} and frames[0].shape == (24, 32, 3)
    assert gd.num_chunks == 1


class ListAdapter(gulpdb.AbstractDatasetAdapter):
    """Synthetic videos; video 3 has no frames (ingestors skip it)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def iter_data(self, slice_element=None):
        for i in range(self.count)[slice_element or slice(0, self.count)]:
            frames = [] if i == 3 else list(synthetic_frames(i, 1 + i % 3))
            yield {"id": f"vid{i}", "frames": frames, "meta": {"id": f"vid{i}", "n": i}}


@pytest.mark.parametrize("num_workers", [1, 2])
def test_ingestor(tmp_path, num_workers, capsys):
    out = str(tmp_path / f"ingest_{num_workers}")
    gulpdb.GulpIngestor(ListAdapter(11), out, videos_per_chunk=4, num_workers=num_workers)()
    assert "vid3; no frames" in capsys.readouterr().err
    gd = gulpdb.GulpDirectory(out)
    assert len(gd.merged_meta_dict) == 10 and "vid3" not in gd
    assert list(gd.merged_meta_dict) == [f"vid{i}" for i in range(11) if i != 3]
    for i in (0, 5, 10):
        frames, meta = gd[f"vid{i}"]
        assert meta == {"id": f"vid{i}", "n": i} and len(frames) == 1 + i % 3
        expected = gulpdb.decode_jpeg(gulpdb.encode_jpeg(synthetic_frames(i, 1)[0]))
        assert np.array_equal(frames[0], expected)  # encoded with q90 4:4:4 either way
    assert gd.dataset.stats().videos_per_chunk == 4 and gd.num_chunks == 3


def test_chunk_writer_and_folder_adapter(tmp_path):
    out = str(tmp_path / "frames")
    adapter = gulpdb.JpegFolderAdapter(
        os.path.join(FIXTURES, "frames_src"),
        labels_csv=os.path.join(FIXTURES, "frames_src", "labels.csv"),
        output_folder=out,
    )
    os.makedirs(out)
    chunk = gulpdb.GulpDirectory(out).new_chunk()
    gulpdb.ChunkWriter(adapter).write_chunk(chunk, slice(0, 5))
    with open(os.path.join(out, "label2idx.json")) as f:
        assert json.load(f) == {"circle": 0, "square": 1, "triangle": 2}
    gd = gulpdb.GulpDirectory(out)
    assert list(gd.merged_meta_dict) == ["0", "1", "2", "3", "4"]
    # JPEG files are stored byte for byte.
    with open(os.path.join(FIXTURES, "frames_src", "2", "0001.jpg"), "rb") as f:
        assert gd.dataset.read_jpegs("2", [1]) == [f.read()]
    assert gulpdb.calculate_chunk_slices(4, 10) == [slice(0, 4), slice(4, 8), slice(8, 10)]
    with pytest.raises(ValueError):
        gulpdb.calculate_chunk_slices(0, 10)


def test_gulp_directory_pickles(gulpio_copy):
    gd = gulpdb.GulpDirectory(gulpio_copy("gulpio2_csv_jpeg"), quiet=True)
    assert gd.num_chunks == 11
    clone = pickle.loads(pickle.dumps(gd))
    a, meta_a = gd["5"]
    b, meta_b = clone["5"]
    assert meta_a == meta_b and [sha256(f) for f in a] == [sha256(f) for f in b]


def test_import_export_and_check(gulpio_copy, tmp_path):
    name = "gulpio2_edge_cases"
    directory = gulpio_copy(name)

    def interrupt(done, total):
        raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt):  # a progress callback can stop an import ...
        gulpdb.import_gulpio(directory, progress=interrupt)
    assert not gulpdb.Dataset.exists(directory)  # ... which then leaves no index behind
    calls = []
    report = gulpdb.import_gulpio(
        directory, progress=lambda done, total: calls.append((done, total))
    )
    assert report["videos"] == 12 and report["chunks"] == 2
    assert calls and calls[-1] == (2, 2)
    with pytest.raises(ValueError):
        gulpdb.import_gulpio(directory)  # already indexed
    ds = gulpdb.Dataset(directory)
    out = tmp_path / "exported"
    out.mkdir()
    exported = gulpdb.export_gmeta(ds, str(out))
    assert exported["chunks"] == 2
    for chunk in load_manifest(name)["chunks"]:
        with open(os.path.join(FIXTURES, name, chunk["meta_file"]), "rb") as f:
            original = f.read()
        with open(out / chunk["meta_file"], "rb") as f:
            assert f.read() == original  # byte-identical
    # export_gulpio of a JPEG dataset writes the same .gmeta (its data files
    # already are GulpIO's): no data file is copied.
    out2 = tmp_path / "exported2"
    out2.mkdir()
    assert gulpdb.export_gulpio(ds, out2)["chunks"] == 2
    with pytest.raises(TypeError, match="expected a gulpdb.Dataset"):
        gulpdb.export_gulpio(str(directory), out2)
    assert sorted(os.listdir(out2)) == sorted(os.listdir(out))
    for name_ in os.listdir(out):
        assert (out2 / name_).read_bytes() == (out / name_).read_bytes()
    health = gulpdb.check(directory, deep=True)
    assert health["healthy"] and health["videos"] == 12 and health["problems"] == []
    with pytest.raises(FileNotFoundError):
        gulpdb.check(str(tmp_path / "nothing"))


def test_import_speaks_the_one_duplicate_vocabulary(tmp_path):
    # error | skip | replace, as for appends and ingest; the old words of
    # import still work, with a DeprecationWarning.
    def copy(n: int) -> str:
        dst = str(tmp_path / f"gio{n}")
        shutil.copytree(os.path.join(FIXTURES, "gulpio2_edge_cases"), dst)
        return dst

    with pytest.raises(ValueError, match="'error', 'skip' or 'replace'"):
        gulpdb.import_gulpio(copy(0), on_duplicate="keep-first")
    assert gulpdb.import_gulpio(copy(1), on_duplicate="skip")["videos"] == 12
    with pytest.warns(DeprecationWarning, match="now spelled 'replace'"):
        report = gulpdb.import_gulpio(copy(2), on_duplicate="keep_last")
    assert report["videos"] == 12
