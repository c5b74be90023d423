"""PyTorch datasets over gulpdb (this module is the only one importing torch).

- :class:`VideoDataset`: map-style; one item per video id, with frame sampling
  (all frames, N evenly spaced segments, or a clip of N frames with a stride),
  a label taken from the meta, and an optional transform.
- :class:`ImageDataset`: map-style; one image (a frame) per id.
- :class:`IterableVideoDataset`: the same items, sharded deterministically by
  distributed rank and DataLoader worker, so that all ranks together read every
  id exactly once per epoch.
- :func:`shard_ids`: the split that sharding uses, for your own loops.

All of them work with ``DataLoader(num_workers>0)`` under fork (a dataset
opened in the parent reopens itself in each worker) and spawn (they pickle by
path), and the map-style ones with ``DistributedSampler``.

Random sampling is reproducible: an item's random numbers (its frames, then
its crop window) depend only on ``seed``, the epoch
(:meth:`VideoDataset.set_epoch`) and the item's index, never on which worker
reads it or how many workers there are.

``ids`` arguments take any iterable of ids (str, or int for its decimal
string), never a bare ``str``: ``ids="100"`` is a TypeError, not the videos
``"1"``, ``"0"``, ``"0"``.

Fixed-size clips: ``size=(H, W)`` makes every clip T×H×W×C (every image
H×W×C), resized and cropped or padded in C++ on the decode threads, without
the GIL, so the default ``collate_fn`` stacks a batch of videos of any sizes:

- ``resize="short_edge"`` (default): keep the aspect ratio and scale until the
  frame covers H×W (the side that limits gets exactly H or W, the other is
  rounded half up), then ``crop="center"`` (default) keeps the middle H×W
  window (offsets rounded down) and ``crop="random"`` a random one: one window
  per clip, all its frames alike, drawn from the item's random generator (see
  below), so that runs are reproducible. ``crop=None`` is a ValueError here:
  the scaled frame is larger than H×W, so something must be cropped.
- ``resize="fit"``: keep the aspect ratio and scale until the frame fits
  inside H×W, centred on zero (black) padding. ``crop`` is ``"center"`` or
  ``None`` (both mean centred).
- ``resize="stretch"``: scale each axis to H×W. ``crop`` as for ``"fit"``.

The decoder first decodes at the largest 1/2, 1/4 or 1/8 scale (libjpeg's DCT
scaling) that still covers the scaled frame, then scales bilinearly
(OpenCV's INTER_LINEAR pixel alignment); ``downscale`` cannot be combined with
``size``. A bad ``size`` (not a pair of ints: TypeError; zero, negative or
above 65500: ValueError) or an unknown mode is refused when the dataset is
made, not in a worker.

Clips of different shapes: DataLoader's default ``collate_fn`` stacks the items
of a batch into one tensor, which fails when videos differ in size or length
(and no ``size`` is given).
The map-style datasets check a batch when the DataLoader fetches it (their
``__getitems__``) and, only when the default ``collate_fn`` is about to stack
it, raise a RuntimeError naming two ids and their shapes, instead of torch's
"Trying to resize storage that is not resizable" (in workers) or
``torch.stack``'s message. The check looks at the items after ``transform``,
so a transform that resizes makes a batch pass, and it never runs with a custom
``collate_fn`` (which may keep lists) or ``batch_size=None``.
"""

from __future__ import annotations

import bisect
import os
import sys
import threading
import warnings
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.utils.data

from . import _gulpdb
from ._dataset import Dataset, VideoId
from ._native_handle import count as _count
from ._decode import DecodeOptions, decode_options
from . import _read_ahead, _sampler
from ._sampler import VideoSampler
from .fileio import GulpDirectory

__all__ = [
    "VideoDataset",
    "ImageDataset",
    "IterableVideoDataset",
    "shard_ids",
    "sample_frame_indices",
    "VideoSampler",
]

Source = Union[str, "os.PathLike[str]", Dataset, GulpDirectory]
Label = Union[None, str, Callable[[Any], Any]]

_SAMPLINGS = ("all", "segments", "random_segments", "clip", "center_clip")
_CLIPS = ("clip", "center_clip")
_RANDOM_SAMPLINGS = ("random_segments", "clip")


def _sampling_of(sampling: Optional[str], num_frames: Optional[int], stride: int) -> str:
    """The sampling to use, refusing options it would ignore.

    ``sampling=None`` (the default) is ``"all"`` without ``num_frames`` and
    ``"segments"`` with it (``num_frames`` evenly spaced frames: the whole
    video, deterministic). ``num_frames`` with ``"all"``, a sampling other than
    ``"all"`` without ``num_frames``, and a ``stride`` other than 1 outside
    the clip samplings are ValueErrors: a given option never goes unused.
    """
    if sampling is None:
        sampling = "all" if num_frames is None else "segments"
    if sampling not in _SAMPLINGS:
        raise ValueError(f"sampling must be one of {_SAMPLINGS}, not {sampling!r}")
    if sampling == "all" and num_frames is not None:
        raise ValueError(
            f"sampling='all' reads every frame, so num_frames={num_frames!r} would be ignored: "
            "leave out num_frames for whole videos, or leave out sampling (num_frames alone "
            "takes evenly spaced frames, as 'segments') or pick 'segments', "
            "'random_segments', 'clip' or 'center_clip'"
        )
    if sampling != "all" and num_frames is None:
        raise ValueError(f"sampling {sampling!r} needs num_frames > 0")
    if stride != 1 and sampling not in _CLIPS:
        raise ValueError(
            f"stride={stride!r} applies to sampling 'clip' and 'center_clip' (frames stride "
            f"apart), so it would be ignored with sampling={sampling!r}"
        )
    return sampling


def _as_dataset(source: Source) -> Dataset:
    if isinstance(source, Dataset):
        return source
    if isinstance(source, GulpDirectory):
        if source.dataset is None:
            raise ValueError(f"{source.output_dir} holds no videos")
        return source.dataset
    path = os.fspath(source)
    if _gulpdb.is_remote_url(path) or Dataset.exists(path):  # a remote one is opened as it is
        return Dataset(path)
    dataset = GulpDirectory(path).dataset  # a GulpIO directory: indexed on first open
    if dataset is None:
        raise FileNotFoundError(f"{path} is neither a gulpdb dataset nor a GulpIO directory")
    return dataset


def _with_split(
    source: Source, ids: Optional[Iterable[VideoId]], split: Optional[str]
) -> Tuple[Source, Optional[Iterable[VideoId]]]:
    """``(source, ids)``, with the ids of the named split when ``split`` is given.

    KeyError (naming the known splits) for an unknown split; ValueError when
    both ``ids`` and ``split`` are given.
    """
    if split is None:
        return source, ids
    if ids is not None:
        raise ValueError(
            "pass ids= or split=, not both; for the videos of a split that are also in your "
            "list: ids=[i for i in dataset.split(name) if i in wanted]"
        )
    dataset = _as_dataset(source)
    return dataset, dataset.split(split)


def sample_frame_indices(
    frame_count: int,
    num_frames: Optional[int],
    sampling: Optional[str] = None,
    stride: int = 1,
    rng: Optional[np.random.Generator] = None,
) -> np.ndarray:
    """Which frames of a video of ``frame_count`` frames to read.

    Args:
        num_frames: frames to take (None: every frame).
        sampling: ``"all"``: every frame. ``"segments"``: the middle frame of
            each of ``num_frames`` equal segments. ``"random_segments"``: a
            random frame of each segment (TSN training). ``"clip"``:
            ``num_frames`` frames ``stride`` apart from a random start.
            ``"center_clip"``: the same clip, centred. None (the default):
            ``"all"`` without ``num_frames``, ``"segments"`` with it.
        stride: frames between those of a clip (``"clip"``,
            ``"center_clip"`` only).
        rng: the generator for the random samplings.

    A video shorter than a clip repeats its last frame; one with fewer frames
    than segments repeats frames. Returns int64 indices. An option the
    sampling would ignore (``num_frames`` with ``"all"``, ``stride`` outside
    the clips) is a ValueError.
    """
    if stride <= 0:
        raise ValueError("stride must be positive")
    if num_frames is not None and num_frames <= 0:
        raise ValueError(f"num_frames must be positive, not {num_frames!r}")
    sampling = _sampling_of(sampling, num_frames, stride)
    if sampling == "all":
        return np.arange(frame_count, dtype=np.int64)
    assert num_frames is not None
    if frame_count <= 0:
        raise ValueError("cannot sample frames of a video with no frames")
    if sampling in ("segments", "random_segments"):
        edges = np.arange(num_frames + 1, dtype=np.float64) * frame_count / num_frames
        if sampling == "segments":
            points = (edges[:-1] + edges[1:]) / 2
        else:
            rng = rng if rng is not None else np.random.default_rng()
            points = edges[:-1] + rng.random(num_frames) * (edges[1:] - edges[:-1])
        return np.minimum(points.astype(np.int64), frame_count - 1)
    span = (num_frames - 1) * stride + 1
    if frame_count >= span:
        if sampling == "center_clip":
            start = (frame_count - span) // 2
        else:
            rng = rng if rng is not None else np.random.default_rng()
            start = int(rng.integers(0, frame_count - span + 1))
    else:
        start = 0
    indices = start + np.arange(num_frames, dtype=np.int64) * stride
    return np.minimum(indices, frame_count - 1)


def shard_ids(
    ids: Sequence[Any], rank: Optional[int] = None, world_size: Optional[int] = None
) -> List[Any]:
    """The ids of one rank: every ``world_size``-th id starting at ``rank``.

    Deterministic, disjoint, and together the shards hold every id exactly
    once (they differ in length by at most one). ``rank`` and ``world_size``
    default to those of the initialised ``torch.distributed`` process group,
    else 0 and 1. ``ids`` is a sequence of ids (or of any items); a bare
    ``str`` or ``bytes`` is a TypeError.
    """
    if isinstance(ids, (str, bytes, bytearray)):
        raise TypeError(
            f"ids must be a sequence of ids, not a single {type(ids).__name__} {ids!r}: "
            f"pass [{ids!r}] for one id"
        )
    if rank is None or world_size is None:
        default_rank, default_world = _sampler._process_group()
        rank = default_rank if rank is None else rank
        world_size = default_world if world_size is None else world_size
    if world_size <= 0 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in a world of size {world_size}")
    return list(ids)[rank::world_size]


def _default_collate_follows() -> bool:
    """True when the caller's caller is a DataLoader fetching a batch that
    torch's default ``collate_fn`` will stack.

    DataLoader calls ``dataset.__getitems__(indices)`` from its fetcher, which
    then calls its ``collate_fn`` on the result; the fetcher is found a few
    frames up (more when a ``Subset`` forwards the call). Anything else (a
    direct call, a custom collate_fn) is False.
    """
    default = getattr(torch.utils.data, "default_collate", None)
    if default is None:  # torch < 1.11
        default = torch.utils.data._utils.collate.default_collate
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return False
        fetcher = frame.f_locals.get("self")
        if hasattr(fetcher, "collate_fn") and hasattr(fetcher, "auto_collation"):
            return fetcher.collate_fn is default
        frame = frame.f_back
    return False


def _check_one_shape(items: List[Any], ids: List[str], with_label: bool, what: str) -> None:
    """Raises RuntimeError when the tensors of a batch's items differ in shape."""
    first: Optional[Tuple[str, Tuple[int, ...]]] = None
    for item, id_ in zip(items, ids):
        tensor = item[0] if with_label and isinstance(item, tuple) else item
        if not isinstance(tensor, (torch.Tensor, np.ndarray)):
            return  # a transform made something else: nothing to tell
        shape = tuple(tensor.shape)
        if first is None:
            first = (id_, shape)
        elif shape != first[1]:
            raise RuntimeError(
                f"{what} of one batch differ in shape, so DataLoader's default collate_fn "
                f"cannot stack them: {first[0]!r} gives {first[1]} and {id_!r} gives {shape}. "
                "Make them one shape with size=(height, width) (and a fixed num_frames) or a "
                "resizing transform, "
                "or use batch_size=1, or pass a collate_fn that keeps a list "
                "(collate_fn=list)"
            )


class _IdsByPosition(Sequence[str]):
    """The ids of a dataset in its order, read a page of positions at a time.

    For a remote dataset, whose positions never move (it reads one published
    generation, in this process and, pickled, in DataLoader workers: a push
    of a grown dataset meanwhile is a new generation, read by a new
    VideoDataset): a reader that never touches a position never fetches the
    index partition holding it, where ``Dataset.ids()`` would fetch every
    order partition of a partitioned snapshot at construction, in every
    process. Pages never cross a block of the order (a partition), so that
    reading one id fetches only the partition that holds it; the last few
    pages read are kept.
    """

    _PAGE = 256
    _PAGES_KEPT = 64

    def __init__(self, dataset: Dataset) -> None:
        self._dataset = dataset
        self._count = len(dataset)  # of the generation `dataset` reads, whatever is pushed later
        self._blocks = [int(b) for b in dataset.order_blocks()] or [0]
        self._pages: "dict[int, List[str]]" = {}
        self._lock = threading.Lock()  # items may be read from several threads

    @property
    def dataset(self) -> Dataset:
        """The dataset (one published generation) whose positions these are."""
        return self._dataset

    def __len__(self) -> int:
        return self._count

    def _page_of(self, i: int) -> Tuple[int, int]:
        """The first position and length of the page holding position i."""
        b = bisect.bisect_right(self._blocks, i) - 1
        block_start = self._blocks[b]
        block_end = self._blocks[b + 1] if b + 1 < len(self._blocks) else self._count
        start = max(block_start, i - (i - block_start) % self._PAGE)
        return start, min(self._PAGE, block_end - start)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        i = int(index)
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(f"position {int(index)} is past the {self._count} videos")
        start, length = self._page_of(i)
        with self._lock:
            ids = self._pages.pop(start, None)
            if ids is not None:
                self._pages[start] = ids  # most recently used last
                return ids[i - start]
        ids = self._dataset.ids_at(start, length)
        if len(ids) != length:
            raise RuntimeError(
                f"{self._dataset.path}: positions {start}..{start + length - 1} gave "
                f"{len(ids)} ids (the dataset has {self._count} videos)")
        with self._lock:
            while len(self._pages) >= self._PAGES_KEPT:
                self._pages.pop(next(iter(self._pages)))
            self._pages[start] = ids
        return ids[i - start]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, _IdsByPosition)):
            return len(other) == self._count and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> Any:
        state = dict(self.__dict__)
        state["_pages"] = {}
        del state["_lock"]
        return state

    def __setstate__(self, state: Any) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<ids of {self._count} videos, read by position>"


class _VideoReader:
    """What the video datasets share: sampling, decoding, labels, transforms."""

    @classmethod
    def for_dataset(
        cls,
        what: str,
        source: Source,
        ids: Optional[Iterable[VideoId]],
        split: Optional[str],
        decode: Optional[DecodeOptions],
        decode_keywords: Dict[str, Any],
        *,
        shuffle: bool = False,
        **options: Any,
    ) -> "_VideoReader":
        """The reader of the dataset class named ``what``: of ``ids``, or of
        ``split``'s (:func:`_with_split`), decoding as ``decode`` and the
        keywords say; it warns when a seed is given that nothing draws from."""
        source, ids = _with_split(source, ids, split)
        reader = cls(source, ids, decode=decode_options(decode, decode_keywords, what), **options)
        reader.warn_unused_seed(what, shuffle=shuffle)
        return reader

    def __init__(
        self,
        source: Source,
        ids: Optional[Iterable[VideoId]],
        *,
        label: Label,
        transform: Optional[Callable[[torch.Tensor], Any]],
        decode: DecodeOptions,
        decode_threads: Optional[int],
        seed: Optional[int],
        num_frames: Optional[int] = None,
        sampling: Optional[str] = "all",
        stride: int = 1,
    ) -> None:
        self.decode = decode
        if num_frames is not None:
            num_frames = _count(num_frames, "num_frames", 1)
        stride = _count(stride, "stride", 1)
        sampling = _sampling_of(sampling, num_frames, stride)
        if decode_threads is not None:
            decode_threads = _count(decode_threads, "decode_threads", 0, _gulpdb.MAX_THREADS)
        self.dataset = _as_dataset(source)
        # Options the dataset's codec cannot honour (JPEG-only ones on an
        # h264 dataset) are a ValueError here, not in every DataLoader
        # worker; the engine owns the rule.
        self.dataset.native.check_decode_options(decode)
        # A remote dataset's positions never move: its ids are read as items
        # need them, instead of all of them in every process.
        self.ids: Sequence[str] = (
            _gulpdb._as_id_list(ids, "ids")
            if ids is not None
            else _IdsByPosition(self.dataset) if self.dataset.is_remote else self.dataset.ids()
        )
        self.label = label
        self.transform = transform
        self.num_frames = num_frames
        self.sampling = sampling
        self.stride = int(stride)
        self.seed = seed
        self.decode_threads = decode_threads
        self.epoch = 0
        self.in_dataset_order = ids is None  # item i is the video at position i
        self._worker_dataset: Optional[Tuple[int, Dataset]] = None
        self._digests: Dict[int, str] = {}  # ids_digest by count: the items never change

    def ids_digest(self, count: int) -> str:
        """The engine's digest of the ids of items [0, count) (gulpdb.Dataset.ids_digest)."""
        count = _count(count, "count")
        if count > len(self.ids):
            raise IndexError(f"count {count} is more than the {len(self.ids)} items")
        digest = self._digests.get(count)
        if digest is None:
            if isinstance(self.ids, _IdsByPosition):
                # The positions of the generation the items are read from.
                digest = self.ids.dataset.ids_digest(count)
            else:
                # The list the items were made of, which the dataset may no
                # longer start with (it changes under a local reader).
                ids = self.ids if count == len(self.ids) else self.ids[:count]
                digest = _gulpdb.ids_digest(ids)
            self._digests[count] = digest
        return digest

    @property
    def size(self) -> Optional[Tuple[int, int]]:
        """The output size of every frame, or None."""
        return self.decode.size

    def uses_randomness(self) -> bool:
        """True when an item's frames or crop window are drawn at random."""
        return self.sampling in _RANDOM_SAMPLINGS or self.decode.crop == "random"

    def warn_unused_seed(self, what: str, shuffle: bool = False) -> None:
        """A UserWarning for a seed other than the default that nothing random uses."""
        if self.seed not in (0, None) and not shuffle and not self.uses_randomness():
            warnings.warn(
                f"{what}: seed={self.seed!r} is ignored: nothing is drawn at random "
                f"(sampling={self.sampling!r}, crop={self.decode.crop!r}"
                f"{'' if self.size is not None else ', no size'})",
                UserWarning,
                stacklevel=3,
            )

    def set_epoch(self, epoch: int) -> None:
        """Changes the random sampling of the next epoch (as DistributedSampler.set_epoch)."""
        self.epoch = int(epoch)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_worker_dataset"] = None
        return state

    def _reader_dataset(self) -> Dataset:
        """The dataset to read from in this process.

        In a DataLoader worker the parallelism comes from the workers, so
        unless ``decode_threads`` was given each worker decodes on its own
        thread (no pool of one thread per core in every worker).
        """
        threads = self.decode_threads
        if threads is None and torch.utils.data.get_worker_info() is not None:
            threads = 1
        if threads is None:
            return self.dataset
        cached = self._worker_dataset
        if cached is not None and cached[0] == os.getpid():
            return cached[1]
        ds = self.dataset._reopened(decode_threads=threads)  # the same generation, if remote
        self._worker_dataset = (os.getpid(), ds)
        return ds

    def _rng(self, index: int) -> np.random.Generator:
        if self.seed is None:
            return np.random.default_rng()
        return np.random.default_rng([self.seed, self.epoch, index])

    def _label_of(self, ds: Dataset, id_: str) -> Any:
        meta = ds.meta(id_)
        if callable(self.label):
            return self.label(meta)
        return meta[self.label]

    def read_frames(self, ds: Dataset, index: int, id_: str, selection: Any, rng: Any) -> Any:
        """Decodes the selected frames, resized when ``size`` is set; a random
        crop takes its seed from ``rng`` (the item's generator)."""
        crop_seed = None
        if self.decode.crop == "random":
            rng = rng if rng is not None else self._rng(index)
            crop_seed = int(rng.integers(0, 2**63))
        return ds.read(id_, selection, decode=self.decode, crop_seed=crop_seed)

    def read_item(self, index: int, id_: str) -> Any:
        ds = self._reader_dataset()
        rng = self._rng(index)
        if self.sampling == "all":
            selection: Any = None
        else:
            selection = sample_frame_indices(
                ds.frame_count(id_), self.num_frames, self.sampling, self.stride, rng
            )
        frames = self.read_frames(ds, index, id_, selection, rng)
        if isinstance(frames, list):  # the video's frames differ in size
            shapes = sorted({f.shape for f in frames})
            raise ValueError(
                f"the frames of video {id_!r} differ in shape ({shapes[0]} and {shapes[1]}), "
                "so they make no T×H×W×C clip; read it with gulpdb.Dataset.read(id, "
                "as_list=True), or store its frames at one size"
            )
        clip = torch.from_numpy(frames)  # shares the decoded buffer
        if self.transform is not None:
            clip = self.transform(clip)
        if self.label is None:
            return clip
        return clip, self._label_of(ds, id_)


class _MapDataset(torch.utils.data.Dataset):
    """What the map-style datasets share: the reader (`_VideoReader`), the
    item protocol DataLoader and :class:`VideoSampler` use (ids, length,
    batches, epoch, identity), and read-ahead of the next
    ``prefetch_batches`` batches of a remote dataset
    (`_read_ahead.ReadAhead`). Each dataset says how an item is read
    (``__getitem__``), which frames it reads (`_requests_of`) and what its
    items are called in errors (`_items`)."""

    _items = "the items"
    _reader: _VideoReader
    _read_ahead: Optional[_read_ahead.ReadAhead] = None

    def _open(self, name: str, source: Source, ids: Optional[Iterable[VideoId]],
              split: Optional[str], decode: Optional[DecodeOptions],
              decode_keywords: Dict[str, Any], prefetch_batches: int, **reader: Any) -> None:
        prefetch_batches = _count(prefetch_batches, "prefetch_batches", 0, 1 << 20)
        self._reader = _VideoReader.for_dataset(
            name, source, ids, split, decode, decode_keywords, **reader
        )
        ds = self._reader.dataset
        if prefetch_batches and ds.is_remote:
            self._read_ahead = _read_ahead.ReadAhead(
                prefetch_batches, self._requests_of, ds.prefetch,
                shared=bool(ds.cache_stats()["enabled"]),
            )

    def _requests_of(self, indices: List[int]) -> List[Tuple[str, Any]]:
        raise NotImplementedError

    def read_ahead(self, indices: Iterable[int]) -> Iterator[int]:
        """What :class:`VideoSampler` iterates through: `indices` as they are,
        with read-ahead of the next ``prefetch_batches`` batches when it is on."""
        if self._read_ahead is None:
            return iter(indices)
        return self._read_ahead.wrap(indices)

    def _note_read(self) -> None:
        if self._read_ahead is not None:
            self._read_ahead.note_read()

    @property
    def ids(self) -> Sequence[str]:
        """The video ids, in item order: a list, or for a remote dataset read in
        its own order, a sequence that reads them by position as they are used."""
        return self._reader.ids

    @property
    def dataset(self) -> Dataset:
        """The :class:`gulpdb.Dataset` read from."""
        return self._reader.dataset

    @property
    def uuid(self) -> str:
        """The identity of the dataset read (:attr:`gulpdb.Dataset.uuid`)."""
        return self._reader.dataset.uuid

    def set_epoch(self, epoch: int) -> None:
        """Changes the random choices (frame sampling, crops) of the next epoch."""
        self._reader.set_epoch(epoch)

    def ids_digest(self, count: int) -> str:
        """The digest of the ids of items ``[0, count)`` in item order, as
        :meth:`gulpdb.Dataset.ids_digest` computes it (the same as the
        dataset's when the items are the dataset's order): what
        :class:`VideoSampler` records to resume on the same items. Computed
        once per count; IndexError past the items."""
        return self._reader.ids_digest(count)

    def __len__(self) -> int:
        return len(self._reader.ids)

    def __getitems__(self, indices: Sequence[int]) -> List[Any]:
        """The items of one batch; what DataLoader calls (see the class notes on shapes)."""
        if self._read_ahead is not None:
            self._read_ahead.learn_batch_size(len(indices))
        items = [self[i] for i in indices]
        if _default_collate_follows():
            ids = [self._reader.ids[i] for i in indices]
            _check_one_shape(items, ids, self._reader.label is not None, self._items)
        return items


class VideoDataset(_MapDataset):
    """A map-style dataset of the videos of a gulpdb dataset or GulpIO directory.

    Args:
        source: a dataset path, a GulpIO directory, a :class:`gulpdb.Dataset`
            or a :class:`gulpdb.GulpDirectory`.
        ids: the videos, in item order (default: every id, in dataset order):
            any iterable of str or int ids, but not a bare ``str``.
        split: the videos of this named split (:meth:`gulpdb.Dataset.split`),
            in split order, instead of ``ids`` (giving both is a ValueError;
            an unknown split a KeyError naming the known ones).
        label: a meta key (``"idx"``), a callable ``meta -> label``, or None.
        transform: applied to the uint8 T×H×W×C tensor of each item.
        num_frames, sampling, stride: see :func:`sample_frame_indices`:
            ``num_frames=16`` alone takes 16 evenly spaced frames
            (``"segments"``), no ``num_frames`` every frame; an option the
            sampling would ignore (``num_frames`` with ``sampling="all"``,
            ``stride`` outside the clips) is a ValueError here.
        seed: seeds the random samplings and crops (None: not reproducible;
            a seed other than 0 with nothing random is a UserWarning).
        decode: how frames are decoded, a :class:`gulpdb.DecodeOptions`, as
            for :meth:`gulpdb.Dataset.read`; its fields can also be given as
            keyword arguments (``colorspace``, ``dct``, ``downscale``,
            ``lenient``, ``size``, ``resize``, ``crop``), which change those
            of ``decode``. ``size=(height, width)``: every clip comes out
            T×height×width×C, resized in C++ (see the module notes); a
            random crop takes one window per clip, seeded by ``seed``.
        decode_threads: decode threads per read (default: one per core in the
            main process, one per DataLoader worker).
        prefetch_batches: read-ahead (default 0: off). Iterated by a
            :class:`VideoSampler`, the dataset fetches in the background the
            frames of the next ``prefetch_batches`` batches of the sampler's
            order, into the node's frame cache, where the DataLoader's
            workers then find them (``docs/frame_cache.md``, "Read-ahead").
            A batch is the DataLoader's ``batch_size`` when this process
            knows it (``num_workers=0``, or iterating ``sampler.track(loader)``),
            else 32 items. Remote datasets only; nothing for a local one.
            With the frame cache off the fetched bytes stay in this
            process's memory, so read-ahead runs only when this process reads
            the items (``num_workers=0``), never for DataLoader workers.

    Items are ``(clip, label)``, or ``clip`` alone when ``label`` is None;
    ``clip`` is a T×H×W×C uint8 tensor (after ``transform``, whatever it returns).

    Videos of different sizes or lengths: give ``size`` (and a fixed
    ``num_frames``) and the default ``collate_fn`` stacks any batch. Without
    it, a batch that DataLoader's default ``collate_fn`` would stack is
    checked first (after ``transform``), and clips of different shapes are a
    RuntimeError naming two ids and their shapes: give ``size``, resize in
    ``transform``, use ``batch_size=1``, or pass a ``collate_fn`` that keeps
    lists (then nothing is checked).
    """

    _items = "the clips"

    def __init__(
        self,
        source: Source,
        ids: Optional[Iterable[VideoId]] = None,
        *,
        split: Optional[str] = None,
        label: Label = None,
        transform: Optional[Callable[[torch.Tensor], Any]] = None,
        num_frames: Optional[int] = None,
        sampling: Optional[str] = None,
        stride: int = 1,
        seed: Optional[int] = 0,
        decode: Optional[DecodeOptions] = None,
        decode_threads: Optional[int] = None,
        prefetch_batches: int = 0,
        **decode_keywords: Any,
    ) -> None:
        self._open(
            "VideoDataset", source, ids, split, decode, decode_keywords, prefetch_batches,
            label=label, transform=transform, decode_threads=decode_threads, seed=seed,
            num_frames=num_frames, sampling=sampling, stride=stride,
        )

    def _requests_of(self, indices: List[int]) -> List[Tuple[str, Any]]:
        """(id, frames) of the items, as reading them selects (random samplings
        seeded as the read seeds them; without a seed, every frame)."""
        r = self._reader
        ds = r.dataset
        out = []
        for index in indices:
            id_ = r.ids[index]
            selection = None
            if r.sampling != "all" and not (r.seed is None and r.sampling in _RANDOM_SAMPLINGS):
                selection = sample_frame_indices(
                    ds.frame_count(id_), r.num_frames, r.sampling, r.stride, r._rng(index)
                )
            out.append((id_, selection))
        return out

    def order_blocks(self) -> List[int]:
        """The first item of each block of items stored together, ascending from 0.

        What ``VideoSampler(shuffle="blocks")`` keeps together: with the
        dataset's own order (no ``ids`` or ``split``), its
        :meth:`gulpdb.Dataset.order_blocks` (the partitions of a partitioned
        snapshot, blocks of 2048 positions of a local dataset); with ``ids``
        or ``split`` the items are in an order of their own, so blocks of 2048
        items.
        """
        n = len(self)
        blocks = getattr(self._reader.dataset, "order_blocks", None)
        if self._reader.in_dataset_order and callable(blocks):
            return [int(b) for b in blocks()]
        return list(range(0, n, _sampler.DEFAULT_BLOCK))

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            index += len(self)
        self._note_read()
        return self._reader.read_item(index, self._reader.ids[index])

    def __repr__(self) -> str:
        r = self._reader
        d = r.decode
        resized = "" if d.size is None else f", size={d.size}, resize={d.resize!r}, crop={d.crop!r}"
        return (
            f"<gulpdb.torch.VideoDataset {r.dataset.path!r}: {len(self)} videos, "
            f"sampling={r.sampling!r}, num_frames={r.num_frames}{resized}>"
        )


class ImageDataset(_MapDataset):
    """A map-style dataset of images: one frame (``frame``, default 0) per id.

    Items are ``(image, label)`` or ``image`` alone when ``label`` is None;
    ``image`` is an H×W×C uint8 tensor (before ``transform``), height×width×C
    with ``size``. ``size``, ``resize`` and ``crop`` are as for
    :class:`VideoDataset`; a random crop is drawn per item from ``seed``, the
    epoch and the item's index. Other arguments are as for
    :class:`VideoDataset`, including the check of a batch's shapes before
    DataLoader's default ``collate_fn`` stacks it.
    """

    _items = "the images"

    def __init__(
        self,
        source: Source,
        ids: Optional[Iterable[VideoId]] = None,
        *,
        split: Optional[str] = None,
        label: Label = None,
        transform: Optional[Callable[[torch.Tensor], Any]] = None,
        frame: int = 0,
        seed: Optional[int] = 0,
        decode: Optional[DecodeOptions] = None,
        decode_threads: Optional[int] = None,
        prefetch_batches: int = 0,
        **decode_keywords: Any,
    ) -> None:
        self.transform = transform
        self.frame = int(frame)
        self._open(
            "ImageDataset", source, ids, split, decode, decode_keywords, prefetch_batches,
            label=label, transform=None, decode_threads=decode_threads, seed=seed,
        )

    def _requests_of(self, indices: List[int]) -> List[Tuple[str, Any]]:
        """(id, [frame]) of the items: the one frame each reads."""
        return [(self._reader.ids[index], [self.frame]) for index in indices]

    def __getitem__(self, index: int) -> Any:
        r = self._reader
        if index < 0:
            index += len(self)
        self._note_read()
        id_ = r.ids[index]
        ds = r._reader_dataset()
        frames = r.read_frames(ds, index, id_, [self.frame], None)
        image = torch.from_numpy(frames[0])
        if self.transform is not None:
            image = self.transform(image)
        if r.label is None:
            return image
        return image, r._label_of(ds, id_)

    def __repr__(self) -> str:
        return f"<gulpdb.torch.ImageDataset {self._reader.dataset.path!r}: {len(self)} images>"


class IterableVideoDataset(torch.utils.data.IterableDataset):
    """The items of :class:`VideoDataset`, sharded by rank and DataLoader worker.

    Each epoch the ids are (optionally) shuffled with a permutation that
    depends only on ``seed`` and the epoch — the same on every rank — then
    rank r takes ``ids[r::world_size]`` (:func:`shard_ids`) and DataLoader
    worker w of that rank every ``num_workers``-th of those. All ranks and
    workers together yield every id exactly once, with no padding.

    Args:
        rank, world_size: default to the ``torch.distributed`` process group
            (else 0 and 1), looked up when iteration starts.
        shuffle: shuffle the ids each epoch.
        return_id: yield ``(id, item)`` pairs.
        Other arguments are as for :class:`VideoDataset`.
    """

    def __init__(
        self,
        source: Source,
        ids: Optional[Iterable[VideoId]] = None,
        *,
        split: Optional[str] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        shuffle: bool = False,
        return_id: bool = False,
        label: Label = None,
        transform: Optional[Callable[[torch.Tensor], Any]] = None,
        num_frames: Optional[int] = None,
        sampling: Optional[str] = None,
        stride: int = 1,
        seed: Optional[int] = 0,
        decode: Optional[DecodeOptions] = None,
        decode_threads: Optional[int] = None,
        **decode_keywords: Any,
    ) -> None:
        super().__init__()
        self._reader = _VideoReader.for_dataset(
            "IterableVideoDataset", source, ids, split, decode, decode_keywords, shuffle=shuffle,
            label=label, transform=transform, decode_threads=decode_threads, seed=seed,
            num_frames=num_frames, sampling=sampling, stride=stride,
        )
        self.rank = rank
        self.world_size = world_size
        self.shuffle = shuffle
        self.return_id = return_id

    def set_epoch(self, epoch: int) -> None:
        """Changes the shuffle and the random sampling of the next epoch."""
        self._reader.set_epoch(epoch)

    def _rank_items(self) -> List[Tuple[int, str]]:
        r = self._reader
        order = np.arange(len(r.ids))
        if self.shuffle:
            seed = 0 if r.seed is None else r.seed
            order = np.random.default_rng([seed, r.epoch]).permutation(len(r.ids))
        items = [(int(i), r.ids[i]) for i in order]
        return shard_ids(items, self.rank, self.world_size)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self._rank_items())

    def __iter__(self) -> Iterator[Any]:
        items = self._rank_items()
        worker = torch.utils.data.get_worker_info()
        if worker is not None:
            items = items[worker.id :: worker.num_workers]
        for index, id_ in items:
            item = self._reader.read_item(index, id_)
            yield (id_, item) if self.return_id else item

    def __repr__(self) -> str:
        return (
            f"<gulpdb.torch.IterableVideoDataset {self._reader.dataset.path!r}: "
            f"{len(self._reader.ids)} videos, rank={self.rank}, world_size={self.world_size}>"
        )
