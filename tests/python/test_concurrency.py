"""Threads, processes, fork and spawn."""

from __future__ import annotations

import gc
import multiprocessing
import os
import random
import subprocess
import textwrap
import threading
import time

from typing import Tuple

import numpy as np
import pytest

import gulpdb
from conftest import PYTHON, load_manifest, python_subprocess_env, sha256, synthetic_frames


def test_eight_threads_read_exact_pixels(gulpio_copy):
    name = "gulpio2_csv_jpeg"
    directory = gulpio_copy(name)
    items = {item["id"]: item for item in load_manifest(name)["items"]}
    gd = gulpdb.GulpDirectory(directory, quiet=True)
    ds = gd.dataset
    ids = sorted(items)
    errors = []
    reads = [0] * 8
    start = threading.Barrier(8)

    def work(t: int) -> None:
        rng = random.Random(t)
        start.wait()
        try:
            for _ in range(150):
                id_ = rng.choice(ids)
                expected = items[id_]["frames"]
                picks = [rng.randrange(len(expected)) for _ in range(rng.randint(1, 4))]
                if rng.random() < 0.5:
                    frames = ds.read(id_, picks, colorspace="auto", as_list=True)
                else:
                    frames, _ = gd[id_, picks]
                got = [sha256(f) for f in frames]
                want = [expected[p]["decoded_sha256_fast"] for p in picks]
                if got != want:
                    errors.append((id_, picks))
                reads[t] += 1
        except Exception as e:  # reported below, with the thread that failed
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert reads == [150] * 8


def test_batch_reads_from_threads_match(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    failures = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(40):
            ids = rng.sample(small_dataset.ids, 4)
            for id_, frames in zip(ids, ds.read_batch(ids, slice(1, 5))):
                if not np.array_equal(frames, small_dataset.decoded[id_][1:5]):
                    failures.append(id_)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def _longest_stall(call) -> Tuple[float, float]:
    """(the longest a ticking Python thread was held up while `call` ran, how long
    `call` took). The ticker sleeps 1 ms at a time and needs the GIL to wake up,
    so a call that keeps the GIL stalls it for the whole call, while one that
    releases it lets it tick (up to scheduling noise on a busy machine)."""
    longest = [0.0]
    stop = threading.Event()

    def tick() -> None:
        last = time.monotonic()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.monotonic()
            longest[0] = max(longest[0], now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        time.sleep(0.05)
        longest[0] = 0.0
        started = time.monotonic()
        call()
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        ticker.join()
    return longest[0], elapsed


def _gil_holding_count(seconds: float):
    """A C call that keeps the GIL for about `seconds`, in one piece."""
    size = 2 * 10**7
    data = b"\1" * size  # written, so no page faults are timed
    data.count(b"x")
    started = time.monotonic()
    data.count(b"x")
    per_byte = max(time.monotonic() - started, 1e-4) / size
    data = b"\1" * min(int(seconds / per_byte), 2 * 10**9)
    return lambda: data.count(b"x")


def test_reads_release_the_gil(tmp_path):
    path = str(tmp_path / "big")
    frames = np.tile(synthetic_frames(1, 1, 480, 640), (96, 1, 1, 1))
    with gulpdb.Dataset(path, "x") as ds, ds.writer() as w:
        w.append("v", frames)
    ds = gulpdb.Dataset(path, decode_threads=1)  # decodes on the calling thread
    ds.read("v")  # warm up: open files, page cache

    # The control: a call known to keep the GIL stalls the ticker throughout.
    stall, took = _longest_stall(_gil_holding_count(0.4))
    assert took > 0.1 and stall > 0.8 * took, (stall, took)

    # Each of these native calls (96 frames of 640x480 decoded or encoded on
    # one thread, repeated for 0.3 s) releases the GIL: the ticker is held up
    # for a small part of the time at most.
    def releases_the_gil(call) -> None:
        def repeated() -> None:  # at least 0.3 s of calls, whatever the machine
            started = time.monotonic()
            while time.monotonic() - started < 0.3:
                call()

        stall, took = _longest_stall(repeated)
        assert stall < 0.35 * took, f"a Python thread stalled {stall:.3f} s of {took:.3f} s"

    releases_the_gil(lambda: ds.read("v"))
    releases_the_gil(lambda: ds.read_batch(["v"] * 2))
    ds.close()
    with gulpdb.Dataset(path, "r+") as rw, rw.writer(encode_threads=1) as w:
        names = (f"encoded_{k}" for k in range(10**6))
        releases_the_gil(lambda: w.append(next(names), frames))
        w.rollback()


WRITER_SCRIPT = textwrap.dedent(
    """
    import sys, numpy as np, gulpdb
    path, batches, per_batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ds = gulpdb.Dataset(path, "r+")
    with ds.writer(lock_timeout=10) as w:
        for b in range(batches):
            for k in range(per_batch):
                n = b * per_batch + k
                frames = np.full((3, 16, 16, 3), n % 251, np.uint8)
                w.append(f"w{n}", frames, {"n": n, "batch": b})
            w.commit()
    print("done", flush=True)
    """
)


def test_reads_while_another_process_writes(tmp_path):
    path = str(tmp_path / "live")
    gulpdb.Dataset(path, "x", videos_per_chunk=7).close()
    reader = gulpdb.Dataset(path)
    batches, per_batch = 40, 5
    writer = subprocess.Popen(
        [PYTHON, "-c", WRITER_SCRIPT, path, str(batches), str(per_batch)],
        env=python_subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    seen_counts = []
    try:
        while True:
            finished = writer.poll() is not None
            count = len(reader)
            seen_counts.append(count)
            # Whole batches only, never part of one.
            assert count % per_batch == 0, count
            ids = reader.ids()
            assert len(ids) >= count
            for id_ in random.sample(ids, min(len(ids), 5)):
                n = int(id_[1:])
                frames = reader.read(id_)
                assert frames.shape == (3, 16, 16, 3)
                assert abs(int(frames.mean()) - n % 251) <= 2
                assert reader.meta(id_) == {"n": n, "batch": n // per_batch}
            if finished:
                break
    finally:
        out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    assert len(reader) == batches * per_batch
    assert seen_counts == sorted(seen_counts)  # never goes backwards


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_dataset_used_after_fork_reopens_in_the_child(small_dataset):
    ds = gulpdb.Dataset(small_dataset.path)
    assert np.array_equal(ds.read("video_1"), small_dataset.decoded["video_1"])  # opened here
    parent_native = ds.native
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        code = 1
        try:
            ok = all(
                np.array_equal(ds.read(id_), small_dataset.decoded[id_])
                for id_ in small_dataset.ids
            )
            inherited = parent_native.in_owner_process
            try:
                parent_native.ids()
                used_inherited = True
            except RuntimeError:
                used_inherited = False
            reopened = ds.native is not parent_native
            del parent_native
            gc.collect()  # dropping the inherited handle must not touch the parent's
            code = 0 if ok and reopened and not inherited and not used_inherited else 2
        finally:
            os.write(write_fd, bytes([code]))
            os._exit(code)
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    result = os.read(read_fd, 1)
    os.close(read_fd)
    assert os.WIFEXITED(status) and result == b"\x00", (status, result)
    # The parent's handle is intact.
    assert ds.native is parent_native
    assert np.array_equal(ds.read("video_2"), small_dataset.decoded["video_2"])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_with_an_open_writer_leaves_the_parents_batch_alone(tmp_path):
    path = str(tmp_path / "w")
    ds = gulpdb.Dataset(path, "x")
    writer = ds.writer()
    writer.append("pending", synthetic_frames(0, 2))
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            try:
                writer.commit()  # not this process's writer
            except RuntimeError:
                code = 0
            del writer  # must not roll back the parent's batch
            gc.collect()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    writer.commit()
    writer.close()
    assert ds.frame_count("pending") == 2
    assert ds.read("pending").shape == (2, 24, 32, 3)


def _read_in_worker(args):
    dataset, id_ = args
    return id_, dataset.read(id_).tobytes(), os.getpid()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_workers_read_a_dataset_opened_in_the_parent(small_dataset, method):
    ds = gulpdb.Dataset(small_dataset.path)
    ds.read("video_0")  # opened and used before the workers start
    context = multiprocessing.get_context(method)
    with context.Pool(2) as pool:
        results = pool.map(_read_in_worker, [(ds, id_) for id_ in small_dataset.ids])
    assert {pid for _, _, pid in results} - {os.getpid()}
    for id_, pixels, _ in results:
        assert pixels == small_dataset.decoded[id_].tobytes()
