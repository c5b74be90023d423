"""Versions (docs/versions.md): tags as content-addressed snapshots in
gulpdb.versions, reads of a version after the dataset moved on (appends,
meta edits, removes, compaction), diff, deleting a tag and reclaiming its
space, and the command line's tag, diff and --version."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import numpy as np
import pytest

import gulpdb
from conftest import GULPDB_CLI


def cli(*args, expect=0):
    r = subprocess.run([GULPDB_CLI, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == expect, f"gulpdb {args}: exit {r.returncode}\n{r.stdout}{r.stderr}"
    return r


def frames_of(i, n=3):
    return np.full((n, 16, 16, 3), (17 * i) % 256, np.uint8)


def make(path, n=9, vpc=3):
    with gulpdb.Dataset(path, "a", videos_per_chunk=vpc) as ds:
        with ds.writer() as w:
            for i in range(n):
                w.append(f"v{i}", frames_of(i), {"label": ["cat", "dog", "owl"][i % 3], "n": i})
    return path


def state(ds):
    """Everything a reader sees: ids in order, meta and JPEG bytes."""
    return {id_: (ds.meta(id_), ds.read_jpegs(id_)) for id_ in ds.ids()}


def gulpio_names(path, suffix):
    return sorted(n[len("data_" if suffix == ".gulp" else "meta_"):-len(suffix)]
                  for n in os.listdir(path) if n.endswith(suffix))


def test_a_version_reads_as_the_dataset_was_after_appends_edits_removes_and_compaction(tmp_path):
    path = make(str(tmp_path / "ds"))
    with gulpdb.Dataset(path, "r+") as ds:
        tagged = state(ds)
        ids = ds.ids()
        info = ds.tag("v1", message="first")
        assert info["name"] == "v1" and info["videos"] == 9 and info["frames"] == 27
        assert info["message"] == "first"
        with ds.writer() as w:
            w.append("new", frames_of(50), {"label": "cat"})
            w.update_meta("v1", {"label": "fox"})
            w.remove("v0")
            w.remove("v2")
        assert ds.select("label = 'fox'") == ["v1"]
    cli("compact", path)
    # Compaction emptied chunk 0 (v0, v2 removed; v1 moved): its data file
    # left DIR for the tags, and DIR is still a GulpIO directory.
    assert "data_0.gulp" not in os.listdir(path)
    assert os.path.exists(os.path.join(path, "gulpdb.versions", "chunks", "data_0.gulp"))
    with gulpdb.Dataset(path, version="v1") as v:
        assert v.read_only and v.version == "v1"
        assert v.ids() == ids
        assert state(v) == tagged
        assert v.select("label = 'fox'") == []
        assert v.select("label = 'cat'") == ["v0", "v3", "v6"]
        assert v.read("v0").shape == (3, 16, 16, 3)
    with gulpdb.Dataset(path, version="HEAD") as head:
        assert "new" in head.ids() and "v0" not in head.ids()


def test_tag_names_are_checked_and_unknown_versions_are_key_errors(tmp_path):
    path = make(str(tmp_path / "ds"), n=2)
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("ok.name_1-2")
        for bad in ["", "a/b", "..", ".", "x" * 256, "HEAD", "sp ace", "é"]:
            with pytest.raises(ValueError):
                ds.tag(bad)
        ds.tag("x" * 255)
        with pytest.raises(ValueError, match="in use"):
            ds.tag("ok.name_1-2")
        with pytest.raises(TypeError):
            ds.tag(5)
        with pytest.raises(KeyError, match="nope"):
            ds.diff("nope", "HEAD")
        with pytest.raises(KeyError):
            ds.delete_tag("nope")
        assert [t["name"] for t in ds.versions()] == ["ok.name_1-2", "x" * 255]
    with pytest.raises(KeyError, match="ok.name_1-2"):
        gulpdb.Dataset(path, version="nope")
    with pytest.raises(ValueError):
        gulpdb.Dataset(path, version="../x")
    with pytest.raises(ValueError, match="empty"):
        gulpdb.Dataset(path, version="")
    with pytest.raises(TypeError):
        gulpdb.Dataset(path, version=3)
    with pytest.raises(ValueError, match="read-only"):
        gulpdb.Dataset(path, "r+", version="ok.name_1-2")
    with gulpdb.Dataset(path) as ro:
        with pytest.raises(ValueError):
            ro.tag("again")
    assert not os.path.exists(os.path.join(str(tmp_path), "x"))


def test_tags_share_unchanged_objects_and_a_small_change_writes_few(tmp_path):
    path = make(str(tmp_path / "ds"), n=60, vpc=10)
    objects = os.path.join(path, "gulpdb.versions", "objects")
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("a")
        first = set(os.listdir(objects))
        ds.tag("b")  # nothing changed: only nothing new, or at most a root
        second = set(os.listdir(objects))
        assert len(second - first) <= 1
        assert ds.versions()[0]["root"] != "" and ds.versions()[1]["videos"] == 60
        with ds.writer() as w:
            w.update_meta("v7", {"label": "emu"})
        ds.tag("c")
        third = set(os.listdir(objects))
        assert third - second, "a meta edit writes a new root at least"
        assert len(third - second) < len(first)
    with gulpdb.Dataset(path, version="c") as c, gulpdb.Dataset(path, version="a") as a:
        assert c.meta("v7")["label"] == "emu" and a.meta("v7")["label"] == "dog"


def test_diff_reports_by_content_and_ignores_where_compaction_moved_frames(tmp_path):
    path = make(str(tmp_path / "ds"))
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("before")
        with ds.writer() as w:
            w.append("added", frames_of(40), {"label": "cat"})
            w.remove("v0")
            w.update_meta("v4", {"label": "emu"})
        with ds.writer(on_duplicate="replace") as w:
            w.append("v5", frames_of(99), {"label": "owl", "n": 5})
    cli("compact", path)
    expected = {"added": ["added"], "removed": ["v0"], "meta_changed": ["v4"],
                "frames_changed": ["v5"]}
    with gulpdb.Dataset(path, "r+") as ds:
        assert ds.diff("before", "HEAD") == expected
        ds.tag("after")
        assert ds.diff("before", "after") == expected
        assert ds.diff("after", "before") == {"added": ["v0"], "removed": ["added"],
                                              "meta_changed": ["v4"], "frames_changed": ["v5"]}
        assert ds.diff("after", "HEAD") == {"added": [], "removed": [], "meta_changed": [],
                                            "frames_changed": []}
    r = cli("diff", path, "before", "after", "--json")
    assert json.loads(r.stdout) == expected
    cli("diff", path, "before", "nope", expect=1)


def test_delete_tag_keeps_an_open_reader_and_frees_space_after_the_grace(tmp_path):
    path = make(str(tmp_path / "ds"))
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("t")
        tagged = state(ds)
        with ds.writer() as w:
            for i in range(9):
                w.remove(f"v{i}")
            w.append("z", frames_of(3), {})
    cli("compact", path)
    kept = os.path.join(path, "gulpdb.versions", "chunks")
    assert sorted(os.listdir(kept)) == ["data_0.gulp", "data_1.gulp", "data_2.gulp"]
    reader = gulpdb.Dataset(path, version="t")
    with gulpdb.Dataset(path, "r+") as ds:
        held = ds.version_bytes()
        assert held > 0
        info = json.loads(cli("info", path, "--json").stdout)
        assert info["tag_bytes"] == held and info["tags"] == 1
        ds.delete_tag("t")  # 10 minutes of grace
        with pytest.raises(KeyError):
            gulpdb.Dataset(path, version="t")
        assert state(reader) == tagged  # an open reader keeps reading
        assert ds.reclaim_versions() == 0
        assert ds.version_bytes() == held
    reader.close()
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("u")
        ds.delete_tag("u", grace_seconds=0)  # the grace is over at once: both are freed
        # "t"'s grace still runs: its objects and chunks stay
        assert os.listdir(kept)
        with pytest.raises(ValueError):
            ds.delete_tag("t", grace_seconds=-1)
    # Past every grace: nothing is held.
    deleted = os.path.join(path, "gulpdb.versions", "deleted")
    for name in os.listdir(deleted):
        os.rename(os.path.join(deleted, name), os.path.join(deleted, "0-" + name.split("-", 1)[1]))
    with gulpdb.Dataset(path, "r+") as ds:
        assert ds.reclaim_versions() > 0
        assert ds.version_bytes() == 0
        assert os.listdir(kept) == []
        assert [x for x in ds.ids()] == ["z"]


def test_damaged_tag_files_and_roots_are_corruption_errors_naming_the_file(tmp_path):
    path = make(str(tmp_path / "ds"), n=3)
    with gulpdb.Dataset(path, "r+") as ds:
        root = ds.tag("t")["root"]
    root_path = os.path.join(path, "gulpdb.versions", "objects", root)
    data = bytearray(open(root_path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(root_path, "wb").write(bytes(data))
    with pytest.raises(gulpdb.CorruptionError, match=root):
        gulpdb.Dataset(path, version="t")
    tag_path = os.path.join(path, "gulpdb.versions", "tags",
                            hashlib.sha256(b"t").hexdigest() + ".tag")
    text = open(tag_path).read()
    open(tag_path, "w").write(text.replace(root, "../../../../etc/passwd"))
    with pytest.raises(gulpdb.CorruptionError, match=os.path.basename(tag_path)):
        gulpdb.Dataset(path, version="t")
    open(tag_path, "w").write("{not json")
    with pytest.raises(gulpdb.CorruptionError, match=os.path.basename(tag_path)):
        gulpdb.Dataset(path, version="t")


def test_cli_tag_list_delete_and_read_commands_with_version(tmp_path):
    path = make(str(tmp_path / "ds"))
    assert "tagged v1: 9 videos, 27 frames" in cli("tag", path, "v1", "--message", "hello").stdout
    with gulpdb.Dataset(path, "r+") as ds:
        with ds.writer() as w:
            w.remove("v3")
            w.update_meta("v4", {"label": "emu"})
    listed = cli("tag", path).stdout.split("\t")
    assert listed[0] == "v1" and "9 videos" in listed[2] and listed[4].strip() == "hello"
    tags = json.loads(cli("tag", path, "--json").stdout)
    assert tags[0]["name"] == "v1" and tags[0]["message"] == "hello"
    assert '"videos": 9' in cli("info", path, "--json", "--version", "v1").stdout
    assert len(cli("ls", path, "--version", "v1").stdout.splitlines()) == 9
    assert len(cli("ls", path).stdout.splitlines()) == 8
    assert "emu" not in cli("show", path, "v4", "--version", "v1").stdout
    assert "emu" in cli("show", path, "v4").stdout
    cli("show", path, "v3", "--version", "v1")
    out = tmp_path / "frames"
    cli("extract", path, "v3", "-o", str(out), "--version", "v1")
    assert len(os.listdir(out)) == 3
    assert json.loads(cli("check", path, "--version", "v1", "--json").stdout)["healthy"]
    r = cli("export", path, "--version", "v1", expect=2)
    assert "-o OUT" in r.stderr
    gmeta_before = {n: open(os.path.join(path, n), "rb").read()
                    for n in os.listdir(path) if n.endswith(".gmeta")}
    exported = tmp_path / "exported"
    cli("export", path, "--version", "v1", "-o", str(exported))
    assert gulpio_names(str(exported), ".gulp") == gulpio_names(str(exported), ".gmeta") != []
    assert {n: open(os.path.join(path, n), "rb").read()
            for n in os.listdir(path) if n.endswith(".gmeta")} == gmeta_before
    imported = gulpdb.import_gulpio(str(exported))
    with gulpdb.Dataset(str(exported)) as e, gulpdb.Dataset(path, version="v1") as v:
        assert state(e) == state(v)
    assert imported
    r = cli("ls", path, "--version", "nope", expect=1)
    assert "no tag 'nope'" in r.stderr and "v1" in r.stderr
    cli("tag", path, "HEAD", expect=1)
    cli("tag", path, "../x", expect=1)
    cli("tag", path, "v1", expect=1)
    cli("tag", path, "--delete", expect=2)
    cli("tag", path, "v1", "--delete", "--grace", "-1", expect=2)
    cli("tag", path, "v1", "--delete", "--grace", "0")
    assert cli("tag", path).stdout == ""
    cli("tag", str(tmp_path / "missing"), "x", expect=1)


def test_a_version_feeds_a_video_dataset_and_pickles_as_the_version(tmp_path):
    pickle = pytest.importorskip("pickle")
    torch_module = pytest.importorskip("gulpdb.torch")
    path = make(str(tmp_path / "ds"), n=4)
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("train")
        with ds.writer() as w:
            w.append("late", frames_of(9), {"label": "cat", "n": 9})
            w.update_meta("v0", {"n": 100})
    version = gulpdb.Dataset(path, version="train")
    copy = pickle.loads(pickle.dumps(version))
    assert copy.version == "train" and copy.ids() == version.ids() == ["v0", "v1", "v2", "v3"]
    assert copy.meta("v0")["n"] == 0
    videos = torch_module.VideoDataset(version, label="n")
    assert len(videos) == 4
    clip, label = videos[0]
    assert tuple(clip.shape) == (3, 16, 16, 3) and int(label) == 0


def test_reclaim_removes_what_a_crashed_build_left_and_never_follows_a_link(tmp_path):
    path = make(str(tmp_path / "ds"), n=2)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine")
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("t")
        objects = os.path.join(path, "gulpdb.versions", "objects")
        os.makedirs(os.path.join(objects, ".build.1.env"))  # a tag interrupted by a crash
        open(os.path.join(objects, ".build.1.env", "data.mdb"), "wb").write(b"x" * 10)
        os.symlink(str(outside), os.path.join(objects, ".build.2.env"))
        ds.reclaim_versions()
        assert not os.path.lexists(os.path.join(objects, ".build.1.env"))
        assert not os.path.lexists(os.path.join(objects, ".build.2.env"))
        assert (outside / "keep").read_text() == "mine"
        with gulpdb.Dataset(path, version="t") as v:
            assert v.ids() == ["v0", "v1"]
