"""Reads of objects that the bucket holds wrong, or that arrive damaged, from
Python and the command line (s3rver and the fault proxy, on 127.0.0.1):

- a partition (a whole snapshot) damaged in the bucket costs a bounded
  number of GETs per process and manifest generation, however many reads
  need it: each fails at once with the CorruptionError naming it; a newer
  manifest tries it again;
- a root, a root page or a partition damaged once on the way is fetched
  again and the read succeeds; damaged on every download, a clear error
  naming the object in the bucket;
- the node cache of whole snapshots repairs itself whatever was done to a
  snapshot's folder (data.mdb deleted or truncated, an extra file, the
  `verified` record damaged);
- a secret key holding '/', '@', ':' or '%2F' in an s3:// URL is never
  printed, by any command or Python call.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import gulpdb
from conftest import GULPDB_CLI, SmallDataset
from test_remote import BUCKET, Remote

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "testing"))
import s3_proxy  # noqa: E402  (testing/s3_proxy.py)


@pytest.fixture(scope="module")
def servers():
    from test_remote import KEY_ID, SECRET

    with s3_proxy.s3rver_behind_proxy(BUCKET, {KEY_ID: SECRET}) as both:
        yield both


@pytest.fixture
def remote(servers, tmp_path, monkeypatch):
    return Remote(servers, tmp_path, monkeypatch)


def cli(*args, env=None):
    return subprocess.run([GULPDB_CLI, *args], capture_output=True, text=True, timeout=120,
                          env=env)


def gets(remote, key_part):
    """GETs the proxy answered for objects whose path holds `key_part`."""
    return sum(1 for e in remote.proxy.log() if e["method"] == "GET" and key_part in e["path"])


def many_videos(path, count=1500):
    """`count` one-frame videos with hashed ids: several 64 KiB partitions."""
    frame = np.zeros((1, 8, 8, 3), np.uint8)
    ids = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(count)]
    with gulpdb.Dataset(path, "x", videos_per_chunk=250) as ds:
        with ds.writer() as w:
            for i, id_ in enumerate(ids):
                w.append(id_, frame + i % 7, {"label": i % 10, "n": i})
    return ids


def partition_keys(remote):
    s3 = remote.boto3()
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=remote.key("gulpdb.partitions/"))
    return sorted(((o["Size"], o["Key"]) for o in listed["Contents"]), reverse=True)


# ---- item: secrets in s3:// URLs -----------------------------------------------------------

# Secret keys built of pieces that no message holds otherwise.
SECRETS = ["Qz/Xw", "Qz/Xw/V7+Kp", "Qz@Xw", "Qz:Xw/V7", "Qz/Xw@V7", "Qz%2FXw", "Qz?Xw#V7/Kp"]
PIECES = ["Qz", "Xw", "V7", "Kp", "AKIDSECRETKEY"]


def _urls(bucket):
    for secret in SECRETS:
        for scheme in ("s3://", "S3://", "s3:/", "s3a://"):
            yield f"{scheme}AKIDSECRETKEY:{secret}@{bucket}/some/prefix"
        yield f"s3://AKIDSECRETKEY:{secret}@{bucket}"


def _assert_secret_free(text, what):
    for piece in PIECES:
        assert piece not in text, f"{what} printed {piece!r}: {text[-2000:]}"


@pytest.mark.parametrize("where", ["unreachable endpoint", "missing bucket", "no manifest"])
def test_secrets_with_slashes_in_s3_urls_are_never_printed(remote, tmp_path, where):
    bucket = {"missing bucket": "no-such-bucket-gulpdb"}.get(where, BUCKET)
    if where == "unreachable endpoint":
        remote.use("http://127.0.0.1:9", "S3RVER", "S3RVER")
        remote.monkeypatch.setenv("GULPDB_S3_MAX_ATTEMPTS", "1")
        remote.monkeypatch.setenv("GULPDB_S3_RETRY_BUDGET_MS", "0")
    local = SmallDataset(str(tmp_path / "local"), videos=1, frames_per_video=1)
    for n, url in enumerate(_urls(bucket)):
        # Every command that takes a URL, and some that refuse one.
        commands = [["info", url], ["ls", url], ["check", url], ["push", local.path, url],
                    ["show", url, "video_0"], ["export", url, "-o", str(tmp_path / "out")],
                    ["remove", url, "video_0"]]
        for args in commands[n % 3::3] if n else commands:
            proc = cli(*args)
            assert proc.returncode != 0, (args, proc.stdout)
            _assert_secret_free(proc.stdout + proc.stderr, args[0])
        for call in (lambda: gulpdb.Dataset(url), lambda: gulpdb.Dataset(url, "a"),
                     lambda: gulpdb.Dataset(url, index_dir=str(tmp_path / "ix")),
                     lambda: gulpdb.GulpDirectory(url), lambda: gulpdb.push(local.path, url)):
            with pytest.raises(Exception) as e:
                call()
            assert isinstance(e.value, (ValueError, OSError, gulpdb.CorruptionError)), e.value
            _assert_secret_free(f"{type(e.value).__name__}: {e.value}", url)
