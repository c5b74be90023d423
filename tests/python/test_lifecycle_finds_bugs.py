"""The lifecycle test can fail: with a fixed bug of issue 19 put back
(GULPDB_TEST_BUG, util/test_bug.h), a CI-sized run of the state machine
finds it. Its own CTest entry, `lifecycle_finds_bugs`.

Each run uses the CI run's seed and size (GULPDB_LIFECYCLE_SEED, default 0;
up to 30 examples of 20 steps) and stops at the first failure, unshrunk
(GULPDB_LIFECYCLE_SHRINK=1 shrinks it, for a minimal sequence by hand). The
run must fail, and with the failure the bug causes: any other failure, or
none, fails the test. The report printed gives the steps that found it.
"""

from __future__ import annotations

import os
import time

import pytest

from conftest import GULPDB_CLI
from lifecycle import runner

SEED = int(os.environ.get("GULPDB_LIFECYCLE_SEED", "0"))
EXAMPLES = int(os.environ.get("GULPDB_LIFECYCLE_EXAMPLES", "30"))
STEPS = int(os.environ.get("GULPDB_LIFECYCLE_STEPS", "20"))
SHRINK = os.environ.get("GULPDB_LIFECYCLE_SHRINK", "0") != "0"

# name -> (issue 19's item, the words of the failure it must cause; a tuple
# of words: any one of them)
BUGS = {
    # Staleness judged by the modification time alone: a `cp -r` copy of an
    # imported GulpIO directory is refused by every command (item 1).
    "copy-mtime": ("19.A1", ["changed since it was indexed", "it was modified (same size"]),
    # Compaction of an emptied newest chunk leaves it listed as being written
    # (item 6); `check` now sees that state.
    "compact-newest": ("19.B6", ["[exit] cli check --deep",
                                "as being written, but the index has no such chunk"]),
    # A pickled reader (a DataLoader worker's copy) opens "generation N" of
    # its URL without checking the snapshot's identity, and reads another
    # dataset pushed there (item 14), or a newer generation: a VideoDataset
    # (whose ids it reads by position) then finds other positions.
    "pickle-generation": ("19.C14", ["pickled", "(url)",
                                     ("after its prefix was wiped and reused by another dataset",
                                      "ids (the dataset has")]),
    # Local reads (Python's and the command's) check no frame's CRC-32C, as
    # before they did by default: a frame damaged on disk is served.
    "unverified-reads": ("damaged frames 1", ["damaged: ", ("is damaged on disk, yet",
                                                          "was damaged after the reader opened")]),
}


@pytest.mark.parametrize("bug", list(BUGS))
def test_the_lifecycle_test_finds_a_fixed_bug_put_back(tmp_path, bug):
    item, words = BUGS[bug]
    print(f"\nlifecycle with GULPDB_TEST_BUG={bug} (issue {item}): seed {SEED}, up to "
          f"{EXAMPLES} examples of up to {STEPS} steps", flush=True)
    start = time.monotonic()
    report, error = runner.run(GULPDB_CLI, str(tmp_path), SEED, EXAMPLES, STEPS, SHRINK,
                               test_bug=bug)
    seconds = time.monotonic() - start
    assert error is not None, (
        f"{report['examples']} examples ({report['steps']} steps, {seconds:.0f} s) with "
        f"GULPDB_TEST_BUG={bug} put back passed: the lifecycle test did not find it")
    text = str(error)
    missing = [w for w in words
               if not any(a in text for a in (w if isinstance(w, tuple) else (w,)))]
    assert not missing, (f"with GULPDB_TEST_BUG={bug} the run failed, but not with the failure "
                         f"that bug causes (no {missing}):\n{text[:3000]}")
    first = report["first_failure"]
    print(f"found GULPDB_TEST_BUG={bug} in example {first['example']}, step {first['step']} "
          f"of the run, after {first['seconds']} s ({seconds:.0f} s with the report)")
