"""Bit rot, as the lifecycle test simulates it (machine.py's rot_frame, and
the worker that flips a bit under an open reader)."""

from __future__ import annotations

import os


def flip_bit(file: str, at: int, bit: int) -> None:
    """Flips bit ``bit`` of byte ``at`` of ``file``, keeping its size and times
    (as decay on disk does, which no stamp of an imported file sees)."""
    before = os.stat(file)
    with open(file, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ (1 << bit)]))
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))
