"""A damaged frame on disk is never served silently: every local read path
(Dataset.read / read_jpegs / read_batch / read_jpeg_batch, the GulpIO2 API,
the PyTorch datasets in the main process and in DataLoader workers, the
command's extract and merge) checks each frame's CRC-32C by default and
raises gulpdb.CorruptionError (or exits non-zero) naming the video, the frame
and the file, while the video's intact frames and the other videos read as
before. ``verify_checksums=False`` reads the damaged bytes; a dataset stored
without checksums reads as before and says its frames are unverified."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Any, Dict, List

import numpy as np
import pytest

import gulpdb
from conftest import GULPDB_CLI, synthetic_frames
from gulpdb.fileio import GulpDirectory
from lifecycle.decay import flip_bit

FRAMES = 5
DAMAGED = ("v1", 2)  # (video, frame) whose bytes get one flipped bit


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([GULPDB_CLI, *args], capture_output=True, text=True, timeout=120)


def make(path: str, checksums: bool = True) -> Dict[str, List[bytes]]:
    """Three videos of FRAMES JPEG frames in two chunks; returns their JPEG bytes."""
    with gulpdb.Dataset(path, "x", videos_per_chunk=2, checksums=checksums) as ds:
        with ds.writer() as w:
            for i in range(3):
                w.append(f"v{i}", synthetic_frames(i, FRAMES, 32, 48), {"label": i % 2, "idx": i % 2})
    with gulpdb.Dataset(path) as ds:
        return {id_: ds.read_jpegs(id_) for id_ in ds.ids()}


def damage_frame(path: str, id_: str = DAMAGED[0], frame: int = DAMAGED[1]) -> Dict[str, Any]:
    """Flips one bit in the middle of a frame's JPEG bytes; returns where."""
    with gulpdb.Dataset(path, verify_checksums=False) as ds:
        info = ds.info(id_)
        chunk = next(c for c in ds.chunks() if c.number == info.chunk)
    offset, pad, length = info.frame_info[frame]
    file = os.path.join(path, chunk.file_name)
    flip_bit(file, offset + (length - pad) // 2, 2)
    return {"file": file, "offset": offset, "crc": info.checksums[frame] if info.checksums else None}


def damage_pattern(where: Dict[str, Any]) -> str:
    """What the error must say: the video, the frame, the file and the offset."""
    id_, frame = DAMAGED
    return (rf"'{id_}' frame {frame}\b.*checksum mismatch.*offset {where['offset']} of "
            rf"{re.escape(where['file'])}.*index stores 0x{where['crc']:08x}")


@pytest.fixture
def damaged(tmp_path):
    path = str(tmp_path / "ds")
    frames = make(path)
    where = damage_frame(path)
    return path, frames, where


def test_every_dataset_read_of_a_damaged_frame_raises(damaged):
    path, frames, where = damaged
    pattern = damage_pattern(where)
    ds = gulpdb.Dataset(path)  # verify_checksums is on by default
    reads = {
        "read": lambda: ds.read("v1"),
        "read [2]": lambda: ds.read("v1", [2]),
        "read 1:4 sized": lambda: ds.read("v1", slice(1, 4), size=(16, 16)),
        "ds[id, 2]": lambda: ds["v1", 2],
        "read_jpegs": lambda: ds.read_jpegs("v1"),
        "read_jpegs [2]": lambda: ds.read_jpegs("v1", [2]),
        "read_batch": lambda: ds.read_batch(["v0", "v1"]),
        "read_jpeg_batch": lambda: ds.read_jpeg_batch(["v2", "v1"]),
    }
    for name, read in reads.items():
        with pytest.raises(gulpdb.CorruptionError, match=pattern):
            read()
        print(name, "refused")
    # The checksum is per frame: the video's other frames, and other videos, read.
    intact = [0, 1, 3, 4]
    assert ds.read_jpegs("v1", intact) == [frames["v1"][i] for i in intact]
    assert ds.read("v1", intact).shape == (4, 32, 48, 3)
    assert ds.read_jpegs("v0") == frames["v0"]
    assert ds.read_batch(["v0", "v2"])[1].shape == (FRAMES, 32, 48, 3)


def test_verify_checksums_false_reads_the_damaged_bytes(damaged):
    path, frames, _ = damaged
    ds = gulpdb.Dataset(path, verify_checksums=False)
    got = ds.read_jpegs("v1", [2])[0]
    want = frames["v1"][2]
    assert len(got) == len(want) and got != want
    assert sum(bin(a ^ b).count("1") for a, b in zip(got, want)) == 1


def test_the_gulpio2_api_refuses_a_damaged_frame(damaged):
    path, frames, where = damaged
    pattern = damage_pattern(where)
    gd = GulpDirectory(path)
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        gd["v1"]
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        gd["v1", [2]]
    raw = GulpDirectory(path, jpeg_decoder=lambda b: b)  # a custom decoder gets checked bytes
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        raw["v1", 1:3]
    chunk = gd.chunk_objs_lookup[gd.chunk_lookup["v1"]]
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        list(chunk)  # iteration over the chunk's videos
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        chunk.read_frames("v1")
    frames_read, meta = raw["v1", [0, 1, 3]]
    assert frames_read == [frames["v1"][i] for i in (0, 1, 3)] and meta == {"label": 1, "idx": 1}
    assert len(gd["v2"][0]) == FRAMES
    unchecked = GulpDirectory(path, jpeg_decoder=lambda b: b, verify_checksums=False)
    assert unchecked["v1", [2]][0][0] != frames["v1"][2]


def test_the_torch_datasets_refuse_a_damaged_frame(damaged):
    torch = pytest.importorskip("torch")
    import gulpdb.torch as gt

    path, _, where = damaged
    pattern = damage_pattern(where)
    videos = gt.VideoDataset(path, label="idx")
    position = videos.ids.index("v1")
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        videos[position]
    assert videos[videos.ids.index("v0")][0].shape == (FRAMES, 32, 48, 3)
    segments = gt.VideoDataset(path, ids=["v1"], num_frames=5, sampling="segments")
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        segments[0]
    # Clips that miss frame 2 (frames 0 and 3, or 1 and 4) read.
    clips = gt.VideoDataset(path, ids=["v1"], num_frames=2, sampling="clip", stride=3, seed=None)
    for _ in range(4):
        assert clips[0].shape == (2, 32, 48, 3)
    images = gt.ImageDataset(path, ids=["v1", "v0"], frame=2)
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        images[0]
    assert images[1].shape == (32, 48, 3)
    iterable = gt.IterableVideoDataset(path)
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        list(iterable)
    # In a DataLoader worker the error reaches the main process.
    loader = torch.utils.data.DataLoader(videos, batch_size=None, num_workers=1)
    with pytest.raises(Exception, match=r"'v1' frame 2\b.*checksum mismatch"):
        list(loader)


def test_the_command_refuses_a_damaged_frame_but_extracts_the_intact_ones(damaged, tmp_path):
    path, frames, where = damaged
    out = str(tmp_path / "x")
    r = cli("extract", path, "v1", "-o", out)
    assert r.returncode == 1 and re.search(damage_pattern(where), r.stderr), r.stderr
    assert not os.path.exists(out)  # nothing written
    r = cli("extract", path, "v1", "-o", out, "--frames", "0,1,3,4")
    assert r.returncode == 0, r.stderr
    for i in (0, 1, 3, 4):
        with open(os.path.join(out, f"v1_{i:05d}.jpg"), "rb") as f:
            assert f.read() == frames["v1"][i]
    assert sorted(os.listdir(out)) == [f"v1_{i:05d}.jpg" for i in (0, 1, 3, 4)]
    # Merging by copy would write the frame under a fresh checksum: refused,
    # and the output it created goes (into an existing one nothing is merged).
    r = cli("merge", str(tmp_path / "merged"), path, "-q")
    assert r.returncode == 1 and re.search(damage_pattern(where), r.stderr), r.stderr
    assert not os.path.exists(tmp_path / "merged")
    make(str(tmp_path / "existing"))
    r = cli("merge", str(tmp_path / "existing"), path, "-q", "--on-duplicate", "replace")
    assert r.returncode == 1 and re.search(damage_pattern(where), r.stderr), r.stderr
    existing = gulpdb.Dataset(str(tmp_path / "existing"))
    assert existing.read_jpegs("v1") == frames["v1"]  # its own v1 (checked), not replaced
    assert len(existing) == 3
    r = cli("check", path, "--deep", "--json", "-q")
    report = json.loads(r.stdout)
    assert r.returncode == 1 and not report["healthy"]
    assert any("'v1' frame 2" in where for where, _ in
               [(p["where"], p["what"]) for p in report["problems"]])


def test_a_dataset_without_checksums_reads_unverified_and_says_so(tmp_path):
    path = str(tmp_path / "plain")
    frames = make(path, checksums=False)
    damage_frame(path)
    ds = gulpdb.Dataset(path)
    got = ds.read_jpegs("v1")  # nothing to check against: as before
    assert got[2] != frames["v1"][2] and got[:2] == frames["v1"][:2]
    stats = ds.stats()
    assert not stats.checksums
    assert (stats.unverified_videos, stats.unverified_chunks) == (3, 2)
    report = gulpdb.check(path)
    assert report["healthy"]
    assert (report["unverified_videos"], report["unverified_chunks"]) == (3, 2)
    assert any("read unverified" in n for n in report["notes"])
    info = json.loads(cli("info", path, "--json").stdout)
    assert (info["checksums"], info["unverified_videos"], info["unverified_chunks"]) == (
        False, 3, 2)
    r = cli("info", path)
    assert re.search(r"checksums: +none: the frames of 3 videos \(in 2 chunks\) are read "
                     r"unverified", r.stdout), r.stdout
    r = cli("check", path)
    assert r.returncode == 0 and "3 videos unverified" in r.stdout, r.stdout
    assert "read unverified" in r.stdout
    check_json = json.loads(cli("check", path, "--json", "-q").stdout)
    assert (check_json["unverified_videos"], check_json["unverified_chunks"]) == (3, 2)

    summed = str(tmp_path / "summed")
    make(summed)
    stats = gulpdb.Dataset(summed).stats()
    assert stats.checksums and (stats.unverified_videos, stats.unverified_chunks) == (0, 0)
    assert "checked on every read" in cli("info", summed).stdout
    assert gulpdb.check(summed)["unverified_videos"] == 0


def test_a_gulpio_directory_imported_without_checksums_reads_unverified(gulpio_copy, tmp_path):
    path = gulpio_copy("gulpio2_csv_jpeg")
    assert cli("import", path, "--no-checksums", "-q").returncode == 0
    stats = gulpdb.Dataset(path).stats()
    assert stats.unverified_videos == stats.videos > 0
    assert "read unverified" in cli("info", path).stdout
    gd = GulpDirectory(path)
    first = next(iter(gd.merged_meta_dict))
    assert len(gd[first][0]) > 0
    # Imported with checksums (the default), the same damage is refused.
    other = str(tmp_path / "with")
    shutil.copytree(path, other, ignore=shutil.ignore_patterns("gulpdb.index"))
    assert cli("import", other, "-q").returncode == 0
    with gulpdb.Dataset(other) as ds:
        info = ds.info(first)
        chunk = next(c for c in ds.chunks() if c.number == info.chunk)
        assert ds.stats().unverified_videos == 0
    offset, pad, length = info.frame_info[0]
    flip_bit(os.path.join(other, chunk.file_name), offset + (length - pad) // 2, 2)
    message = rf"'{first}' frame 0\b.*checksum mismatch.*{re.escape(chunk.file_name)}"
    with pytest.raises(gulpdb.CorruptionError, match=message):
        gulpdb.Dataset(other).read_jpegs(first)
    with pytest.raises(gulpdb.CorruptionError, match=message):
        GulpDirectory(other)[first]
    # Unverified, the same bytes read as before.
    assert len(gulpdb.Dataset(path).read_jpegs(first)) == len(info.frame_info)


def test_gulpio_chunks_the_index_does_not_know_read_as_before(gulpio_copy):
    """A chunk only its .gmeta describes (GulpIO2 wrote it after the index was
    built, under a name the importer does not take) has no checksums: read as
    GulpIO2 reads it."""
    path = gulpio_copy("gulpio2_csv_jpeg")
    gd = GulpDirectory(path)
    known = next(iter(gd))
    shutil.copy(known.data_file_path, os.path.join(path, "extra.gulp"))
    shutil.copy(known.meta_file_path, os.path.join(path, "extra.gmeta"))
    from gulpdb.fileio import GulpChunk

    extra = os.path.join(path, "extra.gulp")
    chunk = GulpChunk(extra, os.path.join(path, "extra.gmeta"), jpeg_decoder=lambda b: b)
    first = next(iter(chunk.meta_dict))
    clean = chunk.read_frames(first)[0]
    offset, pad, length = chunk.meta_dict[first]["frame_info"][0]
    flip_bit(extra, offset + (length - pad) // 2, 2)
    frames = chunk.read_frames(first)[0]
    assert frames[1:] == clean[1:] and frames[0] != clean[0] and len(frames[0]) == len(clean[0])
    assert len(list(chunk)) == len(known) > 0
