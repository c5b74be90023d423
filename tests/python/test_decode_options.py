"""gulpdb.DecodeOptions: one checked object for how reads decode, and the decode
keyword arguments of the public API mapped onto it."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gulpdb
from gulpdb import DecodeOptions


def test_the_keywords_and_the_object_read_the_same_pixels(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    id_ = small_dataset.ids[0]
    for keywords in [{}, {"colorspace": "bgr"}, {"dct": "accurate", "downscale": 2},
                     {"size": (8, 10), "resize": "fit", "crop": None},
                     {"colorspace": "gray", "size": (9, 9)}]:
        by_keywords = ds.read(id_, slice(0, 3), **keywords)
        by_object = ds.read(id_, slice(0, 3), decode=DecodeOptions(**keywords))
        assert np.array_equal(by_keywords, by_object), keywords
        [batch] = ds.read_batch([id_], slice(0, 3), decode=DecodeOptions(**keywords))
        assert np.array_equal(batch, by_object), keywords


def test_keywords_change_the_fields_of_the_object_they_come_with(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    id_ = small_dataset.ids[1]
    decode = DecodeOptions(colorspace="bgr", size=(12, 12))
    clip = ds.read(id_, [0], decode=decode, colorspace="rgb")
    assert np.array_equal(clip, ds.read(id_, [0], size=(12, 12)))
    assert decode.colorspace == "bgr"  # the object itself is unchanged


def test_a_random_crop_is_seeded_per_read(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    id_ = small_dataset.ids[2]
    decode = DecodeOptions(size=(10, 10), crop="random")
    a = ds.read(id_, decode=decode, crop_seed=3)
    assert np.array_equal(a, ds.read(id_, size=(10, 10), crop="random", crop_seed=3))
    windows = {ds.read(id_, [0], decode=decode, crop_seed=s).tobytes() for s in range(8)}
    assert len(windows) > 1


def test_bad_options_are_refused_when_made():
    with pytest.raises(ValueError, match="colorspace must be"):
        DecodeOptions(colorspace="cmyk")
    with pytest.raises(ValueError, match="cannot be combined with size"):
        DecodeOptions(size=(8, 8), downscale=2)
    with pytest.raises(ValueError, match="must be cropped"):
        DecodeOptions(size=(8, 8), crop=None)
    with pytest.raises(TypeError, match="size must be a"):
        DecodeOptions(size=8)
    with pytest.raises(TypeError):
        DecodeOptions("rgb")  # keywords only
    with pytest.raises(TypeError, match="no option 'colour'"):
        DecodeOptions().replace(colour="rgb")


def test_an_unknown_keyword_of_a_read_is_a_type_error(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    with pytest.raises(TypeError, match="read\\(\\) got an unexpected keyword argument 'colour'"):
        ds.read(small_dataset.ids[0], colour="rgb")
    with pytest.raises(TypeError, match="read_batch\\(\\) got an unexpected keyword"):
        ds.read_batch(small_dataset.ids[:1], sise=(8, 8))
    with pytest.raises(TypeError, match="decode must be a gulpdb.DecodeOptions, not dict"):
        ds.read(small_dataset.ids[0], decode={"colorspace": "rgb"})


def test_options_compare_hash_print_and_pickle_by_value():
    a = DecodeOptions(colorspace="BGR", size=[20, 30], crop="Random")
    b = DecodeOptions(colorspace="bgr", size=(20, 30), crop="random")
    assert a == b and hash(a) == hash(b) and a != DecodeOptions()
    assert a.size == (20, 30) and a.crop == "random" and a.colorspace == "bgr"
    assert pickle.loads(pickle.dumps(a)) == a
    assert repr(a) == ("DecodeOptions(colorspace='bgr', dct='fast', downscale=1, lenient=False, "
                       "size=(20, 30), resize='short_edge', crop='random')")
    assert DecodeOptions(**a.as_dict()) == a
    assert DecodeOptions().crop == "center" and DecodeOptions(crop=None).crop is None


def test_the_torch_datasets_take_the_object_or_the_keywords(small_dataset):
    gt = pytest.importorskip("gulpdb.torch")
    decode = DecodeOptions(size=(8, 12), colorspace="bgr")
    for cls in (gt.VideoDataset, gt.IterableVideoDataset, gt.ImageDataset):
        by_object = cls(small_dataset.path, decode=decode, label=None)
        by_keywords = cls(small_dataset.path, size=(8, 12), colorspace="bgr", label=None)
        first = next(iter(by_object)) if cls is gt.IterableVideoDataset else by_object[0]
        again = next(iter(by_keywords)) if cls is gt.IterableVideoDataset else by_keywords[0]
        assert first.shape[-3:] == (8, 12, 3) and bool((first == again).all()), cls
        restored = pickle.loads(pickle.dumps(by_object))  # as DataLoader workers get it
        item = next(iter(restored)) if cls is gt.IterableVideoDataset else restored[0]
        assert bool((item == first).all()), cls
        with pytest.raises(TypeError, match=f"{cls.__name__}\\(\\) got an unexpected keyword"):
            cls(small_dataset.path, colour="rgb")
