"""The plugin of mutation runs' test runs: the first run records durations, later runs go cheapest
first, and the collected suite is frozen for the garbage collector. Which tests run never changes."""

from __future__ import annotations

import gc
import json
import types

import pytest

from ppaux.mutation.mutant_runs import DURATIONS, FIRST, DurationRecorder, recorded_killers

PLUGIN = ("-p", "ppaux.mutation.mutant_runs", "-p", "no:cacheprovider")

# Each test appends its name to order.txt, so the run's order can be read back. Which test is slow is
# what the recorded durations say (written by each test below that needs them).
TESTS = """
from pathlib import Path

def _ran(name):
    with open(Path(__file__).parent / "order.txt", "a") as f:
        f.write(name + "\\n")

def test_slow():
    _ran("slow")

def test_quick():
    _ran("quick")

def test_failing():
    _ran("failing")
    assert False
"""


@pytest.fixture
def thawed():
    """A nested run freezes this process's objects too: where this run had frozen none, give them back
    to the collector afterwards (a run that froze its heap keeps it frozen, as it had it)."""
    had_frozen = gc.get_freeze_count() > 0
    yield
    if not had_frozen:
        gc.unfreeze()


def _order(pytester) -> list:
    order = (pytester.path / "order.txt").read_text().split()
    (pytester.path / "order.txt").unlink()
    return order


def test_the_first_run_records_each_tests_duration_and_keeps_the_order(pytester, thawed):
    pytester.makepyfile(test_demo=TESTS)
    run = pytester.inline_run(*PLUGIN)
    run.assertoutcome(passed=2, failed=1)
    assert _order(pytester) == ["slow", "quick", "failing"]
    seconds = json.loads((pytester.path / DURATIONS).read_text())
    assert sorted(seconds) == ["test_demo.py::test_failing", "test_demo.py::test_quick", "test_demo.py::test_slow"]
    # pytest's own call durations, as that run reported them.
    calls = run.getreports("pytest_runtest_logreport")
    assert seconds == {report.nodeid: report.duration for report in calls if report.when == "call"}


def test_the_recorder_keeps_each_tests_call_duration_as_pytest_reports_it(tmp_path):
    """Scripted reports: the call phase's duration is recorded, setup and teardown are not."""
    recorder = DurationRecorder(tmp_path)
    for nodeid, when, duration in (("t.py::a", "setup", 9.0), ("t.py::a", "call", 1.5), ("t.py::b", "call", 0.25)):
        recorder.pytest_runtest_logreport(types.SimpleNamespace(nodeid=nodeid, when=when, duration=duration))
    recorder.pytest_sessionfinish()
    assert json.loads((tmp_path / DURATIONS).read_text()) == {"t.py::a": 1.5, "t.py::b": 0.25}


def test_later_runs_go_cheapest_first_with_unrecorded_tests_last_and_never_rewrite_the_record(pytester, thawed):
    pytester.makepyfile(test_demo=TESTS)
    recorded = {"test_demo.py::test_slow": 2.0, "test_demo.py::test_failing": 0.5}
    (pytester.path / DURATIONS).write_text(json.dumps(recorded))
    pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=2, failed=1)
    assert _order(pytester) == ["failing", "slow", "quick"]
    # -x, as mutmut runs a mutant: the cheapest failing test ends the run before the others.
    pytester.runpytest_inprocess(*PLUGIN, "-x").assert_outcomes(failed=1)
    assert _order(pytester) == ["failing"]
    assert json.loads((pytester.path / DURATIONS).read_text()) == recorded


def test_a_run_that_runs_no_test_records_nothing(pytester, thawed):
    pytester.makepyfile(test_demo=TESTS)
    pytester.runpytest_inprocess(*PLUGIN, "--collect-only")
    assert not (pytester.path / DURATIONS).exists()


def test_the_collected_suite_is_frozen_for_the_garbage_collector(pytester, thawed):
    pytester.makepyfile(test_frozen="import gc\n\ndef test_frozen():\n    assert gc.get_freeze_count() > 0\n")
    gc.unfreeze()
    pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=1)


def test_a_mutants_run_records_the_test_that_killed_it_and_no_other_run_records_one(pytester, thawed, monkeypatch):
    pytester.makepyfile(test_demo=TESTS)
    for not_a_mutant in ("", "stats", "fail"):
        monkeypatch.setenv("MUTANT_UNDER_TEST", not_a_mutant)
        pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=2, failed=1)
    assert recorded_killers(pytester.path) == {}
    monkeypatch.setenv("MUTANT_UNDER_TEST", "m.x_f__mutmut_1")
    pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=2, failed=1)
    assert recorded_killers(pytester.path) == {"m.x_f__mutmut_1": "test_demo.py::test_failing"}


def test_a_mutants_earlier_killer_runs_first_and_the_other_mutants_keep_the_cheapest_first_order(
    pytester, thawed, monkeypatch
):
    pytester.makepyfile(test_demo=TESTS)
    (pytester.path / DURATIONS).write_text(
        json.dumps({"test_demo.py::test_slow": 2.0, "test_demo.py::test_failing": 0.5})
    )
    (pytester.path / FIRST).write_text(json.dumps({"m.x_f__mutmut_1": "test_demo.py::test_quick"}))
    monkeypatch.setenv("MUTANT_UNDER_TEST", "m.x_f__mutmut_1")
    pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=2, failed=1)
    assert _order(pytester) == ["quick", "failing", "slow"]
    monkeypatch.setenv("MUTANT_UNDER_TEST", "m.x_f__mutmut_2")
    pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=2, failed=1)
    assert _order(pytester) == ["failing", "slow", "quick"]
