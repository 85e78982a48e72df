"""ppaux.isolation: a call that hangs or kills its process is a finding with the call's name, the
limit or the exit status, and the stack where it was; a call that returns is unaffected."""

from __future__ import annotations

import ctypes
import gc
import os
import posix
import signal
import subprocess
import sys
import threading
import time

import pytest

from ppaux.isolation import (
    Crash,
    Guard,
    Hang,
    current,
    describe_exitcode,
    describe_status,
    parse_timeout,
    run_forked,
    safety_limit,
    signal_name,
)
from ppaux.isolation import guard as guard_module
from ppaux.isolation.forked import run_child
from ppaux.isolation.status import Frame, frames_in_dump, render, under_guard

HERE = os.path.abspath(__file__)


def line_of(fn, text):
    """The line number of ``text`` inside ``fn``'s source."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def stack_line(fn, text):
    return f'  File "{HERE}", line {line_of(fn, text)}, in {fn.__name__}\n    {text}'


def pop_auxiliary_output_from_pp_tensors(n):
    while n: n = n + 1  # noqa: E701 - one line, so that the interrupted line is this one  # fmt: skip
    return n


def exits_with_3():
    os._exit(3)


def segfaulting():
    ctypes.string_at(0)


def blocks_every_signal():
    signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))
    read_end, _ = os.pipe()
    os.read(read_end, 1)


def swallows_the_interruption():
    for _ in range(2):  # the timer fires again after the first interruption is swallowed
        try:
            while True:
                pass
        except BaseException:
            pass
    return "gave up"


def raises_another_error_when_interrupted():
    try:
        while True:
            pass
    except BaseException:
        raise ValueError("cleaning up") from None


def exits_cleanly():
    os._exit(0)


def in_a_child_only(fn, parent):
    # Run here (by a guard that no longer isolates) fn would end pytest itself, with exit status 0 even.
    if os.getpid() != parent:
        fn()


@pytest.mark.parametrize("text, seconds", [("2.5", 2.5), (3, 3.0), ("1e-3", 0.001)])
def test_a_limit_is_a_positive_number_of_seconds(text, seconds):
    assert parse_timeout(text) == seconds


@pytest.mark.parametrize(
    "value, message",
    [
        ("0", "timeout '0' must be a positive number of seconds"),
        (-1, "timeout -1 must be a positive number of seconds"),
        ("nan", "timeout 'nan' must be a positive number of seconds"),
        ("inf", "timeout 'inf' must be a positive number of seconds"),
        ("soon", "timeout 'soon' is not a number of seconds"),
        (None, "timeout None is not a number of seconds"),
    ],
)
def test_a_bad_limit_says_why(value, message):
    with pytest.raises(ValueError) as info:
        parse_timeout(value)
    assert str(info.value) == message


def test_exit_statuses_read_as_words():
    assert signal_name(11) == "SIGSEGV (signal 11)"
    assert signal_name(99) == "signal 99"
    assert describe_exitcode(-6) == "killed the process with SIGABRT (signal 6)"
    assert describe_exitcode(3) == "ended the process with exit status 3"
    assert describe_exitcode(0) == "ended the process with exit status 0"
    assert describe_status(3 << 8) == "ended the process with exit status 3"
    assert describe_status(signal.SIGKILL) == "killed the process with SIGKILL (signal 9)"


DUMP = f"""Timeout (0:00:01)!
Thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3/threading.py", line 320 in wait

Thread 0x00007f0000000002 (most recent call first):
  File "/plugin/obs.py", line 7 in helper
  File "/plugin/obs.py", line 3 in from_pp_tensors
  File "/x/transport.py", line 90 in pop_auxiliary_output_from_pp_tensors
  File "{guard_module.__file__}", line 10 in work
  File "/x/pytest.py", line 1 in main
"""


def test_a_dump_is_read_for_the_guarded_thread_and_cut_at_the_guard():
    frames = under_guard(frames_in_dump(DUMP))
    assert frames == [
        Frame("/plugin/obs.py", 7, "helper"),
        Frame("/plugin/obs.py", 3, "from_pp_tensors"),
        Frame("/x/transport.py", 90, "pop_auxiliary_output_from_pp_tensors"),
    ]
    assert render(frames[:1]) == '  File "/plugin/obs.py", line 7, in helper'
    # No guarded thread: the first thread with frames; nothing at all: no frames.
    assert frames_in_dump(DUMP.split("\n\n")[0]) == [Frame("/usr/lib/python3/threading.py", 320, "wait")]
    assert frames_in_dump("Fatal Python error: Aborted\n") == []


def test_a_pure_python_hang_is_interrupted_where_it_is_stuck():
    guard = Guard(0.3)
    with pytest.raises(Hang) as info:
        guard.call("pop", pop_auxiliary_output_from_pp_tensors, 1)
    assert str(info.value) == (
        "pop did not return within 0.3 s (the per-call time limit)\nstuck at (most recent call last):\n"
        + stack_line(
            pop_auxiliary_output_from_pp_tensors,
            "while n: n = n + 1  # noqa: E701 - one line, so that the interrupted line is this one  # fmt: skip",
        )
    )
    assert (info.value.call, info.value.limit) == ("pop", 0.3)
    # Counted: what a supervising parent merges, so that its later calls get the shorter limits too.
    assert guard.state() == {"hangs": 1, "slowest": {}}


def test_a_hang_with_no_stack_to_show_is_one_line():
    # A hang no frame of the guarded call was seen in (a stack cut away at the guard) says only what and how long.
    hang = Hang("pop", 0.3, "the per-call time limit", "")
    assert (str(hang), hang.stack) == ("pop did not return within 0.3 s (the per-call time limit)", "")


def test_code_that_catches_the_interruption_and_returns_still_hung():
    with pytest.raises(Hang) as info:
        Guard(0.2).call("add", swallows_the_interruption)
    assert str(info.value).startswith("add did not return within 0.2 s (the per-call time limit)\nstuck at")


def test_code_that_turns_the_interruption_into_another_error_still_hung():
    guard = Guard(0.2)
    with pytest.raises(Hang) as info:
        guard.call("pop", raises_another_error_when_interrupted)
    assert str(info.value).startswith("pop did not return within 0.2 s (the per-call time limit)\nstuck at")
    assert (guard.hangs, repr(guard)) == (1, "Guard(timeout=0.2)")


def test_after_a_hang_later_calls_are_judged_against_the_calls_that_returned():
    guard = Guard(5)
    assert guard.call("pop", pop_auxiliary_output_from_pp_tensors, 0) == 0
    assert guard.limit("pop") == (5, "the per-call time limit")
    guard.hangs = 1
    assert guard.limit("pop") == (
        0.1,
        "after a first hang, 10x the slowest pop that returned, at least 0.1 s; the per-call limit is 5 s",
    )
    guard.slowest["pop"] = 0.2
    assert guard.limit("pop")[0] == pytest.approx(2.0)
    guard.slowest["pop"] = 0.6
    assert guard.limit("pop") == (5, "the per-call time limit")


def test_a_childs_guard_state_is_merged_not_added():
    guard = Guard(5)
    guard.hangs, guard.slowest = 1, {"add": 0.5}
    guard.merge({"hangs": 2, "slowest": {"add": 0.1, "pop": 0.3}})
    assert (guard.hangs, guard.slowest) == (2, {"add": 0.5, "pop": 0.3})
    assert guard.state() == {"hangs": 2, "slowest": {"add": 0.5, "pop": 0.3}}


def test_a_slow_call_within_its_limit_returns_and_raises_as_it_would():
    guard = Guard(1)
    assert guard.call("pop", lambda: time.sleep(0.2) or "done") == "done"
    with pytest.raises(KeyError):
        guard.call("pop", {}.__getitem__, "x")
    assert guard.hangs == 0 and guard.slowest["pop"] >= 0.2


def test_a_call_from_another_thread_runs_without_the_timer():
    result = []
    worker = threading.Thread(target=lambda: result.append(Guard(1).call("add", lambda: 7)))
    worker.start()
    worker.join()
    assert result == [7]


def isolated(timeout=0.5):
    guard = Guard(timeout)
    guard.isolated = True
    return guard


@pytest.mark.parametrize(
    "fn, message",
    [
        # os._exit leaves no stack to name an inner call by: the guarded call is named.
        (exits_with_3, "add ended the process with exit status 3"),
        (segfaulting, "add killed the process with SIGSEGV (signal 11)"),
        (exits_cleanly, "add ended the process with exit status 0 before it answered"),
    ],
)
def test_an_isolated_call_that_ends_its_process_is_a_crash(fn, message):
    with pytest.raises(Crash) as info:
        isolated().call("add", in_a_child_only, fn, os.getpid())
    assert str(info.value).splitlines()[0] == message


def test_a_crash_shows_the_stack_faulthandler_wrote():
    with pytest.raises(Crash) as info:
        isolated().call("add", segfaulting)
    assert stack_line(segfaulting, "ctypes.string_at(0)") in info.value.stack


def segfaults_in_a_thread_while_the_call_waits():
    read_end, _ = os.pipe()
    waiting, here = threading.get_ident(), sys._getframe()

    def crash_once_the_call_waits():
        # Only once the call waits on its pipe: where faulthandler then shows it is certain.
        while sys._current_frames()[waiting] is not here or here.f_lineno != WAITS_AT:
            time.sleep(0.001)
        segfaulting()

    threading.Thread(target=crash_once_the_call_waits).start()
    os.read(read_end, 1)


WAITS_AT = line_of(segfaults_in_a_thread_while_the_call_waits, "os.read(read_end, 1)")


def test_a_crash_in_a_thread_the_call_started_shows_where_the_call_was():
    # faulthandler writes every thread's stack: the finding shows the guarded call's, not the crashed thread's.
    with pytest.raises(Crash) as info:
        isolated(5).call("add", segfaults_in_a_thread_while_the_call_waits)
    assert str(info.value) == (
        "add killed the process with SIGSEGV (signal 11)\nwhere (most recent call last):\n"
        + stack_line(segfaults_in_a_thread_while_the_call_waits, "os.read(read_end, 1)")
    )


def test_an_isolated_hang_no_signal_reaches_is_stopped_with_its_stack():
    with pytest.raises(Hang) as info:
        isolated(0.3).call("pop", blocks_every_signal)
    assert str(info.value).startswith(
        "pop did not return within 0.3 s (the per-call time limit)\nstuck at (most recent call last):\n"
    )
    assert info.value.stack.endswith(stack_line(blocks_every_signal, "os.read(read_end, 1)"))


def crashes_in_a_child(parent):
    if os.getpid() != parent:
        os._exit(3)


def test_an_isolated_call_is_rehearsed_with_its_keyword_arguments_too():
    # The child runs the very call this process would: only there does it end its process.
    with pytest.raises(Crash) as info:
        isolated().call("add", crashes_in_a_child, parent=os.getpid())
    assert str(info.value) == "add ended the process with exit status 3"


def test_an_isolated_hang_after_a_first_is_judged_against_the_same_calls_that_returned():
    guard = isolated(5)
    guard.hangs, guard.slowest = 1, {"pop": 0.015, "add": 0.2}
    with pytest.raises(Hang) as info:
        guard.call("pop", blocks_every_signal)
    assert str(info.value).splitlines()[0] == (
        "pop did not return within 0.15 s (after a first hang, 10x the slowest pop that returned, at least 0.1 s; "
        "the per-call limit is 5 s)"
    )
    assert guard.hangs == 2
    # The hang reported, the process is idle again: a supervisor does not kill it while the finding is written.
    assert guard.kill_deadline() == pytest.approx(time.monotonic() + 60, abs=1)


def test_while_a_call_is_rehearsed_a_supervisor_waits_past_the_rehearsals_own_deadline(tmp_path):
    # What a supervisor of this process reads, seen from the rehearsal child (the deadline lives in shared memory).
    guard, seen = isolated(0.5), tmp_path / "seen"

    def reads_the_deadline():
        if not seen.exists():
            seen.write_text(repr(guard.kill_deadline() - time.monotonic()))

    guard.call("pop", reads_the_deadline)
    # The rehearsal child is stopped 0.1 s past the limit; the supervisor's kill comes a grace later still.
    assert float(seen.read_text()) > 0.5 + 0.1 + guard_module.KILL_GRACE


@pytest.mark.subprocess
def test_a_supervised_process_waiting_on_a_rehearsed_call_is_left_to_report_its_hang():
    # The supervisor of the test's process must not kill it while its rehearsal child runs out its limit.
    guard = isolated(1.2)

    def work():
        try:
            guard.call("pop", blocks_every_signal)
        except Hang as exc:
            return str(exc).splitlines()[0]

    outcome, value = guard.supervised(work)
    assert (outcome.finished, value) == (True, "pop did not return within 1.2 s (the per-call time limit)")
    assert guard.hangs == 1


def test_an_isolated_call_that_returns_runs_again_here_for_its_effects():
    seen = []
    guard = isolated()
    assert guard.call("pop", lambda: seen.append(1) or len(seen)) == 1
    assert seen == [1]
    with pytest.raises(ZeroDivisionError):
        guard.call("pop", lambda: 1 / 0)


def test_calls_inside_a_guarded_call_run_as_they_are():
    guard = isolated()
    assert guard.call("pop", lambda: guard.call("from_pp_tensors", lambda: os.getpid())) == os.getpid()


def test_the_guard_installed_for_a_test_is_the_current_one():
    guard = Guard(1)
    assert current() is None
    with guard.installed():
        assert current() is guard
    assert current() is None


@pytest.mark.subprocess
def test_a_supervisor_kills_a_process_past_its_calls_deadline():
    guard = Guard(0.2)
    guard.idle()
    assert guard.kill_deadline() == pytest.approx(time.monotonic() + 60, abs=1)

    def stuck() -> bytes:
        guard.call("pop", blocks_every_signal)
        return b"returned"

    outcome = run_forked(stuck, deadline=guard.kill_deadline)
    assert (outcome.answer, outcome.stopped, outcome.describe()) == (None, True, "was stopped at its deadline")
    # Killed once the grace after the deadline was over, not before (it never returns by itself).
    assert outcome.seconds >= 1.2


@pytest.mark.subprocess
def test_a_hung_child_that_never_writes_the_stack_asked_for_is_waited_for_a_while_then_stopped():
    # Its faulthandler timer would fire long after the deadline (a loaded machine starts it late):
    # the supervisor waits a second past the deadline for the stack, then kills the child without one.
    start = time.monotonic()
    outcome = run_forked(lambda: time.sleep(60) or b"", deadline=lambda: start + 0.2, dump_after=60)
    assert (outcome.answer, outcome.stopped, outcome.dump) == (None, True, "")
    assert time.monotonic() - start >= 1.2


def test_a_forked_child_leaves_the_callers_garbage_collector_as_it_was():
    # A process that froze its heap (a pre-fork server, ppaux's mutation runs) or switched its
    # collector off finds both as it left them; the child starts with what it inherits frozen.
    def collector() -> bytes:
        return f"{gc.isenabled()} {gc.get_freeze_count() > 0}".encode()

    gc.freeze()  # left frozen, as a pre-fork server leaves its heap (this run's conftest freezes it too)
    try:
        # Still frozen: the count itself moves as frozen objects die (or a tracer freezes more).
        outcome = run_forked(collector, deadline=lambda: None)
        assert (outcome.answer, gc.isenabled(), gc.get_freeze_count() > 0) == (b"True True", True, True)
        gc.disable()
        outcome = run_forked(collector, deadline=lambda: None)
        assert (outcome.answer, gc.isenabled(), gc.get_freeze_count() > 0) == (b"False True", False, True)
    finally:
        gc.enable()


def test_an_empty_answer_is_an_answer():
    outcome = run_forked(lambda: b"", deadline=lambda: None)
    assert (outcome.answer, outcome.finished) == (b"", True)


def answered(call):
    """What ``call()`` returns, waited for in a thread with a generous limit that is only a safety
    net ($PPAUX_TIMEOUT_FACTOR scales it): a call still waiting then fails the test, it does not hang it."""
    result = []
    waiter = threading.Thread(target=lambda: result.append(call()), daemon=True)
    waiter.start()
    waiter.join(safety_limit(120))
    assert result, "no answer while a process the child started was still running"
    return result[0]


def test_a_child_whose_work_raises_did_not_answer():
    outcome = run_forked(lambda: 1 / 0, deadline=lambda: None)
    assert (outcome.finished, outcome.describe()) == (False, "ended the process with exit status 70")


class _StopAtTheEnd(BaseException):
    """As a lane's stop (SIGTERM) that lands while coverage's wrapped os._exit saves its data."""


def _raises_at_the_end(status: int) -> None:
    raise _StopAtTheEnd()


def _replaces_the_end() -> None:
    os._exit = lambda status: None  # type: ignore[assignment]  # code under test that puts its own there


@pytest.mark.parametrize(
    "wrapped_exit, body",
    [(_raises_at_the_end, lambda: None), (os._exit, _replaces_the_end)],
    ids=["what wraps os._exit raises", "the code under test replaces os._exit"],
)
def test_a_forked_child_ends_there_whatever_its_end_meets(monkeypatch, wrapped_exit, body):
    # A child that unwinds past its end runs on as a copy of this process (a test run twice).
    monkeypatch.setattr(os, "_exit", wrapped_exit)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's side
        try:
            run_child(body)
        finally:
            posix._exit(99)  # run_child returned or raised: what this test is here to catch
    monkeypatch.undo()
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


@pytest.mark.subprocess
def test_a_process_the_child_started_neither_delays_the_answer_nor_outlives_it():
    def work() -> bytes:
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        return str(sleeper.pid).encode()

    # Answered while the sleeper still had minutes to go (the wait is a safety net, not a measure).
    outcome = answered(lambda: run_forked(work, deadline=lambda: time.monotonic() + 300))
    assert outcome.finished
    pid = int(outcome.answer)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the child's child {pid} outlived it")


def test_an_error_in_the_supervisor_kills_and_reaps_the_child():
    def deadline():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_forked(lambda: time.sleep(30) or b"", deadline=deadline)


def test_a_child_that_works_a_while_is_waited_for_and_a_long_answer_read_whole():
    # The child works until the supervisor has looked at its deadline a second time: it waited once,
    # in vain, for an answer in between, and took the child still at work for neither dead nor done.
    go_read, go_write = os.pipe()
    looks: list[None] = []

    def deadline() -> None:
        looks.append(None)
        if len(looks) == 2:
            os.write(go_write, b"go")
        return None

    try:
        outcome = run_forked(lambda: os.read(go_read, 2) and b"done", deadline=deadline)
    finally:
        os.close(go_read)
        os.close(go_write)
    assert (outcome.answer, outcome.finished) == (b"done", True) and len(looks) >= 2
    # Longer than a pipe holds: it arrives in pieces.
    assert run_forked(lambda: b"x" * 300_000, deadline=lambda: None).answer == b"x" * 300_000


def test_a_child_that_dies_while_a_process_it_started_holds_the_pipe_is_seen_dead():
    def work() -> bytes:
        if os.fork() == 0:  # inherits the pipe's write end, as a process an implementation starts may
            time.sleep(600)
        os._exit(5)

    outcome = answered(lambda: run_forked(work, deadline=lambda: time.monotonic() + 300))
    assert (outcome.finished, outcome.describe()) == (False, "ended the process with exit status 5")
