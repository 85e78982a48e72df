"""The suite against SGLang's released transport (opt-in: ``-m sglang``; it downloads the release).

The contract holds, and the robustness guarantees fail with exactly the known findings: in the
``ppaux check`` report, and in one pytest process beside the nested-session tests, in both test orders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ppaux.core.clauses import CLAUSES
from ppaux.regressions.prove import bind_reference
from tests import sglang_release
from tests.unittest_runs import run_unittest, summary
from tests.whole_suite import failed, robustness_tests, run_in_one_process

pytestmark = pytest.mark.sglang

# The clauses SGLang 0.5.23 breaks, and the start of the error each one's test reports.
FINDINGS = {
    # add.6: SGLang writes each item as it passes, so a bad later item leaves the earlier keys.
    "add.6": "AssertionError: expected the keys ",
    # pop.1: a non-str key in the PP dict crashes pop.
    "pop.1": "AttributeError: 'int' object has no attribute 'startswith'",
    # pop.4: pop deletes by the dict it handed the observer.
    "pop.4": "AssertionError: expected the keys ",
    "no-leaked-keys": "AssertionError",
}


@pytest.fixture(scope="module")
def sglang_path(tmp_path_factory):
    tree = sglang_release.extract(tmp_path_factory.mktemp("sglang-tree"))
    return os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])


@pytest.fixture(scope="module")
def sglang_run(sglang_path, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("empty")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ppaux",
            "check",
            "--impl",
            sglang_release.MODULE,
            "--report",
            "out",
            "--regressions",
            "regressions",
        ],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=sglang_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    return cwd


@pytest.fixture(scope="module")
def sglang_report(sglang_run):
    return json.loads((sglang_run / "out" / "conformance.json").read_text())


def test_each_broken_clause_is_a_regression_test_red_on_sglang_without_ppaux_and_green_on_the_reference(
    sglang_run, sglang_report, sglang_path, tmp_path
):
    folder = sglang_run / "regressions"
    assert [f["clause"] for f in sglang_report["regressions"]["files"]] == list(FINDINGS)
    assert sglang_report["regressions"]["refused"] == []
    red = run_unittest(folder, sglang_path.split(os.pathsep), block=True)
    assert summary(red) == "FAILED (failures=4, errors=1)", red.stderr
    bind_reference(tmp_path, sglang_release.MODULE)
    green = run_unittest(folder, [tmp_path])
    assert summary(green) == "OK", green.stderr
    # docs/contract.md shows them as the fix's check, as ppaux writes them today.
    contract = (Path(__file__).resolve().parent.parent / "docs" / "contract.md").read_text()
    for row in (t for c in sglang_report["clauses"] for t in c["tests"] if "regression" in t):
        assert row["regression"]["code"] in contract, row["nodeid"]


def test_sglang_keeps_the_contract(sglang_report):
    contract = [t for c in sglang_report["clauses"] for t in c["tests"] if "contract" in t["marks"]]
    assert contract and all(t["outcome"] == "passed" for t in contract), [
        t["nodeid"] for t in contract if t["outcome"] != "passed"
    ]


def test_sglang_breaks_exactly_the_known_clauses_each_with_its_statement_and_example(sglang_report):
    assert sglang_report["failed_clauses"] == [c for c in CLAUSES if c in FINDINGS]
    for clause in sglang_report["clauses"]:
        if clause["clause"] not in FINDINGS:
            continue
        assert clause["statement"] == CLAUSES[clause["clause"]].statement
        for test in clause["tests"]:
            # A clause's contract tests pass; its robustness tests are the ones that fail.
            assert (test["outcome"] == "failed") == ("robustness" in test["marks"]), test["nodeid"]
            if test["outcome"] == "passed":
                continue
            assert test["error"].startswith(FINDINGS[clause["clause"]]), (test["nodeid"], test["error"])
            # Every property shows its minimal example; the one plain test is an example itself.
            assert test["example"] or "given" not in test["doc"], test["nodeid"]


@pytest.mark.parametrize("reverse", [False, True], ids=["collected order", "reversed"])
def test_sglang_fails_exactly_the_robustness_tests_beside_nested_sessions(sglang_path, tmp_path, reverse):
    status, rows, output = run_in_one_process(sglang_release.MODULE, tmp_path, reverse=reverse, pythonpath=sglang_path)
    assert status == 1, output
    assert failed(rows) == robustness_tests(rows), output
