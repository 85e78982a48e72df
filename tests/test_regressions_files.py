"""``ppaux check --regressions DIR`` as its user meets it, with the proof's child scripted: which files are
written, their exact text, what each failing test's row says, and why a finding is refused.

The proof runs the written files in a child interpreter (prove.DRIVER). Here that child is a scripted
stand-in that uses the standard library only: it finds the implementation's module on the path the
proof gives it, as the real child's import would, and answers as the script says. So everything but
the child runs in-process (mutation testing sees it, and no child imports ppaux), in about a second a test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ppaux_strategies import PPOutput, RaisingPPOutput, RecordingObserver

import ppaux.regressions as regressions
import ppaux.regressions.doubles as doubles
import ppaux.regressions.prove as proof
from ppaux.regressions import MARKER, write_regressions
from ppaux.report import TestOutcome
from ppaux.testing.scenario import Call, describe
from tests.scripted_proof import GREEN, PREFIX, RED, ScriptedProof

# Each test starts the scripted child a few times (a fraction of a second each): with the other tests that do.
pytestmark = pytest.mark.subprocess


@pytest.fixture
def scripted(tmp_path, monkeypatch) -> ScriptedProof:
    scripted = ScriptedProof(tmp_path, monkeypatch)
    scripted.set()
    return scripted


def implementation(tmp: Path, module: str) -> Path:
    """A user's implementation module ``module`` under ``tmp/impl`` (a package per dotted part)."""
    parts = module.split(".")
    root = tmp / "impl"
    root.joinpath(*parts[:-1]).mkdir(parents=True, exist_ok=True)
    for i in range(1, len(parts)):
        root.joinpath(*parts[:i], "__init__.py").touch()
    root.joinpath(*parts[:-1], parts[-1] + ".py").write_text("# the implementation under test\n")
    return root


def proven(red: dict, green: dict) -> proof.Proof:
    """A file's proof, each side as the driver's JSON line gives it."""
    return proof.Proof(proof.FileRun.from_json(red), proof.FileRun.from_json(green))


def failing(nodeid: str, clause: str, calls: list[Call] | None, **row) -> dict:
    scenario = {"scenario": describe(calls, PREFIX)} if calls else {}
    return {"nodeid": nodeid, "clause": clause, "outcome": "failed", **scenario, **row}


def write_report(report: dict, *args) -> dict:
    """write_regressions of a report's failed clauses, given and answered as the JSON ppaux check writes:
    the summary, and each failed clause's test gaining its ``regression`` (its file, or why there is none)."""
    broken = [c for c in report["clauses"] if c["verdict"] == "fail"]
    failed = {c["clause"]: [TestOutcome.from_json(t) for t in c["tests"]] for c in broken}
    summary, regression_of = write_regressions(failed, *args)
    for clause in broken:
        for test in clause["tests"]:
            if test["nodeid"] in regression_of:
                test["regression"] = {k: v for k, v in vars(regression_of[test["nodeid"]]).items() if v is not None}
    return summary.to_json()


def add_findings() -> list[dict]:
    """add.1's failing tests: three of one name in different files, and one the reference fails."""
    ids, old = torch.zeros(2), torch.ones(())
    with_aux = {"next_token_ids": ids, PREFIX + "old": old}
    plain, plain_2 = {"next_token_ids": ids}, {"next_token_ids": ids}
    return [
        failing(
            "tests/t.py::test_add_none_is_a_noop[x]", "add.1", [Call("add", with_aux, None, list(with_aux.items()))]
        ),
        {"nodeid": "tests/t.py::test_add_passes", "clause": "add.1", "outcome": "passed"},
        failing(
            "tests/u.py::test_add_none_is_a_noop[X]", "add.1", [Call("add", plain, RaisingPPOutput(), [*plain.items()])]
        ),
        failing(
            "tests/v.py::test_add_none_is_a_noop[x ]",
            "add.1",
            [Call("add", plain_2, PPOutput({"scores": old, "": None}), list(plain_2.items()))],
        ),
        failing("tests/t.py::test_add_refused_on_green", "add.1", [Call("add", {}, None, [])]),
    ]


def pop_findings() -> list[dict]:
    """pop.3's failing tests: a crash, a hang, and two pops in a row on one dict."""
    crashed = {"next_token_ids": torch.zeros(())}
    add = Call("add", crashed, PPOutput({"scores": torch.zeros(())}), list(crashed.items()))
    crashed[PREFIX + "scores"] = add.arg.payload["scores"]
    add.after = list(crashed.items())
    hung = {PREFIX + "x": torch.zeros(1)}
    popped = {"k": 1, PREFIX + "y": torch.ones(2)}
    pops = [
        Call("pop", popped, RecordingObserver(), list(popped.items()), [("k", 1)]),
        Call("pop", popped, None, [("k", 1)]),
    ]
    return [
        failing(
            "tests/t.py::test_pop_without_an_observer_is_p1",
            "pop.3",
            [add, Call("pop", crashed, None, list(crashed.items()))],
            finding="crash",
        ),
        failing(
            "tests/t.py::test_pop_hangs_on_a_raising_observer",
            "pop.3",
            [Call("pop", hung, RecordingObserver("raise"), list(hung.items()))],
            finding="hang",
        ),
        failing("tests/t.py::TestPop::test_pop_hands_over_the_aux_items", "pop.3", pops),
    ]


ADD_CODE = {
    "test_add_none_is_a_noop_x": '''\
def test_add_none_is_a_noop_x(self):
    """add.1: A `None` output is a no-op: add returns and the dict is untouched."""
    next_token_ids = torch.zeros((2,))
    old = torch.tensor(1.0)
    tensors = {'next_token_ids': next_token_ids, _OUTPUT_PREFIX + 'old': old}

    add_auxiliary_output_to_pp_tensors(tensors, None)
    self.assertEntries(tensors, [
        ('next_token_ids', next_token_ids),
        (_OUTPUT_PREFIX + 'old', old),
    ])''',
    "test_add_none_is_a_noop_x_2": '''\
def test_add_none_is_a_noop_x_2(self):
    """add.1: A `None` output is a no-op: add returns and the dict is untouched."""
    next_token_ids = torch.zeros((2,))
    tensors = {'next_token_ids': next_token_ids}
    output = RaisingPPOutput()

    with self.assertRaises(Exception) as raised:
        add_auxiliary_output_to_pp_tensors(tensors, output)
    self.assertIs(raised.exception, output.error)
    self.assertEqual(output.calls, 1)
    self.assertEntries(tensors, [('next_token_ids', next_token_ids)])''',
    "test_add_none_is_a_noop_x_3": '''\
def test_add_none_is_a_noop_x_3(self):
    """add.1: A `None` output is a no-op: add returns and the dict is untouched."""
    next_token_ids = torch.zeros((2,))
    tensors = {'next_token_ids': next_token_ids}
    scores = torch.tensor(1.0)
    output = PPOutput({'scores': scores, '': None})

    with self.assertRaises(Exception) as raised:
        add_auxiliary_output_to_pp_tensors(tensors, output)
    self.assertIsInstance(raised.exception, RuntimeError)
    self.assertEqual(
        str(raised.exception),
        'auxiliary PP tensor names must be non-empty strings',
    )
    self.assertEqual(output.calls, 1)
    self.assertEntries(tensors, [('next_token_ids', next_token_ids)])''',
}
POP_DOCSTRING = '''\
    """pop.3: With aux items, in this order: no observer is P1, an observer without
    `from_pp_tensors` is P2, an aux value that is not a tensor is P3.
    """'''
POP_CODE = {
    "test_pop_without_an_observer_is_p1": f"""\
def test_pop_without_an_observer_is_p1(self):
{POP_DOCSTRING}
    exitcode = run_in_child(pop_without_an_observer_is_p1_calls, seconds=2.5)
    self.assertIsNotNone(exitcode, "the calls did not return within 2.5 s")
    self.assertEqual(exitcode, 0, "the process making the calls died")  # here: it ended its process""",
    "test_pop_hangs_on_a_raising_observer": f"""\
def test_pop_hangs_on_a_raising_observer(self):
{POP_DOCSTRING}
    exitcode = run_in_child(pop_hangs_on_a_raising_observer_calls, seconds=2.5)
    self.assertIsNotNone(exitcode, "the calls did not return within 2.5 s")
    self.assertEqual(exitcode, 0, "the process making the calls died")  # here: it did not return""",
    "test_pop_hands_over_the_aux_items": f"""\
def test_pop_hands_over_the_aux_items(self):
{POP_DOCSTRING}
    y = torch.tensor([1.0, 1.0])
    tensors = {{'k': 1, _OUTPUT_PREFIX + 'y': y}}
    observer = RecordingObserver('rebuild')

    result = pop_auxiliary_output_from_pp_tensors(tensors, observer)
    self.assertIs(result, observer.returned[-1])
    self.assertEqual(len(observer.handed), 1)
    self.assertEntries(observer.handed[-1], [('y', y)])
    self.assertEntries(tensors, [('k', 1)])

    result = pop_auxiliary_output_from_pp_tensors(tensors, None)
    self.assertIsNone(result)
    self.assertEntries(tensors, [('k', 1)])""",
}
ADD_HEAD = '''\
# Regression tests written by ppaux for add.1.
# A later run of ppaux with --regressions on this directory replaces this file.
"""Regression tests for mypkg.impls.mine: add.1: A `None` output is a no-op: add returns and the
dict is untouched. Each test is a minimal counterexample that ppaux's conformance suite found,
proven to fail against mypkg.impls.mine and to pass against ppaux's reference transport. Needs
only torch: python -m unittest test_add_1.py
"""

import unittest

import torch

from mypkg.impls.mine import (
    _OUTPUT_PREFIX,
    add_auxiliary_output_to_pp_tensors,
)'''
POP_HEAD = '''\
# Regression tests written by ppaux for pop.3.
# A later run of ppaux with --regressions on this directory replaces this file.
"""Regression tests for mypkg.impls.mine: pop.3: With aux items, in this order: no observer is P1,
an observer without `from_pp_tensors` is P2, an aux value that is not a tensor is P3. Each test
is a minimal counterexample that ppaux's conformance suite found, proven to fail against
mypkg.impls.mine and to pass against ppaux's reference transport. Needs only torch: python -m
unittest test_pop_3.py
"""

import contextlib
import multiprocessing
import sys
import unittest

import torch

from mypkg.impls.mine import (
    _OUTPUT_PREFIX,
    add_auxiliary_output_to_pp_tensors,
    pop_auxiliary_output_from_pp_tensors,
)'''
POP_CALLS = '''\
def pop_without_an_observer_is_p1_calls():
    """The calls of test_pop_without_an_observer_is_p1's counterexample."""
    next_token_ids = torch.tensor(0.0)
    tensors = {'next_token_ids': next_token_ids}
    scores = torch.tensor(0.0)
    output = PPOutput({'scores': scores})
    add_auxiliary_output_to_pp_tensors(tensors, output)
    with contextlib.suppress(RuntimeError):  # the contract's answer here
        pop_auxiliary_output_from_pp_tensors(tensors, None)


def pop_hangs_on_a_raising_observer_calls():
    """The calls of test_pop_hangs_on_a_raising_observer's counterexample."""
    x = torch.zeros((1,))
    tensors = {_OUTPUT_PREFIX + 'x': x}
    observer = RecordingObserver('raise')
    with contextlib.suppress(ObserverFailure):  # the contract's answer here
        pop_auxiliary_output_from_pp_tensors(tensors, observer)'''


def regression_file(head: str, classes: list[str], calls: str | None, clause_class: str, code: dict) -> str:
    """A regression file as its reader sees it: the head, the doubles it uses, the dict assertion, a
    hang's or crash's runner and calls, then one test method per finding."""
    methods = "\n\n".join("\n".join(f"    {line}" if line else "" for line in c.splitlines()) for c in code.values())
    blocks = [head, doubles.source(classes).strip(), doubles.TEST_CASE.strip()]
    if calls:
        blocks += [doubles.RUN_IN_CHILD.strip(), calls]
    blocks.append(f"class {clause_class}(PPDictTestCase):\n{methods}")
    return "\n\n\n".join(blocks) + '\n\n\nif __name__ == "__main__":\n    unittest.main()\n'


def test_each_broken_clause_becomes_one_proven_file_and_each_failing_test_says_where_or_why_not(tmp_path, scripted):
    """What ppaux check --regressions leaves: the proven files, exactly; the rows' code or reason; the summary."""
    folder = tmp_path / "regressions"
    folder.mkdir()
    (folder / "test_pop_9.py").write_text(MARKER + " for pop.9.\n")
    (folder / "test_mine.py").write_text("# a user's own test\n")
    (folder / "notes.py").write_text(MARKER + "\n")
    adds, pops = add_findings(), pop_findings()
    stateless = failing("tests/t.py::test_pop_of_nothing", "stateful", [Call("pop", {}, None, [])])
    unrecorded = {"nodeid": "tests/t.py::test_rt", "clause": "round-trip", "outcome": "failed"}
    unwritable = {
        **unrecorded,
        "nodeid": "tests/t.py::test_rt2",
        "scenario_error": "a Relayed PP dict cannot be written",
    }
    report = {
        "clauses": [
            {"clause": "add.1", "verdict": "fail", "tests": adds},
            {"clause": "pop.3", "verdict": "fail", "tests": pops},
            {"clause": "stateful", "verdict": "fail", "tests": [stateless]},
            {"clause": "round-trip", "verdict": "fail", "tests": [unrecorded, unwritable]},
            {"clause": "pop.1", "verdict": "pass", "tests": [{**unrecorded, "clause": "pop.1"}]},
        ]
    }
    in_implementation = {"outcome": "error", "in_implementation": True, "text": "Traceback\nKeyError: 'k'"}
    scripted.set(
        outcomes={
            "red": {"test_pop_of_nothing": GREEN, "test_pop_hands_over_the_aux_items": in_implementation},
            "green": {"test_add_refused_on_green": RED},
        },
    )
    impl = implementation(tmp_path, "mypkg.impls.mine")
    done = write_report(report, "mypkg.impls.mine", folder, 2.5, [str(impl)])

    add_file, pop_file = folder / "test_add_1.py", folder / "test_pop_3.py"
    passes = "it passes against the implementation: the failure depends on more than the calls the test replays"
    assert done == {
        "directory": str(folder),
        "files": [
            {"clause": "pop.3", "path": str(pop_file), "tests": list(POP_CODE)},
            {"clause": "add.1", "path": str(add_file), "tests": list(ADD_CODE)},
        ],
        "refused": [
            {"clause": "round-trip", "nodeid": "tests/t.py::test_rt", "why": "the test's calls were not recorded"},
            {"clause": "round-trip", "nodeid": "tests/t.py::test_rt2", "why": "a Relayed PP dict cannot be written"},
            {
                "clause": "add.1",
                "nodeid": "tests/t.py::test_add_refused_on_green",
                "why": "it does not pass against ppaux's reference (fail: AssertionError: 1 != 2)",
            },
            {"clause": "stateful", "nodeid": "tests/t.py::test_pop_of_nothing", "why": passes},
        ],
        "removed": [str(folder / "test_pop_9.py")],
    }
    assert sorted(p.name for p in folder.iterdir()) == ["notes.py", "test_add_1.py", "test_mine.py", "test_pop_3.py"]
    assert add_file.read_text() == regression_file(
        ADD_HEAD, ["PPOutput", "RaisingPPOutput"], None, "TestAdd1", ADD_CODE
    )
    assert pop_file.read_text() == regression_file(
        POP_HEAD, ["PPOutput", "RecordingObserver"], POP_CALLS, "TestPop3", POP_CODE
    )
    rows = [adds[0], *adds[2:], *pops, stateless, unrecorded, unwritable, report["clauses"][4]["tests"][0]]
    assert [row.get("regression") for row in rows] == [
        *({"path": str(add_file), "test": f"test_add_1.TestAdd1.{m}", "code": c} for m, c in ADD_CODE.items()),
        {"why": "it does not pass against ppaux's reference (fail: AssertionError: 1 != 2)"},
        *({"path": str(pop_file), "test": f"test_pop_3.TestPop3.{m}", "code": c} for m, c in POP_CODE.items()),
        {"why": passes},
        {"why": "the test's calls were not recorded"},
        {"why": "a Relayed PP dict cannot be written"},
        None,
    ]
    assert "regression" not in adds[1]
    # The three files are proven together, then add.1's again without the finding the reference failed.
    rounds = [["test_add_1.py", "test_pop_3.py", "test_stateful.py"], ["test_add_1.py"]]
    assert scripted.runs("red") == scripted.runs("green") == rounds


def test_a_file_that_takes_the_proof_run_down_is_proven_on_its_own_and_spares_the_others(tmp_path, scripted):
    # test_b.py crashes the run it shares with test_a.py (against the implementation only): alone, each runs.
    scripted.set(crash={"red": ["test_b.py"]})
    source = "def test_x(self):\n    pass\n"  # the scripted child reads only the test methods' names
    impl = implementation(tmp_path, "mine")
    verdicts = proof.prove_files({"test_a.py": source, "test_b.py": source}, "mine", [str(impl)], 30.0)
    assert verdicts == {
        name: proven({"tests": {"test_x": RED}}, {"tests": {"test_x": GREEN}}) for name in ("test_a.py", "test_b.py")
    }
    assert scripted.runs("red") == [["test_a.py", "test_b.py"], ["test_a.py"], ["test_b.py"]]
    assert scripted.runs("green") == [["test_a.py", "test_b.py"]]


def test_files_that_outlast_the_limit_together_are_each_given_the_limit_again_alone(tmp_path, scripted):
    scripted.set(sleep={"red": ["test_a.py", "test_b.py"], "green": ["test_a.py", "test_b.py"]})
    impl = implementation(tmp_path, "mine")
    verdicts = proof.prove_files({"test_a.py": "", "test_b.py": ""}, "mine", [str(impl)], 0.2)
    late = {"broken": "the test run did not finish within 0.2 s"}
    # (Each alone as well: given no limit there, each would have answered after its sleep.)
    assert verdicts == {name: proven(late, late) for name in ("test_a.py", "test_b.py")}


@pytest.mark.parametrize(
    "script, seconds, why",
    [
        ({"die": ["test_a.py"]}, 30.0, "the test run ended with exit status 3: died running test_a.py"),
        ({"mute": ["test_a.py"]}, 30.0, "the test run ended with exit status 0"),
        ({"sleep": {"red": ["test_a.py"]}}, 0.2, "the test run did not finish within 0.2 s"),
    ],
)
def test_a_proof_run_that_gives_no_verdict_says_why(tmp_path, scripted, script, seconds, why):
    scripted.set(**script)
    (tmp_path / "test_a.py").write_text("")
    impl = implementation(tmp_path, "mine")
    assert proof.run([tmp_path / "test_a.py"], "mine", [str(impl)], seconds) == {"test_a.py": proof.FileRun(broken=why)}


def test_the_reference_side_finds_ppaux_where_this_run_found_it(tmp_path, scripted):
    """The reference binding imports ppaux from the checkout this run imported it from (an uninstalled one
    included); a module ppaux cannot find on either side is the file's import error."""
    impl = implementation(tmp_path, "mine")
    assert proof.prove_files({"test_a.py": "def test_x(self):\n    pass\n"}, "elsewhere", [str(impl)], 30.0) == {
        "test_a.py": proven(
            {"import_error": "ModuleNotFoundError: No module named 'elsewhere'"}, {"tests": {"test_x": GREEN}}
        )
    }
    assert scripted.runs("none") == [["test_a.py"]] and scripted.runs("green") == [["test_a.py"]]


def test_a_proof_that_outlasts_its_limit_refuses_its_findings_and_the_limit_grows_with_each_hang(
    tmp_path, scripted, monkeypatch
):
    # The proof's own allowance is shrunk so that the run is quick; each hang or crash adds the calls' timeout.
    monkeypatch.setattr(regressions, "PROOF_SECONDS", 0.05)
    scripted.set(sleep={"red": ["test_pop_2.py"], "green": ["test_pop_2.py"]})
    hung = {PREFIX + "x": torch.zeros(1)}
    rows = [
        failing(f"t.py::test_{name}", "pop.2", [Call("pop", hung, None, list(hung.items()))], finding=kind)
        for name, kind in (("hang", "hang"), ("crash", "crash"), ("plain", None))
    ]
    impl = implementation(tmp_path, "mine")
    report = {"clauses": [{"clause": "pop.2", "verdict": "fail", "tests": rows}]}
    done = write_report(report, str(impl / "mine.py"), tmp_path, 0.1, [str(impl)])
    why = "against the implementation, the test run did not finish within 0.25 s"
    assert done["files"] == [] and done["refused"] == [
        {"clause": "pop.2", "nodeid": f"t.py::test_{name}", "why": why} for name in ("hang", "crash", "plain")
    ]
    assert [row["regression"] for row in rows] == [{"why": why}] * 3


def test_a_lone_file_that_takes_its_run_down_is_not_run_again(tmp_path, scripted):
    scripted.set(die=["test_a.py"])
    impl = implementation(tmp_path, "mine")
    broken = {"broken": "the test run ended with exit status 3: died running test_a.py"}
    assert proof.prove_files({"test_a.py": ""}, "mine", [str(impl)], 30.0) == {"test_a.py": proven(broken, broken)}
    assert scripted.runs("red") == scripted.runs("green") == [["test_a.py"]]
