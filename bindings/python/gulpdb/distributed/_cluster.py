"""The Dask side of a distributed ingest: the client (or a LocalCluster), the
workers, and the pre-flight check (step 2 of the package docstring)."""

from __future__ import annotations

import os
import secrets
import time
from typing import Any, Dict

import gulpdb

from . import _worker
from ._report import DistributedIngestError, describe

__all__ = ["Cluster", "local_cluster"]


def local_cluster(workers: int) -> Any:
    """The LocalCluster of a driver started without a scheduler: `workers`
    processes of one thread on 127.0.0.1, no dashboard, and no statistical
    profiler (it samples the workers' threads every 10 ms for the dashboard:
    about half of an idle worker's CPU time, measured here)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.worker.profile.enabled": False}):
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )


class Cluster:
    """The cluster a driver runs on. ``client`` is None until :meth:`connect`;
    :meth:`close` closes what :meth:`connect` opened (never a Client the
    caller gave). Not thread-safe: the driver's thread only."""

    def __init__(self, out: str, options: Dict[str, Any], nonce: str) -> None:
        self.out = out
        self.o = options
        self.nonce = nonce
        self.client: Any = None
        self.cluster: Any = None
        self.owns_client = False

    def connect(self, client_or_address: Any) -> None:
        from distributed import Client

        if isinstance(client_or_address, Client):
            self.client = client_or_address
            return
        self.owns_client = True
        if client_or_address is None:
            self.cluster = local_cluster(self.o["local_workers"] or os.cpu_count() or 1)
            self.client = Client(self.cluster, set_as_default=False)
            return
        address = str(client_or_address)
        timeout = self.o["connect_timeout"]
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DistributedIngestError(
                f"cannot reach the Dask scheduler at {address} within {timeout:g} s: {reason}"
            ) from None

    def wait_for_workers(self) -> Dict[str, int]:
        timeout = self.o["worker_timeout"]
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            raise DistributedIngestError(
                f"no worker joined the Dask scheduler at {self.client.scheduler.address} within "
                f"{timeout:g} s"
            ) from None
        return dict(self.client.nthreads())

    def close(self) -> None:
        if self.owns_client and self.client is not None:
            try:
                self.client.close(timeout=10)
            except Exception:  # closing after a lost scheduler: nothing left to do
                pass
        if self.cluster is not None:
            try:
                self.cluster.close(timeout=20)
            except Exception:
                pass
        self.client = self.cluster = None

    def preflight(self, plan: Dict[str, Any], workers: Dict[str, int]) -> None:
        """Runs the pre-flight check on every worker; raises one line per problem."""
        token_name = f".gulpdb-preflight-{self.nonce}"
        token = secrets.token_hex(16)
        token_path = os.path.join(self.out, token_name)
        fd = os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, token.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        check = {
            "out": self.out,
            "token_name": token_name,
            "token": token,
            "version": gulpdb.__version__,
            "ffmpeg": self.o["ffmpeg"] if plan["needs_ffmpeg"] else None,
            "paths": plan["sample_paths"],
        }
        futures = {}
        try:
            for i, address in enumerate(sorted(workers)):
                futures[address] = self.client.submit(
                    _worker.preflight,
                    check,
                    workers=[address],
                    allow_other_workers=False,
                    pure=False,
                    key=f"gulpdb-preflight-{self.nonce}-{i}",
                )
            timeout = self.o["worker_timeout"]
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and any(
                f.status == "pending" for f in futures.values()
            ):
                time.sleep(0.05)
            problems = []
            for address, future in futures.items():
                if future.status == "finished":
                    result = future.result()
                    problems += [f"worker {result['worker']}: {p}" for p in result["problems"]]
                elif future.status == "error":
                    exc = future.exception()
                    if isinstance(exc, ImportError):
                        problems.append(
                            f"worker {address}: cannot import gulpdb ({exc}): install the same "
                            "gulpdb on every worker (or put it on the workers' PYTHONPATH)"
                        )
                    else:
                        problems.append(
                            f"worker {address}: pre-flight check failed: {describe(exc)}"
                        )
                else:
                    problems.append(
                        f"worker {address}: no answer to the pre-flight check within {timeout:g} s"
                    )
            if problems:
                raise DistributedIngestError("\n".join(problems))
        finally:
            for future in futures.values():
                future.cancel()
            try:
                os.unlink(token_path)
            except OSError:
                pass
