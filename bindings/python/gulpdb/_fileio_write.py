"""The writing half of GulpIO2's API over gulpdb (:mod:`gulpdb.fileio`, where
its public names are imported from): ``ChunkWriter``, ``GulpIngestor`` and
``calculate_chunk_slices``; a chunk's own writes are ``GulpChunk``'s
(:mod:`gulpdb._fileio_read`)."""

from __future__ import annotations

import concurrent.futures
import functools
import multiprocessing
import os
import sys
import time
from typing import Any, Iterator, List, Optional, Tuple, Union

import numpy as np

from . import _gulpdb, utils
from ._fileio_read import GulpChunk, GulpDirectory, GulpIOArgumentError, _frames_to_store


def _no_frames(id_: Any) -> None:
    print(f"Failed to write video with id: {id_}; no frames", file=sys.stderr)


def _adapter_quality(adapter: Any) -> int:
    """The JPEG quality an adapter asks for (newer GulpIO2 adapters have
    ``jpeg_encode_quality()``), else ``gulpdb.utils._JPEG_WRITE_QUALITY`` as
    it is now (GulpIO2's knob, 90 unless changed)."""
    method = getattr(adapter, "jpeg_encode_quality", None)
    return int(method()) if callable(method) else utils._write_quality()


class ChunkWriter:
    """Writes the items of an adapter slice through a chunk (GulpIO2's ChunkWriter)."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def write_chunk(self, output_chunk: GulpChunk, input_slice: slice) -> None:
        """Appends every item of ``adapter.iter_data(input_slice)`` with frames
        to ``output_chunk`` (a new chunk file), in one transaction."""
        quality = _adapter_quality(self.adapter)
        with output_chunk.open("wb"):
            for video in self.adapter.iter_data(input_slice):
                id_ = video["id"]
                meta_data = video["meta"]
                frames = video["frames"]
                if len(frames) > 0:
                    output_chunk.append(id_, meta_data, frames, quality)
                else:
                    _no_frames(id_)


def calculate_chunk_slices(items_per_chunk: int, num_items: int) -> List[slice]:
    """Slices of ``items_per_chunk`` items covering ``range(num_items)``, as GulpIO2.

    Raises:
        GulpIOArgumentError: (a ValueError and an AssertionError, what GulpIO2's
            asserts raise) when either count is not positive.
    """
    if not items_per_chunk > 0:
        raise GulpIOArgumentError(f"items_per_chunk must be positive, not {items_per_chunk!r}")
    if not num_items > 0:
        raise GulpIOArgumentError(
            f"num_items must be positive (nothing to ingest), not {num_items!r}"
        )
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
            for f in _frames_to_store(video["frames"])
        ]
        out.append((video["id"], video["meta"], jpegs))
    return out


class GulpIngestor:
    """Ingests the items of an adapter into a gulpdb dataset (GulpIO2's GulpIngestor).

    Chunks are GulpIO2's: the adapter's items are cut into slices of
    ``videos_per_chunk`` (:func:`calculate_chunk_slices`), and slice *i* goes,
    whole and alone, into the *i*-th new chunk, numbered after the directory's
    last chunk (so a second ingest into the same directory continues the
    numbering); items without frames are skipped with a message, and a slice
    without any leaves an empty chunk. ``GulpDirectory`` then shows the same
    chunks, members and order as GulpIO2 would.

    Args:
        adapter: an :class:`gulpdb.adapters.AbstractDatasetAdapter` (``iter_data``
            yielding ``{'id', 'frames', 'meta'}``, and ``__len__``); frames are
            uint8 images, JPEG bytes, or paths of JPEG files.
        output_folder: the dataset directory (created, or appended to).
        videos_per_chunk: videos per chunk.
        num_workers: with 1, items are read in this process and their frames
            encoded by gulpdb on all cores; with more, that many worker
            processes read slices of the adapter and encode them (the adapter
            must pickle, as with GulpIO2), and this process writes.
        quality: JPEG quality of images; default: the adapter's
            ``jpeg_encode_quality()`` if it has one, else
            ``gulpdb.utils._JPEG_WRITE_QUALITY`` when the ingest runs (90
            unless changed, GulpIO2's).
        mp_context: the multiprocessing context of the workers (default: the
            platform's).

    Calling it writes one transaction per slice; an interrupted ingest keeps
    every slice committed so far (the slice it was writing leaves an empty
    chunk).
    """

    def __init__(
        self,
        adapter: Any,
        output_folder: Union[str, "os.PathLike[str]"],
        videos_per_chunk: int,
        num_workers: int,
        *,
        quality: Optional[int] = None,
        mp_context: Optional[Any] = None,
        quiet: bool = False,
    ) -> None:
        if not int(num_workers) > 0:
            raise GulpIOArgumentError(f"num_workers must be positive, not {num_workers!r}")
        self.adapter = adapter
        self.output_folder = os.fspath(output_folder)
        self.videos_per_chunk = int(videos_per_chunk)
        self.num_workers = int(num_workers)
        self.quality: Optional[int] = int(quality) if quality is not None else None
        self.mp_context = mp_context
        self.quiet = quiet

    def _slices_in_process(self, slices: List[slice]) -> Iterator[List[Tuple[Any, Any, Any]]]:
        for s in slices:
            yield [(v["id"], v["meta"], v["frames"]) for v in self.adapter.iter_data(s)]

    def _slices_in_workers(
        self, slices: List[slice], quality: int
    ) -> Iterator[List[Tuple[Any, Any, Any]]]:
        context = self.mp_context or multiprocessing.get_context()
        with concurrent.futures.ProcessPoolExecutor(self.num_workers, mp_context=context) as pool:
            pending: List[concurrent.futures.Future] = []
            queue = iter(slices)
            window = 2 * self.num_workers  # slices in flight: bounds memory
            for s in queue:
                pending.append(pool.submit(_encode_slice, self.adapter, s, quality))
                if len(pending) >= window:
                    break
            while pending:
                done = pending.pop(0)
                nxt = next(queue, None)
                if nxt is not None:
                    pending.append(pool.submit(_encode_slice, self.adapter, nxt, quality))
                yield done.result()

    def __call__(self) -> None:
        os.makedirs(self.output_folder, exist_ok=True)
        slices = calculate_chunk_slices(self.videos_per_chunk, len(self.adapter))
        directory = GulpDirectory(self.output_folder, quiet=self.quiet)
        ds = directory._writable_dataset(self.videos_per_chunk)
        quality = self.quality if self.quality is not None else _adapter_quality(self.adapter)
        if self.num_workers == 1:
            produce = self._slices_in_process
        else:
            produce = functools.partial(self._slices_in_workers, quality=quality)
        started = time.monotonic()
        last_report = started
        written = 0
        try:
            with ds.writer(quality=quality, rollover=False) as writer:
                for done, items in enumerate(produce(slices), 1):
                    writer.start_chunk()
                    for id_, meta, frames in items:
                        if len(frames) == 0:
                            _no_frames(id_)
                            continue
                        writer.append(str(id_), _frames_to_store(frames), meta)
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
        finally:
            directory._invalidate()
