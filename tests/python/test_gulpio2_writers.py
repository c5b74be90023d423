"""GulpIO2's writer API and helpers behave as GulpIO2's do.

The fixtures' manifests were written from directories the real GulpIO2
produced (tests/fixtures/README.md): ingesting the same sources through
gulpdb's GulpIngestor with the same settings must give the same chunks, the
same members in the same order, and, since gulpdb's JPEG encoder is GulpIO2's
libjpeg-turbo at the same settings, byte-identical data files.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import json
import os
import shutil
import warnings

import numpy as np
import PIL.Image
import pytest

import gulpdb
import gulpdb as gulpio2  # code written for GulpIO2 runs unchanged
from conftest import FIXTURES, load_manifest, sha256, synthetic_frames


def _file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class CsvJpegAdapter(gulpio2.AbstractDatasetAdapter):
    """A custom adapter as GulpIO2 users write them (GulpIO2's 20BN CSV+JPEG
    adapter's documented behaviour): one item per CSV row, frames read with
    ``gulpio2.utils``, meta ``{'id', 'label', 'idx'}``."""

    def __init__(self, csv_file, folder, frame_size=-1):
        with open(csv_file, newline="") as f:
            self.data = [{"id": r[0], "label": r[1]} for r in csv.reader(f, delimiter=";") if r]
        labels = sorted({d["label"] for d in self.data})
        self.label2idx = {label: i for i, label in enumerate(labels)}
        self.folder = folder
        self.frame_size = frame_size

    def __len__(self):
        return len(self.data)

    def iter_data(self, slice_element=None):
        slice_element = slice_element or slice(0, len(self))
        for entry in self.data[slice_element]:
            label = entry["label"]
            meta = {"id": entry["id"], "label": label, "idx": self.label2idx[label]}
            paths = gulpio2.utils.find_images_in_folder(
                os.path.join(self.folder, entry["id"]), formats=["jpg"]
            )
            frames = list(gulpio2.utils.resize_images(paths, self.frame_size))
            yield {"meta": meta, "frames": frames, "id": meta["id"]}


class ListAdapter(gulpio2.AbstractDatasetAdapter):
    """Items given as a list of (id, frames, meta)."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def iter_data(self, slice_element=None):
        for id_, frames, meta in self.items[slice_element or slice(0, len(self))]:
            yield {"id": id_, "frames": frames, "meta": meta}


def _chunks_of(directory):
    """{chunk_id: [ids in order]} and the iteration order, as GulpIO2 shows them."""
    gd = gulpio2.GulpDirectory(directory)
    members = {n: list(c.meta_dict) for n, c in gd.chunk_objs_lookup.items()}
    assert [list(d) for d in gd.all_meta_dicts] == list(members.values())
    assert [list(c.meta_dict) for c in gd] == list(members.values())
    for n, ids in members.items():
        assert all(gd.chunk_lookup[i] == n for i in ids)
    return members, list(gd.chunk_objs_lookup)


def _assert_like_manifest(directory, manifest):
    members, order = _chunks_of(directory)
    assert members == {c["chunk_id"]: c["ids_in_order"] for c in manifest["chunks"]}
    assert order == manifest["glob_sorted_chunk_order"]
    gd = gulpio2.GulpDirectory(directory)
    for item in manifest["items"]:
        entry = gd.merged_meta_dict[item["id"]]
        assert entry["frame_info"] == item["frame_info"], item["id"]
        assert entry["meta_data"] == item["meta_data"], item["id"]
    for chunk in manifest["chunks"]:
        assert _file_sha256(os.path.join(directory, chunk["data_file"])) == chunk["data_sha256"]


@pytest.mark.parametrize("num_workers", [1, 2])
def test_ingestor_writes_the_chunks_gulpio2_writes(tmp_path, num_workers):
    manifest = load_manifest("gulpio2_csv_jpeg")
    out = str(tmp_path / "out")
    src = os.path.join(FIXTURES, "frames_src")
    adapter = CsvJpegAdapter(os.path.join(src, "labels.csv"), src)
    gulpio2.GulpIngestor(adapter, out, 2, num_workers)()  # the fixture's two videos per chunk
    _assert_like_manifest(out, manifest)
    # Exported, the .gmeta files are GulpIO2's too, byte for byte.
    with gulpdb.Dataset(out) as ds:
        gulpdb.export_gmeta(ds)
    for chunk in manifest["chunks"]:
        assert _file_sha256(os.path.join(out, chunk["meta_file"])) == chunk["meta_sha256"]


def test_a_second_ingest_continues_the_chunk_numbering(tmp_path):
    # gulpio2_json_videos: three videos at two per chunk, then a second run
    # with one more video into the same directory.
    manifest = load_manifest("gulpio2_json_videos")
    # The sources: the fixture's own JPEG bytes (indexed beside the fixture).
    source = gulpio2.GulpDirectory(
        os.path.join(FIXTURES, "gulpio2_json_videos"), index_dir=str(tmp_path / "i"), quiet=True
    ).dataset
    items = {
        i["id"]: (i["id"], source.read_jpegs(i["id"]), i["meta_data"][0]) for i in manifest["items"]
    }
    out = str(tmp_path / "out")
    gulpio2.GulpIngestor(ListAdapter([items[i] for i in ("100", "101", "102")]), out, 2, 1)()
    assert _chunks_of(out)[0] == {0: ["100", "101"], 1: ["102"]}
    gulpio2.GulpIngestor(ListAdapter([items["103"]]), out, 2, 1)()
    _assert_like_manifest(out, manifest)


def test_an_empty_slice_leaves_an_empty_chunk_and_items_without_frames_are_skipped(
    tmp_path, capsys
):
    frames = synthetic_frames(1, 2)
    items = [
        ("a", frames, {"n": 1}),
        ("b", [], {"n": 2}),
        ("c", [], {"n": 3}),
        ("d", np.zeros((0, 8, 8, 3), np.uint8), {"n": 4}),
        ("e", frames, {"n": 5}),
    ]
    out = str(tmp_path / "out")
    gulpio2.GulpIngestor(ListAdapter(items), out, 2, 1, quiet=True)()
    assert _chunks_of(out) == ({0: ["a"], 1: [], 2: ["e"]}, [0, 1, 2])
    err = capsys.readouterr().err
    for id_ in "bcd":
        assert f"Failed to write video with id: {id_}; no frames" in err
    # Exported, every data file has its .gmeta (GulpIO2 asserts as much).
    with gulpdb.Dataset(out) as ds:
        gulpdb.export_gmeta(ds)
    assert len(glob.glob(os.path.join(out, "data*.gulp"))) == 3
    assert len(glob.glob(os.path.join(out, "meta*.gmeta"))) == 3
    with open(os.path.join(out, "meta_1.gmeta")) as f:
        assert f.read() == "{}"


def test_the_dataset_setting_does_not_split_an_ingestor_slice(tmp_path):
    out = str(tmp_path / "out")
    with gulpdb.Dataset(out, "x", videos_per_chunk=1, bytes_per_chunk=10):
        pass
    items = [(f"v{i}", synthetic_frames(i, 1), {}) for i in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing "ignored" to warn about
        gulpio2.GulpIngestor(ListAdapter(items), out, 3, 1, quiet=True)()
    assert _chunks_of(out)[0] == {0: ["v0", "v1", "v2"], 1: ["v3", "v4"]}


def test_calculate_chunk_slices_matches_gulpio2():
    assert gulpio2.calculate_chunk_slices(2, 5) == [slice(0, 2), slice(2, 4), slice(4, 5)]
    assert gulpio2.calculate_chunk_slices(10, 3) == [slice(0, 3)]
    assert gulpio2.calculate_chunk_slices(1, 2) == [slice(0, 1), slice(1, 2)]
    assert gulpio2.calculate_chunk_slices(np.int64(3), 6) == [slice(0, 3), slice(3, 6)]
    # GulpIO2 asserts both counts are positive: the same AssertionError, also a ValueError.
    for args in [(0, 5), (5, 0), (-1, 5), (2, -3)]:
        with pytest.raises(AssertionError):
            gulpio2.calculate_chunk_slices(*args)
        with pytest.raises(ValueError, match="must be positive"):
            gulpio2.calculate_chunk_slices(*args)
    with pytest.raises(AssertionError):
        gulpio2.GulpIngestor(ListAdapter([]), "unused", 2, 0)
    with pytest.raises(AssertionError):
        gulpio2.GulpIngestor(ListAdapter([]), "unused", 2, 1)()  # nothing to ingest


def test_chunk_writer_fills_new_chunks_in_order(tmp_path):
    out = str(tmp_path / "out")
    items = [(f"v{i}", synthetic_frames(i, 2), {"i": i}) for i in range(5)]
    adapter = ListAdapter(items)
    gd = gulpio2.GulpDirectory(out)
    slices = gulpio2.calculate_chunk_slices(2, len(adapter))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for chunk, s in zip(gd.new_chunks(len(slices)), slices):
            gulpio2.ChunkWriter(adapter).write_chunk(chunk, s)
    assert _chunks_of(out)[0] == {0: ["v0", "v1"], 1: ["v2", "v3"], 2: ["v4"]}
    # A chunk opened out of order takes the next number, and says so.
    late, early = list(gulpio2.GulpDirectory(out).new_chunks(2))[::-1]
    with pytest.warns(UserWarning, match="data_3.gulp"):
        with late.open("wb"):
            late.append("x", {}, synthetic_frames(9, 1))
    assert late.chunk_id == 3 and late.data_file_path.endswith("data_3.gulp")
    assert list(late.meta_dict) == ["x"]


def test_gulp_chunk_takes_any_file_names(tmp_path, capsys):
    manifest = load_manifest("gulpio2_csv_jpeg")
    # A GulpIO chunk under names without a number, in a directory of its own:
    # read from its .gmeta, as GulpIO2 reads it.
    folder = str(tmp_path / "named")
    os.makedirs(folder)
    shutil.copy(os.path.join(FIXTURES, "gulpio2_csv_jpeg", "data_0.gulp"), f"{folder}/train.gulp")
    shutil.copy(os.path.join(FIXTURES, "gulpio2_csv_jpeg", "meta_0.gmeta"), f"{folder}/train.gmeta")
    chunk = gulpio2.GulpChunk(f"{folder}/train.gulp", f"{folder}/train.gmeta")
    assert chunk.chunk_id is None and len(chunk) == 2 and "0" in chunk and 1 in chunk
    items = {i["id"]: i for i in manifest["items"]}
    read = [(meta["id"], frames) for frames, meta in chunk]
    assert [i for i, _ in read] == ["0", "1"]
    for id_, frames in read:
        assert [sha256(f) for f in frames] == [
            f["decoded_sha256_fast"] for f in items[id_]["frames"]
        ]
    frames, meta = chunk["1", [0, 2]]
    assert meta == items["1"]["meta_data"][0] and len(frames) == 2
    with pytest.raises(KeyError):
        chunk["5"]
    # A chunk GulpIO2 added to a directory after it was indexed in place: the
    # directory is indexed again, and the chunk is one of the index's.
    gio = str(tmp_path / "gio")
    shutil.copytree(os.path.join(FIXTURES, "gulpio2_csv_jpeg"), gio)
    assert len(gulpio2.GulpDirectory(gio, quiet=True).merged_meta_dict) == 22
    shutil.copy(f"{folder}/train.gulp", f"{gio}/data_99.gulp")
    with open(f"{folder}/train.gmeta") as f:
        late_meta = {f"late_{k}": v for k, v in json.load(f).items()}
    with open(f"{gio}/meta_99.gmeta", "w") as f:
        json.dump(late_meta, f)
    late = gulpio2.GulpChunk(f"{gio}/data_99.gulp", f"{gio}/meta_99.gmeta")
    assert late.chunk_id == 99 and list(late.meta_dict) == ["late_0", "late_1"]
    assert "changed since it was indexed; indexing it again" in capsys.readouterr().err
    # A new chunk under such a name is written as the next data_<N>.gulp.
    fresh = tmp_path / "fresh"
    new = gulpio2.GulpChunk(str(fresh / "videos.gulp"), str(fresh / "videos.gmeta"))
    assert new.chunk_id is None and len(new) == 0 and list(new) == []
    with pytest.warns(UserWarning, match=r"data_0\.gulp"):
        with new.open("wb"):
            new.append(7, {"id": 7}, synthetic_frames(7, 2))
    assert new.chunk_id == 0 and new.data_file_path.endswith("data_0.gulp")
    assert list(new.meta_dict) == ["7"] and new[7][1] == {"id": 7}


# ---- gulpio2.utils --------------------------------------------------------------------


def test_utils_encode_and_decode_as_gulpio2(tmp_path):
    manifest = load_manifest("gulpio2_csv_jpeg")
    utils = gulpio2.utils
    gray_seen = 0
    for item in manifest["items"]:
        paths = utils.find_images_in_folder(os.path.join(FIXTURES, "frames_src", item["id"]))
        assert paths == sorted(paths) and len(paths) == len(item["frames"])
        for image, frame in zip(utils.resize_images(paths), item["frames"]):
            jpeg = utils.img_to_jpeg_bytes(image)  # GulpIO2 wrote exactly these bytes
            assert hashlib.sha256(jpeg).hexdigest() == frame["jpeg_sha256"]
            pixels = utils.jpeg_bytes_to_img(jpeg)
            assert list(pixels.shape) == frame["decoded_shape"]
            assert sha256(pixels) == frame["decoded_sha256_fast"]
            gray_seen += pixels.ndim == 2
    assert gray_seen > 0
    rgb = utils.jpeg_bytes_to_img(utils.img_to_jpeg_bytes(np.zeros((4, 4), np.uint8)), "RGB")
    assert rgb.shape == (4, 4, 3)
    with pytest.raises(ValueError, match="Unsupported img shape"):
        utils.img_to_jpeg_bytes(np.zeros(4, np.uint8))
    assert utils.img_to_jpeg_bytes(synthetic_frames(0, 1)[0], 50) == gulpdb.encode_jpeg(
        synthetic_frames(0, 1)[0], 50
    )


def test_utils_resize_by_short_edge_as_gulpio2(tmp_path):
    utils = gulpio2.utils
    image = synthetic_frames(3, 1, 24, 40)[0]
    path = str(tmp_path / "x.png")
    PIL.Image.fromarray(image).save(path)
    expected = np.asarray(PIL.Image.fromarray(image).resize((26, 16), PIL.Image.BILINEAR))
    for given in (image, PIL.Image.fromarray(image), path):
        out = utils.resize_by_short_edge(given, 16)  # 40 * 16 / 24 = 26.67 -> 26
        assert out.shape == (16, 26, 3) and np.array_equal(out, expected)
    tall = utils.resize_by_short_edge(image.transpose(1, 0, 2).copy(), 12)
    assert tall.shape == (20, 12, 3)
    assert utils.resize_by_short_edge(image[:10, :10], 5).shape == (5, 5, 3)
    assert np.array_equal(utils.resize_by_short_edge(image, 0), image)
    assert [a.shape for a in utils.resize_images([path, path], 12)] == [(12, 20, 3)] * 2
    with pytest.raises(utils.ImageNotFound, match="missing.jpg"):
        list(utils.resize_images([str(tmp_path / "missing.jpg")]))
    (tmp_path / "junk.jpg").write_bytes(b"not an image")
    with pytest.raises(utils.ImageNotFound):
        utils.resize_by_short_edge(str(tmp_path / "junk.jpg"), 8)


def test_utils_files_ids_and_ffmpeg(tmp_path, capsys):
    utils = gulpio2.utils
    for name in ("b.jpg", "a.jpg", "c.png", "d.mp4"):
        (tmp_path / name).write_bytes(b"x")
    jpgs = [str(tmp_path / "a.jpg"), str(tmp_path / "b.jpg")]
    assert utils.find_images_in_folder(str(tmp_path)) == jpgs
    assert utils.find_images_in_folder(str(tmp_path), formats=["png", "jpg"]) == [
        str(tmp_path / n) for n in ("a.jpg", "b.jpg", "c.png")
    ]
    assert utils.get_single_video_path(str(tmp_path)) == str(tmp_path / "d.mp4")
    with pytest.raises(AssertionError, match="found 0"):
        utils.get_single_video_path(str(tmp_path), format_="webm")

    with utils.temp_dir_for_bursting(str(tmp_path)) as burst:
        assert os.path.isdir(burst) and os.path.dirname(burst) == str(tmp_path)
        assert utils.check_ffmpeg_exists()
        video = os.path.join(FIXTURES, "videos_src", "100", "100.mp4")
        frames = utils.burst_video_into_frames(video, burst, frame_rate=8)
        # As many frames as GulpIO2 got from the same clip at 8 fps.
        assert len(frames) == len(load_manifest("gulpio2_json_videos")["items"][0]["frame_info"])
        assert frames == sorted(frames) and all(f.endswith(".jpg") for f in frames)
    assert not os.path.exists(burst)

    out = str(tmp_path / "gulps")
    gulpio2.GulpIngestor(ListAdapter([("1", synthetic_frames(1, 1), {})]), out, 1, 1, quiet=True)()
    entries = [{"id": 1}, {"id": "2"}, {"id": 3}, {"id": "2"}, {"id": 3}]
    assert utils.remove_entries_with_duplicate_ids(out, entries) == [{"id": "2"}, {"id": 3}]
    printed = capsys.readouterr().out
    assert "Id 1 already in GulpDirectory, I skip it!" in printed
    assert "Id 2 more than once in json file, I skip it!" in printed
    with pytest.raises(utils.DuplicateIdException):
        utils.remove_entries_with_duplicate_ids(out, [{"id": "1"}])


@pytest.mark.parametrize("quality", [100, 50])
def test_every_writer_reads_jpeg_write_quality_when_it_writes(tmp_path, monkeypatch, quality):
    """GulpIO2 reads gulpio2.utils._JPEG_WRITE_QUALITY at call time (its own tests
    set it to 100): so do gulpdb's writers, through gulpdb.utils."""
    frames = synthetic_frames(3, 2, 40, 56)
    expected = [gulpdb.encode_jpeg(f, quality) for f in frames]
    assert expected != [gulpdb.encode_jpeg(f, 90) for f in frames]
    monkeypatch.setattr(gulpio2.utils, "_JPEG_WRITE_QUALITY", quality)
    assert gulpio2.utils.img_to_jpeg_bytes(frames[0]) == expected[0]

    # GulpChunk.append, inside and outside an open() block.
    out = str(tmp_path / "chunk")
    chunk = next(iter(gulpio2.GulpDirectory(out).new_chunks(1)))
    with chunk.open("wb"):
        chunk.append("inside", {"n": 1}, frames)
    chunk.append("outside", {"n": 2}, list(frames))
    with gulpdb.Dataset(out) as ds:
        assert ds.read_jpegs("inside") == expected
        assert ds.read_jpegs("outside") == expected

    # ChunkWriter and GulpIngestor (in this process and in worker processes).
    items = [("v0", frames, {"i": 0}), ("v1", frames[:1], {"i": 1})]
    out = str(tmp_path / "writer")
    gd = gulpio2.GulpDirectory(out)
    gulpio2.ChunkWriter(ListAdapter(items)).write_chunk(next(iter(gd.new_chunks(1))), slice(0, 2))
    with gulpdb.Dataset(out) as ds:
        assert ds.read_jpegs("v0") == expected and ds.read_jpegs("v1") == expected[:1]
    for workers in (1, 2):
        out = str(tmp_path / f"ingestor{workers}")
        ingestor = gulpio2.GulpIngestor(ListAdapter(items), out, 2, workers, quiet=True)
        ingestor()
        with gulpdb.Dataset(out) as ds:
            assert ds.read_jpegs("v0") == expected, workers
    # An explicit quality still wins.
    assert gulpio2.utils.img_to_jpeg_bytes(frames[0], 90) == gulpdb.encode_jpeg(frames[0], 90)
