"""The fork server (ppaux.testing.containment.ForkServer): a pytest process runs its contained tests one
after another in one long-lived worker; a crash or hang costs that test a rerun alone and the worker a
fresh fork, every other test's verdict kept; workers are recycled after N tests or when their memory grows;
fixtures are set up and torn down once per worker, as pytest would in one process; the rerun meets the
examples the worker met."""

from __future__ import annotations

import os

import pytest

from ppaux.testing import containment
from ppaux.testing.suite import SuiteRun

# Each test writes "<name> <pid>" to $FORK_LOG: which process ran it.
LOG = """
import os


def log(name):
    with open(os.environ["FORK_LOG"], "a") as fh:
        fh.write(f"{name} {os.getpid()}\\n")
"""

TESTS = """
import os

import pytest

from forklog import log

KEEP = []


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["a", "b"])
def test_before(name):
    log(name)


@pytest.mark.isolated
def test_dies():
    log("dies")
    if os.environ.get("FORK_DIES"):
        os._exit(4)


@pytest.mark.isolated
def test_grows():
    log("grows")
    if os.environ.get("FORK_GROWS"):
        KEEP.append(bytearray(64 << 20))


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["c", "d"])
def test_after(name):
    log(name)
"""


def run(pytester, monkeypatch, *args, **env):
    pytester.makepyfile(forklog=LOG, test_forks=TESTS)
    log = pytester.path / "fork.log"
    monkeypatch.setenv("FORK_LOG", str(log))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)
    return result, [tuple(line.split()) for line in log.read_text().splitlines()]


def workers(lines):
    """The tests each process ran, in the order the processes first ran one."""
    order: dict[str, list[str]] = {}
    for name, pid in lines:
        order.setdefault(pid, []).append(name)
    return list(order.values()), set(order)


def test_the_contained_tests_of_a_run_share_one_forked_worker(pytester, monkeypatch):
    result, lines = run(pytester, monkeypatch)
    result.assert_outcomes(passed=6)
    groups, pids = workers(lines)
    assert groups == [["a", "b", "dies", "grows", "c", "d"]]
    assert str(os.getpid()) not in pids


def test_the_tests_in_a_directory_named_as_a_copy_of_the_suite_run_contained_as_the_suites(pytester, monkeypatch):
    """ppaux mutate copies the suite's modules into its scratch project's tests/ and names that directory in
    the ini value ppaux_suite_copies: their tests run as the suite's, in the worker; a user's test does not."""
    pytester.makeini("[pytest]\nppaux_suite_copies = copied\n")
    pytester.makepyfile(
        forklog=LOG, test_users="from forklog import log\n\ndef test_users(ppaux_impl):\n    log('users')\n"
    )
    (pytester.path / "copied").mkdir()
    (pytester.path / "copied" / "test_add.py").write_text(
        "from forklog import log\n\ndef test_copied(ppaux_impl):\n    log('copied')\n"
    )
    monkeypatch.syspath_prepend(str(pytester.path))
    log = pytester.path / "fork.log"
    monkeypatch.setenv("FORK_LOG", str(log))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", "copied", "test_users.py")
    result.assert_outcomes(passed=2)
    ran_in = dict(line.split() for line in log.read_text().splitlines())
    assert ran_in["users"] == str(os.getpid()) != ran_in["copied"]


def test_a_test_that_kills_the_worker_is_rerun_alone_and_the_next_test_gets_a_fresh_worker(pytester, monkeypatch):
    result, lines = run(pytester, monkeypatch, FORK_DIES="1")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        ["*crash: the test's process ended the process with exit status 4, outside any single call*"]
    )
    # The worker, the rerun alone, then a fresh worker for the rest.
    groups, pids = workers(lines)
    assert groups == [["a", "b", "dies"], ["dies"], ["grows", "c", "d"]]
    assert str(os.getpid()) not in pids


def test_a_worker_is_recycled_after_so_many_tests(pytester, monkeypatch):
    monkeypatch.setattr(containment, "RECYCLE_AFTER", 2)
    result, lines = run(pytester, monkeypatch)
    result.assert_outcomes(passed=6)
    assert workers(lines)[0] == [["a", "b"], ["dies", "grows"], ["c", "d"]]


def test_a_worker_whose_memory_grows_past_the_limit_is_recycled_after_its_next_test(pytester, monkeypatch):
    monkeypatch.setattr(containment, "RECYCLE_GROWTH", 16 << 20)
    result, lines = run(pytester, monkeypatch, FORK_GROWS="1")
    result.assert_outcomes(passed=6)
    assert workers(lines)[0] == [["a", "b", "dies", "grows", "c"], ["d"]]


FIXTURES = """
import os

import pytest

from forklog import log


@pytest.fixture(scope="module")
def opened():
    log("setup")
    yield
    log("teardown")


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_in_the_worker(opened, name):
    log(name)
    assert name != os.environ.get("FORK_FAILS")


def test_here(opened):
    log("here")
"""


def test_a_workers_module_fixture_is_set_up_once_and_torn_down_before_the_next_test_runs_here(pytester, monkeypatch):
    pytester.makepyfile(forklog=LOG, test_fixtures=FIXTURES)
    log = pytester.path / "fork.log"
    monkeypatch.setenv("FORK_LOG", str(log))
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly").assert_outcomes(passed=4)
    lines = [tuple(line.split()) for line in log.read_text().splitlines()]
    worker, here = lines[0][1], str(os.getpid())
    assert lines == [
        ("setup", worker),
        ("a", worker),
        ("b", worker),
        ("c", worker),
        ("teardown", worker),
        ("setup", here),
        ("here", here),
        ("teardown", here),
    ]


def test_a_run_stopped_early_still_tears_down_what_its_worker_set_up(pytester, monkeypatch):
    pytester.makepyfile(forklog=LOG, test_fixtures=FIXTURES)
    log = pytester.path / "fork.log"
    monkeypatch.setenv("FORK_LOG", str(log))
    monkeypatch.setenv("FORK_FAILS", "a")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-x")
    result.assert_outcomes(failed=1)
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["setup", "a", "teardown"]


SEEDED = """
import os

import pytest
from hypothesis import given, settings, strategies as st

from forklog import log


# Hypothesis draws each run's seed from one generator: a test before the one that dies moves it on.
@pytest.mark.isolated
@settings(derandomize=False, database=None, max_examples=5)
@given(st.integers())
def test_draws_first(x):
    pass


@pytest.mark.isolated
@settings(derandomize=False, database=None, max_examples=50)
@given(st.integers())
def test_dies_on_the_tenth_example(x):
    log(str(x))
    with open(os.environ["FORK_LOG"]) as fh:
        seen = len(fh.read().splitlines())
    if seen == 10:
        os._exit(9)
"""


def test_the_rerun_alone_meets_the_examples_the_worker_met(pytester, monkeypatch):
    pytester.makepyfile(forklog=LOG, test_seeded=SEEDED)
    log = pytester.path / "fork.log"
    monkeypatch.setenv("FORK_LOG", str(log))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    # The worker died on its tenth example; the rerun alone went past it and passed.
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*exit status 9, but it passed when run again with each call isolated*"])
    examples = [line.split()[0] for line in log.read_text().splitlines()]
    assert len(examples) > 20
    assert examples[10:20] == examples[:10]


@pytest.mark.subprocess  # two xdist workers, each with a fork server of its own
def test_each_xdist_worker_runs_its_contained_tests_in_a_forked_worker_of_its_own(pytester, monkeypatch):
    result, lines = run(pytester, monkeypatch, "-n", "2", FORK_DIES="1")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["*crash: the test's process ended the process with exit status 4, outside*"])
    # Every test ran once in a worker, the one that died once more alone.
    assert sorted(name for name, _ in lines) == ["a", "b", "c", "d", "dies", "dies", "grows"]


def test_a_suite_run_in_process_asks_pytest_for_it():
    # `ppaux check --isolation off`: the same run as pytest's --ppaux-isolation=off.
    assert SuiteRun(isolation="off").options()[-2:] == ["--ppaux-isolation", "off"]
    assert "--ppaux-isolation" not in SuiteRun().options()


CUDA_TESTS = """
import pytest

from forklog import log


@pytest.mark.isolated
@pytest.mark.parametrize("name", ["first", "second", "third"])
def test_contained(name):
    log(name)
"""

# Stands in for CUDA initialized in the pytest process (by a user's GPU test or fixture) where the
# test asks: at the start of the run, or once the first contained test is done.
CUDA_CONFTEST = """
import os

import torch


def _initialize():
    torch.cuda.is_initialized = lambda: True


if os.environ["CUDA_AT"] == "start":
    _initialize()


def pytest_runtest_logfinish(nodeid):
    if nodeid.endswith("[first]") and os.environ["CUDA_AT"] == "after-first":
        _initialize()
"""


@pytest.mark.parametrize(("cuda_at", "in_worker"), [("start", []), ("after-first", ["first"])])
def test_once_cuda_is_initialized_here_the_contained_tests_run_here_and_the_run_says_why(
    pytester, monkeypatch, cuda_at, in_worker
):
    """A worker forked after CUDA's initialization could not use it: every test there would fail for that."""
    import torch

    from ppaux.testing.plugin import CUDA_IN_PROCESS

    monkeypatch.setattr(torch.cuda, "is_initialized", torch.cuda.is_initialized)  # put back after the run
    pytester.makepyfile(forklog=LOG, test_cuda=CUDA_TESTS)
    pytester.makeconftest(CUDA_CONFTEST)
    log = pytester.path / "fork.log"
    monkeypatch.setenv("FORK_LOG", str(log))
    monkeypatch.setenv("CUDA_AT", cuda_at)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    ran_in = dict(line.split() for line in log.read_text().splitlines())
    assert [name for name, pid in ran_in.items() if pid != str(os.getpid())] == in_worker
    # Said once, on the first test it ran here.
    assert result.stdout.str().count(f"PytestWarning: {CUDA_IN_PROCESS}") == 1
