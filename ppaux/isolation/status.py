"""How a child process ended and where it was, in words: exit statuses, signal names, and the
frames of a faulthandler dump or a live stack, cut to the code under test."""

from __future__ import annotations

import linecache
import os
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType

# Frames of this package end the stack a finding shows: what lies above them is ppaux's own.
_HERE = os.path.dirname(os.path.abspath(__file__))
_DUMP_FRAME = re.compile(r'^\s*File "(?P<path>.*)", line (?P<line>\d+) in (?P<function>\S+)')


def signal_name(number: int) -> str:
    """``SIGSEGV (signal 11)``; a number Python has no name for (Linux's real-time signals between
    SIGRTMIN and SIGRTMAX) reads ``signal 40``."""
    try:
        return f"{signal.Signals(number).name} (signal {number})"
    except ValueError:
        return f"signal {number}"


def describe_exitcode(code: int) -> str:
    """An exit code as :mod:`multiprocessing` and :mod:`subprocess` give it (negative: the signal)."""
    if code < 0:
        return f"killed the process with {signal_name(-code)}"
    return f"ended the process with exit status {code}"


def describe_status(status: int) -> str:
    """A status as :func:`os.waitpid` gives it."""
    return describe_exitcode(os.waitstatus_to_exitcode(status))


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str

    def render(self) -> str:
        source = linecache.getline(self.path, self.line).strip()
        head = f'  File "{self.path}", line {self.line}, in {self.function}'
        return head + (f"\n    {source}" if source else "")


def frames_of(frame: FrameType | None) -> list[Frame]:
    """A live stack, innermost frame first."""
    out = []
    while frame is not None:
        out.append(Frame(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return out


def frames_in_dump(text: str) -> list[Frame]:
    """The frames of the thread a faulthandler dump shows first that ran code under a guard
    (any thread with frames, failing that), innermost first, as faulthandler lists them."""
    threads: list[list[Frame]] = []
    for line in text.splitlines():
        if "(most recent call first)" in line:
            threads.append([])
            continue
        match = _DUMP_FRAME.match(line)
        if match and threads:
            threads[-1].append(Frame(match["path"], int(match["line"]), match["function"]))
    guarded = [t for t in threads if any(_ours(f) for f in t)]
    candidates = guarded or [t for t in threads if t]
    return candidates[0] if candidates else []


def _ours(frame: Frame) -> bool:
    return os.path.dirname(os.path.abspath(frame.path)) == _HERE


def under_guard(frames: Sequence[Frame]) -> list[Frame]:
    """The innermost frames up to (not including) the first frame of this package: the code under test."""
    out = []
    for frame in frames:
        if _ours(frame):
            break
        out.append(frame)
    return out


def render(frames: Sequence[Frame]) -> str:
    """Outermost first, as a traceback reads."""
    return "\n".join(f.render() for f in reversed(frames))
