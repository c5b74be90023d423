"""Each gulpdb error kind becomes the Python exception the package documents."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import numpy as np
import pytest

import gulpdb
from conftest import FIXTURES, GULPDB_CLI, PYTHON, python_subprocess_env, synthetic_frames


def test_exception_classes():
    assert issubclass(gulpdb.BusyError, OSError)
    assert issubclass(gulpdb.CorruptionError, OSError)
    assert gulpdb.BusyError.__module__ == "gulpdb" and gulpdb.BusyError.__doc__
    assert gulpdb.CorruptionError.__doc__


def test_missing_id_is_key_error(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    for call in (
        lambda: ds.read("nope"),
        lambda: ds.read_jpegs("nope"),
        lambda: ds.meta("nope"),
        lambda: ds.info("nope"),
        lambda: ds.frame_count("nope"),
        lambda: ds.read_batch(["video_0", "nope"]),
    ):
        with pytest.raises(KeyError, match="nope"):
            call()


def test_frame_index_out_of_range_is_index_error(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    with pytest.raises(IndexError, match="out of range"):
        ds.read("video_0", [6])
    with pytest.raises(IndexError):
        ds.read("video_0", [-7])
    with pytest.raises(IndexError):
        ds.read_jpegs("video_0", np.array([100]))


def test_invalid_arguments_are_value_errors(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    with pytest.raises(ValueError, match="step"):
        ds.read("video_0", slice(None, None, 0))
    with pytest.raises(ValueError, match="mode"):
        gulpdb.Dataset(small_dataset.path, "rw")
    # A frame that is not JPEG is refused by the writer as bad input.
    ds.close()
    with gulpdb.Dataset(small_dataset.path, "r+") as rw, rw.writer() as w:
        with pytest.raises(ValueError):
            w.append("bad", [b"\x00\x01"])


def test_a_build_has_the_codecs_it_says_and_refuses_the_others_clearly(tmp_path):
    """gulpdb.codecs is what the build can do: an h264 dataset is made where it
    names h264, and refused with a one-line reason (leaving nothing) where it
    does not, from Python and from the command line."""
    assert gulpdb.codecs in (("jpeg",), ("jpeg", "h264"))
    path = str(tmp_path / "clips")
    with pytest.raises(ValueError) as info:
        gulpdb.Dataset(path, "x", codec="vp9")
    assert str(info.value) == f"{path}: codec must be 'jpeg' or 'h264', not 'vp9'"
    assert not os.path.exists(path)
    out = str(tmp_path / "ingested")
    ingest = [GULPDB_CLI, "ingest", out, "--videos-dir", os.path.join(FIXTURES, "videos_src"),
              "--codec", "h264", "-q"]
    created = str(tmp_path / "created")
    create = [GULPDB_CLI, "create", created, "--codec", "h264"]
    result = subprocess.run([GULPDB_CLI, "create", created, "--codec", "vp9"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "--codec must be jpeg or h264, not 'vp9'" in result.stderr, result.stderr
    assert not os.path.exists(created)
    if "h264" in gulpdb.codecs:
        result = subprocess.run(create, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert gulpdb.Dataset(created).codec == "h264"
        with gulpdb.Dataset(path, "x", codec="h264") as ds:
            assert ds.codec == "h264" and ds.stats().codec == "h264"
        assert gulpdb.Dataset(path).codec == "h264"
        result = subprocess.run(ingest, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        assert gulpdb.Dataset(out).codec == "h264" and len(gulpdb.Dataset(out)) > 0
        return
    with pytest.raises(ValueError) as info:
        gulpdb.Dataset(path, "x", codec="h264")
    assert path in str(info.value) and "no H.264 support" in str(info.value), info.value
    assert not os.path.exists(path)
    result = subprocess.run(ingest, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "no H.264 support" in result.stderr and out in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not os.path.exists(out)
    result = subprocess.run(create, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "no H.264 support" in result.stderr and created in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not os.path.exists(created)


def test_missing_dataset_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        gulpdb.Dataset(str(tmp_path / "none"))
    assert info.value.errno == errno.ENOENT
    os.mkdir(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="no gulpdb index"):
        gulpdb.Dataset(str(tmp_path / "empty"))


def test_second_writer_is_busy_error_across_processes(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path, "r+")
    with ds.writer():
        with pytest.raises(gulpdb.BusyError) as info:
            ds.writer()
        assert info.value.errno == errno.EBUSY
        script = (
            "import gulpdb, sys\n"
            "ds = gulpdb.Dataset(sys.argv[1], 'r+')\n"
            "try:\n"
            "    ds.writer()\n"
            "except gulpdb.BusyError as e:\n"
            "    assert isinstance(e, OSError)\n"
            "    print('busy')\n"
        )
        out = subprocess.run(
            [PYTHON, "-c", script, small_dataset.path],
            env=python_subprocess_env(), capture_output=True, text=True, timeout=60,
        )
        assert out.stdout.strip() == "busy", out.stderr
    with ds.writer():  # the lock is free again
        pass


def test_corrupt_frame_is_corruption_error(tmp_path):
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "x", checksums=True) as ds, ds.writer() as w:
        w.append("v", synthetic_frames(0, 2, 64, 64))
    ds = gulpdb.Dataset(path, verify_checksums=False)
    offset, pad, length = ds.info("v").frame_info[0]
    chunk = os.path.join(path, "data_0.gulp")
    with open(chunk, "r+b") as f:
        f.seek(offset + 2)
        f.write(b"\x00" * (length - pad - 4))  # wipe everything but SOI and EOI
    # Without checksum verification the decoder finds the damage.
    with pytest.raises(gulpdb.CorruptionError) as info:
        ds.read("v")
    assert isinstance(info.value, OSError) and "frame 0" in str(info.value)
    assert len(ds.read_jpegs("v")) == 2  # the raw bytes can still be read
    # With it (the default) the damage is seen without decoding.
    checked = gulpdb.Dataset(path)
    for read in (checked.read_jpegs, checked.read):
        with pytest.raises(gulpdb.CorruptionError, match="'v' frame 0.*checksum mismatch"):
            read("v")
    with pytest.raises(gulpdb.CorruptionError):
        gulpdb.decode_jpeg(b"\xff\xd8\xff\xd9")


def test_io_failure_is_os_error(tmp_path):
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        w.append("v", synthetic_frames(0, 1))
    chunk = os.path.join(path, "data_0.gulp")
    os.remove(chunk)
    os.mkdir(chunk)  # reading a directory fails with EISDIR
    ds = gulpdb.Dataset(path)
    with pytest.raises(OSError) as info:
        ds.read("v")
    assert not isinstance(info.value, (gulpdb.CorruptionError, gulpdb.BusyError))
    shutil.rmtree(chunk)
    with pytest.raises(FileNotFoundError):  # a missing chunk file is not a missing id
        gulpdb.Dataset(path).read("v")


def test_resource_exhausted_is_memory_error():
    jpeg = bytearray(gulpdb.encode_jpeg(np.zeros((8, 8, 3), np.uint8)))
    sof = jpeg.find(b"\xff\xc0")
    jpeg[sof + 5 : sof + 9] = (60000).to_bytes(2, "big") * 2  # claims 60000×60000 pixels
    with pytest.raises(MemoryError, match="limit"):
        gulpdb.decode_jpeg(bytes(jpeg))



def test_resource_exhausted_keeps_its_type_through_a_dataset_read(tmp_path):
    # The dataset adds the id and frame to the codec's error; the error must
    # stay a memory error (typed, not recognised by its text).
    jpeg = bytearray(gulpdb.encode_jpeg(np.zeros((8, 8, 3), np.uint8)))
    sof = jpeg.find(b"\xff\xc0")
    jpeg[sof + 5 : sof + 9] = (60000).to_bytes(2, "big") * 2
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        w.append("bomb", [bytes(jpeg)])
    ds = gulpdb.Dataset(path)
    with pytest.raises(MemoryError, match="frame 0.*limit"):
        ds.read("bomb")
    with pytest.raises(KeyError):
        ds.read("missing")


def test_damaged_index_is_corruption_error(tmp_path):
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        for i in range(40):
            w.append(f"v{i}", synthetic_frames(i, 1, 8, 8), meta={"tag": f"needle-{i:03d}"})
    index = os.path.join(path, "gulpdb.index", "data.mdb")
    with open(index, "rb") as f:
        original = f.read()

    # A flipped byte inside one record: its seal no longer matches.
    at = original.index(b"needle-017")
    with open(index, "r+b") as f:
        f.seek(at + 7)
        f.write(b"9")
    ds = gulpdb.Dataset(path)
    with pytest.raises(gulpdb.CorruptionError, match="v17.*record checksum mismatch"):
        ds.meta("v17")
    assert ds.meta("v16") == {"tag": "needle-016"}
    ds.close()

    # Pages overwritten: verify_index refuses the file before LMDB reads it.
    page = 4096
    damaged = original[: 2 * page] + bytes(len(original) - 2 * page)
    with open(index, "wb") as f:
        f.write(damaged)
    with pytest.raises(gulpdb.CorruptionError, match="index is damaged"):
        gulpdb.Dataset(path, verify_index=True)
    # A truncated index is refused by every open, verified or not.
    with open(index, "wb") as f:
        f.write(original[: 3 * page])
    with pytest.raises(gulpdb.CorruptionError, match="truncated"):
        gulpdb.Dataset(path)
