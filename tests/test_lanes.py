"""Contained tests on several cores (ppaux.testing.lanes, --ppaux-workers N): the tests are dealt
round-robin to N lanes, each with a supervised forked worker of its own; the reports come back in the
session's order; a crash costs its test and its lane's worker, a lane that ends costs the tests it
held, a run stopped early leaves no process behind."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
from pathlib import Path

import pytest

from ppaux.isolation import safety_limit
from ppaux.testing import lanes
from ppaux.testing.lanes import Lanes
from ppaux.testing.suite import MOST_WORKERS, parse_workers, usable_workers
from tests.test_fork_server import run, workers

KILLS_ITS_LANE = """
import os
import signal

import pytest

from forklog import log


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["a", "b"])
def test_before(name):
    log(name)


@pytest.mark.isolated
def test_kills_its_lane():
    # A process the code under test forked holds every pipe its worker had, the lane's too.
    holder = os.fork()
    if holder == 0:
        try:
            signal.pause()  # until the test kills it
        finally:
            os._exit(0)
    log("holder", holder)
    log("kills")
    os.kill(os.getppid(), signal.SIGKILL)
    signal.pause()


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["c", "d"])
def test_after(name):
    log(name)


def test_here():
    log("here")


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["e", "f"])
def test_next_stretch(name):
    log(name)
"""

STOPS_EARLY = """
import os
import signal
import subprocess
import sys

import pytest

from forklog import log


@pytest.mark.isolated
def test_fails_first():
    log("fails")
    # Once the other lane's test has started its process (opening the FIFO waits for it): the stop finds
    # both running.
    with open(os.environ["FORK_LOG"] + ".started"):
        pass
    assert False


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["waits", "never"])
def test_other_lane(name):
    log(name)
    sleeper = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    log("sleeper", sleeper.pid)
    with open(os.environ["FORK_LOG"] + ".started", "w"):
        pass
    signal.pause()
"""

LONG_FAILURE = """
import pytest


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["a", "b"])
def test_long(name):
    assert name == "b", "x" * 300_000 + " END"
"""

# Each test writes "<name> <pid>" to $FORK_LOG (a process it started: "<name> <its pid>").
LOG_WITH_PIDS = """
import os


def log(name, pid=None):
    with open(os.environ["FORK_LOG"], "a") as fh:
        fh.write(f"{name} {pid or os.getpid()}\\n")
"""

message = (
    "the ppaux lane that held this test ended before it reported it (killed the process with SIGKILL (signal 9)): "
    "a failure of ppaux, not a finding about the implementation"
)


def lanes_run(pytester, monkeypatch, tests: str, *args: str):
    pytester.makepyfile(forklog=LOG_WITH_PIDS, test_lanes=tests)
    log = pytester.path / "fork.log"
    log.write_text("")
    os.mkfifo(f"{log}.started")
    monkeypatch.setenv("FORK_LOG", str(log))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--ppaux-workers=2", *args)
    return result, [line.split() for line in log.read_text().splitlines()]


def children() -> list[str]:
    """This process's child processes, zombies included (reaped ones are gone)."""
    mine = str(os.getpid())
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if fields[1] == mine:
            found.append(stat.parent.name)
    return found


def ended(pid: int | str) -> bool:
    """Whether the process is gone (a zombie waiting for a reaper counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def all_ended(pids) -> bool:
    """Whether every process has ended, waiting for each to end (Linux's pidfd: an event, not a poll) up
    to a limit that is a safety net, not a measure."""
    for pid in pids:
        try:
            handle = os.pidfd_open(int(pid))
        except ProcessLookupError:
            continue  # gone already
        try:
            select.select([handle], [], [], safety_limit(30.0))
        finally:
            os.close(handle)
    return all(ended(pid) for pid in pids)


def test_two_workers_each_run_their_share_and_the_reports_come_in_the_sessions_order(pytester, monkeypatch):
    result, lines = run(pytester, monkeypatch, "--ppaux-workers", "2", "-v")
    # Forking the lanes leaves this process's collector as it was.
    assert gc.isenabled()
    result.assert_outcomes(passed=6)
    groups, pids = workers(lines)
    assert sorted(groups) == [["a", "dies", "c"], ["b", "grows", "d"]]
    assert str(os.getpid()) not in pids
    result.stdout.fnmatch_lines(
        [
            "*test_before?a? PASSED*",
            "*test_before?b? PASSED*",
            "*test_dies PASSED*",
            "*test_grows PASSED*",
            "*test_after?c? PASSED*",
            "*test_after?d? PASSED*",
        ]
    )


def test_a_test_that_kills_its_worker_costs_that_test_and_its_lane_goes_on_with_a_fresh_worker(pytester, monkeypatch):
    result, lines = run(pytester, monkeypatch, "--ppaux-workers", "2", FORK_DIES="1")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        ["*crash: the test's process ended the process with exit status 4, outside any single call*"]
    )
    # Its lane's worker, the rerun alone, a fresh worker for the lane's last test; the other lane untouched.
    assert sorted(workers(lines)[0]) == [["a", "dies"], ["b", "grows", "d"], ["c"], ["dies"]]


@pytest.mark.parametrize("stop", [False, True], ids=["the run goes on", "-x"])
def test_a_lane_that_ends_before_it_reported_fails_each_test_it_held(pytester, monkeypatch, tmp_path, stop):
    junit, rows = tmp_path / "junit.xml", tmp_path / "rows.jsonl"
    args = [f"--junitxml={junit}", f"--ppaux-results={rows}"] + (["-x"] if stop else [])
    before = children()
    result, lines = lanes_run(pytester, monkeypatch, KILLS_ITS_LANE, *args)
    holder = next(pid for name, pid in lines if name == "holder")
    try:
        # Lanes: a, kills, d and b, c; the first is gone with "kills" and "d" unreported. Then a test here,
        # then a stretch of two more: the run goes on.
        ran = sorted(name for name, _ in lines if name != "holder")
        if stop:
            # The other lane may have started "c" before the stop reached it; nothing after it ran.
            assert (result.ret, [name for name in ran if name != "c"]) == (
                pytest.ExitCode.TESTS_FAILED,
                ["a", "b", "kills"],
            )
            result.assert_outcomes(passed=2, failed=1)
        else:
            assert (result.ret, ran) == (pytest.ExitCode.TESTS_FAILED, ["a", "b", "c", "e", "f", "here", "kills"])
            result.assert_outcomes(passed=6, failed=2)
            result.stdout.fnmatch_lines(["*_ test_kills_its_lane _*", message, "*_ test_after?d? _*", message])
        # As pytest reports it (a failure of the test's call, not an error), in JUnit and in ppaux's rows.
        assert f'<failure message="{message}">' in junit.read_text()
        failed = [json.loads(row) for row in rows.read_text().splitlines() if '"failed"' in row]
        assert failed[0]["nodeid"] == "test_lanes.py::test_kills_its_lane"
        assert failed[0]["error"] == message
        # Its worker, which waited for ever, ended with its lane; no process of the run is left.
        assert all_ended([pid for name, pid in lines if name == "kills"])
        assert set(children()) <= set(before)  # none of its own left
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(holder), signal.SIGKILL)


def test_a_run_stopped_early_stops_every_lane_and_leaves_no_process(pytester, monkeypatch):
    before = children()
    result, lines = lanes_run(pytester, monkeypatch, STOPS_EARLY, "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    # The other lane's test had started, waiting for ever beside a process it started: both went with
    # their lane's worker, and every lane was reaped.
    assert "sleeper" in [name for name, _ in lines]
    assert all_ended([pid for _, pid in lines])
    assert set(children()) <= set(before)  # none of its own left


def test_a_lane_that_does_not_stop_when_asked_is_killed_and_its_worker_with_it(pytester, monkeypatch):
    monkeypatch.setattr(lanes, "_stop", lambda signum, frame: None)
    monkeypatch.setattr(lanes, "STOP_WAIT", 0.2)
    before = children()
    result, lines = lanes_run(pytester, monkeypatch, STOPS_EARLY, "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    # Its worker ends with it; what the worker started is left (the lane could not kill its group).
    for pid in [pid for name, pid in lines if name == "sleeper"]:
        os.kill(int(pid), signal.SIGKILL)
    assert all_ended([pid for name, pid in lines if name != "sleeper"])
    assert set(children()) <= set(before)  # none of its own left


def test_a_report_longer_than_a_pipe_holds_comes_back_whole(pytester, monkeypatch):
    result, _ = lanes_run(pytester, monkeypatch, LONG_FAILURE)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*x END"])


def test_a_count_of_workers_is_a_whole_number_of_at_least_one():
    assert parse_workers("3") == 3
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(ValueError) as raised:
            parse_workers(bad)
        assert str(raised.value) == f"expected a whole number of workers >= 1, not {bad!r}"
    with pytest.raises(ValueError) as raised:
        Lanes(None, None, 0)  # type: ignore[arg-type]
    assert str(raised.value) == "a run needs at least one lane, not 0"
    assert Lanes(None, None, 1).count == 1  # type: ignore[arg-type]


@pytest.mark.parametrize("cores, expected", [(1, 1), (2, 2), (64, MOST_WORKERS)])
def test_by_default_a_worker_for_each_core_this_process_may_use(monkeypatch, cores, expected):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert usable_workers() == expected
