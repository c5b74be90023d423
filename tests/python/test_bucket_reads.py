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
import string
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gulpdb
from conftest import GULPDB_CLI, SmallDataset
from test_remote import BUCKET, remote, servers  # noqa: F401  (s3rver behind the proxy)


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


# ---- item: a damaged object is not downloaded again for every read -----------------------


def _read_all_meta(ds, ids, want):
    """Reads every id's meta (the index only: no frame GETs); returns the
    messages of the reads that failed, and checks the others."""
    failures = []
    for i, id_ in enumerate(ids):
        try:
            got = ds.meta(id_)
        except gulpdb.CorruptionError as e:
            failures.append(str(e))
            continue
        assert got["n"] == want[i], id_
    return failures


def test_two_swapped_partitions_cost_a_bounded_number_of_gets_however_many_reads(remote,
                                                                                 tmp_path):
    path = str(tmp_path / "many")
    ids = many_videos(path)
    remote.through_proxy()
    gulpdb._gulpdb.push(path, remote.url, layout="partitioned", partition_bytes=64 << 10)
    # The two largest partitions (those of the records), swapped in the bucket.
    (_, a), (_, b) = partition_keys(remote)[:2]
    s3 = remote.boto3()
    body_a = s3.get_object(Bucket=BUCKET, Key=a)["Body"].read()
    body_b = s3.get_object(Bucket=BUCKET, Key=b)["Body"].read()
    s3.put_object(Bucket=BUCKET, Key=a, Body=body_b)
    s3.put_object(Bucket=BUCKET, Key=b, Body=body_a)
    names = [k.rsplit("/", 1)[1] for k in (a, b)]
    pusher_cache = os.environ["GULPDB_CACHE"]
    remote.monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "reader-cache"))
    remote.proxy.reset()
    want = list(range(len(ids)))

    with gulpdb.Dataset(remote.url) as ds:
        failures = _read_all_meta(ds, ids, want)
        assert failures, "no read needed a swapped partition"
        for message in failures:
            assert any(n in message for n in names), message
            assert "is damaged in the bucket" in message, message
        first = [gets(remote, n) for n in names]
        # The same wrong bytes twice: not damage on the way. At most two
        # downloads each, never a third.
        assert all(g <= 2 for g in first), first
        assert sum(first) >= 1
        for _ in range(2):
            again = _read_all_meta(ds, ids, want)
            assert len(again) == len(failures)
        assert [gets(remote, n) for n in names] == first
    # Opened again on the same manifest, in this process: not fetched again.
    with gulpdb.Dataset(remote.url) as ds:
        assert len(_read_all_meta(ds, ids, want)) == len(failures)
    assert [gets(remote, n) for n in names] == first

    # A newer manifest (one video more): the damaged partitions it still
    # names are tried again, once.
    with gulpdb.Dataset(path, "a") as local:
        with local.writer() as w:
            w.append("one-more", np.zeros((1, 8, 8, 3), np.uint8), {"label": 0, "n": len(ids)})
    remote.monkeypatch.setenv("GULPDB_CACHE", pusher_cache)
    gulpdb._gulpdb.push(path, remote.url, layout="partitioned", partition_bytes=64 << 10)
    remote.monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "reader-cache"))
    remote.proxy.reset()
    with gulpdb.Dataset(remote.url) as ds:
        assert ds.remote_info["generation"] == 2
        newer = _read_all_meta(ds, ids, want)
        tried = [gets(remote, n) for n in names]
        assert all(t <= 2 for t in tried), tried
        if newer:  # the new root still names a swapped partition
            assert sum(tried) >= 1
        _read_all_meta(ds, ids, want)
        assert [gets(remote, n) for n in names] == tried


def test_a_whole_snapshot_damaged_in_the_bucket_is_downloaded_twice_per_process(remote,
                                                                                tmp_path):
    local = SmallDataset(str(tmp_path / "local"), videos=4, frames_per_video=2)
    remote.through_proxy()
    gulpdb.push(local.path, remote.url, layout="whole")
    s3 = remote.boto3()
    key = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=remote.key(
        "gulpdb.snapshots/"))["Contents"]][0]
    body = bytearray(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    body[len(body) // 2] ^= 0x01
    s3.put_object(Bucket=BUCKET, Key=key, Body=bytes(body))
    remote.monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "reader-cache"))
    remote.proxy.reset()
    for _ in range(5):
        with pytest.raises(gulpdb.CorruptionError, match="is damaged in the bucket") as e:
            gulpdb.Dataset(remote.url)
        assert key.rsplit("/", 1)[1] in str(e.value)
    assert gets(remote, "gulpdb.snapshots/") == 2


# ---- item: a root or root page damaged on the way is fetched again -----------------------


@pytest.mark.parametrize("what", ["root", "root page", "partition"])
def test_an_object_damaged_once_on_the_way_is_fetched_again(remote, tmp_path, what):
    path = str(tmp_path / "many")
    ids = many_videos(path)
    if what == "root page":
        remote.monkeypatch.setenv("GULPDB_TEST_ROOT_PAGE_BYTES", "128")  # the smallest
    remote.through_proxy()
    report = gulpdb._gulpdb.push(path, remote.url, layout="partitioned",
                                 partition_bytes=64 << 10)
    assert (report["root_pages"] > 0) == (what == "root page"), report
    part = {"root": ".root", "root page": ".page", "partition": "gulpdb.partitions/"}[what]
    remote.monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "reader-cache"))
    remote.proxy.reset()
    remote.proxy.add_fault(kind="corrupt_response", count=1, method="GET", path=part)
    with gulpdb.Dataset(remote.url) as ds, gulpdb.Dataset(path) as local:
        for i in range(0, len(ids), 37):
            assert ds.meta(ids[i]) == local.meta(ids[i])
            assert ds.id_at(i) == ids[i]
    assert remote.proxy.stats()["faults"] == {"corrupt_response": 1}


@pytest.mark.parametrize("what", ["root", "root page"])
def test_an_object_damaged_on_every_download_is_named_in_a_clear_error(remote, tmp_path, what):
    path = str(tmp_path / "many")
    ids = many_videos(path)
    if what == "root page":
        remote.monkeypatch.setenv("GULPDB_TEST_ROOT_PAGE_BYTES", "128")
    remote.through_proxy()
    gulpdb._gulpdb.push(path, remote.url, layout="partitioned", partition_bytes=64 << 10)
    part = {"root": ".root", "root page": ".page"}[what]
    remote.monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "reader-cache"))
    remote.proxy.reset()
    remote.proxy.add_fault(kind="corrupt_response", fraction=1.0, method="GET", path=part)
    with pytest.raises(gulpdb.CorruptionError) as e:
        with gulpdb.Dataset(remote.url) as ds:
            for i in range(len(ids)):
                ds.id_at(i)
    message = str(e.value)
    assert f"the {what} s3://{BUCKET}/{remote.prefix}/gulpdb.roots/" in message, message
    assert "is damaged in the bucket" in message, message
    assert "behind the manifest's back" not in message, message
    assert 2 <= gets(remote, part) <= 3


# ---- item: the whole-snapshot node cache repairs itself ------------------------------------


def _delete_data(folder):
    os.remove(os.path.join(folder, "data.mdb"))


def _truncate_data(folder):
    with open(os.path.join(folder, "data.mdb"), "r+b") as f:
        f.truncate(4096)


def _extra_file(folder):
    with open(os.path.join(folder, "lock.mdb"), "wb") as f:
        f.write(b"not a lock file")


def _deleted_data_and_an_extra_file(folder):
    _delete_data(folder)
    _extra_file(folder)


def _garbage_record(folder):
    with open(os.path.join(folder, "verified"), "wb") as f:
        f.write(os.urandom(100))


def _truncated_record(folder):
    with open(os.path.join(folder, "verified"), "r+b") as f:
        f.truncate(10)


def _no_record(folder):
    os.remove(os.path.join(folder, "verified"))


def _record_is_a_folder(folder):
    os.remove(os.path.join(folder, "verified"))
    os.makedirs(os.path.join(folder, "verified", "inside"))


def _deleted_data_record_is_a_folder(folder):
    _delete_data(folder)
    _record_is_a_folder(folder)


def _folder_is_a_file(folder):
    shutil.rmtree(folder)
    with open(folder, "wb") as f:
        f.write(b"x")


def _data_is_a_folder(folder):
    _delete_data(folder)
    os.makedirs(os.path.join(folder, "data.mdb"))


FOLDER_DAMAGES = [_delete_data, _truncate_data, _extra_file, _deleted_data_and_an_extra_file,
                  _garbage_record, _truncated_record, _no_record, _record_is_a_folder,
                  _deleted_data_record_is_a_folder, _folder_is_a_file, _data_is_a_folder]


def test_the_whole_snapshot_cache_repairs_each_kind_of_damage_to_a_folder(remote, tmp_path):
    local = SmallDataset(str(tmp_path / "local"), videos=5, frames_per_video=2)
    gulpdb.push(local.path, remote.url, layout="whole")
    remote.monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "node"))
    with gulpdb.Dataset(remote.url) as ds:
        data = ds.remote_info["snapshot_path"]
    folder = os.path.dirname(data)
    pristine = open(data, "rb").read()
    for i, damage in enumerate(FOLDER_DAMAGES):
        damage(folder)
        # The command line, then Python, then the command line again (now
        # from the repaired cache).
        for how in ("cli", "python", "cli"):
            if how == "cli":
                proc = cli("info", remote.url)
                assert proc.returncode == 0, (damage.__name__, proc.stderr)
                assert "Directory not empty" not in proc.stderr
            else:
                with gulpdb.Dataset(remote.url) as ds:
                    for id_ in local.ids:
                        np.testing.assert_array_equal(ds.read(id_), local.decoded[id_])
        assert open(data, "rb").read() == pristine, damage.__name__
        assert os.path.isfile(os.path.join(folder, "verified")), damage.__name__
        # Nothing set aside is left behind.
        assert not glob.glob(os.path.join(os.path.dirname(folder), ".damaged.*")), damage.__name__


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


def _text(alphabet, min_size, max_size):
    # Drawn from a list of characters (st.text would cache Unicode tables
    # in a .hypothesis folder of the working directory).
    return st.lists(st.sampled_from(alphabet), min_size=min_size, max_size=max_size).map("".join)


@settings(deadline=None, max_examples=300, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(key=_text(string.ascii_uppercase + string.digits, 1, 20),
       secret=_text(string.ascii_letters + string.digits + "/+@:%?#=-_.'", 1, 40),
       bucket=st.tuples(_text(string.ascii_lowercase + string.digits, 1, 1),
                        _text(string.ascii_lowercase + string.digits + ".-", 1, 20),
                        _text(string.ascii_lowercase + string.digits, 1, 1)).map("".join),
       prefix=st.lists(_text(string.ascii_lowercase + string.digits + "-_.@", 1, 8), max_size=3))
def test_the_user_information_of_an_s3_url_is_hidden_whatever_it_holds(key, secret, bucket,
                                                                        prefix):
    """Whatever a secret holds, what is shown of the URL is "s3://***@" and
    an end of "bucket/prefix": never a byte of the key id or the secret. The
    parser refuses the URL for its user information, showing only that."""
    rest = bucket + "".join("/" + p for p in prefix)
    url = f"s3://{key}:{secret}@{rest}"
    shown = gulpdb._gulpdb.redact_url(url)
    assert shown.startswith("s3://***@") and rest.endswith(shown[len("s3://***@"):]), shown
    with pytest.raises(ValueError) as e:
        gulpdb.Dataset(url)
    assert str(e.value).startswith(f"open dataset {shown}") or f"URL '{shown}'" in str(e.value), (
        str(e.value))
    assert "user information" in str(e.value)
