"""Tags in a bucket (docs/versions.md, "Tags in a bucket"), against s3rver and
the counting proxy on 127.0.0.1: a push publishes every local tag; each
reads by URL (``version=``, ``--version``) as the local tag does, after
appends, meta edits, removes and compaction; objects tags share with each
other are uploaded once; a tag deleted locally leaves the bucket after the
grace period, and readers that opened it keep reading until then; damaged
or crafted tag objects and roots are CorruptionErrors naming the URL."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import subprocess

import pytest

import gulpdb
from conftest import GULPDB_CLI
from test_remote import BUCKET, Remote
from test_versions import cli, frames_of, make, state  # the local tags' helpers

import s3_proxy  # noqa: E402  (tests/harness, on the path test_remote sets)


@pytest.fixture(scope="module")
def servers():
    from test_remote import KEY_ID, SECRET

    with s3_proxy.s3rver_behind_proxy(BUCKET, {KEY_ID: SECRET}) as both:
        yield both


@pytest.fixture
def remote(servers, tmp_path, monkeypatch):
    return Remote(servers, tmp_path, monkeypatch)


def reads(ds):
    """What every read path answers: state, decoded frames, a query, ids."""
    return {
        "state": state(ds),
        "pixels": {i: hashlib.sha256(ds.read(i).tobytes()).hexdigest() for i in ds.ids()},
        "cats": ds.select("label = 'cat'"),
        "big": ds.select("n >= 4"),
        "ids": ds.ids(),
    }


def bucket_objects(remote):
    s3 = remote.boto3()
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                               Prefix=remote.prefix + "/"):
        for o in page.get("Contents", []):
            out[o["Key"][len(remote.prefix) + 1:]] = o["Size"]
    return out


def get(remote, key):
    return remote.boto3().get_object(Bucket=BUCKET, Key=remote.key(key))["Body"].read()


def put(remote, key, body):
    remote.boto3().put_object(Bucket=BUCKET, Key=remote.key(key), Body=body)


def manifest(remote):
    return json.loads(get(remote, "gulpdb.manifest.json"))


def tag_entry(remote, name):
    return next(t for t in manifest(remote)["tags"] if t["name"] == name)


def test_push_publishes_tags_that_read_by_url_as_the_local_tags_after_edits_and_compaction(
        remote, tmp_path):
    path = make(str(tmp_path / "ds"))
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("v1", message="as ingested")
        with ds.writer() as w:
            w.append("new", frames_of(50), {"label": "cat", "n": 50})
            w.update_meta("v1", {"label": "fox"})
            w.remove("v0")
            w.remove("v2")
    cli("compact", path)  # chunk 0 emptied: kept in gulpdb.versions/chunks for v1
    assert os.path.exists(os.path.join(path, "gulpdb.versions", "chunks", "data_0.gulp"))
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("v2")
        with ds.writer() as w:
            w.append("later", frames_of(60), {"label": "owl", "n": 60})
            w.update_meta("v3", {"label": "emu"})
    gulpdb.push(path, remote.url)

    # Chunk 0, which only v1 reads, was uploaded from where compaction kept
    # it, and has an emptied .gmeta beside it (the bucket stays a GulpIO
    # directory whose videos the generation lists once).
    objects = bucket_objects(remote)
    assert objects["data_0.gulp"] == os.path.getsize(
        os.path.join(path, "gulpdb.versions", "chunks", "data_0.gulp"))
    assert get(remote, "meta_0.gmeta") == b"{}"
    assert [t["name"] for t in manifest(remote)["tags"]] == ["v1", "v2"]

    for name in ("v1", "v2"):
        with gulpdb.Dataset(path, version=name) as local, \
                gulpdb.Dataset(remote.url, version=name) as published:
            assert published.read_only and published.version == name
            assert reads(published) == reads(local), name
            # A version pickles with its name, generation and root: a copy
            # (a DataLoader worker) reads the same tag.
            again = pickle.loads(pickle.dumps(published))
            assert again.ids() == local.ids() and again.version == name
    with gulpdb.Dataset(remote.url, version="v1") as v1:
        assert v1.meta("v1")["label"] == "dog" and "v0" in v1.ids()
        import gulpdb.torch as gtorch

        items = gtorch.VideoDataset(v1, label="label")
        assert len(items) == 9
        assert [items[k][1] for k in range(3)] == ["cat", "dog", "owl"]
    with gulpdb.Dataset(remote.url) as head:
        assert head.meta("v1")["label"] == "fox" and "later" in head.ids()
        assert [(v["name"], v["videos"]) for v in head.versions()] == [("v1", 9), ("v2", 8)]
        assert head.versions()[0]["message"] == "as ingested"
        with gulpdb.Dataset(path) as local:
            assert [v["root"] for v in head.versions()] == [v["root"] for v in local.versions()]

    # More changes and compaction, pushed again: the tags still read the same.
    with gulpdb.Dataset(path, "r+") as ds:
        with ds.writer() as w:
            w.remove("v3")
            w.remove("v4")
            w.update_meta("v6", {"label": "yak"})
    cli("compact", path)
    gulpdb.push(path, remote.url)
    for name in ("v1", "v2"):
        with gulpdb.Dataset(path, version=name) as local, \
                gulpdb.Dataset(remote.url, version=name) as published:
            assert reads(published) == reads(local), name


def test_an_unknown_tag_of_a_url_is_a_key_error_listing_the_tags(remote, tmp_path):
    path = make(str(tmp_path / "ds"), n=3)
    gulpdb.push(path, remote.url)
    with pytest.raises(KeyError, match="no tags"):
        gulpdb.Dataset(remote.url, version="v1")
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("first")
        ds.tag("second")
    gulpdb.push(path, remote.url)
    with pytest.raises(KeyError, match="first, second"):
        gulpdb.Dataset(remote.url, version="nope")
    with pytest.raises(ValueError):
        gulpdb.Dataset(remote.url, version="../first")
    with pytest.raises(ValueError, match="read-only"):
        gulpdb.Dataset(remote.url, "r+", version="first")
    with gulpdb.Dataset(remote.url, version="HEAD") as head:
        assert head.version is None and len(head.ids()) == 3


def test_objects_shared_by_tags_and_pushes_are_uploaded_once(remote, tmp_path):
    path = make(str(tmp_path / "ds"), n=60, vpc=10)
    remote.through_proxy()
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("a")
        ds.tag("b")  # the same index: the same objects (at most another root)
    gulpdb.push(path, remote.url)
    with gulpdb.Dataset(path, "r+") as ds:
        with ds.writer() as w:
            w.update_meta("v7", {"label": "emu"})
        ds.tag("c")
    gulpdb.push(path, remote.url)
    gulpdb.push(path, remote.url)  # nothing changed: nothing sent
    puts = [e["path"].split("?")[0] for e in remote.proxy.log() if e["method"] == "PUT"]
    addressed = [p for p in puts if any(d in p for d in (
        "/gulpdb.partitions/", "/gulpdb.roots/", "/gulpdb.tags/", "/gulpdb.chunk-pages/"))]
    assert len(addressed) == len(set(addressed)), "a content-addressed object was sent twice"
    local = set(os.listdir(os.path.join(path, "gulpdb.versions", "objects")))
    tag_puts = {p.rsplit("/", 1)[1].split(".")[0] for p in addressed}
    assert local <= tag_puts, "every object of the local tags is in the bucket"
    assert sum("/gulpdb.tags/" in p for p in addressed) == 3
    # Each chunk's bytes went up once: the tags read the generation's chunks.
    chunk_puts = [p for p in puts if p.endswith(".gulp")]
    assert len(chunk_puts) == len(set(chunk_puts)) == 6
    for name in ("a", "b", "c"):
        with gulpdb.Dataset(path, version=name) as l, gulpdb.Dataset(remote.url, version=name) as r:
            assert state(r) == state(l)


def test_a_tag_deleted_locally_leaves_the_bucket_after_the_grace_period(remote, tmp_path):
    path = make(str(tmp_path / "ds"))
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("old")
        with ds.writer() as w:
            w.remove("v0")
            w.remove("v1")
            w.remove("v2")
    cli("compact", path)  # chunk 0 now read by "old" only
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("kept")
    gulpdb.push(path, remote.url, grace=3600)
    old_entry = tag_entry(remote, "old")
    old_root = "gulpdb.roots/" + old_entry["root"] + ".root"
    assert {old_entry["key"], old_root, "data_0.gulp"} <= set(bucket_objects(remote))
    reader = gulpdb.Dataset(remote.url, version="old")
    expected = state(reader)

    with gulpdb.Dataset(path, "r+") as ds:
        ds.delete_tag("old", grace_seconds=0)
        ds.reclaim_versions()
    gulpdb.push(path, remote.url, grace=3600)
    assert [t["name"] for t in manifest(remote)["tags"]] == ["kept"]
    with pytest.raises(KeyError, match="kept"):
        gulpdb.Dataset(remote.url, version="old")
    # Within the grace period the reader that opened it keeps reading.
    assert {old_entry["key"], old_root, "data_0.gulp"} <= set(bucket_objects(remote))
    obsolete = {o["key"] for o in manifest(remote)["obsolete"]}
    assert {old_entry["key"], old_root, "data_0.gulp"} <= obsolete
    assert state(reader) == expected
    reader.close()
    # A push after the grace period deletes them.
    gulpdb.push(path, remote.url, grace=0)  # the entries are listed again from now with 0 s
    gulpdb.push(path, remote.url, grace=0)
    objects = set(bucket_objects(remote))
    assert old_entry["key"] not in objects and old_root not in objects
    assert "data_0.gulp" not in objects and "meta_0.gmeta" not in objects
    with gulpdb.Dataset(path, version="kept") as l, gulpdb.Dataset(remote.url, version="kept") as r:
        assert state(r) == state(l)


def test_damaged_or_crafted_tag_objects_and_roots_are_corruption_errors_naming_the_url(
        remote, tmp_path):
    path = make(str(tmp_path / "ds"), n=6)
    with gulpdb.Dataset(path, "r+") as ds:
        ds.tag("t")
        with ds.writer() as w:
            w.update_meta("v1", {"label": "fox"})
    gulpdb.push(path, remote.url)
    entry = tag_entry(remote, "t")
    good = get(remote, entry["key"])

    def refused(*texts):
        """Opening tag t in a new process (which remembers no damaged object)
        fails with a CorruptionError naming each of `texts`, never a signal."""
        r = subprocess.run([GULPDB_CLI, "ls", remote.url, "--version", "t"], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode > 0 and "Traceback" not in r.stderr, r.stderr
        for text in texts:
            assert text in r.stderr, r.stderr
        with pytest.raises(gulpdb.CorruptionError):
            gulpdb.Dataset(remote.url, version="t")

    # Truncated, then bytes flipped: never read as a tag.
    for damaged in (good[:len(good) // 2], good.replace(b'"videos": 6', b'"videos": 7')):
        assert damaged != good
        put(remote, entry["key"], damaged)
        refused(remote.url + "/" + entry["key"], "damaged in the bucket")
    put(remote, entry["key"], good)

    # A crafted tag object, listed by a crafted manifest, naming a root
    # outside the prefix or not by a SHA-256 name.
    m = manifest(remote)
    for root, why in (('"key": "../../x.root"', "not a key inside the dataset"),
                      ('"key": "gulpdb.roots/zz.root"', "not the root's name")):
        crafted = good.decode().replace(
            '"key": "gulpdb.roots/' + entry["root"] + '.root"', root).encode()
        assert crafted != good
        sha = hashlib.sha256(crafted).hexdigest()
        put(remote, f"gulpdb.tags/{sha}.json", crafted)
        m2 = dict(m, tags=[dict(entry, key=f"gulpdb.tags/{sha}.json", sha256=sha,
                                size=len(crafted))])
        put(remote, "gulpdb.manifest.json", json.dumps(m2).encode())
        refused(f"gulpdb.tags/{sha}.json", why)
    # A manifest entry naming a key outside the prefix.
    put(remote, "gulpdb.manifest.json",
        json.dumps(dict(m, tags=[dict(entry, key="../escape.json")])).encode())
    refused("tag entry 0", "not a key inside the dataset")
    put(remote, "gulpdb.manifest.json", json.dumps(m).encode())

    # The tag's root damaged in the bucket (and not in this node's cache).
    root_key = "gulpdb.roots/" + entry["root"] + ".root"
    root = get(remote, root_key)
    put(remote, root_key, root[:-7])
    for dirpath, _, files in os.walk(os.environ["GULPDB_CACHE"]):
        for f in files:
            if f == entry["root"]:
                os.remove(os.path.join(dirpath, f))
    refused(remote.url + "/" + root_key)
    put(remote, root_key, root)
    r = subprocess.run([GULPDB_CLI, "ls", remote.url, "--version", "t"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and [line.split("\t")[0] for line in r.stdout.splitlines()] == [
        f"v{i}" for i in range(6)], r


def test_the_command_line_reads_and_lists_the_tags_of_a_url(remote, tmp_path):
    path = make(str(tmp_path / "ds"), n=6)
    cli("tag", path, "before", "--message", "as ingested")
    with gulpdb.Dataset(path, "r+") as ds:
        with ds.writer() as w:
            w.update_meta("v3", {"label": "fox"})
            w.remove("v0")
    cli("push", path, remote.url)
    listed = cli("tag", remote.url).stdout
    assert listed.startswith("before\t") and "6 videos" in listed and "as ingested" in listed
    assert json.loads(cli("tag", remote.url, "--json").stdout)[0]["name"] == "before"
    assert "v0" in cli("ls", remote.url, "--version", "before").stdout
    assert "v0" not in cli("ls", remote.url).stdout
    shown = json.loads(cli("show", remote.url, "v3", "--version", "before", "--json").stdout)
    assert shown["meta_data"][0]["label"] == "cat"
    assert re.search(r"videos: +6\n", cli("info", remote.url, "--version", "before").stdout)
    cli("check", remote.url, "--version", "before")
    out = tmp_path / "out"
    cli("extract", remote.url, "v0", "--version", "before", "-o", str(tmp_path / "frames"))
    assert os.listdir(tmp_path / "frames")
    cli("export", remote.url, "--version", "before", "-o", str(out))
    exported = gulpdb.GulpDirectory(str(out))
    assert sorted(exported.merged_meta_dict) == [f"v{i}" for i in range(6)]
    unknown = cli("ls", remote.url, "--version", "nope", expect=1)
    assert "before" in unknown.stderr
    cli("tag", remote.url, "new", expect=2)  # tags are made on the local dataset
    cli("tag", remote.url, "before", "--delete", expect=2)
