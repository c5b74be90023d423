"""The ``gulpdb`` command, run from Python: ``python -m gulpdb ...``.

The wheel bundles the C++ command as ``gulpdb/_bin/gulpdb`` and installs a
``gulpdb`` script that comes here; this replaces the Python process with the
command (same arguments, exit status and signals). An installation without
the bundled command (the Debian package puts it in /usr/bin) runs the first
native ``gulpdb`` program on the PATH.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn, Optional


def _bundled() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "gulpdb")


def _on_path() -> Optional[str]:
    """The first ``gulpdb`` on the PATH that is a native program (not a Python script)."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or os.curdir, "gulpdb")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            with open(candidate, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    return candidate
    return None


def command_path() -> str:
    """Path of the gulpdb command this package runs; SystemExit if there is none."""
    bundled = _bundled()
    if os.access(bundled, os.X_OK):
        return bundled
    found = _on_path()
    if found is None:
        raise SystemExit(
            f"gulpdb: the gulpdb command is not installed: {bundled} is missing and no "
            "native gulpdb is on the PATH (install the wheel, the .deb, or `cmake --install`)"
        )
    return found


def main() -> NoReturn:
    command = command_path()
    os.execv(command, [command] + sys.argv[1:])


if __name__ == "__main__":
    main()
