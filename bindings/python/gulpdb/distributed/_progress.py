"""The driver's progress bar on stderr, drawn as `gulpdb ingest` draws its own:
a redrawn bar with rate and ETA on a terminal, a plain line every few seconds
otherwise, nothing when quiet."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


class ProgressBar:
    """Videos handled out of the videos to handle, over all partitions."""

    def __init__(
        self, label: str, total: int, quiet: bool = False, stream: Optional[TextIO] = None
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.last_draw = self.start
        self.first = 0  # done when the bar started (a resumed job): not counted in the rate
        self.finished = False

    def begin(self, done: int) -> None:
        """Sets the amount already done when the run starts."""
        self.done = self.first = done

    def update(self, done: int) -> None:
        self.done = max(self.done, min(done, self.total))
        now = time.monotonic()
        if now - self.last_draw >= (0.1 if self.tty else 5.0):
            self.last_draw = now
            self._draw(False)

    def line(self, text: str) -> None:
        """Prints a line of its own, clearing the bar first on a terminal."""
        self.stream.write(("\r\033[K" if self.tty and not self.quiet else "") + text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if not self.finished:
            self.finished = True
            self._draw(True)

    def _draw(self, final: bool) -> None:
        if self.quiet:
            return
        seconds = time.monotonic() - self.start
        rate = (self.done - self.first) / seconds if seconds > 0 else 0.0
        left = self.total - self.done
        eta = left / rate if rate > 0 and left > 0 else 0.0
        if self.tty:
            width = 30
            filled = width if self.total == 0 else int(width * self.done / self.total)
            bar = "#" * filled + "." * (width - filled)
            self.stream.write(
                f"\r{self.label} [{bar}] {self.done}/{self.total}  {rate:.1f}/s  ETA {eta:.0f}s "
            )
            if final:
                self.stream.write("\n")
        else:
            self.stream.write(
                f"{self.label}: {self.done}/{self.total} ({rate:.1f}/s, ETA {eta:.0f}s)\n"
            )
        self.stream.flush()
