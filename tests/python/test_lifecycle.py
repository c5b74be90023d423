"""The model-based lifecycle test (issue 19, section E): Hypothesis drives a
state machine (tests/python/lifecycle/machine.py) through the operations
users combine on a dataset, and after every step checks every read path
against a plain Python model. Its own CTest entry, `lifecycle_test`;
test_lifecycle_finds_bugs.py shows that it finds fixed bugs put back.

Settings (environment):
  GULPDB_LIFECYCLE_EXAMPLES  examples (default: the CI size tests/CMakeLists.txt gives,
                             30, ~3-4 min on 2 idle cores)
  GULPDB_LIFECYCLE_STEPS     steps per example (default 20)
  GULPDB_LIFECYCLE_SEED      the seed (default 0, so that CI runs are reproducible;
                             "random" draws one, printed at the start and in the report)
  GULPDB_LIFECYCLE_COVERAGE  "0" to not fail when a rule or read path never ran
                             (for short runs by hand)
  GULPDB_LIFECYCLE_REPORT    a file to write the report to, as JSON
  GULPDB_LIFECYCLE_SHRINK    "0": report the first failing example as found, unshrunk

Hypothesis' example database is off: a run is reproduced by its seed.
"""

from __future__ import annotations

import os
import random

from conftest import FIXTURES, GULPDB_CLI
from lifecycle import gulpio_format, runner

EXAMPLES = int(os.environ.get("GULPDB_LIFECYCLE_EXAMPLES")
               or os.environ.get("GULPDB_LIFECYCLE_CI_EXAMPLES")  # set by tests/CMakeLists.txt
               or "30")
STEPS = int(os.environ.get("GULPDB_LIFECYCLE_STEPS", "20"))
SEED_SETTING = os.environ.get("GULPDB_LIFECYCLE_SEED", "0")
SHRINK = os.environ.get("GULPDB_LIFECYCLE_SHRINK", "1") != "0"


def test_the_independent_gulpio_format_reads_and_writes_gulpios_own_fixtures():
    """The test's GulpIO writer and reader agree byte for byte with the
    directories GulpIO and GulpIO2 wrote (tests/fixtures), so that they are
    a fair judge of gulpdb's GulpIO directories."""
    for name in ("gulpio2_csv_jpeg", "gulpio2_edge_cases", "gulpio2_json_videos",
                 "gulpio1_csv_jpeg"):
        gulpio_format.check_against_fixture(os.path.join(FIXTURES, name))


def test_lifecycle(tmp_path):
    seed = random.randrange(2**32) if SEED_SETTING == "random" else int(SEED_SETTING)
    print(f"\nlifecycle: seed {seed}, {EXAMPLES} examples of up to {STEPS} steps "
          f"(reproduce with GULPDB_LIFECYCLE_SEED={seed})", flush=True)
    report, error = runner.run(GULPDB_CLI, str(tmp_path), seed, EXAMPLES, STEPS, SHRINK,
                               report_file=os.environ.get("GULPDB_LIFECYCLE_REPORT"))
    if error is not None:
        raise error
    if os.environ.get("GULPDB_LIFECYCLE_COVERAGE", "1") != "0":
        never, unread = runner.coverage_gaps(report)
        assert not never and not unread, (
            f"in {report['steps']} steps, these rules never ran: {never}; these read paths "
            f"never ran: {unread} (more examples: GULPDB_LIFECYCLE_EXAMPLES)")
