"""What one run of the lifecycle test shares: a working directory, s3rver on
127.0.0.1, the `gulpdb` command, two Python workers (a reader/writer and a
"DataLoader worker" that only unpickles), a boto3 client, and the counters
the run reports."""

from __future__ import annotations

import collections
import os
import shutil
import sys
import tempfile
import time
from typing import Dict, Optional

from .procs import Cli, Worker

_TESTS_PYTHON = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(_TESTS_PYTHON)), "tests", "harness"))
import s3_proxy  # noqa: E402  (tests/harness/s3_proxy.py)

BUCKET = "lifecycle"


class Counters:
    """How often each rule and each read path ran, and what was found."""

    def __init__(self) -> None:
        self.rules: collections.Counter = collections.Counter()
        self.reads: collections.Counter = collections.Counter()
        self.first_failure: Optional[Dict[str, object]] = None  # when the run first failed
        self.started = time.monotonic()
        self.examples = 0
        self.steps = 0
        self.lineages = 0


class Session:
    """``test_bug``: GULPDB_TEST_BUG for every gulpdb process of the run (the
    fixed bug to put back, util/test_bug.h); None: unset, whatever the
    environment of the test says."""

    def __init__(self, cli_program: str, work_dir: Optional[str] = None,
                 test_bug: Optional[str] = None) -> None:
        self.work = tempfile.mkdtemp(prefix="gulpdb-lifecycle-", dir=work_dir)
        self.counters = Counters()
        self.s3 = s3_proxy.S3rverProcess(BUCKET).start()
        import gulpdb

        package_root = os.path.dirname(os.path.dirname(os.path.abspath(gulpdb.__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in [package_root, _TESTS_PYTHON, env.get("PYTHONPATH", "")] if p)
        env.update({
            "AWS_ENDPOINT_URL": self.s3.endpoint,
            "AWS_ACCESS_KEY_ID": s3_proxy.S3rverProcess.ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": s3_proxy.S3rverProcess.SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "GULPDB_CACHE": os.path.join(self.work, "cache-default"),
            "GULPDB_S3_CONNECT_TIMEOUT_MS": "2000",
            "GULPDB_S3_STALL_TIMEOUT_MS": "5000",
            "GULPDB_S3_REQUEST_TIMEOUT_MS": "20000",
            "GULPDB_S3_MAX_ATTEMPTS": "5",
            "GULPDB_S3_BACKOFF_BASE_MS": "5",
            "GULPDB_S3_BACKOFF_MAX_MS": "50",
            "OMP_NUM_THREADS": "1",
        })
        for name in ("GULPDB_CACHE_DIR", "AWS_SESSION_TOKEN", "AWS_PROFILE", "GULPDB_PUSH_GRACE",
                     "GULPDB_TEST_FS_TYPE", "GULPDB_ALLOW_NETWORK_INDEX", "GULPDB_TEST_BUG"):
            env.pop(name, None)
        if test_bug:
            env["GULPDB_TEST_BUG"] = test_bug
        self.env = env
        self.cli = Cli(cli_program, env)
        self.reader = Worker("reader", env)
        self.loader = Worker("loader", env)  # a DataLoader worker's process: unpickles only
        import boto3
        from botocore.config import Config

        self.boto = boto3.client(
            "s3", endpoint_url=self.s3.endpoint,
            aws_access_key_id=s3_proxy.S3rverProcess.ACCESS_KEY,
            aws_secret_access_key=s3_proxy.S3rverProcess.SECRET_KEY, region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}))

    def close(self) -> None:
        for w in (self.reader, self.loader):
            w.stop()
        self.s3.stop()
        shutil.rmtree(self.work, ignore_errors=True)
