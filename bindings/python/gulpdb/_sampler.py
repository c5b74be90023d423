"""VideoSampler: a distributed sampler whose position survives a change of world size.

With the default global shuffle the state is one integer per epoch, the number
of leading elements of the epoch's global order that all ranks together have
consumed, so a run stopped with W ranks resumes with any W' ranks (and again
with W'', and so on), each sample of the epoch taken exactly once. The
partition-aware shuffle (``shuffle="blocks"``) deals each rank its own share of
the blocks of the order stored together; its state adds the list of the runs
of the epoch so far (world size and samples per rank of each). The state
also names the items it counts over (_sampler_state.py), so that a run resumes
exactly on a dataset that grew since. The class docstring gives the rules;
``docs/training.md`` shows it in a DDP training loop.
"""

from __future__ import annotations

import math
import zlib
from typing import Any, Dict, Iterator, Optional, Sequence, Sized, Tuple, Union

import numpy as np
import torch
import torch.distributed
import torch.utils.data

from . import _sampler_state
from ._sampler_state import as_int as _as_int

__all__ = ["VideoSampler", "TrackedLoader"]

# Blocks of the order when the dataset says nothing of how it is stored: the
# fixed blocks of a local dataset's order (gulpdb.Dataset.order_blocks).
DEFAULT_BLOCK = 2048
# The default shuffle window of shuffle="blocks", in (mean) blocks.
_WINDOW_BLOCKS = 4

# Indices are turned into Python ints this many at a time, so that the first
# batch of an epoch of 10^6 items does not wait for a list of 10^6 ints.
_CHUNK = 4096


def _process_group() -> Tuple[int, int]:
    """(rank, world size) of the initialised process group, else (0, 1)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _as_shuffle(value: Any) -> Union[bool, str]:
    """True, False or "blocks"."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str):
        if value == "blocks":
            return value
        raise ValueError(f'shuffle must be True, False or "blocks", not {value!r}')
    raise TypeError(f'shuffle must be a bool or "blocks", not {type(value).__name__}')


def _block_starts(value: Any, n: int, what: str) -> np.ndarray:
    """`value` checked as the first positions of blocks of range(n): ascending, from 0."""
    try:
        starts = np.asarray(value)
    except Exception as e:  # noqa: BLE001 - any failure is a bad argument
        raise TypeError(f"VideoSampler: {what} is not a sequence of ints: {e}") from None
    if starts.ndim != 1 or (starts.size and not np.issubdtype(starts.dtype, np.integer)):
        raise TypeError(f"VideoSampler: {what} must be a flat sequence of ints")
    starts = starts.astype(np.int64)
    if n == 0:
        if starts.size and (starts[0] != 0 or starts.size > 1):
            raise ValueError(f"VideoSampler: {what} has blocks, but the dataset is empty")
        return np.empty(0, np.int64)
    if starts.size == 0 or starts[0] != 0:
        raise ValueError(f"VideoSampler: {what} must start with position 0")
    bad = np.flatnonzero(np.diff(starts) <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        raise ValueError(
            f"VideoSampler: {what} must be strictly ascending, but block {i} starts at "
            f"{int(starts[i])}, after block {i - 1} at {int(starts[i - 1])}"
        )
    if starts[-1] >= n:
        raise ValueError(
            f"VideoSampler: {what} has a block starting at {int(starts[-1])}, past the "
            f"dataset's {n} items"
        )
    return starts


def _blocks_digest(starts: np.ndarray) -> int:
    """A checksum of the block layout, kept in the state to refuse another layout."""
    return zlib.crc32(starts.astype("<i8").tobytes())


def _sections(remaining: int, world: int) -> Tuple[int, int]:
    """(q, e): rank r's section of a remaining list of `remaining` has q + (r < e) items."""
    return remaining // world, remaining % world


def _section(remaining: int, world: int, rank: int) -> Tuple[int, int]:
    """(start, size) of rank `rank`'s contiguous section of the remaining list."""
    q, e = _sections(remaining, world)
    return rank * q + min(rank, e), q + (1 if rank < e else 0)


def _taken_in_segment(remaining: int, world: int, per_rank: int) -> int:
    """Items of the remaining list consumed once every rank took `per_rank` samples."""
    q, e = _sections(remaining, world)
    return e * min(per_rank, q + 1) + (world - e) * min(per_rank, q)


class VideoSampler(torch.utils.data.Sampler):
    """Item indices for one rank, resumable mid-epoch with any number of ranks.

    A drop-in for :class:`torch.utils.data.DistributedSampler` (same arguments,
    :meth:`set_epoch`, ``len()`` = the samples this rank yields this epoch),
    whose :meth:`state_dict` records the position of the whole world in the
    epoch, so that training stopped with W ranks resumes with any number of
    ranks and, over the two runs, sees every sample of the epoch exactly once
    (plus the padding repeats DistributedSampler also makes).

    Args:
        dataset: anything with ``len()``: a :class:`gulpdb.torch.VideoDataset`
            or :class:`~gulpdb.torch.ImageDataset`, a ``Subset`` of one, ...
        num_replicas, rank: default to the initialised ``torch.distributed``
            process group, else 1 and 0.
        shuffle: ``True``: a new global order every epoch; ``False``: the
            natural order; ``"blocks"``: the partition-aware shuffle (below).
        seed: seeds the shuffle (an int >= 0, the same on every rank).
        drop_last: drop the tail that does not divide evenly between the
            ranks, instead of padding it with repeats.
        blocks: with ``shuffle="blocks"``, the first item index of each block
            of items stored together, ascending from 0. Default: the
            dataset's ``order_blocks()`` when it has one
            (:meth:`gulpdb.torch.VideoDataset.order_blocks`: the partitions of
            a partitioned snapshot, blocks of 2048 positions of a local
            dataset), else blocks of 2048 items.
        window: with ``shuffle="blocks"``, the items of a rank's share are
            shuffled within consecutive windows of this many (default: 4
            blocks of the mean size). Larger mixes more blocks into each batch;
            smaller touches fewer blocks at a time.

    **The order and the position.** Each epoch has one global order: a
    permutation of ``range(N)`` drawn from ``numpy.random.default_rng([seed,
    epoch])`` (the identity without ``shuffle``), whatever the world size. The
    position ``c`` is how many leading elements of that order the world has
    consumed. An iteration takes the remaining list ``order[c:]``, pads it to a
    multiple of the world size W by repeating it from its start (or, with
    ``drop_last``, cuts it to one), and rank r takes ``remaining[r::W]``. When
    every rank has consumed k samples, the world has consumed exactly the first
    ``k * W`` elements of the remaining list: a prefix, so ``c + k * W`` is the
    new position whatever W was, and resumes nest (4 ranks, then 3, then 5).
    Once every rank has consumed all of its samples the epoch is over and the
    position is N, even if ``drop_last`` dropped a tail: a finished epoch is
    not resumed. Nothing is padded or dropped except at the end of the list,
    so samples are repeated only as DistributedSampler repeats them (fewer
    than W per run), and dropped only as it drops them.

    **The partition-aware shuffle** (``shuffle="blocks"``) keeps each rank on
    its own share of the blocks (the partitions a remote node fetches), at two
    levels, as MosaicML streaming's block shuffles do. The epoch's *base
    order* (:meth:`epoch_order`) takes the blocks in an order drawn from
    ``default_rng([seed, epoch])`` and shuffles the items within each block. A
    run of W ranks cuts the remaining list (the base order at the start of the
    epoch) into W contiguous sections of ``floor`` or ``ceil(R / W)`` items,
    rank r taking section r, shuffled within windows of ``window`` items
    (seeded by seed, epoch, the run's number in the epoch, W and r). So a rank
    touches about 1/W of the blocks in its epoch, and about ``window /
    block`` + 1 blocks at a time. Without ``drop_last`` a rank whose section is
    one short repeats its own first item at its end; with it, the longer
    sections leave their last item unconsumed. When every rank has consumed k
    samples, the new remaining list is the concatenation, in rank order, of
    each section's items past its first k: what a resumed run with any W'
    deals out again, still grouped by the old sections' blocks. The state
    therefore holds, besides the count of consumed items, ``segments``: one
    ``[world size, samples per rank]`` pair per run of the epoch that stopped
    mid-epoch (an epoch resumed twice has two), from which every rank
    recomputes the remaining list, and the layout it was counted over
    (``blocks``, the number of blocks, ``blocks_digest``, a CRC-32 of their
    first positions, and ``window``): a state for another layout is refused.

    **Counting what the loop consumed.** A DataLoader takes indices from its
    sampler ahead of the loop (``prefetch_factor * num_workers`` batches with
    workers), so the indices this sampler has handed out over-count what
    training has seen. :meth:`state_dict` therefore counts in one of two exact
    ways, never by handed-out indices:

    - iterate through :meth:`track` (``for batch in sampler.track(loader)``),
      which counts the batches the DataLoader has yielded to the loop — the
      same with 0, 1 or N workers; or
    - pass ``state_dict(consumed=k)``: the samples your loop has taken from
      this sampler on this rank since the current iteration began (after a
      resume: since the resume point, not since the start of the epoch).

    Without either, :meth:`state_dict` raises :class:`RuntimeError` once any
    index has been handed out, rather than guess and lose samples; before that
    (right after construction, :meth:`set_epoch` or :meth:`load_state_dict`) it
    returns the position exactly. A batch counts as consumed once the loop has
    received it, so in the loop body the current batch is included: save
    after the step that uses it.

    **Ranks agree.** Every rank yields the same number of samples, and DDP
    keeps ranks in step, so every rank computes the same state: the state of
    any one rank (usually rank 0 saves it) is enough to resume all of them.
    :meth:`state_dict` is local, not a collective call. Should ranks have
    consumed different counts, the state of the rank that consumed the fewest
    repeats samples rather than losing them.

    **Resuming.** Build the sampler for the new world, call
    :meth:`load_state_dict`, then keep calling :meth:`set_epoch` as usual:
    ``set_epoch`` with the saved epoch keeps the saved position, any other
    epoch starts at 0. The state's seed and shuffle replace the constructor's
    (the saved position only means something in the saved order).

    **What the state counts over.** The state names the items its epoch
    counts: the dataset's UUID, their number and a digest of their ids in
    order (:meth:`gulpdb.Dataset.ids_digest`; meta takes no part, so a
    relabel keeps it), when the dataset can say them (a
    :class:`~gulpdb.torch.VideoDataset`, :class:`~gulpdb.torch.ImageDataset`
    or :class:`gulpdb.Dataset`). :meth:`load_state_dict` refuses with
    :class:`ValueError` a state of another dataset, or one whose items were
    removed, replaced or reordered since. A dataset that grew by appends
    (its first items the counted ones) is refused too, unless
    ``grow="next_epoch"``: the saved epoch then finishes over the items it
    counted, exactly as it would have (the same order, any world size), and
    from the next :meth:`set_epoch` every item counts, in an order drawn from
    the seed and the epoch as always. A state saved while the saved epoch
    finishes counts over the same items, so it resumes the same way after
    further growth. A dataset that names nothing (a ``Subset``) and states
    of versions 1 and 2 keep the old rule: the same number of items.

    **Cost.** The order of an epoch is one NumPy array, 4 bytes per item
    (8 from 2^31 items), computed at the first index of an epoch in each
    rank's main process (about 10 ms for 10^6 items); indices become Python
    ints a few thousand at a time. A resume costs what starting an epoch costs
    (``bench/sampler_bench.py``). After a resume ``len()``, and so the
    DataLoader's, counts only what is left. With ``shuffle="blocks"`` the base
    order costs about as much, and a resume replays each of its segments
    (one array operation over what was left, per segment).

    **Processes and threads.** The sampler lives in the process that iterates
    the DataLoader (workers only receive indices); it is not thread-safe, and
    serves one iteration at a time: an iteration that does not go through
    :meth:`track` ends the tracked count, so :meth:`state_dict` then needs
    ``consumed`` again.
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: Optional[int] = None,
        rank: Optional[int] = None,
        shuffle: Union[bool, str] = True,
        seed: int = 0,
        drop_last: bool = False,
        blocks: Optional[Sequence[int]] = None,
        window: Optional[int] = None,
    ) -> None:
        # No Sampler.__init__: it does nothing, and newer torch warns that its
        # argument is unused (DistributedSampler does not call it either).
        if num_replicas is None or rank is None:
            group_rank, group_size = _process_group()
            num_replicas = group_size if num_replicas is None else num_replicas
            rank = group_rank if rank is None else rank
        num_replicas = _as_int(num_replicas, "num_replicas", 1)
        rank = _as_int(rank, "rank")
        if rank >= num_replicas:
            raise ValueError(f"rank {rank} is not in a world of {num_replicas} replicas")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.shuffle = _as_shuffle(shuffle)
        self.seed = _as_int(seed, "seed")
        self.drop_last = bool(drop_last)
        self.window = None if window is None else _as_int(window, "window", 1)
        self._blocks_argument = blocks
        self._blocks: Optional[Tuple[int, np.ndarray]] = None  # (length, first positions)
        self.epoch = 0
        self._start = 0  # the items of the epoch consumed before the current iteration
        # shuffle="blocks": (world size, samples per rank) of each earlier run of the epoch
        self._segments: Tuple[Tuple[int, int], ...] = ()
        self._remaining_key: Optional[Tuple[Any, ...]] = None
        self._remaining_list = np.empty(0, np.int64)
        self._handed = 0  # indices handed out by the current iteration
        self._tracked: Optional[_TrackedRun] = None
        self._order_key: Optional[Tuple[int, int, int, bool]] = None
        self._order = np.empty(0, np.int64)
        # After load_state_dict(grow="next_epoch") on a grown dataset: (the
        # saved epoch, its items), the leading items it finishes over.
        self._grown: Optional[Tuple[int, int]] = None

    # -- the order and the plan of an iteration ---------------------------------

    def _length(self) -> int:
        """The items of the current epoch: the dataset's, or those of a saved
        epoch being finished after the dataset grew."""
        n = len(self.dataset)
        if self._grown is None or self._grown[0] != self.epoch:
            return n
        counted = self._grown[1]
        if n < counted:
            raise ValueError(
                f"VideoSampler: the dataset has {n} items, fewer than the {counted} the saved "
                f"epoch {self.epoch} counts over"
            )
        return counted

    def epoch_order(self) -> np.ndarray:
        """The global order of the current epoch: a permutation of ``range(len(dataset))``.

        The same on every rank and for every world size; read-only (it is cached).
        With ``shuffle="blocks"`` it is the base order that runs deal out in
        sections (blocks in a random order, each shuffled within).
        """
        n = self._length()
        blocked = self.shuffle == "blocks"
        starts = self.order_blocks() if blocked else None
        key = (n, self.seed, self.epoch, self.shuffle, self._digest() if blocked else None)
        if self._order_key != key:
            dtype = np.int32 if n < 2**31 else np.int64
            if blocked:
                assert starts is not None
                order = self._base_order(n, starts, dtype)
            else:
                order = np.arange(n, dtype=dtype)
                if self.shuffle:
                    # Shuffling in place gives the same permutation as
                    # Generator.permutation(n), in half the memory and time.
                    np.random.default_rng([self.seed, self.epoch]).shuffle(order)
            order.flags.writeable = False
            self._order, self._order_key = order, key
        return self._order

    def _base_order(self, n: int, starts: np.ndarray, dtype: Any) -> np.ndarray:
        """The blocks in a random order, the items of each shuffled."""
        rng = np.random.default_rng([self.seed, self.epoch])
        sizes = np.diff(np.append(starts, n))
        perm = rng.permutation(len(starts))
        placed = sizes[perm]
        ends = np.cumsum(placed)
        begins = ends - placed
        # Item i of the output lies in the block placed at `begins`; it is
        # that block's item (i - begin), so add (block start - begin).
        order = np.arange(n, dtype=dtype)
        order += np.repeat((starts[perm] - begins).astype(dtype), placed)
        for begin, end in zip(begins.tolist(), ends.tolist()):
            rng.shuffle(order[begin:end])
        return order

    # -- shuffle="blocks": blocks, sections and the remaining list ----------------

    def order_blocks(self) -> np.ndarray:
        """The first item index of each block that ``shuffle="blocks"`` keeps together.

        ``blocks=`` if given, else the dataset's ``order_blocks()``, else
        blocks of 2048 items; checked (ascending from 0, within the dataset).
        """
        n = self._length()
        if self._blocks is None or self._blocks[0] != n:
            whole = len(self.dataset)  # more than n while a saved epoch finishes after growth
            if self._blocks_argument is not None:
                starts = _block_starts(self._blocks_argument, whole, "blocks")
            else:
                provider = getattr(self.dataset, "order_blocks", None)
                if callable(provider):
                    starts = _block_starts(provider(), whole, "the dataset's order_blocks()")
                else:
                    starts = np.arange(0, whole, DEFAULT_BLOCK, dtype=np.int64)
            # Appends add blocks after the counted items (and may extend the
            # last one): the blocks of the first n items are those that start
            # before n.
            self._blocks = (n, starts[starts < n])
        return self._blocks[1]

    def _digest(self) -> int:
        return _blocks_digest(self.order_blocks())

    def _window(self) -> int:
        if self.window is not None:
            return self.window
        n, count = self._length(), len(self.order_blocks())
        return max(1, _WINDOW_BLOCKS * math.ceil(n / count)) if count else 1

    def _shuffled_section(
        self, remaining: np.ndarray, segment: int, world: int, rank: int
    ) -> np.ndarray:
        """Rank `rank`'s section of `remaining` in run `segment`, shuffled within windows."""
        start, size = _section(len(remaining), world, rank)
        section = remaining[start : start + size].copy()
        rng = np.random.default_rng([self.seed, self.epoch, segment + 1, world, rank])
        window = self._window()
        for begin in range(0, size, window):
            rng.shuffle(section[begin : begin + window])
        return section

    def _remaining_items(self) -> np.ndarray:
        """shuffle="blocks": the list the current run deals out (the epoch's base
        order less what the earlier runs of `_segments` consumed); cached, read-only."""
        order = self.epoch_order()
        key = (self._order_key, self._segments, self._window())
        if self._remaining_key != key:
            items = order
            for segment, (world, per_rank) in enumerate(self._segments):
                remaining = len(items)
                if per_rank > math.ceil(remaining / world):
                    raise ValueError(
                        f"VideoSampler state: run {segment} of the epoch says each of its "
                        f"{world} ranks consumed {per_rank} samples, more than the "
                        f"{math.ceil(remaining / world)} each had"
                    )
                parts = []
                for rank in range(world):
                    size = _section(remaining, world, rank)[1]
                    if per_rank < size:
                        parts.append(self._shuffled_section(items, segment, world, rank)[per_rank:])
                items = np.concatenate(parts) if parts else order[:0]
            items.flags.writeable = False
            self._remaining_list, self._remaining_key = items, key
        return self._remaining_list

    def _remaining(self, n: int) -> int:
        if self._start > n:
            raise ValueError(
                f"VideoSampler: the dataset has {n} items, fewer than the "
                f"{self._start} the loaded state says were consumed"
            )
        return n - self._start

    def _per_rank(self, remaining: int) -> int:
        if self.drop_last:
            return remaining // self.num_replicas
        return math.ceil(remaining / self.num_replicas)

    def __len__(self) -> int:
        return self._per_rank(self._remaining(self._length()))

    def __iter__(self) -> Iterator[int]:
        # Through the dataset's read-ahead when it has one
        # (VideoDataset(prefetch_batches=K)): it reads the order ahead.
        read_ahead = getattr(self.dataset, "read_ahead", None)
        indices = self._indices()
        return read_ahead(indices) if callable(read_ahead) else indices

    def _indices(self) -> Iterator[int]:
        # A generator: nothing happens until the first index is asked for, so
        # an iterator a DataLoader makes and drops unstarted changes nothing.
        order = self.epoch_order()
        start = self._start
        remaining = self._remaining(len(order))
        count = self._per_rank(remaining)
        self._handed = 0
        run = self._tracked
        if run is not None:
            if run.claimed:
                self._tracked = None  # a new iteration, not the tracked one
            else:
                run.claimed = True
        if self.shuffle == "blocks":
            yield from self._iter_section(count)
            return
        for first in range(0, count, _CHUNK):
            j = np.arange(first, min(first + _CHUNK, count), dtype=np.int64)
            # Element rank + j*W of the remaining list, padded by wrapping round.
            positions = start + (self.rank + self.num_replicas * j) % remaining
            for index in order[positions].tolist():
                self._handed += 1
                yield index

    def _iter_section(self, count: int) -> Iterator[int]:
        """shuffle="blocks": this rank's `count` samples, its shuffled section."""
        if count == 0:
            return
        items = self._remaining_items()
        segment = len(self._segments)
        section = self._shuffled_section(items, segment, self.num_replicas, self.rank)
        if len(section) < count:  # one short: repeat a sample of the rank's own blocks
            start = _section(len(items), self.num_replicas, self.rank)[0]
            pad = section[:1] if len(section) else items[start % len(items) :][:1]
            section = np.concatenate([section, pad])
        for first in range(0, count, _CHUNK):
            for index in section[first : min(first + _CHUNK, count)].tolist():
                self._handed += 1
                yield index

    # -- epochs and state ---------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch of the next iteration (call it every epoch, before iterating).

        The same epoch as the current one keeps the position (so that, after
        :meth:`load_state_dict`, the saved epoch resumes where it stopped);
        another epoch starts at its beginning.
        """
        epoch = _as_int(epoch, "epoch")
        if epoch != self.epoch:
            self.epoch = epoch
            self._grown = None  # a saved epoch finished over its items; the next counts all
            self._reset_position(0)

    def _reset_position(self, start: int, segments: Tuple[Tuple[int, int], ...] = ()) -> None:
        self._start = start
        self._segments = segments
        self._handed = 0
        self._tracked = None

    def track(self, loader: torch.utils.data.DataLoader) -> "TrackedLoader":
        """``loader``, counting the batches it yields to the loop, for :meth:`state_dict`.

        ``loader`` must be a DataLoader built with ``sampler=`` this sampler and
        a ``batch_size`` (or ``batch_size=None``, one sample per item). Iterate
        the result instead of the loader; it yields the same batches.

        Raises:
            ValueError: the loader does not draw from this sampler, or batches
                with a ``batch_sampler`` of its own (pass ``consumed`` to
                :meth:`state_dict` then).
        """
        read_ahead = getattr(self.dataset, "_read_ahead", None)
        if read_ahead is not None:
            if getattr(loader, "batch_size", None):
                read_ahead.learn_batch_size(loader.batch_size)  # its window counts batches
            # Who reads the items: this process, or the loader's workers.
            read_ahead.learn_workers(int(getattr(loader, "num_workers", 0) or 0))
        return TrackedLoader(self, loader)

    def _consumed_position(
        self, consumed: Optional[int]
    ) -> Tuple[int, Tuple[Tuple[int, int], ...]]:
        """(items of the epoch consumed, the segments of shuffle="blocks") after
        this rank's loop took `consumed` samples of the current iteration."""
        n = self._length()
        remaining = self._remaining(n)
        count = self._per_rank(remaining)
        if consumed is None:
            run = self._tracked
            if run is not None:
                if run.complete:
                    return n, ()
                consumed = min(run.batches * run.batch_size, count)
            elif self._handed == 0:
                consumed = 0
            else:
                raise RuntimeError(
                    f"VideoSampler.state_dict: {self._handed} indices were handed out in this "
                    "epoch, but a DataLoader prefetches them ahead of the training loop, so "
                    "that is not what the loop consumed. Iterate through sampler.track(loader), "
                    "or pass state_dict(consumed=<samples this rank's loop has taken since the "
                    "iteration began>)"
                )
        else:
            consumed = _as_int(consumed, "consumed")
            if consumed > count:
                raise ValueError(
                    f"VideoSampler.state_dict: consumed={consumed} is more than the {count} "
                    f"samples rank {self.rank} yields in this iteration"
                )
        if count > 0 and consumed == count:
            return n, ()  # the epoch is over, including any tail drop_last dropped
        if self.shuffle != "blocks":
            return min(self._start + consumed * self.num_replicas, n), ()
        if consumed == 0:
            return self._start, self._segments
        taken = _taken_in_segment(remaining, self.num_replicas, consumed)
        return self._start + taken, self._segments + ((self.num_replicas, consumed),)

    def state_dict(self, consumed: Optional[int] = None) -> Dict[str, Any]:
        """The world's position in the epoch, for :meth:`load_state_dict`: a dict of JSON values.

        Args:
            consumed: the samples this rank's training loop has taken since the
                current iteration began (after a resume: since the resume
                point). Default: the count of :meth:`track`, or 0 when no index
                has been handed out yet.

        Keys (version 3): ``version``, ``epoch``, ``seed``, ``shuffle``,
        ``dataset_length`` (the items of the epoch), ``consumed`` (samples of
        the epoch's order consumed by all ranks together), ``num_replicas``
        (the world size that saved it, for information) and ``dataset``: what
        the epoch counts over, ``{"uuid", "length", "ids_digest"}`` (the
        dataset's UUID and the engine's digest of the ids of items
        ``[0, length)``, :meth:`gulpdb.Dataset.ids_digest`), or None for a
        dataset that cannot name its items (a ``Subset``, a list). With
        ``shuffle="blocks"`` also ``segments`` (a list of ``[world size,
        samples per rank]``, one per run of the epoch that stopped
        mid-epoch), ``blocks`` (the number of blocks), ``blocks_digest`` (a
        CRC-32 of their first positions) and ``window``. Every rank returns
        the same state.

        Raises:
            RuntimeError: indices were handed out, and neither ``consumed`` nor
                :meth:`track` says how many the loop took.
            ValueError: ``consumed`` is more than this rank yields.
        """
        position, segments = self._consumed_position(consumed)
        n = self._length()
        identity = _sampler_state.identity_of(self.dataset, n)
        state = {
            "version": _sampler_state.STATE_VERSION,
            "epoch": self.epoch,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "dataset_length": n,
            "consumed": position,
            "num_replicas": self.num_replicas,
            "dataset": None if identity is None else identity.to_json(),
        }
        if self.shuffle == "blocks":
            state.update(
                segments=[[world, per_rank] for world, per_rank in segments],
                blocks=len(self.order_blocks()),
                blocks_digest=self._digest(),
                window=self._window(),
            )
        return state

    def load_state_dict(self, state: Dict[str, Any], grow: Optional[str] = None) -> None:
        """Moves to the position of ``state`` (from :meth:`state_dict` of any rank, any world size).

        Sets the epoch, seed and shuffle of the state; the next iteration
        yields this rank's share of what the saved world had not consumed.

        Args:
            state: a state of any version (1 to 3).
            grow: ``"next_epoch"`` to resume on a dataset that has grown by
                appends since the state was saved: the saved epoch finishes
                over the items it counted (the same order, the same items),
                and the next epoch counts every item. Needs a state of
                version 3 and a dataset that names its items (see
                :meth:`state_dict`). None (default): the dataset must hold
                exactly what the state counted.

        Raises:
            ValueError: the state is malformed or of an unknown version; it was
                saved on another dataset (UUID), or on items that were removed,
                replaced or reordered since (ids digest); the dataset grew and
                ``grow`` is None; the dataset has another number of items and
                the state or the dataset names nothing; ``grow`` is another
                string.
            TypeError: a field, or ``grow``, has the wrong type.
        """
        grow = _sampler_state.as_grow(grow)
        saved = _sampler_state.read_state(state)
        grown = _sampler_state.check_dataset(saved, self.dataset, grow)
        before = (self.epoch, self.seed, self.shuffle, self.window, self._grown, self._start,
                  self._segments)
        self.epoch, self.seed, self.shuffle = saved.epoch, saved.seed, saved.shuffle
        self._grown = (saved.epoch, saved.length) if grown else None
        if saved.shuffle == "blocks":
            self.window = saved.window
        self._reset_position(saved.consumed, saved.segments)
        try:
            if saved.shuffle == "blocks":
                self._check_blocks(saved, state)
        except ValueError:
            self.epoch, self.seed, self.shuffle, self.window, self._grown = before[:5]
            self._reset_position(before[5], before[6])
            raise

    def _check_blocks(self, saved: "_sampler_state.SavedState", state: Dict[str, Any]) -> None:
        """shuffle="blocks": the loaded state's block layout is this sampler's,
        and its segments leave what it says was left."""
        starts = self.order_blocks()
        if (saved.blocks, saved.blocks_digest) != (len(starts), _blocks_digest(starts)):
            raise ValueError(
                f"VideoSampler state was counted over {saved.blocks} blocks of the order (digest "
                f"{saved.blocks_digest}), but this sampler's are {len(starts)} (digest "
                f"{_blocks_digest(starts)}): resume on a dataset stored the same way, or pass "
                "blocks= with the first positions of the blocks the state was counted over"
            )
        n = saved.length
        if saved.consumed < n:
            left = len(self._remaining_items())
            if left != n - saved.consumed:
                raise ValueError(
                    f"VideoSampler state: its segments {state['segments']!r} leave {left} "
                    f"items of the epoch, but it says {n - saved.consumed} are left (they do not "
                    "leave what it consumed)"
                )

    def __repr__(self) -> str:
        n = self._length()
        grown = "" if n == len(self.dataset) else f" (the saved epoch's; {len(self.dataset)} now)"
        return (
            f"<gulpdb.torch.VideoSampler rank {self.rank} of {self.num_replicas}: "
            f"epoch {self.epoch}, from {self._start} of {n}{grown}, "
            f"shuffle={self.shuffle!r}, seed={self.seed}, drop_last={self.drop_last}>"
        )


class _TrackedRun:
    """The count of one iteration of a :class:`TrackedLoader`."""

    def __init__(self, batch_size: int) -> None:
        self.batch_size = batch_size
        self.batches = 0
        self.complete = False
        self.claimed = False  # its DataLoader has started iterating the sampler


class TrackedLoader:
    """A DataLoader that tells its :class:`VideoSampler` how many batches the loop took.

    Made by :meth:`VideoSampler.track`. Iterating it iterates the DataLoader
    and yields its batches unchanged; a batch counts as consumed when it is
    yielded, and running to the end completes the epoch.
    """

    def __init__(self, sampler: VideoSampler, loader: torch.utils.data.DataLoader) -> None:
        if not isinstance(loader, torch.utils.data.DataLoader):
            raise TypeError(f"track() needs a DataLoader, not {type(loader).__name__}")
        if loader.sampler is not sampler:
            raise ValueError("track(): the DataLoader was not built with sampler=this VideoSampler")
        if loader.batch_sampler is not None and loader.batch_size is None:
            raise ValueError(
                "track(): the DataLoader has a batch_sampler of its own, so the samples in "
                "a batch are unknown; pass state_dict(consumed=...) instead"
            )
        self.sampler = sampler
        self.loader = loader

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Any]:
        batch_size = self.loader.batch_size if self.loader.batch_sampler is not None else 1
        run = _TrackedRun(int(batch_size))
        self.sampler._tracked = run
        for batch in self.loader:
            run.batches += 1
            yield batch
        run.complete = True

    def __repr__(self) -> str:
        return f"<gulpdb.torch.TrackedLoader of {self.sampler!r}>"
