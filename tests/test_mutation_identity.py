"""Mutants by identity (ppaux.mutation.identity), the equivalents keyed by it
(ppaux.mutation.equivalents) and the recorded results an incremental run reuses
(ppaux.mutation.history): real source text, and mutmut's own generation for the test that
inserting a function leaves every judgement where it was."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

import reports.mutation as mutation
from ppaux.mutation import history
from ppaux.mutation.equivalents import (
    FORMAT,
    MANY_MUTANTS,
    NO_MUTANT,
    Judgement,
    read_judgements,
    resolve,
    write_judgements,
)
from ppaux.mutation.identity import (
    MutantIdentity,
    function_hash,
    identify_all,
    identities,
    line_change,
    split_mutant_name,
)
from ppaux.mutation.mutant_runs import FIRST
from ppaux.mutation.own import source_of
from ppaux.mutation.score import EquivalentsError

POP = """def pop(tensors, key):
    # The prefix is checked by the caller.
    value = tensors.pop(key, None)
    if value is None:
        raise KeyError(key)
    return value
"""
# mutmut's mutants of POP as its operators write them (the function renamed back, as its diff reads it).
POP_NONE_DEFAULT = POP.replace("tensors.pop(key, None)", "tensors.pop(key, )")
POP_IS_NOT = POP.replace("if value is None", "if value is not None")


def test_a_mutant_is_its_module_function_changed_line_and_the_functions_ast_hash():
    got = identities("ppaux.core.transport", "pop", POP, [("m.x_pop__mutmut_1", POP_NONE_DEFAULT)])
    ast_dump = __import__("ast").dump(__import__("ast").parse(POP).body[0], annotate_fields=False)
    assert got == {
        "m.x_pop__mutmut_1": MutantIdentity(
            module="ppaux.core.transport",
            function="pop",
            before="value = tensors.pop(key, None)",
            after="value = tensors.pop(key, )",
            occurrence=0,
            function_hash=hashlib.sha256(ast_dump.encode()).hexdigest(),
        )
    }


def test_the_ast_hash_ignores_comments_layout_and_indentation_and_sees_every_change_of_code():
    relaid = POP.replace("    # The prefix is checked by the caller.\n", "").replace("(key, None)", "( key,None )")
    indented = "".join("    " + line if line else line for line in POP.splitlines(True))
    assert function_hash(POP) == function_hash(relaid) == function_hash(indented)
    assert function_hash(POP) != function_hash(POP_IS_NOT)
    assert function_hash(POP) != function_hash(POP.replace("def pop", "def popped"))


def test_a_change_over_several_lines_is_joined_and_an_unchanged_function_has_no_change():
    two = "def f(x):\n    a = x\n    return a\n"
    assert line_change(two, "def f(x):\n    a = None\n    return None\n") == (
        "a = x / return a",
        "a = None / return None",
    )
    assert line_change(two, two) == ("", "")


def test_identical_changes_in_one_function_are_told_apart_by_their_occurrence_in_mutmuts_order():
    twice = "def f(x):\n    y = x + 1\n    z = x + 1\n    return y, z\n"
    first = twice.replace("y = x + 1", "y = x - 1")
    # The same text on both lines: the change reads the same, its place in the function differs.
    same = "def f(x):\n    y = x + 1\n    y = x + 1\n"
    got = identities(
        "m", "f", same, [("a", same.replace("x + 1", "x - 1", 1)), ("b", "def f(x):\n    y = x + 1\n    y = x - 1\n")]
    )
    assert [(i.before, i.after, i.occurrence) for i in got.values()] == [
        ("y = x + 1", "y = x - 1", 0),
        ("y = x + 1", "y = x - 1", 1),
    ]
    assert identities("m", "f", twice, [("a", first)])["a"].occurrence == 0


def test_a_mutant_name_splits_into_its_module_and_qualified_function():
    assert split_mutant_name("ppaux.core.transport.xǁPPAuxTransportǁ__init____mutmut_4") == (
        "ppaux.core.transport",
        "PPAuxTransport.__init__",
    )
    assert split_mutant_name("ppaux.cli.check.x__replay__mutmut_10") == ("ppaux.cli.check", "_replay")
    assert split_mutant_name("p.m.xǁOuter.Innerǁrun__mutmut_1") == ("p.m", "Outer.Inner.run")


def test_identify_all_numbers_each_functions_mutants_in_mutmuts_order_not_in_the_mappings():
    sources = {
        "m.x_f__mutmut_10": ("def f():\n    return 1\n", "def f():\n    return 2\n"),
        "m.x_f__mutmut_2": ("def f():\n    return 1\n", "def f():\n    return 2\n"),
    }
    got = identify_all(sources)
    assert (got["m.x_f__mutmut_2"].occurrence, got["m.x_f__mutmut_10"].occurrence) == (0, 1)


def _judgement(identity: MutantIdentity, reason: str = "no caller can tell") -> Judgement:
    return Judgement(identity, reason, "docs/equivalents/x.json")


def test_a_judgement_holds_exactly_one_mutant_or_fails_named_and_a_changed_function_is_flagged():
    ids = identities("m", "pop", POP, [("m.x_pop__mutmut_1", POP_NONE_DEFAULT), ("m.x_pop__mutmut_2", POP_IS_NOT)])
    on_first, on_second = ids["m.x_pop__mutmut_1"], ids["m.x_pop__mutmut_2"]
    gone = dataclasses.replace(on_first, after="value = tensors.pop(key, 0)")
    earlier = dataclasses.replace(on_second, function_hash="0" * 64)
    twin = {**ids, "m.x_pop__mutmut_3": on_first}
    resolution = resolve([_judgement(on_first, "why 1"), _judgement(gone), _judgement(earlier, "why 2")], ids)
    assert resolution.judged == {"m.x_pop__mutmut_1": "why 1", "m.x_pop__mutmut_2": "why 2"}
    assert resolution.problems == [f"{NO_MUTANT}: docs/equivalents/x.json: {gone.describe()}"]
    assert list(resolution.review) == ["m.x_pop__mutmut_2"]
    many = resolve([_judgement(on_first)], twin)
    assert (many.judged, many.problems) == ({}, [f"{MANY_MUTANTS}: docs/equivalents/x.json: {on_first.describe()}"])


def test_an_equivalents_file_round_trips_and_a_bad_one_is_refused(tmp_path):
    ids = identities("m", "pop", POP, [("a", POP_NONE_DEFAULT), ("b", POP_IS_NOT)])
    path = tmp_path / "eq.json"
    write_judgements(path, [Judgement(ids["b"], "reason b"), Judgement(ids["a"], "reason a")])
    assert json.loads(path.read_text())["format"] == FORMAT
    # In the file by module, function and change: "if value ..." before "value = ...".
    assert read_judgements(path) == [
        Judgement(ids["b"], "reason b", str(path)),
        Judgement(ids["a"], "reason a", str(path)),
    ]
    for bad in ({"p.m.x_f__mutmut_1": "old format, by name"}, {"format": FORMAT, "equivalents": [{"module": "m"}]}):
        path.write_text(json.dumps(bad))
        with pytest.raises(EquivalentsError, match="must be a JSON object"):
            read_judgements(path)
    path.write_text("{")
    with pytest.raises(EquivalentsError, match="Expecting property name"):
        read_judgements(path)
    entry = {**dataclasses.asdict(ids["a"]), "reason": " "}
    path.write_text(json.dumps({"format": FORMAT, "equivalents": [entry]}))
    with pytest.raises(EquivalentsError):
        read_judgements(path)


def test_every_equivalents_file_is_keyed_by_identity_with_a_reason_each():
    """The scopes' files and ppaux mutate's own (docs/equivalents/ppaux.core.transport.json)."""
    root = Path(mutation.__file__).resolve().parents[1]
    files = sorted((root / "docs" / "equivalents").glob("*.json"))
    assert {f"docs/equivalents/{f.name}" for f in files} >= {n for s in mutation.SCOPES.values() for n in s.equivalents}
    for path in files:
        for judgement in read_judgements(path):
            assert judgement.reason.strip() and "\n" not in judgement.reason
            assert len(judgement.identity.function_hash) == 64


def test_a_recorded_result_stands_while_its_function_is_unchanged_and_a_changed_function_runs_whole(tmp_path):
    ids = identities("m", "pop", POP, [("m.x_pop__mutmut_1", POP_NONE_DEFAULT), ("m.x_pop__mutmut_2", POP_IS_NOT)])
    other = identities("m", "f", "def f():\n    return 1\n", [("m.x_f__mutmut_1", "def f():\n    return 2\n")])
    stamp = {"scope": "contract", "tests": "t1", "mutmut": "3.8.1"}
    store = tmp_path / "h.json"
    verdicts = {"m.x_pop__mutmut_1": "killed", "m.x_pop__mutmut_2": "survived", "m.x_f__mutmut_1": history.NOT_CHECKED}
    killed_by = {"m.x_pop__mutmut_1": "tests/test_pop.py::test_missing_key"}
    assert history.save(store, verdicts, {**ids, **other}, killers=killed_by, **stamp) == 2
    recorded = history.load(store, **stamp)
    assert recorded[ids["m.x_pop__mutmut_1"].key] == history.Recorded(
        ids["m.x_pop__mutmut_1"].function_hash, "killed", "tests/test_pop.py::test_missing_key"
    )
    assert history.plan({**ids, **other}, recorded) == (
        {"m.x_pop__mutmut_1": "killed", "m.x_pop__mutmut_2": "survived"},
        ["m.x_f__mutmut_1"],
    )
    # pop changed (a line added): every one of its mutants runs, under whatever number mutmut gives it now.
    changed = POP.replace("    return value\n", "    del key\n    return value\n")
    now = identities(
        "m",
        "pop",
        changed,
        [
            ("m.x_pop__mutmut_1", changed.replace("(key, None)", "(key, )")),
            ("m.x_pop__mutmut_3", changed.replace("is None", "is not None")),
        ],
    )
    assert history.plan(now, recorded) == ({}, ["m.x_pop__mutmut_1", "m.x_pop__mutmut_3"])
    # The same change's earlier killer, whatever the function's hash now: the test to run first.
    assert history.killers(now, recorded) == killed_by
    assert history.function_patterns(["m.x_pop__mutmut_1", "m.x_pop__mutmut_3", "m.xǁCǁf__mutmut_2"]) == [
        "m.x_pop__mutmut_*",
        "m.xǁCǁf__mutmut_*",
    ]
    # Another scope, other tests, another mutmut or no file: nothing recorded to reuse.
    for key, value in (("scope", "package"), ("tests", "t2"), ("mutmut", "3.9.0")):
        assert history.load(store, **{**stamp, key: value}) is None
    assert history.load(tmp_path / "none.json", **stamp) is None


def test_the_tests_hash_changes_with_a_test_file_or_a_setting_and_not_with_a_cache(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "tests" / "data").mkdir()
    first = history.tests_hash(tmp_path, ["tests", "conftest.py"], ["-q"])
    # A path that is not there hashes as nothing (a checkout without one of its test supports).
    assert history.tests_hash(tmp_path, ["tests", "conftest.py", "absent.py"], ["-q"]) == first
    (tmp_path / "tests" / "__pycache__").mkdir()
    (tmp_path / "tests" / "__pycache__" / "test_a.pyc").write_bytes(b"\0")
    assert history.tests_hash(tmp_path, ["tests", "conftest.py"], ["-q"]) == first
    assert history.tests_hash(tmp_path, ["tests", "conftest.py"], ["-x"]) != first
    (tmp_path / "conftest.py").write_text("# changed\n")
    assert history.tests_hash(tmp_path, ["tests", "conftest.py"], ["-q"]) != first


# mutmut generates the mutants in a child process (seconds): with the slow end-to-end runs.
@pytest.mark.slow
def test_inserting_a_function_at_the_top_leaves_every_judgement_on_the_mutant_it_was_made_for(tmp_path):
    """mutmut's own generation, before and after a function is inserted at the top of the module and
    a line at the top of a judged function: its ordinal names of that function shift, the judgements do not."""
    from tests.fake_mutmut import small_checkout

    def generate(root: Path, ops: str | None = None) -> dict[str, MutantIdentity]:
        checkout = small_checkout(root)
        # A function of the package itself: mutmut names its mutants after the package (arith.x_triple__mutmut_1).
        (root / "arith" / "__init__.py").write_text("def triple(x):\n    return x * 3\n")
        if ops is not None:
            (root / "arith" / "ops.py").write_text(ops)
        scope = dataclasses.replace(mutation.SCOPES["package"], mutate=("arith/*",), tests=("tests/",))
        (root / "project").mkdir()
        project = checkout.project(scope, root / "project")
        return identify_all(project.sources(project.generate(max_children=1), source_of))

    before = generate(tmp_path / "before")
    assert {(i.module, i.function) for i in before.values()} == {
        ("arith", "triple"),
        ("arith.ops", "double"),
        ("arith.ops", "is_small"),
    }
    original = (tmp_path / "before" / "arith" / "ops.py").read_text()
    judged = {name: f"judged on {name}" for name in before}
    judgements = [Judgement(before[name], why) for name, why in judged.items()]
    inserted = "def inserted(x):\n    return x - 1\n\n\n" + original.replace(
        "def is_small(x):\n", "def is_small(x):\n    x = x + 0\n"
    )
    after = generate(tmp_path / "after", inserted)
    # mutmut's names moved: is_small's mutants are numbered after the new line's.
    shifted = {
        n for n in before if n in after and (after[n].before, after[n].after) != (before[n].before, before[n].after)
    }
    assert shifted
    resolution = resolve(judgements, after)
    assert resolution.problems == []
    # Each judgement is on the mutant that makes the same change it was made for.
    for name, why in resolution.judged.items():
        made_for = next(n for n, w in judged.items() if w == why)
        assert (after[name].function, after[name].before, after[name].after) == (
            before[made_for].function,
            before[made_for].before,
            before[made_for].after,
        )
    assert len(resolution.judged) == len(judgements)
    # double did not change: its judgements hold as they are; is_small's are flagged for review.
    assert {after[n].function for n in resolution.review} == {"is_small"}


# mutmut runs for real on a small checkout, three times (over a minute on 2 cores): nightly, with the
# longest end-to-end runs; CI tests the reuse decisions on scripted runs (tests/test_mutation_runs.py).
@pytest.mark.slow
@pytest.mark.thorough
def test_an_incremental_run_after_a_one_function_change_runs_only_that_functions_mutants(tmp_path):
    from ppaux.mutation import own
    from tests.fake_mutmut import ARITH, small_checkout

    root = tmp_path / "checkout"
    checkout = dataclasses.replace(small_checkout(root), copied=("arith", "tests", "pyproject.toml"))
    (root / "tests").mkdir()
    (root / "tests" / "test_ops.py").write_text(
        "from arith.ops import double, is_small\n\n\ndef test_double():\n    assert double(3) == 6\n\n\n"
        "def test_small():\n    assert is_small(3) and not is_small(10)\n"
    )
    scope = dataclasses.replace(ARITH, equivalents=())
    out = tmp_path / "out"

    def run(**kwargs: bool) -> dict[str, object]:
        assert own.run_scope(checkout, scope, str(out), 1, **kwargs) == 0
        report = json.loads((out / "mutation.json").read_text())
        return {k: report[k] for k in ("total", "killed", "ran", "reused")}

    assert run() == {"total": 4, "killed": 4, "ran": 4, "reused": 0}
    assert json.loads((out / history.HISTORY.format(scope="arith")).read_text())["format"] == history.FORMAT
    # Nothing changed: every result is the recorded one, and mutmut runs no mutant.
    assert run() == {"total": 4, "killed": 4, "ran": 0, "reused": 4}
    ops = root / "arith" / "ops.py"
    ops.write_text(ops.read_text().replace("    return x < 10\n", "    return x < 10\n    pass\n"))
    # Every killer recorded, from inside mutmut's forked test runs.
    recorded = json.loads((out / history.HISTORY.format(scope="arith")).read_text())["mutants"]
    assert {(m["function"], m["killer"]) for m in recorded} == {
        ("double", "tests/test_ops.py::test_double"),
        ("is_small", "tests/test_ops.py::test_small"),
    }
    # is_small changed: its two mutants run, its earlier killer first; double's two keep their results.
    assert run() == {"total": 4, "killed": 4, "ran": 2, "reused": 2}
    first = json.loads((out / "project" / "mutants" / FIRST).read_text())
    assert sorted(first.values()) == ["tests/test_ops.py::test_small"] * 2
    # A changed test reruns them all; so does --full.
    (root / "tests" / "test_ops.py").write_text((root / "tests" / "test_ops.py").read_text() + "\n")
    assert run() == {"total": 4, "killed": 4, "ran": 4, "reused": 0}
    assert run(full=True) == {"total": 4, "killed": 4, "ran": 4, "reused": 0}


def test_reading_the_functions_of_no_mutant_costs_nothing_and_a_mutant_that_cannot_be_read_is_left_out(
    tmp_path, monkeypatch
):
    from ppaux.mutation import project
    from ppaux.mutation.project import UNREADABLE_MUTANTS, MutmutProject

    assert MutmutProject(tmp_path).sources([], str) == {}
    # No mutants/ directory: the mutant has no functions to read, and gets no identity.
    assert MutmutProject(tmp_path).sources(["m.x_f__mutmut_1"], lambda name: "m.py") == {}
    # mutmut's reader itself failing fails the reading, with its error.
    monkeypatch.setattr(project, "_SOURCES_SCRIPT", "raise SystemExit('no mutmut here')")
    with pytest.raises(RuntimeError) as raised:
        MutmutProject(tmp_path).sources(["m.x_f__mutmut_1"], lambda name: "m.py")
    assert str(raised.value) == f"{UNREADABLE_MUTANTS}: no mutmut here"
