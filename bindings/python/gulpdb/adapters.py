"""Dataset adapters for :class:`gulpdb.GulpIngestor`, as GulpIO's adapters.

An adapter has a length and yields one dict per item::

    {'id': 'video_1', 'frames': [...], 'meta': {'label': 'cat'}}

``frames`` may hold uint8 images (H×W×3 RGB or H×W gray; gulpdb encodes them
as JPEG, quality 90, 4:4:4 — GulpIO2's settings) or JPEG ``bytes``, which are
stored as they are (no decode and re-encode).
"""

from __future__ import annotations

import abc
import csv
import glob
import json
import os
from typing import Any, Dict, Iterator, List, Optional

__all__ = ["AbstractDatasetAdapter", "JpegFolderAdapter"]


class AbstractDatasetAdapter(abc.ABC):
    """Base class of dataset adapters (GulpIO's AbstractDatasetAdapter).

    Implement :meth:`iter_data` and :meth:`__len__`.
    """

    @abc.abstractmethod
    def iter_data(self, slice_element: Optional[slice] = None) -> Iterator[Dict[str, Any]]:
        """Yields ``{'id', 'frames', 'meta'}`` for the items in ``slice_element`` (all if None)."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """Number of items."""


class JpegFolderAdapter(AbstractDatasetAdapter):
    """One video per sub-folder of JPEG files, stored without re-encoding.

    Args:
        folder: holds one sub-folder of ``*.jpg``/``*.jpeg`` frames per video
            (frames in file name order).
        labels_csv: optional 20BN-style ``id;label`` lines; then only the ids
            listed are read, meta is GulpIO's ``{'id', 'label', 'idx'}`` with
            ``idx`` the label's position in the sorted label set, and
            ``label2idx.json`` is written to ``output_folder`` after the last
            item.
        output_folder: where ``label2idx.json`` goes.
    """

    def __init__(
        self,
        folder: str,
        labels_csv: Optional[str] = None,
        output_folder: Optional[str] = None,
    ) -> None:
        self.folder = os.fspath(folder)
        self.output_folder = output_folder
        self.label2idx: Dict[str, int] = {}
        if labels_csv is not None:
            with open(labels_csv, newline="") as f:
                rows = [row for row in csv.reader(f, delimiter=";") if row]
            labels = sorted({row[1] for row in rows})
            self.label2idx = {label: i for i, label in enumerate(labels)}
            self.items: List[Dict[str, Any]] = [
                {"id": row[0], "label": row[1], "idx": self.label2idx[row[1]]} for row in rows
            ]
        else:
            names = sorted(
                n for n in os.listdir(self.folder) if os.path.isdir(os.path.join(self.folder, n))
            )
            self.items = [{"id": n} for n in names]

    def __len__(self) -> int:
        return len(self.items)

    def iter_data(self, slice_element: Optional[slice] = None) -> Iterator[Dict[str, Any]]:
        """Yields the items of ``slice_element`` with their frames as JPEG bytes."""
        selected = self.items[slice_element or slice(0, len(self.items))]
        for meta in selected:
            video_dir = os.path.join(self.folder, str(meta["id"]))
            paths = sorted(
                glob.glob(os.path.join(video_dir, "*.jpg"))
                + glob.glob(os.path.join(video_dir, "*.jpeg"))
            )
            frames = []
            for path in paths:
                with open(path, "rb") as f:
                    frames.append(f.read())
            yield {"id": meta["id"], "frames": frames, "meta": dict(meta)}
        if self.label2idx and self.output_folder is not None:
            with open(os.path.join(self.output_folder, "label2idx.json"), "w") as f:
                json.dump(self.label2idx, f)
