"""The lifecycle machine's training rule: a VideoSampler state saved mid-epoch,
the dataset changed (videos appended, one replaced or removed, or nothing),
and the run resumed with ``grow="next_epoch"``.

The model's expectation: an append puts the new videos after every video
there was, a replacement moves its id to the end, a removal drops it (the
listing after the change must show exactly that order). When the videos the
state counted are still the first ones, in their order, the resumed world
takes exactly the saved epoch's items it had not taken (each once, plus
padding), and the next epoch takes every video of the model; otherwise the
resume is refused with a ValueError, and never yields a wrong epoch.
"""

from __future__ import annotations

import collections
from typing import Any, Dict, List

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from . import checks
from .model import Video
from .procs import Failure

RULE = "sampler resume after growth"
PATH = "VideoSampler load_state_dict(grow=)"


def _expect_epoch(taken: List[str], rest: List[str], items: List[str], world: int) -> str:
    """What is wrong with `taken` (before the stop) and `rest` (after the resume)
    as one epoch over `items` ending with `world` ranks, or ""."""
    counts = collections.Counter(rest)
    left = len(items) - len(taken)
    if len(set(taken)) != len(taken):
        return f"an item was taken twice before the stop: {taken}"
    if set(taken) & set(rest):
        return f"items taken before the stop came back: {sorted(set(taken) & set(rest))}"
    if set(taken) | set(rest) != set(items):
        return (f"the epoch's items were {sorted(items)}, but the two runs took "
                f"{sorted(set(taken) | set(rest))}")
    repeats = sum(c - 1 for c in counts.values())
    if repeats != -left % world:
        return f"{repeats} repeats where padding {left} items for {world} ranks makes {-left % world}"
    return ""


class SamplerRules:
    """Mixed into LifecycleMachine (machine.py)."""

    @precondition(lambda self: self.cur is not None)
    @rule(shuffle=st.sampled_from([True, False, "blocks"]), world=st.integers(1, 4),
          world2=st.integers(1, 4), percent=st.integers(0, 100),
          change=st.sampled_from(["append", "append", "replace", "remove", "none"]),
          count=st.integers(1, 3), seed=st.integers(0, 999))
    def sampler_resume_after_growth(self, shuffle: Any, world: int, world2: int, percent: int,
                                    change: str, count: int, seed: int) -> None:
        def go() -> None:
            L = self.cur
            s = self.s
            order = list(L.order)  # as `gulpdb ls` listed it after the last step
            # The environment of every call: a worker keeps what an earlier
            # request set (a network file system's, which reads the published
            # snapshot instead of the live index).
            saved = s.reader.call("sampler_save", PATH, env=self._env(), path=L.path,
                                  world=world, percent=percent, shuffle=shuffle, seed=seed)
            state = saved["state"]
            if saved["items"] != order or state["dataset"]["length"] != len(order):
                raise Failure("mismatch", PATH, f"the sampler counts over {saved['items']}, "
                              f"`gulpdb ls` lists {order}")
            how = change if order or change in ("append", "none") else "append"
            expected = self._sampler_change(how, count, seed, order)
            observed = checks.cli_listing(s, L.path, L.model, chunk_of=L.chunk_of)
            if observed != expected:
                raise Failure("mismatch", "cli ls", f"after {how}, the order is {observed}; "
                              f"the model expects {expected}")
            L.order = observed
            kept = observed[:len(order)] == order
            grew = len(observed) > len(order)
            self.note(f"sampler state ({world} ranks, {percent}%, shuffle={shuffle!r}), {how}, "
                      f"resume on {world2} ranks: the counted videos {'kept' if kept else 'not kept'}")
            if kept and grew:
                try:
                    s.reader.call("sampler_resume", PATH, env=self._env(), path=L.path,
                                  world=world2, state=state, grow=None)
                except Failure as f:
                    if f.kind != "error" or f.exc_type != "ValueError" or "grew" not in f.exc_text:
                        raise
                else:
                    raise Failure("mismatch", PATH, "a grown dataset resumed without grow=")
            try:
                got = s.reader.call("sampler_resume", PATH, env=self._env(), path=L.path,
                                    world=world2, state=state, grow="next_epoch")
            except Failure as f:
                if (not kept and f.kind == "error" and f.exc_type == "ValueError"
                        and "removed" in f.exc_text):
                    s.counters.reads[PATH + " (refused: videos changed)"] += 1
                    return
                raise
            if not kept:
                raise Failure("mismatch", PATH, f"resumed although the counted videos {order} "
                              f"are now {observed}")
            rest = [i for ids in got["rest"] for i in ids]
            following = [i for ids in got["next"] for i in ids]
            if state["consumed"] == len(order):
                wrong = f"the finished epoch gave {rest}" if rest else ""
            else:
                wrong = _expect_epoch(saved["taken"], rest, order, world2)
            wrong = wrong or _expect_epoch([], following, observed, world2)
            if wrong:
                raise Failure("mismatch", PATH, wrong)
            s.counters.reads[PATH] += 1
        self._run(RULE, go)

    def _sampler_change(self, how: str, count: int, seed: int, order: List[str]) -> List[str]:
        """Changes the current dataset as `how` says; returns the order the model expects."""
        L = self.cur
        if how == "append":
            videos = self._python_videos(count, seed)
            self.s.reader.call("write", "py Dataset writer", env=self._env(), path=L.path,
                               videos=videos)
            for id_, frames, meta in videos:
                L.model.videos[id_] = Video.of(frames, [meta])
            self._changed()
            return order + [v[0] for v in videos]
        if how == "none":
            return order
        victim = order[seed % len(order)]
        if how == "replace":
            frames = self._video_frames(seed + 5, 1 + seed % 2)
            meta: Dict[str, Any] = {"id": victim, "k": 3, "tag": "resampled"}
            self.s.reader.call("write", "py Dataset writer", env=self._env(), path=L.path,
                               videos=[(victim, frames, meta)], on_duplicate="replace")
            L.model.videos[victim] = Video.of(frames, [meta])
            self._changed()
            return [i for i in order if i != victim] + [victim]
        self.s.reader.call("remove", "py Dataset remove", env=self._env(), path=L.path,
                           ids=[victim])
        L.model.remove([victim])
        L.removed.append(victim)
        self._changed()
        return [i for i in order if i != victim]
