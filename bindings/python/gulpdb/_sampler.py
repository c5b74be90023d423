"""VideoSampler: a distributed sampler whose position survives a change of world size.

The state is one integer per epoch, the number of leading elements of the
epoch's global order that all ranks together have consumed, so a run stopped
with W ranks resumes with any W' ranks (and again with W'', and so on), each
sample of the epoch taken exactly once. The class docstring gives the rules;
``docs/training.md`` shows it in a DDP training loop.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterator, Optional, Sized, Tuple

import numpy as np
import torch
import torch.distributed
import torch.utils.data

__all__ = ["VideoSampler", "TrackedLoader"]

_STATE_VERSION = 1
_STATE_KEYS = ("version", "epoch", "seed", "shuffle", "dataset_length", "consumed")

# Indices are turned into Python ints this many at a time, so that the first
# batch of an epoch of 10^6 items does not wait for a list of 10^6 ints.
_CHUNK = 4096


def _process_group() -> Tuple[int, int]:
    """(rank, world size) of the initialised process group, else (0, 1)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _as_int(value: Any, name: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, not {value}")
    return int(value)


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
        shuffle: a new order every epoch; otherwise the natural order.
        seed: seeds the shuffle (an int >= 0, the same on every rank).
        drop_last: drop the tail that does not divide evenly between the
            ranks, instead of padding it with repeats.

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
    (the saved position only means something in the saved order), and a
    dataset of another length is refused with :class:`ValueError`.

    **Cost.** The order of an epoch is one NumPy array, 4 bytes per item
    (8 from 2^31 items), computed at the first index of an epoch in each
    rank's main process (about 10 ms for 10^6 items); indices become Python
    ints a few thousand at a time. A resume costs what starting an epoch costs
    (``bench/sampler_bench.py``). After a resume ``len()``, and so the
    DataLoader's, counts only what is left.

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
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
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
        self.shuffle = bool(shuffle)
        self.seed = _as_int(seed, "seed")
        self.drop_last = bool(drop_last)
        self.epoch = 0
        self._start = 0  # the position the current iteration of the epoch starts from
        self._handed = 0  # indices handed out by the current iteration
        self._tracked: Optional[_TrackedRun] = None
        self._order_key: Optional[Tuple[int, int, int, bool]] = None
        self._order = np.empty(0, np.int64)

    # -- the order and the plan of an iteration ---------------------------------

    def _length(self) -> int:
        return len(self.dataset)

    def epoch_order(self) -> np.ndarray:
        """The global order of the current epoch: a permutation of ``range(len(dataset))``.

        The same on every rank and for every world size; read-only (it is cached).
        """
        n = self._length()
        key = (n, self.seed, self.epoch, self.shuffle)
        if self._order_key != key:
            dtype = np.int32 if n < 2**31 else np.int64
            order = np.arange(n, dtype=dtype)
            if self.shuffle:
                # Shuffling in place gives the same permutation as
                # Generator.permutation(n), in half the memory and time.
                np.random.default_rng([self.seed, self.epoch]).shuffle(order)
            order.flags.writeable = False
            self._order, self._order_key = order, key
        return self._order

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
        for first in range(0, count, _CHUNK):
            j = np.arange(first, min(first + _CHUNK, count), dtype=np.int64)
            # Element rank + j*W of the remaining list, padded by wrapping round.
            positions = start + (self.rank + self.num_replicas * j) % remaining
            for index in order[positions].tolist():
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
            self._reset_position(0)

    def _reset_position(self, start: int) -> None:
        self._start = start
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
        return TrackedLoader(self, loader)

    def _consumed_position(self, consumed: Optional[int]) -> int:
        n = self._length()
        count = self._per_rank(self._remaining(n))
        if consumed is None:
            run = self._tracked
            if run is not None:
                if run.complete:
                    return n
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
            return n  # the epoch is over, including any tail drop_last dropped
        return min(self._start + consumed * self.num_replicas, n)

    def state_dict(self, consumed: Optional[int] = None) -> Dict[str, Any]:
        """The world's position in the epoch, for :meth:`load_state_dict`: a dict of ints and bools.

        Args:
            consumed: the samples this rank's training loop has taken since the
                current iteration began (after a resume: since the resume
                point). Default: the count of :meth:`track`, or 0 when no index
                has been handed out yet.

        Keys: ``version``, ``epoch``, ``seed``, ``shuffle``, ``dataset_length``,
        ``consumed`` (samples of the epoch's order consumed by all ranks
        together) and ``num_replicas`` (the world size that saved it, for
        information). Every rank returns the same state.

        Raises:
            RuntimeError: indices were handed out, and neither ``consumed`` nor
                :meth:`track` says how many the loop took.
            ValueError: ``consumed`` is more than this rank yields.
        """
        position = self._consumed_position(consumed)
        return {
            "version": _STATE_VERSION,
            "epoch": self.epoch,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "dataset_length": self._length(),
            "consumed": position,
            "num_replicas": self.num_replicas,
        }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Moves to the position of ``state`` (from :meth:`state_dict` of any rank, any world size).

        Sets the epoch, seed and shuffle of the state; the next iteration
        yields this rank's share of what the saved world had not consumed.

        Raises:
            ValueError: the state is malformed, of another version, or for a
                dataset of another length.
            TypeError: a field has the wrong type.
        """
        if not isinstance(state, dict):
            raise TypeError(f"VideoSampler state must be a dict, not {type(state).__name__}")
        missing = [k for k in _STATE_KEYS if k not in state]
        if missing:
            raise ValueError(f"VideoSampler state lacks {', '.join(missing)}")
        if state["version"] != _STATE_VERSION:
            raise ValueError(
                f"VideoSampler state has version {state['version']!r}; this gulpdb reads "
                f"version {_STATE_VERSION}"
            )
        if not isinstance(state["shuffle"], (bool, np.bool_)):
            raise TypeError(f"shuffle must be a bool, not {type(state['shuffle']).__name__}")
        length = _as_int(state["dataset_length"], "dataset_length")
        consumed = _as_int(state["consumed"], "consumed")
        epoch = _as_int(state["epoch"], "epoch")
        seed = _as_int(state["seed"], "seed")
        n = self._length()
        if length != n:
            raise ValueError(
                f"VideoSampler state is for a dataset of {length} items, but this dataset "
                f"has {n}: resume with the same dataset (and the same Subset of it)"
            )
        if consumed > length:
            raise ValueError(f"VideoSampler state consumed {consumed} of only {length} items")
        self.epoch = epoch
        self.seed = seed
        self.shuffle = bool(state["shuffle"])
        self._reset_position(consumed)

    def __repr__(self) -> str:
        return (
            f"<gulpdb.torch.VideoSampler rank {self.rank} of {self.num_replicas}: "
            f"epoch {self.epoch}, from {self._start} of {self._length()}, "
            f"shuffle={self.shuffle}, seed={self.seed}, drop_last={self.drop_last}>"
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
