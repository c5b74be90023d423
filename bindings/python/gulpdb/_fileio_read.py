"""The reading half of GulpIO2's API over gulpdb (:mod:`gulpdb.fileio`, where
its public names are imported from): ``GulpDirectory``, ``GulpChunk`` and the
lazy mappings behind their ``meta_dict``s and ``chunk_lookup``."""

from __future__ import annotations

import contextlib
import json
import os
import re
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _gulpdb, utils
from ._dataset import Dataset, Writer
from ._index_cache import open_for_gulpio

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


class GulpIOArgumentError(ValueError, AssertionError):
    """A bad argument where GulpIO2 fails an ``assert``: both a ValueError and
    the AssertionError GulpIO2 raises."""


class FileFormatException(ValueError):
    """A frame given as a file path whose content is not a JPEG (GulpIO2's name)."""


def _chunk_number(file_name: str) -> Optional[int]:
    """GulpIO's chunk id: the first run of digits in the file name, or None."""
    found = re.findall(r"\d+", os.path.basename(file_name))
    return int(found[0]) if found else None


def _frame_to_store(frame: Any) -> Any:
    """A frame as the writer takes it: JPEG bytes, or an image array.

    As GulpIO2, a ``str`` or path-like frame names a JPEG file, stored as it is.
    """
    if isinstance(frame, (str, os.PathLike)):
        with open(frame, "rb") as f:
            data = f.read()
        if data[:2] != b"\xff\xd8":
            raise FileFormatException(f"image file {os.fspath(frame)!r} is not a JPEG file")
        return data
    return frame


def _frames_to_store(frames: Any) -> Any:
    if isinstance(frames, np.ndarray):
        return frames
    return [_frame_to_store(f) for f in frames]


class _Reader:
    """Reads (frames, meta) as GulpIO2 returns them, from one Dataset."""

    def __init__(self, colorspace: Optional[str], jpeg_decoder: Optional[JpegDecoder]) -> None:
        self.colorspace = colorspace
        self.jpeg_decoder = jpeg_decoder
        self._native_cs, self._squeeze = _native_colorspace(colorspace)
        self._decode = _gulpdb.DecodeOptions(colorspace=self._native_cs)

    def decode(self, jpegs: List[bytes]) -> List[Any]:
        """Frames of JPEG bytes, as :meth:`read` returns them."""
        if self.jpeg_decoder is not None:
            return [self.jpeg_decoder(b) for b in jpegs]
        return self._finish([_gulpdb.decode_jpeg(b, self._native_cs, "fast") for b in jpegs])

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
                native.read(id_, selection, self._decode, True)
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
                for frames in native.read_batch(ids, None, self._decode, True)
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
    """id -> {'frame_info': [...], 'meta_data': [...]} for the videos of chunk
    ``number`` of ``ds`` (empty when ``ds`` is None)."""

    def __init__(self, ds: Optional[Dataset], number: Optional[int]) -> None:
        self._ds = ds
        self._number = number

    def __getitem__(self, id_: str) -> Dict[str, Any]:
        if self._ds is None or not isinstance(id_, str):
            raise KeyError(id_)
        info = self._ds.native.find(id_)
        if info is None or info.chunk != self._number:
            raise KeyError(id_)
        return _meta_dict_entry(info)

    def __contains__(self, id_: object) -> bool:
        if self._ds is None or not isinstance(id_, str):
            return False
        info = self._ds.native.find(id_)
        return info is not None and info.chunk == self._number

    def __iter__(self) -> Iterator[str]:
        return iter(() if self._ds is None else self._ds.native.chunk_ids(self._number))

    def __len__(self) -> int:
        return 0 if self._ds is None else len(self._ds.native.chunk_ids(self._number))

    def __repr__(self) -> str:
        return f"<meta_dict of chunk {self._number}: {len(self)} ids>"


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
        verify_checksums: check each frame's CRC-32C before decoding it (the
            default; see :class:`gulpdb.Dataset`): a damaged frame is a
            :class:`gulpdb.CorruptionError` naming the video, the frame and
            the file, never silently decoded. False reads damaged bytes as
            they are. A chunk the index does not know (read from its
            ``.gmeta``, as GulpIO2 reads it) has no checksums to check.

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
        verify_checksums: bool = True,
    ) -> None:
        self.output_dir = os.fspath(output_dir)
        self.colorspace = colorspace
        self.jpeg_decoder = jpeg_decoder
        self._reader = _Reader(colorspace, jpeg_decoder)
        self._index_dir = index_dir
        self._quiet = quiet
        self._decode_threads = decode_threads
        self._verify_checksums = bool(verify_checksums)
        self._dataset, self._cached = open_for_gulpio(
            self.output_dir, index_dir=index_dir, quiet=quiet, decode_threads=decode_threads,
            verify_checksums=self._verify_checksums,
        )
        self._chunks: Optional["OrderedDict[int, GulpChunk]"] = None
        self._chunk_infos: Optional[Dict[int, _gulpdb.ChunkInfo]] = None

    # ---- pickling: by path; caches are rebuilt -------------------------------------------

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_chunks"] = None
        state["_chunk_infos"] = None
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

    def _writable_dataset(self, videos_per_chunk: Optional[int] = None) -> Dataset:
        """The dataset opened read-write, created if the directory has none
        (with ``videos_per_chunk``, when given, for its later default writers)."""
        if self._dataset is not None and not self._dataset.read_only:
            return self._dataset
        if _gulpdb.is_remote_url(self.output_dir):
            raise PermissionError(
                f"{self.output_dir} is a dataset in object storage, which is read-only: write "
                "to a local copy and publish it with gulpdb.push"
            )
        if self._cached:
            raise PermissionError(
                f"{self.output_dir} is read-only; its index lives in the user cache"
            )
        # This process may not hold the same index read-only and read-write at
        # once: give up the read-only handle first.
        if self._dataset is not None:
            self._dataset.close()
        os.makedirs(self.output_dir, exist_ok=True)
        exists = self._dataset is not None or Dataset.exists(self.output_dir, self._index_dir)
        self._dataset = Dataset(
            self.output_dir,
            "a",
            index_dir=self._index_dir,
            decode_threads=self._decode_threads,
            verify_checksums=self._verify_checksums,
            videos_per_chunk=None if exists else videos_per_chunk,
        )
        self._invalidate()
        return self._dataset

    def _invalidate(self) -> None:
        self._chunks = None
        self._chunk_infos = None

    def _chunk_table(self) -> Dict[int, _gulpdb.ChunkInfo]:
        """chunk number -> ChunkInfo of the index (cached until this object writes)."""
        if self._chunk_infos is None:
            infos = [] if self._dataset is None else self._dataset.chunks()
            self._chunk_infos = {c.number: c for c in infos}
        return self._chunk_infos

    # ---- chunks -------------------------------------------------------------------------

    @property
    def chunk_objs_lookup(self) -> "OrderedDict[int, GulpChunk]":
        """chunk id -> :class:`GulpChunk`, in GulpIO2's chunk order."""
        if self._chunks is None:
            chunks: "OrderedDict[int, GulpChunk]" = OrderedDict()
            if self._dataset is not None:
                infos = sorted(
                    self._chunk_table().values(),
                    key=lambda c: os.path.join(self.output_dir, c.file_name),
                )
                for c in infos:
                    meta_name = c.meta_file or _gulpdb.gulpio_meta_file_name(c.number)
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

    def _next_chunk_ids(self, count: int) -> List[int]:
        """The numbers the writer gives the next ``count`` new chunks: after the
        last chunk of the index, skipping names another program's files take."""
        table = self._chunk_table()
        n = max(table) + 1 if table else 0
        out: List[int] = []
        while len(out) < count:
            if not os.path.exists(os.path.join(self.output_dir, _gulpdb.gulpio_data_file_name(n))):
                out.append(n)
            n += 1
        return out

    def new_chunks(self, total_new_chunks: int) -> Iterator["GulpChunk"]:
        """``total_new_chunks`` chunk objects to write new videos through, as GulpIO2.

        Their numbers follow the directory's last chunk; each one opened with
        ``open('wb')`` becomes that chunk file, holding what is appended to it.
        Open them in order: a chunk opened out of order takes the next free
        number instead (and says so with a UserWarning).
        """
        return iter(
            [
                GulpChunk(
                    os.path.join(self.output_dir, _gulpdb.gulpio_data_file_name(n)),
                    os.path.join(self.output_dir, _gulpdb.gulpio_meta_file_name(n)),
                    colorspace=self.colorspace,
                    jpeg_decoder=self.jpeg_decoder,
                    _directory=self,
                    _chunk_id=n,
                )
                for n in self._next_chunk_ids(int(total_new_chunks))
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


class _GmetaChunk:
    """A chunk read from its own ``.gmeta`` and data file, as GulpIO2 reads one.

    For a chunk the directory's index does not know: a file name the importer
    does not take (not ``data*.gulp``), or a chunk GulpIO2 added after the
    directory was indexed.
    """

    def __init__(self, data_file_path: str, meta_file_path: str) -> None:
        self.data_file_path = data_file_path
        with open(meta_file_path, "r", encoding="utf-8") as f:
            self.meta_dict: Dict[str, Any] = json.load(f, object_pairs_hook=OrderedDict)

    def jpegs(self, id_: str, slice_: Any) -> List[bytes]:
        infos = self.meta_dict[id_]["frame_info"]
        if slice_ is None:
            selected = list(infos)
        elif isinstance(slice_, slice):
            selected = infos[slice_]
        elif isinstance(slice_, (int, np.integer)):
            selected = [infos[int(slice_)]]
        else:
            selected = [infos[int(i)] for i in slice_]
        out = []
        with open(self.data_file_path, "rb") as f:
            for loc, pad, length in selected:
                f.seek(loc)
                record = f.read(length)
                out.append(record[: len(record) - pad])
        return out


class GulpChunk:
    """One chunk of a :class:`GulpDirectory`: its videos, reads and writes.

    Args:
        data_file_path, meta_file_path: the chunk's ``.gulp`` and ``.gmeta``
            paths, of any names (as GulpIO2). Their directory is opened (and
            indexed if needed) on first use. A chunk the index does not know
            is read from its ``.gmeta`` as GulpIO2 reads it, or is empty when
            there is none.
        serializer: accepted for GulpIO2 compatibility and ignored (the index
            is not a ``.gmeta`` file).
        colorspace, jpeg_decoder: as for :class:`GulpDirectory`.

    Attributes:
        meta_dict: id -> ``{'frame_info', 'meta_data'}`` of this chunk's videos
            (lazy, read-only).
        chunk_id: the chunk number: the index's for this file, else the first
            run of digits in the file name (GulpIO's rule), else None until
            the chunk is written.
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
        self._chunk_id = _chunk_id
        self._directory = _directory
        self._reader = _Reader(colorspace, jpeg_decoder)
        self._writer: Optional[Writer] = None
        self._quality = 90
        self._gmeta: Optional[_GmetaChunk] = None

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
    def chunk_id(self) -> Optional[int]:
        """The chunk number (see the class notes); None for a chunk not yet written
        whose file name holds no number."""
        if self._chunk_id is not None:
            return self._chunk_id
        indexed = self._indexed_number()
        return indexed if indexed is not None else _chunk_number(self.data_file_path)

    def _indexed_number(self) -> Optional[int]:
        """The number of the chunk of the index whose file is this object's, or None."""
        directory = self._directory_obj()
        if self._chunk_id is not None:
            info = directory._chunk_table().get(self._chunk_id)
            return self._chunk_id if info is not None and self._is_file_of(info) else None
        for number, info in directory._chunk_table().items():
            if self._is_file_of(info):
                return number
        return None

    def _is_file_of(self, info: _gulpdb.ChunkInfo) -> bool:
        directory = self._directory_obj()
        return os.path.abspath(self.data_file_path) == os.path.abspath(
            os.path.join(directory.output_dir, info.file_name)
        )

    def _source(self) -> Tuple[Optional[Dataset], Optional[int], Optional[_GmetaChunk]]:
        """Where this chunk's videos are: ``(dataset, number, None)`` for a chunk
        of the index, ``(None, None, gmeta)`` for one only its .gmeta describes,
        else ``(None, None, None)`` (an empty chunk, as GulpIO2 reads one)."""
        number = self._indexed_number()
        if number is not None:
            return self._directory_obj().dataset, number, None
        if self._gmeta is None and os.path.isfile(self.meta_file_path):
            self._gmeta = _GmetaChunk(self.data_file_path, self.meta_file_path)
        return None, None, self._gmeta

    @property
    def meta_dict(self) -> Mapping:
        """id -> ``{'frame_info': [...], 'meta_data': [...]}`` for this chunk."""
        ds, number, gmeta = self._source()
        if gmeta is not None:
            return gmeta.meta_dict
        return _ChunkMetaDict(ds, number)

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
        ds, number, gmeta = self._source()
        if gmeta is not None:
            if id_ not in gmeta.meta_dict:
                raise KeyError(id_)
            frames = self._reader.decode(gmeta.jpegs(id_, slice_))
            return frames, _meta_entry(list(gmeta.meta_dict[id_]["meta_data"]))
        if ds is None:
            raise KeyError(id_)
        info = ds.native.find(id_)
        if info is None or info.chunk != number:
            raise KeyError(id_)
        return self._reader.read(ds, id_, slice_, info.meta_data)

    def iter_all(
        self, accepted_ids: Optional[Iterable[Any]] = None, shuffle: bool = False
    ) -> Iterator[Tuple[List[Any], Any]]:
        """Yields ``(frames, meta)`` for every video of the chunk, in insertion order.

        Args:
            accepted_ids: only these ids (others are skipped): a collection of
                ids (str, or int for its decimal string), not a bare ``str``.
            shuffle: visit the videos in an order shuffled with ``numpy.random``.
        """
        accepted = None
        if accepted_ids is not None:
            accepted = set(_gulpdb._as_id_list(accepted_ids, "accepted_ids"))
        ds, number, gmeta = self._source()
        if gmeta is not None:
            ids = [i for i in gmeta.meta_dict if accepted is None or i in accepted]
            if shuffle:
                np.random.shuffle(ids)
            for id_ in ids:
                yield self.read_frames(id_)
            return
        if ds is None:
            return
        videos = ds.native.chunk_videos(number)
        if accepted is not None:
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
        (and at every :meth:`flush`) and rolls back if it raises. A chunk not
        yet written becomes a new chunk file, numbered after the directory's
        last chunk, holding exactly the videos appended to this object (none
        leaves it empty, as GulpIO2 does); if that is not the file this
        object names, the object is renamed to it with a UserWarning. An
        existing chunk takes appends only if it is the directory's last one
        and was not imported (ValueError otherwise), and ``'wb'`` refuses one
        that holds videos: gulpdb never overwrites committed frames.
        """
        if flag not in ("rb", "wb", "ab"):
            raise NotImplementedError(f"This file does not support the mode: '{flag}'")
        if flag == "rb":
            yield
            return
        if self._writer is not None:
            raise ValueError(f"chunk {self.chunk_id} is already open for writing")
        directory = self._directory_obj()
        ds = directory._writable_dataset()
        directory._invalidate()
        table = directory._chunk_table()
        number = self._indexed_number()
        if number is not None:
            info = table[number]
            if flag == "wb" and info.live_videos > 0:
                raise ValueError(
                    f"open('wb') on chunk {number}, which holds videos: gulpdb never "
                    "overwrites committed frames; append with open('ab')"
                )
            if number != max(table) or info.full:
                raise ValueError(
                    f"open({flag!r}) on chunk {number} ({info.file_name}): gulpdb appends only "
                    f"to the last chunk of {directory.output_dir} ({max(table)}), and never to "
                    "a chunk that takes no more videos (imported from GulpIO, or closed)"
                )
        self._quality = utils._write_quality()  # GulpIO2's knob, read now
        writer = ds.writer(quality=self._quality, rollover=False)
        try:
            if number is None:
                self._adopt(writer.start_chunk())
        except BaseException:
            writer.close()
            raise
        self._writer = writer
        try:
            yield
        except BaseException:
            writer.rollback()
            raise
        else:
            writer._commit_last()
        finally:
            self._writer = None
            writer.close()
            directory._invalidate()

    def _adopt(self, number: int) -> None:
        """Makes this object stand for chunk ``number``, just started by the writer."""
        data_name = _gulpdb.gulpio_data_file_name(number)
        folder = self._directory_obj().output_dir
        if os.path.abspath(self.data_file_path) != os.path.abspath(os.path.join(folder, data_name)):
            warnings.warn(
                f"GulpChunk {self.data_file_path!r}: gulpdb writes this chunk as chunk "
                f"{number}, {os.path.join(folder, data_name)!r} (chunk files are named "
                "data_<N>.gulp, N after the directory's last chunk)",
                UserWarning,
                stacklevel=4,
            )
            self.data_file_path = os.path.join(folder, data_name)
            self.meta_file_path = os.path.join(folder, _gulpdb.gulpio_meta_file_name(number))
        self._chunk_id = number
        self._gmeta = None

    def flush(self) -> None:
        """Commits what was appended so far (durable and visible to readers)."""
        if self._writer is not None:
            self._writer.commit()
            self._directory_obj()._invalidate()

    def append(
        self,
        id_: Any,
        meta_data: Any,
        frames: Sequence[Any],
        jpeg_encode_quality: Optional[int] = None,
    ) -> None:
        """Appends a video: ``meta_data`` a dict, ``frames`` uint8 images, JPEG
        bytes, or paths of JPEG files (stored as they are, as GulpIO2 does).

        ``id_`` is converted with ``str`` (as GulpIO2). Images are encoded at
        ``jpeg_encode_quality``, by default at ``gulpdb.utils._JPEG_WRITE_QUALITY``
        as it is at this call (90 unless changed, as GulpIO2). Outside an
        ``open('wb'|'ab')`` block the video is committed at once.
        """
        if self._writer is None:
            with self.open("ab"):
                self.append(id_, meta_data, frames, jpeg_encode_quality)
            return
        frames = _frames_to_store(frames)
        quality = (
            utils._write_quality() if jpeg_encode_quality is None else int(jpeg_encode_quality)
        )
        if quality != self._quality:
            frames = [
                f
                if isinstance(f, (bytes, bytearray))
                else _gulpdb.encode_jpeg(np.asarray(f), quality)
                for f in frames
            ]
        self._writer.append(str(id_), frames, meta_data)
