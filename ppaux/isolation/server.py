"""A long-lived forked worker that answers requests one at a time, each supervised as
:func:`run_forked` supervises its child: forked once from a warm parent (AFL's fork server), it costs
a fork only when the code under test kills or hangs it (pytest-xdist's replaced worker)."""

from __future__ import annotations

import os
import resource
import signal
import struct
import sys
import tempfile
from collections.abc import Callable
from typing import IO, NoReturn

from ppaux.isolation.clock import MONOTONIC, Clock
from ppaux.isolation.forked import (
    ChildOutcome,
    PipeChild,
    fork_frozen,
    framed,
    run_child,
    send,
    set_group,
    settle_child,
    supervise,
)

# A worker asked to go is given this long to tear down what it set up and end, then killed: a
# safety net only, it ends in milliseconds.
CLOSE_WAIT = 30.0
_LENGTH = struct.Struct("<Q")
# The request that asks a worker to go.
_GOODBYE = b""


def resident_bytes() -> int:
    """This process's resident memory now (Linux's /proc), else its peak (:func:`resource.getrusage`)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # pragma: no cover - not Linux
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


class Worker:
    """A forked child that runs ``serve(request)`` for each request :meth:`ask` sends, and
    ``farewell()`` when asked to go (:meth:`close`).

    The heap is frozen before the fork (``gc.freeze()``): neither process's collections then walk,
    and so copy, the pages they share. A request is non-empty bytes, an answer any bytes. A worker
    whose parent ends says farewell once it has answered; one that ``ends_with_parent`` is killed at
    once instead (:func:`~ppaux.isolation.forked.die_with`: a lane's worker, whose lane may be killed).
    """

    def __init__(
        self,
        serve: Callable[[bytes], bytes],
        *,
        farewell: Callable[[], None] = lambda: None,
        clock: Clock = MONOTONIC,
        ends_with_parent: bool = False,
    ) -> None:
        self.clock = clock
        requests_in, self._requests = os.pipe()
        self._answers, answers_out = os.pipe()
        self._dump = tempfile.TemporaryFile()
        parent = os.getpid() if ends_with_parent else None
        pid = fork_frozen()
        if pid == 0:  # pragma: no cover - the child's side: coverage traces the child's new frames only
            ends = (self._requests, self._answers)
            _serve(serve, farewell, parent, requests_in, answers_out, self._dump, ends)
        os.close(requests_in)
        os.close(answers_out)
        set_group(pid)
        self.pid = pid
        self.alive = True

    def ask(self, request: bytes, deadline: Callable[[], float | None]) -> bytes | ChildOutcome:
        """The worker's answer to ``request``; or, when it died or was killed at ``deadline()`` (read
        as :func:`run_forked` reads it), how it ended: it is gone then. A KeyboardInterrupt here
        kills it and propagates."""
        if not request:
            raise ValueError("a request to a worker is non-empty bytes")
        start = self.clock.monotonic()
        try:
            try:
                send(self._requests, request)
            except BrokenPipeError:
                pass  # it died after its last answer: supervise() reads its status
            seen = supervise(PipeChild(self.pid, self._answers), deadline, self.clock, stays=True)
        except BaseException:
            self._end(kill=True)
            raise
        if seen.status is None:
            answer = framed(seen.received)
            assert answer is not None  # supervise() leaves a worker running only once it has answered
            return answer
        self._end(kill=False)
        self._dump.seek(0)
        dump = self._dump.read().decode("utf-8", "replace")
        self._dump.close()
        return ChildOutcome(None, seen.status, seen.stopped, dump, self.clock.monotonic() - start)

    def close(self) -> None:
        """Ask the worker to go and wait for it (killed after CLOSE_WAIT s): what it started goes too."""
        if not self.alive:
            return
        try:
            send(self._requests, _GOODBYE)
        except BrokenPipeError:
            pass  # it died since its last answer
        give_up = self.clock.monotonic() + CLOSE_WAIT
        try:
            supervise(PipeChild(self.pid, self._answers), lambda: give_up, self.clock)
        finally:
            self._end(kill=True)
            self._dump.close()

    def _end(self, *, kill: bool) -> None:
        self.alive = False
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass  # its group has ended
        if kill:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass  # reaped already
        os.close(self._requests)
        os.close(self._answers)


def receive(fd: int) -> bytes | None:
    """The next framed message on ``fd`` (:func:`send`); ``None`` once the pipe is closed."""
    head = _read_exactly(fd, _LENGTH.size)
    if head is None:
        return None
    (length,) = _LENGTH.unpack(head)
    return _read_exactly(fd, length)


def _read_exactly(fd: int, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _serve(
    serve: Callable[[bytes], bytes],
    farewell: Callable[[], None],
    parent: int | None,
    requests: int,
    answers: int,
    dump: IO[bytes],
    parents_ends: tuple[int, int],
) -> NoReturn:
    def answer_until_goodbye() -> None:
        for fd in parents_ends:
            os.close(fd)
        settle_child(dump, parent)
        while True:
            request = receive(requests)
            if not request:
                break
            send(answers, serve(request))
        farewell()

    run_child(answer_until_goodbye)
