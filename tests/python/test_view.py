"""The viewer's server over HTTP (gulpdb.view and `gulpdb view`), without a
browser: the token on every route, ids and paths that try to leave the
dataset, commits made while it runs, no read transaction held between
requests, clean stops, hostile arguments, the static report, and the
engine calls the viewer added (read_thumbnails, check_video). The page in a
real browser: test_view_browser.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading

import numpy as np
import pytest

import gulpdb
from conftest import GULPDB_CLI
from view_support import URL_LINE, ViewCommand, get, make_dataset, quote

ROUTES = ["/", "/index.html", "/app.js", "/style.css", "/favicon.ico", "/api/info",
          "/api/videos", "/api/videos?start=0&count=5", "/api/video?id=vid_00",
          "/api/frame?id=vid_00&frame=0", "/api/check?id=vid_00", "/api/charts",
          "/nothing", "/../../etc/passwd", "/api/../../etc/passwd"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("view") / "ds")
    ids = make_dataset(path)
    return path, ids


@pytest.fixture
def viewer(dataset):
    with gulpdb.view(dataset[0]) as v:
        match = URL_LINE.match(v.url)
        assert match, v.url
        yield v, match.group(2)


def test_the_address_has_a_256_bit_url_safe_token(viewer):
    v, token = viewer
    assert v.url == f"http://127.0.0.1:{v.port}/?token={token}"
    assert len(token) == 43 and re.fullmatch(r"[A-Za-z0-9_-]+", token)
    with gulpdb.view(v._dataset.path) as other:
        assert other.url.split("token=")[1] != token  # drawn anew for every server


def test_every_route_is_forbidden_without_the_token(viewer):
    v, token = viewer
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    for route in ROUTES:
        for kwargs in ({}, {"token": wrong}, {"token": ""}, {"token": token.lower()},
                       {"cookie": f"gulpdb_view_{v.port}={wrong}"},
                       {"cookie": f"gulpdb_view_{v.port + 1}={token}"}):
            status, _, body = get(v.port, route, **kwargs)
            assert status == 403, (route, kwargs, status)
            assert b"vid_" not in body and b"<html" not in body
    # Other methods too.
    assert get(v.port, "/api/info", method="POST")[0] == 403
    assert get(v.port, "/api/info", method="DELETE")[0] == 403


def test_the_token_sets_a_strict_http_only_cookie_that_opens_every_route(viewer):
    v, token = viewer
    status, headers, body = get(v.port, "/", token=token)
    assert status == 200 and b"gulpdb view" in body
    cookie = headers["set-cookie"]
    assert cookie == f"gulpdb_view_{v.port}={token}; Path=/; HttpOnly; SameSite=Strict"
    jar = cookie.split(";")[0]
    assert get(v.port, "/app.js", cookie=jar)[0] == 200
    status, headers, body = get(v.port, "/api/info", cookie=jar)
    assert status == 200 and json.loads(body)["videos"] == 24
    assert headers["content-type"].startswith("application/json")
    assert "default-src 'none'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer"
    status, headers, body = get(v.port, "/api/frame?id=vid_03&frame=2", cookie=jar)
    assert status == 200 and headers["content-type"] == "image/jpeg" and body[:2] == b"\xff\xd8"


def test_ids_and_paths_that_leave_the_dataset_are_404_and_touch_nothing(viewer, dataset, tmp_path):
    v, token = viewer
    path, _ = dataset
    secret = os.path.join(os.path.dirname(path), "secret.txt")
    with open(secret, "w") as f:
        f.write("SECRET-CONTENT")

    def tree():
        out = {}
        for root, dirs, files in os.walk(os.path.dirname(path)):
            for name in files + dirs:
                p = os.path.join(root, name)
                st = os.lstat(p)
                out[p] = (st.st_size, st.st_mtime_ns)
        return out

    before = tree()
    attempts = [
        "/api/frame?id=../secret.txt&frame=0", "/api/frame?id=" + quote("../secret.txt"),
        "/api/video?id=../../secret.txt", "/api/check?id=" + quote("../" * 8 + "etc/passwd"),
        "/api/video?id=" + quote(secret), "/api/frame?id=%2e%2e%2fsecret.txt",
        "/../secret.txt", "/%2e%2e/secret.txt", "/api/frame/../../secret.txt",
        "/..%2f..%2fsecret.txt", "/api/../../../../secret.txt", "/app.js/../../secret.txt",
        "/index.html/..", "/api/videos?split=../secret.txt",
    ]
    for route in attempts:
        status, _, body = get(v.port, route, token=token)
        assert status == 404, (route, status, body)
        assert b"SECRET-CONTENT" not in body
    os.remove(secret)
    after = tree()
    del before[secret]
    assert after == before


def test_a_commit_made_after_the_server_started_appears(tmp_path):
    path = str(tmp_path / "grow")
    make_dataset(path, videos=6, frames=2)
    with gulpdb.view(path) as v:
        token = v.url.split("token=")[1]

        def page(**params):
            query = "&".join(f"{k}={quote(str(x))}" for k, x in params.items())
            status, _, body = get(v.port, "/api/videos?" + query, token=token)
            assert status == 200, body
            return json.loads(body)

        assert page()["total"] == 6
        assert page(filter="label=emu")["total"] == 0
        with gulpdb.Dataset(path, "a") as ds:
            with ds.writer() as w:
                w.append("late", np.zeros((3, 24, 32, 3), np.uint8), {"label": "emu"})
        got = page(start=6)
        assert got["total"] == 7 and [x["id"] for x in got["videos"]] == ["late"]
        assert page(filter="label=emu")["videos"][0]["id"] == "late"  # the cached list renewed
        status, _, body = get(v.port, "/api/frame?id=late&frame=2", token=token)
        assert status == 200
        with gulpdb.Dataset(path, "a") as ds:
            ds.remove(["late"])
        assert page()["total"] == 6
        assert get(v.port, "/api/frame?id=late&frame=2", token=token)[0] == 404


def test_no_read_transaction_is_held_between_requests(dataset):
    path, ids = dataset
    index_dir = gulpdb._gulpdb.index_directory(path)

    def our_readers():
        # mdb_stat exits 1 after printing the reader table alone.
        out = subprocess.run(["mdb_stat", "-r", index_dir], capture_output=True, text=True,
                             timeout=60).stdout
        assert "Reader Table Status" in out, out
        rows = [line.split() for line in out.splitlines()]
        return [row for row in rows if len(row) == 3 and row[0] == str(os.getpid())]

    with gulpdb.view(path) as v:
        token = v.url.split("token=")[1]
        for route in ["/api/info", "/api/videos?count=24", "/api/videos?filter=label%3Dcat",
                      "/api/videos?split=train", "/api/video?id=vid_05",
                      "/api/frame?id=vid_05&frame=1", "/api/check?id=vid_05"]:
            assert get(v.port, route, token=token)[0] == 200, route
        readers = our_readers()
        # The server's threads read (their reader slots stay, reset), and none
        # of them holds a snapshot now ("-": no transaction).
        assert readers, "the server's reads left no reader slot to look at"
        assert all(row[2] == "-" for row in readers), readers


def test_the_command_prints_the_address_first_and_stops_on_sigint_and_sigterm(dataset):
    path, _ = dataset
    for sig in (signal.SIGINT, signal.SIGTERM):
        with ViewCommand(path) as cmd:
            status, _, body = get(cmd.port, "/api/info", token=cmd.token)
            assert status == 200 and json.loads(body)["dir"] == path
            code, err = cmd.stop(sig)
            assert code == 0, err
            assert "stopped" in err


def test_the_command_warns_when_it_listens_beyond_loopback(dataset):
    path, _ = dataset
    proc = subprocess.Popen([GULPDB_CLI, "view", path, "--no-browser", "--host", "0.0.0.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert re.fullmatch(r"http://0\.0\.0\.0:\d+/\?token=[A-Za-z0-9_-]{43}", line), line
        port = int(line.split(":")[2].split("/")[0])
        assert get(port, "/api/info")[0] == 403  # still needs the token
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert "warning" in err and "not a loopback address" in err


def test_hostile_arguments_are_clear_errors(dataset, tmp_path):
    path, _ = dataset
    with pytest.raises(FileNotFoundError):
        gulpdb.view(str(tmp_path / "missing"))
    with pytest.raises(TypeError):
        gulpdb.view(5)
    with pytest.raises(TypeError):
        gulpdb.view([path])
    with pytest.raises(TypeError):
        gulpdb.view(path, port="80")
    with pytest.raises(TypeError):
        gulpdb.view(path, port=True)
    with pytest.raises(TypeError):
        gulpdb.view(path, host=127)
    for bad in ({"port": -1}, {"port": 65536}, {"thumb_size": 0}, {"thumb_size": 2000},
                {"label_key": ""}, {"host": ""}):
        with pytest.raises(ValueError):
            gulpdb.view(path, **bad)
    with pytest.raises(OSError):
        gulpdb.view(path, host="192.0.2.1")  # not an address of this machine
    with gulpdb.view(path) as v:
        with pytest.raises(OSError):
            gulpdb.view(path, port=v.port)  # taken
    file_path = tmp_path / "file"
    file_path.write_text("x")
    with pytest.raises((NotADirectoryError, ValueError, FileNotFoundError)):
        gulpdb.view(str(file_path))

    def cli(*args):
        return subprocess.run([GULPDB_CLI, "view", *args], capture_output=True, text=True,
                              timeout=120)
    for args in (["--port", "-1"], ["--port", "70000"], ["--port", "x"], ["--thumb-size", "0"],
                 ["--label-key", ""], ["--where", "label=cat"], ["--limit", "3"],
                 ["--static", ""], ["--static", str(tmp_path / "o"), "--limit", "0"],
                 ["--static", str(tmp_path / "o"), "--port", "80"]):
        r = cli(path, "--no-browser", *args) if "--static" not in args else cli(path, *args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert "gulpdb view:" in r.stderr
    r = cli(str(tmp_path / "missing"), "--no-browser")
    assert r.returncode == 1 and "not found" in r.stderr
    r = cli("", "--no-browser")
    assert r.returncode == 2


def test_close_is_bounded_even_with_a_connection_kept_alive(dataset):
    import http.client
    import time
    path, _ = dataset
    v = gulpdb.view(path)
    token = v.url.split("token=")[1]
    conn = http.client.HTTPConnection("127.0.0.1", v.port, timeout=30)
    conn.request("GET", "/api/info?token=" + token)
    assert conn.getresponse().read()
    start = time.monotonic()
    v.close()
    assert v.closed
    v.close()  # twice is fine
    # Bounded: the kept-alive connection is closed within its 2 s timeout,
    # plus scheduling on a loaded machine; a hang would be minutes.
    assert time.monotonic() - start < 60
    conn.close()
    with pytest.raises(OSError):
        get(v.port, "/api/info", token=token)


def test_a_viewer_of_an_open_dataset_reads_its_own_read_only_handle(dataset):
    path, ids = dataset
    with gulpdb.Dataset(path) as ds:
        with gulpdb.view(ds) as v:
            ds.close()  # the viewer's handle is its own
            token = v.url.split("token=")[1]
            status, _, body = get(v.port, "/api/videos?count=3", token=token)
            assert [x["id"] for x in json.loads(body)["videos"]] == ids[:3]
            assert repr(v).startswith("<gulpdb.Viewer ")


def test_threads_serve_while_python_holds_the_gil(dataset):
    """The server answers from C++ threads: a Python thread that never
    releases the GIL by itself (a busy loop) does not stop it."""
    path, _ = dataset
    with gulpdb.view(path) as v:
        token = v.url.split("token=")[1]
        results = []
        t = threading.Thread(target=lambda: results.append(
            get(v.port, "/api/videos?count=24", token=token)[0]))
        t.start()
        t.join(timeout=120)
        assert results == [200]


def test_a_static_report_from_the_command(dataset, tmp_path):
    path, ids = dataset
    out = tmp_path / "report"
    r = subprocess.run([GULPDB_CLI, "view", path, "--static", str(out), "--where", "label=dog",
                        "--limit", "3"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{out}/index.html"
    html = (out / "index.html").read_text()
    dogs = [i for k, i in enumerate(ids) if k % 3 == 1]
    for id_ in dogs[:3]:
        assert id_ in html
    assert dogs[3] not in html
    assert sorted(os.listdir(out / "thumbs")) == ["000000.jpg", "000001.jpg", "000002.jpg"]
    assert not re.search(r"(https?:|//|src=\"/)", html), "a network or absolute reference"
    # Refused: OUT exists and is not empty; nothing changed in it.
    r = subprocess.run([GULPDB_CLI, "view", path, "--static", str(out)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1 and "not empty" in r.stderr
    assert sorted(os.listdir(out)) == ["index.html", "thumbs"]
    # A bad filter: nothing is created.
    r = subprocess.run([GULPDB_CLI, "view", path, "--static", str(tmp_path / "x"), "--where",
                        "label"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "expected an operator" in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["report"]


def test_read_thumbnails_and_check_video_from_python(dataset):
    path, ids = dataset
    with gulpdb.Dataset(path) as ds:
        thumbs = ds.read_thumbnails(ids[1], [0, 5], max_side=160)
        assert len(thumbs) == 2
        # 320x240 into 160: the 1/2 DCT-scaled decode, encoded again.
        small = gulpdb.decode_jpeg(thumbs[1])
        ref = ds.read(ids[1], [5], downscale=2)[0]
        assert small.shape == ref.shape == (120, 160, 3)
        assert np.abs(small.astype(int) - ref.astype(int)).mean() < 3
        assert ds.read_thumbnails(ids[1], [0], max_side=0) == ds.read_jpegs(ids[1], [0])
        with pytest.raises(ValueError):
            ds.read_thumbnails(ids[1], [0], max_side=-1)
        with pytest.raises(KeyError):
            ds.read_thumbnails("nope", [0])
        report = ds.check_video(ids[1])
        assert report["healthy"] and report["frames"] == 8 and report["checksums"]
        assert report["frame_problems"] == [] and report["problems"] == []
        with pytest.raises(KeyError):
            ds.check_video("nope")
