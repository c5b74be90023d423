#!/usr/bin/python3
"""Python baselines the gulpdb benchmarks compare against.

Each command runs in a fresh interpreter started by bench/run.py and prints one
JSON object on stdout. Times exclude interpreter start-up and imports; memory
is the process's peak resident set (VmHWM), and how far it rose above what the
process held once its imports were done.

Commands:

  gmeta-open --dir D --id ID [--no-gc]
      What opening a GulpIO directory costs: every meta*.gmeta is parsed with
      json.load and turned into the lookups GulpIO2's GulpDirectory builds
      (id -> chunk, id -> meta_data), then the frames of one video are read
      from its data file with a seek and a read per frame, as GulpIO2 does.
      Plain dicts are used (GulpIO's loader may use OrderedDict, which is
      slower and larger), so the baseline is not made weaker than it is.
      Python's cyclic garbage collector runs as it does in GulpIO: it walks
      the growing heap of dicts and lists while they are built, which costs a
      large share of the time. --no-gc disables it, for comparison.

  gmeta-load --dir D [--dump-to O] [--no-gc]
      json.load of every meta*.gmeta in D (the import baseline): time, MB/s
      and peak memory. With --dump-to, each loaded object is then written
      back with json.dump into O (the export baseline; GulpIO writes its
      .gmeta files this way, without fsync).

  pillow-decode --jboj J --clips FILE --workers N --reps R
      Decoded clips per second from a folder of JPEG files per video
      (J/<id>/<frame:05d>.jpg): Pillow opens and decodes each frame, NumPy
      stacks a clip into one N x H x W x 3 array. With N workers, a pool of
      forked processes (what a PyTorch DataLoader does) shares the clips.

  s3-clips --url s3://B/P --dataset D --clips FILE --batch 64 --batches K
           --threads T --reps R [--anonymous]
      Random clips of a dataset published at s3://B/P, JPEG bytes, from
      Python, in batches: gulpdb (Dataset(url).read_jpeg_batch, one ranged
      GET per clip, concurrently) against what a Python user would write
      without it: boto3 get_object(Range=...) for every frame, the frames of
      a batch spread over a ThreadPoolExecutor of T threads, boto3's
      connection pool sized to T. The frame offsets come from the local copy
      D (a GulpIO user reads them from the .gmeta files); the endpoint and
      keys from the environment (AWS_ENDPOINT_URL, ...). Interleaved
      repetitions after a warm-up that also checks both read the same bytes.
"""

import argparse
import gc
import glob
import json
import multiprocessing
import os
import re
import sys
import time


def status_kb(field):
    """A field of /proc/self/status in kB (VmHWM, VmRSS, ...), or 0."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def memory_fields(rss_at_start_kb):
    peak = status_kb("VmHWM")
    return {
        "peak_rss_mb": peak / 1024.0,
        "rss_at_start_mb": rss_at_start_kb / 1024.0,
        "peak_rss_delta_mb": (peak - rss_at_start_kb) / 1024.0,
    }


def chunk_number(name):
    """GulpIO numbers chunks by the first run of digits in the file name."""
    match = re.search(r"\d+", os.path.basename(name))
    return int(match.group()) if match else -1


def meta_files(directory):
    return sorted(glob.glob(os.path.join(directory, "meta*.gmeta")), key=chunk_number)


def gmeta_open(args):
    rss_at_start = status_kb("VmRSS")
    start = time.perf_counter()
    chunk_lookup = {}
    merged_meta_dict = {}
    meta_dicts = {}
    gmeta_bytes = 0
    for path in meta_files(args.dir):
        number = chunk_number(path)
        with open(path, "r") as f:
            meta = json.load(f)
        gmeta_bytes += os.path.getsize(path)
        meta_dicts[number] = meta
        for video_id, entry in meta.items():
            chunk_lookup[video_id] = number
            merged_meta_dict[video_id] = entry["meta_data"][0] if entry["meta_data"] else {}
    opened = time.perf_counter()

    number = chunk_lookup[args.id]
    frames = []
    with open(os.path.join(args.dir, "data_%d.gulp" % number), "rb") as data:
        for offset, pad, length in meta_dicts[number][args.id]["frame_info"]:
            data.seek(offset)
            frames.append(data.read(length - pad))
    done = time.perf_counter()
    result = {
        "benchmark": "open_baseline",
        "gc": gc.isenabled(),
        "open_ms": (opened - start) * 1e3,
        "read_ms": (done - opened) * 1e3,
        "total_ms": (done - start) * 1e3,
        "videos": len(chunk_lookup),
        "gmeta_files": len(meta_dicts),
        "gmeta_bytes": gmeta_bytes,
        "frames": len(frames),
        "bytes": sum(len(f) for f in frames),
    }
    result.update(memory_fields(rss_at_start))
    return result


def gmeta_load(args):
    paths = meta_files(args.dir)
    total = sum(os.path.getsize(p) for p in paths)
    for path in paths:  # page cache warm, as for the gulpdb side
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    rss_at_start = status_kb("VmRSS")
    start = time.perf_counter()
    loaded = []
    videos = 0
    for path in paths:
        with open(path, "r") as f:
            meta = json.load(f)
        videos += len(meta)
        loaded.append((os.path.basename(path), meta))
    seconds = time.perf_counter() - start
    result = {
        "benchmark": "gmeta_load",
        "gc": gc.isenabled(),
        "files": len(paths),
        "videos": videos,
        "gmeta_bytes": total,
        "seconds": seconds,
        "mb_per_s": total / 1e6 / seconds,
    }
    result.update(memory_fields(rss_at_start))
    if args.dump_to:
        os.makedirs(args.dump_to, exist_ok=True)
        written = 0
        start = time.perf_counter()
        for name, meta in loaded:
            out = os.path.join(args.dump_to, name)
            with open(out, "w") as f:
                json.dump(meta, f)
            written += os.path.getsize(out)
        dump_seconds = time.perf_counter() - start
        result.update({
            "dump_seconds": dump_seconds,
            "dump_bytes": written,
            "dump_mb_per_s": written / 1e6 / dump_seconds,
            "dump_identical_size": written == total,
        })
    return result


# Set in the parent before the worker processes fork, so they inherit them.
# NumPy and Pillow are imported only by the decode baseline: importing them in
# the .gmeta baselines would add to those processes' memory.
_CLIPS = []
_JBOJ = ""
_numpy = None
_image = None


def load_imaging():
    global _numpy, _image
    import numpy
    from PIL import Image
    _numpy, _image = numpy, Image


def decode_clip(index):
    """Decodes one clip from its JPEG files; returns the bytes of its pixels."""
    video_id, start, count = _CLIPS[index]
    frames = []
    for frame in range(start, start + count):
        path = os.path.join(_JBOJ, video_id, "%05d.jpg" % frame)
        with _image.open(path) as image:
            frames.append(_numpy.asarray(image.convert("RGB")))
    return _numpy.stack(frames).nbytes


def decode_all(count):
    return sum(decode_clip(i) for i in range(count))


def pillow_decode(args):
    import PIL

    load_imaging()  # before timing, as the gulpdb side's libraries are loaded
    global _JBOJ
    _JBOJ = args.jboj
    with open(args.clips) as f:
        for line in f:
            if line.strip():
                video_id, start, count = line.rstrip("\n").split("\t")
                _CLIPS.append((video_id, int(start), int(count)))
    n = len(_CLIPS)
    pool = None
    if args.workers > 1:
        pool = multiprocessing.get_context("fork").Pool(args.workers)
        chunk = max(1, n // (4 * args.workers))

        def run_pass():
            return sum(pool.map(decode_clip, range(n), chunksize=chunk))
    else:

        def run_pass():
            return decode_all(n)

    expected = run_pass()  # warm-up: page cache, imports in the workers
    seconds = []
    for _ in range(args.reps):
        start = time.perf_counter()
        if run_pass() != expected:
            raise SystemExit("pillow-decode: a pass decoded a different number of bytes")
        seconds.append(time.perf_counter() - start)
    if pool is not None:
        pool.close()
        pool.join()
    frames = sum(c[2] for c in _CLIPS)
    return {
        "benchmark": "pillow_decode",
        "workers": args.workers,
        "clips": n,
        "frames": frames,
        "pillow_version": PIL.__version__,
        "seconds": seconds,
        "clips_per_s": [n / s for s in seconds],
        "frames_per_s": [frames / s for s in seconds],
    }


def s3_clips(args):
    import concurrent.futures

    import boto3
    import botocore
    from botocore.config import Config

    import gulpdb

    clips = []
    with open(args.clips) as f:
        for line in f:
            if line.strip():
                video_id, start, count = line.rstrip("\n").split("\t")
                clips.append((video_id, int(start), int(count)))
    clips = clips[: args.batch * args.batches]
    if len(clips) < args.batch * args.batches:
        raise SystemExit("s3-clips: the clips file holds fewer than batch * batches clips")
    bucket, prefix = args.url[len("s3://"):].split("/", 1)
    local = gulpdb.Dataset(args.dataset)
    chunk_files = {c.number: c.file_name for c in local.chunks()}
    # Per clip, the (key, first byte, last byte) of each frame, padding left out.
    frames = []
    for video_id, start, count in clips:
        info = local.info(video_id)
        key = prefix + "/" + chunk_files[info.chunk]
        frames.append([(key, offset, offset + length - pad - 1)
                       for offset, pad, length in info.frame_info[start:start + count]])
    batches = [range(b * args.batch, (b + 1) * args.batch) for b in range(args.batches)]

    config = Config(max_pool_connections=args.threads, s3={"addressing_style": "path"},
                    retries={"mode": "standard"},
                    signature_version=botocore.UNSIGNED if args.anonymous else None)
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], config=config)
    pool = concurrent.futures.ThreadPoolExecutor(args.threads)

    def get(frame):
        key, first, last = frame
        return s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={first}-{last}")["Body"].read()

    def boto3_batch(batch):
        flat = [f for i in batch for f in frames[i]]
        got = list(pool.map(get, flat))
        out, pos = [], 0
        for i in batch:
            out.append(got[pos:pos + len(frames[i])])
            pos += len(frames[i])
        return out

    ds = gulpdb.Dataset(args.url)

    def gulpdb_batch(batch):
        return ds.read_jpeg_batch([(clips[i][0], slice(clips[i][1], clips[i][1] + clips[i][2]))
                                   for i in batch])

    for batch in batches:  # warm-up: connections, the server's page cache
        if boto3_batch(batch) != gulpdb_batch(batch):
            raise SystemExit("s3-clips: boto3 and gulpdb read different bytes")
    n = len(clips)
    results = {"gulpdb": [], "boto3": []}
    for _ in range(args.reps):
        for name, fn in (("gulpdb", gulpdb_batch), ("boto3", boto3_batch)):
            start = time.perf_counter()
            for batch in batches:
                fn(batch)
            results[name].append(n / (time.perf_counter() - start))
    pool.shutdown()
    return {
        "benchmark": "s3_clips",
        "clips": n,
        "frames_per_clip": clips[0][2],
        "batch": args.batch,
        "threads": args.threads,
        "anonymous": args.anonymous,
        "boto3_version": boto3.__version__,
        "gulpdb_clips_per_s": results["gulpdb"],
        "boto3_clips_per_s": results["boto3"],
    }


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("gmeta-open")
    p.add_argument("--dir", required=True)
    p.add_argument("--id", required=True)
    p.add_argument("--no-gc", action="store_true")
    p = commands.add_parser("gmeta-load")
    p.add_argument("--dir", required=True)
    p.add_argument("--dump-to")
    p.add_argument("--no-gc", action="store_true")
    p = commands.add_parser("pillow-decode")
    p.add_argument("--jboj", required=True)
    p.add_argument("--clips", required=True)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--reps", type=int, default=3)
    p = commands.add_parser("s3-clips")
    p.add_argument("--url", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--clips", required=True)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--anonymous", action="store_true")
    args = parser.parse_args(argv)
    if getattr(args, "no_gc", False):
        gc.disable()
    run = {"gmeta-open": gmeta_open, "gmeta-load": gmeta_load, "pillow-decode": pillow_decode,
           "s3-clips": s3_clips}
    print(json.dumps(run[args.command](args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
