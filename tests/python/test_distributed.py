"""gulpdb.distributed on real Dask clusters started here (127.0.0.1 only).

A LocalCluster of 2 worker processes serves most tests; the driver-kill test
and the bad-worker tests run the real ``dask-scheduler`` and ``dask-worker``
commands on loopback ports. Every cluster is stopped by the tests, with
bounded waits. The sources are generated: a few hundred frame folders (two of
them bad, one id listed twice) and clips made by ffmpeg (plus the cockatoo
clip Debian's python3-imageio ships).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import inspect
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import warnings
from typing import Dict, Iterator, List

import distributed
import pytest

import gulpdb
import gulpdb.distributed as gd
from conftest import FIXTURES, GULPDB_CLI, PYTHON, python_subprocess_env, synthetic_frames
from gulpdb import _gulpdb
from gulpdb.distributed import DistributedIngestError, IngestFailed

COCKATOO = "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4"
FRAME_VIDEOS = 240
CLIPS = 36
LABELS = ["arch", "bell", "cone", "drum", "fern", "gate"]
BAD = {"bad_corrupt", "bad_empty"}


# ---- sources --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    root = tmp_path_factory.mktemp("sources")
    frames = root / "frames"
    lines = []
    for i in range(FRAME_VIDEOS):
        folder = frames / f"v{i:03d}"
        folder.mkdir(parents=True)
        for f, image in enumerate(synthetic_frames(i, 2 + i % 3, 24, 32)):
            (folder / f"{f:03d}.jpg").write_bytes(gulpdb.encode_jpeg(image))
        lines.append(f"v{i:03d};{LABELS[i % len(LABELS)]}")
    (frames / "bad_empty").mkdir()
    (frames / "bad_corrupt").mkdir()
    (frames / "bad_corrupt" / "000.jpg").write_bytes(b"\xff\xd8 not a jpeg at all \xff\xd9")
    lines += ["bad_empty;arch", "bad_corrupt;bell", "v010;zebra"]  # v010 listed twice
    (frames / "labels.csv").write_text("\n".join(lines) + "\n")

    videos = root / "videos"
    videos.mkdir()
    patterns = ["testsrc", "testsrc2", "smptebars", "rgbtestsrc"]
    for n, pattern in enumerate(patterns):
        subprocess.run(
            ["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
             f"{pattern}=size=64x48:rate=8:duration=1", "-pix_fmt", "yuv420p",
             "-c:v", "mpeg4", "-y", str(videos / f"clip{n}.mp4")],
            check=True, timeout=60,
        )  # fmt: skip
    entries = []
    for i in range(CLIPS):
        shutil.copyfile(videos / f"clip{i % len(patterns)}.mp4", videos / f"c{i:02d}.mp4")
        entries.append({"id": f"c{i:02d}", "template": f"pattern {i % len(patterns)}"})
    for n in range(len(patterns)):
        (videos / f"clip{n}.mp4").unlink()
    shutil.copyfile(COCKATOO, videos / "cockatoo.mp4")
    entries.append({"id": "cockatoo", "template": "bird"})
    (videos / "videos.json").write_text(json.dumps(entries))
    return {
        "frames": str(frames),
        "frame_labels": str(frames / "labels.csv"),
        "videos": str(videos),
        "video_labels": str(videos / "videos.json"),
    }


def good_frame_ids() -> List[str]:
    return [f"v{i:03d}" for i in range(FRAME_VIDEOS)]


def frame_options(sources: Dict[str, str], **extra) -> Dict:
    return dict(frames_dir=sources["frames"], labels=sources["frame_labels"], **extra)


def video_options(sources: Dict[str, str], **extra) -> Dict:
    return dict(
        videos_dir=sources["videos"], labels=sources["video_labels"], label_name="template",
        frame_size=32, **extra,
    )  # fmt: skip


def plain_ingest(out: str, **options) -> Dict:
    """What `gulpdb ingest --num-workers 2` does (the same library call)."""
    options = dict(dir=out, num_workers=2, quiet=True, **options)
    return _gulpdb.ingest_run(options, on_problem=_quiet)


def _quiet(*_args) -> None:
    pass


def assert_same_dataset(a: str, b: str) -> None:
    """Same ids in the same order, same meta, same frame bytes, same label2idx.json."""
    with gulpdb.Dataset(a) as x, gulpdb.Dataset(b) as y:
        ids = x.ids()
        assert ids == y.ids()
        assert len(ids) == len(set(ids))
        for id_ in ids:
            assert x.meta(id_) == y.meta(id_), id_
            assert x.read_jpegs(id_) == y.read_jpegs(id_), id_
    with open(os.path.join(a, "label2idx.json")) as f1:
        with open(os.path.join(b, "label2idx.json")) as f2:
            assert f1.read() == f2.read()


def assert_labels_consistent(out: str) -> None:
    with open(os.path.join(out, "label2idx.json")) as f:
        label2idx = json.load(f)
    with gulpdb.Dataset(out) as ds:
        for id_ in ds.ids():
            meta = ds.meta(id_)
            assert meta["id"] == id_
            assert label2idx[meta["label"]] == meta["idx"], id_


def assert_healthy(out: str) -> None:
    report = gulpdb.check(out, deep=True)
    assert report["healthy"], report["problems"]


# ---- clusters -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    )  # fmt: skip
    c = distributed.Client(cluster, set_as_default=False)
    try:
        yield c
    finally:
        c.close(timeout=10)
        cluster.close(timeout=20)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(process: subprocess.Popen, timeout: float = 10) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)


class ExternalCluster:
    """``dask-scheduler`` and ``dask-worker`` commands on loopback ports."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.processes: List[subprocess.Popen] = []
        self.scheduler = self._spawn(
            ["/usr/bin/dask-scheduler", "--host", "127.0.0.1", "--port", str(self.port),
             "--no-dashboard"], "scheduler",
        )  # fmt: skip

    def _spawn(self, argv: List[str], name: str, env=None) -> subprocess.Popen:
        log = open(os.path.join(self.workdir, f"{name}.log"), "wb")
        p = subprocess.Popen(
            argv, env=env or python_subprocess_env(), stdout=log, stderr=subprocess.STDOUT,
            cwd=self.workdir, start_new_session=True,
        )  # fmt: skip
        log.close()
        self.processes.append(p)
        return p

    def add_worker(self, name: str, env=None, prefix: List[str] = ()) -> subprocess.Popen:
        local = os.path.join(self.workdir, name)
        os.makedirs(local, exist_ok=True)
        return self._spawn(
            list(prefix) + ["/usr/bin/dask-worker", self.address, "--nthreads", "1",
                            "--host", "127.0.0.1", "--no-dashboard", "--no-nanny",
                            "--local-directory", local, "--name", name], name, env,
        )  # fmt: skip

    def wait_workers(self, n: int, timeout: float = 60) -> None:
        with distributed.Client(self.address, timeout=30, set_as_default=False) as c:
            deadline = time.monotonic() + timeout
            while len(c.nthreads()) != n:
                assert time.monotonic() < deadline, f"{len(c.nthreads())} workers, not {n}"
                time.sleep(0.1)

    def close(self) -> None:
        for p in reversed(self.processes):
            stop(p)


@pytest.fixture(scope="module")
def external(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExternalCluster]:
    cluster = ExternalCluster(str(tmp_path_factory.mktemp("external")))
    try:
        cluster.add_worker("w1")
        cluster.add_worker("w2")
        cluster.wait_workers(2)
        yield cluster
    finally:
        cluster.close()


def run_cli(args: List[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, "-m", "gulpdb.distributed", *args], env=python_subprocess_env(),
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def error_lines(stderr: str) -> List[str]:
    return [line for line in stderr.splitlines() if line.startswith("gulpdb.distributed: error:")]


# ---- ingest ---------------------------------------------------------------------------


def test_frames_match_plain_ingest_every_source_once_and_gulpio2_reads_them(
    client, sources, tmp_path
):
    out, plain = str(tmp_path / "out"), str(tmp_path / "plain")
    options = frame_options(sources, keep_jpeg=True, shuffle=True, seed=11)
    report = gd.ingest(client, out, partitions=7, batch=16, quiet=True, **options)
    plain_report = plain_ingest(plain, **options)

    assert report.videos == plain_report["added"] == FRAME_VIDEOS
    assert report.listed == FRAME_VIDEOS + 3 and report.duplicates == 1
    assert report.partitions == 7 and report.seed == 11 and not report.failed
    assert {b.id for b in report.bad} == BAD
    assert all(b.message for b in report.bad)
    assert_same_dataset(out, plain)
    with gulpdb.Dataset(out) as ds:
        assert sorted(ds.ids()) == good_frame_ids()
        # v010 is listed twice: its first entry in the shuffled order wins.
        listed = _gulpdb.ingest_list_sources(frame_options(sources))
        first = next(
            listed[i] for i in _gulpdb.ingest_shuffled_order(len(listed), 11)
            if listed[i]["id"] == "v010"
        )  # fmt: skip
        assert ds.meta("v010")["label"] == first["label"]
        chunks = ds.chunks()
    # Every shard attached in place: OUT's chunks are the shards' files.
    assert all(c.file_name.startswith("shards/ingest-0001/part-") for c in chunks)
    assert not glob.glob(os.path.join(out, "data_*.gulp"))
    assert_labels_consistent(out)
    check = subprocess.run([GULPDB_CLI, "check", out, "--deep"], capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    assert check.returncode == 0 and "healthy" in check.stdout, check.stdout + check.stderr

    # GulpIO2's API reads it, before and after `gulpdb export`.
    def read_all() -> None:
        directory = gulpdb.GulpDirectory(out)
        with gulpdb.Dataset(out) as ds:
            for id_ in good_frame_ids():
                frames, meta = directory[id_]
                assert len(frames) == 2 + int(id_[1:]) % 3
                assert meta == ds.meta(id_)

    read_all()
    export = subprocess.run([GULPDB_CLI, "export", out], capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert export.returncode == 0, export.stderr
    # Every chunk is a shard's, in its sub-directory, where GulpIO's readers do
    # not look: export writes no top-level .gmeta for them (GulpIO2 would find
    # .gmeta files without their .gulp and refuse the directory). A push
    # publishes them flat, each data_N.gulp beside its meta_N.gmeta.
    assert not glob.glob(os.path.join(out, "meta_*.gmeta"))
    read_all()

    # Re-running the finished job does nothing and reports the same totals.
    again = gd.ingest(client, out, partitions=7, batch=16, quiet=True, **options)
    assert again.already_done
    assert (again.videos, again.frames, again.bad) == (report.videos, report.frames, report.bad)
    with gulpdb.Dataset(out) as ds:
        assert len(ds) == FRAME_VIDEOS and len(ds.chunks()) == len(chunks)


def test_videos_through_ffmpeg_then_frames_extend_the_dataset_as_plain_ingest_does(
    client, sources, tmp_path
):
    out, plain = str(tmp_path / "out"), str(tmp_path / "plain")
    videos = video_options(sources)
    report = gd.ingest(client, out, quiet=True, **videos)
    plain_ingest(plain, **videos)
    assert report.videos == CLIPS + 1 and not report.bad
    assert report.partitions == 8  # 4 per worker thread
    # The second job extends OUT: new labels numbered after the existing ones.
    frames = frame_options(sources)
    second = gd.ingest(client, out, quiet=True, **frames)
    plain_ingest(plain, **frames)
    assert second.job.endswith("ingest-0002") and second.videos == FRAME_VIDEOS
    assert_same_dataset(out, plain)
    with open(os.path.join(out, "label2idx.json")) as f:
        label2idx = json.load(f)
    assert list(label2idx)[:5] == ["bird", "pattern 0", "pattern 1", "pattern 2", "pattern 3"]
    assert_labels_consistent(out)
    assert_healthy(out)
    with gulpdb.Dataset(out) as ds:
        assert ds.frame_count("cockatoo") > 100
        assert ds.read("cockatoo", [0]).shape == (1, 32, 56, 3)


@pytest.mark.h264
def test_h264_videos_are_ingested_as_plain_ingest_does(client, sources, tmp_path):
    out, plain = str(tmp_path / "out"), str(tmp_path / "plain")
    videos = video_options(sources, codec="h264", gop=4)
    report = gd.ingest(client, out, quiet=True, **videos)
    plain_ingest(plain, **videos)
    assert report.videos == CLIPS + 1 and not report.bad
    with gulpdb.Dataset(out) as x, gulpdb.Dataset(plain) as y:
        assert x.codec == y.codec == "h264"
        assert x.ids() == y.ids()
        for id_ in x.ids():
            assert x.meta(id_) == y.meta(id_), id_
            assert x.read_h264_stream(id_) == y.read_h264_stream(id_), id_
    assert_healthy(out)
    # Into an existing dataset of the other codec: refused before any shard is made.
    jpeg = str(tmp_path / "jpeg")
    gulpdb.Dataset(jpeg, "x").close()
    with pytest.raises(ValueError, match="stores its frames as jpeg, not h264"):
        gd.ingest(client, jpeg, quiet=True, **videos)
    with gulpdb.Dataset(jpeg) as ds:
        assert ds.ids() == []


def test_a_worker_killed_mid_job_loses_and_duplicates_nothing(client, sources, tmp_path):
    out = str(tmp_path / "out")
    pids = client.run(os.getpid)
    killed = {}

    def progress(done: int, total: int) -> None:
        if killed or done < 3:
            return
        processing = client.processing().items()
        busy = [a for a, keys in processing if any("gulpdb-ingest" in k for k in keys)]
        if busy:
            os.kill(pids[busy[0]], signal.SIGKILL)
            killed.update(worker=busy[0], done=done, total=total)

    options = video_options(sources, shuffle=True, seed=3)
    report = gd.ingest(client, out, partitions=6, batch=2, progress=progress, quiet=True, **options)
    assert killed and killed["done"] < killed["total"], "the worker was not killed mid-job"
    with pytest.raises(OSError):
        os.kill(pids[killed["worker"]], 0)  # it really died
    assert report.videos == CLIPS + 1 and not report.failed
    with gulpdb.Dataset(out) as ds:
        ids = ds.ids()
    assert len(ids) == len(set(ids)) == CLIPS + 1
    plain = str(tmp_path / "plain")
    plain_ingest(plain, **options)
    assert_same_dataset(out, plain)
    assert_healthy(out)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it


def test_real_scheduler_and_workers_driver_killed_and_rerun_without_seed(
    external, sources, tmp_path
):
    out = str(tmp_path / "out")
    args = ["--scheduler", external.address, "ingest", out, "--videos-dir", sources["videos"],
            "--labels", sources["video_labels"], "--label-name", "template", "--frame-size",
            "32", "--shuffle", "--partitions", "12", "--batch", "2"]  # fmt: skip
    driver = subprocess.Popen(
        [PYTHON, "-m", "gulpdb.distributed", *args], env=python_subprocess_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    results = os.path.join(out, "shards", "ingest-0001", "results")
    try:
        deadline = time.monotonic() + 120
        while not (os.path.isdir(results) and 1 <= len(os.listdir(results))):
            assert driver.poll() is None, "the driver finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        driver.kill()
        driver.wait(10)
    finally:
        stop(driver)
    with open(os.path.join(out, "shards", "ingest-0001", "plan.json")) as f:
        plan = json.load(f)
    assert len(os.listdir(results)) < 12, "killed too late"
    with gulpdb.Dataset(out) as ds:
        assert len(ds) == 0  # nothing attached before every task is done

    rerun = run_cli(args + ["--json"], timeout=180)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["videos"] == CLIPS + 1 and report["seed"] == plan["seed"]
    # Exactly once, in the order of the seed the first run chose.
    with gulpdb.Dataset(out) as ds:
        ids = ds.ids()
    listed = _gulpdb.ingest_list_sources(
        dict(videos_dir=sources["videos"], labels=sources["video_labels"], label_name="template")
    )
    order = _gulpdb.ingest_shuffled_order(len(listed), plan["seed"])
    assert ids == [listed[i]["id"] for i in order]
    assert_labels_consistent(out)
    assert_healthy(out)


# ---- bad input ------------------------------------------------------------------------


def test_an_unreachable_scheduler_is_one_line_within_the_timeout(sources, tmp_path):
    out = tmp_path / "out"
    port = free_port()
    start = time.monotonic()
    result = run_cli(["--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", "2",
                      "ingest", str(out), "--frames-dir", sources["frames"]])  # fmt: skip
    assert time.monotonic() - start < 30
    assert result.returncode == 1
    lines = error_lines(result.stderr)
    assert len(lines) == 1
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in lines[0]
    assert not out.exists()  # nothing left behind


def test_an_out_that_is_not_a_dataset_is_refused(client, sources, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(DistributedIngestError, match="is not a gulpdb dataset"):
        gd.ingest(client, str(other), quiet=True, **frame_options(sources))
    assert sorted(os.listdir(other)) == ["notes.txt"]

    gulpio = tmp_path / "gulpio"
    shutil.copytree(os.path.join(FIXTURES, "gulpio2_csv_jpeg"), gulpio)
    before = sorted(os.listdir(gulpio))
    result = run_cli(["ingest", str(gulpio), "--frames-dir", sources["frames"]])
    assert result.returncode == 1
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and "GulpIO directory" in lines[0] and "gulpdb import" in lines[0]
    assert sorted(os.listdir(gulpio)) == before

    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(DistributedIngestError, match="not a directory"):
        gd.ingest(client, str(a_file), quiet=True, **frame_options(sources))


def test_a_worker_without_ffmpeg_fails_the_preflight_naming_it(external, sources, tmp_path):
    env = python_subprocess_env()
    env["PATH"] = str(tmp_path / "empty-bin")
    extra = external.add_worker("no-ffmpeg", env=env)
    try:
        external.wait_workers(3)
        out = tmp_path / "out"
        with pytest.raises(DistributedIngestError) as e:
            gd.ingest(external.address, str(out), quiet=True, **video_options(sources))
        lines = str(e.value).splitlines()
        assert len(lines) == 1, lines
        assert "(no-ffmpeg)" in lines[0]
        assert "ffmpeg ('ffmpeg') is not on the worker's PATH" in lines[0]
        assert not out.exists()
    finally:
        stop(extra)
        external.wait_workers(2)


def test_a_worker_that_cannot_see_out_fails_the_preflight(external, sources, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True
    )
    if probe.returncode != 0:
        pytest.skip("unshare --mount is not permitted here: " + probe.stderr.decode().strip())
    # This worker has a file system of its own mounted over the shared directory.
    extra = external.add_worker(
        "blind",
        prefix=["unshare", "--mount", "--propagation", "private", "sh", "-c",
                f"mount -t tmpfs none {shared} && exec \"$0\" \"$@\""],
    )  # fmt: skip
    try:
        external.wait_workers(3)
        out = shared / "out"
        with pytest.raises(DistributedIngestError) as e:
            gd.ingest(external.address, str(out), quiet=True, **frame_options(sources))
        lines = str(e.value).splitlines()
        assert len(lines) == 1, lines
        assert "(blind)" in lines[0] and "cannot see OUT" in lines[0]
        assert not out.exists()
    finally:
        stop(extra)
        external.wait_workers(2)


def test_a_worker_with_another_gulpdb_version_fails_the_preflight(
    client, sources, tmp_path, monkeypatch
):
    monkeypatch.setattr(gulpdb, "__version__", "0.0.0-other")
    out = tmp_path / "out"
    with pytest.raises(DistributedIngestError) as e:
        gd.ingest(client, str(out), quiet=True, **frame_options(sources))
    lines = str(e.value).splitlines()
    assert len(lines) == 2  # one per worker
    assert all(line.startswith("worker tcp://127.0.0.1:") for line in lines)
    assert all("and the driver 0.0.0-other" in line for line in lines)
    assert not out.exists()


def test_strict_stops_at_a_bad_source_and_a_rerun_must_keep_the_plan_options(
    client, sources, tmp_path
):
    out = str(tmp_path / "out")
    options = frame_options(sources, keep_jpeg=True)
    with pytest.raises(IngestFailed) as e:
        gd.ingest(client, out, strict=True, partitions=4, quiet=True, **options)
    message = str(e.value)
    assert "stopped (--strict)" in message
    assert "'bad_empty'" in message or "'bad_corrupt'" in message
    assert "[Errno" not in message and not e.value.report.attached
    with gulpdb.Dataset(out) as ds:
        assert len(ds) == 0  # nothing attached

    with pytest.raises(DistributedIngestError, match=r"--keep-jpeg: True there, False here"):
        gd.ingest(client, out, quiet=True, **frame_options(sources))
    with pytest.raises(DistributedIngestError, match=r"--partitions: 4 there, 5 here"):
        gd.ingest(client, out, partitions=5, quiet=True, **options)

    # Without --strict (not a plan option), the same job finishes, skipping them.
    report = gd.ingest(client, out, quiet=True, **options)
    assert report.videos == FRAME_VIDEOS and {b.id for b in report.bad} == BAD
    with gulpdb.Dataset(out) as ds:
        assert sorted(ds.ids()) == good_frame_ids()
    assert_healthy(out)


def test_the_command_lists_bad_sources_and_refuses_bad_options(sources, tmp_path):
    usage = run_cli(["ingest", str(tmp_path / "out")])
    assert usage.returncode == 2 and "no source" in usage.stderr
    assert not (tmp_path / "out").exists()

    out = str(tmp_path / "cli")
    result = run_cli(
        ["ingest", out, "--frames-dir", sources["frames"], "--labels", sources["frame_labels"],
         "--local-workers", "1", "--partitions", "3"]
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    skipped = [line for line in result.stderr.splitlines() if "skipping" in line]
    assert sorted(line.split("'")[1] for line in skipped) == sorted(BAD)
    assert result.stdout.startswith(f"ingested {FRAME_VIDEOS} videos")
    assert "1 listed twice" in result.stdout and "2 bad sources skipped" in result.stdout


def test_a_second_driver_on_the_same_out_is_refused(client, sources, tmp_path):
    out = tmp_path / "out"
    gulpdb.Dataset(str(out), "a").close()
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(DistributedIngestError, match="another gulpdb.distributed driver"):
            gd.ingest(client, str(out), quiet=True, **frame_options(sources))
    finally:
        os.close(fd)
    assert not (out / "shards").exists()


def test_public_api_is_documented_and_typed():
    for name in gd.__all__:
        obj = getattr(gd, name)
        assert inspect.getdoc(obj), name
    signature = inspect.signature(gd.ingest)
    assert signature.return_annotation in ("IngestReport", gd.IngestReport)
    assert all(p.annotation is not inspect.Parameter.empty for p in signature.parameters.values())
    assert "--partitions" in gd.__doc__ and "flock" in gd.__doc__


def test_duplicates_of_a_task_wait_for_the_shard_lock_and_resume(sources, tmp_path):
    """Two attempts at one partition (a stolen or re-run task whose first run
    still goes on) started while a writer holds the shard: both wait, then
    the shard holds every source once."""
    from gulpdb.distributed import _files

    job = _files.Job(str(tmp_path / "out"), 1)
    listed = _gulpdb.ingest_list_sources(frame_options(sources))[:40]
    os.makedirs(os.path.dirname(job.sources_path("part-00000")))
    _files.write_json_atomic(job.sources_path("part-00000"), listed)
    task = {
        "version": gulpdb.__version__, "job_dir": job.dir, "partition": "part-00000",
        "index": 0, "size": len(listed),
        "settings": {"videos_per_chunk": 8, "bytes_per_chunk": 0, "checksums": True},
        "options": {"num_workers": 1, "batch": 2, "on_duplicate": "skip", "quiet": True,
                    "lock_timeout": 60.0, "catch_signals": False},
        "label_map": _gulpdb.ingest_label_map(job.out, listed),
        "topic": "unused", "stop_file": job.stop_path,
    }  # fmt: skip
    shard = job.shard_path("part-00000")
    code = (
        "import json, sys\n"
        "from gulpdb.distributed import _worker\n"
        "print(json.dumps(_worker.run_partition(json.loads(sys.argv[1]))))\n"
    )
    with gulpdb.Dataset(shard, "a", videos_per_chunk=8) as ds, ds.writer():
        attempts = [
            subprocess.Popen([PYTHON, "-c", code, json.dumps(task)], env=python_subprocess_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]  # fmt: skip
        time.sleep(1.0)
        assert all(p.poll() is None for p in attempts), "an attempt did not wait for the lock"
    results = []
    for p in attempts:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        results.append(json.loads(stdout))
    assert [r["videos"] for r in results] == [40, 40]
    assert sorted(r["added"] for r in results) == [0, 40]
    with gulpdb.Dataset(shard) as ds:
        assert ds.ids() == [s["id"] for s in listed]


def test_a_planning_cut_short_is_planned_again_but_unknown_shards_are_left_alone(
    client, sources, tmp_path
):
    out = tmp_path / "out"
    gulpdb.Dataset(str(out), "a").close()
    half = out / "shards" / "ingest-0001"
    (half / "sources").mkdir(parents=True)
    (half / "sources" / "part-00000.json").write_text("[")  # cut short
    report = gd.ingest(client, str(out), quiet=True, **frame_options(sources))
    assert report.job == str(half) and report.videos == FRAME_VIDEOS

    other = tmp_path / "other"
    gulpdb.Dataset(str(other), "a").close()
    orphan = other / "shards" / "ingest-0001" / "part-00000"
    orphan.parent.mkdir(parents=True)
    gulpdb.Dataset(str(orphan), "a").close()
    with pytest.raises(DistributedIngestError, match="has no plan.json but holds part-00000"):
        gd.ingest(client, str(other), quiet=True, **frame_options(sources))
    assert gulpdb.Dataset(str(orphan)) is not None


def test_shards_take_the_settings_of_an_existing_out(client, sources, tmp_path):
    out = tmp_path / "out"
    gulpdb.Dataset(str(out), "a", videos_per_chunk=8, checksums=False).close()
    report = gd.ingest(client, str(out), videos_per_chunk=100, partitions=3, quiet=True,
                       **frame_options(sources, keep_jpeg=True))  # fmt: skip
    assert report.videos == FRAME_VIDEOS
    shards = sorted(glob.glob(str(out / "shards" / "ingest-0001" / "part-*")))
    assert len(shards) == 3
    for shard in shards:
        with gulpdb.Dataset(shard) as ds:
            stats = ds.stats()
            assert (stats.videos_per_chunk, stats.checksums) == (8, False)
    with gulpdb.Dataset(str(out)) as ds:
        assert max(c.appended_videos for c in ds.chunks()) == 8
    assert_healthy(str(out))


def test_a_failed_partition_is_reported_the_others_attached_and_a_rerun_retries_it(
    client, sources, tmp_path
):
    out = str(tmp_path / "out")
    options = frame_options(sources, keep_jpeg=True)
    with pytest.raises(IngestFailed):  # leaves an unfinished job (bad sources at the end)
        gd.ingest(client, out, strict=True, partitions=4, quiet=True, **options)
    job = os.path.join(out, "shards", "ingest-0001")
    damaged = os.path.join(job, "sources", "part-00001.json")
    shutil.copyfile(damaged, damaged + ".saved")
    with open(damaged, "w") as f:
        f.write("[")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(job, "results", "part-00001.json"))

    with pytest.raises(IngestFailed) as e:
        gd.ingest(client, out, partitions=4, quiet=True, **options)
    report = e.value.report
    assert [f.partition for f in report.failed] == ["part-00001"]
    assert "part-00001.json is damaged" in report.failed[0].error
    assert "1 of 4 partitions failed" in str(e.value)
    plan = json.load(open(os.path.join(job, "plan.json")))
    attached = FRAME_VIDEOS - plan["partitions"][1]["size"]
    with gulpdb.Dataset(out) as ds:
        assert len(ds) == attached == report.videos

    os.replace(damaged + ".saved", damaged)
    final = gd.ingest(client, out, partitions=4, quiet=True, **options)
    assert final.videos == FRAME_VIDEOS and not final.failed
    with gulpdb.Dataset(out) as ds:
        assert sorted(ds.ids()) == good_frame_ids()
    assert_healthy(out)


def test_a_worker_killed_while_it_holds_a_result_and_creates_a_shard_is_not_a_failure(
    client, sources, tmp_path
):
    """The result of a finished partition lives on its worker until the
    driver fetches it; if that worker dies first, Dask runs the task again,
    and the re-run finds its shard done. The worker is then usually creating
    its next shard: a creation cut short must leave no half-made index (it
    did, one run in two, before shards were created by rename)."""
    client.wait_for_workers(2, timeout=60)
    pids = client.run(os.getpid)
    killed = {}

    def progress(done: int, total: int) -> None:
        # Runs inside the driver's loop: while it waits here, nothing is fetched.
        if killed:
            return
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            held = [(k, w) for k, w in client.who_has().items() if "gulpdb-ingest" in k and w]
            if held:
                key, workers = held[0]
                os.kill(pids[workers[0]], signal.SIGKILL)
                killed.update(key=key)
                while client.who_has([key]).get(key):
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
                time.sleep(0.5)  # the client hears that the result is lost
                return
            time.sleep(0.01)

    out = str(tmp_path / "out")
    try:
        report = gd.ingest(client, out, partitions=6, progress=progress, quiet=True,
                           **frame_options(sources, keep_jpeg=True))  # fmt: skip
    except IngestFailed as e:
        pytest.fail(f"{e}: {e.report.failed}")
    assert killed, "no result was ever held by a worker"
    assert report.videos == FRAME_VIDEOS and not report.failed
    with gulpdb.Dataset(out) as ds:
        assert sorted(ds.ids()) == good_frame_ids()
    assert not glob.glob(os.path.join(out, "shards", "*", "*", "gulpdb.index.building.*"))
    client.wait_for_workers(2, timeout=60)


def test_create_dataset_keeps_a_dataset_made_meanwhile_and_replaces_an_empty_index(tmp_path):
    from gulpdb.distributed import _files

    path = str(tmp_path / "shard")
    _files.create_dataset(path, {"videos_per_chunk": 3})
    with gulpdb.Dataset(path, "r+") as ds, ds.writer() as w:
        w.append("kept", [gulpdb.encode_jpeg(synthetic_frames(0, 1)[0])])
    _files.create_dataset(path, {"videos_per_chunk": 9})  # another process got there first
    with gulpdb.Dataset(path) as ds:
        assert ds.ids() == ["kept"] and ds.stats().videos_per_chunk == 3
    assert not [e for e in os.listdir(path) if ".building." in e]

    other = tmp_path / "other"
    (other / "gulpdb.index").mkdir(parents=True)  # a creation cut short after its mkdir
    _files.create_dataset(str(other), {"videos_per_chunk": 5})
    with gulpdb.Dataset(str(other)) as ds:
        assert len(ds) == 0 and ds.stats().videos_per_chunk == 5


# ---- one set of ingest options and rules with gulpdb ingest --------------------------


def small_frames(tmp_path, names=("a", "b", "c")) -> str:
    src = tmp_path / "small_frames"
    for n, name in enumerate(names):
        shutil.copytree(os.path.join(FIXTURES, "frames_src", str(n)), src / name)
    return str(src)


def test_the_python_api_and_the_command_take_gulpdb_ingests_option_table():
    from gulpdb.distributed import _options

    table = _gulpdb.ingest_command_options()
    names = {o["name"].replace("-", "_") for o in table if o["distributed"]}
    params = set(inspect.signature(gd.ingest).parameters) - {"client_or_address", "out"}
    assert params - set(_options.JOB_DEFAULTS) == names
    assert all(inspect.signature(gd.ingest).parameters[n].default is None for n in names)
    text = run_cli(["ingest", "--help"]).stdout
    for o in table:
        assert bool(re.search(rf"--{o['name']}(?![\w-])", text)) == o["distributed"], o
        if o["distributed"] and o["default"]:
            assert f"(default: {o['default']})" in " ".join(text.split()), o["name"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--quality", "0"], "--quality must be a whole number from 1 to 100, not '0'"),
        (["--frame-rate", "nan"], "--frame-rate must be a number from 0 to 1000, not 'nan'"),
        (["--seed", "-1"], "--seed must be a whole number >= 0, not '-1'"),
        (["--on-duplicate", "keep"], "--on-duplicate must be error, skip or replace, not 'keep'"),
        (["--label-name", ""], "--label-name is an empty string"),
        (["--local-workers", "0"], "--local-workers must be a whole number >= 1, not '0'"),
        (["--partitions", "0"], "--partitions must be a whole number >= 1, not '0'"),
    ],
)
def test_bad_values_are_refused_with_gulpdb_ingests_words(tmp_path, args, message):
    src = small_frames(tmp_path)
    out = tmp_path / "out"
    result = run_cli(["ingest", str(out), "--frames-dir", src, *args], timeout=60)
    assert result.returncode == 2, result.stderr
    assert error_lines(result.stderr) == [f"gulpdb.distributed: error: {message}"], result.stderr
    assert not out.exists()
    if args[0] not in ("--local-workers", "--partitions"):
        plain = subprocess.run([GULPDB_CLI, "ingest", str(out), "--frames-dir", src, *args],
                               capture_output=True, text=True, timeout=60)
        assert plain.returncode == 2 and f"gulpdb ingest: {message}" in plain.stderr
    with pytest.raises(ValueError, match=message.split(",")[0]):
        gd.ingest(None, str(out), frames_dir=src,
                  **{args[0][2:].replace("-", "_"): args[1]})  # fmt: skip


def test_options_the_job_would_not_use_are_warned_about_as_gulpdb_ingest_does(
    client, tmp_path
):
    src = small_frames(tmp_path)
    out = str(tmp_path / "out")
    gulpdb.Dataset(out, "a", videos_per_chunk=7).close()
    given = dict(seed=3, label_name="template", frame_rate=4, videos_per_chunk=5)
    with pytest.warns(UserWarning) as record:
        report = gd.ingest(client, out, frames_dir=src, partitions=2, quiet=True, **given)
    assert report.videos == 3
    warned = sorted(str(w.message) for w in record if w.category is UserWarning)
    assert warned == sorted([
        "--seed is ignored without --shuffle",
        "--label-name is ignored without --labels",
        "--frame-rate is ignored: it applies to --videos-dir only",
        f"--videos-per-chunk 5 is ignored: {out} is an existing dataset with 7 videos per chunk",
    ])  # fmt: skip
    flags = ["--seed", "3", "--label-name", "template", "--frame-rate", "4",
             "--videos-per-chunk", "5"]  # fmt: skip
    plain = subprocess.run([GULPDB_CLI, "ingest", out, "--frames-dir", src, "--quiet", *flags],
                           capture_output=True, text=True, timeout=60)
    command = run_cli(["ingest", out, "--frames-dir", src, "--local-workers", "1", "-q", *flags])
    assert plain.returncode == 0 and command.returncode == 0, command.stderr

    def warnings_of(stderr, prog):
        return sorted(line[len(prog) + len(": warning: "):] for line in stderr.splitlines()
                      if line.startswith(prog + ": warning: "))  # fmt: skip

    assert warnings_of(plain.stderr, "gulpdb ingest") == warned
    assert warnings_of(command.stderr, "gulpdb.distributed") == warned
    # A new OUT takes the settings of a new dataset that gulpdb ingest takes.
    new = str(tmp_path / "new")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gd.ingest(client, new, frames_dir=src, bytes_per_chunk=1, no_checksums=True,
                  videos_per_chunk=2, partitions=1, quiet=True)  # fmt: skip
    stats = gulpdb.Dataset(new).stats()
    assert (stats.bytes_per_chunk, stats.checksums, stats.videos_per_chunk) == (1, False, 2)
    assert stats.chunks == 3  # a byte limit of 1: a chunk per video


def test_a_file_name_that_is_not_utf8_is_a_bad_source_named_as_gulpdb_ingest_names_it(
    client, tmp_path
):
    videos = os.fsencode(str(tmp_path / "videos"))
    os.makedirs(os.path.join(videos, b"v2"))
    clip = os.path.join(FIXTURES, "videos_src", "100", "100.mp4")
    shutil.copyfile(clip, os.path.join(videos, b"v1.mp4"))
    # A storable id whose one file has a name in another encoding: ingested.
    shutil.copyfile(clip, os.path.join(videos, b"v2", b"clip \xff.mp4"))
    # An id (a file name) that is not UTF-8: skipped and named, escaped.
    shutil.copyfile(clip, os.path.join(videos, b"caf\xe9.mp4"))
    src = os.fsdecode(videos)
    out = str(tmp_path / "out")
    report = gd.ingest(client, out, videos_dir=src, frame_size=16, partitions=2, quiet=True)
    assert report.videos == 2 and len(report.bad) == 1, report
    bad = report.bad[0]
    assert bad.id == "caf\\xe9" and bad.path.endswith("/caf\\xe9.mp4")
    assert "is not valid UTF-8" in bad.message and "caf\\xe9.mp4" in bad.message
    plain_out = str(tmp_path / "plain")
    plain = subprocess.run([GULPDB_CLI, "ingest", plain_out, "--videos-dir", src, "--frame-size",
                            "16", "--quiet"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert f"gulpdb ingest: skipping '{bad.id}': {bad.message}" in plain.stderr.splitlines()
    with gulpdb.Dataset(out) as x, gulpdb.Dataset(plain_out) as y:
        assert x.ids() == y.ids() == ["v1", "v2"]
        assert all(x.read_jpegs(i) == y.read_jpegs(i) for i in x.ids())
    command = run_cli(["ingest", str(tmp_path / "cli"), "--videos-dir", src, "--frame-size", "16",
                       "--local-workers", "1"])  # fmt: skip
    assert command.returncode == 0, command.stderr
    assert f"gulpdb.distributed: skipping '{bad.id}': {bad.message}" in command.stderr
    # --strict stops at it before anything is written.
    strict = str(tmp_path / "strict")
    with pytest.raises(ValueError, match=r"ingest 'caf\\xe9': the id .* is not valid UTF-8"):
        gd.ingest(client, strict, videos_dir=src, strict=True, quiet=True)
    assert not os.path.exists(strict)


def test_a_video_the_plan_cannot_find_is_a_bad_source_named_as_gulpdb_ingest_names_it(
    client, tmp_path
):
    """A video whose folder holds two files, or that is a link to /dev/zero or
    a dangling link, is listed by the driver and read by a worker: the worker
    reports what the listing found (the two files, the link), word for word as
    `gulpdb ingest` does, never "no file was given"; --strict stops at it."""
    videos = tmp_path / "videos"
    (videos / "two").mkdir(parents=True)
    clip = os.path.join(FIXTURES, "videos_src", "100", "100.mp4")
    shutil.copyfile(clip, videos / "v1.mp4")
    shutil.copyfile(clip, videos / "two" / "a.mp4")
    shutil.copyfile(clip, videos / "two" / "b.mp4")
    os.symlink("/dev/zero", videos / "zero.mp4")
    os.symlink(str(videos / "nowhere.mp4"), videos / "dangling.mp4")
    src = str(videos)
    report = gd.ingest(client, str(tmp_path / "out"), videos_dir=src, frame_size=16,
                       partitions=2, quiet=True)
    assert report.videos == 1, report
    bad = {b.id: b.message for b in report.bad}
    assert sorted(bad) == ["dangling", "two", "zero"], bad
    assert bad["two"] == f"find video two in {src}/two: 2 files, expected one video"
    assert bad["zero"] == f"read {src}/zero.mp4: a symbolic link to /dev/zero, a character device"
    assert bad["dangling"] == (f"read {src}/dangling.mp4: a dangling symbolic link (to "
                               f"{src}/nowhere.mp4)")
    assert not any("no file was given" in m for m in bad.values())
    plain = subprocess.run([GULPDB_CLI, "ingest", str(tmp_path / "plain"), "--videos-dir", src,
                            "--frame-size", "16", "--quiet"],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    for id_, message in bad.items():
        assert f"gulpdb ingest: skipping '{id_}': {message}" in plain.stderr.splitlines()
    with pytest.raises(IngestFailed, match=r"'dangling'.*a dangling symbolic link"):
        gd.ingest(client, str(tmp_path / "strict"), videos_dir=src, frame_size=16, strict=True,
                  partitions=1, quiet=True)


def test_a_lookup_error_crosses_to_the_worker_with_its_type_and_bad_codes_are_refused(tmp_path):
    """The lookup error a listed source carries (the plan's JSON) is what the
    worker's ingest raises under --strict, with its type; a code that is not an
    ErrorCode is a ValueError, never a cast error or a wrong type."""
    videos = tmp_path / "videos"
    (videos / "two").mkdir(parents=True)
    clip = os.path.join(FIXTURES, "videos_src", "100", "100.mp4")
    shutil.copyfile(clip, videos / "two" / "a.mp4")
    shutil.copyfile(clip, videos / "two" / "b.mp4")
    listed = _gulpdb.ingest_list_sources({"videos_dir": str(videos)})
    assert [s["id"] for s in listed] == ["two"] and listed[0]["path"] == ""
    listed = json.loads(json.dumps(listed))  # as the plan's files carry them
    options = {"dir": str(tmp_path / "shard"), "strict": True, "quiet": True,
               "catch_signals": False}
    with pytest.raises(ValueError, match=r"^ingest 'two': find video two in .*/two: 2 files"):
        _gulpdb.ingest_run(options, listed)
    for code in ["3", True, -1, 99, None]:
        bad = [dict(listed[0], lookup_error_code=code)]
        with pytest.raises(ValueError, match="lookup_error_code must be an ErrorCode"):
            _gulpdb.ingest_run(options, bad)
