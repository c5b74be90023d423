"""One run of the lifecycle state machine (machine.py) and its report: how
many examples and steps ran, how often each rule and each read path ran, and
the first failure, if any. Used by test_lifecycle.py (the CI-sized and the
long runs) and test_lifecycle_finds_bugs.py (runs with a fixed bug put back).
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Optional, Tuple

import hypothesis.core
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from . import machine
from .session import Session


def run(cli_program: str, work_dir: str, seed: int, examples: int, steps: int, shrink: bool,
        test_bug: Optional[str] = None,
        report_file: Optional[str] = None) -> Tuple[Dict[str, Any], Optional[BaseException]]:
    """Runs up to ``examples`` examples of up to ``steps`` steps from ``seed``
    (Hypothesis' example database off: the seed reproduces the run), with
    GULPDB_TEST_BUG=``test_bug`` in every gulpdb process (None: unset).
    Without ``shrink`` the run stops at the first failure and reports it as
    found. Prints the report (and writes it to ``report_file`` as JSON);
    returns it with the failure (None when every example passed)."""
    session = Session(cli_program, work_dir=work_dir, test_bug=test_bug)
    machine.SESSION = session
    hypothesis.core.global_force_seed = seed  # what pytest's --hypothesis-seed sets
    phases = tuple(Phase) if shrink else (Phase.generate,)
    start = time.monotonic()
    error: Optional[BaseException] = None
    try:
        run_state_machine_as_test(
            machine.LifecycleMachine,
            settings=settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                              database=None, print_blob=True,
                              suppress_health_check=list(HealthCheck), phases=phases))
    except Exception as e:  # the failure Hypothesis reports (shrunk, unless asked not to)
        error = e
    finally:
        hypothesis.core.global_force_seed = None
        report = _report(session, seed, test_bug, time.monotonic() - start)
        print_report(report)
        if report_file:
            with open(report_file, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=1)
        machine.SESSION = None
        session.close()
    return report, error


def _report(session: Session, seed: int, test_bug: Optional[str], seconds: float) -> dict:
    c = session.counters
    return {
        "seed": seed,
        "test_bug": test_bug,
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
        "first_failure": c.first_failure,
    }


def print_report(report: dict) -> None:
    bug = f", GULPDB_TEST_BUG={report['test_bug']}" if report["test_bug"] else ""
    print(f"\nlifecycle report: seed {report['seed']}{bug}, {report['examples']} examples, "
          f"{report['steps']} steps, {report['lineages']} lineages, {report['seconds']} s, "
          f"{report['cli_calls']} gulpdb commands ({report['cli_seconds']} s), "
          f"{report['worker_requests']} Python requests ({report['worker_seconds']} s)")
    f = report["first_failure"]
    if f:
        print(f"  first failure: example {f['example']}, step {f['step']} of the run, "
              f"after {f['seconds']} s: {f['failure']}")
        print("  its steps:")
        for line in f["steps"]:
            print(f"    {line}")
    print("  rules:")
    for name, n in report["rules"].items():
        print(f"    {n:6d}  {name}")
    print("  read paths:")
    for name, n in report["read_paths"].items():
        print(f"    {n:6d}  {name}")
    for name, n in report["other_read_outcomes"].items():
        print(f"    {n:6d}  {name}")


def coverage_gaps(report: dict) -> Tuple[list, list]:
    """The rules (or required variants) and the read paths that never ran."""
    never = [rule for rule, variants in machine.RULES.items()
             if not any(report["rules"][v] for v in variants)]
    never += [v for v in machine.REQUIRED_VARIANTS if report["rules"][v] == 0]
    unread = [n for n, k in report["read_paths"].items() if k == 0]
    return never, unread
