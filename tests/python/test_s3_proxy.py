"""The S3 test proxy (tests/harness/s3_proxy.py), checked with an independent
client: botocore signs requests its own way, and the proxy must accept
exactly the correctly signed ones, as S3 would, and inject the faults it is
told to, no more and no fewer. Also shows that the proxy and s3rver start
and stop from pytest (as later DataLoader tests will use them)."""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import random
import socket
import sys
import time

import boto3
import botocore
import pytest
from botocore.config import Config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "harness"))
import s3_proxy  # noqa: E402  (tests/harness/s3_proxy.py)

BUCKET = "gulpdb-test"
KEY_ID = "PYTEST"
SECRET = "pytest-secret/with+signs="


@pytest.fixture(scope="module")
def servers():
    with s3_proxy.s3rver_behind_proxy(BUCKET, {KEY_ID: SECRET}) as both:
        yield both


@pytest.fixture
def proxy(servers):
    p = servers[1]
    p.reset()
    return p


def client(proxy, key_id=KEY_ID, secret=SECRET):
    return boto3.client(
        "s3", endpoint_url=proxy.endpoint, aws_access_key_id=key_id,
        aws_secret_access_key=secret, region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"},
                      retries={"total_max_attempts": 1, "mode": "standard"}))


def error_code(excinfo):
    return excinfo.value.response["Error"]["Code"]


def raw_get(proxy, path, conn=None):
    """An anonymous GET; returns (status, body)."""
    c = conn or http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    if conn is None:
        c.close()
    return r.status, body


def test_requests_signed_by_botocore_pass(proxy):
    s3 = client(proxy)
    key = "signed/a b+c=é"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"hello world")
    assert s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=2-5")["Body"].read() == b"llo "
    assert s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"] == 11
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key="signed/multi")
    etag = s3.upload_part(Bucket=BUCKET, Key="signed/multi", PartNumber=1,
                          UploadId=upload["UploadId"], Body=b"x" * 1000)["ETag"]
    s3.complete_multipart_upload(
        Bucket=BUCKET, Key="signed/multi", UploadId=upload["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="signed/",
                                                         PaginationConfig={"PageSize": 1})
    assert sorted(o["Key"] for page in pages for o in page.get("Contents", [])) == \
        sorted([key, "signed/multi"])
    s3.delete_object(Bucket=BUCKET, Key=key)
    stats = proxy.stats()
    assert stats["signature_failures"] == 0
    assert stats["requests"] >= 9


def test_a_wrong_secret_or_key_is_refused_as_s3_refuses_it(proxy):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(proxy, secret="wrong").get_object(Bucket=BUCKET, Key="k")
    assert error_code(e) == "SignatureDoesNotMatch"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(proxy, key_id="NOBODY").put_object(Bucket=BUCKET, Key="k", Body=b"x")
    assert error_code(e) == "InvalidAccessKeyId"
    assert proxy.stats()["signature_failures"] == 2
    assert proxy.stats()["forwarded"] == 0


def test_a_body_that_does_not_match_its_hash_is_refused(proxy):
    proxy.add_fault(kind="corrupt_request", count=1, method="PUT")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(proxy).put_object(Bucket=BUCKET, Key="corrupt", Body=b"some bytes to flip")
    assert error_code(e) == "XAmzContentSHA256Mismatch"
    client(proxy).put_object(Bucket=BUCKET, Key="corrupt", Body=b"some bytes to flip")


def test_a_body_that_does_not_match_its_content_md5_is_refused(proxy):
    """As S3: a wrong or malformed Content-MD5 is refused, on anonymous
    requests too (where no payload hash would catch the change)."""
    body = b"bytes whose MD5 is checked"
    good = base64.b64encode(hashlib.md5(body).digest()).decode()
    bad = base64.b64encode(hashlib.md5(body + b"!").digest()).decode()

    def raw_put(key, md5):
        c = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        c.request("PUT", f"/{BUCKET}/{key}", body=body, headers={"Content-MD5": md5})
        r = c.getresponse()
        text = r.read()
        c.close()
        return r.status, text

    assert raw_put("md5/good", good)[0] == 200
    status, text = raw_put("md5/bad", bad)
    assert status == 400 and b"<Code>BadDigest</Code>" in text
    status, text = raw_put("md5/garbled", "not base64!")
    assert status == 400 and b"<Code>InvalidDigest</Code>" in text
    assert raw_get(proxy, f"/{BUCKET}/md5/good") == (200, body)
    assert raw_get(proxy, f"/{BUCKET}/md5/bad")[0] == 404
    # botocore sends Content-MD5 with put_object only when asked; a signed
    # request whose body changed after the proxy's checks is stored damaged
    # (corrupt_stored): the store's ETag is then the MD5 of other bytes.
    proxy.add_fault(kind="corrupt_stored", count=1, method="PUT")
    etag = client(proxy).put_object(Bucket=BUCKET, Key="md5/stored", Body=body)["ETag"]
    assert etag != '"' + hashlib.md5(body).hexdigest() + '"'
    stored = client(proxy).get_object(Bucket=BUCKET, Key="md5/stored")["Body"].read()
    assert len(stored) == len(body) and stored != body
    assert proxy.log()[-2]["fault"] == "corrupt_stored"


def test_counted_faults_fire_exactly_count_times(proxy):
    client(proxy).put_object(Bucket=BUCKET, Key="counted", Body=b"payload")
    proxy.reset()
    proxy.add_fault(kind="slowdown", count=2)
    proxy.add_fault(kind="error500", count=1, path="/other")
    statuses = [raw_get(proxy, f"/{BUCKET}/counted") for _ in range(4)]
    assert [s for s, _ in statuses] == [503, 503, 200, 200]
    assert b"<Code>SlowDown</Code>" in statuses[0][1]
    assert statuses[2][1] == b"payload"
    assert proxy.stats()["faults"] == {"slowdown": 2}
    assert [entry["fault"] for entry in proxy.log()] == ["slowdown", "slowdown", None, None]


def test_a_fraction_of_requests_fails_as_the_seed_says(proxy):
    client(proxy).put_object(Bucket=BUCKET, Key="fraction", Body=b"payload")
    proxy.reset()
    proxy.add_fault(kind="error500", fraction=0.3, seed=7)
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    got = [raw_get(proxy, f"/{BUCKET}/fraction", conn)[0] == 500 for _ in range(100)]
    rng = random.Random(7)
    assert got == [rng.random() < 0.3 for _ in range(100)]
    assert proxy.stats()["connections"] == 1  # one kept-alive connection
    assert proxy.stats()["requests"] == 100


def test_truncated_and_reset_answers(proxy):
    client(proxy).put_object(Bucket=BUCKET, Key="cut", Body=b"0123456789" * 100)
    proxy.add_fault(kind="truncate", count=1)
    c = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    c.request("GET", f"/{BUCKET}/cut")
    r = c.getresponse()
    assert r.getheader("Content-Length") == "1000"
    with pytest.raises(http.client.IncompleteRead):
        r.read()
    proxy.add_fault(kind="reset", count=1)
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected)):
        raw_get(proxy, f"/{BUCKET}/cut")
    proxy.add_fault(kind="refuse", count=1)
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected)):
        raw_get(proxy, f"/{BUCKET}/cut")
    assert raw_get(proxy, f"/{BUCKET}/cut") == (200, b"0123456789" * 100)


def test_delays_and_range_faults(proxy):
    client(proxy).put_object(Bucket=BUCKET, Key="ranges", Body=bytes(range(100)))
    proxy.add_fault(kind="delay", delay_ms=300, count=1)
    start = time.monotonic()
    assert raw_get(proxy, f"/{BUCKET}/ranges")[0] == 200
    assert time.monotonic() - start >= 0.3
    c = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    proxy.add_fault(kind="shift_range", count=1)
    c.request("GET", f"/{BUCKET}/ranges", headers={"Range": "bytes=10-19"})
    r = c.getresponse()
    assert (r.status, r.getheader("Content-Range"), r.read()) == \
        (206, "bytes 11-20/100", bytes(range(11, 21)))
    proxy.add_fault(kind="ignore_range", count=1)
    c.request("GET", f"/{BUCKET}/ranges", headers={"Range": "bytes=10-19"})
    r = c.getresponse()
    assert (r.status, r.read()) == (200, bytes(range(100)))


def test_unknown_fault_kinds_are_refused(proxy):
    with pytest.raises(Exception) as e:
        proxy.add_fault(kind="explode")
    assert "400" in str(e.value)


def test_https_with_the_test_certificate(servers):
    s3rver = servers[0]
    tls = (s3_proxy.TLS_CERT, s3_proxy.TLS_KEY)
    with s3_proxy.ProxyProcess(("127.0.0.1", s3rver.port), {KEY_ID: SECRET}, tls=tls) as p:
        assert p.endpoint.startswith("https://")
        s3 = boto3.client("s3", endpoint_url=p.endpoint, aws_access_key_id=KEY_ID,
                          aws_secret_access_key=SECRET, region_name="us-east-1",
                          verify=s3_proxy.TLS_CERT,
                          config=Config(s3={"addressing_style": "path"}))
        s3.put_object(Bucket=BUCKET, Key="tls/obj", Body=b"over TLS")
        assert s3.get_object(Bucket=BUCKET, Key="tls/obj")["Body"].read() == b"over TLS"
        assert p.stats()["signature_failures"] == 0


def test_the_proxy_process_stops_and_releases_its_port(servers):
    s3rver = servers[0]
    p = s3_proxy.ProxyProcess(("127.0.0.1", s3rver.port), {KEY_ID: SECRET}).start()
    port = p.port
    start = time.monotonic()
    p.stop()
    assert time.monotonic() - start < 6
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
