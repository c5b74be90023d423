"""The lifecycle machine's version rules (docs/versions.md): tag the dataset
(``gulpdb tag`` or ``Dataset.tag``), open a version and read it on every path
(Python, ``ls``, ``show``, ``extract``, ``check --deep``), diff two versions
(``gulpdb diff --json`` or ``Dataset.diff``, with each read of a version), delete a tag, and compact under
live tags.

The model keeps versions: a tag is a copy of the lineage's model when it was
made (``Lineage.tags``), and every read of the version must answer as that
copy, whatever the lineage did since (appends, meta edits, removes,
compactions, merges). A diff is computed from the two models: ids added and
removed, ids whose meta_data differ, ids whose frames differ.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from . import checks
from .model import DatasetModel
from .procs import Failure

TAG_VARIANTS = ["tag (cli)", "tag (python)"]
READ_VARIANTS = ["open a version"]
DIFF_VARIANTS = ["diff (cli --json)", "diff (python)"]
DELETE_VARIANTS = ["delete a tag (cli)", "delete a tag (python)"]
COMPACT_VARIANTS = ["remove and compact under a tag"]
READ_PATHS = ["version py Dataset", "version cli ls", "version cli show", "version cli extract",
              "version cli check --deep", "version view /api", "diff", "url cli tag (list)"]
NAMES = ["t{}", "run.{}", "v{}-rc_1"]


def expected_diff(a: DatasetModel, b: DatasetModel) -> Dict[str, List[str]]:
    both = sorted(set(a.videos) & set(b.videos))
    return {
        "added": sorted(set(b.videos) - set(a.videos)),
        "removed": sorted(set(a.videos) - set(b.videos)),
        "meta_changed": [i for i in both if a.videos[i].meta_data != b.videos[i].meta_data],
        "frames_changed": [i for i in both if a.videos[i].frames != b.videos[i].frames],
    }


class VersionRules:
    """Mixed into LifecycleMachine (machine.py)."""

    def _tags(self) -> Dict[str, DatasetModel]:
        return self.cur.tags

    def _tag_want(self, name: str) -> DatasetModel:
        """The model of tag ``name``, with the frames damaged on disk since that
        it still reads (the same chunk bytes: its frames are the model's)."""
        L = self.cur
        want = L.tags[name].copy()  # with the frames damaged before the tag
        for i, frames in L.model.damaged.items():
            if i in want.videos and want.videos[i].frames == L.model.videos[i].frames:
                want.damaged.setdefault(i, {}).update(frames)
        return want

    def _verify_version(self, name: str) -> None:
        s, L = self.s, self.cur
        want = self._tag_want(name)
        path = "version py Dataset"
        got = s.reader.call("read_dataset", path, env=self._env(), source=L.path, pixels=False,
                            skip=sorted(want.damaged), version=name)
        checks.check_read_all(path, got, want)
        s.counters.reads[path] += 1
        path = "version cli ls"
        r = self._cli("ls", L.path, "--json", "--version", name, path=path)
        rows = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
        checks.expect_ids(path, [row["id"] for row in rows], want)
        if [row["id"] for row in rows] != list(got["ids"]):
            raise Failure("mismatch", path, f"order {[row['id'] for row in rows]} differs from "
                          f"Python's {got['ids']}")
        s.counters.reads[path] += 1
        # The first intact video, not a drawn one: the check draws nothing,
        # so the run's other choices stay as they were.
        intact = next((i for i in sorted(want.videos) if i not in want.damaged), None)
        checks.view_api(s, L.path, want, [row["id"] for row in rows], intact, version=name)
        for id_ in self._sample(sorted(want.videos), 1):
            path = "version cli show"
            shown = json.loads(self._cli("show", L.path, id_, "--json", "--version", name,
                                         path=path).stdout)
            checks.expect_meta_data(path, id_, shown["meta_data"], want.videos[id_])
            s.counters.reads[path] += 1
            if id_ in want.damaged:
                continue
            path = "version cli extract"
            out = self._dir("extract-version")
            self._cli("extract", L.path, id_, "-o", out, "--version", name, path=path)
            frames = []
            for file in sorted(os.listdir(out)):
                with open(os.path.join(out, file), "rb") as f:
                    frames.append(f.read())
            checks.expect_frames(path, id_, frames, want.videos[id_])
            s.counters.reads[path] += 1
        if not want.damaged:
            path = "version cli check --deep"
            r = self._cli("check", L.path, "--deep", "--json", "-q", "--version", name,
                          expect=None, path=path)
            if r.returncode != 0 or not json.loads(r.stdout).get("healthy"):
                raise Failure("mismatch", path, f"the version is not healthy: {r.describe()}")
            s.counters.reads[path] += 1

    def _verify_url_tags(self, cache: str) -> None:
        """After a push: the bucket lists the lineage's tags, and the first of
        them (by name: a deterministic pick, no draw) reads by URL as the model
        kept it, from Python and from the command line."""
        s, L = self.s, self.cur
        env = {"GULPDB_CACHE": cache}
        path = "url cli tag (list)"
        listed = json.loads(s.cli.run("tag", L.url, "--json", path=path, env=env).stdout)
        if sorted(t["name"] for t in listed) != sorted(L.tags):
            raise Failure("mismatch", path, f"the bucket lists tags "
                          f"{sorted(t['name'] for t in listed)}, the dataset has {sorted(L.tags)}")
        s.counters.reads[path] += 1
        if not L.tags:
            return
        name = sorted(L.tags)[0]
        want = self._tag_want(name)
        path = "url version py Dataset"
        got = s.reader.call("read_dataset", path, env=self._env(cache), source=L.url,
                            pixels=False, skip=sorted(want.damaged), version=name)
        checks.check_read_all(path, got, want)
        s.counters.reads[path] += 1
        path = "url version cli ls"
        r = s.cli.run("ls", L.url, "--json", "--version", name, path=path, env=env)
        ids = [json.loads(line)["id"] for line in r.stdout.splitlines() if line.strip()]
        checks.expect_ids(path, ids, want)
        if ids != list(got["ids"]):
            raise Failure("mismatch", path, f"order {ids} differs from Python's {got['ids']}")
        s.counters.reads[path] += 1

    @precondition(lambda self: self.cur is not None)
    @rule(how=st.sampled_from(["cli", "python"]), form=st.integers(0, len(NAMES) - 1))
    def tag_version(self, how: str, form: int) -> None:
        def go() -> None:
            L = self.cur
            name = NAMES[form].format(self._next())
            if how == "cli":
                r = self._cli("tag", L.path, name, "--message", f"step {self.steps}", expect=None,
                              path="gulpdb tag")
                ok = r.returncode == 0
                why = r.describe()
            else:
                try:
                    self.s.reader.call("tag", "py Dataset.tag", path=L.path, name=name)
                    ok, why = True, ""
                except Failure as f:
                    if f.kind != "error":
                        raise
                    ok, why = False, f.text
            if not ok:
                # Only a dataset no writer opens (changed GulpIO files) may refuse.
                r = self._cli("info", L.path, expect=None, path="cli info")
                if r.returncode == 0 and self._writable():
                    raise Failure("exit", f"tag ({how})", why)
                self.note(f"tag {name!r} ({how}) refused: the dataset does not open for writing")
                return
            L.tags[name] = L.model.copy()
            self.note(f"tag ({how}) {name!r}: {len(L.model.videos)} videos")
            self._verify_version(name)
        self._run(f"tag ({how})", go)

    def _writable(self) -> bool:
        """Whether a writer opens the current dataset (a changed GulpIO file keeps it out)."""
        try:
            self.s.reader.call("chunks", "py Dataset.chunks", path=self.cur.path)
            return True
        except Failure as f:
            if f.kind == "error":
                return False
            raise

    @precondition(lambda self: self.cur is not None and self.cur.tags)
    @rule(pick=st.integers(0, 99), other=st.integers(0, 99),
          how=st.sampled_from(["cli --json", "python"]))
    def read_version(self, pick: int, other: int, how: str) -> None:
        def go() -> None:
            names = sorted(self.cur.tags)
            name = names[pick % len(names)]
            self.note(f"open version {name!r}")
            self._verify_version(name)
            # And what changed between it and another version, or HEAD.
            others = names + ["HEAD"]
            self._check_diff(name, others[other % len(others)], how)
        self._run(["open a version", f"diff ({how})"], go)

    def _check_diff(self, left: str, right: str, how: str) -> None:
        """A diff of two versions (or HEAD) against the two models."""
        L = self.cur
        model = {**L.tags, "HEAD": L.model}
        want = expected_diff(model[left], model[right])
        if how == "python":
            got: Any = self.s.reader.call("diff", "diff", path=L.path, a=left, b=right)
        else:
            got = json.loads(self._cli("diff", L.path, left, right, "--json", path="diff").stdout)
        if got != want:
            raise Failure("mismatch", "diff", f"diff {left} {right} ({how}): {got}, the model "
                          f"says {want}")
        self.s.counters.reads["diff"] += 1
        self.note(f"diff {left} {right} ({how}): {sum(map(len, want.values()))} ids")

    @precondition(lambda self: self.cur is not None and self.cur.tags)
    @rule(pick=st.integers(0, 99), how=st.sampled_from(["cli", "python"]))
    def delete_version(self, pick: int, how: str) -> None:
        def go() -> None:
            L = self.cur
            names = sorted(L.tags)
            name = names[pick % len(names)]
            if how == "cli":
                self._cli("tag", L.path, name, "--delete", "--grace", "0",
                          path="gulpdb tag --delete")
            else:
                self.s.reader.call("delete_tag", "py Dataset.delete_tag", path=L.path, name=name)
            del L.tags[name]
            r = self._cli("ls", L.path, "--version", name, expect=None, path="version cli ls")
            if r.returncode != 1 or "no tag" not in r.stderr:
                raise Failure("exit", "version cli ls", f"a deleted tag still opens: "
                              f"{r.describe()}")
            self.note(f"delete tag ({how}) {name!r}")
            for other in sorted(L.tags):
                self._verify_version(other)
        self._run(f"delete a tag ({how})", go)

    @precondition(lambda self: self.cur is not None and self.cur.tags)
    @rule(pick=st.integers(0, 99))
    def compact_under_tag(self, pick: int) -> None:
        def go() -> None:
            L = self.cur
            # A removal first, so that the compaction rewrites a chunk a tag reads.
            ids = self._pick(sorted(L.model.videos), [pick])
            if ids:
                self._cli("remove", L.path, *ids, path="gulpdb remove")
                L.model.remove(ids)
                L.removed.extend(ids)
            self._cli("compact", L.path, "-q", path="gulpdb compact")
            L.snapshot_files_changed = True
            self._changed()
            self.note(f"remove {ids} and compact under tags {sorted(L.tags)}")
            for name in sorted(L.tags):
                self._verify_version(name)
        self._run("remove and compact under a tag", go)
