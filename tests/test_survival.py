"""The suite survives what it tests: an implementation that hangs (in Python, or where no signal
reaches it) or kills its process (os._exit, SIGSEGV) gets a verdict for every clause it was run on,
a hang or crash finding with the call, the limit or the signal, the stack, and a minimal example;
the run ends on time. Planted implementations: tests/impls/."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ppaux.cli.main import main
from ppaux.core.clauses import CLAUSES
from tests.fuzz_runs import env, fuzz, fuzz_run_held, round_events

IMPLS = Path(__file__).resolve().parent / "impls"
ROOT = Path(__file__).resolve().parent.parent
# A hang's limit is the run's, or after a first hang the shorter one of the calls that returned.
HANG = re.compile(
    r"Hang: (?P<call>\w+) did not return within (?P<limit>[\d.]+) s \((the per-call time limit|after a first hang, "
    r"10x the slowest \w+ that returned, at least 0\.1 s; the per-call limit is [\d.]+ s)\)"
)


def check(capsys, tmp_path, impl: str, *args: str):
    code = main(["check", "--impl", str(IMPLS / impl), "--report", str(tmp_path), *args])
    capsys.readouterr()
    return code, json.loads((tmp_path / "conformance.json").read_text())


def failures(report):
    return {t["nodeid"].split("::")[-1]: t for c in report["clauses"] for t in c["tests"] if t["outcome"] == "failed"}


def payload_items(example: str) -> int:
    """How many tensors the drawn payload holds in a failure's example."""
    line = next(line for line in example.splitlines() if "(payload)" in line)
    return line.count("tensor(")


@pytest.mark.subprocess
def test_a_pure_python_hang_is_a_minimal_hang_finding(capsys, tmp_path):
    code, report = check(capsys, tmp_path, "hangs_on_three_items.py", "--tests", "test_round_trip", "--timeout", "0.5")
    assert (code, report["failed_clauses"], report["findings"]) == (1, ["round-trip"], {"hang": 1, "crash": 0})
    found = failures(report)["test_round_trip"]
    assert (found["finding"], HANG.fullmatch(found["error"])["call"]) == ("hang", "pop")
    # Three or more aux items hang: the example shrinks to exactly three.
    assert payload_items(found["example"]) == 3
    assert found["detail"].startswith("stuck at (most recent call last):\n")
    assert "    while len(aux) >= 3:" in found["detail"] or "    aux = aux[1:] + aux[:1]" in found["detail"]
    assert found["blob"].startswith("@reproduce_failure(")
    assert (
        "Hangs and crashes: 1 hang: a call into the implementation did not return within its limit."
        in (tmp_path / "conformance.md").read_text()
    )


@pytest.mark.slow
# CI: the pure-Python hang's minimal finding, and the kill from outside in tests/test_isolation.py
@pytest.mark.thorough
def test_a_hang_no_signal_reaches_is_stopped_from_outside_and_still_shrinks(capsys, tmp_path):
    code, report = check(
        capsys, tmp_path, "hangs_with_signals_blocked.py", "--tests", "test_round_trip", "--timeout", "0.5"
    )
    assert (code, report["findings"]) == (1, {"hang": 1, "crash": 0})
    found = failures(report)["test_round_trip"]
    assert HANG.fullmatch(found["error"])["call"] == "pop"
    assert payload_items(found["example"]) == 3
    assert found["detail"] == (
        f'stuck at (most recent call last):\n  File "{IMPLS / "hangs_with_signals_blocked.py"}", line 22, '
        "in pop_auxiliary_output_from_pp_tensors\n"
        "    os.read(read_end, 1)  # nobody writes: blocks in the kernel for ever"
    )


@pytest.mark.subprocess
def test_os_exit_in_add_is_a_crash_naming_the_status(capsys, tmp_path):
    code, report = check(
        capsys,
        tmp_path,
        "exits_on_long_names.py",
        "--tests",
        "test_success_adds_one_key_per_item_bound_to_the_same_tensor",
    )
    assert (code, report["failed_clauses"], report["findings"]) == (1, ["add.7"], {"hang": 0, "crash": 1})
    found = failures(report)["test_success_adds_one_key_per_item_bound_to_the_same_tensor"]
    assert (found["finding"], found["error"]) == ("crash", "Crash: add ended the process with exit status 3")
    # A name of two characters is the smallest that kills.
    assert "'00'" in found["example"]


@pytest.mark.subprocess
def test_a_segfault_is_a_crash_naming_the_signal_and_where(capsys, tmp_path):
    code, report = check(
        capsys, tmp_path, "segfaults_without_observer.py", "--tests", "test_observer_checks_precede_value_checks"
    )
    assert (code, report["failed_clauses"]) == (1, ["pop.3"])
    found = failures(report)
    assert {t["error"] for t in found.values()} == {"Crash: pop killed the process with SIGSEGV (signal 11)"}
    # The other tests of the clause pass: the no-observer path alone crashes.
    assert len(found) == 2 and {t["finding"] for t in found.values()} == {"crash"}
    assert (
        "    ctypes.string_at(0)  # reads address 0: SIGSEGV"
        in found["test_observer_checks_precede_value_checks"]["detail"]
    )


@pytest.mark.slow
def test_a_slow_but_correct_implementation_passes(capsys, tmp_path):
    code, report = check(capsys, tmp_path, "slow_but_correct.py", "--tests", "test_round_trip or disjoint")
    assert (code, report["verdict"], report["counts"]["failed"]) == (0, "pass", 0)


def test_pytest_on_the_installed_suite_fails_on_a_crash(pytester):
    result = pytester.runpytest_inprocess(
        "--pyargs",
        "ppaux.conformance",
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=ci",
        f"--ppaux-impl={IMPLS / 'segfaults_without_observer.py'}",
        "-k",
        "on_a_non_tensor",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*ppaux.testing.calls.Crash: pop killed the process with SIGSEGV (signal 11)"])


CRASHES_OUTSIDE_CALLS = """
import ctypes, os, pytest

@pytest.mark.isolated
def test_segfaults_in_its_own_code():
    ctypes.string_at(0)

@pytest.mark.isolated
def test_dies_in_its_own_code():
    os._exit(7)

@pytest.mark.isolated
def test_dies_once(tmp_path_factory):
    marker = tmp_path_factory.getbasetemp().parent / "died-once"
    if not marker.exists():
        marker.write_text("")
        os._exit(5)
"""


def test_a_test_that_dies_outside_the_calls_or_only_once_still_fails(pytester):
    pytester.makepyfile(test_outside=CRASHES_OUTSIDE_CALLS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            (
                "crash: the test's process killed the process with SIGSEGV (signal 11), "
                "outside any single call into the implementation under test"
            ),
            "Fatal Python error: Segmentation fault",
            (
                "crash: the test's process ended the process with exit status 7, "
                "outside any single call into the implementation under test"
            ),
            "the test's process ended the process with exit status 5, "
            "but it passed when run again with each call isolated: "
            "the crash or hang depends on state outside the drawn example",
        ]
    )


@pytest.mark.slow
@pytest.mark.thorough  # CI: a hang and a crash, each on one test, above
@pytest.mark.parametrize(
    "impl, kind", [("hangs_on_three_items.py", "hang"), ("segfaults_without_observer.py", "crash")]
)
def test_the_whole_suite_gives_every_clause_a_verdict(tmp_path, impl, kind):
    # The console script in a child without coverage: measured, each isolated call would start coverage afresh.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "ppaux",
            "check",
            "--impl",
            str(IMPLS / impl),
            "--report",
            str(tmp_path),
            "--timeout",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env=env(),
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.stderr
    report = json.loads((tmp_path / "conformance.json").read_text())
    # Every clause, in the contract's order, with its verdict: a crash or hang costs its test, not the run.
    assert [c["clause"] for c in report["clauses"]] == list(CLAUSES)
    found = {t["finding"] for c in report["clauses"] for t in c["tests"] if t["outcome"] == "failed"}
    assert found == {kind} and report["findings"][kind] == report["counts"]["failed"]


@pytest.mark.slow
@pytest.mark.thorough  # CI: the fuzz job finds and replays a planted bug (tests/test_fuzz.py)
def test_the_fuzz_job_finds_and_replays_a_crash(tmp_path):
    db, out = str(tmp_path / "db"), tmp_path / "report"
    planted = [
        "--impl",
        str(IMPLS / "segfaults_without_observer.py"),
        "--tests",
        "test_observer_checks_precede_value_checks",
        "--devices",
        "cpu",
        "--timeout",
        "2",
    ]
    run = fuzz(
        "run", "--budget", "30s", "--max-failures", "1", "--workers", "1", "--db", db, "--report", str(out), *planted
    )
    assert run.returncode == 1, run.stderr
    [failure] = json.loads((out / "fuzz.json").read_text())["failures"]
    # Worded as ppaux check words it: the finding's kind, then what happened.
    assert (failure["error"], failure["finding"]) == ("Crash: pop killed the process with SIGSEGV (signal 11)", "crash")
    replay = fuzz("replay", "--db", db, "--report", str(out), *planted)
    assert replay.returncode == 1, replay.stderr
    [still] = json.loads((out / "replay.json").read_text())["still_failing"]
    assert still["nodeid"] == failure["nodeid"]


@pytest.mark.slow
def test_a_test_still_running_when_the_budget_ends_is_interrupted_not_clean(tmp_path, monkeypatch):
    out = tmp_path / "report"
    # The budget runs once an example has ended (the stop then lands in the next one's 3 s pop), and
    # the grace after the stop once the round has taken it.
    status = fuzz_run_held(
        monkeypatch,
        lambda now: '"progress"' in round_events(out) and (now < 15 or '"interrupted"' in round_events(out)),
        *("--budget", "15s", "--db", str(tmp_path / "db"), "--report", str(out), "--devices", "cpu"),
        *("--workers", "1", "--impl", str(IMPLS / "sleeps_in_pop.py"), "--tests", "test_round_trip"),
    )
    summary = json.loads((out / "fuzz.json").read_text())
    assert (status, summary["failures"]) == (0, [])
    assert [i["nodeid"] for i in summary["interrupted"]] == ["ppaux/conformance/test_properties.py::test_round_trip"]
    assert "## Interrupted" in (out / "fuzz.md").read_text()
