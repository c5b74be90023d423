"""Running what could crash in other processes: the `gulpdb` command, and
Python reader workers (tests/python/lifecycle/worker.py).

A process that dies by a signal is always a failure (`Failure`, kind
"signal"), whatever the step expected: bytes on disk or from a bucket must
never kill a process. Every call is bounded in time.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
CLI_TIMEOUT = 120.0
WORKER_TIMEOUT = 180.0


class Failure(AssertionError):
    """A read path or a command disagreed with the model, or a process died.

    ``kind``: "signal", "timeout", "exit" (an unexpected exit status),
    "error" (a Python exception in a worker), "mismatch" (a wrong answer).
    ``path``: the read path or command it came from; ``text``: what went wrong.
    """

    def __init__(self, kind: str, path: str, text: str) -> None:
        super().__init__(f"[{kind}] {path}: {text}")
        self.kind, self.path, self.text = kind, path, text


def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class CliResult:
    def __init__(self, args: Sequence[str], returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.args, self.returncode = list(args), returncode
        self.stdout_bytes, self.stderr_bytes = stdout, stderr

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    def describe(self) -> str:
        err = [line for line in self.stderr.strip().splitlines() if line.strip()]
        # Progress lines go to stderr too; the error comes last (a usage error
        # is followed by a line pointing at --help).
        return f"`gulpdb {' '.join(self.args)}` exited {self.returncode}: " + (
            " / ".join(err[-2:]) if err else "(no message)")


class Cli:
    """The `gulpdb` command, run with a given environment."""

    def __init__(self, program: str, env: Dict[str, str]) -> None:
        self.program, self.env = program, env
        self.calls = 0
        self.seconds = 0.0

    def run(self, *args: str, stdin: Optional[bytes] = None, env: Optional[Dict[str, str]] = None,
            expect: Optional[int] = 0, path: Optional[str] = None) -> CliResult:
        """Runs `gulpdb ARGS`; a signal or timeout is always a Failure, and so is an
        exit status other than ``expect`` (None: any status is returned)."""
        full_env = dict(self.env, **(env or {}))
        self.calls += 1
        label = path or f"gulpdb {args[0]}"
        start = time.monotonic()
        try:
            proc = subprocess.run([self.program, *args], input=stdin, capture_output=True,
                                  env=full_env, timeout=CLI_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Failure("timeout", label, f"`gulpdb {' '.join(args)}` ran over {CLI_TIMEOUT} s")
        finally:
            self.seconds += time.monotonic() - start
        result = CliResult(args, proc.returncode, proc.stdout, proc.stderr)
        if proc.returncode < 0:
            raise Failure("signal", label, f"`gulpdb {' '.join(args)}` died by "
                          f"{signal_name(proc.returncode)}: {result.stderr[-2000:]}")
        if expect is not None and proc.returncode != expect:
            raise Failure("exit", label, result.describe())
        return result


class Worker:
    """A Python process running reader and writer code of the gulpdb package
    (worker.py), one request at a time, restarted when it dies."""

    def __init__(self, name: str, env: Dict[str, str]) -> None:
        self.name, self.env = name, env
        self.proc: Optional[subprocess.Popen] = None
        self.requests = 0
        self.seconds = 0.0

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-u", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=self.env)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait(timeout=10)
        if proc.stdout:
            proc.stdout.close()

    def _read_exactly(self, n: int, deadline: float, label: str) -> bytes:
        out = bytearray()
        fd = self.proc.stdout.fileno()
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                self.proc.wait()
                self.proc = None
                raise Failure("timeout", label, f"worker {self.name} answered nothing within "
                              f"{WORKER_TIMEOUT} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, n - len(out))
            if not chunk:
                return bytes(out)
            out += chunk
        return bytes(out)

    def call(self, op: str, label: str, env: Optional[Dict[str, Optional[str]]] = None,
             **kwargs: Any) -> Any:
        """Runs ``op(**kwargs)`` in the worker with ``env`` set (None values unset).

        Returns the op's result. A Python exception in the worker is a Failure
        of kind "error" whose ``exc_type``/``text`` tell what it was; the worker
        dying (by a signal or otherwise) is a Failure "signal"/"exit"."""
        start = time.monotonic()
        try:
            return self._call(op, label, env, kwargs)
        finally:
            self.seconds += time.monotonic() - start

    def _call(self, op: str, label: str, env: Optional[Dict[str, Optional[str]]],
              kwargs: Dict[str, Any]) -> Any:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.requests += 1
        message = pickle.dumps((op, kwargs, env or {}))
        try:
            self.proc.stdin.write(struct.pack("<Q", len(message)) + message)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the read below finds out why
        deadline = time.monotonic() + WORKER_TIMEOUT
        path = label
        header = self._read_exactly(8, deadline, path)
        if len(header) < 8:
            code = self.proc.wait(timeout=30)
            self.proc = None
            if code < 0:
                raise Failure("signal", path, f"worker {self.name} died by {signal_name(code)} "
                              f"in {op}({_short(kwargs)})")
            raise Failure("exit", path, f"worker {self.name} exited {code} in {op}")
        (size,) = struct.unpack("<Q", header)
        status, payload = pickle.loads(self._read_exactly(size, deadline, path))
        if status == "ok":
            return payload
        exc_type, text, trace = payload
        failure = Failure("error", path, f"{op}: {exc_type}: {text}\n{trace}")
        failure.exc_type, failure.exc_text = exc_type, text
        raise failure


def _short(kwargs: Dict[str, Any]) -> str:
    parts: List[str] = []
    for k, v in kwargs.items():
        r = repr(v)
        parts.append(f"{k}={r[:60] + '...' if len(r) > 60 else r}")
    return ", ".join(parts)
