"""Fixed-size clips: size=/resize=/crop= in gulpdb.Dataset.read and gulpdb.torch.

Videos of 320×240, 160×120 and 480×360 frames in one dataset come out as one
shape, so DataLoader's default collate_fn stacks them; random crops are
reproducible from the dataset's seed whatever the number of workers. The pixel
arithmetic is checked against a reference in tests/fixed_size_test.cc; here
the Python paths are checked against each other and against Pillow.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from PIL import Image  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

import gulpdb  # noqa: E402
import gulpdb.torch as gt  # noqa: E402
from conftest import synthetic_frames  # noqa: E402

SIZES = [(240, 320), (120, 160), (360, 480)]  # (height, width)
GOLDEN = 0x9E3779B97F4A7C15


def detailed_frames(seed: int, count: int, height: int, width: int) -> np.ndarray:
    """Frames whose every column differs, so that a shifted window shows."""
    frames = synthetic_frames(seed, count, height, width)
    x = np.arange(width)
    frames[..., 2] = ((x * 7 + seed * 13) % 200)[None, None, :]
    return frames


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Nine videos of 20 frames, three of each size; meta idx = position."""
    path = str(tmp_path_factory.mktemp("fixed_size") / "mixed")
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        for i in range(9):
            h, width = SIZES[i % 3]
            w.append(f"v{i}", detailed_frames(i, 20, h, width), {"idx": i})
    return path


def test_read_gives_the_size_for_every_mode(mixed):
    ds = gulpdb.Dataset(mixed)
    for resize, crop in [("short_edge", "center"), ("short_edge", "random"), ("fit", None),
                         ("fit", "center"), ("stretch", None)]:
        for i in range(3):
            clip = ds.read(f"v{i}", slice(0, 4), size=(112, 96), resize=resize, crop=crop,
                           crop_seed=5)
            assert clip.shape == (4, 112, 96, 3), (resize, crop, i)
            assert clip.dtype == np.uint8
    gray = ds.read("v2", [0, 1], size=(33, 17), colorspace="gray")
    assert gray.shape == (2, 33, 17, 1)
    batch = ds.read_batch(["v0", "v1", "v2"], slice(0, 3), size=(64, 64))
    assert [b.shape for b in batch] == [(3, 64, 64, 3)] * 3


def test_read_matches_decode_jpeg_and_an_unresized_frame_is_unchanged(tmp_path, mixed):
    ds = gulpdb.Dataset(mixed)
    jpegs = ds.read_jpegs("v1", [0, 5])
    clip = ds.read("v1", [0, 5], size=(100, 70), resize="stretch")
    for jpeg, frame in zip(jpegs, clip):
        np.testing.assert_array_equal(
            gulpdb.decode_jpeg(jpeg, "rgb", size=(100, 70), resize="stretch"), frame
        )
    # 160x120 frames asked for at 120x160: decoded as they are.
    np.testing.assert_array_equal(ds.read("v1", [3], size=(120, 160)), ds.read("v1", [3]))


def test_short_edge_center_is_close_to_pillow(mixed):
    """Same geometry with Pillow (resize by the short edge, then centre crop):
    the filters differ (Pillow's is antialiased), the picture must not."""
    ds = gulpdb.Dataset(mixed)
    full = ds.read("v2", [0], dct="accurate")[0]  # 360x480
    ours = ds.read("v2", [0], size=(112, 112), dct="accurate")[0]
    scaled = Image.fromarray(full).resize((149, 112), Image.BILINEAR)  # 480*112/360 = 149.3
    left = (149 - 112) // 2
    theirs = np.asarray(scaled)[:, left:left + 112]
    diff = np.abs(ours.astype(int) - theirs.astype(int))
    assert diff.mean() < 2.0, diff.mean()
    # A window one column off is far worse: the test can tell.
    shifted = np.asarray(scaled)[:, left + 3:left + 115]
    assert np.abs(ours.astype(int) - shifted.astype(int)).mean() > 3 * diff.mean()


def test_fit_pads_with_zeros_around_the_centred_frame(mixed):
    ds = gulpdb.Dataset(mixed)
    clip = ds.read("v0", [0, 1], size=(112, 112), resize="fit")  # 320x240 -> 112x84
    assert clip.shape == (2, 112, 112, 3)
    assert not clip[:, :14].any() and not clip[:, 98:].any()
    assert clip[:, 14:98].mean() > 20


def test_read_batch_random_crop_is_per_request_from_the_seed(mixed):
    ds = gulpdb.Dataset(mixed)
    batch = ds.read_batch(["v0"] * 6, slice(0, 2), size=(112, 112), crop="random", crop_seed=99)
    for i, clip in enumerate(batch):
        seed = (99 + i * GOLDEN) % 2**64
        np.testing.assert_array_equal(
            clip, ds.read("v0", slice(0, 2), size=(112, 112), crop="random", crop_seed=seed)
        )
    assert len({clip.tobytes() for clip in batch}) > 1
    # Any int is a seed (modulo 2**64).
    np.testing.assert_array_equal(
        ds.read("v0", [0], size=(112, 112), crop="random", crop_seed=-1),
        ds.read("v0", [0], size=(112, 112), crop="random", crop_seed=2**64 - 1),
    )


def test_a_random_crop_is_one_window_per_clip(tmp_path):
    path = str(tmp_path / "same")
    frame = detailed_frames(3, 1, 240, 320)[0]
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        w.append("a", np.stack([frame] * 8))
    ds = gulpdb.Dataset(path)
    windows = set()
    for seed in range(12):
        clip = ds.read("a", size=(112, 112), crop="random", crop_seed=seed)
        for f in clip[1:]:
            np.testing.assert_array_equal(f, clip[0])
        windows.add(clip[0].tobytes())
    assert len(windows) > 3


def _clips(loader):
    return [(b[0].clone(), b[1].clone()) for b in loader]


@pytest.mark.parametrize("crop", ["center", "random"])
def test_mixed_sizes_stack_in_a_dataloader_with_two_workers(mixed, crop):
    ds = gt.VideoDataset(mixed, label="idx", num_frames=16, sampling="clip", seed=3,
                         size=(112, 112), crop=crop)
    batches = _clips(DataLoader(ds, batch_size=4, num_workers=2))
    assert [tuple(b[0].shape) for b in batches] == [(4, 16, 112, 112, 3)] * 2 + [
        (1, 16, 112, 112, 3)
    ]
    assert torch.cat([b[1] for b in batches]).tolist() == list(range(9))
    # Reproducible: the same clips again, and the same without worker processes.
    again = _clips(DataLoader(ds, batch_size=4, num_workers=2))
    alone = _clips(DataLoader(ds, batch_size=4, num_workers=0))
    for a, b, c in zip(batches, again, alone):
        assert torch.equal(a[0], b[0]) and torch.equal(a[0], c[0])
    # Each item is what the dataset reads directly with the same frames.
    first = ds[0][0]
    assert torch.equal(first, batches[0][0][0])


def test_random_crops_follow_seed_and_epoch(mixed):
    def clips(seed, epoch=0):
        ds = gt.VideoDataset(mixed, ids=["v0"] * 8, num_frames=4, sampling="center_clip",
                             seed=seed, size=(112, 112), crop="random")
        ds.set_epoch(epoch)
        return torch.cat([b for b in DataLoader(ds, batch_size=4, num_workers=2)])

    base = clips(7)
    assert torch.equal(base, clips(7))
    assert not torch.equal(base, clips(8))
    assert not torch.equal(base, clips(7, epoch=1))
    # The same video and frames, different windows from item to item.
    assert len({bytes(c.numpy().tobytes()) for c in base}) > 2
    centre = gt.VideoDataset(mixed, ids=["v0"] * 8, num_frames=4, sampling="center_clip",
                             size=(112, 112))
    assert len({bytes(c.numpy().tobytes()) for c in (centre[i] for i in range(8))}) == 1


def test_a_random_crop_keeps_the_sampled_frames_and_cuts_an_exact_window(mixed):
    """The crop's seed is drawn after the frames, so adding it keeps each
    item's frames; 160x120 frames cropped to 120x120 need no scaling, so the
    result is a window of the plain clip."""
    plain = gt.VideoDataset(mixed, num_frames=5, sampling="random_segments", seed=11)
    cropped = gt.VideoDataset(mixed, num_frames=5, sampling="random_segments", seed=11,
                              size=(120, 120), crop="random")
    offsets = set()
    for index in (1, 4, 7):  # the 160x120 videos
        whole, window = plain[index], cropped[index]
        matches = [x for x in range(41) if torch.equal(whole[:, :, x:x + 120], window)]
        assert len(matches) == 1, index
        offsets.add(matches[0])
    assert len(offsets) > 1


def test_image_dataset_fixed_size_in_a_dataloader(mixed):
    images = gt.ImageDataset(mixed, label="idx", frame=2, size=(64, 48), crop="random", seed=1)
    batches = [(b[0].clone(), b[1].clone()) for b in DataLoader(images, batch_size=5,
                                                                num_workers=2)]
    assert [tuple(b[0].shape) for b in batches] == [(5, 64, 48, 3), (4, 64, 48, 3)]
    again = [b[0] for b in DataLoader(images, batch_size=5, num_workers=2)]
    assert all(torch.equal(a[0], b) for a, b in zip(batches, again))
    other = gt.ImageDataset(mixed, frame=2, size=(64, 48), crop="random", seed=2)
    assert not torch.equal(torch.stack([other[i] for i in range(9)]),
                           torch.cat([b[0] for b in batches]))
    fitted = gt.ImageDataset(mixed, size=(50, 50), resize="fit", crop=None)
    assert tuple(next(iter(DataLoader(fitted, batch_size=9))).shape) == (9, 50, 50, 3)
    assert "size=(112, 112)" in repr(gt.VideoDataset(mixed, size=(112, 112)))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(size=(0, 112)), ValueError, "size must be positive, not (0, 112)"),
        (dict(size=(112, -3)), ValueError, "size must be positive, not (112, -3)"),
        (dict(size=(70000, 10)), ValueError, "at most 65500"),
        (dict(size=(112, 112, 3)), ValueError, "pair, not 3 numbers"),
        (dict(size=112), TypeError, "pass (112, 112) for a square"),
        (dict(size=(112.0, 112)), TypeError, "size must hold ints, not float"),
        (dict(size=(True, 112)), TypeError, "size must hold ints, not bool"),
        (dict(size="112x112"), TypeError, "pair of ints, not str"),
        (dict(size=(112, 112), resize="crop"), ValueError,
         "resize must be 'short_edge', 'fit' or 'stretch', not 'crop'"),
        (dict(size=(112, 112), resize=None), TypeError, "resize must be a str, not NoneType"),
        (dict(size=(112, 112), crop="left"), ValueError,
         "crop must be 'center', 'random' or None, not 'left'"),
        (dict(size=(112, 112), crop=1), TypeError, "crop must be a str or None, not int"),
        (dict(size=(112, 112), crop=None), ValueError, "it must be cropped"),
        (dict(size=(112, 112), resize="fit", crop="random"), ValueError, "nothing to crop"),
        (dict(size=(112, 112), resize="stretch", crop="random"), ValueError, "nothing to crop"),
        (dict(resize="fit"), ValueError, "resize='fit' needs an output size"),
        (dict(crop="random"), ValueError, "crop='random' needs an output size"),
        (dict(size=(112, 112), downscale=2), ValueError, "cannot be combined with size="),
    ],
)
def test_bad_size_arguments_are_refused_clearly(mixed, kwargs, error, message):
    ds = gulpdb.Dataset(mixed)
    with pytest.raises(error) as info:
        ds.read("v0", [0], **kwargs)
    assert message in str(info.value)
    # The torch datasets refuse them when made, not later in a worker.
    for make in (gt.VideoDataset, gt.ImageDataset, gt.IterableVideoDataset):
        with pytest.raises(error) as info:
            make(mixed, **kwargs)
        assert message in str(info.value), make
    with pytest.raises(error):
        ds.read_batch(["v0"], **kwargs)
    jpeg = ds.read_jpegs("v0", [0])[0]
    with pytest.raises(error):
        gulpdb.decode_jpeg(jpeg, "rgb", **kwargs)


def test_crop_seed_must_be_an_int(mixed):
    ds = gulpdb.Dataset(mixed)
    with pytest.raises(TypeError, match="crop_seed must be an int or None, not float"):
        ds.read("v0", [0], size=(8, 8), crop="random", crop_seed=1.5)
