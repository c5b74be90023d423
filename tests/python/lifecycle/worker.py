#!/usr/bin/python3
"""A worker process of the lifecycle test: runs gulpdb's Python API on request.

Protocol (stdin/stdout, binary): each request and each answer is an 8-byte
little-endian length followed by a pickle. A request is ``(op, kwargs, env)``:
``env`` entries are set in os.environ first (None: unset), since gulpdb reads
GULPDB_CACHE, AWS_* and GULPDB_TEST_FS_TYPE at each open. An answer is
``("ok", result)`` or ``("error", (type name, message, traceback))``. If gulpdb
kills this process by a signal, the parent sees it (procs.Worker).

Every dataset is closed before the answer, so nothing is held between
requests but what gulpdb itself keeps per process.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import traceback
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gulpdb  # noqa: E402
from lifecycle.labels import label_of  # noqa: E402


def raw_decoder(jpeg: bytes) -> bytes:
    """A GulpDirectory jpeg_decoder that returns the stored bytes themselves."""
    return bytes(jpeg)


def _read_all(ds: gulpdb.Dataset, pixels: bool) -> Dict[str, Any]:
    ids = ds.ids()
    videos: Dict[str, Any] = {}
    for id_ in ids:
        entry: Dict[str, Any] = {
            "meta_data": ds.meta_data(id_),
            "meta": ds.meta(id_),
            "frame_count": ds.frame_count(id_),
            "jpegs": ds.read_jpegs(id_),
            "contains": id_ in ds,
        }
        if pixels:
            entry["pixels"] = [np.array(f) for f in ds.read(id_, dct="accurate", as_list=True)]
        videos[id_] = entry
    splits = {name: ds.split(name) for name in ds.splits()}
    return {"ids": ids, "len": len(ds), "videos": videos, "splits": splits,
            "meta_indexes": sorted(ds.meta_indexes())}


def op_read_dataset(source: str, pixels: bool = True, **open_kwargs: Any) -> Dict[str, Any]:
    with gulpdb.Dataset(source, **open_kwargs) as ds:
        out = _read_all(ds, pixels)
        if ds.is_remote:
            info = ds.remote_info or {}
            out["remote"] = {"generation": ds.generation,
                             "snapshot_downloaded": info.get("snapshot_downloaded")}
        return out


def op_read_gulpdirectory(source: str) -> Dict[str, Any]:
    gd = gulpdb.GulpDirectory(source, jpeg_decoder=raw_decoder, quiet=True)
    merged = {id_: {"frame_info": [list(f) for f in v["frame_info"]],
                    "meta_data": list(v["meta_data"])}
              for id_, v in gd.merged_meta_dict.items()}
    items: Dict[str, Any] = {}
    for id_ in merged:
        frames, meta = gd[id_]
        items[id_] = {"frames": [bytes(f) for f in frames], "meta": meta}
    iterated: List[str] = []
    for chunk in gd:
        for frames, meta in chunk:
            iterated.append(meta.get("id") if isinstance(meta, dict) else None)
    ds = gd.dataset
    if ds is not None:
        ds.close()
    return {"merged": merged, "items": items, "num_chunks": gd.num_chunks,
            "iterated": len(iterated)}


def op_write(path: str, videos: List[Any], on_duplicate: str = "error",
             create: Optional[Dict[str, Any]] = None) -> int:
    with gulpdb.Dataset(path, "a", **(create or {})) as ds:
        with ds.writer(on_duplicate=on_duplicate) as w:
            appended = 0
            for id_, frames, meta in videos:
                appended += bool(w.append(id_, list(frames), meta))
    return appended


def op_remove(path: str, ids: List[str]) -> int:
    with gulpdb.Dataset(path, "r+") as ds:
        return ds.remove(list(ids))


def op_chunks(path: str) -> List[Dict[str, Any]]:
    with gulpdb.Dataset(path) as ds:
        return [{"number": c.number, "file_name": c.file_name, "meta_file": c.meta_file,
                 "live_videos": c.live_videos} for c in ds.chunks()]


def op_set_split(path: str, name: str, ids: List[str]) -> None:
    with gulpdb.Dataset(path, "r+") as ds:
        with ds.writer() as w:
            w.set_split(name, ids)


def op_push(path: str, url: str, layout: str = "auto") -> Dict[str, Any]:
    return gulpdb.push(path, url, jobs=2, layout=layout)


def op_import_gulpio(path: str, **kwargs: Any) -> Dict[str, Any]:
    return gulpdb.import_gulpio(path, **kwargs)


def op_view(path: str, frame_of: Optional[str] = None) -> Dict[str, Any]:
    """What the viewer's server answers over HTTP (gulpdb.view): every page of
    the grid, each split's, and frame 0 of `frame_of` as sent to the page at
    its own size (the stored JPEG)."""
    import http.client
    import json
    import urllib.parse

    with gulpdb.view(path) as viewer:
        token = viewer.url.split("token=")[1]

        def get(route: str) -> bytes:
            conn = http.client.HTTPConnection("127.0.0.1", viewer.port, timeout=60)
            try:
                conn.request("GET", route + ("&" if "?" in route else "?") + "token=" + token)
                response = conn.getresponse()
                body = response.read()
                if response.status != 200:
                    raise RuntimeError(f"GET {route}: HTTP {response.status}: {body[:300]!r}")
                return body
            finally:
                conn.close()

        def listing(extra: str) -> List[Dict[str, Any]]:
            videos: List[Dict[str, Any]] = []
            while True:
                page = json.loads(get(f"/api/videos?count=500&start={len(videos)}{extra}"))
                videos += page["videos"]
                if not page["videos"] or len(videos) >= page["total"]:
                    return videos

        info = json.loads(get("/api/info"))
        out: Dict[str, Any] = {
            "videos": info["videos"],
            "grid": [(v["id"], v["frames"], v["meta"]) for v in listing("")],
            "splits": {s["name"]: [v["id"] for v in listing("&split=" + urllib.parse.quote(
                s["name"], safe=""))] for s in info["splits"]},
        }
        if frame_of is not None:
            out["frame0"] = get("/api/frame?max=0&frame=0&id=" + urllib.parse.quote(
                frame_of, safe=""))
        return out


def op_pickle_open(kind: str, source: str) -> bytes:
    if kind == "Dataset":
        obj: Any = gulpdb.Dataset(source)
        len(obj)
    else:
        import gulpdb.torch as gulpdb_torch

        obj = gulpdb_torch.VideoDataset(source, label=label_of, dct="accurate")
        len(obj)
    return pickle.dumps(obj)


def op_pickle_read(blob: bytes) -> Dict[str, Any]:
    obj = pickle.loads(blob)
    if isinstance(obj, gulpdb.Dataset):
        try:
            return {"kind": "Dataset", **_read_all(obj, pixels=False)}
        finally:
            obj.close()
    items = []
    for i in range(len(obj)):
        try:
            clip, label = obj[i]
        except KeyError as e:  # removed since the reader was made: its ids are fixed
            items.append((obj.ids[i], None, str(e)))
            continue
        items.append((obj.ids[i], clip.numpy().copy(), label))
    return {"kind": "VideoDataset", "items": items}


OPS = {name[3:]: fn for name, fn in globals().items() if name.startswith("op_")}


def main() -> None:
    requests = sys.stdin.buffer
    # Answers go to a private copy of stdout; anything printed goes to stderr.
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    while True:
        header = requests.read(8)
        if len(header) < 8:
            return
        (size,) = struct.unpack("<Q", header)
        op, kwargs, env = pickle.loads(requests.read(size))
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        try:
            answer = ("ok", OPS[op](**kwargs))
        except Exception as e:  # reported to the parent, which judges it
            answer = ("error", (type(e).__name__, str(e), traceback.format_exc(limit=4)))
        data = pickle.dumps(answer)
        answers.write(struct.pack("<Q", len(data)) + data)
        answers.flush()


if __name__ == "__main__":
    main()
