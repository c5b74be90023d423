"""Rules of the lifecycle machine that act on the bucket behind a lineage's
URL, as other programs and other pushers do: two pushes of diverged copies at
once, an object a published manifest names damaged behind its back, and a
manifest whose obsolete list names what it publishes. After each, every
published video must read exactly (the machine's URL read paths), `check` of
the URL must see damage while it is there, and a push must leave the prefix
whole. A mixin of machine.LifecycleMachine (its helpers, its lineage).
"""

from __future__ import annotations

import concurrent.futures
import json
import shutil
from typing import Any, Dict, List

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from .model import Video
from .procs import Failure
from .session import BUCKET

RULES = {
    "bucket_faults": ["two pushes at once (diverged copies)",
                      "damage a published object, check, push repairs",
                      "an obsolete list naming what is published, then push"],
}

# What the push that loses a race may say (stderr), and nothing else.
LOSER_WORDS = ("another push", "push lease", "rewritten", "differ from what")


class BucketRules:
    """Mixin: needs the machine's cur, s, _run, _cli, _dir, _env, note,
    _python_videos, _verify_url."""

    # ---- the bucket, as boto sees it ----------------------------------------------------

    def _prefix(self) -> str:
        return self.cur.url[len(f"s3://{BUCKET}/"):] + "/"

    def _get(self, key: str) -> bytes:
        return self.s.boto.get_object(Bucket=BUCKET, Key=self._prefix() + key)["Body"].read()

    def _put(self, key: str, body: bytes) -> None:
        self.s.boto.put_object(Bucket=BUCKET, Key=self._prefix() + key, Body=body)

    def _manifest(self) -> Dict[str, Any]:
        return json.loads(self._get("gulpdb.manifest.json"))

    def _chunk_entries(self, manifest: Dict[str, Any]) -> List[Dict[str, Any]]:
        if "chunk_pages" in manifest:
            return [c for p in manifest["chunk_pages"]
                    for c in json.loads(self._get(p["key"]))["chunks"]]
        return list(manifest["chunks"])

    def _named(self, manifest: Dict[str, Any]) -> List[str]:
        """The keys the manifest names (its index objects as the manifest
        lists them: the root or snapshot, the chunk pages), its chunks and
        their .gmeta."""
        keys = [(manifest.get("root") or manifest["snapshot"])["key"]]
        keys += [p["key"] for p in manifest.get("chunk_pages", [])]
        for c in self._chunk_entries(manifest):
            keys.append(c["key"])
            if c.get("gmeta_key"):
                keys.append(c["gmeta_key"])
        return keys

    def _ensure_pushed(self) -> None:
        L = self.cur
        if L.pushed is None:
            self._cli("push", L.path, L.url, "-q", path="gulpdb push")
            L.pushed = L.model.copy()
            L.flags.add("pushed")
            self.note(f"push (cli) {L.url}")

    # ---- the rule ------------------------------------------------------------------------

    @precondition(lambda self: self.cur is not None)
    @rule(kind=st.sampled_from(sorted(RULES["bucket_faults"])), seed=st.integers(0, 999))
    def bucket_faults(self, kind: str, seed: int) -> None:
        def go() -> None:
            self._ensure_pushed()
            {"two pushes at once (diverged copies)": self._race,
             "damage a published object, check, push repairs": self._damage,
             "an obsolete list naming what is published, then push": self._obsolete}[kind](seed)
        self._run(kind, go)

    def _race(self, seed: int) -> None:
        """Two copies of the dataset, each with its own new video, pushed to
        its URL at once: one publishes, the other stops (busy, or refused:
        its chunk differs from what the winner published) having replaced
        nothing; the URL reads the winner's dataset exactly. The lineage
        publishes to a new prefix from then on (the bucket's dataset is no
        longer an older state of its own)."""
        L = self.cur
        racers = []
        for k in range(2):
            path = self._dir("racer")
            shutil.copytree(L.path, path, symlinks=True)
            videos = self._python_videos(1, seed + 11 * k)
            self.s.reader.call("write", "py Dataset writer", path=path, videos=videos)
            model = L.model.copy()
            for id_, frames, meta in videos:
                model.videos[id_] = Video.of(frames, [meta])
            racers.append((path, model, self._dir("racer-cache"), [v[0] for v in videos]))

        def push(racer):
            return self.s.cli.run("push", racer[0], L.url, "-q", expect=None,
                                  env={"GULPDB_CACHE": racer[2]}, path="gulpdb push (racing)")

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(push, racers))
        self.note(f"two pushes at once of copies adding {racers[0][3]} and {racers[1][3]}: "
                  f"exit {[r.returncode for r in results]}")
        winners = [i for i, r in enumerate(results) if r.returncode == 0]
        if len(winners) != 1:
            raise Failure("mismatch", "gulpdb push (racing)",
                          f"{len(winners)} of two racing pushes of diverged copies succeeded: "
                          + " / ".join(r.describe() for r in results))
        loser = results[1 - winners[0]]
        if not any(w in loser.stderr for w in LOSER_WORDS):
            raise Failure("exit", "gulpdb push (racing)",
                          f"the losing push failed for another reason: {loser.describe()}")
        old, L.pushed = L.pushed, racers[winners[0]][1]
        try:
            self._verify_url(self._dir("cache-race"), fresh=True)
        finally:
            L.pushed = old
        L.flags.add("raced")
        L.url = L.url + f"-race{self._next()}"
        L.pushed = None

    def _damage(self, seed: int) -> None:
        """An object the published manifest names (a chunk, its .gmeta is not
        read by gulpdb; the index root or snapshot; a chunk page) gets a byte
        flipped behind the manifest's back. `check --deep` of the URL must
        say so (exit 1, naming the object's key); the lineage's push (its
        node cache holds what it built) must repair it, and the URL read
        exactly again."""
        L = self.cur
        manifest = self._manifest()
        chunks = [c["key"] for c in self._chunk_entries(manifest) if c["committed_length"] > 0]
        index_key = (manifest.get("root") or manifest["snapshot"])["key"]
        targets = ([index_key] + chunks[:1]
                   + [p["key"] for p in manifest.get("chunk_pages", [])][:1])
        key = targets[seed % len(targets)]
        body = bytearray(self._get(key))
        body[len(body) // 2] ^= 0x5A
        self._put(key, bytes(body))
        self.note(f"flip a byte of {key} in the bucket (named by generation "
                  f"{manifest['generation']})")
        check = self.s.cli.run("check", L.url, "--deep", expect=None,
                               env={"GULPDB_CACHE": self._dir("cache-check")},
                               path="url cli check --deep (damaged)")
        text = check.stdout + check.stderr
        if check.returncode != 1 or key.split("/")[-1][:16] not in text:
            raise Failure("mismatch", "url cli check --deep (damaged)",
                          f"check of the URL with {key} damaged: {check.describe()} "
                          f"{check.stdout[-1000:]}")
        self._cli("push", L.path, L.url, "-q", path="gulpdb push (repair)")
        L.pushed = L.model.copy()
        self.note("push again: repairs it")
        self._verify_url(self._dir("cache-repaired"), fresh=True)

    def _obsolete(self, seed: int) -> None:
        """The published manifest's obsolete list is edited to name, as long
        expired, the manifest, the lease and everything the manifest names;
        then the dataset grows and is pushed: the push must delete none of
        them (readers of the generation before read on), and the URL reads
        the new state exactly."""
        L = self.cur
        manifest = self._manifest()
        keys = ["gulpdb.manifest.json", "gulpdb.push-lease.json"] + self._named(manifest)
        manifest["obsolete"] = list(manifest.get("obsolete", [])) + [
            {"key": k, "since": "1970-01-01T00:00:01Z", "since_unix": 1, "committed_length": 0,
             "crc32c": None, "gmeta_key": "gulpdb.manifest.json"} for k in keys]
        self._put("gulpdb.manifest.json", json.dumps(manifest).encode())
        self.note(f"edit the manifest (generation {manifest['generation']}): its obsolete list "
                  f"names {len(keys)} keys it publishes, as expired")
        videos = self._python_videos(1, seed)
        self.s.reader.call("write", "py Dataset writer", path=L.path, videos=videos)
        for id_, frames, meta in videos:
            L.model.videos[id_] = Video.of(frames, [meta])
        self._changed()
        self._cli("push", L.path, L.url, "-q", path="gulpdb push (after the edit)")
        L.pushed = L.model.copy()
        listed = {o["Key"][len(self._prefix()):] for o in self.s.boto.list_objects_v2(
            Bucket=BUCKET, Prefix=self._prefix()).get("Contents", [])}
        gone = [k for k in keys if k not in listed and k != "gulpdb.push-lease.json"]
        if gone:
            raise Failure("mismatch", "gulpdb push (after the edit)",
                          f"the push deleted {gone}, which the obsolete list named but the "
                          "published generations name")
        self.note(f"append {[v[0] for v in videos]} and push: nothing it publishes deleted")
        self._verify_url(self._dir("cache-obsolete"), fresh=True)
