"""The pytest plugin: --ppaux-impl, usage errors, and the per-test results ``ppaux check`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppaux import conformance

PROPERTY = '''
import pytest
from hypothesis import given, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

@pytest.mark.contract
@pytest.mark.clause("demo.1")
@given(x=st.integers())
def test_small(x):
    """demo.1: every drawn integer is small."""
    assert x < 10

@pytest.mark.robustness
def test_plain():
    assert True

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass

class Counter(RuleBasedStateMachine):
    n = 0

    @rule()
    def step(self):
        self.n += 1
        assert self.n < 2

test_counter = Counter.TestCase
'''


def test_results_record_clause_marks_outcome_example_and_blob(pytester):
    pytester.makepyfile(test_demo=PROPERTY)
    out = pytester.path / "results.jsonl"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--hypothesis-profile=ci", f"--ppaux-results={out}")
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    rows = {r["nodeid"].split("::")[1]: r for r in map(json.loads, out.read_text().splitlines())}
    small = rows["test_small"]
    assert (small["clause"], small["marks"], small["outcome"], small["doc"]) == (
        "demo.1",
        ["contract"],
        "failed",
        "demo.1: every drawn integer is small.",
    )
    # The minimal example as the failure shows it after Hypothesis's header; a state machine's steps.
    assert small["example"] == "test_small(\n    x=10,\n)"
    counter = rows["test_counter"]
    assert counter["example"] == "state = Counter()\nstate.step()\nstate.step()\nstate.teardown()"
    assert counter["blob"].startswith("@reproduce_failure(") and counter["blob"] != small["blob"]
    assert small["blob"].startswith("@reproduce_failure(") and small["error"].startswith(
        "AssertionError: assert 10 < 10"
    )
    assert (rows["test_plain"]["outcome"], rows["test_plain"]["clause"], rows["test_plain"]["doc"]) == (
        "passed",
        None,
        "",
    )
    assert (rows["test_skipped"]["outcome"], rows["test_skipped"]["error"]) == ("skipped", "Skipped: not today")


FINDINGS = r'''
import pytest
from ppaux.isolation import Crash, Hang


class TestObserverChecks:
    """pop.9: an observer's checks, as its class says."""

    def test_in_a_class(self):
        """The method's own words."""
        assert False


def test_hang():
    raise Hang("pop", 0.5, "the per-call time limit", '  File "obs.py", line 3, in pop\n    while True: pass')


def test_crash():
    raise Crash("add", "killed the process with SIGSEGV (signal 11)", "")


def test_empty_message():
    raise ValueError("")


@pytest.mark.xfail(reason="known")
def test_xfail():
    raise ValueError("no")


def double(x):
    """
    >>> double(2)
    5
    """
    return 2 * x
'''


def test_results_record_hangs_and_crashes_with_where_they_were_and_any_kind_of_test(pytester):
    pytester.makepyfile(test_findings=FINDINGS)
    out = pytester.path / "results.jsonl"
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "--doctest-modules", f"--ppaux-results={out}")
    rows = {r["nodeid"].split("::", 1)[1]: r for r in map(json.loads, out.read_text().splitlines())}
    plain = {"clause": None, "marks": [], "doc": "", "example": None, "blob": None}
    # A hang's and a crash's row name the finding; the lines after the first say where the call was.
    assert rows["test_hang"] == dict(
        plain,
        nodeid="test_findings.py::test_hang",
        outcome="failed",
        error="Hang: pop did not return within 0.5 s (the per-call time limit)",
        finding="hang",
        detail='stuck at (most recent call last):\n  File "obs.py", line 3, in pop\n    while True: pass',
    )
    assert rows["test_crash"] == dict(
        plain,
        nodeid="test_findings.py::test_crash",
        outcome="failed",
        error="Crash: add killed the process with SIGSEGV (signal 11)",
        finding="crash",
        detail="",
    )
    assert rows["test_empty_message"] == dict(
        plain, nodeid="test_findings.py::test_empty_message", outcome="failed", error="ValueError: "
    )
    # A test in a class is described by its class, as the suite's stateful tests are.
    assert rows["TestObserverChecks::test_in_a_class"]["doc"] == "pop.9: an observer's checks, as its class says."
    # A doctest has no function and no docstring of its own to describe it.
    assert rows["test_findings.double"] == dict(
        plain,
        nodeid="test_findings.py::test_findings.double",
        outcome="failed",
        error="DocTestFailure: <DocTest test_findings.double from "
        f"{pytester.path / 'test_findings.py'}:30 (1 example)>",
    )
    # An expected failure is skipped; its error is pytest's report of the failure, ending at the raise.
    assert rows["test_xfail"]["outcome"] == "skipped"
    assert rows["test_xfail"]["error"].splitlines()[-1] == "test_findings.py:27: ValueError"


USES_PPAUX = "def test_one(ppaux_impl):\n    assert ppaux_impl.prefix\n"


def test_header_names_the_implementation_its_limit_its_isolation_and_its_settings(pytester):
    # Asked for by what collection found: the line follows the collection's.
    pytester.makepyfile(test_one=USES_PPAUX)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--hypothesis-profile=ci")
    result.stdout.fnmatch_lines(
        [
            "collected 1 item",
            "ppaux: implementation under test <ppaux prefix='__sampling_observer_output__.'>; "
            "per-call limit 10 s; isolation: the tests of ppaux.conformance in a supervised forked worker; "
            "Hypothesis: ppaux's 'ci' tuning over profile 'ci' (40 examples, derandomized); scope small",
        ]
    )
    pytester.makeini("[pytest]\nppaux_timeout = 2.5\nppaux_isolation = off\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--hypothesis-profile=default")
    result.stdout.fnmatch_lines(
        ["ppaux: * per-call limit 2.5 s; isolation: in process; Hypothesis: profile 'default' *"]
    )
    # Asked for on the command line: the header is the session's, before collection.
    result = pytester.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=default",
        "--ppaux-timeout=4",
        "--ppaux-isolation=test",
        "--ppaux-max-examples=7",
    )
    result.stdout.fnmatch_lines(
        [
            "ppaux: * per-call limit 4 s; isolation: the tests of ppaux.conformance in a supervised forked worker; "
            "Hypothesis: profile 'default' (7 examples, --ppaux-max-examples); scope small",
            "collected 1 item",
        ]
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ppaux-timeout=0"], "ERROR: --ppaux-timeout: timeout '0' must be a positive number of seconds"),
        (["--ppaux-timeout=soon"], "ERROR: --ppaux-timeout: timeout 'soon' is not a number of seconds"),
        (["-o", "ppaux_isolation=fork"], "ERROR: ppaux_isolation = 'fork'; expected 'test' or 'off'"),
        (["--ppaux-workers=0"], "ERROR: --ppaux-workers: expected a whole number of workers >= 1, not '0'"),
        (["-o", "ppaux_workers=two"], "ERROR: --ppaux-workers: expected a whole number of workers >= 1, not 'two'"),
        (
            ["--ppaux-profile=nightlly"],
            "ERROR: --ppaux-profile: unknown profile 'nightlly'; choose from ci, dev, nightly, mutation",
        ),
        (
            ["-o", "ppaux_profile=quick"],
            "ERROR: --ppaux-profile: unknown profile 'quick'; choose from ci, dev, nightly, mutation",
        ),
        (["--ppaux-max-examples=0"], "ERROR: --ppaux-max-examples: expected a whole number of examples >= 1, not '0'"),
        (
            ["--ppaux-max-examples=lots"],
            "ERROR: --ppaux-max-examples: expected a whole number of examples >= 1, not 'lots'",
        ),
        (
            ["--ppaux-scope=huge"],
            "ERROR: scope 'huge': expected one of small, medium, large or a JSON object of every bound "
            "(Expecting value: line 1 column 1 (char 0))",
        ),
    ],
)
def test_a_bad_limit_isolation_or_setting_is_a_usage_error(pytester, args, message):
    pytester.makepyfile(test_one=USES_PPAUX)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.lines


def test_an_unloadable_implementation_is_a_usage_error(pytester):
    pytester.makepyfile(test_one="def test_one():\n    assert True\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--ppaux-impl=no_such_impl_module")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: cannot import implementation module 'no_such_impl_module': ModuleNotFoundError: *"]
    )


def test_ppaux_impl_comes_from_the_environment_too(pytester, monkeypatch):
    monkeypatch.setenv("PPAUX_IMPL", "no_such_impl_module")
    pytester.makepyfile(test_one=USES_PPAUX)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: cannot import implementation module 'no_such_impl_module': ModuleNotFoundError: *"]
    )


@pytest.mark.subprocess  # two xdist workers, each importing torch
def test_an_xdist_controller_loads_the_implementation_once_it_has_started_its_workers(pytester, monkeypatch):
    """The shipped suite named by path: its conftest asks for ppaux as the run is configured. The
    controller starts its workers first, then loads the implementation and shows the header; a bad one
    is a usage error of one line, and the session's end stops the workers."""
    from tests.test_lanes import children

    suite = str(Path(conformance.__file__).parent / "test_add.py")
    args = ("-p", "no:cacheprovider", "-n", "2", suite, "-k", "none_output")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.OK
    header = "ppaux: implementation under test <ppaux prefix=*>; per-call limit *"
    result.stdout.fnmatch_lines(["created: 2/2 workers", header, "2 workers [1 item]"])
    before = children()
    monkeypatch.setenv("PPAUX_IMPL", "no_such_impl_module")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line] == [
        "ERROR: cannot import implementation module 'no_such_impl_module': ModuleNotFoundError: "
        "No module named 'no_such_impl_module'"
    ]
    assert "node down" not in result.stdout.str() and set(children()) <= set(before)


def test_the_recorder_is_a_plugin_named_ppaux_results(pytester):
    pytester.makepyfile(
        test_x=(
            "def test_x(pytestconfig):\n    assert pytestconfig.pluginmanager.get_plugin('ppaux-results') is not None\n"
        )
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--ppaux-results={pytester.path / 'r.jsonl'}")
    assert result.ret == pytest.ExitCode.OK


def test_a_run_that_records_rows_twice_over_keeps_one_reader_of_minimal_examples(pytester):
    # The result recorder and a fuzz round each ask for it: a run with both must not fail to register it.
    from ppaux.testing.results import MinimalExamples

    config = pytester.parseconfigure("-p", "no:cacheprovider", f"--ppaux-results={pytester.path / 'r.jsonl'}")
    MinimalExamples.register(config)
    assert len([p for p in config.pluginmanager.get_plugins() if isinstance(p, MinimalExamples)]) == 1


def test_a_strict_xpass_is_recorded_as_failed_without_an_error_line(pytester):
    pytester.makepyfile(test_x="import pytest\n@pytest.mark.xfail(strict=True)\ndef test_x():\n    assert True\n")
    out = pytester.path / "results.jsonl"
    pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--ppaux-results={out}")
    (row,) = map(json.loads, out.read_text().splitlines())
    assert row["outcome"] == "failed" and "error" not in row and row["example"] is None


def test_implementations_pretty_print_as_one_line():
    from hypothesis.vendor.pretty import pretty

    from ppaux.testing.impl import load

    assert pretty(load(None)) == "<ppaux prefix='__sampling_observer_output__.'>"
