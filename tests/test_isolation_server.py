"""The supervisor's decisions, step by step under a fake clock and a scripted child (as pytest-xdist's
DSession.loop_once dispatches one event at a time), the guard's deadlines on that clock, and the
long-lived worker (ppaux.isolation.Worker) in real processes, with only generous safety limits."""

from __future__ import annotations

import gc
import os
import signal
import time

import pytest

from ppaux.isolation import ChildOutcome, Guard, Worker, resident_bytes, run_forked, safety_limit
from ppaux.isolation import guard as guard_module
from ppaux.isolation import server as server_module
from ppaux.isolation.forked import CHILD_RAISED, Seen, next_wait, send, split_messages, supervise

# A real-process test waits for its event at most this long: a safety net, never a measurement.
SAFETY = safety_limit(60.0)


class FakeClock:
    """Time that passes only when something waits."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class ScriptedChild:
    """A child whose events (what it writes, that it exits) happen at scripted times on ``clock``."""

    def __init__(self, clock: FakeClock, writes=(), exits_at=None, status=0) -> None:
        self.clock = clock
        self.writes = sorted((clock.now + at, data) for at, data in writes)
        self.exits_at = None if exits_at is None else clock.now + exits_at
        self.status = status
        self.killed_at: float | None = None
        self.reaped = False
        self.waits: list[float] = []

    def read(self, timeout: float) -> bytes | None:
        self.waits.append(timeout)
        if self.writes and self.writes[0][0] <= self.clock.now + timeout:
            at, data = self.writes.pop(0)
            self.clock.now = max(self.clock.now, at)
            return data
        self.clock.sleep(timeout)
        return None

    def exited(self) -> int | None:
        if self.exits_at is not None and self.clock.now >= self.exits_at:
            self.reaped = True
            return self.status
        return None

    def reap(self) -> int:
        self.reaped = True
        return self.status

    def kill(self) -> int:
        self.killed_at = self.clock.now
        self.reaped = True
        return signal.SIGKILL


def framed(message: bytes) -> bytes:
    read_end, write_end = os.pipe()
    send(write_end, message)
    os.close(write_end)
    data = os.read(read_end, 1 << 16)
    os.close(read_end)
    return data


def test_the_supervisor_waits_a_quarter_second_at_most_then_up_to_the_deadline():
    never = lambda: True  # noqa: E731
    assert next_wait(10.0, None, never) == 0.25
    assert next_wait(10.0, 12.0, never) == 0.25
    assert next_wait(10.0, 10.1, never) == pytest.approx(0.1)
    assert next_wait(10.0, 10.0, never) is None


def test_a_child_asked_for_its_stack_is_given_a_second_past_its_deadline_to_write_it():
    assert next_wait(10.5, 10.0, lambda: False) == 0.01
    assert next_wait(11.0, 10.0, lambda: False) is None
    assert next_wait(10.5, 10.0, lambda: True) is None


def test_a_child_that_answers_before_its_deadline_is_reaped_with_its_answer():
    clock = FakeClock()
    answer = framed(b"done")
    child = ScriptedChild(clock, writes=[(2.0, answer[:5]), (3.0, answer[5:])])
    seen = supervise(child, lambda: 105.0, clock)
    assert seen == Seen(False, answer, 0)
    assert (clock.now, child.killed_at, child.reaped) == (103.0, None, True)


def test_a_child_that_stays_is_left_running_once_it_has_answered():
    clock = FakeClock()
    child = ScriptedChild(clock, writes=[(1.0, framed(b"done"))])
    assert supervise(child, lambda: None, clock, stays=True) == Seen(False, framed(b"done"), None)
    assert not child.reaped


def test_a_child_that_never_answers_is_killed_at_its_deadline_not_before():
    clock = FakeClock()
    child = ScriptedChild(clock)
    seen = supervise(child, lambda: 105.0, clock)
    assert (seen.stopped, seen.status) == (True, signal.SIGKILL)
    assert child.killed_at == pytest.approx(105.0)
    assert max(child.waits) == 0.25


def test_the_deadline_is_read_again_at_every_step():
    clock = FakeClock()
    child = ScriptedChild(clock)
    # No deadline for ten seconds (no call in progress), then a call's: due two seconds later.
    seen = supervise(child, lambda: None if clock.now < 110.0 else 112.0, clock)
    assert seen.stopped and child.killed_at == pytest.approx(112.0)


def test_a_child_that_has_not_written_its_stack_is_killed_when_it_has_or_a_second_late():
    clock = FakeClock()
    child = ScriptedChild(clock)
    supervise(child, lambda: 101.0, clock, dumped=lambda: clock.now >= 101.3)
    assert child.killed_at == pytest.approx(101.3, abs=0.011)
    clock = FakeClock()
    child = ScriptedChild(clock)
    supervise(child, lambda: 101.0, clock, dumped=lambda: False)
    assert child.killed_at == pytest.approx(102.0, abs=0.011)


def test_a_child_that_ends_without_answering_is_seen_ended_with_its_status():
    clock = FakeClock()
    child = ScriptedChild(clock, writes=[(0.5, b"par")], exits_at=2.0, status=3 << 8)
    assert supervise(child, lambda: 150.0, clock) == Seen(False, b"par", 3 << 8)
    assert child.killed_at is None


def test_a_closed_pipe_is_an_ended_child():
    clock = FakeClock()
    child = ScriptedChild(clock, writes=[(0.5, b"")], status=7 << 8)
    assert supervise(child, lambda: None, clock) == Seen(False, b"", 7 << 8)


def test_the_guard_reads_its_clock_for_deadlines_and_the_slowest_calls():
    clock = FakeClock(1000.0)
    guard = Guard(10, clock=clock)
    guard.idle()
    # Idle: killed after the idle limit, ten times the per-call limit but at least a minute.
    idle = max(guard_module.IDLE_FLOOR, guard_module.IDLE_FACTOR * 10)
    assert guard.kill_deadline() == 1000.0 + idle
    seen = []

    def pop():
        seen.append(guard.kill_deadline())
        clock.sleep(0.5)
        return "popped"

    assert guard.call("pop", pop) == "popped"
    # In the call: its deadline, past the per-call limit by the kill grace.
    assert seen == [1000.0 + 10 + guard_module.KILL_GRACE]
    assert guard.slowest == {"pop": 0.5}
    # After a hang, a pop is judged against the slowest that returned, as this clock timed it.
    guard.hangs = 1
    assert guard.limit("pop")[0] == 0.5 * guard_module.ADAPTIVE_FACTOR
    assert guard.kill_deadline() == 1000.5 + idle


# The worker, in real processes.


def counter():
    """A worker's serve(): the request count it has seen (state kept across requests) and its pid."""
    seen = []

    def serve(request: bytes) -> bytes:
        seen.append(request)
        if request == b"exit":
            os._exit(3)
        if request == b"hang":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGINT, signal.SIGTERM})
            time.sleep(SAFETY * 10)
        return f"{len(seen)} {os.getpid()}".encode()

    return serve


def test_a_worker_answers_request_after_request_in_one_process():
    worker = Worker(counter())
    try:
        answers = [worker.ask(b"go", deadline=lambda: time.monotonic() + SAFETY) for _ in range(3)]
    finally:
        worker.close()
    assert [a.split()[0] for a in answers] == [b"1", b"2", b"3"]
    assert len({a.split()[1] for a in answers}) == 1 and answers[0].split()[1] != str(os.getpid()).encode()
    assert not worker.alive


def test_a_worker_that_dies_in_a_request_is_an_outcome_with_its_status():
    worker = Worker(counter())
    assert worker.ask(b"go", deadline=lambda: None) == b"1 " + str(worker.pid).encode()
    outcome = worker.ask(b"exit", deadline=lambda: time.monotonic() + SAFETY)
    assert isinstance(outcome, ChildOutcome)
    assert (outcome.finished, outcome.stopped, outcome.describe()) == (
        False,
        False,
        "ended the process with exit status 3",
    )
    assert not worker.alive
    worker.close()  # nothing left to close


@pytest.mark.subprocess
def test_a_worker_past_its_deadline_is_killed_with_no_signal_reaching_it():
    worker = Worker(counter())
    start = time.monotonic()
    outcome = worker.ask(b"hang", deadline=lambda: start + 0.5)
    assert isinstance(outcome, ChildOutcome) and outcome.stopped
    assert outcome.describe() == "was stopped at its deadline"


def test_a_worker_asked_to_go_says_farewell_first(tmp_path):
    said = tmp_path / "farewell"
    worker = Worker(counter(), farewell=lambda: said.write_text("bye"))
    worker.ask(b"go", deadline=lambda: None)
    worker.close()
    assert said.read_text() == "bye"


def test_a_worker_that_does_not_go_when_asked_is_killed(monkeypatch):
    monkeypatch.setattr(server_module, "CLOSE_WAIT", 0.0)
    worker = Worker(counter(), farewell=lambda: time.sleep(SAFETY * 10))
    pid = worker.pid
    worker.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_request_is_non_empty():
    worker = Worker(counter())
    try:
        with pytest.raises(ValueError, match="^a request to a worker is non-empty bytes$"):
            worker.ask(b"", deadline=lambda: None)
    finally:
        worker.close()


def test_an_interrupted_supervisor_kills_its_worker():
    worker = Worker(counter())

    def deadline():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        worker.ask(b"hang", deadline=deadline)
    assert not worker.alive
    with pytest.raises(ChildProcessError):
        os.waitpid(worker.pid, os.WNOHANG)


def test_a_process_reads_its_resident_memory():
    before = resident_bytes()
    block = bytearray(64 << 20)
    assert resident_bytes() >= before + (32 << 20) and block


def died_after_answering():
    """A worker that ends its process just after its first answer (a thread the code under test left
    behind), and is seen dead before the next request is sent."""

    def serve(request: bytes) -> bytes:
        import threading

        threading.Timer(0.01, os._exit, [5]).start()
        return b"answered"

    worker = Worker(serve)
    assert worker.ask(b"go", deadline=lambda: None) == b"answered"
    give_up = time.monotonic() + SAFETY
    while open(f"/proc/{worker.pid}/stat").read().split(") ")[1][0] != "Z" and time.monotonic() < give_up:
        time.sleep(0.01)
    return worker


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads a process's state from Linux's /proc")
def test_a_worker_that_died_after_its_answer_is_an_outcome_at_the_next_request():
    worker = died_after_answering()
    outcome = worker.ask(b"go", deadline=lambda: time.monotonic() + SAFETY)
    assert isinstance(outcome, ChildOutcome) and outcome.describe() == "ended the process with exit status 5"


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads a process's state from Linux's /proc")
def test_a_worker_that_died_after_its_answer_is_closed_all_the_same():
    worker = died_after_answering()
    worker.close()
    assert not worker.alive
    with pytest.raises(ChildProcessError):
        os.waitpid(worker.pid, os.WNOHANG)


def test_a_worker_whose_serving_raises_ends_with_its_own_status():
    def serve(request: bytes) -> bytes:
        raise RuntimeError("the worker's own bug")

    worker = Worker(serve)
    outcome = worker.ask(b"go", deadline=lambda: time.monotonic() + SAFETY)
    assert isinstance(outcome, ChildOutcome)
    assert outcome.describe() == f"ended the process with exit status {CHILD_RAISED}"


def test_a_worker_whose_parent_is_gone_says_farewell_and_ends(tmp_path):
    said = tmp_path / "farewell"

    def parent() -> bytes:
        # A parent that ends without closing its worker (pytest killed): the worker reads the end of its pipe.
        def farewell() -> None:
            # Written whole, then renamed: the test waits for the file and reads it at once.
            (tmp_path / "writing").write_text(str(os.getpid()))
            (tmp_path / "writing").replace(said)

        worker = Worker(counter(), farewell=farewell)
        return str(worker.pid).encode()

    outcome = run_forked(parent, deadline=lambda: time.monotonic() + SAFETY)
    give_up = time.monotonic() + SAFETY
    while not said.exists() and time.monotonic() < give_up:
        time.sleep(0.01)
    assert said.read_text() == outcome.answer.decode()


def test_starting_a_worker_leaves_the_callers_garbage_collector_as_it_was():
    gc.disable()
    try:
        worker = Worker(counter())
        assert not gc.isenabled()
    finally:
        gc.enable()
    worker.close()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_code_a_worker_runs_meets_the_collector_as_its_caller_had_it(enabled):
    """Its inherited heap frozen, a worker collects what it allocates, as the caller would have."""
    if not enabled:
        gc.disable()
    try:
        worker = Worker(lambda request: f"{gc.isenabled()} {gc.get_freeze_count() > 0}".encode())
    finally:
        gc.enable()
    try:
        assert worker.ask(b"?", deadline=lambda: time.monotonic() + SAFETY) == f"{enabled} True".encode()
    finally:
        worker.close()


def blocked_forever():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(SAFETY * 10)


def test_a_contained_run_passed_failed_or_crashed():
    guard = Guard(0.2)
    passed = guard.contain(lambda: ([1, 2], None))
    assert (passed.kind, passed.value, passed.error) == ("passed", [1, 2], None)
    failed = guard.contain(lambda: (3, "AssertionError: x"))
    assert (failed.kind, failed.value, failed.error) == ("failed", 3, "AssertionError: x")
    crashed = guard.contain(lambda: os._exit(3))
    assert (crashed.kind, crashed.value, crashed.outcome.describe()) == (
        "crash",
        None,
        "ended the process with exit status 3",
    )


@pytest.mark.subprocess  # waited out to its deadline and the kill's grace: a second and more
def test_a_contained_run_that_no_timer_signal_reaches_is_a_hang():
    # Killed from outside past its deadline.
    guard = Guard(0.2)
    hung = guard.contain(lambda: guard.call("pop", blocked_forever))
    assert (hung.kind, hung.value) == ("hang", None)


def test_whole_messages_are_split_from_what_follows_them():
    first, second = framed(b"one"), framed(b"")
    assert split_messages(first + second + first[:5]) == ([b"one", b""], first[:5])
    assert split_messages(first[:3]) == ([], first[:3])
    assert split_messages(b"") == ([], b"")
