"""The operations the power-loss simulator covers, one small workload each.

A workload has three parts:

* ``setup(work)``: builds the initial image under ``work/root`` (not traced);
* ``run(root, cli, ack)``: the operation, run under the shim
  (``python3 workloads.py run NAME ROOT``); after each acknowledged step it
  writes the step's number to the ack file, which the shim records;
* ``models``: the logical states S0..Sn the dataset may be in (id -> frames
  and meta_data), Sk reached when step k returned. After ack k a recovered
  state must be exactly one of Sk..Sn: acknowledged steps whole, any later
  step all or nothing.

``check(state, work)`` runs in a recovery worker (recover.py) on a
materialized crash state and returns what gulpdb recovered (a canonical
view) and the problems it saw; the runner matches the view with the models.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))

from lifecycle.gulpio_format import (GulpioFormatError, LocalFiles,  # noqa: E402
                                     read_directory, write_chunk)

Video = Tuple[List[bytes], List[Any]]   # frames, meta_data
Model = Optional[Dict[str, Video]]      # None: no dataset


def _jpegs() -> List[bytes]:
    files = sorted(glob.glob(os.path.join(REPO, "tests", "fixtures", "frames_src", "*", "*.jpg")))
    return [open(f, "rb").read() for f in files if os.path.getsize(f) < 1500]


JPEGS = _jpegs()


def video(k: int, frames: int = 2) -> Tuple[str, List[bytes], Dict[str, Any]]:
    return (f"v{k}", [JPEGS[(k * 3 + i) % len(JPEGS)] for i in range(frames)], {"n": k})


def canonical(model: Model) -> Optional[List[List[Any]]]:
    """A comparable form: sorted [id, sha256 of the frames, meta_data as JSON]."""
    if model is None:
        return None
    out = []
    for id_, (frames, meta) in model.items():
        h = hashlib.sha256()
        for f in frames:
            h.update(len(f).to_bytes(8, "little") + f)
        out.append([id_, h.hexdigest(), json.dumps(meta, sort_keys=True)])
    return sorted(out)


def add(model: Model, *videos: Tuple[str, List[bytes], Dict[str, Any]]) -> Dict[str, Video]:
    out = dict(model or {})
    for id_, frames, meta in videos:
        out[id_] = (list(frames), [meta])
    return out


def ack(step: int) -> None:
    """Tells the shim that step `step` returned (it records writes to this file)."""
    fd = os.open(os.environ["GULPDB_PL_ACK"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, str(step).encode())
    os.close(fd)


def cli(*args: str, env: Optional[Dict[str, str]] = None) -> None:
    proc = subprocess.run([os.environ["GULPDB_PL_CLI"], *args], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"gulpdb {' '.join(args)}: exit {proc.returncode}: {proc.stdout}")


def append_videos(path: str, videos, **create) -> None:
    import gulpdb
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gulpdb.Dataset(path, "a", **create) as d:
        with d.writer() as w:
            for id_, frames, meta in videos:
                w.append(id_, frames, meta)


# ---- what a recovery worker checks ---------------------------------------------------------


def dataset_view(path: str) -> Optional[List[List[Any]]]:
    import gulpdb
    if not gulpdb.Dataset.exists(path):
        return None
    with gulpdb.Dataset(path, "r") as d:
        return canonical({id_: (d.read_jpegs(id_), d.meta_data(id_)) for id_ in d.ids()})


def gulpio_view(files, data_files=None) -> List[List[Any]]:
    view = read_directory(files, data_files)
    return canonical({id_: (frames, meta) for id_, (frames, meta) in view.videos.items()})


def check_dataset(path: str, problems: List[str], *, export_exact: bool = True) -> Any:
    """Read-only view, then a writer's recovery, then check --deep and an
    export read by GulpIO's rules. Returns the view after recovery."""
    import gulpdb
    try:
        before = dataset_view(path)
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        problems.append(f"read-only open before recovery: {type(e).__name__}: {e}")
        before = "error"
    if before is None:
        return None
    try:
        with gulpdb.Dataset(path, "r+") as d:
            d.writer().close()
    except Exception as e:  # noqa: BLE001
        problems.append(f"writer open (recovery): {type(e).__name__}: {e}")
        return "error"
    try:
        after = dataset_view(path)
    except Exception as e:  # noqa: BLE001
        problems.append(f"read after recovery: {type(e).__name__}: {e}")
        return "error"
    if before != "error" and before != after:
        problems.append("a reader before recovery saw other videos than after it")
    try:
        report = gulpdb.check(path, deep=True)
        if not report["healthy"]:
            problems.append(f"check --deep: {report['problems'][:3]}")
    except Exception as e:  # noqa: BLE001
        problems.append(f"check --deep: {type(e).__name__}: {e}")
    out = tempfile.mkdtemp(prefix="export.", dir=os.path.dirname(path))
    try:
        with gulpdb.Dataset(path, "r") as d:
            gulpdb.export_gmeta(d, out)
        got = gulpio_view(LocalFiles(out), LocalFiles(path, pair_with=out))
        if export_exact and got != after:
            problems.append("the export read by GulpIO's rules differs from the dataset")
        elif not export_exact and not {tuple(v) for v in got} <= {tuple(v) for v in after}:
            problems.append("the export read by GulpIO's rules holds videos the dataset has not")
    except (Exception, GulpioFormatError) as e:  # noqa: BLE001
        problems.append(f"export read by GulpIO's rules: {type(e).__name__}: {e}")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return after


def snapshot_view(path: str, cache: str) -> Any:
    """The dataset as a reader on a network file system opens it: through the
    snapshot published beside it, copied into the cache `cache`."""
    import gulpdb
    saved = {k: os.environ.get(k) for k in ("GULPDB_TEST_FS_TYPE", "GULPDB_CACHE")}
    os.environ["GULPDB_TEST_FS_TYPE"] = "nfs"
    os.environ["GULPDB_CACHE"] = cache
    try:
        with gulpdb.Dataset(path, "r") as d:
            return canonical({id_: (d.read_jpegs(id_), d.meta_data(id_)) for id_ in d.ids()})
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ---- the workloads -------------------------------------------------------------------------


class Workload:
    name = ""
    doc = ""
    models: List[Model] = []

    def setup(self, work: str) -> None:
        raise NotImplementedError

    def run(self, root: str) -> None:
        raise NotImplementedError

    def check(self, state: str) -> Dict[str, Any]:
        problems: List[str] = []
        view = check_dataset(os.path.join(state, "ds"), problems)
        return {"view": view, "problems": problems}

    def judge(self, result: Dict[str, Any], acked: int) -> List[str]:
        """Problems of a recovered state given the last acknowledged step."""
        problems = list(result["problems"])
        view = result["view"]
        if view == "error":
            return problems or ["recovery failed"]
        allowed = [canonical(m) for m in self.models[acked:]]
        if view not in allowed:
            problems.append(self.describe_mismatch(view, acked))
        return problems

    def describe_mismatch(self, view: Any, acked: int) -> str:
        if view is None:
            return f"no dataset, but step {acked} was acknowledged"
        got = {v[0] for v in view}
        want = [sorted({v[0] for v in canonical(m) or []}) for m in self.models[acked:]]
        near = [canonical(m) for m in self.models[acked:] if m is not None and set(m) == got]
        what = "frames or meta differ from what was committed" if near else "other videos"
        return (f"recovered ids {sorted(got)}: {what}; after ack {acked} one of {want} "
                "(each byte-exact) is allowed")


class Append1(Workload):
    name = "append-1"
    doc = "three commits of one video each (the third starts a new chunk)"
    videos = [video(k) for k in range(4)]
    models = [add(None, videos[0])]
    for k in range(1, 4):
        models.append(add(models[-1], videos[k]))

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.videos[:1], videos_per_chunk=2)

    def run(self, root):
        import gulpdb
        with gulpdb.Dataset(os.path.join(root, "ds"), "r+") as d:
            with d.writer() as w:
                for k in range(1, 4):
                    w.append(*self.videos[k])
                    w.commit()
                    ack(k)


class AppendMany(Workload):
    name = "append-many"
    doc = "two commits of four and three videos (chunks of three videos)"
    videos = [video(10 + k, frames=3) for k in range(7)]
    models = [{}, add({}, *videos[:4]), add({}, *videos)]

    def setup(self, work):
        import gulpdb
        os.makedirs(os.path.join(work, "root"))
        gulpdb.Dataset(os.path.join(work, "root", "ds"), "x", videos_per_chunk=3).close()

    def run(self, root):
        import gulpdb
        with gulpdb.Dataset(os.path.join(root, "ds"), "r+") as d:
            with d.writer() as w:
                for v in self.videos[:4]:
                    w.append(*v)
                w.commit()
                ack(1)
                for v in self.videos[4:]:
                    w.append(*v)
                w.commit()
                ack(2)


class Remove(Workload):
    name = "remove"
    doc = "remove one video, then two in one transaction"
    videos = [video(20 + k) for k in range(4)]
    full = add(None, *videos)
    models = [full, {k: v for k, v in full.items() if k != "v20"},
              {k: v for k, v in full.items() if k == "v23"}]

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.videos, videos_per_chunk=2)

    def run(self, root):
        import gulpdb
        with gulpdb.Dataset(os.path.join(root, "ds"), "r+") as d:
            d.remove(["v20"])
            ack(1)
            d.remove(["v21", "v22"])
            ack(2)


class Compact(Workload):
    name = "compact"
    doc = "gulpdb compact of three chunks, two videos removed"
    videos = [video(30 + k) for k in range(5)]
    kept = add(None, videos[0], videos[2], videos[4])
    models = [kept, kept]

    def setup(self, work):
        import gulpdb
        path = os.path.join(work, "root", "ds")
        append_videos(path, self.videos, videos_per_chunk=2)
        with gulpdb.Dataset(path, "r+") as d:
            d.remove(["v31", "v33"])

    def run(self, root):
        cli("compact", os.path.join(root, "ds"), "--min-garbage", "0")
        ack(1)


class Merge(Workload):
    name = "merge"
    doc = "gulpdb merge of a shard inside OUT (attached) and one beside it (copied)"
    base, a, b = [video(40)], [video(41), video(42)], [video(43)]
    models = [add(None, *base), add(None, *base, *a), add(None, *base, *a, *b)]

    def setup(self, work):
        root = os.path.join(work, "root")
        append_videos(os.path.join(root, "ds"), self.base)
        append_videos(os.path.join(root, "ds", "shard_a"), self.a)
        append_videos(os.path.join(root, "shard_b"), self.b)

    def run(self, root):
        ds = os.path.join(root, "ds")
        cli("merge", ds, os.path.join(ds, "shard_a"), os.path.join(root, "shard_b"))
        ack(2)

    def check(self, state):
        problems: List[str] = []
        view = check_dataset(os.path.join(state, "ds"), problems, export_exact=False)
        return {"view": view, "problems": problems}


def _gulpio_dir(path: str, chunks) -> None:
    os.makedirs(path, exist_ok=True)
    for n, videos in enumerate(chunks):
        write_chunk(path, n, videos)


class Import(Workload):
    name = "import"
    doc = "import in place of a GulpIO directory of two chunks"
    chunks = [[video(50), video(51)], [video(52)]]
    models = [None, add(None, *chunks[0], *chunks[1])]

    def setup(self, work):
        _gulpio_dir(os.path.join(work, "root", "ds"), self.chunks)

    def run(self, root):
        import gulpdb
        gulpdb.import_gulpio(os.path.join(root, "ds"))
        ack(1)

    def check(self, state):
        import gulpdb
        problems: List[str] = []
        ds = os.path.join(state, "ds")
        try:
            if gulpio_view(LocalFiles(ds)) != canonical(self.models[1]):
                problems.append("the GulpIO files changed")
        except (Exception, GulpioFormatError) as e:  # noqa: BLE001
            problems.append(f"the GulpIO directory: {type(e).__name__}: {e}")
        view = check_dataset(ds, problems)
        if view is None:
            # What a crash left must not stand in the way of importing again.
            try:
                gulpdb.import_gulpio(ds)
                if dataset_view(ds) != canonical(self.models[1]):
                    problems.append("import after the crash gives other videos")
            except Exception as e:  # noqa: BLE001
                problems.append(f"import after the crash: {type(e).__name__}: {e}")
        return {"view": view, "problems": problems}


class Reindex(Workload):
    name = "reindex"
    doc = "import --reindex after GulpIO tools added a chunk"
    chunks = [[video(60), video(61)], [video(62)], [video(63)]]
    models = [add(None, *chunks[0], *chunks[1]), add(None, *chunks[0], *chunks[1], *chunks[2])]

    def setup(self, work):
        import gulpdb
        ds = os.path.join(work, "root", "ds")
        _gulpio_dir(ds, self.chunks[:2])
        gulpdb.import_gulpio(ds)
        write_chunk(ds, 2, self.chunks[2])

    def run(self, root):
        import gulpdb
        gulpdb.import_gulpio(os.path.join(root, "ds"), reindex=True)
        ack(1)

    def check(self, state):
        # Before the reindex commits, the index is stale (GulpIO tools added
        # a chunk it does not know): opens refuse it, and a reindex now must
        # give the new content.
        import gulpdb
        ds = os.path.join(state, "ds")
        problems: List[str] = []
        try:
            dataset_view(ds)
        except gulpdb.StaleIndexError:
            try:
                gulpdb.import_gulpio(ds, reindex=True)
                if dataset_view(ds) != canonical(self.models[1]):
                    problems.append("reindex after the crash gives other videos")
            except Exception as e:  # noqa: BLE001
                problems.append(f"reindex after the crash: {type(e).__name__}: {e}")
            return {"view": "stale", "problems": problems}
        except Exception:  # noqa: BLE001 - check_dataset reports it
            pass
        return {"view": check_dataset(ds, problems), "problems": problems}

    def judge(self, result, acked):
        if result["view"] == "stale":
            problems = list(result["problems"])
            if acked >= 1:
                problems.append("the index is stale after the reindex was acknowledged")
            return problems
        return super().judge(result, max(acked, 1))


class Create(Workload):
    name = "create"
    doc = "gulpdb create of an empty dataset"
    models = [None, {}]

    def setup(self, work):
        os.makedirs(os.path.join(work, "root"))

    def run(self, root):
        cli("create", os.path.join(root, "ds"))
        ack(1)

    def check(self, state):
        import gulpdb
        problems: List[str] = []
        ds = os.path.join(state, "ds")
        view = check_dataset(ds, problems)
        if view is None:
            try:
                gulpdb.Dataset(ds, "x").close()
                if dataset_view(ds) != []:
                    problems.append("create after the crash gives a dataset that is not empty")
            except Exception as e:  # noqa: BLE001
                problems.append(f"create after the crash: {type(e).__name__}: {e}")
        return {"view": view, "problems": problems}


class Snapshot(Workload):
    name = "snapshot"
    doc = "gulpdb snapshot (push's local steps: index copy, manifest) beside a dataset"
    videos = [video(70 + k) for k in range(3)]
    models = [add(None, *videos), add(None, *videos)]

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.videos)

    def run(self, root):
        cli("snapshot", os.path.join(root, "ds"))
        ack(1)

    def check(self, state):
        problems: List[str] = []
        ds = os.path.join(state, "ds")
        view = check_dataset(ds, problems)
        cache = tempfile.mkdtemp(prefix="cache.", dir=state)
        try:
            snap = snapshot_view(ds, cache)
        except Exception as e:  # noqa: BLE001
            snap = f"{type(e).__name__}: {e}"
        return {"view": view, "problems": problems, "snapshot": snap}

    def judge(self, result, acked):
        problems = super().judge(result, acked)
        snap = result["snapshot"]
        if snap == canonical(self.models[1]):
            return problems
        if isinstance(snap, str):
            if acked >= 1 or "no snapshot" not in snap.lower() and "network file system" not in snap:
                problems.append(f"opening the published snapshot: {snap}")
        else:
            problems.append("the published snapshot holds other videos")
        return problems


class CacheDownload(Workload):
    name = "cache-download"
    doc = ("a reader on a network file system copying the published snapshot into its cache "
           "(local file source: the snapshot beside the dataset; no S3)")
    videos = [video(80 + k) for k in range(3)]
    models = [add(None, *videos), add(None, *videos)]

    def setup(self, work):
        ds = os.path.join(work, "ds")
        append_videos(ds, self.videos)
        cli("snapshot", ds)
        os.makedirs(os.path.join(work, "root", "cache"))

    def run(self, root):
        view = snapshot_view(os.path.join(os.path.dirname(root), "ds"), os.path.join(root, "cache"))
        if view != canonical(self.models[1]):
            raise SystemExit("the reader read other videos")
        ack(1)

    def check(self, state):
        problems: List[str] = []
        ds = os.path.join(os.environ["GULPDB_PL_WORK"], "ds")
        view: Any = "error"
        for attempt in (1, 2):
            try:
                view = snapshot_view(ds, os.path.join(state, "cache"))
            except Exception as e:  # noqa: BLE001
                problems.append(f"open {attempt} through the cache: {type(e).__name__}: {e}")
        return {"view": view, "problems": problems}


WORKLOADS: Dict[str, Workload] = {w.name: w for w in (
    Append1(), AppendMany(), Remove(), Compact(), Merge(), Import(), Reindex(), Create(),
    Snapshot(), CacheDownload())}


if __name__ == "__main__":
    # python3 workloads.py run NAME ROOT   (under the shim)
    WORKLOADS[sys.argv[2]].run(sys.argv[3])
