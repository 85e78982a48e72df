"""``ppaux check`` in-process: its options, how it groups tests into clauses, the exact report it
writes, and how it drives the suite's pytest run (faked here, so each case costs milliseconds; the
real run is in tests/test_cli.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import ppaux.testing.suite as suite
from ppaux.cli.main import main
from ppaux.core.clauses import CLAUSES
from ppaux.testing import state
from ppaux.testing.impl import DEFAULT_IMPL
from ppaux.testing.suite import ROOT as SUITE_ROOT
from ppaux.testing.suite import usable_workers
from tests.fake_pytest import FakePytest
from tests.support import build_report, cli_defaults, cli_help, render_markdown

IMPLS = Path(__file__).resolve().parent / "impls"


def test_check_help_names_every_option_with_its_metavar(capsys):
    assert cli_help(capsys, "check").endswith(
        "-h, --help show this help message and exit"
        " --impl MODULE_OR_FILE implementation to check (default: ppaux's own)"
        " --profile PROFILE Hypothesis profile: ci, dev, nightly, mutation (default: ci)"
        " --max-examples N examples per property (default: as the profile says; ci: 40)"
        " --report DIR where to write conformance.md and conformance.json "
        "(default: .ppaux/check in the current directory)"
        " --marks EXPR which tests (pytest -m expression; default: 'contract or robustness')"
        " --tests EXPR narrow further by test name (pytest -k expression)"
        " --junit PATH also write the suite run's JUnit XML there"
        " --regressions DIR write one standalone regression test "
        "(unittest + torch) per broken clause there, each proven to"
        " fail against the implementation and to pass against ppaux's "
        "reference; files of an earlier run there are replaced"
        " --timeout SECONDS per-call time limit: a call into the implementation past it fails as a hang (default: 10)"
        " --isolation {test,off} test (default): the tests run in a supervised forked worker, so that a crash or a"
        " hang no signal reaches is a finding; off: in this process (for a debugger, or to measure what"
        " containment costs)"
        " --workers N with --isolation test, how many supervised forked workers run the tests at once, each with its"
        " share (default: one per CPU core, at most 4)"
    )


def test_check_defaults_are_the_ones_its_help_states():
    assert cli_defaults("check") == {
        "command": "check",
        "impl": None,
        "profile": "ci",
        "max_examples": None,
        "report": None,
        "marks": "contract or robustness",
        "tests": None,
        "junit": None,
        "timeout": 10.0,
        "regressions": None,
        "isolation": "test",
        "workers": usable_workers(),
    }


ROWS = [
    {"nodeid": "t.py::test_a", "clause": "add.1", "marks": ["contract"], "outcome": "passed"},
    {
        "nodeid": "t.py::test_b",
        "clause": "add.1",
        "marks": ["robustness", "contract"],
        "outcome": "failed",
        "doc": "Adding twice raises A2.",
        "error": "ValueError: boom",
        "example": "test_b(\n    n=0,\n)",
        "blob": "@reproduce_failure('6', b'AAA=')",
    },
    {"nodeid": "t.py::test_c", "clause": None, "marks": ["contract"], "outcome": "skipped"},
    {"nodeid": "t.py::test_d", "clause": "pop.2", "outcome": "passed"},
]


def test_report_groups_tests_by_clause_in_the_contracts_order_with_each_statement():
    report = build_report(ROWS, impl="m", profile="ci", marks="contract")
    # Every test says what it checks and how it is marked, in so many words when the row was silent.
    rows = [{**ROWS[0], "doc": ""}, ROWS[1], {**ROWS[2], "doc": ""}, {**ROWS[3], "marks": [], "doc": ""}]
    assert report == {
        "kind": "conformance",
        "schema_version": 1,
        "implementation": "m",
        "command": "",
        "profile": "ci",
        "marks": "contract",
        "timeout_s": 10.0,
        "verdict": "fail",
        "counts": {"passed": 2, "failed": 1, "skipped": 1},
        "failed_clauses": ["add.1"],
        "findings": {"hang": 0, "crash": 0},
        "clauses": [
            {
                "clause": "add.1",
                "statement": CLAUSES["add.1"].statement,
                "marks": ["contract", "robustness"],
                "verdict": "fail",
                "tests": rows[:2],
            },
            {
                "clause": "pop.2",
                "statement": CLAUSES["pop.2"].statement,
                "marks": [],
                "verdict": "pass",
                "tests": [rows[3]],
            },
            {"clause": "unclassified", "statement": "", "marks": ["contract"], "verdict": "pass", "tests": [rows[2]]},
        ],
    }


def test_clauses_follow_the_contract_and_clauses_it_does_not_know_come_last():
    rows = [
        {"nodeid": f"t.py::{c}", "clause": c, "outcome": "passed"}
        for c in ("user.2", "pop.1", "add.7", "user.1", "add.1")
    ]
    report = build_report(rows, impl="m", profile="ci", marks="contract")
    assert [c["clause"] for c in report["clauses"]] == ["add.1", "add.7", "pop.1", "user.2", "user.1"]


def test_the_report_names_every_broken_clause_on_one_line():
    rows = [{**ROWS[1], "nodeid": "t.py::test_b"}, {**ROWS[1], "nodeid": "t.py::test_e", "clause": "pop.2"}]
    text = render_markdown(build_report(rows, impl="m", profile="ci", marks="contract"))
    assert [line for line in text.splitlines() if line.startswith("Clauses broken")] == ["Clauses broken: add.1, pop.2"]


def test_report_passes_when_no_test_failed():
    report = build_report([ROWS[0], ROWS[3]], impl="m", profile="ci", marks="contract")
    assert (report["verdict"], report["failed_clauses"]) == ("pass", [])
    assert [c["verdict"] for c in report["clauses"]] == ["pass", "pass"]


GOLDEN = f"""\
# Conformance report: `m`

Verdict: **FAIL** (profile `ci`, tests `contract`, per-call limit 10 s; 2 passed, 1 failed, 1 skipped)

Clauses broken: add.1

| clause | verdict | statement | marks | tests |
| --- | --- | --- | --- | --- |
| add.1 | fail | {CLAUSES["add.1"].statement} | contract, robustness | 2 |
| pop.2 | pass | {CLAUSES["pop.2"].statement} |  | 1 |
| unclassified | pass |  | contract | 1 |

## Counterexamples

### add.1: `t.py::test_b`

Clause: {CLAUSES["add.1"].statement}

Adding twice raises A2.

Error: `ValueError: boom`

Minimal example:

```
test_b(
    n=0,
)
```

Replay: `ppaux check --impl m --tests test_b` (the `ci` profile draws the same examples on every run).
Blob, for a copy of the test of your own: `@reproduce_failure('6', b'AAA=')` above it.
"""


def test_markdown_report_is_exactly_the_documented_layout():
    report = build_report(ROWS, impl="m", profile="ci", marks="contract", command="ppaux check --impl m")
    assert render_markdown(report) == GOLDEN


REGRESSION_ROWS = [
    {
        "nodeid": "ppaux/conformance/test_stateful.py::TestAddThenPop::test_b[x[0]]",
        "clause": "add.1",
        "marks": [],
        "doc": "",
        "outcome": "failed",
        "error": "E: x",
        "regression": {
            "path": "r/test_add_1.py",
            "test": "test_add_1.TestAdd1.test_b",
            "code": "def test_b(self):\n    self.assertEqual(1, 1)",
        },
    },
    {
        "nodeid": "t.py::test_c",
        "clause": "pop.2",
        "marks": [],
        "doc": "",
        "outcome": "failed",
        "error": "E: y",
        "blob": "@reproduce_failure('6', b'AA==')",
        "regression": {"why": "the test's calls were not recorded"},
    },
]


def test_each_counterexample_shows_its_replay_command_and_its_regression_test_or_why_there_is_none():
    # The replay names the test function alone (no class, no parameters): what --tests (pytest -k) selects.
    report = build_report(
        REGRESSION_ROWS, impl="m", profile="dev", marks="contract", command="ppaux check --impl m --profile dev"
    )
    replay = "(the example database in `.hypothesis/` replays the saved example first)."
    assert render_markdown(report).split("## Counterexamples\n\n", 1)[1] == (
        "### add.1: `ppaux/conformance/test_stateful.py::TestAddThenPop::test_b[x[0]]`\n\n"
        f"Clause: {CLAUSES['add.1'].statement}\n\n\n\n"
        "Error: `E: x`\n\n"
        f"Replay: `ppaux check --impl m --profile dev --tests test_b` {replay}\n\n"
        "Regression test `test_add_1.TestAdd1.test_b` in `r/test_add_1.py`:\n\n"
        "```python\ndef test_b(self):\n    self.assertEqual(1, 1)\n```\n\n\n"
        "### pop.2: `t.py::test_c`\n\n"
        f"Clause: {CLAUSES['pop.2'].statement}\n\n\n\n"
        "Error: `E: y`\n\n"
        f"Replay: `ppaux check --impl m --profile dev --tests test_c` {replay}\n"
        "Blob, for a copy of the test of your own: `@reproduce_failure('6', b'AA==')` above it.\n\n"
        "No regression test: the test's calls were not recorded.\n"
    )


def test_counterexamples_without_a_command_or_blob_have_no_replay_lines():
    rows = [{k: v for k, v in row.items() if k not in ("regression", "blob")} for row in REGRESSION_ROWS]
    text = render_markdown(build_report(rows, impl="m", profile="ci", marks="contract"))
    assert text.split("## Counterexamples\n\n", 1)[1] == (
        "### add.1: `ppaux/conformance/test_stateful.py::TestAddThenPop::test_b[x[0]]`\n\n"
        f"Clause: {CLAUSES['add.1'].statement}\n\n\n\nError: `E: x`\n\n\n"
        f"### pop.2: `t.py::test_c`\n\nClause: {CLAUSES['pop.2'].statement}\n\n\n\nError: `E: y`\n"
    )


def test_hangs_and_crashes_are_counted_above_the_table_and_each_counterexample_is_headed_with_its_finding():
    rows = [
        {"nodeid": f"t.py::test_{n}", "clause": c, "marks": [], "doc": "", "outcome": "failed", "finding": f}
        for n, c, f in (("h", "pop.2", "hang"), ("c", "add.1", "crash"), ("d", "add.1", "crash"), ("e", "add.1", None))
    ]
    text = render_markdown(build_report(rows, impl="m", profile="ci", marks="contract"))
    assert [line for line in text.splitlines() if line.startswith(("Hangs and crashes", "### "))] == [
        "Hangs and crashes: 1 hang: a call into the implementation did not return within its limit, "
        "2 crashes: a call into the implementation ended its process.",
        "### add.1 (crash): `t.py::test_c`",
        "### add.1 (crash): `t.py::test_d`",
        "### add.1: `t.py::test_e`",
        "### pop.2 (hang): `t.py::test_h`",
    ]


def test_a_failure_outside_the_contracts_clauses_has_no_clause_line():
    row = {"nodeid": "t.py::test_x", "clause": None, "marks": [], "doc": "Mine.", "outcome": "failed", "error": "E: x"}
    text = render_markdown(build_report([row], impl="m", profile="ci", marks="contract"))
    assert text.endswith("### unclassified: `t.py::test_x`\n\nMine.\n\nError: `E: x`\n")


def test_markdown_report_of_a_pass_has_no_counterexample_section():
    text = render_markdown(build_report([ROWS[0]], impl="m", profile="ci", marks="contract"))
    assert text == (
        "# Conformance report: `m`\n\n"
        "Verdict: **PASS** (profile `ci`, tests `contract`, per-call limit 10 s; 1 passed, 0 failed, 0 skipped)\n\n"
        "| clause | verdict | statement | marks | tests |\n| --- | --- | --- | --- | --- |\n"
        f"| add.1 | pass | {CLAUSES['add.1'].statement} | contract | 1 |\n"
    )


def test_check_writes_both_reports_into_a_new_directory_and_prints_the_markdown(capsys, monkeypatch, tmp_path):
    fake = FakePytest(ROWS, status=1)
    monkeypatch.setattr(suite, "run_in_process", fake)
    out = tmp_path / "a" / "b"
    assert main(["check", "--marks", "contract", "--report", str(out)]) == 1
    printed = capsys.readouterr().out
    command = "ppaux check --marks contract"
    expected = build_report(ROWS, impl=DEFAULT_IMPL, profile="ci", marks="contract", command=command)
    assert (out / "conformance.json").read_text() == json.dumps(expected, indent=2) + "\n"
    golden = GOLDEN.replace("`m`", f"`{DEFAULT_IMPL}`").replace("ppaux check --impl m", command)
    assert (out / "conformance.md").read_text() == golden
    assert printed == golden + "\n" + (f"report written to {out / 'conformance.md'}, {out / 'conformance.json'}\n")
    ((argv, cwd, results, results_dir_existed),) = fake.calls
    # The rows go through a private temporary directory that is gone afterwards, never the cwd.
    assert os.path.isabs(results) and results_dir_existed and not os.path.exists(os.path.dirname(results))
    assert os.path.basename(results) == "results.jsonl"
    # The caller's directory stays the run's: an implementation module there must import.
    assert cwd == os.getcwd()
    assert "--ppaux-impl" not in argv and "--junitxml" not in argv


def test_without_report_the_files_go_to_a_dot_directory_that_git_ignores(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(suite, "run_in_process", FakePytest(ROWS[:1]))
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ppaux"]
    assert sorted(p.name for p in (tmp_path / ".ppaux").iterdir()) == [".gitignore", "check"]
    assert (tmp_path / ".ppaux" / ".gitignore").read_text() == "# Created by ppaux automatically.\n*\n"
    assert sorted(p.name for p in (tmp_path / ".ppaux" / "check").iterdir()) == ["conformance.json", "conformance.md"]
    assert printed.endswith("\nreport written to .ppaux/check/conformance.md, .ppaux/check/conformance.json\n")
    assert (tmp_path / ".ppaux" / "check" / "conformance.md").read_text() in printed
    # .ppaux is the user's once it exists: a later run leaves what they changed there as it is.
    (tmp_path / ".ppaux" / ".gitignore").write_text("check/\n")
    assert main(["check"]) == 0
    assert (tmp_path / ".ppaux" / ".gitignore").read_text() == "check/\n"
    capsys.readouterr()


def test_a_report_directory_given_is_exactly_the_one_written_and_no_dot_directory_appears(
    capsys, monkeypatch, tmp_path
):
    monkeypatch.setattr(suite, "run_in_process", FakePytest(ROWS[:1]))
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--report", "out"]) == 0
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "out",
        "out/conformance.json",
        "out/conformance.md",
    ]
    assert capsys.readouterr().out.endswith("\nreport written to out/conformance.md, out/conformance.json\n")


def test_a_dot_directory_that_cannot_be_made_is_a_usage_error_before_the_run(capsys, monkeypatch, tmp_path):
    fake = FakePytest(ROWS[:1])
    monkeypatch.setattr(suite, "run_in_process", fake)
    # Under a file, where no one (root included) can make a directory.
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(state, "STATE", tmp_path / "file" / ".ppaux")
    assert main(["check"]) == 2
    assert capsys.readouterr().err == f"ppaux: error: cannot create {tmp_path / 'file' / '.ppaux'}: Not a directory\n"
    assert fake.calls == []


def test_a_file_named_like_the_report_directory_is_a_usage_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(suite, "run_in_process", FakePytest(ROWS[:1]))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".ppaux").mkdir()
    (tmp_path / ".ppaux" / "check").write_text("")
    assert main(["check"]) == 2
    assert capsys.readouterr().err == "ppaux: error: --report: .ppaux/check is not a directory\n"


def test_check_records_the_implementation_it_was_given_and_passes_it_resolved(capsys, monkeypatch, tmp_path):
    fake = FakePytest(ROWS[:1])
    monkeypatch.setattr(suite, "run_in_process", fake)
    monkeypatch.chdir(IMPLS.parent)
    spec = "impls/unstripped_names.py"
    assert main(["check", "--impl", spec, "--profile", "dev", "--tests", "round_trip", "--report", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "conformance.json").read_text())
    assert (report["implementation"], report["profile"], report["marks"]) == (spec, "dev", "contract or robustness")
    ((argv, _, _, _),) = fake.calls
    assert argv[argv.index("--ppaux-impl") + 1] == str(IMPLS / "unstripped_names.py")
    assert argv[argv.index("-k") + 1] == "round_trip"
    capsys.readouterr()


def test_the_suite_runs_installed_under_an_empty_config_of_its_own(capsys, monkeypatch, tmp_path):
    """The caller's pytest config, addopts and conftest.py never reach the suite's run."""
    seen = []

    def suite_run(argv):
        ini = argv[argv.index("-c") + 1]
        seen.append((Path(ini).read_text(), argv))
        return FakePytest(ROWS[:1])(argv)

    monkeypatch.setattr(suite, "run_in_process", suite_run)
    junit = tmp_path / "j.xml"
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--junit", "j.xml", "--report", "r"]) == 0
    ((ini_text, argv),) = seen
    assert ini_text == "[pytest]\n"
    assert argv[:2] == ["--pyargs", "ppaux.conformance"]
    assert argv[argv.index("--rootdir") + 1] == str(SUITE_ROOT)
    assert argv[argv.index("--confcutdir") + 1] == str(SUITE_ROOT / "ppaux" / "conformance")
    assert argv[argv.index("--junitxml") + 1] == str(junit)
    assert capsys.readouterr().out.endswith(
        f"report written to {Path('r') / 'conformance.md'}, {Path('r') / 'conformance.json'}, j.xml\n"
    )


def test_a_suite_run_that_did_not_start_shows_the_tail_of_its_output(capsys, monkeypatch, tmp_path):
    printed = "o" + "x" * 8000
    monkeypatch.setattr(suite, "run_in_process", FakePytest([], status=4, printed=printed))
    assert main(["check", "--report", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "x" * 8000 + "ppaux: error: the suite did not run (pytest exit 4)\n"


def test_a_module_in_the_current_directory_is_found_as_under_python_dash_m(capsys, monkeypatch, tmp_path):
    """The console script's sys.path[0] is its bin directory: ``--impl mymodule`` must still find ./mymodule.py,
    and the caller's sys.path is as it was afterwards."""
    (tmp_path / "my_transport_here.py").write_text((IMPLS / "unstripped_names.py").read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    before = list(sys.path)
    fake = FakePytest(ROWS[:1])
    monkeypatch.setattr(suite, "run_in_process", fake)
    assert main(["check", "--impl", "my_transport_here", "--report", "r"]) == 0
    ((argv, _, _, _),) = fake.calls
    assert argv[argv.index("--ppaux-impl") + 1] == "my_transport_here"
    assert sys.path == before
    capsys.readouterr()


def test_regression_tests_are_proven_against_the_users_module_found_where_the_run_found_it(
    capsys, monkeypatch, tmp_path
):
    """The proofs (child processes, faked here) import the module given as --impl from the user's
    directory, as the suite's run did, and get the proof's time limit."""
    import ppaux.regressions as regressions
    from ppaux.regressions.prove import PROOF_SECONDS, FileRun, MethodRun, Proof
    from ppaux.testing.scenario import Call, describe

    proofs = []

    def prove_files(sources, module, user_path, seconds):
        proofs.append((sorted(sources), module, user_path, seconds))
        red, green = FileRun({"test_b": MethodRun("fail")}), FileRun({"test_b": MethodRun("pass")})
        return {name: Proof(red, green) for name in sources}

    monkeypatch.setattr(regressions, "prove_files", prove_files)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    root = IMPLS.parent.parent
    monkeypatch.chdir(root)
    scenario = describe([Call("add", {}, None, [])], "p.")
    failing = {"nodeid": "t.py::test_b", "clause": "add.1", "marks": [], "outcome": "failed", "scenario": scenario}
    monkeypatch.setattr(suite, "run_in_process", FakePytest([failing], status=1))
    folder = tmp_path / "regressions"
    argv = ["check", "--impl", "tests.impls.torch_only", "--report", str(tmp_path / "r"), "--regressions", str(folder)]
    assert main(argv) == 1
    assert proofs == [(["test_add_1.py"], "tests.impls.torch_only", [str(root)], PROOF_SECONDS)]
    assert "\nfrom tests.impls.torch_only import (\n" in (folder / "test_add_1.py").read_text()
    assert capsys.readouterr().out.endswith(f"regression tests written to {folder}: {folder / 'test_add_1.py'}\n")


def test_more_or_fewer_examples_reach_the_suites_run_and_its_replay_command(capsys, monkeypatch, tmp_path):
    fake = FakePytest(ROWS, status=1)
    monkeypatch.setattr(suite, "run_in_process", fake)
    assert main(["check", "--max-examples", "500", "--report", str(tmp_path)]) == 1
    ((argv, _, _, _),) = fake.calls
    assert argv[argv.index("--ppaux-max-examples") + 1] == "500"
    report = json.loads((tmp_path / "conformance.json").read_text())
    assert report["command"] == "ppaux check --max-examples 500"
    assert "Replay: `ppaux check --max-examples 500 --tests test_b`" in capsys.readouterr().out
