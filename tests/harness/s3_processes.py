"""Processes for the S3 test servers, each with a bounded start and stop:
s3rver itself (``S3rverProcess``), the fault-injecting proxy of
``s3_proxy.py`` in a process of its own (``ProxyProcess``, e.g. when
DataLoader workers fork) or driven by its control endpoint
(``ProxyControl``), and both together (``s3rver_behind_proxy``). The proxy
itself is ``s3_proxy.py``, which imports these names too, so that
``s3_proxy.S3rverProcess`` keeps working.
"""

import contextlib
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

# The proxy's own script, which ProxyProcess runs.
PROXY_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "s3_proxy.py")


def _wait_for_port(port, deadline, proc, what):
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within the timeout")


def _stop_process(proc, grace=5.0):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=grace)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_s3rver_program():
    """build/tools/s3rver/node_modules/.bin/s3rver of this checkout (scripts/setup.sh)."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, above tests/harness/
    return os.environ.get("GULPDB_S3RVER",
                          os.path.join(repo, "build", "tools", "s3rver", "node_modules", ".bin",
                                       "s3rver"))


def _s3rver_environment():
    """s3rver 3.7.1 makes ListObjectsV2 continuation tokens with DES, which the
    OpenSSL 3 of Node.js >= 17 keeps in its legacy provider: without it every
    paginated listing fails with HTTP 500."""
    env = dict(os.environ)
    try:
        out = subprocess.run(["node", "--version"], capture_output=True, text=True,
                             timeout=10).stdout
        if int(out.strip().lstrip("v").split(".")[0]) >= 17:
            env["NODE_OPTIONS"] = "--openssl-legacy-provider"
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return env


def _has_conditional_requests(program):
    """True if the s3rver of `program` has gulpdb's conditional-requests patch
    (scripts/setup.sh applies tests/harness/s3rver-conditional-requests.patch)."""
    modules = program[:program.rfind("/.bin/")]
    try:
        with open(os.path.join(modules, "s3rver", "lib", "controllers", "object.js")) as f:
            return "gulpdb's test setup: conditional" in f.read()
    except OSError:
        return False


class S3rverProcess:
    """s3rver on 127.0.0.1, a free port, in a temporary directory, with `bucket`.

    It answers conditional requests as S3 does (gulpdb's patch); with
    ``ignore_conditional_writes`` it ignores the conditions of writes, as a
    store without conditional writes does."""

    ACCESS_KEY = "S3RVER"
    SECRET_KEY = "S3RVER"

    def __init__(self, bucket="gulpdb-test", program=None, timeout=20.0,
                 ignore_conditional_writes=False):
        self.bucket = bucket
        self.program = program or default_s3rver_program()
        self.timeout = timeout
        self.ignore_conditional_writes = ignore_conditional_writes
        self.proc = None
        self.port = None
        self.dir = None

    def start(self):
        if not os.access(self.program, os.X_OK):
            raise RuntimeError(f"s3rver is not installed at {self.program}: run scripts/setup.sh")
        if not _has_conditional_requests(self.program):
            raise RuntimeError(f"s3rver at {self.program} lacks gulpdb's conditional-requests "
                               "patch: run scripts/setup.sh")
        self.dir = tempfile.mkdtemp(prefix="gulpdb-s3rver-")
        self.port = _free_port()
        env = _s3rver_environment()
        env["S3RVER_IGNORE_CONDITIONAL_WRITES"] = "1" if self.ignore_conditional_writes else "0"
        self.proc = subprocess.Popen(
            [self.program, "-d", self.dir, "-a", "127.0.0.1", "-p", str(self.port),
             "--configure-bucket", self.bucket, "--silent"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env, preexec_fn=_die_with_parent)
        try:
            _wait_for_port(self.port, time.monotonic() + self.timeout, self.proc, "s3rver")
        except Exception:
            self.stop()
            raise
        return self

    def stop(self):
        _stop_process(self.proc)
        self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


@contextlib.contextmanager
def s3rver_behind_proxy(bucket, credentials, log_size=2000):
    """s3rver with `bucket` and, in front of it, the proxy knowing `credentials`
    (access key -> secret) and keeping the last `log_size` requests in its
    log: yields (s3rver, proxy), both stopped on exit."""
    with S3rverProcess(bucket) as s3rver:
        with ProxyProcess(("127.0.0.1", s3rver.port), credentials,
                          log_size=log_size) as proxy:
            yield s3rver, proxy


class ProxyControl:
    """A client of a proxy's control endpoint."""

    def __init__(self, control_port, host="127.0.0.1"):
        self.base = f"http://{host}:{control_port}"

    def _call(self, method, path, obj=None):
        data = json.dumps(obj).encode() if obj is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")

    def add_fault(self, **spec):
        self._call("POST", "/faults", spec)

    def clear_faults(self):
        self._call("DELETE", "/faults")

    def reset(self):
        self._call("POST", "/reset", {})

    def outage(self, seconds):
        """The server goes away for `seconds` (see S3Proxy.outage); returns at once."""
        self._call("POST", "/outage", {"seconds": seconds})

    def set_bandwidth(self, bytes_per_second):
        """See S3Proxy.set_bandwidth (0: no limit)."""
        self._call("POST", "/bandwidth", {"bytes_per_second": bytes_per_second})

    def stats(self):
        return self._call("GET", "/stats")

    def log(self):
        return self._call("GET", "/log")


class ProxyProcess(ProxyControl):
    """The proxy as a separate process (this file run as a program)."""

    def __init__(self, upstream, credentials=None, require_auth=False, timeout=20.0, tls=None,
                 log_size=2000):
        """`tls`: None, or (certificate file, key file) to serve HTTPS."""
        self.tls = tls
        self.log_size = log_size
        self.upstream = upstream
        self.credentials = dict(credentials or {})
        self.require_auth = require_auth
        self.timeout = timeout
        self.proc = None
        self.port = None
        self.control_port = None

    def start(self):
        cmd = [sys.executable, PROXY_SCRIPT, "--upstream",
               f"{self.upstream[0]}:{self.upstream[1]}", "--exit-with-parent",
               "--log-size", str(self.log_size)]
        for k, v in self.credentials.items():
            cmd += ["--credentials", f"{k}:{v}"]
        if self.require_auth:
            cmd.append("--require-auth")
        if self.tls:
            cmd += ["--tls-cert", self.tls[0], "--tls-key", self.tls[1]]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     preexec_fn=_die_with_parent)
        line = _readline_with_timeout(self.proc, self.timeout)
        if not line:
            self.stop()
            raise RuntimeError("the S3 proxy did not start within the timeout")
        ready = json.loads(line)
        self.port = ready["port"]
        self.control_port = ready["control_port"]
        ProxyControl.__init__(self, self.control_port)
        return self

    def stop(self):
        _stop_process(self.proc)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None

    @property
    def endpoint(self):
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


TLS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tls")
TLS_CERT = os.path.join(TLS_DIR, "cert.pem")  # also the CA bundle clients must trust
TLS_KEY = os.path.join(TLS_DIR, "key.pem")


def _readline_with_timeout(proc, timeout):
    result = []
    t = threading.Thread(target=lambda: result.append(proc.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return result[0].decode() if result else ""


def _die_with_parent():
    """In a child before exec: SIGKILL when the parent dies (Linux prctl)."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
