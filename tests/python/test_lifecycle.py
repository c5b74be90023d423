"""The model-based lifecycle test (issue 19, section E): Hypothesis drives a
state machine (tests/python/lifecycle/machine.py) through the operations
users combine on a dataset, and after every step checks every read path
against a plain Python model. Its own CTest entry, `lifecycle_test`.

Settings (environment):
  GULPDB_LIFECYCLE_EXAMPLES  examples (default: the CI size tests/CMakeLists.txt gives,
                             30, ~3-4 min on 2 idle cores)
  GULPDB_LIFECYCLE_STEPS     steps per example (default 20)
  GULPDB_LIFECYCLE_SEED      the seed (default 0, so that CI runs are reproducible;
                             "random" draws one, printed at the start and in the report)
  GULPDB_LIFECYCLE_KNOWN_BUGS  which known bugs to step around (lifecycle/known_bugs.py):
                             "all" (default), "none", issue items ("19.A1,new.2"), or
                             all but some ("-19.B6": the test must then find B6)
  GULPDB_LIFECYCLE_COVERAGE  "0" to not fail when a rule or read path never ran
                             (for short runs by hand)
  GULPDB_LIFECYCLE_REPORT    a file to write the report to, as JSON
  GULPDB_LIFECYCLE_SHRINK    "0": report the first failing example as found, unshrunk

Hypothesis' example database is off: a run is reproduced by its seed.
"""

from __future__ import annotations

import json
import os
import random
import time

import hypothesis.core
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from conftest import FIXTURES, GULPDB_CLI
from lifecycle import gulpio_format, known_bugs, machine
from lifecycle.session import Session

EXAMPLES = int(os.environ.get("GULPDB_LIFECYCLE_EXAMPLES")
               or os.environ.get("GULPDB_LIFECYCLE_CI_EXAMPLES")  # set by tests/CMakeLists.txt
               or "30")
STEPS = int(os.environ.get("GULPDB_LIFECYCLE_STEPS", "20"))
SEED_SETTING = os.environ.get("GULPDB_LIFECYCLE_SEED", "0")
PHASES = (tuple(Phase) if os.environ.get("GULPDB_LIFECYCLE_SHRINK", "1") != "0"
          else (Phase.generate,))


def test_the_independent_gulpio_format_reads_and_writes_gulpios_own_fixtures():
    """The test's GulpIO writer and reader agree byte for byte with the
    directories GulpIO and GulpIO2 wrote (tests/fixtures), so that they are
    a fair judge of gulpdb's GulpIO directories."""
    for name in ("gulpio2_csv_jpeg", "gulpio2_edge_cases", "gulpio2_json_videos",
                 "gulpio1_csv_jpeg"):
        gulpio_format.check_against_fixture(os.path.join(FIXTURES, name))


def _report(session: Session, seed: int, seconds: float) -> dict:
    c = session.counters
    return {
        "seed": seed,
        "examples": c.examples,
        "steps": c.steps,
        "lineages": c.lineages,
        "seconds": round(seconds, 1),
        "cli_calls": session.cli.calls,
        "cli_seconds": round(session.cli.seconds, 1),
        "worker_requests": session.reader.requests + session.loader.requests,
        "worker_seconds": round(session.reader.seconds + session.loader.seconds, 1),
        "rules": {name: c.rules[name] for name in machine.VARIANTS},
        "read_paths": {name: c.reads[name] for name in machine.READ_PATHS},
        "other_read_outcomes": {k: v for k, v in c.reads.items()
                                if k not in machine.READ_PATHS},
        "known_bugs_stepped_around": dict(c.known),
        "known_bug_first_examples": c.known_examples,
        "known_bug_list": [b.name for b in known_bugs.active()],
        "check_when_a_known_bug_broke_the_dataset": dict(c.check_when_broken),
        "first_failure": c.first_failure,
    }


def _print_report(report: dict) -> None:
    print(f"\nlifecycle report: seed {report['seed']}, {report['examples']} examples, "
          f"{report['steps']} steps, {report['lineages']} lineages, {report['seconds']} s, "
          f"{report['cli_calls']} gulpdb commands ({report['cli_seconds']} s), "
          f"{report['worker_requests']} Python requests ({report['worker_seconds']} s)")
    if report["first_failure"]:
        f = report["first_failure"]
        print(f"  first failure: example {f['example']}, step {f['step']}, after {f['seconds']} s "
              f"(then shrunk): {f['failure']}")
    print("  rules:")
    for name, n in report["rules"].items():
        print(f"    {n:6d}  {name}")
    print("  read paths:")
    for name, n in report["read_paths"].items():
        print(f"    {n:6d}  {name}")
    for name, n in report["other_read_outcomes"].items():
        print(f"    {n:6d}  {name}")
    print(f"  known bugs stepped around (allow-list: {report['known_bug_list'] or 'empty'}):")
    for name, n in report["known_bugs_stepped_around"].items():
        print(f"    {n:6d}  {name}")
        for line in report["known_bug_first_examples"][name]:
            print(f"              {line}")
    for name, n in report["check_when_a_known_bug_broke_the_dataset"].items():
        print(f"    {n:6d}  {name}")


def test_lifecycle(tmp_path):
    seed = random.randrange(2**32) if SEED_SETTING == "random" else int(SEED_SETTING)
    print(f"\nlifecycle: seed {seed}, {EXAMPLES} examples of up to {STEPS} steps "
          f"(reproduce with GULPDB_LIFECYCLE_SEED={seed})", flush=True)
    session = Session(GULPDB_CLI, work_dir=str(tmp_path))
    machine.SESSION = session
    hypothesis.core.global_force_seed = seed  # what pytest's --hypothesis-seed sets
    start = time.monotonic()
    try:
        run_state_machine_as_test(
            machine.LifecycleMachine,
            settings=settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                              database=None, print_blob=True,
                              suppress_health_check=list(HealthCheck), phases=PHASES))
    finally:
        hypothesis.core.global_force_seed = None
        report = _report(session, seed, time.monotonic() - start)
        _print_report(report)
        if os.environ.get("GULPDB_LIFECYCLE_REPORT"):
            with open(os.environ["GULPDB_LIFECYCLE_REPORT"], "w", encoding="utf-8") as f:
                json.dump(report, f, indent=1)
        machine.SESSION = None
        session.close()
    if os.environ.get("GULPDB_LIFECYCLE_COVERAGE", "1") != "0":
        never = [rule for rule, variants in machine.RULES.items()
                 if not any(report["rules"][v] for v in variants)]
        never += [v for v in machine.REQUIRED_VARIANTS if report["rules"][v] == 0]
        unread = [n for n, k in report["read_paths"].items() if k == 0]
        assert not never and not unread, (
            f"in {report['steps']} steps, these rules never ran: {never}; these read paths "
            f"never ran: {unread} (more examples: GULPDB_LIFECYCLE_EXAMPLES)")
