"""The versions of :class:`gulpdb.Dataset`: ``tag``, ``versions``, ``diff``,
``delete_tag``, ``reclaim_versions`` and ``version_bytes``, over the native
calls of ``bindings/src/version_binding.cc`` (``docs/versions.md``). The rules
(tag names, what a tag holds, when space is freed) are the engine's.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import _gulpdb

__all__ = ["Versions", "check_version_name"]


def check_version_name(name: Any, what: str = "version") -> str:
    """``name`` if it is a ``str``; TypeError otherwise (the engine checks the rest)."""
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str (a tag name, or 'HEAD'), not {type(name).__name__}")
    return name


class Versions:
    """The version methods of :class:`gulpdb.Dataset` (a mixin: the class that
    uses it provides ``_native()`` and ``_check_writable()``)."""

    def _native(self) -> _gulpdb.NativeDataset:
        raise NotImplementedError

    def _check_writable(self) -> None:
        raise NotImplementedError

    def tag(self, name: str, message: Optional[str] = None) -> Dict[str, Any]:
        """Records the dataset as it is now under ``name``; returns the tag as
        :meth:`versions` lists it.

        A tag is a read-only version that ``gulpdb.Dataset(path, version=name)``
        opens as it was, whatever is appended, edited, removed or compacted
        later. Names are 1 to 255 bytes of ``A-Z a-z 0-9 . _ -`` (not ``.``,
        ``..`` or ``HEAD``). Needs a dataset opened for writing (ValueError
        otherwise, or for a bad or used name); takes the writer lock while it
        builds (:class:`gulpdb.BusyError` when another writer holds it).
        """
        self._check_writable()
        check_version_name(name, "name")
        if message is not None and not isinstance(message, str):
            raise TypeError(f"message must be a str or None, not {type(message).__name__}")
        return self._native().tag(name, message or "")

    def versions(self) -> List[Dict[str, Any]]:
        """The tags, oldest first: dicts with ``name``, ``created`` (seconds
        since the epoch), ``videos``, ``frames``, ``message`` (None when none
        was given) and ``root`` (the SHA-256 of the tag's index root). On a
        dataset opened from an ``s3://`` URL: the tags its push published."""
        return self._native().versions()

    def diff(self, a: str, b: str) -> Dict[str, List[str]]:
        """What changed from version ``a`` to version ``b`` (tag names, or
        ``"HEAD"`` for the live dataset): ``{'added', 'removed',
        'meta_changed', 'frames_changed'}``, each a list of ids in id order.
        Frames compare by content (each frame's length and CRC-32C), never by
        where a compaction moved them. KeyError for an unknown tag."""
        return self._native().diff(check_version_name(a, "a"), check_version_name(b, "b"))

    def delete_tag(self, name: str, grace_seconds: int = 600) -> None:
        """Deletes tag ``name`` (KeyError when there is none): new opens no
        longer find it; what only it held is freed by the first
        :meth:`reclaim_versions` (or ``delete_tag``) after ``grace_seconds``,
        so readers that opened it keep reading until then."""
        self._check_writable()
        check_version_name(name, "name")
        if isinstance(grace_seconds, bool) or not isinstance(grace_seconds, int):
            raise TypeError("grace_seconds must be an int")
        if grace_seconds < 0:
            raise ValueError(f"grace_seconds must be >= 0, not {grace_seconds}")
        self._native().delete_tag(name, grace_seconds)

    def reclaim_versions(self) -> int:
        """Frees what deleted tags past their grace period held; returns the bytes freed."""
        self._check_writable()
        return self._native().reclaim_versions()

    def version_bytes(self) -> int:
        """Bytes the tags hold: their index objects and the chunk files
        compaction kept for them."""
        return self._native().version_bytes()
