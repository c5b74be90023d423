"""h264 datasets from Python: create with codec="h264", append_h264, read and
read_batch frame-exact against the ffmpeg program's decoding, the codec
errors (read_jpegs, JPEG-only decode options, JPEG appends), the stored
stream, and the codec in the stats."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import gulpdb

WIDTH, HEIGHT, FRAMES, GOP = 96, 64, 24, 8

# Deselected (and reported) in a build without H.264 (conftest.py);
# test_errors.py checks that such a build refuses h264 clearly.
pytestmark = [pytest.mark.h264,
              pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg program")]


def encode(source: str = "testsrc2") -> bytes:
    """A raw Annex-B H.264 stream of an ffmpeg test source, as ingest encodes it."""
    return subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
         f"{source}=size={WIDTH}x{HEIGHT}:rate=25", "-frames:v", str(FRAMES),
         "-c:v", "libx264", "-g", str(GOP), "-keyint_min", str(GOP), "-sc_threshold", "0",
         "-bf", "0", "-pix_fmt", "yuv420p", "-f", "h264", "-"],
        check=True, capture_output=True).stdout


def ffmpeg_decode(stream: bytes) -> np.ndarray:
    """The ffmpeg program's decoding of the whole stream, N x H x W x 3."""
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "h264", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24",
         "-"], input=stream, check=True, capture_output=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, HEIGHT, WIDTH, 3)


@pytest.fixture(scope="module")
def stream() -> bytes:
    return encode()


@pytest.fixture
def h264_dataset(tmp_path, stream):
    path = str(tmp_path / "h")
    ds = gulpdb.Dataset(path, "x", codec="h264")
    with ds.writer() as w:
        assert w.append_h264("v", stream, {"label": 3})
        w.commit()
    return ds


def test_read_is_frame_exact_in_any_order(h264_dataset, stream):
    reference = ffmpeg_decode(stream)
    assert reference.shape == (FRAMES, HEIGHT, WIDTH, 3)
    ds = gulpdb.Dataset(h264_dataset.path)
    assert ds.codec == "h264"
    assert ds.stats().codec == "h264"
    assert np.array_equal(ds.read("v"), reference)
    order = np.random.default_rng(23).permutation(FRAMES).tolist()
    assert np.array_equal(ds.read("v", order), reference[order])
    assert np.array_equal(ds["v", 5:21:3], reference[5:21:3])
    batch = ds.read_batch([("v", [23, 0]), ("v", slice(8, 16))])
    assert np.array_equal(batch[0], reference[[23, 0]])
    assert np.array_equal(batch[1], reference[8:16])
    resized = ds.read("v", [3], size=(32, 32))
    assert resized.shape == (1, 32, 32, 3)
    assert ds.read_h264_stream("v") == stream


def test_codec_errors(h264_dataset, stream, tmp_path):
    ds = h264_dataset
    with pytest.raises(ValueError, match="h264"):
        ds.read_jpegs("v")
    with pytest.raises(ValueError, match="dct"):
        ds.read("v", dct="accurate")
    with ds.writer() as w:
        # Images are encoded to JPEG, which an h264 dataset does not take.
        with pytest.raises(ValueError, match="codec is h264"):
            w.append("j", [np.zeros((8, 8, 3), np.uint8)])
        with pytest.raises(ValueError, match="'junk'"):
            w.append_h264("junk", b"not a stream")
    jpeg_ds = gulpdb.Dataset(str(tmp_path / "j"), "x")
    assert jpeg_ds.codec == "jpeg"
    with jpeg_ds.writer() as w:
        with pytest.raises(ValueError, match="jpeg"):
            w.append_h264("v", stream)
        w.append("v", [np.zeros((8, 8, 3), np.uint8)])
        w.commit()
    with pytest.raises(ValueError, match="jpeg"):
        jpeg_ds.read_h264_stream("v")
    with pytest.raises(ValueError, match="codec"):
        gulpdb.Dataset(str(tmp_path / "bad"), "x", codec="vp9")


def test_gulpio2_api_returns_decoded_frames(h264_dataset, stream):
    """GulpIO2's GulpDirectory on an h264 dataset returns decoded frames, as for
    JPEG; a custom jpeg_decoder= (which would get JPEG bytes) is a clear error."""
    from gulpdb.fileio import GulpDirectory

    reference = ffmpeg_decode(stream)
    gd = GulpDirectory(h264_dataset.path)
    frames, meta = gd["v", 2:19:4]
    assert np.array_equal(np.stack(frames), reference[2:19:4])
    assert meta == {"label": 3}
    videos = [frames for chunk in gd for frames, _ in chunk]
    assert len(videos) == 1 and np.array_equal(np.stack(videos[0]), reference)
    custom = GulpDirectory(h264_dataset.path, jpeg_decoder=lambda b: b)
    with pytest.raises(ValueError, match="h264"):
        custom["v", 0:2]


@pytest.mark.parametrize("source,width,height", [
    ("testsrc2", 320, 240), ("testsrc2", 640, 480),
    ("mandelbrot", 320, 240), ("mandelbrot", 640, 480)])
def test_every_frame_of_the_benchmark_sources_is_exact_in_random_order(
        tmp_path, source, width, height):
    """The benchmark's generated sources (bench/h264_bench.py) at GOP 8: every
    frame read alone, in a random order, equals ffmpeg's decoding of the
    stored stream from its start."""
    frames = 40
    stream = subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"{source}=size={width}x{height}:rate=25",
         "-frames:v", str(frames), "-c:v", "libx264", "-g", "8", "-keyint_min", "8",
         "-sc_threshold", "0", "-bf", "0", "-crf", "20", "-pix_fmt", "yuv420p", "-f", "h264",
         "-"], check=True, capture_output=True).stdout
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "h264", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24",
         "-"], input=stream, check=True, capture_output=True).stdout
    reference = np.frombuffer(raw, np.uint8).reshape(-1, height, width, 3)
    assert len(reference) == frames
    ds = gulpdb.Dataset(str(tmp_path / "d"), "x", codec="h264")
    with ds.writer() as w:
        w.append_h264("v", stream)
        w.commit()
    ds = gulpdb.Dataset(ds.path)
    order = np.random.default_rng([sum(map(ord, source)), width]).permutation(frames).tolist()
    for k in order:
        assert np.array_equal(ds.read("v", [k])[0], reference[k]), f"{source} frame {k}"


def flip_packet_bit(ds: gulpdb.Dataset, id_: str, frame: int) -> str:
    """Flips one bit in the middle of a packet on disk (same size and mtime);
    returns the chunk file's path."""
    import os

    from lifecycle.decay import flip_bit

    info = ds.info(id_)
    chunk = next(c for c in ds.chunks() if c.number == info.chunk)
    offset, pad, length = info.frame_info[frame]
    path = os.path.join(ds.path, chunk.file_name)
    flip_bit(path, offset + (length - pad) // 2, 5)
    return path


def test_a_damaged_packet_is_refused_by_every_read_that_decodes_it(h264_dataset, stream):
    """Packet 11 (GOP 8..15) damaged: a frame after it in its GOP is decoded
    from it and is refused too, by default, on every read path; frames before
    it and other GOPs decode exactly; verify_checksums=False is the opt-out."""
    torch = pytest.importorskip("torch")
    import gulpdb.torch as gt
    from gulpdb.fileio import GulpDirectory

    reference = ffmpeg_decode(stream)
    chunk = flip_packet_bit(h264_dataset, "v", 11)
    pattern = rf"'v' frame 11\b.*checksum mismatch.*{chunk}"
    ds = gulpdb.Dataset(h264_dataset.path)
    for name, read in {
        "read [13]": lambda: ds.read("v", [13]),
        "read [11]": lambda: ds.read("v", [11]),
        "read all": lambda: ds.read("v"),
        "read_batch": lambda: ds.read_batch([("v", [0]), ("v", slice(12, 16))]),
        "read sized": lambda: ds.read("v", [15], size=(32, 32)),
        "read_h264_stream": lambda: ds.read_h264_stream("v"),
        "GulpDirectory": lambda: GulpDirectory(ds.path)["v", [14]],
        "VideoDataset": lambda: gt.VideoDataset(ds.path)[0],
        "ImageDataset": lambda: gt.ImageDataset(ds.path, frame=12)[0],
    }.items():
        with pytest.raises(gulpdb.CorruptionError, match=pattern):
            read()
        print(name, "refused")
    assert np.array_equal(ds.read("v", [8, 9, 10]), reference[8:11])
    assert np.array_equal(ds.read("v", [7, 16, 23]), reference[[7, 16, 23]])
    unchecked = gulpdb.Dataset(ds.path, verify_checksums=False)
    assert np.array_equal(unchecked.read("v", [10]), reference[[10]])
    del torch


@pytest.mark.parametrize("options", [{"colorspace": "gray"}, {"dct": "accurate"},
                                     {"downscale": 2}])
def test_torch_datasets_refuse_jpeg_only_options_when_made(h264_dataset, tmp_path, options):
    """docs/python.md: bad arguments are refused when the dataset is made, not in
    every DataLoader worker; on an h264 dataset the JPEG-only decode options are
    such arguments (a JPEG dataset takes them)."""
    pytest.importorskip("torch")
    import gulpdb.torch as gt

    makers = {
        "VideoDataset": lambda src, **kw: gt.VideoDataset(src, **kw),
        "ImageDataset": lambda src, **kw: gt.ImageDataset(src, **kw),
        "IterableVideoDataset": lambda src, **kw: gt.IterableVideoDataset(src, **kw),
    }
    jpeg = gulpdb.Dataset(str(tmp_path / "j"), "x")
    with jpeg.writer() as w:
        w.append("v", np.zeros((2, 16, 16, 3), np.uint8))
    for name, make in makers.items():
        with pytest.raises(ValueError, match=rf"{h264_dataset.path}.*codec is h264"):
            make(h264_dataset.path, **options)
        with pytest.raises(ValueError, match="codec is h264"):
            make(h264_dataset, decode=gulpdb.DecodeOptions(**options))
        assert len(make(jpeg.path, **options)) == 1, name
    # What an h264 dataset does take.
    assert gt.VideoDataset(h264_dataset.path, size=(32, 32), colorspace="bgr")[0].shape == (
        FRAMES, 32, 32, 3)
