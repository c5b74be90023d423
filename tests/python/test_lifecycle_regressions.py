"""Failures the lifecycle test (test_lifecycle.py) found, each shrunk to its
minimal sequence of steps and kept as an ordinary test named after the
guarantee it guards. The docstring of each gives the minimal sequence the
state machine reported and the item of issue 19 it belongs to ("new": not
on the issue's list).

GulpIO directories here are written by the lifecycle test's independent
writer (lifecycle/gulpio_format.py, checked against GulpIO2's own fixtures).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import pytest

import gulpdb
from conftest import GULPDB_CLI, python_subprocess_env
from lifecycle import gulpio_format
from lifecycle.model import make_jpeg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "harness"))
import s3_proxy  # noqa: E402  (tests/harness/s3_proxy.py)

BUCKET = "lifecycle-regressions"


def gulpdb_cli(*args, expect=0):
    proc = subprocess.run([GULPDB_CLI, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode >= 0, f"gulpdb {' '.join(args)} died by signal {-proc.returncode}"
    if expect is not None:
        assert proc.returncode == expect, (
            f"gulpdb {' '.join(args)} exited {proc.returncode}: "
            f"{(proc.stderr.strip() + ' ' + proc.stdout.strip())[-1500:]}")
    return proc


def write_gulpio_dir(path, chunks):
    """A GulpIO directory: ``chunks`` maps a chunk number to [(id, n_frames)]."""
    os.makedirs(path, exist_ok=True)
    expected = {}
    labels = ["cat", "dog"]
    seed = 0
    for number, videos in chunks.items():
        appends = []
        for id_, n in videos:
            frames = [make_jpeg(seed + i) for i in range(n)]
            seed += n
            label = labels[len(expected) % 2]
            meta = {"id": id_, "label": label, "idx": labels.index(label)}
            appends.append((id_, frames, meta))
            expected[id_] = (frames, [meta])
        gulpio_format.write_chunk(path, number, appends)
    gulpio_format.write_label_map(path, {"cat": 0, "dog": 1})
    return expected


def assert_reads(path, expected):
    """Every video reads back exactly, through the CLI and Python."""
    listed = [json.loads(line)["id"] for line in
              gulpdb_cli("ls", path, "--json").stdout.splitlines() if line.strip()]
    assert sorted(listed) == sorted(expected)
    with gulpdb.Dataset(path) as ds:
        for id_, (frames, meta_data) in expected.items():
            assert ds.read_jpegs(id_) == frames
            assert ds.meta_data(id_) == meta_data
    gulpdb_cli("check", path, "--deep", "--json", "-q")


# ---- A. imported GulpIO directories ----------------------------------------------------


def test_a_cp_r_copy_of_an_imported_gulpio_directory_opens(tmp_path):
    """Issue 19 A1. Minimal sequence: create (import GulpIO dir) -> copy (cp -r).
    `cp -r` changes every mtime and keeps every byte: the copy is the same dataset."""
    src = str(tmp_path / "gulpio")
    expected = write_gulpio_dir(src, {0: [("a", 2), ("b", 1)], 1: [("c", 1)]})
    gulpdb_cli("import", src, "-q")
    copy = str(tmp_path / "copy")
    subprocess.run(["cp", "-r", src, copy], check=True)
    assert_reads(copy, expected)


def test_a_missing_gmeta_is_not_staleness_and_export_writes_it_again(tmp_path):
    """Issue 19 A2. Minimal sequence: create (import GulpIO dir) -> delete a .gmeta.
    The index still describes every byte: reads work, and export writes the
    missing .gmeta again byte-identical, twice in a row."""
    src = str(tmp_path / "gulpio")
    expected = write_gulpio_dir(src, {0: [("a", 2)], 3: [("b", 1)]})
    gulpdb_cli("import", src, "-q")
    with open(os.path.join(src, "meta_3.gmeta"), "rb") as f:
        original = f.read()
    os.unlink(os.path.join(src, "meta_3.gmeta"))
    assert_reads(src, expected)
    for _ in range(2):
        gulpdb_cli("export", src)
        with open(os.path.join(src, "meta_3.gmeta"), "rb") as f:
            assert f.read() == original


# ---- B. check must check what readers read ---------------------------------------------


@pytest.fixture(scope="module")
def s3rver():
    with s3_proxy.S3rverProcess(BUCKET) as server:
        yield server


@pytest.fixture
def bucket_env(s3rver, tmp_path, monkeypatch):
    env = {
        "AWS_ENDPOINT_URL": s3rver.endpoint,
        "AWS_ACCESS_KEY_ID": s3rver.ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": s3rver.SECRET_KEY,
        "AWS_REGION": "us-east-1",
        "GULPDB_CACHE": str(tmp_path / "cache"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return f"s3://{BUCKET}/{tmp_path.name}"


def test_check_of_a_pushed_imported_dataset_is_healthy(tmp_path, bucket_env):
    """Issue 19 B4. Minimal sequence: create (import GulpIO dir) -> push -> check --deep URL."""
    src = str(tmp_path / "gulpio")
    expected = write_gulpio_dir(src, {0: [("a", 1)]})
    gulpdb_cli("import", src, "-q")
    gulpdb_cli("push", src, bucket_env, "-q")
    assert_reads(bucket_env, expected)


def test_check_of_a_pushed_merged_dataset_is_healthy(tmp_path, bucket_env):
    """Issue 19 B4 (the distributed-ingest case). Minimal sequence: create ->
    merge (attach in place) -> push -> check --deep URL: the chunks of an
    attached shard are published flat, and check must look where readers do."""
    out = str(tmp_path / "out")
    gulpdb_cli("create", out)
    shard = os.path.join(out, "shards", "s1")
    os.makedirs(os.path.dirname(shard))
    with gulpdb.Dataset(shard, "x") as ds, ds.writer() as w:
        w.append("a", [make_jpeg(1)], {"id": "a"})
    gulpdb_cli("merge", out, shard, "-q")
    gulpdb_cli("push", out, bucket_env, "-q")
    assert_reads(bucket_env, {"a": ([make_jpeg(1)], [{"id": "a"}])})


def test_compacting_an_emptied_newest_chunk_keeps_the_dataset_writable(tmp_path):
    """Issue 19 B6. Minimal sequence (Hypothesis): create (python, 2 videos,
    videos_per_chunk=2) -> remove both (all of the newest chunk) -> compact ->
    compact: the second compaction, and every write after the first, fails
    with "a video points to a chunk the index lacks" while check --deep says
    healthy. Here: the newest of two chunks emptied, compacted, then appended to."""
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "x", videos_per_chunk=1) as ds, ds.writer() as w:
        w.append("a", [make_jpeg(1)], {"id": "a"})
        w.append("b", [make_jpeg(2)], {"id": "b"})
    gulpdb_cli("remove", path, "b")
    gulpdb_cli("compact", path, "-q")
    with gulpdb.Dataset(path, "a") as ds, ds.writer() as w:
        w.append("c", [make_jpeg(3)], {"id": "c"})
    assert_reads(path, {"a": ([make_jpeg(1)], [{"id": "a"}]),
                        "c": ([make_jpeg(3)], [{"id": "c"}])})


# ---- found by the lifecycle test, not on issue 19's list ---------------------------------


@pytest.mark.parametrize("had_labels", [False, True], ids=["no_label_map", "label_map"])
@pytest.mark.parametrize("inside", [False, True], ids=["copy", "attach_in_place"])
def test_a_refused_merge_leaves_the_label_map_as_it_was(tmp_path, inside, had_labels):
    """New. Minimal sequence: create (python, one video 'a') -> merge a shard
    ingested with labels that also holds 'a', --on-duplicate error: the merge
    is refused (exit 1) and must leave nothing behind, the output's
    label2idx.json included (it was written with the shard's labels: the map
    is written before the shards, and the duplicate is found in the shard's
    transaction). Here also with a label map the output had, and with the
    shard inside the output (attached in place)."""
    out = str(tmp_path / "out")
    with gulpdb.Dataset(out, "x") as ds, ds.writer() as w:
        w.append("a", [make_jpeg(1)], {"id": "a", "label": "owl", "idx": 0}
                 if had_labels else {"id": "a"})
    label_file = os.path.join(out, "label2idx.json")
    if had_labels:
        with open(label_file, "w", encoding="utf-8") as f:
            f.write('{"owl": 0}')
    src = tmp_path / "frames"
    for id_ in ("a", "b"):
        (src / id_).mkdir(parents=True)
        (src / id_ / "0000.jpg").write_bytes(make_jpeg(2))
    (src / "labels.csv").write_text("a;cat\nb;dog\n")
    shard = os.path.join(out, "shards", "s1") if inside else str(tmp_path / "shard")
    os.makedirs(os.path.dirname(shard), exist_ok=True)
    gulpdb_cli("ingest", shard, "--frames-dir", str(src), "--labels", str(src / "labels.csv"),
               "--keep-jpeg", "-q")
    proc = gulpdb_cli("merge", out, shard, "--on-duplicate", "error", "-q", expect=1)
    assert "'a'" in proc.stderr
    if had_labels:
        with open(label_file, encoding="utf-8") as f:
            assert f.read() == '{"owl": 0}'
    else:
        assert not os.path.exists(label_file)
    meta = {"id": "a", "label": "owl", "idx": 0} if had_labels else {"id": "a"}
    assert_reads(out, {"a": ([make_jpeg(1)], [meta])})
    if inside:  # the shard is its own again: it takes writes
        with gulpdb.Dataset(shard, "a") as ds, ds.writer() as w:
            w.append("c", [make_jpeg(3)], {"id": "c"})


def assert_gulpio_reads(directory, expected, data_dir=None):
    """GulpIO2's rules (the independent reader) read ``expected`` from the directory."""
    data_files = gulpio_format.LocalFiles(data_dir, pair_with=directory) if data_dir else None
    view = gulpio_format.read_directory(gulpio_format.LocalFiles(directory), data_files)
    assert sorted(view.videos) == sorted(expected)
    for id_, (frames, meta_data) in expected.items():
        assert view.videos[id_] == (frames, meta_data)


@pytest.mark.parametrize("in_place", [True, False], ids=["in_place", "to_out"])
def test_export_of_a_merged_dataset_is_a_directory_gulpio2_reads(tmp_path, in_place):
    """New. Minimal sequence: create (python, video 'a') -> merge (attach in
    place) a shard holding 'b' -> export (in place, or -o OUT). Export writes
    .gmeta files "so that unmodified GulpIO2 reads the directory"; GulpIO's
    readers see the top-level chunks only (README, distributed ingest). Export
    also wrote meta_<N>.gmeta for the attached chunk, whose data file is
    shards/.../data_0.gulp: GulpIO2 found more .gmeta than .gulp files and
    refused the whole directory (and a re-index found a .gmeta with no data)."""
    out = str(tmp_path / "out")
    with gulpdb.Dataset(out, "x") as ds, ds.writer() as w:
        w.append("a", [make_jpeg(1)], {"id": "a"})
    shard = os.path.join(out, "shards", "s1")
    os.makedirs(os.path.dirname(shard))
    with gulpdb.Dataset(shard, "x") as ds, ds.writer() as w:
        w.append("b", [make_jpeg(2)], {"id": "b"})
    gulpdb_cli("merge", out, shard, "-q")
    if in_place:
        gulpdb_cli("export", out)
        assert_gulpio_reads(out, {"a": ([make_jpeg(1)], [{"id": "a"}])})
    else:
        exported = str(tmp_path / "exported")
        os.makedirs(exported)
        gulpdb_cli("export", out, "-o", exported)
        assert_gulpio_reads(exported, {"a": ([make_jpeg(1)], [{"id": "a"}])}, data_dir=out)


def test_an_exported_merged_dataset_with_splits_opens_as_a_gulpio_copy(tmp_path):
    """New (found once export left the attached shards' chunks out). Minimal
    sequence (Hypothesis): create -> merge (attach in place) a shard holding
    'b' -> split 'é s' --ids-file [a, b] -> export -o OUT -> a user copies the
    data files with OUT's files and opens the copy with GulpIO2's API. The
    exported gulpdb_splits.json named 'b', which no exported .gmeta
    describes, so the copy's first open (an import) refused the directory
    ("split 'é s' lists 1 ids that are not in the dataset")."""
    out = str(tmp_path / "out")
    with gulpdb.Dataset(out, "x") as ds, ds.writer() as w:
        w.append("a", [make_jpeg(1)], {"id": "a"})
    shard = os.path.join(out, "shards", "s1")
    os.makedirs(os.path.dirname(shard))
    with gulpdb.Dataset(shard, "x") as ds, ds.writer() as w:
        w.append("b", [make_jpeg(2)], {"id": "b"})
    gulpdb_cli("merge", out, shard, "-q")
    with gulpdb.Dataset(out, "r+") as ds, ds.writer() as w:
        w.set_split("é s", ["b", "a"])
        w.set_split("shard only", ["b"])
    exported = str(tmp_path / "exported")
    os.makedirs(exported)
    gulpdb_cli("export", out, "-o", exported)
    with open(os.path.join(exported, "gulpdb_splits.json"), encoding="utf-8") as f:
        assert json.load(f)["splits"] == {"é s": ["a"], "shard only": []}
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in os.listdir(exported):
        (copy / name).write_bytes((tmp_path / "exported" / name).read_bytes())
    (copy / "data_0.gulp").write_bytes((tmp_path / "out" / "data_0.gulp").read_bytes())
    assert_gulpio_reads(str(copy), {"a": ([make_jpeg(1)], [{"id": "a"}])})
    directory = gulpdb.GulpDirectory(str(copy), jpeg_decoder=bytes, quiet=True)
    frames, meta = directory["a"]
    assert [bytes(f) for f in frames] == [make_jpeg(1)] and meta == {"id": "a"}
    with gulpdb.Dataset(str(copy)) as ds:
        assert ds.ids() == ["a"] and ds.split("é s") == ["a"] and ds.split("shard only") == []


@pytest.mark.parametrize("how", ["discard_unexported", "removed_first"])
def test_reindex_discarding_unexported_videos_leaves_a_gulpio_directory(tmp_path, how):
    """New. Minimal sequence: create (import GulpIO dir, video 'a') -> append
    'b' (python; a new chunk data_1.gulp without .gmeta) -> import --reindex
    --discard-unexported -> export (in place). The re-index dropped 'b' but
    left data_1.gulp, which no index knew any more: the exported directory
    had two .gulp files and one .gmeta, so GulpIO2 refused it, and the next
    `import --reindex` failed on data_1.gulp. The same when 'b' was removed
    before a plain `import --reindex` (data_1.gulp then holds garbage only)."""
    src = str(tmp_path / "gulpio")
    expected = write_gulpio_dir(src, {0: [("a", 1)]})
    gulpdb_cli("import", src, "-q")
    with gulpdb.Dataset(src, "a") as ds, ds.writer() as w:
        w.append("b", [make_jpeg(9)], {"id": "b"})
    if how == "discard_unexported":
        gulpdb_cli("import", src, "--reindex", "--discard-unexported", "-q")
    else:
        gulpdb_cli("remove", src, "b")
        gulpdb_cli("import", src, "--reindex", "-q")
    assert not os.path.exists(os.path.join(src, "data_1.gulp"))
    assert_reads(src, expected)
    gulpdb_cli("export", src)
    assert_gulpio_reads(src, expected)
    gulpdb_cli("import", src, "--reindex", "-q")


# ---- C. remote datasets ----------------------------------------------------------------


def test_a_pickled_url_reader_never_reads_another_dataset_pushed_to_its_prefix(tmp_path,
                                                                              bucket_env):
    """Issue 19 C14. Minimal sequence: create (python, 'a1') -> push -> pickle a
    Dataset of the URL -> wipe the prefix and push another dataset ('b1') there
    -> read the pickled reader in another process. The copy must read what
    its parent opened, or fail; never the other dataset's frames and labels."""
    url = bucket_env
    for name, id_, seed in (("first", "a1", 1), ("other", "b1", 50)):
        with gulpdb.Dataset(str(tmp_path / name), "x") as ds, ds.writer() as w:
            w.append(id_, [make_jpeg(seed)], {"id": id_, "idx": seed})
    gulpdb_cli("push", str(tmp_path / "first"), url, "-q")
    with gulpdb.Dataset(url) as ds:
        assert ds.ids() == ["a1"]
        blob = pickle.dumps(ds)
    import boto3
    from botocore.config import Config

    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                      aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
                      region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
    prefix = url[len(f"s3://{BUCKET}/"):] + "/"
    for obj in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []):
        s3.delete_object(Bucket=BUCKET, Key=obj["Key"])
    gulpdb_cli("push", str(tmp_path / "other"), url, "-q")
    child = ("import pickle, sys\n"
             "ds = pickle.loads(sys.stdin.buffer.read())\n"
             "try:\n"
             "    print(repr(ds.ids()))\n"
             "except (OSError, ValueError, KeyError) as e:\n"
             "    print('refused:', type(e).__name__, e)\n")
    proc = subprocess.run([sys.executable, "-c", child], input=blob, capture_output=True,
                          env=python_subprocess_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    out = proc.stdout.decode().strip()
    assert out == "['a1']" or out.startswith("refused:"), f"the copy read {out}"
