"""Read-ahead from a sampler's order (``VideoDataset(..., prefetch_batches=K)``).

:class:`gulpdb.torch.VideoSampler` hands its indices through the dataset's
:meth:`ReadAhead.wrap` when the dataset has one: the wrapper keeps the next
``K`` batches of indices in hand and, a batch at a time, asks
:meth:`gulpdb.Dataset.prefetch` for the frames those items will read, so the
bytes are on their way (into the node's frame cache) while the loop works on
the batches before. ``docs/frame_cache.md`` ("Read-ahead") says what it buys
and what it costs.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Iterator, List, Tuple

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
    ) -> None:
        self.batches = batches
        self.batch_size = 0  # learnt from __getitems__ or VideoSampler.track; 0: unknown
        self._requests = requests
        self._prefetch = prefetch
        self.prefetched = 0  # items handed to prefetch so far (for tests and benchmarks)

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def learn_batch_size(self, size: int) -> None:
        if size > 0:
            self.batch_size = int(size)

    def _ask(self, indices: List[int]) -> None:
        if not indices:
            return
        try:
            self._prefetch(self._requests(indices))
            self.prefetched += len(indices)
        except Exception:  # noqa: BLE001 - the read of these items reports what is wrong
            pass

    def wrap(self, indices: Iterable[int]) -> Iterator[int]:
        """Yields `indices`, keeping ``batches`` batches of them ahead and
        prefetching each batch's items as it comes into the window."""
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
            yield ahead.popleft()
            for index in source:
                ahead.append(index)
                pending.append(index)
                break
            if len(pending) == batch or (pending and len(ahead) < window):
                self._ask(pending)
                pending = []
