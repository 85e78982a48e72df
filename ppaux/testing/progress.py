"""The progress line of a long run (a fuzz run, a mutation run): one redrawn line on a terminal,
plain periodic lines otherwise. What the line says is the caller's; when and how it shows is here."""

from __future__ import annotations

import sys
import time
from collections.abc import Hashable
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Shows a run's state on ``stream`` (default stderr). On a terminal :meth:`update` redraws one
    line in place, at most every ``redraw`` seconds; elsewhere it prints a line at most every
    ``every`` seconds. :meth:`say` prints a line of its own without breaking the drawn one;
    :meth:`finish` shows the last state and ends the line. ``started``: when the run began."""

    def __init__(
        self, stream: TextIO | None = None, *, every: float = 10.0, redraw: float = 0.25, tty: bool | None = None
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.every = every
        self.redraw = redraw
        self.tty = self.stream.isatty() if tty is None else tty
        self.started = time.monotonic()
        self._last = float("-inf")
        self._drawn = False
        self._printed: Hashable = None

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def update(self, text: str, *, state: Hashable = None) -> None:
        """``text`` as the run's line, if it is due. ``state``: what the line reports beside the
        clock (see :meth:`finish`)."""
        now = time.monotonic()
        if self.tty:
            if now - self._last >= self.redraw:
                self.stream.write("\r\x1b[K" + text)
                self.stream.flush()
                self._last, self._drawn = now, True
        elif now - self._last >= self.every:
            self.say(text)
            self._last, self._printed = now, state

    def finish(self, text: str, *, state: Hashable = None) -> None:
        """``text`` as the run's last line, shown now; on a plain stream not again when the line
        printed last reported the same ``state`` (``None``: always shown)."""
        if self.tty:
            self.stream.write("\r\x1b[K" + text + "\n")
            self._drawn = False
            self.stream.flush()
        elif state is None or state != self._printed:
            self.say(text)
        self._last, self._printed = float("-inf"), state

    def say(self, text: str) -> None:
        """A line of its own (a note, a new failure), without breaking the redrawn line."""
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self._drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()
