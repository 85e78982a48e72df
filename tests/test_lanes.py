"""Contained tests on several cores (ppaux.testing.lanes, --ppaux-workers N): the tests are dealt
round-robin to N lanes, each with a supervised forked worker of its own; the reports come back in the
session's order; a crash costs its test and its lane's worker, a lane that ends costs the tests it
held, a run stopped early leaves no process behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ppaux.isolation import safety_limit
from ppaux.testing import lanes
from ppaux.testing.lanes import Lanes
from ppaux.testing.suite import MOST_WORKERS, parse_workers, usable_workers
from tests.test_fork_server import LOG, run, workers

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
    log("kills")
    os.kill(os.getppid(), signal.SIGKILL)
    signal.pause()


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["c", "d"])
def test_after(name):
    log(name)
"""

STOPS_EARLY = """
import signal

import pytest

from forklog import log


@pytest.mark.isolated
def test_fails_first():
    log("fails")
    assert False


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["waits", "never"])
def test_other_lane(name):
    log(name)
    signal.pause()
"""


message = (
    "the ppaux lane that held this test ended before it reported it (killed the process with SIGKILL (signal 9)): "
    "a failure of ppaux, not a finding about the implementation"
)


def ended(pid: str) -> bool:
    """Whether the process is gone (a zombie waiting for a reaper counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def all_ended(pids) -> bool:
    """Whether every process has ended, waiting for it a while: a safety net, not a measure."""
    give_up = os.times().elapsed + safety_limit(30.0)
    while os.times().elapsed < give_up:
        if all(ended(pid) for pid in pids):
            return True
        os.sched_yield()
    return False


def test_two_workers_each_run_their_share_and_the_reports_come_in_the_sessions_order(pytester, monkeypatch):
    result, lines = run(pytester, monkeypatch, "--ppaux-workers", "2", "-v")
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
def test_a_lane_that_ends_before_it_reported_fails_each_test_it_held(pytester, monkeypatch, stop):
    pytester.makepyfile(forklog=LOG, test_lane=KILLS_ITS_LANE)
    log = pytester.path / "fork.log"
    monkeypatch.setenv("FORK_LOG", str(log))
    args = ("-x",) if stop else ()
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--ppaux-workers=2", *args)
    # Lanes: a, kills, d and b, c. The first's lane is gone with "kills" and "d" unreported.
    if stop:
        result.assert_outcomes(passed=2, failed=1)
        assert result.stdout.lines.count(message) == 1
        assert all_ended([line.split()[1] for line in log.read_text().splitlines()])
        return
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(["*_ test_kills_its_lane _*", message, "*_ test_after?d? _*", message])
    lines = [line.split() for line in log.read_text().splitlines()]
    assert sorted(name for name, _ in lines) == ["a", "b", "c", "kills"]
    # The worker that waited for ever ended with its lane.
    assert all_ended([pid for _, pid in lines])


def test_a_run_stopped_early_stops_every_lane_and_leaves_no_process(pytester, monkeypatch):
    pytester.makepyfile(forklog=LOG, test_stops=STOPS_EARLY)
    log = pytester.path / "fork.log"
    monkeypatch.setenv("FORK_LOG", str(log))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--ppaux-workers=2", "-x")
    result.assert_outcomes(failed=1)
    lines = [line.split() for line in log.read_text().splitlines()]
    # The lanes ran concurrently: the other tests may have started, each now waiting for ever.
    assert "fails" in [name for name, _ in lines]
    assert all_ended([pid for _, pid in lines])


def test_a_lane_that_does_not_stop_when_asked_is_killed_and_its_worker_with_it(pytester, monkeypatch):
    monkeypatch.setattr(lanes, "_stop", lambda signum, frame: None)
    monkeypatch.setattr(lanes, "STOP_WAIT", 0.2)
    pytester.makepyfile(forklog=LOG, test_stops=STOPS_EARLY)
    log = pytester.path / "fork.log"
    monkeypatch.setenv("FORK_LOG", str(log))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--ppaux-workers=2", "-x")
    result.assert_outcomes(failed=1)
    assert all_ended([pid for _, pid in (line.split() for line in log.read_text().splitlines())])


def test_a_count_of_workers_is_a_whole_number_of_at_least_one():
    assert parse_workers("3") == 3
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(ValueError) as raised:
            parse_workers(bad)
        assert str(raised.value) == f"expected a whole number of workers >= 1, not {bad!r}"
    with pytest.raises(ValueError) as raised:
        Lanes(None, None, 0)  # type: ignore[arg-type]
    assert str(raised.value) == "a run needs at least one lane, not 0"


@pytest.mark.parametrize("cores, expected", [(1, 1), (2, 2), (64, MOST_WORKERS)])
def test_by_default_a_worker_for_each_core_this_process_may_use(monkeypatch, cores, expected):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert usable_workers() == expected
