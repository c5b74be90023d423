"""What the parts of bench/run.py share: scales, constants and small helpers."""

import dataclasses
import os
import platform
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

PYTHON = "/usr/bin/python3"  # has numpy and Pillow on Debian; the PATH one may not
BASELINES = os.path.join(HERE, "baselines.py")
CLIPS_BENCH = os.path.join(HERE, "clips_bench.py")
SAMPLER_BENCH = os.path.join(HERE, "sampler_bench.py")
COCKATOO = "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4"
FLUSH_SYSCALLS = "fdatasync,fsync,msync"


@dataclasses.dataclass
class Scale:
    """How big each benchmark runs."""

    open_videos: list            # dataset sizes for the open benchmark
    open_runs: int               # fresh-process runs per size, gulpdb
    open_baseline_runs: int      # ... and the .gmeta loader
    lookups: int
    lookup_repeat: int
    realistic_videos: int        # videos of 30-60 real frames
    random_clips: int
    reps: int                    # repetitions of in-process throughput passes
    decode_clips: int
    decode_reps: int
    cold_clips: int
    cold_runs: int
    append_commits: list         # per batch size 1, 10, 100, 1000
    append_strace_commits: list  # (fewer, more) commits per batch size
    small_commits_videos: int    # one-video commits of small_commits_bench
    small_commits_strace_videos: tuple  # (fewer, more) commits counted under strace
    gulpio_gmeta_mb: float
    interop_runs: int            # gulpdb import and export runs
    interop_baseline_runs: int   # Python json.load runs (the first also json.dumps)
    index_size_videos: int
    gmeta_reader_mb: int
    gmeta_reader_repeat: int
    clips_videos: int = 24           # DataLoader clips benchmark: videos, clips per epoch,
    clips_count: int = 192           # timed epochs
    clips_reps: int = 3
    # Remote datasets (s3rver on this machine): batches of REMOTE_BATCH clips,
    # clips read one at a time, repetitions, and dataset sizes for opening.
    remote_batches: int = 5
    remote_sequential: int = 64
    remote_reps: int = 3
    remote_python_batches: int = 2
    remote_open_videos: tuple = (1000, 10000, 100000)
    query_videos: int = 2000     # dataset size of the meta query benchmark
    query_repeat: int = 1
    distributed_videos: int = 48  # H.264 clips ingested per distributed-ingest run
    sampler_items: int = 10**6    # VideoSampler resume: items of the epoch, repetitions
    sampler_reps: int = 5
    distributed_runs: int = 3


SCALES = {
    "smoke": Scale(
        open_videos=[100, 1000], open_runs=2, open_baseline_runs=1, lookups=2000,
        lookup_repeat=1, realistic_videos=12, random_clips=50, reps=1, decode_clips=4, decode_reps=1,
        cold_clips=8, cold_runs=1, append_commits=[3, 2, 1, 1],
        append_strace_commits=[(1, 3), (1, 2), (1, 2), (1, 2)], small_commits_videos=100,
        small_commits_strace_videos=(5, 15), gulpio_gmeta_mb=1,
        interop_runs=1, interop_baseline_runs=1, index_size_videos=300, gmeta_reader_mb=1, gmeta_reader_repeat=1,
        clips_videos=6, clips_count=16, clips_reps=1,
        remote_batches=1, remote_sequential=8, remote_reps=1, remote_python_batches=1,
        remote_open_videos=(100,), query_videos=2000, query_repeat=1,
        distributed_videos=4, distributed_runs=1),
    "quick": Scale(
        open_videos=[1000, 10000, 100000], open_runs=7, open_baseline_runs=3, lookups=100000,
        lookup_repeat=5, realistic_videos=200, random_clips=2000, reps=5, decode_clips=30,
        decode_reps=3,
        cold_clips=100, cold_runs=3, append_commits=[30, 20, 5, 2],
        append_strace_commits=[(5, 15), (2, 6), (1, 3), (1, 2)], small_commits_videos=3000,
        small_commits_strace_videos=(100, 400), gulpio_gmeta_mb=40,
        interop_runs=3, interop_baseline_runs=3, index_size_videos=10000, gmeta_reader_mb=32, gmeta_reader_repeat=2,
        clips_videos=24, clips_count=192, clips_reps=3, query_videos=100000, query_repeat=5),
    "full": Scale(
        open_videos=[1000, 10000, 100000, 1000000], open_runs=9, open_baseline_runs=3,
        lookups=200000, lookup_repeat=7, realistic_videos=2000, random_clips=20000, reps=7,
        decode_clips=150, decode_reps=5, cold_clips=400, cold_runs=5, append_commits=[200, 100, 20, 5],
        append_strace_commits=[(10, 60), (5, 25), (2, 8), (1, 3)], small_commits_videos=12000,
        small_commits_strace_videos=(200, 1000), gulpio_gmeta_mb=1100,
        interop_runs=3, interop_baseline_runs=1, index_size_videos=100000, gmeta_reader_mb=512,
        gmeta_reader_repeat=3, clips_videos=60, clips_count=480, clips_reps=5,
        remote_batches=10, remote_sequential=128, remote_reps=5,
        remote_python_batches=3, remote_open_videos=(1000, 10000, 100000, 1000000),
        query_videos=1000000, query_repeat=5, distributed_videos=96, distributed_runs=5),
}

BATCH_SIZES = [1, 10, 100, 1000]
CLIP_FRAMES = 16
REMOTE_BATCH = 64            # clips per read_batch, as a DataLoader batch
REMOTE_CONNECTIONS = 16      # gulpdb's default GULPDB_S3_MAX_CONNECTIONS; the baselines get as many
REMOTE_LATENCY_MS = 20       # per GET, emulated by the S3 proxy: S3's first-byte latency is 10-50 ms


def log(message):
    stamp = time.strftime("%H:%M:%S")
    print("[bench %s] %s" % (stamp, message), file=sys.stderr, flush=True)


def summary(values):
    """median/min/max of a list of numbers (the median of an even count is the mean of the two)."""
    v = sorted(values)
    n = len(v)
    if n == 0:
        return None
    median = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return {"median": median, "min": v[0], "max": v[-1], "count": n}


def from_stats(stats):
    """The summary of a C++ program's Json::Stats object."""
    return {k: stats[k] for k in ("median", "min", "max", "count")}


def rm(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


ALL_BENCHMARKS = ["open", "lookup", "crc32c", "random", "scan", "decode", "cold", "append",
                  "small_commits", "interop", "index_size", "gmeta_reader", "clips", "remote",
                  "query", "query_lang", "distributed", "sampler", "h264"]


def glob_any(pattern):
    import glob
    return bool(glob.glob(pattern))


def relative(path):
    """path relative to the repository when it is inside it."""
    return os.path.relpath(path, REPO) if path.startswith(REPO + os.sep) else path


def warm_files(path):
    """Reads every file below path once, so that it sits in the page cache."""
    for root, _, names in os.walk(path):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 20):
                    pass


def point(value):
    """A single measurement as a summary (median = min = max)."""
    return {"median": value, "min": value, "max": value, "count": 1}


def fmt_bytes(n):
    """1.2 MB, 34 kB, 512 B."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n


def fmt_count(n):
    """10^k for exact powers of ten, else the number with thousands separators."""
    k = len(str(n)) - 1
    return "10^%d" % k if n == 10 ** k and n >= 1000 else "{:,}".format(n)


def mdb_stat(index_dir):
    """Pages used by each LMDB database (mdb_stat -a), when lmdb-utils is installed."""
    if shutil.which("mdb_stat") is None:
        return None
    try:
        out = subprocess.run(["mdb_stat", "-a", index_dir], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    dbs, name = {}, "main"
    for line in out.splitlines():
        m = re.match(r"Status of (\S+)", line.strip())
        if m:
            name = m.group(1)
            dbs[name] = {}
            continue
        m = re.match(r"\s*(Page size|Tree depth|Branch pages|Leaf pages|Overflow pages|Entries):"
                     r"\s*(\d+)", line)
        if m:
            dbs.setdefault(name, {})[m.group(1).lower().replace(" ", "_")] = int(m.group(2))
    return dbs


def parse_strace(lines):
    """Counts durable writes in `strace -f -o` output (see Runner.strace_sync_count)."""
    flush_calls = set(FLUSH_SYSCALLS.split(",")) | {"sync_file_range"}
    write_calls = {"write", "writev", "pwrite64", "pwritev", "pwritev2"}
    call = re.compile(r"^(\d+)\s+(\w+)\((.*)$")
    resumed = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")
    result = re.compile(r"=\s*(-?\d+)")
    dsync_fds = set()
    pending_open = {}  # pid -> True if the unfinished open asked for O_DSYNC/O_SYNC
    counts = {"flush": 0, "dsync_writes": 0}

    def opened(pid, is_dsync, rest):
        m = result.search(rest.rsplit(")", 1)[-1]) if ")" in rest else None
        if m and int(m.group(1)) >= 0:
            fd = int(m.group(1))
            (dsync_fds.add if is_dsync else dsync_fds.discard)(fd)

    for line in lines:
        m = resumed.match(line)
        if m:
            pid, name, rest = m.groups()
            if name in ("openat", "open", "creat") and pid in pending_open:
                opened(pid, pending_open.pop(pid), ")" + rest)
            continue
        m = call.match(line)
        if not m:
            continue
        pid, name, rest = m.groups()
        if name in ("openat", "open", "creat"):
            is_dsync = "O_DSYNC" in rest or "O_SYNC" in rest
            if "<unfinished" in rest:
                pending_open[pid] = is_dsync
            else:
                opened(pid, is_dsync, rest)
        elif name == "close":
            fd = re.match(r"(\d+)", rest)
            if fd:
                dsync_fds.discard(int(fd.group(1)))
        elif name in flush_calls:
            counts["flush"] += 1
        elif name in write_calls:
            fd = re.match(r"(\d+)", rest)
            if fd and int(fd.group(1)) in dsync_fds:
                counts["dsync_writes"] += 1
    counts["total"] = counts["flush"] + counts["dsync_writes"]
    return counts


def git_commit():
    try:
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               check=True).stdout.strip()
        return commit + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def host_info():
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gb = None
    try:
        with open("/proc/meminfo") as f:
            mem_gb = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb,
            "kernel": platform.release(), "load_average_at_end": list(os.getloadavg())}
