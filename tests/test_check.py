"""``ppaux check`` in-process: its options, how it groups tests into clauses, the exact report it
writes, and how it drives the child pytest (faked here, so each case costs milliseconds; the real
child runs in tests/test_cli.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


from ppaux import check
from ppaux.cli import main
from ppaux.impl import DEFAULT_IMPL
from tests.support import cli_defaults, cli_help

IMPLS = Path(__file__).resolve().parent / "impls"


def test_check_help_names_every_option_with_its_metavar(capsys):
    assert cli_help(capsys, "check").endswith(
        "-h, --help show this help message and exit"
        " --impl MODULE_OR_FILE implementation to check (default: ppaux's own)"
        " --profile PROFILE Hypothesis profile: ci, dev, nightly, mutation (default: ci)"
        " --report DIR where to write conformance.md and conformance.json"
        " --marks EXPR which tests (pytest -m expression; default: 'contract or robustness')"
        " --tests EXPR narrow further by test name (pytest -k expression)"
    )


def test_check_defaults_are_the_ones_its_help_states():
    assert cli_defaults("check") == {
        "command": "check", "impl": None, "profile": "ci", "report": "reports/out/conformance",
        "marks": "contract or robustness", "tests": None,
    }


ROWS = [
    {"nodeid": "t.py::test_a", "clause": "add.1", "marks": ["contract"], "outcome": "passed"},
    {"nodeid": "t.py::test_b", "clause": "add.1", "marks": ["robustness", "contract"], "outcome": "failed",
     "doc": "Adding twice raises A2.", "error": "ValueError: boom", "example": "Falsifying example: test_b(\n    n=0,\n)",
     "blob": "@reproduce_failure('6', b'AAA=')"},
    {"nodeid": "t.py::test_c", "clause": None, "marks": ["contract"], "outcome": "skipped"},
    {"nodeid": "t.py::test_d", "clause": "pop.2", "outcome": "passed"},
]


def test_report_groups_tests_by_clause_in_first_seen_order_and_merges_their_marks():
    report = check.build_report(ROWS, impl="m", profile="ci", marks="contract")
    assert report == {
        "implementation": "m", "profile": "ci", "marks": "contract", "verdict": "fail",
        "counts": {"passed": 2, "failed": 1, "skipped": 1},
        "clauses": [
            {"clause": "add.1", "marks": ["contract", "robustness"], "verdict": "fail", "tests": ROWS[:2]},
            {"clause": "unclassified", "marks": ["contract"], "verdict": "pass", "tests": [ROWS[2]]},
            {"clause": "pop.2", "marks": [], "verdict": "pass", "tests": [ROWS[3]]},
        ],
    }


def test_report_passes_when_no_test_failed():
    report = check.build_report([ROWS[0], ROWS[3]], impl="m", profile="ci", marks="contract")
    assert report["verdict"] == "pass" and [c["verdict"] for c in report["clauses"]] == ["pass", "pass"]


GOLDEN = """\
# Conformance report: `m`

Verdict: **FAIL** (profile `ci`, tests `contract`; 2 passed, 1 failed, 1 skipped)

| clause | marks | verdict | tests |
| --- | --- | --- | --- |
| add.1 | contract, robustness | fail | 2 |
| unclassified | contract | pass | 1 |
| pop.2 |  | pass | 1 |

## Counterexamples

### add.1: `t.py::test_b`

Adding twice raises A2.

Error: `ValueError: boom`

```
Falsifying example: test_b(
    n=0,
)
```

Replay: add `@reproduce_failure('6', b'AAA=')` above the test.
"""


def test_markdown_report_is_exactly_the_documented_layout():
    assert check.render_markdown(check.build_report(ROWS, impl="m", profile="ci", marks="contract")) == GOLDEN


def test_markdown_report_of_a_pass_has_no_counterexample_section():
    text = check.render_markdown(check.build_report([ROWS[0]], impl="m", profile="ci", marks="contract"))
    assert text == (
        "# Conformance report: `m`\n\n"
        "Verdict: **PASS** (profile `ci`, tests `contract`; 1 passed, 0 failed, 0 skipped)\n\n"
        "| clause | marks | verdict | tests |\n| --- | --- | --- | --- |\n| add.1 | contract | pass | 1 |\n"
    )


class FakePytest:
    """Stands in for the child pytest: records how it was called and writes the rows it is given."""

    def __init__(self, rows, returncode=0, stdout="", stderr=""):
        self.rows, self.returncode, self.stdout, self.stderr = rows, returncode, stdout, stderr
        self.calls = []

    def __call__(self, cmd, **kwargs):
        results = cmd[cmd.index("--ppaux-results") + 1]
        self.calls.append((cmd, kwargs, results, os.path.isdir(os.path.dirname(results))))
        Path(results).write_text("".join(json.dumps(r) + "\n" for r in self.rows))
        return subprocess.CompletedProcess(cmd, self.returncode, self.stdout, self.stderr)


def test_check_writes_both_reports_into_a_new_directory_and_prints_the_markdown(capsys, monkeypatch, tmp_path):
    fake = FakePytest(ROWS, returncode=1)
    monkeypatch.setattr(check.subprocess, "run", fake)
    out = tmp_path / "a" / "b"
    assert main(["check", "--marks", "contract", "--report", str(out)]) == 1
    printed = capsys.readouterr().out
    expected = check.build_report(ROWS, impl=DEFAULT_IMPL, profile="ci", marks="contract")
    assert (out / "conformance.json").read_text() == json.dumps(expected, indent=2) + "\n"
    assert (out / "conformance.md").read_text() == GOLDEN.replace("`m`", f"`{DEFAULT_IMPL}`")
    assert printed == GOLDEN.replace("`m`", f"`{DEFAULT_IMPL}`") + "\n" + (
        f"report written to {out / 'conformance.md'} and {out / 'conformance.json'}\n")
    ((cmd, kwargs, results, results_dir_existed),) = fake.calls
    # The rows go through a private temporary directory that is gone afterwards, never the cwd.
    assert os.path.isabs(results) and results_dir_existed and not os.path.exists(os.path.dirname(results))
    assert os.path.basename(results) == "results.jsonl"
    assert kwargs == {"cwd": check.SUITE.parent, "text": True, "capture_output": True}
    assert "--ppaux-impl" not in cmd


def test_check_records_the_implementation_it_was_given_and_passes_it_resolved(capsys, monkeypatch, tmp_path):
    fake = FakePytest(ROWS[:1])
    monkeypatch.setattr(check.subprocess, "run", fake)
    monkeypatch.chdir(IMPLS.parent)
    spec = "impls/unstripped_names.py"
    assert main(["check", "--impl", spec, "--profile", "dev", "--tests", "round_trip", "--report", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "conformance.json").read_text())
    assert (report["implementation"], report["profile"], report["marks"]) == (spec, "dev", "contract or robustness")
    ((cmd, _, _, _),) = fake.calls
    assert cmd[cmd.index("--ppaux-impl") + 1] == str(IMPLS / "unstripped_names.py")
    assert cmd[-2:] == ["-k", "round_trip"]
    capsys.readouterr()


def test_a_child_pytest_that_did_not_run_shows_the_tail_of_its_output(capsys, monkeypatch, tmp_path):
    stdout, stderr = "o" + "x" * 4000, "e" + "y" * 4000
    monkeypatch.setattr(check.subprocess, "run", FakePytest([], returncode=4, stdout=stdout, stderr=stderr))
    assert main(["check", "--report", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "x" * 4000 + "y" * 4000 + "ppaux: error: the suite did not run (pytest exit 4)\n"
