"""`gulpdb ingest --codec h264` and `gulpdb export` of an h264 dataset, end to end.

Videos made by ffmpeg (testsrc2, and a 161x121 one that 4:2:0 cannot hold)
and cockatoo.mp4 (python3-imageio's), ingested by the command line with
--codec jpeg and with --codec h264 --gop 8 at the same --frame-size:

* the h264 dataset has the JPEG dataset's frames: the same count and size,
  close in pixels (PSNR >= 35 dB: the default --crf is chosen for it), in at
  most a third of the bytes;
* any frame read alone, in random order, equals the same frame of a read of
  the whole video, and ffmpeg's decoding of the stored stream;
* `gulpdb export` writes a GulpIO directory that an independent GulpIO
  reader (lifecycle/gulpio_format.py) and the GulpIO2 API read: JPEG frames
  close to the h264 dataset's, the same meta_data and label2idx.json, and the
  h264 dataset untouched; a failed export leaves nothing;
* errors: another codec's dataset, frame folders (with --codec h264, and
  into an h264 dataset made by `create --codec h264`), frames appended from
  Python, an encoder that fails or stops reading (no SIGPIPE), export
  without -o;
* a one-frame video keeps its frame at any --frame-rate, with either codec.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import stat
import subprocess
from typing import Dict, List

import numpy as np
import pytest

import gulpdb
from conftest import GULPDB_CLI
from lifecycle import gulpio_format
from lifecycle.decay import flip_bit

COCKATOO_PATHS = [
    "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4",
    "/usr/share/python3-imageio/cockatoo.mp4",
]
COCKATOO = next((p for p in COCKATOO_PATHS if os.path.isfile(p)), None)
FRAME_SIZE = 240
IDS = ["testsrc2", "cockatoo", "odd"]

# Deselected (and reported) in a build without H.264 (conftest.py);
# test_errors.py checks that such a build refuses h264 clearly.
pytestmark = pytest.mark.h264


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([GULPDB_CLI, *args], capture_output=True, text=True, timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(f"gulpdb {' '.join(args)} failed: {result.stderr}")
    return result


def ffmpeg(*args: str, input: bytes = b"") -> bytes:
    return subprocess.run(["ffmpeg", "-nostdin", "-v", "error", *args], input=input,
                          capture_output=True, check=True, timeout=120).stdout


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def tree_digest(path: str) -> Dict[str, str]:
    """Every file below `path` -> its SHA-256 and mode (what 'untouched' means),
    but LMDB's lock file, whose reader table every open writes."""
    out = {}
    for root, _, files in os.walk(path):
        for name in files:
            if name == "lock.mdb":
                continue
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                out[os.path.relpath(full, path)] = (
                    hashlib.sha256(f.read()).hexdigest() + oct(os.stat(full).st_mode))
    return out


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    if COCKATOO is None:
        pytest.fail("cockatoo.mp4 (python3-imageio) is missing: scripts/setup.sh installs it")
    root = tmp_path_factory.mktemp("h264io")
    videos = root / "videos"
    videos.mkdir()
    # 4 s of testsrc2 (32 frames at the default 8 fps) and 2 s at 161x121.
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "4",
           "-pix_fmt", "yuv420p", str(videos / "testsrc2.mp4"))
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-t", "2", "-vf",
           "scale=161:121", "-pix_fmt", "yuv444p", "-c:v", "libx264", str(videos / "odd.mkv"))
    shutil.copy(COCKATOO, videos / "cockatoo.mp4")
    labels = root / "labels.csv"
    labels.write_text("testsrc2;pattern\ncockatoo;bird\nodd;pattern\n")
    jpeg, h264 = str(root / "jpeg"), str(root / "h264")
    common = ["--videos-dir", str(videos), "--labels", str(labels), "-q"]
    run("ingest", jpeg, *common, "--frame-size", str(FRAME_SIZE))
    run("ingest", h264, *common, "--frame-size", str(FRAME_SIZE), "--codec", "h264",
        "--gop", "8")
    return {"root": root, "videos": str(videos), "labels": str(labels), "jpeg": jpeg,
            "h264": h264}


def test_h264_ingest_has_the_jpeg_paths_frames_in_a_third_of_the_bytes(datasets):
    jpeg, h264 = gulpdb.Dataset(datasets["jpeg"]), gulpdb.Dataset(datasets["h264"])
    assert sorted(h264.ids()) == sorted(jpeg.ids()) == sorted(IDS)
    for id_ in IDS:
        assert h264.frame_count(id_) == jpeg.frame_count(id_) > 0, id_
        assert h264.meta_data(id_) == jpeg.meta_data(id_)
        a, b = np.asarray(jpeg.read(id_)), np.asarray(h264.read(id_))
        assert a.shape == b.shape, id_
        if id_ == "odd":  # 161x121 at --frame-size 240: an odd width
            assert a.shape[1:] == (FRAME_SIZE, 319, 3)
        quality = psnr(a, b)
        assert quality >= 35, f"{id_}: {quality:.2f} dB against the JPEG path"
        worst = min(psnr(x, y) for x, y in zip(a, b))
        assert worst >= 33, f"{id_}: a frame at {worst:.2f} dB"
        stream = len(h264.read_h264_stream(id_))
        jpegs = sum(len(j) for j in jpeg.read_jpegs(id_))
        assert stream * 3 <= jpegs, f"{id_}: {stream} bytes of H.264 against {jpegs} of JPEG"


def test_any_frame_read_alone_in_random_order_is_the_streams_frame(datasets):
    h264 = gulpdb.Dataset(datasets["h264"])
    rng = random.Random(23)
    for id_ in IDS:
        whole = np.asarray(h264.read(id_))
        n, height, width, _ = whole.shape
        # ffmpeg's decoding of the stored stream, from its start.
        decoded = np.frombuffer(
            ffmpeg("-f", "h264", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "rgb24", "-",
                   input=h264.read_h264_stream(id_)), np.uint8)
        assert decoded.size == whole.size, id_
        assert np.array_equal(decoded.reshape(whole.shape), whole), id_
        order = list(range(n))
        rng.shuffle(order)
        for k in order:
            frame = np.asarray(h264.read(id_, [k]))[0]
            assert np.array_equal(frame, whole[k]), f"{id_} frame {k}"
        for _ in range(4):  # contiguous clips of 5 frames, across GOP boundaries too
            start = rng.randrange(n - 5)
            assert np.array_equal(np.asarray(h264.read(id_, slice(start, start + 5))),
                                  whole[start:start + 5]), id_


def test_an_odd_frame_size_is_stored_as_444(datasets):
    stream = gulpdb.Dataset(datasets["h264"]).read_h264_stream("odd")
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-f", "h264", "-show_entries", "stream=pix_fmt,width,height",
         "-of", "json", "pipe:0"], input=stream, capture_output=True, check=True).stdout
    info = json.loads(probe)["streams"][0]
    assert (info["pix_fmt"], info["width"], info["height"]) == ("yuv444p", 319, FRAME_SIZE)


def test_export_writes_a_gulpio_directory_of_jpeg_frames(datasets, tmp_path):
    h264_dir = datasets["h264"]
    before = tree_digest(h264_dir)
    out = str(tmp_path / "gulpio")
    result = run("export", h264_dir, "-o", out)
    assert "as JPEG" in result.stdout
    assert tree_digest(h264_dir) == before  # the h264 dataset is untouched

    h264 = gulpdb.Dataset(h264_dir)
    # An independent reader of GulpIO's format (pairs, pads, frame_info).
    view = gulpio_format.read_directory(gulpio_format.LocalFiles(out))
    assert sorted(view.videos) == sorted(IDS)
    with open(os.path.join(h264_dir, "label2idx.json")) as f:
        assert view.label2idx == json.load(f) == {"bird": 0, "pattern": 1}
    for id_ in IDS:
        jpegs, meta_data = view.videos[id_]
        assert meta_data == h264.meta_data(id_)
        frames = np.asarray(h264.read(id_))
        assert len(jpegs) == len(frames)
        for jpeg_bytes, frame in zip(jpegs, frames):
            decoded = np.asarray(gulpdb.decode_jpeg(jpeg_bytes))
            assert decoded.shape == frame.shape
            assert psnr(decoded, frame) >= 35, id_
    # The GulpIO2 API reads it as GulpIO2 would (it indexes a copy in place).
    copy = str(tmp_path / "copy")
    shutil.copytree(out, copy)
    gd = gulpdb.GulpDirectory(copy, quiet=True)
    frames, meta = gd["cockatoo"]
    assert meta == h264.meta("cockatoo")
    assert len(frames) == h264.frame_count("cockatoo")


def test_export_from_python_writes_what_the_command_writes(datasets, tmp_path):
    h264 = gulpdb.Dataset(datasets["h264"])
    by_cli = str(tmp_path / "cli")
    run("export", datasets["h264"], "-o", by_cli)
    by_py = tmp_path / "py"
    by_py.mkdir()
    calls = []
    report = gulpdb.export_gulpio(h264, by_py, quality=90,
                                  progress=lambda done, total: calls.append((done, total)))
    assert tree_digest(str(by_py)) == tree_digest(by_cli)
    assert report["videos"] == len(IDS) and report["frames"] == sum(
        h264.frame_count(i) for i in IDS)
    assert report["data_bytes"] > 0 and calls and calls[-1] == (len(IDS), len(IDS))
    with pytest.raises(ValueError, match="quality must be 1-100"):
        gulpdb.export_gulpio(h264, tmp_path / "q", quality=0)
    with pytest.raises(FileNotFoundError):
        gulpdb.export_gulpio(h264, tmp_path / "missing")


def test_a_failed_export_leaves_nothing(datasets, tmp_path):
    # No -o: a usage error (an h264 dataset's chunks are not GulpIO's).
    result = run("export", datasets["h264"], check=False)
    assert result.returncode == 2 and "-o OUT" in result.stderr
    # Into a directory that already holds GulpIO files: refused, untouched.
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "data_0.gulp").write_bytes(b"x")
    result = run("export", datasets["h264"], "-o", str(busy), check=False)
    assert result.returncode != 0 and "already holds GulpIO files" in result.stderr
    assert sorted(os.listdir(busy)) == ["data_0.gulp"]
    # A damaged packet of the last video fails the export after the first
    # videos were written: nothing stays, in a new directory or an existing one.
    damaged = str(tmp_path / "damaged")
    shutil.copytree(datasets["h264"], damaged)
    last = gulpdb.Dataset(damaged).ids()[-1]  # exported last
    info = gulpdb.Dataset(damaged).info(last)
    chunk = [c for c in gulpdb.Dataset(damaged).chunks() if c.number == info.chunk][0]
    path = os.path.join(damaged, chunk.file_name)
    offset = info.frame_info[3][0] + 20
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    for target in [tmp_path / "new_out", tmp_path / "existing_out"]:
        if target.name == "existing_out":
            target.mkdir()
            (target / "keep.txt").write_text("mine")
        result = run("export", damaged, "-o", str(target), check=False)
        assert result.returncode != 0, result.stdout
        assert last in result.stderr
        left = sorted(os.listdir(target)) if target.exists() else []
        assert left == ([] if target.name == "new_out" else ["keep.txt"]), left


def test_a_damaged_packet_is_refused_by_extract_export_and_merge(datasets, tmp_path):
    """One flipped bit in a packet: `extract` of a frame decoded from it, the
    export (which would re-encode it into a clean-looking JPEG) and a merge by
    copy fail naming the video, the frame and the file; extract of another
    group of pictures works (the CRC is per packet)."""
    copy = str(tmp_path / "h264")
    shutil.copytree(datasets["h264"], copy)
    h264 = gulpdb.Dataset(copy, verify_checksums=False)
    info = h264.info("testsrc2")
    chunk = next(c for c in h264.chunks() if c.number == info.chunk)
    chunk_path = os.path.join(copy, chunk.file_name)
    offset, pad, length = info.frame_info[9]  # GOP 8..15
    flip_bit(chunk_path, offset + (length - pad) // 2, 1)
    pattern = rf"'testsrc2' frame 9\b.*checksum mismatch.*offset {offset} of {chunk_path}"

    result = run("extract", copy, "testsrc2", "-o", str(tmp_path / "x"), "--frames", "12",
                 check=False)
    assert result.returncode == 1 and re.search(pattern, result.stderr), result.stderr
    assert not os.path.exists(tmp_path / "x")
    run("extract", copy, "testsrc2", "-o", str(tmp_path / "y"), "--frames", "0,1,2,3,4,5,6,7,16")
    assert len(os.listdir(tmp_path / "y")) == 9

    result = run("export", copy, "-o", str(tmp_path / "gulpio"), check=False)
    assert result.returncode == 1 and re.search(pattern, result.stderr), result.stderr
    assert not os.path.exists(tmp_path / "gulpio")
    # From Python, also from a dataset opened without checks.
    (tmp_path / "py").mkdir()
    with pytest.raises(gulpdb.CorruptionError, match=pattern):
        gulpdb.export_gulpio(h264, tmp_path / "py")
    assert os.listdir(tmp_path / "py") == []

    result = run("merge", str(tmp_path / "merged"), copy, "-q", check=False)
    assert result.returncode == 1 and re.search(pattern, result.stderr), result.stderr


def test_ingest_errors(datasets, tmp_path):
    # Into a dataset of the other codec: refused before anything is written.
    before = tree_digest(datasets["jpeg"])
    result = run("ingest", datasets["jpeg"], "--videos-dir", datasets["videos"], "--codec",
                 "h264", "-q", check=False)
    assert result.returncode != 0
    assert "stores its frames as jpeg, not h264" in result.stderr
    assert tree_digest(datasets["jpeg"]) == before
    # Frame folders and --keep-jpeg are JPEG only.
    result = run("ingest", str(tmp_path / "f"), "--frames-dir", str(tmp_path), "--codec", "h264",
                 check=False)
    assert result.returncode == 2 and "--codec h264 stores videos" in result.stderr
    assert not (tmp_path / "f").exists()


def test_frames_into_an_h264_dataset_are_refused_with_advice_that_works(datasets, tmp_path):
    """`gulpdb create --codec h264` makes an h264 dataset, as Python's codec="h264"
    does. Frame folders and images ingested into it are refused, before anything
    is written, saying that an h264 dataset holds videos only: never advising
    `--codec h264`, which refuses frames too."""
    out = str(tmp_path / "clips")
    gulpdb.Dataset(out, "x", codec="h264").close()
    before = tree_digest(out)
    frames = os.path.join(os.path.dirname(__file__), "..", "fixtures", "frames_src")
    for source, what in [("--frames-dir", "frame folders"), ("--images-dir", "images")]:
        result = run("ingest", out, source, frames, "-q", check=False)
        assert result.returncode == 1, result.stderr
        assert "the dataset stores its frames as h264, which holds videos only, not " + what in \
            result.stderr, result.stderr
        assert "--codec h264" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert tree_digest(out) == before
    # And the advice it gives works: the same frames go into a JPEG dataset.
    jpeg = str(tmp_path / "frames")
    run("ingest", jpeg, "--frames-dir", frames, "--keep-jpeg", "-q")
    assert len(gulpdb.Dataset(jpeg)) > 0
    # `gulpdb create --codec h264` makes the same kind of dataset, which videos go
    # into as with `ingest --codec h264`.
    made = str(tmp_path / "made")
    created = run("create", made, "--codec", "h264", "--videos-per-chunk", "3")
    assert created.stdout.strip() == f"created {made}", created.stdout
    with gulpdb.Dataset(made) as ds:
        assert ds.codec == "h264" and ds.stats().videos_per_chunk == 3 and len(ds) == 0
    run("ingest", made, "--videos-dir", datasets["videos"], "--codec", "h264", "-q")
    assert sorted(gulpdb.Dataset(made).ids()) == sorted(IDS)


def test_a_one_frame_video_yields_its_frame_at_any_frame_rate(tmp_path):
    """A video shorter than one frame period at --frame-rate (one frame at the
    default 8 fps, which ffmpeg's fps filter drops) keeps its frame, with either
    codec; longer videos keep ffmpeg's count."""
    videos = tmp_path / "videos"
    videos.mkdir()
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "1",
           "-pix_fmt", "yuv420p", str(videos / "one.mp4"))
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "10",
           "-pix_fmt", "yuv420p", str(videos / "ten.mp4"))
    for codec in ["jpeg", "h264"]:
        for rate in ["8", "0.5", "0"]:
            out = str(tmp_path / f"{codec}_{rate}")
            result = run("ingest", out, "--videos-dir", str(videos), "--codec", codec,
                         "--frame-rate", rate, "--strict", "-q")
            assert "0 bad sources" in result.stdout, result.stdout
            with gulpdb.Dataset(out) as ds:
                assert ds.info("one").frame_count == 1, (codec, rate)
                # ffmpeg's fps filter's count; 0.4 s is shorter than a period at 0.5 fps.
                want = {"8": 3, "0.5": 1, "0": 10}[rate]
                assert ds.info("ten").frame_count == want, (codec, rate)
                assert ds.read("one").shape == (1, 48, 64, 3)


def test_numpy_frames_appended_to_an_h264_dataset_are_described_as_what_they_are(tmp_path):
    """Writer.append on an h264 dataset is refused (ValueError) naming what was
    given (uint8 images, JPEG bytes) and the way in (append_h264), before any
    frame is encoded; nothing is appended."""
    path = str(tmp_path / "clips")
    jpeg = gulpdb.encode_jpeg(np.zeros((8, 8, 3), np.uint8))
    cases = [(np.zeros((2, 8, 8, 3), np.uint8), "here uint8 images"),
             ([np.zeros((8, 8), np.uint8)], "here uint8 images"),
             ([jpeg], "here JPEG bytes"),
             ([np.zeros((8, 8, 3), np.uint8), jpeg], "here uint8 images and JPEG bytes")]
    with gulpdb.Dataset(path, "x", codec="h264") as ds, ds.writer() as w:
        for frames, given in cases:
            with pytest.raises(ValueError) as info:
                w.append("a", frames)
            message = str(info.value)
            assert given + ")" in message and "append_h264()" in message, message
            assert path in message and "'a'" in message, message
        assert w.pending_videos == 0
    assert len(gulpdb.Dataset(path)) == 0


FAKE_FFMPEG = """#!/bin/sh
# Decodes as ffmpeg does; as the H.264 encoder, {action}.
for a in "$@"; do
  if [ "$a" = libx264 ]; then
    {body}
  fi
done
exec ffmpeg "$@"
"""


@pytest.mark.parametrize("case", ["fails", "stops_reading"])
def test_an_encoder_that_fails_is_a_bad_source_not_a_crash(datasets, tmp_path, case):
    body = {
        "fails": 'echo "x264 is broken" >&2; exit 3',
        # Closes its input at once and exits: writes to it get EPIPE, never SIGPIPE.
        "stops_reading": "exec 0<&-; sleep 0.2; exit 0",
    }[case]
    fake = tmp_path / "ffmpeg"
    fake.write_text(FAKE_FFMPEG.format(action=case, body=body))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    videos = tmp_path / "videos"
    videos.mkdir()
    shutil.copy(os.path.join(datasets["videos"], "testsrc2.mp4"), videos)
    out = str(tmp_path / "out")
    result = run("ingest", out, "--videos-dir", str(videos), "--codec", "h264", "--ffmpeg",
                 str(fake), "--strict", "-q", check=False)
    assert result.returncode not in (0, -13), result.stderr  # -13: killed by SIGPIPE
    assert "encode " in result.stderr and "as h264" in result.stderr, result.stderr
    if case == "fails":
        assert "exited with status 3: x264 is broken" in result.stderr
    assert not os.path.exists(out) or gulpdb.Dataset(out).ids() == []
