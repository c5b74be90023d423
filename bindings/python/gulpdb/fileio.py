"""GulpIO2's API over gulpdb: ``GulpDirectory``, ``GulpChunk``, ``ChunkWriter``,
``GulpIngestor``.

The call shapes are GulpIO2's, so that ``import gulpdb as gulpio2`` (or
``from gulpdb.fileio import GulpDirectory``) runs code written for it::

    gulp_directory = GulpDirectory('/data/something_something_gulps')
    for chunk in gulp_directory:
        for frames, meta in chunk:
            ...
    frames, meta = gulp_directory['12345']
    frames, meta = gulp_directory['12345', 1:10:2]
    frames, meta = gulp_directory['12345', [1, 5, 6, 8]]

``frames`` is a list of uint8 arrays (H×W×3, or H×W for a grayscale JPEG)
decoded with the fast DCT, the same pixels GulpIO2 returns; ``meta`` is the
video's first ``meta_data`` entry.

What differs from GulpIO2, and why:

- Opening is O(1): ``merged_meta_dict``, ``chunk_lookup``, ``all_meta_dicts``
  and each chunk's ``meta_dict`` are lazy read-only mappings backed by the
  index, not dicts loaded from every ``.gmeta``.
- A plain GulpIO directory gets a gulpdb index on first open (see
  :mod:`gulpdb._index_cache`); its ``.gulp`` files are never modified.
- Writes go through gulpdb's transactional writer: ``GulpChunk.open('wb'|'ab')``
  commits when the block ends and rolls back if it raises; ``flush()`` commits.
  The engine decides which chunk file receives a video (a new chunk every
  ``videos_per_chunk`` videos), so a chunk object used for writing stands for
  "the next videos", not for one file. An id already present is an error
  (GulpIO2 would silently extend it). No ``.gmeta`` is written; use
  :func:`gulpdb.export_gmeta` for unmodified GulpIO2 readers.
- A missing id raises KeyError everywhere (GulpIO2 sometimes fails with a
  TypeError).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import re
import sys
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np

from . import _gulpdb
from ._dataset import Dataset, Writer
from ._index_cache import open_for_gulpio

__all__ = [
    "GulpDirectory",
    "GulpChunk",
    "ChunkWriter",
    "GulpIngestor",
    "calculate_chunk_slices",
    "extract_input_for_getitem",
]

#: A custom decoder: JPEG bytes in, an image out.
JpegDecoder = Callable[[bytes], Any]

_READ_AHEAD = 8  # videos decoded together (in parallel) by GulpChunk.iter_all


def extract_input_for_getitem(element: Any) -> Tuple[str, Any]:
    """Splits ``gd[id]`` / ``gd[id, frames]`` into ``(str(id), frames or None)``."""
    if isinstance(element, tuple) and len(element) == 2:
        id_, slice_ = element
    elif isinstance(element, (int, str, np.integer)):
        id_, slice_ = element, None
    else:
        raise TypeError("Undefined input type! id or (id, slice) expected")
    return str(id_), slice_


def _selection(slice_: Any) -> Any:
    """GulpIO2's frame selections: None, a slice, a list or array of indices."""
    if slice_ is None or isinstance(slice_, (slice, list, tuple, np.ndarray, range)):
        return slice_
    if isinstance(slice_, (int, np.integer)):
        return [int(slice_)]
    raise TypeError(f"frames must be a slice or a list of indices, not {type(slice_).__name__}")


def _native_colorspace(colorspace: Optional[str]) -> Tuple[str, bool]:
    """Maps GulpIO2's colorspace argument to (gulpdb colorspace, drop channel axis)."""
    if colorspace is None:
        return "auto", False
    spelled = colorspace.upper()
    if spelled == "RGB":
        return "rgb", False
    if spelled in ("GRAY", "GREY"):
        return "gray", True
    raise ValueError(f"colorspace must be None, 'RGB' or 'GRAY', not {colorspace!r}")


def _meta_entry(meta_data: List[Any]) -> Any:
    """GulpIO2 returns a copy of the first meta_data entry."""
    if not meta_data:
        return {}
    first = meta_data[0]
    return dict(first) if isinstance(first, dict) else first


def _chunk_number(file_name: str) -> int:
    """GulpIO's chunk id: the first run of digits in the file name."""
    found = re.findall(r"\d+", os.path.basename(file_name))
    if not found:
        raise ValueError(f"no chunk number in file name {file_name!r}")
    return int(found[0])


class _Reader:
    """Reads (frames, meta) as GulpIO2 returns them, from one Dataset."""

    def __init__(self, colorspace: Optional[str], jpeg_decoder: Optional[JpegDecoder]) -> None:
        self.colorspace = colorspace
        self.jpeg_decoder = jpeg_decoder
        self._native_cs, self._squeeze = _native_colorspace(colorspace)

    def _finish(self, frames: List[Any]) -> List[Any]:
        if self._squeeze:
            return [f[..., 0] if f.ndim == 3 else f for f in frames]
        return frames

    def read(
        self, ds: Dataset, id_: str, slice_: Any, meta_json: Optional[str] = None
    ) -> Tuple[List[Any], Any]:
        native = ds.native
        selection = _selection(slice_)
        if self.jpeg_decoder is not None:
            frames = [self.jpeg_decoder(b) for b in native.read_jpegs(id_, selection)]
        else:
            frames = self._finish(
                native.read(id_, selection, self._native_cs, "fast", 1, False, True)
            )
        if meta_json is None:
            meta_json = native.meta_json(id_)
        return frames, _meta_entry(json.loads(meta_json))

    def read_many(
        self, ds: Dataset, videos: Sequence[_gulpdb.VideoInfo]
    ) -> List[Tuple[List[Any], Any]]:
        """Whole videos, decoded together (in parallel) when no custom decoder is set."""
        native = ds.native
        ids = [v.id for v in videos]
        if self.jpeg_decoder is not None:
            batches = native.read_jpeg_batch(ids, None)
            frame_lists = [[self.jpeg_decoder(b) for b in jpegs] for jpegs in batches]
        else:
            frame_lists = [
                self._finish(frames)
                for frames in native.read_batch(ids, None, self._native_cs, "fast", 1, False, True)
            ]
        return [
            (frames, _meta_entry(json.loads(v.meta_data))) for frames, v in zip(frame_lists, videos)
        ]


def _meta_dict_entry(info: _gulpdb.VideoInfo) -> Dict[str, Any]:
    return {
        "frame_info": [list(f) for f in info.frame_info],
        "meta_data": json.loads(info.meta_data),
    }


# ---- lazy read-only mappings ------------------------------------------------------


class _MergedMetaDict(Mapping):
    """id -> {'frame_info': [...], 'meta_data': [...]} over the whole directory."""

    def __init__(self, directory: "GulpDirectory") -> None:
        self._directory = directory

    def __getitem__(self, id_: str) -> Dict[str, Any]:
        ds = self._directory._require_dataset(id_)
        if not isinstance(id_, str):
            raise KeyError(id_)
        return _meta_dict_entry(ds.info(id_))

    def __contains__(self, id_: object) -> bool:
        ds = self._directory.dataset
        return ds is not None and isinstance(id_, str) and id_ in ds

    def __iter__(self) -> Iterator[str]:
        for chunk in self._directory:
            yield from chunk.meta_dict

    def __len__(self) -> int:
        ds = self._directory.dataset
        return 0 if ds is None else len(ds)

    def __repr__(self) -> str:
        return f"<merged_meta_dict of {self._directory.output_dir!r}: {len(self)} ids>"


class _ChunkLookup(Mapping):
    """id -> chunk id over the whole directory."""

    def __init__(self, directory: "GulpDirectory") -> None:
        self._directory = directory

    def __getitem__(self, id_: str) -> int:
        ds = self._directory._require_dataset(id_)
        if not isinstance(id_, str):
            raise KeyError(id_)
        return ds.info(id_).chunk

    def __contains__(self, id_: object) -> bool:
        ds = self._directory.dataset
        return ds is not None and isinstance(id_, str) and id_ in ds

    def __iter__(self) -> Iterator[str]:
        return iter(self._directory.merged_meta_dict)

    def __len__(self) -> int:
        return len(self._directory.merged_meta_dict)

    def __repr__(self) -> str:
        return f"<chunk_lookup of {self._directory.output_dir!r}: {len(self)} ids>"


class _ChunkMetaDict(Mapping):
    """id -> {'frame_info': [...], 'meta_data': [...]} for the videos of one chunk."""

    def __init__(self, chunk: "GulpChunk") -> None:
        self._chunk = chunk

    def _ds(self) -> Optional[Dataset]:
        return self._chunk._directory_obj().dataset

    def __getitem__(self, id_: str) -> Dict[str, Any]:
        ds = self._ds()
        if ds is None or not isinstance(id_, str):
            raise KeyError(id_)
        info = ds.native.find(id_)
        if info is None or info.chunk != self._chunk.chunk_id:
            raise KeyError(id_)
        return _meta_dict_entry(info)

    def __contains__(self, id_: object) -> bool:
        ds = self._ds()
        if ds is None or not isinstance(id_, str):
            return False
        info = ds.native.find(id_)
        return info is not None and info.chunk == self._chunk.chunk_id

    def __iter__(self) -> Iterator[str]:
        ds = self._ds()
        return iter(() if ds is None else ds.native.chunk_ids(self._chunk.chunk_id))

    def __len__(self) -> int:
        ds = self._ds()
        return 0 if ds is None else len(ds.native.chunk_ids(self._chunk.chunk_id))

    def __repr__(self) -> str:
        return f"<meta_dict of chunk {self._chunk.chunk_id}: {len(self)} ids>"


# ---- GulpDirectory ----------------------------------------------------------------------


class GulpDirectory:
    """A directory of GulpIO chunks, read through gulpdb's index.

    Args:
        output_dir: a gulpdb dataset or a GulpIO/GulpIO2 directory (indexed on
            first open), or an empty/new directory (read as empty; writes create
            a dataset there).
        colorspace: None (GulpIO2's behaviour: RGB for colour JPEGs, H×W for
            grayscale ones), ``"RGB"`` (always H×W×3) or ``"GRAY"`` (always H×W).
        jpeg_decoder: a callable turning JPEG bytes into a frame, used instead
            of gulpdb's decoder (as GulpIO's ``jpeg_decoder`` argument).
        index_dir: keep the index there instead of finding or building it.
        quiet: no progress message while indexing a GulpIO directory.
        decode_threads: threads decoding one read (0: one per core).

    Attributes:
        output_dir, colorspace, jpeg_decoder: as given.
        merged_meta_dict: id -> ``{'frame_info', 'meta_data'}`` (lazy, read-only).
        chunk_lookup: id -> chunk id (lazy, read-only).
        all_meta_dicts: every chunk's ``meta_dict``, in chunk order.
        chunk_objs_lookup: chunk id -> :class:`GulpChunk`, in chunk order.
        num_chunks: number of chunks.

    Chunk order is GulpIO2's: the data file names sorted as strings
    (``data_0, data_1, data_10, data_2``...).
    """

    def __init__(
        self,
        output_dir: Union[str, "os.PathLike[str]"],
        colorspace: Optional[str] = None,
        jpeg_decoder: Optional[JpegDecoder] = None,
        *,
        index_dir: Optional[str] = None,
        quiet: bool = False,
        decode_threads: int = 0,
    ) -> None:
        self.output_dir = os.fspath(output_dir)
        self.colorspace = colorspace
        self.jpeg_decoder = jpeg_decoder
        self._reader = _Reader(colorspace, jpeg_decoder)
        self._index_dir = index_dir
        self._quiet = quiet
        self._decode_threads = decode_threads
        self._dataset, self._cached = open_for_gulpio(
            self.output_dir, index_dir=index_dir, quiet=quiet, decode_threads=decode_threads
        )
        self._chunks: Optional["OrderedDict[int, GulpChunk]"] = None

    # ---- pickling: by path; caches are rebuilt -------------------------------------------

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_chunks"] = None
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)

    # ---- the dataset --------------------------------------------------------------------

    @property
    def dataset(self) -> Optional[Dataset]:
        """The :class:`gulpdb.Dataset` behind this directory (None while empty)."""
        return self._dataset

    def _require_dataset(self, id_: Any) -> Dataset:
        if self._dataset is None:
            raise KeyError(id_)
        return self._dataset

    def _writable_dataset(self, videos_per_chunk: int = 100) -> Dataset:
        """The dataset opened read-write, created if the directory has none."""
        if self._dataset is not None and not self._dataset.read_only:
            return self._dataset
        if self._cached:
            raise PermissionError(
                f"{self.output_dir} is read-only; its index lives in the user cache"
            )
        # This process may not hold the same index read-only and read-write at
        # once: give up the read-only handle first.
        if self._dataset is not None:
            self._dataset.close()
        os.makedirs(self.output_dir, exist_ok=True)
        self._dataset = Dataset(
            self.output_dir,
            "a",
            index_dir=self._index_dir,
            decode_threads=self._decode_threads,
            videos_per_chunk=videos_per_chunk,
        )
        self._chunks = None
        return self._dataset

    def _invalidate(self) -> None:
        self._chunks = None

    # ---- chunks -------------------------------------------------------------------------

    @property
    def chunk_objs_lookup(self) -> "OrderedDict[int, GulpChunk]":
        """chunk id -> :class:`GulpChunk`, in GulpIO2's chunk order."""
        if self._chunks is None:
            chunks: "OrderedDict[int, GulpChunk]" = OrderedDict()
            if self._dataset is not None:
                infos = sorted(
                    self._dataset.chunks(),
                    key=lambda c: os.path.join(self.output_dir, c.file_name),
                )
                for c in infos:
                    meta_name = c.meta_file or f"meta_{c.number}.gmeta"
                    chunks[c.number] = GulpChunk(
                        os.path.join(self.output_dir, c.file_name),
                        os.path.join(self.output_dir, meta_name),
                        colorspace=self.colorspace,
                        jpeg_decoder=self.jpeg_decoder,
                        _directory=self,
                        _chunk_id=c.number,
                    )
            self._chunks = chunks
        return self._chunks

    @property
    def num_chunks(self) -> int:
        """Number of chunks."""
        return len(self.chunk_objs_lookup)

    @property
    def all_meta_dicts(self) -> List[Mapping]:
        """Every chunk's ``meta_dict`` (lazy mappings), in chunk order."""
        return [c.meta_dict for c in self.chunk_objs_lookup.values()]

    @property
    def merged_meta_dict(self) -> Mapping:
        """id -> ``{'frame_info': [...], 'meta_data': [...]}``, lazy and read-only."""
        return _MergedMetaDict(self)

    @property
    def chunk_lookup(self) -> Mapping:
        """id -> chunk id, lazy and read-only."""
        return _ChunkLookup(self)

    def __iter__(self) -> Iterator["GulpChunk"]:
        return iter(list(self.chunk_objs_lookup.values()))

    def chunks(self) -> Iterator["GulpChunk"]:
        """The existing chunks, ready to be read (same as iterating)."""
        return self.__iter__()

    def _next_chunk_id(self) -> int:
        numbers = list(self.chunk_objs_lookup)
        for name in os.listdir(self.output_dir) if os.path.isdir(self.output_dir) else ():
            if name.startswith("data") and name.endswith(".gulp"):
                with contextlib.suppress(ValueError):
                    numbers.append(_chunk_number(name))
        return max(numbers) + 1 if numbers else 0

    def new_chunks(self, total_new_chunks: int) -> Iterator["GulpChunk"]:
        """``total_new_chunks`` chunk objects to write new videos through.

        Where the videos land is decided by the engine (see the module notes);
        the names are those of the next free chunk numbers.
        """
        start = self._next_chunk_id()
        return iter(
            [
                GulpChunk(
                    os.path.join(self.output_dir, f"data_{n}.gulp"),
                    os.path.join(self.output_dir, f"meta_{n}.gmeta"),
                    colorspace=self.colorspace,
                    jpeg_decoder=self.jpeg_decoder,
                    _directory=self,
                    _chunk_id=n,
                )
                for n in range(start, start + int(total_new_chunks))
            ]
        )

    def new_chunk(self) -> "GulpChunk":
        """One new chunk object (see :meth:`new_chunks`)."""
        return next(self.new_chunks(1))

    # ---- reads --------------------------------------------------------------------------

    def __getitem__(self, element: Any) -> Tuple[List[Any], Any]:
        """``gd[id]``, ``gd[id, 1:10:2]``, ``gd[id, [1, 5, 6]]`` -> ``(frames, meta)``."""
        id_, slice_ = extract_input_for_getitem(element)
        ds = self._require_dataset(id_)
        return self._reader.read(ds, id_, slice_)

    def __contains__(self, id_: object) -> bool:
        return self._dataset is not None and str(id_) in self._dataset

    def __repr__(self) -> str:
        where = " (index in the user cache)" if self._cached else ""
        videos = 0 if self._dataset is None else len(self._dataset)
        return f"<gulpdb.GulpDirectory {self.output_dir!r}: {videos} videos{where}>"


# ---- GulpChunk ----------------------------------------------------------------------


class GulpChunk:
    """One chunk of a :class:`GulpDirectory`: its videos, reads and writes.

    Args:
        data_file_path, meta_file_path: the chunk's ``.gulp`` and ``.gmeta``
            paths. Their directory is opened (and indexed if needed) on first use.
        serializer: accepted for GulpIO2 compatibility and ignored (the index
            is not a ``.gmeta`` file).
        colorspace, jpeg_decoder: as for :class:`GulpDirectory`.

    Attributes:
        meta_dict: id -> ``{'frame_info', 'meta_data'}`` of this chunk's videos
            (lazy, read-only).
        chunk_id: the chunk number.
    """

    def __init__(
        self,
        data_file_path: str,
        meta_file_path: str,
        serializer: Any = None,
        colorspace: Optional[str] = None,
        jpeg_decoder: Optional[JpegDecoder] = None,
        *,
        _directory: Optional[GulpDirectory] = None,
        _chunk_id: Optional[int] = None,
    ) -> None:
        self.data_file_path = os.fspath(data_file_path)
        self.meta_file_path = os.fspath(meta_file_path)
        self.serializer = serializer
        self.colorspace = colorspace
        self.jpeg_decoder = jpeg_decoder
        self.chunk_id = _chunk_id if _chunk_id is not None else _chunk_number(self.data_file_path)
        self._directory = _directory
        self._reader = _Reader(colorspace, jpeg_decoder)
        self._writer: Optional[Writer] = None
        self._videos_per_chunk = 100

    def _directory_obj(self) -> GulpDirectory:
        if self._directory is None:
            self._directory = GulpDirectory(
                os.path.dirname(os.path.abspath(self.data_file_path)),
                colorspace=self.colorspace,
                jpeg_decoder=self.jpeg_decoder,
            )
        return self._directory

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        if state["_writer"] is not None:
            raise TypeError("a GulpChunk that is open for writing cannot be pickled")
        return state

    @property
    def meta_dict(self) -> Mapping:
        """id -> ``{'frame_info': [...], 'meta_data': [...]}`` for this chunk."""
        return _ChunkMetaDict(self)

    def __contains__(self, id_: object) -> bool:
        return str(id_) in self.meta_dict

    def __len__(self) -> int:
        return len(self.meta_dict)

    def __getitem__(self, element: Any) -> Tuple[List[Any], Any]:
        id_, slice_ = extract_input_for_getitem(element)
        return self.read_frames(id_, slice_)

    def __iter__(self) -> Iterator[Tuple[List[Any], Any]]:
        return self.iter_all()

    def __repr__(self) -> str:
        return f"<gulpdb.GulpChunk {self.chunk_id} {self.data_file_path!r}>"

    def read_frames(self, id_: Any, slice_: Any = None) -> Tuple[List[Any], Any]:
        """``(frames, meta)`` of one video of this chunk; KeyError if it is not here.

        Args:
            id_: the video id (converted with ``str``).
            slice_: a slice or a list/array of frame indices; all frames if None.
        """
        id_ = str(id_)
        ds = self._directory_obj()._require_dataset(id_)
        info = ds.native.find(id_)
        if info is None or info.chunk != self.chunk_id:
            raise KeyError(id_)
        return self._reader.read(ds, id_, slice_, info.meta_data)

    def iter_all(
        self, accepted_ids: Optional[Sequence[Any]] = None, shuffle: bool = False
    ) -> Iterator[Tuple[List[Any], Any]]:
        """Yields ``(frames, meta)`` for every video of the chunk, in insertion order.

        Args:
            accepted_ids: only these ids (others are skipped).
            shuffle: visit the videos in an order shuffled with ``numpy.random``.
        """
        ds = self._directory_obj().dataset
        if ds is None:
            return
        videos = ds.native.chunk_videos(self.chunk_id)
        if accepted_ids is not None:
            accepted = {str(a) for a in accepted_ids}
            videos = [v for v in videos if v.id in accepted]
        if shuffle:
            videos = list(videos)
            np.random.shuffle(videos)
        for start in range(0, len(videos), _READ_AHEAD):
            yield from self._reader.read_many(ds, videos[start : start + _READ_AHEAD])

    # ---- writes -------------------------------------------------------------------------

    @contextlib.contextmanager
    def open(self, flag: str = "rb") -> Iterator[None]:
        """Opens the chunk: ``'rb'`` to read, ``'wb'``/``'ab'`` to write.

        Writing starts a transaction that commits when the block ends normally
        (and at every :meth:`flush`) and rolls back if it raises. ``'wb'`` is
        for a new chunk: gulpdb never overwrites committed frames, so it is a
        ValueError on a chunk that already holds videos.
        """
        if flag not in ("rb", "wb", "ab"):
            raise NotImplementedError(f"This file does not support the mode: '{flag}'")
        if flag == "rb":
            yield
            return
        if self._writer is not None:
            raise ValueError(f"chunk {self.chunk_id} is already open for writing")
        directory = self._directory_obj()
        if flag == "wb" and directory.dataset is not None and len(self.meta_dict) > 0:
            raise ValueError(
                f"open('wb') on chunk {self.chunk_id}, which holds videos: gulpdb never "
                "overwrites committed frames; append with open('ab')"
            )
        ds = directory._writable_dataset(self._videos_per_chunk)
        writer = ds.writer()
        self._writer = writer
        try:
            yield
        except BaseException:
            writer.rollback()
            raise
        else:
            writer.commit()
        finally:
            self._writer = None
            writer.close()
            directory._invalidate()

    def flush(self) -> None:
        """Commits what was appended so far (durable and visible to readers)."""
        if self._writer is not None:
            self._writer.commit()
            self._directory_obj()._invalidate()

    def append(self, id_: Any, meta_data: Any, frames: Sequence[Any]) -> None:
        """Appends a video: ``meta_data`` a dict, ``frames`` uint8 images or JPEG bytes.

        Outside an ``open('wb'|'ab')`` block the video is committed at once.
        """
        if self._writer is None:
            with self.open("ab"):
                self.append(id_, meta_data, frames)
            return
        self._writer.append(str(id_), list(frames), meta_data)


# ---- ingestion ------------------------------------------------------------------------


class ChunkWriter:
    """Writes the items of an adapter slice through a chunk (GulpIO2's ChunkWriter)."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def write_chunk(self, output_chunk: GulpChunk, input_slice: slice) -> None:
        """Appends every item of ``adapter.iter_data(input_slice)`` in one transaction."""
        with output_chunk.open("wb"):
            for video in self.adapter.iter_data(input_slice):
                id_ = video["id"]
                meta_data = video["meta"]
                frames = video["frames"]
                if len(frames) > 0:
                    output_chunk.append(id_, meta_data, frames)
                else:
                    print(f"Failed to write video with id: {id_}; no frames", file=sys.stderr)


def calculate_chunk_slices(items_per_chunk: int, num_items: int) -> List[slice]:
    """Slices of ``items_per_chunk`` items covering ``range(num_items)``."""
    if items_per_chunk <= 0:
        raise ValueError("items_per_chunk must be positive")
    if num_items <= 0:
        raise ValueError("there are no items to ingest")
    return [
        slice(i, min(i + items_per_chunk, num_items))
        for i in range(0, num_items, items_per_chunk)
    ]


def _encode_slice(
    adapter: Any, input_slice: slice, quality: int
) -> List[Tuple[Any, Any, List[bytes]]]:
    """Runs in a worker process: reads one slice and encodes its frames to JPEG."""
    out = []
    for video in adapter.iter_data(input_slice):
        jpegs = [
            f if isinstance(f, (bytes, bytearray)) else _gulpdb.encode_jpeg(np.asarray(f), quality)
            for f in video["frames"]
        ]
        out.append((video["id"], video["meta"], jpegs))
    return out


class GulpIngestor:
    """Ingests the items of an adapter into a gulpdb dataset (GulpIO2's GulpIngestor).

    Args:
        adapter: an :class:`gulpdb.adapters.AbstractDatasetAdapter` (``iter_data``
            yielding ``{'id', 'frames', 'meta'}``, and ``__len__``).
        output_folder: the dataset directory (created, or appended to).
        videos_per_chunk: videos per chunk file (for a new dataset).
        num_workers: with 1, items are read in this process and their frames
            encoded by gulpdb on all cores; with more, that many worker
            processes read slices of the adapter and encode them (the adapter
            must pickle, as with GulpIO2), and this process writes.
        mp_context: the multiprocessing context of the workers (default: the
            platform's).

    Calling it writes one transaction per slice of ``videos_per_chunk`` items;
    an interrupted ingest keeps every slice committed so far.
    """

    def __init__(
        self,
        adapter: Any,
        output_folder: Union[str, "os.PathLike[str]"],
        videos_per_chunk: int,
        num_workers: int,
        *,
        quality: int = 90,
        mp_context: Optional[Any] = None,
        quiet: bool = False,
    ) -> None:
        if int(num_workers) <= 0:
            raise ValueError("num_workers must be positive")
        self.adapter = adapter
        self.output_folder = os.fspath(output_folder)
        self.videos_per_chunk = int(videos_per_chunk)
        self.num_workers = int(num_workers)
        self.quality = int(quality)
        self.mp_context = mp_context
        self.quiet = quiet

    def _slices_in_process(self, slices: List[slice]) -> Iterator[List[Tuple[Any, Any, Any]]]:
        for s in slices:
            yield [(v["id"], v["meta"], v["frames"]) for v in self.adapter.iter_data(s)]

    def _slices_in_workers(self, slices: List[slice]) -> Iterator[List[Tuple[Any, Any, Any]]]:
        context = self.mp_context or multiprocessing.get_context()
        with concurrent.futures.ProcessPoolExecutor(self.num_workers, mp_context=context) as pool:
            pending: List[concurrent.futures.Future] = []
            queue = iter(slices)
            window = 2 * self.num_workers  # slices in flight: bounds memory
            for s in queue:
                pending.append(pool.submit(_encode_slice, self.adapter, s, self.quality))
                if len(pending) >= window:
                    break
            while pending:
                done = pending.pop(0)
                nxt = next(queue, None)
                if nxt is not None:
                    pending.append(pool.submit(_encode_slice, self.adapter, nxt, self.quality))
                yield done.result()

    def __call__(self) -> None:
        os.makedirs(self.output_folder, exist_ok=True)
        slices = calculate_chunk_slices(self.videos_per_chunk, len(self.adapter))
        directory = GulpDirectory(self.output_folder, quiet=self.quiet)
        ds = directory._writable_dataset(self.videos_per_chunk)
        produce = self._slices_in_process if self.num_workers == 1 else self._slices_in_workers
        started = time.monotonic()
        last_report = started
        written = 0
        with ds.writer(quality=self.quality) as writer:
            for done, items in enumerate(produce(slices), 1):
                for id_, meta, frames in items:
                    if len(frames) == 0:
                        print(f"Failed to write video with id: {id_}; no frames", file=sys.stderr)
                        continue
                    if not isinstance(frames, np.ndarray):
                        frames = list(frames)
                    writer.append(str(id_), frames, meta)
                    written += 1
                writer.commit()
                now = time.monotonic()
                if not self.quiet and (now - last_report > 2 or done == len(slices)):
                    last_report = now
                    print(
                        f"gulpdb: {done}/{len(slices)} chunks, {written} videos, "
                        f"{now - started:.1f} s",
                        file=sys.stderr,
                    )
        directory._invalidate()
