"""The viewer and dataset versions (docs/view.md, "Versions"), over HTTP:
`gulpdb view DIR --version NAME` and gulpdb.view(path, version=...) serve a
tag; the API's `version` parameter reads HEAD or any tag; an unknown, deleted
or hostile name is a 404 that says why and touches nothing; the static
report names its version. The selector in a real browser:
test_view_browser.py.
"""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import gulpdb
from conftest import GULPDB_CLI
from view_support import LABELS, ViewCommand, get, make_dataset, quote


@pytest.fixture
def tagged(tmp_path):
    """24 videos tagged "v1", then a video appended and vid_00 relabelled
    (cat -> zebra) after the tag."""
    path = str(tmp_path / "ds")
    ids = make_dataset(path)
    with gulpdb.Dataset(path, "a") as ds:
        ds.tag("v1", message="first")
        with ds.writer() as w:
            w.append("late", np.zeros((2, 16, 16, 3), np.uint8), {"label": "owl"})
            w.update_meta(ids[0], {"label": "zebra"})
    return path, ids


def token_of(viewer) -> str:
    return viewer.url.split("token=")[1]


def api(port: int, token: str, path: str):
    status, _, body = get(port, path, token=token)
    return status, json.loads(body)


def grid(port: int, token: str, version=None):
    path = "/api/videos?count=500" + (f"&version={quote(version)}" if version is not None else "")
    status, body = api(port, token, path)
    assert status == 200, body
    return {v["id"]: json.loads(v["meta"])[0]["label"] for v in body["videos"]}, body["total"]


def test_the_api_reads_the_version_a_request_names(tagged):
    path, ids = tagged
    with gulpdb.view(path) as v:
        status, info = api(v.port, token_of(v), "/api/info")
        assert status == 200
        assert info["version"] == "HEAD" and info["served_version"] == "HEAD"
        assert [(t["name"], t["videos"], t["message"]) for t in info["versions"]] == \
            [("v1", 24, "first")]
        assert info["videos"] == 25
        old, total = grid(v.port, token_of(v), "v1")
        assert total == 24 and "late" not in old and old[ids[0]] == "cat"
        assert old == {id_: LABELS[i % 3] for i, id_ in enumerate(ids)}
        for head in (None, "HEAD"):
            now, total = grid(v.port, token_of(v), head)
            assert total == 25 and now["late"] == "owl" and now[ids[0]] == "zebra"
        # The video's record, its frames and the filter read the version too.
        status, video = api(v.port, token_of(v), f"/api/video?id={ids[0]}&version=v1")
        assert status == 200 and json.loads(video["meta"])[0]["label"] == "cat"
        assert api(v.port, token_of(v), "/api/video?id=late&version=v1")[0] == 404
        assert get(v.port, "/api/frame?id=late&frame=0&version=HEAD", token=token_of(v))[0] == 200
        status, zebras = api(v.port, token_of(v), "/api/videos?filter=label%3Dzebra&version=v1")
        assert status == 200 and zebras["total"] == 0


def test_unknown_and_hostile_version_names_are_404_with_a_message(tagged, tmp_path):
    path, _ = tagged
    before = sorted(os.listdir(path)) + sorted(os.listdir(os.path.join(path, "gulpdb.versions")))
    with gulpdb.view(path) as v:
        for name in ("nope", "../v1", "v1/../v1", "..", ".", "a/b", "/etc/passwd", "x" * 300,
                     "v1\x00", "\xe9"):
            for route in ("/api/info", "/api/videos", "/api/frame?id=vid_00", "/api/charts"):
                sep = "&" if "?" in route else "?"
                status, body = api(v.port, token_of(v), f"{route}{sep}version={quote(name)}")
                assert status == 404, (route, name, body)
                assert body["kind"] == "not found"
                assert "no tag has that name (tags: v1; HEAD is the live dataset)" in body["error"]
                assert len(body["error"]) < 400 + len(path)
        assert api(v.port, token_of(v), "/api/info")[0] == 200  # the server is fine
    after = sorted(os.listdir(path)) + sorted(os.listdir(os.path.join(path, "gulpdb.versions")))
    assert after == before


def test_a_tag_deleted_while_served_is_a_clear_error_and_the_server_lives(tagged):
    path, _ = tagged
    with gulpdb.view(path) as v:
        assert grid(v.port, token_of(v), "v1")[1] == 24
        with gulpdb.Dataset(path, "a") as ds:
            ds.delete_tag("v1", grace_seconds=0)
            ds.reclaim_versions()
        status, body = api(v.port, token_of(v), "/api/videos?version=v1")
        assert status == 404 and "the tag was deleted" in body["error"], body
        status, info = api(v.port, token_of(v), "/api/info")
        assert status == 200 and info["versions"] == []
        assert grid(v.port, token_of(v))[1] == 25


def test_the_command_serves_a_version_and_refuses_an_unknown_one_before_listening(tagged):
    path, ids = tagged
    with ViewCommand(path, "--version", "v1") as cmd:
        status, info = api(cmd.port, cmd.token, "/api/info")
        assert status == 200 and info["version"] == "v1" and info["videos"] == 24
        old, total = grid(cmd.port, cmd.token)
        assert total == 24 and old[ids[0]] == "cat" and "late" not in old
        now, total = grid(cmd.port, cmd.token, "HEAD")  # the selector's other choices
        assert total == 25 and now[ids[0]] == "zebra"
        code, err = cmd.stop()
        assert code == 0, err
        assert "version v1" in err
    for name in ("nope", "../v1", "x" * 300, ""):
        r = subprocess.run([GULPDB_CLI, "view", path, "--no-browser", "--version", name],
                           capture_output=True, text=True, timeout=120)
        # As `ls --version` reports the same name.
        ls = subprocess.run([GULPDB_CLI, "ls", path, "--version", name], capture_output=True,
                            text=True, timeout=120)
        assert r.returncode == ls.returncode != 0, (name, r.returncode, r.stderr)
        assert r.stdout == ""  # no address: the server never started
        assert r.stderr.replace("gulpdb view", "gulpdb ls") == ls.stderr
        if name == "nope":
            assert r.returncode == 1 and "no tag 'nope'" in r.stderr and "(tags: v1)" in r.stderr


def test_python_view_takes_a_version(tagged):
    path, ids = tagged
    with gulpdb.view(path, version="v1") as v:
        assert api(v.port, token_of(v), "/api/info")[1]["version"] == "v1"
        assert grid(v.port, token_of(v))[1] == 24
    with gulpdb.Dataset(path, version="v1") as old:
        with gulpdb.view(old) as v:  # an open version is served as that version
            assert api(v.port, token_of(v), "/api/info")[1]["version"] == "v1"
            assert grid(v.port, token_of(v))[0][ids[0]] == "cat"
    with pytest.raises(KeyError):
        gulpdb.view(path, version="nope")
    with pytest.raises(TypeError):
        gulpdb.view(path, version=3)
    with pytest.raises(ValueError):
        gulpdb.view(path, version="")
    with gulpdb.Dataset(path) as ds:
        with pytest.raises(ValueError):
            gulpdb.view(ds, version="v1")


def test_the_static_report_names_its_version(tagged, tmp_path):
    path, _ = tagged
    out = tmp_path / "sheet"
    r = subprocess.run([GULPDB_CLI, "view", path, "--static", str(out), "--version", "v1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text()
    assert 'Version <span class="version">v1</span> (a tag): 24 of 24 videos' in html
    assert ">late<" not in html and ">zebra<" not in html
