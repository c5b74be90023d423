"""Remote reading against hostile bytes and a flaky network, from Python and
the command line (s3rver and the fault proxy, on 127.0.0.1):

- `check` over a URL checks what readers read: imported and merged datasets
  are healthy, and a manifest that lies to readers (or to GulpIO readers of
  the bucket) is a problem; `push --overwrite` repairs it;
- a push repairs what it names damaged when it holds a copy, and refuses
  (naming --overwrite, which repairs it) when it does not; pushes of
  diverged copies at once leave one readable winner; bodies a store kept
  damaged are sent again;
- a damaged node cache (flipped bytes, zeroed pages, truncation, another
  dataset's snapshot, a file that is not LMDB) never kills a process: it is
  fetched again, or (when that fails) a clear error naming the cache file;
- a snapshot object larger than the manifest says is not downloaded whole;
  one damaged on the way is fetched again;
- a damaged frame cache (every kind of damage to its block files, counters
  and locks) never kills, hangs or misleads a reader: blocks are fetched again;
- Retry-After is honoured, and a server away for 4 s mid-epoch costs no batch;
- secrets in URLs are never printed; credentials over plain http to another
  host are warned about; mistyped s3:// URLs and a missing bucket are named.
"""

from __future__ import annotations

import email.utils
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import gulpdb
from conftest import GULPDB_CLI, PYTHON, SmallDataset, python_subprocess_env
from test_remote import BUCKET, Remote, append_videos, jpeg_digests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "harness"))
import s3_proxy  # noqa: E402  (tests/harness/s3_proxy.py)

CLI = GULPDB_CLI


@pytest.fixture(scope="module")
def servers():
    from test_remote import KEY_ID, SECRET

    with s3_proxy.s3rver_behind_proxy(BUCKET, {KEY_ID: SECRET}) as both:
        yield both


@pytest.fixture
def remote(servers, tmp_path, monkeypatch):
    return Remote(servers, tmp_path, monkeypatch)


def cli(*args, env=None, timeout=120):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


def no_signal(proc, what):
    """A process that ended by a signal (SIGSEGV, SIGBUS, SIGABRT) fails the test."""
    assert proc.returncode >= 0, (
        f"{what} died of signal {signal.Signals(-proc.returncode).name}: {proc.stderr[-2000:]}")


def read_manifest(remote):
    s3 = remote.boto3()
    return json.loads(s3.get_object(Bucket=BUCKET, Key=remote.key("gulpdb.manifest.json"))
                      ["Body"].read())


def write_manifest(remote, manifest):
    remote.boto3().put_object(Bucket=BUCKET, Key=remote.key("gulpdb.manifest.json"),
                              Body=json.dumps(manifest).encode())


def read_chunk_list(remote, manifest):
    """The manifest's chunk entries: listed in it, or in the pages it names."""
    if "chunks" in manifest:
        return manifest["chunks"]
    s3 = remote.boto3()
    chunks = []
    for page in manifest["chunk_pages"]:
        chunks += json.loads(s3.get_object(Bucket=BUCKET, Key=remote.key(page["key"]))
                             ["Body"].read())["chunks"]
    return chunks


def with_chunk_list(remote, manifest, chunks):
    """`manifest` listing `chunks`: in it, or in pages written as a push writes
    them (named by their SHA-256, so that only what they say is a lie)."""
    manifest = json.loads(json.dumps(manifest))
    if "chunks" in manifest:
        manifest["chunks"] = chunks
        return manifest
    pages = {}
    for c in chunks:
        pages.setdefault(c["number"] // 256, []).append(c)
    manifest["chunk_pages"] = []
    for number in sorted(pages):
        text = json.dumps({"format": "gulpdb-chunk-page", "chunks": pages[number]}).encode()
        sha = hashlib.sha256(text).hexdigest()
        key = f"gulpdb.chunk-pages/{sha}.json"
        remote.boto3().put_object(Bucket=BUCKET, Key=remote.key(key), Body=text)
        manifest["chunk_pages"].append({"first": pages[number][0]["number"],
                                        "count": len(pages[number]), "key": key,
                                        "size": len(text), "sha256": sha})
    manifest["chunk_count"] = len(chunks)
    return manifest


# ---- check reads what readers read -------------------------------------------------------


def test_check_over_s3_of_a_pushed_imported_gulpio_directory_is_healthy(remote, gulpio_copy):
    directory = gulpio_copy("gulpio2_csv_jpeg")
    gulpdb.import_gulpio(directory)
    assert gulpdb.push(directory, remote.url)["published"]
    proc = cli("check", remote.url, "--deep", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["healthy"] and report["frames"] > 0, report


def test_check_over_s3_of_merged_shards_is_healthy(remote, tmp_path):
    out = str(tmp_path / "out")
    append_videos(out, 0, 5)
    os.makedirs(os.path.join(out, "shards"))
    append_videos(os.path.join(out, "shards", "a"), 5, 14)
    append_videos(os.path.join(out, "shards", "b"), 14, 18)
    merged = cli("merge", out, os.path.join(out, "shards", "a"), os.path.join(out, "shards", "b"))
    assert merged.returncode == 0, merged.stderr
    assert gulpdb.push(out, remote.url)["published"]
    with gulpdb.Dataset(out) as local:
        assert any("/" in c.file_name for c in local.chunks())  # attached shard chunks
    proc = cli("check", remote.url, "--deep", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["healthy"] and report["videos"] == 18, report
    with gulpdb.Dataset(remote.url) as ds:
        assert jpeg_digests(ds) == jpeg_digests(gulpdb.Dataset(out))


def _every_read_fails(url):
    """True when reading every video of `url` fails (at open or at the read)."""
    try:
        ds = gulpdb.Dataset(url)
    except gulpdb.CorruptionError:
        return True
    failures = 0
    for id_ in ds.ids():
        try:
            ds.read_jpegs(id_)
        except gulpdb.CorruptionError:
            failures += 1
    return failures > 0


@pytest.mark.parametrize("layout", ["whole", "partitioned"])  # chunks in the manifest / in pages
@pytest.mark.parametrize("lie", ["swapped_keys", "emptied_chunk_list", "cut_committed_length"])
def test_check_fails_whenever_a_reader_would(remote, tmp_path, lie, layout):
    path = str(tmp_path / "local")
    append_videos(path, 0, 12)
    gulpdb.push(path, remote.url, layout=layout)
    assert json.loads(cli("check", remote.url, "--deep", "--json").stdout)["healthy"]
    honest = read_manifest(remote)
    assert ("chunks" in honest) == (layout == "whole")
    chunks = json.loads(json.dumps(read_chunk_list(remote, honest)))
    assert len(chunks) >= 2
    if lie == "swapped_keys":
        chunks[0]["key"], chunks[1]["key"] = chunks[1]["key"], chunks[0]["key"]
    elif lie == "emptied_chunk_list":
        chunks = []
    else:
        chunks[1]["committed_length"] //= 2
    manifest = with_chunk_list(remote, honest, chunks)
    write_manifest(remote, manifest)
    assert _every_read_fails(remote.url)
    proc = cli("check", remote.url, "--deep", "--json")
    no_signal(proc, "check")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    report = json.loads(proc.stdout)
    assert not report["healthy"]
    assert any("manifest" in p["what"] for p in report["problems"]), report["problems"]
    write_manifest(remote, honest)
    assert json.loads(cli("check", remote.url, "--deep", "--json").stdout)["healthy"]


@pytest.mark.parametrize("layout", ["whole", "partitioned"])
@pytest.mark.parametrize("lie", ["no_gmeta_key", "wrong_crc32c"])
def test_check_finds_chunk_entries_that_lie_and_overwrite_repairs_them(remote, tmp_path, lie,
                                                                       layout):
    path = str(tmp_path / "local")
    append_videos(path, 0, 12)
    gulpdb.push(path, remote.url, layout=layout)
    honest = read_manifest(remote)
    chunks = json.loads(json.dumps(read_chunk_list(remote, honest)))
    if lie == "no_gmeta_key":
        chunks[0]["gmeta_key"] = ""
    else:
        chunks[1]["crc32c"] ^= 1
    write_manifest(remote, with_chunk_list(remote, honest, chunks))
    proc = cli("check", remote.url, "--deep", "--json")
    no_signal(proc, "check")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    problems = json.loads(proc.stdout)["problems"]
    wanted = ".gmeta" if lie == "no_gmeta_key" else "CRC-32C"
    assert any(wanted in p["what"] for p in problems), problems
    report = gulpdb.push(path, remote.url, layout=layout, overwrite=True)
    assert report["published"]
    assert json.loads(cli("check", remote.url, "--deep", "--json").stdout)["healthy"]


def test_a_push_repairs_what_it_names_damaged_and_overwrite_what_it_has_no_copy_of(remote,
                                                                                   tmp_path):
    """From the command line: a partition deleted behind the manifest's back
    is uploaded again by the pusher (its node cache holds it); from a machine
    without a copy the push refuses, naming --overwrite, which repairs it."""
    path = str(tmp_path / "local")
    append_videos(path, 0, 12)
    gulpdb.push(path, remote.url)
    s3 = remote.boto3()
    parts = [o["Key"] for o in s3.list_objects_v2(
        Bucket=BUCKET, Prefix=remote.key("gulpdb.partitions/"))["Contents"]]
    for key in parts:
        s3.delete_object(Bucket=BUCKET, Key=key)
    proc = cli("push", path, remote.url)
    assert proc.returncode == 0, proc.stderr
    assert f"repaired {len(parts)} objects" in proc.stdout, proc.stdout
    assert json.loads(cli("check", remote.url, "--json").stdout)["healthy"]
    for key in parts:
        s3.delete_object(Bucket=BUCKET, Key=key)
    env = dict(os.environ, GULPDB_CACHE=str(tmp_path / "another-machine"))
    append_videos(path, 12, 13)
    proc = cli("push", path, remote.url, env=env)
    no_signal(proc, "push")
    assert proc.returncode == 1 and "--overwrite" in proc.stderr, proc.stderr
    proc = cli("push", path, remote.url, "--overwrite", env=env)
    assert proc.returncode == 0, proc.stderr
    check = cli("check", remote.url, "--deep", "--json", env=env)
    assert json.loads(check.stdout)["healthy"], check.stdout
    with gulpdb.Dataset(remote.url) as ds:
        assert jpeg_digests(ds) == jpeg_digests(gulpdb.Dataset(path))


def test_pushes_of_diverged_copies_at_once_leave_one_readable_winner(remote, tmp_path):
    """Uncontrolled races, several rounds: one push publishes, the other stops
    having replaced nothing; every published video reads exactly."""
    base = str(tmp_path / "base")
    append_videos(base, 0, 6)
    gulpdb.push(base, remote.url)
    for round_ in range(3):
        copies = []
        for k in range(2):
            path = str(tmp_path / f"r{round_}-{k}")
            shutil.copytree(base, path)
            append_videos(path, 100 * (round_ + 1) + 10 * k, 100 * (round_ + 1) + 10 * k + 3)
            copies.append(path)
        procs = [subprocess.Popen([CLI, "push", c, remote.url], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ,
                                           GULPDB_CACHE=str(tmp_path / f"cache-{round_}-{k}")))
                 for k, c in enumerate(copies)]
        outs = [p.communicate(timeout=120) for p in procs]
        codes = [p.returncode for p in procs]
        assert min(codes) >= 0, outs
        assert sorted(codes) == [0, 1], (codes, outs)
        winner = copies[codes.index(0)]
        with gulpdb.Dataset(remote.url) as ds:
            assert jpeg_digests(ds) == jpeg_digests(gulpdb.Dataset(winner))
        base = winner


def test_a_push_through_a_store_that_keeps_bodies_damaged_publishes_whole_objects(remote,
                                                                                  tmp_path):
    """The proxy flips a byte of some PUT bodies after its checks (a store
    that checks neither the payload hash nor Content-MD5 keeps them): the
    push finds each by its ETag and sends it again."""
    remote.through_proxy()
    remote.proxy.add_fault(kind="corrupt_stored", fraction=0.3, seed=5, method="PUT")
    path = str(tmp_path / "local")
    append_videos(path, 0, 12)
    assert gulpdb.push(path, remote.url)["published"]
    assert remote.proxy.stats()["faults_injected"] > 0
    remote.proxy.clear_faults()
    check = cli("check", remote.url, "--deep", "--json")
    assert json.loads(check.stdout)["healthy"], check.stdout
    with gulpdb.Dataset(remote.url) as ds:
        assert jpeg_digests(ds) == jpeg_digests(gulpdb.Dataset(path))


# ---- a damaged node cache ----------------------------------------------------------------

READ_ALL = textwrap.dedent("""
    import hashlib, json, sys
    import gulpdb
    url, verify = sys.argv[1], sys.argv[2] == "1"
    ds = gulpdb.Dataset(url, verify_index=verify)
    out = {i: [[hashlib.sha256(b).hexdigest() for b in ds.read_jpegs(i)], ds.meta(i)]
           for i in ds.ids()}
    print(json.dumps(out, sort_keys=True))
""")

PAGE = 4096


def _damages(other_snapshot):
    """name -> function(path) that damages the cached data.mdb in one way."""

    def flip(offsets):
        def damage(path):
            with open(path, "r+b") as f:
                for off in offsets:
                    f.seek(off)
                    b = f.read(1)
                    f.seek(off)
                    f.write(bytes([b[0] ^ 0xFF]))
        return damage

    def zero_page(n):
        def damage(path):
            with open(path, "r+b") as f:
                f.seek(n * PAGE)
                f.write(b"\0" * PAGE)
        return damage

    def truncate(fraction):
        def damage(path):
            os.truncate(path, int(os.path.getsize(path) * fraction))
        return damage

    def replace_with(make):
        def damage(path):
            data = make(os.path.getsize(path))
            tmp = path + ".new"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        return damage

    return {
        "flip_meta_bytes": flip([16, 40, PAGE + 40]),
        "flip_bytes_in_tree_pages": flip([2 * PAGE + 12, 3 * PAGE + 20, 3 * PAGE + 2000]),
        "zero_a_tree_page": zero_page(2),
        "zero_the_meta_pages": lambda p: (zero_page(0)(p), zero_page(1)(p)),
        "truncate_to_half": truncate(0.5),
        "truncate_to_a_few_bytes": lambda p: os.truncate(p, 100),
        "another_datasets_snapshot": replace_with(lambda n: open(other_snapshot, "rb").read()),
        "not_an_lmdb_file": replace_with(lambda n: os.urandom(n)),
        "empty_file": replace_with(lambda n: b""),
    }


def _commands(url, tmp_path, some_id):
    return {
        "info": ["info", url, "--json"],
        "ls": ["ls", url],
        "show": ["show", url, some_id, "--json"],
        "check": ["check", url, "--deep", "--json"],
        "export": ["export", url, "-o", str(tmp_path / "exported")],
        "extract": ["extract", url, some_id, "-o", str(tmp_path / "extracted")],
        "python": [PYTHON, "-c", READ_ALL, url, "0"],
        "python_verify_index": [PYTHON, "-c", READ_ALL, url, "1"],
    }


def _run(argv, env):
    if argv[0] == PYTHON:
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    return subprocess.run([CLI, *argv], capture_output=True, text=True, timeout=120, env=env)


def _prepare_damage_world(remote, tmp_path):
    # The whole snapshot's cache file (a damaged cached partition is re-fetched
    # as partitioned_remote_test checks).
    local = SmallDataset(str(tmp_path / "local"), videos=10, frames_per_video=3)
    gulpdb.push(local.path, remote.url, layout="whole")
    other = SmallDataset(str(tmp_path / "other"), videos=7, frames_per_video=2)
    gulpdb.push(other.path, remote.url + "-other", layout="whole")
    with gulpdb.Dataset(remote.url + "-other") as ds:
        other_snapshot = ds.remote_info["snapshot_path"]
    with gulpdb.Dataset(remote.url) as ds:
        snapshot = ds.remote_info["snapshot_path"]
        expected = {i: [[hashlib.sha256(b).hexdigest() for b in ds.read_jpegs(i)], ds.meta(i)]
                    for i in ds.ids()}
    pristine = open(snapshot, "rb").read()
    return local, snapshot, other_snapshot, expected, pristine


def _restore(snapshot, pristine):
    os.makedirs(os.path.dirname(snapshot), exist_ok=True)
    with open(snapshot, "wb") as f:
        f.write(pristine)


def _rotation(names, commands, per_damage):
    """(damage, command) pairs: each damage meets `per_damage` commands, every
    command meets several damages (all pairs would cost minutes; the random
    damages of remote_hardening_test cover the breadth)."""
    commands = list(commands)
    for i, name in enumerate(names):
        for k in range(per_damage):
            yield name, commands[(i * per_damage + k) % len(commands)]


def test_a_damaged_cache_is_fetched_again_by_every_command_and_process(remote, tmp_path):
    local, snapshot, other_snapshot, expected, pristine = _prepare_damage_world(remote, tmp_path)
    env = python_subprocess_env()
    damages = _damages(other_snapshot)
    commands = _commands(remote.url, tmp_path, "video_3")
    seen = set()
    for name, what in _rotation(list(damages), commands, 3):
        damage, argv = damages[name], commands[what]
        seen.add(what)
        shutil.rmtree(tmp_path / "exported", ignore_errors=True)
        shutil.rmtree(tmp_path / "extracted", ignore_errors=True)
        os.makedirs(tmp_path / "exported")
        _restore(snapshot, pristine)
        damage(snapshot)
        proc = _run(argv, env)
        no_signal(proc, f"{what} after {name}")
        assert proc.returncode == 0, f"{what} after {name}: {proc.stderr}"
        if what.startswith("python"):
            assert json.loads(proc.stdout) == json.loads(json.dumps(expected)), (what, name)
        elif what == "check":
            assert json.loads(proc.stdout)["healthy"], (name, proc.stdout)
        elif what == "info":
            assert json.loads(proc.stdout)["videos"] == 10, (name, proc.stdout)
        # The cache holds the right snapshot again.
        assert open(snapshot, "rb").read() == pristine, (what, name)
    assert seen == set(commands)


def test_a_damaged_cache_that_cannot_be_fetched_again_is_a_clear_error(remote, tmp_path):
    local, snapshot, other_snapshot, expected, pristine = _prepare_damage_world(remote, tmp_path)
    manifest = read_manifest(remote)
    remote.boto3().delete_object(Bucket=BUCKET, Key=remote.key(manifest["snapshot"]["key"]))
    env = python_subprocess_env()
    damages = _damages(other_snapshot)
    commands = _commands(remote.url, tmp_path, "video_3")
    seen = set()
    names = ["flip_bytes_in_tree_pages", "zero_the_meta_pages", "truncate_to_half",
             "another_datasets_snapshot", "not_an_lmdb_file", "flip_meta_bytes"]
    for name, what in _rotation(names, commands, 2):
        argv = commands[what]
        seen.add(what)
        os.makedirs(tmp_path / "exported", exist_ok=True)
        _restore(snapshot, pristine)
        damages[name](snapshot)
        proc = _run(argv, env)
        no_signal(proc, f"{what} after {name}")
        assert proc.returncode != 0, f"{what} after {name} succeeded: {proc.stdout[:500]}"
        said = proc.stdout + proc.stderr  # check reports in its JSON, the others on stderr
        assert snapshot in said and "is damaged" in said, (what, name, said)
    assert seen == set(commands)


# ---- a damaged frame cache ---------------------------------------------------------------


def _frame_damages(other_frames, outside):
    """name -> function(frames dir) that damages the node's frame cache in one
    way: every block file, or the counters, or the fill locks."""

    def blocks(frames):
        return [p for p in glob.glob(os.path.join(frames, "blocks", "*", "*"))]

    def each(fn):
        def damage(frames):
            found = blocks(frames)
            assert found, "no block files to damage"
            for path in found:
                fn(path)
        return damage

    def flip(path):
        with open(path, "r+b") as f:
            for off in (30, os.path.getsize(path) - 7):
                f.seek(off)
                b = f.read(1)
                f.seek(off)
                f.write(bytes([b[0] ^ 0xFF]))

    def replace(make):
        def damage(path):
            data = make(path)
            os.unlink(path)
            with open(path, "wb") as f:
                f.write(data)
        return damage

    def swap_in(kind):
        def damage(path):
            os.unlink(path)
            if kind == "fifo":
                os.mkfifo(path)
            elif kind == "directory":
                os.mkdir(path)
            else:
                os.symlink(outside, path)
        return damage

    def another_datasets_block(path):
        other = blocks(other_frames)[0]
        shutil.copyfile(other, path)

    def each_lock(fn):
        def damage(frames):
            for path in glob.glob(os.path.join(frames, "locks", "*")):
                fn(path)
            os.makedirs(os.path.join(frames, "locks"), exist_ok=True)
        return damage

    def stats(data):
        def damage(frames):
            path = os.path.join(frames, "stats")
            if os.path.lexists(path):
                os.unlink(path)
            if data is None:
                os.mkfifo(path)
            else:
                with open(path, "wb") as f:
                    f.write(data)
        return damage

    return {
        "flipped_bytes": each(flip),
        "zeros": each(replace(lambda p: b"\0" * os.path.getsize(p))),
        "truncated": each(lambda p: os.truncate(p, os.path.getsize(p) // 3)),
        "empty": each(replace(lambda p: b"")),
        "random_bytes": each(replace(lambda p: os.urandom(os.path.getsize(p)))),
        "another_datasets_block": each(another_datasets_block),
        "a_fifo": each(swap_in("fifo")),
        "a_directory": each(swap_in("directory")),
        "a_link_out_of_the_cache": each(swap_in("link")),
        "deleted": each(os.unlink),
        "garbage_counters": stats(os.urandom(300)),
        "a_fifo_for_the_counters": stats(None),
        "locks_turned_into_directories": each_lock(
            lambda p: None if os.path.isdir(p) else (os.unlink(p), os.mkdir(p))),
    }


def test_a_damaged_frame_cache_is_fetched_again_by_every_command_and_process(remote, tmp_path):
    # Every kind of damage to the node's frame cache, met by the Python reader
    # and the commands that read frames: never a signal, never a hang, never a
    # wrong frame, never a write outside the cache; the blocks are fetched
    # again (or, where a damaged entry cannot be replaced, read from the store).
    local = SmallDataset(str(tmp_path / "local"), videos=10, frames_per_video=3)
    gulpdb.push(local.path, remote.url)
    other = SmallDataset(str(tmp_path / "other"), videos=7, frames_per_video=2)
    gulpdb.push(other.path, remote.url + "-other")
    env = python_subprocess_env()
    env["GULPDB_FRAME_CACHE_BLOCK"] = "64K"
    other_env = dict(env, GULPDB_CACHE=str(tmp_path / "other-cache"))
    assert _run([PYTHON, "-c", READ_ALL, remote.url + "-other", "0"], other_env).returncode == 0
    other_frames = str(tmp_path / "other-cache" / "frames")
    frames = str(tmp_path / "cache" / "frames")
    outside = str(tmp_path / "outside.txt")
    with open(outside, "w") as f:
        f.write("not the cache's")
    commands = {
        "python": [PYTHON, "-c", READ_ALL, remote.url, "0"],
        "check": ["check", remote.url, "--deep", "--json"],
        "extract": ["extract", remote.url, "video_3", "-o", str(tmp_path / "extracted")],
    }
    first = _run(commands["python"], env)
    assert first.returncode == 0, first.stderr
    expected = json.loads(first.stdout)
    with gulpdb.Dataset(local.path) as ds:
        assert expected == json.loads(json.dumps(
            {i: [[hashlib.sha256(b).hexdigest() for b in ds.read_jpegs(i)], ds.meta(i)]
             for i in ds.ids()}))
    damages = _frame_damages(other_frames, outside)
    seen = set()
    for name, what in _rotation(list(damages), commands, 2):
        # A filled cache to damage: the reader before left every block there.
        assert _run(commands["python"], env).returncode == 0
        damages[name](frames)
        shutil.rmtree(tmp_path / "extracted", ignore_errors=True)
        seen.add(what)
        proc = _run(commands[what], env)
        no_signal(proc, f"{what} after {name}")
        assert proc.returncode == 0, f"{what} after {name}: {proc.stderr}"
        if what == "python":
            assert json.loads(proc.stdout) == expected, name
        elif what == "check":
            assert json.loads(proc.stdout)["healthy"], (name, proc.stdout)
        else:
            assert sorted(os.listdir(tmp_path / "extracted")), name
        # And once more from what the damaged cache became: still right.
        again = _run(commands["python"], env)
        no_signal(again, f"python after {what} after {name}")
        assert again.returncode == 0 and json.loads(again.stdout) == expected, (name, again.stderr)
        assert open(outside).read() == "not the cache's", name
        assert not os.path.islink(os.path.join(frames, "blocks")), name
    assert seen == set(commands)


# ---- bounded and verified downloads ------------------------------------------------------


def test_a_snapshot_larger_than_the_manifest_says_is_not_downloaded_whole(remote, tmp_path):
    local = SmallDataset(str(tmp_path / "local"), videos=4, frames_per_video=2)
    gulpdb.push(local.path, remote.url, layout="whole")
    manifest = read_manifest(remote)
    key = remote.key(manifest["snapshot"]["key"])
    s3 = remote.boto3()
    original = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    s3.put_object(Bucket=BUCKET, Key=key, Body=original + b"\0" * (64 << 20))
    remote.through_proxy()
    remote.proxy.reset()
    remote.monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "fresh-cache"))
    with pytest.raises(gulpdb.CorruptionError, match="larger than the") as e:
        gulpdb.Dataset(remote.url)
    assert "stopped" in str(e.value)
    sent = remote.proxy.stats()["body_bytes_sent"]
    assert sent < (16 << 20), f"{sent} bytes of a {64 << 20}-byte object were sent"
    assert not glob.glob(str(tmp_path / "fresh-cache" / "**" / "data.mdb"), recursive=True)


def test_a_snapshot_damaged_on_the_way_is_fetched_again(remote, tmp_path):
    local = SmallDataset(str(tmp_path / "local"), videos=6, frames_per_video=2)
    remote.through_proxy()
    gulpdb.push(local.path, remote.url, layout="whole")
    remote.proxy.reset()
    remote.proxy.add_fault(kind="corrupt_response", count=1, method="GET",
                           path="gulpdb.snapshots/")
    with gulpdb.Dataset(remote.url) as ds:
        assert ds.remote_info["snapshot_downloaded"]
        assert jpeg_digests(ds) == jpeg_digests(gulpdb.Dataset(local.path))
    assert remote.proxy.stats()["faults"] == {"corrupt_response": 1}
    gets = [e for e in remote.proxy.log()
            if e["method"] == "GET" and "gulpdb.snapshots/" in e["path"]]
    assert len(gets) == 2


# ---- retries -------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["seconds", "http_date"])
def test_retry_after_is_honoured(remote, tmp_path, form):
    local = SmallDataset(str(tmp_path / "local"), videos=3, frames_per_video=2)
    remote.through_proxy()
    gulpdb.push(local.path, remote.url)
    remote.proxy.reset()
    value = "2" if form == "seconds" else email.utils.formatdate(time.time() + 3, usegmt=True)
    remote.proxy.add_fault(kind="slowdown", count=1, method="GET", path="gulpdb.manifest.json",
                           retry_after=value)
    start = time.monotonic()
    with gulpdb.Dataset(remote.url) as ds:
        assert len(ds) == 3
    elapsed = time.monotonic() - start
    # The environment's backoff is at most 50 ms: only Retry-After waits this long.
    assert elapsed >= 1.5, elapsed
    assert remote.proxy.stats()["faults"] == {"slowdown": 1}


def test_a_long_retry_after_is_capped_by_the_retry_budget(remote, tmp_path):
    local = SmallDataset(str(tmp_path / "local"), videos=3, frames_per_video=2)
    remote.through_proxy()
    gulpdb.push(local.path, remote.url)
    remote.proxy.reset()
    remote.monkeypatch.setenv("GULPDB_S3_RETRY_BUDGET_MS", "1500")
    remote.proxy.add_fault(kind="slowdown", count=1, method="GET", path="gulpdb.manifest.json",
                           retry_after="3600")
    start = time.monotonic()
    with gulpdb.Dataset(remote.url) as ds:
        assert len(ds) == 3
    assert 1.2 <= time.monotonic() - start < 10


class _Digest(torch.utils.data.Dataset):
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


def test_a_server_away_for_4_seconds_mid_epoch_costs_no_batch(remote, tmp_path):
    import gulpdb.torch as gtorch

    local = SmallDataset(str(tmp_path / "local"), videos=50, frames_per_video=2)
    remote.through_proxy()
    gulpdb.push(local.path, remote.url)
    want = [hashlib.sha256(local.decoded[i].tobytes()).hexdigest() for i in local.ids]
    dataset = gtorch.VideoDataset(remote.url, label="label", ids=local.ids)
    # Slow reads, so that the outage falls in the middle of the epoch.
    remote.proxy.add_fault(kind="delay", delay_ms=120, fraction=1.0, method="GET", path="/data_")
    loader = torch.utils.data.DataLoader(_Digest(dataset), batch_size=None, num_workers=2,
                                         multiprocessing_context="fork")
    results = {}
    outage_at = None
    for index, digest in loader:
        results[index] = digest
        if outage_at is None and len(results) >= 8:
            remote.proxy.outage(4.0)  # the server is away for 4 s, then back on the same port
            outage_at = time.monotonic()
    assert outage_at is not None and time.monotonic() - outage_at >= 4.0
    assert remote.proxy.stats()["connections"] > 2  # the workers reconnected
    errors = {i: d for i, d in results.items() if d.startswith("error")}
    assert not errors, errors
    assert [results[i] for i in range(50)] == want


# ---- secrets, typos, a missing bucket ------------------------------------------------------


def test_secrets_in_urls_are_never_printed(remote, tmp_path, monkeypatch):
    env = dict(os.environ)
    env.update({"AWS_ENDPOINT_URL": "http://AKIDEXAMPLE:topsecret42@127.0.0.1:9",
                "GULPDB_S3_MAX_ATTEMPTS": "1", "GULPDB_S3_RETRY_BUDGET_MS": "0"})
    for args in (["info", remote.url], ["ls", remote.url], ["check", remote.url]):
        proc = cli(*args, env=env)
        assert proc.returncode != 0
        assert "topsecret42" not in proc.stderr + proc.stdout, proc.stderr
        assert "***@127.0.0.1:9" in proc.stderr, proc.stderr
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://AKIDEXAMPLE:topsecret42@127.0.0.1:9")
    with pytest.raises(ValueError) as e:
        gulpdb.Dataset(remote.url)
    assert "topsecret42" not in str(e.value) and "***@" in str(e.value)
    remote.use(remote.s3rver.endpoint, "S3RVER", "S3RVER")
    for url in (f"s3://user:topsecret42@{BUCKET}/p", f"s3://user:topsecret42@{BUCKET}"):
        proc = cli("info", url)
        assert proc.returncode != 0 and "topsecret42" not in proc.stderr, proc.stderr
        with pytest.raises(ValueError) as e:
            gulpdb.Dataset(url)
        assert "topsecret42" not in str(e.value), str(e.value)
        push = cli("push", str(tmp_path), url)
        assert push.returncode != 0 and "topsecret42" not in push.stderr, push.stderr


def test_credentials_over_plain_http_to_another_host_are_warned_about_once(remote):
    env = dict(os.environ)
    # 192.0.2.1 (TEST-NET-1) does not answer: the command fails fast after the warning.
    env.update({"AWS_ENDPOINT_URL": "http://192.0.2.1:9000", "GULPDB_S3_CONNECT_TIMEOUT_MS": "200",
                "GULPDB_S3_MAX_ATTEMPTS": "1", "GULPDB_S3_RETRY_BUDGET_MS": "0"})
    proc = cli("check", remote.url, env=env)
    assert proc.returncode != 0
    assert proc.stderr.count("warning") == 1, proc.stderr
    assert "plain http to 192.0.2.1:9000" in proc.stderr and "https://" in proc.stderr
    assert "key id S3RVER" in proc.stderr
    # Loopback and anonymous requests are not warned about.
    local = cli("info", remote.url + "-nothing")
    assert "warning" not in local.stderr, local.stderr
    env.pop("AWS_ACCESS_KEY_ID")
    env.pop("AWS_SECRET_ACCESS_KEY")
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    anonymous = cli("info", remote.url, env=env)
    assert "warning" not in anonymous.stderr, anonymous.stderr


@pytest.mark.parametrize("typo,meant", [
    ("S3://gulpdb-test/x", "the scheme is lowercase: s3://gulpdb-test/x"),
    ("s3:/gulpdb-test/x", "s3:// (two slashes): s3://gulpdb-test/x"),
    ("s3a://gulpdb-test/x", "s3://gulpdb-test/x"),
])
def test_mistyped_s3_urls_say_what_is_wrong(typo, meant, tmp_path):
    for args in (["info", typo], ["ls", typo], ["check", typo]):
        proc = cli(*args)
        assert proc.returncode != 0 and meant in proc.stderr, (args, proc.stderr)
    with pytest.raises(ValueError, match="s3://gulpdb-test/x"):
        gulpdb.Dataset(typo)
    with pytest.raises(ValueError, match="s3://gulpdb-test/x"):  # not an empty GulpIO directory
        gulpdb.GulpDirectory(typo)
    local = SmallDataset(str(tmp_path / "local"), videos=1, frames_per_video=1)
    push = cli("push", local.path, typo)
    assert push.returncode == 2 and meant in push.stderr, push.stderr


def test_info_on_a_missing_bucket_or_prefix_says_which(remote):
    missing_bucket = cli("info", "s3://no-such-bucket-gulpdb/x")
    assert missing_bucket.returncode == 1
    assert "bucket 'no-such-bucket-gulpdb' does not exist" in missing_bucket.stderr, \
        missing_bucket.stderr
    assert "gulpdb push" not in missing_bucket.stderr
    missing_prefix = cli("info", remote.url + "-nothing")
    assert missing_prefix.returncode == 1
    assert "the bucket exists" in missing_prefix.stderr and "gulpdb push" in missing_prefix.stderr
