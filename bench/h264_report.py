"""The h264 benchmark's part of latest.md and its plot (h264.png), from the results
of bench/h264_bench.py (doc["results"]["h264"]); used by bench/report.py."""


def _median(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _rate(r, key):
    m = _median(r[key]["clips_per_s"]) if key in r else None
    return "–" if m is None else ("%.0f" % m if m >= 100 else "%.1f" % m)


def details(h):
    """Markdown lines: bytes and PSNR, contiguous clips, the segment trade-off, S3."""
    gops = h["gops"]
    out = ["### h264: H.264 datasets against JPEG and PyAV (`h264_bench.py`)", "",
           "Every frame of each source (`gulpdb ingest --frame-rate 0`); JPEG at quality 90, "
           "H.264 at the default CRF (%s). %d-frame clips, %d clips per source and repetition, "
           "median of %d repetitions; PyAV %s." % (
               h.get("crf"), h["clip_frames"], h["clips"], h["reps"], h.get("pyav_version")), "",
           "**Bytes per frame and PSNR** (dB over all frames: h264 against the JPEG path's "
           "frames, the target, / against the RGB frames the ingest encoded; JPEG against "
           "those)", "",
           "| source | frames | JPEG B/frame (PSNR vs source) | " + " | ".join(
               "GOP %d B/frame (JPEG ÷) | GOP %d PSNR vs JPEG / vs source" % (g, g) for g in gops)
           + " |", "|---|---|---|" + "---|---|" * len(gops)]
    for name in h["sources"]:
        s = h["per_source"][name]
        b = s["bytes"]
        cells = []
        for g in gops:
            x = b["h264"][str(g)]
            cells.append("%.0f (%.1f×)" % (x["per_frame"], x["jpeg_over_h264"]))
            cells.append("%.1f / %.1f" % (x["psnr_db"], x.get("psnr_vs_source_db", float("nan"))))
        out.append("| %s %s | %d | %.0f (%.1f) | %s |" % (
            name, s["size"], s["frames"], b["jpeg_per_frame"],
            b.get("jpeg_psnr_vs_source_db", float("nan")), " | ".join(cells)))
    out += ["", "**Random contiguous clips/s** (1 thread / 2 threads each reading clips; "
            "PyAV reads the same H.264 stream from an MP4)", ""]
    cols = ["JPEG"] + ["h264 GOP %d" % g for g in gops] + [
        "PyAV GOP %d" % g for g in h["pyav_gops"]]
    out += ["| source | " + " | ".join(cols) + " | PyAV clips on wrong frames |",
            "|---|" + "---|" * (len(cols) + 1)]
    for name in h["sources"]:
        c = h["per_source"][name]["contiguous"]
        keys = ["jpeg"] + ["h264_g%d" % g for g in gops] + ["pyav_g%d" % g for g in h["pyav_gops"]]
        cells = ["%s / %s" % (_rate(c, k + "_t1"), _rate(c, k + "_t2")) for k in keys]
        wrong = ", ".join("%d of %d" % (c["pyav_g%d_wrong_clips" % g],
                                        c["pyav_g%d_clips_read" % g]) for g in h["pyav_gops"])
        out.append("| %s | %s | %s |" % (name, " | ".join(cells), wrong))
    out += ["", "**Segment sampling** (%d frames, one in each of %d equal segments; 1 thread): "
            "clips/s and frames decoded per clip" % (h["segments"], h["segments"]), ""]
    cols = ["JPEG"] + ["h264 GOP %d" % g for g in gops] + ["PyAV GOP %d" % g
                                                            for g in h["pyav_gops"]]
    out += ["| source | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for name in h["sources"]:
        s = h["per_source"][name]["segment"]
        keys = ["jpeg"] + ["h264_g%d" % g for g in gops] + ["pyav_g%d" % g for g in h["pyav_gops"]]
        out.append("| %s | %s |" % (name, " | ".join(
            "%s (%.1f)" % (_rate(s, k), s[k + "_decoded_per_clip"]) for k in keys)))
    out.append("")
    s3 = h.get("s3")
    if s3:
        out += ["**From S3** (local s3rver behind a proxy adding %d ms per GET; read_batch of %d "
                "clips over every source, a fresh process and cache per repetition)" % (
                    s3["latency_ms"], s3["batch"]), "",
                "| dataset | clips/s | bytes per clip | requests per clip |", "|---|---|---|---|"]
        for name, label in (("jpeg", "JPEG q90"), ("h264", "H.264 GOP %d" % s3["gop"])):
            x = s3[name]
            out.append("| %s | %.1f | %.0f | %.2f |" % (
                label, _median(x["clips_per_s"]), _median(x["bytes_per_clip"]),
                _median(x["requests_per_clip"])))
        out.append("")
    return out


def plot(h, plt, path):
    """Bytes per frame and 1-thread clips/s per source."""
    import numpy as np
    names = h["sources"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    x = np.arange(len(names))
    series = [("JPEG q90", [h["per_source"][n]["bytes"]["jpeg_per_frame"] for n in names])]
    for g in h["gops"]:
        series.append(("H.264 GOP %d" % g, [h["per_source"][n]["bytes"]["h264"][str(g)]
                                            ["per_frame"] for n in names]))
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series):
        axes[0].bar(x + i * width, [v / 1000 for v in values], width, label=label)
    axes[0].set_ylabel("kB per frame")
    axes[0].set_title("stored bytes per frame")
    rates = [("JPEG", "jpeg_t1")] + [("H.264 GOP %d" % g, "h264_g%d_t1" % g) for g in h["gops"]]
    rates += [("PyAV GOP %d" % g, "pyav_g%d_t1" % g) for g in h["pyav_gops"]]
    width = 0.8 / len(rates)
    for i, (label, key) in enumerate(rates):
        axes[1].bar(x + i * width, [_median(h["per_source"][n]["contiguous"][key]["clips_per_s"])
                                    for n in names], width, label=label)
    axes[1].set_ylabel("clips/s")
    axes[1].set_title("random 16-frame clips, 1 thread")
    for ax in axes:
        ax.set_xticks(x + 0.4 - 0.4 / len(series))
        ax.set_xticklabels(names, rotation=20, fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
