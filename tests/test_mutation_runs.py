"""ppaux's own mutation runs (``python -m reports mutation``) and the score both mutation tools
report: the equivalents files of a scope, stale entries, the listing of a scope's mutants, the
scratch copy's mutmut table. mutmut is stood in for, but in the listing, which runs mutmut's own
mutant generation on a small checkout."""

from __future__ import annotations

import ast
import dataclasses
import io
import json
from importlib.metadata import version
from pathlib import Path

import pytest

import reports.mutation as mutation
from ppaux.mutation import own
from ppaux.mutation.equivalents import NO_MUTANT, REVIEW
from ppaux.mutation.identity import identify_all
from ppaux.mutation.mutant_runs import FIRST
from ppaux.mutation.own import Checkout, list_mutants
from ppaux.mutation.project import MUTANT_PYTEST_ARGS
from ppaux.mutation.score import EquivalentsError, Score, read_equivalents, score, stale
from ppaux.report import Marking, MutationReport, write_report
from ppaux.report.render import mutation_markdown
from reports.__main__ import main as reports_main
from tests import conftest, fake_mutmut
from tests.fake_mutmut import ARITH, Clock, FakeMutmut, fake_sources, judged_file, small_checkout
from tests.support import tomllib
from tests.typed_reports import read_valid

ROOT = Path(__file__).resolve().parents[1]

VERDICTS = {
    "p.m.x_f__mutmut_1": "killed",
    "p.m.x_f__mutmut_2": "survived",
    "p.m.x_f__mutmut_3": "no tests",
    "p.m.x_f__mutmut_4": "timeout",
    "p.m.x_f__mutmut_5": "crashed (SIGABRT)",
    "p.m.x_f__mutmut_6": "suspicious",
    "p.m.x_f__mutmut_7": "segfault",
    "p.m.x_f__mutmut_8": "survived",
}


def test_the_score_counts_the_killed_of_the_mutants_not_judged_equivalent():
    # Killed: killed, timeout, crashed, segfault. Survived, "no tests" and suspicious are not.
    assert score(VERDICTS) == Score(killed=4, counted=8, equivalent=0)
    assert score(VERDICTS).percent == 50.0
    # A survivor judged equivalent leaves the count; an entry for a killed or unknown mutant changes nothing.
    judged = score(VERDICTS, ["p.m.x_f__mutmut_2", "p.m.x_f__mutmut_3", "p.m.x_f__mutmut_1", "p.m.x_f__mutmut_99"])
    assert (judged, judged.percent) == (Score(killed=4, counted=6, equivalent=2), 66.67)
    assert (judged.reaches(66.67), judged.reaches(66.68)) == (True, False)
    # Nothing to count: full marks.
    assert score({"p.m.x_f__mutmut_2": "survived"}, ["p.m.x_f__mutmut_2"]).percent == 100.0
    assert score({}).percent == 100.0
    assert stale(VERDICTS, {"p.m.x_f__mutmut_2": "why", "p.m.x_f__mutmut_1": "why", "p.m.x_f__mutmut_99": "why"}) == [
        "p.m.x_f__mutmut_1",
        "p.m.x_f__mutmut_99",
    ]


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ('["a"]', "must be a JSON object {mutant: reason} with a reason for each"),
        ('{"a": " "}', "must be a JSON object {mutant: reason} with a reason for each"),
    ],
)
def test_an_equivalents_file_is_an_object_of_reasons(tmp_path, content, message):
    path = tmp_path / "eq.json"
    path.write_text(content)
    with pytest.raises(EquivalentsError) as info:
        read_equivalents(path)
    assert str(info.value) in (f"{str(path)!r}: {message}", f"{str(path)!r} {message}")
    with pytest.raises(EquivalentsError) as info:
        read_equivalents(tmp_path / "missing.json")
    assert str(info.value).startswith(f"{str(tmp_path / 'missing.json')!r}: [Errno 2] No such file or directory")


def test_every_scope_has_its_equivalents_files_and_they_read():
    for scope in mutation.SCOPES.values():
        assert scope.equivalents and mutation.CHECKOUT.equivalents(scope) is not None
    assert mutation.SCOPES["package"].equivalents[0] == "docs/equivalents/contract.json"


def _checkout(tmp_path, verdicts, *, flaky=False, equivalents=None, code=0):
    """ppaux's checkout as the runs see it, with its equivalents files in ``tmp_path`` and mutmut stood in for."""
    runs = []

    class StandIn(Checkout):
        def project(self, scope, dest):
            return FakeMutmut(dest, verdicts, runs, flaky, code=code)

    for name, entries in (equivalents or {}).items():
        (tmp_path / "docs" / "equivalents").mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / "equivalents" / name).write_text(
            json.dumps(judged_file(entries) if isinstance(entries, dict) else entries)
        )
    fields = {f.name: getattr(mutation.CHECKOUT, f.name) for f in dataclasses.fields(Checkout)}
    return StandIn(**{**fields, "root": tmp_path}), runs


def test_a_clean_run_that_fails_once_is_run_again_on_the_saved_stats(tmp_path, capsys):
    checkout, runs = _checkout(
        tmp_path,
        {"ppaux.cli.x_main__mutmut_1": "killed", "ppaux.core.x_f__mutmut_1": "survived"},
        flaky=True,
        equivalents={"contract.json": {}},
    )
    assert mutation.run(str(tmp_path / "out"), 3, ["ppaux.cli*"], checkout=checkout) == 0
    assert runs == [(3, ("ppaux.cli*",), "mutmut-run.log"), (3, ("ppaux.cli*",), "mutmut-run-again.log")]
    out, err = capsys.readouterr()
    # Both runs show their progress on stderr (not a terminal here: plain lines).
    assert err == (
        "mutmut-run.log: mutants 0/1\n"
        "mutmut-run.log: mutants 1/1\n"
        "reports: mutmut's clean run failed; running mutmut again on the stats it saved\n"
        "mutmut-run-again.log: mutants 0/1\n"
        "mutmut-run-again.log: mutants 1/1\n"
    )
    # The score covers the mutants --only picked.
    report = json.loads((tmp_path / "out" / "mutation.json").read_text())
    assert (report["score"], report["total"], list(report["modules"])) == (100.0, 1, ["ppaux.cli"])
    assert out.startswith("mutation (contract): 100.0% (1/1 killed) in ")


def test_when_mutmut_fails_the_run_says_where_its_log_is(tmp_path, capsys):
    checkout, _ = _checkout(tmp_path, {}, equivalents={"contract.json": {}})
    assert mutation.run(str(tmp_path / "out"), None, checkout=checkout) == 1
    assert capsys.readouterr().err.endswith(
        f"reports: error: mutmut run failed (exit 0); see {tmp_path / 'out' / 'mutmut-run.log'}\n"
    )
    # A failure other than the clean run's is not run again: mutmut would fail the same way.
    checkout, runs = _checkout(tmp_path, {"ppaux.cli.x_main__mutmut_1": "killed"}, code=2)
    assert mutation.run(str(tmp_path / "out"), None, checkout=checkout) == 1
    assert runs == [(None, (), "mutmut-run.log")]
    assert capsys.readouterr().err == (
        "mutmut-run.log: mutants 0/1\n"
        "mutmut-run.log: mutants 1/1\n"
        f"reports: error: mutmut run failed (exit 2); see {tmp_path / 'out' / 'mutmut-run.log'}\n"
    )


def test_a_scopes_equivalents_files_leave_judged_mutants_out_and_name_stale_entries(tmp_path, capsys):
    """The package scope reads contract.json, then package.json: a surviving mutant listed there
    counts in no score and is shown with its reason; an entry for a killed mutant is stale; one for
    a mutant that no longer exists fails the run, named; an entry outside --only is neither."""
    verdicts = {
        "ppaux.core.transport.x_f__mutmut_1": "killed",
        "ppaux.core.transport.x_f__mutmut_2": "survived",
        "ppaux.cli.x_main__mutmut_1": "killed",
        "ppaux.cli.x_main__mutmut_2": "survived",
        "ppaux.cli.x_main__mutmut_3": "no tests",
        # mutmut lists the mutants --only leaves out, not checked.
        "ppaux.fuzz.x_f__mutmut_1": "not checked",
    }
    checkout, _ = _checkout(
        tmp_path,
        verdicts,
        equivalents={
            "contract.json": {"ppaux.core.transport.x_f__mutmut_2": "only a message no caller reads"},
            "package.json": {
                "ppaux.cli.x_main__mutmut_2": "a comment in a generated file",
                "ppaux.cli.x_main__mutmut_1": "killed by now",
                "ppaux.cli.x_gone__mutmut_1": "no such mutant",
                "ppaux.fuzz.x_f__mutmut_1": "outside --only",
            },
        },
    )
    only = ["ppaux.core*", "ppaux.cli.x_main*", "ppaux.cli.x_gone*"]
    assert mutation.run(str(tmp_path / "out"), None, only, scope_name="package", checkout=checkout) == 1
    report = read_valid(tmp_path / "out" / "mutation.json", "mutation")
    assert (report["total"], report["equivalent"], report["killed"], report["score"]) == (5, 2, 2, 66.67)
    gone = f"{NO_MUTANT}: docs/equivalents/package.json: ppaux.cli:gone: a -> b1"
    assert (report["unmatched_equivalents"], report["verdict"]) == ([gone], "fail")
    assert report["judged_equivalent"] == {
        "ppaux.core.transport.x_f__mutmut_2": "only a message no caller reads",
        "ppaux.cli.x_main__mutmut_2": "a comment in a generated file",
    }
    assert report["stale_equivalents"] == ["ppaux.cli.x_main__mutmut_1"]
    # The contract module is gated at 100% in every scope: its one survivor is judged equivalent.
    assert report["modules"]["ppaux.core.transport"] == {
        "total": 2,
        "killed": 1,
        "equivalent": 1,
        "survivors": [],
        "score": 100.0,
        "gate": 100.0,
        "verdict": "pass",
    }
    assert [s["mutant"] for s in report["survivors"]] == ["ppaux.cli.x_main__mutmut_3"]
    out = capsys.readouterr().out
    assert out.startswith("mutation (package): 66.67% (2/3 killed) in ")
    assert out.endswith(
        f"  {gone}\n  stale equivalence entry (killed, or no such mutant): ppaux.cli.x_main__mutmut_1\n"
    )
    text = (tmp_path / "out" / "mutation.md").read_text(encoding="utf-8")
    assert "- score: **66.67%** (2/3 mutants killed; 2 judged equivalent); gate: **FAIL**\n" in text
    assert (
        "## Judged equivalent (`docs/equivalents/contract.json`, `docs/equivalents/package.json`)\n\n"
        "- `ppaux.cli.x_main__mutmut_2`: a comment in a generated file\n"
        "- `ppaux.core.transport.x_f__mutmut_2`: only a message no caller reads\n\n"
        "## Stale equivalence entries (killed, or no such mutant)\n\n"
        "- `ppaux.cli.x_main__mutmut_1`\n\n"
        "## Equivalence judgements that match no mutant, or several (the run fails)\n\n"
        f"- {gone}\n\n"
        # The checkout marks nothing: no section of markings.
        "\n## Surviving mutants\n\n"
    ) in text
    assert text.endswith(
        "### `ppaux.cli.x_main__mutmut_3` (no tests)\n\n"
        "```diff\n--- ppaux/cli.py\n+++ ppaux/cli.py\n-    a\n+    b\n```\n"
    )


def test_the_contract_scope_reads_only_its_own_file_and_fails_below_its_gate(tmp_path, capsys):
    verdicts = {"ppaux.core.transport.x_f__mutmut_1": "killed", "ppaux.core.transport.x_f__mutmut_2": "survived"}
    checkout, _ = _checkout(
        tmp_path,
        verdicts,
        equivalents={
            "contract.json": {},
            "package.json": {"ppaux.core.transport.x_f__mutmut_2": "read by the package scope alone"},
        },
    )
    assert mutation.run(str(tmp_path / "out"), None, checkout=checkout) == 1
    out = capsys.readouterr().out
    assert out.endswith("  ppaux.core.transport: 50.0% < 100.0% (1 survivors)\n")
    text = (tmp_path / "out" / "mutation.md").read_text(encoding="utf-8")
    assert "## Judged equivalent (`docs/equivalents/contract.json`)\n\nNone.\n" in text and "Stale" not in text


def test_a_marking_the_gate_refuses_fails_the_run_and_is_named(tmp_path, capsys):
    checkout, _ = _checkout(tmp_path, {"ppaux.cli.x_main__mutmut_1": "killed"}, equivalents={"contract.json": {}})
    refused = [
        Marking("ppaux/cli/x.py:3", block=False, reason=None, problem="no reason given"),
        Marking("ppaux/cli/x.py:9", block=True, reason="equivalent: why", problem=None),
    ]
    code = own.run_scope(
        checkout,
        mutation.SCOPES["contract"],
        str(tmp_path / "out"),
        None,
        markings=lambda: refused,
    )
    assert code == 1
    assert [m["problem"] for m in read_valid(tmp_path / "out" / "mutation.json", "mutation")["equivalents"]] == [
        "no reason given",
        None,
    ]
    out = capsys.readouterr().out
    assert "gate FAIL" in out.splitlines()[0] and out.endswith("\n  ppaux/cli/x.py:3: no reason given\n")
    text = (tmp_path / "out" / "mutation.md").read_text(encoding="utf-8")
    assert "- `ppaux/cli/x.py:3`: **no reason given**\n- `ppaux/cli/x.py:9` (block): equivalent: why\n" in text
    # Without markings to read, there is no section and the run passes.
    assert own.run_scope(checkout, mutation.SCOPES["contract"], str(tmp_path / "out"), None) == 0
    assert "Marked equivalent" not in (tmp_path / "out" / "mutation.md").read_text(encoding="utf-8")


def test_an_equivalents_file_that_cannot_be_read_is_a_usage_error(tmp_path, capsys):
    checkout, runs = _checkout(tmp_path, {}, equivalents={"contract.json": ["not", "an", "object"]})
    assert mutation.run(str(tmp_path / "out"), None, checkout=checkout) == 2
    path = tmp_path / "docs" / "equivalents" / "contract.json"
    assert capsys.readouterr().err == (
        f"reports: error: equivalents file {str(path)!r} must be a JSON object {{'format': 2, 'equivalents': [...]}}\n"
    )
    assert runs == []


def test_the_package_scope_opts_in_the_subprocess_tests_by_its_mark_expression(monkeypatch):
    """Naming the mark in -m opts its tests in (tests/conftest.py): ppaux mutate's command-line tests
    run its clean runs in child processes, and in-process they are what kills its mutants."""

    class Config:
        def __init__(self, expression):
            self.expression = expression

        def getoption(self, name):
            return self.expression

    class Item:
        def __init__(self, mark):
            self.mark, self.skipped = mark, False

        def get_closest_marker(self, name):
            return name == self.mark

        def add_marker(self, marker):
            self.skipped = True

    for variable, _ in conftest.OPT_IN.values():
        monkeypatch.delenv(variable, raising=False)
    for scope, opted_in in (("package", True), ("contract", False)):
        items = [Item("subprocess"), Item("sglang")]
        conftest.pytest_collection_modifyitems(Config(mutation.SCOPES[scope].marks), items)
        assert [item.skipped for item in items] == [not opted_in, True], scope


def test_the_scratch_project_carries_the_scopes_mutmut_table(tmp_path):
    assert mutation.CHECKOUT.project(mutation.SCOPES["package"], tmp_path).root == tmp_path
    table = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert table["only_mutate"] == ["ppaux/*"] and table["source_paths"] == ["ppaux/"]
    assert table["do_not_mutate"] == ["ppaux/conformance/*", "ppaux/examples/*", "ppaux/mutation/mutant_runs.py"]
    assert table["pytest_add_cli_args_test_selection"] == list(mutation.SCOPES["package"].tests)
    assert table["pytest_add_cli_args"][:2] == ["-p", "ppaux.mutation.mutant_runs"]
    assert table["pytest_add_cli_args"][-2:] == ["-m", "not sglang or subprocess"]
    deselected = [
        arg.removeprefix("--deselect=") for arg in table["pytest_add_cli_args"] if arg.startswith("--deselect=")
    ]
    assert deselected == [test for test, _ in mutation.SCOPES["package"].deselect]
    assert all((tmp_path / path.rstrip("/")).exists() for path in table["also_copy"])
    assert "ppaux/" not in table["also_copy"] and "pyproject.toml" not in table["also_copy"]
    assert (tmp_path / "ppaux" / "core" / "transport.py").read_bytes() == (
        ROOT / "ppaux" / "core" / "transport.py"
    ).read_bytes()
    assert not list((tmp_path / "ppaux").rglob("__pycache__"))


def test_every_test_a_scope_leaves_out_is_a_test_of_the_checkout_with_its_reason():
    """A renamed or removed test would leave its --deselect naming nothing: pytest says nothing of it."""
    for scope in mutation.SCOPES.values():
        for test, reason in scope.deselect:
            path, _, name = test.partition("::")
            tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
            tests = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
            assert name in tests, test
            assert reason.strip() and "\n" not in reason, test
            assert any(path.startswith(selected) for selected in scope.tests), test
    assert mutation.SCOPES["contract"].deselect == ()


# mutmut generates the mutants in a child process (seconds): with the slow end-to-end runs.
@pytest.mark.slow
def test_a_scopes_mutants_are_listed_with_the_line_each_changes_and_no_test_runs(tmp_path, capsys):
    """mutmut's own generation on a small checkout: every mutant, in order, ``name: before -> after``."""
    checkout = small_checkout(tmp_path / "checkout")
    scope = dataclasses.replace(mutation.SCOPES["package"], mutate=("arith/*",), tests=("tests/",))
    stream = io.StringIO()
    assert list_mutants(checkout, scope, str(tmp_path / "out"), 1, ["arith.ops.x_is_small*"], stream=stream) == 0
    assert stream.getvalue() == (
        "arith.ops.x_is_small__mutmut_1: return x < 10 -> return x <= 10\n"
        "arith.ops.x_is_small__mutmut_2: return x < 10 -> return x < 11\n"
    )
    # No test ran: mutmut has no verdict yet.
    assert not (tmp_path / "out" / "project" / "mutants" / "mutmut-stats.json").exists()
    assert list_mutants(checkout, scope, str(tmp_path / "out"), 1, ["nothing*"], stream=stream) == 1
    assert capsys.readouterr().err == "reports: error: mutmut made no mutant of scope 'package'\n"


def test_the_listing_is_asked_for_on_the_command_line(monkeypatch):
    asked = []
    monkeypatch.setattr(mutation, "list_mutants", lambda *args: asked.append(args) or 0)
    assert reports_main(["mutation", "--scope", "package", "--list", "--only", "ppaux.cli*", "--out", "o"]) == 0
    ((checkout, scope, out, max_children, only),) = asked
    assert (checkout, scope, out, max_children, only) == (
        mutation.CHECKOUT,
        mutation.SCOPES["package"],
        "o",
        None,
        ["ppaux.cli*"],
    )


def test_a_functions_mutants_are_listed_by_number():
    # A function whose own name holds mutmut's separator is still one function.
    names = ["m.x_f__mutmut_10", "m.x_g__mutmut_1", "m.x_f__mutmut_2", "m.x_f__mutmut_1", "m.x_f__mutmut_x__mutmut_3"]
    assert sorted(names, key=own._in_order) == [
        "m.x_f__mutmut_1",
        "m.x_f__mutmut_2",
        "m.x_f__mutmut_10",
        "m.x_f__mutmut_x__mutmut_3",
        "m.x_g__mutmut_1",
    ]


def _arith_checkout(root: Path, runs: list, verdicts: dict, *, undiffed=(), always_gated=()) -> Checkout:
    """A small checkout (``arith``, two modules) whose scratch copy is made for real, and mutmut
    stood in for in it; its equivalents file ``eq.json`` judges one mutant and holds a stale entry."""
    small_checkout(root)
    (root / "arith" / "more.py").write_text("def half(x):\n    return x / 2\n")
    (root / "eq.json").write_text(
        json.dumps(
            judged_file(
                {"arith.ops.x_double__mutmut_2": "x * 2 and x + x agree", "arith.ops.x_is_small__mutmut_2": "x"}
            )
        )
    )

    class StandIn(Checkout):
        def project(self, scope, dest):
            super().project(scope, dest)
            return FakeMutmut(dest, verdicts, runs, False, undiffed=undiffed)

    return StandIn(
        root=root, copied=("arith", "pyproject.toml"), pytest_args=(), do_not_mutate=(), always_gated=always_gated
    )


def test_a_scopes_run_reports_every_module_against_its_gate_and_every_survivor_with_its_diff(
    tmp_path, monkeypatch, capsys
):
    runs = []
    verdicts = {
        "arith.ops.x_double__mutmut_1": "killed",
        "arith.ops.x_double__mutmut_2": "survived",
        "arith.ops.x_is_small__mutmut_1": "survived",
        "arith.ops.x_is_small__mutmut_2": "killed",
        "arith.more.x_half__mutmut_1": "no tests",
    }
    # arith/ops.py gated at 100% (one survivor left: it fails); arith.more reported only. mutmut
    # could make no diff of the mutant without tests.
    checkout = _arith_checkout(
        tmp_path / "checkout", runs, verdicts, undiffed=("arith.more.x_half__mutmut_1",), always_gated=("arith/ops.py",)
    )
    monkeypatch.setattr(own, "time", Clock(took=12.3456))
    out = tmp_path / "reports" / "nightly"  # made with its parents
    assert own.run_scope(checkout, ARITH, str(out), 2, ["arith.ops*", "arith.more*"]) == 1
    assert runs == [(2, ("arith.ops*", "arith.more*"), "mutmut-run.log")]
    # mutmut ran in the scratch copy of the checkout, under the scope's table.
    table = tomllib.loads((out / "project" / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert table["only_mutate"] == ["arith/*"]
    stdout, stderr = capsys.readouterr()
    assert stdout == (
        f"mutation (arith): 50.0% (2/4 killed) in 12.3 s (5 run, 0 recorded results reused); gate FAIL; "
        f"report {out / 'mutation.md'}\n"
        "  arith.ops: 66.67% < 100.0% (1 survivors)\n"
        "  stale equivalence entry (killed, or no such mutant): arith.ops.x_is_small__mutmut_2\n"
    )
    assert stderr == "mutmut-run.log: mutants 0/1\nmutmut-run.log: mutants 1/1\n"
    report = read_valid(out / "mutation.json", "mutation")
    assert {k: report[k] for k in ("kind", "scope", "wall_s", "mutmut", "total", "verdict")} == {
        "kind": "mutation",
        "scope": "arith",
        "wall_s": 12.3,
        "mutmut": version("mutmut"),
        "total": 5,
        "verdict": "fail",
    }
    diff = "--- arith/ops.py\n+++ arith/ops.py\n-    a\n+    b\n"
    # Each survivor with its identity, as an equivalents file keys it.
    identities = identify_all(fake_sources(["arith.more.x_half__mutmut_1", "arith.ops.x_is_small__mutmut_1"]))
    assert report["survivors"] == [
        {
            "mutant": name,
            "status": status,
            "diff": shown,
            "identity": dataclasses.asdict(identities[name]),
        }
        for name, status, shown in (
            ("arith.more.x_half__mutmut_1", "no tests", ""),
            ("arith.ops.x_is_small__mutmut_1", "survived", diff),
        )
    ]
    assert (out / "mutation.md").read_text() == (
        "# Mutation testing\n"
        "\n"
        "- scope `arith`: the arith package, its score reported\n"
        "- score: **50.0%** (2/4 mutants killed; 1 judged equivalent); gate: **FAIL**\n"
        "- mutants run: 5, recorded results reused: 0\n"
        f"- wall time: 12.3 s; mutmut {version('mutmut')}; "
        "command: `python -m reports mutation --scope arith --only 'arith.ops*' --only 'arith.more*'`\n"
        "- verdicts: killed 2, survived 2, no tests 1\n"
        "\n"
        "| module | mutants | killed | score | gate | verdict |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| arith.more | 1 | 0 | 0.0% | reported | pass |\n"
        "| arith.ops | 4 | 2 | 66.67% | 100.0% | FAIL |\n"
        "\n"
        "## Judged equivalent (`eq.json`)\n"
        "\n"
        "- `arith.ops.x_double__mutmut_2`: x * 2 and x + x agree\n"
        "\n"
        "## Stale equivalence entries (killed, or no such mutant)\n"
        "\n"
        "- `arith.ops.x_is_small__mutmut_2`\n"
        "\n"
        "\n"
        "## Surviving mutants\n"
        "\n"
        "### `arith.more.x_half__mutmut_1` (no tests)\n"
        "\n"
        "```diff\n"
        "\n"
        "```\n"
        "\n"
        f"### `arith.ops.x_is_small__mutmut_1` (survived)\n"
        "\n"
        f"```diff\n{diff}```\n"
    )


def test_a_scopes_run_with_every_mutant_killed_passes_and_says_none_survived(tmp_path, monkeypatch, capsys):
    runs = []
    # mutmut lists the mutants --only left out too, not checked: the judgement on one of them holds a mutant.
    verdicts = {
        "arith.ops.x_double__mutmut_1": "killed",
        "arith.ops.x_double__mutmut_2": "survived",
        "arith.ops.x_is_small__mutmut_2": "not checked",
    }
    checkout = _arith_checkout(tmp_path / "checkout", runs, verdicts, always_gated=("arith/ops.py",))
    monkeypatch.setattr(own, "time", Clock(took=0.04))
    out = tmp_path / "out"
    assert own.run_scope(checkout, ARITH, str(out), None, ["arith.ops.x_double*"]) == 0
    assert capsys.readouterr().out == (
        f"mutation (arith): 100.0% (1/1 killed) in 0.0 s (2 run, 0 recorded results reused); gate pass; "
        f"report {out / 'mutation.md'}\n"
    )
    assert (out / "mutation.md").read_text() == (
        "# Mutation testing\n"
        "\n"
        "- scope `arith`: the arith package, its score reported\n"
        "- score: **100.0%** (1/1 mutants killed; 1 judged equivalent); gate: **pass**\n"
        "- mutants run: 2, recorded results reused: 0\n"
        f"- wall time: 0.0 s; mutmut {version('mutmut')}; "
        "command: `python -m reports mutation --scope arith --only 'arith.ops.x_double*'`\n"
        "- verdicts: killed 1, survived 1\n"
        "\n"
        "| module | mutants | killed | score | gate | verdict |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| arith.ops | 2 | 1 | 100.0% | 100.0% | pass |\n"
        "\n"
        "## Judged equivalent (`eq.json`)\n"
        "\n"
        "- `arith.ops.x_double__mutmut_2`: x * 2 and x + x agree\n"
        "\n"
        "\n"
        "## Surviving mutants\n"
        "\n"
        "None.\n"
    )


def test_a_scratch_copy_holds_the_checkout_but_its_caches_and_reports_and_the_scopes_whole_mutmut_table(tmp_path):
    root = tmp_path / "checkout"
    small_checkout(root)
    (root / "README.md").write_text("# arith\n")
    # What a checkout holds beside its sources and that a copy must leave out: bytecode, report
    # folders and pages, an earlier mutmut copy.
    for folder in ("arith", "tests"):
        (root / folder / "__pycache__").mkdir(parents=True)
        (root / folder / "__pycache__" / "ops.cpython-311.pyc").write_bytes(b"\0")
        (root / folder / "out").mkdir()
        (root / folder / "out" / "mutation.md").write_text("# old\n")
        (root / folder / "index.html").write_text("<html>\n")
        (root / folder / "mutants").mkdir()
        (root / folder / "mutants" / "ops.py").write_text("")
    (root / "tests" / "test_ops.py").write_text("def test_double():\n    pass\n")
    checkout = Checkout(
        root=root,
        copied=("arith", "tests", "README.md", "pyproject.toml"),
        pytest_args=("-q",),
        do_not_mutate=("arith/more.py",),
        always_gated=(),
    )
    scope = own.Scope(
        name="arith",
        mutate=("arith/*",),
        tests=("tests/",),
        gate=None,
        doc="arith",
        marks="not slow",
        deselect=(("tests/test_ops.py::test_double", "why"),),
    )
    dest = tmp_path / "copy"
    dest.mkdir()
    checkout.project(scope, dest)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "README.md",
        "arith",
        "arith/__init__.py",
        "arith/ops.py",
        "pyproject.toml",
        "tests",
        "tests/test_ops.py",
    ]
    text = (dest / "pyproject.toml").read_text()
    # The checkout's own pyproject.toml, then the table after one blank line.
    assert text.startswith("[project]\nname = 'arith'\n\n[tool.mutmut]\n")
    assert tomllib.loads(text)["tool"]["mutmut"] == {
        "source_paths": ["arith/"],
        "only_mutate": ["arith/*"],
        "do_not_mutate": ["arith/more.py"],
        "also_copy": ["tests/", "README.md"],
        "pytest_add_cli_args": [
            *MUTANT_PYTEST_ARGS,
            "-q",
            "--deselect=tests/test_ops.py::test_double",
            "-m",
            "not slow",
        ],
        "pytest_add_cli_args_test_selection": ["tests/"],
        "process_isolation": "forkserver",
        "forkserver_warmup": "collect",
        "timeout_multiplier": 3.0,
    }


class _Generated:
    """mutmut's generation stood in for: the names it made, the diffs it could make."""

    def __init__(self, names, diffs, generated):
        self.names, self.made, self.generated = names, diffs, generated

    def generate(self, *, max_children):
        self.generated.append(max_children)
        return list(self.names)

    def diffs(self, names, source_of):
        # As mutmut's own diff: of the mutant's module's file in the copy.
        return {name: self.made[name] for name in names if name in self.made and source_of(name) == "arith/ops.py"}


def test_a_listing_goes_to_stdout_by_number_and_a_mutant_without_a_diff_shows_no_change(tmp_path, capsys):
    generated = []
    names = [
        "arith.ops.x_f__mutmut_10",
        "arith.ops.x_f__mutmut_2",
        "arith.ops.x_f__mutmut_1",
        "arith.ops.x_g__mutmut_1",
    ]
    diffs = {name: "--- arith/ops.py\n+++ arith/ops.py\n-    a\n+    b\n" for name in names[1:]}

    copies = []

    class StandIn(Checkout):
        def project(self, scope, dest):
            copies.append((scope.name, dest))
            return _Generated(names, diffs, generated)

    checkout = StandIn(root=tmp_path, copied=("arith",), pytest_args=(), do_not_mutate=(), always_gated=())
    assert list_mutants(checkout, ARITH, str(tmp_path / "out"), 2, ["arith.ops.x_f*"]) == 0
    # mutmut generates in the scratch copy under --out, as a run does.
    assert (generated, copies) == ([2], [("arith", tmp_path / "out" / "project")])
    listing = "arith.ops.x_f__mutmut_1: a -> b\narith.ops.x_f__mutmut_2: a -> b\narith.ops.x_f__mutmut_10: \n"
    assert capsys.readouterr().out == listing
    stream = io.StringIO()
    assert list_mutants(checkout, ARITH, str(tmp_path / "out"), 2, ["arith.ops.x_f*"], stream=stream) == 0
    assert (stream.getvalue(), capsys.readouterr().out) == (listing, "")
    assert list_mutants(checkout, ARITH, str(tmp_path / "out"), 2, ["nothing*"]) == 1
    assert capsys.readouterr() == ("", "reports: error: mutmut made no mutant of scope 'arith'\n")


def _judged_section(judged, files) -> str:
    """The judged-equivalent section of the mutation.md of a run with these judgements."""
    report = MutationReport(
        scope="s",
        scope_doc="d",
        wall_s=1.0,
        mutmut="3.8.1",
        total=2,
        reused=0,
        ran=2,
        equivalent=len(judged),
        killed=0,
        score=100.0,
        verdict="pass",
        verdicts={"survived": 2},
        only=(),
        modules={},
        equivalents_files=files,
        judged_equivalent=judged,
    )
    text = mutation_markdown(report)
    return text[text.index("## Judged equivalent") : text.index("## Surviving mutants")]


def test_the_judged_equivalent_section_names_its_files_only_when_there_are_some():
    assert _judged_section({}, ()) == "## Judged equivalent\n\nNone.\n\n\n"
    assert _judged_section({"m.x_f__mutmut_2": "why", "m.x_f__mutmut_1": "why not"}, ("eq.json",)) == (
        "## Judged equivalent (`eq.json`)\n\n- `m.x_f__mutmut_1`: why not\n- `m.x_f__mutmut_2`: why\n\n\n"
    )


def test_a_report_is_written_into_its_folder_made_with_its_parents(tmp_path):
    out = tmp_path / "reports" / "nightly"
    page, data = write_report(out, "mutation", {"score": 50.0, "modules": {}}, "# Mutation testing\n\ntext\n")
    assert (page, data) == (out / "mutation.md", out / "mutation.json")
    # The JSON is indented, one entry a line.
    assert page.read_text() == "# Mutation testing\n\ntext\n"
    assert data.read_text() == '{\n  "score": 50.0,\n  "modules": {}\n}\n'


def test_a_second_run_reuses_the_recorded_verdicts_and_runs_only_a_changed_function(tmp_path, monkeypatch, capsys):
    """mutmut stood in for: the first run records every verdict; the second, nothing changed, runs
    no mutant; the third, is_small changed, runs its mutants alone, and the judgement made on
    is_small before the change is listed for review."""
    runs = []
    verdicts = {
        "arith.ops.x_double__mutmut_1": "killed",
        "arith.ops.x_double__mutmut_2": "survived",
        "arith.ops.x_is_small__mutmut_1": "killed",
        "arith.ops.x_is_small__mutmut_2": "killed",
    }
    checkout = _arith_checkout(tmp_path / "checkout", runs, verdicts)
    out = tmp_path / "out"

    def run():
        code = own.run_scope(checkout, ARITH, str(out), None)
        report = json.loads((out / "mutation.json").read_text())
        return code, report["ran"], report["reused"], report["score"], capsys.readouterr().out

    code, ran, reused, score, printed = run()
    assert (code, ran, reused, score, runs) == (0, 4, 0, 100.0, [(None, (), "mutmut-run.log")])
    assert " (4 run, 0 recorded results reused); gate pass; " in printed
    runs.clear()
    assert run()[:4] == (0, 0, 4, 100.0) and runs == [(None, "generate")]
    runs.clear()
    real = fake_mutmut.fake_sources

    def is_small_changed(names):
        sources = real(names)
        return {
            n: ("def f():\n    a\n    pass\n", s[1] + "    pass\n") if "is_small" in n else s
            for n, s in sources.items()
        }

    monkeypatch.setattr(fake_mutmut, "fake_sources", is_small_changed)
    code, ran, reused, score, printed = run()
    assert (code, ran, reused) == (0, 2, 2)
    assert runs == [(None, "generate"), (None, ("arith.ops.x_is_small__mutmut_*",), "mutmut-run.log")]
    # The rerun mutants' earlier killers first, for the plugin of mutmut's test runs; every killer recorded.
    first = json.loads((out / "project" / "mutants" / FIRST).read_text())
    assert first == {f"arith.ops.x_is_small__mutmut_{n}": "tests/test_is_small.py::test_it" for n in (1, 2)}
    recorded = json.loads((out / "mutation-history-arith.json").read_text())["mutants"]
    assert {(m["function"], m["occurrence"], m["after"], m.get("killer")) for m in recorded} == {
        ("double", 0, "b1", "tests/test_double.py::test_it"),
        ("double", 0, "b2", None),
        ("is_small", 0, "b1", "tests/test_is_small.py::test_it"),
        ("is_small", 0, "b2", "tests/test_is_small.py::test_it"),
    }
    review = read_valid(out / "mutation.json", "mutation")["review_equivalents"]
    assert [e["mutant"] for e in review] == ["arith.ops.x_is_small__mutmut_2"]
    assert f"  {REVIEW}: eq.json: arith.ops:is_small: a -> b2 (now arith.ops.x_is_small__mutmut_2, " in printed
    assert (
        "## Equivalence judgements to review (their function changed since)\n\n- eq.json: "
        in (out / "mutation.md").read_text()
    )
    # --full runs every mutant whatever was recorded.
    runs.clear()
    assert own.run_scope(checkout, ARITH, str(out), None, full=True) == 0
    assert runs == [(None, (), "mutmut-run.log")]
    # No identity, so no record: its function runs (double for double_1; is_small, changed back, runs too).
    runs.clear()
    monkeypatch.setattr(
        fake_mutmut, "fake_sources", lambda names: {n: s for n, s in real(names).items() if n[-2:] != "_1"}
    )
    assert run()[:3] == (0, 3, 1)
    assert runs == [
        (None, "generate"),
        (None, ("arith.ops.x_double__mutmut_*", "arith.ops.x_is_small__mutmut_*"), "mutmut-run.log"),
    ]
