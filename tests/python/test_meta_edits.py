"""Meta edits (docs/edits.md) from Python and the command line: Writer.update_meta
and set_meta in a batch, `gulpdb meta`, `gulpdb relabel` / gulpdb.relabel and the
label map, export of the new meta, and `import --reindex` that refuses to
revert edits no export wrote. Frames never move for an edit."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import numpy as np
import pytest

import gulpdb
from conftest import GULPDB_CLI


def make(path, n=6, vpc=3):
    with gulpdb.Dataset(path, "a", videos_per_chunk=vpc) as ds:
        with ds.writer() as w:
            for i in range(n):
                w.append(f"v{i}", np.full((2, 16, 16, 3), 10 * i, np.uint8),
                         {"id": f"v{i}", "label": ["cat", "dog"][i % 2], "idx": i % 2})
    with open(os.path.join(path, "label2idx.json"), "w") as f:
        f.write('{"cat": 0, "dog": 1}')
    return path


def cli(*args, expect=0):
    r = subprocess.run([GULPDB_CLI, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == expect, f"gulpdb {args}: exit {r.returncode}\n{r.stdout}{r.stderr}"
    return r


def chunk_digests(path):
    out = {}
    for name in sorted(os.listdir(path)):
        if name.endswith(".gulp"):
            with open(os.path.join(path, name), "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def test_update_and_set_meta_edit_the_first_entry_and_never_the_frames(tmp_path):
    path = make(str(tmp_path / "ds"))
    before = chunk_digests(path)
    with gulpdb.Dataset(path, "r+") as ds:
        frames = ds.read_jpegs("v1")
        ds.create_meta_index("label")
        with ds.writer() as w:
            assert w.update_meta("v1", {"label": "owl", "idx": None, "note": [1, 2]})
            assert w.set_meta("v2", {"only": True})
            assert not w.update_meta("v3", {"label": "dog"})  # already so: nothing recorded
        assert ds.meta("v1") == {"id": "v1", "label": "owl", "note": [1, 2]}
        assert ds.meta("v2") == {"only": True}
        assert ds.read_jpegs("v1") == frames
        assert ds.select(label="owl") == ["v1"]
        assert ds.select("label = 'cat'") == ["v0", "v4"]
    assert chunk_digests(path) == before


def test_a_missing_id_raises_key_error_and_nothing_of_the_batch_lands(tmp_path):
    path = make(str(tmp_path / "ds"))
    with gulpdb.Dataset(path, "r+") as ds:
        with pytest.raises(KeyError, match="nope"):
            with ds.writer() as w:
                w.append("new", np.zeros((1, 8, 8, 3), np.uint8), {})
                w.update_meta("v0", {"label": "changed"})
                w.update_meta("nope", {"label": "x"})
        assert "new" not in ds
        assert ds.meta("v0")["label"] == "cat"
        # Even when the caller catches it, the batch is gone.
        w = ds.writer()
        w.update_meta("v0", {"label": "changed"})
        with pytest.raises(KeyError):
            w.set_meta("", {})
        w.commit()
        w.close()
        assert ds.meta("v0")["label"] == "cat"


def test_hostile_arguments_are_clear_errors(tmp_path):
    path = make(str(tmp_path / "ds"))
    with gulpdb.Dataset(path, "r+") as ds:
        with ds.writer() as w:
            with pytest.raises(TypeError, match="dict"):
                w.update_meta("v0", ["label", "x"])
            with pytest.raises(TypeError, match="dict"):
                w.set_meta("v0", "label=x")
            with pytest.raises(TypeError):
                w.update_meta("v0", {"k": object()})
        with pytest.raises(KeyError):
            with ds.writer() as w:
                w.update_meta(12345, {"k": 1})  # an int id stands for its string
    with gulpdb.Dataset(path) as ds:
        with pytest.raises(ValueError, match="read-only"):
            ds.writer()


def test_cli_meta_prints_sets_and_unsets(tmp_path):
    path = make(str(tmp_path / "ds"))
    assert json.loads(cli("meta", path, "v1").stdout) == {"id": "v1", "label": "dog", "idx": 1}
    out = cli("meta", path, "v1", "--set", "label=owl", "--set", "n=5", "--set", "s=x y",
              "--set", 'q="5"', "--set", "l=[1, 2]", "--unset", "idx").stdout
    assert json.loads(out) == {"id": "v1", "label": "owl", "n": 5, "s": "x y", "q": "5",
                               "l": [1, 2]}
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v1")["n"] == 5
    r = cli("meta", path, "nope", "--set", "a=1", expect=1)
    assert "nope" in r.stderr
    cli("meta", path, "v1", "--set", "novalue", expect=2)
    cli("meta", path, "v1", "--set", "=1", expect=2)
    cli("meta", str(tmp_path / "missing"), "v1", expect=1)
    open(str(tmp_path / "file"), "w").close()
    cli("meta", str(tmp_path / "file"), "v1", expect=1)


def test_relabel_applies_a_csv_and_extends_the_label_map(tmp_path):
    path = make(str(tmp_path / "ds"))
    before = chunk_digests(path)
    listing = tmp_path / "fix.csv"
    listing.write_text("v0;dog\nv1;zebra\nv2;ant\n")
    r = cli("relabel", path, "--labels", str(listing))
    assert "relabeled 3 of 3" in r.stdout
    with open(os.path.join(path, "label2idx.json")) as f:
        assert json.load(f) == {"cat": 0, "dog": 1, "ant": 2, "zebra": 3}
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v0") == {"id": "v0", "label": "dog", "idx": 1}
        assert ds.meta("v1") == {"id": "v1", "label": "zebra", "idx": 3}
        assert ds.meta("v2") == {"id": "v2", "label": "ant", "idx": 2}
        assert ds.meta("v3")["label"] == "dog"
    assert chunk_digests(path) == before


def test_relabel_reads_a_20bn_json_list_with_its_label_name(tmp_path):
    path = make(str(tmp_path / "ds"))
    listing = tmp_path / "fix.json"
    listing.write_text(json.dumps([{"id": "v4", "template": "dog"}, {"id": "v5",
                                                                      "template": "owl"}]))
    report = gulpdb.relabel(path, str(listing), label_name="template")
    assert report["listed"] == 2 and report["changed"] == 2 and report["new_labels"] == 1
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v5") == {"id": "v5", "label": "owl", "idx": 2}


def test_relabel_refuses_missing_ids_listing_them_and_changes_nothing(tmp_path):
    path = make(str(tmp_path / "ds"))
    with open(os.path.join(path, "label2idx.json")) as f:
        labels_before = f.read()
    listing = tmp_path / "fix.csv"
    listing.write_text("v0;zebra\nghost1;cat\nghost2;dog\n")
    r = cli("relabel", path, "--labels", str(listing), expect=1)
    assert "ghost1" in r.stderr and "ghost2" in r.stderr and "2 ids" in r.stderr
    with pytest.raises(KeyError, match="ghost1"):
        gulpdb.relabel(path, str(listing))
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v0")["label"] == "cat"
    with open(os.path.join(path, "label2idx.json")) as f:
        assert f.read() == labels_before


def test_relabel_names_missing_ids_before_any_other_fault(tmp_path):
    # The ids are checked only when something failed; missing ids are still
    # the error when the label map is damaged too, and nothing changes.
    path = make(str(tmp_path / "ds"))
    listing = tmp_path / "fix.csv"
    listing.write_text("aaa;cat\nv0;zebra\nzzz;dog\n")
    with open(os.path.join(path, "label2idx.json"), "w") as f:
        f.write('{"cat": "not an index"}')
    with pytest.raises(KeyError, match=r"2 ids .*'aaa', 'zzz'"):
        gulpdb.relabel(path, str(listing))
    with open(os.path.join(path, "label2idx.json"), "w") as f:
        f.write('{"cat": 0, "dog": 1}')
    with gulpdb.Dataset(path, "r+") as ds:
        with ds.writer() as w:
            assert w.set_meta("v0", {"id": "v0"})
    r = cli("relabel", path, "--labels", str(listing), expect=1)
    assert "'aaa', 'zzz'" in r.stderr and "2 ids" in r.stderr
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v0") == {"id": "v0"}
    listing.write_text("v0;zebra\n")
    report = gulpdb.relabel(path, str(listing))
    assert report["changed"] == 1
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v0") == {"id": "v0", "label": "zebra", "idx": 2}


def test_relabel_refuses_bad_lists(tmp_path):
    path = make(str(tmp_path / "ds"))
    twice = tmp_path / "twice.csv"
    twice.write_text("v0;dog\nv0;cat\n")
    with pytest.raises(ValueError, match="two labels"):
        gulpdb.relabel(path, str(twice))
    unlabeled = tmp_path / "unlabeled.csv"
    unlabeled.write_text("v0;dog\nv1\n")
    with pytest.raises(ValueError, match="no label"):
        gulpdb.relabel(path, str(unlabeled))
    with pytest.raises(FileNotFoundError):
        gulpdb.relabel(path, str(tmp_path / "absent.csv"))
    with pytest.raises(FileNotFoundError):
        gulpdb.relabel(str(tmp_path / "no-dataset"), str(twice))
    with pytest.raises(TypeError):
        gulpdb.relabel(path, ["v0;dog"])
    cli("relabel", path, expect=2)
    cli("relabel", path, "--labels", "", expect=2)
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v0")["label"] == "cat"


def test_export_writes_the_new_meta_and_reindex_keeps_edits_only_after_it(tmp_path):
    path = make(str(tmp_path / "ds"))
    cli("export", path)
    with gulpdb.Dataset(path, "r+") as ds:
        with ds.writer() as w:
            w.update_meta("v4", {"label": "owl"})
    # The .gmeta files are older than the edit: a re-index would revert it.
    r = cli("import", path, "--reindex", "-q", expect=1)
    assert "v4" in r.stderr and "edited" in r.stderr
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v4")["label"] == "owl"
    cli("export", path)
    gmeta = {}
    for name in os.listdir(path):
        if name.endswith(".gmeta"):
            with open(os.path.join(path, name)) as f:
                gmeta.update(json.load(f))
    assert gmeta["v4"]["meta_data"][0]["label"] == "owl"
    cli("import", path, "--reindex", "-q")
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v4")["label"] == "owl"


def test_reindex_discards_unexported_edits_when_told(tmp_path):
    path = make(str(tmp_path / "ds"))
    cli("export", path)
    with gulpdb.Dataset(path, "r+") as ds:
        with ds.writer() as w:
            w.update_meta("v0", {"label": "owl"})
    r = cli("import", path, "--reindex", "--discard-unexported", expect=0)
    assert "reverted" in r.stderr or "reverted" in r.stdout
    with gulpdb.Dataset(path) as ds:
        assert ds.meta("v0")["label"] == "cat"
