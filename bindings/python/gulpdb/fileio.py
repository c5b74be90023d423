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
  Chunk placement is GulpIO2's: ``open('wb')`` on a new chunk starts a new
  chunk file holding exactly what is appended in the block (an empty block
  leaves an empty chunk, as GulpIO2 does), and :class:`GulpIngestor` writes
  the adapter's slice *i* into the *i*-th new chunk, numbered after the
  directory's last chunk. gulpdb names chunk files ``data_<N>.gulp``: a chunk
  object created for another name, or for a number already taken, is
  renamed (with a UserWarning) to the chunk actually written. ``open('ab')``
  appends only to the directory's last chunk, and not to one imported from
  GulpIO (ValueError; gulpdb never changes the bytes of an imported file).
  An id already present is an error (GulpIO2 would silently extend it). No
  ``.gmeta`` is written; use :func:`gulpdb.export_gmeta` for unmodified
  GulpIO2 readers.
- A missing id raises KeyError everywhere (GulpIO2 sometimes fails with a
  TypeError).
- Where GulpIO2 asserts on a bad argument (``calculate_chunk_slices`` with no
  items or no items per chunk, ``GulpIngestor`` with no workers), gulpdb
  raises :class:`GulpIOArgumentError`, a ValueError that is also an
  AssertionError, so code catching either keeps working.
"""

from __future__ import annotations

from ._fileio_read import (
    FileFormatException,
    GulpChunk,
    GulpDirectory,
    GulpIOArgumentError,
    JpegDecoder,
    extract_input_for_getitem,
)
from ._fileio_write import ChunkWriter, GulpIngestor, calculate_chunk_slices

__all__ = [
    "GulpDirectory",
    "GulpChunk",
    "ChunkWriter",
    "GulpIngestor",
    "GulpIOArgumentError",
    "FileFormatException",
    "calculate_chunk_slices",
    "extract_input_for_getitem",
]

# The classes and functions say they are gulpdb.fileio's (as GulpIO2's are
# gulpio2.fileio's), whichever half of the module defines them.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
