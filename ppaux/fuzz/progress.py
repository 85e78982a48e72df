"""What a fuzz run shows while it runs: one redrawn line on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import time
from typing import TextIO

from ppaux.fuzz.options import format_duration


class Progress:
    def __init__(self, stream: TextIO, budget: float, *, every: float = 10.0, tty: bool | None = None) -> None:
        self.stream = stream
        self.budget = budget
        self.every = every
        self.tty = stream.isatty() if tty is None else tty
        self._last = float("-inf")
        self._drawn = False

    def line(self, elapsed: float, examples: int, failures: int, placement: str, round_no: int) -> str:
        rate = examples / elapsed if elapsed > 0 else 0.0
        return (f"fuzz {format_duration(elapsed)}/{format_duration(self.budget)}  round {round_no} ({placement})  "
                f"examples {examples:,}  {rate:,.0f}/s  failures {failures}")

    def update(self, elapsed: float, examples: int, failures: int, placement: str, round_no: int) -> None:
        now = time.monotonic()
        if self.tty:
            if now - self._last >= 0.25:
                self.stream.write("\r\x1b[K" + self.line(elapsed, examples, failures, placement, round_no))
                self.stream.flush()
                self._last, self._drawn = now, True
        elif now - self._last >= self.every:
            self.say(self.line(elapsed, examples, failures, placement, round_no))
            self._last = now

    def say(self, text: str) -> None:
        """A line of its own (a note, a new failure), without breaking the redrawn line."""
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self._drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self, elapsed: float, examples: int, failures: int, placement: str, round_no: int) -> None:
        self._last = float("-inf")
        if self.tty:
            self.update(elapsed, examples, failures, placement, round_no)
            self.stream.write("\n")
            self._drawn = False
        else:
            self.update(elapsed, examples, failures, placement, round_no)
        self.stream.flush()
