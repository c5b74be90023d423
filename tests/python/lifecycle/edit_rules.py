"""The lifecycle machine's meta edit rules (docs/edits.md): update and set a
video's meta through the Python writer or ``gulpdb meta``, a batch whose edit
names a missing id (nothing of it lands), and ``gulpdb relabel`` /
``gulpdb.relabel`` with ingest's label lists.

The model keeps the meta: an update sets keys in place (a new key at the end)
and deletes a key given None; a set replaces the first meta_data entry; a
relabel gives each listed video "label" and "idx" (the label's index in
label2idx.json, extended by ingest's rule). Edits that no export wrote yet
are remembered, so that the re-index rule expects the refusal that keeps them
(``unexported_edits``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from .model import Video, extend_labels
from .procs import Failure

EDIT_VARIANTS = ["meta edit (python update)", "meta edit (python set)", "meta edit (cli meta)",
                 "meta edit (missing id)"]
RELABEL_VARIANTS = ["relabel (cli)", "relabel (python)"]
TAGS = ["a", "ü", "x y"]
RELABEL_LABELS = ["cat", "dog", "new label", "zebra"]


def merged(meta: Any, patch: Dict[str, Any]) -> Any:
    """UpdateMeta's rule on a first meta entry that is an object."""
    out = dict(meta)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def with_first(video: Video, first: Any) -> Video:
    metas = video.metas()
    return video.with_meta([first] + metas[1:])


class EditRules:
    """Mixed into LifecycleMachine (machine.py)."""

    def _edited(self, id_: str) -> None:
        L = self.cur
        L.unexported_edits[id_] = L.model.videos[id_]

    @precondition(lambda self: self.cur is not None and self.cur.model.videos)
    @rule(how=st.sampled_from(["python update", "python set", "cli meta", "missing id"]),
          pick=st.integers(0, 99), seed=st.integers(0, 999), drop=st.booleans())
    def edit_meta(self, how: str, pick: int, seed: int, drop: bool) -> None:
        variant = f"meta edit ({how})"

        def go() -> None:
            L = self.cur
            ids = sorted(L.model.videos)
            id_ = ids[pick % len(ids)]
            video = L.model.videos[id_]
            tag = TAGS[seed % len(TAGS)]
            if how == "missing id":
                # One batch: an append, then an edit of an id nobody has. KeyError,
                # and the append must not land either.
                new_id = f"never{self._next()}"
                frames = self._video_frames(seed, 1)
                try:
                    self.s.reader.call("edit_meta", "py Writer.update_meta", path=L.path,
                                       edits=[("update", f"absent{seed}", {"k": 1})],
                                       append=(new_id, frames, {"id": new_id}))
                except Failure as f:
                    if "KeyError" not in f.text:
                        raise
                else:
                    raise Failure("mismatch", "py Writer.update_meta",
                                  "an edit of a missing id raised nothing")
                self.note(f"meta edit of a missing id after appending {new_id!r}: KeyError")
                return
            meta = video.meta
            if how == "python set":
                new_meta = {"id": id_, "tag": tag, "k": seed}
                self.s.reader.call("edit_meta", "py Writer.set_meta", path=L.path,
                                   edits=[("set", id_, new_meta)])
                L.model.videos[id_] = with_first(video, new_meta)
                self.note(f"set_meta {id_!r} {new_meta}")
            else:
                patch: Dict[str, Any] = {"tag": tag, "k": seed}
                if drop:
                    patch["idx"] = None
                ok = isinstance(meta, dict) or meta is None
                if how == "python update":
                    try:
                        self.s.reader.call("edit_meta", "py Writer.update_meta", path=L.path,
                                           edits=[("update", id_, patch)])
                    except Failure as f:
                        if ok or "ValueError" not in f.text:
                            raise
                else:
                    args = ["meta", L.path, id_, "--set", f"tag={tag}", "--set", f"k={seed}"]
                    if drop:
                        args += ["--unset", "idx"]
                    r = self._cli(*args, expect=None, path="gulpdb meta")
                    if r.returncode != (0 if ok else 1):
                        raise Failure("exit", "gulpdb meta", r.describe())
                    if ok and json.loads(r.stdout) != merged(meta or {}, patch):
                        raise Failure("mismatch", "gulpdb meta",
                                      f"printed {r.stdout!r}, the model {merged(meta or {}, patch)}")
                if not ok:
                    self.note(f"update meta of {id_!r} ({how}) refused: its meta is not an object")
                    return
                first = merged(meta or {}, patch)
                L.model.videos[id_] = with_first(video, first)
                self.note(f"update meta ({how}) {id_!r} {patch}")
            self._edited(id_)
            self._changed()
        self._run(variant, go)

    @precondition(lambda self: self.cur is not None and self.cur.model.videos)
    @rule(how=st.sampled_from(["cli", "python"]),
          picks=st.lists(st.integers(0, 99), min_size=1, max_size=3), seed=st.integers(0, 999))
    def relabel(self, how: str, picks: List[int], seed: int) -> None:
        def go() -> None:
            L = self.cur
            ids = self._pick(sorted(L.model.videos), picks)
            labels = {i: RELABEL_LABELS[(seed + k) % len(RELABEL_LABELS)]
                      for k, i in enumerate(ids)}
            listing = os.path.join(self._dir("relabel"), "labels.csv")
            os.makedirs(os.path.dirname(listing))
            with open(listing, "w", encoding="utf-8") as f:
                for i in ids:
                    f.write(f"{i};{labels[i]}\n")
            refused = any(";" in i or "\n" in i or not isinstance(L.model.videos[i].meta, dict)
                          and L.model.videos[i].meta is not None for i in ids)
            if how == "cli":
                r = self._cli("relabel", L.path, "--labels", listing, expect=None,
                              path="gulpdb relabel")
                if r.returncode != (1 if refused else 0):
                    raise Failure("exit", "gulpdb relabel", r.describe())
            else:
                try:
                    self.s.reader.call("relabel", "py gulpdb.relabel", path=L.path,
                                       labels=listing)
                except Failure as f:
                    if not refused or "Error" not in f.text:
                        raise
            self.note(f"relabel ({how}) {labels}{' (refused)' if refused else ''}")
            if refused:
                return
            m = L.model
            had_file = m.label2idx is not None
            existing = m.label2idx if had_file else dict(
                sorted(m.labels_of_videos().items(), key=lambda kv: kv[1]))
            label2idx = extend_labels(existing, labels.values())
            changed = False
            for i in ids:
                video = m.videos[i]
                first = merged(video.meta or {}, {"label": labels[i], "idx": label2idx[labels[i]]})
                if json.dumps(first) != (video.meta_data[0] if video.meta_data else None):
                    m.videos[i] = with_first(video, first)
                    self._edited(i)
                    changed = True
            if len(label2idx) != len(existing) or (not had_file and changed):
                m.label2idx = label2idx
            self._changed()
        self._run(f"relabel ({how})", go)

    def _unexported_edit_refusals(self, new_videos: Dict[str, Video]) -> List[str]:
        """The re-index refusal the model expects: videos whose edited meta no
        export wrote, that the .gmeta files describe otherwise."""
        L = self.cur
        reverted = sorted(i for i, v in L.unexported_edits.items()
                          if L.model.videos.get(i) == v and i in new_videos
                          and new_videos[i].meta_data != v.meta_data)
        return [f"unexported meta edits {reverted[:3]}"] if reverted else []

    def _exported_in_place(self) -> None:
        self.cur.unexported_edits.clear()
