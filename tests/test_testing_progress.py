"""How often a long run's progress line shows when its caller does not say: redrawn at most four
times a second on a terminal, a plain line every 10 s elsewhere (a fuzz run's or a mutation run's)."""

from __future__ import annotations

import io
import types

from ppaux.testing import progress as progress_module
from ppaux.testing.progress import Progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def at_times(monkeypatch, progress_of, times):
    """The stream after one update at each of ``times`` (seconds on a fake clock)."""
    clock = types.SimpleNamespace(now=100.0)
    clock.monotonic = lambda: clock.now
    monkeypatch.setattr(progress_module, "time", clock)
    stream, progress = progress_of()
    for n, now in enumerate(times, 1):
        clock.now = 100.0 + now
        progress.update(f"step {n}")
    return stream.getvalue()


def test_on_a_terminal_the_line_is_redrawn_four_times_a_second_by_default(monkeypatch):
    def on_a_terminal():
        tty = Tty()
        return tty, Progress(stream=tty)

    # A quarter of a second after the last redraw, exactly, is soon enough.
    drawn = at_times(monkeypatch, on_a_terminal, [0.0, 0.125, 0.25, 0.375, 0.5])
    assert drawn == "\r\x1b[Kstep 1\r\x1b[Kstep 3\r\x1b[Kstep 5"


def test_elsewhere_a_line_is_printed_every_ten_seconds_by_default(monkeypatch):
    def plain():
        stream = io.StringIO()
        return stream, Progress(stream=stream)

    assert at_times(monkeypatch, plain, [0.0, 9.5, 10.0, 19.0, 20.0]).splitlines() == ["step 1", "step 3", "step 5"]


def test_a_last_line_is_shown_when_nothing_was_printed_before_whatever_its_state():
    stream = io.StringIO()
    Progress(stream=stream).finish("no mutants", state="")
    assert stream.getvalue() == "no mutants\n"
