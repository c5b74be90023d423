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


def without(model: Model, ids) -> Dict[str, Video]:
    return {k: v for k, v in (model or {}).items() if k not in ids}


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

    def teardown(self) -> None:
        """Stops what setup started for the run and the checks (a server)."""

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


# Steps per workload: GULPDB_PL_SCALE (1 in CI, more in the full run) times
# the CI size, so that the full run has many more crash points.
SCALE = max(1, int(os.environ.get("GULPDB_PL_SCALE", "1")))


class Append1(Workload):
    name = "append-1"
    doc = "commits of one video each (chunks of two videos: every other one starts a chunk)"
    videos = [video(k) for k in range(1 + 3 * SCALE)]
    models = [add(None, videos[0])]
    for k in range(1, len(videos)):
        models.append(add(models[-1], videos[k]))

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.videos[:1], videos_per_chunk=2)

    def run(self, root):
        import gulpdb
        with gulpdb.Dataset(os.path.join(root, "ds"), "r+") as d:
            with d.writer() as w:
                for k in range(1, len(self.videos)):
                    w.append(*self.videos[k])
                    w.commit()
                    ack(k)


class AppendMany(Workload):
    name = "append-many"
    doc = "commits of four and three videos (chunks of three videos)"
    batches = [[video(1000 + 10 * b + k, frames=3) for k in range(4 if b % 2 == 0 else 3)]
               for b in range(2 * SCALE)]
    models = [{}]
    for b in batches:
        models.append(add(models[-1], *b))

    def setup(self, work):
        import gulpdb
        os.makedirs(os.path.join(work, "root"))
        gulpdb.Dataset(os.path.join(work, "root", "ds"), "x", videos_per_chunk=3).close()

    def run(self, root):
        import gulpdb
        with gulpdb.Dataset(os.path.join(root, "ds"), "r+") as d:
            with d.writer() as w:
                for k, batch in enumerate(self.batches, 1):
                    for v in batch:
                        w.append(*v)
                    w.commit()
                    ack(k)


class Remove(Workload):
    name = "remove"
    doc = "removes of one video, then of two in one transaction"
    videos = [video(2000 + k) for k in range(3 * SCALE + 1)]
    rounds = []
    for r in range(SCALE):
        rounds += [[f"v{2000 + 3 * r}"], [f"v{2001 + 3 * r}", f"v{2002 + 3 * r}"]]
    models = [add(None, *videos)]
    for ids in rounds:
        models.append(without(models[-1], ids))

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.videos, videos_per_chunk=2)

    def run(self, root):
        import gulpdb
        with gulpdb.Dataset(os.path.join(root, "ds"), "r+") as d:
            for k, ids in enumerate(self.rounds, 1):
                d.remove(ids)
                ack(k)


def compact_remove_compact(ds, later):
    """gulpdb compact (ack 1), the removal of `later` (ack 2), compact again (ack 3)."""
    import gulpdb
    cli("compact", ds, "--min-garbage", "0")
    ack(1)
    with gulpdb.Dataset(ds, "r+") as d:
        d.remove([later])
    ack(2)
    cli("compact", ds, "--min-garbage", "0")
    ack(3)


class Compact(Workload):
    name = "compact"
    doc = "gulpdb compact of chunks holding removed videos, then of a removal after it"
    videos = [video(3000 + k) for k in range(5 * SCALE)]
    gone = [f"v{3000 + k}" for k in range(len(videos)) if k % 5 in (1, 3)]
    kept = without(add(None, *videos), gone)
    later = sorted(kept)[0]
    after = without(kept, [later])
    models = [kept, kept, after, after]

    def setup(self, work):
        import gulpdb
        path = os.path.join(work, "root", "ds")
        append_videos(path, self.videos, videos_per_chunk=2)
        with gulpdb.Dataset(path, "r+") as d:
            d.remove(self.gone)

    def run(self, root):
        compact_remove_compact(os.path.join(root, "ds"), self.later)


class Merge(Workload):
    name = "merge"
    doc = "gulpdb merge of shards inside OUT (attached in place) and beside it (copied)"
    base = [video(4000)]
    shards = [[video(4001 + 10 * k), video(4002 + 10 * k)] if k % 2 == 0 else [video(4001 + 10 * k)]
              for k in range(2 * SCALE)]
    models = [add(None, *base)]
    for sh in shards:
        models.append(add(models[-1], *sh))

    def shard_path(self, root, k):
        if k % 2 == 0:
            return os.path.join(root, "ds", f"shard_{k}")
        return os.path.join(root, f"shard_{k}")

    def setup(self, work):
        root = os.path.join(work, "root")
        append_videos(os.path.join(root, "ds"), self.base)
        for k, sh in enumerate(self.shards):
            append_videos(self.shard_path(root, k), sh)

    def run(self, root):
        ds = os.path.join(root, "ds")
        for k in range(0, len(self.shards), 2):
            cli("merge", ds, self.shard_path(root, k), self.shard_path(root, k + 1))
            ack(k + 2)

    def check(self, state):
        problems: List[str] = []
        view = check_dataset(os.path.join(state, "ds"), problems, export_exact=False)
        return {"view": view, "problems": problems}


def _gulpio_dir(path: str, chunks) -> None:
    os.makedirs(path, exist_ok=True)
    for n, videos in enumerate(chunks):
        write_chunk(path, n, videos)


class PerDirectory(Workload):
    """An operation done on directories ds0, ds1, ... one after the other,
    acknowledged after each: after ack k, ds0..ds<k-1> must show the done
    state, ds<k> either, the rest the state before."""
    count = max(1, SCALE // 2)
    before: Any = None  # the view of a directory not yet done
    done: Any = None    # ... and of one done

    def __init__(self) -> None:
        self.models = [[self.done] * k + [self.before] * (self.count - k)
                       for k in range(self.count + 1)]

    def run(self, root):
        for i in range(self.count):
            self.run_one(os.path.join(root, f"ds{i}"))
            ack(i + 1)

    def check(self, state):
        problems: List[str] = []
        views = []
        for i in range(self.count):
            one: List[str] = []
            views.append(self.check_one(os.path.join(state, f"ds{i}"), one))
            problems += [f"ds{i}: {p}" for p in one]
        return {"view": views, "problems": problems}

    def judge(self, result, acked):
        problems = list(result["problems"])
        if "error" in result["view"]:
            return problems or ["recovery failed"]
        if result["view"] not in self.models[acked:]:
            states = ["done" if v == self.done else "before" if v == self.before else "other videos"
                      for v in result["view"]]
            problems.append(f"directories {states} after ack {acked}: ds0..ds{acked - 1} must be "
                            "done and the rest all or nothing, byte-exact")
        return problems


class Import(PerDirectory):
    name = "import"
    doc = "import in place of GulpIO directories"
    chunks = [[video(5000 + 10 * n), video(5001 + 10 * n)] if n % 2 == 0 else [video(5000 + 10 * n)]
              for n in range(2 * SCALE)]
    done = canonical(add(None, *[v for c in chunks for v in c]))

    def setup(self, work):
        for i in range(self.count):
            _gulpio_dir(os.path.join(work, "root", f"ds{i}"), self.chunks)

    def run_one(self, ds):
        import gulpdb
        gulpdb.import_gulpio(ds)

    def check_one(self, ds, problems):
        import gulpdb
        try:
            if gulpio_view(LocalFiles(ds)) != self.done:
                problems.append("the GulpIO files changed")
        except (Exception, GulpioFormatError) as e:  # noqa: BLE001
            problems.append(f"the GulpIO directory: {type(e).__name__}: {e}")
        view = check_dataset(ds, problems)
        if view is None:
            # What a crash left must not stand in the way of importing again.
            try:
                gulpdb.import_gulpio(ds)
                if dataset_view(ds) != self.done:
                    problems.append("import after the crash gives other videos")
            except Exception as e:  # noqa: BLE001
                problems.append(f"import after the crash: {type(e).__name__}: {e}")
        return view


class Reindex(PerDirectory):
    name = "reindex"
    doc = "import --reindex after GulpIO tools added a chunk"
    chunks = [[video(6000 + 10 * n), video(6001 + 10 * n)] if n % 2 == 0 else [video(6000 + 10 * n)]
              for n in range(2 * SCALE + 1)]
    # Before the reindex commits, the index is stale (GulpIO tools added a
    # chunk it does not know): opens refuse it.
    before = "stale"
    done = canonical(add(None, *[v for c in chunks for v in c]))

    def setup(self, work):
        import gulpdb
        for i in range(self.count):
            ds = os.path.join(work, "root", f"ds{i}")
            _gulpio_dir(ds, self.chunks[:-1])
            gulpdb.import_gulpio(ds)
            write_chunk(ds, len(self.chunks) - 1, self.chunks[-1])

    def run_one(self, ds):
        import gulpdb
        gulpdb.import_gulpio(ds, reindex=True)

    def check_one(self, ds, problems):
        import gulpdb
        try:
            dataset_view(ds)
        except gulpdb.StaleIndexError:
            # A reindex now must give the new content.
            try:
                gulpdb.import_gulpio(ds, reindex=True)
                if dataset_view(ds) != self.done:
                    problems.append("reindex after the crash gives other videos")
            except Exception as e:  # noqa: BLE001
                problems.append(f"reindex after the crash: {type(e).__name__}: {e}")
            return "stale"
        except Exception:  # noqa: BLE001 - check_dataset reports it
            pass
        return check_dataset(ds, problems)


class Create(Workload):
    name = "create"
    doc = "gulpdb create of empty datasets, one after the other"
    count = SCALE
    models = [[f"ds{i}" for i in range(k)] for k in range(count + 1)]

    def setup(self, work):
        os.makedirs(os.path.join(work, "root"))

    def run(self, root):
        for i in range(self.count):
            cli("create", os.path.join(root, f"ds{i}"))
            ack(i + 1)

    def check(self, state):
        import gulpdb
        problems: List[str] = []
        present = []
        for i in range(self.count):
            ds = os.path.join(state, f"ds{i}")
            view = check_dataset(ds, problems)
            if view is None:
                try:
                    gulpdb.Dataset(ds, "x").close()
                    if dataset_view(ds) != []:
                        problems.append(f"create of ds{i} after the crash: not empty")
                except Exception as e:  # noqa: BLE001
                    problems.append(f"create of ds{i} after the crash: {type(e).__name__}: {e}")
            elif view == []:
                present.append(f"ds{i}")
            else:
                problems.append(f"ds{i} holds videos: {view}")
        return {"view": present, "problems": problems}

    def judge(self, result, acked):
        problems = list(result["problems"])
        if result["view"] not in self.models[acked:]:
            problems.append(f"datasets {result['view']} after ack {acked}: one of "
                            f"{self.models[acked:]} is allowed")
        return problems


class Snapshot(Workload):
    name = "snapshot"
    doc = ("gulpdb snapshot (push's local steps: index copy, manifest) beside a dataset, "
           "an append before each")
    videos = [video(7000 + k) for k in range(2 + SCALE)]
    models = [add(None, *videos[:2])]
    for v in videos[2:]:
        models.append(add(models[-1], v))

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.videos[:2])

    def run(self, root):
        ds = os.path.join(root, "ds")
        for k, v in enumerate(self.videos[2:], 1):
            append_videos(ds, [v])
            cli("snapshot", ds)
            ack(k)

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
        if isinstance(snap, str):
            if acked >= 1 or "network file system" not in snap:
                problems.append(f"opening the published snapshot: {snap}")
        elif snap not in [canonical(m) for m in self.models[max(acked, 1):]]:
            problems.append("the published snapshot holds other videos than an acknowledged "
                            "or later snapshot")
        return problems


class CacheDownload(Workload):
    name = "cache-download"
    doc = ("readers on a network file system copying published snapshots into their cache "
           "(local file source: the snapshot beside each dataset; no S3), whole and "
           "partitioned in turn")
    sets = [[video(8000 + 10 * i + k) for k in range(1 + i % 3)] for i in range(2 * SCALE)]
    models = [None]

    def setup(self, work):
        for i, videos in enumerate(self.sets):
            ds = os.path.join(work, f"ds{i}")
            append_videos(ds, videos)
            # Both layouts: the whole snapshot's download, and the partitions',
            # roots' and chunk pages' (the default).
            cli("snapshot", ds, "--layout", "whole" if i % 2 else "auto")
        os.makedirs(os.path.join(work, "root", "cache"))

    def view(self, i: int, cache: str, work: str) -> Any:
        """Dataset i as a reader opens it through the node cache `cache`."""
        return snapshot_view(os.path.join(work, f"ds{i}"), cache)

    def run(self, root):
        work = os.path.dirname(root)
        for i, videos in enumerate(self.sets):
            if self.view(i, os.path.join(root, "cache"), work) != canonical(add(None, *videos)):
                raise SystemExit(f"the reader of ds{i} read other videos")
            ack(i + 1)

    def check(self, state):
        # Whatever a power cut left in the cache, an open gives the published
        # videos (a damaged copy is verified, set aside and downloaded again).
        problems: List[str] = []
        work = os.environ["GULPDB_PL_WORK"]
        for i, videos in enumerate(self.sets):
            for attempt in (1, 2):
                try:
                    view = self.view(i, os.path.join(state, "cache"), work)
                    if view != canonical(add(None, *videos)):
                        problems.append(f"open {attempt} of ds{i} through the cache: other videos")
                except Exception as e:  # noqa: BLE001
                    problems.append(f"open {attempt} of ds{i} through the cache: "
                                    f"{type(e).__name__}: {e}")
        return {"view": None, "problems": problems}

    def judge(self, result, acked):
        return list(result["problems"])


# ---- S3: a real server (s3rver on 127.0.0.1) that a power cut does not touch ---------------

S3_BUCKET = "powerloss"


def s3_environment(work: str) -> Dict[str, str]:
    """What reaches the server setup started (its endpoint is in work/s3.json)."""
    with open(os.path.join(work, "s3.json")) as f:
        endpoint = json.load(f)["endpoint"]
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "S3RVER",
            "AWS_SECRET_ACCESS_KEY": "S3RVER", "AWS_REGION": "us-east-1",
            "GULPDB_S3_CONNECT_TIMEOUT_MS": "2000", "GULPDB_S3_REQUEST_TIMEOUT_MS": "20000",
            "GULPDB_S3_MAX_ATTEMPTS": "3"}


def url_view(url: str, cache: str, work: str) -> Any:
    """The dataset at `url` as a reader opens it, through the node cache `cache`."""
    import gulpdb
    saved = dict(os.environ)
    os.environ.update(s3_environment(work))
    os.environ["GULPDB_CACHE"] = cache
    try:
        with gulpdb.Dataset(url, "r") as d:
            return canonical({id_: (d.read_jpegs(id_), d.meta_data(id_)) for id_ in d.ids()})
    finally:
        os.environ.clear()
        os.environ.update(saved)


class S3Workload(Workload):
    """A workload against s3rver, started by setup and stopped by teardown."""

    server = None

    def start_server(self, work: str) -> None:
        sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
        import s3_proxy  # tests/harness/s3_proxy.py
        self.server = s3_proxy.S3rverProcess(S3_BUCKET).start()
        with open(os.path.join(work, "s3.json"), "w") as f:
            json.dump({"endpoint": self.server.endpoint}, f)

    def teardown(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


class S3CacheDownload(S3Workload, CacheDownload):
    name = "s3-cache-download"
    doc = ("readers downloading pushed index snapshots from an S3 server into their node "
           "cache (the download, its verification and the rename into place), whole and "
           "partitioned in turn")
    sets = [[video(9000 + 10 * i + k) for k in range(1 + i % 3)] for i in range(2 * SCALE)]
    models = [None]

    def setup(self, work):
        self.start_server(work)
        env = dict(os.environ, **s3_environment(work))
        for i, videos in enumerate(self.sets):
            ds = os.path.join(work, f"ds{i}")
            append_videos(ds, videos)
            cli("push", ds, f"s3://{S3_BUCKET}/ds{i}", "--layout", "whole" if i % 2 else "auto",
                env=env)
        os.makedirs(os.path.join(work, "root", "cache"))

    def view(self, i, cache, work):
        return url_view(f"s3://{S3_BUCKET}/ds{i}", cache, work)


class S3Push(S3Workload):
    name = "s3-push"
    doc = ("gulpdb push of a dataset to an S3 server (its local steps: the dataset's identity "
           "written into the index, the index copy), an append before each push")
    videos = [video(9500 + k) for k in range(2 + 4 * SCALE)]
    models = [add(None, *videos[:2])]
    for v in videos[2:]:
        models.append(add(models[-1], v))

    def setup(self, work):
        self.start_server(work)
        append_videos(os.path.join(work, "root", "ds"), self.videos[:2])

    def run(self, root):
        ds = os.path.join(root, "ds")
        env = dict(os.environ, **s3_environment(os.path.dirname(root)))
        for k, v in enumerate(self.videos[2:], 1):
            append_videos(ds, [v])
            cli("push", ds, f"s3://{S3_BUCKET}/ds", env=env)
            ack(k)

    def check(self, state):
        result = super().check(state)
        # The bucket is not the disk: it holds what the last push that
        # finished (or got past its manifest swap) published.
        try:
            result["pushed"] = url_view(f"s3://{S3_BUCKET}/ds",
                                        tempfile.mkdtemp(prefix="cache.", dir=state),
                                        os.environ["GULPDB_PL_WORK"])
        except Exception as e:  # noqa: BLE001
            result["pushed"] = f"{type(e).__name__}: {e}"
        return result

    def judge(self, result, acked):
        problems = super().judge(result, acked)
        pushed = result["pushed"]
        if isinstance(pushed, str):
            problems.append(f"reading the pushed dataset: {pushed}")
        elif pushed not in [canonical(m) for m in self.models[1:]]:
            problems.append("the pushed dataset holds other videos than a pushed step's")
        return problems


class S3FrameCache(S3Workload):
    name = "s3-frame-cache"
    doc = ("readers filling the node's frame cache from an S3 server (block files written into "
           "frames/tmp and renamed into place, the node-wide counters) under a bound that "
           "makes every dataset evict the blocks of the ones before")
    sets = [[video(9700 + 20 * i + k, frames=6) for k in range(12)] for i in range(2 * SCALE)]
    models = [None]
    # 64 KiB blocks under a 64 KiB bound: each dataset's chunk is a few blocks,
    # so a fill takes the cache past the bound and a pass evicts.
    env = {"GULPDB_FRAME_CACHE_BYTES": "64K", "GULPDB_FRAME_CACHE_BLOCK": "64K"}

    def setup(self, work):
        self.start_server(work)
        env = dict(os.environ, **s3_environment(work))
        for i, videos in enumerate(self.sets):
            ds = os.path.join(work, f"ds{i}")
            append_videos(ds, videos)
            cli("push", ds, f"s3://{S3_BUCKET}/frames{i}", env=env)
        # The index is in the node cache before the run: the trace is the frame cache's.
        os.makedirs(os.path.join(work, "root", "cache"))
        for i in range(len(self.sets)):
            self.view(i, os.path.join(work, "root", "cache"), work, frames=False)

    def view(self, i: int, cache: str, work: str, frames: bool = True) -> Any:
        import gulpdb
        saved = dict(os.environ)
        os.environ.update(s3_environment(work))
        os.environ.update(self.env)
        os.environ["GULPDB_CACHE"] = cache
        try:
            with gulpdb.Dataset(f"s3://{S3_BUCKET}/frames{i}", "r") as d:
                if not frames:
                    return None
                return canonical({id_: (d.read_jpegs(id_), d.meta_data(id_)) for id_ in d.ids()})
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def stats(self, cache: str) -> Dict[str, Any]:
        import gulpdb
        saved = dict(os.environ)
        os.environ.update(self.env)
        os.environ["GULPDB_CACHE"] = cache
        try:
            return gulpdb.frame_cache_stats()
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def run(self, root):
        work = os.path.dirname(root)
        cache = os.path.join(root, "cache")
        for i, videos in enumerate(self.sets):
            for _ in range(2):  # filled, then served from the cache
                if self.view(i, cache, work) != canonical(add(None, *videos)):
                    raise SystemExit(f"the reader of frames{i} read other videos")
            ack(i + 1)
        if self.stats(cache)["evictions"] == 0:
            raise SystemExit("the workload never evicted: make its datasets larger")

    def check(self, state):
        # Whatever a power cut left under frames/, reads give the published
        # frames, and the cache's own checks catch every block it left
        # damaged: none reaches the frames' CRC-32Cs (which would drop it and
        # read the store again, counted as refetched).
        problems: List[str] = []
        work = os.environ["GULPDB_PL_WORK"]
        cache = os.path.join(state, "cache")
        before = self.stats(cache)["refetched"]
        for i, videos in enumerate(self.sets):
            for attempt in (1, 2):
                try:
                    if self.view(i, cache, work) != canonical(add(None, *videos)):
                        problems.append(f"read {attempt} of frames{i} through the cache: "
                                        "other frames")
                except Exception as e:  # noqa: BLE001
                    problems.append(f"read {attempt} of frames{i} through the cache: "
                                    f"{type(e).__name__}: {e}")
        refetched = self.stats(cache)["refetched"] - before
        if refetched > 0:
            problems.append(f"{refetched} cached blocks passed the cache's checks with frames "
                            "that fail their CRC-32C")
        return {"view": None, "problems": problems}

    def judge(self, result, acked):
        return list(result["problems"])


class JournalCommits(Workload):
    name = "journal"
    doc = ("batch-1 commits through the index journal in one chunk: a checkpoint between "
           "them (the writer closed and opened again), a journaled remove, then a compact")
    first = [video(9000 + k) for k in range(1 + SCALE)]
    second = [video(9100 + k) for k in range(4 * SCALE)]
    gone = first[1][0]
    models = [add(None, first[0])]
    for v in first[1:] + second:
        models.append(add(models[-1], v))
    models.append(without(models[-1], [gone]))
    models.append(models[-1])

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.first[:1], videos_per_chunk=1000)

    def run(self, root):
        import gulpdb
        ds = os.path.join(root, "ds")
        step = 0
        with gulpdb.Dataset(ds, "r+") as d:
            with d.writer() as w:  # its close is a checkpoint
                for v in self.first[1:]:
                    w.append(*v)
                    w.commit()
                    step += 1
                    ack(step)
            with d.writer() as w:
                for v in self.second:
                    w.append(*v)
                    w.commit()
                    step += 1
                    ack(step)
                w.remove(self.gone)
                w.commit()
                step += 1
                ack(step)
        cli("compact", ds, "--min-garbage", "0")
        ack(step + 1)


class JournalGrow(Workload):
    name = "journal-grow"
    doc = ("batch-1 commits that fill a journal made small (GULPDB_TEST_JOURNAL_BYTES): "
           "a checkpoint, the journal doubled, then commits into its new part")
    videos = [video(9200 + k) for k in range(3 + 2 * SCALE)]
    models = [add(None, videos[0])]
    for v in videos[1:]:
        models.append(add(models[-1], v))

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.videos[:1], videos_per_chunk=1000)

    def run(self, root):
        # 4 KiB of records: the second commit fills it (engine/core/journal.h).
        os.environ["GULPDB_TEST_JOURNAL_BYTES"] = str(64 * 1024 + 4096)
        import gulpdb
        with gulpdb.Dataset(os.path.join(root, "ds"), "r+") as d:
            with d.writer() as w:
                for step, v in enumerate(self.videos[1:], start=1):
                    w.append(*v)
                    w.commit()
                    ack(step)


class WriterPerCommit(Workload):
    name = "writer-per-commit"
    doc = ("a writer opened per commit: a with-block's last commit (direct), a last commit "
           "journaled after others, a writer taking over the closing checkpoint of the one "
           "before, then a compaction between writers and journaled commits after it")
    vids = [video(9300 + k) for k in range(5)]
    later = [video(9310 + k) for k in range(2 * SCALE)]
    gone = vids[1][0]
    models = [add(None, vids[0])]
    for v in vids[1:]:
        models.append(add(models[-1], v))
    models.append(without(models[-1], [gone]))
    models.append(models[-1])  # the compaction
    for v in later:
        models.append(add(models[-1], v))

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.vids[:1], videos_per_chunk=1000)

    def run(self, root):
        import gulpdb
        ds = os.path.join(root, "ds")
        with gulpdb.Dataset(ds, "r+") as d:
            with d.writer() as w:  # its commit is the writer's last: direct
                w.append(*self.vids[1])
            ack(1)
            w = d.writer()
            w.append(*self.vids[2])
            w.commit()
            ack(2)
            w.append(*self.vids[3])
            w._commit_last()  # records are in the journal: journaled
            ack(3)
            w.close()
            with d.writer() as w:  # takes over the checkpoint the close wrote
                w.append(*self.vids[4])
                w.commit()
                ack(4)
                w.remove(self.gone)
                w.commit()
                ack(5)
        cli("compact", ds, "--min-garbage", "0")  # direct, and deletes data_0.gulp
        ack(6)
        with gulpdb.Dataset(ds, "r+") as d:
            with d.writer() as w:  # must checkpoint: the compaction came after the last one
                for k, v in enumerate(self.later, start=7):
                    w.append(*v)
                    w.commit()
                    ack(k)


def _h264_stream(k: int) -> bytes:
    """A small raw Annex-B H.264 stream (6 frames of 48x32, GOP 3, no
    B-frames, as ingest encodes), content varied by k."""
    return subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
         f"testsrc2=size=48x32:rate=25:duration={1 + k}", "-ss", f"{k * 0.2:.1f}",
         "-frames:v", "6", "-c:v", "libx264", "-g", "3", "-keyint_min", "3",
         "-sc_threshold", "0", "-bf", "0", "-pix_fmt", "yuv420p", "-threads", "1",
         "-f", "h264", "-"], check=True, capture_output=True).stdout


class AppendH264(Workload):
    name = "append-h264"
    doc = "commits of one H.264 video each to an h264 dataset (chunks of two videos)"
    codec = "h264"  # run only where the build has it (run_powerloss.py)
    count = 1 + 3 * SCALE

    def setup(self, work):
        import gulpdb
        streams = [_h264_stream(k) for k in range(self.count)]
        os.makedirs(os.path.join(work, "streams"))
        for k, stream in enumerate(streams):
            with open(os.path.join(work, "streams", f"{k}.h264"), "wb") as f:
                f.write(stream)
        videos = [(f"h{k}", [stream], {"n": k}) for k, stream in enumerate(streams)]
        self.models = [add(None, videos[0])]
        for v in videos[1:]:
            self.models.append(add(self.models[-1], v))
        os.makedirs(os.path.join(work, "root"))
        with gulpdb.Dataset(os.path.join(work, "root", "ds"), "x", codec="h264",
                            videos_per_chunk=2) as d:
            with d.writer() as w:
                w.append_h264("h0", streams[0], {"n": 0})

    def run(self, root):
        import gulpdb
        streams = os.path.join(os.path.dirname(root), "streams")
        with gulpdb.Dataset(os.path.join(root, "ds"), "r+") as d:
            with d.writer() as w:
                for k in range(1, self.count):
                    with open(os.path.join(streams, f"{k}.h264"), "rb") as f:
                        w.append_h264(f"h{k}", f.read(), {"n": k})
                    w.commit()
                    ack(k)

    def check(self, state):
        """As check_dataset, for an h264 dataset: the stored streams are the
        view; the export is a GulpIO directory of JPEG frames of it."""
        import gulpdb
        problems: List[str] = []
        path = os.path.join(state, "ds")

        def view() -> Any:
            with gulpdb.Dataset(path, "r") as d:
                return canonical({id_: ([d.read_h264_stream(id_)], d.meta_data(id_))
                                  for id_ in d.ids()})
        try:
            before = view()
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            problems.append(f"read-only open before recovery: {type(e).__name__}: {e}")
            before = "error"
        try:
            with gulpdb.Dataset(path, "r+") as d:
                d.writer().close()
            after = view()
        except Exception as e:  # noqa: BLE001
            problems.append(f"recovery: {type(e).__name__}: {e}")
            return {"view": "error", "problems": problems}
        if before != "error" and before != after:
            problems.append("a reader before recovery saw other videos than after it")
        try:
            report = gulpdb.check(path, deep=True)  # decodes every GOP
            if not report["healthy"]:
                problems.append(f"check --deep: {report['problems'][:3]}")
        except Exception as e:  # noqa: BLE001
            problems.append(f"check --deep: {type(e).__name__}: {e}")
        out = tempfile.mkdtemp(prefix="export.", dir=state)
        try:
            with gulpdb.Dataset(path, "r") as d:
                gulpdb.export_gulpio(d, out)
                got = read_directory(LocalFiles(out)).videos
                if sorted(got) != sorted(d.ids()) or any(
                        len(got[i][0]) != d.frame_count(i) for i in got):
                    problems.append("the export read by GulpIO's rules is not the dataset")
        except (Exception, GulpioFormatError) as e:  # noqa: BLE001
            problems.append(f"export read by GulpIO's rules: {type(e).__name__}: {e}")
        finally:
            shutil.rmtree(out, ignore_errors=True)
        return {"view": after, "problems": problems}


class MetaIndexRebuild(Workload):
    name = "meta-index"
    doc = ("gulpdb index --meta-key of a meta index of the first key form (rebuilt in the ordered "
           "form, in one transaction), then of a new key")
    videos = [(f"m{k}", [JPEGS[k % len(JPEGS)]], {"n": k, "l": f"l{k % 3}"})
              for k in range(6 + 6 * SCALE)]
    models = [add(None, *videos)] * 3  # an index changes no video

    def setup(self, work):
        path = os.path.join(work, "root", "ds")
        append_videos(path, self.videos, videos_per_chunk=4)
        env = dict(os.environ, GULPDB_TEST_META_KEY_FORM="canonical")
        subprocess.run([os.environ["GULPDB_PL_CLI"], "index", path, "--meta-key", "n"],
                       env=env, check=True, stdout=subprocess.DEVNULL)

    def run(self, root):
        path = os.path.join(root, "ds")
        cli("index", path, "--meta-key", "n")  # the rebuild
        ack(1)
        cli("index", path, "--meta-key", "l")
        ack(2)

    def check(self, state):
        """Besides the dataset: queries answer as the videos' meta says,
        whichever indexes the state has."""
        import gulpdb
        result = super().check(state)
        if result["view"] in (None, "error"):
            return result
        want = {"n >= 5": [v[0] for v in self.videos if v[2]["n"] >= 5],
                "n = 3 or l = 'l1'": [v[0] for v in self.videos
                                      if v[2]["n"] == 3 or v[2]["l"] == "l1"]}
        try:
            with gulpdb.Dataset(os.path.join(state, "ds"), "r") as d:
                for query, ids in want.items():
                    got = d.select(query)
                    if got != ids:
                        result["problems"].append(f"select({query!r}) gives {got}, not {ids}")
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            result["problems"].append(f"select: {type(e).__name__}: {e}")
        return result


class MetaEdit(Workload):
    name = "meta-edit"
    doc = ("meta edits (docs/edits.md) on an indexed key: journaled update and set commits, a "
           "batch of an append, its edit, an edit and a remove, then `gulpdb relabel` (a "
           "direct commit after label2idx.json)")
    videos = [(f"e{k}", [JPEGS[k % len(JPEGS)]], {"n": k, "l": f"l{k % 3}"})
              for k in range(6 + 2 * SCALE)]
    fresh = ("e-new", [JPEGS[1]], {"n": 99})

    @staticmethod
    def _edit(model, id_, meta):
        out = dict(model)
        out[id_] = (out[id_][0], [meta])
        return out

    models = [add(None, *videos)]
    models.append(_edit.__func__(models[-1], "e0", {"l": "x"}))
    models.append(_edit.__func__(models[-1], "e1", {"s": 1}))
    models.append(without(_edit.__func__(add(models[-1], ("e-new", [JPEGS[1]], {"n": 99, "l": "y"})),
                                         "e2", {"n": 2, "l": "z"}), ["e3"]))
    models.append(_edit.__func__(_edit.__func__(
        models[-1], "e4", {"n": 4, "l": "l1", "label": "cat", "idx": 0}),
        "e5", {"n": 5, "l": "l2", "label": "dog", "idx": 1}))

    def setup(self, work):
        path = os.path.join(work, "root", "ds")
        append_videos(path, self.videos, videos_per_chunk=1000)
        subprocess.run([os.environ["GULPDB_PL_CLI"], "index", path, "--meta-key", "l"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(work, "root", "labels.csv"), "w") as f:
            f.write("e4;cat\ne5;dog\n")

    def run(self, root):
        import gulpdb
        path = os.path.join(root, "ds")
        with gulpdb.Dataset(path, "r+") as d:
            with d.writer() as w:
                w.update_meta("e0", {"l": "x", "n": None})
                w.commit()  # journaled
                ack(1)
                w.set_meta("e1", {"s": 1})
                w.commit()
                ack(2)
                w.append(*self.fresh)
                w.update_meta("e-new", {"l": "y"})
                w.update_meta("e2", {"l": "z"})
                w.remove("e3")
                w.commit()
                ack(3)
        cli("relabel", path, "--labels", os.path.join(root, "labels.csv"))
        ack(4)

    def check(self, state):
        """Besides the dataset: the meta index answers as the videos' meta says."""
        import gulpdb
        result = super().check(state)
        if result["view"] in (None, "error"):
            return result
        try:
            with gulpdb.Dataset(os.path.join(state, "ds"), "r") as d:
                for value in ("x", "y", "z", "l0", "l1", "l2"):
                    want = [i for i in d.ids() if (d.meta(i) or {}).get("l") == value]
                    got = d.select(f"l = '{value}'")
                    if got != want:
                        result["problems"].append(f"select(l = {value!r}) gives {got}, the "
                                                  f"meta says {want}")
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            result["problems"].append(f"select: {type(e).__name__}: {e}")
        return result


# ---- versions (docs/versions.md) ------------------------------------------------------------


def version_view(path: str, name: str) -> Any:
    import gulpdb
    with gulpdb.Dataset(path, "r", version=name) as d:
        return canonical({id_: (d.read_jpegs(id_), d.meta_data(id_)) for id_ in d.ids()})


class VersionWorkload(Workload):
    """A workload whose dataset has tags. ``tags[name]`` is the model the tag
    must read; ``tag_sets[k]`` the tags of state Sk: after ack k the tags
    listed must be those of one of Sk..Sn (an acknowledged tag is there, a
    deleted one never comes back). A tag that is listed must read exactly its
    model, whatever the crash; after the checks, a reclaim must run and, when
    no tag is left, leave no byte held."""

    tags: Dict[str, Model] = {}
    tag_sets: List[List[str]] = []

    def check(self, state):
        import gulpdb
        result = super().check(state)
        path = os.path.join(state, "ds")
        result["tags"] = []
        if result["view"] in (None, "error"):
            return result
        problems = result["problems"]
        try:
            with gulpdb.Dataset(path, "r") as d:
                names = [v["name"] for v in d.versions()]
            result["tags"] = names
            for name in names:
                if version_view(path, name) != canonical(self.tags[name]):
                    problems.append(f"tag {name} reads other videos than when it was made")
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            problems.append(f"the tags: {type(e).__name__}: {e}")
            return result
        try:
            with gulpdb.Dataset(path, "r+") as d:
                d.reclaim_versions()
                held = d.version_bytes()
            deleted = os.path.join(path, "gulpdb.versions", "deleted")
            if not names and held and not (os.path.isdir(deleted) and os.listdir(deleted)):
                problems.append(f"no tag is left, yet the tags hold {held} bytes after a reclaim")
        except Exception as e:  # noqa: BLE001
            problems.append(f"reclaim: {type(e).__name__}: {e}")
        return result

    def judge(self, result, acked):
        problems = super().judge(result, acked)
        if result["view"] in (None, "error"):
            return problems
        names = set(result.get("tags", []))
        allowed = [set(s) for s in self.tag_sets[acked:]]
        if names not in allowed:
            problems.append(f"tags {sorted(names)} after ack {acked}: one of "
                            f"{[sorted(s) for s in allowed]} is allowed")
        return problems


class Tag(VersionWorkload):
    name = "tag"
    doc = ("gulpdb tag, an append, and a second tag that shares the first's unchanged "
           "partitions")
    base = [video(11000 + k) for k in range(3 + SCALE)]
    more = [video(11100 + k) for k in range(2)]
    models = [add(None, *base), add(None, *base), add(None, *base, *more),
              add(None, *base, *more)]
    tags = {"t1": models[0], "t2": models[2]}
    tag_sets = [[], ["t1"], ["t1"], ["t1", "t2"]]

    def setup(self, work):
        append_videos(os.path.join(work, "root", "ds"), self.base, videos_per_chunk=2)

    def run(self, root):
        ds = os.path.join(root, "ds")
        cli("tag", ds, "t1", "--message", "first")
        ack(1)
        append_videos(ds, self.more)
        ack(2)
        cli("tag", ds, "t2")
        ack(3)


class TagDelete(VersionWorkload):
    name = "tag-delete"
    doc = ("deleting tags (no grace) and reclaiming their space: the chunk files compaction "
           "kept for a tag, and its objects")
    base = [video(12000 + k) for k in range(4 + SCALE)]
    later = [video(12100)]
    models = [add(None, *later)] * 4
    tags = {"t1": add(None, *base), "t2": add(None, *later)}
    tag_sets = [["t1"], [], ["t2"], []]

    def setup(self, work):
        import gulpdb
        path = os.path.join(work, "root", "ds")
        append_videos(path, self.base, videos_per_chunk=2)
        cli("tag", path, "t1")
        with gulpdb.Dataset(path, "r+") as d:
            d.remove([v[0] for v in self.base])
        append_videos(path, self.later)
        cli("compact", path, "--min-garbage", "0")  # the old chunks move out, for t1

    def run(self, root):
        ds = os.path.join(root, "ds")
        cli("tag", ds, "t1", "--delete", "--grace", "0")
        ack(1)
        cli("tag", ds, "t2")
        ack(2)
        cli("tag", ds, "t2", "--delete", "--grace", "0")
        ack(3)


class CompactUnderTag(VersionWorkload):
    name = "compact-under-tag"
    doc = "gulpdb compact while a tag reads the chunks it empties, then a removal and again"
    videos = [video(13000 + k) for k in range(5 * SCALE)]
    gone_ids = [f"v{13000 + k}" for k in range(len(videos)) if k % 5 in (0, 1, 3)]
    kept = without(add(None, *videos), gone_ids)
    later = sorted(kept)[0]
    after = without(kept, [later])
    models = [kept, kept, after, after]
    tags = {"t": add(None, *videos)}
    tag_sets = [["t"]] * 4

    def setup(self, work):
        import gulpdb
        path = os.path.join(work, "root", "ds")
        append_videos(path, self.videos, videos_per_chunk=2)
        cli("tag", path, "t")
        with gulpdb.Dataset(path, "r+") as d:
            d.remove(self.gone_ids)

    def run(self, root):
        compact_remove_compact(os.path.join(root, "ds"), self.later)


class TagAfterEdit(VersionWorkload):
    name = "tag-after-edit"
    doc = ("meta edits between tags: each tag is built from the change record the edits keep "
           "(index/change_record.h) and started again by the tag; after recovery, one more edit "
           "and tag must read as the dataset")
    base = [video(14000 + k) for k in range(4 + SCALE)]
    first = {v[0]: {"label": "fixed"} for v in base[::2]}
    second = {base[1][0]: {"label": "again"}}

    @staticmethod
    def _edited(model, edits):
        out = dict(model)
        for id_, patch in edits.items():
            frames, meta = out[id_]
            out[id_] = (frames, [{**meta[0], **patch}] + list(meta[1:]))
        return out

    def __init__(self):
        start = add(None, *self.base)
        once = self._edited(start, self.first)
        twice = self._edited(once, self.second)
        self.models = [once, once, twice, twice]
        self.tags = {"t0": start, "t1": once, "t2": twice}
        self.tag_sets = [["t0"], ["t0", "t1"], ["t0", "t1"], ["t0", "t1", "t2"]]

    def setup(self, work):
        path = os.path.join(work, "root", "ds")
        append_videos(path, self.base, videos_per_chunk=2)
        cli("tag", path, "t0")
        self._edit(path, self.first)

    @staticmethod
    def _edit(path, edits):
        import gulpdb
        with gulpdb.Dataset(path, "r+") as d:
            with d.writer() as w:
                for id_, patch in edits.items():
                    w.update_meta(id_, patch)

    def run(self, root):
        ds = os.path.join(root, "ds")
        cli("tag", ds, "t1")
        ack(1)
        self._edit(ds, self.second)
        ack(2)
        cli("tag", ds, "t2")
        ack(3)

    def check(self, state):
        import gulpdb
        result = super().check(state)
        if result["view"] in (None, "error") or result["problems"]:
            return result
        # What a crash left of the record must not make the next tag wrong.
        path = os.path.join(state, "ds")
        try:
            self._edit(path, {self.base[-1][0]: {"label": "probe"}})
            cli("tag", path, "probe")
            if version_view(path, "probe") != dataset_view(path):
                result["problems"].append("a tag made after recovery reads otherwise than "
                                          "the dataset")
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            result["problems"].append(f"edit and tag after recovery: {type(e).__name__}: {e}")
        return result


WORKLOADS: Dict[str, Workload] = {w.name: w for w in (
    Append1(), AppendMany(), Remove(), Compact(), Merge(), Import(), Reindex(), Create(),
    Snapshot(), CacheDownload(), S3CacheDownload(), S3Push(), S3FrameCache(), JournalCommits(),
    JournalGrow(), WriterPerCommit(), AppendH264(), MetaIndexRebuild(), MetaEdit(), Tag(),
    TagDelete(), CompactUnderTag(), TagAfterEdit())}


if __name__ == "__main__":
    # python3 workloads.py run NAME ROOT   (under the shim)
    WORKLOADS[sys.argv[2]].run(sys.argv[3])
