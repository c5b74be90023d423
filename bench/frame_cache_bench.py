#!/usr/bin/python3
"""The node-level frame cache and read-ahead (docs/frame_cache.md), read the
way training reads: s3rver on loopback behind the test proxy
(tests/harness/s3_proxy.py), which adds --latency-ms to every GET and HEAD, limits
the bandwidth of all answers together to --mbps, and counts every byte; a
`gulpdb.torch.VideoDataset` iterated by a `VideoSampler` through a DataLoader
with --workers workers and batches of --batch clips, every clip decoded.

Measured in one run, in interleaved rounds (medians over --rounds):

  epoch 2        a cache at least the dataset's size: epoch 1 from a cold
                 cache, then epoch 2, against the same epoch read from the
                 local copy (clips/s); the bytes from the store of each epoch;
  cache 25%      a bound of a quarter of the dataset: bytes from the store
                 per epoch (the second) with the global shuffle and with
                 shuffle="blocks";
  read-ahead     epoch 1 from a cold cache with a simulated training step
                 (--step-ms of sleep per batch): the time the loop waits for
                 each batch, with prefetch_batches=0 and --prefetch; and
                 epoch 1 without a step, read-ahead on: the bandwidth reached
                 against the limit, with the CPU s3rver and the proxy took;
  two processes  two readers of the same clips at once on one cold cache:
                 bytes from the store against the dataset's;
  baselines      the bare libcurl multi loop over the same byte ranges
                 (bench/remote_read_bench clips: every epoch fetches every
                 byte again; it does not decode), and MosaicML-style
                 whole-shard caching (implemented here: a chunk object is
                 downloaded whole on first touch, under the same bound, the
                 least recently used shards deleted past it): bytes per epoch
                 and clips/s.

With --part blocks, instead: epochs 1 and 2 from a cold cache with blocks of
256 KiB, 1 MiB and 4 MiB and with exact ranges (the cache off), global and
"blocks" shuffles: clips/s and bytes from the store.

With --part readahead, instead: read-ahead with the network alone. Clips
cheap to decode (960 clips of 2 frames, 64 KiB blocks, so that reading the
local copy waits about nothing): epoch 1's wait per batch with a --step-ms
step, read-ahead off and on against the local copy, at each latency of
--ra-latencies; then the link's use with read-ahead on and no step under each
limit of --ra-mbps, measured from the proxy's byte count, sampled, over the
interval while there was something to fetch, with the CPU s3rver and the
proxy took.

Run alone:
    bench/frame_cache_bench.py --bin-dir build/release [--videos 480] [--rounds 3]
    bench/frame_cache_bench.py --part blocks --bin-dir build/release
    bench/frame_cache_bench.py --part readahead --bin-dir build/release
    bench/frame_cache_bench.py --smoke            (tiny; what CTest runs)
Writes --out/latest.json and latest.md (--part blocks: blocks.json and
blocks.md, --part readahead: readahead.json and readahead.md; default --out
bench/results/frame_cache/).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import shutil
import threading
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))

import s3_proxy  # noqa: E402  tests/harness/s3_proxy.py: s3rver and the proxy, bounded start/stop

PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
BUCKET = "gulpdb-frames"
KEY = "S3RVER"


# ---- the dataset -------------------------------------------------------------------------


def make_dataset(path: str, videos: int, frames: int, height: int, width: int) -> None:
    import numpy as np
    import gulpdb

    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:height, 0:width]
    with gulpdb.Dataset(path, "x", videos_per_chunk=40) as ds, ds.writer() as w:
        for v in range(videos):
            clip = np.empty((frames, height, width, 3), np.uint8)
            a, b, c = rng.integers(0, 255, 3)
            for f in range(frames):
                noise = rng.integers(0, 24, (height, width), dtype=np.uint8)
                clip[f, ..., 0] = (x + a + 3 * f) % 256
                clip[f, ..., 1] = ((y + b) % 256) ^ noise
                clip[f, ..., 2] = (x // 2 + y // 2 + c) % 256
            w.append(f"v{v:06d}", clip, {"label": v % 10})


def frame_bytes(path: str) -> int:
    import gulpdb

    with gulpdb.Dataset(path) as ds:
        return sum(len(b) for i in ds.ids() for b in ds.read_jpegs(i))


# ---- one reader (a child process) --------------------------------------------------------


class ShardCache:
    """MosaicML-style whole-shard caching: a chunk object is downloaded whole
    on first touch into `dir` (one download per node: a file lock per shard),
    the least recently used shards deleted past `bound`. Picklable."""

    def __init__(self, endpoint, prefix, dir, bound, layout, counter):
        self.endpoint, self.prefix, self.dir, self.bound = endpoint, prefix, dir, bound
        self.layout = layout  # id -> (chunk file name, [(offset, length), ...])
        self.ids = sorted(layout)
        self.counter = counter  # a file: downloaded bytes, appended
        self._s3 = None

    def __len__(self):
        return len(self.ids)

    def _client(self):
        if self._s3 is None:
            import boto3
            from botocore.config import Config

            self._s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY,
                                    aws_secret_access_key=KEY, region_name="us-east-1",
                                    config=Config(s3={"addressing_style": "path"}))
        return self._s3

    def _evict(self, keep):
        # One pass at a time; a shard another reader has open stays readable.
        with open(os.path.join(self.dir, "evict.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            shards = []
            for name in os.listdir(self.dir):
                if name.endswith(".gulp") and name != keep:
                    try:
                        st = os.stat(os.path.join(self.dir, name))
                    except FileNotFoundError:
                        continue
                    shards.append((st.st_mtime_ns, st.st_size, name))
            total = sum(s[1] for s in shards) + os.path.getsize(os.path.join(self.dir, keep))
            for _, size, name in sorted(shards):
                if total <= self.bound:
                    break
                os.unlink(os.path.join(self.dir, name))
                total -= size

    def shard(self, name):
        """The shard `name`, open (downloaded first if it is not here)."""
        path = os.path.join(self.dir, name)
        with open(path + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.exists(path):
                body = self._client().get_object(Bucket=BUCKET, Key=f"{self.prefix}/{name}")
                data = body["Body"].read()
                with open(path + ".tmp", "wb") as f:
                    f.write(data)
                os.rename(path + ".tmp", path)
                with open(self.counter, "a") as f:
                    f.write(f"{len(data)}\n")
                self._evict(name)
            os.utime(path)
            return os.open(path, os.O_RDONLY)

    def __getitem__(self, index):
        import numpy as np
        import torch
        import gulpdb

        name, frames = self.layout[self.ids[index]]
        fd = self.shard(name)
        try:
            clip = [gulpdb.decode_jpeg(os.pread(fd, n, off)) for off, n in frames]
        finally:
            os.close(fd)
        return torch.from_numpy(np.stack(clip))


def shard_layout(path):
    """id -> (chunk file, frames' (offset, length)) from the local copy's GulpIO view."""
    import gulpdb

    gd = gulpdb.GulpDirectory(path)
    files = {n: os.path.basename(c.data_file_path) for n, c in gd.chunk_objs_lookup.items()}
    out = {}
    with gulpdb.Dataset(path) as ds:
        ids = ds.ids()
    for id_ in ids:
        info = gd.merged_meta_dict[id_]["frame_info"]
        out[id_] = (files[gd.chunk_lookup[id_]], [(o, total - pad) for o, pad, total in info])
    return out


def run_reader(args) -> None:
    """One reader: --epochs epochs; prints one JSON line per epoch."""
    import torch
    import gulpdb
    import gulpdb.torch as gt

    control = s3_proxy.ProxyControl(args.control_port) if args.control_port else None
    counter = os.path.join(args.cache, "shard-downloads")
    if args.mode == "shards":
        os.makedirs(args.cache, exist_ok=True)
        data = ShardCache(args.endpoint, args.prefix, args.cache, args.bound,
                          shard_layout(args.source), counter)
    else:
        data = gt.VideoDataset(args.source, label=None, prefetch_batches=args.prefetch)
    blocks = {}
    if args.shuffle == "blocks" and args.order_block:
        # Blocks of the order as a large dataset's partitions make them: a
        # window of them is a small part of the dataset.
        blocks = {"blocks": list(range(0, len(data), args.order_block)),
                  "window": 2 * args.order_block}
    sampler = gt.VideoSampler(data, num_replicas=1, rank=0, shuffle=args.shuffle, seed=args.seed,
                              **blocks)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, sampler=sampler,
                                         num_workers=args.workers)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        before = control.stats()["body_bytes_sent"] if control else 0
        clips = 0
        waits = []
        t0 = time.perf_counter()
        t_first, at_first = t0, before
        it = iter(sampler.track(loader))
        while True:
            w0 = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                break
            waits.append(time.perf_counter() - w0)
            if len(waits) == 1:  # the steady state starts: workers up, dataset open
                t_first = time.perf_counter()
                at_first = control.stats()["body_bytes_sent"] if control else 0
            clips += len(batch)
            if args.step_ms:
                time.sleep(args.step_ms / 1000)
        seconds = time.perf_counter() - t0
        after = control.stats()["body_bytes_sent"] if control else 0
        usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                     resource.RUSAGE_CHILDREN)]
        out = {"epoch": epoch + 1, "clips": clips, "seconds": seconds,
               "clips_per_s": clips / seconds, "store_bytes": after - before,
               # Bytes per second from the first batch on (the store's steady rate).
               "steady_bytes_per_s": (after - at_first) / (time.perf_counter() - t_first),
               # The first batch waits for the workers to start, with or
               # without read-ahead: the steady state is the rest.
               "wait_s_per_batch": statistics.median(waits[1:]) if len(waits) > 1 else 0.0,
               "wait_s_mean": statistics.mean(waits[1:]) if len(waits) > 1 else 0.0,
               # CPU seconds so far of this process and of its finished workers.
               "cpu_s": sum(u.ru_utime + u.ru_stime for u in usage)}
        if args.mode == "gulpdb" and args.source.startswith("s3://"):
            stats = gulpdb.frame_cache_stats()
            out["cache"] = {k: stats[k] for k in ("hits", "misses", "prefetched",
                                                   "bytes_from_store", "evictions", "bytes")}
        print(json.dumps(out), flush=True)


# ---- the driver ---------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` and its waited-for children."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


class Bench:
    def __init__(self, args, work, s3rver, proxy):
        self.args, self.work, self.s3rver, self.proxy = args, work, s3rver, proxy
        self.env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy.port}",
                        AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=KEY,
                        AWS_REGION="us-east-1", OMP_NUM_THREADS="1")
        self.env.pop("GULPDB_TEST_BUG", None)
        self.runs = 0

    def reader(self, source, cache, bound, *, epochs=1, shuffle="true", prefetch=0, step_ms=0,
               mode="gulpdb", background=False, block=1 << 20):
        self.runs += 1
        env = dict(self.env, GULPDB_CACHE=cache, GULPDB_FRAME_CACHE_BYTES=str(bound),
                   GULPDB_FRAME_CACHE_BLOCK=str(block))
        cmd = [PYTHON, os.path.abspath(__file__), "reader", "--source", source, "--cache", cache,
               "--bound", str(bound), "--epochs", str(epochs), "--shuffle", shuffle,
               "--prefetch", str(prefetch), "--step-ms", str(step_ms), "--mode", mode,
               "--workers", str(self.args.workers), "--batch", str(self.args.batch),
               "--control-port", str(self.proxy.control_port), "--seed", str(self.runs),
               "--endpoint", env["AWS_ENDPOINT_URL"], "--prefix", self.args.prefix,
               "--order-block", str(self.args.order_block)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        if background:
            return proc
        return self.finish(proc)

    @staticmethod
    def finish(proc):
        out, err = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            raise SystemExit(f"reader failed ({proc.returncode}): {err[-3000:]}")
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]

    def fresh(self, name):
        path = os.path.join(self.work, f"{name}-{self.runs}")
        shutil.rmtree(path, ignore_errors=True)
        return path


def run(args) -> dict:
    work = tempfile.mkdtemp(prefix="frame_cache_bench.")
    try:
        local = os.path.join(work, "local")
        print(f"making {args.videos} videos of {args.frames} frames ...", flush=True)
        make_dataset(local, args.videos, args.frames, args.height, args.width)
        data = frame_bytes(local)
        chunk_files = sum(os.path.getsize(os.path.join(local, n)) for n in os.listdir(local)
                          if n.endswith(".gulp"))
        with s3_proxy.s3rver_behind_proxy(BUCKET, {KEY: KEY}) as (s3rver, proxy):
            if args.part == "blocks":
                return measure_blocks(args, work, local, data, chunk_files, s3rver, proxy)
            if args.part == "readahead":
                return measure_read_ahead(args, work, local, data, chunk_files, s3rver, proxy)
            return measure(args, work, local, data, chunk_files, s3rver, proxy)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args, work, local, data, chunk_files, s3rver, proxy) -> dict:
    import gulpdb

    b = Bench(args, work, s3rver, proxy)
    os.environ.update({k: b.env[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                                             "AWS_SECRET_ACCESS_KEY", "AWS_REGION")})
    url = f"s3://{BUCKET}/{args.prefix}"
    gulpdb.push(local, url)
    limit = args.mbps * 1e6

    def reset_proxy():
        # Its log and faults start again; the bandwidth limit stays.
        proxy.reset()
        for method in ("GET", "HEAD"):
            proxy.add_fault(kind="delay", delay_ms=args.latency_ms, fraction=1.0, method=method)

    reset_proxy()
    proxy.set_bandwidth(limit)
    roomy = 2 * chunk_files + (64 << 20)
    quarter = max(chunk_files // 4, 1 << 20)
    rows = {k: [] for k in ("local", "cold", "warm", "warm_x_local", "cold_bytes", "warm_bytes",
                            "q_global", "q_blocks", "wait_off", "wait_on", "wait_local",
                            "bandwidth", "bandwidth_50",
                            "server_cpu", "two_bytes", "shard_cold", "shard_warm",
                            "shard_cold_bytes", "shard_warm_bytes", "shard_q_bytes")}
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds} at {time.strftime('%H:%M:%S')}", flush=True)
        # Epoch 2 from a cache at least the dataset's size, against the local copy.
        cold, warm = b.reader(url, b.fresh("cache"), roomy, epochs=2)
        (loc,) = b.reader(local, b.fresh("cache"), roomy)
        rows["cold"].append(cold["clips_per_s"])
        rows["warm"].append(warm["clips_per_s"])
        rows["local"].append(loc["clips_per_s"])
        rows["warm_x_local"].append(warm["clips_per_s"] / loc["clips_per_s"])
        rows["cold_bytes"].append(cold["store_bytes"])
        rows["warm_bytes"].append(warm["store_bytes"])
        # MosaicML-style whole shards, the same bound.
        s_cold, s_warm = b.reader(local, b.fresh("shards"), roomy, epochs=2, mode="shards")
        rows["shard_cold"].append(s_cold["clips_per_s"])
        rows["shard_warm"].append(s_warm["clips_per_s"])
        rows["shard_cold_bytes"].append(s_cold["store_bytes"])
        rows["shard_warm_bytes"].append(s_warm["store_bytes"])
        # A quarter of the dataset: the second epoch's store bytes.
        for shuffle, key in (("true", "q_global"), ("blocks", "q_blocks")):
            _, second = b.reader(url, b.fresh("cache"), quarter, epochs=2, shuffle=shuffle)
            rows[key].append(second["store_bytes"])
        _, s_second = b.reader(local, b.fresh("shards"), quarter, epochs=2, mode="shards")
        rows["shard_q_bytes"].append(s_second["store_bytes"])
        # Read-ahead: epoch 1 with a training step, off then on.
        (off,) = b.reader(url, b.fresh("cache"), roomy, step_ms=args.step_ms)
        (on,) = b.reader(url, b.fresh("cache"), roomy, step_ms=args.step_ms,
                         prefetch=args.prefetch)
        (floor,) = b.reader(local, b.fresh("cache"), roomy, step_ms=args.step_ms)
        rows["wait_off"].append(off["wait_s_mean"])
        rows["wait_on"].append(on["wait_s_mean"])
        rows["wait_local"].append(floor["wait_s_mean"])
        # Bandwidth, read-ahead on, no step: under the limit of the rest, and
        # under one that binds; the CPU the servers took meanwhile.
        (fast,) = b.reader(url, b.fresh("cache"), roomy, prefetch=args.prefetch)
        rows["bandwidth_50"].append(fast["steady_bytes_per_s"] / limit)
        proxy.set_bandwidth(args.bind_mbps * 1e6)
        cpu0 = cpu_seconds(s3rver.proc.pid) + cpu_seconds(proxy.proc.pid)
        (bound,) = b.reader(url, b.fresh("cache"), roomy, prefetch=args.prefetch)
        cpu = cpu_seconds(s3rver.proc.pid) + cpu_seconds(proxy.proc.pid) - cpu0
        proxy.set_bandwidth(limit)
        rows["bandwidth"].append(bound["steady_bytes_per_s"] / (args.bind_mbps * 1e6))
        rows["server_cpu"].append(cpu / bound["seconds"])
        # Two processes, the same clips, one cold cache.
        # Bytes of chunk objects only (the proxy's log), against the chunk files.
        cache = b.fresh("cache")
        reset_proxy()
        procs = [b.reader(url, cache, roomy, background=True) for _ in range(2)]
        for p in procs:
            b.finish(p)
        rows["two_bytes"].append(sum(e["response_bytes"] for e in proxy.log()
                                     if e["method"] == "GET" and "/data_" in e["path"]))
    curl = bare_curl(args, local, proxy)
    med = {k: statistics.median(v) for k, v in rows.items() if v}
    return {
        "params": {"videos": args.videos, "frames": args.frames, "size": f"{args.height}x{args.width}",
                   "frame_bytes": data, "chunk_bytes": chunk_files, "rounds": args.rounds,
                   "latency_ms": args.latency_ms, "mbps": args.mbps, "workers": args.workers,
                   "batch": args.batch, "step_ms": args.step_ms, "prefetch_batches": args.prefetch,
                   "roomy_bound": roomy, "quarter_bound": quarter, "cpus": os.cpu_count(),
                   "order_block": args.order_block, "bind_mbps": args.bind_mbps},
        "rounds": rows, "median": med, "bare_curl": curl,
    }


def measure_blocks(args, work, local, data, chunk_files, s3rver, proxy) -> dict:
    """Epoch 1 and 2 from a cold cache at the dataset's size, global shuffle and
    shuffle="blocks", with blocks of 256 KiB, 1 MiB and 4 MiB, and with exact
    ranges (the cache off: every epoch reads the clips' bytes)."""
    import gulpdb

    b = Bench(args, work, s3rver, proxy)
    os.environ.update({k: b.env[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                                             "AWS_SECRET_ACCESS_KEY", "AWS_REGION")})
    url = f"s3://{BUCKET}/{args.prefix}"
    gulpdb.push(local, url)
    for method in ("GET", "HEAD"):
        proxy.add_fault(kind="delay", delay_ms=args.latency_ms, fraction=1.0, method=method)
    proxy.set_bandwidth(args.mbps * 1e6)
    roomy = 2 * chunk_files + (64 << 20)
    settings = [("exact ranges", 0, 1 << 20), ("256 KiB", roomy, 256 << 10),
                ("1 MiB", roomy, 1 << 20), ("4 MiB", roomy, 4 << 20)]
    rows = {}
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}", flush=True)
        for name, bound, block in settings:
            for shuffle in ("true", "blocks"):
                first, second = b.reader(url, b.fresh("cache"), bound, epochs=2,
                                         shuffle=shuffle, block=block)
                row = rows.setdefault(f"{name}, {'global' if shuffle == 'true' else 'blocks'}",
                                      {"e1_cps": [], "e1_bytes": [], "e2_cps": []})
                row["e1_cps"].append(first["clips_per_s"])
                row["e1_bytes"].append(first["store_bytes"])
                row["e2_cps"].append(second["clips_per_s"])
    med = {k: {m: statistics.median(v) for m, v in row.items()} for k, row in rows.items()}
    return {"params": {"videos": args.videos, "frames": args.frames, "frame_bytes": data,
                       "chunk_bytes": chunk_files, "rounds": args.rounds,
                       "latency_ms": args.latency_ms, "mbps": args.mbps,
                       "workers": args.workers, "batch": args.batch, "cpus": os.cpu_count()},
            "rounds": rows, "median": med}


# ---- read-ahead, the network alone ------------------------------------------------------


class LinkMeter:
    """Samples the proxy's body bytes sent every `period` s in a thread: the bytes
    and the time between the first sample that saw bytes move and the last."""

    def __init__(self, proxy, period=0.02):
        self.proxy, self.period = proxy, period
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), self.proxy.stats()["body_bytes_sent"]))
            self._stop.wait(self.period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)
        self.samples.append((time.perf_counter(), self.proxy.stats()["body_bytes_sent"]))

    def busy_rate(self):
        """(bytes, seconds) from the sample before the first move to the first
        sample after the last: the interval while there was something to fetch."""
        s = self.samples
        moved = [i for i in range(1, len(s)) if s[i][1] > s[i - 1][1]]
        if not moved:
            return 0, 0.0
        first, last = moved[0] - 1, moved[-1]
        return s[last][1] - s[first][1], s[last][0] - s[first][0]


def measure_read_ahead(args, work, local, data, chunk_files, s3rver, proxy) -> dict:
    """Epoch 1 from a cold cache, clips cheap to decode (--frames per clip), so
    that reading the local copy waits about nothing and the wait isolates the
    network: the loop's wait per batch with a --step-ms step, read-ahead off and
    on, against the local copy, at each of --ra-latencies; then the link's use
    with read-ahead on and no step, under limits that bind (--ra-mbps), over the
    interval while there was something to fetch (the proxy's own byte count,
    sampled), with the CPU s3rver and the proxy took meanwhile."""
    import gulpdb

    b = Bench(args, work, s3rver, proxy)
    os.environ.update({k: b.env[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                                             "AWS_SECRET_ACCESS_KEY", "AWS_REGION")})
    url = f"s3://{BUCKET}/{args.prefix}"
    gulpdb.push(local, url)
    roomy = 2 * chunk_files + (64 << 20)
    latencies = [int(v) for v in args.ra_latencies.split(",")]
    limits = [float(v) for v in args.ra_mbps.split(",")]
    ahead = [int(v) for v in args.ra_prefetch.split(",")]

    def set_link(latency_ms, mbps):
        proxy.reset()
        for method in ("GET", "HEAD"):
            proxy.add_fault(kind="delay", delay_ms=latency_ms, fraction=1.0, method=method)
        proxy.set_bandwidth(mbps * 1e6)

    rows, loads = {}, []

    def add(key, value):
        rows.setdefault(key, []).append(value)

    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        print(f"round {r + 1}/{args.rounds} at {time.strftime('%H:%M:%S')}, "
              f"load {loads[-1]:.1f}", flush=True)
        for latency in latencies:
            set_link(latency, args.mbps)
            (floor,) = b.reader(local, b.fresh("cache"), roomy, step_ms=args.step_ms,
                                block=args.block)
            (off,) = b.reader(url, b.fresh("cache"), roomy, step_ms=args.step_ms,
                              block=args.block)
            runs = [("local", floor), ("off", off)]
            for k in ahead:
                (on,) = b.reader(url, b.fresh("cache"), roomy, step_ms=args.step_ms,
                                 prefetch=k, block=args.block)
                runs.append((f"on{k}", on))
            for name, run in runs:
                add(f"wait_{name}_{latency}", run["wait_s_mean"])
                add(f"cpu_{name}_{latency}", run["cpu_s"])
        for mbps in limits:
            set_link(args.latency_ms, mbps)
            for name, prefetch in (("off", 0), ("on", args.prefetch)):
                cpu0 = cpu_seconds(s3rver.proc.pid) + cpu_seconds(proxy.proc.pid)
                with LinkMeter(proxy) as meter:
                    (run,) = b.reader(url, b.fresh("cache"), roomy, prefetch=prefetch,
                                      block=args.block)
                cpu = cpu_seconds(s3rver.proc.pid) + cpu_seconds(proxy.proc.pid) - cpu0
                sent, seconds = meter.busy_rate()
                key = f"{name}_{mbps:g}"
                add(f"link_{key}", sent / seconds / (mbps * 1e6) if seconds else 0.0)
                add(f"link_s_{key}", seconds)
                add(f"link_bytes_{key}", sent)
                add(f"server_cpu_{key}", cpu / run["seconds"])
                add(f"epoch_link_{key}", run["store_bytes"] / run["seconds"] / (mbps * 1e6))
    med = {k: statistics.median(v) for k, v in rows.items()}
    return {"params": {"videos": args.videos, "frames": args.frames,
                       "size": f"{args.height}x{args.width}", "frame_bytes": data,
                       "chunk_bytes": chunk_files, "rounds": args.rounds,
                       "latencies_ms": latencies, "latency_ms": args.latency_ms,
                       "mbps": args.mbps, "limits_mbps": limits, "workers": args.workers,
                       "batch": args.batch, "step_ms": args.step_ms,
                       "prefetch_batches": args.prefetch, "ra_prefetch": ahead,
                       "block": args.block,
                       "cpus": os.cpu_count(), "load_avg": loads},
            "rounds": rows, "median": med}


def report_read_ahead(result: dict) -> str:
    p, m = result["params"], result["median"]
    step = p["step_ms"]
    ks = p["ra_prefetch"]
    lines = [
        "# Read-ahead: the network alone", "",
        f"{p['videos']} clips of {p['frames']} frames ({p['size']}, "
        f"{p['frame_bytes'] / 1e6:.1f} MB of frames), blocks of {p['block'] // 1024} KiB, a cache "
        f"the dataset's size, cold; DataLoader with {p['workers']} workers, batches of "
        f"{p['batch']}, a {step} ms step, global shuffle; medians of {p['rounds']} interleaved "
        f"rounds on {p['cpus']} cores (load average {', '.join(f'{v:.1f}' for v in p['load_avg'])}).",
        "",
        "| link | the loop's wait per batch: local copy / read-ahead off / "
        + " / ".join(f"prefetch_batches={k}" for k in ks)
        + " (share of the step) | CPU s of the reader and its workers: local / off / "
        + " / ".join(f"{k}" for k in ks) + " |",
        "|---|---|---|"]
    names = ["local", "off"] + [f"on{k}" for k in ks]
    for lat in p["latencies_ms"]:
        w = [m[f"wait_{k}_{lat}"] * 1000 for k in names]
        lines.append(
            f"| {lat} ms per GET, {p['mbps']:g} MB/s | "
            + " / ".join(f"{v:.1f}" for v in w) + " ms ("
            + " / ".join(f"{v / step:.0%}" for v in w) + ") | "
            + " / ".join(f"{m[f'cpu_{k}_{lat}']:.1f}" for k in names) + " |")
    lines += ["", "| limit, no step | read-ahead | store bytes/s while there was something to "
              "fetch / the limit | over the whole epoch | the interval | s3rver + proxy CPU |",
              "|---|---|---|---|---|---|"]
    for mbps in p["limits_mbps"]:
        for name in ("off", "on"):
            k = f"{name}_{mbps:g}"
            lines.append(
                f"| {mbps:g} MB/s, {p['latency_ms']} ms per GET | {name} | "
                f"{m[f'link_{k}']:.2f}× | {m[f'epoch_link_{k}']:.2f}× | {m[f'link_s_{k}']:.2f} s, "
                f"{m[f'link_bytes_{k}'] / 1e6:.1f} MB | {m[f'server_cpu_{k}']:.2f} of a CPU |")
    return "\n".join(lines) + "\n"


def report_blocks(result: dict) -> str:
    p = result["params"]
    lines = ["# Frame cache: block size", "",
             f"{p['videos']} clips of {p['frames']} frames ({p['frame_bytes'] / 1e6:.1f} MB of "
             f"frames), {p['latency_ms']} ms per GET, {p['mbps']} MB/s, DataLoader with "
             f"{p['workers']} workers; medians of {p['rounds']} rounds.", "",
             "| blocks, shuffle | epoch 1 clips/s | epoch 1 store bytes / frames | "
             "epoch 2 clips/s |", "|---|---|---|---|"]
    for name, m in result["median"].items():
        lines.append(f"| {name} | {m['e1_cps']:.0f} | {m['e1_bytes'] / p['frame_bytes']:.2f}× | "
                     f"{m['e2_cps']:.0f} |")
    return "\n".join(lines) + "\n"


def bare_curl(args, local, proxy):
    """remote_read_bench clips over every clip of the dataset (all its frames), through the
    proxy: clips/s of the bare libcurl loop (no decode). None without the binary."""
    exe = os.path.join(args.bin_dir, "bench", "remote_read_bench")
    if not os.access(exe, os.X_OK):
        return None
    import gulpdb

    clips = os.path.join(os.path.dirname(local), "clips.tsv")
    with gulpdb.Dataset(local) as ds, open(clips, "w") as f:
        ids = ds.ids()
        for i in ids:
            f.write(f"{i}\t0\t{args.frames}\n")
    batches = len(ids) // args.batch
    out = subprocess.run([exe, "clips", "--dataset", local, "--clips", clips, "--endpoint",
                          f"http://127.0.0.1:{proxy.port}", "--bucket", BUCKET, "--prefix",
                          args.prefix, "--batch", str(args.batch), "--batches", str(batches),
                          "--sequential", "1", "--connections", "16", "--reps",
                          str(max(1, args.rounds)), "--anonymous"],
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        return {"error": out.stderr[-2000:]}
    result = json.loads(out.stdout[out.stdout.index("{"):])
    return {"clips_per_s": result["bare_curl"]["clips_per_s"]["median"],
            "gulpdb_store_clips_per_s": result["gulpdb_batch"]["clips_per_s"]["median"],
            "clips": batches * args.batch}


def report(result: dict) -> str:
    p, m, c = result["params"], result["median"], result["bare_curl"]
    mb = p["frame_bytes"] / 1e6
    lines = [
        "# Frame cache and read-ahead",
        "",
        f"{p['videos']} clips of {p['frames']} frames ({p['size']}, {mb:.1f} MB of frames), "
        f"s3rver behind the proxy ({p['latency_ms']} ms per GET, {p['mbps']} MB/s), "
        f"DataLoader with {p['workers']} workers, batches of {p['batch']}, decode included; "
        f"medians of {p['rounds']} interleaved rounds on {p['cpus']} cores.",
        "",
        "| figure | value | target |",
        "|---|---|---|",
        f"| epoch 2, cache ≥ dataset: clips/s against the local copy | "
        f"{m['warm_x_local']:.2f}× ({m['warm']:.0f} against {m['local']:.0f}) | ≥ 0.95× |",
        f"| epoch 2 bytes from the store / epoch 1's | {m['warm_bytes'] / m['cold_bytes']:.4f} "
        f"({m['warm_bytes']:.0f} of {m['cold_bytes']:.0f}) | ≤ 0.01 |",
        f"| cache 25%: store bytes per epoch, global shuffle | {m['q_global'] / 1e6:.1f} MB "
        f"({m['q_global'] / p['frame_bytes']:.2f}× the frames) | report |",
        f"| cache 25%: store bytes per epoch, shuffle=\"blocks\" ({p['order_block']}-item "
        f"blocks, windows of 2) | {m['q_blocks'] / 1e6:.1f} MB "
        f"({m['q_blocks'] / p['frame_bytes']:.2f}× the frames) | report |",
        f"| epoch 1, {p['step_ms']} ms step: wait per batch without read-ahead | "
        f"{1000 * m['wait_off']:.1f} ms ({m['wait_off'] * 1000 / p['step_ms']:.0%} of the step) | – |",
        f"| epoch 1, {p['step_ms']} ms step: wait per batch, prefetch_batches="
        f"{p['prefetch_batches']} | {1000 * m['wait_on']:.1f} ms "
        f"({m['wait_on'] * 1000 / p['step_ms']:.0%} of the step) | ≤ 10% |",
        f"| epoch 1, {p['step_ms']} ms step: wait per batch reading the local copy (decoding "
        f"alone) | {1000 * m['wait_local']:.1f} ms | – |",
        f"| epoch 1, read-ahead, no step, limit {p['bind_mbps']:g} MB/s: store bandwidth (from "
        f"the first batch on) / the limit | {m['bandwidth']:.2f}× (s3rver + proxy took {m['server_cpu']:.2f} CPU) | "
        f"≥ 0.9× when the limit binds |",
        f"| the same at {p['mbps']:g} MB/s (decoding binds first) | {m['bandwidth_50']:.2f}× "
        f"({m['bandwidth_50'] * p['mbps']:.1f} MB/s) | – |",
        f"| two processes, the same clips, one cold cache: chunk bytes from the store / "
        f"the chunk files | {m['two_bytes'] / p['chunk_bytes']:.3f}× | each block once |",
        f"| whole shards (MosaicML-style), same bound: epoch 1 / epoch 2 clips/s | "
        f"{m['shard_cold']:.0f} / {m['shard_warm']:.0f} (gulpdb: {m['cold']:.0f} / "
        f"{m['warm']:.0f}) | – |",
        f"| whole shards: store bytes epoch 1 / epoch 2 / per epoch at 25% | "
        f"{m['shard_cold_bytes'] / 1e6:.1f} / {m['shard_warm_bytes'] / 1e6:.1f} / "
        f"{m['shard_q_bytes'] / 1e6:.1f} MB (gulpdb: {m['cold_bytes'] / 1e6:.1f} / "
        f"{m['warm_bytes'] / 1e6:.1f} / {m['q_global'] / 1e6:.1f}) | – |",
    ]
    if c and "clips_per_s" in c:
        lines.append(f"| bare libcurl loop (no decode, no cache): clips/s, bytes per epoch | "
                     f"{c['clips_per_s']:.0f}, {mb:.1f} MB every epoch | – |")
    return "\n".join(lines) + "\n"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "reader":
        p = argparse.ArgumentParser()
        for name in ("source", "cache", "mode", "shuffle", "endpoint", "prefix"):
            p.add_argument("--" + name)
        for name in ("bound", "epochs", "prefetch", "step-ms", "workers", "batch",
                     "control-port", "seed", "order-block"):
            p.add_argument("--" + name, type=int, default=0)
        a = p.parse_args(sys.argv[2:])
        a.shuffle = {"true": True, "false": False}.get(a.shuffle, a.shuffle)
        run_reader(a)
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin-dir", default=os.path.join(REPO, "build", "release"))
    p.add_argument("--videos", type=int, default=480)
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--height", type=int, default=112)
    p.add_argument("--width", type=int, default=144)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--latency-ms", type=int, default=20)
    p.add_argument("--mbps", type=float, default=50)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--step-ms", type=int, default=50)
    p.add_argument("--prefetch", type=int, default=4)
    p.add_argument("--prefix", default="bench")
    p.add_argument("--order-block", type=int, default=32,
                   help='items per block of the order for shuffle="blocks" (window: 2 blocks)')
    p.add_argument("--bind-mbps", type=float, default=10,
                   help="the bandwidth limit of the run that measures the bandwidth reached: "
                        "one below what decoding alone reaches on this machine, so that it binds")
    p.add_argument("--out", default=os.path.join(HERE, "results", "frame_cache"))
    p.add_argument("--part", choices=["all", "blocks", "readahead"], default="all",
                   help="blocks: the block-size comparison alone; readahead: read-ahead's "
                        "wait and the link's use, with clips cheap to decode (the defaults "
                        "become 960 clips of 2 frames and 64 KiB blocks)")
    p.add_argument("--block", type=int, default=0,
                   help="the frame cache's block (default 1 MiB; 64 KiB with --part readahead)")
    p.add_argument("--ra-latencies", default="20,100",
                   help="--part readahead: the latencies per GET (ms) the wait is measured at")
    p.add_argument("--ra-prefetch", default="4,8",
                   help="--part readahead: the prefetch_batches the wait is measured with")
    p.add_argument("--ra-mbps", default="2,1",
                   help="--part readahead: the limits (MB/s) the link's use is measured under")
    p.add_argument("--smoke", action="store_true", help="tiny, one round; checks nothing")
    given = set(a.split("=")[0] for a in sys.argv[1:])
    args = p.parse_args()
    if args.part == "readahead":
        # Clips cheap to decode: reading the local copy waits about nothing.
        if "--videos" not in given:
            args.videos = 960
        if "--frames" not in given:
            args.frames = 2
        if "--block" not in given:
            args.block = 64 << 10
    if not args.block:
        args.block = 1 << 20
    if args.smoke:
        args.videos, args.frames, args.height, args.width, args.rounds = 24, 4, 48, 64, 1
        args.step_ms, args.workers, args.order_block = 5, 2, 4
        args.ra_latencies, args.ra_mbps, args.ra_prefetch = "20", "10", "4"
    result = run(args)
    reports = {"blocks": report_blocks, "readahead": report_read_ahead, "all": report}
    text = reports[args.part](result)
    print(text)
    name = {"blocks": "blocks", "readahead": "readahead", "all": "latest"}[args.part]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, name + ".md"), "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
