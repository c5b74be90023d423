"""Read-ahead from a sampler's order (``VideoDataset(..., prefetch_batches=K)``).

:class:`gulpdb.torch.VideoSampler` hands its indices through the dataset's
:meth:`ReadAhead.wrap` when the dataset has one: the wrapper keeps the next
``K`` batches of indices in hand and, a batch at a time, asks
:meth:`gulpdb.Dataset.prefetch` for the frames those items will read, so the
bytes are on their way (into the node's frame cache) while the loop works on
the batches before. ``docs/frame_cache.md`` ("Read-ahead") says what it buys
and what it costs.

The sampler runs in the process that iterates the DataLoader; its workers
read the items. Through the node's frame cache every process finds what this
one fetched. With the cache off, what this process fetches stays in its own
memory: read-ahead then runs only while this process reads the items itself
(``num_workers=0``, known from ``VideoSampler.track(loader)`` or from an item
read here), never for workers, which would fetch every byte a second time.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple

# Items per batch when the batch size is not known in this process.
DEFAULT_BATCH = 32


class ReadAhead:
    """The read-ahead of one dataset: `requests(indices)` turns item indices
    into ``(id, frames)`` requests, `prefetch(requests)` starts fetching them."""

    def __init__(
        self,
        batches: int,
        requests: Callable[[List[int]], List[Tuple[Any, Any]]],
        prefetch: Callable[[List[Tuple[Any, Any]]], None],
        shared: bool = True,
    ) -> None:
        self.batches = batches
        self.batch_size = 0  # learnt from __getitems__ or VideoSampler.track; 0: unknown
        self._requests = requests
        self._prefetch = prefetch
        # Whether what is fetched reaches every process (the node's cache),
        # else only this one's memory.
        self.shared = shared
        # Whether the items are read in this process: None unknown (then
        # learnt from a read here), False under a DataLoader's workers.
        self.reads_here: Optional[bool] = None
        self.prefetched = 0  # items handed to prefetch so far (for tests and benchmarks)
        self.calls = 0  # prefetch calls made so far
        self.skipped = 0  # items not prefetched: the cache is off and others read them

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def learn_batch_size(self, size: int) -> None:
        if size > 0:
            self.batch_size = int(size)

    def learn_workers(self, workers: int) -> None:
        """The DataLoader's ``num_workers``: with none, this process reads."""
        self.reads_here = workers == 0

    def note_read(self) -> None:
        """An item was read in this process."""
        if self.reads_here is None:
            self.reads_here = True

    def _ask(self, indices: List[int]) -> None:
        if not indices:
            return
        if not self.shared and not self.reads_here:
            self.skipped += len(indices)
            return
        try:
            self._prefetch(self._requests(indices))
            self.prefetched += len(indices)
            self.calls += 1
        except Exception:  # noqa: BLE001 - the read of these items reports what is wrong
            pass

    def wrap(self, indices: Iterable[int]) -> Iterator[int]:
        """Yields `indices`, keeping ``batches`` batches of them beyond the
        last one handed out, and prefetching each batch's items as it comes
        into the window."""
        batch = self.batch_size or DEFAULT_BATCH
        window = self.batches * batch
        source = iter(indices)
        ahead: deque = deque()
        pending: List[int] = []
        for index in source:
            ahead.append(index)
            pending.append(index)
            if len(pending) == batch:
                self._ask(pending)
                pending = []
            if len(ahead) >= window:
                break
        self._ask(pending)
        pending = []
        while ahead:
            # The window is topped up before an index is handed out, not
            # after: when the loop has batch i, batches i+1..i+K are asked
            # for (topped up after, batch i+K would wait for batch i+1's
            # first index).
            handed = ahead.popleft()
            for index in source:
                ahead.append(index)
                pending.append(index)
                break
            if len(pending) == batch or (pending and len(ahead) < window):
                self._ask(pending)
                pending = []
            yield handed
