"""The plain Python model of a dataset the lifecycle test checks gulpdb against.

A dataset is id -> Video (its JPEG frames, exactly as stored, and its
``meta_data`` list: one entry per append of the id in a GulpIO chunk; the
first entry is "the meta"), plus what travels with it: the label map
(``label2idx.json``), named splits and the keys with a meta index. The label
of a video is its meta's ``idx`` (GulpIO's label index), -1 without one.

Nothing here calls gulpdb: expected results of operations are computed from
the documented rules (README: ingest, merge's label map, import, re-index).
"""

from __future__ import annotations

import copy
import io
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np
from PIL import Image


@dataclass(frozen=True)
class Video:
    frames: Tuple[bytes, ...]
    meta_data: Tuple[str, ...]  # JSON text of each entry, as Python's json.dumps writes it

    @staticmethod
    def of(frames: Sequence[bytes], meta_data: Sequence[Any]) -> "Video":
        return Video(tuple(frames), tuple(json.dumps(m) for m in meta_data))

    @property
    def meta(self) -> Any:
        return json.loads(self.meta_data[0]) if self.meta_data else None

    def metas(self) -> List[Any]:
        return [json.loads(m) for m in self.meta_data]

    @property
    def label(self) -> int:
        meta = self.meta
        if isinstance(meta, dict) and isinstance(meta.get("idx"), int):
            return meta["idx"]
        return -1

    def with_meta(self, meta_data: Sequence[Any]) -> "Video":
        return Video.of(self.frames, meta_data)


@dataclass
class DatasetModel:
    videos: Dict[str, Video] = field(default_factory=dict)
    label2idx: Optional[Dict[str, int]] = None  # None: no label2idx.json
    splits: Dict[str, List[str]] = field(default_factory=dict)
    meta_keys: Set[str] = field(default_factory=set)
    # Frames whose bytes on disk were damaged (one flipped bit) while their
    # CRC-32C in the index stayed: id -> frame -> the damaged bytes. Every
    # read of such a frame must fail (unless it opts out of the checks,
    # when it gets these bytes); `videos` keeps the bytes as written.
    damaged: Dict[str, Dict[int, bytes]] = field(default_factory=dict)

    def copy(self) -> "DatasetModel":
        return copy.deepcopy(self)

    def remove(self, ids: Iterable[str]) -> None:
        gone = set(ids)
        for id_ in gone:
            self.videos.pop(id_, None)
            self.damaged.pop(id_, None)
        self.splits = {name: [i for i in ids_ if i not in gone]
                       for name, ids_ in self.splits.items()}

    def labels_of_videos(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for v in self.videos.values():
            for m in v.metas():
                if isinstance(m, dict) and isinstance(m.get("label"), str) and isinstance(
                        m.get("idx"), int):
                    out.setdefault(m["label"], m["idx"])
        return out


def extend_labels(existing: Optional[Dict[str, int]], labels: Iterable[str]) -> Dict[str, int]:
    """Ingest's rule: labels already mapped keep their index; new ones are
    sorted and numbered after the largest index."""
    out = dict(existing or {})
    next_idx = max(out.values(), default=-1) + 1
    for label in sorted(set(labels) - set(out)):
        out[label] = next_idx
        next_idx += 1
    return out


def merge_labels(out: DatasetModel, shard: DatasetModel) -> Tuple[Optional[Dict[str, int]],
                                                                 Dict[str, int]]:
    """Merge's rule (README "Merging shards"): the output's indices are kept
    (its label2idx.json, or its videos' when it has none), the shard's other
    labels are sorted and numbered after them. Returns (the output's new
    label2idx.json or None when it stays as it is, the shard's label -> new idx
    for labels whose index changes)."""
    out_has_file = out.label2idx is not None
    entries = dict(out.label2idx) if out_has_file else dict(
        sorted(out.labels_of_videos().items(), key=lambda kv: kv[1]))
    shard_map = dict(shard.label2idx or {})
    for label, idx in shard.labels_of_videos().items():
        shard_map.setdefault(label, idx)
    next_idx = max(entries.values(), default=-1) + 1
    fresh = sorted(set(shard_map) - set(entries))
    for label in fresh:
        entries[label] = next_idx
        next_idx += 1
    renumber = {label: entries[label] for label, idx in shard_map.items() if entries[label] != idx}
    if not entries or (out_has_file and not fresh):
        return None, renumber
    return entries, renumber


def renumbered(video: Video, renumber: Dict[str, int]) -> Video:
    """The video with its meta's ``idx`` rewritten for labels whose index changed."""
    if not renumber:
        return video
    metas = video.metas()
    changed = False
    for m in metas:
        if isinstance(m, dict) and m.get("label") in renumber and isinstance(m.get("idx"), int):
            m["idx"] = renumber[m["label"]]
            changed = True
    return video.with_meta(metas) if changed else video


# ---- frames -----------------------------------------------------------------------------


def make_jpeg(seed: int, height: int = 16, width: int = 16, gray: bool = False,
              quality: int = 90) -> bytes:
    """A small JPEG whose content depends on ``seed`` (PIL, so not gulpdb's encoder)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    a, b, c = (int(v) for v in rng.integers(0, 256, 3))
    img = np.stack([(x * 16 + a) % 256, (y * 16 + b) % 256, (x * y + c) % 256], -1)
    img = img.astype(np.uint8)
    buf = io.BytesIO()
    if gray:
        Image.fromarray(img[..., 0]).save(buf, "JPEG", quality=quality)
    else:
        Image.fromarray(img).save(buf, "JPEG", quality=quality, subsampling=0)
    return buf.getvalue()


def decode_reference(jpeg: bytes) -> np.ndarray:
    """Pixels of a JPEG as libjpeg's defaults decode it (accurate DCT), RGB."""
    return np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))


# ---- comparing --------------------------------------------------------------------------


def meta_text(value: Any) -> str:
    return json.dumps(value)


def describe_diff(got: Dict[str, Any], want: Dict[str, Any]) -> str:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    parts = []
    if missing:
        parts.append(f"missing {missing[:5]}{'...' if len(missing) > 5 else ''}")
    if extra:
        parts.append(f"unexpected {extra[:5]}{'...' if len(extra) > 5 else ''}")
    return ", ".join(parts)
