#!/usr/bin/python3
"""The dataset viewer (`gulpdb view`, docs/view.md) measured in the browser.

For each size (10^4, 10^5, 10^6 videos of one real 320x240 JPEG frame (q60,
about 7.4 kB: 7.4 GB at 10^6, and as much again in s3rver), hashed ids, a
"label" meta field of 100 values with a meta index: `bench_data hashed
--pool`, the partition benchmark's generator with real frames), the
release build's `gulpdb view --no-browser` serves the dataset and headless
Chromium (tests/harness/headless_chromium.py) loads the page. Timings are the
page's own Performance API figures:

  first grid    from the page request (navigation start) to the mark
                `gulpdb-first-grid`, set once the cells in view are filled
                and the first 60 thumbnails' img.decode() resolved
                (placeholders do not count): a page of ids read by position,
                60 thumbnails made in C++ (DCT-scaled decode to 160x120 and an
                encode), decoded by the browser;
  page of 60    performance.now() around window.gulpdbView.decodePage(start)
                for pages not loaded before (median and worst of 5): the ids,
                then 60 thumbnails decoded;
  scroll        performance.now() around window.gulpdbView.goTo(500000) (or
                the middle of a smaller dataset): the grid scrolled there,
                its cells filled and their thumbnails decoded;
  server memory the server's RssAnon (/proc/PID/status: anonymous memory,
                not the mapped index or chunk pages) after the grid
                measurements, and after the charts' background count (every
                record read) has finished; the peak sampled every 20 ms.

Then the largest dataset is pushed to s3rver with a partitioned index
(`gulpdb push --layout partitioned`), and `gulpdb view s3://...` starts with
a fresh node cache (an empty GULPDB_CACHE), reading from s3rver straight,
then through the test proxy adding 20 ms to every GET and HEAD
(tests/harness/s3_proxy.py; its own Python and signature checks add more): the
same figures, plus the command's start (process start to the address on its
first line: the manifest and the root fetched).

Baselines, in the same run: for the first grid, the browser alone showing
the same 60 thumbnails from a file:// page (what `--static` wrote); for every
figure, the same figure at the smallest size (how the viewer scales).

    bench/view_bench.py --bin-dir build/release [--sizes 10000,100000,1000000]
                        [--remote-size 1000000] [--data-dir DIR] [--out bench/results/view]
    bench/view_bench.py --smoke --bin-dir build/dev    (seconds; the test suite runs it)

Prints a table and writes --out/view.json and --out/view.md.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))

import headless_chromium  # noqa: E402  tests/harness/headless_chromium.py
import s3_proxy  # noqa: E402  tests/harness/s3_proxy.py

BUCKET = "gulpdb-view"
LATENCY_MS = 20
FRAMES = 1
SCROLL_TO = 500000
TARGETS = {"first_grid_ms": 1000, "page_ms": 1000, "scroll_ms": 1000, "remote_first_grid_ms": 2000}


def log(message):
    print("view_bench: " + message, file=sys.stderr, flush=True)


def run(cmd, env=None, timeout=None):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def make_dataset(args, n):
    """The dataset of `n` videos, made once and kept in --data-dir."""
    pool = os.path.join(args.data_dir, "pool")
    if not os.path.isdir(pool):
        run([os.path.join(args.bin_dir, "bench", "bench_data"), "frames", "--out", pool,
             "--count", "64", "--width", "320", "--height", "240", "--quality", "60"])
    path = os.path.join(args.data_dir, f"view_{n}")
    done = path + ".done"
    if not os.path.exists(done):
        shutil.rmtree(path, ignore_errors=True)
        log(f"making {n} videos in {path}")
        out = run([os.path.join(args.bin_dir, "bench", "bench_data"), "hashed", "--dir", path,
                   "--videos", str(n), "--frames", str(FRAMES), "--pool", pool])
        with open(done, "w") as f:
            f.write(out)
    return path


class Server:
    """`gulpdb view TARGET --no-browser`: the address, the process, its memory."""

    def __init__(self, gulpdb, target, env=None):
        self.start = time.monotonic()
        self.proc = subprocess.Popen([gulpdb, "view", target, "--no-browser"], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        self.start_seconds = time.monotonic() - self.start
        if not self.url.startswith("http://"):
            self.proc.kill()
            raise RuntimeError("gulpdb view: " + self.proc.communicate()[1])
        self.peak_anon = 0
        self._sampling = True
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def anon_bytes(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
        return 0

    def _sample(self):
        while self._sampling and self.proc.poll() is None:
            try:
                self.peak_anon = max(self.peak_anon, self.anon_bytes())
            except OSError:
                return
            time.sleep(0.02)

    def stop(self):
        self._sampling = False
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise RuntimeError("gulpdb view did not stop within 60 s of SIGTERM")


def measure(driver, server, total, smoke):
    """The page's figures for the dataset `server` serves."""
    row = {"videos": total, "server_start_s": round(server.start_seconds, 3)}
    driver.get(server.url)
    headless_chromium.wait_ready(driver)
    row["first_grid_ms"] = round(driver.execute_script(
        "return performance.getEntriesByName('gulpdb-first-grid')[0].startTime"), 1)
    pages = []
    starts = sorted({60 * k for k in (2, 10, 100, 1000, 5000) if 60 * k + 60 <= total})
    for start in starts[:5]:
        ms = headless_chromium.run_async(driver, """
            const t0 = performance.now();
            const n = await window.gulpdbView.decodePage(args[0]);
            if (n !== 60) throw new Error('page of ' + n);
            return performance.now() - t0;""", start)
        if isinstance(ms, dict):
            raise RuntimeError(f"page at {start}: {ms}")
        pages.append(ms)
    row["page_ms"] = round(statistics.median(pages), 1) if pages else None
    row["page_ms_worst"] = round(max(pages), 1) if pages else None
    target = SCROLL_TO if total > SCROLL_TO else total // 2
    ms = headless_chromium.run_async(driver, """
        const t0 = performance.now();
        await window.gulpdbView.goTo(args[0]);
        const visible = window.gulpdbView.state().visible.map((v) => v.position);
        if (!visible.includes(args[0])) throw new Error('not in view: ' + visible);
        return performance.now() - t0;""", target)
    if isinstance(ms, dict):
        raise RuntimeError(f"scroll to {target}: {ms}")
    row["scroll_to"] = target
    row["scroll_ms"] = round(ms, 1)
    row["anon_after_grid_mb"] = round(server.anon_bytes() / 1e6, 2)
    # The charts' count (every record of a local dataset; a sample remotely).
    t0 = time.monotonic()
    deadline = t0 + (60 if smoke else 3600)
    while time.monotonic() < deadline:
        state = driver.execute_script(
            "const n = document.getElementById('charts-note').textContent;"
            "return [n, document.getElementById('frames-chart').textContent];")
        if "counting" not in state[0] and "frames per video" in state[1]:
            break
        time.sleep(0.2)
    row["charts_s"] = round(time.monotonic() - t0, 1)
    row["anon_after_charts_mb"] = round(server.anon_bytes() / 1e6, 2)
    row["anon_peak_mb"] = round(server.peak_anon / 1e6, 2)
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    if errors:
        raise RuntimeError(f"console errors: {errors}")
    return row


def baseline(args, path):
    """The same run's baseline of the first grid: the browser alone showing the
    60 thumbnails the server would send (written by `gulpdb view --static
    --limit 60`) from a file:// page, navigation start to all 60 decoded. What
    the viewer adds over it is the server's work and the page's requests."""
    out = tempfile.mkdtemp(prefix="gulpdb-view-baseline-")
    try:
        sheet = os.path.join(out, "sheet")
        run([args.gulpdb, "view", path, "--static", sheet, "--limit", "60"])
        names = sorted(os.listdir(os.path.join(sheet, "thumbs")))
        with open(os.path.join(sheet, "baseline.html"), "w") as f:
            f.write("<!DOCTYPE html><html><body>" + "".join(
                f'<img src="thumbs/{n}" width="160" height="120">' for n in names) + "</body></html>")
        times = []
        for _ in range(3):
            with headless_chromium.browser() as driver:
                driver.get("file://" + os.path.join(sheet, "baseline.html"))
                ms = headless_chromium.run_async(driver, """
                    await Promise.all([...document.images].map((i) => i.decode()));
                    return performance.now();""")
                if isinstance(ms, dict):
                    raise RuntimeError(f"baseline: {ms}")
                times.append(ms)
        return round(statistics.median(times), 1), len(names)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def bench_local(args, sizes):
    rows = []
    for n in sizes:
        path = make_dataset(args, n)
        server = Server(args.gulpdb, path)
        try:
            with headless_chromium.browser() as driver:
                row = measure(driver, server, n, args.smoke)
        finally:
            server.stop()
        row["where"] = "local"
        rows.append(row)
        log(json.dumps(row))
    return rows


def bench_remote(args, n):
    """The largest dataset from s3rver: straight from it, then through the
    test proxy adding LATENCY_MS to every GET and HEAD; a fresh node cache
    for each."""
    path = make_dataset(args, n)
    rows = []
    with s3_proxy.S3rverProcess(BUCKET, timeout=120.0) as s3:
        proxy = s3_proxy.ProxyProcess(("127.0.0.1", s3.port), credentials={"S3RVER": "S3RVER"},
                                      log_size=10 ** 6).start()
        try:
            direct = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{s3.port}",
                          AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER",
                          AWS_REGION="us-east-1")
            url = f"s3://{BUCKET}/view_{n}"
            log(f"pushing {path} to {url}")
            t0 = time.monotonic()
            run([args.gulpdb, "push", path, url, "--layout", "partitioned", "-q"], env=direct)
            push_s = round(time.monotonic() - t0, 1)
            proxy.reset()
            proxy.add_fault(kind="delay", delay_ms=LATENCY_MS, fraction=1.0, method="GET")
            proxy.add_fault(kind="delay", delay_ms=LATENCY_MS, fraction=1.0, method="HEAD")
            through_proxy = dict(direct, AWS_ENDPOINT_URL=proxy.endpoint)
            for where, env in (("s3rver, partitioned, fresh cache", direct),
                               (f"s3rver + {LATENCY_MS} ms per GET (test proxy), partitioned, "
                                "fresh cache", through_proxy)):
                cache = tempfile.mkdtemp(prefix="gulpdb-view-cache-")
                try:
                    server = Server(args.gulpdb, url, env=dict(env, GULPDB_CACHE=cache))
                    try:
                        with headless_chromium.browser() as driver:
                            row = measure(driver, server, n, args.smoke)
                    finally:
                        server.stop()
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
                row["where"] = where
                row["push_s"] = push_s
                rows.append(row)
                log(json.dumps(row))
        finally:
            proxy.stop()
    return rows


def table(result):
    rows = result["rows"]
    base = rows[0] if rows else {}
    lines = ["| where | videos | start (s) | first grid (ms) | page of 60 (ms, median / worst) "
             "| scroll (ms) | anon after grid (MB) | anon after charts (MB) | anon peak (MB) "
             "| charts (s) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['where']} | {r['videos']:,} | {r['server_start_s']} | {r['first_grid_ms']} "
            f"| {r['page_ms']} / {r['page_ms_worst']} | {r['scroll_ms']} (to {r['scroll_to']:,}) "
            f"| {r['anon_after_grid_mb']} | {r['anon_after_charts_mb']} | {r['anon_peak_mb']} "
            f"| {r['charts_s']} |")
    lines.append("")
    lines.append(f"Baseline (same run): the browser alone showing the same 60 thumbnails from a "
                 f"file:// page: {result['baseline_static_60_ms']} ms; the first grids are "
                 + ", ".join(f"{r['first_grid_ms'] / result['baseline_static_60_ms']:.2f}x"
                             for r in rows) + " that. Load average at the end: "
                 + ", ".join(f"{x:.1f}" for x in result["load_average"]) + ".")
    lines.append("")
    if base:
        lines.append(f"Against the {base['videos']:,}-video run (same run): "
                     + "; ".join(f"{r['where']} {r['videos']:,}: first grid "
                                 f"{r['first_grid_ms'] / base['first_grid_ms']:.2f}x, anon after "
                                 f"charts {r['anon_after_charts_mb'] / base['anon_after_charts_mb']:.2f}x"
                                 for r in rows[1:]))
    lines.append("")
    lines.append("Targets: " + ", ".join(f"{k} <= {v}" for k, v in TARGETS.items())
                 + ". Met: " + json.dumps(result["met"]))
    return "\n".join(lines) + "\n"


def targets_met(rows):
    met = {}
    local = [r for r in rows if r["where"] == "local"]
    for key in ("first_grid_ms", "page_ms", "scroll_ms"):
        met[key] = all(r[key] is None or r[key] <= TARGETS[key] for r in local)
    remote = [r for r in rows if r["where"] == "s3rver, partitioned, fresh cache"]
    if remote:
        met["remote_first_grid_ms"] = all(r["first_grid_ms"] <= TARGETS["remote_first_grid_ms"]
                                          for r in remote)
    if len(local) > 1:
        met["anon_flat"] = local[-1]["anon_after_charts_mb"] <= 1.25 * local[0]["anon_after_charts_mb"]
    return met


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin-dir", default=os.path.join(REPO, "build", "release"))
    p.add_argument("--sizes", default="10000,100000,1000000")
    p.add_argument("--remote-size", type=int, default=1000000, help="0: no remote run")
    p.add_argument("--data-dir", default=os.path.join(REPO, "build", "bench_data", "view"))
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results", "view"))
    p.add_argument("--smoke", action="store_true", help="200 videos, local only")
    args = p.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    args.gulpdb = os.path.join(args.bin_dir, "cli", "gulpdb")
    if args.smoke:
        args.sizes, args.remote_size = "200", 0
        args.data_dir = os.path.join(args.bin_dir, "smoke_view")
        args.out = os.path.join(args.bin_dir, "smoke_view", "results")
    os.makedirs(args.data_dir, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    static_ms, static_count = baseline(args, make_dataset(args, sizes[0]))
    log(f"baseline: {static_count} thumbnails from a file:// page in {static_ms} ms")
    rows = bench_local(args, sizes)
    if args.remote_size:
        rows += bench_remote(args, args.remote_size)
    result = {"latency_ms": LATENCY_MS, "frames_per_video": FRAMES, "rows": rows,
              "baseline_static_60_ms": static_ms, "load_average": os.getloadavg(),
              "met": targets_met(rows)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "view.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, "view.md"), "w") as f:
        f.write(table(result))
    print(table(result))


if __name__ == "__main__":
    main()
