"""Known bugs the lifecycle test steps around while they are being fixed.

Each entry is one bug class, with a matcher as narrow as the bug: the read
path or command it shows in, the words of its message, and the lineage's
history that causes it. What the state machine does when a failure matches:

  "excuse"   the read that failed is counted and skipped; the other checks
             and the lineage go on (a wrong report, not a wrong dataset);
  "recover"  the step is undone (``recover`` puts the files back as they
             were) and the lineage goes on;
  "drop"     the lineage is counted and dropped, and a new one starts.

Everything else fails the test, so the run keeps looking for bugs that are
NOT on this list. Delete an entry when its fix lands: the lifecycle test then
guards the fix. The run's report counts how often each entry was used.

GULPDB_LIFECYCLE_KNOWN_BUGS=none disables the list (every failure fails the
test); a comma-separated list of issue items (e.g. "19.A1,19.B6") keeps only
those entries, and "-19.B6" keeps all but that one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from .procs import Failure


@dataclass(frozen=True)
class KnownBug:
    name: str
    issue: str  # the item of issue 19 ("19.A1"), or "new.N" for one this test found
    regression: str  # its test in test_lifecycle_regressions.py
    matches: Callable[[Failure, Any], bool]
    action: str = "drop"
    recover: Callable[[Any], bool] = lambda machine: False


def _flags(machine: Any) -> set:
    return machine.cur.flags if machine.cur is not None else set()


def _more_meta_than_data(text: str) -> bool:
    found = re.search(r"(\d+) data\*\.gulp files .* but (\d+) meta\*\.gmeta files", text)
    return bool(found) and int(found.group(2)) > int(found.group(1))


def _restore_copy_times(machine: Any) -> bool:
    """Gives the copy its source's modification times, as `cp -a` would have."""
    times = machine.cur.times_before_copy
    if not times:
        return False
    for rel, (atime, mtime) in times.items():
        path = os.path.join(machine.cur.path, rel)
        if os.path.exists(path):
            os.utime(path, ns=(atime, mtime))
    return True


def _restore_gmeta(machine: Any) -> bool:
    """Puts the deleted .gmeta back, bytes and times."""
    if machine.cur.deleted_gmeta is None:
        return False
    name, data, (atime, mtime) = machine.cur.deleted_gmeta
    path = os.path.join(machine.cur.path, name)
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, ns=(atime, mtime))
    machine.cur.deleted_gmeta = None
    return True


def _restore_label_map(machine: Any) -> bool:
    """Puts label2idx.json back as it was before the refused merge."""
    path = os.path.join(machine.cur.path, "label2idx.json")
    before = machine.cur.label_file_before_merge
    if before is None:
        if os.path.exists(path):
            os.unlink(path)
    else:
        with open(path, "wb") as f:
            f.write(before)
    return True


KNOWN_BUGS: List[KnownBug] = [
    KnownBug(
        "A1 a cp -r copy of an imported dataset is refused as changed",
        "19.A1", "test_a_cp_r_copy_of_an_imported_gulpio_directory_opens",
        lambda f, m: "copied (cp -r)" in _flags(m) and "imported" in _flags(m)
        and "changed since it was indexed" in f.text and "it was modified (same size" in f.text,
        "recover", _restore_copy_times),
    KnownBug(
        "A2 a missing .gmeta is taken for a change",
        "19.A2", "test_a_missing_gmeta_is_not_staleness_and_export_writes_it_again",
        lambda f, m: "gmeta deleted" in _flags(m) and "changed since it was indexed" in f.text
        and ".gmeta: it was removed" in f.text,
        "recover", _restore_gmeta),
    KnownBug(
        "B4 check of a pushed imported dataset lists the prefix as a directory",
        "19.B4", "test_check_of_a_pushed_imported_dataset_is_healthy",
        lambda f, m: f.path == "url cli check --deep" and "imported" in _flags(m)
        and "'where': 'index'" in f.text and "No such file or directory" in f.text,
        "excuse"),
    KnownBug(
        "B4 check of a pushed dataset with attached shards looks for shards/ objects",
        "19.B4", "test_check_of_a_pushed_merged_dataset_is_healthy",
        lambda f, m: f.path == "url cli check --deep" and "attached" in _flags(m)
        and "shards/" in f.text and "(HTTP 404)" in f.text,
        "excuse"),
    KnownBug(
        "C14 a pickled URL reader reads another dataset pushed to its prefix",
        "19.C14", "test_a_pickled_url_reader_never_reads_another_dataset_pushed_to_its_prefix",
        lambda f, m: f.path.startswith("pickled") and f.path.endswith("(url)")
        and "after its prefix was wiped and reused" in f.text,
        "excuse"),
    KnownBug(
        "B6 emptying the newest chunk and compacting breaks every later write",
        "19.B6", "test_compacting_an_emptied_newest_chunk_keeps_the_dataset_writable",
        lambda f, m: "a video points to a chunk the index lacks" in f.text),
    # Found by this test (not on issue 19's list):
    KnownBug(
        "NEW export of a merged dataset writes .gmeta files for attached shard chunks",
        "new.1", "test_export_of_a_merged_dataset_is_a_directory_gulpio2_reads",
        lambda f, m: f.path.startswith("exported dir") and "attached" in _flags(m)
        and "GulpIO2 refuses the directory" in f.text and _more_meta_than_data(f.text),
        "excuse"),
    KnownBug(
        "NEW a refused merge still writes the shard's labels into label2idx.json",
        "new.2", "test_a_refused_merge_leaves_the_label_map_as_it_was",
        lambda f, m: f.path == "label2idx.json" and "merge refused" in _flags(m),
        "recover", _restore_label_map),
    KnownBug(
        "NEW reindex --discard-unexported leaves the dropped chunks' data files behind",
        "new.3", "test_reindex_discarding_unexported_videos_leaves_a_gulpio_directory",
        lambda f, m: f.path == "exported dir (in place)" and "discarded unexported" in _flags(m)
        and "GulpIO2 refuses the directory" in f.text and not _more_meta_than_data(f.text),
        "excuse"),
]


def active() -> List[KnownBug]:
    """The entries GULPDB_LIFECYCLE_KNOWN_BUGS keeps: "all" (the default),
    "none", a list of issue items ("19.A1,19.B6,new.1"), or all but some
    ("-19.B6": put one bug back in play, to see that the test finds it)."""
    setting = os.environ.get("GULPDB_LIFECYCLE_KNOWN_BUGS", "all").strip()
    if setting == "none":
        return []
    if setting == "all":
        return list(KNOWN_BUGS)
    items = [n.strip() for n in setting.split(",") if n.strip()]
    dropped = {n[1:] for n in items if n.startswith("-")}
    kept = {n for n in items if not n.startswith("-")}
    return [b for b in KNOWN_BUGS
            if (not kept or b.issue in kept) and b.issue not in dropped]


def match(failure: Failure, machine: Any) -> Optional[KnownBug]:
    if failure.kind == "signal":
        return None  # a process killed by a signal is never excused
    for bug in active():
        if bug.matches(failure, machine):
            return bug
    return None
