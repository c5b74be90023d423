"""Meta dicts as JSON text: what :meth:`gulpdb.Writer.append` stores and what
:meth:`gulpdb.Dataset.select` compares, with NumPy values as the Python values
they hold, and TypeError naming the video and the key path for anything JSON
cannot hold.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional

import numpy as np

__all__ = ["meta_json", "plain"]


def meta_json(meta: Optional[Mapping[str, Any]], video_id: Any = None) -> str:
    """Serialises one meta dict as Python's json.dumps does by default.

    NumPy values become the Python values they hold (see :func:`plain`).
    TypeError naming ``video_id`` and the key path for anything else JSON cannot
    hold.
    """
    if meta is None:
        return "{}"
    if not isinstance(meta, Mapping):
        raise TypeError(f"meta of video {video_id!r} must be a dict, not {type(meta).__name__}")
    try:
        return json.dumps(dict(meta))
    except (TypeError, ValueError):
        pass  # NumPy values, or something to report with its path
    return json.dumps(plain(meta, video_id, "meta", set()))


_JSON_SCALARS = (str, int, float, type(None))  # bool is an int


def plain(value: Any, video_id: Any, path: str, open_containers: set) -> Any:
    """``value`` with NumPy scalars and 0-d/1-d arrays as the Python values they hold.

    ``np.int64(3)`` -> 3, ``np.float32`` -> float, ``np.bool_`` -> bool,
    ``np.str_`` -> str, a 0-d array -> its item, a 1-d array -> a list; mappings
    (keys too) and lists/tuples are converted recursively. Anything else JSON
    cannot hold is a TypeError naming the video and the path
    (``meta['a']['b'][2]``).
    """
    if isinstance(value, _JSON_SCALARS) and not isinstance(value, np.generic):
        return value
    if isinstance(value, np.generic):
        item = value.item()
        if isinstance(item, _JSON_SCALARS):
            return item
        raise unjsonable(video_id, path, value)
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return plain(value[()], video_id, path, open_containers)
        if value.ndim == 1:
            return [
                plain(v, video_id, f"{path}[{i}]", open_containers) for i, v in enumerate(value)
            ]
        raise unjsonable(
            video_id, path, value, f"a {value.ndim}-D array (value.tolist() gives nested lists)"
        )
    if isinstance(value, (Mapping, list, tuple)):
        if id(value) in open_containers:
            raise ValueError(f"meta of video {video_id!r} contains itself at {path}")
        open_containers.add(id(value))
        try:
            if isinstance(value, Mapping):
                out = {}
                for key, v in value.items():
                    where = f"{path}[{key!r}]"
                    plain_key = key
                    if isinstance(key, np.generic):
                        plain_key = key.item()
                    if not isinstance(plain_key, _JSON_SCALARS):
                        what = f"a key of type {type(key).__name__}"
                        raise unjsonable(video_id, where, key, what)
                    out[plain_key] = plain(v, video_id, where, open_containers)
                return out
            return [
                plain(v, video_id, f"{path}[{i}]", open_containers) for i, v in enumerate(value)
            ]
        finally:
            open_containers.discard(id(value))
    raise unjsonable(video_id, path, value)


def unjsonable(video_id: Any, path: str, value: Any, what: Optional[str] = None) -> TypeError:
    what = what or f"a {type(value).__module__}.{type(value).__qualname__}"
    return TypeError(
        f"meta of video {video_id!r} cannot be stored as JSON: {path} is {what}; meta may hold "
        "dicts, lists, str, int, float, bool, None, NumPy scalars and 0-d/1-d arrays"
    )
