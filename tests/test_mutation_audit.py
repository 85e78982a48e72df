"""Equivalence judgements read against the code as it is, without mutmut (ppaux.mutation.equivalents.audit,
``python -m reports judgements``): a function's stamp read from its module is the one mutmut's generation
gives it, and a judgement whose function or line changed is named."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import reports.mutation as mutation
from ppaux.isolation import safety_limit
from ppaux.mutation.equivalents import NO_MUTANT, REVIEW, Judgement, audit, read_judgements, write_judgements
from ppaux.mutation.identity import (
    MutantIdentity,
    defined_functions,
    function_hash,
    identify_all,
    identities,
)
from ppaux.mutation.own import Checkout, source_of
from tests.test_mutation_identity import POP

# A method whose docstring runs over lines: dedenting its text would change the string, not the code.
RELAY = '''import functools


class Relay:
    @functools.cache
    def send(self, n):
        """Send n.

        Indented as the class has it.
        """
        return n + 1

    class Inner:
        def size(self):
            return (1,
                    2)
'''


def test_a_functions_stamp_and_lines_are_read_from_its_module_decorators_and_strings_as_they_are():
    module = "import torch\n\n\n" + POP + "\n\n" + RELAY.replace("import functools\n", "")
    defined = defined_functions(module)
    stamp, lines = defined["pop"]
    # A top-level function: its stamp is the one identities() gives it from mutmut's original.
    assert stamp == identities("m", "pop", POP, [("m.x_pop__mutmut_1", POP)])["m.x_pop__mutmut_1"].function_hash
    assert lines == [line.strip() for line in POP.splitlines()]
    # A method as mutmut hands it over: the def at the margin, its body and its string's lines as written.
    send = '''@functools.cache
def send(self, n):
    """Send n.

        Indented as the class has it.
        """
    return n + 1
'''
    assert defined["Relay.send"] == (function_hash(send), [line.strip() for line in send.splitlines()])
    assert defined["Relay.Inner.size"][1] == ["def size(self):", "return (1,", "2)"]
    for missing in ("push", "Relay.push", "Other.send", "Relay.Inner.send", "pop.inner"):
        assert missing not in defined
    assert defined_functions("def (:\n") == {}
    # Of two definitions of one name, the first, as a lookup by name finds it.
    twice = "def f():\n    return 1\n\n\ndef f():\n    return 2\n\n\nclass C:\n    def g(self):\n        pass\n\n\n" + (
        "class C:\n    def g(self):\n        return 3\n\n    def h(self):\n        pass\n"
    )
    assert defined_functions(twice) == {
        "f": (function_hash("def f():\n    return 1\n"), ["def f():", "return 1"]),
        "C.g": (function_hash("def g(self):\n    pass\n"), ["def g(self):", "pass"]),
    }


def _stamped(before: str, after: str, source: str = POP, occurrence: int = 0) -> Judgement:
    identity = MutantIdentity("m", "pop", before, after, occurrence, function_hash(source))
    return Judgement(identity, "no caller can tell", "eq.json")


def test_a_judgement_on_its_unchanged_function_holds_a_changed_one_is_to_review_a_gone_one_is_named():
    default = _stamped("value = tensors.pop(key, None)", "value = tensors.pop(key, )")
    negated = _stamped("if value is None:", "if value is not None:")
    modules = {"m": POP}
    found = audit([default, negated], modules.get)
    assert (found.gone, found.changed, found.lines()) == ([], [], [])

    # A line added: the function changed, both lines still there.
    changed = POP.replace("    return value\n", "    del key\n    return value\n")
    found = audit([default, negated], {"m": changed}.get)
    assert (found.gone, found.changed) == ([], [(default, function_hash(changed)), (negated, function_hash(changed))])
    assert found.lines() == [
        f"{REVIEW}: eq.json: {default.identity.describe()} (function_hash now {function_hash(changed)})",
        f"{REVIEW}: eq.json: {negated.identity.describe()} (function_hash now {function_hash(changed)})",
    ]
    # The judged line rewritten, the function or its module gone: no mutant to match.
    rewritten = POP.replace("if value is None:", "if not value:")
    for source in ({"m": rewritten}, {"m": "def push():\n    pass\n"}, {}):
        found = audit([default, negated], source.get)
        assert found.gone == ([negated] if source == {"m": rewritten} else [default, negated])
    assert audit([negated], {"m": rewritten}.get).lines() == [f"{NO_MUTANT}: eq.json: {negated.identity.describe()}"]


def test_a_change_over_several_lines_is_found_as_a_run_of_lines():
    source = "def f(x):\n    return g(x,\n             1)\n"
    judged = Judgement(MutantIdentity("m", "f", "return g(x, / 1)", "return g(x, / 2)", 0, "0" * 64), "why")
    assert audit([judged], {"m": source}.get).changed == [(judged, function_hash(source))]
    apart = "def f(x):\n    return g(x,\n             0)\n    1)\n"
    assert audit([judged], {"m": apart}.get).gone == [judged]


def test_restamping_gives_the_changed_judgements_their_functions_hash_now_and_leaves_the_others():
    default = _stamped("value = tensors.pop(key, None)", "value = tensors.pop(key, )")
    other = Judgement(MutantIdentity("n", "f", "a", "b", 0, "1" * 64), "why", "eq.json")
    changed = POP.replace("    return value\n", "    del key\n    return value\n")
    found = audit([other, default], {"m": changed, "n": "def f():\n    a\n"}.get)
    assert found.gone == [] and [j for j, _ in found.changed] == [other, default]
    assert found.restamped([other, default]) == [
        Judgement(
            dataclasses.replace(other.identity, function_hash=function_hash("def f():\n    a\n")), "why", "eq.json"
        ),
        Judgement(
            dataclasses.replace(default.identity, function_hash=function_hash(changed)), default.reason, "eq.json"
        ),
    ]


def _checkout(root: Path, judged: list[tuple[str, str]]) -> Checkout:
    """A checkout with pkg/ops.py (POP) and pkg/sub/__init__.py; eq.json judges ``(before, after)`` pairs of pop."""
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "ops.py").write_text(POP)
    (root / "pkg" / "sub" / "__init__.py").write_text("def f():\n    a\n")
    entries = [MutantIdentity("pkg.ops", "pop", b, a, 0, function_hash(POP)) for b, a in judged]
    entries.append(MutantIdentity("pkg.sub", "f", "a", "b", 0, function_hash("def f():\n    a\n")))
    write_judgements(root / "eq.json", [Judgement(i, f"why {n}") for n, i in enumerate(entries)], sort=False)
    return Checkout(root=root, copied=("pkg",), pytest_args=(), do_not_mutate=(), always_gated=())


def test_reports_judgements_passes_names_each_one_to_look_at_and_restamps_in_the_files_order(tmp_path, capsys):
    pairs = [
        ("value = tensors.pop(key, None)", "value = tensors.pop(key, )"),
        ("if value is None:", "if value is not None:"),
    ]
    checkout = _checkout(tmp_path, pairs)
    assert mutation.judgements(["eq.json"], checkout=checkout) == 0
    assert capsys.readouterr().out == "equivalence judgements: 3 in 1 file(s), each on the function judged\n"

    ops = tmp_path / "pkg" / "ops.py"
    ops.write_text(POP.replace("    return value\n", "    del key\n    return value\n"))
    now = function_hash(ops.read_text())
    judged = read_judgements(tmp_path / "eq.json")
    to_review = [f"{REVIEW}: eq.json: {j.identity.describe()} (function_hash now {now})" for j in judged[:2]]
    footer = (
        "2 of 3 equivalence judgements to look at: a gone one is re-keyed to its mutant or removed; "
        "a changed one, still equivalent, is restamped (--restamp)"
    )
    assert mutation.judgements(["eq.json"], checkout=checkout) == 1
    assert capsys.readouterr().out.splitlines() == [*to_review, footer]

    text = (tmp_path / "eq.json").read_text()
    assert mutation.judgements(["eq.json"], restamp=True, checkout=checkout) == 0
    assert capsys.readouterr().out.splitlines() == [
        *(f"restamped ({now}): eq.json: {j.identity.describe()}: {j.reason}" for j in judged[:2]),
        "equivalence judgements: 3 in 1 file(s), each on the function judged",
    ]
    # Only the stamps changed, each entry where it was.
    assert (tmp_path / "eq.json").read_text() == text.replace(function_hash(POP), now)
    assert mutation.judgements(["eq.json"], checkout=checkout) == 0
    capsys.readouterr()

    # A judged line gone: restamping does not make it hold.
    ops.write_text(ops.read_text().replace("if value is None:", "if not value:"))
    gone = read_judgements(tmp_path / "eq.json")[1]
    assert mutation.judgements(["eq.json"], restamp=True, checkout=checkout) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [
        f"{NO_MUTANT}: eq.json: {gone.identity.describe()}",
        footer.replace("2 of 3", "1 of 3"),
    ]
    # A judged module gone (pkg/sub/__init__.py): its judgement too.
    (tmp_path / "pkg" / "sub" / "__init__.py").unlink()
    assert mutation.judgements(["eq.json"], checkout=checkout) == 1
    sub = read_judgements(tmp_path / "eq.json")[2]
    assert capsys.readouterr().out.splitlines()[1] == f"{NO_MUTANT}: eq.json: {sub.identity.describe()}"


def test_reports_judgements_reads_every_file_under_docs_equivalents_and_refuses_one_it_cannot_read(tmp_path, capsys):
    checkout = _checkout(tmp_path, [])
    (tmp_path / "docs" / "equivalents").mkdir(parents=True)
    (tmp_path / "eq.json").rename(tmp_path / "docs" / "equivalents" / "a.json")
    write_judgements(tmp_path / "docs" / "equivalents" / "b.json", [])
    assert mutation.judgements([], checkout=checkout) == 0
    assert capsys.readouterr().out == "equivalence judgements: 1 in 2 file(s), each on the function judged\n"
    bad = tmp_path / "docs" / "equivalents" / "b.json"
    bad.write_text("[]")
    assert mutation.judgements([], checkout=checkout) == 2
    assert capsys.readouterr().err == (
        f"reports: error: equivalents file {str(bad)!r} must be a JSON object {{'format': 2, 'equivalents': [...]}}\n"
    )


# mutmut generates the mutants in a child process (seconds): with the slow end-to-end runs.
@pytest.mark.slow
def test_the_stamp_read_from_the_code_is_the_one_mutmuts_generation_gives_each_function(tmp_path):
    from tests.fake_mutmut import small_checkout

    checkout = small_checkout(tmp_path)
    (tmp_path / "arith" / "relay.py").write_text(RELAY.replace("@functools.cache", "@classmethod"))
    scope = dataclasses.replace(mutation.SCOPES["package"], mutate=("arith/*",), tests=("tests/",))
    (tmp_path / "project").mkdir()
    project = checkout.project(scope, tmp_path / "project")
    generated = identify_all(project.sources(project.generate(max_children=1), source_of))
    functions = {(i.module, i.function): i.function_hash for i in generated.values()}
    assert set(functions) >= {("arith.ops", "double"), ("arith.ops", "is_small"), ("arith.relay", "Relay.send")}
    judged = [Judgement(i, "why") for i in generated.values()]
    for (module, function), stamp in functions.items():
        assert defined_functions(checkout.module_source(module) or "")[function][0] == stamp
    found = audit(judged, checkout.module_source)
    assert (found.gone, found.changed) == ([], [])


def _documented_script() -> str:
    """docs/mutation.md's script that checks a user's equivalents file, as the page shows it."""
    page = (Path(mutation.__file__).resolve().parents[1] / "docs" / "mutation.md").read_text(encoding="utf-8")
    block = page.split("   # check_judgements.py FILE", 1)[1].split("   ```", 1)[0]
    return "# check_judgements.py FILE" + textwrap.dedent("   " + block).removeprefix("# check_judgements.py FILE")


# Its script runs in child processes, each importing ppaux (seconds).
@pytest.mark.subprocess
def test_the_documented_check_of_a_users_equivalents_file_passes_then_names_a_changed_function(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "ops.py").write_text(POP)
    judged = Judgement(
        MutantIdentity("pkg.ops", "pop", "if value is None:", "if value is not None:", 0, function_hash(POP)), "why"
    )
    write_judgements(tmp_path / "eq.json", [judged])
    (tmp_path / "check_judgements.py").write_text(_documented_script())

    def check() -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "check_judgements.py", "eq.json"]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=safety_limit(120))

    done = check()
    assert (done.returncode, done.stdout) == (0, "")
    changed = POP.replace("    return value\n", "    del key\n    return value\n")
    (tmp_path / "src" / "pkg" / "ops.py").write_text(changed)
    done = check()
    line = f"{REVIEW}: eq.json: {judged.identity.describe()} (function_hash now {function_hash(changed)})"
    assert (done.returncode, done.stdout) == (1, line + "\n")
