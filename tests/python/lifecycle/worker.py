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
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gulpdb  # noqa: E402
from lifecycle.decay import flip_bit  # noqa: E402
from lifecycle.labels import label_of  # noqa: E402


def raw_decoder(jpeg: bytes) -> bytes:
    """A GulpDirectory jpeg_decoder that returns the stored bytes themselves."""
    return bytes(jpeg)


def _read_all(ds: gulpdb.Dataset, pixels: bool, skip: Sequence[str] = ()) -> Dict[str, Any]:
    """Everything of every video; only the index entries of those in ``skip``
    (videos with a frame damaged on disk, which read_damaged reads)."""
    ids = ds.ids()
    videos: Dict[str, Any] = {}
    for id_ in ids:
        entry: Dict[str, Any] = {
            "meta_data": ds.meta_data(id_),
            "meta": ds.meta(id_),
            "frame_count": ds.frame_count(id_),
            "contains": id_ in ds,
        }
        if id_ not in skip:
            entry["jpegs"] = ds.read_jpegs(id_)
            if pixels:
                entry["pixels"] = [np.array(f) for f in ds.read(id_, dct="accurate", as_list=True)]
        videos[id_] = entry
    splits = {name: ds.split(name) for name in ds.splits()}
    return {"ids": ids, "len": len(ds), "videos": videos, "splits": splits,
            "meta_indexes": sorted(ds.meta_indexes())}


def op_read_dataset(source: str, pixels: bool = True, skip: Sequence[str] = (),
                    **open_kwargs: Any) -> Dict[str, Any]:
    with gulpdb.Dataset(source, **open_kwargs) as ds:
        out = _read_all(ds, pixels, skip)
        if ds.is_remote:
            info = ds.remote_info or {}
            out["remote"] = {"generation": ds.generation,
                             "snapshot_downloaded": info.get("snapshot_downloaded")}
        return out


def op_read_gulpdirectory(source: str, skip: Sequence[str] = ()) -> Dict[str, Any]:
    """GulpIO2's API; the frames of the videos in ``skip`` are not read."""
    gd = gulpdb.GulpDirectory(source, jpeg_decoder=raw_decoder, quiet=True)
    merged = {id_: {"frame_info": [list(f) for f in v["frame_info"]],
                    "meta_data": list(v["meta_data"])}
              for id_, v in gd.merged_meta_dict.items()}
    items: Dict[str, Any] = {}
    for id_ in merged:
        if id_ in skip:
            continue
        frames, meta = gd[id_]
        items[id_] = {"frames": [bytes(f) for f in frames], "meta": meta}
    iterated: List[str] = []
    for chunk in gd:
        accepted = None if not skip else [i for i in chunk.meta_dict if i not in skip]
        for frames, meta in chunk.iter_all(accepted_ids=accepted):
            iterated.append(meta.get("id") if isinstance(meta, dict) else None)
    ds = gd.dataset
    if ds is not None:
        ds.close()
    return {"merged": merged, "items": items, "num_chunks": gd.num_chunks,
            "iterated": len(iterated)}


def op_frame_site(path: str, id: str, frame: int) -> Dict[str, Any]:
    """Where frame ``frame`` of video ``id`` lies: its chunk file, offset and
    JPEG size, and whether the index stores its CRC-32C."""
    with gulpdb.Dataset(path) as ds:
        info = ds.info(id)
        chunk = next(c for c in ds.chunks() if c.number == info.chunk)
        offset, pad, length = info.frame_info[frame]
        return {"file": os.path.join(path, chunk.file_name), "offset": offset,
                "jpeg_size": length - pad, "checksummed": bool(info.checksums)}


def _outcome(read: Any) -> Tuple[str, Any]:
    try:
        return ("ok", read())
    except Exception as e:  # judged by the parent
        return ("error", (type(e).__name__, str(e)))


def op_read_damaged(source: str, id: str, intact: List[int], other: Optional[str],
                    flip: Optional[Tuple[str, int, int]] = None) -> Dict[str, Any]:
    """Every Python read path of video ``id``, which has a damaged frame: each
    must fail (the outcomes are returned, the parent judges them); then its
    ``intact`` frames, another video, and the damaged bytes read without
    checks. With ``flip`` (file, byte, bit) the video is read whole first and
    the bit flipped after: the reads are then a reader's opened before."""
    import gulpdb.torch as gulpdb_torch

    with gulpdb.Dataset(source) as ds:
        if flip is not None:
            ds.read_jpegs(id)
            flip_bit(*flip)
        out = {
            "py read": _outcome(lambda: ds.read(id, dct="accurate").shape),
            "py read_jpegs": _outcome(lambda: len(ds.read_jpegs(id))),
            "py read_batch": _outcome(lambda: len(ds.read_batch([id]))),
            "py VideoDataset item": _outcome(
                lambda: tuple(gulpdb_torch.VideoDataset(ds, ids=[id], dct="accurate")[0].shape)),
            "GulpDirectory gd[id]": _outcome(
                lambda: len(gulpdb.GulpDirectory(source, quiet=True)[id][0])),
        }
        intact_jpegs = ds.read_jpegs(id, intact) if intact else []
        other_jpegs = ds.read_jpegs(other) if other is not None else None
    with gulpdb.Dataset(source, verify_checksums=False) as unchecked:
        raw = unchecked.read_jpegs(id)
    return {"outcomes": out, "intact": intact_jpegs, "other": other_jpegs, "unchecked": raw}


def op_write(path: str, videos: List[Any], on_duplicate: str = "error",
             create: Optional[Dict[str, Any]] = None, commit_each: bool = False) -> int:
    """One writer; the with-block's end commits the last (or only) batch. With
    commit_each, every video but the last is a commit of its own first."""
    with gulpdb.Dataset(path, "a", **(create or {})) as ds:
        with ds.writer(on_duplicate=on_duplicate) as w:
            appended = 0
            for k, (id_, frames, meta) in enumerate(videos):
                appended += bool(w.append(id_, list(frames), meta))
                if commit_each and k + 1 < len(videos):
                    w.commit()
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


def op_select(path: str, query: str) -> List[str]:
    with gulpdb.Dataset(path) as ds, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a key no video has: the answer is what is checked
        return ds.select(query)


def op_push(path: str, url: str, layout: str = "auto") -> Dict[str, Any]:
    return gulpdb.push(path, url, jobs=2, layout=layout)


def op_import_gulpio(path: str, **kwargs: Any) -> Dict[str, Any]:
    return gulpdb.import_gulpio(path, **kwargs)


def op_view(path: str, frame_of: Optional[str] = None,
            damaged: Optional[Tuple[str, int]] = None) -> Dict[str, Any]:
    """What the viewer's server answers over HTTP (gulpdb.view): every page of
    the grid, each split's, frame 0 of `frame_of` as sent to the page at its
    own size (the stored JPEG), and the status and body of a request for
    `damaged` (an id and frame whose bytes no longer match their CRC)."""
    import http.client
    import json
    import urllib.parse

    with gulpdb.view(path) as viewer:
        token = viewer.url.split("token=")[1]

        def request(route: str) -> Tuple[int, bytes]:
            conn = http.client.HTTPConnection("127.0.0.1", viewer.port, timeout=60)
            try:
                conn.request("GET", route + ("&" if "?" in route else "?") + "token=" + token)
                response = conn.getresponse()
                return response.status, response.read()
            finally:
                conn.close()

        def get(route: str) -> bytes:
            status, body = request(route)
            if status != 200:
                raise RuntimeError(f"GET {route}: HTTP {status}: {body[:300]!r}")
            return body

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
        if damaged is not None:
            status, body = request(f"/api/frame?max=0&frame={damaged[1]}&id=" +
                                   urllib.parse.quote(damaged[0], safe=""))
            out["damaged"] = (status, body.decode("utf-8", "replace"))
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


def _samplers(path: str, world: int, **kw: Any) -> List[Any]:
    import gulpdb.torch as gulpdb_torch

    videos = gulpdb_torch.VideoDataset(path)
    return [gulpdb_torch.VideoSampler(videos, num_replicas=world, rank=r, **kw)
            for r in range(world)]


def op_sampler_save(path: str, world: int, percent: int, **kw: Any) -> Dict[str, Any]:
    """`world` samplers over a VideoDataset of ``path`` each take ``percent``% of
    their epoch 1: the state they save, the ids they took and the epoch's ids."""
    samplers = _samplers(path, world, **kw)
    ids = samplers[0].dataset.ids
    taken, states = [], []
    for s in samplers:
        s.set_epoch(1)
        k = len(s) * percent // 100
        got = list(s)[:k]
        taken += [ids[i] for i in got]
        states.append(s.state_dict(consumed=k))
    if any(st != states[0] for st in states):
        raise AssertionError(f"the ranks' states differ: {states}")
    return {"state": states[0], "taken": taken, "items": list(ids)}


def op_sampler_resume(path: str, world: int, state: Dict[str, Any],
                      grow: Optional[str]) -> Dict[str, Any]:
    """`world` samplers over a VideoDataset of ``path`` resume ``state``: the ids
    each takes to the end of the saved epoch, and in the next epoch."""
    samplers = _samplers(path, world)
    ids = samplers[0].dataset.ids
    rest, following = [], []
    for s in samplers:
        s.load_state_dict(state, grow=grow)
        s.set_epoch(state["epoch"])
        rest.append([ids[i] for i in s])
        s.set_epoch(state["epoch"] + 1)
        following.append([ids[i] for i in s])
    return {"rest": rest, "next": following}


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
