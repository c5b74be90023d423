"""H.264 datasets against JPEG datasets and PyAV (issue 23): bench/h264_bench.py
in a fresh process, its results turned into figures."""

import os

from run_common import HERE, PYTHON, fmt_bytes, log, point, summary

H264_BENCH = os.path.join(HERE, "h264_bench.py")
PYAV = "PyAV: open the MP4, seek to the keyframe, decode forward (the same stream)"


def clips(r, key):
    """The summary of a method's clips/s, or None when it was not measured."""
    return summary(r[key]["clips_per_s"]) if key in r else None


def cpu_ratio(r, ours, theirs):
    a = summary([x for x in r[ours]["clips_per_cpu_s"] if x])
    b = summary([x for x in r[theirs]["clips_per_cpu_s"] if x])
    return a["median"] / b["median"] if a and b and b["median"] else None


class H264Benchmarks:
    """A part of Runner (bench/run.py): uses its processes, datasets and figures."""

    def bench_h264(self):
        """bytes, PSNR, clips/s against PyAV and the JPEG path, segment sampling, S3."""
        if self.args.scale == "smoke":
            # Minutes of ffmpeg encoding at any useful size; the test suite runs
            # h264_bench.py --scale smoke on its own (bench_smoke_h264) instead.
            self.notes.append("h264: not run at the smoke scale (bench_smoke_h264 covers it)")
            return
        build = os.path.dirname(self.bin_dir)
        cli = os.path.join(build, "cli", "gulpdb")
        if not os.access(cli, os.X_OK):
            raise SystemExit("run.py: %s is not built" % cli)
        env = self.python_env()
        command = [PYTHON, H264_BENCH, "--gulpdb", cli, "--dir", self.data,
                   "--scale", self.args.scale]
        r = self.run_json(command, "h264_bench", env=env)
        self.results["h264"] = r
        self.h264_figures(r)

    def h264_figures(self, r):
        gop = 8 if 8 in r["gops"] else r["gops"][0]
        pyav_gop = gop if gop in r["pyav_gops"] else r["pyav_gops"][0]
        for name in r["sources"]:
            s = r["per_source"][name]
            b = s["bytes"]
            h = b["h264"][str(gop)]
            label = "%s (%s, %d frames)" % (name, s["size"], s["frames"])
            others = ", ".join("GOP %s %.0f B (%.1f dB)" % (g, x["per_frame"], x["psnr_db"])
                               for g, x in b["h264"].items() if g != str(gop))
            self.figure("h264", "bytes per frame, H.264 GOP %d vs JPEG q90: %s" % (gop, label),
                        "B", point(h["per_frame"]), point(b["jpeg_per_frame"]),
                        "JPEG q90 (gulpdb ingest --codec jpeg)", higher_is_better=False,
                        target=("≤ 1/3 of JPEG", "ratio", ">=", 3.0),
                        note="stored stream with its SPS/PPS; " + others,
                        gulpdb_name="gulpdb h264")
            self.figure("h264", "PSNR of H.264 GOP %d frames against the JPEG path's: %s" % (
                gop, label), "dB", point(h["psnr_db"]),
                target=("≥ 35 dB", "value", ">=", 35.0),
                note="over all frames (mean squared error); worst frame %.1f dB; against the "
                     "frames the ingest encoded: h264 %.1f dB, JPEG q90 %.1f dB" % (
                         h["psnr_min_frame_db"], h.get("psnr_vs_source_db", float("nan")),
                         b.get("jpeg_psnr_vs_source_db", float("nan"))),
                gulpdb_name="gulpdb h264")
            c = s["contiguous"]
            wrong = c.get("pyav_g%d_wrong_clips" % pyav_gop, 0)
            check = s["check"].get(str(pyav_gop), {})
            for threads in (1, 2):
                ours, theirs = "h264_g%d_t%d" % (pyav_gop, threads), "pyav_g%d_t%d" % (
                    pyav_gop, threads)
                cpu = cpu_ratio(c, ours, theirs)
                self.figure(
                    "h264", "random 16-frame clips, %d thread%s, GOP %d: %s" % (
                        threads, "s" if threads > 1 else "", pyav_gop, label), "clips/s",
                    clips(c, ours), clips(c, theirs), PYAV,
                    target=("≥ 2× PyAV", "ratio", ">=", 2.0),
                    note="per CPU-second %s; %.1f frames decoded per clip (both); PyAV: %d of "
                         "%d clips on wrong frames, %d of %d checked frames not gulpdb's "
                         "(mean pixel difference %.2f)" % (
                             "%.2f×" % cpu if cpu else "–",
                             c["h264_g%d_decoded_per_clip" % pyav_gop], wrong,
                             c.get("pyav_g%d_clips_read" % pyav_gop, 0),
                             check.get("frames_not_gulpdbs", 0), check.get("frames", 0),
                             check.get("mean_abs_diff") or 0.0),
                    gulpdb_name="gulpdb h264")
            for threads in (1, 2):
                self.figure(
                    "h264", "random 16-frame clips, %d thread%s, H.264 GOP %d vs JPEG: %s" % (
                        threads, "s" if threads > 1 else "", gop, label), "clips/s",
                    clips(c, "h264_g%d_t%d" % (gop, threads)), clips(c, "jpeg_t%d" % threads),
                    "gulpdb JPEG path (q90)", gulpdb_name="gulpdb h264")
        s3 = r.get("s3")
        if s3:
            where = ("read_batch of %d clips over every source, from a local s3rver behind a "
                     "proxy adding %d ms per GET" % (s3["batch"], s3["latency_ms"]))
            self.figure("h264", "S3: random 16-frame clips, H.264 GOP %d vs JPEG" % s3["gop"],
                        "clips/s", summary(s3["h264"]["clips_per_s"]),
                        summary(s3["jpeg"]["clips_per_s"]), "the JPEG dataset, same clips",
                        note=where, gulpdb_name="gulpdb h264")
            self.figure("h264", "S3: bytes fetched per clip, H.264 GOP %d vs JPEG" % s3["gop"],
                        "B", summary(s3["h264"]["bytes_per_clip"]),
                        summary(s3["jpeg"]["bytes_per_clip"]), "the JPEG dataset, same clips",
                        higher_is_better=False, gulpdb_name="gulpdb h264",
                        note="%.2f vs %.2f requests per clip; %s vs %s per clip" % (
                            summary(s3["h264"]["requests_per_clip"])["median"],
                            summary(s3["jpeg"]["requests_per_clip"])["median"],
                            fmt_bytes(summary(s3["h264"]["bytes_per_clip"])["median"]),
                            fmt_bytes(summary(s3["jpeg"]["bytes_per_clip"])["median"])))
        log("h264: %d sources measured" % len(r["sources"]))
