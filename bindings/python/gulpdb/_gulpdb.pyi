"""Type stubs of ``gulpdb._gulpdb``, the native half of the gulpdb package.

Most code uses the Python classes around it (:class:`gulpdb.Dataset`,
:class:`gulpdb.Writer`, :class:`gulpdb.GulpDirectory`); this module is what they
call. Every function that reads or writes data releases the GIL while it works.

Frame selections (``frames`` arguments): None (all frames), a slice, an int, a
sequence or 1-D integer array of indices (negative ones count from the end,
repeats allowed), or a string ``"start:stop[:step]"`` / ``"i,j,k"`` / ``"all"``.

Ids: one id is a ``str``, or an ``int`` standing for its decimal string (as
GulpIO2's integer ids); anything else is a TypeError naming the accepted
types. Several ids are any iterable of those, never a bare ``str``/``bytes``
(TypeError: its characters would be taken for ids). An empty id, or one over
LMDB's 511-byte key limit, is simply absent. A frame index of any size is
accepted: one that does not fit in 64 bits is an IndexError naming the id.

Colorspaces: ``"rgb"``, ``"bgr"`` (H×W×3), ``"gray"`` (H×W×1), ``"auto"`` (H×W×3
for colour JPEGs, H×W for grayscale ones, as GulpIO2). DCT: ``"fast"`` (GulpIO2's
pixels) or ``"accurate"``. ``downscale``: 1, 2, 4 or 8.

Fixed-size output (``size``, ``resize``, ``crop`` of :class:`DecodeOptions`, and
the ``crop_seed`` of a read; see :meth:`gulpdb.Dataset.read`): ``size=(height, width)`` resizes every frame in
C++ with ``resize="short_edge"`` (cover, then crop ``"center"`` or
``"random"``), ``"fit"`` (fit inside, zero padding) or ``"stretch"``.
"""

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

__version__: str
codecs: Tuple[str, ...]
MAX_THREADS: int

def writer_defaults() -> Dict[str, Any]:
    """The engine's writer defaults (C++ WriterOptions, EncodeOptions), by the
    names of :meth:`NativeDataset.writer`'s arguments."""

_Selection = Union[None, slice, int, Sequence[int], np.ndarray, str]
_Frames = Union[np.ndarray, List[np.ndarray]]
_Size = Optional[Tuple[int, int]]
_Progress = Optional[Callable[[int, int], Any]]
_Id = Union[str, int]

def _as_id(id: _Id) -> str:
    """A video id as the native API takes it: a str as it is, an int as its decimal
    string; TypeError for anything else (bool, float, None, bytes, ...)."""

def _as_id_list(ids: Iterable[_Id], what: str = "ids") -> List[str]:
    """A collection of ids as a list of str (each as :func:`_as_id`); TypeError for a
    bare str or bytes, naming the argument ``what``."""

def ids_digest(ids: Iterable[_Id]) -> str:
    """SHA-256 (hex) of the ids in order, each length-prefixed: what
    :meth:`NativeDataset.ids_digest` gives for a dataset's first ids."""

class DecodeOptions:
    """How a read decodes frames (see :mod:`gulpdb._decode`); checked when made
    (TypeError, ValueError), immutable, compared and hashed by value, picklable."""

    def __init__(
        self,
        *,
        colorspace: str = "rgb",
        dct: str = "fast",
        downscale: int = 1,
        lenient: bool = False,
        size: _Size = None,
        resize: str = "short_edge",
        crop: Optional[str] = "center",
    ) -> None:
        """Checks the options; TypeError or ValueError naming the one that is wrong."""
    @property
    def colorspace(self) -> str:
        """``"auto"``, ``"rgb"``, ``"bgr"`` or ``"gray"``."""
    @property
    def dct(self) -> str:
        """``"fast"`` or ``"accurate"``."""
    @property
    def downscale(self) -> int:
        """1, 2, 4 or 8."""
    @property
    def lenient(self) -> bool:
        """Accept JPEGs that libjpeg only warns about."""
    @property
    def size(self) -> Optional[Tuple[int, int]]:
        """``(height, width)`` of every frame, or None (frames keep their size)."""
    @property
    def resize(self) -> str:
        """``"short_edge"``, ``"fit"`` or ``"stretch"``."""
    @property
    def crop(self) -> Optional[str]:
        """``"center"``, ``"random"`` or None."""
    def as_dict(self) -> Dict[str, Any]:
        """The keyword arguments that make these options."""
    def replace(self, **changes: Any) -> "DecodeOptions":
        """A copy with some options changed (checked as the constructor checks them)."""

class BusyError(OSError):
    """Another writer (in this or another process) holds the dataset's writer lock.

    A subclass of OSError; its errno is EBUSY.
    """

class CorruptionError(OSError):
    """Damaged data: files and index disagree, or a frame is not a decodable JPEG.

    A subclass of OSError (like Pillow's errors for broken images).
    """

class StaleIndexError(CorruptionError):
    """A GulpIO directory changed after gulpdb indexed it in place.

    GulpIO tools rewrote, added or removed ``.gulp``/``.gmeta`` files: the
    index no longer describes them. Re-index with
    ``gulpdb.import_gulpio(path, reindex=True)`` (the GulpIO-compatible API
    does it by itself).
    """

class VideoInfo:
    """What the index knows of one video (read-only)."""

    @property
    def id(self) -> str:
        """The video id."""
    @property
    def chunk(self) -> int:
        """The number of the chunk holding its frames."""
    @property
    def seq(self) -> int:
        """Insertion sequence number."""
    @property
    def frame_info(self) -> List[Tuple[int, int, int]]:
        """GulpIO's frame_info: (offset, pad, length) of each frame in the chunk file."""
    @property
    def checksums(self) -> List[int]:
        """CRC-32C of each frame, or an empty list when the dataset stores none."""
    @property
    def meta_data(self) -> str:
        """The meta_data JSON list as stored (text), one entry per append."""
    @property
    def frame_count(self) -> int:
        """Number of frames."""

class ChunkInfo:
    """One chunk file of a dataset (read-only)."""

    @property
    def number(self) -> int:
        """The chunk number (GulpIO's chunk id)."""
    @property
    def file_name(self) -> str:
        """The ``.gulp`` file, relative to the dataset directory."""
    @property
    def committed_length(self) -> int:
        """Bytes of the file covered by committed writes."""
    @property
    def appended_videos(self) -> int:
        """Videos ever appended to the chunk."""
    @property
    def live_videos(self) -> int:
        """Videos the index still points to."""
    @property
    def live_bytes(self) -> int:
        """Bytes of those videos' frames."""
    @property
    def full(self) -> bool:
        """True once no more videos go to this chunk."""
    @property
    def meta_file(self) -> str:
        """The ``.gmeta`` file the chunk was imported from, or ``''``."""

class DatasetStats:
    """Counts and sizes of a dataset (read-only)."""

    @property
    def format_version(self) -> int:
        """Version of the on-disk format."""
    @property
    def creator(self) -> str:
        """What created the dataset."""
    @property
    def videos(self) -> int:
        """Number of videos."""
    @property
    def frames(self) -> int:
        """Number of frames."""
    @property
    def chunks(self) -> int:
        """Number of chunk files."""
    @property
    def committed_bytes(self) -> int:
        """Sum of the chunks' committed lengths."""
    @property
    def live_bytes(self) -> int:
        """Bytes of frames the index points to."""
    @property
    def garbage_bytes(self) -> int:
        """Committed bytes of removed or replaced videos."""
    @property
    def index_bytes(self) -> int:
        """Size of the LMDB data in use."""
    @property
    def videos_per_chunk(self) -> int:
        """A new chunk starts after this many videos."""
    @property
    def bytes_per_chunk(self) -> int:
        """A new chunk starts past this size (0: no limit)."""
    @property
    def checksums(self) -> bool:
        """Whether a CRC-32C is stored per frame."""
    @property
    def unverified_videos(self) -> Optional[int]:
        """Videos stored without a CRC-32C (read unverified); None when only a
        walk of every record (:func:`gulpdb.check`) can count them."""
    @property
    def unverified_chunks(self) -> Optional[int]:
        """Chunks holding such videos; None as ``unverified_videos``."""
    @property
    def codec(self) -> str:
        """How frames are stored: "jpeg" or "h264"."""
    @property
    def uuid(self) -> str:
        """The dataset's identity (a UUID made at creation; kept by copies)."""

class NativeWriter:
    """A write transaction; see :meth:`gulpdb.Dataset.writer`."""

    def append(
        self,
        id: _Id,
        frames: Union[Sequence[Union[bytes, np.ndarray]], np.ndarray],
        meta_json: str = "{}",
    ) -> bool:
        """Appends a video.

        ``frames``: JPEG bytes (stored as they are) and/or uint8 images (H×W or
        H×W×C with C in 1, 3; encoded in parallel), or one N×H×W×C / N×H×W
        array. ``meta_json``: the JSON text of one object. Returns False if the
        id exists and the writer skips duplicates.
        """
    def append_h264(self, id: _Id, stream: bytes, meta_json: str = "{}") -> bool:
        """Appends a video given as a raw Annex-B H.264 stream to an h264 dataset;
        False if the id exists and the writer skips duplicates."""
    def remove(self, id: _Id) -> bool:
        """Removes a committed or pending video; False if it does not exist."""
    def update_meta(self, id: _Id, patch_json: str) -> bool:
        """Merges a JSON object into the video's meta (null deletes a key) in this
        batch; KeyError (and the batch rolled back) when there is no such video."""
    def set_meta(self, id: _Id, meta_json: str) -> bool:
        """Replaces the video's meta with a JSON object in this batch."""
    def start_chunk(self) -> int:
        """Creates a new, empty chunk now (registered outside the batch) and sends the
        next appends to it; returns its number."""
    def set_split(self, name: str, ids: Iterable[_Id]) -> None:
        """Sets split ``name`` to ``ids`` (in that order) when the batch commits;
        KeyError listing the ids that do not exist, ValueError for an id listed twice."""
    def remove_split(self, name: str) -> bool:
        """Removes split ``name`` when the batch commits; False if there is none."""
    def commit(self) -> None:
        """Makes the batch durable and visible."""
    def commit_last(self) -> None:
        """commit(), for the batch a ``with`` block ends with: the fewest syncs when the
        writer closes next."""
    def rollback(self) -> None:
        """Discards the batch."""
    @property
    def pending_videos(self) -> int:
        """Videos appended since the last commit or rollback."""
    def close(self) -> None:
        """Rolls back an open batch and releases the writer lock."""
    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""

class NativeDataset:
    """An open dataset; see :class:`gulpdb.Dataset`, which wraps it.

    Belongs to the process that opened it: in a forked child every method
    raises RuntimeError, and dropping it there leaves the parent's resources alone.
    """

    @staticmethod
    def open(
        path: str,
        read_only: bool = True,
        max_open_chunk_files: int = 256,
        verify_checksums: bool = True,
        decode_threads: int = 0,
        index_dir: str = "",
        verify_index: bool = False,
        generation: int = 0,
        allow_network_index: bool = False,
        expected_snapshot_sha256: str = "",
        expected_dataset_uuid: str = "",
        version: str = "",
    ) -> NativeDataset:
        """Opens an existing dataset (a directory, or an s3:// URL read-only);
        FileNotFoundError if there is none. ``version``: a tag to open instead
        of the live dataset (KeyError for an unknown one)."""
    @staticmethod
    def create(
        path: str,
        videos_per_chunk: int = 100,
        bytes_per_chunk: int = 0,
        checksums: bool = True,
        index_dir: str = "",
        codec: str = "jpeg",
    ) -> NativeDataset:
        """Creates a dataset, opened read-write; ValueError if one is already there.
        ``codec``: "jpeg" or "h264"."""
    @staticmethod
    def exists(path: str, index_dir: str = "") -> bool:
        """True if ``path`` (or ``index_dir``) holds a gulpdb index."""
    @property
    def path(self) -> str:
        """The dataset directory."""
    @property
    def read_only(self) -> bool:
        """True when opened read-only."""
    @property
    def codec(self) -> str:
        """How frames are stored: "jpeg" or "h264"."""
    def read_h264_stream(self, id: _Id) -> bytes:
        """The video's stored H.264 stream; ValueError on a JPEG dataset."""
    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
    @property
    def in_owner_process(self) -> bool:
        """False in a child forked after this object was opened."""
    def close(self) -> None:
        """Closes the dataset; reads in flight in other threads finish first."""
    def __len__(self) -> int:
        """Number of videos."""
    def __contains__(self, id: _Id) -> bool:
        """True if the id exists."""
    def ids(self) -> List[str]:
        """Every id in (chunk, insertion) order."""
    def id_at(self, position: int) -> str:
        """The id at a position of the order ids() lists."""
    def ids_at(self, start: int, count: int) -> List[str]:
        """The ids at positions [start, start + count), clipped at the end."""
    def order_blocks(self) -> List[int]:
        """The first position of each block of the order stored together."""
    def ids_digest(self, count: int) -> str:
        """SHA-256 (hex) of the ids at positions [0, count), each length-prefixed;
        IndexError past the end."""
    @property
    def uuid(self) -> str:
        """The dataset's identity (empty for an index made before gulpdb recorded one)."""
    def find(self, id: _Id) -> Optional[VideoInfo]:
        """The video's index entry, or None."""
    def info(self, id: _Id) -> VideoInfo:
        """The video's index entry; KeyError if absent."""
    def meta_json(self, id: _Id) -> str:
        """The stored meta_data JSON list text; KeyError if absent."""
    def frame_count(self, id: _Id) -> int:
        """Number of frames of the video; KeyError if absent."""
    def read(
        self,
        id: _Id,
        frames: _Selection = None,
        decode: DecodeOptions = ...,
        as_list: bool = False,
        crop_seed: Optional[int] = None,
    ) -> _Frames:
        """Decoded frames of one video as NumPy views of one buffer (no copy).

        One N×H×W×C array when the frames share a shape and ``as_list`` is
        False (an empty 0×0×0×C array when none is selected), else a list.
        ``decode`` defaults to ``DecodeOptions()``; ``crop_seed`` seeds its
        random crop (None: a fresh seed).
        """
    def check_decode_options(self, decode: DecodeOptions) -> None:
        """Raises the ValueError :meth:`read` would raise for ``decode`` on this
        dataset (options its codec cannot honour), reading nothing."""
    def read_batch(
        self,
        ids: Iterable[_Id],
        frames: Optional[Sequence[_Selection]] = None,
        decode: DecodeOptions = ...,
        as_list: bool = False,
        crop_seed: Optional[int] = None,
    ) -> List[_Frames]:
        """Decoded frames of many videos, all frames decoded in parallel.

        ``frames`` is None (all frames) or one selection per id. A random crop
        takes one window per id.
        """
    def read_jpegs(self, id: _Id, frames: _Selection = None) -> List[bytes]:
        """JPEG bytes of the selected frames."""
    def read_thumbnails(self, id: _Id, frames: _Selection = None, max_side: int = 0,
                        quality: int = 85) -> List[bytes]:
        """The selected frames as JPEG images no larger than ``max_side``."""
    def read_jpeg_batch(
        self, ids: Iterable[_Id], frames: Optional[Sequence[_Selection]] = None
    ) -> List[List[bytes]]:
        """JPEG bytes of many videos; ``frames`` as in :meth:`read_batch`."""
    def prefetch(
        self, ids: Iterable[_Id], frames: Optional[Sequence[_Selection]] = None
    ) -> None:
        """Starts fetching what reading the requests needs; see :meth:`gulpdb.Dataset.prefetch`."""
    def chunks(self) -> List[ChunkInfo]:
        """Every chunk, by number."""
    def chunk_videos(self, chunk: int) -> List[VideoInfo]:
        """The videos of one chunk in insertion order."""
    def chunk_ids(self, chunk: int) -> List[str]:
        """The ids of one chunk in insertion order."""
    def stats(self) -> DatasetStats:
        """Counts and sizes."""
    def remove(self, ids: Iterable[_Id]) -> int:
        """Removes ids in one transaction; returns how many existed."""
    def select(self, conditions: List[Tuple[str, List[str]]]) -> List[str]:
        """Ids whose first meta entry satisfies every ``(key, [json values])`` condition
        (equal to one of its values), in (chunk, insertion) order; see
        :meth:`gulpdb.Dataset.select`. ValueError for a value that is not JSON."""
    def tag(self, name: str, message: str = "") -> Dict[str, Any]:
        """Tags the dataset as it is now (docs/versions.md); the tag's dict."""
    def versions(self) -> List[Dict[str, Any]]:
        """The tags, oldest first: name, created, videos, frames, message, root."""
    def delete_tag(self, name: str, grace_seconds: int = 600) -> None:
        """Deletes a tag; what only it held is freed after the grace period."""
    def reclaim_versions(self) -> int:
        """Frees what deleted tags past their grace period held; the bytes freed."""
    def version_bytes(self) -> int:
        """Bytes the tags hold (objects and kept chunk files)."""
    def diff(self, a: str, b: str) -> Dict[str, List[str]]:
        """Ids added, removed, meta_changed and frames_changed from version a to b."""
    def select_query(self, expression: str) -> Tuple[List[str], List[str]]:
        """``(ids, meta keys)``: the ids that satisfy the query (docs/query.md) in
        (chunk, insertion) order, and the meta keys it names. ValueError for text that
        is not a query."""
    def meta_index_details(self) -> List[Tuple[str, bool]]:
        """``(key, ordered)`` of every meta index; ordered is False for the first key form."""
    def create_meta_index(self, key: str, lock_timeout: float = 0.0) -> bool:
        """Builds a meta index of ``key`` (or rebuilds one of the first key form);
        False if it has one already."""
    def drop_meta_index(self, key: str, lock_timeout: float = 0.0) -> bool:
        """Drops the meta index of ``key``; False if it had none."""
    def meta_indexes(self) -> List[str]:
        """The keys with a meta index."""
    def absent_meta_keys(self, keys: List[str]) -> List[str]:
        """The keys among ``keys`` that no video's first meta entry has."""
    def splits(self) -> List[Tuple[str, int]]:
        """``(name, count)`` of every split, by name."""
    def split(self, name: str) -> List[str]:
        """The ids of a split in split order; KeyError naming the known splits."""
    def writer(
        self,
        on_duplicate: str = "error",
        lock_timeout: float = 0.0,
        check_jpeg_markers: bool = True,
        quality: int = 90,
        subsampling: str = "444",
        encode_threads: int = 0,
        rollover: bool = True,
    ) -> NativeWriter:
        """Starts a write transaction; BusyError if another writer is active.

        ``on_duplicate``: ``"error"``, ``"skip"`` or ``"replace"``.
        ``lock_timeout``: seconds to wait for another writer.
        ``quality``/``subsampling`` (``"444"``, ``"422"``, ``"420"``, ``"gray"``):
        how images given as arrays are encoded. ``encode_threads``: 0 = one per core.
        ``rollover``: False keeps the writer from starting chunks by itself
        (only :meth:`NativeWriter.start_chunk` does; GulpIO's writers).
        """

def decode_jpeg(
    data: Union[bytes, bytearray, memoryview],
    colorspace: str = "auto",
    dct: str = "fast",
    downscale: int = 1,
    lenient: bool = False,
    size: _Size = None,
    resize: str = "short_edge",
    crop: Optional[str] = "center",
    crop_seed: Optional[int] = None,
) -> np.ndarray:
    """Decodes one JPEG into a new uint8 array (H×W×C; H×W for a gray JPEG with ``"auto"``),
    resized to ``size`` when given (see the module notes).

    Raises CorruptionError for bytes that are not a decodable JPEG.
    """

def encode_jpeg(image: np.ndarray, quality: int = 90, subsampling: str = "444") -> bytes:
    """Encodes a uint8 H×W (gray) or H×W×3 (RGB) image as baseline JPEG bytes."""

def import_gulpio(
    path: str,
    index_dir: str = "",
    on_duplicate: str = "error",
    skip_missing_meta: bool = False,
    reindex: bool = False,
    discard_unexported: bool = False,
    progress: _Progress = None,
    meta_index_keys: List[str] = [],
) -> Dict[str, Any]:
    """Indexes a GulpIO directory in place; see :func:`gulpdb.import_gulpio`."""

def export_gmeta(dataset: NativeDataset, out_dir: str = "") -> Dict[str, Any]:
    """Writes GulpIO2-readable ``.gmeta`` files; see :func:`gulpdb.export_gmeta`."""

def export_gulpio(dataset: NativeDataset, out_dir: str, quality: int = 90,
                  progress: _Progress = None) -> Dict[str, Any]:
    """Makes ``out_dir`` a GulpIO directory; see :func:`gulpdb.export_gulpio`."""

def check(path: str, deep: bool = False, progress: _Progress = None) -> Dict[str, Any]:
    """Checks a dataset; see :func:`gulpdb.check`."""

def check_video(dataset: NativeDataset, id: _Id) -> Dict[str, Any]:
    """Checks one video's frames; see :meth:`gulpdb.Dataset.check_video`."""

class ViewServer:
    """A running dataset viewer; see :func:`gulpdb.view`."""
    def __init__(self, dataset: NativeDataset, host: str, port: int, label_key: str,
                 thumb_size: int, version: str = "", index_dir: str = "") -> None:
        """Starts serving ``dataset`` (read-only) on ``host``:``port`` (0: a free port);
        ``dataset`` is tag ``version`` ("": the live dataset), and the page's
        version selector opens the others with ``index_dir``."""
    @property
    def url(self) -> str:
        """``http://HOST:PORT/?token=TOKEN``."""
    @property
    def token(self) -> str:
        """The access token (256 bits, URL-safe base64)."""
    @property
    def port(self) -> int:
        """The port it listens on."""
    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
    def close(self) -> None:
        """Stops the server (requests in flight finish)."""

def is_gulpio_data_file_name(name: Union[str, bytes]) -> bool:
    """True for a GulpIO data file name (``data*.gulp``)."""

def is_gulpio_meta_file_name(name: Union[str, bytes]) -> bool:
    """True for a GulpIO meta file name (``meta*.gmeta``)."""

def gulpio_data_file_name(chunk: int) -> str:
    """The name gulpdb gives chunk ``chunk``'s data file: ``data_<N>.gulp``."""

def gulpio_meta_file_name(chunk: int) -> str:
    """The name of chunk ``chunk``'s exported ``.gmeta`` file: ``meta_<N>.gmeta``."""

def index_directory(path: str, index_dir: str = "") -> str:
    """Where the index of the dataset ``path`` lives: ``index_dir``, or
    ``<path>/gulpdb.index``."""

def push(
    path: str,
    url: str,
    jobs: int = 4,
    grace: Union[None, int, float, str] = None,
    progress: _Progress = None,
    index_dir: str = "",
    overwrite: bool = False,
    allow_unconditional_writes: bool = False,
    layout: str = "auto",
    partition_bytes: int = 0,
) -> Dict[str, Any]:
    """Publishes a local dataset to s3://bucket/prefix; see :func:`gulpdb.push`."""

def publish_snapshot(path: str, grace: Union[None, int, float, str] = None,
                     layout: str = "auto") -> Dict[str, Any]:
    """Publishes an index snapshot beside the dataset; see :func:`gulpdb.publish_snapshot`."""

def remote_info(dataset: NativeDataset) -> Optional[Dict[str, Any]]:
    """What a dataset opened from a manifest was opened from; see
    :attr:`gulpdb.Dataset.remote_info`."""

def frame_cache_stats() -> Dict[str, Any]:
    """The node-wide counters of the frame cache; see :meth:`gulpdb.Dataset.cache_stats`."""

def cache_directory() -> str:
    """The local cache folder: $GULPDB_CACHE, $GULPDB_CACHE_DIR, $XDG_CACHE_HOME/gulpdb or
    $HOME/.cache/gulpdb; ValueError when none of them is set."""

def is_remote_url(path: str) -> bool:
    """True for an s3:// URL."""

def s3_url_typo(text: str) -> str:
    """For text that looks like a mistyped s3:// URL (S3://, s3:/, s3a://), what is wrong and
    the URL meant; '' otherwise."""

def redact_url(url: str) -> str:
    """The URL with its user information (user:secret@) replaced by ***: what messages show."""

# ---- ingest and merge (gulpdb/ingest.h, gulpdb/maintenance.h), for gulpdb.distributed ----
# Options are dicts keyed by the names of the ingest option table (ingest_command_options,
# "_" for "-": videos_dir, frames_dir, images_dir, image_list, labels, label_name,
# frame_rate, frame_size, quality, keep_jpeg, ffmpeg, num_workers, shuffle, seed, batch,
# on_duplicate, strict, quiet, videos_per_chunk, bytes_per_chunk, no_checksums), each read
# by the command line's rules from its text, plus dir, lock_timeout (seconds),
# catch_signals and write_label_map; an unknown key is a ValueError. Sources are dicts
# {"kind": "video"|"frames"|"image", "id", "id_json", "label", "path", "frame_paths"}
# (paths with surrogate escapes for bytes that are not UTF-8), or, for a source no dataset
# can hold, {"kind", "id" (printable), "path", "problem"}.

def ingest_validate(options: Dict[str, Any]) -> str:
    """What is wrong with the ingest options (one line), or ``''``."""

def ingest_command_options() -> List[Dict[str, Any]]:
    """The ingest option table shared with ``gulpdb ingest``: dicts of name, short_name,
    kind, value_name, default (text), help and distributed."""

def ingest_options(given: Dict[str, Any]) -> Dict[str, Any]:
    """Every ingest option (table names, ``_`` for ``-``): the defaults with ``given``
    read by the command line's rules; ValueError for a bad value."""

def ingest_warnings(options: Dict[str, Any], given: List[str]) -> List[str]:
    """Warnings for the options in ``given`` that an ingest with ``options`` would not use."""

def ingest_list_sources(options: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The sources a directory ingest with these options would read, in list order."""

def ingest_label_map(dir: str, sources: List[Dict[str, Any]]) -> Dict[str, int]:
    """The label -> index map an ingest of ``sources`` into ``dir`` would use."""

def ingest_plan_sources(
    dir: str, on_duplicate: str, strict: bool, sources: List[Dict[str, Any]]
) -> Dict[str, Any]:
    """Which of ``sources`` (in ingest order) an ingest into ``dir`` keeps:
    ``{"keep": [bool], "duplicates": int, "bad": [index]}``; ValueError as ingest raises it."""

def ingest_drop_present(
    dataset: NativeDataset, dir: str, on_duplicate: str, sources: List[Dict[str, Any]],
    keep: List[bool],
) -> Tuple[List[bool], int]:
    """``keep`` without the sources whose id ``dataset`` holds, and how many
    ('skip'); ValueError for one under 'error'; 'replace' keeps them."""

def ingest_shuffled_order(n: int, seed: int) -> List[int]:
    """The order in which ingest appends ``n`` listed sources when shuffled with ``seed``."""

def ingest_update_label_map_file(dir: str, map: Dict[str, int]) -> None:
    """Makes ``<dir>/label2idx.json`` hold ``map``, as ingest does (existing entries kept)."""

def ingest_run(
    options: Dict[str, Any],
    sources: Optional[List[Dict[str, Any]]] = None,
    label_map: Optional[Dict[str, int]] = None,
    on_progress: Optional[Callable[[int, int], Any]] = None,
    on_problem: Optional[Callable[[str, str, str, bool], Any]] = None,
    on_note: Optional[Callable[[str], Any]] = None,
) -> Dict[str, Any]:
    """Runs an ingest; returns ``{'listed', 'added', 'frames', 'present', 'duplicates',
    'bad', 'seed', 'interrupted_by'}``. ``on_problem(id, path, message, skipped)``.
    An exception raised by a callback stops the ingest (the open batch is rolled back)."""

def relabel(
    dir: str,
    labels: str,
    label_name: str = "label",
    index_dir: str = "",
    lock_timeout: float = 0.0,
) -> Dict[str, Any]:
    """Gives the videos of a label list their labels; returns
    ``{'listed', 'changed', 'new_labels', 'warnings'}``."""
def merge(
    out: str,
    shards: Sequence[str],
    on_duplicate: str = "error",
    lock_timeout: float = 0.0,
    progress: _Progress = None,
) -> Dict[str, Any]:
    """Adds shard datasets to ``out``; shards inside its directory are attached in place.

    Returns ``{'shards', 'chunks_attached', 'videos_copied', 'videos', 'skipped'}``.
    """
