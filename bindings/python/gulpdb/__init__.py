"""gulpdb: an embedded storage engine for deep-learning video datasets.

Frames are JPEG bytes in GulpIO-format ``.gulp`` chunk files; an LMDB index
finds a video by id in O(1), whatever the size of the dataset. Reads decode in
parallel in C++ without the GIL and hand NumPy arrays over without copying.

The native API::

    import gulpdb

    with gulpdb.Dataset("/data/clips", "a") as ds:
        with ds.writer() as w:                          # one transaction
            w.append("clip_1", frames, {"label": "cat"})  # uint8 arrays or JPEG bytes
    ds = gulpdb.Dataset("/data/clips")                  # read-only
    clip = ds.read("clip_1", slice(0, 16, 2))           # 8×H×W×3 uint8
    jpegs = ds.read_jpegs("clip_1", [0, 5])
    batch = ds.read_batch(["clip_1", "clip_2"], slice(0, 16))

GulpIO2's API, on gulpdb datasets and on GulpIO directories (indexed on first
open)::

    import gulpdb as gulpio2
    gd = gulpio2.GulpDirectory("/data/gulps")
    frames, meta = gd["clip_1", 1:10:2]

Datasets in object storage (S3 and compatible stores)::

    gulpdb.push("/data/clips", "s3://bucket/clips")     # or: gulpdb push DIR URL
    ds = gulpdb.Dataset("s3://bucket/clips")            # read-only, from any machine

A web page for browsing a dataset (the server of ``gulpdb view``)::

    with gulpdb.view("/data/clips") as v:               # or an s3:// URL
        print(v.url)                                    # http://127.0.0.1:PORT/?token=...

GulpIO2's adapter helpers (``gulpio2.utils``) are in :mod:`gulpdb.utils`.
PyTorch datasets are in :mod:`gulpdb.torch` (importing torch only there).

Ids are ``str``, or ``int`` standing for their decimal string (as GulpIO2's
integer ids); arguments holding several ids take any iterable of them but
never a bare ``str`` or ``bytes`` (TypeError: pass a list).

Errors: KeyError for a missing id, IndexError for a frame index out of range,
ValueError/TypeError for bad arguments, FileNotFoundError for a missing
dataset, :class:`BusyError` (an OSError) when another writer is active,
:class:`CorruptionError` (an OSError) for damaged data, OSError for I/O
failures, MemoryError when memory runs out.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, Optional, Tuple, Union

from . import _gulpdb, utils
from ._dataset import Dataset, FrameSelection, Frames, VideoId, Writer
from ._decode import DecodeOptions
from ._view import Viewer, view
from ._gulpdb import (
    BusyError,
    ChunkInfo,
    CorruptionError,
    DatasetStats,
    StaleIndexError,
    VideoInfo,
    decode_jpeg,
    encode_jpeg,
)
from .adapters import AbstractDatasetAdapter, JpegFolderAdapter
from . import fileio
# The GulpIO2 API at the top level, so that `import gulpdb as gulpio2` works:
# every name fileio exports, as its __all__ lists them.
from .fileio import *  # noqa: F401,F403

__version__: str = _gulpdb.__version__
#: The codecs this build reads and writes: ``("jpeg",)``, plus ``"h264"`` in a
#: build with H.264 support (docs/h264.md; the .deb and the wheel have none).
codecs: Tuple[str, ...] = _gulpdb.codecs

#: The node-wide counters of the frame cache of remote datasets (a dict, as
#: :meth:`Dataset.cache_stats` returns; docs/frame_cache.md).
frame_cache_stats: Callable[[], Dict[str, Any]] = _gulpdb.frame_cache_stats

__all__ = [
    "__version__",
    "codecs",
    "Dataset",
    "Writer",
    "DecodeOptions",
    "FrameSelection",
    "Frames",
    "VideoId",
    "VideoInfo",
    "ChunkInfo",
    "DatasetStats",
    "BusyError",
    "CorruptionError",
    "StaleIndexError",
    "decode_jpeg",
    "encode_jpeg",
    "import_gulpio",
    "export_gmeta",
    "export_gulpio",
    "check",
    "push",
    "publish_snapshot",
    "relabel",
    "frame_cache_stats",
    "view",
    "Viewer",
    "AbstractDatasetAdapter",
    "JpegFolderAdapter",
    "utils",
]
__all__ += fileio.__all__

Progress = Optional[Callable[[int, int], Any]]


def import_gulpio(
    path: Union[str, "os.PathLike[str]"],
    *,
    index_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    on_duplicate: str = "error",
    skip_missing_meta: bool = False,
    reindex: bool = False,
    discard_unexported: bool = False,
    progress: Progress = None,
    meta_index_keys: Iterable[str] = (),
) -> Dict[str, Any]:
    """Indexes a GulpIO/GulpIO2 directory in place; no byte of a ``.gulp`` file changes.

    Args:
        path: the directory of ``data*.gulp`` / ``meta*.gmeta`` pairs.
        index_dir: put the index there instead of ``<path>/gulpdb.index``
            (for a read-only directory); open it with
            ``Dataset(path, index_dir=...)``.
        on_duplicate: an id in two chunks is an ``"error"`` (ValueError), or
            the first chunk keeps it (``"skip"``) or the last one
            (``"replace"``), as for appends and ingest.
        skip_missing_meta: skip a data file without its ``.gmeta`` (with a
            warning in the report) instead of failing.
        reindex: index a directory that is already indexed again, from its
            ``.gmeta`` files (after GulpIO tools changed it: see
            :class:`StaleIndexError`); all or nothing. Refused when videos
            that gulpdb wrote and no ``.gmeta`` describes would be lost,
            unless ``discard_unexported``.
        discard_unexported: with ``reindex``, drop such videos.
        progress: called as ``progress(chunks_done, chunks_total)``.
        meta_index_keys: meta keys to build a meta index of
            (:meth:`Dataset.create_meta_index`) as part of the import.

    Named splits come from ``gulpdb_splits.json`` when the directory has one
    (as :func:`export_gmeta` writes it); every id it lists must be in the
    directory.

    Returns:
        ``{'chunks', 'videos', 'frames', 'gmeta_bytes', 'warnings', 'splits'}``.

    Raises:
        ValueError: already indexed (without ``reindex``), bad file names, or a
            ``gulpdb_splits.json`` naming ids that are not in the directory.
        gulpdb.CorruptionError: a ``.gmeta`` that does not match its data file.
    """
    return _gulpdb.import_gulpio(
        os.fspath(path),
        index_dir=os.fspath(index_dir) if index_dir is not None else "",
        on_duplicate=on_duplicate,
        skip_missing_meta=skip_missing_meta,
        reindex=reindex,
        discard_unexported=discard_unexported,
        progress=progress,
        meta_index_keys=_gulpdb._as_id_list(meta_index_keys, "meta_index_keys"),
    )


def export_gmeta(
    dataset: Dataset, out_dir: Optional[Union[str, "os.PathLike[str]"]] = None
) -> Dict[str, Any]:
    """Writes ``meta_<N>.gmeta`` files so that unmodified GulpIO2 reads the dataset.

    For an imported directory that has not changed, the files are
    byte-identical to the originals. The named splits go to
    ``gulpdb_splits.json`` beside them (GulpIO's readers ignore it;
    :func:`import_gulpio` reads it back). ``out_dir`` defaults to the dataset
    directory. Returns ``{'chunks', 'videos', 'bytes_written', 'splits'}``.
    """
    _require_dataset(dataset, "export_gmeta")
    return _gulpdb.export_gmeta(
        dataset.native, os.fspath(out_dir) if out_dir is not None else ""
    )


def export_gulpio(
    dataset: Dataset,
    out_dir: Union[str, "os.PathLike[str]"],
    *,
    quality: int = 90,
    progress: Progress = None,
) -> Dict[str, Any]:
    """Makes ``out_dir`` a GulpIO directory of ``dataset`` (``gulpdb export DIR -o OUT``).

    For a JPEG dataset, its ``.gmeta`` files (its data files already are
    GulpIO's), as :func:`export_gmeta`. For an h264 dataset, whose chunk
    files GulpIO cannot read: ``data_<N>.gulp`` of its frames decoded and
    encoded as JPEG at ``quality`` (4:4:4), ``meta_<N>.gmeta``,
    ``label2idx.json`` and ``gulpdb_splits.json``, into ``out_dir`` (an
    existing directory, not the dataset's, holding no GulpIO files); on
    failure nothing is left there. ``progress(videos done, total)`` is called
    while frames are transcoded. Returns ``{'chunks', 'videos',
    'bytes_written', 'splits', 'frames', 'data_bytes'}``.
    """
    _require_dataset(dataset, "export_gulpio")
    return _gulpdb.export_gulpio(dataset.native, os.fspath(out_dir), quality=int(quality),
                                 progress=progress)


def _require_dataset(dataset: Any, what: str) -> None:
    if not isinstance(dataset, Dataset):
        raise TypeError(f"{what}: expected a gulpdb.Dataset, not {type(dataset).__name__}")


def check(
    path: Union[str, "os.PathLike[str]"], *, deep: bool = False, progress: Progress = None
) -> Dict[str, Any]:
    """Checks a dataset's health (a superset of GulpIO2's sanity check).

    With ``deep``, also decodes every frame and verifies stored checksums.
    Problems are reported, not raised: returns ``{'chunks', 'videos',
    'frames', 'unverified_videos', 'unverified_chunks', 'problems': [(where,
    what), ...], 'notes': [...], 'healthy'}``; ``unverified_videos`` counts
    the videos stored without a CRC-32C (read unverified), in
    ``unverified_chunks`` chunks.
    """
    return _gulpdb.check(os.fspath(path), deep=deep, progress=progress)


Grace = Union[None, int, float, str]


def push(
    path: Union[str, "os.PathLike[str]"],
    url: str,
    *,
    jobs: int = 4,
    grace: Grace = None,
    progress: Progress = None,
    index_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    overwrite: bool = False,
    allow_unconditional_writes: bool = False,
    layout: str = "auto",
) -> Dict[str, Any]:
    """Publishes the local dataset ``path`` to ``url`` (``s3://bucket/prefix``).

    Pushing again publishes what changed since: appended videos, removals,
    compaction. Objects are uploaded first and the manifest last, so readers
    (``gulpdb.Dataset(url)``) only ever see whole pushes; bytes that readers of
    an older manifest may read are never changed, and objects a push makes
    obsolete are kept for ``grace`` (seconds, or a duration such as ``"24h"``;
    default ``$GULPDB_PUSH_GRACE`` or 24 h) and deleted by a later push.
    Configuration comes from the environment as for every S3 tool
    (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_PROFILE``, ...).

    Args:
        jobs: objects uploaded at once.
        progress: called as ``progress(bytes_done, bytes_total)`` while chunk
            objects upload.
        index_dir: where the index lives, when not in ``<path>/gulpdb.index``
            (a read-only GulpIO directory indexed elsewhere).
        overwrite: replace what the prefix holds that pushes of this dataset
            did not write (a GulpIO directory uploaded by other tools,
            another dataset): such objects are replaced or, once the new
            manifest is published, deleted. Without it such a prefix is
            refused (ValueError), and nothing is uploaded. It also repairs
            a damaged prefix: the whole index is built afresh, and every
            object the new generation names that the store lacks or holds
            damaged is uploaded again.
        allow_unconditional_writes: push to a store that does not honour
            conditional writes (If-None-Match / If-Match), which is refused
            otherwise; safe only while no two pushes to this place run at once.
        layout: how the index is published. ``"partitioned"``: partitions
            named by their SHA-256 plus a small root; readers fetch only the
            partitions they use, and a push uploads only partitions that
            changed (gulpdb versions that predate it refuse to open it).
            ``"whole"``: the index as one object that every reader fetches.
            ``"auto"`` (the default): partitioned. Named splits are
            published in either layout.

    Returns:
        ``{'published', 'generation', 'chunks', 'chunks_uploaded',
        'bytes_uploaded', 'gmeta_uploaded', 'snapshot_uploaded',
        'snapshot_bytes', 'objects_obsoleted', 'objects_deleted',
        'foreign_objects_replaced', 'foreign_objects_deleted', 'objects_repaired', 'seconds',
        'partitioned', 'partitions', 'partitions_uploaded',
        'partition_bytes_uploaded', 'root_bytes', 'chunk_pages_uploaded',
        'root_pages', 'root_pages_uploaded'}``.

    Raises:
        gulpdb.CorruptionError: a local chunk no longer holds bytes a published
            manifest promised (it was rewritten); or an object the published
            index names is missing or damaged and this machine holds no copy
            of it (``overwrite=True`` rebuilds and uploads it); nothing is
            changed.
        ValueError: the prefix holds objects this dataset's pushes did not
            write (see ``overwrite``), or the store ignores conditional writes
            (see ``allow_unconditional_writes``).
        PermissionError: the store refused the credentials (HTTP 403).
        gulpdb.BusyError: another push runs, or changed the prefix meanwhile;
            this one published nothing.
        OSError: the store kept failing.
    """
    return _gulpdb.push(
        os.fspath(path),
        url,
        jobs=int(jobs),
        grace=grace,
        progress=progress,
        index_dir=os.fspath(index_dir) if index_dir is not None else "",
        overwrite=bool(overwrite),
        allow_unconditional_writes=bool(allow_unconditional_writes),
        layout=str(layout),
    )


def relabel(
    path: Union[str, "os.PathLike[str]"],
    labels: Union[str, "os.PathLike[str]"],
    *,
    label_name: str = "label",
    index_dir: Optional[str] = None,
    lock_timeout: float = 0.0,
) -> Dict[str, Any]:
    """Gives each video of a label list its label, as ``gulpdb relabel`` does.

    ``labels`` is read as ``ingest --labels`` reads it: a 20BN JSON list (the
    label under ``label_name``) or an ``id;label`` CSV. Each listed video's
    meta gets ``"label"`` and ``"idx"`` (the label's index in
    ``label2idx.json``, which keeps every index and numbers new labels after
    the largest), in one transaction; frames are never rewritten
    (docs/edits.md).

    Raises:
        KeyError: ids the dataset lacks (listed); nothing changes.
        ValueError: a malformed list, an entry without a label, or an id
            listed with two labels; nothing changes.
        FileNotFoundError: no such dataset or list.

    Returns:
        ``{"listed": ..., "changed": ..., "new_labels": ..., "warnings": [...]}``.
    """
    for name, value in (("path", path), ("labels", labels)):
        if not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"{name} must be a path, not {type(value).__name__}")
    if not isinstance(label_name, str):
        raise TypeError(f"label_name must be a str, not {type(label_name).__name__}")
    return _gulpdb.relabel(
        os.fspath(path),
        os.fspath(labels),
        label_name=label_name,
        index_dir=index_dir or "",
        lock_timeout=lock_timeout,
    )


def publish_snapshot(path: Union[str, "os.PathLike[str]"], *, grace: Grace = None,
                     layout: str = "auto") -> Dict[str, Any]:
    """Publishes a snapshot of the index of ``path`` beside it (``gulpdb snapshot``).

    For datasets on a network file system: readers on other hosts open the
    newest published snapshot instead of the live index, which LMDB cannot
    share between hosts. Run it where the dataset is written, after the
    writes readers should see. ``layout`` as for :func:`push` (``"auto"``:
    partitioned, so that each host copies only the partitions it reads into
    its node cache). Returns a report as :func:`push`.
    """
    return _gulpdb.publish_snapshot(os.fspath(path), grace=grace, layout=layout)
