"""The ``ppaux`` console script: catalog commands, usage errors, and ``ppaux check`` end to end."""

from __future__ import annotations

import importlib.metadata
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

import ppaux
import ppaux.testing.suite as suite
from ppaux.cli.main import main
from ppaux.core.clauses import CLAUSES
from ppaux.core.clauses import markdown_table as clauses_table
from ppaux.core.errors import CATALOG, markdown_table
from ppaux.testing.findings import FINDINGS
from ppaux.testing.suite import usable_workers
from tests.fake_pytest import FakePytest
from tests.support import build_report, cli_help, render_markdown

IMPLS = Path(__file__).resolve().parent / "impls"
NOTHING_MATCHES = (
    "not an error code or message (`ppaux errors`), a kit code (K1-K15, docs/kit.md) or a clause id (`ppaux clauses`)"
)


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_errors_lists_every_code(capsys):
    code, out, _ = run_cli(capsys, "errors")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == list(CATALOG)


def test_errors_markdown_is_the_readme_table(capsys):
    code, out, _ = run_cli(capsys, "errors", "--markdown")
    assert (code, out) == (0, markdown_table() + "\n")


def test_clauses_lists_every_clause_with_its_statement(capsys):
    code, out, _ = run_cli(capsys, "clauses")
    assert code == 0
    assert out.splitlines() == [f"{c.id:<18} {c.statement}" for c in CLAUSES.values()]
    assert run_cli(capsys, "clauses", "--markdown") == (0, clauses_table() + "\n", "")


def _kit_code(code):
    finding = FINDINGS[code]
    fixes = "".join(f"  - {fix}\n" for fix in finding.fixes)
    return (
        f"{code} {finding.kind} (reported by check_observer): {finding.template}\n"
        f"Meaning: {finding.meaning}\nFix:\n{fixes}"
    )


def _clause(clause_id, sglang):
    return f"{clause_id} (contract clause): {CLAUSES[clause_id].statement}\nSGLang 0.5.23: {sglang}\n"


@pytest.mark.parametrize(
    "argv, out",
    [
        (["K10"], _kit_code("K10")),
        (["k1"], _kit_code("K1")),
        (["K9", "mismatch"], _kit_code("K9")),
        (
            [
                (
                    "KitFailure: K9 mismatch: the rebuilt output differs "
                    "from the original after the relay: 'x' values differ"
                )
            ],
            _kit_code("K9"),
        ),
        (["add.5"], _clause("add.5", "same")),
        (["Round-Trip"], _clause("round-trip", "same")),
        (
            ["pop.4:", "from_pp_tensors()", "is", "called", "once"],
            _clause("pop.4", "differs: " + CLAUSES["pop.4"].sglang_differs),
        ),
    ],
)
def test_explain_a_kit_code_or_a_clause_id_alone_or_at_the_head_of_a_line(capsys, argv, out):
    assert run_cli(capsys, "explain", *argv) == (0, out, "")


def test_explain_a_line_the_kit_prints_for_a_catalog_error_by_its_code(capsys):
    code, out, _ = run_cli(capsys, "explain", "A4 from add: auxiliary PP output 'x' is not a tensor")
    assert (code, out.splitlines()[0]) == (0, f"A4 (raised by add): {CATALOG['A4'].template}")


def test_explain_a_pasted_traceback_line(capsys):
    code, out, _ = run_cli(
        capsys,
        "explain",
        "RuntimeError:",
        "received",
        "auxiliary",
        "PP",
        "output",
        "without",
        "a",
        "sampling",
        "observer",
    )
    assert code == 0
    assert out.startswith("P1 (raised by pop): received auxiliary PP output without a sampling observer\n")
    for fix in CATALOG["P1"].fixes:
        assert f"  - {fix}\n" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["explain", "Z9"], f"ppaux: error: nothing matches 'Z9': {NOTHING_MATCHES}\n"),
        (["explain", "K99", "mismatch"], f"ppaux: error: nothing matches 'K99 mismatch': {NOTHING_MATCHES}\n"),
        (
            ["explain", "received", "auxiliary", "PP", "output"],
            f"ppaux: error: nothing matches 'received auxiliary PP output': {NOTHING_MATCHES}\n",
        ),
        (["explain", "KitFailure:"], f"ppaux: error: nothing matches 'KitFailure:': {NOTHING_MATCHES}\n"),
        # Only a colon ends a code: a word that merely starts with one is not it.
        (["explain", "K9X:"], f"ppaux: error: nothing matches 'K9X:': {NOTHING_MATCHES}\n"),
        (
            ["bogus"],
            (
                "ppaux: argument command: invalid choice: 'bogus' (choose from 'check', "
                "'clauses', 'errors', 'explain', 'faults', 'fuzz', 'mutate', 'wire-diff')\n"
            ),
        ),
        (
            ["check", "--profile", "fast"],
            "ppaux: error: unknown profile 'fast'; choose from ci, dev, nightly, mutation\n",
        ),
        (
            ["check", "--timeout", "0"],
            "ppaux check: argument --timeout: timeout '0' must be a positive number of seconds\n",
        ),
        (
            ["check", "--timeout", "-1"],
            "ppaux check: argument --timeout: timeout '-1' must be a positive number of seconds\n",
        ),
        (
            ["check", "--timeout", "nan"],
            "ppaux check: argument --timeout: timeout 'nan' must be a positive number of seconds\n",
        ),
        (["check", "--timeout", "ten"], "ppaux check: argument --timeout: timeout 'ten' is not a number of seconds\n"),
        (
            ["check", "--max-examples", "0"],
            "ppaux check: argument --max-examples: expected a whole number of examples >= 1, not '0'\n",
        ),
        (
            ["check", "--max-examples", "many"],
            "ppaux check: argument --max-examples: expected a whole number of examples >= 1, not 'many'\n",
        ),
        (
            ["check", "--workers", "0"],
            "ppaux check: argument --workers: expected a whole number of workers >= 1, not '0'\n",
        ),
        (
            ["check", "--impl", "no_such_module_xyz"],
            (
                "ppaux: error: cannot import implementation module 'no_such_module_xyz': "
                "ModuleNotFoundError: No module named 'no_such_module_xyz'\n"
            ),
        ),
        (
            ["check", "--impl", str(IMPLS / "lacks_pop.py")],
            f"ppaux: error: implementation {str(IMPLS / 'lacks_pop.py')!r} lacks PipelineParallelAuxiliaryOutput, "
            "PipelineParallelSamplingObserver, add_auxiliary_output_to_pp_tensors, "
            "pop_auxiliary_output_from_pp_tensors; an implementation provides _OUTPUT_PREFIX, "
            "PipelineParallelAuxiliaryOutput, PipelineParallelSamplingObserver, add_auxiliary_output_to_pp_tensors, "
            'pop_auxiliary_output_from_pp_tensors (docs/contract.md, "What an implementation provides")\n',
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert (code, out, err) == (2, "", message)


def test_check_reports_a_pytest_that_did_not_run_in_pytests_own_words(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(suite, "installed_args", lambda *a: ["--no-such-option"])
    code, out, err = run_cli(capsys, "check", "--report", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.endswith("ppaux: error: the suite did not run (pytest exit 4)\n")
    assert "error: unrecognized arguments: --no-such-option\n" in err


@pytest.mark.subprocess
def test_python_dash_m_ppaux_runs_the_cli():
    proc = subprocess.run([sys.executable, "-m", "ppaux", "explain", "A2"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("A2 (raised by add): ")


def test_main_module_exits_with_the_cli_status(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["ppaux", "explain", "nothing"])
    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(Path(ppaux.__file__).with_name("__main__.py")), run_name="__main__")
    assert info.value.code == 2


def test_check_passes_on_the_reference_and_writes_both_reports(capsys, tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    code, out, _ = run_cli(
        capsys, "check", "--profile", "mutation", "--tests", "round_trip or none_output", "--report", str(tmp_path)
    )
    report = json.loads((tmp_path / "conformance.json").read_text())
    assert code == 0 and report["verdict"] == "pass"
    # The run's own pytest configuration stays out of the user's directory (other plugins may write theirs).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conformance.json", "conformance.md", "here"]
    assert not (tmp_path / "here" / "pytest.ini").exists()
    assert [c["clause"] for c in report["clauses"]] == ["add.1", "round-trip"]
    assert (tmp_path / "conformance.md").read_text() in out


def test_check_by_default_leaves_only_its_dot_directory_in_the_users_directory(capsys, tmp_path, monkeypatch):
    # The real suite's run, from the user's directory: the report lands under .ppaux and nothing else appears.
    # (Hypothesis's own .hypothesis/ is where this process first used Hypothesis, the outer run's directory:
    # from a user's shell, a check leaves it too, as any Hypothesis run does; the README says so.)
    # pytest-benchmark, where installed, makes .benchmarks/ in any pytest run: the user's plugin, not ppaux's.
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:benchmark")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "check", "--tests", "round_trip or none_output")
    assert code == 0
    # Under --cov (CI), the suite's forked children leave coverage's data files here: the measuring run's, not ppaux's.
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.name.startswith(".coverage.")) == [
        ".ppaux",
        ".ppaux/.gitignore",
        ".ppaux/check",
        ".ppaux/check/conformance.json",
        ".ppaux/check/conformance.md",
    ]
    assert json.loads((tmp_path / ".ppaux" / "check" / "conformance.json").read_text())["verdict"] == "pass"
    assert out.endswith("\nreport written to .ppaux/check/conformance.md, .ppaux/check/conformance.json\n")


def test_check_fails_on_a_broken_implementation_with_its_counterexample(capsys, tmp_path):
    code, out, _ = run_cli(
        capsys,
        "check",
        "--impl",
        str(IMPLS / "unstripped_names.py"),
        "--profile",
        "ci",
        "--tests",
        "round_trip",
        "--report",
        str(tmp_path),
    )
    report = json.loads((tmp_path / "conformance.json").read_text())
    assert code == 1 and report["verdict"] == "fail"
    (clause,) = report["clauses"]
    (test,) = clause["tests"]
    assert (clause["clause"], clause["verdict"], test["outcome"]) == ("round-trip", "fail", "failed")
    assert test["example"].splitlines()[0] == "test_round_trip("
    assert test["blob"].startswith("@reproduce_failure(")
    assert "## Counterexamples" in out and test["blob"] in out


DESELECTING_PLUGIN = """
def pytest_collection_modifyitems(config, items):
    config.hook.pytest_deselected(items=list(items))
    items.clear()
"""


def test_a_plugin_installed_beside_ppaux_takes_no_part_in_the_check(capsys, tmp_path, monkeypatch):
    """A pytest plugin of the caller's environment (here one that deselects every test) is loaded
    by their own pytest runs, not by ppaux check's run of the suite; their environment is left as it was."""
    site = tmp_path / "site"
    (site / "deselect_all-1.0.dist-info").mkdir(parents=True)
    (site / "deselect_all-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: deselect-all\nVersion: 1.0\n"
    )
    (site / "deselect_all-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\ndeselect_all = deselect_all\n")
    (site / "deselect_all.py").write_text(DESELECTING_PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    # Installed as pytest finds plugins: by its entry point.
    assert "deselect_all" in {e.value for e in importlib.metadata.entry_points(group="pytest11")}
    assert main(["check", "--tests", "round_trip", "--report", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "conformance.json").read_text(encoding="utf-8"))
    assert (report["verdict"], report["counts"]["passed"] > 0) == ("pass", True)
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in os.environ
    capsys.readouterr()


def test_the_callers_pytest_addopts_take_no_part_in_the_check_and_stay_theirs(capsys, tmp_path, monkeypatch):
    """A CI job's PYTEST_ADDOPTS is for its own runs, as its addopts is: an option of a plugin the
    suite's run does not load (pytest-cov's) would otherwise stop the check with a usage error."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "--cov=theirs --cov-report=")
    assert main(["check", "--tests", "round_trip", "--report", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "conformance.json").read_text(encoding="utf-8"))
    assert (report["verdict"], report["counts"]["passed"] > 0) == ("pass", True)
    assert os.environ["PYTEST_ADDOPTS"] == "--cov=theirs --cov-report="
    capsys.readouterr()


@pytest.mark.subprocess
def test_each_check_in_one_process_runs_under_its_own_profile_and_leaves_the_callers(capsys, tmp_path, monkeypatch):
    """A run under the mutation profile (no blob) must not decide the next run's settings; the
    caller's profile, and its imports of the suite's modules, are the same afterwards."""
    import ppaux.conformance
    import ppaux.conformance.test_properties as callers_module

    monkeypatch.delitem(sys.modules, "ppaux.conformance.test_stateful", raising=False)
    monkeypatch.delattr(ppaux.conformance, "test_stateful", raising=False)
    before = settings.get_current_profile_name()
    broken = str(IMPLS / "unstripped_names.py")
    assert (
        main(
            [
                "check",
                "--impl",
                broken,
                "--profile",
                "mutation",
                "--tests",
                "round_trip",
                "--report",
                str(tmp_path / "m"),
            ]
        )
        == 1
    )
    assert settings.get_current_profile_name() == before
    assert (
        main(["check", "--impl", broken, "--profile", "ci", "--tests", "round_trip", "--report", str(tmp_path / "c")])
        == 1
    )
    capsys.readouterr()
    (mutation_row,) = json.loads((tmp_path / "m" / "conformance.json").read_text())["clauses"][0]["tests"]
    (ci_row,) = json.loads((tmp_path / "c" / "conformance.json").read_text())["clauses"][0]["tests"]
    assert mutation_row["blob"] is None and ci_row["blob"].startswith("@reproduce_failure(")
    # Both ways a caller reaches the module: sys.modules and the package's attribute.
    import ppaux.conformance.test_properties as after

    assert after is callers_module and sys.modules["ppaux.conformance.test_properties"] is callers_module
    assert "ppaux.conformance.test_stateful" not in sys.modules and not hasattr(ppaux.conformance, "test_stateful")


def test_report_with_no_tests_is_a_failure():
    report = build_report([], impl="x", profile="ci", marks="contract")
    assert report["verdict"] == "fail" and report["counts"] == {"passed": 0, "failed": 0, "skipped": 0}
    assert "Verdict: **FAIL**" in render_markdown(report)


def test_report_of_a_failure_without_example_or_blob_says_where_to_look():
    row = {"nodeid": "t.py::test_x", "clause": "add.6", "marks": ["robustness"], "doc": "", "outcome": "failed"}
    text = render_markdown(build_report([row], impl="x", profile="ci", marks="robustness"))
    assert text.endswith(
        f"### add.6: `t.py::test_x`\n\nClause: {CLAUSES['add.6'].statement}\n\n\n\nError: `see the test output`\n"
    )


def test_the_suites_run_selects_by_marks_and_optionally_by_name(capsys, monkeypatch, tmp_path):
    fake = FakePytest([])
    monkeypatch.setattr(suite, "run_in_process", fake)
    main(["check", "--marks", "contract", "--timeout", "2.5", "--report", str(tmp_path)])
    ((argv, _, results, _),) = fake.calls
    # ppaux's tuning over Hypothesis's default profile, not the ci one Hypothesis loads on CI.
    assert argv[-12:-2] == [
        "-m",
        "contract",
        "--hypothesis-profile",
        "default",
        "--ppaux-profile",
        "ci",
        "--ppaux-results",
        results,
        "--ppaux-timeout",
        "2.5",
    ]
    main(
        [
            "check",
            "--impl",
            "ppaux.transport",
            "--tests",
            "round_trip",
            "--max-examples",
            "5",
            "--report",
            str(tmp_path),
        ]
    )
    argv = fake.calls[-1][0]
    assert argv[-6:-2] == ["--ppaux-impl", "ppaux.transport", "-k", "round_trip"]
    # The contained tests on every core this process may use (at most 4), or as many as asked for; in
    # process, no worker at all.
    assert argv[-2:] == ["--ppaux-workers", str(usable_workers())]
    main(["check", "--workers", "3", "--report", str(tmp_path)])
    assert fake.calls[-1][0][-2:] == ["--ppaux-workers", "3"]
    main(["check", "--isolation", "off", "--report", str(tmp_path)])
    assert "--ppaux-workers" not in fake.calls[-1][0]
    assert argv[argv.index("--ppaux-profile") : argv.index("--ppaux-results")] == [
        "--ppaux-profile",
        "ci",
        "--ppaux-max-examples",
        "5",
    ]
    capsys.readouterr()


def test_help_says_what_each_command_does(capsys):
    top = cli_help(capsys)
    assert " SGLang PP auxiliary-output transport: reference and conformance suite positional arguments:" in top
    from ppaux.cli.main import SUBCOMMANDS

    for name, (_, _, help_text) in SUBCOMMANDS.items():
        assert f"{name} {help_text}" in top, name
        assert help_text in cli_help(capsys, name), name
    assert "--markdown print docs/contract.md's error table" in cli_help(capsys, "errors")
    assert (
        "query an error code (A1, P1, I1, ...) or the message text from a traceback, a kit code (K1-K15, also as the "
        "kit prints it: 'K9 mismatch: ...') or a contract clause id (add.5, round-trip; `ppaux clauses` lists them)"
    ) in cli_help(capsys, "explain")


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "ppaux: the following arguments are required: command\n"),
        (["errors", "--bogus"], "ppaux: unrecognized arguments: --bogus\n"),
        (["explain"], "ppaux explain: the following arguments are required: query\n"),
    ],
)
def test_a_missing_or_unknown_argument_is_one_line_too(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert (code, out, err) == (2, "", message)


class _ClosedPipe:
    """A stdout whose reader went away: every write fails as the kernel says, EPIPE."""

    def __init__(self, fd):
        self.fd = fd

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass

    def fileno(self):
        return self.fd


def test_output_to_a_closed_pipe_ends_quietly_with_sigpipes_status(monkeypatch, capsys, tmp_path):
    with open(tmp_path / "stdout", "wb") as fh:
        monkeypatch.setattr(sys, "stdout", _ClosedPipe(fh.fileno()))
        assert main(["errors"]) == 128 + 13
    # What is printed after that goes nowhere (not to a traceback at exit).
    assert (tmp_path / "stdout").read_bytes() == b"" and capsys.readouterr().err == ""


@pytest.mark.subprocess
@pytest.mark.parametrize("argv", [["errors"], ["explain", "P1"], ["clauses", "--markdown"]])
def test_a_reader_that_closes_the_pipe_gets_no_traceback(argv):
    # As `ppaux errors | head -1` where head is gone before ppaux writes (torch takes seconds to import).
    proc = subprocess.Popen([sys.executable, "-m", "ppaux", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (128 + 13, b"")
