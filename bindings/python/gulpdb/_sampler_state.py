"""VideoSampler's saved state: its format, reading it back, and what it was counted over.

A state (``VideoSampler.state_dict``) is a dict of JSON values. Version 3
names the items it counts over (``"dataset"``: the dataset's UUID, the
number of items and a digest of their ids in order, computed by the engine:
:meth:`gulpdb.Dataset.ids_digest`), so that a resume can tell the same
dataset from another one, from one that lost or reordered items, and from
one that grew by appends. Versions 1 (the global shuffle and the natural
order) and 2 (``shuffle="blocks"``) name nothing and are still read, with
their rule: the dataset must have the same number of items. The format and
the rules are in docs/training.md ("The dataset's identity").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sized, Tuple, Union

import numpy as np

STATE_VERSION = 3  # every shuffle mode; adds "dataset"
GLOBAL_VERSION = 1  # the global shuffle and the natural order, nothing named
BLOCKS_VERSION = 2  # shuffle="blocks", nothing named
VERSIONS = (GLOBAL_VERSION, BLOCKS_VERSION, STATE_VERSION)
STATE_KEYS = ("version", "epoch", "seed", "shuffle", "dataset_length", "consumed")
BLOCKS_KEYS = ("segments", "blocks", "blocks_digest", "window")
IDENTITY_KEYS = ("uuid", "length", "ids_digest")
GROW_MODES = ("next_epoch",)

_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def as_int(value: Any, name: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, not {value}")
    return int(value)


def as_grow(value: Any) -> Optional[str]:
    """``grow=`` of load_state_dict: None or "next_epoch"."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f'grow must be None or "next_epoch", not {type(value).__name__}')
    if value not in GROW_MODES:
        raise ValueError(f'grow must be None or "next_epoch", not {value!r}')
    return value


@dataclass(frozen=True)
class Identity:
    """What a state counts over: the first ``length`` items of the dataset ``uuid``."""

    uuid: str  # "" for a dataset made before gulpdb recorded one
    length: int
    ids_digest: str  # SHA-256 of the ids of items [0, length), as the engine computes it

    def to_json(self) -> Dict[str, Any]:
        return {"uuid": self.uuid, "length": self.length, "ids_digest": self.ids_digest}


def names_its_items(dataset: Any) -> bool:
    """True when ``dataset`` can say what it holds: an ``ids_digest(count)`` and a ``uuid``.

    :class:`gulpdb.Dataset`, :class:`gulpdb.torch.VideoDataset` and
    :class:`~gulpdb.torch.ImageDataset` can; a ``Subset`` or a plain list cannot.
    """
    return callable(getattr(dataset, "ids_digest", None)) and isinstance(
        getattr(dataset, "uuid", None), str
    )


def identity_of(dataset: Any, length: int) -> Optional[Identity]:
    """The identity of the first ``length`` items of ``dataset``; None if it cannot say."""
    if not names_its_items(dataset):
        return None
    return Identity(str(dataset.uuid), length, str(dataset.ids_digest(length)))


@dataclass(frozen=True)
class SavedState:
    """A state, checked field by field."""

    version: int
    epoch: int
    seed: int
    shuffle: Union[bool, str]
    length: int  # the items of the saved epoch
    consumed: int
    identity: Optional[Identity]  # None: a state of version 1 or 2, or of a dataset naming nothing
    segments: Tuple[Tuple[int, int], ...] = ()
    blocks: int = 0
    blocks_digest: int = 0
    window: int = 1


def _identity_field(value: Any, length: int) -> Optional[Identity]:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise TypeError(f"VideoSampler state: dataset must be a dict or None, not "
                        f"{type(value).__name__}")
    missing = [k for k in IDENTITY_KEYS if k not in value]
    if missing:
        raise ValueError(f"VideoSampler state: dataset lacks {', '.join(missing)}")
    uuid, digest = value["uuid"], value["ids_digest"]
    if not isinstance(uuid, str):
        raise TypeError(f"VideoSampler state: dataset uuid must be a str, not {type(uuid).__name__}")
    if not isinstance(digest, str):
        raise TypeError(f"VideoSampler state: dataset ids_digest must be a str, not "
                        f"{type(digest).__name__}")
    if not _HEX_DIGEST.fullmatch(digest):
        raise ValueError(f"VideoSampler state: dataset ids_digest must be 64 lowercase hex "
                         f"digits, not {digest!r}")
    counted = as_int(value["length"], "dataset length")
    if counted != length:
        raise ValueError(f"VideoSampler state: its dataset names {counted} items, but its "
                         f"dataset_length is {length}")
    return Identity(uuid, counted, digest)


def _segments_field(value: Any) -> Tuple[Tuple[int, int], ...]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"segments must be a list, not {type(value).__name__}")
    segments = []
    for pair in value:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"VideoSampler state: a segment must be [world, per_rank], not {pair!r}")
        segments.append((as_int(pair[0], "segment world", 1), as_int(pair[1], "segment per_rank", 1)))
    return tuple(segments)


def read_state(state: Any) -> SavedState:
    """``state`` checked: ValueError for a malformed one or an unknown version,
    TypeError for a field of the wrong type."""
    if not isinstance(state, dict):
        raise TypeError(f"VideoSampler state must be a dict, not {type(state).__name__}")
    missing = [k for k in STATE_KEYS if k not in state]
    if missing:
        raise ValueError(f"VideoSampler state lacks {', '.join(missing)}")
    version = state["version"]
    if isinstance(version, bool) or version not in VERSIONS:
        raise ValueError(f"VideoSampler state has version {version!r}; this gulpdb reads versions "
                         f"{', '.join(str(v) for v in VERSIONS)}")
    shuffle = state["shuffle"]
    blocked = version == BLOCKS_VERSION or (version == STATE_VERSION and shuffle == "blocks")
    if version == BLOCKS_VERSION and shuffle != "blocks":
        raise ValueError(f"VideoSampler state of version 2 must have shuffle 'blocks', not "
                         f"{shuffle!r}")
    extra = [k for k in BLOCKS_KEYS if k in state]
    if version == STATE_VERSION and not blocked and extra:
        raise ValueError(f"VideoSampler state with {', '.join(extra)} must have shuffle "
                         f"'blocks', not {shuffle!r}")
    if not blocked and not isinstance(shuffle, (bool, np.bool_)):
        raise TypeError(f"shuffle must be a bool or 'blocks', not {type(shuffle).__name__}")
    if version == STATE_VERSION and "dataset" not in state:
        raise ValueError("VideoSampler state lacks dataset")
    if blocked:
        missing = [k for k in BLOCKS_KEYS if k not in state]
        if missing:
            raise ValueError(f"VideoSampler state lacks {', '.join(missing)}")
    length = as_int(state["dataset_length"], "dataset_length")
    consumed = as_int(state["consumed"], "consumed")
    if consumed > length:
        raise ValueError(f"VideoSampler state consumed {consumed} of only {length} items")
    saved = dict(
        version=int(version),
        epoch=as_int(state["epoch"], "epoch"),
        seed=as_int(state["seed"], "seed"),
        shuffle="blocks" if blocked else bool(shuffle),
        length=length,
        consumed=consumed,
        identity=_identity_field(state.get("dataset"), length),
    )
    if blocked:
        saved.update(
            segments=_segments_field(state["segments"]),
            blocks=as_int(state["blocks"], "blocks"),
            blocks_digest=as_int(state["blocks_digest"], "blocks_digest"),
            window=as_int(state["window"], "window", 1),
        )
    return SavedState(**saved)


def check_dataset(saved: SavedState, dataset: Sized, grow: Optional[str]) -> bool:
    """Checks that ``dataset`` holds the items ``saved`` counted over.

    Returns True when it grew since, by items after them, and ``grow`` says
    to finish the saved epoch over them; False when it holds exactly them.
    Raises ValueError saying why otherwise: another dataset (UUID), items
    counted that were removed, replaced or reordered (the ids digest), a
    grown dataset without ``grow``, or, when the state or the dataset names
    nothing, another number of items (the rule of versions 1 and 2).
    """
    n = len(dataset)
    counted = saved.length
    ident = saved.identity
    if ident is not None and names_its_items(dataset):
        uuid = str(getattr(dataset, "uuid"))
        # A dataset made before gulpdb recorded UUIDs has none ("") until its
        # first push: its identity is unknown, and the ids digest decides.
        if ident.uuid and uuid and uuid != ident.uuid:
            raise ValueError(
                f"VideoSampler state was saved on another dataset: the state's has UUID "
                f"{ident.uuid!r}, this one {uuid!r}"
            )
        if n < counted:
            raise ValueError(
                f"VideoSampler state counts over {counted} items, but this dataset has only "
                f"{n}: items were removed since it was saved"
            )
        digest = str(dataset.ids_digest(counted))  # type: ignore[attr-defined]
        if digest != ident.ids_digest:
            raise ValueError(
                f"VideoSampler state counts over the first {counted} items of its dataset, but "
                f"the first {counted} of this one are other ids (ids digest {digest[:12]}..., "
                f"the state's {ident.ids_digest[:12]}...): items were removed, replaced or "
                "reordered since it was saved"
            )
        if n == counted:
            return False
        if grow is None:
            raise ValueError(
                f"VideoSampler state is for a dataset of {counted} items, but this dataset has "
                f"{n}: it grew by {n - counted} since the state was saved (its first {counted} "
                "are the ones counted). Pass load_state_dict(state, grow='next_epoch') to finish "
                f"the saved epoch over those {counted} and count all {n} from the next epoch"
            )
        return True
    if n != counted:
        message = (
            f"VideoSampler state is for a dataset of {counted} items, but this dataset has {n}: "
            "resume with the same dataset (and the same Subset of it)"
        )
        if grow is not None and n > counted:
            why = (
                f"the state (version {saved.version}) does not name the items it counted"
                if ident is None
                else f"this {type(dataset).__name__} cannot name its items (it has no "
                "ids_digest() and uuid)"
            )
            message += (
                f"; grow='next_epoch' needs to know that the first {counted} items are the ones "
                f"counted, but {why}"
            )
        raise ValueError(message)
    return False
