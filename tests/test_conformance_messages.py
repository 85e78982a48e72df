"""Every finding of the shipped suite says in words what was expected and what happened: each
assertion carries an "expected ..., got ..." message and each test a docstring that starts with
its clause id (the report prints it as the finding's description)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from ppaux_strategies import PPOutput

import ppaux.conformance
from ppaux.conformance.support import raised, raises_documented, verdict
from ppaux.conformance.test_stateful import ContractMachine
from ppaux.core.errors import CATALOG, AuxiliaryPPError
from ppaux.testing.impl import reference

SUITE = sorted(Path(ppaux.conformance.__file__).parent.glob("*.py"))


def _message_head(node: ast.expr) -> str:
    """The literal text an assertion message starts with ('' when it does not start with one)."""
    if isinstance(node, ast.JoinedStr):
        node = node.values[0]
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _clause(func: ast.FunctionDef) -> str:
    for deco in func.decorator_list:
        if isinstance(deco, ast.Call) and ast.unparse(deco.func) == "pytest.mark.clause":
            return deco.args[0].value
    return ""


@pytest.mark.parametrize("path", SUITE, ids=lambda p: p.name)
def test_every_assertion_of_the_suite_says_what_was_expected(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bare = [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert) and not _message_head(node.msg).startswith("expected ")
    ]
    assert bare == []


@pytest.mark.parametrize("path", [p for p in SUITE if p.name.startswith("test_")], ids=lambda p: p.name)
def test_every_test_of_the_suite_starts_its_docstring_with_its_clause(path):
    tests = [
        node
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    ]
    undescribed = [
        t.name for t in tests if not (_clause(t) and (ast.get_docstring(t) or "").startswith(f"{_clause(t)}: "))
    ]
    assert tests and undescribed == []


def test_a_block_that_raises_no_documented_error_says_which_was_expected():
    with pytest.raises(AssertionError) as info:
        with raises_documented(reference(), "A5", "scores"):
            pass
    assert str(info.value) == f"expected A5 {CATALOG['A5'].message('scores')!r}, got no exception"


def test_a_call_that_returns_instead_of_raising_says_what_it_returned():
    with pytest.raises(AssertionError) as info:
        raised(RuntimeError, "add to raise A1", lambda: 3)
    assert str(info.value) == "expected add to raise A1, got a return value: 3"


def _overwriting_add(tensors, output):
    """ppaux's add, except that it overwrites an aux key already in the dict instead of raising A5."""
    try:
        reference().add(tensors, output)
    except AuxiliaryPPError as exc:
        if exc.code != "A5":
            raise
        name = CATALOG["A5"].name_in(str(exc))
        tensors[reference().prefix + name] = output.payload[name]


def test_the_stateful_finding_names_the_error_add_should_have_raised():
    impl = reference()
    broken = type(impl)(name="overwrites", prefix=impl.prefix, add=_overwriting_add, pop=impl.pop)
    run = settings(derandomize=True, database=None, max_examples=200, stateful_step_count=4)
    with pytest.raises(AssertionError) as info:
        run_state_machine_as_test(lambda: ContractMachine(broken), settings=run)
    output, a5 = PPOutput({"scores": torch.zeros(())}), verdict(("A5", "scores"))
    # pytest's assertion rewriting adds the failing expression on the lines after the message.
    assert str(info.value).splitlines()[0] == f"expected add({output!r}) to raise {a5}, got no exception"
