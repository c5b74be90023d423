#!/usr/bin/python3
"""A fault-injecting, signature-verifying reverse proxy for S3 test servers.

s3rver (the S3 server the tests run) accepts any SigV4 signature: it only
checks that the access key id exists. This proxy sits in front of it and
does what S3 does with a request before serving it:

* verifies the SigV4 signature independently, with botocore's signer
  (``S3SigV4Auth``), from the secret of the access key id (``--credentials
  KEY:SECRET``, repeatable). The canonical request is rebuilt the way S3
  builds it (path and query decoded, re-encoded, query sorted), so a client
  that signs a non-canonical URL fails here as it would on S3. An unknown key
  id gets 403 InvalidAccessKeyId, a wrong signature 403
  SignatureDoesNotMatch, a payload whose SHA-256 differs from
  x-amz-content-sha256 400 XAmzContentSHA256Mismatch, one whose MD5 differs
  from Content-MD5 400 BadDigest (checked on anonymous requests too), each
  with S3's XML error body. Unsigned (anonymous) requests pass unless ``--require-auth``.
* injects faults on command, for the next N matching requests (``count``) or
  a seeded random fraction of them (``fraction`` + ``seed``):

    refuse            accept the connection, then reset it before reading
    reset             read the request, then reset the connection, no answer
    drop_body         send the headers and half the body, then reset
    truncate          send the headers (full Content-Length) and fewer
                      bytes, then close cleanly (FIN)
    stall             send the headers and half the body, wait delay_ms, reset
    delay             wait delay_ms, then answer normally
    slowdown          503 SlowDown (S3's XML body), request not forwarded
    error500          500 InternalError
    status            any status and S3 error code ("status", "code")
    corrupt_request   flip one byte of the request body before verifying it
    corrupt_stored    flip one byte of the request body after verifying it: the
                      upstream stores damaged bytes, as a store that checks
                      neither the payload hash nor Content-MD5 would
    corrupt_response  flip one byte in the middle of the response body (a
                      bit damaged on the way: length and headers unchanged)
    ignore_range      forward without the Range header (server sends 200 + all)
    shift_range       forward the Range shifted by one byte
    lose_answer       forward the request (the server acts on it), then reset
                      the connection without answering

  A rule may be narrowed with "method" (GET, PUT, ...) and "path" (a
  substring of the request path). "retry_after" (text, e.g. "2" or an HTTP
  date) adds a Retry-After header to the answers of slowdown, error500 and
  status. Rules are tried in the order added; the
  first whose count is not spent and whose draw hits fires.
* counts connections, requests, signature failures and injected faults,
  and keeps a log of the last requests (method, path, Range, status, fault).

Everything else is forwarded to the upstream server, without the
Authorization header (the upstream sees an anonymous request), over one
kept-alive upstream connection per client connection: conditional headers
(If-Match, If-None-Match) and user metadata (x-amz-meta-*) included, and the
upstream's answer as it comes (412 PreconditionFailed too). Responses are
sent with Content-Length.

Control: an HTTP endpoint on its own port (``--control-port``, 0 = any):

    GET    /stats    {"connections": n, "requests": n, "forwarded": n,
                      "signature_failures": n, "faults_injected": n,
                      "faults": {"kind": n, ...}, "body_bytes_sent": n,
                      "body_bytes_received": n}
                     (body_bytes_sent: response body bytes written to
                     clients, in 64 KiB pieces, a failed piece not counted;
                     body_bytes_received: request body bytes, PUTs' uploads)
    GET    /log      [{"method", "path", "range", "status", "fault",
                       "request_bytes", "response_bytes", "content_md5"}, ...]
    POST   /faults   add a rule, JSON: {"kind": "slowdown", "count": 2}
                     or {"kind": "drop_body", "fraction": 0.3, "seed": 7,
                     "method": "GET"}; {"kind": "delay", "delay_ms": 500}
    DELETE /faults   remove every rule
    POST   /reset    remove every rule, zero the counters, clear the log
    POST   /outage   {"seconds": 4}: the S3 port goes away for that long (new
                     connections refused, open ones reset), then serves
                     again on the same port; answers at once
    POST   /bandwidth {"bytes_per_second": n}: response bodies of all
                     connections together are sent at most that fast (a
                     shared link: each 64 KiB piece waits its turn); 0 lifts
                     the limit. Kept by /reset.

Run it as a program:

    /usr/bin/python3 tests/harness/s3_proxy.py --upstream 127.0.0.1:PORT \\
        --credentials GULPTEST:gulptest-secret [--port 0] [--control-port 0] \\
        [--ready-file FILE] [--exit-with-parent] [--require-auth] \\
        [--tls-cert tests/harness/tls/cert.pem --tls-key tests/harness/tls/key.pem]

With --tls-cert and --tls-key it serves HTTPS (the control endpoint stays
plain HTTP); tests/harness/tls/ holds a certificate for 127.0.0.1.

It prints one JSON line, {"port": P, "control_port": C}, on stdout when it
listens (and writes it to --ready-file, atomically), and exits on SIGTERM or
SIGINT, or when its parent dies with --exit-with-parent. From Python, use
``S3Proxy`` (threads in this process), or ``ProxyProcess`` (a separate
process, e.g. when DataLoader workers fork) and ``S3rverProcess`` (s3rver
itself) — both with bounded start and stop.
"""

import argparse
import base64
import hashlib
import hmac
import http.client
import http.server
import json
import os
import random
import re
import signal
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections import deque

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from s3_processes import (  # noqa: F401  (names the tests and benchmarks use from here)
    _die_with_parent,
    _free_port,
    _has_conditional_requests,
    _readline_with_timeout,
    _s3rver_environment,
    _stop_process,
    _wait_for_port,
    default_s3rver_program,
    ProxyControl,
    ProxyProcess,
    s3rver_behind_proxy,
    S3rverProcess,
    TLS_CERT,
    TLS_DIR,
    TLS_KEY,
)

FAULT_KINDS = (
    "refuse", "reset", "drop_body", "truncate", "stall", "delay", "slowdown",
    "error500", "status", "corrupt_request", "corrupt_stored", "corrupt_response",
    "ignore_range", "shift_range", "lose_answer",
)
HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
    "te", "trailers", "transfer-encoding", "upgrade", "expect",
}
REPLACED = {"date", "server"}  # the proxy sends its own
AUTH_RE = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request,\s*SignedHeaders=(?P<signed>[^,\s]+),\s*"
    r"Signature=(?P<signature>[0-9a-f]{64})$")
HEX64_RE = re.compile(r"^[0-9a-f]{64}$")


def error_xml(code, message, **extra):
    """An S3 error document."""
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<Error>',
             f"<Code>{code}</Code>", f"<Message>{_escape(message)}</Message>"]
    for name, value in extra.items():
        parts.append(f"<{name}>{_escape(str(value))}</{name}>")
    parts.append(f"<RequestId>{uuid.uuid4().hex[:16].upper()}</RequestId></Error>")
    return "".join(parts).encode()


def _escape(text):
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


class Rule:
    """One fault rule: fires for `count` matching requests or a `fraction` of them."""

    def __init__(self, spec):
        kind = spec.get("kind")
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
        self.kind = kind
        self.count = spec.get("count")
        self.fraction = spec.get("fraction")
        if self.count is None and self.fraction is None:
            self.count = 1
        if self.count is not None and (not isinstance(self.count, int) or self.count < 0):
            raise ValueError("count must be a whole number")
        if self.fraction is not None and not 0 <= float(self.fraction) <= 1:
            raise ValueError("fraction must be in [0, 1]")
        self.rng = random.Random(spec.get("seed", 0))
        self.method = spec.get("method")
        self.path = spec.get("path")
        self.delay_ms = int(spec.get("delay_ms", 0))
        self.status = int(spec.get("status", 500))
        self.code = spec.get("code", "InternalError")
        self.retry_after = spec.get("retry_after")
        self.spec = spec

    def matches(self, method, path):
        if self.method is not None and self.method != method:
            return False
        if self.path is not None and self.path not in path:
            return False
        if self.count is not None and self.count <= 0:
            return False
        return True

    def draw(self):
        """Called under the proxy's lock for a matching request: fire or not."""
        if self.fraction is not None and self.rng.random() >= float(self.fraction):
            return False
        if self.count is not None:
            self.count -= 1
        return True


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gulpdb-s3-proxy"
    timeout = 120  # an idle client connection is closed after this

    def log_message(self, fmt, *args):  # quiet
        pass

    # -- connection ---------------------------------------------------------

    def setup(self):
        self.proxy = None  # stays None when the TLS handshake fails
        self.upstream = None
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle
        # and the client's delayed ACK add 40 ms to every answer.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(self.timeout)
            try:
                self.request.do_handshake()
            except (ssl.SSLError, OSError):
                super().setup()
                return
        super().setup()
        self.proxy = self.server.proxy
        self.proxy._connection_opened(self)

    def handle(self):
        if self.proxy is None:  # the TLS handshake failed in setup
            return
        rule = self.proxy._take_fault("CONNECT", "", kinds=("refuse",))
        if rule is not None:
            self._reset()
            return
        try:
            super().handle()
        except (ConnectionError, socket.timeout, OSError):
            pass

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        if self.upstream is not None:
            self.upstream.close()
        if self.proxy is not None:
            self.proxy._connection_closed(self)

    def _kill(self):
        """From another thread (stop): wakes a handler blocked reading and
        closes its connection."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _reset(self):
        """Closes the connection with a TCP RST."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        try:
            self.connection.close()
        except OSError:
            pass

    # -- requests -------------------------------------------------------------

    def do_GET(self):
        self._serve()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

    def _read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self):
        proxy = self.proxy
        body = self._read_body()
        method = self.command
        entry = {"method": method, "path": self.path, "range": self.headers.get("Range"),
                 "status": None, "fault": None, "request_bytes": len(body), "response_bytes": 0,
                 "content_md5": self.headers.get("Content-MD5")}
        proxy._count_received(len(body))
        proxy._request_seen(entry)
        rule = proxy._take_fault(method, self.path)
        if rule is not None:
            entry["fault"] = rule.kind
        kind = rule.kind if rule else None

        if kind == "reset":
            self._reset()
            return
        if kind == "corrupt_request" and body:
            i = len(body) // 2
            body = body[:i] + bytes([body[i] ^ 0x01]) + body[i + 1:]
        if kind == "delay":
            time.sleep(rule.delay_ms / 1000)

        problem = proxy._verify(method, self.path, self.headers, body)
        if problem is not None:
            status, code, message, extra = problem
            self._send(status, [("Content-Type", "application/xml")],
                       error_xml(code, message, **extra), entry)
            return
        if kind == "corrupt_stored" and body:
            i = len(body) // 2
            body = body[:i] + bytes([body[i] ^ 0x01]) + body[i + 1:]
        error_headers = [("Content-Type", "application/xml")]
        if rule is not None and rule.retry_after is not None:
            error_headers.append(("Retry-After", str(rule.retry_after)))
        if kind == "slowdown":
            self._send(503, error_headers,
                       error_xml("SlowDown", "Please reduce your request rate."), entry)
            return
        if kind == "error500":
            self._send(500, error_headers,
                       error_xml("InternalError",
                                 "We encountered an internal error. Please try again."), entry)
            return
        if kind == "status":
            self._send(rule.status, error_headers,
                       error_xml(rule.code, f"Injected {rule.status} {rule.code}."), entry)
            return

        headers = [(k, v) for k, v in self.headers.items()
                   if k.lower() not in HOP_BY_HOP
                   and k.lower() not in ("authorization", "host", "content-length")]
        if kind in ("ignore_range", "shift_range"):
            original = self.headers.get("Range")
            headers = [(k, v) for k, v in headers if k.lower() != "range"]
            if kind == "shift_range" and original:
                m = re.match(r"bytes=(\d+)-(\d*)$", original)
                if m:
                    start = int(m.group(1)) + 1
                    end = f"{int(m.group(2)) + 1}" if m.group(2) else ""
                    headers.append(("Range", f"bytes={start}-{end}"))
        try:
            status, resp_headers, resp_body = self._forward(method, headers, body)
        except OSError as e:
            self._send(502, [("Content-Type", "application/xml")],
                       error_xml("BadGateway", f"upstream unreachable: {e}"), entry)
            return
        proxy._count("forwarded")
        if kind == "lose_answer":
            entry["status"] = status
            self._reset()
            return
        self._send(status, resp_headers, resp_body, entry, rule=rule)

    def _forward(self, method, headers, body):
        """Sends the request upstream (reconnecting once if the kept-alive
        connection was closed meanwhile) and returns status, headers, body."""
        for attempt in (0, 1):
            if self.upstream is None:
                self.upstream = http.client.HTTPConnection(*self.proxy.upstream, timeout=60)
            try:
                self.upstream.putrequest(method, self.path, skip_accept_encoding=True)
                for k, v in headers:
                    self.upstream.putheader(k, v)
                if method in ("PUT", "POST") or body:
                    self.upstream.putheader("Content-Length", str(len(body)))
                self.upstream.endheaders(body if body else None)
                resp = self.upstream.getresponse()
                data = resp.read()
                kept = [(k, v) for k, v in resp.getheaders()
                        if k.lower() not in HOP_BY_HOP and k.lower() not in REPLACED
                        and k.lower() != "content-length"]
                if method == "HEAD":
                    length = resp.getheader("Content-Length")
                    if length is not None:
                        kept.append(("Content-Length", length))
                if resp.will_close:
                    self.upstream.close()
                    self.upstream = None
                return resp.status, kept, data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    http.client.CannotSendRequest, http.client.ResponseNotReady):
                self.upstream.close()
                self.upstream = None
                if attempt == 1:
                    raise
        raise OSError("unreachable")

    def _send(self, status, headers, body, entry, rule=None):
        """Answers with `headers` and `body` (never a body to a HEAD), applying
        the response faults of `rule`."""
        entry["status"] = status
        kind = rule.kind if rule else None
        head = self.command == "HEAD"
        self.send_response(status)
        upstream_length = None
        for k, v in headers:
            if k.lower() == "content-length":
                upstream_length = v
                continue
            self.send_header(k, v)
        if head:
            self.send_header("Content-Length", upstream_length or "0")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        payload = b"" if head else body
        if kind == "corrupt_response" and payload:
            i = len(payload) // 2
            payload = payload[:i] + bytes([payload[i] ^ 0x40]) + payload[i + 1:]
        if kind in ("drop_body", "stall"):
            self.wfile.write(payload[:len(payload) // 2])
            self.wfile.flush()
            if kind == "stall":
                time.sleep(rule.delay_ms / 1000)
            self._reset()
            return
        if kind == "truncate":
            cut = max(1, len(payload) // 3) if payload else 0
            self.wfile.write(payload[:len(payload) - cut])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            return
        # In pieces, counted as they go: a client that stops reading (a
        # download refused half-way) is seen to have taken only that much.
        for start in range(0, len(payload), 1 << 16):
            piece = payload[start:start + (1 << 16)]
            self.proxy._pace(len(piece))
            self.wfile.write(piece)
            self.proxy._count_bytes(len(piece))
            entry["response_bytes"] += len(piece)
        self.wfile.flush()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    tls_context = None

    def get_request(self):
        sock, addr = super().get_request()
        if self.tls_context is not None:
            # The handshake happens in the connection's own thread (setup).
            sock = self.tls_context.wrap_socket(sock, server_side=True,
                                                do_handshake_on_connect=False)
        return sock, addr


class _ControlHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        proxy = self.server.proxy
        if self.path == "/stats":
            self._reply(200, proxy.stats())
        elif self.path == "/log":
            self._reply(200, proxy.log())
        else:
            self._reply(404, {"error": f"no {self.path}"})

    def do_POST(self):
        proxy = self.server.proxy
        body = self._body()
        try:
            if self.path == "/faults":
                proxy.add_fault(**json.loads(body or b"{}"))
                self._reply(200, {"ok": True})
            elif self.path == "/reset":
                proxy.reset()
                self._reply(200, {"ok": True})
            elif self.path == "/outage":
                proxy.outage(float(json.loads(body or b"{}").get("seconds", 1)))
                self._reply(200, {"ok": True})
            elif self.path == "/bandwidth":
                proxy.set_bandwidth(float(json.loads(body or b"{}").get("bytes_per_second", 0)))
                self._reply(200, {"ok": True})
            else:
                self._reply(404, {"error": f"no {self.path}"})
        except (ValueError, TypeError) as e:
            self._reply(400, {"error": str(e)})

    def do_DELETE(self):
        self._body()
        if self.path == "/faults":
            self.server.proxy.clear_faults()
            self._reply(200, {"ok": True})
        else:
            self._reply(404, {"error": f"no {self.path}"})


class S3Proxy:
    """The proxy, served by threads of this process.

    `upstream` is (host, port); `credentials` maps access key ids to secrets.
    """

    def __init__(self, upstream, credentials=None, host="127.0.0.1", port=0, control_port=0,
                 require_auth=False, tls=None, log_size=2000):
        """`tls`: None, or (certificate file, key file) to serve HTTPS.
        `log_size`: how many of the last requests /log keeps."""
        self.tls = tls
        self.upstream = (upstream[0], int(upstream[1]))
        self.credentials = dict(credentials or {})
        self.require_auth = require_auth
        self._host = host
        self._want_port = port
        self._want_control_port = control_port
        self._lock = threading.Lock()
        self._rules = []
        self._log = deque(maxlen=log_size)
        self._open = set()
        self._zero()
        self._server = None
        self._port = None
        self._control = None
        self._outage_lock = threading.Lock()
        self._threads = []

    def set_bandwidth(self, bytes_per_second):
        """Response bodies of all connections together go out at most
        `bytes_per_second` (0: no limit)."""
        if bytes_per_second < 0:
            raise ValueError("bytes_per_second must be >= 0")
        with self._lock:
            self._rate = float(bytes_per_second)
            self._link_free = time.monotonic()

    def _pace(self, n):
        """Waits until `n` more bytes fit the bandwidth limit (a shared link:
        pieces of all connections queue for it)."""
        with self._lock:
            rate = getattr(self, "_rate", 0.0)
            if rate <= 0:
                return
            now = time.monotonic()
            start = max(now, self._link_free)
            self._link_free = start + n / rate
        if start > now:
            time.sleep(start - now)

    def _zero(self):
        self._stats = {"connections": 0, "requests": 0, "forwarded": 0, "signature_failures": 0,
                       "faults_injected": 0, "faults": {}, "body_bytes_sent": 0,
                       "body_bytes_received": 0}

    # -- lifecycle --------------------------------------------------------------

    def _serve(self, port):
        """Listens for S3 requests on `port` (0: any) in a new thread."""
        server = _Server((self._host, port), _Handler)
        server.proxy = self
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.tls[0], self.tls[1])
            server.tls_context = context
        t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                             daemon=True)
        t.start()
        self._threads.append(t)
        self._server = server

    def start(self):
        self._serve(self._want_port)
        self._port = self._server.server_address[1]
        self._control = http.server.ThreadingHTTPServer((self._host, self._want_control_port),
                                                        _ControlHandler)
        self._control.daemon_threads = True
        self._control.proxy = self
        t = threading.Thread(target=self._control.serve_forever, kwargs={"poll_interval": 0.05},
                             daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def _stop_serving(self):
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:
            handlers = list(self._open)
        for h in handlers:
            h._kill()

    def outage(self, seconds):
        """As a server that is stopped and started again: stops listening on
        the S3 port and resets every open connection, waits `seconds`, then
        serves on the same port again. Returns at once (a thread does it)."""

        def run():
            with self._outage_lock:
                self._stop_serving()
                time.sleep(seconds)
                for _ in range(100):  # the port may linger a moment
                    try:
                        self._serve(self._port)
                        return
                    except OSError:
                        time.sleep(0.05)

        threading.Thread(target=run, daemon=True).start()

    def stop(self):
        """Stops listening and resets every open client connection."""
        with self._outage_lock:
            self._stop_serving()
        if self._control is not None:
            self._control.shutdown()
            self._control.server_close()
        for t in self._threads:
            t.join(timeout=5)
        self._threads = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self):
        return self._port

    @property
    def control_port(self):
        return self._control.server_address[1]

    @property
    def endpoint(self):
        return f"{'https' if self.tls else 'http'}://{self._host}:{self.port}"

    # -- control ----------------------------------------------------------------

    def add_fault(self, **spec):
        rule = Rule(spec)
        with self._lock:
            self._rules.append(rule)

    def clear_faults(self):
        with self._lock:
            self._rules = []

    def reset(self):
        with self._lock:
            self._rules = []
            self._log.clear()
            self._zero()

    def stats(self):
        with self._lock:
            s = dict(self._stats)
            s["faults"] = dict(self._stats["faults"])
            return s

    def log(self):
        with self._lock:
            return list(self._log)

    # -- used by the handlers -----------------------------------------------------

    def _count(self, name):
        with self._lock:
            self._stats[name] += 1

    def _count_bytes(self, n):
        with self._lock:
            self._stats["body_bytes_sent"] += n

    def _count_received(self, n):
        with self._lock:
            self._stats["body_bytes_received"] += n

    def _connection_opened(self, handler):
        with self._lock:
            self._stats["connections"] += 1
            self._open.add(handler)

    def _connection_closed(self, handler):
        with self._lock:
            self._open.discard(handler)

    def _request_seen(self, entry):
        with self._lock:
            self._stats["requests"] += 1
            self._log.append(entry)

    def _take_fault(self, method, path, kinds=None):
        with self._lock:
            for rule in self._rules:
                if kinds is None and rule.kind == "refuse":
                    continue
                if kinds is not None and rule.kind not in kinds:
                    continue
                if rule.matches(method, path) and rule.draw():
                    self._stats["faults_injected"] += 1
                    self._stats["faults"][rule.kind] = self._stats["faults"].get(rule.kind, 0) + 1
                    return rule
        return None

    def _verify(self, method, raw_path, headers, body):
        """None if the request may be served, else (status, code, message, extra)."""
        auth = headers.get("Authorization")
        if auth is None:
            if self.require_auth:
                return self._auth_failure(403, "AccessDenied", "Access Denied", {})
            return self._verify_md5(headers, body)
        m = AUTH_RE.match(auth.strip())
        if m is None:
            return self._auth_failure(400, "AuthorizationHeaderMalformed",
                                      "The authorization header is malformed.", {})
        key = m.group("key")
        secret = self.credentials.get(key)
        if secret is None:
            return self._auth_failure(
                403, "InvalidAccessKeyId",
                "The AWS Access Key Id you provided does not exist in our records.",
                {"AWSAccessKeyId": key})
        amz_date = headers.get("X-Amz-Date")
        if amz_date is None or not amz_date.startswith(m.group("date")):
            return self._auth_failure(400, "AuthorizationHeaderMalformed",
                                      "X-Amz-Date is missing or does not match the credential "
                                      "scope.", {})
        content_sha = headers.get("X-Amz-Content-SHA256")
        if content_sha is None:
            return self._auth_failure(400, "InvalidRequest",
                                      "Missing required header for this request: "
                                      "x-amz-content-sha256", {})
        signed = m.group("signed").split(";")
        if "host" not in signed or "x-amz-date" not in signed \
                or "x-amz-content-sha256" not in signed:
            return self._auth_failure(400, "AuthorizationHeaderMalformed",
                                      "host, x-amz-date and x-amz-content-sha256 must be signed.",
                                      {})
        # The canonical request as S3 rebuilds it: the path and the query
        # decoded and encoded again, the query sorted (botocore does that
        # from `params`).
        split = urllib.parse.urlsplit(raw_path)
        path = urllib.parse.quote(urllib.parse.unquote(split.path), safe="/~")
        params = []
        if split.query:
            for pair in split.query.split("&"):
                k, _, v = pair.partition("=")
                params.append((urllib.parse.unquote(k), urllib.parse.unquote(v)))
        signed_headers = {}
        for name in signed:
            values = headers.get_all(name)
            if values is None:
                return self._auth_failure(400, "AuthorizationHeaderMalformed",
                                          f"signed header {name} is missing", {})
            signed_headers[name] = ",".join(values)
        request = AWSRequest(method=method, url=f"http://{headers.get('Host')}{path}",
                             headers=signed_headers, params=params)
        request.context["timestamp"] = amz_date
        signer = S3SigV4Auth(Credentials(key, secret), m.group("service"), m.group("region"))
        canonical = signer.canonical_request(request)
        string_to_sign = signer.string_to_sign(request, canonical)
        expected = signer.signature(string_to_sign, request)
        if not hmac.compare_digest(expected, m.group("signature")):
            return self._auth_failure(
                403, "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you "
                "provided. Check your key and signing method.",
                {"AWSAccessKeyId": key, "StringToSign": string_to_sign,
                 "SignatureProvided": m.group("signature"), "CanonicalRequest": canonical})
        if HEX64_RE.match(content_sha):
            actual = hashlib.sha256(body).hexdigest()
            if actual != content_sha:
                return self._auth_failure(
                    400, "XAmzContentSHA256Mismatch",
                    "The provided 'x-amz-content-sha256' header does not match what was "
                    "computed.", {"ClientComputedContentSHA256": content_sha,
                                  "S3ComputedContentSHA256": actual})
        elif content_sha != "UNSIGNED-PAYLOAD":
            return self._auth_failure(400, "InvalidArgument",
                                      f"x-amz-content-sha256 {content_sha!r} is not supported",
                                      {})
        return self._verify_md5(headers, body)

    @staticmethod
    def _verify_md5(headers, body):
        """None if Content-MD5 is absent or the body's MD5, else S3's error."""
        content_md5 = headers.get("Content-MD5")
        if content_md5 is None:
            return None
        try:
            digest = base64.b64decode(content_md5, validate=True)
        except ValueError:
            digest = b""
        if len(digest) != 16:
            return 400, "InvalidDigest", "The Content-MD5 you specified was invalid.", {}
        if digest != hashlib.md5(body).digest():
            return 400, "BadDigest", ("The Content-MD5 you specified did not match what we "
                                      "received."), {}
        return None

    def _auth_failure(self, status, code, message, extra):
        self._count("signature_failures")
        return status, code, message, extra


# -- out-of-process helpers (pytest, DataLoader workers) -------------------------------


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--upstream", required=True, help="HOST:PORT of the S3 server")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--control-port", type=int, default=0)
    p.add_argument("--credentials", action="append", default=[], metavar="KEY:SECRET")
    p.add_argument("--require-auth", action="store_true")
    p.add_argument("--log-size", type=int, default=2000,
                   help="how many of the last requests /log keeps")
    p.add_argument("--ready-file")
    p.add_argument("--exit-with-parent", action="store_true")
    p.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--tls-key", help="... and this private key (PEM)")
    args = p.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")
    host, _, port = args.upstream.rpartition(":")
    creds = {}
    for c in args.credentials:
        k, sep, v = c.partition(":")
        if not sep:
            p.error(f"--credentials {c!r}: expected KEY:SECRET")
        creds[k] = v
    tls = (args.tls_cert, args.tls_key) if args.tls_cert else None
    proxy = S3Proxy((host, int(port)), creds, args.host, args.port, args.control_port,
                    args.require_auth, tls, args.log_size).start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    parent = os.getppid()
    ready = json.dumps({"port": proxy.port, "control_port": proxy.control_port})
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(ready + "\n")
        os.replace(tmp, args.ready_file)
    print(ready, flush=True)
    while not done.wait(0.2):
        if args.exit_with_parent and os.getppid() != parent:
            break
    proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
