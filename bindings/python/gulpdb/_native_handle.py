"""The native dataset behind a :class:`gulpdb.Dataset`, in whichever process uses it.

LMDB environments must never be used across a fork: a :class:`NativeHandle`
remembers the process that opened its ``_gulpdb.NativeDataset`` and opens it
again, lazily, in any other process. It pickles as the path, the mode and the
open options, so a dataset sent to a spawned worker opens there on first use
(never creating one). Also here: the checks of the integer settings that the
Python layer takes (:func:`count`).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _gulpdb

__all__ = ["NativeHandle", "count", "is_remote"]


def count(value: Any, name: str, minimum: int = 0, maximum: int = 2**63 - 1) -> int:
    """An integer setting in [minimum, maximum], else TypeError / ValueError naming it.

    Counts never wrap around: -5 videos per chunk is an error, not 4294967291.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    value = int(value)
    if not minimum <= value <= maximum:
        small = value < minimum and maximum >= 2**63 - 1
        bound = f"at least {minimum}" if small else f"{minimum} to {maximum}"
        raise ValueError(f"{name} must be {bound}, not {value}")
    return value


def is_remote(path: str) -> bool:
    """True for a dataset in object storage ("s3://bucket/prefix"): the engine's rule."""
    return _gulpdb.is_remote_url(path)


class NativeHandle:
    """The ``_gulpdb.NativeDataset`` of ``path`` for the current process.

    ``options`` are the keyword arguments of ``NativeDataset.open`` (but
    ``read_only``, which ``mode`` decides). Thread safety: any thread may call
    :meth:`get`; the (pid, native) pair is replaced as a whole, so threads
    never see a mix, and two threads racing to reopen after a fork both open
    one (the engine shares the LMDB environment between them).
    """

    def __init__(self, path: str, mode: str, options: Dict[str, Any]) -> None:
        self.path = path
        self.mode = mode
        self.options = options
        self.closed = False
        self._state: Optional[Tuple[int, _gulpdb.NativeDataset]] = None

    def open(
        self,
        create: bool = False,
        exclusive: bool = False,
        create_options: Optional[Dict[str, Any]] = None,
        created: Optional[List[bool]] = None,
    ) -> _gulpdb.NativeDataset:
        """Opens the dataset in this process (creating it first if asked; appends
        True to ``created`` if it did) and keeps it as this process's."""
        index_dir = self.options["index_dir"]
        if create:
            if not _gulpdb.NativeDataset.exists(self.path, index_dir):
                try:
                    _gulpdb.NativeDataset.create(
                        self.path, index_dir=index_dir, **(create_options or {})
                    ).close()
                    if created is not None:
                        created.append(True)
                except ValueError:
                    # Another process created it in the meantime.
                    if exclusive or not _gulpdb.NativeDataset.exists(self.path, index_dir):
                        raise
            elif exclusive:
                raise FileExistsError(
                    f"create dataset {self.path}: a gulpdb dataset is already there"
                )
        native = _gulpdb.NativeDataset.open(self.path, read_only=self.mode == "r", **self.options)
        self._state = (os.getpid(), native)
        return native

    def get(self) -> _gulpdb.NativeDataset:
        """The native dataset of this process, opened again after a fork."""
        state = self._state
        if state is not None and state[0] == os.getpid():
            return state[1]
        if self.closed:
            raise ValueError("I/O operation on a closed dataset")
        # A dataset opened by another process (before a fork): dropping that
        # handle leaves its C++ objects alone (the native side leaks them on
        # purpose); open our own.
        return self.open()

    def close(self) -> None:
        """Closes the native dataset of this process; reads in flight finish first."""
        self.closed = True
        state, self._state = self._state, None
        if state is not None and state[0] == os.getpid():
            state[1].close()

    def state(self) -> Dict[str, Any]:
        """What pickling keeps: unpickling never creates a dataset."""
        return {
            "path": self.path,
            "mode": "r" if self.mode == "r" else "r+",
            "options": dict(self.options),
            "closed": self.closed,
        }

    @classmethod
    def from_state(cls, state: Dict[str, Any]) -> "NativeHandle":
        """A handle from :meth:`state`; opened on first use, in whichever process that is."""
        handle = cls(state["path"], state["mode"], state["options"])
        handle.closed = state["closed"]
        return handle
