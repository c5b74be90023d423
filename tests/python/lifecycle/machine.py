"""The lifecycle state machine: the operations users combine on a dataset,
each followed by every read path that applies, checked against the model.

A *lineage* is one dataset followed through its life: made one way (created
from Python or the command line, ingested, imported from a GulpIO directory
written by gulpio_format), then changed and moved any way (append, ingest,
remove, compact, merge, split, meta index, export, re-index, cp -r / cp -a,
push, snapshot, a training run resumed after growth (sampler_rules.py), ...).
The model (model.DatasetModel) says what every reader must see; any
difference, any command or read that fails when the model says it should
work, and any process killed by a signal fails the run.

Randomness comes only from Hypothesis' draws (rule arguments), so that a run
is reproduced by its seed and a failing sequence shrinks. Steps are logged
with their concrete effects (ids, paths, what was expected); a failure
prints that log with Hypothesis' minimal sequence of rule calls.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from . import bucket_rules, checks, gulpio_format, query_model
from .decay import flip_bit
from .model import (DatasetModel, Video, decode_reference, extend_labels, make_jpeg,
                    merge_labels, renumbered)
from .procs import Failure
from .edit_rules import EDIT_VARIANTS, RELABEL_VARIANTS, EditRules
from .sampler_rules import SamplerRules
from . import version_rules
from .version_rules import VersionRules
from .session import BUCKET, Session

SESSION: Optional[Session] = None  # set by the test for the run

# Every rule, by variant, and every read path. The run fails if a rule (any of
# its variants), a variant in REQUIRED_VARIANTS or a read path never ran.
RULES = {
    "create": ["create (python)", "create (cli)", "create (ingest)",
               "create (ingest fails, resumed)", "create (import GulpIO dir)"],
    "append_python": ["append (python writer)"],
    "ingest_cli": ["ingest (cli --frames-dir)", "ingest (cli --images-dir)"],
    "remove": ["remove (python)", "remove (cli)"],
    "compact": ["compact"],
    "merge": ["merge (attach in place)", "merge (copy)"],
    "split": ["split --ids-file", "split --where", "split (python)", "split --remove"],
    "meta_index": ["index --meta-key", "index --drop"],
    "export": ["export (in place)", "export (-o OUT)"],
    "delete_gmeta": ["delete a .gmeta"],
    "reindex": ["import --reindex"],
    "copy": ["copy (cp -r)", "copy (cp -a)"],
    "push_and_open_url": ["push (cli)", "push (python)", "open url (fresh cache)",
                          "open url (warm cache)"],
    "wipe_and_push_other": ["wipe the prefix and push another dataset there"],
    "pickle_reader": ["pickle Dataset", "pickle VideoDataset"],
    "read_held_pickle": ["read a held pickled reader"],
    "snapshot": ["snapshot"],
    "rot_frame": ["rot a frame (checksummed)", "rot a frame (no checksums)"],
    "query": ["query (python select)", "query (cli ls --where)"],
    "sampler_resume_after_growth": ["sampler resume after growth"],
    **bucket_rules.RULES,
    "edit_meta": EDIT_VARIANTS,
    "relabel": RELABEL_VARIANTS,
    "tag_version": version_rules.TAG_VARIANTS,
    "read_version": version_rules.READ_VARIANTS + version_rules.DIFF_VARIANTS,
    "delete_version": version_rules.DELETE_VARIANTS,
    "compact_under_tag": version_rules.COMPACT_VARIANTS,
}
VARIANTS = [v for variants in RULES.values() for v in variants]
# The operations issue 19 names, each of which must run in a CI-sized run.
REQUIRED_VARIANTS = [
    "create (python)", "create (cli)", "create (import GulpIO dir)", "append (python writer)",
    "ingest (cli --frames-dir)", "ingest (cli --images-dir)", "remove (python)", "remove (cli)",
    "compact", "merge (attach in place)", "merge (copy)", "index --meta-key",
    "export (in place)", "export (-o OUT)", "import --reindex", "copy (cp -r)", "copy (cp -a)",
    "open url (fresh cache)", "open url (warm cache)", "pickle Dataset", "pickle VideoDataset",
    "snapshot", "sampler resume after growth", "meta edit (python update)", "relabel (cli)",
    *bucket_rules.RULES["bucket_faults"],
]
READ_PATHS = [
    "cli ls", "cli info", "cli show", "cli extract", "cli check --deep", "cli ls --where",
    "cli split", "cli index", "label2idx.json",
    "py Dataset", "py Dataset.read pixels", "GulpDirectory",
    "url py Dataset (fresh cache)", "url py Dataset (fresh cache).read pixels",
    "url py Dataset (warm cache)", "url py Dataset (frame cache, epoch 2)",
    "url py Dataset (frame cache, damaged)", "url py Dataset (frame cache, tiny bound)",
    "url cli ls", "url cli show", "url cli extract",
    "url cli check --deep", "url GulpDirectory", "bucket as GulpIO dir",
    "exported dir (in place)", "exported dir (-o OUT)", "GulpDirectory (exported copy)",
    "exported dir (from url)", "cli ls --split",
    "pickled Dataset (local)", "pickled Dataset (url)",
    "pickled VideoDataset (local)", "pickled VideoDataset (url)",
    "snapshot reader (network fs)", "VideoSampler load_state_dict(grow=)",
    "view /api",
    "damaged: py read", "damaged: py read_jpegs", "damaged: py read_batch",
    "damaged: py VideoDataset item", "damaged: GulpDirectory gd[id]",
    "damaged: verify_checksums=False", "damaged: cli extract",
    "damaged: cli extract --frames (intact)", "cli check --deep (damaged)",
    "damaged: a reader open before", "damaged: unverified reads",
    "damaged: import --reindex refuses",
    *version_rules.READ_PATHS,
]

LABELS = ["cat", "dog", "owl", "red fox"]
TAGS = ["a", "ü", "x y"]
# What the query rule asks about: the meta keys the lineages' videos have
# (ingest's and GulpIO's id/label/idx, the Python writer's id/k/tag) and one
# none has, and the strings they hold.
QUERY_KEYS = ["label", "idx", "k", "tag", "id", "template"]
QUERY_STRINGS = LABELS + TAGS + ["", "f1", "5001", "0", "3", "é"]
CLEAN_ERRORS = {"FileNotFoundError", "OSError", "CorruptionError", "StaleIndexError",
                "PermissionError", "KeyError", "ValueError"}

_failure_classes: Dict[str, type] = {}


def _failure_class(failure: Failure) -> type:
    """One exception class per (kind, read path), so that Hypothesis shrinks each
    failure class on its own instead of sliding from one bug to another."""
    key = re.sub(r"[^A-Za-z0-9]+", "_", f"{failure.kind}_{failure.path}").strip("_")
    if key not in _failure_classes:
        _failure_classes[key] = type(f"LifecycleFailure_{key}", (Failure,), {})
    return _failure_classes[key]


class Lineage:
    """One dataset through its life, and what was published of it."""

    def __init__(self, path: str, model: DatasetModel, how: str, url: str, cache: str) -> None:
        self.path = path
        self.model = model
        self.flags = {how}
        self.import_gmeta: Optional[Dict[str, bytes]] = None  # .gmeta bytes of an unchanged import
        self.url = url
        self.cache = cache  # this node's warm cache
        self.pushed: Optional[DatasetModel] = None
        self.snapshot: Optional[DatasetModel] = None
        self.snapshot_files_changed = False
        self.snapshots = 0  # published so far: their layout alternates
        self.order: List[str] = []
        self.removed: List[str] = []  # ids removed at some point
        self.chunk_of: Dict[str, int] = {}  # id -> chunk number, as last listed
        # Videos whose meta was edited since the last export in place: id -> the
        # video as edited (edit_rules.py; a re-index must not revert them).
        self.unexported_edits: Dict[str, Video] = {}
        # Tags of the dataset: name -> the model when it was tagged (version_rules.py).
        self.tags: Dict[str, DatasetModel] = {}


class _Paired:
    """The data files of ``files`` whose chunk number has a .gmeta in ``meta_dir``."""

    def __init__(self, files: Any, meta_dir: str) -> None:
        self.files, self.meta_dir = files, meta_dir

    def names(self) -> List[str]:
        numbers = {re.search(r"\d+", n).group() for n in os.listdir(self.meta_dir)
                   if re.match(r"^meta.*\.gmeta$", n)}
        return [n for n in self.files.names() if re.match(r"^data.*\.gulp$", n)
                and re.search(r"\d+", n).group() in numbers]

    def read(self, name: str) -> bytes:
        return self.files.read(name)

    def describe(self, name: str) -> str:
        return self.files.describe(name)


class Held:
    """A pickled reader kept for later, as a DataLoader worker would hold it."""

    def __init__(self, blob: bytes, kind: str, source: str, lineage: Lineage,
                 expected: Optional[DatasetModel], ids: List[str]) -> None:
        self.blob, self.kind, self.source, self.lineage = blob, kind, source, lineage
        self.expected = expected  # for a URL: the generation it pinned
        self.ids = ids  # a VideoDataset's items: the ids when it was made
        self.url_reused = False  # its URL's prefix was wiped and another dataset pushed there


class LifecycleMachine(bucket_rules.BucketFaults, SamplerRules, EditRules, VersionRules,
                       RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        assert SESSION is not None, "the test sets machine.SESSION"
        self.s = SESSION
        self.s.counters.examples += 1
        self.example = self.s.counters.examples
        self.root = os.path.join(self.s.work, f"example-{self.example}")
        os.makedirs(self.root)
        self.counter = 0
        self.cur: Optional[Lineage] = None
        # Directories left behind by a copy: path -> model, None if removed.
        self.frozen: Dict[str, Optional[DatasetModel]] = {}
        self.held: List[Held] = []
        self.log: List[str] = []
        self.steps = 0

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- helpers -------------------------------------------------------------------------

    def _next(self) -> int:
        self.counter += 1
        return self.counter

    def _dir(self, stem: str) -> str:
        return os.path.join(self.root, f"{stem}{self._next()}")

    def note(self, text: str) -> None:
        self.log.append(text)

    def _env(self, cache: Optional[str] = None, **extra: Optional[str]) -> Dict[str, Optional[str]]:
        env: Dict[str, Optional[str]] = {"GULPDB_CACHE": cache or self.cur.cache,
                                         "GULPDB_TEST_FS_TYPE": None}
        env.update(extra)
        return env

    def _cli(self, *args: str, expect: Optional[int] = 0, path: Optional[str] = None,
             stdin: Optional[bytes] = None):
        return self.s.cli.run(*args, expect=expect, path=path, stdin=stdin,
                              env={"GULPDB_CACHE": self.cur.cache} if self.cur else None)

    def _run(self, names: Any, fn: Callable[[], None]) -> None:
        """Runs one step (counted as the rule variant ``names``, or each of a
        list of them), then checks every read path; a failure fails the test,
        with the steps that led to it."""
        for name in [names] if isinstance(names, str) else names:
            self.s.counters.rules[name] += 1
        self.s.counters.steps += 1
        self.steps += 1
        try:
            fn()
            if self.cur is not None:
                self._verify()
        except Failure as f:
            self._fail(f)

    def _check_verdict(self) -> Optional[bool]:
        """What `check --deep` says of the current dataset (None: no dataset, or
        check itself failed), for the failure's message: check must see a
        broken state."""
        if self.cur is None or not os.path.isdir(self.cur.path):
            return None
        try:
            r = self._cli("check", self.cur.path, "--deep", "--json", "-q", expect=None,
                          path="cli check --deep")
            return r.returncode == 0 and json.loads(r.stdout).get("healthy") is True
        except (Failure, ValueError):
            return None

    def _fail(self, f: Failure) -> None:
        """Raises ``f`` as this example's failure (one exception class per kind
        and read path), with the steps that led to it and what `check --deep`
        says of the dataset now; records the run's first failure."""
        c = self.s.counters
        history = f"  history of the dataset: {sorted(self.cur.flags)}\n" if self.cur else ""
        if c.first_failure is None:
            c.first_failure = {"example": c.examples, "step": c.steps, "seconds":
                               round(time.monotonic() - c.started, 1), "failure": str(f)[:300],
                               "steps": list(self.log)}
        steps = "\n  ".join(self.log)
        verdict = {True: "healthy", False: "not healthy", None: "-"}[self._check_verdict()]
        raise _failure_class(f)(f.kind, f.path,
                                f"{f.text}\n  steps of this example:\n  {steps}\n{history}"
                                f"  (`gulpdb check --deep` of the dataset now: {verdict})"
                                ) from None

    def _video_frames(self, seed: int, count: int) -> List[bytes]:
        gray = seed % 7 == 3
        height, width = (16, 16) if seed % 5 else (8, 24)
        return [make_jpeg(seed * 31 + i, height, width, gray, quality=70 + seed % 25)
                for i in range(count)]

    def _python_id(self, seed: int) -> str:
        n = self._next()
        return [f"v{n}", f"vidé-{n}", f"{1000 + n}", f"d/v{n}"][seed % 4]

    def _python_videos(self, count: int, seed: int) -> List[Tuple[str, List[bytes], Dict]]:
        out = []
        for k in range(count):
            id_ = self._python_id(seed + k)
            meta = {"id": id_, "k": (seed + k) % 5, "tag": TAGS[(seed + k) % 3]}
            out.append((id_, self._video_frames(seed + 17 * k, 1 + (seed + k) % 3), meta))
        return out

    def _pick(self, ids: List[str], picks: List[int]) -> List[str]:
        chosen: List[str] = []
        for p in picks:
            if ids:
                id_ = ids[p % len(ids)]
                if id_ not in chosen:
                    chosen.append(id_)
        return chosen

    # ---- making datasets -----------------------------------------------------------------

    def _write_frame_sources(self, count: int, seed: int, labeled: bool,
                             dup: Optional[str]) -> Tuple[str, List[Tuple[str, List[bytes],
                                                                           Optional[str]]]]:
        """A --frames-dir source: folders of JPEG frames (+ labels.csv)."""
        src = self._dir("frames-src")
        os.makedirs(src)
        videos = []
        for k in range(count):
            n = self._next()
            id_ = [f"f{n}", f"fé{n}", f"{5000 + n}"][(seed + k) % 3]
            if k == 0 and dup is not None:
                id_ = dup
            label = LABELS[(seed + k) % len(LABELS)] if labeled else None
            videos.append((id_, self._video_frames(seed + 13 * k, 1 + (seed + k) % 3), label))
        for id_, frames, _ in videos:
            os.makedirs(os.path.join(src, id_))
            for i, jpeg in enumerate(frames):
                with open(os.path.join(src, id_, f"{i:04d}.jpg"), "wb") as f:
                    f.write(jpeg)
        if labeled:
            with open(os.path.join(src, "labels.csv"), "w", encoding="utf-8") as f:
                for id_, _, label in videos:
                    f.write(f"{id_};{label}\n")
        return src, videos

    def _ingest_frames(self, target: str, count: int, seed: int, labeled: bool,
                       dup: Optional[str], on_duplicate: str, model: DatasetModel,
                       extra: Tuple[str, ...] = ()) -> None:
        src, videos = self._write_frame_sources(count, seed, labeled, dup)
        args = ["ingest", target, "--frames-dir", src, "--keep-jpeg", "-q",
                "--on-duplicate", on_duplicate, *extra]
        if labeled:
            args += ["--labels", os.path.join(src, "labels.csv")]
        self._cli(*args, path="gulpdb ingest")
        if labeled:
            model.label2idx = extend_labels(model.label2idx, [v[2] for v in videos])
        for id_, frames, label in videos:
            if id_ in model.videos and on_duplicate == "skip":
                continue
            meta = {"id": id_} if label is None else {
                "id": id_, "label": label, "idx": model.label2idx[label]}
            model.videos[id_] = Video.of(frames, [meta])
        self.note(f"  ingest {target} --frames-dir: {[(v[0], v[2]) for v in videos]} "
                  f"(--on-duplicate {on_duplicate})")

    def _ingest_resumed(self, target: str, count: int, seed: int, model: DatasetModel,
                        extra: Tuple[str, ...]) -> None:
        """An ingest into a new dataset that stops (--strict, --batch 1) at a bad
        source listed last keeps the videos it committed and says so; the same
        command, once the source is fixed, resumes: every video once."""
        src, videos = self._write_frame_sources(count, seed, False, None)
        bad = os.path.join(src, "zzbad")  # listed after every id _write_frame_sources makes
        os.makedirs(bad)
        with open(os.path.join(bad, "0000.jpg"), "wb") as f:
            f.write(b"not a jpeg")
        args = ["ingest", target, "--frames-dir", src, "--keep-jpeg", "-q", "--strict",
                "--batch", "1", *extra]
        failed = self._cli(*args, expect=1, path="gulpdb ingest")
        kept = (f"kept {target}: {count} video{'' if count == 1 else 's'} committed before the "
                "failure; re-run the same command to resume")
        if kept not in failed.stderr:
            raise Failure("mismatch", "gulpdb ingest", f"{failed.describe()}: no '{kept}'")
        listed = sorted(line.split("\t")[0] for line in
                        self._cli("ls", target, path="cli ls").stdout.splitlines())
        if listed != sorted(v[0] for v in videos):
            raise Failure("mismatch", "cli ls", f"after the failed ingest: {listed}, the "
                          f"committed videos are {sorted(v[0] for v in videos)}")
        frames = self._video_frames(seed + 91, 2)
        for i, jpeg in enumerate(frames):
            with open(os.path.join(bad, f"{i:04d}.jpg"), "wb") as f:
                f.write(jpeg)
        self._cli(*args, path="gulpdb ingest")
        for id_, frames_, _ in videos + [("zzbad", frames, None)]:
            model.videos[id_] = Video.of(frames_, [{"id": id_}])
        self.note(f"  ingest {target} --strict failed at zzbad, kept {[v[0] for v in videos]}; "
                  "resumed")

    def _write_gulpio_dir(self, path: str, seed: int, chunks: int,
                          twice: bool) -> Tuple[DatasetModel, List[str]]:
        """A GulpIO directory written by gulpio_format (GulpIO2's rules), and its model."""
        os.makedirs(path, exist_ok=True)
        numbers = [[0, 1, 2], [0, 2, 10], [3, 1, 12]][seed % 3][:chunks]
        model = DatasetModel()
        per_chunk: List[List[Tuple[str, List[bytes], Dict]]] = []
        for c in range(chunks):
            videos = []
            for k in range(1 + (seed + c) % 3):
                n = self._next()
                id_ = f"g{n}" if (seed + k) % 4 else f"{2000 + n}"
                videos.append((id_, self._video_frames(seed + 7 * c + k, 1 + (seed + k) % 3),
                               LABELS[(seed + c + k) % len(LABELS)]))
            per_chunk.append(videos)
        labels = sorted({label for videos in per_chunk for _, _, label in videos})
        model.label2idx = {label: i for i, label in enumerate(labels)}
        data_names = []
        for number, videos in zip(numbers, per_chunk):
            appends = [(id_, frames, {"id": id_, "label": label, "idx": model.label2idx[label]})
                       for id_, frames, label in videos]
            if twice and number == numbers[0]:
                id_, frames, meta = appends[0]
                again = self._video_frames(seed, 2 + seed % 3)[-1:]  # same size, new image
                appends.append((id_, again, {"id": id_, "note": "appended again"}))
            data, _ = gulpio_format.write_chunk(path, number, appends)
            data_names.append(data)
            for id_, frames, meta in appends:
                if id_ in model.videos:
                    old = model.videos[id_]
                    model.videos[id_] = Video(old.frames + tuple(frames),
                                              old.meta_data + (json.dumps(meta),))
                else:
                    model.videos[id_] = Video.of(frames, [meta])
        gulpio_format.write_label_map(path, model.label2idx)
        self.note(f"  GulpIO dir {path}: chunks {numbers[:chunks]}, ids "
                  f"{list(model.videos)}{' (one id appended twice)' if twice else ''}")
        return model, data_names

    def _read_gmeta_files(self, path: str) -> Dict[str, bytes]:
        out = {}
        for name in os.listdir(path):
            if re.match(r"^meta.*\.gmeta$", name):
                with open(os.path.join(path, name), "rb") as f:
                    out[name] = f.read()
        return out

    def _changed(self) -> None:
        """The dataset was written: an export no longer reproduces the imported files."""
        self.cur.import_gmeta = None

    # ---- checking ------------------------------------------------------------------------

    def _sample(self, ids: List[str], k: int) -> List[str]:
        ids = sorted(ids)
        if not ids:
            return []
        start = self.steps % len(ids)
        return [ids[(start + i) % len(ids)] for i in range(min(k, len(ids)))]

    def _query_value(self, key: str) -> Optional[str]:
        values = []
        for id_ in sorted(self.cur.model.videos):
            meta = self.cur.model.videos[id_].meta
            if isinstance(meta, dict) and key in meta and isinstance(meta[key], (str, int)):
                values.append(meta[key] if isinstance(meta[key], str) else json.dumps(meta[key]))
        return values[self.steps % len(values)] if values else None

    def _verify(self) -> None:
        """Every local read path against the model."""
        s, L = self.s, self.cur
        m, p = L.model, L.path
        L.order = checks.cli_listing(s, p, m, chunk_of=L.chunk_of)
        checks.cli_info(s, p, m)
        sample = self._sample(list(m.videos), 1)
        for id_ in sample:
            checks.cli_show(s, p, id_, m)
        intact = self._sample([i for i in m.videos if i not in m.damaged], 1)
        if intact:
            checks.cli_extract(s, p, intact[0], m, self._dir("extract"))
        if m.damaged:
            checks.damaged_reads(s, p, m, self._dir("extract-damaged"), env=self._env())
        checks.cli_check(s, p, damaged=m.damaged)
        checks.py_dataset(s, p, m, "py Dataset", pixels=True, env=self._env(), order=L.order)
        checks.gulp_directory(s, p, m, "GulpDirectory", env=self._env())
        checks.label_map_file(s, p, m, "label2idx.json")
        checks.view_api(s, p, m, L.order, intact[0] if intact else None)
        for key in sorted(m.meta_keys):
            value = self._query_value(key)
            if value is not None:
                checks.cli_where(s, p, key, value, m)
        if L.snapshot is not None:
            self._verify_snapshot()

    def _verify_snapshot(self) -> None:
        L, path = self.cur, "snapshot reader (network fs)"
        try:
            got = self.s.reader.call("read_dataset", path, source=L.path, pixels=False,
                                     skip=sorted(L.model.damaged),
                                     env=self._env(GULPDB_TEST_FS_TYPE="lustre"))
        except Failure as f:
            # A snapshot from before a compaction may name deleted chunk files
            # (README "Maintenance"): a clear error is right, a wrong answer is not.
            if f.kind == "error" and L.snapshot_files_changed and f.exc_type in CLEAN_ERRORS:
                self.s.counters.reads[path + " (refused: files compacted)"] += 1
                return
            raise
        want = L.snapshot
        if L.model.damaged:  # the snapshot reads the same chunk files
            # (the same frames: a meta edit since the snapshot moves none)
            want = L.snapshot.copy()
            want.damaged = {i: f for i, f in L.model.damaged.items()
                            if i in want.videos
                            and want.videos[i].frames == L.model.videos[i].frames}
        checks.check_read_all(path, got, want)
        self.s.counters.reads[path] += 1

    def _verify_url(self, cache: str, fresh: bool) -> None:
        s, L = self.s, self.cur
        want, url = L.pushed, L.url
        env = {"GULPDB_CACHE": cache}
        tag = "fresh" if fresh else "warm"
        got = checks.py_dataset(s, url, want, f"url py Dataset ({tag} cache)", pixels=fresh,
                                env=self._env(cache))
        if fresh and got.get("remote", {}).get("snapshot_downloaded") is False:
            raise Failure("mismatch", "url py Dataset (fresh cache)",
                          "an empty cache did not download the snapshot")
        self._verify_frame_cache(url, want, cache, small=not fresh)
        ids = checks.cli_listing(s, url, want, prefix="url ", env=env)
        if list(got["ids"]) != ids:
            raise Failure("mismatch", "url cli ls", f"order {ids} differs from Python's "
                          f"{got['ids']}")
        sample = self._sample(list(want.videos), 1)
        for id_ in sample:
            checks.cli_show(s, url, id_, want, prefix="url ", env=env)
            checks.cli_extract(s, url, id_, want, self._dir("extract"), prefix="url ", env=env)
        checks.cli_check(s, url, prefix="url ", env=env)
        checks.gulp_directory(s, url, want, "url GulpDirectory", env=self._env(cache))
        prefix = url[len(f"s3://{BUCKET}/"):]
        bucket = gulpio_format.BucketFiles(s.boto, BUCKET, prefix)
        checks.gulpio_view("bucket as GulpIO dir", bucket, want)
        s.counters.reads["bucket as GulpIO dir"] += 1

    def _frame_cache_stats(self, url: str, cache: str, extra: Dict[str, str]) -> Dict[str, Any]:
        env = dict(self._env(cache, **extra))
        env.pop("GULPDB_TEST_FS_TYPE", None)
        out = self.s.cli.run("info", url, "--cache", "--json", env=env,
                             path="url cli info --cache")
        return json.loads(out.stdout)["frame_cache"]

    def _verify_frame_cache(self, url: str, want: DatasetModel, cache: str, small: bool) -> None:
        """Epoch 2 of a training node: the frames again, from the node's frame
        cache the read before filled. On a warm cache (`small`) every cached
        block is damaged first (each is then fetched again), and a third read
        runs under a bound so small that every block it fills evicts another.
        The frames must be the pushed model's; the cache serves what it holds
        (hits) and never a block whose frames fail their CRC-32C (refetched:
        only a store that lied)."""
        s = self.s
        path = f"url py Dataset (frame cache, {'damaged' if small else 'epoch 2'})"
        damaged = 0
        if small:
            for root, _, files in os.walk(os.path.join(cache, "frames", "blocks")):
                for name in files:
                    flip_bit(os.path.join(root, name), 20, 3)  # in the header
                    damaged += 1
        before = self._frame_cache_stats(url, cache, {})
        checks.py_dataset(s, url, want, path, pixels=False, env=self._env(cache))
        after = self._frame_cache_stats(url, cache, {})
        intact = [v for i, v in want.videos.items() if i not in want.damaged and v.frames]
        if intact and after["hits"] + after["damaged"] <= before["hits"] + before["damaged"]:
            raise Failure("mismatch", path, "the second read found nothing in the frame cache")
        if small and damaged and intact and after["damaged"] <= before["damaged"]:
            raise Failure("mismatch", path, f"{damaged} damaged block files went unnoticed")
        if small:
            tiny = {"GULPDB_FRAME_CACHE_BYTES": "64K", "GULPDB_FRAME_CACHE_BLOCK": "64K"}
            checks.py_dataset(s, url, want, "url py Dataset (frame cache, tiny bound)",
                              pixels=False, env=self._env(cache, **tiny))
            after = self._frame_cache_stats(url, cache, tiny)
        if not want.damaged and after["refetched"] != before["refetched"]:
            raise Failure("mismatch", path, "a cached block passed its own checks with frames "
                          "that fail their CRC-32C")

    # ---- rules ---------------------------------------------------------------------------

    @precondition(lambda self: self.cur is None)
    @rule(how=st.sampled_from(["python", "cli", "ingest", "ingest fails, resumed",
                               "import GulpIO dir"]),
          count=st.integers(0, 3), seed=st.integers(0, 999), vpc=st.integers(1, 3),
          checksums=st.booleans(), twice=st.booleans())
    def create(self, how: str, count: int, seed: int, vpc: int, checksums: bool,
               twice: bool) -> None:
        def go() -> None:
            self.s.counters.lineages += 1
            n = self._next()
            path = os.path.join(self.root, f"ds{n}")
            url = f"s3://{BUCKET}/run{os.getpid()}-ex{self.example}-l{n}"
            model = DatasetModel()
            self.cur = Lineage(path, model, how, url, os.path.join(self.root, f"cache{n}"))
            self.note(f"create ({how}) {path} videos_per_chunk={vpc} checksums={checksums}")
            settings = ["--videos-per-chunk", str(vpc)] + ([] if checksums else ["--no-checksums"])
            if how == "python":
                videos = self._python_videos(count, seed)
                self.s.reader.call("write", "py Dataset writer", path=path, videos=videos,
                                   create={"videos_per_chunk": vpc, "checksums": checksums})
                for id_, frames, meta in videos:
                    model.videos[id_] = Video.of(frames, [meta])
                self.note(f"  python writer appended {[v[0] for v in videos]}")
            elif how == "cli":
                self._cli("create", path, *settings, path="gulpdb create")
            elif how == "ingest":
                self._ingest_frames(path, max(count, 1), seed, seed % 2 == 0, None, "skip", model,
                                    extra=tuple(settings))
            elif how == "ingest fails, resumed":
                self._ingest_resumed(path, max(count, 1), seed, model, tuple(settings))
            else:
                model_, _ = self._write_gulpio_dir(path, seed, 1 + count % 3, twice)
                self.cur.model = model_
                if seed % 2:
                    self._cli("import", path, "-q", *([] if checksums else ["--no-checksums"]),
                              path="gulpdb import")
                else:
                    self.s.reader.call("import_gulpio", "py import_gulpio", path=path)
                self.cur.import_gmeta = self._read_gmeta_files(path)
                self.cur.flags.add("imported")
        self._run(f"create ({how})", go)

    @precondition(lambda self: self.cur is not None)
    @rule(count=st.integers(1, 3), seed=st.integers(0, 999),
          dup=st.sampled_from(["new", "new", "replace", "skip", "removed"]),
          commit_each=st.booleans())
    def append_python(self, count: int, seed: int, dup: str, commit_each: bool) -> None:
        def go() -> None:
            L = self.cur
            videos = self._python_videos(count, seed)
            existing = sorted(L.model.videos)
            gone = sorted(set(L.removed) - set(L.model.videos))
            if dup == "removed" and gone:  # an id that was removed comes back, new frames
                old = gone[seed % len(gone)]
                videos[0] = (old, videos[0][1], {"id": old, "k": 7, "tag": "back"})
            elif dup in ("replace", "skip") and existing:
                old = existing[seed % len(existing)]
                videos[0] = (old, videos[0][1], {"id": old, "k": 9, "tag": "replaced"})
            on_duplicate = dup if dup in ("replace", "skip") else "error"
            # The with-block's end commits the last batch (Writer.commit_last): the
            # direct path, or the journal when commit_each journaled others first.
            self.s.reader.call("write", "py Dataset writer", path=L.path, videos=videos,
                               on_duplicate=on_duplicate, commit_each=commit_each)
            for id_, frames, meta in videos:
                if id_ in L.model.videos and on_duplicate == "skip":
                    continue
                L.model.videos[id_] = Video.of(frames, [meta])
            self._changed()
            self.note(f"append (python writer, on_duplicate={on_duplicate}, "
                      f"commit_each={commit_each}) {[v[0] for v in videos]}")
        self._run("append (python writer)", go)

    @precondition(lambda self: self.cur is not None)
    @rule(source=st.sampled_from(["frames", "images"]), count=st.integers(1, 3),
          seed=st.integers(0, 999), labeled=st.booleans(),
          dup=st.sampled_from(["none", "none", "skip", "replace"]))
    def ingest_cli(self, source: str, count: int, seed: int, labeled: bool, dup: str) -> None:
        def go() -> None:
            L = self.cur
            if source == "frames":
                candidates = sorted(i for i in L.model.videos if "/" not in i)
                old = candidates[seed % len(candidates)] if dup != "none" and candidates else None
                self.note(f"ingest (cli --frames-dir) into {L.path}")
                self._ingest_frames(L.path, count, seed, labeled, old,
                                    "replace" if dup == "replace" else "skip", L.model)
            else:
                self._ingest_images(count, seed, dup)
            self._changed()
        self._run(f"ingest (cli --{source}-dir)", go)

    def _ingest_images(self, count: int, seed: int, dup: str) -> None:
        L = self.cur
        src = self._dir("images-src")
        images = []
        candidates = sorted(i for i in L.model.videos if re.match(r"^[a-z ]+/img\d+\.jpg$", i))
        for k in range(count):
            label = LABELS[(seed + k) % len(LABELS)]
            id_ = f"{label}/img{self._next()}.jpg"
            if k == 0 and dup != "none" and candidates:
                id_ = candidates[seed % len(candidates)]
                label = id_.split("/")[0]
            jpeg = self._video_frames(seed + 11 * k, 1)
            os.makedirs(os.path.join(src, label), exist_ok=True)
            with open(os.path.join(src, id_), "wb") as f:
                f.write(jpeg[0])
            images.append((id_, jpeg, label))
        on_duplicate = "replace" if dup == "replace" else "skip"
        self._cli("ingest", L.path, "--images-dir", src, "--keep-jpeg", "-q", "--on-duplicate",
                  on_duplicate, path="gulpdb ingest")
        L.model.label2idx = extend_labels(L.model.label2idx, [i[2] for i in images])
        for id_, frames, label in images:
            if id_ in L.model.videos and on_duplicate == "skip":
                continue
            L.model.videos[id_] = Video.of(frames, [{"id": id_, "label": label,
                                                     "idx": L.model.label2idx[label]}])
        self.note(f"ingest (cli --images-dir) {[i[0] for i in images]} "
                  f"(--on-duplicate {on_duplicate})")

    @precondition(lambda self: self.cur is not None and self.cur.model.videos)
    @rule(how=st.sampled_from(["python", "cli"]), picks=st.lists(st.integers(0, 99), min_size=1,
                                                                 max_size=3),
          newest=st.booleans())
    def remove(self, how: str, picks: List[int], newest: bool) -> None:
        def go() -> None:
            L = self.cur
            if newest:  # every video of the newest chunk (as last listed)
                last = max(L.chunk_of.values())
                ids = [i for i in L.order if L.chunk_of[i] == last]
            else:
                ids = self._pick(sorted(L.model.videos), picks)
            if how == "python":
                n = self.s.reader.call("remove", "py Dataset.remove", path=L.path, ids=ids)
                if n != len(ids):
                    raise Failure("mismatch", "py Dataset.remove",
                                  f"removed {n} of {len(ids)} present ids {ids}")
            else:
                self._cli("remove", L.path, *ids, path="gulpdb remove")
            L.model.remove(ids)
            L.removed.extend(ids)
            self._changed()
            self.note(f"remove ({how}) {ids}")
        self._run(f"remove ({how})", go)

    @precondition(lambda self: self.cur is not None)
    @rule()
    def compact(self) -> None:
        def go() -> None:
            self._cli("compact", self.cur.path, "-q", path="gulpdb compact")
            self.cur.snapshot_files_changed = True
            self._changed()
            self.note("compact")
        self._run("compact", go)

    @precondition(lambda self: self.cur is not None)
    @rule(shard=st.sampled_from(["python", "ingest", "gulpio"]), inside=st.booleans(),
          count=st.integers(1, 3), seed=st.integers(0, 999),
          dup=st.sampled_from(["none", "none", "skip", "replace", "error"]), vpc=st.integers(1, 3))
    def merge(self, shard: str, inside: bool, count: int, seed: int, dup: str,
              vpc: int) -> None:
        def go() -> None:
            L = self.cur
            n = self._next()
            where = os.path.join(L.path, "shards", f"s{n}") if inside else os.path.join(
                self.root, f"shard{n}")
            os.makedirs(os.path.dirname(where), exist_ok=True)
            shard_model = DatasetModel()
            candidates = sorted(i for i in L.model.videos if "/" not in i)
            old = candidates[seed % len(candidates)] if dup != "none" and candidates else None
            if shard == "python":
                videos = self._python_videos(count, seed)
                if old is not None:
                    videos[0] = (old, videos[0][1], {"id": old, "k": 8, "tag": "from a shard"})
                self.s.reader.call("write", "py Dataset writer", path=where, videos=videos,
                                   create={"videos_per_chunk": vpc})
                for id_, frames, meta in videos:
                    shard_model.videos[id_] = Video.of(frames, [meta])
            elif shard == "ingest":
                self._ingest_frames(where, count, seed, True, old, "skip", shard_model,
                                    extra=("--videos-per-chunk", str(vpc)))
            else:
                old = None  # a GulpIO shard brings new ids only
                shard_model, _ = self._write_gulpio_dir(where, seed, 1 + count % 2, False)
                self._cli("import", where, "-q", path="gulpdb import")
            args = ["merge", L.path, where, "-q"]
            duplicate = old is not None
            if dup in ("skip", "replace", "error"):
                args += ["--on-duplicate", dup]
            self.note(f"merge ({'attach in place' if inside else 'copy'}) {shard} shard {where}: "
                      f"{list(shard_model.videos)}, --on-duplicate {dup}"
                      f"{' (shares id ' + repr(old) + ')' if duplicate else ''}")
            if duplicate and dup in ("error", "none"):
                r = self._cli(*args, expect=None, path="gulpdb merge")
                if r.returncode != 1:
                    raise Failure("exit", "gulpdb merge", "a shard sharing an id with the output "
                                  f"merged with --on-duplicate error: {r.describe()}")
                L.flags.add("merge refused")
                return  # refused: nothing changed
            self._cli(*args, path="gulpdb merge")
            new_map, renumber = merge_labels(L.model, shard_model)
            for id_, video in shard_model.videos.items():
                if id_ in L.model.videos and dup == "skip":
                    continue
                L.model.videos[id_] = renumbered(video, renumber)
            if new_map is not None:
                L.model.label2idx = new_map
            if inside:
                L.flags.add("attached")
            self._changed()
        self._run(f"merge ({'attach in place' if inside else 'copy'})", go)

    @precondition(lambda self: self.cur is not None and self.cur.model.videos)
    @rule(how=st.sampled_from(["ids_file", "where", "python", "remove"]),
          name=st.sampled_from(["train", "val", "é s"]),
          picks=st.lists(st.integers(0, 99), min_size=1, max_size=4), seed=st.integers(0, 99))
    def split(self, how: str, name: str, picks: List[int], seed: int) -> None:
        m = self.cur.model
        key = ["label", "k", "tag", "id"][seed % 4]
        value = self._query_value(key)
        if how == "remove" and name not in m.splits:
            how = "ids_file"  # nothing to remove: set it instead
        if how == "where" and value is None:
            how = "ids_file"  # no video has that key
        ids = self._pick(sorted(m.videos), picks)

        def go() -> None:
            L = self.cur
            if how == "ids_file":
                self._cli("split", L.path, name, "--ids-file", "-",
                          stdin=("\n".join(ids) + "\n").encode(), path="gulpdb split")
                m.splits[name] = ids
                self.note(f"split {name!r} --ids-file {ids}")
            elif how == "python":
                self.s.reader.call("set_split", "py Writer.set_split", path=L.path, name=name,
                                   ids=ids)
                m.splits[name] = ids
                self.note(f"split {name!r} (python Writer.set_split) {ids}")
            elif how == "remove":
                self._cli("split", L.path, name, "--remove", path="gulpdb split")
                del m.splits[name]
                self.note(f"split {name!r} --remove")
            else:
                self._cli("split", L.path, name, "--where", f"{key}={value}",
                          path="gulpdb split")
                got = json.loads(self._cli("split", L.path, name, "--json",
                                           path="cli split").stdout)
                expected = sorted(i for i, v in m.videos.items()
                                  if checks.matches_query(v.meta, key, value))
                self.note(f"split {name!r} --where {key}={value}: {got}")
                if sorted(got) != expected:
                    raise Failure("mismatch", "cli split", f"split --where {key}={value}: {got}, "
                                  f"the model has {expected}")
                m.splits[name] = got  # in the dataset's order, as listed
            checks.cli_splits(self.s, L.path, m)
        names = {"ids_file": "split --ids-file", "where": "split --where",
                 "python": "split (python)", "remove": "split --remove"}
        self._run(names[how], go)

    @precondition(lambda self: self.cur is not None)
    @rule(key=st.sampled_from(["label", "k", "tag", "id"]), drop=st.booleans())
    def meta_index(self, key: str, drop: bool) -> None:
        dropping = drop and self.cur is not None and key in self.cur.model.meta_keys

        def go() -> None:
            L = self.cur
            if dropping:
                self._cli("index", L.path, "--drop", key, path="gulpdb index")
                L.model.meta_keys.discard(key)
            else:
                self._cli("index", L.path, "--meta-key", key, path="gulpdb index")
                L.model.meta_keys.add(key)
            self.note(f"index {'--drop' if dropping else '--meta-key'} {key}")
            checks.cli_index_keys(self.s, L.path, L.model)
        self._run("index --drop" if dropping else "index --meta-key", go)

    @precondition(lambda self: self.cur is not None)
    @rule(expr=query_model.expressions(QUERY_KEYS, QUERY_STRINGS), python=st.booleans())
    def query(self, expr: Any, python: bool) -> None:
        """A random expression of the query language: the engine's answer must be
        the one query_model computes from the model, in the dataset's order."""
        L = self.cur
        text = query_model.render(expr)
        # The order and chunks as the last step listed them (checked against the model).
        want = [i for i in L.order
                if query_model.evaluate(expr, i, len(L.model.videos[i].frames), L.chunk_of[i],
                                        query_model.first_meta(L.model.videos[i].meta_data))]
        variant = "query (python select)" if python else "query (cli ls --where)"

        def go() -> None:
            if python:
                got = self.s.reader.call("select", variant, path=L.path, query=text,
                                         env=self._env())
            else:
                out = self._cli("ls", L.path, "--json", "--where", text, path=variant).stdout
                got = [json.loads(line)["id"] for line in out.splitlines() if line.strip()]
            self.note(f"query {text!r}: {got}")
            if got != want:
                raise Failure("mismatch", variant, f"{text!r} selects {got}, the model {want}")
        self._run(variant, go)

    @precondition(lambda self: self.cur is not None)
    @rule(in_place=st.booleans())
    def export(self, in_place: bool) -> None:
        def go() -> None:
            L = self.cur
            want = self._gulpio_readable()
            if in_place:
                self._cli("export", L.path, path="gulpdb export")
                self._exported_in_place()
                self.note("export (in place)")
                path = "exported dir (in place)"
                checks.gulpio_view(path, gulpio_format.LocalFiles(L.path), want,
                                   splits=want.splits)
                if L.import_gmeta is not None:
                    now = self._read_gmeta_files(L.path)
                    for name, text in L.import_gmeta.items():
                        if now.get(name) != text:
                            raise Failure("mismatch", path, f"{name} of an unchanged import is "
                                          "not byte-identical to the imported one")
            else:
                out = self._dir("export-out")
                os.makedirs(out)
                self._cli("export", L.path, "-o", out, path="gulpdb export")
                self.note(f"export -o {out}")
                path = "exported dir (-o OUT)"
                # The GulpIO directory an export -o makes: its .gmeta files and
                # the data files they pair with.
                checks.gulpio_view(path, gulpio_format.LocalFiles(out), want,
                                   data_files=gulpio_format.LocalFiles(L.path, pair_with=out),
                                   splits=want.splits)
                # A user copies that directory elsewhere and reads it with
                # gulpdb's GulpIO2 API, which indexes it on first open.
                copy = self._dir("gulpio-copy")
                os.makedirs(copy)
                data = gulpio_format.LocalFiles(L.path, pair_with=out)
                for name in data.names():
                    shutil.copyfile(os.path.join(L.path, name), os.path.join(copy, name))
                for name in os.listdir(out):
                    shutil.copyfile(os.path.join(out, name), os.path.join(copy, name))
                checks.gulp_directory(self.s, copy, want, "GulpDirectory (exported copy)",
                                      env=self._env())
            self.s.counters.reads[path] += 1
        self._run("export (in place)" if in_place else "export (-o OUT)", go)

    def _gulpio_readable(self) -> DatasetModel:
        """The videos GulpIO's readers see in the dataset directory: those of its
        top-level chunks (README: the chunks of attached shards stay in their
        sub-directories, which GulpIO does not look into), and the splits as
        far as they name them (an export's gulpdb_splits.json)."""
        L = self.cur
        chunks = self.s.reader.call("chunks", "py Dataset.chunks", path=L.path, env=self._env())
        attached = {c["number"] for c in chunks if "/" in c["file_name"]}
        want = L.model.copy()
        if attached:
            want.remove([i for i in L.model.videos if L.chunk_of.get(i) in attached])
        return want

    @precondition(lambda self: self.cur is not None and any(
        re.match(r"^meta.*\.gmeta$", n) for n in os.listdir(self.cur.path)))
    @rule(pick=st.integers(0, 99))
    def delete_gmeta(self, pick: int) -> None:
        def go() -> None:
            L = self.cur
            names = sorted(n for n in os.listdir(L.path) if re.match(r"^meta.*\.gmeta$", n))
            name = names[pick % len(names)]
            os.unlink(os.path.join(L.path, name))
            L.flags.add("gmeta deleted")
            self.note(f"rm {name} (its data file stays)")
        self._run("delete a .gmeta", go)

    @precondition(lambda self: self.cur is not None)
    @rule(discard=st.booleans())
    def reindex(self, discard: bool) -> None:
        def go() -> None:
            L = self.cur
            refusals, new = self._expected_reindex(discard)
            args = ["import", L.path, "--reindex", "-q"] + (["--discard-unexported"] if discard
                                                             else [])
            self.note(f"import --reindex{' --discard-unexported' if discard else ''} "
                      f"(expected: {'refusal: ' + '; '.join(refusals) if refusals else 'success'})")
            data_files = {n for n in os.listdir(L.path) if re.match(r"^data.*\.gulp$", n)}
            r = self._cli(*args, expect=None, path="gulpdb import --reindex")
            if refusals:
                if r.returncode != 1:
                    raise Failure("exit", "gulpdb import --reindex",
                                  f"expected a refusal ({'; '.join(refusals)}): {r.describe()}")
                return
            if r.returncode != 0:
                raise Failure("exit", "gulpdb import --reindex", r.describe())
            if discard and set(L.model.videos) - set(new.videos):
                L.flags.add("discarded unexported")
            # The chunk files of dropped videos that gulpdb wrote are deleted,
            # as compaction deletes emptied ones: a snapshot from before may
            # name them (docs/gulpio.md, import.cc's ListLeftBehind).
            if data_files - set(os.listdir(L.path)):
                L.snapshot_files_changed = True
            L.model = new
            L.unexported_edits.clear()
            L.flags.add("imported")
            L.import_gmeta = self._read_gmeta_files(L.path)
        self._run("import --reindex", go)

    def _expected_reindex(self, discard: bool) -> Tuple[List[str], DatasetModel]:
        """What `import --reindex` must do, from the files in the directory
        (README "import"): the reasons it must refuse, and the model it builds."""
        L = self.cur
        names = os.listdir(L.path)
        # Data files without a .gmeta are skipped when the index says gulpdb
        # wrote them (top-level chunks without a .gmeta of their own).
        chunks = self.s.reader.call("chunks", "py Dataset.chunks", path=L.path, env=self._env())
        written_by_gulpdb = {c["file_name"] for c in chunks
                             if not c["meta_file"] and "/" not in c["file_name"]}
        number = lambda n: int(re.search(r"\d+", n).group())  # noqa: E731
        data = {number(n): n for n in names if re.match(r"^data.*\.gulp$", n)}
        meta = {number(n): n for n in names if re.match(r"^meta.*\.gmeta$", n)}
        refusals: List[str] = []
        for n, name in data.items():
            if n not in meta and name not in written_by_gulpdb:
                refusals.append(f"{name} has no .gmeta and gulpdb did not write it")
        for n, name in meta.items():
            if n not in data:
                refusals.append(f"{name} has no data file")
        new = DatasetModel(label2idx=L.model.label2idx, meta_keys=set(L.model.meta_keys))
        pairs = sorted(n for n in data if n in meta)
        if not pairs:
            refusals.append("no data*.gulp / meta*.gmeta pairs")
        files = gulpio_format.LocalFiles(L.path)
        for n in pairs:
            meta_dict = json.loads(files.read(meta[n]).decode("utf-8"))
            blob = files.read(data[n])
            for id_, entry in meta_dict.items():
                if id_ in new.videos:
                    refusals.append(f"id {id_!r} in two chunks")
                frames = [blob[o:o + length - pad] for o, pad, length in entry["frame_info"]]
                new.videos[id_] = Video.of(frames, entry["meta_data"])
        unexported = sorted(set(L.model.videos) - set(new.videos))
        if unexported and not discard:
            refusals.append(f"unexported videos {unexported[:3]}")
        if not discard:
            refusals += self._unexported_edit_refusals(new.videos)
        if "gulpdb_splits.json" in names:
            splits = json.loads(files.read("gulpdb_splits.json").decode("utf-8"))["splits"]
            missing = sorted({i for ids in splits.values() for i in ids} - set(new.videos))
            if missing:
                refusals.append(f"gulpdb_splits.json names ids in no .gmeta: {missing[:3]}")
            new.splits = {k: list(v) for k, v in splits.items()}
        else:
            new.splits = {k: list(v) for k, v in L.model.splits.items()
                          if all(i in new.videos for i in v)}
        return refusals, new

    @precondition(lambda self: self.cur is not None)
    @rule(archive=st.booleans(), move=st.booleans())
    def copy(self, archive: bool, move: bool) -> None:
        def go() -> None:
            L = self.cur
            new = self._dir("copy")
            flag = "-a" if archive else "-r"
            subprocess.run(["cp", flag, L.path, new], check=True, timeout=120)
            if move:
                shutil.rmtree(L.path)
                self.frozen[L.path] = None
            else:
                self.frozen[L.path] = L.model.copy()
            self.note(f"cp {flag} {L.path} {new}{' && rm -r ' + L.path if move else ''}")
            L.flags.add(f"copied (cp {flag})")
            L.path = new
        self._run(f"copy (cp {'-a' if archive else '-r'})", go)

    @precondition(lambda self: self.cur is not None)
    @rule(push=st.booleans(), python=st.booleans(), fresh=st.booleans())
    def push_and_open_url(self, push: bool, python: bool, fresh: bool) -> None:
        """Publishes the dataset (when asked, or when it never was), then opens
        its URL from a fresh cache (a new node) or from this node's warm one.
        The command line pushes with the default layout (partitioned, named
        splits included), Python the whole snapshot, so that
        pushes to one prefix switch between them. (Derived from the drawn
        arguments, not drawn itself: a new draw would change every run's
        sequence, and the seeded bugs test_lifecycle_finds_bugs puts back are
        found at the seed's steps.) Each push from the command line is
        followed by one of bucket_rules.py's faults, in turn, on a copy of
        the dataset at a prefix of its own."""
        L = self.cur
        pushing = push or L.pushed is None
        layout = "whole" if python else "auto"
        faults = self._bucket_fault_due() if pushing and not python else []
        names = ([f"push ({'python' if python else 'cli'})"] if pushing else []) + [
            f"open url ({'fresh' if fresh else 'warm'} cache)"] + faults

        def go() -> None:
            if pushing:
                if python:
                    self.s.reader.call("push", "py push", path=L.path, url=L.url, layout=layout,
                                       env=self._env())
                else:
                    self._cli("push", L.path, L.url, "--jobs", "2", "-q", "--layout", layout,
                              path="gulpdb push")
                L.pushed = L.model.copy()
                L.flags.add("pushed")
                self.note(f"push ({'python' if python else 'cli'}, --layout {layout}) {L.url}")
            cache = self._dir("cache-fresh") if fresh else L.cache
            self.note(f"open {L.url} ({'fresh' if fresh else 'warm'} cache)")
            self._verify_url(cache, fresh=fresh)
            if pushing:  # the tags that push published (version_rules.py)
                self._verify_url_tags(cache)
            # `gulpdb export URL -o OUT`: the .gmeta files of the published
            # dataset, which pair with the bucket's data files.
            out = self._dir("export-url")
            os.makedirs(out)
            self.s.cli.run("export", L.url, "-o", out, env={"GULPDB_CACHE": cache},
                           path="gulpdb export URL")
            prefix = L.url[len(f"s3://{BUCKET}/"):]
            bucket = gulpio_format.BucketFiles(self.s.boto, BUCKET, prefix)
            checks.gulpio_view("exported dir (from url)", gulpio_format.LocalFiles(out), L.pushed,
                               data_files=_Paired(bucket, out), splits=L.pushed.splits)
            self.s.counters.reads["exported dir (from url)"] += 1
            for kind in faults:  # what others do to a bucket (bucket_rules.py)
                self.note(kind)
                self._bucket_fault(kind)
        self._run(names, go)

    @precondition(lambda self: self.cur is not None)
    @rule(seed=st.integers(0, 999), count=st.integers(1, 2))
    def wipe_and_push_other(self, seed: int, count: int) -> None:
        """A training job reads the dataset's URL (published first, if it never
        was), its DataLoader workers holding copies of the reader; then someone
        empties the prefix and publishes another dataset there (issue 19 item
        14): the copies must read what they pinned, or fail, never the new
        dataset's frames or labels. The lineage publishes to a new prefix from
        then on."""
        L = self.cur
        names = ([] if L.pushed is not None else ["push (cli)"]) + [
            "wipe the prefix and push another dataset there"]

        def go() -> None:
            if L.pushed is None:
                self._cli("push", L.path, L.url, "-q", path="gulpdb push")
                L.pushed = L.model.copy()
                L.flags.add("pushed")
                self.note(f"push (cli) {L.url}")
            kind = ["Dataset", "VideoDataset"][seed % 2]
            blob = self.s.reader.call("pickle_open", f"pickled {kind} (url)", kind=kind,
                                      source=L.url, env=self._env())
            self.held.append(Held(blob, kind, L.url, L, L.pushed.copy(),
                                  sorted(L.pushed.videos)))
            self.note(f"a DataLoader worker holds a copy of a {kind} of {L.url}")
            prefix = L.url[len(f"s3://{BUCKET}/"):] + "/"
            listed = self.s.boto.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
            for obj in listed.get("Contents", []):
                self.s.boto.delete_object(Bucket=BUCKET, Key=obj["Key"])
            other = self._dir("other")
            videos = self._python_videos(count, seed)
            self.s.reader.call("write", "py Dataset writer", path=other, videos=videos)
            self._cli("push", other, L.url, "-q", path="gulpdb push")
            model = DatasetModel()
            for id_, frames, meta in videos:
                model.videos[id_] = Video.of(frames, [meta])
            self.note(f"wipe {L.url} and push another dataset there: {[v[0] for v in videos]}")
            # Read the other dataset by URL (a fresh cache: a new node).
            old, L.pushed = L.pushed, model
            try:
                self._verify_url(self._dir("cache-other"), fresh=True)
            finally:
                L.pushed = old
            L.flags.add("prefix reused")
            # The readers open on the old dataset (DataLoader workers' copies)
            # must read what they pinned, or fail: never the new dataset.
            for h in self.held:
                if h.source == L.url:
                    h.url_reused = True
                    self.note(f"  read the copy of a {h.kind} of {L.url} held since before")
                    self._read_held(h, f"pickled {h.kind} (url)")
            L.url = L.url + f"-again{self._next()}"
            L.pushed = None
        self._run(names, go)

    @precondition(lambda self: self.cur is not None)
    @rule(kind=st.sampled_from(["Dataset", "VideoDataset"]))
    def pickle_reader(self, kind: str) -> None:
        """A reader of the local dataset, and of its URL when it was pushed,
        pickled as DataLoader hands it to a worker, read there, and held."""
        def go() -> None:
            L = self.cur
            for remote in ([False, True] if L.pushed is not None else [False]):
                source = L.url if remote else L.path
                path = f"pickled {kind} ({'url' if remote else 'local'})"
                blob = self.s.reader.call("pickle_open", path, kind=kind, source=source,
                                          env=self._env())
                held = Held(blob, kind, source, L, L.pushed.copy() if remote else None,
                            sorted((L.pushed if remote else L.model).videos))
                self.note(f"pickle a {kind} of {source}")
                self._read_held(held, path)
                self.held.append(held)
        self._run(f"pickle {kind}", go)

    @precondition(lambda self: bool(self.held))
    @rule(pick=st.integers(0, 99))
    def read_held_pickle(self, pick: int) -> None:
        def go() -> None:
            held = self.held[pick % len(self.held)]
            remote = held.expected is not None
            self.note(f"read the pickled {held.kind} of {held.source} held since earlier")
            self._read_held(held, f"pickled {held.kind} ({'url' if remote else 'local'})")
        self._run("read a held pickled reader", go)

    def _read_held(self, held: Held, path: str) -> None:
        """Unpickles in the loader worker (another process, as a DataLoader
        worker does) and reads everything: a URL reader must give the generation
        it pinned; a local one the dataset as it is now at its path."""
        if held.expected is not None:
            want: Optional[DatasetModel] = held.expected
        elif self.cur is not None and held.source == self.cur.path:
            want = self.cur.model
        else:
            want = self.frozen.get(held.source)
        env = {"GULPDB_CACHE": held.lineage.cache, "GULPDB_TEST_FS_TYPE": None}
        reused = held.expected is not None and held.url_reused
        try:
            got = self.s.loader.call("pickle_read", path, blob=held.blob, env=env)
        except Failure as f:
            # A reader whose dataset is gone (a local one removed, or the URL's
            # prefix wiped and reused) may fail, clearly.
            if (want is None or reused) and f.kind == "error" and f.exc_type in CLEAN_ERRORS:
                self.s.counters.reads[path + " (refused: dataset gone)"] += 1
                return
            raise
        if want is None:
            if not got.get("items") and not got.get("ids"):
                # A reader of no videos (a VideoDataset made of an empty
                # dataset) never opens it: nothing read, nothing wrong.
                self.s.counters.reads[path + " (nothing to read)"] += 1
                return
            raise Failure("mismatch", path, f"a reader of the removed {held.source} still "
                          "read videos")
        if reused:
            try:
                self._check_held(held, path, got, want)
            except Failure as f:
                raise Failure(f.kind, f.path, "after its prefix was wiped and reused by another "
                              f"dataset: {f.text}")
        else:
            self._check_held(held, path, got, want)
        self.s.counters.reads[path] += 1

    def _check_held(self, held: Held, path: str, got: Dict[str, Any],
                    want: DatasetModel) -> None:
        if got["kind"] == "Dataset":
            checks.check_read_all(path, got, want)
        else:
            # Its ids are fixed when it is made; one removed since is a KeyError.
            items = got["items"]
            if sorted(i for i, _, _ in items) != held.ids:
                raise Failure("mismatch", path, f"items {[i for i, _, _ in items]}, made with "
                              f"{held.ids}")
            for id_, clip, label in items:
                if clip is None:
                    if id_ in want.videos:
                        raise Failure("mismatch", path, f"id {id_!r}: {label}")
                    continue
                if id_ not in want.videos:
                    raise Failure("mismatch", path, f"id {id_!r} was removed, yet it reads")
                video = want.videos[id_]
                ref = np.stack([decode_reference(f) for f in video.frames])
                if clip.shape != ref.shape or not np.array_equal(clip, ref):
                    raise Failure("mismatch", path, f"id {id_!r}: clip {clip.shape} differs "
                                  f"from the model's frames {ref.shape}")
                if label != video.label:
                    raise Failure("mismatch", path, f"id {id_!r}: label {label}, the model "
                                  f"has {video.label}")

    # Six arguments and a name after "merge": Hypothesis orders rules by
    # their number of arguments, then name, and draws one by its index, so a
    # rule placed last leaves every other rule's index, and the sequences the
    # seed gives (which test_lifecycle_finds_bugs counts on), as they were.
    @precondition(lambda self: self.cur is not None and any(
        v.frames for v in self.cur.model.videos.values()))
    @rule(pick=st.integers(0, 99), frame=st.integers(0, 99), bit=st.integers(0, 7),
          at=st.integers(0, 99), held_open=st.booleans(),
          remedy=st.sampled_from(["put back", "put back", "remove (python)", "remove (cli)"]))
    def rot_frame(self, pick: int, frame: int, bit: int, at: int, held_open: bool,
                  remedy: str) -> None:
        """Bit rot: one bit of a committed frame flips on disk (the chunk file
        keeps its size and times). With its CRC-32C in the index every read
        path must then fail on that frame, naming it, and read the video's
        other frames and the other videos as before: a reader opened before
        the damage (``held_open``; its chunk file already open) as well as new
        ones (checks.damaged_reads, `check --deep`). Without a CRC (a dataset
        made with --no-checksums) the damaged bytes read as they are, and
        `info` and `check` say that frames are unverified. Then the user's
        remedy: the bit put back (a restored file), or the video removed."""
        def go() -> None:
            L = self.cur
            ids = sorted(i for i, v in L.model.videos.items() if v.frames)
            id_ = ids[pick % len(ids)]
            video = L.model.videos[id_]
            k = frame % len(video.frames)
            site = self.s.reader.call("frame_site", "py Dataset.info", path=L.path, id=id_,
                                      frame=k, env=self._env())
            kind = "checksummed" if site["checksummed"] else "no checksums"
            self.s.counters.rules[f"rot a frame ({kind})"] += 1
            offset = site["jpeg_size"] * at // 100
            position = site["offset"] + offset
            damaged = bytearray(video.frames[k])
            damaged[offset] ^= 1 << bit
            self.note(f"rot frame {k} of {id_!r}: bit {bit} of byte {position} of "
                      f"{site['file']} ({kind}{', a reader open before' if held_open else ''})")
            rotten = False  # whether the bit is flipped now

            def put_back() -> None:
                nonlocal rotten
                if rotten:
                    flip_bit(site["file"], position, bit)
                    rotten = False

            try:
                if held_open and site["checksummed"]:
                    # A reader opened before the damage, its chunk file open,
                    # reads after it.
                    rotten = True
                    got = self.s.reader.call("read_damaged", "damaged: a reader open before",
                                             env=self._env(), source=L.path, id=id_, intact=[],
                                             other=None, flip=(site["file"], position, bit))
                    status, value = got["outcomes"]["py read_jpegs"]
                    if status != "error" or value[0] != "CorruptionError" or (
                            f"'{id_}' frame {k}" not in value[1]):
                        raise Failure("mismatch", "damaged: a reader open before",
                                      f"id {id_!r} frame {k} was damaged after the reader "
                                      f"opened: read_jpegs gave {status} {value!r}")
                    self.s.counters.reads["damaged: a reader open before"] += 1
                else:
                    rotten = True
                    flip_bit(site["file"], position, bit)
                if site["checksummed"]:
                    L.model.damaged[id_] = {k: bytes(damaged)}
                    self._verify()
                    self._reindex_refuses_damage(id_, k, site)
                else:
                    self._verify_unverified(id_, k, bytes(damaged))
            except BaseException:
                put_back()
                raise
            finally:
                L.model.damaged.clear()
            # Removing the video leaves its damaged bytes in the chunk as
            # garbage, which an older reader (a snapshot, a pushed generation,
            # a held copy of a reader) still lists: with one of those, the
            # bit is put back instead.
            older = L.snapshot is not None or L.pushed is not None or any(
                h.lineage is L for h in self.held)
            if remedy == "put back" or older:
                put_back()
                self.note("  the bit put back")
                return
            if remedy == "remove (python)":
                self.s.reader.call("remove", "py Dataset.remove", path=L.path, ids=[id_])
            else:
                self._cli("remove", L.path, id_, path="gulpdb remove")
            L.model.remove([id_])
            L.removed.append(id_)
            self._changed()
            self.note(f"  {remedy} {id_!r} (its damaged bytes are garbage now)")
        self._run([], go)

    def _reindex_refuses_damage(self, id_: str, k: int, site: Dict[str, Any]) -> None:
        """`import --reindex` computes checksums from the .gulp bytes again: a
        frame whose bytes no longer match the checksum the index has for the
        same place must stop it (exit 1, naming the frame), not be checksummed
        afresh and read as clean. Run where a .gmeta describes the damaged
        bytes and nothing else would refuse the re-index."""
        L = self.cur
        refusals, _ = self._expected_reindex(discard=True)
        if refusals or not self._gmeta_describes(site):
            return
        r = self._cli("import", L.path, "--reindex", "-q", "--discard-unexported", expect=None,
                      path="gulpdb import --reindex (a damaged frame)")
        if r.returncode != 1 or f"'{id_}' frame {k}" not in r.stderr:
            raise Failure("mismatch", "gulpdb import --reindex (a damaged frame)",
                          f"frame {k} of {id_!r} is damaged on disk, yet the re-index did not "
                          f"refuse it: {r.describe()}")
        self.s.counters.reads["damaged: import --reindex refuses"] += 1
        self.note("  import --reindex refused the damaged frame")
        self._verify()

    def _gmeta_describes(self, site: Dict[str, Any]) -> bool:
        """Whether the .gmeta paired with the site's data file lists a frame
        at exactly its offset and JPEG size."""
        data = os.path.basename(site["file"])
        if os.path.dirname(site["file"]) != self.cur.path:
            return False
        digits = re.search(r"\d+", data)
        metas = [n for n in os.listdir(self.cur.path) if re.match(r"^meta.*\.gmeta$", n)
                 and digits and re.search(r"\d+", n).group() == digits.group()]
        files = gulpio_format.LocalFiles(self.cur.path)
        for name in metas:
            for entry in json.loads(files.read(name).decode("utf-8")).values():
                for offset, pad, length in entry["frame_info"]:
                    if offset == site["offset"] and length - pad == site["jpeg_size"]:
                        return True
        return False

    def _verify_unverified(self, id_: str, k: int, damaged: bytes) -> None:
        """A frame without a CRC-32C reads as it is, damaged or not; `info` and
        `check` count its video as unverified."""
        L = self.cur
        got = self.s.reader.call("read_damaged", "damaged: py reads (unverified)",
                                 env=self._env(), source=L.path, id=id_, intact=[], other=None)
        status, value = got["outcomes"]["py read_jpegs"]
        if status != "ok" or got["unchecked"][k] != damaged:
            raise Failure("mismatch", "damaged: py read_jpegs (unverified)",
                          f"id {id_!r} has no checksums: read_jpegs gave {status} {value!r}")
        frames = self.s.reader.call("read_dataset", "damaged: py read_jpegs (unverified)",
                                    env=self._env(), source=L.path, pixels=False)
        if frames["videos"][id_]["jpegs"][k] != damaged:
            raise Failure("mismatch", "damaged: py read_jpegs (unverified)",
                          f"id {id_!r} frame {k}: not the bytes on disk")
        info = json.loads(self._cli("info", L.path, "--json", path="cli info").stdout)
        # Healthy or not (a flipped bit in a JPEG marker is a problem even
        # without checksums), it counts the videos read unverified.
        report = json.loads(self._cli("check", L.path, "--json", "-q", expect=None,
                                      path="cli check").stdout)
        if info["unverified_videos"] == 0 or report["unverified_videos"] < 1 or not any(
                "read unverified" in n for n in report["notes"]):
            raise Failure("mismatch", "cli info/check (unverified)",
                          f"id {id_!r} has no checksums, yet info says "
                          f"{info['unverified_videos']} and check {report['unverified_videos']} "
                          "videos are unverified")
        self.s.counters.reads["damaged: unverified reads"] += 1

    @precondition(lambda self: self.cur is not None)
    @rule()
    def snapshot(self) -> None:
        """Publishes a snapshot for readers on a network file system, in the
        default layout (partitioned) and the whole one in turn (derived, not
        drawn: see push_and_open_url), so that one dataset switches between
        them."""
        def go() -> None:
            L = self.cur
            layout = "whole" if L.snapshots % 2 else "auto"
            self._cli("snapshot", L.path, "--layout", layout, path="gulpdb snapshot")
            L.snapshots += 1
            L.snapshot = L.model.copy()
            L.snapshot_files_changed = False
            self.note(f"snapshot --layout {layout}")
        self._run("snapshot", go)

