"""The label function the lifecycle test gives gulpdb.torch.VideoDataset (a
module-level function, so that a pickled VideoDataset carries it by name)."""

from typing import Any


def label_of(meta: Any) -> int:
    """The video's ``idx`` (GulpIO's label index), or -1 when it has none."""
    if isinstance(meta, dict) and isinstance(meta.get("idx"), int):
        return meta["idx"]
    return -1
