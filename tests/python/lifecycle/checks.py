"""Every read path, compared with the model.

Each function reads a dataset one way (the command line, Python's Dataset,
the GulpIO2-compatible API, an S3 URL, a GulpIO directory read by the
independent reader in gulpio_format, a pickled reader in another process, a
published snapshot) and raises procs.Failure ("mismatch") at the first
difference, naming the read path, the id and what differed. Each counts its
read path in the session's counters.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import gulpio_format
from .model import DatasetModel, Video, decode_reference, describe_diff, meta_text
from .procs import Failure
from .session import Session


def _fail(path: str, text: str) -> Failure:
    return Failure("mismatch", path, text)


def expect_ids(path: str, got: Sequence[str], want: DatasetModel) -> None:
    if len(set(got)) != len(got):
        dups = sorted({i for i in got if list(got).count(i) > 1})
        raise _fail(path, f"ids listed more than once: {dups[:5]}")
    if set(got) != set(want.videos):
        raise _fail(path, "ids differ from the model: " + describe_diff(
            {i: 1 for i in got}, want.videos))


def expect_frames(path: str, id_: str, got: Sequence[bytes], video: Video) -> None:
    got = [bytes(g) for g in got]
    if len(got) != len(video.frames):
        raise _fail(path, f"id {id_!r}: {len(got)} frames, the model has {len(video.frames)}")
    for i, (g, w) in enumerate(zip(got, video.frames)):
        if g != w:
            first = next((k for k, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
            raise _fail(path, f"id {id_!r} frame {i}: {len(g)} bytes differ from the model's "
                        f"{len(w)} (first difference at byte {first})")


def expect_meta_data(path: str, id_: str, got: Sequence[Any], video: Video) -> None:
    got_text = [meta_text(m) for m in got]
    if tuple(got_text) != video.meta_data:
        raise _fail(path, f"id {id_!r}: meta_data {got_text} but the model has "
                    f"{list(video.meta_data)}")


def expect_meta(path: str, id_: str, got: Any, video: Video) -> None:
    if meta_text(got) != (video.meta_data[0] if video.meta_data else "null"):
        raise _fail(path, f"id {id_!r}: meta {meta_text(got)} but the model has "
                    f"{video.meta_data[0] if video.meta_data else None}")


def expect_splits(path: str, got: Dict[str, List[str]], want: DatasetModel) -> None:
    if got != want.splits:
        raise _fail(path, f"splits {got} but the model has {want.splits}")


# ---- the command line -------------------------------------------------------------------


def cli_listing(s: Session, target: str, want: DatasetModel, prefix: str = "",
                env: Optional[Dict[str, str]] = None,
                chunk_of: Optional[Dict[str, int]] = None) -> List[str]:
    """`gulpdb ls --json`: ids and frame counts; returns the ids in listed order
    (and fills ``chunk_of`` with each id's chunk number)."""
    path = prefix + "cli ls"
    r = s.cli.run("ls", target, "--json", env=env, path=path)
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    ids = [row["id"] for row in rows]
    expect_ids(path, ids, want)
    for row in rows:
        if row["frames"] != len(want.videos[row["id"]].frames):
            raise _fail(path, f"id {row['id']!r}: {row['frames']} frames, the model has "
                        f"{len(want.videos[row['id']].frames)}")
    if chunk_of is not None:
        chunk_of.clear()
        chunk_of.update({row["id"]: row["chunk"] for row in rows})
    s.counters.reads[path] += 1
    return ids


def cli_info(s: Session, target: str, want: DatasetModel) -> None:
    path = "cli info"
    info = json.loads(s.cli.run("info", target, "--json", path=path).stdout)
    frames = sum(len(v.frames) for v in want.videos.values())
    if info["videos"] != len(want.videos) or info["frames"] != frames:
        raise _fail(path, f"{info['videos']} videos and {info['frames']} frames, the model has "
                    f"{len(want.videos)} and {frames}")
    sizes = {name: len(ids) for name, ids in want.splits.items()}
    if info.get("splits", {}) != sizes:
        raise _fail(path, f"splits {info.get('splits')} but the model has {sizes}")
    if sorted(info.get("meta_indexes", [])) != sorted(want.meta_keys):
        raise _fail(path, f"meta indexes {info.get('meta_indexes')} but the model has "
                    f"{sorted(want.meta_keys)}")
    s.counters.reads[path] += 1


def cli_show(s: Session, target: str, id_: str, want: DatasetModel, prefix: str = "",
             env: Optional[Dict[str, str]] = None) -> None:
    path = prefix + "cli show"
    shown = json.loads(s.cli.run("show", target, id_, "--json", env=env, path=path).stdout)
    video = want.videos[id_]
    if shown["id"] != id_:
        raise _fail(path, f"asked for {id_!r}, shown {shown['id']!r}")
    expect_meta_data(path, id_, shown["meta_data"], video)
    if len(shown["frame_info"]) != len(video.frames):
        raise _fail(path, f"id {id_!r}: {len(shown['frame_info'])} frame_info entries, the model "
                    f"has {len(video.frames)} frames")
    for (offset, pad, length), frame in zip(shown["frame_info"], video.frames):
        if length - pad != len(frame) or pad != gulpio_format.pad_of(len(frame)):
            raise _fail(path, f"id {id_!r}: frame_info {[offset, pad, length]} for a frame of "
                        f"{len(frame)} bytes")
    s.counters.reads[path] += 1


def cli_extract(s: Session, target: str, id_: str, want: DatasetModel, out: str,
                prefix: str = "", env: Optional[Dict[str, str]] = None) -> None:
    path = prefix + "cli extract"
    s.cli.run("extract", target, id_, "-o", out, env=env, path=path)
    names = sorted(os.listdir(out))
    frames = []
    for name in names:
        with open(os.path.join(out, name), "rb") as f:
            frames.append(f.read())
    expect_frames(path, id_, frames, want.videos[id_])
    s.counters.reads[path] += 1


def cli_check(s: Session, target: str, prefix: str = "",
              env: Optional[Dict[str, str]] = None,
              damaged: Optional[Dict[str, Dict[int, bytes]]] = None) -> None:
    """`gulpdb check --deep`: healthy, or with damaged frames exactly those
    reported (a CRC-32C mismatch each) and exit status 1."""
    path = prefix + "cli check --deep"
    r = s.cli.run("check", target, "--deep", "--json", "-q", env=env, expect=None, path=path)
    try:
        report = json.loads(r.stdout)
    except ValueError:
        report = None
    if damaged:
        problems = report.get("problems", []) if report else []
        wanted = {f"id '{i}' frame {k} " for i, frames in damaged.items() for k in frames}
        found = {w for w in wanted for p in problems
                 if w in p["where"] + " " and "CRC-32C" in p["what"]}
        others = [p for p in problems
                  if not any(w in p["where"] + " " for w in wanted)]
        if r.returncode != 1 or not report or report.get("healthy") or found != wanted or others:
            raise Failure("exit", path + " (damaged)", f"{r.describe()}; expected exactly the "
                          f"damaged frames {sorted(wanted)}; problems: {problems}")
        s.counters.reads[path + " (damaged)"] += 1
        return
    if r.returncode != 0 or not report or not report.get("healthy"):
        problems = report.get("problems") if report else None
        raise Failure("exit", path, f"{r.describe()}; problems: {problems}")
    s.counters.reads[path] += 1


def damaged_reads(s: Session, target: str, want: DatasetModel, out: str,
                  env: Optional[Dict[str, Optional[str]]] = None) -> None:
    """Each video with a damaged frame, by every read path: Python's read,
    read_jpegs, read_batch, a VideoDataset item, GulpDirectory gd[id] and the
    command's extract fail, naming the video and the damaged frame; the
    video's other frames (by read_jpegs and by extract --frames) and another
    video read as written; verify_checksums=False reads the damaged bytes."""
    intact_ids = sorted(i for i in want.videos if i not in want.damaged)
    cli_env = {k: v for k, v in (env or {}).items() if v is not None}
    for id_, frames in sorted(want.damaged.items()):
        video = want.videos[id_]
        k = min(frames)
        needle = f"'{id_}' frame {k}"
        intact = [i for i in range(len(video.frames)) if i not in frames]
        other = intact_ids[0] if intact_ids else None
        got = s.reader.call("read_damaged", "damaged: py reads", env=env, source=target, id=id_,
                            intact=intact, other=other)
        for path, (status, value) in got["outcomes"].items():
            if status != "error" or value[0] != "CorruptionError" or needle not in value[1] or (
                    "checksum mismatch" not in value[1]):
                raise _fail("damaged: " + path, f"id {id_!r} frame {k} is damaged on disk, yet "
                            f"the read gave {status} {value!r}")
            s.counters.reads["damaged: " + path] += 1
        expect_frames("damaged: py read_jpegs (intact frames)", id_, got["intact"],
                      Video(tuple(video.frames[i] for i in intact), video.meta_data))
        if other is not None:
            expect_frames("damaged: py read_jpegs (another video)", other, got["other"],
                          want.videos[other])
        unchecked = tuple(want.damaged[id_].get(i, f) for i, f in enumerate(video.frames))
        expect_frames("damaged: verify_checksums=False", id_, got["unchecked"],
                      Video(unchecked, video.meta_data))
        s.counters.reads["damaged: verify_checksums=False"] += 1

        r = s.cli.run("extract", target, id_, "-o", out + "-all", env=cli_env, expect=None,
                      path="damaged: cli extract")
        if r.returncode != 1 or needle not in r.stderr or "checksum mismatch" not in r.stderr:
            raise Failure("exit", "damaged: cli extract", f"id {id_!r} frame {k} is damaged on "
                          f"disk: {r.describe()}")
        if os.path.exists(out + "-all"):
            raise _fail("damaged: cli extract", "a failed extract left its output directory")
        s.counters.reads["damaged: cli extract"] += 1
        if intact:
            s.cli.run("extract", target, id_, "-o", out, "--frames",
                      ",".join(str(i) for i in intact), env=cli_env,
                      path="damaged: cli extract --frames (intact)")
            names = sorted(os.listdir(out))
            extracted = []
            for name in names:
                with open(os.path.join(out, name), "rb") as f:
                    extracted.append(f.read())
            expect_frames("damaged: cli extract --frames (intact)", id_, extracted,
                          Video(tuple(video.frames[i] for i in intact), video.meta_data))
            s.counters.reads["damaged: cli extract --frames (intact)"] += 1


def matches_query(meta: Any, key: str, value: str) -> bool:
    """README `ls --where KEY=VALUE`: VALUE is JSON when it parses as JSON, else a
    string; a JSON number or literal also matches the string of its text."""
    if not isinstance(meta, dict) or key not in meta:
        return False
    have = meta[key]
    try:
        parsed = json.loads(value)
        is_json = True
    except ValueError:
        parsed, is_json = value, False
    if not is_json:
        return have == value
    if meta_text(have) == meta_text(parsed):
        return True
    return not isinstance(parsed, (str, list, dict)) and have == value


def cli_where(s: Session, target: str, key: str, value: str, want: DatasetModel) -> None:
    path = "cli ls --where"
    r = s.cli.run("ls", target, "--json", "--where", f"{key}={value}", path=path)
    got = sorted(json.loads(line)["id"] for line in r.stdout.splitlines() if line.strip())
    expected = sorted(i for i, v in want.videos.items() if matches_query(v.meta, key, value))
    if got != expected:
        raise _fail(path, f"--where {key}={value}: {got}, the model has {expected}")
    s.counters.reads[path] += 1


def cli_index_keys(s: Session, target: str, want: DatasetModel) -> None:
    path = "cli index"
    got = json.loads(s.cli.run("index", target, "--json", path=path).stdout)
    if sorted(got) != sorted(want.meta_keys):
        raise _fail(path, f"meta indexes {got}, the model has {sorted(want.meta_keys)}")
    s.counters.reads[path] += 1


def cli_splits(s: Session, target: str, want: DatasetModel) -> None:
    path = "cli split"
    sizes = json.loads(s.cli.run("split", target, "--json", path=path).stdout)
    if sizes != {n: len(i) for n, i in want.splits.items()}:
        raise _fail(path, f"splits {sizes}, the model has {want.splits}")
    for name, ids in want.splits.items():
        got = json.loads(s.cli.run("split", target, name, "--json", path=path).stdout)
        if got != ids:
            raise _fail(path, f"split {name!r}: {got}, the model has {ids}")
        listed = s.cli.run("ls", target, "--split", name, "--json", path="cli ls --split").stdout
        got = [json.loads(line)["id"] for line in listed.splitlines() if line.strip()]
        if got != ids:
            raise _fail("cli ls --split", f"split {name!r}: {got}, the model has {ids}")
        s.counters.reads["cli ls --split"] += 1
    s.counters.reads[path] += 1


def label_map_file(s: Session, directory: str, want: DatasetModel, path: str) -> None:
    file = os.path.join(directory, "label2idx.json")
    got = None
    if os.path.exists(file):
        with open(file, encoding="utf-8") as f:
            got = json.load(f)
    if got != want.label2idx:
        raise _fail(path, f"label2idx.json holds {got}, the model has {want.label2idx}")
    s.counters.reads[path] += 1


# ---- Python -----------------------------------------------------------------------------


def py_dataset(s: Session, source: str, want: DatasetModel, path: str, *, pixels: bool,
               env: Optional[Dict[str, Optional[str]]] = None,
               order: Optional[List[str]] = None) -> Dict[str, Any]:
    """gulpdb.Dataset in the reader worker: ids (in the command line's order
    when given), meta, meta_data, read_jpegs, read() pixels against PIL's
    decode of the model's JPEG, splits and meta indexes."""
    got = s.reader.call("read_dataset", path, env=env, source=source, pixels=pixels,
                        skip=sorted(want.damaged))
    check_read_all(path, got, want, order=order)
    if pixels:
        for id_, entry in got["videos"].items():
            for i, (px, jpeg) in enumerate(zip(entry.get("pixels", []),
                                               want.videos[id_].frames)):
                ref = decode_reference(jpeg)
                if px.shape != ref.shape or not np.array_equal(px, ref):
                    raise _fail(path + ".read pixels", f"id {id_!r} frame {i}: decoded pixels "
                                f"{px.shape} differ from the reference decode {ref.shape}")
        s.counters.reads[path + ".read pixels"] += 1
    s.counters.reads[path] += 1
    return got


def view_api(s: Session, target: str, want: DatasetModel, order: List[str],
             sample: Optional[str]) -> None:
    """The viewer's server (gulpdb.view) over HTTP: the grid's pages list the
    model's videos in the dataset's order with their frame counts and meta,
    each split's pages its ids, a frame comes as the model's JPEG, and a
    damaged frame (bytes that no longer match their CRC) is refused as
    corruption naming the video and frame, never sent."""
    path = "view /api"
    damaged = None
    for id_, frames in sorted(want.damaged.items()):
        damaged = (id_, min(frames))
        break
    got = s.reader.call("view", path, path=target, frame_of=sample, damaged=damaged)
    grid = got["grid"]
    if got["videos"] != len(want.videos) or [g[0] for g in grid] != list(order):
        raise _fail(path, f"the grid lists {[g[0] for g in grid]} ({got['videos']} videos), "
                    f"`gulpdb ls` {order}")
    for id_, frames, meta in grid:
        video = want.videos[id_]
        if frames != len(video.frames):
            raise _fail(path, f"id {id_!r}: {frames} frames, the model has {len(video.frames)}")
        expect_meta_data(path, id_, json.loads(meta), video)
    expect_splits(path, got["splits"], want)
    if sample is not None and got["frame0"] != want.videos[sample].frames[0]:
        raise _fail(path, f"id {sample!r}: frame 0 is not the model's JPEG")
    if damaged is not None:
        status, body = got["damaged"]
        try:
            answer = json.loads(body)
        except ValueError:
            answer = {}
        if (status != 500 or answer.get("kind") != "corruption" or
                f"'{damaged[0]}' frame {damaged[1]}" not in answer.get("error", "")):
            raise _fail(path, f"id {damaged[0]!r} frame {damaged[1]} is damaged on disk: the "
                        f"server answered HTTP {status} {body[:300]!r}")
        s.counters.reads[path + " (damaged frame)"] += 1
    s.counters.reads[path] += 1


def check_read_all(path: str, got: Dict[str, Any], want: DatasetModel,
                   order: Optional[List[str]] = None) -> None:
    expect_ids(path, got["ids"], want)
    if got["len"] != len(want.videos):
        raise _fail(path, f"len() is {got['len']}, the model has {len(want.videos)}")
    if order is not None and list(got["ids"]) != list(order):
        raise _fail(path, f"ids() order {got['ids']} differs from `gulpdb ls` {order}")
    for id_, entry in got["videos"].items():
        video = want.videos[id_]
        expect_meta_data(path, id_, entry["meta_data"], video)
        expect_meta(path, id_, entry["meta"], video)
        if id_ in want.damaged:  # read by damaged_reads
            if "jpegs" in entry:
                raise _fail(path, f"id {id_!r} has a damaged frame, yet its frames were read")
        else:
            expect_frames(path, id_, entry["jpegs"], video)
        if entry["frame_count"] != len(video.frames) or not entry["contains"]:
            raise _fail(path, f"id {id_!r}: frame_count {entry['frame_count']}, in: "
                        f"{entry['contains']}")
    expect_splits(path, got["splits"], want)
    if got["meta_indexes"] != sorted(want.meta_keys):
        raise _fail(path, f"meta indexes {got['meta_indexes']}, the model has "
                    f"{sorted(want.meta_keys)}")


def gulp_directory(s: Session, source: str, want: DatasetModel, path: str,
                   env: Optional[Dict[str, Optional[str]]] = None) -> None:
    """gulpdb.GulpDirectory (GulpIO2's API): merged_meta_dict, gd[id] with a
    decoder that returns the stored bytes, iteration over chunks."""
    got = s.reader.call("read_gulpdirectory", path, env=env, source=source,
                        skip=sorted(want.damaged))
    expect_ids(path, list(got["merged"]), want)
    for id_, entry in got["merged"].items():
        video = want.videos[id_]
        expect_meta_data(path + " merged_meta_dict", id_, entry["meta_data"], video)
        if len(entry["frame_info"]) != len(video.frames):
            raise _fail(path, f"id {id_!r}: {len(entry['frame_info'])} frame_info entries, the "
                        f"model has {len(video.frames)} frames")
        if id_ in want.damaged:  # read by damaged_reads
            continue
        item = got["items"][id_]
        expect_frames(path + " gd[id]", id_, item["frames"], video)
        expect_meta(path + " gd[id]", id_, item["meta"], video)
    intact = len(want.videos) - len(want.damaged)
    if got["iterated"] != intact:
        raise _fail(path, f"iterating the chunks gives {got['iterated']} videos, the model has "
                    f"{intact}{' without a damaged frame' if want.damaged else ''}")
    s.counters.reads[path] += 1


# ---- GulpIO directories, read independently ---------------------------------------------


def gulpio_view(path: str, files: Any, want: DatasetModel, data_files: Any = None,
                splits: Optional[Dict[str, List[str]]] = None) -> gulpio_format.GulpioView:
    """Reads a GulpIO directory with the independent reader: its videos must be
    ``want``'s exactly (frames, meta_data), its label2idx.json ``want``'s, and
    its gulpdb_splits.json ``splits`` (when given)."""
    try:
        view = gulpio_format.read_directory(files, data_files)
    except gulpio_format.GulpioFormatError as e:
        raise _fail(path, str(e))
    expect_ids(path, list(view.videos), want)
    for id_, (frames, meta_data) in view.videos.items():
        video = want.videos[id_]
        expect_frames(path, id_, frames, video)
        expect_meta_data(path, id_, meta_data, video)
    if view.label2idx != want.label2idx:
        raise _fail(path, f"label2idx.json holds {view.label2idx}, the model has "
                    f"{want.label2idx}")
    if splits is not None:
        names = files.names()
        got: Dict[str, List[str]] = {}
        if "gulpdb_splits.json" in names:
            got = json.loads(files.read("gulpdb_splits.json").decode("utf-8"))["splits"]
        if got != splits:
            raise _fail(path, f"gulpdb_splits.json holds {got}, the model has {splits}")
    return view
