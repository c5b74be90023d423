"""The node-level frame cache and read-ahead (docs/frame_cache.md), against
s3rver behind the fault proxy on 127.0.0.1: every figure is a count of
requests or bytes at the proxy, never a time.

- a warm cache serves epoch 2 (≤ 1% of epoch 1's bytes from the store), to
  this process and to others; two processes reading the same clips, and
  several starting on an empty cache at once, fetch each block once;
- a cached byte is served only for the dataset, object and committed prefix
  it was fetched for: another dataset pushed over the prefix, a wiped and
  re-pushed prefix and a grown chunk never serve old bytes;
- damaged, truncated, deleted and foreign cache files are fetched again, a
  reader killed while filling leaves nothing served, eviction keeps the bytes
  under frames/ within the bound while readers read;
- GULPDB_FRAME_CACHE_BYTES is checked on every open, a cache directory others
  can write is refused, the counters are node-wide (DataLoader workers);
- read-ahead merges adjacent ranges into one GET and keeps to its memory bound.
"""

from __future__ import annotations

import glob
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import gulpdb
import gulpdb.torch
from conftest import PYTHON, python_subprocess_env
from test_remote import BUCKET, Remote

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "harness"))
import s3_proxy  # noqa: E402  (tests/harness/s3_proxy.py)

BLOCK = 64 * 1024


@pytest.fixture(scope="module")
def servers():
    from test_remote import KEY_ID, SECRET

    with s3_proxy.s3rver_behind_proxy(BUCKET, {KEY_ID: SECRET}) as both:
        yield both


@pytest.fixture
def remote(servers, tmp_path, monkeypatch):
    r = Remote(servers, tmp_path, monkeypatch)
    monkeypatch.setenv("GULPDB_FRAME_CACHE_BLOCK", "64K")
    for name in ("GULPDB_FRAME_CACHE_BYTES", "GULPDB_PREFETCH_BYTES", "GULPDB_TEST_BUG"):
        monkeypatch.delenv(name, raising=False)
    return r


def published(remote, tmp_path, videos=24, frames=8, size=(96, 128), name="local",
              overwrite=False):
    """A dataset pushed to the test's prefix; reads then go through the proxy."""
    from conftest import synthetic_frames

    path = str(tmp_path / name)
    with gulpdb.Dataset(path, "x", videos_per_chunk=8) as ds:
        with ds.writer() as w:
            for i in range(videos):
                w.append(f"video_{i}", synthetic_frames(i + len(name), frames, *size),
                         {"idx": i % 3})
    gulpdb.push(path, remote.url, overwrite=overwrite)
    remote.through_proxy()
    remote.proxy.reset()
    return Local(path)


class Local:
    def __init__(self, path):
        self.path = path


def digests(ds, ids=None):
    ids = ds.ids() if ids is None else ids
    return {i: [hashlib.sha256(b).hexdigest() for b in ds.read_jpegs(i)] for i in ids}


def local_digests(path):
    with gulpdb.Dataset(path) as ds:
        return digests(ds)


def data_gets(proxy):
    """(method, path, range) of every GET of a chunk object the proxy saw."""
    return [(e["path"], e["range"]) for e in proxy.log()
            if e["method"] == "GET" and "/data_" in e["path"] and e.get("status") in (200, 206)]


def data_bytes(proxy):
    return sum(e["response_bytes"] for e in proxy.log()
               if e["method"] == "GET" and "/data_" in e["path"])


def frames_dir():
    return os.path.join(os.environ["GULPDB_CACHE"], "frames")


def block_files():
    return sorted(glob.glob(os.path.join(frames_dir(), "blocks", "*", "*")))


def bytes_under_frames():
    total = 0
    for root, _, files in os.walk(frames_dir()):
        for f in files:
            total += os.lstat(os.path.join(root, f)).st_size
    return total


def committed_bytes(path):
    with gulpdb.Dataset(path) as ds:
        return ds.stats().committed_bytes


def committed_blocks(path):
    with gulpdb.Dataset(path) as ds:
        return sum(-(-c.committed_length // BLOCK) for c in ds.chunks())


def wait_for(condition, seconds=120):
    """Polls `condition` (a count at the proxy or in the cache) until it holds;
    the bound only keeps a broken build from hanging the suite."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the background work never finished"
        time.sleep(0.02)


def reader_script(url, out=None):
    """A child process reading every frame of `url` (printing their digests)."""
    return textwrap.dedent(f"""
        import hashlib, json, sys
        import gulpdb
        with gulpdb.Dataset({url!r}) as ds:
            out = {{i: [hashlib.sha256(b).hexdigest() for b in ds.read_jpegs(i)] for i in ds.ids()}}
        print(json.dumps(out))
    """)


# ---- epochs ------------------------------------------------------------------


def test_epoch_two_from_a_warm_cache_fetches_under_one_percent_of_epoch_one(remote, tmp_path):
    local = published(remote, tmp_path)
    want = local_digests(local.path)
    ds = gulpdb.Dataset(remote.url)
    assert digests(ds) == want
    epoch1 = data_bytes(remote.proxy)
    assert epoch1 >= committed_bytes(local.path) * 0.9  # the whole dataset crossed once
    stats1 = ds.cache_stats()
    assert stats1["enabled"] and stats1["misses"] == len(data_gets(remote.proxy))
    assert stats1["bytes_from_store"] == epoch1
    remote.proxy.reset()
    assert digests(ds) == want
    # A new reader (another open, as in a new epoch's process) too.
    with gulpdb.Dataset(remote.url) as again:
        assert digests(again) == want
    assert data_bytes(remote.proxy) <= epoch1 // 100
    stats2 = ds.cache_stats()
    assert stats2["hits"] > stats1["hits"] and stats2["bytes_from_cache"] > 0
    assert stats2["bytes_from_store"] == stats1["bytes_from_store"]


def test_with_the_cache_off_every_epoch_fetches_again_and_nothing_is_kept(
        remote, tmp_path, monkeypatch):
    local = published(remote, tmp_path)
    monkeypatch.setenv("GULPDB_FRAME_CACHE_BYTES", "0")
    ds = gulpdb.Dataset(remote.url)
    want = local_digests(local.path)
    assert digests(ds) == want
    first = len(data_gets(remote.proxy))
    assert digests(ds) == want
    assert len(data_gets(remote.proxy)) == 2 * first
    assert not os.path.exists(frames_dir())
    assert ds.cache_stats()["enabled"] is False


def test_two_processes_reading_the_same_clips_fetch_each_block_once(remote, tmp_path):
    local = published(remote, tmp_path)
    want = local_digests(local.path)
    env = python_subprocess_env()
    procs = [subprocess.Popen([PYTHON, "-c", reader_script(remote.url)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    import json
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        assert json.loads(out) == want
    gets = data_gets(remote.proxy)
    assert len(gets) == len(set(gets)), "a block was fetched twice"
    assert data_bytes(remote.proxy) <= committed_bytes(local.path)
    stats = gulpdb.frame_cache_stats()
    assert stats["misses"] == len(gets)  # each block fetched by one of them
    assert stats["hits"] > 0


def test_concurrent_first_use_from_several_processes(remote, tmp_path):
    local = published(remote, tmp_path, videos=16)
    want = local_digests(local.path)
    assert not os.path.exists(frames_dir())
    env = python_subprocess_env()
    procs = [subprocess.Popen([PYTHON, "-c", reader_script(remote.url)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    import json
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        assert json.loads(out) == want
    gets = data_gets(remote.proxy)
    assert gets and len(gets) == len(set(gets))


# ---- never old bytes ---------------------------------------------------------------


def test_another_dataset_pushed_over_the_prefix_never_serves_the_old_bytes(remote, tmp_path):
    first = published(remote, tmp_path, name="first")
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == local_digests(first.path)
    cached = len(block_files())
    assert cached > 0
    # Same ids, same shapes, same chunk names: other frames.
    remote.use(remote.s3rver.endpoint, "S3RVER", "S3RVER")
    second = published(remote, tmp_path, name="second-dataset", overwrite=True)
    want = local_digests(second.path)
    assert want != local_digests(first.path)
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == want
    assert data_gets(remote.proxy)  # fetched, not served from the old blocks


def test_a_wiped_and_repushed_prefix_never_serves_old_bytes(remote, tmp_path):
    first = published(remote, tmp_path, name="one")
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == local_digests(first.path)
    s3 = remote.boto3()
    for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=remote.prefix + "/").get("Contents", []):
        s3.delete_object(Bucket=BUCKET, Key=o["Key"])
    remote.use(remote.s3rver.endpoint, "S3RVER", "S3RVER")
    other = published(remote, tmp_path, name="other-one")
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == local_digests(other.path)
    assert data_gets(remote.proxy)


def test_a_chunk_a_push_grew_is_read_right_and_full_chunks_stay_cached(remote, tmp_path):
    local = published(remote, tmp_path, videos=12)  # chunks of 8: one full, one growing
    with gulpdb.Dataset(remote.url) as ds:
        digests(ds)
    from test_remote import append_videos

    append_videos(local.path, 100, 102)  # grows the last chunk
    remote.use(remote.s3rver.endpoint, "S3RVER", "S3RVER")
    gulpdb.push(local.path, remote.url)
    remote.through_proxy()
    remote.proxy.reset()
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == local_digests(local.path)
    paths = {p for p, _ in data_gets(remote.proxy)}
    assert any(p.endswith("data_1.gulp") for p in paths)  # its committed prefix changed
    assert not any(p.endswith("data_0.gulp") for p in paths)  # unchanged: from the cache


# ---- damaged cache files, kills, eviction --------------------------------------------


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete", "foreign", "empty", "zeros"])
def test_damaged_cache_files_are_fetched_again(remote, tmp_path, damage):
    local = published(remote, tmp_path)
    want = local_digests(local.path)
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == want
    files = block_files()
    assert len(files) >= 2
    for i, f in enumerate(files):
        if damage == "flip":
            with open(f, "r+b") as fh:
                fh.seek(os.path.getsize(f) - 100)
                b = fh.read(1)
                fh.seek(-1, 1)
                fh.write(bytes([b[0] ^ 0x10]))
        elif damage == "truncate":
            os.truncate(f, os.path.getsize(f) // 2)
        elif damage == "delete":
            os.unlink(f)
        elif damage == "foreign":
            other = files[(i + 1) % len(files)]
            with open(other, "rb") as src:
                data = src.read()
            with open(f, "wb") as dst:
                dst.write(data)
        elif damage == "empty":
            os.truncate(f, 0)
        elif damage == "zeros":
            size = os.path.getsize(f)
            with open(f, "wb") as fh:
                fh.write(b"\0" * size)
    remote.proxy.reset()
    before = gulpdb.Dataset(remote.url).cache_stats()
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == want
    assert len(data_gets(remote.proxy)) >= 1
    after = gulpdb.Dataset(remote.url).cache_stats()
    if damage != "delete":
        assert after["damaged"] > before["damaged"]
    # The block's own checks caught it: no frame of it reached the frame checks.
    assert after["refetched"] == before["refetched"]
    # Repaired: a third read is served from the cache.
    remote.proxy.reset()
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == want
    assert data_gets(remote.proxy) == []


def test_a_block_whose_frames_fail_their_checksums_is_dropped_and_fetched_again(
        remote, tmp_path, monkeypatch):
    # A block written with wrong bytes but sound page CRCs (what a cache would
    # keep from a store that answered wrongly once): the frame CRC-32Cs catch
    # it, the block is dropped and the frames come from the store again.
    local = published(remote, tmp_path)
    want = local_digests(local.path)
    remote.proxy.add_fault(kind="corrupt_response", count=1, method="GET", path="/data_0")
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == want  # the damaged fill is dropped and fetched again
        assert ds.cache_stats()["refetched"] >= 1
    remote.proxy.reset()
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == want
    assert data_gets(remote.proxy) == []


def test_a_reader_killed_while_filling_leaves_nothing_served(remote, tmp_path):
    local = published(remote, tmp_path, videos=8)
    want = local_digests(local.path)
    remote.proxy.add_fault(kind="stall", delay_ms=30000, count=1, method="GET", path="/data_")
    env = python_subprocess_env()
    child = subprocess.Popen([PYTHON, "-c", reader_script(remote.url)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if remote.proxy.stats()["faults"].get("stall"):
                break
            time.sleep(0.05)
        assert remote.proxy.stats()["faults"].get("stall") == 1
        time.sleep(0.2)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    remote.proxy.clear_faults()
    # Its fill lock went with it: this reader neither waits for it nor serves
    # anything it left.
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == want


def test_eviction_keeps_frames_under_the_bound_while_readers_read(remote, tmp_path, monkeypatch):
    local = published(remote, tmp_path, videos=32)
    want = local_digests(local.path)
    total = committed_bytes(local.path)
    bound = 4 * BLOCK + 8192
    assert total > 2 * bound
    monkeypatch.setenv("GULPDB_FRAME_CACHE_BYTES", str(bound))
    env = python_subprocess_env()
    other = subprocess.Popen([PYTHON, "-c", reader_script(remote.url)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with gulpdb.Dataset(remote.url) as ds:
        for _ in range(2):
            assert digests(ds) == want
    out, err = other.communicate(timeout=180)
    assert other.returncode == 0, err
    import json
    assert json.loads(out) == want
    # A last fill, after the other reader is gone, ends with a pass.
    with gulpdb.Dataset(remote.url) as ds:
        assert digests(ds) == want
    assert bytes_under_frames() <= bound
    stats = gulpdb.Dataset(remote.url).cache_stats()
    assert stats["evictions"] > 0 and stats["bytes"] <= bound


# ---- configuration ---------------------------------------------------------------------


@pytest.mark.parametrize("value", ["12X", "-1", "1.5G", "lots", "10 G"])
def test_a_malformed_bound_is_refused_naming_the_variable_on_every_open(
        remote, tmp_path, monkeypatch, value):
    published(remote, tmp_path, videos=4)
    gulpdb.Dataset(remote.url).read_jpegs("video_0")  # warm
    monkeypatch.setenv("GULPDB_FRAME_CACHE_BYTES", value)
    for _ in range(2):
        with pytest.raises(ValueError, match="GULPDB_FRAME_CACHE_BYTES"):
            gulpdb.Dataset(remote.url)
    with pytest.raises(ValueError, match="GULPDB_FRAME_CACHE_BYTES"):
        gulpdb.frame_cache_stats()


def test_sizes_take_the_suffixes_of_the_partition_cache(remote, tmp_path, monkeypatch):
    published(remote, tmp_path, videos=4)
    for value, bound in [("2M", 2 << 20), ("3G", 3 << 30), ("512KiB", 512 << 10), ("4096", 4096)]:
        monkeypatch.setenv("GULPDB_FRAME_CACHE_BYTES", value)
        assert gulpdb.Dataset(remote.url).cache_stats()["bound"] == bound
    monkeypatch.setenv("GULPDB_FRAME_CACHE_BLOCK", "100K")
    with pytest.raises(ValueError, match="GULPDB_FRAME_CACHE_BLOCK"):
        gulpdb.Dataset(remote.url)


@pytest.mark.parametrize("where", ["cache", "frames"])
def test_a_cache_directory_others_can_write_is_refused(remote, tmp_path, where):
    published(remote, tmp_path, videos=4)
    with gulpdb.Dataset(remote.url) as ds:
        ds.read_jpegs("video_0")
    path = os.environ["GULPDB_CACHE"] if where == "cache" else frames_dir()
    os.chmod(path, 0o777)
    try:
        with pytest.raises(OSError, match="writable by its group or by other users"):
            gulpdb.Dataset(remote.url)
        os.chmod(path, 0o775)
        with pytest.raises(OSError, match=r"mode 0775"):
            gulpdb.Dataset(remote.url)
    finally:
        os.chmod(path, 0o755)
    with gulpdb.Dataset(remote.url) as ds:
        ds.read_jpegs("video_0")


def test_a_cache_on_a_network_file_system_is_used_with_a_warning(remote, tmp_path):
    local = published(remote, tmp_path, videos=4)
    env = dict(python_subprocess_env(), GULPDB_TEST_FS_TYPE="nfs")
    proc = subprocess.run([PYTHON, "-c", reader_script(remote.url)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "network file system (nfs)" in proc.stderr
    import json
    assert json.loads(proc.stdout) == local_digests(local.path)


def test_the_counters_are_node_wide_across_dataloader_workers(remote, tmp_path):
    published(remote, tmp_path, videos=16)
    train = gulpdb.torch.VideoDataset(remote.url, label="idx", num_frames=4)
    loader = torch.utils.data.DataLoader(train, batch_size=4, num_workers=2,
                                         multiprocessing_context="fork")
    before = train.dataset.cache_stats()
    assert before["misses"] == 0
    for _ in loader:
        pass
    after = train.dataset.cache_stats()  # the main process read nothing itself
    assert after["misses"] > 0 and after["bytes_from_store"] == data_bytes(remote.proxy)
    for _ in loader:
        pass
    assert train.dataset.cache_stats()["hits"] > after["hits"]


def test_info_with_cache_shows_the_node_counters(remote, tmp_path):
    published(remote, tmp_path, videos=4)
    with gulpdb.Dataset(remote.url) as ds:
        digests(ds)
    from conftest import GULPDB_CLI
    import json
    proc = subprocess.run([GULPDB_CLI, "info", remote.url, "--cache", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)["frame_cache"]
    assert info["reads_through"] is True and info["misses"] > 0
    assert info["dir"] == frames_dir()
    text = subprocess.run([GULPDB_CLI, "info", remote.url, "--cache"], capture_output=True,
                          text=True, timeout=120).stdout
    assert "frame cache:" in text and "this dataset reads through it" in text


# ---- read-ahead ----------------------------------------------------------------------


def test_prefetch_merges_adjacent_ranges_into_one_get_per_chunk_in_memory(
        remote, tmp_path, monkeypatch):
    local = published(remote, tmp_path, videos=16)  # two chunks of 8 videos
    monkeypatch.setenv("GULPDB_FRAME_CACHE_BYTES", "0")
    want = local_digests(local.path)
    ds = gulpdb.Dataset(remote.url)
    requests = [(i, slice(0, 8)) for i in ds.ids()]
    ds.prefetch(requests)
    # The reads wait for the fetches in flight instead of making their own.
    assert digests(ds) == want
    gets = data_gets(remote.proxy)
    assert len(gets) == 2, gets  # one per chunk, not one per clip
    info = ds.remote_info
    assert info["prefetch_gets"] == 2 and info["prefetch_bytes"] >= committed_bytes(local.path) * 0.9


def test_prefetch_into_the_cache_fetches_adjacent_blocks_in_one_get(remote, tmp_path):
    local = published(remote, tmp_path, videos=16)
    want = local_digests(local.path)
    ds = gulpdb.Dataset(remote.url)
    ds.prefetch(ds.ids())
    wait_for(lambda: ds.cache_stats()["prefetched"] == committed_blocks(local.path))
    assert digests(ds) == want
    gets = data_gets(remote.proxy)
    assert len(gets) == 2, gets  # each chunk's blocks in one GET
    stats = ds.cache_stats()
    assert stats["prefetched"] > 0


def test_prefetch_keeps_to_its_memory_bound(remote, tmp_path, monkeypatch):
    local = published(remote, tmp_path, videos=16)
    monkeypatch.setenv("GULPDB_FRAME_CACHE_BYTES", "0")
    monkeypatch.setenv("GULPDB_PREFETCH_BYTES", "64K")
    want = local_digests(local.path)
    ds = gulpdb.Dataset(remote.url)
    ids = ds.ids()
    for start in range(0, len(ids), 4):
        ds.prefetch([(i, [0, 1]) for i in ids[start:start + 4]])
    assert digests(ds) == want
    info = ds.remote_info
    assert 0 < info["prefetch_peak_bytes"] <= 64 * 1024


def test_prefetch_refuses_bad_requests_before_fetching(remote, tmp_path):
    published(remote, tmp_path, videos=4)
    ds = gulpdb.Dataset(remote.url)
    with pytest.raises(KeyError):
        ds.prefetch(["no_such_video"])
    with pytest.raises(TypeError):
        ds.prefetch("video_0")
    with pytest.raises(IndexError):
        ds.prefetch([("video_0", [99])])
    assert data_gets(remote.proxy) == []


def test_prefetch_on_a_local_dataset_does_nothing(small_dataset):
    with gulpdb.Dataset(small_dataset.path) as ds:
        ds.prefetch(ds.ids())
        assert ds.cache_stats()["enabled"] is False


def test_video_dataset_reads_ahead_in_the_samplers_order(remote, tmp_path):
    local = published(remote, tmp_path, videos=16)
    train = gulpdb.torch.VideoDataset(remote.url, label="idx", num_frames=4, prefetch_batches=2)
    sampler = gulpdb.torch.VideoSampler(train, num_replicas=1, rank=0, shuffle=True, seed=3)
    loader = torch.utils.data.DataLoader(train, batch_size=4, sampler=sampler)
    labels = []
    for clips, label in sampler.track(loader):
        assert clips.shape[:2] == (4, 4)
        labels.extend(label.tolist())
    assert len(labels) == 16
    assert train._read_ahead.prefetched == 16
    stats = train.dataset.cache_stats()
    assert stats["prefetched"] > 0
    assert data_bytes(remote.proxy) <= committed_bytes(local.path)
    with pytest.raises(ValueError):
        gulpdb.torch.VideoDataset(remote.url, prefetch_batches=-1)
    with pytest.raises(TypeError):
        gulpdb.torch.VideoDataset(remote.url, prefetch_batches="2")


def test_image_dataset_reads_ahead_the_frame_it_reads(remote, tmp_path):
    # ImageDataset takes prefetch_batches as VideoDataset does, and uses it.
    published(remote, tmp_path, videos=16)
    train = gulpdb.torch.ImageDataset(remote.url, label="idx", frame=1, prefetch_batches=2)
    asked = []
    requests_of = train._read_ahead._requests

    def recorded(indices):
        requests = requests_of(indices)
        asked.extend(requests)
        return requests

    train._read_ahead._requests = recorded
    sampler = gulpdb.torch.VideoSampler(train, num_replicas=1, rank=0, shuffle=True, seed=5)
    loader = torch.utils.data.DataLoader(train, batch_size=4, sampler=sampler)
    seen = 0
    for images, _ in sampler.track(loader):
        seen += images.shape[0]
    assert seen == 16
    assert train._read_ahead.prefetched == 16
    assert sorted(id_ for id_, _ in asked) == sorted(train.ids)
    assert all(frames == [1] for _, frames in asked)
    assert train._reader.dataset.cache_stats()["prefetched"] > 0
    with pytest.raises(ValueError):
        gulpdb.torch.ImageDataset(remote.url, prefetch_batches=-1)


def test_read_ahead_has_the_next_batches_in_the_cache_before_they_are_asked_for(remote, tmp_path):
    # When the loop has batch i, the fetches of batches i+1..i+K have been
    # asked for; once they are done, reading those items makes no GET.
    published(remote, tmp_path, videos=24)
    K, B = 2, 4
    train = gulpdb.torch.VideoDataset(remote.url, label="idx", num_frames=4, prefetch_batches=K)
    ahead = train._read_ahead
    asked = []  # the requests handed to prefetch, in order
    requests_of = ahead._requests

    def recorded(indices):
        requests = requests_of(indices)
        asked.extend(requests)
        return requests

    ahead._requests = recorded
    sampler = gulpdb.torch.VideoSampler(train, num_replicas=1, rank=0, shuffle=True, seed=7)
    loader = torch.utils.data.DataLoader(train, batch_size=B, sampler=sampler)
    other = gulpdb.Dataset(remote.url)
    for i, (clips, _) in enumerate(sampler.track(loader)):
        assert clips.shape[:2] == (B, 4)
        assert ahead.prefetched == min(24, (i + 1 + K) * B)
        wait_for(lambda: train.dataset.remote_info["prefetch_fills"] == ahead.calls)
        upcoming = asked[(i + 1) * B:]
        gets = len(data_gets(remote.proxy))
        other.read_jpeg_batch(upcoming)  # batches i+1..i+K: from the cache
        assert len(data_gets(remote.proxy)) == gets, f"batch {i}: the next batches were not fetched"
    stats = train.dataset.cache_stats()
    assert stats["prefetched"] > 0
    gets = data_gets(remote.proxy)
    assert len(gets) == len(set(gets)), "a block was fetched twice"


def test_read_ahead_with_the_cache_off_leaves_dataloader_workers_alone(
        remote, tmp_path, monkeypatch):
    # Without the cache, what read-ahead fetches stays in this process's
    # memory: under DataLoader workers it would be every byte fetched twice.
    published(remote, tmp_path, videos=16)
    monkeypatch.setenv("GULPDB_FRAME_CACHE_BYTES", "0")

    def epoch(prefetch, workers):
        remote.proxy.reset()
        train = gulpdb.torch.VideoDataset(remote.url, label="idx", num_frames=4,
                                          prefetch_batches=prefetch)
        sampler = gulpdb.torch.VideoSampler(train, num_replicas=1, rank=0, shuffle=True, seed=3)
        loader = torch.utils.data.DataLoader(train, batch_size=4, sampler=sampler,
                                             num_workers=workers)
        assert sum(len(label) for _, label in sampler.track(loader)) == 16
        return train, data_bytes(remote.proxy)

    _, without = epoch(0, 2)
    train, with_ahead = epoch(2, 2)
    assert train._read_ahead.skipped == 16 and train._read_ahead.prefetched == 0
    assert train.dataset.remote_info["prefetch_gets"] == 0
    assert with_ahead == without
    # Read in this process: read-ahead into memory runs, and the reads take its bytes.
    train, _ = epoch(2, 0)
    assert train._read_ahead.prefetched == 16 and train._read_ahead.skipped == 0
    assert train.dataset.remote_info["prefetch_gets"] > 0
