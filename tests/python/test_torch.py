"""gulpdb.torch: datasets, DataLoader workers (fork and spawn), sharding, DDP ranks."""

from __future__ import annotations

import json
import pickle
import socket
import subprocess
import textwrap
import warnings

import numpy as np
import pytest

import torch

import gulpdb
import gulpdb.torch as gt
from conftest import PYTHON, python_subprocess_env
from torch.utils.data import DataLoader, DistributedSampler


def test_torch_is_imported_only_by_gulpdb_torch():
    out = subprocess.run(
        [PYTHON, "-c", "import sys, gulpdb; gulpdb.GulpDirectory; print('torch' in sys.modules)"],
        env=python_subprocess_env(), capture_output=True, text=True, timeout=60,
    )
    assert out.stdout.strip() == "False", out.stderr


def test_sample_frame_indices():
    sample = gt.sample_frame_indices
    assert sample(5, None, "all").tolist() == [0, 1, 2, 3, 4]
    assert sample(10, 5, "segments").tolist() == [1, 3, 5, 7, 9]
    assert sample(3, 5, "segments").tolist() == [0, 0, 1, 2, 2]  # centres 0.3 0.9 1.5 2.1 2.7
    assert sample(20, 4, "center_clip", stride=2).tolist() == [6, 8, 10, 12]
    assert sample(3, 4, "clip").tolist() == [0, 1, 2, 2]  # short: the last frame repeats
    rng = np.random.default_rng(0)
    clip = sample(100, 8, "clip", stride=3, rng=rng)
    assert np.all(np.diff(clip) == 3) and 0 <= clip[0] and clip[-1] < 100
    segments = sample(100, 4, "random_segments", rng=rng)
    assert [s // 25 for s in segments] == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        sample(10, 0, "clip")
    with pytest.raises(ValueError):
        sample(0, 4, "segments")
    with pytest.raises(ValueError):
        sample(10, 4, "sometimes")


def test_video_dataset_items(small_dataset):
    ds = gt.VideoDataset(small_dataset.path, label="idx")
    assert len(ds) == 12 and ds.ids == small_dataset.ids
    clip, label = ds[3]
    assert isinstance(clip, torch.Tensor) and clip.dtype == torch.uint8
    assert tuple(clip.shape) == (6, 24, 32, 3) and label == 0
    assert np.array_equal(clip.numpy(), small_dataset.decoded["video_3"])
    assert np.array_equal(ds[-1][0].numpy(), small_dataset.decoded["video_11"])
    by_callable = gt.VideoDataset(small_dataset.path, label=lambda meta: meta["label"])
    assert by_callable[4][1] == "class_1"
    unlabelled = gt.VideoDataset(
        gulpdb.Dataset(small_dataset.path), ids=["video_2"],
        transform=lambda t: t.permute(3, 0, 1, 2).float() / 255,
    )
    item = unlabelled[0]
    assert tuple(item.shape) == (3, 6, 24, 32) and float(item.max()) <= 1.0
    assert "VideoDataset" in repr(ds)


def test_video_dataset_sampling_is_seeded(small_dataset):
    def clips(seed, epoch=0):
        ds = gt.VideoDataset(small_dataset.path, num_frames=3, sampling="clip", seed=seed)
        ds.set_epoch(epoch)
        return [ds[i].numpy() for i in range(len(ds))]

    a, b = clips(7), clips(7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, clips(8)))
    assert not all(np.array_equal(x, y) for x, y in zip(a, clips(7, epoch=1)))
    for i, clip in enumerate(a):  # three consecutive frames of the right video
        reference = small_dataset.decoded[small_dataset.ids[i]]
        starts = [s for s in range(4) if np.array_equal(clip, reference[s : s + 3])]
        assert starts, i
    segments = gt.VideoDataset(small_dataset.path, num_frames=2, sampling="segments")
    assert np.array_equal(segments[0].numpy(), small_dataset.decoded["video_0"][[1, 4]])
    with pytest.raises(ValueError):
        gt.VideoDataset(small_dataset.path, sampling="clip")


def test_image_dataset(small_dataset):
    ds = gt.ImageDataset(small_dataset.path, label="label", frame=2)
    image, label = ds[5]
    assert tuple(image.shape) == (24, 32, 3) and label == "class_2"
    assert np.array_equal(image.numpy(), small_dataset.decoded["video_5"][2])
    assert len(ds) == 12 and "ImageDataset" in repr(ds)


def test_datasets_pickle(small_dataset):
    ds = gt.VideoDataset(small_dataset.path, label="idx", num_frames=2, sampling="segments")
    ds[0]
    clone = pickle.loads(pickle.dumps(ds))
    assert np.array_equal(clone[1][0].numpy(), ds[1][0].numpy())


def _expected_batches(small_dataset):
    return {id_: small_dataset.decoded[id_] for id_ in small_dataset.ids}


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers_with_a_dataset_opened_in_the_parent(small_dataset, context):
    parent = gulpdb.Dataset(small_dataset.path)
    ds = gt.VideoDataset(parent, label="idx")
    ds[0]  # the native dataset is open in the parent before the workers start
    loader = DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context=context)
    clips, labels = [], []
    for clip, label in loader:
        clips.append(clip)
        labels.append(label)
    clips = torch.cat(clips).numpy()
    labels = torch.cat(labels).tolist()
    assert labels == [i % 3 for i in range(12)]
    for i, id_ in enumerate(small_dataset.ids):
        assert np.array_equal(clips[i], small_dataset.decoded[id_])
    assert parent.read("video_0").shape == (6, 24, 32, 3)  # still usable in the parent


def test_distributed_sampler(small_dataset):
    ds = gt.VideoDataset(small_dataset.path, label="idx")
    seen = []
    for rank in range(2):
        sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=3)
        sampler.set_epoch(1)
        loader = DataLoader(ds, batch_size=3, sampler=sampler, num_workers=0)
        for clip, _ in loader:
            for c in clip.numpy():
                seen.append(next(i for i, id_ in enumerate(small_dataset.ids)
                                 if np.array_equal(c, small_dataset.decoded[id_])))
    assert sorted(seen) == list(range(12))


def test_shard_ids():
    ids = [f"v{i}" for i in range(11)]
    shards = [gt.shard_ids(ids, r, 3) for r in range(3)]
    assert sorted(sum(shards, [])) == sorted(ids)
    assert [len(s) for s in shards] == [4, 4, 3]
    assert gt.shard_ids(ids) == ids  # no process group: one rank
    with pytest.raises(ValueError):
        gt.shard_ids(ids, 3, 3)


def test_iterable_dataset_shards_by_rank_and_worker(small_dataset):
    got = []
    for rank in range(2):
        ds = gt.IterableVideoDataset(
            small_dataset.path, rank=rank, world_size=2, shuffle=True, seed=5, return_id=True
        )
        assert len(ds) == 6
        loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
        for id_, clip in loader:
            assert np.array_equal(clip.numpy(), small_dataset.decoded[id_])
            got.append(id_)
    assert sorted(got) == sorted(small_dataset.ids)


DDP_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    import gulpdb.torch as gt

    path, out = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = gt.IterableVideoDataset(path, shuffle=True, seed=11, return_id=True, label="idx")
    ids = [id_ for id_, _ in DataLoader(ds, batch_size=None, num_workers=1)]
    gathered = [None] * world
    dist.all_gather_object(gathered, {"rank": rank, "ids": ids})
    if rank == 0:
        with open(out, "w") as f:
            json.dump(gathered, f)
    dist.barrier()
    dist.destroy_process_group()
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_distributed_ranks_read_every_id_once(small_dataset, tmp_path):
    out = str(tmp_path / "gathered.json")
    env = python_subprocess_env()
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), WORLD_SIZE="2")
    procs = []
    for rank in range(2):
        procs.append(subprocess.Popen(
            [PYTHON, "-c", DDP_SCRIPT, small_dataset.path, out],
            env=dict(env, RANK=str(rank)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        ))
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    with open(out) as f:
        gathered = json.load(f)
    assert [g["rank"] for g in gathered] == [0, 1]
    ids = gathered[0]["ids"] + gathered[1]["ids"]
    assert len(gathered[0]["ids"]) == len(gathered[1]["ids"]) == 6
    assert sorted(ids) == sorted(small_dataset.ids)  # each id exactly once


# ---- ids and clips of different shapes ------------------------------------------------


def test_ids_refuse_a_bare_string(small_dataset, tmp_path):
    path = str(tmp_path / "numbered")
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        for i in range(101):
            w.append(i, small_dataset.decoded[f"video_{i % 12}"][:1])
    for make in (gt.VideoDataset, gt.ImageDataset, gt.IterableVideoDataset):
        with pytest.raises(TypeError, match=r"pass \['100'\] for one id"):
            make(path, ids="100")
        assert make(path, ids=["100", 1])._reader.ids == ["100", "1"]
    assert gt.VideoDataset(path, ids=("100",))[0].shape[0] == 1
    assert len(gt.VideoDataset(path, ids=["100"])) == 1
    with pytest.raises(TypeError, match="pass"):
        gt.shard_ids("100", 0, 2)


@pytest.fixture
def mixed_sizes(tmp_path):
    """Videos 0..7: even ones 3×24×32, odd ones 3×16×32."""
    path = str(tmp_path / "mixed")
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        for i in range(8):
            w.append(i, np.full((3, 24 if i % 2 == 0 else 16, 32, 3), 10 * i, np.uint8), {"idx": i})
    return path


@pytest.mark.parametrize("num_workers", [0, 2])
def test_mixed_clip_sizes_are_a_clear_error_with_the_default_collate(mixed_sizes, num_workers):
    ds = gt.VideoDataset(mixed_sizes, label="idx")
    with pytest.raises(RuntimeError) as info:
        for _ in DataLoader(ds, batch_size=4, num_workers=num_workers):
            pass
    message = str(info.value)
    assert "differ in shape" in message, message
    assert "'0' gives (3, 24, 32, 3)" in message and "'1' gives (3, 16, 32, 3)" in message
    assert "transform" in message and "batch_size=1" in message and "collate_fn" in message
    assert "resize storage" not in message


def test_mixed_sizes_pass_with_a_resizing_transform_a_custom_collate_or_batch_size_1(
    mixed_sizes,
):
    resized = gt.VideoDataset(mixed_sizes, label="idx", transform=lambda clip: clip[:, :16])
    batches = list(DataLoader(resized, batch_size=4, num_workers=2))
    assert [tuple(b[0].shape) for b in batches] == [(4, 3, 16, 32, 3)] * 2
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    plain = gt.VideoDataset(mixed_sizes, label="idx")
    kept = list(DataLoader(plain, batch_size=4, num_workers=2, collate_fn=list))
    assert [[tuple(clip.shape) for clip, _ in b] for b in kept] == [
        [(3, 24, 32, 3), (3, 16, 32, 3)] * 2
    ] * 2
    assert len(list(DataLoader(plain, batch_size=1, num_workers=2))) == 8
    assert len(list(DataLoader(plain, batch_size=None))) == 8
    # Called directly (not by a DataLoader about to stack), nothing is checked.
    assert len(plain.__getitems__([0, 1])) == 2


def test_mixed_image_sizes_are_a_clear_error_with_the_default_collate(mixed_sizes):
    images = gt.ImageDataset(mixed_sizes)
    with pytest.raises(RuntimeError, match=r"images of one batch differ in shape.*'0' gives"):
        next(iter(DataLoader(images, batch_size=2, num_workers=2)))
    assert len(list(DataLoader(images, batch_size=2, collate_fn=list))) == 4


def test_frames_of_different_sizes_in_one_video_are_a_clear_error(tmp_path):
    path = str(tmp_path / "uneven")
    frames = [np.zeros((24, 32, 3), np.uint8), np.zeros((16, 32, 3), np.uint8)]
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        w.append("uneven", frames)
    with pytest.raises(ValueError, match=r"frames of video 'uneven' differ in shape"):
        gt.VideoDataset(path)[0]


# ---- options that a sampling would ignore ----------------------------------------------


def test_num_frames_alone_takes_that_many_evenly_spaced_frames(small_dataset):
    # The README's example: VideoDataset(url, label="idx", num_frames=16).
    ds = gt.VideoDataset(small_dataset.path, label="idx", num_frames=4)
    clip, label = ds[0]
    assert tuple(clip.shape) == (4, 24, 32, 3) and label == 0
    expected = small_dataset.decoded["video_0"][gt.sample_frame_indices(6, 4, "segments")]
    assert np.array_equal(clip.numpy(), expected)
    assert "sampling='segments', num_frames=4" in repr(ds)
    iterable = gt.IterableVideoDataset(small_dataset.path, num_frames=3)
    assert all(tuple(item.shape) == (3, 24, 32, 3) for item in iterable)
    assert gt.sample_frame_indices(10, 5).tolist() == [1, 3, 5, 7, 9]
    assert gt.sample_frame_indices(3, None).tolist() == [0, 1, 2]
    whole = gt.VideoDataset(small_dataset.path)
    assert tuple(whole[0].shape) == (6, 24, 32, 3)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(num_frames=16, sampling="all"), "num_frames=16 would be ignored"),
        (dict(num_frames=4, sampling="segments", stride=2), "stride=2 applies to sampling"),
        (dict(num_frames=4, sampling="random_segments", stride=3), "stride=3 applies"),
        (dict(stride=2), "stride=2 applies to sampling"),
    ],
)
def test_an_option_the_sampling_would_ignore_is_refused_at_construction(
    small_dataset, options, message
):
    for cls in (gt.VideoDataset, gt.IterableVideoDataset):
        with pytest.raises(ValueError, match=message):
            cls(small_dataset.path, **options)
    if "num_frames" in options:
        with pytest.raises(ValueError, match=message):
            gt.sample_frame_indices(10, options["num_frames"], options["sampling"],
                                    options.get("stride", 1))


def test_a_seed_that_nothing_random_uses_is_a_warning(small_dataset):
    with pytest.warns(UserWarning, match="seed=5 is ignored: nothing is drawn at random"):
        gt.VideoDataset(small_dataset.path, num_frames=2, sampling="segments", seed=5)
    with pytest.warns(UserWarning, match="seed=5 is ignored"):
        gt.ImageDataset(small_dataset.path, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gt.VideoDataset(small_dataset.path, num_frames=2, sampling="clip", seed=5)
        gt.VideoDataset(small_dataset.path, seed=5, size=(8, 8), crop="random")
        gt.IterableVideoDataset(small_dataset.path, seed=5, shuffle=True)
        gt.VideoDataset(small_dataset.path, num_frames=2)  # the default seed, unused: silent


def test_size_may_be_a_numpy_array_of_two_ints(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    expected = ds.read("video_1", [0, 1], size=(8, 12))
    for size in (np.array([8, 12]), np.array([8, 12], dtype=np.int32), [8, 12]):
        assert np.array_equal(ds.read("video_1", [0, 1], size=size), expected)
    clips = gt.VideoDataset(small_dataset.path, num_frames=2, size=np.array([8, 12]))
    assert tuple(clips[1].shape) == (2, 8, 12, 3) and clips._reader.size == (8, 12)
    with pytest.raises(TypeError, match="not the int 8"):
        ds.read("video_1", [0], size=np.int64(8))
    with pytest.raises(TypeError, match="size must hold ints"):
        ds.read("video_1", [0], size=np.array([8.0, 12.0]))
    with pytest.raises(ValueError, match="pair, not 3 numbers"):
        ds.read("video_1", [0], size=np.array([8, 12, 3]))
