"""Remote datasets on a local s3rver (tests/harness/s3_proxy.py), directly and
behind a proxy that adds latency.
"""

import os
import sys
import time

from run_common import (
    BASELINES,
    PYTHON,
    REMOTE_BATCH,
    REMOTE_CONNECTIONS,
    REMOTE_LATENCY_MS,
    REPO,
    fmt_bytes,
    fmt_count,
    from_stats,
    log,
    point,
    rm,
    summary,
)


class RemoteBenchmarks:
    """A part of Runner (bench/run.py): uses its processes, datasets and figures."""

    def bench_remote(self, dataset, manifest):
        """Remote datasets on a local s3rver: clips against a bare libcurl loop and one at a
        time, Python against boto3, opening against dataset size; directly and behind a
        proxy that adds REMOTE_LATENCY_MS to every GET."""
        sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
        import s3_proxy  # tests/harness/s3_proxy.py: s3rver and the proxy, bounded start/stop

        s = self.scale
        cli = os.path.join(os.path.dirname(self.bin_dir), "cli", "gulpdb")
        if not os.access(cli, os.X_OK):
            raise SystemExit("run.py: %s is not built" % cli)
        clips = self.clips_file(manifest, REMOTE_BATCH * s.remote_batches, 5, "clips_remote.tsv")
        results = {"batch": REMOTE_BATCH, "connections": REMOTE_CONNECTIONS,
                   "latency_ms": REMOTE_LATENCY_MS, "settings": {}, "open": []}
        with s3_proxy.S3rverProcess("gulpdb-bench") as server:
            env = dict(os.environ, AWS_ENDPOINT_URL=server.endpoint, AWS_ACCESS_KEY_ID="S3RVER",
                       AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1",
                       GULPDB_CACHE=os.path.join(self.data, "remote_cache"),
                       # Reads from the store every time, as the baselines do.
                       GULPDB_FRAME_CACHE_BYTES="0",
                       GULPDB_S3_MAX_CONNECTIONS=str(REMOTE_CONNECTIONS),
                       PYTHONPATH=os.path.join(os.path.dirname(self.bin_dir), "python"))
            rm(env["GULPDB_CACHE"])
            data_bytes = sum(os.path.getsize(os.path.join(dataset, n)) for n in os.listdir(dataset)
                             if n.endswith(".gulp"))
            t0 = time.perf_counter()
            self.run([cli, "push", dataset, "s3://gulpdb-bench/realistic", "--quiet"],
                     "remote_push", env=env)
            push_seconds = time.perf_counter() - t0
            results["push"] = {"bytes": data_bytes, "seconds": push_seconds}
            self.figure("remote", "push (first, %s of chunk files)" % fmt_bytes(data_bytes), "MB/s",
                        point(data_bytes / 1e6 / push_seconds),
                        note="gulpdb push --jobs 4 to the local s3rver: uploads, CRC-32C and "
                             ".gmeta of every chunk, the index snapshot, the manifest")
            proxy = s3_proxy.ProxyProcess(("127.0.0.1", server.port)).start()
            try:
                proxy.add_fault(kind="delay", delay_ms=REMOTE_LATENCY_MS, fraction=1.0,
                                method="GET")
                settings = [("direct", server.endpoint, False),
                            ("%d ms latency" % REMOTE_LATENCY_MS, proxy.endpoint, True)]
                for name, endpoint, anonymous in settings:
                    self.remote_setting(name, endpoint, anonymous, dataset, clips, env, results)
            finally:
                proxy.stop()
            for videos in s.remote_open_videos:
                path, _ = self.index_dataset(videos)
                prefix = "index_%d" % videos
                # The whole snapshot, which these rows measure; partitioned
                # snapshots (push's default) are bench/partition_bench.py's.
                self.run([cli, "push", path, "s3://gulpdb-bench/" + prefix, "--quiet",
                          "--layout", "whole"], "remote_push", env=env)
                r = self.run_json([self.program("remote_read_bench"), "open", "--dataset", path,
                                   "--endpoint", server.endpoint, "--bucket", "gulpdb-bench",
                                   "--prefix", prefix, "--reps", str(max(3, s.remote_reps))],
                                  "remote_read_bench", env=env)
                results["open"].append(r)
                log("remote open %d videos: first %.1f ms (%s), re-open %.2f ms (%d bytes)" % (
                    videos, r["first_open"]["ms"]["median"], fmt_bytes(r["snapshot_bytes"]),
                    r["reopen"]["ms"]["median"], r["reopen"]["bytes"]["median"]))
        self.results["remote"] = results
        for r in results["open"]:
            n = fmt_count(r["videos"])
            self.figure("remote", "first open (index download), %s videos" % n, "ms",
                        from_stats(r["first_open"]["ms"]), from_stats(r["local_open"]["ms"]),
                        "Dataset::Open of the local copy", higher_is_better=False,
                        note="downloads the %s snapshot once per machine (%d requests, %s)" % (
                            fmt_bytes(r["snapshot_bytes"]), r["first_open"]["requests"]["median"],
                            fmt_bytes(r["first_open"]["bytes"]["median"])))
            self.figure("remote", "re-open, %s videos" % n, "ms",
                        from_stats(r["reopen"]["ms"]), from_stats(r["local_open"]["ms"]),
                        "Dataset::Open of the local copy", higher_is_better=False,
                        note="one GET of the manifest: %s" % fmt_bytes(
                            r["reopen"]["bytes"]["median"]))

    def remote_setting(self, name, endpoint, anonymous, dataset, clips, env, results):
        s = self.scale
        args = [self.program("remote_read_bench"), "clips", "--dataset", dataset, "--clips", clips,
                "--endpoint", endpoint, "--bucket", "gulpdb-bench", "--prefix", "realistic",
                "--batch", str(REMOTE_BATCH), "--batches", str(s.remote_batches),
                "--sequential", str(s.remote_sequential), "--connections",
                str(REMOTE_CONNECTIONS), "--reps", str(s.remote_reps)]
        setting_env = dict(env, AWS_ENDPOINT_URL=endpoint)
        if anonymous:
            args.append("--anonymous")
            for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
                setting_env.pop(key, None)
            setting_env["AWS_SHARED_CREDENTIALS_FILE"] = "/dev/null"
        c = self.run_json(args, "remote_read_bench", env=setting_env)
        py = self.run_json([PYTHON, BASELINES, "s3-clips", "--url", "s3://gulpdb-bench/realistic",
                            "--dataset", dataset, "--clips", clips, "--batch", str(REMOTE_BATCH),
                            "--batches", str(s.remote_python_batches), "--threads",
                            str(REMOTE_CONNECTIONS), "--reps", str(s.remote_reps)]
                           + (["--anonymous"] if anonymous else []), "baselines", env=setting_env)
        results["settings"][name] = {"cpp": c, "python": py}
        log("remote %s: batch %.0f clips/s, bare curl %.0f, one at a time %.0f; Python gulpdb "
            "%.0f, boto3 %.0f" % (name, c["gulpdb_batch"]["clips_per_s"]["median"],
                                  c["bare_curl"]["clips_per_s"]["median"],
                                  c["gulpdb_sequential"]["clips_per_s"]["median"],
                                  summary(py["gulpdb_clips_per_s"])["median"],
                                  summary(py["boto3_clips_per_s"])["median"]))
        where = "local s3rver" if name == "direct" else             "local s3rver behind a proxy adding %d ms per GET (anonymous requests)" % (
                REMOTE_LATENCY_MS)
        self.figure("remote", "random 16-frame clips, read_batch of 64, %s" % name, "clips/s",
                    from_stats(c["gulpdb_batch"]["clips_per_s"]),
                    from_stats(c["bare_curl"]["clips_per_s"]),
                    "bare libcurl multi loop, same ranges and %d connections" % REMOTE_CONNECTIONS,
                    target=(">= 0.8x bare libcurl", "ratio", ">=", 0.8),
                    note="%s; %.1f requests per clip; %.0f vs %.0f us of client CPU per clip" % (
                        where, c["gulpdb_batch"]["requests_per_clip"],
                        c["gulpdb_batch"]["cpu_us_per_clip"]["median"],
                        c["bare_curl"]["cpu_us_per_clip"]["median"]))
        self.figure("remote", "read_batch of 64 clips vs one clip at a time, %s" % name,
                    "clips/s", from_stats(c["gulpdb_batch"]["clips_per_s"]),
                    from_stats(c["gulpdb_sequential"]["clips_per_s"]),
                    "ReadJpegs one clip at a time",
                    target=(">= 4x", "ratio", ">=", 4.0) if name != "direct" else None,
                    note=where + ("" if name != "direct" else
                                  "; with no network latency the server's CPU, not waiting, "
                                  "limits both"))
        self.figure("remote", "Python: read_jpeg_batch vs boto3 per frame, %s" % name, "clips/s",
                    summary(py["gulpdb_clips_per_s"]), summary(py["boto3_clips_per_s"]),
                    "boto3 get_object(Range) per frame, ThreadPoolExecutor(%d)" % (
                        REMOTE_CONNECTIONS),
                    target=(">= 3x", "ratio", ">=", 3.0), note=where)
