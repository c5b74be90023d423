"""Remote datasets from Python and the command line, against a real S3 server
(s3rver) and the signature-checking, fault-injecting proxy, both started here
on 127.0.0.1: push, read every frame back (bytes and pixels), the GulpIO2 API
and the CLI over the URL, readers in other processes that keep their
generation across appends and compaction, 403 and 404, a DataLoader epoch
through a faulty network, one snapshot download for concurrent first opens,
and the shared-file-system rule."""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import pickle
import subprocess
import sys
import textwrap
import time

import boto3
import numpy as np
import pytest
import torch
from botocore.config import Config

import gulpdb
from conftest import GULPDB_CLI, PYTHON, SmallDataset, python_subprocess_env

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "harness"))
import s3_proxy  # noqa: E402  (tests/harness/s3_proxy.py)

BUCKET = "gulpdb-test"
KEY_ID = "PYREMOTE"
SECRET = "py-remote-secret"
CLI = GULPDB_CLI

_counter = [0]


@pytest.fixture(scope="module")
def servers():
    with s3_proxy.s3rver_behind_proxy(BUCKET, {KEY_ID: SECRET}) as both:
        yield both


class Remote:
    """One test's place in the bucket, and the environment that reaches it."""

    def __init__(self, servers, tmp_path, monkeypatch):
        self.s3rver, self.proxy = servers
        self.proxy.reset()
        self.tmp = tmp_path
        self.monkeypatch = monkeypatch
        _counter[0] += 1
        self.prefix = f"py{os.getpid()}-{_counter[0]}"
        self.url = f"s3://{BUCKET}/{self.prefix}"
        self.use(self.s3rver.endpoint, "S3RVER", "S3RVER")
        for name, value in {
            "GULPDB_CACHE": str(tmp_path / "cache"),
            "GULPDB_S3_CONNECT_TIMEOUT_MS": "2000",
            "GULPDB_S3_STALL_TIMEOUT_MS": "5000",
            "GULPDB_S3_REQUEST_TIMEOUT_MS": "20000",
            "GULPDB_S3_MAX_ATTEMPTS": "5",
            "GULPDB_S3_BACKOFF_BASE_MS": "5",
            "GULPDB_S3_BACKOFF_MAX_MS": "50",
            "AWS_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        for name in ("GULPDB_CACHE_DIR", "AWS_SESSION_TOKEN", "AWS_PROFILE", "GULPDB_PUSH_GRACE",
                     "GULPDB_TEST_FS_TYPE", "GULPDB_ALLOW_NETWORK_INDEX"):
            monkeypatch.delenv(name, raising=False)

    def use(self, endpoint, key, secret):
        self.monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        self.monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
        self.monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)

    def through_proxy(self, secret=SECRET):
        self.use(self.proxy.endpoint, KEY_ID, secret)

    def boto3(self):
        return boto3.client("s3", endpoint_url=self.s3rver.endpoint, aws_access_key_id="S3RVER",
                            aws_secret_access_key="S3RVER", region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}))

    def key(self, name):
        return f"{self.prefix}/{name}"


@pytest.fixture
def remote(servers, tmp_path, monkeypatch):
    return Remote(servers, tmp_path, monkeypatch)


def jpeg_digests(ds: gulpdb.Dataset):
    """id -> SHA-256 of each frame's JPEG bytes."""
    return {i: [hashlib.sha256(b).hexdigest() for b in ds.read_jpegs(i)] for i in ds.ids()}


def append_videos(path, first, last):
    with gulpdb.Dataset(path, "a", videos_per_chunk=4) as ds:
        with ds.writer() as w:
            from conftest import synthetic_frames

            for i in range(first, last):
                w.append(f"video_{i}", synthetic_frames(i, 4 + i % 3),
                         {"id": f"video_{i}", "label": f"class_{i % 3}", "idx": i % 3})


def run_cli(*args, check=True):
    proc = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"gulpdb {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc


# ---- reading back -----------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["partitioned", "whole"])
def test_a_url_answers_queries_as_the_dataset_whatever_form_its_indexes_have(
        remote, tmp_path, monkeypatch, layout):
    """The query language over s3:// (docs/query.md): the same ids as the local
    dataset, with an ordered meta index, one of the first key form and none;
    after an index is rebuilt in the ordered form, the next push says so."""
    local = str(tmp_path / "local")
    append_videos(local, 0, 30)
    monkeypatch.setenv("GULPDB_TEST_META_KEY_FORM", "canonical")
    with gulpdb.Dataset(local, "r+") as ds:
        ds.create_meta_index("idx")  # the first key form
    monkeypatch.delenv("GULPDB_TEST_META_KEY_FORM")
    with gulpdb.Dataset(local, "r+") as ds:
        ds.create_meta_index("label")  # ordered
    queries = ["idx >= 1 and label < 'class_2'", "label in ('class_0', 'x') or idx = 2",
               "not idx = 1 and frames > 4", "id >= 'video_25' or label > 'class_1'",
               "has idx and not (label = 'class_1')"]
    gulpdb.push(local, remote.url, layout=layout)
    with gulpdb.Dataset(local) as ld, gulpdb.Dataset(remote.url) as ds:
        assert ds.meta_index_details() == {"idx": False, "label": True}
        for q in queries:
            want = ld.select(q)
            assert want, q
            assert ds.select(q) == want, q
    run_cli("index", local, "--meta-key", "idx")
    gulpdb.push(local, remote.url, layout=layout)
    with gulpdb.Dataset(local) as ld, gulpdb.Dataset(remote.url) as ds:
        assert ds.meta_index_details() == {"idx": True, "label": True}
        for q in queries:
            assert ds.select(q) == ld.select(q), q
    bad = run_cli("ls", remote.url, "--where", "idx >", check=False)
    assert bad.returncode == 2 and "  idx >\n" in bad.stderr, bad.stderr


@pytest.mark.parametrize("layout", ["auto", "whole"])
def test_push_then_every_frame_reads_back_byte_and_pixel_exact(remote, tmp_path, layout):
    local = SmallDataset(str(tmp_path / "local"), videos=12, frames_per_video=5)
    report = gulpdb.push(local.path, remote.url, jobs=3, layout=layout)
    assert report["published"] and report["generation"] == 1 and report["chunks"] == 3
    assert report["partitioned"] == (layout == "auto")  # auto: partitioned
    with gulpdb.Dataset(local.path) as ld, gulpdb.Dataset(remote.url) as ds:
        assert ds.is_remote and ds.read_only and ds.generation == 1
        assert repr(ds).startswith(f"<gulpdb.Dataset '{remote.url}'")
        assert ds.ids() == ld.ids() and len(ds) == 12 and "video_3" in ds
        assert jpeg_digests(ds) == jpeg_digests(ld)
        for id_ in ds.ids():
            np.testing.assert_array_equal(ds.read(id_), local.decoded[id_])
            np.testing.assert_array_equal(ds[id_, 1:4:2], local.decoded[id_][1:4:2])
            assert ds.meta(id_) == local.meta[id_]
        batch = ds.read_batch([(i, slice(0, 3)) for i in ds.ids()])
        for id_, frames in zip(ds.ids(), batch):
            np.testing.assert_array_equal(frames, local.decoded[id_][0:3])
        assert ds.read_jpeg_batch(["video_1", "video_2"]) == ld.read_jpeg_batch(
            ["video_1", "video_2"])
        info = ds.remote_info
        assert info["url"] == remote.url and info["snapshot_downloaded"]
        assert info["partitioned"] == report["partitioned"]
        # The snapshot file, or the node's partition cache (a directory).
        assert (os.path.isdir if info["partitioned"] else os.path.isfile)(info["snapshot_path"])
        assert info["snapshot_path"].startswith(str(tmp_path / "cache"))
    # Reopening costs one small GET (the manifest): the root, the page of the chunk
    # list and the partitions read before are in the node cache.
    with gulpdb.Dataset(remote.url) as again:
        info = again.remote_info
        if info["partitioned"]:
            again.read_jpegs("video_3")
            info = again.remote_info
            # The frames read before are in the node's frame cache too.
            assert info["partitions_downloaded"] == 0 and info["requests"] == 1
        else:
            assert not info["snapshot_downloaded"] and info["requests"] == 1
    assert gulpdb.Dataset.exists(remote.url)
    assert not gulpdb.Dataset.exists(remote.url + "-nothing")
    with pytest.raises(FileNotFoundError, match="nothing is published there"):
        gulpdb.Dataset(remote.url + "-nothing")
    assert not gulpdb.push(local.path, remote.url, layout=layout)["published"]
    # Switching layouts publishes the same dataset the other way.
    switched = gulpdb.push(local.path, remote.url, layout="whole" if layout == "auto" else "auto")
    assert switched["published"] and switched["partitioned"] != report["partitioned"]
    with gulpdb.Dataset(remote.url) as ds:
        assert jpeg_digests(ds) == jpeg_digests(gulpdb.Dataset(local.path))


def test_the_gulpio2_api_over_the_url(remote, tmp_path):
    local = SmallDataset(str(tmp_path / "local"), videos=9, frames_per_video=4)
    gulpdb.push(local.path, remote.url)
    gd = gulpdb.GulpDirectory(remote.url)
    ref = gulpdb.GulpDirectory(local.path)
    assert gd.num_chunks == ref.num_chunks == 3
    assert dict(gd.chunk_lookup) == dict(ref.chunk_lookup)
    assert dict(gd.merged_meta_dict) == dict(ref.merged_meta_dict)
    seen = 0
    for chunk, ref_chunk in zip(gd, ref):
        for (frames, meta), (ref_frames, ref_meta) in zip(chunk, ref_chunk):
            assert meta == ref_meta
            for a, b in zip(frames, ref_frames):
                np.testing.assert_array_equal(a, b)
            seen += 1
    assert seen == 9
    frames, meta = gd["video_4", 1:3]
    assert meta == local.meta["video_4"] and len(frames) == 2
    np.testing.assert_array_equal(frames[1], local.decoded["video_4"][2])
    frames, _ = gd["video_5", [0, 3]]
    np.testing.assert_array_equal(frames[1], local.decoded["video_5"][3])
    with pytest.raises(PermissionError, match="object storage"):
        with gd.chunk_objs_lookup[0].open("ab"):
            pass
    with pytest.raises(ValueError, match="read-only"):
        gulpdb.Dataset(remote.url, "a")


def test_an_imported_gulpio_directory_pushes_as_the_same_gulpio_directory(remote, tmp_path,
                                                                          gulpio_copy):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    index_dir = str(tmp_path / "elsewhere")
    gulpdb.import_gulpio(directory, index_dir=index_dir)
    report = gulpdb.push(directory, remote.url, index_dir=index_dir)
    assert report["published"]
    # The bucket holds the directory's own data and .gmeta files, byte for byte.
    s3 = remote.boto3()
    for name in sorted(os.listdir(directory)):
        if name.endswith((".gulp", ".gmeta")):
            body = s3.get_object(Bucket=BUCKET, Key=remote.key(name))["Body"].read()
            assert body == open(os.path.join(directory, name), "rb").read(), name
    gd = gulpdb.GulpDirectory(remote.url)
    ref = gulpdb.GulpDirectory(directory, index_dir=index_dir)
    assert dict(gd.merged_meta_dict) == dict(ref.merged_meta_dict)
    for id_ in list(ref.merged_meta_dict)[:5]:
        frames, meta = gd[id_]
        ref_frames, ref_meta = ref[id_]
        assert meta == ref_meta
        for a, b in zip(frames, ref_frames):
            np.testing.assert_array_equal(a, b)


def test_the_command_line_on_urls(remote, tmp_path):
    local = SmallDataset(str(tmp_path / "local"), videos=6, frames_per_video=3)
    out = run_cli("push", local.path, remote.url, "--jobs", "2", "-q").stdout
    assert "published generation 1" in out
    info = json.loads(run_cli("info", remote.url, "--json").stdout)
    assert info["videos"] == 6 and info["frames"] == 18 and info["path"] == remote.url
    listed = [json.loads(line)["id"] for line in run_cli("ls", remote.url, "--json").stdout.splitlines()
              if line.startswith("{")]
    assert listed == gulpdb.Dataset(local.path).ids()
    shown = json.loads(run_cli("show", remote.url, "video_2", "--json").stdout)
    assert shown["frame_info"] == [list(f) for f in gulpdb.Dataset(local.path).info("video_2")
                                   .frame_info]
    run_cli("extract", remote.url, "video_2", "-o", str(tmp_path / "x"), "--frames", "0,2")
    assert open(tmp_path / "x" / "video_2_00002.jpg", "rb").read() == \
        gulpdb.Dataset(local.path).read_jpegs("video_2", [2])[0]
    check = json.loads(run_cli("check", remote.url, "--deep", "--json").stdout)
    assert check["healthy"] and check["frames"] == 18 and check["deep"]
    run_cli("export", remote.url, "-o", str(tmp_path / "exp"))
    run_cli("export", local.path, "-o", str(tmp_path / "exp_local"))
    for name in sorted(os.listdir(tmp_path / "exp_local")):
        assert open(tmp_path / "exp" / name, "rb").read() == \
            open(tmp_path / "exp_local" / name, "rb").read()
    # Writes are refused with a usage error that says what to do.
    for args in (["remove", remote.url, "video_1"], ["compact", remote.url],
                 ["create", remote.url], ["import", remote.url], ["export", remote.url]):
        proc = run_cli(*args, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        assert remote.url in proc.stderr
    assert "gulpdb push" in run_cli("remove", remote.url, "x", check=False).stderr
    missing = run_cli("info", remote.url + "-nothing", check=False)
    assert missing.returncode == 1 and "nothing is published there" in missing.stderr


# ---- consistency -------------------------------------------------------------------------

READER = textwrap.dedent("""
    import hashlib, json, sys, time
    import gulpdb
    url, expected_path, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    expected = json.load(open(expected_path))
    ds = gulpdb.Dataset(url)
    print("ready", ds.generation, flush=True)
    reads = wrong = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for id_, digests in expected.items():
            got = [hashlib.sha256(b).hexdigest() for b in ds.read_jpegs(id_)]
            wrong += got != digests
            reads += 1
    print(json.dumps({"reads": reads, "wrong": wrong, "generation": ds.generation,
                      "videos": len(ds)}), flush=True)
""")


def test_a_reader_in_another_process_keeps_its_generation_across_appends_and_compaction(
        remote, tmp_path):
    path = str(tmp_path / "local")
    append_videos(path, 0, 10)
    gulpdb.push(path, remote.url)
    expected = jpeg_digests(gulpdb.Dataset(path))
    expected_path = tmp_path / "expected.json"
    expected_path.write_text(json.dumps(expected))
    reader = subprocess.Popen([PYTHON, "-c", READER, remote.url, str(expected_path), "6"],
                              stdout=subprocess.PIPE, text=True, env=python_subprocess_env())
    try:
        assert reader.stdout.readline().split() == ["ready", "1"]
        append_videos(path, 10, 16)  # grows the last chunk object, adds new ones
        assert gulpdb.push(path, remote.url)["generation"] == 2
        with gulpdb.Dataset(path, "r+") as ds:
            ds.remove(["video_0", "video_1", "video_5", "video_6"])
        assert subprocess.run([CLI, "compact", path, "-q"], capture_output=True).returncode == 0
        report = gulpdb.push(path, remote.url)
        assert report["generation"] == 3 and report["objects_obsoleted"] >= 2
        out = json.loads(reader.stdout.readline())
    finally:
        reader.kill()
        reader.wait()
    assert out["wrong"] == 0 and out["reads"] > 20 and out["generation"] == 1
    assert out["videos"] == 10
    with gulpdb.Dataset(remote.url) as ds:
        assert ds.generation == 3 and len(ds) == 12
        assert jpeg_digests(ds) == jpeg_digests(gulpdb.Dataset(path))
    with gulpdb.Dataset(remote.url, generation=1) as old:
        assert jpeg_digests(old) == expected


def test_a_wrong_secret_key_is_a_permission_error_naming_the_bucket(remote, tmp_path):
    local = SmallDataset(str(tmp_path / "local"), videos=3, frames_per_video=2)
    gulpdb.push(local.path, remote.url)
    remote.through_proxy(secret="wrong")
    with pytest.raises(PermissionError, match=f"access denied to bucket '{BUCKET}'") as e:
        gulpdb.Dataset(remote.url)
    assert "SignatureDoesNotMatch" in str(e.value) and KEY_ID in str(e.value)
    assert remote.proxy.stats()["signature_failures"] >= 1
    remote.through_proxy()
    assert len(gulpdb.Dataset(remote.url)) == 3


def test_an_object_deleted_behind_the_manifests_back_is_a_corruption_error(remote, tmp_path):
    local = SmallDataset(str(tmp_path / "local"), videos=8, frames_per_video=2)
    gulpdb.push(local.path, remote.url)
    ds = gulpdb.Dataset(remote.url)
    remote.boto3().delete_object(Bucket=BUCKET, Key=remote.key("data_1.gulp"))
    ds.read("video_0")
    with pytest.raises(gulpdb.CorruptionError, match="deleted behind the manifest's back") as e:
        ds.read("video_5")
    assert f"{remote.url}/data_1.gulp" in str(e.value) and "404" in str(e.value)
    assert not gulpdb.check(remote.url)["healthy"]


# ---- what a push may replace ----------------------------------------------------------------


def _prefix_objects(remote):
    """key -> (ETag, bytes) of every object under the test's prefix."""
    s3 = remote.boto3()
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                             Prefix=remote.prefix + "/"):
        for o in page.get("Contents", []):
            body = s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
            out[o["Key"][len(remote.prefix) + 1:]] = (o["ETag"], body)
    return out


def test_a_gulpio_directory_uploaded_by_other_tools_is_refused_untouched_unless_overwritten(
        remote, tmp_path):
    fixture = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "fixtures", "gulpio2_csv_jpeg")
    s3 = remote.boto3()
    for name in sorted(os.listdir(fixture)):
        with open(os.path.join(fixture, name), "rb") as f:
            s3.put_object(Bucket=BUCKET, Key=remote.key(name), Body=f.read())
    before = _prefix_objects(remote)
    assert "data_10.gulp" in before and "label2idx.json" in before
    local = SmallDataset(str(tmp_path / "local"), videos=6, frames_per_video=3)

    proc = run_cli("push", local.path, remote.url, "-q", check=False)
    assert proc.returncode == 1, proc.stderr
    assert "did not write" in proc.stderr and "--overwrite" in proc.stderr
    assert "data_0.gulp" in proc.stderr
    assert _prefix_objects(remote) == before, "a refused push changed the prefix"
    with pytest.raises(ValueError, match="overwrite=True"):
        gulpdb.push(local.path, remote.url)
    assert _prefix_objects(remote) == before

    out = run_cli("push", local.path, remote.url, "-q", "--overwrite").stdout
    assert "published generation 1" in out
    after = _prefix_objects(remote)
    manifest = json.loads(after["gulpdb.manifest.json"][1])
    # The GulpIO view is this dataset alone: one .gmeta per data file, the
    # ones the manifest names, nothing of the other directory.
    data = sorted(k for k in after if k.startswith("data_"))
    metas = sorted(k for k in after if k.startswith("meta_"))
    # The manifest's chunk list is in pages it names (a partitioned push).
    chunks = [c for page in manifest["chunk_pages"]
              for c in json.loads(after[page["key"]][1])["chunks"]]
    assert data == sorted(c["key"] for c in chunks) == ["data_0.gulp", "data_1.gulp"]
    assert metas == sorted(c["gmeta_key"] for c in chunks)
    assert "label2idx.json" not in after and "manifest.json" not in after
    view = tmp_path / "view"
    view.mkdir()
    for key in data + metas:
        (view / key).write_bytes(after[key][1])
    gd = gulpdb.GulpDirectory(str(view), index_dir=str(tmp_path / "view-index"))
    assert sorted(gd.merged_meta_dict) == sorted(local.ids)
    for id_ in local.ids:
        frames, meta = gd[id_]
        assert meta == local.meta[id_]
        for a, b in zip(frames, local.decoded[id_]):
            np.testing.assert_array_equal(a, b)
    # From then on it is this dataset's prefix.
    append_videos(local.path, 6, 8)
    assert gulpdb.push(local.path, remote.url)["generation"] == 2


def test_a_pickled_reader_never_opens_another_dataset_pushed_to_its_place(remote, tmp_path):
    first = SmallDataset(str(tmp_path / "first"), videos=5, frames_per_video=2)
    gulpdb.push(first.path, remote.url)
    ds = gulpdb.Dataset(remote.url)
    assert ds.remote_info["dataset"] == gulpdb.Dataset(first.path).stats().uuid != ""
    import gulpdb.torch as gtorch

    video_ds = gtorch.VideoDataset(ds, label="idx")
    blobs = [pickle.dumps(ds), pickle.dumps(video_ds)]
    # The prefix is wiped and another dataset pushed there: generation 1 again.
    s3 = remote.boto3()
    for key in list(_prefix_objects(remote)):
        s3.delete_object(Bucket=BUCKET, Key=remote.key(key))
    second = tmp_path / "second"
    with gulpdb.Dataset(str(second), "x", videos_per_chunk=4) as other:
        with other.writer() as w:
            from conftest import synthetic_frames
            for i in range(5):
                w.append(f"video_{i}", synthetic_frames(100 + i, 2),
                         {"id": f"other_{i}", "label": "x", "idx": 7})
    assert gulpdb.push(str(second), remote.url)["generation"] == 1
    copy = pickle.loads(blobs[0])
    with pytest.raises(gulpdb.CorruptionError, match="this reader was opened on"):
        copy.read("video_0")
    video_copy = pickle.loads(blobs[1])
    with pytest.raises(gulpdb.CorruptionError, match="this reader was opened on"):
        video_copy[0]
    # The original keeps its snapshot (cached) and generation 1's objects are
    # the other dataset's now: never its frames silently.
    assert gulpdb.Dataset(remote.url).meta("video_0")["idx"] == 7


# ---- training ----------------------------------------------------------------------------


class _Checked(torch.utils.data.Dataset):
    """Wraps a VideoDataset: each item is (index, SHA-256 of the clip) or (index, error)."""

    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, index):
        try:
            clip, _ = self.inner[index]
        except OSError as e:
            return index, "error: " + str(e)
        return index, hashlib.sha256(clip.numpy().tobytes()).hexdigest()


def test_a_dataloader_epoch_through_a_faulty_network_is_right_or_an_error(
        remote, tmp_path, monkeypatch):
    import gulpdb.torch as gtorch

    # Every clip from the store, each its own GET (the frame cache would make
    # a few block GETs of this small dataset, too few for the faults to meet).
    monkeypatch.setenv("GULPDB_FRAME_CACHE_BYTES", "0")

    local = SmallDataset(str(tmp_path / "local"), videos=24, frames_per_video=4)
    remote.through_proxy()
    gulpdb.push(local.path, remote.url)
    want = [hashlib.sha256(np.ascontiguousarray(local.decoded[i]).tobytes()).hexdigest()
            for i in local.ids]
    dataset = gtorch.VideoDataset(remote.url, label="label", ids=local.ids)
    for seed, kind in enumerate(["drop_body", "truncate", "slowdown", "reset", "shift_range",
                                 "error500"]):
        remote.proxy.add_fault(kind=kind, fraction=0.05, seed=seed, method="GET",
                               path="/data_")
    remote.proxy.add_fault(kind="delay", fraction=0.1, seed=99, delay_ms=150, method="GET")
    loader = torch.utils.data.DataLoader(_Checked(dataset), batch_size=None, num_workers=2,
                                         multiprocessing_context="fork")
    results = dict(loader)
    assert sorted(results) == list(range(24))
    errors = [r for r in results.values() if r.startswith("error")]
    for index, digest in results.items():
        if not digest.startswith("error"):
            assert digest == want[index], f"wrong pixels for {local.ids[index]}"
    assert remote.proxy.stats()["faults_injected"] >= 5
    assert len(errors) <= 4, errors


def test_spawned_workers_read_the_generation_their_parent_opened(remote, tmp_path):
    import gulpdb.torch as gtorch

    path = str(tmp_path / "local")
    append_videos(path, 0, 6)
    gulpdb.push(path, remote.url)
    want = {i: np.ascontiguousarray(a).tobytes() for i, a in
            ((i, gulpdb.Dataset(path).read(i)) for i in gulpdb.Dataset(path).ids())}
    dataset = gtorch.VideoDataset(remote.url)  # generation 1
    with gulpdb.Dataset(path, "r+") as ds:
        ds.remove(["video_2"])
    assert gulpdb.push(path, remote.url)["generation"] == 2
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2,
                                         multiprocessing_context="spawn")
    clips = [clip.numpy().tobytes() for clip in loader]
    assert clips == [want[i] for i in dataset.ids]  # video_2 included: generation 1


# ---- one download per machine, shared file systems, the cache --------------------------

OPENER = textwrap.dedent("""
    import sys, time
    import gulpdb
    start = float(sys.argv[2])
    time.sleep(max(0.0, start - time.time()))
    ds = gulpdb.Dataset(sys.argv[1])
    print(len(ds), ds.remote_info["snapshot_downloaded"])
""")


def test_concurrent_first_opens_download_the_snapshot_once(remote, tmp_path):
    path = str(tmp_path / "local")
    append_videos(path, 0, 40)
    remote.through_proxy()
    gulpdb.push(path, remote.url, layout="whole")
    remote.proxy.reset()
    remote.proxy.add_fault(kind="delay", delay_ms=300, method="GET", path="gulpdb.snapshots")
    start = time.time() + 1.5
    procs = [subprocess.Popen([PYTHON, "-c", OPENER, remote.url, str(start)],
                              stdout=subprocess.PIPE, text=True, env=python_subprocess_env())
             for _ in range(4)]
    outputs = [p.communicate(timeout=60)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(o[1] for o in outputs) == ["False", "False", "False", "True"]
    assert all(o[0] == "40" for o in outputs)
    snapshot_gets = [e for e in remote.proxy.log()
                     if e["method"] == "GET" and "gulpdb.snapshots/" in e["path"]]
    assert len(snapshot_gets) == 1


def test_a_network_file_system_reads_the_published_snapshot_or_refuses(remote, tmp_path,
                                                                       monkeypatch):
    local = SmallDataset(str(tmp_path / "local"), videos=5, frames_per_video=2)
    monkeypatch.setenv("GULPDB_TEST_FS_TYPE", "lustre")
    with pytest.raises(OSError, match="network file system \\(lustre\\)") as e:
        gulpdb.Dataset(local.path)
    assert f"gulpdb snapshot {local.path}" in str(e.value)
    out = run_cli("snapshot", local.path).stdout
    assert "published generation 1" in out and "partitioned index" in out
    with gulpdb.Dataset(local.path) as ds:
        assert ds.remote_info["generation"] == 1 and len(ds) == 5
        assert ds.remote_info["partitioned"]
        np.testing.assert_array_equal(ds.read("video_3"), local.decoded["video_3"])
    gd = gulpdb.GulpDirectory(local.path)
    assert gd["video_4"][1] == local.meta["video_4"]
    # The whole snapshot, from Python; the layout is checked.
    assert gulpdb.publish_snapshot(local.path, layout="whole")["snapshot_uploaded"]
    with gulpdb.Dataset(local.path) as ds:
        assert not ds.remote_info["partitioned"] and ds.remote_info["generation"] == 2
        np.testing.assert_array_equal(ds.read("video_1"), local.decoded["video_1"])
    with pytest.raises(ValueError, match="layout must be"):
        gulpdb.publish_snapshot(local.path, layout="sideways")
    bad = run_cli("snapshot", local.path, "--layout", "sideways", check=False)
    assert bad.returncode == 2 and "--layout must be auto, partitioned or whole" in bad.stderr
    with gulpdb.Dataset(local.path, allow_network_index=True) as live:
        assert live.remote_info is None


def test_the_cache_variable_and_its_older_name(monkeypatch, tmp_path):
    from gulpdb._index_cache import cache_root

    monkeypatch.setenv("GULPDB_CACHE_DIR", str(tmp_path / "old"))
    monkeypatch.delenv("GULPDB_CACHE", raising=False)
    assert cache_root() == gulpdb._gulpdb.cache_directory() == str(tmp_path / "old")
    monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "new"))
    assert cache_root() == gulpdb._gulpdb.cache_directory() == str(tmp_path / "new")
    monkeypatch.delenv("GULPDB_CACHE")
    monkeypatch.delenv("GULPDB_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == gulpdb._gulpdb.cache_directory() == str(tmp_path / "xdg" / "gulpdb")


def test_the_cache_is_the_engines_when_home_is_unset(monkeypatch):
    # Python once computed the cache itself and, without HOME, fell back on
    # the password database while the engine refused: two caches for one rule.
    from gulpdb._index_cache import cache_root

    for name in ("GULPDB_CACHE", "GULPDB_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="none of GULPDB_CACHE, XDG_CACHE_HOME or HOME is set"):
        gulpdb._gulpdb.cache_directory()
    with pytest.raises(ValueError, match="none of GULPDB_CACHE, XDG_CACHE_HOME or HOME is set"):
        cache_root()


# ---- partitioned snapshots -----------------------------------------------------------------


@pytest.mark.parametrize("root", ["flat", "paged"])
def test_a_sampler_rank_over_a_partitioned_url_fetches_only_its_blocks(remote, tmp_path,
                                                                        monkeypatch, root):
    """Records are stored with their positions: a VideoDataset built on a
    partitioned URL fetches nothing, and rank 0's first items under the
    partition-aware shuffle fetch the blocks they come from, not the index;
    the same through a two-level root (pages of a few partitions)."""
    import gulpdb.torch as gtorch

    if root == "paged":
        monkeypatch.setenv("GULPDB_TEST_ROOT_PAGE_BYTES", "128")  # the smallest

    path = str(tmp_path / "many")
    frame = np.zeros((1, 8, 8, 3), np.uint8)
    ids = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(1500)]  # hashed ids
    with gulpdb.Dataset(path, "x", videos_per_chunk=250) as ds:
        with ds.writer() as w:
            for i, id_ in enumerate(ids):
                w.append(id_, frame + i % 7, {"label": i % 10, "n": i})
    report = gulpdb._gulpdb.push(path, remote.url, layout="partitioned",
                                 partition_bytes=64 << 10)  # the smallest: several blocks
    assert (report["root_pages"] > 0) == (root == "paged"), report
    monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "fresh"))
    with gulpdb.Dataset(path) as local, gulpdb.Dataset(remote.url) as ds:
        video_ds = gtorch.VideoDataset(ds, label="n")
        assert len(video_ds) == 1500
        assert ds.remote_info["partitions_downloaded"] == 0  # nothing read yet
        blocks = video_ds.order_blocks()
        assert len(blocks) >= 5
        sampler = gtorch.VideoSampler(video_ds, num_replicas=8, rank=0, shuffle="blocks",
                                      seed=3, window=1)
        first = list(sampler)[:16]
        for i in first:
            clip, label = video_ds[i]
            assert label == i and local.meta(local.id_at(i))["n"] == i
            assert video_ds.ids[i] == local.id_at(i)
        touched = {bisect.bisect_right(blocks, i) for i in first}
        downloaded = ds.remote_info["partitions_downloaded"]
        # The order partitions of the blocks read, and the chunk list.
        assert downloaded <= len(touched) + 1, (downloaded, touched)
        assert downloaded < report["partitions"] / 2
        # Several threads at once, and a pickled copy (a DataLoader worker's).
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda i: video_ds.ids[i], range(0, 1500, 7)))
        assert got == [local.id_at(i) for i in range(0, 1500, 7)]
        copy = pickle.loads(pickle.dumps(video_ds))
        assert copy.ids[1499] == ids[-1] and len(copy) == 1500
        # Every id still answers, and the lazy ids compare as the list.
        assert video_ds.ids == local.ids()
        assert video_ds.ids[-1] == ids[-1] and video_ds.ids[10:13] == ids[10:13]
        with pytest.raises(IndexError):
            video_ds.ids[1500]


@pytest.mark.parametrize("shuffle", [True, "blocks"], ids=["global", "blocks"])
def test_a_sampler_resumes_on_a_url_pushed_again_after_an_append(remote, tmp_path, shuffle):
    """A run on a partitioned URL stops mid-epoch; videos are appended and pushed
    again; the run resumes on the new generation with grow="next_epoch" and
    takes exactly what it would have taken on the old one. A VideoDataset made
    before the push, and its pickled copy, keep reading their generation's
    positions; the appended videos come in the next epoch."""
    import gulpdb.torch as gtorch

    path = str(tmp_path / "many")
    frame = np.zeros((1, 8, 8, 3), np.uint8)
    ids = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(1200)]  # hashed ids

    def append(first, last):
        with gulpdb.Dataset(path, "a", videos_per_chunk=250) as ds:
            with ds.writer() as w:
                for i in range(first, last):
                    w.append(ids[i], frame + i % 7, {"n": i})

    def push():
        gulpdb._gulpdb.push(path, remote.url, layout="partitioned", partition_bytes=64 << 10)

    def world(video_ds, size, state=None, per_rank=None, grow=None):
        got, states = [], []
        for rank in range(size):
            s = gtorch.VideoSampler(video_ds, num_replicas=size, rank=rank, shuffle=shuffle, seed=4)
            if state is not None:
                s.load_state_dict(state, grow=grow)
            s.set_epoch(2)
            items = list(s)[:per_rank]
            got.append(items)
            states.append(s.state_dict(consumed=len(items)))
        assert all(st == states[0] for st in states)
        return got, states[0]

    append(0, 1000)
    push()
    with gulpdb.Dataset(path) as local, gulpdb.Dataset(remote.url) as ds:
        assert ds.uuid == local.uuid and ds.ids_digest(1000) == local.ids_digest(1000)
        old = gtorch.VideoDataset(ds)
        assert len(old.order_blocks()) >= 4
        taken, state = world(old, 4, per_rank=60)
        assert state["dataset"] == {"uuid": local.uuid, "length": 1000,
                                    "ids_digest": local.ids_digest(1000)}
        reference, _ = world(old, 3, state=state)
        if shuffle is True:  # the local dataset is the same items: the state resumes there too
            assert world(gtorch.VideoDataset(path), 3, state=state)[0] == reference

        append(1000, 1200)
        push()
        # The reader made before the push still reads its generation, here and pickled.
        copy = pickle.loads(pickle.dumps(old))
        assert len(old) == len(copy) == 1000
        assert copy.ids[999] == old.ids[999] == ids[999]
        with gulpdb.Dataset(remote.url) as newer:
            assert newer.generation > ds.generation and len(newer) == 1200
            grown = gtorch.VideoDataset(newer)
            blocks = grown.order_blocks()
            # Appends changed only the tail of the order partitions.
            assert [b for b in blocks if b < 1000] == old.order_blocks()
            with pytest.raises(ValueError, match="grew by 200"):
                gtorch.VideoSampler(grown, shuffle=shuffle).load_state_dict(state)
            resumed, end = world(grown, 3, state=state, grow="next_epoch")
            assert resumed == reference
            rest = [i for r in resumed for i in r]
            done = [i for r in taken for i in r]
            assert sorted(set(done) | set(rest)) == list(range(1000))
            assert [grown.ids[i] for i in rest] == [ids[i] for i in rest]
            assert end["consumed"] == 1000
            following = []
            for rank in range(3):
                s = gtorch.VideoSampler(grown, num_replicas=3, rank=rank)
                s.load_state_dict(state, grow="next_epoch")
                s.set_epoch(3)
                following += list(s)
            assert set(following) == set(range(1200))


def test_a_partitioned_push_reads_back_from_python_and_the_command_line(remote, tmp_path,
                                                                          monkeypatch):
    local = SmallDataset(str(tmp_path / "local"), videos=12, frames_per_video=5)
    report = gulpdb.push(local.path, remote.url, layout="partitioned")
    assert report["published"] and report["partitioned"] and not report["snapshot_uploaded"]
    assert report["partitions"] >= 3 and report["partitions_uploaded"] == report["partitions"]
    assert report["root_bytes"] > 0
    manifest = json.loads(remote.boto3().get_object(
        Bucket=BUCKET, Key=remote.key("gulpdb.manifest.json"))["Body"].read())
    assert manifest["version"] == 3 and "snapshot" not in manifest and "chunks" not in manifest
    assert report["chunk_pages_uploaded"] == len(manifest["chunk_pages"]) == 1
    assert manifest["chunk_count"] == report["chunks"]
    assert manifest["root"]["key"] == f"gulpdb.roots/{manifest['root']['sha256']}.root"
    monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "fresh"))
    with gulpdb.Dataset(local.path) as ld, gulpdb.Dataset(remote.url) as ds:
        info = ds.remote_info
        assert info["partitioned"] and info["partitions_downloaded"] == 0
        assert info["snapshot_sha256"] == manifest["root"]["sha256"]
        assert ds.ids() == ld.ids() and len(ds) == 12
        assert jpeg_digests(ds) == jpeg_digests(ld)
        for id_ in ds.ids():
            assert ds.meta(id_) == local.meta[id_]
        assert ds.remote_info["partitions_downloaded"] >= 1
    assert sorted(os.listdir(tmp_path / "fresh" / "partitions"))
    # Unchanged: nothing published. The command line pushes it too.
    assert not gulpdb.push(local.path, remote.url, layout="partitioned")["published"]
    out = run_cli("push", local.path, remote.url + "-cli", "--layout", "partitioned", "-q").stdout
    assert "partitioned index" in out
    listed = [json.loads(line)["id"] for line in
              run_cli("ls", remote.url + "-cli", "--json").stdout.splitlines()
              if line.startswith("{")]
    assert listed == gulpdb.Dataset(local.path).ids()
    shown = json.loads(run_cli("show", remote.url + "-cli", "video_2", "--json").stdout)
    assert shown["frame_info"] == [list(f) for f in gulpdb.Dataset(local.path).info("video_2")
                                   .frame_info]
    # A dataset without named splits has none, read through partitions too.
    info_json = json.loads(run_cli("info", remote.url + "-cli", "--json").stdout)
    assert info_json["splits"] == {} and info_json["videos"] == 12
    assert "splits:         none" in run_cli("info", remote.url + "-cli").stdout
    with gulpdb.Dataset(remote.url + "-cli") as ds:
        assert ds.splits() == {} and not ds.remote_info["splits_omitted"]


@pytest.mark.parametrize("layout", ["auto", "whole"])
def test_named_splits_are_published_in_either_layout(remote, tmp_path, layout):
    """Named splits are published with the index, partitioned (the root lists
    them, their members are partitions) or whole, and changes to them are
    published by the next push."""
    local = SmallDataset(str(tmp_path / "local"), videos=8, frames_per_video=2)
    ids = gulpdb.Dataset(local.path).ids()
    with gulpdb.Dataset(local.path, "r+") as rw, rw.writer() as w:
        w.set_split("train", ids[:5])
        w.set_split("val", [ids[7], ids[5]])
        w.commit()
    report = gulpdb.push(local.path, remote.url, layout=layout)
    assert report["published"] and report["partitioned"] == (layout == "auto")
    with gulpdb.Dataset(remote.url) as ds:
        assert ds.remote_info["partitioned"] == (layout == "auto")
        assert not ds.remote_info["splits_omitted"]
        assert ds.splits() == {"train": 5, "val": 2}
        assert ds.split("train") == ids[:5] and ds.split("val") == [ids[7], ids[5]]
        with pytest.raises(KeyError):
            ds.split("test")
    info_json = json.loads(run_cli("info", remote.url, "--json").stdout)
    assert info_json["splits"] == {"train": 5, "val": 2} and info_json["videos"] == 8
    assert run_cli("split", remote.url, "val").stdout.split() == [ids[7], ids[5]]
    with gulpdb.Dataset(local.path, "r+") as rw, rw.writer() as w:
        w.remove_split("train")
        w.set_split("val", [ids[0]])
        w.commit()
    assert gulpdb.push(local.path, remote.url, layout=layout)["published"]
    with gulpdb.Dataset(remote.url) as ds:
        assert ds.splits() == {"val": 1} and ds.split("val") == [ids[0]]
    bad = run_cli("push", local.path, remote.url + "-x", "--layout", "sideways", check=False)
    assert bad.returncode == 2 and "--layout must be auto, partitioned or whole" in bad.stderr
    with pytest.raises(ValueError, match="layout must be"):
        gulpdb.push(local.path, remote.url + "-x", layout="sideways")


def test_the_cache_bound_is_read_from_the_environment(remote, tmp_path, monkeypatch):
    local = SmallDataset(str(tmp_path / "local"), videos=6, frames_per_video=3)
    gulpdb.push(local.path, remote.url, layout="partitioned")
    monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "fresh"))
    monkeypatch.setenv("GULPDB_CACHE_BYTES", "1")
    with gulpdb.Dataset(remote.url) as ds:
        assert len(ds.read_jpegs(ds.ids()[0])) == 3
        assert os.listdir(tmp_path / "fresh" / "partitions")
        held = [n for n in os.listdir(tmp_path / "fresh" / "partitions") if len(n) == 64]
        assert held
    # Closed: every partition is evicted (the bound is 1 byte).
    del ds
    import gc
    gc.collect()
    left = [n for n in os.listdir(tmp_path / "fresh" / "partitions") if len(n) == 64]
    assert left == []


@pytest.mark.parametrize("value", ["abc", "0", "-5", "50"])
def test_a_bad_test_size_is_refused_and_leaves_no_snapshot(tmp_path, monkeypatch, value):
    """The test-only sizes of partitions and root pages: text, zero, a
    negative number (never wrapped round to a huge one) and a page too small
    are each one clear line, and the snapshot is not written."""
    path = str(tmp_path / "d")
    append_videos(path, 0, 3)
    for variable in ("GULPDB_TEST_ROOT_PAGE_BYTES", "GULPDB_TEST_PARTITION_BYTES"):
        if variable == "GULPDB_TEST_PARTITION_BYTES" and value == "50":
            continue  # a small partition target is the build's to judge, tested elsewhere
        monkeypatch.delenv("GULPDB_TEST_ROOT_PAGE_BYTES", raising=False)
        monkeypatch.delenv("GULPDB_TEST_PARTITION_BYTES", raising=False)
        monkeypatch.setenv(variable, value)
        proc = run_cli("snapshot", path, check=False)
        assert proc.returncode != 0, proc.stdout
        assert (variable in proc.stderr) or ("too small" in proc.stderr), proc.stderr
        assert not os.path.exists(os.path.join(path, "gulpdb.snapshot"))
