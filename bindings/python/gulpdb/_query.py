"""The metadata queries and named splits of :class:`gulpdb.Dataset`: ``select``,
the meta index calls and the split listings, over the native calls of
``bindings/src/query_binding.cc``. Python values become the JSON texts the
engine compares (:func:`query_value_json`); the matching runs in C++.
"""

from __future__ import annotations

import json
import warnings
from typing import Any, Dict, List, Optional

from . import _gulpdb
from ._meta_json import plain

__all__ = ["MetaQueries"]


class MetaQueries:
    """The query methods of :class:`gulpdb.Dataset` (a mixin: the class that
    uses it provides ``_native()``, ``_check_writable()``, ``meta()``,
    ``__iter__`` and ``_path``)."""

    def _native(self) -> _gulpdb.NativeDataset:
        raise NotImplementedError

    def _check_writable(self) -> None:
        raise NotImplementedError

    def select(self, query: Optional[str] = None, /, **meta_equals: Any) -> List[str]:
        """Ids of the videos that satisfy a query, in (chunk, insertion) order as :meth:`ids`.

        Two forms:

        - ``ds.select("frames >= 16 and label in ('a', 'b')")``: an expression of
          gulpdb's query language (``docs/query.md``): comparisons ``= != < <= > >=``
          of the built-in fields ``id``, ``frames`` and ``chunk`` or of meta keys
          with values (strings in ``'...'`` or ``"..."``, numbers, ``true``,
          ``false``, ``null``), ``KEY in (V, ...)``, ``has KEY``, ``and``, ``or``,
          ``not`` and parentheses. Numbers compare as numbers, strings by their
          UTF-8 bytes; ``=`` also lets a number or literal match the string of its
          text; a term on a key a video lacks, or on a value of another type, is
          false. Text that is not a query raises ValueError whose message shows it
          with a caret under the byte where it went wrong.
        - ``ds.select(label="cat", split_id=3)``: the videos whose :meth:`meta` (the
          first meta_data entry) has every given key equal to the given Python
          value; no argument gives every id.

        Terms on keys with a meta index (:meth:`create_meta_index`) are answered
        from the index, in time proportional to what it reads (ranges and
        ``!=`` need an index of the ordered form, which every index built by
        this version has); everything else by one scan of the videos' meta in
        C++ (no Python work per video).

        Keyword values are Python values: str, int, float, bool, None, and lists
        and dicts of them (NumPy scalars and 0-d/1-d arrays stand for the values
        they hold). Equality is JSON's, not Python's: strings by their text;
        numbers by exact decimal value as written (``1``, ``1.0`` and ``1e0``
        match each other, but ``0.1`` does not match a stored
        ``0.10000000000000001``); ``True`` matches only ``true`` (not 1);
        ``"1"`` never matches 1; NaN matches NaN; lists element by element,
        dicts member by member in any order. Keys that are not identifiers
        go through a dict: ``ds.select(**{"label name": "x"})``.

        A key that no video has at all (a misspelt key, or ``template`` for an
        ingest with ``--label-name template``, which stores the label under
        GulpIO's ``"label"``) comes with a UserWarning naming the key.

        Raises:
            TypeError: a query that is not a str, both forms at once, or a
                keyword value JSON cannot hold (a set, an object, ...).
            ValueError: text that is not a query.
        """
        if query is not None:
            if meta_equals:
                raise TypeError("select() takes a query string or keyword conditions, not both")
            if not isinstance(query, str):
                raise TypeError(f"select(query): a query is a str, not a "
                                f"{type(query).__module__}.{type(query).__qualname__}")
            ids, keys = self._native().select_query(query)
            if keys:
                self._warn_absent_keys(keys, "select")
            return ids
        conditions = [(key, [query_value_json(key, value)]) for key, value in meta_equals.items()]
        ids = self._native().select(conditions)
        if not ids and conditions:
            self._warn_absent_keys([key for key, _ in conditions], "select")
        return ids

    def _warn_absent_keys(self, keys: List[str], what: str) -> None:
        """A UserWarning naming the keys that no video's meta has."""
        absent = self._native().absent_meta_keys(keys)
        first = next(iter(self), None)
        if absent and first is not None:
            warnings.warn(
                f"{what} on {self._path}: no video's meta has the key "
                f"{', '.join(repr(k) for k in absent)} (the first video's meta: "
                f"{self.meta(first)!r})",
                UserWarning,
                stacklevel=3,
            )

    def create_meta_index(self, key: str, *, lock_timeout: float = 0.0) -> bool:
        """Builds a secondary index of meta key ``key``, so that :meth:`select` on it
        costs the matches rather than a read of every video.

        One pass over the existing videos, in one transaction under the
        writer lock (:class:`gulpdb.BusyError` when another writer does not
        finish within ``lock_timeout`` seconds, including a :meth:`writer`
        of this process that is still open). From then on every write keeps
        the index right in the transaction that changes the videos. Returns
        False (changing nothing) when ``key`` has an index already.
        ValueError for a read-only dataset or a key that is empty, longer
        than 255 bytes or not text. A key that no video has is indexed (for
        videos added later) with a UserWarning. An index of ``key`` of the first
        key form (made by an older gulpdb: equality only, see
        :meth:`meta_index_details`) is rebuilt in the ordered form, and True
        returned.
        """
        self._check_writable()
        built = self._native().create_meta_index(key, lock_timeout)
        self._warn_absent_keys([key], "create_meta_index")
        return built

    def drop_meta_index(self, key: str, *, lock_timeout: float = 0.0) -> bool:
        """Drops the meta index of ``key``; False if it had none."""
        self._check_writable()
        return self._native().drop_meta_index(key, lock_timeout)

    def meta_indexes(self) -> List[str]:
        """The meta keys that have an index (:meth:`create_meta_index`)."""
        return self._native().meta_indexes()

    def meta_index_details(self) -> Dict[str, bool]:
        """``{key: ordered}`` for every meta index. ``ordered`` is False for an index
        an older gulpdb made (the first key form): it answers ``=``, ``in`` and
        ``has``, while ranges and ``!=`` on its key scan until
        :meth:`create_meta_index` rebuilds it."""
        return dict(self._native().meta_index_details())

    def splits(self) -> Dict[str, int]:
        """The named splits (:meth:`Writer.set_split`), as ``{name: number of ids}``, by name."""
        return dict(self._native().splits())

    def split(self, name: str) -> List[str]:
        """The ids of split ``name``, in the order :meth:`Writer.set_split` was given them.

        Videos removed since have left it. KeyError, naming the known splits,
        when there is no such split.
        """
        return self._native().split(name)


def query_value_json(key: str, value: Any) -> str:
    """The JSON text :meth:`Dataset.select` compares meta values with."""
    try:
        return json.dumps(plain(value, None, f"select({key}=...)", set()))
    except TypeError:
        raise TypeError(
            f"select({key}=...): a {type(value).__module__}.{type(value).__qualname__} cannot "
            "equal a meta value; use str, int, float, bool, None, or lists and dicts of them"
        ) from None
