r"""Time limits on the calls into the code under test, and where each call runs.

In process (the default), a timer signal interrupts a call that runs past its limit where it is
stuck, a pure-Python loop or a wait: :class:`Hang` is raised there, with that stack. A call that
no signal handler can reach (native code, signals blocked) is left to the supervising parent,
which reads the call's deadline from memory shared across fork and kills the process; from then
on ``guard.isolated`` runs every call first in a forked child of its own (:func:`run_forked`): a
child that dies or hangs is raised as :class:`Crash` or :class:`Hang`, one that returns is run
again in process for its effects. Both findings subclass ``BaseException``, so that an implementation's
``except Exception`` cannot swallow them; a layer above gives a guard its own subclasses of them and
its own names for the calls (:attr:`Guard.hang`, :attr:`Guard.crash`, :meth:`Guard.name`): ppaux's
testing layer makes them pytest failures, which Hypothesis shrinks, named by the contract's calls.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import signal
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

from ppaux.isolation.clock import MONOTONIC, Clock
from ppaux.isolation.forked import ChildOutcome, can_fork, run_forked
from ppaux.isolation.status import Frame, frames_in_dump, frames_of, render, under_guard

DEFAULT_TIMEOUT = 10.0
# Once a call has hung, the calls after it (Hypothesis shrinking that hang) are judged against
# the slowest call of the same kind that completed: ADAPTIVE_FACTOR times it, never under
# ADAPTIVE_FLOOR s, never over the limit. Shrinking then pays a fraction of a second per
# candidate that hangs, not the whole limit; an input that is merely slow stays under it when
# calls like it have completed before.
ADAPTIVE_FACTOR = 10.0
ADAPTIVE_FLOOR = 0.1
# A supervising parent kills a process this long after its call's deadline: the timer signal
# gets the first chance, and a call that ignores it is killed.
KILL_GRACE = 1.0
# A call rehearsed in a forked child is killed this long after faulthandler wrote its stack.
REHEARSAL_GRACE = 0.1
# A process that runs no call for this long (a hang outside every guarded call: a strategy, the
# test's own code) is killed too: IDLE_FACTOR times the limit, at least IDLE_FLOOR s.
IDLE_FACTOR = 10.0
IDLE_FLOOR = 60.0
# After the first timer signal, it fires again this often until the call gives up: code that
# catches every exception cannot keep a call running.
_REFIRE = 0.1
_MARK = struct.Struct("<dd")


def parse_timeout(value: Any) -> float:  # Any: float() is tried on whatever was given
    """A per-call limit in seconds: a positive finite number (or its text). ``ValueError`` with
    the one-line reason otherwise."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"timeout {value!r} is not a number of seconds") from None
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"timeout {value!r} must be a positive number of seconds")
    return seconds


class Hang(BaseException):
    """A call into the code under test did not return within its limit. ``msg``: the message."""

    __module__ = "ppaux.isolation"

    def __init__(self, call: str, limit: float, why: str, stack: str) -> None:
        self.call, self.limit, self.why, self.stack = call, limit, why, stack
        text = f"{call} did not return within {limit:g} s ({why})"
        self.msg = text + (f"\nstuck at (most recent call last):\n{stack}" if stack else "")
        super().__init__(self.msg)


class Crash(BaseException):
    """A call into the code under test ended its process. ``msg``: the message."""

    __module__ = "ppaux.isolation"

    def __init__(self, call: str, how: str, stack: str) -> None:
        self.call, self.how, self.stack = call, how, stack
        text = f"{call} {how}"
        self.msg = text + (f"\nwhere (most recent call last):\n{stack}" if stack else "")
        super().__init__(self.msg)


@dataclass(frozen=True)
class Contained:
    """One contained run (:meth:`Guard.contain`): how it ended, what its work answered (``value``) and the
    error it reported in one line (``error``; ``None``: it passed)."""

    outcome: ChildOutcome
    value: Any  # Any: the work's own JSON value
    error: str | None

    @property
    def kind(self) -> str:
        """``passed``, ``failed``, ``crash`` (the process ended) or ``hang`` (stopped at its deadline)."""
        if self.outcome.stopped:
            return "hang"
        if not self.outcome.finished:
            return "crash"
        return "passed" if self.error is None else "failed"


_current: list[Guard] = []


def current() -> Guard | None:
    """The guard installed for the test running in this process (:meth:`Guard.installed`), if any."""
    return _current[-1] if _current else None


class Guard:
    """The per-call limit of one run (``timeout`` seconds) and what it has seen so far."""

    # What a hang and a crash raise: a layer above gives its own subclasses (see the module's doc).
    hang: type[Hang] = Hang
    crash: type[Crash] = Crash

    def name(self, frames: list[Frame], call: str) -> str:
        """The name a finding gives the call that hung or crashed, from the frames of the code under
        test (innermost first): here, the name it was guarded under."""
        return call

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, *, clock: Clock = MONOTONIC) -> None:
        self.timeout = parse_timeout(timeout)
        self.clock = clock
        self.isolated = False
        self.hangs = 0
        self.slowest: dict[str, float] = {}
        self._depth = 0
        self._in_child = False
        self.renew_mark()

    def __repr__(self) -> str:
        return f"Guard(timeout={self.timeout:g})"

    def renew_mark(self) -> None:
        """Give the calls of this process a deadline of their own, shared only with the processes it
        forks from now on: a process forked from a supervisor that supervises children of its own
        (a lane of :mod:`ppaux.testing.lanes`) must not write the deadline its siblings' are read from."""
        # (deadline of the call in progress or 0, monotonic time the last call ended): shared with
        # the processes forked from here, so that a supervisor reads a child's.
        self._mark = mmap.mmap(-1, _MARK.size)
        self._write_mark(0.0)

    @contextlib.contextmanager
    def installed(self) -> Iterator[Guard]:
        """This guard as :func:`current` for what runs inside."""
        _current.append(self)
        try:
            yield self
        finally:
            _current.remove(self)

    def limit(self, call: str) -> tuple[float, str]:
        """The limit for the next ``call`` and why it is that."""
        if not self.hangs:
            return self.timeout, "the per-call time limit"
        adaptive = max(ADAPTIVE_FLOOR, ADAPTIVE_FACTOR * self.slowest.get(call, 0.0))
        if adaptive >= self.timeout:
            return self.timeout, "the per-call time limit"
        return adaptive, (
            f"after a first hang, {ADAPTIVE_FACTOR:g}x the slowest {call} that returned, at least "
            f"{ADAPTIVE_FLOOR:g} s; the per-call limit is {self.timeout:g} s"
        )

    def state(self) -> dict[str, object]:
        """What this guard has seen, for the process that forked it (:meth:`merge`)."""
        return {"hangs": self.hangs, "slowest": self.slowest}

    def merge(self, state: dict[str, Any]) -> None:  # Any: a child's state, as json.loads gives it
        """Take in what a forked child's guard saw: a hang there shortens the limits here too."""
        # A child starts from this guard's state: its counts include what this one had.
        self.hangs = max(self.hangs, int(state.get("hangs", 0)))
        for call, seconds in dict(state.get("slowest", {})).items():
            self.slowest[call] = max(self.slowest.get(call, 0.0), float(seconds))

    def idle(self) -> None:
        """No call in progress, as of now: before a supervisor forks a process to run under this guard
        (a process killed in a call leaves its deadline behind)."""
        self._write_mark(0.0)

    def kill_deadline(self) -> float | None:
        """When a supervisor kills the process this guard runs in: past the call's deadline, or idle too long."""
        deadline: float
        idle_since: float
        deadline, idle_since = _MARK.unpack(self._mark[:])
        if deadline:
            return deadline + KILL_GRACE
        return idle_since + max(IDLE_FLOOR, IDLE_FACTOR * self.timeout)

    def supervised(self, work: Callable[[], object]) -> tuple[ChildOutcome, Any]:  # Any: work()'s value, via JSON
        """``work()`` (a JSON value) in a forked child, killed at this guard's deadlines; the outcome
        and the value. What the child's guard saw comes back into this one (a hang there shortens the
        limits here), and a child stopped at its deadline counts as a hang."""
        self.idle()
        outcome = run_forked(
            lambda: json.dumps({"value": work(), "guard": self.state()}).encode(),
            deadline=self.kill_deadline,
            clock=self.clock,
        )
        if outcome.finished:
            answer = json.loads(outcome.answer or b"")
            self.merge(answer["guard"])
            return outcome, answer["value"]
        if outcome.stopped:
            self.hangs += 1
        return outcome, None

    def contain(self, work: Callable[[], tuple[object, str | None]]) -> Contained:
        """``work()`` in a forked child as :meth:`supervised` runs it: it answers a JSON value and the
        error it met in one line (``None``: none); passed, failed, crash or hang."""
        outcome, answer = self.supervised(lambda: list(work()))
        value, error = answer if outcome.finished else (None, None)
        return Contained(outcome, value, error)

    def call(self, call: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:  # Any: fn's own
        """``fn(*args, **kwargs)`` within the limit for ``call`` ("add", "pop", ...)."""
        if self._depth or self._in_child:
            # A call made inside a guarded one (an observer inside pop) is under its limit already.
            return fn(*args, **kwargs)
        self._depth += 1
        try:
            if self.isolated and can_fork():
                self._rehearse(call, fn, args, kwargs)
            return self._in_process(call, fn, args, kwargs)
        finally:
            self._depth -= 1

    def _write_mark(self, deadline: float) -> None:
        self._mark[:] = _MARK.pack(deadline, self.clock.monotonic())

    def _rehearse(
        self, call: str, fn: Callable[..., object], args: tuple[object, ...], kwargs: dict[str, object]
    ) -> None:
        """The call in a forked child first: a crash or hang there is raised here."""
        limit, why = self.limit(call)

        def work() -> bytes:
            self._in_child = True
            try:
                fn(*args, **kwargs)
            except BaseException:
                pass  # raising is an answer; the run in process raises it for real
            return b"returned"

        start = self.clock.monotonic()
        # This process waits on its child: a supervisor of its own must not kill it meanwhile.
        self._write_mark(start + limit + KILL_GRACE)
        try:
            outcome = run_forked(
                work, deadline=lambda: start + limit + REHEARSAL_GRACE, dump_after=limit, clock=self.clock
            )
        finally:
            self._write_mark(0.0)
        frames = under_guard(frames_in_dump(outcome.dump))
        if outcome.stopped:
            self.hangs += 1
            raise self.hang(self.name(frames, call), limit, why, render(frames))
        if not outcome.finished:
            raise self.crash(self.name(frames, call), outcome.describe(), render(frames))

    def _in_process(
        self, call: str, fn: Callable[..., object], args: tuple[object, ...], kwargs: dict[str, object]
    ) -> object:
        limit, why = self.limit(call)
        alarm = _Alarm(self, call, limit, why) if threading.current_thread() is threading.main_thread() else None
        start = self.clock.monotonic()
        self._write_mark(start + limit)
        if alarm:
            alarm.start()
        try:
            result = fn(*args, **kwargs)
        except Hang:
            self.hangs += 1
            raise
        except BaseException:
            if alarm and alarm.stop():
                self.hangs += 1
                raise alarm.hang() from None
            self._completed(call, start)
            raise
        finally:
            if alarm:
                alarm.stop()
            self._write_mark(0.0)
        if alarm and alarm.fired is not None:
            # The code caught the interruption and returned anyway: it still ran past its limit.
            self.hangs += 1
            raise alarm.hang()
        self._completed(call, start)
        return result

    def _completed(self, call: str, start: float) -> None:
        self.slowest[call] = max(self.slowest.get(call, 0.0), self.clock.monotonic() - start)


class _Alarm:
    """SIGALRM at the limit, then every _REFIRE s: each raises :class:`Hang` where the call is."""

    def __init__(self, guard: Guard, call: str, limit: float, why: str) -> None:
        self.guard, self.call, self.limit, self.why = guard, call, limit, why
        self.fired: list[Frame] | None = None
        self._active = False
        self._previous: Callable[[int, FrameType | None], object] | int | signal.Handlers | None = None

    def start(self) -> None:
        self._active = True
        self._previous = signal.signal(signal.SIGALRM, self._handler)
        signal.setitimer(signal.ITIMER_REAL, self.limit, _REFIRE)

    def stop(self) -> bool:
        """Cancel the timer; whether it fired."""
        if self._active:
            self._active = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
        return self.fired is not None

    def hang(self) -> Hang:
        frames = under_guard(self.fired or [])
        return self.guard.hang(self.guard.name(frames, self.call), self.limit, self.why, render(frames))

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if not self._active:  # pragma: no cover - a signal already pending when the timer was cancelled
            return
        if self.fired is None:
            self.fired = frames_of(frame)
        raise self.hang()
