#!/usr/bin/python3
"""Turns a benchmark run (latest.json, written by bench/run.py) into a Markdown
table and PNG plots.

    /usr/bin/python3 bench/report.py [--in bench/results/latest.json] [--out bench/results]

run.py calls write_report() itself; running this file redraws the table and the
plots from a saved latest.json.
"""

import argparse
import json
import os
import sys

import h264_report  # bench/h264_report.py, next to this file

PLOTS = ["targets.png", "summary.png", "open.png", "lookup.png", "throughput.png", "decode.png", "append.png",
         "interop.png", "index_size.png", "h264.png"]


def fmt(x):
    """A number with about three significant digits."""
    if x is None:
        return "–"
    a = abs(x)
    if a >= 1000:
        return "{:,.0f}".format(x)
    if a >= 100:
        return "%.0f" % x
    if a >= 10:
        return "%.1f" % x
    if a >= 1:
        return "%.2f" % x
    return "%.3g" % x


def fmt_summary(s, unit=""):
    if not s:
        return "–"
    text = "%s %s" % (fmt(s["median"]), unit) if unit else fmt(s["median"])
    if s.get("count", 1) > 1 and s["min"] != s["max"]:
        text += " [%s–%s]" % (fmt(s["min"]), fmt(s["max"]))
    return text.strip()


def fmt_ratio(r):
    if r is None:
        return "–"
    return "%s×" % fmt(r)


def markdown(doc, plots=PLOTS):
    meta = doc["meta"]
    host = meta.get("host") or {}
    lines = ["# gulpdb benchmarks", ""]
    commit = "commit `%s`" % meta["commit"] if meta.get("commit") else "not a git checkout"
    load = host.get("load_average_at_end") or []
    lines.append("Scale **%s**, %s, %s; %s, %s cores, %s GB RAM, Linux %s; run took %s s; "
                 "load average at the end %s (other load on the machine shows in every "
                 "figure)." % (
                     meta["scale"], meta["date"], commit, host.get("cpu"), host.get("cores"),
                     host.get("memory_gb"), host.get("kernel"), fmt(meta.get("seconds")),
                     " / ".join("%.1f" % x for x in load) or "unknown"))
    lines.append("")
    lines.append("Each cell is the median of several runs with [min–max]. **× baseline** is how "
                 "many times better gulpdb does than the baseline measured in the same run "
                 "(higher is better whatever the unit: for times and sizes it is baseline / "
                 "gulpdb).")
    lines.append("")
    lines.append("| benchmark | figure | gulpdb | baseline | baseline figure | × baseline | "
                 "target | met |")
    lines.append("|---|---|---|---|---|---|---|---|")
    notes = []
    for f in doc["figures"]:
        name = f["figure"]
        if f.get("note"):
            notes.append(f["note"])
            name += " [%d]" % len(notes)
        met = "" if f["met"] is None else ("met" if f["met"] else "**missed**")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            f["benchmark"], name, fmt_summary(f["gulpdb"], f["unit"]),
            f["baseline_name"] or "–", fmt_summary(f["baseline"], f["unit"]),
            fmt_ratio(f["ratio"]), f["target"] or "", met))
    lines.append("")
    for i, note in enumerate(notes, 1):
        lines.append("%d. %s" % (i, note))
    lines.append("")
    missed = [f for f in doc["figures"] if f["met"] is False]
    with_target = [f for f in doc["figures"] if f["met"] is not None]
    lines.append("Targets: %d of %d met." % (len(with_target) - len(missed), len(with_target)))
    if missed:
        lines.append("Missed: " + "; ".join("%s — %s" % (f["benchmark"], f["figure"])
                                            for f in missed) + ".")
    for n in doc.get("notes", []):
        lines.append("")
        lines.append("Note: " + n)
    lines.append("")
    lines += details(doc["results"])
    if plots:
        lines.append("Plots: " + ", ".join("[%s](%s)" % (p, p) for p in plots))
    lines.append("")
    return "\n".join(lines)


def details(results):
    """Per-benchmark tables of the numbers behind the figures."""
    out = ["## Details", ""]
    real = results.get("realistic_dataset")
    if real:
        out += ["Realistic dataset: %s videos, %s frames of %sx%s (%s B per JPEG on average, "
                "from %s), %s chunks." % (
                    fmt(real.get("videos")), fmt(real.get("frames")), real.get("width"),
                    real.get("height"), fmt(real.get("mean_jpeg_bytes")),
                    os.path.basename(str(real.get("frames_source"))), real.get("chunks")), ""]
    if "open" in results:
        out += ["### open (fresh process each run; page cache warm)", "",
                "| videos | .gmeta MB | gulpdb open ms | read ms | total ms | peak RSS MB | "
                ".gmeta load total ms | its peak RSS MB |", "|---|---|---|---|---|---|---|---|"]
        for p in results["open"]["points"]:
            g, b = p["gulpdb"], p["gmeta_json"]
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                fmt(p["videos"]), fmt((p.get("gmeta_bytes") or 0) / 1e6),
                fmt_summary(g["open_ms"]), fmt_summary(g["read_ms"]), fmt_summary(g["total_ms"]),
                fmt_summary(g["peak_rss_mb"]), fmt_summary(b["total_ms"]),
                fmt_summary(b["peak_rss_mb"])))
        out.append("")
    if "lookup" in results:
        r = results["lookup"]
        out += ["### lookup (%s videos, %s lookups x %s rounds)" % (
            fmt(r["videos"]), fmt(r["lookups"]), r["repeat"]), "",
            "| step | p50 µs | p99 µs | mean µs |", "|---|---|---|---|"]
        labels = {"txn_get": "LMDB read txn + get (baseline)",
                  "txn_verify": "+ FlatBuffers verification",
                  "txn_decode": "+ decode the whole record",
                  "find": "Dataset::Find", "read_jpegs": "Dataset::ReadJpegs(id, 0:16)"}
        for k, label in labels.items():
            m = r["methods"][k]
            out.append("| %s | %s | %s | %s |" % (label, fmt_summary(m["p50_us"]),
                                                 fmt_summary(m["p99_us"]),
                                                 fmt_summary(m["mean_us"])))
        out.append("")
    if "decode" in results:
        r = results["decode"]
        out += ["### decode (%d clips of %d frames, %dx%d)" % (
            r["clips"], r["frames_per_clip"], r["width"], r["height"]), "",
            "| method | threads | clips/s | frames/s | clips per CPU-second | minor faults / clip |",
            "|---|---|---|---|---|---|"]
        for k, m in r["methods"].items():
            out.append("| %s | %s | %s | %s | %s | %s |" % (
                k, m["threads"], fmt_summary(m["clips_per_s"]), fmt_summary(m["frames_per_s"]),
                fmt_summary(m.get("clips_per_cpu_s")), fmt(m.get("minor_faults_per_clip"))))
        for w, p in sorted(r.get("pillow", {}).items()):
            out.append("| Pillow, folder of JPEGs | %s | %s | %s | – | – |" % (
                w, fmt_summary(summary_of(p["clips_per_s"])),
                fmt_summary(summary_of(p["frames_per_s"]))))
        ab = r.get("interleaved")
        if ab:
            out += ["", "Interleaved unit by unit (decode_ab, %d rounds; target %sx the bare loop):"
                    % (ab["rounds"], fmt(ab["target_ratio"])), "",
                    "| threads | method | clips/s | x bare | x bare per CPU-second | load average |",
                    "|---|---|---|---|---|---|"]
            for threads in ("1", "2"):
                part = ab[threads]
                for k, m in part["methods"].items():
                    out.append("| %s | %s | %s | %s | %s | %s -> %s |" % (
                        threads, k, fmt(m["clips_per_s"]), fmt(m["ratio"]), fmt(m["cpu_ratio"]),
                        fmt(part["load_start"]), fmt(part["load_end"])))
        out.append("")
    if "append" in results:
        r = results["append"]
        fs = r.get("flush_syscalls") or {}
        out += ["### append (%d frames per video, %s B per frame)" % (
            r["frames_per_video"], fmt(r["mean_frame_bytes"])), "",
            "| batch | commits | gulpdb videos/s | MB/s | commit ms | durable writes / commit "
            "(fsync family + O_DSYNC) | bare videos/s | bare MB/s |",
            "|---|---|---|---|---|---|---|---|"]
        for row in r["batches"]:
            per = (fs.get("per_commit") or {}).get(str(row["batch"]))
            writes = "–" if not per else "%s (%s + %s)" % (
                fmt(per["total"]), fmt(per["flush"]), fmt(per["dsync_writes"]))
            out.append("| %d | %d | %s | %s | %s | %s | %s | %s |" % (
                row["batch"], row["commits"], fmt(row["gulpdb_videos_per_s"]),
                fmt(row["gulpdb_mb_per_s"]), fmt_summary(row["commit_ms"]), writes,
                fmt(row.get("bare_videos_per_s")), fmt(row.get("bare_mb_per_s"))))
        out += ["", "Durable writes counted with: %s. The bare baseline makes 1 per batch." %
                fs.get("how", "–"), ""]
    if "small_commits" in results:
        r = results["small_commits"]
        out += ["### small commits (%s videos of %d frames, %s B per frame)" % (
            fmt(r["videos"]), r["frames_per_video"], fmt(r["mean_frame_bytes"])), "",
            "| mode | videos per chunk | data.mdb bytes | journal bytes | videos/s |",
            "|---|---|---|---|---|"]
        for row in r["runs"]:
            out.append("| %s | %s | %s | %s | %s |" % (
                row["mode"], fmt(row["videos_per_chunk"]), fmt(row["index_bytes"]),
                fmt(row["journal_bytes"]), fmt(row["videos_per_s"])))
        per = r.get("durable_writes_per_commit") or {}
        if per:
            out += ["", "Durable writes per commit (fsync family + O_DSYNC, strace): " + "; ".join(
                "%s %s (%s + %s)" % (mode, fmt(p["total"]), fmt(p["flush"]),
                                     fmt(p["dsync_writes"])) for mode, p in sorted(per.items()))]
        out.append("")
    if "interop" in results:
        r = results["interop"]
        g = r["gulpio"]
        out += ["### import/export (%s MB of .gmeta, %s files, %s videos, %s frames)" % (
            fmt(g["gmeta_bytes"] / 1e6), fmt(g["chunks"]), fmt(g["videos"]), fmt(g["frames"])),
            "", "| step | seconds | MB/s | peak RSS MB |", "|---|---|---|---|"]
        for label, rows, sec, rate in (
                ("gulpdb ImportGulpio", r["import"], "seconds", "mb_per_s"),
                ("Python json.load", r["json_load"], "seconds", "mb_per_s"),
                ("gulpdb ExportGmeta", r["export"], "seconds", "mb_per_s"),
                ("Python json.dump", r["json_load"], "dump_seconds", "dump_mb_per_s")):
            rows = [x for x in rows if sec in x]
            if not rows:
                continue
            peak = "–" if label == "Python json.dump" else fmt_summary(
                summary_of([x["peak_rss_mb"] for x in rows]))
            out.append("| %s | %s | %s | %s |" % (
                label, fmt_summary(summary_of([x[sec] for x in rows])),
                fmt_summary(summary_of([x[rate] for x in rows])), peak))
        tmpfs = r.get("import_index_on_tmpfs")
        if tmpfs:
            out.append("| gulpdb ImportGulpio, index on tmpfs (1 run) | %s | %s | %s |" % (
                fmt(tmpfs["seconds"]), fmt(tmpfs["mb_per_s"]), fmt(tmpfs["peak_rss_mb"])))
        crc = r.get("import_with_checksums")
        if crc:
            out.append("| gulpdb ImportGulpio with per-frame checksums, reading every data file "
                       "(1 run) | %s | %s | %s |" % (
                           fmt(crc["seconds"]), fmt(crc["mb_per_s"]), fmt(crc["peak_rss_mb"])))
        imp = r["import"]
        if imp and "peak_rss_anon_mb" in imp[0]:
            out += ["", "ImportGulpio's peak RSS split (sampled every 10 ms): private (RssAnon) "
                    "%s MB, mapped files (RssFile) %s MB; the index it built is %s MB." % (
                        fmt(max(x["peak_rss_anon_mb"] for x in imp)),
                        fmt(max(x["peak_rss_file_mb"] for x in imp)),
                        fmt(imp[-1]["index_bytes"] / 1048576))]
        if r.get("import_flush_syscalls"):
            fs = r["import_flush_syscalls"]
            out += ["", "Durable writes during one import (strace): %d fsync-family calls and %d "
                    "O_DSYNC writes, for %s chunks." % (fs["flush"], fs["dsync_writes"],
                                                        fmt(g["chunks"]))]
        out.append("")
    if "index_size" in results:
        r = results["index_size"]
        out += ["### index size", "",
                "| dataset | videos | frames | index bytes | B/frame | .gmeta B/frame | "
                "pages per LMDB database (videos / order / chunks / free) |",
                "|---|---|---|---|---|---|---|"]
        for st in r["rows"]:
            pages = "–"
            dbs = st.get("mdb_stat")
            if dbs:
                def used(name):
                    d = dbs.get(name) or {}
                    return sum(d.get(k, 0) for k in ("branch_pages", "leaf_pages",
                                                     "overflow_pages"))
                pages = "%d / %d / %d / %d" % (used("videos"), used("order"), used("chunks"),
                                               used("Freelist"))
            out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                st["label"], fmt(st["videos"]), fmt(st["frames"]), fmt(st["index_bytes"]),
                fmt(st["index_bytes"] / st["frames"]), fmt(st["gmeta_bytes"] / st["frames"]),
                pages))
        out.append("")
    if "cold" in results:
        c = results["cold"]
        out += ["### cold cache", "", "Page cache emptied with: %s (%s)." % (
            c["method"], c["reason"]), ""]
    if "h264" in results:
        out += h264_report.details(results["h264"])
    if "seconds" in results:
        out += ["Seconds per benchmark: " + ", ".join(
            "%s %s" % kv for kv in results["seconds"].items()) + ".", ""]
    return out


def summary_of(values):
    v = sorted(values)
    n = len(v)
    median = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return {"median": median, "min": v[0], "max": v[-1], "count": n}


# ---- plots ------------------------------------------------------------------------

GULPDB = "#1f77b4"
BASE = "#aaaaaa"
OTHER = "#ff7f0e"


def errbars(summaries):
    """Asymmetric error bars (min, max) around medians."""
    lo = [s["median"] - s["min"] for s in summaries]
    hi = [s["max"] - s["median"] for s in summaries]
    return [lo, hi]


def bar_group(ax, labels, series, ylabel, title, log=False):
    """series: list of (name, colour, [summary per label])."""
    import numpy as np

    x = np.arange(len(labels))
    width = 0.8 / len(series)
    for i, (name, colour, values) in enumerate(series):
        xs = x - 0.4 + width * (i + 0.5)
        meds = [v["median"] if v else 0 for v in values]
        errs = errbars([v if v else {"median": 0, "min": 0, "max": 0} for v in values])
        ax.bar(xs, meds, width, label=name, color=colour, yerr=errs, capsize=3)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)


def plot_summary(doc, plt, path):
    """Every figure's ratio against its baseline (1 = as good as the baseline)."""
    figs = [f for f in doc["figures"] if f["ratio"] is not None]
    if not figs:
        return False
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(figs) + 1.5))
    names = ["%s: %s" % (f["benchmark"], f["figure"]) for f in figs][::-1]
    ratios = [f["ratio"] for f in figs][::-1]
    colours = [GULPDB if r >= 1 else BASE for r in ratios]
    ax.barh(range(len(figs)), ratios, color=colours)
    ax.set_yticks(range(len(figs)))
    ax.set_yticklabels(names, fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("× baseline measured in the same run (higher is better; grey: below the "
                  "baseline)")
    ax.set_title("gulpdb against its baselines (%s scale)" % doc["meta"]["scale"], fontsize=10)
    for i, r in enumerate(ratios):
        ax.text(r, i, " %s×" % fmt(r), va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def margin(f):
    """How far a figure is from its target: >= 1 when met, the factor by which it falls short
    when not."""
    rule = f.get("target_rule")
    if not rule or not rule.get("value") or not rule["threshold"]:
        return None
    value, threshold = rule["value"], rule["threshold"]
    return value / threshold if rule["op"] in (">=", ">") else threshold / value


def plot_targets(doc, plt, path):
    """Every figure that has a target, as its distance from the target."""
    figs = [f for f in doc["figures"] if margin(f) is not None]
    if not figs:
        return False
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(figs) + 1.5))
    figs = figs[::-1]
    margins = [margin(f) for f in figs]
    ax.barh(range(len(figs)), margins,
            color=["#2ca02c" if f["met"] else "#d62728" for f in figs])
    ax.set_yticks(range(len(figs)))
    ax.set_yticklabels(["%s: %s" % (f["benchmark"], f["figure"]) for f in figs], fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("measured / target (>= 1: met, green; < 1: missed by that factor, red)")
    ax.set_title("gulpdb against its targets (%s scale)" % doc["meta"]["scale"], fontsize=10)
    for i, f in enumerate(figs):
        ax.text(margins[i], i, "  %s %s (target %s)" % (
            fmt(f["target_rule"]["value"]), "×" if f["target_rule"]["on"] == "ratio" else f["unit"],
            f["target"]), va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_open(results, plt, path):
    if "open" not in results:
        return False
    pts = results["open"]["points"]
    n = [p["videos"] for p in pts]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in ((a, "total_ms", "open + read one video (ms)"),
                           (b, "peak_rss_mb", "peak RSS (MB)")):
        for name, side, colour in (("gulpdb", "gulpdb", GULPDB),
                                   ("json.load of every .gmeta", "gmeta_json", BASE)):
            vals = [p[side][key] for p in pts]
            ax.errorbar(n, [v["median"] for v in vals], yerr=errbars(vals), marker="o",
                        label=name, color=colour, capsize=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("videos in the dataset")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    a.axhline(5.0, color="red", linestyle=":", linewidth=1)
    a.set_title("open: time (target < 5 ms at 10^6, dotted)", fontsize=10)
    b.set_title("open: memory", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_lookup(results, plt, path):
    if "lookup" not in results:
        return False
    m = results["lookup"]["methods"]
    keys = ["txn_get", "txn_verify", "txn_decode", "find", "read_jpegs"]
    labels = ["txn+get\n(baseline)", "+verify", "+decode", "Find", "ReadJpegs\n0:16"]
    fig, ax = plt.subplots(figsize=(8, 4))
    bar_group(ax, labels, [
        ("p50", GULPDB, [summ(m[k]["p50_us"]) for k in keys]),
        ("p99", OTHER, [summ(m[k]["p99_us"]) for k in keys])],
        "µs", "lookup latency, %s videos (target: Find p50 <= 2 µs, dotted)" %
        "{:,}".format(results["lookup"]["videos"]))
    ax.axhline(2.0, color="red", linestyle=":", linewidth=1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def summ(stats):
    return {k: stats[k] for k in ("median", "min", "max")}


def plot_throughput(results, plt, path):
    panels = []
    if "random_read" in results:
        m = results["random_read"]["methods"]
        panels.append(("random 16-frame clips (warm)", "MB/s",
                       [("bare pread", BASE, summ(m["pread"]["mb_per_s"])),
                        ("gulpdb ReadJpegs", GULPDB, summ(m["gulpdb_read_jpegs"]["mb_per_s"]))]))
    if "sequential_scan" in results:
        m = results["sequential_scan"]["methods"]
        panels.append(("sequential scan (warm)", "MB/s",
                       [("one read per chunk", BASE, summ(m["one_read_per_chunk"]["mb_per_s"])),
                        ("ForEach+ReadJpegs", GULPDB,
                         summ(m["gulpdb_foreach_read_jpegs"]["mb_per_s"])),
                        ("ForEach+chunk read", OTHER,
                         summ(m["gulpdb_foreach_chunk_read"]["mb_per_s"]))]))
    if "cold" in results:
        runs = results["cold"]["runs"]
        panels.append(("random clips, cold cache", "clips/s",
                       [("folder of JPEGs", BASE,
                         summary_of([r["clips_per_s"] for r in runs["jboj"]])),
                        ("gulpdb", GULPDB, summary_of([r["clips_per_s"] for r in runs["gulpdb"]]))]))
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4))
    if len(panels) == 1:
        axes = [axes]
    for ax, (title, unit, bars) in zip(axes, panels):
        ax.bar(range(len(bars)), [b[2]["median"] for b in bars], color=[b[1] for b in bars],
               yerr=errbars([b[2] for b in bars]), capsize=3)
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([b[0] for b in bars], fontsize=8, rotation=10)
        ax.set_ylabel(unit)
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_decode(results, plt, path):
    if "decode" not in results:
        return False
    r = results["decode"]
    m = r["methods"]
    p = r.get("pillow", {})

    def pil(w):
        return summary_of(p[w]["clips_per_s"]) if w in p else None

    one = [("bare TurboJPEG", BASE, summ(m["bare_1t"]["clips_per_s"])),
           ("gulpdb ReadFrames", GULPDB, summ(m["read_frames_1t"]["clips_per_s"]))]
    if "read_frames_1t_accurate" in m:
        one.append(("gulpdb, accurate DCT", "#9467bd",
                    summ(m["read_frames_1t_accurate"]["clips_per_s"])))
    one.append(("Pillow, JPEG files", OTHER, pil("1")))
    two = [("bare TurboJPEG", BASE, summ(m["bare_2t"]["clips_per_s"])),
           ("ReadBatch", GULPDB, summ(m["read_batch_2t"]["clips_per_s"])),
           ("ReadFrames", "#17becf", summ(m["read_frames_2t"]["clips_per_s"])),
           ("ReadFrames x2 callers", "#bcbd22", summ(m["read_frames_2callers"]["clips_per_s"])),
           ("Pillow, 2 processes", OTHER, pil("2"))]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, bars, title in ((axes[0], one, "1 thread"), (axes[1], two, "2 threads")):
        bars = [b for b in bars if b[2]]
        ax.bar(range(len(bars)), [b[2]["median"] for b in bars], color=[b[1] for b in bars],
               yerr=errbars([b[2] for b in bars]), capsize=3)
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([b[0] for b in bars], fontsize=7, rotation=15)
        ax.set_title("decode %dx%d clips of %d, %s" % (r["width"], r["height"],
                                                       r["frames_per_clip"], title), fontsize=10)
    axes[0].set_ylabel("clips/s")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_append(results, plt, path):
    if "append" not in results:
        return False
    rows = results["append"]["batches"]
    b = [r["batch"] for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.plot(b, [r["gulpdb_videos_per_s"] for r in rows], marker="o", color=GULPDB,
            label="gulpdb (durable commit)")
    a1.plot(b, [r["bare_videos_per_s"] for r in rows], marker="o", color=BASE,
            label="pwritev + fdatasync per batch")
    a1.set_ylabel("committed videos/s")
    a1.set_title("append throughput", fontsize=10)
    med = [summ(r["commit_ms"]) for r in rows]
    a2.errorbar(b, [m["median"] for m in med], yerr=errbars(med), marker="o", color=GULPDB,
                capsize=3, label="Commit()")
    bare = [summ(r["bare_batch_ms"]) for r in rows]
    a2.errorbar(b, [m["median"] for m in bare], yerr=errbars(bare), marker="o", color=BASE,
                capsize=3, label="bare batch write + fdatasync")
    a2.set_ylabel("ms")
    a2.set_title("commit latency", fontsize=10)
    for ax in (a1, a2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("videos per commit")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_interop(results, plt, path):
    if "interop" not in results:
        return False
    r = results["interop"]
    size_mb = r["gulpio"]["gmeta_bytes"] / 1e6
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    bars = [("ImportGulpio", GULPDB, summary_of([x["mb_per_s"] for x in r["import"]])),
            ("json.load", BASE, summary_of([x["mb_per_s"] for x in r["json_load"]])),
            ("ExportGmeta", "#17becf", summary_of([x["mb_per_s"] for x in r["export"]])),
            ("json.dump", OTHER, summary_of([x["dump_mb_per_s"] for x in r["json_load"]
                                             if "dump_mb_per_s" in x]))]
    a1.bar(range(4), [x[2]["median"] for x in bars], color=[x[1] for x in bars],
           yerr=errbars([x[2] for x in bars]), capsize=3)
    a1.axhline(200, color="red", linestyle=":", linewidth=1)
    a1.set_xticks(range(4))
    a1.set_xticklabels([x[0] for x in bars], fontsize=8)
    a1.set_ylabel("MB/s of .gmeta")
    a1.set_title("import / export, %.0f MB of .gmeta (target 200 MB/s, dotted)" % size_mb,
                 fontsize=9)
    peaks = [("ImportGulpio", GULPDB, summary_of([x["peak_rss_mb"] for x in r["import"]])),
             ("json.load", BASE, summary_of([x["peak_rss_mb"] for x in r["json_load"]]))]
    a2.bar(range(2), [x[2]["median"] for x in peaks], color=[x[1] for x in peaks],
           yerr=errbars([x[2] for x in peaks]), capsize=3)
    a2.axhline(0.25 * r["gulpio"]["gmeta_bytes"] / 1048576, color="red", linestyle=":",
               linewidth=1)
    a2.set_xticks(range(2))
    a2.set_xticklabels([x[0] for x in peaks], fontsize=8)
    a2.set_ylabel("peak RSS (MB)")
    a2.set_title("peak memory (target < 25% of the .gmeta size, dotted)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_index_size(results, plt, path):
    if "index_size" not in results:
        return False
    rows = results["index_size"]["rows"]
    fig, ax = plt.subplots(figsize=(10, 4))
    labels = [r["label"].replace(", ", ",\n", 1) for r in rows]
    bar_group(ax, labels, [
        ("gulpdb index", GULPDB, [single(r["index_bytes"] / r["frames"]) for r in rows]),
        (".gmeta JSON", BASE, [single(r["gmeta_bytes"] / r["frames"]) for r in rows])],
        "bytes per frame", "index size (target <= 6 B/frame for contiguous videos, dotted)")
    ax.axhline(6.0, color="red", linestyle=":", linewidth=1)
    for tick in ax.get_xticklabels():
        tick.set_fontsize(6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def single(v):
    return {"median": v, "min": v, "max": v}


def write_report(doc, out_dir):
    """Writes latest.md and the plots into out_dir; returns the paths written."""
    md = os.path.join(out_dir, "latest.md")
    written = [md]
    plots = plot_all(doc, out_dir)
    with open(md, "w") as f:
        f.write(markdown(doc, [os.path.basename(p) for p in plots]))
    return written + plots


def plot_all(doc, out_dir):
    """Draws the plots the results have data for; returns their paths."""
    written = []
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib is not installed; no plots", file=sys.stderr)
        return written
    results = doc["results"]
    drawers = {
        "targets.png": lambda p: plot_targets(doc, plt, p),
        "summary.png": lambda p: plot_summary(doc, plt, p),
        "open.png": lambda p: plot_open(results, plt, p),
        "lookup.png": lambda p: plot_lookup(results, plt, p),
        "throughput.png": lambda p: plot_throughput(results, plt, p),
        "decode.png": lambda p: plot_decode(results, plt, p),
        "append.png": lambda p: plot_append(results, plt, p),
        "interop.png": lambda p: plot_interop(results, plt, p),
        "index_size.png": lambda p: plot_index_size(results, plt, p),
        "h264.png": lambda p: "h264" in results and h264_report.plot(results["h264"], plt, p),
    }
    for name in PLOTS:
        path = os.path.join(out_dir, name)
        if drawers[name](path):
            written.append(path)
    return written


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--in", dest="input", default=os.path.join(here, "results", "latest.json"))
    parser.add_argument("--out", default=None, help="default: the input's directory")
    args = parser.parse_args(argv)
    with open(args.input) as f:
        doc = json.load(f)
    out = args.out or os.path.dirname(os.path.abspath(args.input))
    for path in write_report(doc, out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
