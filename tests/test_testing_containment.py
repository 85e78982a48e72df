"""A contained test whose process dies outside every call into the implementation: its failure, its row
in the results ``ppaux check`` reads, and what pytest's own reports (terminal, JUnit XML) make of it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from ppaux.isolation import guard as guard_module

DIES = """
import ctypes
import os
import time

import pytest


@pytest.mark.isolated
def test_exits():
    os._exit(3)


@pytest.mark.isolated
def test_segfaults():
    ctypes.string_at(0)


@pytest.mark.isolated
def test_sleeps():
    time.sleep(30)
"""

# Each test's report, as a plugin of the user's sees it.
KEYWORDS = """
def pytest_runtest_logreport(report):
    if report.failed:
        print(f"keywords of {report.nodeid.split('::')[1]}: {sorted(report.keywords.items())}")
"""

OUTSIDE = "outside any single call into the implementation under test"


@pytest.mark.subprocess  # forks two children per test, a second of them stopped when idle
def test_a_test_whose_process_dies_outside_the_calls_is_a_failed_crash_or_hang(pytester, monkeypatch):
    # A process idle this long (no call in progress) is stopped: two seconds here, not a minute. Less
    # (0.5 s) let a loaded 2-core CI machine stop test_exits as a hang before it reached os._exit.
    monkeypatch.setattr(guard_module, "IDLE_FLOOR", 2.0)
    pytester.makepyfile(test_dies=DIES)
    pytester.makeconftest(KEYWORDS)
    out, junit = pytester.path / "results.jsonl", pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-v", "-s", "--ppaux-timeout=0.01", f"--ppaux-results={out}", f"--junitxml={junit}"
    )
    result.assert_outcomes(failed=3)
    rows = {r["nodeid"].split("::")[1]: r for r in map(json.loads, out.read_text().splitlines())}
    plain = {"clause": None, "marks": [], "doc": "", "outcome": "failed", "example": None, "blob": None}
    assert rows["test_exits"] == dict(
        plain,
        nodeid="test_dies.py::test_exits",
        error=f"crash: the test's process ended the process with exit status 3, {OUTSIDE}",
        finding="crash",
        detail="",
    )
    assert rows["test_sleeps"] == dict(
        plain,
        nodeid="test_dies.py::test_sleeps",
        error="hang: the test's process was stopped: no call into the implementation returned or ended for too "
        f"long, {OUTSIDE}",
        finding="hang",
        detail="",
    )
    segfault = rows.pop("test_segfaults")
    assert (segfault["error"], segfault["finding"]) == (
        f"crash: the test's process killed the process with SIGSEGV (signal 11), {OUTSIDE}",
        "crash",
    )
    # The lines after the first: where faulthandler saw it die.
    assert segfault["detail"].startswith("Fatal Python error: Segmentation fault\n")
    # pytest's own reports: a failed call (not an error), with the test's location, keywords and duration. Each
    # keyword's value is 1, as in every report pytest makes (a plugin's report log shows them).
    names = ["", "isolated", "pytestmark", pytester.path.name, "test_dies.py", "test_exits"]
    keywords = sorted((name, 1) for name in names)
    assert f"test_dies.py::test_exits FAILEDkeywords of test_exits: {keywords}" in result.stdout.lines
    cases = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    # A failure of the test's call, not an error of its setup or teardown.
    assert {name: [c.tag for c in case if c.tag in ("failure", "error")] for name, case in cases.items()} == {
        "test_exits": ["failure"],
        "test_segfaults": ["failure"],
        "test_sleeps": ["failure"],
    }
    # Both of the hanging test's processes ran until stopped, two seconds idle each.
    assert float(cases["test_sleeps"].get("time")) >= 4.0


SHARED = """
import pytest


@pytest.fixture(scope="session")
def shared(tmp_path_factory):
    path = tmp_path_factory.getbasetemp() / "shared"
    path.mkdir()
    yield path
    path.rmdir()


def test_sets_it_up_here(shared):
    assert shared.is_dir()


@pytest.mark.isolated
def test_uses_it_in_a_child(shared):
    assert shared.is_dir()


def test_still_has_it_here(shared):
    assert shared.is_dir()
"""


def test_a_contained_test_leaves_the_session_fixtures_this_process_set_up_to_this_process(pytester):
    # Its child tears down only what the test set up: a session fixture's teardown there would
    # remove the directory this process and the tests after it still use.
    pytester.makepyfile(test_shared=SHARED)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3)
