"""The benchmarks of the engine's own programs (bench/*.cc) against their
baselines: open, lookup, reads, decode, cold cache, append, interop, index
size, queries and the .gmeta reader.
"""

import json
import os
import random
import shutil
import tempfile

from run_common import (
    BATCH_SIZES,
    FLUSH_SYSCALLS,
    fmt_bytes,
    fmt_count,
    from_stats,
    log,
    mdb_stat,
    parse_strace,
    point,
    rm,
    summary,
    warm_files,
)


class EngineBenchmarks:
    """A part of Runner (bench/run.py): uses its processes, datasets and figures."""

    def bench_open(self):
        s = self.scale
        points = []
        rng = random.Random(1)
        for videos in s.open_videos:
            path, info = self.index_dataset(videos)
            ids = [str(100000 + rng.randrange(videos))
                   for _ in range(1 + max(s.open_runs, s.open_baseline_runs))]
            # Page cache warm for both sides; an untimed run of each warms the rest.
            warm_files(path)
            self.bench("open_bench", "--dir", path, "--id", ids[0])
            ours, theirs = [], []
            for i in range(max(s.open_runs, s.open_baseline_runs)):
                if i < s.open_runs:
                    ours.append(self.bench("open_bench", "--dir", path, "--id", ids[i + 1]))
                if i < s.open_baseline_runs:
                    theirs.append(self.python("gmeta-open", "--dir", path, "--id", ids[i + 1]))
            point = {"videos": videos, "gmeta_bytes": info.get("gmeta_bytes"),
                     "gmeta_files": info.get("gmeta_files"),
                     "build_seconds": info.get("build_seconds"), "gulpdb": {}, "gmeta_json": {}}
            if videos == s.open_videos[-1]:
                no_gc = self.python("gmeta-open", "--dir", path, "--id", ids[1], "--no-gc")
                point["gmeta_json_no_gc"] = {k: no_gc[k] for k in ("total_ms", "peak_rss_mb")}
            for key in ("open_ms", "read_ms", "total_ms", "peak_rss_mb", "peak_rss_delta_mb"):
                point["gulpdb"][key] = summary([r[key] for r in ours])
                point["gmeta_json"][key] = summary([r[key] for r in theirs])
            points.append(point)
            log("open %d videos: gulpdb %.2f ms, %.1f MB; .gmeta json.load %.0f ms, %.0f MB" % (
                videos, point["gulpdb"]["total_ms"]["median"],
                point["gulpdb"]["peak_rss_mb"]["median"],
                point["gmeta_json"]["total_ms"]["median"],
                point["gmeta_json"]["peak_rss_mb"]["median"]))
        self.results["open"] = {"points": points,
                                "frames_per_video": 16, "videos_per_chunk": 1000}

        largest = points[-1]["videos"]
        at_scale = "" if largest >= 10 ** 6 else (
            "measured at %s videos (%s scale); the target is for 10^6" %
            (fmt_count(largest), self.args.scale))
        for p in points:
            top = p is points[-1]
            note = None
            if top:
                note = ("%s; the loader spent %.0f ms with Python's garbage collector disabled"
                        % (at_scale or "measured at 10^6", p["gmeta_json_no_gc"]["total_ms"]))
            self.figure("open", "open + read one video, %s videos" % fmt_count(p["videos"]), "ms",
                        p["gulpdb"]["total_ms"], p["gmeta_json"]["total_ms"],
                        "GulpIO-style json.load of every .gmeta", higher_is_better=False,
                        target=("< 5 ms at 10^6", "value", "<", 5.0) if top else None, note=note)
        for p in (points[0], points[-1]):
            self.figure("open", "peak RSS, open + read, %s videos" % fmt_count(p["videos"]), "MB",
                        p["gulpdb"]["peak_rss_mb"], p["gmeta_json"]["peak_rss_mb"],
                        "GulpIO-style json.load of every .gmeta", higher_is_better=False,
                        target=("flat in N", "value", "<=",
                                1.5 * points[0]["gulpdb"]["peak_rss_mb"]["median"])
                        if p is points[-1] else None,
                        note="whole process, libraries included" if p is points[0] else
                        "flat: within 1.5x of the smallest dataset's")
        first, last = points[0]["gulpdb"]["total_ms"], points[-1]["gulpdb"]["total_ms"]
        growth = {k: last[k] / first["median"] for k in ("median", "min", "max")}
        self.figure("open", "open time growth, %s -> %s videos" % (
            fmt_count(points[0]["videos"]), fmt_count(points[-1]["videos"])), "x",
            growth, higher_is_better=False, target=("flat in N (<= 1.5x)", "value", "<=", 1.5),
            note="time at the largest size / median time at the smallest")

    def bench_lookup(self):
        videos = self.scale.open_videos[-1]
        path, _ = self.index_dataset(videos)
        r = self.bench("lookup_bench", "--dir", path, "--videos", videos, "--lookups",
                       self.scale.lookups, "--repeat", self.scale.lookup_repeat)
        self.results["lookup"] = r
        m = r["methods"]
        note = None if videos >= 10 ** 6 else "measured at %s videos (%s scale)" % (
            fmt_count(videos), self.args.scale)
        base = "LMDB read txn + get alone"
        self.figure("lookup", "Find(id) p50, %s videos" % fmt_count(videos), "us",
                    from_stats(m["find"]["p50_us"]), from_stats(m["txn_get"]["p50_us"]), base,
                    higher_is_better=False, target=("p50 <= 2 us", "value", "<=", 2.0), note=note)
        self.figure("lookup", "Find(id) p99, %s videos" % fmt_count(videos), "us",
                    from_stats(m["find"]["p99_us"]), from_stats(m["txn_get"]["p99_us"]), base,
                    higher_is_better=False)
        self.figure("lookup", "ReadJpegs(id, 0:16) p50 (tiny frames)", "us",
                    from_stats(m["read_jpegs"]["p50_us"]), from_stats(m["txn_get"]["p50_us"]),
                    base, higher_is_better=False)

    def bench_crc32c(self):
        smoke = self.args.scale == "smoke"
        r = self.bench("crc32c_bench", "--rounds", 2 if smoke else 9, "--bytes",
                       (1 << 20) if smoke else (256 << 20))
        self.results["crc32c"] = r
        for row in r["sizes"]:
            # Per CPU-second: a single-threaded loop, which other load on the
            # machine slows in wall time but not per CPU-second.
            m, size = row["gb_per_cpu_s"], row["bytes"]
            what = "%s buffers" % fmt_bytes(size)
            self.figure("crc32c", "CRC-32C portable path (slicing-by-8), %s" % what,
                        "GB/CPU-s",
                        from_stats(m["portable"]), from_stats(m["table_bytewise"]),
                        "one table lookup per byte (the portable path before)")
            if "sse42_3streams" in m:
                self.figure("crc32c", "CRC-32C SSE4.2, three streams, %s" % what, "GB/CPU-s",
                            from_stats(m["sse42_3streams"]), from_stats(m["sse42_1stream"]),
                            "SSE4.2, one stream (the hardware path before)")

    def bench_random_read(self, dataset, manifest):
        clips = self.clips_file(manifest, self.scale.random_clips, 2, "clips_random.tsv")
        r = self.bench("read_bench", "random", "--dir", dataset, "--clips", clips,
                       "--reps", self.scale.reps)
        self.results["random_read"] = r
        m = r["methods"]
        self.figure("random read", "random 16-frame clips, JPEG bytes, warm cache", "MB/s",
                    from_stats(m["gulpdb_read_jpegs"]["mb_per_s"]), from_stats(m["pread"]["mb_per_s"]),
                    "bare pread, precomputed offsets",
                    target=(">= 0.8x bare pread", "ratio", ">=", 0.8),
                    note="%.0f vs %.0f clips/s; per CPU-second %.2fx" % (
                        m["gulpdb_read_jpegs"]["units_per_s"]["median"],
                        m["pread"]["units_per_s"]["median"],
                        m["gulpdb_read_jpegs"]["mb_per_cpu_s"]["median"] /
                        m["pread"]["mb_per_cpu_s"]["median"]))
        self.figure("random read", "random 16-frame clips, CRC-32C checks off", "MB/s",
                    from_stats(m["gulpdb_read_jpegs_unverified"]["mb_per_s"]),
                    from_stats(m["pread"]["mb_per_s"]), "bare pread, precomputed offsets",
                    note="verify_checksums=False: what the default check costs is this row "
                         "against the one above")

    def bench_scan(self, dataset):
        r = self.bench("read_bench", "scan", "--dir", dataset, "--reps", self.scale.reps)
        self.results["sequential_scan"] = r
        m = r["methods"]
        base = from_stats(m["one_read_per_chunk"]["mb_per_s"])
        self.figure("sequential scan", "all frames in chunk order: ForEach + ReadJpegs", "MB/s",
                    from_stats(m["gulpdb_foreach_read_jpegs"]["mb_per_s"]), base,
                    "one large read per chunk file", target=(">= 0.9x", "ratio", ">=", 0.9))
        self.figure("sequential scan", "ForEach + ReadJpegs, CRC-32C checks off", "MB/s",
                    from_stats(m["gulpdb_foreach_read_jpegs_unverified"]["mb_per_s"]), base,
                    "one large read per chunk file", note="verify_checksums=False")
        blocks = from_stats(m["block_reads"]["mb_per_s"])
        self.figure("sequential scan", "ForEach + ReadJpegs against 1 MiB block reads", "MB/s",
                    from_stats(m["gulpdb_foreach_read_jpegs"]["mb_per_s"]), blocks,
                    "chunk files read in 1 MiB preads",
                    note="a stricter baseline than one read per file: its buffer stays in the "
                         "CPU caches")
        self.figure("sequential scan", "ForEach + one read per chunk (proposed scan path)", "MB/s",
                    from_stats(m["gulpdb_foreach_chunk_read"]["mb_per_s"]), base,
                    "one large read per chunk file",
                    note="emulated outside the engine with the public API")

    def bench_decode(self, dataset, jboj, manifest):
        s = self.scale
        clips = self.clips_file(manifest, s.decode_clips, 3, "clips_decode.tsv")
        r = self.bench("decode_bench", "--dir", dataset, "--clips", clips, "--reps",
                       s.decode_reps)
        pillow = {}
        for workers in (1, 2):
            p = self.python("pillow-decode", "--jboj", jboj, "--clips", clips, "--workers",
                            workers, "--reps", s.decode_reps, log_name="pillow")
            pillow[workers] = p
        r["pillow"] = {str(w): dict(p, clips_per_s_summary=summary(p["clips_per_s"]))
                       for w, p in pillow.items()}
        self.results["decode"] = r
        m = r["methods"]
        cps = {k: from_stats(v["clips_per_s"]) for k, v in m.items()}
        shape = "%dx%d" % (r["width"], r["height"])

        def cpu_note(ours, bare):
            return ("per CPU-second (less sensitive to other load): %.2fx the bare loop's" %
                    (m[ours]["clips_per_cpu_s"]["median"] / m[bare]["clips_per_cpu_s"]["median"]))

        # The targets are judged on decode_ab, which interleaves gulpdb and the
        # bare loop clip by clip; decode_bench's whole passes, one after another,
        # move with the load of the machine by more than the gap they measure.
        def one(v):
            return {"median": v, "min": v, "max": v, "count": 1}

        ab = self.bench("decode_ab", "--dir", dataset, "--clips", clips, "--rounds",
                        s.decode_reps + 2)
        r["interleaved"] = ab
        for threads, bare, key, label in (
                ("1", "bare_1t", "read_frames_1t", "1 thread, interleaved: ReadFrames"),
                ("2", "bare_2t", "read_batch_2t",
                 "2 threads, interleaved: ReadBatch(%d clips), decode_threads=2" % ab["batch"]),
                ("2", "bare_2t", "read_frames_2callers",
                 "2 threads, interleaved: ReadFrames from 2 threads")):
            part = ab[threads]
            ours, theirs = part["methods"][key], part["methods"][bare]
            self.figure("decode", "%s, %s clips of 16" % (label, shape), "clips/s",
                        one(ours["clips_per_s"]), one(theirs["clips_per_s"]),
                        "bare TurboJPEG loop, %s thread%s" % (threads, "s" if threads != "1" else ""),
                        target=(">= 0.95x", "ratio", ">=", 0.95),
                        note="sums of per-unit medians over %d rounds; per CPU-second %.3fx; "
                             "load average %.2f -> %.2f" % (ab["rounds"], ours["cpu_ratio"],
                                                            part["load_start"], part["load_end"]))
        unverified = ab["1"]["methods"].get("read_frames_1t_unverified")
        if unverified is not None:
            self.figure("decode", "1 thread, interleaved: ReadFrames, CRC-32C checks off, %s "
                        "clips of 16" % shape, "clips/s", one(unverified["clips_per_s"]),
                        one(ab["1"]["methods"]["bare_1t"]["clips_per_s"]),
                        "bare TurboJPEG loop, 1 thread", note="verify_checksums=False")
        self.figure("decode", "1 thread: ReadFrames, %s clips of 16" % shape, "clips/s",
                    cps["read_frames_1t"], cps["bare_1t"], "bare TurboJPEG loop, 1 thread",
                    note="whole passes one after another (the target is judged interleaved); " +
                         cpu_note("read_frames_1t", "bare_1t"))
        best2 = max(("read_frames_2t", "read_batch_2t", "read_frames_2callers"),
                    key=lambda k: cps[k]["median"])
        for key, label in (("read_batch_2t", "ReadBatch(8 clips), decode_threads=2"),
                           ("read_frames_2t", "ReadFrames, decode_threads=2"),
                           ("read_frames_2callers", "ReadFrames from 2 threads")):
            note = cpu_note(key, "bare_2t")
            if key == best2:
                note = "the best 2-thread path; " + note
            self.figure("decode", "2 threads: %s" % label, "clips/s", cps[key], cps["bare_2t"],
                        "bare TurboJPEG loop, 2 threads",
                        note=note)
        p1, p2 = summary(pillow[1]["clips_per_s"]), summary(pillow[2]["clips_per_s"])
        self.figure("decode", "1 thread vs Pillow on a folder of JPEGs", "clips/s",
                    cps["read_frames_1t"], p1, "Pillow + NumPy, JPEG files, 1 process",
                    note="gulpdb's default fast DCT (GulpIO2's pixels); Pillow uses the accurate one")
        if "read_frames_1t_accurate" in cps:
            self.figure("decode", "1 thread, accurate DCT, vs Pillow", "clips/s",
                        cps["read_frames_1t_accurate"], p1, "Pillow + NumPy, JPEG files, 1 process",
                        note="same IDCT and upsampling as Pillow")
        self.figure("decode", "2 threads vs Pillow on a folder of JPEGs", "clips/s", cps[best2],
                    p2, "Pillow + NumPy, JPEG files, 2 processes")

    def bench_cold(self, dataset, jboj, manifest):
        s = self.scale
        method = self.cold_cache_method()
        runs = {"gulpdb": [], "jboj": []}
        for i in range(s.cold_runs):
            # A new clip set per run, so no run benefits from another's reads.
            clips = self.clips_file(manifest, s.cold_clips, 100 + i, "clips_cold_%d.tsv" % i)
            for which in ("gulpdb", "jboj"):
                if method == "drop_caches":
                    self.drop_caches()
                    evict = "none"
                else:
                    evict = "fadvise"
                runs[which].append(self.bench(
                    "read_bench", "cold", "--dir", dataset, "--jboj", jboj, "--clips", clips,
                    "--method", which, "--evict", evict))
        self.results["cold"] = {"method": method, "reason": self.cold_reason, "runs": runs}
        note = ("page cache dropped with /proc/sys/vm/drop_caches before each run"
                if method == "drop_caches" else
                "page cache: posix_fadvise(DONTNEED) on the files (%s); directory and inode "
                "caches stay warm, which favours the folder of files" % self.cold_reason)
        self.figure("cold cache", "random 16-frame clips, cold page cache", "clips/s",
                    summary([r["clips_per_s"] for r in runs["gulpdb"]]),
                    summary([r["clips_per_s"] for r in runs["jboj"]]),
                    "folder of JPEG files (open+read per frame)", note=note)
        self.figure("cold cache", "cold clip latency p50", "ms",
                    summary([r["p50_ms"] for r in runs["gulpdb"]]),
                    summary([r["p50_ms"] for r in runs["jboj"]]),
                    "folder of JPEG files (open+read per frame)", higher_is_better=False)

    def cold_cache_method(self):
        wanted = self.args.cold_cache
        self.cold_reason = "chosen with --cold-cache fadvise"
        if wanted in ("auto", "drop"):
            try:
                self.drop_caches()
                self.cold_reason = "drop_caches is writable"
                return "drop_caches"
            except OSError as e:
                self.cold_reason = "cannot write /proc/sys/vm/drop_caches: %s" % e.strerror
                if wanted == "drop":
                    raise SystemExit("run.py: --cold-cache drop: %s" % self.cold_reason)
                log("cold cache: %s; using posix_fadvise(POSIX_FADV_DONTNEED) instead" %
                    self.cold_reason)
        return "fadvise"

    @staticmethod
    def drop_caches():
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")

    def bench_append(self, frames):
        s = self.scale
        work = os.path.join(self.data, "append")
        rm(work)
        r = self.bench("append_bench", "--dir", work, "--frames", frames, "--batch-sizes",
                       ",".join(map(str, BATCH_SIZES)), "--commits",
                       ",".join(map(str, s.append_commits)))
        fsyncs = self.count_append_fsyncs(work, frames)
        r["flush_syscalls"] = fsyncs
        rm(work)
        self.results["append"] = r
        for row in r["batches"]:
            b = row["batch"]
            per_commit = fsyncs["per_commit"].get(str(b))
            note = None
            if per_commit is not None:
                note = ("%.1f durable writes per commit: %.1f fsync-family calls + %.1f O_DSYNC "
                        "writes (%s)" % (per_commit["total"], per_commit["flush"],
                                         per_commit["dsync_writes"], fsyncs["how"]))
            self.figure("append", "batch %d: committed videos/s" % b, "videos/s",
                        point(row["gulpdb_videos_per_s"]), point(row["bare_videos_per_s"]),
                        "pwritev + 1 fdatasync per batch, no index (interleaved)", note=note,
                        target=(">= 0.8x bare", "ratio", ">=", 0.8) if b == 1 else None)
            self.figure("append", "batch %d: commit latency" % b, "ms",
                        from_stats(row["commit_ms"]), from_stats(row["bare_batch_ms"]),
                        "the bare batch's write + fdatasync", higher_is_better=False,
                        note="latency of Commit() alone; the baseline includes its writes")

    def bench_small_commits(self):
        """One-video commits: the index file against one batch of the same videos,
        the journal's size, and the durable writes of a writer per commit against
        one writer (small_commits_bench)."""
        s = self.scale
        work = os.path.join(self.data, "small_commits")
        rm(work)
        r = self.bench("small_commits_bench", "--dir", work, "--videos", s.small_commits_videos)
        per_commit = {}
        if shutil.which("strace"):
            fewer, more = s.small_commits_strace_videos
            for mode in ("one-writer", "writer-per-commit"):
                counts = [self.strace_sync_count(
                    [self.program("small_commits_bench"), "--dir", work, "--videos", str(n),
                     "--per-chunk", "100000", "--modes", mode], "small_commits_strace")
                    for n in (fewer, more)]
                per_commit[mode] = {k: (counts[1][k] - counts[0][k]) / (more - fewer)
                                    for k in counts[0]}
        else:
            self.notes.append("strace is not installed: durable writes per small commit were "
                              "not counted")
        r["durable_writes_per_commit"] = per_commit
        rm(work)
        self.results["small_commits"] = r
        videos = fmt_count(r["videos"])
        for b in r["bounds"]:
            self.figure("small_commits", "data.mdb after %s one-video commits, %s videos per "
                        "chunk" % (videos, fmt_count(b["videos_per_chunk"])), "bytes",
                        point(b["one_writer_bytes"]), point(b["batch_bytes"]),
                        "the same videos in one commit", higher_is_better=False,
                        target=("<= 4x one batch + 2 MiB", "value", "<=", b["bound_bytes"]))
        journal = max(row["journal_bytes"] for row in r["runs"])
        self.figure("small_commits", "largest journal file", "bytes", point(journal),
                    target=("<= 32 MiB (Journal::kMaxBytes)", "value", "<=", 32 << 20),
                    higher_is_better=False)
        if per_commit:
            self.figure("small_commits", "durable writes per commit, a writer per commit",
                        "writes", point(per_commit["writer-per-commit"]["total"]),
                        point(per_commit["one-writer"]["total"]), "one writer",
                        higher_is_better=False,
                        note="fsync family + O_DSYNC writes, strace, %d against %d commits" %
                        (s.small_commits_strace_videos[1], s.small_commits_strace_videos[0]))

    def count_append_fsyncs(self, work, frames):
        """Durable writes per commit, by batch size, counted with strace."""
        if shutil.which("strace") is None:
            self.notes.append(
                "strace is not installed, so durable writes per commit were not counted; by the "
                "commit protocol a commit that stays in one chunk makes 3 (fdatasync of the chunk, "
                "fdatasync of LMDB's data file, LMDB's meta page through an O_DSYNC descriptor), "
                "plus 3 for every chunk it starts (directory fsync, LMDB commit of the new chunk)")
            return {"how": "not counted (strace not installed)",
                    "per_commit": {str(b): None for b in BATCH_SIZES}}
        per_commit, raw = {}, {}
        for b, (fewer, more) in zip(BATCH_SIZES, self.scale.append_strace_commits):
            counts = []
            for commits in (fewer, more):
                counts.append(self.strace_sync_count(
                    [self.program("append_bench"), "--dir", work, "--frames", frames,
                     "--batch-sizes", str(b), "--commits", str(commits), "--no-bare"],
                    "append_strace"))
            per_commit[str(b)] = {k: (counts[1][k] - counts[0][k]) / (more - fewer)
                                  for k in counts[0]}
            raw[str(b)] = {"commits": [fewer, more], "counts": counts}
        return {"how": "strace, difference of two runs with different commit counts",
                "per_commit": per_commit, "raw": raw}

    def strace_sync_count(self, command, log_name):
        """Runs command under strace; counts its durable writes.

        Returns {"flush": fdatasync + fsync + msync + sync_file_range calls,
        "dsync_writes": writes to descriptors opened with O_DSYNC or O_SYNC
        (LMDB writes its meta page that way), "total": the sum}.
        """
        traced = ("openat,open,creat,close,write,writev,pwrite64,pwritev,pwritev2,"
                  + FLUSH_SYSCALLS + ",sync_file_range")
        # LeakSanitizer cannot run under ptrace: in sanitizer builds, leave it out.
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
        with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
            self.run(["strace", "-f", "-qq", "-e", "trace=" + traced, "-o", out.name] + command,
                     log_name, env=env)
            return parse_strace(out)

    def bench_interop(self):
        s = self.scale
        gulpio, info = self.gulpio_dir()
        imports, loads, exports = [], [], []
        export_out = os.path.join(self.data, "export_out")
        dump_out = os.path.join(self.data, "json_dump_out")
        for i in range(max(s.interop_runs, s.interop_baseline_runs)):
            if i < s.interop_runs:
                imports.append(self.bench("interop_bench", "import", "--dir", gulpio))
            if i < s.interop_baseline_runs:
                dump = ["--dump-to", dump_out] if i == 0 else []
                loads.append(self.python("gmeta-load", "--dir", gulpio, *dump))
                rm(dump_out)
            if i < s.interop_runs:
                exports.append(self.bench("interop_bench", "export", "--dir", gulpio,
                                          "--out", export_out))
        rm(export_out)
        # The same import with the index on a tmpfs, where syncing costs nothing:
        # how much of the time is parsing and indexing.
        tmpfs = None
        shm = "/dev/shm"
        if os.path.isdir(shm) and shutil.disk_usage(shm).free > 2 * info["gmeta_bytes"]:
            index_dir = os.path.join(shm, "gulpdb_bench_import_%d" % os.getpid())
            try:
                tmpfs = self.bench("interop_bench", "import", "--dir", gulpio, "--index-dir",
                                   index_dir)
            finally:
                rm(index_dir)
        # `gulpdb import` by default also reads every data file to store a
        # CRC-32C per frame; the figure above is the index-only import.
        with_checksums = self.bench("interop_bench", "import", "--dir", gulpio, "--checksums")
        fsyncs = None
        if shutil.which("strace"):
            fsyncs = self.strace_sync_count(
                [self.program("interop_bench"), "import", "--dir", gulpio], "import_strace")
        self.results["interop"] = {"gulpio": info, "import": imports, "json_load": loads,
                                   "export": exports, "import_flush_syscalls": fsyncs,
                                   "import_index_on_tmpfs": tmpfs,
                                   "import_with_checksums": with_checksums}
        size_mb = info["gmeta_bytes"] / 1e6
        base = "Python json.load of the same files"
        note = "%.0f MB of .gmeta in %d files" % (size_mb, info["chunks"])
        if fsyncs:
            note += "; %d durable writes (fsync family + O_DSYNC writes) per import" % (
                fsyncs["total"])
        self.figure("import/export", "ImportGulpio", "MB/s",
                    summary([r["mb_per_s"] for r in imports]),
                    summary([r["mb_per_s"] for r in loads]), base,
                    target=(">= 200 MB/s", "value", ">=", 200.0), note=note)
        pct = lambda rows: summary([100.0 * r["peak_rss_mb"] * 1048576 / info["gmeta_bytes"]
                                    for r in rows])
        self.figure("import/export", "ImportGulpio peak RSS, % of .gmeta size", "%",
                    pct(imports), pct(loads), "json.load peak RSS", higher_is_better=False,
                    target=("< 25%", "value", "<", 25.0),
                    note="VmHWM of the whole process, %.0f MB (median); at most %.0f MB of it "
                         "private (RssAnon), the rest mapped pages of files, mostly the LMDB "
                         "map of the index being built (%.0f MB)" % (
                             summary([r["peak_rss_mb"] for r in imports])["median"],
                             max(r["peak_rss_anon_mb"] for r in imports),
                             imports[-1]["index_bytes"] / 1048576))
        self.figure("import/export", "ImportGulpio private memory (RssAnon), % of .gmeta size",
                    "%", summary([100.0 * r["peak_rss_anon_mb"] * 1048576 / info["gmeta_bytes"]
                                  for r in imports]),
                    pct(loads), "json.load peak RSS", higher_is_better=False,
                    note="peak of RssAnon sampled every 10 ms")
        if tmpfs:
            self.figure("import/export", "ImportGulpio with the index on tmpfs (no sync cost)",
                        "MB/s", point(tmpfs["mb_per_s"]), summary([r["mb_per_s"] for r in loads]),
                        base, note="one run; shows what parsing and indexing cost without the "
                                   "per-chunk commits' syncs")
        self.figure("import/export", "ExportGmeta", "MB/s",
                    summary([r["mb_per_s"] for r in exports]),
                    summary([r["dump_mb_per_s"] for r in loads if "dump_mb_per_s" in r]),
                    "Python json.dump of the loaded objects (no fsync)",
                    note="gulpdb writes each file atomically: temp file, fsync, rename")

    def bench_index_size(self):
        videos = self.scale.index_size_videos
        rows = []
        configs = [
            ("contiguous, 30-60 frames, no meta, checksums off", False, True),
            ("contiguous, 30-60 frames, no meta, checksums on", True, True),
            ("30-60 frames, GulpIO2-style meta, checksums off", False, False),
            ("30-60 frames, GulpIO2-style meta, checksums on", True, False),
        ]
        for label, checksums, minimal in configs:
            path, _ = self.index_dataset(videos, 30, 60, checksums=checksums,
                                         minimal_meta=minimal)
            st = self.bench("bench_data", "stats", "--dir", path)
            st["label"] = label
            st["mdb_stat"] = mdb_stat(os.path.join(path, "gulpdb.index"))
            rows.append(st)
        # The GulpIO directory the interop benchmark imported, when it ran.
        gulpio = os.path.join(self.data, "gulpio_%gMB" % self.scale.gulpio_gmeta_mb)
        if os.path.isdir(os.path.join(gulpio, "gulpdb.index")):
            st = self.bench("bench_data", "stats", "--dir", gulpio)
            st["label"] = "imported GulpIO directory (2-20 KB frames, GulpIO2-style meta)"
            st["mdb_stat"] = mdb_stat(os.path.join(gulpio, "gulpdb.index"))
            rows.append(st)
        self.results["index_size"] = {"videos": videos, "rows": rows}
        for st in rows:
            per_frame = st["index_bytes"] / st["frames"]
            gmeta = st["gmeta_bytes"] / st["frames"]
            contiguous = st["label"].startswith("contiguous")
            rec = st["records"]
            self.figure("index size", st["label"], "B/frame", point(per_frame), point(gmeta),
                        ".gmeta JSON of the same videos", higher_is_better=False,
                        target=("<= 6 B/frame", "value", "<=", 6.0) if contiguous else None,
                        note="%s videos, %s frames; record payload %.2f B/frame = sizes %.2f + "
                             "checksums %.2f + meta %.2f + FlatBuffers structure %.2f (%.0f B per "
                             "video); keys %.2f, order table %.2f, LMDB pages the rest" % (
                                 fmt_count(st["videos"]), fmt_count(st["frames"]),
                                 rec["record_bytes_per_frame"], rec["jpeg_size_bytes_per_frame"],
                                 rec["checksum_bytes_per_frame"], rec["meta_bytes_per_frame"],
                                 rec["other_record_bytes_per_frame"],
                                 rec["other_record_bytes_per_video"], rec["key_bytes_per_frame"],
                                 rec["order_bytes_per_frame"]))

    def bench_query(self):
        s = self.scale
        path = os.path.join(self.data, "query_%d" % s.query_videos)
        r = self.bench("query_bench", "--dir", path, "--videos", s.query_videos,
                       "--repeat", s.query_repeat)
        self.results["query"] = r
        videos = fmt_count(r["videos"])
        self.figure("meta query", "Select, %s matches of %s videos: meta index vs scan" % (
            fmt_count(r["group_matches"]), videos), "ms",
            from_stats(r["indexed_group_ms"]), from_stats(r["scan_group_ms"]),
            "the same Select on an unindexed key (a scan of every record)",
            higher_is_better=False)
        self.figure("meta query", "Select label=class_7 (%s matches of %s videos)" % (
            fmt_count(r["label_matches"]), videos), "ms",
            from_stats(r["indexed_label_ms"]), from_stats(r["scan_label_ms"]),
            "the same Select before the label has an index (a scan)", higher_is_better=False)
        rows = r["by_matches"]
        first, last = rows[0], rows[-1]
        # O(matches): time per match flat from 100 matches up (fixed costs dominate below).
        base = next((row for row in rows if row["matches"] >= 100), first)
        growth = {k: last["ns_per_match"][k] / base["ns_per_match"]["median"]
                  for k in ("median", "min", "max")}
        self.figure("meta query", "indexed Select time per match, %s -> %s matches" % (
            fmt_count(base["matches"]), fmt_count(last["matches"])), "x", growth,
            higher_is_better=False, target=("O(matches): <= 2x", "value", "<=", 2.0),
            note="; ".join("%s matches %.3f ms" % (fmt_count(row["matches"]),
                                                    row["indexed_ms"]["median"]) for row in rows)
            + "; index built in %.1f s" % r["index_build_seconds"])

    def bench_query_lang(self):
        s = self.scale
        path = os.path.join(self.data, "query_lang_%d" % s.query_videos)
        r = self.bench("query_lang_bench", "--dir", path, "--videos", s.query_videos,
                       "--repeat", s.query_repeat)
        self.results["query_lang"] = r
        videos = fmt_count(r["videos"])
        for q in r["queries"]:
            target = None
            if q["name"] == "range":
                target = ("indexed >= 100x the scan", "ratio", ">=", 100.0)
            self.figure("query language", "%s (%s of %s videos): ordered meta index vs scan" % (
                q["query"], fmt_count(q["matches"]), videos), "ms",
                from_stats(q["indexed_ms"]), from_stats(q["scan_ms"]),
                "the same query with the indexes dropped (one scan of every record in C++)",
                higher_is_better=False, target=target)
        rng = next(q for q in r["queries"] if q["name"] == "range")
        self.figure("query language", "scan rate of %s videos (%s)" % (videos, rng["query"]),
                    "M videos/s", {k: v if k == "count" else v / 1e6 for k, v in
                                   from_stats(rng["scan_videos_per_s"]).items()},
                    note="per CPU-second of its one thread: %.2f M videos/s; ordered index of "
                         "'duration' built in %.1f s" % (
                             rng["scan_videos_per_cpu_s"]["median"] / 1e6,
                             r["duration_index_seconds"]))

    def bench_gmeta_reader(self):
        s = self.scale
        with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
            self.run([self.program("gmeta_bench"), "--size-mb", str(s.gmeta_reader_mb),
                      "--repeat", str(s.gmeta_reader_repeat), "--dir", self.data,
                      "--json", out.name], "gmeta_bench")
            r = json.load(out)
        self.results["gmeta_reader"] = r
        by = {m["method"]: m for m in r["results"]}
        if "gulpdb" in by and "read_only" in by:
            self.figure("import/export", "streaming .gmeta reader alone (one %d MB file)" %
                        round(r["file_bytes"] / 1e6), "MB/s", point(by["gulpdb"]["mb_per_s"]),
                        point(by["read_only"]["mb_per_s"]), "read(2) of the file, no parsing",
                        note="best of %d runs; peak RSS %.1f MB" % (
                            s.gmeta_reader_repeat, by["gulpdb"]["peak_rss_bytes"] / 1e6))
