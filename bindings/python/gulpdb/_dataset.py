"""gulpdb.Dataset and gulpdb.Writer: the native dataset with Python meta handling.

A :class:`Dataset` is safe to share between threads, to pickle, and to use in
processes forked after it was opened: it remembers the process that opened the
native dataset and opens it again, lazily, in any other process (LMDB
environments must never be used across a fork). Pickling keeps only the path
and the options, so a dataset sent to a spawned worker opens there on first use.

Ids: every method taking one video id takes a ``str``, or an ``int`` that
stands for its decimal string (``ds.read(5)`` reads video ``"5"``), as
GulpIO2's integer ids do; anything else is a TypeError. Methods taking several
ids take any iterable of them, but never a bare ``str`` or ``bytes`` (a
TypeError: ``remove("12")`` would otherwise remove videos ``"1"`` and ``"2"``).
"""

from __future__ import annotations

import json
import os
import warnings
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np

from . import _gulpdb
from ._decode import DecodeOptions, decode_options
from ._meta_json import meta_json as _meta_json
from ._native_handle import NativeHandle
from ._query import MetaQueries
from ._versions import Versions, check_version_name
from ._native_handle import count as _count
from ._native_handle import is_remote as _is_remote

__all__ = ["Dataset", "Writer", "FrameSelection", "Frames", "Size", "VideoId"]

#: A video id: a str, or an int standing for its decimal string.
VideoId = Union[str, int]

#: What selects frames of a video: None (all), a slice, an int, a sequence or
#: 1-D integer array of indices (negative ones count from the end, repeats
#: allowed), or a selection string such as ``"0:16:2"`` or ``"1,5,6"``.
FrameSelection = Union[None, slice, int, Sequence[int], np.ndarray, str]

#: Decoded frames: one N×H×W×C array when the selected frames share a shape,
#: else a list of H×W×C arrays.
Frames = Union[np.ndarray, List[np.ndarray]]

#: A fixed output size: (height, width).
Size = Tuple[int, int]

_MODES = ("r", "r+", "a", "x")


class Dataset(MetaQueries, Versions):
    """A gulpdb dataset: JPEG frames in GulpIO chunk files, an LMDB index by id.

    Args:
        path: the dataset directory, or the ``s3://bucket/prefix`` URL of a
            dataset published with :func:`gulpdb.push` (read-only: its index
            snapshot is downloaded once per machine into the cache,
            ``$GULPDB_CACHE``; frames come by HTTP range requests, checked
            against their CRC-32C).
        mode: ``"r"`` read-only (the default); ``"r+"`` read-write, the dataset
            must exist; ``"a"`` read-write, created if missing; ``"x"`` create,
            FileExistsError if a dataset is already there.
        index_dir: where the index lives when not in ``<path>/gulpdb.index``
            (for example an index built for a read-only GulpIO directory).
        decode_threads: threads decoding the frames of one read or batch
            (0: one per core, 1: the calling thread only).
        verify_checksums: check each frame's CRC-32C (stored when it was
            written) on every read, before it is decoded or returned: a frame
            whose bytes changed on disk raises :class:`gulpdb.CorruptionError`
            naming the video, the frame, the file, its offset and both
            checksums. On by default; False reads damaged bytes as they are
            (to salvage the rest of a video). A dataset created with
            ``checksums=False`` has none to check (``stats().checksums``).
        verify_index: walk the whole index file with bounds-checked reads at
            open and raise :class:`gulpdb.CorruptionError` if it is damaged
            (for an index that may have been damaged; LMDB trusts its pages).
        max_open_chunk_files: chunk file descriptors kept open for reading.
        videos_per_chunk, bytes_per_chunk, checksums: settings of a dataset
            created by modes ``"a"`` and ``"x"`` (defaults: 100, 0 = no
            limit, True). They are fixed at creation: given for a dataset
            that already exists, they are ignored with a UserWarning naming
            the dataset's own setting when it differs.
        codec: how a dataset created by modes ``"a"`` and ``"x"`` stores
            frames: ``"jpeg"`` (GulpIO's layout, the default) or ``"h264"``
            (each video's frames as H.264 packets, decoded frame-exactly by
            :meth:`read`; :meth:`read_jpegs` is then a ValueError). Fixed at
            creation, as the settings above.
        generation: for an ``s3://`` dataset, open this published generation
            instead of the newest. A remote dataset remembers the generation
            it opened: copies in DataLoader workers (fork or spawn) read the
            same one, for as long as the grace period keeps it.
        version: open the version tagged so (:meth:`tag`, ``docs/versions.md``),
            read-only, as it was when tagged; ``"HEAD"`` (or None) is the live
            dataset. KeyError for a name no tag has. On an ``s3://`` URL, a
            tag its push published (the newest manifest's, or ``generation``'s).
        allow_network_index: open the live index even on a network file
            system (see docs/remote_datasets.md, "Shared file systems"); safe only when
            no other host writes the dataset.

    Ids are ``str``, or ``int`` standing for their decimal string (as GulpIO2's
    integer ids); a method taking several ids refuses a bare ``str``/``bytes``
    (pass a list).

    Errors: a missing dataset is FileNotFoundError; a missing id KeyError; a
    frame index out of range IndexError; bad arguments ValueError or TypeError;
    damaged files :class:`gulpdb.CorruptionError`; another writer
    :class:`gulpdb.BusyError`. Remote datasets: an object store that keeps
    failing (after retries) is OSError naming the URL, object and HTTP status;
    refused credentials (HTTP 403) PermissionError; a chunk object the
    manifest names that is missing :class:`gulpdb.CorruptionError`.

    Thread safety: any number of threads may read at once; reads release the GIL.
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        mode: str = "r",
        *,
        index_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
        decode_threads: int = 0,
        verify_checksums: bool = True,
        verify_index: bool = False,
        max_open_chunk_files: int = 256,
        videos_per_chunk: Optional[int] = None,
        bytes_per_chunk: Optional[int] = None,
        checksums: Optional[bool] = None,
        codec: Optional[str] = None,
        generation: Optional[int] = None,
        allow_network_index: bool = False,
        version: Optional[str] = None,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, not {mode!r}")
        self._path = os.fspath(path)
        if _is_remote(self._path) and mode in ("a", "x"):
            # Creating looks for a dataset first, which for a URL is a request:
            # refused here, before any. Writing ("r+") and index_dir are the
            # engine's to refuse, as it opens the URL.
            raise ValueError(
                f"{_gulpdb.redact_url(self._path)} is a dataset in object storage, which "
                f"opens read-only (mode 'r', not {mode!r}): change a local copy and publish it "
                "with gulpdb.push"
            )
        if generation is not None and not _is_remote(self._path):
            raise ValueError("generation is a published generation (>= 1) of an s3:// dataset")
        if generation is not None:
            _count(generation, "generation (a published generation number)", 1)
        if version is not None:
            check_version_name(version)
            if not version:
                raise ValueError(f"{self._path}: version is an empty string (a tag name, "
                                 "or 'HEAD' for the live dataset)")
            if version != "HEAD" and mode != "r":
                raise ValueError(
                    f"{self._path}: version {version!r} is read-only (mode 'r', not {mode!r})"
                )
        options: Dict[str, Any] = dict(
            index_dir=os.fspath(index_dir) if index_dir is not None else "",
            decode_threads=_count(decode_threads, "decode_threads", 0, _gulpdb.MAX_THREADS),
            verify_checksums=bool(verify_checksums),
            verify_index=bool(verify_index),
            max_open_chunk_files=_count(max_open_chunk_files, "max_open_chunk_files", 0, 2**31 - 1),
            generation=int(generation or 0),
            allow_network_index=bool(allow_network_index),
            version="" if version in (None, "HEAD") else version,
        )
        self._handle = NativeHandle(self._path, mode, options)
        settings: Dict[str, Any] = {}
        if videos_per_chunk is not None:
            settings["videos_per_chunk"] = _count(videos_per_chunk, "videos_per_chunk", 1, 2**32 - 1)
        if bytes_per_chunk is not None:
            settings["bytes_per_chunk"] = _count(bytes_per_chunk, "bytes_per_chunk", 0, 2**64 - 1)
        if checksums is not None:
            settings["checksums"] = bool(checksums)
        if codec is not None:
            if codec not in ("jpeg", "h264"):
                raise ValueError(f"{self._path}: codec must be 'jpeg' or 'h264', not {codec!r}")
            settings["codec"] = codec
        created: List[bool] = []
        native = self._handle.open(
            create=mode in ("a", "x"),
            exclusive=mode == "x",
            create_options=settings,
            created=created,
        )
        if _is_remote(self._path):
            # Copies in other processes (DataLoader workers) read this
            # generation, and only if it is still the same snapshot of the
            # same dataset (the prefix may be wiped and pushed to again).
            info = _gulpdb.remote_info(native)
            options["generation"] = info["generation"]
            options["expected_snapshot_sha256"] = info["snapshot_sha256"]
            options["expected_dataset_uuid"] = info["dataset"]
        if settings and not created:
            self._warn_ignored(native.stats(), settings)

    # ---- opening, fork safety, pickling (NativeHandle) ------------------------

    @property
    def _options(self) -> Dict[str, Any]:
        """The open options every process opens the dataset with."""
        return self._handle.options

    @property
    def _mode(self) -> str:
        return self._handle.mode

    def _warn_ignored(self, stats: _gulpdb.DatasetStats, settings: Dict[str, Any]) -> None:
        """Warns about creation settings that differ from the existing dataset's."""
        for name, given in settings.items():
            actual = getattr(stats, name)
            if given != actual:
                warnings.warn(
                    f"Dataset({self._path!r}, {self._mode!r}): {name}={given!r} is ignored: the "
                    f"dataset already exists with {name}={actual!r} (settings are fixed when a "
                    "dataset is created)",
                    UserWarning,
                    stacklevel=3,
                )

    def _native(self) -> _gulpdb.NativeDataset:
        """The native dataset of this process, opened again after a fork."""
        return self._handle.get()

    def _reopened(self, **changes: Any) -> "Dataset":
        """A new read-only Dataset on the same data (the same generation and
        snapshot of a remote one) with some open options changed, e.g.
        ``decode_threads``."""
        clone = type(self).__new__(type(self))
        clone.__setstate__(dict(self.__getstate__(), mode="r", closed=False,
                                options=dict(self._options, **changes)))
        clone._native()  # opens it now, so that errors show here
        return clone

    def __getstate__(self) -> Dict[str, Any]:
        return self._handle.state()

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._path = state["path"]
        self._handle = NativeHandle.from_state(state)

    def close(self) -> None:
        """Closes the dataset. Reads running in other threads finish first."""
        self._handle.close()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._handle.closed

    def __enter__(self) -> "Dataset":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return f"<gulpdb.Dataset {self._path!r} mode={self._mode!r} (closed)>"
        try:
            count = f"videos={len(self)}"
        except Exception:  # a repr must not raise (e.g. the directory vanished)
            count = "unavailable"
        return f"<gulpdb.Dataset {self._path!r} mode={self._mode!r} {count}>"

    # ---- properties ------------------------------------------------------------

    @property
    def path(self) -> str:
        """The dataset directory."""
        return self._path

    @property
    def mode(self) -> str:
        """The mode it was opened with (``"r"``, ``"r+"``, ``"a"`` or ``"x"``)."""
        return self._mode

    @property
    def read_only(self) -> bool:
        """True when opened with mode ``"r"``."""
        return self._mode == "r"

    @property
    def codec(self) -> str:
        """How frames are stored: ``"jpeg"`` or ``"h264"``."""
        return self._native().codec

    @property
    def index_dir(self) -> Optional[str]:
        """The index location when it is not inside the dataset directory."""
        return self._options["index_dir"] or None

    @property
    def is_remote(self) -> bool:
        """True for a dataset in object storage (an ``s3://`` URL)."""
        return _is_remote(self._path)

    @property
    def version(self) -> Optional[str]:
        """The tag this dataset reads (``version=``), or None for the live dataset."""
        return self._options.get("version") or None

    @property
    def generation(self) -> Optional[int]:
        """The published generation a remote dataset reads (None for a local one)."""
        return self._options["generation"] or None if _is_remote(self._path) else None

    @property
    def remote_info(self) -> Optional[Dict[str, Any]]:
        """For a dataset opened from a published manifest (an ``s3://`` URL, or a
        dataset on a network file system read through its snapshot): the URL,
        generation, publication time, snapshot hash, size and cached path,
        whether this open downloaded it, and the requests and bytes received so
        far. None otherwise."""
        return _gulpdb.remote_info(self._native())

    @property
    def native(self) -> _gulpdb.NativeDataset:
        """The :class:`gulpdb._gulpdb.NativeDataset` of the current process."""
        return self._native()

    @staticmethod
    def exists(path: Union[str, "os.PathLike[str]"], index_dir: Optional[str] = None) -> bool:
        """True if ``path`` (or ``index_dir``) holds a gulpdb index."""
        return _gulpdb.NativeDataset.exists(os.fspath(path), index_dir or "")

    # ---- lookups ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._native())

    def __contains__(self, id: object) -> bool:
        """``id in ds``; ``id`` is a str or an int (its decimal string), else TypeError."""
        return id in self._native()

    def __iter__(self) -> Iterator[str]:
        """Iterates over the ids in (chunk, insertion) order, one chunk at a time."""
        native = self._native()
        for chunk in native.chunks():
            yield from native.chunk_ids(chunk.number)

    def ids(self) -> List[str]:
        """Every id in (chunk, insertion) order, as one list."""
        return self._native().ids()

    def id_at(self, position: int) -> str:
        """The id at ``position`` of the order :meth:`ids` lists (0 <= position <
        ``len(self)``), without loading every id; IndexError past the end."""
        return self._native().id_at(position)

    def ids_at(self, start: int, count: int) -> List[str]:
        """The ids at positions ``[start, start + count)`` of the order, clipped at
        the end (empty past it)."""
        return self._native().ids_at(start, count)

    def order_blocks(self) -> List[int]:
        """The first position of each block of the order that is stored together
        (a partition of a partitioned snapshot; 2048 positions locally),
        ascending, starting with 0."""
        return self._native().order_blocks()

    def ids_digest(self, count: int) -> str:
        """Names the first ``count`` videos of the order :meth:`ids` lists: the
        SHA-256 (64 hex digits) of their ids in order, each length-prefixed.

        Only ids and their order count: a meta edit keeps it, an append keeps
        it for the videos that were there, a removal or a replacement (the
        id moves to the end) changes it. What a
        :class:`gulpdb.torch.VideoSampler` state records to resume on the
        same videos. Reads one snapshot in C++, O(count) (on a partitioned
        URL, the order partitions of those positions); IndexError past the
        end, ValueError for a negative count.
        """
        return self._native().ids_digest(_count(count, "count"))

    @property
    def uuid(self) -> str:
        """The dataset's identity: a random UUID made when it was created or
        imported, kept by copies, re-indexing and pushes ("" for an index made
        before gulpdb recorded one, until its first push gives it one)."""
        return self._native().uuid

    def info(self, id: VideoId) -> _gulpdb.VideoInfo:
        """The index entry of ``id``: chunk, frame_info, checksums, meta_data text."""
        return self._native().info(id)

    def frame_count(self, id: VideoId) -> int:
        """Number of frames of ``id``."""
        return self._native().frame_count(id)

    def meta_data(self, id: VideoId) -> List[Any]:
        """The full meta_data list of ``id`` (one entry per GulpIO append)."""
        return json.loads(self._native().meta_json(id))

    def meta(self, id: VideoId) -> Any:
        """The meta dict of ``id``: the first meta_data entry, as GulpIO2 returns it.

        Parsed with Python's json, so integers beyond 64 bits, NaN and
        Infinity come back exactly as they were written.
        """
        meta_data = self.meta_data(id)
        return meta_data[0] if meta_data else {}

    def chunks(self) -> List[_gulpdb.ChunkInfo]:
        """Every chunk file of the dataset, by number."""
        return self._native().chunks()

    def stats(self) -> _gulpdb.DatasetStats:
        """Counts and sizes: videos, frames, chunks, bytes, garbage, index size."""
        return self._native().stats()

    # ---- reads --------------------------------------------------------------------

    def read(
        self,
        id: VideoId,
        frames: FrameSelection = None,
        *,
        decode: Optional[DecodeOptions] = None,
        as_list: bool = False,
        crop_seed: Optional[int] = None,
        **decode_keywords: Any,
    ) -> Frames:
        """Decoded frames of one video.

        Args:
            id: the video id (a str, or an int for its decimal string).
            frames: which frames (see :data:`FrameSelection`); all by default.
                Slices behave as Python's, whatever their bounds.
            decode: how to decode (a :class:`gulpdb.DecodeOptions`; default:
                RGB, the fast DCT, full size).
            colorspace, dct, downscale, lenient, size, resize, crop: the
                fields of :class:`gulpdb.DecodeOptions` as keyword arguments
                (``ds.read(id, size=(112, 112))``); given with ``decode``,
                they change those fields of it.
            as_list: always return a list of per-frame arrays.
            crop_seed: seeds ``crop="random"`` (any int; None: a fresh random
                seed). The same seed gives the same window.

        Returns:
            A uint8 N×H×W×C array when every selected frame has the same shape
            (an empty 0×0×0×C array when none is selected), else a list of
            arrays. The arrays are views of one buffer filled by the decoder, not
            copies; they are writable and own their memory through a capsule.

        Raises:
            KeyError: no such id (an empty or over-long id included).
            IndexError: a frame index out of range (any size of int).
            TypeError: an id that is not a str or int; a keyword that is not
                an option; an option of the wrong type.
            ValueError: a bad option or combination of options (see
                :class:`gulpdb.DecodeOptions`).
            gulpdb.CorruptionError: a frame does not decode.
        """
        options = decode_options(decode, decode_keywords, "read")
        return self._native().read(id, frames, options, as_list, crop_seed)

    def __getitem__(self, key: Union[VideoId, Tuple[VideoId, FrameSelection]]) -> Frames:
        """``ds[id]`` reads all frames, ``ds[id, 0:16:2]`` or ``ds[id, [1, 5]]`` some."""
        if isinstance(key, tuple):
            if len(key) != 2:
                raise TypeError("expected ds[id] or ds[id, frames]")
            return self.read(key[0], key[1])
        return self.read(key)

    def read_jpegs(self, id: VideoId, frames: FrameSelection = None) -> List[bytes]:
        """The JPEG bytes of the selected frames, exactly as stored (a
        ValueError on an h264 dataset, whose frames are not JPEGs)."""
        return self._native().read_jpegs(id, frames)

    def read_thumbnails(
        self, id: VideoId, frames: FrameSelection = None, *, max_side: int = 160,
        quality: int = 85
    ) -> List[bytes]:
        """The selected frames as JPEG images no larger than ``max_side``
        pixels on either side (0: their own size), for showing them.

        A JPEG frame that fits is returned as stored; a larger one is decoded
        with the JPEG decoder's own scaling (1/2, 1/4 or 1/8: the pixels of
        ``read(..., downscale=d)``) and encoded at ``quality``; an h264
        dataset's frames are decoded, resized to fit and encoded. The aspect
        ratio is kept. ValueError for ``max_side`` outside 0..65500 or
        ``quality`` outside 1..100.
        """
        return self._native().read_thumbnails(id, frames, max_side, quality)

    def check_video(self, id: VideoId) -> Dict[str, Any]:
        """Checks one video's frames as :func:`gulpdb.check` with ``deep=True``
        checks every video: each frame read, its markers and padding, its
        CRC-32C (when stored) and its decode. Returns ``{'id', 'frames',
        'checksums', 'healthy', 'frame_problems': [(frame, what), ...],
        'problems': [...]}`` (the video's own problems, such as a missing
        chunk). KeyError for a missing id."""
        return _gulpdb.check_video(self._native(), id)

    def read_h264_stream(self, id: VideoId) -> bytes:
        """The video's stored H.264 stream on an h264 dataset: its packets back
        to back (Annex-B, as ``ffmpeg -f h264`` reads it), every CRC-32C
        checked. ValueError on a JPEG dataset."""
        return self._native().read_h264_stream(id)

    def read_batch(
        self,
        requests: Iterable[Union[VideoId, Tuple[VideoId, FrameSelection]]],
        frames: FrameSelection = None,
        *,
        decode: Optional[DecodeOptions] = None,
        as_list: bool = False,
        crop_seed: Optional[int] = None,
        **decode_keywords: Any,
    ) -> List[Frames]:
        """Reads many videos at once, decoding all their frames in parallel.

        ``requests`` holds ids (each read with ``frames``) or ``(id, frames)``
        pairs; a bare ``str`` is a TypeError (pass ``[id]``). Results are in
        request order, each as :meth:`read` returns it. ``decode`` and the
        decode keywords are as for :meth:`read`; with ``crop="random"`` each
        request gets its own window, request ``i`` the one :meth:`read` gives
        for ``crop_seed + i * 0x9E3779B97F4A7C15`` (modulo 2**64).
        """
        options = decode_options(decode, decode_keywords, "read_batch")
        ids, selections = _split_requests(requests, frames)
        return self._native().read_batch(ids, selections, options, as_list, crop_seed)

    def prefetch(
        self,
        requests: Iterable[Union[VideoId, Tuple[VideoId, FrameSelection]]],
        frames: FrameSelection = None,
    ) -> None:
        """Starts fetching, in the background, the bytes reading ``requests`` needs.

        For ``read_batch`` callers that know their next batches: a later read
        of them takes their bytes from the node's frame cache (or, with the
        cache off, from memory bounded by ``GULPDB_PREFETCH_BYTES``) instead of
        waiting for the store. Adjacent ranges of a chunk are fetched in one
        request. ``requests`` as in :meth:`read_batch`; a missing id is a
        KeyError and a bad selection an IndexError, before anything is
        fetched; a failure of the fetch itself is met by the read. Nothing
        for a local dataset (see ``docs/frame_cache.md``).
        """
        ids, selections = _split_requests(requests, frames)
        self._native().prefetch(ids, selections)

    def cache_stats(self) -> Dict[str, Any]:
        """The node's frame-cache counters (a dict): ``hits``, ``misses`` and
        ``prefetched`` (blocks), ``bytes_from_store``, ``bytes_from_cache``,
        ``evictions``, ``bytes_evicted``, ``damaged``, ``bytes`` (under the
        cache's folder), ``bound``, ``block_bytes``, ``dir`` and ``enabled``.

        Node-wide: kept in the cache directory and added to by every process
        that reads through it (DataLoader workers, other jobs), so the main
        process sees what its workers fetched. ``enabled`` says whether reads
        of this dataset go through it (a remote dataset with the cache on).
        """
        stats = _gulpdb.frame_cache_stats()
        stats["enabled"] = bool(stats["enabled"] and self.is_remote)
        return stats

    def read_jpeg_batch(
        self,
        requests: Iterable[Union[VideoId, Tuple[VideoId, FrameSelection]]],
        frames: FrameSelection = None,
    ) -> List[List[bytes]]:
        """JPEG bytes of many videos; ``requests`` as in :meth:`read_batch`."""
        ids, selections = _split_requests(requests, frames)
        return self._native().read_jpeg_batch(ids, selections)

    # ---- writes ----------------------------------------------------------------

    def writer(
        self,
        *,
        on_duplicate: Optional[str] = None,
        lock_timeout: Optional[float] = None,
        check_jpeg_markers: Optional[bool] = None,
        quality: Optional[int] = None,
        subsampling: Optional[str] = None,
        encode_threads: int = 0,
        rollover: Optional[bool] = None,
    ) -> "Writer":
        """Starts a write transaction; use it as a context manager::

            with ds.writer() as w:
                w.append("video_1", frames, {"label": "cat"})

        The batch commits when the block ends normally and rolls back when it
        raises. Only one writer exists per dataset across all processes:
        :class:`gulpdb.BusyError` if another is active and does not finish
        within ``lock_timeout`` seconds.

        An argument left out (or None) takes the engine's default, the one
        C++'s ``WriterOptions`` and ``EncodeOptions`` have (listed in
        ``gulpdb._gulpdb.writer_defaults()``).

        Args:
            on_duplicate: ``"error"`` (ValueError; the default), ``"skip"`` or
                ``"replace"`` for an id that already exists.
            lock_timeout: seconds to wait for another writer (default 0).
            check_jpeg_markers: reject JPEG bytes without SOI/EOI markers.
            quality, subsampling: how images given as arrays are encoded
                (GulpIO2's settings by default: 90, 4:4:4).
            encode_threads: threads encoding the images of one append (0: one
                per core).
            rollover: start a new chunk by itself every ``videos_per_chunk``
                videos (or past ``bytes_per_chunk``). With False, a new chunk
                starts only at :meth:`Writer.start_chunk` (or when the dataset
                has none yet): GulpIO's writers, which put into one chunk
                exactly the videos they are given.
        """
        given = dict(on_duplicate=on_duplicate, lock_timeout=lock_timeout,
                     check_jpeg_markers=check_jpeg_markers, quality=quality,
                     subsampling=subsampling, rollover=rollover)  # fmt: skip
        native = self._native().writer(
            encode_threads=_count(encode_threads, "encode_threads", 0, _gulpdb.MAX_THREADS),
            **{name: value for name, value in given.items() if value is not None},
        )
        return Writer(native, self)

    def remove(self, ids: Iterable[VideoId]) -> int:
        """Removes videos in one transaction; returns how many existed.

        ``ids`` is a collection of ids (a list, tuple, set, ...); a bare
        ``str`` or ``bytes`` is a TypeError: pass ``[id]`` for one video.
        Removed videos leave every split in the same transaction.
        """
        return self._native().remove(ids)

    def _check_writable(self) -> None:
        if self.read_only:
            raise ValueError(f"dataset {self._path} is open read-only (mode 'r')")


def _split_requests(
    requests: Iterable[Union[VideoId, Tuple[VideoId, FrameSelection]]], frames: FrameSelection
) -> Tuple[List[Any], Optional[List[FrameSelection]]]:
    if isinstance(requests, (str, bytes, bytearray)):
        shown = repr(requests) if len(requests) <= 40 else repr(requests[:37]) + "..."
        raise TypeError(
            "requests must be a collection of ids or (id, frames) pairs, not a single "
            f"{type(requests).__name__} {shown}: pass [{shown}] for one video"
        )
    ids: List[Any] = []
    selections: List[FrameSelection] = []
    per_request = False
    for request in requests:
        if isinstance(request, tuple):
            ids.append(request[0])
            selections.append(request[1])
            per_request = True
        else:
            ids.append(request)
            selections.append(frames)
    if not per_request and frames is None:
        return ids, None
    return ids, selections


def _meta_patch_json(meta: Mapping[str, Any], video_id: Any) -> str:
    if not isinstance(meta, Mapping):
        raise TypeError(
            f"meta of video {video_id!r} must be a dict, not {type(meta).__name__}"
        )
    return _meta_json(meta, video_id)


class Writer:
    """A write transaction on a :class:`Dataset` (see :meth:`Dataset.writer`).

    Append and remove any number of videos, then :meth:`commit` (all of the
    batch becomes visible at once) or :meth:`rollback`. As a context manager it
    commits on normal exit and rolls back on an exception, then releases the
    writer lock. A crash loses nothing committed and shows nothing uncommitted.

    A writer belongs to the process that started it; calls from several
    threads are serialised (frames are still encoded in parallel).
    """

    def __init__(self, native: _gulpdb.NativeWriter, dataset: Dataset) -> None:
        self._native = native
        self._dataset = dataset

    def append(
        self,
        id: VideoId,
        frames: Union[Sequence[Union[bytes, np.ndarray]], np.ndarray],
        meta: Optional[Mapping[str, Any]] = None,
    ) -> bool:
        """Appends a video.

        Args:
            id: the video id: 1 to 511 bytes of UTF-8, or an int standing for
                its decimal string.
            frames: JPEG ``bytes`` (stored as they are) and/or uint8 images
                (H×W gray or H×W×3 RGB; encoded by gulpdb, in parallel), or one
                N×H×W×C / N×H×W uint8 array.
            meta: a dict stored as ``json.dumps(meta)``; NumPy scalars become
                the numbers, bools and strs they hold and 0-d/1-d arrays a
                number/list (recursively). Anything else JSON cannot hold is a
                TypeError naming the id and the key path (``meta['a'][2]``).

        Returns:
            False if the id exists and the writer skips duplicates, else True.
        """
        return self._native.append(id, frames, _meta_json(meta, id))

    def append_h264(
        self, id: VideoId, stream: bytes, meta: Optional[Mapping[str, Any]] = None
    ) -> bool:
        """Appends a video to an h264 dataset, given as a raw Annex-B H.264
        stream (``ffmpeg ... -c:v libx264 -bf 0 -f h264``): one frame per packet.
        ValueError on a JPEG dataset or for a stream that does not parse.
        Returns False if the id exists and the writer skips duplicates."""
        return self._native.append_h264(id, bytes(stream), _meta_json(meta, id))

    def remove(self, id: VideoId) -> bool:
        """Removes a committed or pending video; False if it does not exist."""
        return self._native.remove(id)

    def update_meta(self, id: VideoId, patch: Mapping[str, Any]) -> bool:
        """Merges ``patch`` into the video's meta in this batch; frames never move.

        The meta is the first ``meta_data`` entry (what ``ds[id][1]`` returns).
        Each key of ``patch`` is set (in place when present, else added at the
        end) and a key whose value is ``None`` is deleted. Meta indexes follow
        in the same transaction; the edit commits or rolls back with the batch
        (docs/edits.md). An id appended earlier in the batch has its pending
        meta changed.

        Raises:
            KeyError: the dataset has no such video (nor does the batch). The
                whole batch is then rolled back: nothing of it lands.
            ValueError: the video's meta is not a JSON object (GulpIO allows
                any JSON: :meth:`set_meta` replaces it).
            TypeError: ``patch`` is not a dict, or holds what JSON cannot.

        Returns:
            False when the meta already was what the edit makes it (nothing
            is recorded), else True.
        """
        return self._native.update_meta(id, _meta_patch_json(patch, id))

    def set_meta(self, id: VideoId, meta: Mapping[str, Any]) -> bool:
        """Replaces the video's meta (its first ``meta_data`` entry) with ``meta``
        in this batch, whatever it was; errors and return value as :meth:`update_meta`."""
        return self._native.set_meta(id, _meta_patch_json(meta, id))

    def set_split(self, name: str, ids: Iterable[VideoId]) -> None:
        """Makes split ``name`` hold ``ids``, in that order, when the batch commits.

        A split of that name is replaced. Every id must exist now, committed
        or appended earlier in this batch: otherwise KeyError listing the
        missing ids, and this call changes nothing (the split is all or
        nothing). ValueError for an id listed twice or a name that is empty
        or longer than 255 bytes. ``ids`` is a collection, never a bare
        ``str``. Videos removed later leave the split.
        """
        self._native.set_split(name, ids)

    def remove_split(self, name: str) -> bool:
        """Removes split ``name`` when the batch commits; False if there is no such split."""
        return self._native.remove_split(name)

    def start_chunk(self) -> int:
        """Starts a new, empty chunk now and returns its number; the next appends go there.

        The chunk file is created and registered at once, outside the batch:
        it stays, empty, if nothing is appended or the batch rolls back (as
        GulpIO leaves a chunk it opened for writing).
        """
        return self._native.start_chunk()

    def commit(self) -> None:
        """Makes the batch durable (frames are synced first) and visible."""
        self._native.commit()

    def _commit_last(self) -> None:
        """:meth:`commit` when :meth:`close` follows: the commit that costs the
        fewest syncs then (docs/reliability.md, "Opening a writer per commit")."""
        self._native.commit_last()

    def rollback(self) -> None:
        """Discards the batch."""
        self._native.rollback()

    @property
    def pending_videos(self) -> int:
        """Videos appended since the last commit or rollback."""
        return self._native.pending_videos

    @property
    def closed(self) -> bool:
        """True after :meth:`close` (or the end of a ``with`` block)."""
        return self._native.closed

    def close(self) -> None:
        """Rolls back an open batch and releases the writer lock."""
        self._native.close()

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is None:
                self._commit_last()
            else:
                self.rollback()
        finally:
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"pending_videos={self.pending_videos}"
        return f"<gulpdb.Writer on {self._dataset.path!r} {state}>"
