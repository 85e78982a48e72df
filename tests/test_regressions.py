"""``ppaux check --regressions DIR``: each broken clause becomes a standalone regression test file
that imports neither ppaux nor Hypothesis, fails against the implementation and passes against
ppaux's reference; bad output paths are one line and exit 2 before the suite runs."""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import ppaux_strategies
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from ppaux_strategies import (
    NotPPObserver,
    NotPPOutput,
    PPOutput,
    RaisingPPOutput,
    RecordingObserver,
    tensors,
    tensors_equal,
)
from ppaux_strategies.doubles import OBSERVER_MODES

import ppaux.regressions.doubles as doubles
import ppaux.regressions.prove as proof
import ppaux.testing.suite as suite
from ppaux.cli.main import main
from ppaux.conformance.test_properties import _TrapTensor
from ppaux.core.clauses import statement
from ppaux.regressions import MARKER, driver, module_search_path, write_regressions
from ppaux.regressions.expect import expected_steps
from ppaux.regressions.layout import wrap
from ppaux.regressions.render import STANDARD, RegressionCase, imported_roots, method_name, render
from ppaux.report import RefusedFinding, RegressionFile, TestOutcome
from ppaux.testing import results, scenario
from ppaux.testing.scenario import Call, CallRecorder, Unwritable, describe, tensor_expr
from tests.fake_pytest import FakePytest
from tests.planted_bugs import BUGS, plant
from tests.unittest_runs import run_unittest, summary

ROOT = Path(__file__).resolve().parent.parent


def test_a_drawn_tensor_is_written_as_code_that_makes_the_same_tensor():
    @given(tensors(include_meta=True))
    def check_tensor(t):
        made = eval(tensor_expr(t), {"torch": torch, "float": float, "complex": complex})
        assert (made.dtype, made.shape, made.stride(), made.storage_offset(), made.device) == (
            t.dtype,
            t.shape,
            t.stride(),
            t.storage_offset(),
            t.device,
        )
        assert made.is_contiguous() == t.is_contiguous() and tensors_equal(made, t)

    check_tensor()


def test_a_value_that_is_not_code_says_which():
    call = Call("add", {"next_token_ids": object()}, None, [("next_token_ids", object())])
    with pytest.raises(Unwritable) as info:
        describe([call], "p.")
    assert str(info.value).startswith("a object value (<object object at ")


LINES = [
    (
        (
            "        self.assertEntries(tensors, [('next_token_ids', next_token_ids), "
            "('__msg_type__', 'pp_output'), (_OUTPUT_PREFIX + 'x', x)])"
        ),
        80,
        [
            "        self.assertEntries(tensors, [",
            "            ('next_token_ids', next_token_ids),",
            "            ('__msg_type__', 'pp_output'),",
            "            (_OUTPUT_PREFIX + 'x', x),",
            "        ])",
        ],
    ),
    (
        (
            "        tensors = {'next_token_ids': next_token_ids, 'a, b': "
            "[1, (2,)], _OUTPUT_PREFIX + 'scores': scores, 7: 'x'}"
        ),
        80,
        [
            "        tensors = {",
            "            'next_token_ids': next_token_ids,",
            "            'a, b': [1, (2,)],",
            "            _OUTPUT_PREFIX + 'scores': scores,",
            "            7: 'x',",
            "        }",
        ],
    ),
    (
        (
            "        self.assertEqual(str(raised.exception), "
            "'auxiliary PP tensor names must be non-empty strings, said again')"
        ),
        80,
        [
            "        self.assertEqual(",
            "            str(raised.exception),",
            "            'auxiliary PP tensor names must be non-empty strings, said again',",
            "        )",
        ],
    ),
    # The outer of two nested lists; a line that starts with its bracket.
    ("[aaaa, [bb, cc], dd]", 14, ["[", "    aaaa,", "    [bb, cc],", "    dd,", "]"]),
    # Commas and brackets inside a string, after an escaped quote or an escaped backslash, are the string's.
    ("f(x, ['it\\'s, [one', 'two'])", 12, ["f(x, [", "    'it\\'s, [one',", "    'two',", "])"]),
    ("f(['\\\\', 'a, b'], c)", 12, ["f([", "    '\\\\',", "    'a, b',", "], c)"]),
    ("f(X, [a, b])", 11, ["f(X, [", "    a,", "    b,", "])"]),
]


@pytest.mark.parametrize("line, width, expected", LINES)
def test_a_long_line_is_broken_into_lines_that_fit_and_mean_the_same(line, width, expected):
    lines = wrap(line, width)
    assert lines == expected
    assert ast.dump(ast.parse("\n".join(lines).strip())) == ast.dump(ast.parse(line.strip()))


def test_a_line_as_long_as_the_width_is_kept_whole():
    assert wrap("f(X, [a, b])", 12) == ["f(X, [a, b])"]


@pytest.mark.subprocess
def test_the_steps_of_a_counterexample_read_as_a_hand_written_test(tmp_path):
    """The file's test for SGLang's add.6 counterexample, as a maintainer would receive it."""
    scores = torch.zeros(())
    d = {"next_token_ids": torch.zeros(2)}
    call = Call("add", d, PPOutput({"scores": scores, "": None}), list(d.items()))
    test = TestOutcome(
        "t.py::test_failed_add_leaves_dict_exactly_as_before",
        "add.6",
        "failed",
        scenario=describe([call], "__sampling_observer_output__."),
    )
    summary_, regression_of = write_regressions(
        {"add.6": [test]}, "tests.impls.torch_only", tmp_path, 10.0, [str(ROOT)]
    )
    assert summary_.refused == () and [f.path for f in summary_.files] == [str(tmp_path / "test_add_6.py")]
    assert (
        regression_of[test.nodeid].code
        == f'''\
def test_failed_add_leaves_dict_exactly_as_before(self):
    """add.6: {statement("add.6")[:78]}
    {statement("add.6")[79:]}
    """
    next_token_ids = torch.zeros((2,))
    tensors = {{'next_token_ids': next_token_ids}}
    scores = torch.tensor(0.0)
    output = PPOutput({{'scores': scores, '': None}})

    with self.assertRaises(Exception) as raised:
        add_auxiliary_output_to_pp_tensors(tensors, output)
    self.assertIsInstance(raised.exception, RuntimeError)
    self.assertEqual(
        str(raised.exception),
        'auxiliary PP tensor names must be non-empty strings',
    )
    self.assertEqual(output.calls, 1)
    self.assertEntries(tensors, [('next_token_ids', next_token_ids)])'''
    )


@pytest.mark.subprocess
def test_a_test_that_passes_against_the_implementation_is_not_written(tmp_path):
    call = Call("add", {}, None, [])
    test = TestOutcome("t.py::test_none", "add.1", "failed", scenario=describe([call], "p."))
    done, regression_of = write_regressions({"add.1": [test]}, "tests.impls.torch_only", tmp_path, 10.0, [str(ROOT)])
    why = "it passes against the implementation: the failure depends on more than the calls the test replays"
    assert done.files == () and done.refused == (RefusedFinding("add.1", "t.py::test_none", why),)
    assert regression_of == {"t.py::test_none": RegressionFile(why=why)} and list(tmp_path.iterdir()) == []


@pytest.mark.subprocess
def test_regression_files_fail_on_the_implementation_without_ppaux_and_pass_on_the_reference(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(ROOT)
    folder, out = tmp_path / "regressions", tmp_path / "report"
    tests = "test_a_bad_item_after_a_good_one_writes_nothing or test_non_str_keys_are_ordinary_keys"
    assert (
        main(
            [
                "check",
                "--impl",
                "tests.impls.torch_only",
                "--tests",
                tests,
                "--regressions",
                str(folder),
                "--report",
                str(out),
            ]
        )
        == 1
    )
    printed = capsys.readouterr().out
    report = json.loads((out / "conformance.json").read_text())
    files = {f["clause"]: f for f in report["regressions"]["files"]}
    assert sorted(files) == ["add.6", "pop.1"] and report["regressions"]["refused"] == []
    assert sorted(p.name for p in folder.iterdir()) == ["test_add_6.py", "test_pop_1.py"]
    for path in folder.iterdir():
        source = path.read_text()
        assert source.startswith(MARKER)
        assert imported_roots(source) <= STANDARD | {"tests"}
    # Each finding shows its test beside its example; the written files are listed.
    markdown = (out / "conformance.md").read_text()
    for row in (t for c in report["clauses"] for t in c["tests"] if t["outcome"] == "failed"):
        assert f"```python\n{row['regression']['code']}\n```" in markdown
    assert printed.endswith(
        f"regression tests written to {folder}: {files['add.6']['path']}, {files['pop.1']['path']}\n"
    )
    red = run_unittest(folder, [ROOT], block=True)
    assert summary(red) == "FAILED (failures=1, errors=1)", red.stderr  # pop.1: the AttributeError in its pop
    reference = tmp_path / "reference"
    proof.bind_reference(reference, "tests.impls.torch_only")
    green = run_unittest(folder, [reference, ROOT])
    assert summary(green) == "OK", green.stderr


def a_file(tmp: Path) -> Path:
    (tmp / "f").write_text("")
    return tmp / "f"


@pytest.mark.parametrize(
    "make, why",
    [
        (a_file, "{0} is not a directory"),
        (lambda tmp: a_file(tmp) / "sub", "cannot create {0}: Not a directory"),
    ],
)
@pytest.mark.parametrize("option", ["--regressions", "--report"])
def test_an_output_directory_that_cannot_be_written_is_one_line_before_the_run(
    tmp_path, capsys, monkeypatch, make, why, option
):
    monkeypatch.setattr(suite, "run_in_process", FakePytest([]))
    bad = make(tmp_path)
    argv = ["check", "--report", str(tmp_path / "r"), option, str(bad)]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"ppaux: error: {option}: {why.format(bad)}\n"
    assert suite.run_in_process.calls == []


def test_a_report_under_dev_null_is_one_line_before_the_run(capsys, monkeypatch):
    monkeypatch.setattr(suite, "run_in_process", FakePytest([]))
    assert main(["check", "--report", "/dev/null/x"]) == 2
    assert capsys.readouterr().err == "ppaux: error: --report: cannot create /dev/null/x: Not a directory\n"


def test_a_junit_path_that_is_a_directory_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(suite, "run_in_process", FakePytest([]))
    assert main(["check", "--report", str(tmp_path / "r"), "--junit", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"ppaux: error: --junit: {tmp_path} is a directory\n"


@pytest.mark.parametrize(
    "option, flag, expr, detail",
    [
        (
            "--marks",
            "m",
            "contract or (",
            "contract or (: at column 14: expected not OR left parenthesis OR identifier; got end of input",
        ),
        ("--tests", "k", "x y", "x y: at column 3: expected end of input; got identifier"),
    ],
)
def test_an_invalid_selection_expression_says_so(tmp_path, capsys, option, flag, expr, detail):
    assert main(["check", "--report", str(tmp_path), option, expr]) == 2
    assert capsys.readouterr().err == f"ppaux: error: {option} is not a valid pytest -{flag} expression: {detail}\n"


def test_files_of_an_earlier_run_are_replaced_and_a_users_own_files_kept(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "regressions"
    folder.mkdir()
    (folder / "test_pop_9.py").write_text(MARKER + " for pop.9.\n")
    (folder / "test_mine.py").write_text("# mine\n")
    failing = {"nodeid": "t.py::test_b", "clause": "add.1", "marks": [], "outcome": "failed", "error": "E: x"}
    monkeypatch.setattr(suite, "run_in_process", FakePytest([failing], status=1))
    assert main(["check", "--report", str(tmp_path / "r"), "--regressions", str(folder)]) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["test_mine.py"]
    report = json.loads((tmp_path / "r" / "conformance.json").read_text())
    why = "the test's calls were not recorded"
    assert report["regressions"] == {
        "directory": str(folder),
        "files": [],
        "removed": [str(folder / "test_pop_9.py")],
        "refused": [{"clause": "add.1", "nodeid": "t.py::test_b", "why": why}],
    }
    # The replay repeats no option left at its default; the regression section says why nothing was written.
    markdown = (tmp_path / "r" / "conformance.md").read_text()
    assert markdown.split("## Counterexamples\n\n", 1)[1] == (
        f"### add.1: `t.py::test_b`\n\nClause: {statement('add.1')}\n\n\n\nError: `E: x`\n\n"
        "Replay: `ppaux check --tests test_b` (the `ci` profile draws the same examples on every run).\n\n"
        f"No regression test: {why}.\n\n\n"
        f"## Regression tests\n\nDirectory: `{folder}`.\nReplaced 1 file(s) of an earlier run: `test_pop_9.py`.\n\n"
        f"- none written\n- not written for `t.py::test_b` (add.1): {why}\n"
    )
    capsys.readouterr()


def test_a_passing_run_writes_no_regression_file_and_removes_stale_ones(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "regressions"
    folder.mkdir()
    (folder / "test_add_6.py").write_text(MARKER + " for add.6.\n")
    monkeypatch.setattr(
        suite, "run_in_process", FakePytest([{"nodeid": "t.py::a", "clause": "add.1", "outcome": "passed"}])
    )
    assert main(["check", "--report", str(tmp_path / "r"), "--regressions", str(folder)]) == 0
    assert list(folder.iterdir()) == []
    assert capsys.readouterr().out.endswith(f"regression tests written to {folder}: none\n")
    assert (tmp_path / "r" / "conformance.md").read_text().partition("\n\n## Regression tests\n\n")[2] == (
        f"Directory: `{folder}`.\nReplaced 1 file(s) of an earlier run: `test_add_6.py`.\n\n"
        "- none written: no clause is broken\n"
    )


# One bug each of add's order, atomicity, pop's observer and a stateful leak in CI; all of them nightly.
SAMPLE = (
    "add_writes_before_checking_every_item",
    "no_observer_is_p2",
    "pop_leaves_the_last_aux_key",
    "value_checked_before_name",
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "bug", [bug if bug in SAMPLE else pytest.param(bug, marks=pytest.mark.thorough) for bug in sorted(BUGS)]
)
def test_every_clause_a_planted_bug_breaks_becomes_a_red_green_regression_test(bug, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    impl = plant(bug, tmp_path)
    folder, out = tmp_path / "regressions", tmp_path / "report"
    assert (
        main(
            [
                "check",
                "--impl",
                str(impl),
                "--tests",
                BUGS[bug].tests,
                "--regressions",
                str(folder),
                "--report",
                str(out),
            ]
        )
        == 1
    )
    capsys.readouterr()
    report = json.loads((out / "conformance.json").read_text())
    assert report["failed_clauses"] == list(BUGS[bug].breaks)
    assert [f["clause"] for f in report["regressions"]["files"]] == list(BUGS[bug].breaks)
    # Written only once proven red on the bug and green on the reference (the test above reruns a proof by hand).
    assert report["regressions"]["refused"] == []


DRIVEN = """
import unittest
from tests.impls.torch_only import pop_auxiliary_output_from_pp_tensors as pop


class TestDriven(unittest.TestCase):
    def test_passes(self):
        self.assertIsNone(pop({}, None))

    def test_fails(self):
        self.assertEqual(1, 2)

    def test_errs_in_the_implementation(self):
        pop({0: 1}, None)

    def test_errs_in_itself(self):
        undefined_name

    @unittest.skip("not today")
    def test_skipped(self):
        pass
"""


def test_the_proof_driver_tells_an_error_in_the_implementation_from_one_in_the_test(tmp_path, monkeypatch):
    (tmp_path / "test_driven.py").write_text(DRIVEN)
    (tmp_path / "test_broken.py").write_text("import no_such_module_here\n")
    monkeypatch.syspath_prepend(str(ROOT))
    got = driver.run_file(str(tmp_path / "test_driven.py"), "tests.impls.torch_only")["tests"]
    said = {
        name: (o["outcome"], (o.get("text") or "").splitlines()[-1:], o.get("in_implementation"))
        for name, o in got.items()
    }
    assert said == {
        "test_passes": ("pass", [], None),
        "test_fails": ("fail", ["AssertionError: 1 != 2"], None),
        "test_errs_in_the_implementation": (
            "error",
            ["AttributeError: 'int' object has no attribute 'startswith'"],
            True,
        ),
        "test_errs_in_itself": ("error", ["NameError: name 'undefined_name' is not defined"], False),
        "test_skipped": ("skip", ["not today"], None),
    }
    # A module the test file never imported: no error can be inside it.
    errs = driver.run_file(str(tmp_path / "test_driven.py"), "module_never_imported")["tests"]
    assert errs["test_errs_in_the_implementation"]["in_implementation"] is False
    assert driver.run_file(str(tmp_path / "test_broken.py"), "tests.impls.torch_only") == {
        "import_error": "ModuleNotFoundError: No module named 'no_such_module_here'"
    }


def test_an_error_in_an_implementation_whose_path_reads_like_a_traceback_line_is_the_implementations(tmp_path):
    # A folder name may hold a double quote, even the text that follows a traceback's path.
    folder = tmp_path / 'a", line 9, in b'
    folder.mkdir()
    (folder / "quoted_impl.py").write_text("def pop(tensors, observer):\n    raise KeyError('k')\n")
    (folder / "test_quoted.py").write_text(
        "import unittest\nfrom quoted_impl import pop\n\n\n"
        "class TestQuoted(unittest.TestCase):\n    def test_pop(self):\n        pop({}, None)\n"
    )
    try:
        got = driver.run_file(str(folder / "test_quoted.py"), "quoted_impl")["tests"]["test_pop"]
    finally:
        sys.modules.pop("quoted_impl", None)
        sys.modules.pop("test_quoted", None)
    assert (got["outcome"], got["text"].splitlines()[-1], got["in_implementation"]) == ("error", "KeyError: 'k'", True)


# Proves files in child interpreters (several seconds): with the slow end-to-end runs.
@pytest.mark.slow
def test_a_crash_becomes_a_test_that_runs_the_calls_in_a_child_with_a_time_limit(tmp_path):
    """A file given by path is imported by its stem, with a comment saying which file that is."""
    d = {"next_token_ids": torch.zeros(())}
    add = Call("add", d, PPOutput({"scores": torch.zeros(())}), list(d.items()))
    d["__sampling_observer_output__.scores"] = add.arg.payload["scores"]
    add.after = list(d.items())
    pop = Call("pop", d, None, list(d.items()))
    test = TestOutcome(
        "t.py::test_pop_without_an_observer_is_p1",
        "pop.3",
        "failed",
        finding="crash",
        scenario=describe([add, pop], "__sampling_observer_output__."),
    )
    impl = ROOT / "tests" / "impls" / "segfaults_without_observer.py"
    done, regression_of = write_regressions({"pop.3": [test]}, str(impl), tmp_path, 5.0, [str(impl.parent), str(ROOT)])
    assert done.refused == ()
    source = (tmp_path / "test_pop_3.py").read_text()
    assert (
        f"# segfaults_without_observer is {impl} (ppaux check --impl {impl}): run with its directory on PYTHONPATH.\n"
        in source
    )
    assert (
        '''
def pop_without_an_observer_is_p1_calls():
    """The calls of test_pop_without_an_observer_is_p1's counterexample."""
    next_token_ids = torch.tensor(0.0)
    tensors = {'next_token_ids': next_token_ids}
    scores = torch.tensor(0.0)
    output = PPOutput({'scores': scores})
    add_auxiliary_output_to_pp_tensors(tensors, output)
    with contextlib.suppress(RuntimeError):  # the contract's answer here
        pop_auxiliary_output_from_pp_tensors(tensors, None)
'''
        in source
    )
    assert regression_of[test.nodeid].code.endswith("""
    exitcode = run_in_child(pop_without_an_observer_is_p1_calls, seconds=5.0)
    self.assertIsNotNone(exitcode, "the calls did not return within 5 s")
    self.assertEqual(exitcode, 0, "the process making the calls died")  # here: it ended its process""")


@pytest.mark.subprocess
def test_a_proof_run_that_dies_or_outlasts_its_limit_says_so_and_spares_the_other_files(tmp_path):
    (tmp_path / "test_fine.py").write_text("import unittest\nclass T(unittest.TestCase):\n    def test_x(self): pass\n")
    (tmp_path / "test_exits.py").write_text("import os\nos._exit(3)\n")
    (tmp_path / "test_sleeps.py").write_text("import time\ntime.sleep(30)\n")
    files = [tmp_path / "test_fine.py", tmp_path / "test_exits.py"]
    assert proof._run_side(files, "m", [], 30.0) == {
        "test_fine.py": proof.FileRun({"test_x": proof.MethodRun("pass")}),
        "test_exits.py": proof.FileRun(broken="the test run ended with exit status 3"),
    }
    assert proof.run([tmp_path / "test_sleeps.py"], "m", [], 0.5) == {
        "test_sleeps.py": proof.FileRun(broken="the test run did not finish within 0.5 s")
    }


PASS, FAIL = {"outcome": "pass"}, {"outcome": "fail", "text": "Traceback\nAssertionError: 1 != 2"}


@pytest.mark.parametrize(
    "red, green, why",
    [
        ({"tests": {"t": FAIL}}, {"tests": {"t": PASS}}, None),
        ({"tests": {"t": {"outcome": "error", "in_implementation": True, "text": "E"}}}, {"tests": {"t": PASS}}, None),
        (
            {"broken": "the test run ended with exit status 3"},
            {"tests": {"t": PASS}},
            "against the implementation, the test run ended with exit status 3",
        ),
        (
            {"tests": {"t": FAIL}},
            {"import_error": "ImportError: x"},
            "against the reference, the file did not import: ImportError: x",
        ),
        (
            {"tests": {"t": FAIL}},
            {"tests": {"t": FAIL}},
            "it does not pass against ppaux's reference (fail: AssertionError: 1 != 2)",
        ),
        (
            {"tests": {"t": PASS}},
            {"tests": {"t": PASS}},
            "it passes against the implementation: the failure depends on more than the calls the test replays",
        ),
        (
            {"tests": {"t": {"outcome": "error", "in_implementation": False, "text": "NameError: x"}}},
            {"tests": {"t": PASS}},
            "against the implementation it errs outside the implementation (NameError: x)",
        ),
        (
            {"tests": {"t": FAIL}},
            {"tests": {"t": {"outcome": "skip", "text": ""}}},
            "it does not pass against ppaux's reference (skip: no output)",
        ),
        # A method unittest did not run on either side (its name does not start with "test").
        ({"tests": {}}, {"tests": {}}, "it does not pass against ppaux's reference (None: no output)"),
    ],
)
def test_a_test_is_kept_only_when_red_on_the_implementation_and_green_on_the_reference(red, green, why):
    # As the driver prints them (its JSON line), read as the proof reads them.
    assert proof.judge(proof.FileRun.from_json(red), proof.FileRun.from_json(green), "t") == why


def test_a_counterexample_of_several_steps_keeps_its_dict_until_the_test_changes_it():
    scores, meta = torch.zeros(2), torch.empty((2, 3), device="meta").t()
    d = {"next_token_ids": scores}
    add = Call(
        "add", d, PPOutput({"x": meta}), [("next_token_ids", scores)], [("next_token_ids", scores), ("p.x", meta)]
    )
    pop = Call("pop", d, RecordingObserver("raise"), list(add.after), [("next_token_ids", scores)])
    again = Call("pop", d, None, [("next_token_ids", scores), (0, (1.5, float("nan"), complex(1, 2)))])
    assert describe([add, pop, again], "p.") == {
        "prefix": "p.",
        "doubles": ["PPOutput", "RecordingObserver"],
        "steps": [
            {
                "op": "add",
                "dict": "tensors",
                "arg": "output",
                "setup": [
                    "next_token_ids = torch.zeros((2,))",
                    "tensors = {'next_token_ids': next_token_ids}",
                    "x = torch.empty((6,), device='meta').as_strided((3, 2), (1, 3), 0)",
                    "output = PPOutput({'x': x})",
                ],
            },
            {"op": "pop", "dict": "tensors", "arg": "observer", "setup": ["observer = RecordingObserver('raise')"]},
            {
                "op": "pop",
                "dict": "tensors_2",
                "arg": "None",
                "setup": ["tensors_2 = {'next_token_ids': next_token_ids, 0: (1.5, float('nan'), complex(1.0, 2.0))}"],
            },
        ],
    }


@pytest.mark.parametrize(
    "value, why",
    [
        (torch.zeros(2).to_sparse(), "a torch.sparse_coo tensor cannot be written as code"),
        (torch.nn.Parameter(torch.zeros(1)), "a tensor of the subclass Parameter cannot be written as code"),
    ],
)
def test_a_tensor_that_is_not_code_says_why(value, why):
    with pytest.raises(Unwritable) as info:
        tensor_expr(value)
    assert str(info.value) == why


def test_a_dict_that_is_not_a_dict_is_not_written():
    class Relayed(dict):
        pass

    with pytest.raises(Unwritable) as info:
        describe([Call("pop", Relayed(), None, [])], "p.")
    assert str(info.value) == "a Relayed PP dict cannot be written as code"


def test_a_trap_tensor_is_written_as_the_files_own_trap():
    trap = torch.ones(2, dtype=torch.int8).as_subclass(_TrapTensor)
    expr = tensor_expr(trap)
    assert expr == "torch.tensor([1, 1], dtype=torch.int8).as_subclass(TrapTensor)"
    made = eval(expr, {"torch": torch, **_exec(doubles.source(["TrapTensor"]))})
    assert type(made).__name__ == "TrapTensor"


def _exec(source: str) -> dict:
    namespace = {"torch": torch}
    exec(source, namespace)
    return namespace


def test_the_reference_run_names_what_it_raised_and_returned():
    scenario = {
        "prefix": "p.",
        "doubles": ["RaisingPPOutput", "RecordingObserver"],
        "steps": [
            {"op": "add", "dict": "tensors", "arg": "output", "setup": ["tensors = {}", "output = RaisingPPOutput()"]},
            {
                "op": "pop",
                "dict": "tensors",
                "arg": "observer",
                "setup": ["x = torch.zeros(())", "tensors = {'p.x': x}", "observer = RecordingObserver('rebuild')"],
            },
        ],
    }
    steps = expected_steps(scenario)
    assert [s["raised"] for s in steps] == [["self.assertIs(raised.exception, output.error)"], None]
    assert steps[1]["checks"] == [
        "self.assertIs(result, observer.returned[-1])",
        "self.assertEqual(len(observer.handed), 1)",
        "self.assertEntries(observer.handed[-1], [('x', x)])",
        "self.assertEntries(tensors, [])",
    ]


def test_a_failing_test_that_made_no_call_says_so():
    assert results.scenario(CallRecorder(), "p.") == results.RecordedCalls(
        scenario_error="the test made no call into the implementation"
    )


def test_bits_torch_cannot_take_back_as_values_are_written_as_bytes():
    nan_with_payload = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)
    expr = tensor_expr(nan_with_payload)
    assert expr == "torch.tensor([1, 0, 192, 127], dtype=torch.uint8).view(torch.float32).reshape((1,))"
    assert tensors_equal(eval(expr, {"torch": torch}), nan_with_payload)
    assert scenario._reproduces("torch.tensor([1], dtype=torch.no_such_dtype)", torch.ones(1)) is False


def test_the_recorder_keeps_the_calls_of_the_last_example_only():
    recorder = CallRecorder()
    add = recorder.wrap("add", lambda d, output: d.update(x=output))
    seen = []

    @given(st.integers(0, 3))
    def adds(n):
        for _ in range(n + 1):
            add({}, n)
        seen.append(n)

    adds()
    assert [c.arg for c in recorder.calls] == [seen[-1]] * (seen[-1] + 1)
    assert [c.after for c in recorder.calls][-1] == [("x", seen[-1])]
    recorder.start_test()
    recorder.wrap("pop", lambda d, observer: None)(None, "not a mapping")
    assert [(c.op, c.before, c.after) for c in recorder.calls] == [("pop", [], [])]


def test_names_and_keys_of_any_shape_are_written_as_valid_code():
    trap = torch.zeros(()).as_subclass(_TrapTensor)
    d = {"p.": 1, "class": {"a": [None]}}
    call = Call("add", d, PPOutput({"0": trap, "x y": torch.zeros(1)}), list(d.items()))
    falsy = Call("add", d, PPOutput(None), list(d.items()))
    written = describe([call, falsy], "p.")
    assert written["steps"][1]["setup"] == [
        "tensors_2 = {_OUTPUT_PREFIX: 1, 'class': {'a': [None]}}",
        "output_2 = PPOutput(None)",
    ]
    assert written["doubles"] == ["PPOutput", "TrapTensor"]
    assert written["steps"][0]["setup"] == [
        "tensors = {_OUTPUT_PREFIX: 1, 'class': {'a': [None]}}",
        "value_0 = torch.tensor(0.0).as_subclass(TrapTensor)",
        "x_y = torch.zeros((1,))",
        "output = PPOutput({'0': value_0, 'x y': x_y})",
    ]
    assert scenario.literal({"a": (1,)}) == "{'a': (1,)}"


def test_a_value_the_recorded_calls_cannot_write_is_the_rows_reason(monkeypatch):
    recorder = CallRecorder()
    recorder.wrap("pop", lambda d, observer: None)({"k": object()}, None)
    assert results.scenario(recorder, "p.").scenario_error.startswith("a object value (<object object at ")


def test_two_tests_of_one_name_get_two_methods():
    taken: set = set()
    assert [method_name(n, taken) for n in ("a.py::test_x[A 1]", "b.py::test_x[a-1]", "c.py::test_x")] == [
        "test_x_a_1",
        "test_x_a_1_2",
        "test_x",
    ]


@pytest.mark.parametrize(
    "line",
    [
        (
            "        x = 'a very long string that no bracket could break, "
            "with an escaped \\' quote in it, longer than eighty'"
        ),
        "        self.assertEqual(x_is_a_long_name_for_a_value, y_is_another_long_name_for_another_value_here)",
    ],
)
def test_a_line_without_a_list_to_break_is_kept_or_broken_at_its_call(line):
    lines = wrap(line, 80)
    assert ast.dump(ast.parse("\n".join(lines).strip())) == ast.dump(ast.parse(line.strip()))
    assert len(lines) == (1 if "'" in line else 4)


@pytest.mark.slow
@pytest.mark.thorough  # CI: a crash's test runs its calls in a child the same way, proven red and green
def test_a_hang_becomes_a_test_that_fails_when_its_calls_outlast_the_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    impl, folder, out = (
        ROOT / "tests" / "impls" / "hangs_on_three_items.py",
        tmp_path / "regressions",
        tmp_path / "report",
    )
    assert (
        main(
            [
                "check",
                "--impl",
                str(impl),
                "--tests",
                "test_round_trip",
                "--timeout",
                "0.5",
                "--regressions",
                str(folder),
                "--report",
                str(out),
            ]
        )
        == 1
    )
    capsys.readouterr()
    report = json.loads((out / "conformance.json").read_text())
    assert [f["clause"] for f in report["regressions"]["files"]] == ["round-trip"] and report["regressions"][
        "refused"
    ] == []
    red = run_unittest(folder, [impl.parent, ROOT])
    assert summary(red) == "FAILED (failures=1)"
    assert "AssertionError: unexpectedly None : the calls did not return within 0.5 s" in red.stderr


def _observe(observer_class, mode):
    handed = {"a": torch.zeros(1), "b": torch.ones(1)}
    try:
        result = observer_class(mode).from_pp_tensors(handed)
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc), list(handed))
    return ("returned", getattr(result, "names", result), list(handed))


@pytest.mark.parametrize("mode", OBSERVER_MODES)
def test_a_files_observer_twin_does_what_the_suites_observer_does(mode):
    """A regression file cannot import ppaux_strategies: its twin of each double must behave the same."""
    twin = _exec(doubles.source(["RecordingObserver"]))["RecordingObserver"]
    assert _observe(twin, mode) == _observe(RecordingObserver, mode)


@pytest.mark.parametrize("name, calls", [("PPOutput", 1), ("RaisingPPOutput", 1)])
def test_a_files_output_twins_do_what_the_suites_outputs_do(name, calls):
    twin = _exec(doubles.source([name]))[name]
    suites = getattr(ppaux_strategies, name)
    made = [cls({"x": 1}) if name == "PPOutput" else cls() for cls in (twin, suites)]
    outcomes = []
    for output in made:
        try:
            outcomes.append(("returned", output.to_pp_tensors(), output.calls))
        except Exception as exc:
            outcomes.append(("raised", str(exc), output.calls, exc is output.error))
    assert outcomes[0] == outcomes[1] and outcomes[0][-1] in (calls, True)


def test_a_files_trap_tensor_traps_what_the_suites_trap_traps():
    twin = _exec(doubles.source(["TrapTensor"]))["TrapTensor"]
    said = []
    for trap in (torch.zeros(2).as_subclass(twin), torch.zeros(2).as_subclass(_TrapTensor)):
        repr(trap)
        with pytest.raises(AssertionError) as info:
            trap.clone()
        said.append(str(info.value))
    assert said[0] == said[1] == "expected add and pop never to touch an aux tensor, got a call of clone"


def test_an_observer_pop_never_called_is_checked_as_never_called():
    scenario_ = {
        "prefix": "p.",
        "doubles": ["RecordingObserver"],
        "steps": [
            {
                "op": "pop",
                "dict": "tensors",
                "arg": "observer",
                "setup": ["tensors = {'k': 1}", "observer = RecordingObserver()"],
            }
        ],
    }
    assert expected_steps(scenario_)[0]["checks"] == [
        "self.assertIsNone(result)",
        "self.assertEqual(len(observer.handed), 0)",
        "self.assertEntries(tensors, [('k', 1)])",
    ]


def test_a_hang_and_an_assertion_of_one_clause_share_a_file():
    steps = expected_steps(
        {
            "prefix": "p.",
            "doubles": [],
            "steps": [{"op": "pop", "dict": "tensors", "arg": "None", "setup": ["tensors = {}"]}],
        }
    )
    hang = RegressionCase("t.py::test_a", "pop.2", "hang", steps, [], method="test_a")
    plain = RegressionCase("t.py::test_b", "pop.2", None, steps, [], method="test_b")
    source = render("pop.2", [hang, plain], "m", 1.0)
    assert "def a_calls():" in source and "def b_calls():" not in source
    assert "    def test_b(self):" in source and "        exitcode = run_in_child(a_calls, seconds=1.0)" in source


# Proves files in child interpreters (several seconds): with the slow end-to-end runs.
@pytest.mark.slow
def test_a_clause_keeps_the_tests_that_tell_the_implementation_from_the_reference(tmp_path):
    atomic = Call("add", {}, PPOutput({"scores": torch.zeros(1), "bad": [0.5]}), [])
    none = Call("add", {}, None, [])
    tests = [
        TestOutcome(f"t.py::{name}", "add.6", "failed", scenario=describe([call], "p."))
        for name, call in (("test_atomic", atomic), ("test_none", none))
    ]
    done, _ = write_regressions({"add.6": tests}, "tests.impls.torch_only", tmp_path, 10.0, [str(ROOT)])
    assert [(f.clause, f.tests) for f in done.files] == [("add.6", ("test_atomic",))]
    assert [r.nodeid for r in done.refused] == ["t.py::test_none"]
    assert "def test_none" not in (tmp_path / "test_add_6.py").read_text()


def test_a_run_that_records_calls_hands_a_failing_tests_calls_over_as_code(pytester):
    pytester.makeconftest("""
import pytest
from ppaux.testing.plugin import recorded_calls

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.when == "call":
        report.calls = recorded_calls(item)
""")
    pytester.makepyfile("""
def test_pop(ppaux_impl):
    ppaux_impl.pop({"k": 1}, None)
    assert False
""")
    for extra, calls in (
        ([], None),
        (
            ["--ppaux-record-calls"],
            results.RecordedCalls(
                {
                    "prefix": "__sampling_observer_output__.",
                    "doubles": [],
                    "steps": [{"op": "pop", "dict": "tensors", "arg": "None", "setup": ["tensors = {'k': 1}"]}],
                }
            ),
        ),
    ):
        reports = pytester.inline_run("-p", "no:cacheprovider", *extra).getreports("pytest_runtest_logreport")
        assert [r.calls for r in reports if r.when == "call"] == [calls]


def test_doubles_without_state_are_written_as_their_class():
    d: dict = {}
    calls = [
        Call("add", d, RaisingPPOutput(), []),
        Call("add", d, NotPPOutput(), [], []),
        Call("pop", d, NotPPObserver(), [], []),
    ]
    calls[0].after = []
    assert [step["setup"][-1] for step in describe(calls, "p.")["steps"]] == [
        "output = RaisingPPOutput()",
        "output_2 = NotPPOutput()",
        "observer = NotPPObserver()",
    ]


def test_the_proofs_find_the_module_where_the_run_found_it(tmp_path, monkeypatch):
    (tmp_path / "mine.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/a", "", "/b"]))
    assert module_search_path(str(tmp_path / "mine.py"), Path("/here")) == [str(tmp_path), "/here", "/a", "/b"]
    assert module_search_path("pkg.mod", Path("/here")) == ["/here", "/a", "/b"]
    monkeypatch.delenv("PYTHONPATH")
    assert module_search_path("pkg.mod", Path("/here")) == ["/here"]
