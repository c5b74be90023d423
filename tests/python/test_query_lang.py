"""The query language from Python: ``Dataset.select("...")``.

Hypothesis draws metas (numbers exact and huge, NaN, strings with NUL, é and
lone surrogates, lists, long values stored by checksum, missing keys) and
expressions (tests/python/lifecycle/query_model.py, which evaluates them in
plain Python from docs/query.md). The answer must be the model's, in the
dataset's order, whether it comes from a scan, from meta indexes of the
ordered key form, from an index of the first key form, or from a
partitioned snapshot of the indexed dataset. Also: errors as standard
exceptions with a caret, the keyword form's rule unchanged, the warning for
a key no video has, and indexes of the first form rebuilt.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import warnings
from typing import Any, Dict, Iterator, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gulpdb
from conftest import FIXTURES, GULPDB_CLI
from lifecycle import query_model as qm

JPEG = open(os.path.join(FIXTURES, "frames_src", "0", "0000.jpg"), "rb").read()
KEYS = ["k0", "k1", "k2", "x y"]
# Meta values, as JSON texts.
VALUES = (qm.NUMBERS + qm.UNORDERED_NUMBERS + [json.dumps(s) for s in qm.STRINGS] + qm.OTHERS
          + ["3.0", "-0", "1E400", "30", '"3"', "[1.0, 2]"])


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def write(path: str, videos: List[Dict[str, Any]]) -> None:
    with gulpdb.Dataset(path, "x", videos_per_chunk=7) as ds:
        with ds.writer() as w:
            for v in videos:
                # The meta as exact JSON text (a dict would go through Python floats).
                w._native.append(v["id"], [JPEG] * v["frames"], v["entry"])


@st.composite
def videos(draw: Any) -> List[Dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 25))):
        members = []
        for key in KEYS:
            if draw(st.integers(0, 3)) != 0:
                members.append(f"{json.dumps(key)}: {draw(st.sampled_from(VALUES))}")
        out.append({"id": draw(st.sampled_from(["v", "w", "a", "é"])) + str(i),
                    "frames": draw(st.integers(1, 3)), "entry": "{" + ", ".join(members) + "}"})
    return out


def expected(expr: Any, vids: List[Dict[str, Any]]) -> List[str]:
    return [v["id"] for n, v in enumerate(vids)
            if qm.evaluate(expr, v["id"], v["frames"], n // 7, qm.parse_json(v["entry"]))]


@settings(deadline=None, max_examples=int(os.environ.get("GULPDB_QUERY_EXAMPLES", "40")),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture,
                                 HealthCheck.filter_too_much])
@given(vids=videos(), exprs=st.lists(qm.expressions(KEYS), min_size=1, max_size=8))
def test_indexes_scans_and_snapshots_give_the_models_answer(tmp_path_factory, vids, exprs):
    root = str(tmp_path_factory.mktemp("q"))
    plain, indexed = os.path.join(root, "plain"), os.path.join(root, "indexed")
    write(plain, vids)
    write(indexed, vids)
    with gulpdb.Dataset(indexed, "r+") as ds, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # keys some draws lack
        for key in ("k0", "x y"):
            ds.create_meta_index(key)
        with environment(GULPDB_TEST_META_KEY_FORM="canonical"):
            ds.create_meta_index("k1")  # the first key form: equality only
        assert ds.meta_index_details() == {"k0": True, "k1": False, "x y": True}
    gulpdb.publish_snapshot(indexed, layout="partitioned")
    with gulpdb.Dataset(plain) as a, gulpdb.Dataset(indexed) as b:
        with environment(GULPDB_TEST_FS_TYPE="lustre"):
            snapshot = gulpdb.Dataset(indexed)
        assert snapshot.remote_info["partitioned"]
        with snapshot, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # keys some draws lack
            for expr in exprs:
                text = qm.render(expr)
                want = expected(expr, vids)
                assert a.select(text) == want, text
                assert b.select(text) == want, text
                assert snapshot.select(text) == want, text


def test_select_takes_a_query_or_keywords_and_refuses_the_rest(small_dataset):
    with gulpdb.Dataset(small_dataset.path) as ds:
        assert ds.select("label = 'class_1' and frames >= 6") == ["video_1", "video_4",
                                                                   "video_7", "video_10"]
        assert ds.select("idx in (0, 2) and id < 'video_3'") == ["video_0", "video_2",
                                                                  "video_11"]
        assert ds.select(label="class_1") == ds.select("label = 'class_1'")
        assert ds.select() == ds.ids()
        # A meta key named "query" still goes through the keyword form.
        with pytest.warns(UserWarning, match="no video's meta has the key 'query'"):
            assert ds.select(query="x") == []
        with pytest.raises(TypeError, match="not both"):
            ds.select("label = 'a'", label="a")
        for bad in (3, 2.5, b"label = 'a'", ["label = 'a'"]):
            with pytest.raises(TypeError, match="a query is a str"):
                ds.select(bad)
        with pytest.raises(ValueError) as e:
            ds.select("frames >= and label = 'x'")
        lines = str(e.value).splitlines()
        assert lines[0] == ("parse query: byte 10: expected a value (a string in quotes, a "
                            "number, true, false or null), found 'and'")
        assert lines[1] == "  frames >= and label = 'x'"
        assert lines[2] == "  " + " " * 10 + "^"
        for bad in ("", "label", "label = cat", "x != null", "frames = 'a'", "a == 1",
                    "(" * 200 + "a = 1" + ")" * 200):
            with pytest.raises(ValueError, match="parse query: byte"):
                ds.select(bad)


def test_a_key_no_video_has_warns_even_when_others_match(small_dataset):
    with gulpdb.Dataset(small_dataset.path) as ds:
        with pytest.warns(UserWarning, match="no video's meta has the key 'lable'"):
            got = ds.select("label = 'class_0' or lable = 'class_1'")
        assert got == ["video_0", "video_3", "video_6", "video_9"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert ds.select("has label and not idx = 1 and frames < 7")  # no warning


def test_an_index_of_the_first_key_form_is_read_kept_and_rebuilt(tmp_path, monkeypatch):
    path = str(tmp_path / "d")
    vids = [{"id": f"v{i}", "frames": 1, "entry": json.dumps({"d": i / 2, "l": f"l{i % 3}"})}
            for i in range(40)]
    write(path, vids)
    monkeypatch.setenv("GULPDB_TEST_META_KEY_FORM", "canonical")
    with gulpdb.Dataset(path, "r+") as ds:
        assert ds.create_meta_index("d") and ds.create_meta_index("l")
    monkeypatch.delenv("GULPDB_TEST_META_KEY_FORM")
    listing = subprocess.run([GULPDB_CLI, "index", path], capture_output=True, text=True,
                             check=True).stdout
    assert listing.splitlines() == [
        "d\t(equality only, made by an older gulpdb: --meta-key KEY rebuilds it for ranges)",
        "l\t(equality only, made by an older gulpdb: --meta-key KEY rebuilds it for ranges)"]
    with gulpdb.Dataset(path, "r+") as ds:
        assert ds.meta_index_details() == {"d": False, "l": False}
        assert ds.select("d >= 18") == ["v36", "v37", "v38", "v39"]  # by a scan
        assert ds.select("l = 'l1' and d < 3") == ["v1", "v4"]
        with ds.writer() as w:
            w._native.append("v40", [JPEG], json.dumps({"d": 100, "l": "l1"}))
        assert ds.select("d >= 18") == ["v36", "v37", "v38", "v39", "v40"]
    out = subprocess.run([GULPDB_CLI, "index", path, "--meta-key", "d"], capture_output=True,
                         text=True, check=True).stdout
    assert out == "rebuilt the meta index of 'd' in the ordered form\n"
    with gulpdb.Dataset(path, "r+") as ds:
        assert ds.meta_index_details() == {"d": True, "l": False}
        assert ds.select("d >= 18") == ["v36", "v37", "v38", "v39", "v40"]
        assert not ds.create_meta_index("d")
        assert ds.create_meta_index("l")
        assert ds.meta_index_details() == {"d": True, "l": True}
    info = subprocess.run([GULPDB_CLI, "info", path], capture_output=True, text=True,
                          check=True).stdout
    assert "meta indexes:   d, l\n" in info
    check = subprocess.run([GULPDB_CLI, "check", path], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
