"""A push after a relabel (docs/edits.md), against a real S3 server (s3rver,
started here on 127.0.0.1): it uploads index partitions and the .gmeta of the
chunks whose videos were edited, and no chunk bytes; a reader of the previous
generation keeps reading it, a new one sees the new labels."""

from __future__ import annotations

import json
import os
import sys

import boto3
import numpy as np
import pytest
from botocore.config import Config

import gulpdb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "harness"))
import s3_proxy  # noqa: E402  (tests/harness/s3_proxy.py)

BUCKET = "gulpdb-edits"


@pytest.fixture(scope="module")
def s3rver():
    with s3_proxy.S3rverProcess(BUCKET) as server:
        yield server


@pytest.fixture
def bucket(s3rver, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3rver.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("GULPDB_CACHE", str(tmp_path / "cache"))
    for name in ("GULPDB_CACHE_DIR", "AWS_SESSION_TOKEN", "AWS_PROFILE", "GULPDB_PUSH_GRACE"):
        monkeypatch.delenv(name, raising=False)
    return boto3.client("s3", endpoint_url=s3rver.endpoint, aws_access_key_id="S3RVER",
                        aws_secret_access_key="S3RVER", region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}))


def listing(client, prefix):
    """key -> (ETag, size) of every object under the prefix."""
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                                   Prefix=prefix + "/"):
        for o in page.get("Contents", []):
            out[o["Key"][len(prefix) + 1:]] = (o["ETag"], o["Size"])
    return out


def kind(key):
    name = key.rsplit("/", 1)[-1]
    if name.startswith("data_") and name.endswith(".gulp"):
        return "chunk"
    if name.endswith(".gmeta"):
        return "gmeta"
    return "index"  # partitions, roots, pages, manifests, label map


@pytest.mark.parametrize("layout", ["partitioned", "whole"])
def test_a_push_after_a_relabel_uploads_index_and_gmeta_objects_and_no_chunk_bytes(
        bucket, tmp_path, layout):
    path = str(tmp_path / "ds")
    with gulpdb.Dataset(path, "a", videos_per_chunk=5) as ds:
        with ds.writer() as w:
            for i in range(40):
                w.append(f"v{i:02d}", np.full((3, 16, 16, 3), 5 * i, np.uint8),
                         {"id": f"v{i:02d}", "label": "cat", "idx": 0})
    with open(os.path.join(path, "label2idx.json"), "w") as f:
        f.write('{"cat": 0}')
    prefix = f"edits-{layout}"
    url = f"s3://{BUCKET}/{prefix}"
    gulpdb.push(path, url, layout=layout)
    old = gulpdb.Dataset(url)  # a reader of the first generation
    old_frames = old.read_jpegs("v07")
    assert old.meta("v07")["label"] == "cat"

    fixes = tmp_path / "fixes.csv"
    fixes.write_text("v07;dog\nv08;dog\nv31;owl\n")  # chunks 1 and 6 of 8
    assert gulpdb.relabel(path, str(fixes))["changed"] == 3
    before = listing(bucket, prefix)
    report = gulpdb.push(path, url, layout=layout)
    after = listing(bucket, prefix)
    uploaded = {k: after[k][1] for k in after if before.get(k) != after[k]}
    by_kind = {}
    for key, size in uploaded.items():
        count, total = by_kind.get(kind(key), (0, 0))
        by_kind[kind(key)] = (count + 1, total + size)
    print(f"\npush after relabeling 3 of 40 videos ({layout}): {by_kind}")
    assert "chunk" not in by_kind, f"chunk objects uploaded: {sorted(uploaded)}"
    assert report["chunks_uploaded"] == 0 and report["bytes_uploaded"] == 0
    assert by_kind["gmeta"][0] == 2, sorted(uploaded)
    assert report["gmeta_uploaded"] == 2
    assert by_kind["index"][0] >= 1
    # The .gmeta objects GulpIO reads hold the new labels.
    gmeta = {}
    for key in after:
        if key.endswith(".gmeta"):
            body = bucket.get_object(Bucket=BUCKET, Key=f"{prefix}/{key}")["Body"].read()
            gmeta.update(json.loads(body))
    assert gmeta["v07"]["meta_data"][0]["label"] == "dog"
    assert gmeta["v31"]["meta_data"][0] == {"id": "v31", "label": "owl", "idx": 2}
    # The previous generation's reader reads what it read; a new one the edit.
    assert old.read_jpegs("v07") == old_frames
    assert old.meta("v07")["label"] == "cat"
    old.close()
    with gulpdb.Dataset(url) as new:
        assert new.meta("v07") == {"id": "v07", "label": "dog", "idx": 1}
        assert new.read_jpegs("v07") == old_frames
    # Pushing again uploads nothing.
    assert not gulpdb.push(path, url, layout=layout)["published"]
