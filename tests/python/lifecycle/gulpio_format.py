"""GulpIO2's on-disk format, written and read in plain Python, independently of gulpdb.

Written from GulpIO2's format rules (willprice/GulpIO2, ``gulpio2/fileio.py``),
not from gulpdb's code, and checked against the directories GulpIO2 itself
wrote in tests/fixtures (see ``check_against_fixture``):

* a chunk is ``data_<N>.gulp`` (frames) and ``meta_<N>.gmeta`` (JSON);
* a frame record is the JPEG bytes followed by ``pad = (4 - len % 4) % 4``
  zero bytes; its ``frame_info`` entry is ``[offset, pad, len + pad]``;
* the ``.gmeta`` is ``json.dump`` (default separators ``", "`` and ``": "``,
  ASCII escapes, no trailing newline) of an ordered dict
  ``{id: {"frame_info": [...], "meta_data": [meta, ...]}}`` in first-append
  order; appending an id again to the same chunk adds frames and a second
  ``meta_data`` entry;
* readers pair the sorted ``data*.gulp`` and ``meta*.gmeta`` names (equal
  counts) and read frame bytes ``[offset, offset + length - pad)``;
* ``label2idx.json`` is ``json.dump`` of the label map.

The reader works on a local directory or on an S3 prefix (through boto3),
so that a bucket gulpdb pushed can be read as the GulpIO directory it claims
to be.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Tuple


def pad_of(length: int) -> int:
    return (4 - length % 4) % 4


class GulpioFormatError(AssertionError):
    """The files break GulpIO's format rules (a GulpIO reader would fail or read garbage)."""


def write_chunk(directory: str, number: int,
                videos: Sequence[Tuple[str, Sequence[bytes], Any]]) -> Tuple[str, str]:
    """Writes ``data_<number>.gulp`` and ``meta_<number>.gmeta`` as GulpIO2's
    ChunkWriter does; ``videos`` are ``(id, jpeg_frames, meta)`` in append order
    (an id given twice is appended twice). Returns the two file names."""
    meta_dict: "OrderedDict[str, OrderedDict]" = OrderedDict()
    data_name, meta_name = f"data_{number}.gulp", f"meta_{number}.gmeta"
    with open(os.path.join(directory, data_name), "wb") as fp:
        for id_, frames, meta in videos:
            id_ = str(id_)
            if id_ not in meta_dict:
                meta_dict[id_] = OrderedDict([("frame_info", []), ("meta_data", [])])
            meta_dict[id_]["meta_data"].append(meta)
            for jpeg in frames:
                loc = fp.tell()
                pad = pad_of(len(jpeg))
                record = jpeg + b"\0" * pad
                fp.write(record)
                meta_dict[id_]["frame_info"].append([loc, pad, len(record)])
    with open(os.path.join(directory, meta_name), "w", encoding="utf-8") as fp:
        json.dump(meta_dict, fp)
    return data_name, meta_name


def write_label_map(directory: str, label2idx: Dict[str, int]) -> None:
    with open(os.path.join(directory, "label2idx.json"), "w", encoding="utf-8") as fp:
        json.dump(label2idx, fp)


# ---- reading -----------------------------------------------------------------------------


class LocalFiles:
    """The files of a local directory; with ``pair_with``, only the data files
    whose chunk number has a ``.gmeta`` in that directory (the data files of
    an ``export -o``)."""

    def __init__(self, directory: str, pair_with: Optional[str] = None) -> None:
        self.directory = directory
        self.pair_with = pair_with

    def names(self) -> List[str]:
        names = [n for n in os.listdir(self.directory)
                 if os.path.isfile(os.path.join(self.directory, n))]
        if self.pair_with is not None:
            numbers = {_number(n) for n in os.listdir(self.pair_with) if _META_RE.match(n)}
            names = [n for n in names if _DATA_RE.match(n) and _number(n) in numbers]
        return names

    def read(self, name: str) -> bytes:
        with open(os.path.join(self.directory, name), "rb") as f:
            return f.read()

    def describe(self, name: str) -> str:
        return os.path.join(self.directory, name)


class BucketFiles:
    """The objects directly under an S3 prefix (boto3 client)."""

    def __init__(self, client: Any, bucket: str, prefix: str) -> None:
        self.client, self.bucket, self.prefix = client, bucket, prefix.rstrip("/") + "/"

    def names(self) -> List[str]:
        names: List[str] = []
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix, Delimiter="/"):
            for obj in page.get("Contents", []):
                names.append(obj["Key"][len(self.prefix):])
        return names

    def read(self, name: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=self.prefix + name)["Body"].read()

    def describe(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}{name}"


_DATA_RE = re.compile(r"^data.*\.gulp$")
_META_RE = re.compile(r"^meta.*\.gmeta$")


def _number(name: str) -> Optional[int]:
    m = re.search(r"\d+", name)
    return int(m.group()) if m else None


class GulpioView:
    """What a GulpIO reader sees: id -> (frames as bytes, meta_data list)."""

    def __init__(self) -> None:
        self.videos: Dict[str, Tuple[List[bytes], List[Any]]] = {}
        self.chunk_of: Dict[str, str] = {}
        self.label2idx: Optional[Dict[str, int]] = None
        self.pairs: List[Tuple[str, str]] = []


def read_directory(files: Any, data_files: Optional[Any] = None, *,
                   duplicates: str = "error") -> GulpioView:
    """Reads a GulpIO directory as GulpIO2 does.

    ``files`` holds the ``.gmeta`` files (and label2idx.json); ``data_files``
    the ``.gulp`` files when they live elsewhere (an ``export -o OUT`` writes
    only the ``.gmeta`` files). An id found in two chunks is a
    GulpioFormatError (``duplicates="error"``), or the later chunk wins
    (``"last"``, GulpIO2's merged_meta_dict). Raises GulpioFormatError for
    anything GulpIO2 would refuse or read wrongly.
    """
    data_files = data_files or files
    meta_names = sorted(n for n in files.names() if _META_RE.match(n))
    data_names = sorted(n for n in data_files.names() if _DATA_RE.match(n))
    if len(meta_names) != len(data_names):
        raise GulpioFormatError(
            f"{len(data_names)} data*.gulp files {data_names} but {len(meta_names)} "
            f"meta*.gmeta files {meta_names} in {files.describe('')}: GulpIO2 refuses the "
            "directory")
    view = GulpioView()
    for data_name, meta_name in zip(data_names, meta_names):
        if _number(data_name) != _number(meta_name):
            raise GulpioFormatError(
                f"GulpIO2 pairs {data_name} with {meta_name} (sorted names), whose chunk "
                "numbers differ: it would read one chunk's frames with another's .gmeta")
        view.pairs.append((data_name, meta_name))
        meta_text = files.read(meta_name).decode("utf-8")
        try:
            meta_dict = json.loads(meta_text, object_pairs_hook=OrderedDict)
        except ValueError as e:
            raise GulpioFormatError(f"{files.describe(meta_name)} is not JSON: {e}") from e
        data = data_files.read(data_name)
        for id_, entry in meta_dict.items():
            if set(entry) != {"frame_info", "meta_data"}:
                raise GulpioFormatError(
                    f"{files.describe(meta_name)}: id {id_!r} has keys {sorted(entry)}")
            frames = []
            for info in entry["frame_info"]:
                if len(info) != 3:
                    raise GulpioFormatError(f"{files.describe(meta_name)}: frame_info {info}")
                loc, pad, length = info
                if not (0 <= pad <= 3 and pad <= length and loc >= 0
                        and loc + length <= len(data)):
                    raise GulpioFormatError(
                        f"{files.describe(meta_name)}: id {id_!r} frame {info} does not fit "
                        f"{data_files.describe(data_name)} ({len(data)} bytes)")
                record = data[loc:loc + length]
                if record[length - pad:] != b"\0" * pad:
                    raise GulpioFormatError(
                        f"{data_files.describe(data_name)}: id {id_!r} frame {info}: pad bytes "
                        "are not zero")
                frames.append(record[:length - pad])
            if id_ in view.videos and duplicates == "error":
                raise GulpioFormatError(
                    f"id {id_!r} is in {view.chunk_of[id_]} and in {meta_name}")
            view.videos[id_] = (frames, list(entry["meta_data"]))
            view.chunk_of[id_] = meta_name
    if "label2idx.json" in files.names():
        view.label2idx = json.loads(files.read("label2idx.json").decode("utf-8"))
    return view


def gmeta_text(meta_dict: Dict[str, Any]) -> str:
    """A ``.gmeta`` as GulpIO2 writes it (for byte comparisons)."""
    return json.dumps(meta_dict)


def check_against_fixture(fixture_dir: str) -> None:
    """Reads a GulpIO-written fixture (every frame and meta_data must match its
    manifest) and re-writes each chunk with ``write_chunk`` (the bytes must be
    the fixture's exactly; chunks holding an id appended twice are only read).
    Raises AssertionError if not."""
    with open(os.path.join(fixture_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    files = LocalFiles(fixture_dir)
    view = read_directory(files)
    items = manifest["items"]
    if sorted(view.videos) != sorted(item["id"] for item in items):
        raise AssertionError(f"{fixture_dir}: the reader finds other ids than the manifest")
    for item in items:
        frames, meta_data = view.videos[item["id"]]
        digests = [hashlib.sha256(f).hexdigest() for f in frames]
        if digests != [f["jpeg_sha256"] for f in item["frames"]]:
            raise AssertionError(f"{fixture_dir}: frames of {item['id']!r} differ")
        if json.dumps(meta_data) != json.dumps(item["meta_data"]):
            raise AssertionError(f"{fixture_dir}: meta_data of {item['id']!r} differs")
    for chunk in manifest["chunks"]:
        meta_text = files.read(chunk["meta_file"]).decode("utf-8")
        meta_dict = json.loads(meta_text, object_pairs_hook=OrderedDict)
        if gmeta_text(meta_dict) != meta_text:
            raise AssertionError(f"{chunk['meta_file']}: json.dump does not give its bytes")
        data = files.read(chunk["data_file"])
        videos = []
        for id_, entry in meta_dict.items():
            frames = [data[loc:loc + length - pad] for loc, pad, length in entry["frame_info"]]
            if len(entry["meta_data"]) != 1:
                continue  # appended twice: not a layout write_chunk makes in one call
            videos.append((id_, frames, entry["meta_data"][0]))
        if len(videos) != len(meta_dict):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            data_name, meta_name = write_chunk(tmp, chunk["chunk_id"], videos)
            with open(os.path.join(tmp, data_name), "rb") as f:
                if f.read() != data:
                    raise AssertionError(f"{chunk['data_file']}: write_chunk gives other bytes")
            with open(os.path.join(tmp, meta_name), encoding="utf-8") as f:
                if f.read() != meta_text:
                    raise AssertionError(f"{chunk['meta_file']}: write_chunk gives other bytes")
