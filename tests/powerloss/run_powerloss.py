#!/usr/bin/env python3
"""The power-loss simulator: runs each workload under the shim, builds its
crash states (sim.py), recovers each distinct one with gulpdb and checks it
(workloads.py), and prints the count of distinct crash states per operation.

  run_powerloss.py --shim libgulpdb_powerloss_shim.so --cli gulpdb
                   [--scale ci|full] [--only NAME,...] [--bug NAME]

Exit status 0 when no state breaks an invariant (with --bug: when at least
one does, i.e. the seeded bug was found), 1 otherwise. Findings go to stdout
and, as JSON, to --findings.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The workloads' size is fixed when they are imported (and in the processes
# that run and recover them, which inherit the environment).
FULL = "full" in sys.argv or "--scale=full" in sys.argv
os.environ["GULPDB_PL_SCALE"] = "8" if FULL else "1"

import sim  # noqa: E402
import workloads  # noqa: E402

# Per scale: distinct states checked per workload at most, states per crash
# point at most, tear points per write and sector size, workers.
SCALES = {
    "ci": dict(budget=150, per_point=40, tears=3, workers=2, minimum=30),
    "full": dict(budget=4000, per_point=400, tears=24, workers=2, minimum=400),
}


# Seeded bugs (util/test_bug.h) of the recovery rather than of the workload.
RECOVERY_BUGS = {"no-meta-restore", "frame-trust-blocks"}


class Workers:
    """Recovery workers (recover.py), fed from one queue by one thread each."""

    def __init__(self, count: int, env: Dict[str, str]) -> None:
        self.env = env
        self.requests: "queue.Queue[Any]" = queue.Queue()
        self.results: "queue.Queue[Any]" = queue.Queue()
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(count)]
        for t in self.threads:
            t.start()

    def _start(self) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, os.path.join(HERE, "recover.py")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env,
                                text=True, bufsize=1)

    def _loop(self) -> None:
        proc = self._start()
        while True:
            item = self.requests.get()
            if item is None:
                proc.stdin.close()
                proc.wait()
                return
            key, req = item
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                rc = proc.wait()
                result = {"view": "error",
                          "problems": [f"recovery process died (exit status {rc}: "
                                       f"{'signal ' + str(-rc) if rc < 0 else 'exit'})"]}
                proc = self._start()
            else:
                result = json.loads(line)
            self.results.put((key, result))

    def close(self) -> None:
        for _ in self.threads:
            self.requests.put(None)
        for t in self.threads:
            t.join()


def run_workload(w: workloads.Workload, base: str, args, env: Dict[str, str]) -> str:
    """Sets up, copies the initial image, runs the workload under the shim."""
    work = os.path.join(base, w.name)
    os.makedirs(work)
    w.setup(work)
    root = os.path.realpath(os.path.join(work, "root"))
    shutil.copytree(root, os.path.join(work, "initial"), symlinks=True)
    # The workload runs in one boot, its crash states are recovered "after a
    # reboot" (engine/core/journal.h: a journal of another boot means the
    # page cache was lost), unless --same-boot models a process crash.
    run_env = dict(env, LD_PRELOAD=args.shim, GULPDB_PL_ROOT=root,
                   GULPDB_TEST_BOOT_ID="boot-of-the-workload",
                   GULPDB_PL_TRACE=os.path.join(work, "trace"),
                   GULPDB_PL_ACK=os.path.join(work, "ack"), GULPDB_PL_WORK=work)
    if args.bug:
        run_env["GULPDB_TEST_BUG"] = args.bug
    subprocess.run([sys.executable, os.path.join(HERE, "workloads.py"), "run", w.name, root],
                   check=True, env=run_env)
    return work


def enumerate_states(trace: sim.Trace, scale: Dict[str, Any]):
    """Distinct crash images: hash -> (recipe, point, description, acked step).

    A state keeps its recipe (the operations applied and the torn write), not
    its image: a full run has tens of thousands of images of megabytes each,
    so an image is built again when its state is checked."""
    states: Dict[str, Dict[str, Any]] = {}
    generated = 0
    seen_points = set()
    for point in range(len(trace.records) + 1):
        ack = trace.ack_before(point)
        acked = int(ack) if ack is not None else 0
        key = (tuple(o.index for o in trace.ops if o.index < point),
               tuple(o.durable_at if o.durable_at is not None and o.durable_at < point else -1
                     for o in trace.ops if o.index < point), acked)
        if key in seen_points:
            continue
        seen_points.add(key)
        for desc, ops, torn in trace.states(point, scale["per_point"], scale["tears"]):
            generated += 1
            entries = sim.walk(trace.apply(ops, torn))
            h = sim.image_hash(entries)
            old = states.get(h)
            if old is None:
                states[h] = dict(recipe=(ops, torn), point=point, desc=desc, acked=acked,
                                 minimal=desc.startswith("pending prefix 0/"))
            elif acked > old["acked"]:
                # The same image after a later ack: the strictest expectation.
                old.update(point=point, desc=desc, acked=acked)
    return states, generated


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shim", required=True)
    p.add_argument("--cli", required=True)
    p.add_argument("--scale", choices=sorted(SCALES), default="ci")
    p.add_argument("--only", default="")
    p.add_argument("--bug", default="", help="GULPDB_TEST_BUG for the workload runs")
    p.add_argument("--budget", type=int, default=0, help="distinct states per operation")
    p.add_argument("--findings", default="")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--same-boot", action="store_true",
                   help="recover under the workload's boot id (a process crash, not a power cut)")
    args = p.parse_args()
    scale = dict(SCALES[args.scale])
    if args.budget:
        scale["budget"] = args.budget
    if args.same_boot:
        # A process crash keeps every write it issued (the page cache lives
        # on): one state per crash point, everything applied.
        scale["per_point"] = 1
    names = [n for n in args.only.split(",") if n] or list(workloads.WORKLOADS)
    # A workload of a codec this build has not (a build without H.264) is
    # not run, and said so: it is not counted among those checked.
    import gulpdb
    for name in list(names):
        codec = getattr(workloads.WORKLOADS[name], "codec", "jpeg")
        if codec not in gulpdb.codecs:
            print(f"{name}: not run: this build of gulpdb has no {codec} support", flush=True)
            names.remove(name)
    os.environ["GULPDB_PL_CLI"] = args.cli
    env = dict(os.environ)
    env.pop("GULPDB_TEST_BUG", None)  # recovery runs the real code...
    if args.bug in RECOVERY_BUGS:
        env["GULPDB_TEST_BUG"] = args.bug  # ...unless the bug is in the recovery
    env["GULPDB_TEST_BOOT_ID"] = ("boot-of-the-workload" if args.same_boot
                                  else "boot-after-the-power-cut")
    base = tempfile.mkdtemp(prefix="gulpdb-powerloss.",
                            dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    env["GULPDB_CACHE"] = os.path.join(base, "reader-cache")
    pool = Workers(scale["workers"], env)
    rows: List[Tuple[Any, ...]] = []
    findings: List[Dict[str, Any]] = []
    started = time.time()
    try:
        for name in names:
            w = workloads.WORKLOADS[name]
            t0 = time.time()
            try:
                work = run_workload(w, base, args, env)
                rows.append(check_workload(w, work, scale, args, pool, findings))
            finally:
                w.teardown()
            r = rows[-1]
            print(f"{name}: {r[5]} distinct crash states checked "
                  f"({r[4]} distinct of {r[3]} generated), {r[6]} broken, "
                  f"{time.time() - t0:.0f} s", flush=True)
    finally:
        pool.close()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return report(rows, findings, scale, args, started)


def check_workload(w: workloads.Workload, work: str, scale: Dict[str, Any], args,
                   pool: "Workers", findings: List[Dict[str, Any]]) -> Tuple[Any, ...]:
    """Builds the crash states of the workload run in `work`, recovers and
    judges them (while what the workload's setup started still runs); returns
    its row of the report."""
    name = w.name
    t0 = time.time()
    trace = sim.Trace(os.path.join(work, "root"), os.path.join(work, "initial"),
                      sim.read_trace(os.path.join(work, "trace")))
    if len(trace.acks) == 0:
        raise SystemExit(f"{name}: the workload acknowledged nothing")
    states, generated = enumerate_states(trace, scale)
    keys = sorted(states)
    if len(keys) > scale["budget"]:
        # Every crash point's durable-only state first (where a missing
        # barrier shows), then a seeded sample of the others.
        minimal = [k for k in keys if states[k]["minimal"]]
        rest = [k for k in keys if not states[k]["minimal"]]
        rnd = random.Random(args.seed)
        rnd.shuffle(minimal)
        rnd.shuffle(rest)
        keys = (minimal + rest)[:scale["budget"]]
    state_base = os.path.join(work, "states")
    dirs: Dict[str, str] = {}
    # A few states on disk at a time (built when a worker can take them,
    # removed once judged), so that a full run fits in memory and /dev/shm.
    in_flight_max = 2 * scale["workers"] + 2
    pending = iter(enumerate(keys))

    def submit() -> bool:
        nk = next(pending, None)
        if nk is None:
            return False
        n, k = nk
        d = dirs[k] = os.path.join(state_base, str(n))
        sim.materialize(sim.walk(trace.apply(*states[k]["recipe"])), d)
        pool.requests.put((k, {"workload": name, "state": d, "work": work}))
        return True

    in_flight = 0
    while in_flight < in_flight_max and submit():
        in_flight += 1
    bad = 0
    for _ in keys:
        k, result = pool.results.get()
        in_flight -= 1
        s = states[k]
        problems = w.judge(result, s["acked"])
        if problems:
            bad += 1
            files = [rel for rel, _ in sim.walk(trace.apply(*s["recipe"]))]
            findings.append(dict(operation=name, crash_point=s["point"],
                                 record=describe_record(trace, s["point"]),
                                 state=s["desc"], acked=s["acked"], problems=problems,
                                 files=files))
        shutil.rmtree(dirs.pop(k), ignore_errors=True)
        if submit():
            in_flight += 1
    shutil.rmtree(state_base, ignore_errors=True)
    return (name, len(trace.records), len(trace.ops), generated, len(states), len(keys), bad,
            time.time() - t0)


def report(rows: List[Tuple[Any, ...]], findings: List[Dict[str, Any]], scale: Dict[str, Any],
           args, started: float) -> int:
    """Prints the table of distinct crash states per operation and the
    findings; the exit status."""
    print()
    print(f"| operation | trace records | operations | states generated | distinct | checked "
          f"| broken |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | {r[6]} |")
    total = sum(r[5] for r in rows)
    print(f"| total | | | {sum(r[3] for r in rows)} | {sum(r[4] for r in rows)} | {total} "
          f"| {sum(r[6] for r in rows)} |")
    print(f"{total} distinct crash states checked in {time.time() - started:.0f} s")
    for f in findings[:40]:
        print(f"FINDING {f['operation']} at crash point {f['crash_point']} ({f['record']}), "
              f"{f['state']}, ack {f['acked']}: {'; '.join(f['problems'])}")
    if len(findings) > 40:
        print(f"... and {len(findings) - 40} more findings")
    if args.findings:
        with open(args.findings, "w") as fp:
            json.dump(findings, fp, indent=1)
    short = [r[0] for r in rows if r[5] < scale["minimum"]]
    if args.bug:
        if findings:
            print(f"the seeded bug {args.bug} was found ({len(findings)} broken states)")
            return 0
        print(f"the seeded bug {args.bug} was NOT found")
        return 1
    if short:
        print(f"fewer than {scale['minimum']} distinct crash states for {short}")
        return 1
    return 1 if findings else 0


def describe_record(trace: sim.Trace, point: int) -> str:
    if point == 0:
        return "before the first record"
    r = trace.records[point - 1]
    what = r.payload.decode(errors="replace") if r.op == "ack" else " ".join(r.fields)
    return f"after record {point - 1}: {r.op} {what}"


if __name__ == "__main__":
    sys.exit(main())
