"""One function in a forked child, supervised: its answer, or how it died, or that it was stopped
at its deadline, with the stack faulthandler wrote (a crash's, or a hang's when asked for one)."""

from __future__ import annotations

import faulthandler
import gc
import os
import posix
import select
import signal
import struct
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, NoReturn, Protocol

from ppaux.isolation.clock import MONOTONIC, Clock
from ppaux.isolation.status import describe_status

# How often a supervisor reads its deadline again: the deadline moves as the child starts calls.
_RECHECK = 0.25
_LENGTH = struct.Struct("<Q")
# A forked child whose own code raised (its traceback on stderr): the parent reads it as "no answer".
CHILD_RAISED = 70
# A child asked for a hang's stack is given this much longer past its deadline to write it (a
# loaded machine starts the child, and its faulthandler timer, late).
_DUMP_WAIT = 1.0
_DUMP_RECHECK = 0.01


def can_fork() -> bool:
    """Whether this platform forks (not Windows)."""
    return hasattr(os, "fork")


@dataclass(frozen=True)
class ChildOutcome:
    """What became of the child: ``answer`` when it finished its work and sent it."""

    answer: bytes | None
    status: int
    stopped: bool
    dump: str
    seconds: float

    @property
    def finished(self) -> bool:
        return self.answer is not None and not self.stopped

    def describe(self) -> str:
        """How the child ended, in words: "was stopped at its deadline" or its exit status."""
        if self.stopped:
            return "was stopped at its deadline"
        if os.WIFEXITED(self.status) and os.WEXITSTATUS(self.status) == 0:
            return "ended the process with exit status 0 before it answered"
        return describe_status(self.status)


def run_forked(
    work: Callable[[], bytes],
    *,
    deadline: Callable[[], float | None],
    dump_after: float | None = None,
    clock: Clock = MONOTONIC,
) -> ChildOutcome:
    """``work()`` in a forked child, in a process group of its own; its return value comes back.

    ``deadline()`` is read again every quarter second: the ``clock.monotonic()`` time at which
    the child's group is killed, or ``None`` for none yet. faulthandler writes a fatal signal's
    stack, and, with ``dump_after``, every thread's stack after that many seconds (a hang's).
    A KeyboardInterrupt in the parent kills the child and propagates.
    """
    read_end, write_end = os.pipe()
    with tempfile.TemporaryFile() as dump:
        start = clock.monotonic()
        parent = os.getpid()
        pid = _fork()
        if pid == 0:  # pragma: no cover - the child's side: coverage traces the child's new frames only
            _child(work, parent, read_end, write_end, dump, dump_after)
        os.close(write_end)
        with _owned(pid):
            set_group(pid)
            wants_dump = dump_after is not None
            seen = supervise(
                PipeChild(pid, read_end),
                deadline,
                clock,
                dumped=lambda: not wants_dump or os.fstat(dump.fileno()).st_size > 0,
            )
        seconds = clock.monotonic() - start
        dump.seek(0)
        text = dump.read().decode("utf-8", "replace")
    os.close(read_end)
    assert seen.status is not None  # a child that does not stay is reaped
    return ChildOutcome(framed(seen.received), seen.status, seen.stopped, text, seconds)


def fork_frozen() -> int:
    """``os.fork()`` once the heap is frozen (``gc.freeze()``), no collection between: neither process's
    collections then walk, and so copy, the pages they share; each collects as the caller did (only what it
    allocates since). A long-lived child's fork (a fork server's worker, a lane): the caller's heap stays
    frozen too, so a call's child, forked again and again, freezes only its own copy (``_fork``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.freeze()
        return os.fork()
    finally:
        if enabled:
            gc.enable()


def _fork() -> int:
    # The child freezes the heap it inherits: its collections would otherwise walk, and so copy, every
    # page of it (torch and Hypothesis loaded: half of a test's time). No collection runs between the
    # fork and the freeze, and the caller's collector (enabled or not, a heap it froze) stays as it was.
    enabled = gc.isenabled()
    gc.disable()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child's side: coverage traces the child's new frames only
            gc.freeze()
    finally:
        if enabled:
            gc.enable()
    return pid


def _child(
    work: Callable[[], bytes], parent: int, read_end: int, write_end: int, dump: IO[bytes], dump_after: float | None
) -> NoReturn:
    def work_and_answer() -> None:
        os.close(read_end)
        settle_child(dump, parent)
        if dump_after is not None:
            faulthandler.dump_traceback_later(dump_after, file=dump)
        answer = work()
        faulthandler.cancel_dump_traceback_later()
        send(write_end, answer)

    run_child(work_and_answer)


def run_child(body: Callable[[], None]) -> NoReturn:  # pragma: no cover - runs in forked children only
    """What a forked child runs, and its end: exit status 0 once ``body`` returns, :data:`CHILD_RAISED`
    (the traceback on stderr) if it raises. Nothing unwinds into the code the child was forked from: not
    an error of ``body``, not an ``os._exit`` the code under test replaced, not an exception a signal
    handler raises while the child ends (a tool may wrap ``os._exit``: coverage saves its data there)."""
    end = os._exit  # as it is at the fork (a tool's wrapper included), not what the body may put there
    status = CHILD_RAISED
    try:
        body()
        status = 0
    except BaseException:
        import traceback

        traceback.print_exc(file=sys.__stderr__)
    finally:
        try:
            end(status)
        finally:
            posix._exit(status)  # what os._exit is before any tool wraps it: nothing runs before the end


def settle_child(dump: IO[bytes], parent: int | None) -> None:
    """What a forked child does first: a process group of its own, an end with its ``parent``'s when
    given (:func:`die_with`), the default SIGINT and SIGTERM, one torch thread, and faulthandler writing
    a fatal signal's stack into ``dump``."""
    set_group(0)
    if parent is not None:
        die_with(parent)
    # The parent's handlers (pytest's, a fuzz round's SIGINT, a lane's SIGTERM) are not this child's: it
    # is stopped by a kill.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # torch's OpenMP pool does not survive fork: a parallel region the parent has used waits
    # for ever for threads the child does not have (torch's DataLoader workers do the same).
    torch = sys.modules.get("torch")
    if torch is not None:  # pragma: no branch - ppaux imports torch wherever it forks a child
        torch.set_num_threads(1)
    faulthandler.enable(file=dump, all_threads=True)


# Linux's prctl option: the signal this process gets when the thread that forked it ends.
_PR_SET_PDEATHSIG = 1


def die_with(parent: int) -> None:
    """Have this process killed when ``parent``, the process that forked it, ends (Linux's
    ``PR_SET_PDEATHSIG``; elsewhere nothing): a supervisor killed from outside leaves no child of its
    running the code under test. A parent gone already: this process ends now."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - ppaux's CI runs on Linux
        return
    import ctypes  # here: only a forked child needs it (torch has imported it already)

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # pragma: no cover - the parent ended before the request took hold
        os._exit(1)


def set_group(pid: int) -> None:
    # Both sides set it, so that the parent can kill the group before the child has run a line.
    try:
        os.setpgid(pid, pid if pid else 0)
    except OSError:  # pragma: no cover - a race: the other side set it first and the child has exec'd or exited
        pass


class _owned:
    """Kills the child's whole group on the way out (what it started too), whatever happened."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        if kind is not None:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:  # pragma: no cover - the error came after the child was reaped
                pass


class Child(Protocol):
    """What a supervisor sees of a child: the pipe it answers on, whether it has ended, its group."""

    def read(self, timeout: float) -> bytes | None:
        """What the child wrote within ``timeout`` seconds: ``None`` for nothing yet, ``b""`` once
        the pipe is closed."""
        ...

    def exited(self) -> int | None:
        """The child's status if it has ended (reaped), else ``None``."""
        ...

    def reap(self) -> int:
        """Wait for the child to end; its status."""
        ...

    def kill(self) -> int:
        """Kill the child's whole group; its status."""
        ...


class PipeChild:
    """A forked child as the operating system shows it: its pid (and group) and the read end of its pipe."""

    def __init__(self, pid: int, read_end: int) -> None:
        self.pid, self.read_end = pid, read_end

    def read(self, timeout: float) -> bytes | None:
        ready, _, _ = select.select([self.read_end], [], [], timeout)
        return os.read(self.read_end, 1 << 16) if ready else None

    def exited(self) -> int | None:
        done, status = os.waitpid(self.pid, os.WNOHANG)
        return status if done else None

    def reap(self) -> int:
        return os.waitpid(self.pid, 0)[1]

    def kill(self) -> int:
        os.killpg(self.pid, signal.SIGKILL)
        return self.reap()


@dataclass(frozen=True)
class Seen:
    """What a supervisor saw: whether it stopped the child, what the child wrote, and its status
    (``None``: a worker that answered and goes on)."""

    stopped: bool
    received: bytes
    status: int | None


def next_wait(now: float, due: float | None, dumped: Callable[[], bool]) -> float | None:
    """The supervisor's decision at ``now`` for a child due to be killed at ``due``: how long to wait
    for it, or ``None`` to kill it now. A child asked for its stack is given _DUMP_WAIT s past its
    deadline to write it."""
    if due is None:
        return _RECHECK
    if now < due:
        return min(_RECHECK, due - now)
    if now < due + _DUMP_WAIT and not dumped():
        return _DUMP_RECHECK
    return None


def supervise(
    child: Child,
    deadline: Callable[[], float | None],
    clock: Clock,
    *,
    dumped: Callable[[], bool] = lambda: True,
    stays: bool = False,
) -> Seen:
    """Read the child's answer until it has all of it or the child is gone (a process it started
    may hold the pipe open), or kill the group at the deadline (once it wrote its stack, if asked).
    A child that ``stays`` (a worker) is left running once it has answered."""
    received = b""
    while True:
        wait = next_wait(clock.monotonic(), deadline(), dumped)
        if wait is None:
            return Seen(True, received, child.kill())
        data = child.read(wait)
        if data is None:
            status = child.exited()
            if status is not None:
                return Seen(False, received, status)
            continue
        received += data
        if not data:
            return Seen(False, received, child.reap())
        if framed(received) is not None:
            return Seen(False, received, None if stays else child.reap())


def split_messages(received: bytes) -> tuple[list[bytes], bytes]:
    """The whole messages :func:`send` framed at the head of ``received``, and what follows them (the
    part of a message still on its way)."""
    messages = []
    while len(received) >= _LENGTH.size and len(received) >= _LENGTH.size + _LENGTH.unpack_from(received)[0]:
        end = _LENGTH.size + _LENGTH.unpack_from(received)[0]
        messages.append(received[_LENGTH.size : end])
        received = received[end:]
    return messages, received


def send(fd: int, message: bytes) -> None:
    """``message`` down a pipe, framed with its length (:func:`framed` reads it back)."""
    data = _LENGTH.pack(len(message)) + message
    while data:
        data = data[os.write(fd, data) :]


def framed(received: bytes) -> bytes | None:
    """The message :func:`send` framed, once all of it has been ``received``; else ``None``."""
    if len(received) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack_from(received)
    body = received[_LENGTH.size :]
    return body if len(body) == length else None
