"""What other programs and other pushers do to a bucket, for the lifecycle
machine: two pushes of diverged copies at once, an object a published
manifest names damaged behind its back, and a manifest whose obsolete list
names what it publishes. After each, every published video must read exactly
(the machine's URL read paths), `check` of the URL must see damage while it
is there, and a push must leave the prefix whole.

They run as part of `push_and_open_url` (after each push from the command
line, the kinds in turn), derived from the run's course and not drawn: a new
Hypothesis draw would change every run's sequence, and the seeded bugs
test_lifecycle_finds_bugs puts back are found at the seed's steps. Each works
on copies of the lineage's dataset pushed to a prefix of its own, with its
own caches and names (the lineage, its URL, its held readers and the
machine's counters are as they were), so that the lineage goes on as if it
had not run. A mixin of machine.LifecycleMachine (its helpers and lineage).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import shutil
from typing import Any, Dict, Iterator, List, Tuple

from .model import DatasetModel, Video
from .procs import Failure
from .session import BUCKET

KINDS = ["damage a published object, check, push repairs",
         "an obsolete list naming what is published, then push",
         "two pushes at once (diverged copies)"]
RULES = {"bucket_faults": KINDS}

# What the push that loses a race may say (stderr), and nothing else.
LOSER_WORDS = ("another push", "push lease", "rewritten", "differ from what")


class BucketFaults:
    """Mixin: needs the machine's cur, s, root, counter, _cli, _dir, note,
    _python_videos and _verify_url."""

    def _bucket_fault_due(self) -> List[str]:
        """The kind to run after the coming push from the command line (as a
        list of rule variant names, for the machine's counters), by the
        example's step: what an example does depends on its own steps only,
        so that Hypothesis, replaying a failing example, meets the same
        faults."""
        self.bucket_faults = getattr(self, "bucket_faults", 0) + 1
        return [KINDS[self.steps % len(KINDS)]]

    def _bucket_fault(self, kind: str) -> None:
        with self._aside() as (url, cache):
            {KINDS[0]: self._damage, KINDS[1]: self._obsolete, KINDS[2]: self._race}[kind](
                url, cache)

    @contextlib.contextmanager
    def _aside(self) -> Iterator[Tuple[str, str]]:
        """A prefix and a cache of its own, names of its own (a folder of
        its own, the machine's counter restored after), and the lineage's
        URL and published model restored after."""
        L = self.cur
        n = self.bucket_faults
        saved = (self.root, self.counter, L.url, L.pushed, L.cache)
        self.root = os.path.join(saved[0], f"bucket-fault-{n}")
        os.makedirs(self.root)
        try:
            yield L.url + f"-fault{n}", self._dir("cache-pusher")
        finally:
            self.root, self.counter, L.url, L.pushed, L.cache = saved

    # ---- the bucket, as boto sees it ----------------------------------------------------

    @staticmethod
    def _prefix(url: str) -> str:
        return url[len(f"s3://{BUCKET}/"):] + "/"

    def _get(self, url: str, key: str) -> bytes:
        return self.s.boto.get_object(Bucket=BUCKET, Key=self._prefix(url) + key)["Body"].read()

    def _put(self, url: str, key: str, body: bytes) -> None:
        self.s.boto.put_object(Bucket=BUCKET, Key=self._prefix(url) + key, Body=body)

    def _manifest(self, url: str) -> Dict[str, Any]:
        return json.loads(self._get(url, "gulpdb.manifest.json"))

    def _chunk_entries(self, url: str, manifest: Dict[str, Any]) -> List[Dict[str, Any]]:
        if "chunk_pages" in manifest:
            return [c for p in manifest["chunk_pages"]
                    for c in json.loads(self._get(url, p["key"]))["chunks"]]
        return list(manifest["chunks"])

    def _named(self, url: str, manifest: Dict[str, Any]) -> List[str]:
        """The keys the manifest names (its root or snapshot, its chunk
        pages), its chunks and their .gmeta."""
        keys = [(manifest.get("root") or manifest["snapshot"])["key"]]
        keys += [p["key"] for p in manifest.get("chunk_pages", [])]
        for c in self._chunk_entries(url, manifest):
            keys.append(c["key"])
            if c.get("gmeta_key"):
                keys.append(c["gmeta_key"])
        return keys

    def _copy(self, extra: int, seed: int) -> Tuple[str, DatasetModel]:
        """A copy of the lineage's dataset with `extra` new videos, and its model."""
        path = self._dir("copy")
        shutil.copytree(self.cur.path, path, symlinks=True)
        model = self.cur.model.copy()
        if extra:
            videos = self._python_videos(extra, seed)
            self.s.reader.call("write", "py Dataset writer", path=path, videos=videos)
            for id_, frames, meta in videos:
                model.videos[id_] = Video.of(frames, [meta])
        return path, model

    def _push(self, path: str, url: str, cache: str, what: str):
        return self.s.cli.run("push", path, url, "-q", env={"GULPDB_CACHE": cache}, path=what)

    def _verify_published(self, url: str, model: DatasetModel) -> None:
        """The machine's URL read paths, from a fresh cache, on `url` holding `model`."""
        L = self.cur
        L.url, L.pushed = url, model
        self._verify_url(self._dir("cache-fresh"), fresh=True)

    # ---- the kinds -----------------------------------------------------------------------

    def _race(self, url: str, cache: str) -> None:
        """Two copies of the dataset, each with a new video of its own,
        pushed at once to a prefix holding the dataset: one publishes, the
        other stops (busy, or refused: its chunk differs from what the
        winner published) having replaced nothing; the URL reads the
        winner's dataset exactly."""
        base, model = self._copy(0, 0)
        self._push(base, url, cache, "gulpdb push")
        n = self.bucket_faults
        racers = [self._copy(1, n + 11 * k) + (self._dir("cache-racer"),) for k in range(2)]

        def push(racer):
            return self.s.cli.run("push", racer[0], url, "-q", expect=None,
                                  env={"GULPDB_CACHE": racer[2]}, path="gulpdb push (racing)")

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(push, racers))
        self.note(f"  two pushes at once to {url} of copies with one new video each: exit "
                  f"{[r.returncode for r in results]}")
        winners = [i for i, r in enumerate(results) if r.returncode == 0]
        if len(winners) != 1:
            raise Failure("mismatch", "gulpdb push (racing)",
                          f"{len(winners)} of two racing pushes of diverged copies succeeded: "
                          + " / ".join(r.describe() for r in results))
        loser = results[1 - winners[0]]
        if not any(w in loser.stderr for w in LOSER_WORDS):
            raise Failure("exit", "gulpdb push (racing)",
                          f"the losing push failed for another reason: {loser.describe()}")
        self._verify_published(url, racers[winners[0]][1])

    def _damage(self, url: str, cache: str) -> None:
        """Objects the published manifest names get a byte flipped behind its
        back: the index root or snapshot, and a chunk page or a chunk (by the
        step). `check --deep` of the URL must say so (exit 1, naming what it
        found damaged); the pusher's next push (its node cache holds what it
        built) must repair both, and the URL read exactly again."""
        path, model = self._copy(0, 0)
        self._push(path, url, cache, "gulpdb push")
        manifest = self._manifest(url)
        chunks = [c["key"] for c in self._chunk_entries(url, manifest)
                  if c["committed_length"] > 0]
        others = [p["key"] for p in manifest.get("chunk_pages", [])][:1] + chunks[:1]
        keys = [(manifest.get("root") or manifest["snapshot"])["key"]]
        keys += [others[self.steps // len(KINDS) % len(others)]] if others else []
        for key in keys:
            body = bytearray(self._get(url, key))
            body[len(body) // 2] ^= 0x5A
            self._put(url, key, bytes(body))
        self.note(f"  flip a byte of {keys} in {url} (named by generation "
                  f"{manifest['generation']})")
        check = self.s.cli.run("check", url, "--deep", expect=None,
                               env={"GULPDB_CACHE": self._dir("cache-check")},
                               path="url cli check --deep (damaged)")
        named = [k for k in keys if k.split("/")[-1][:16] in check.stdout + check.stderr]
        if check.returncode != 1 or not named:
            raise Failure("mismatch", "url cli check --deep (damaged)",
                          f"check of the URL with {keys} damaged: {check.describe()} "
                          f"{check.stdout[-1000:]}")
        self._push(path, url, cache, "gulpdb push (repair)")
        self.note("  push again from the pusher: repairs them")
        self._verify_published(url, model)

    def _obsolete(self, url: str, cache: str) -> None:
        """The published manifest's obsolete list is edited to name, as long
        expired, the manifest, the lease and everything the manifest names;
        then the dataset grows and is pushed: the push must delete none of
        them, and the URL reads the new state exactly."""
        base, _ = self._copy(0, 0)
        self._push(base, url, cache, "gulpdb push")
        manifest = self._manifest(url)
        keys = ["gulpdb.manifest.json", "gulpdb.push-lease.json"] + self._named(url, manifest)
        manifest["obsolete"] = list(manifest.get("obsolete", [])) + [
            {"key": k, "since": "1970-01-01T00:00:01Z", "since_unix": 1, "committed_length": 0,
             "crc32c": None, "gmeta_key": "gulpdb.manifest.json"} for k in keys]
        self._put(url, "gulpdb.manifest.json", json.dumps(manifest).encode())
        self.note(f"  edit the manifest of {url}: its obsolete list names {len(keys)} keys it "
                  "publishes, as expired")
        grown, model = self._copy(1, self.bucket_faults)
        self._push(grown, url, cache, "gulpdb push (after the edit)")
        listed = {o["Key"][len(self._prefix(url)):] for o in self.s.boto.list_objects_v2(
            Bucket=BUCKET, Prefix=self._prefix(url)).get("Contents", [])}
        gone = [k for k in keys if k not in listed and k != "gulpdb.push-lease.json"]
        if gone:
            raise Failure("mismatch", "gulpdb push (after the edit)",
                          f"the push deleted {gone}, which the obsolete list named but the "
                          "published generations name")
        self.note("  a grown copy pushed: nothing the generations publish deleted")
        self._verify_published(url, model)
