"""The documentation: a short README, links and anchors that resolve inside the repository, the
contract's tables generated from the code, and a conformance test for every clause."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.conformance import test_add, test_pop, test_properties, test_robustness, test_sglang_cases, test_stateful
from ppaux.core.clauses import CLAUSES, markdown_table
from reports import cli_reference

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
# How Hypothesis has introduced a failing example in its output: "Falsifying example:" before 6.16x.
EXAMPLE_HEADER = re.compile(r"(?:Falsifying|Failing)(?: explicit)? (?:example|test case):")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or ROOT not in dest.parents and dest != ROOT:
            broken.append(target)
        elif anchor and anchor not in anchors(dest):
            broken.append(target)
    assert broken == []


def test_the_readme_is_a_front_door():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


def test_the_clause_table_is_generated_from_the_clauses():
    assert markdown_table() in (ROOT / "docs" / "contract.md").read_text(encoding="utf-8"), (
        "docs/contract.md's clause table is stale: paste `ppaux clauses --markdown`"
    )


def test_the_command_reference_is_what_the_console_script_prints():
    """docs/cli.md is every command's --help; an option, a default or a word changed in the parser
    and not in the page (or the other way round) leaves the page telling users something false."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    rendered_by = re.search(r"Python (\d+\.\d+)'s argparse", page)[1]
    if rendered_by != cli_reference.python_version():
        pytest.skip(
            f"docs/cli.md was rendered by Python {rendered_by}'s argparse, whose layout differs from this Python's"
        )
    assert page == cli_reference.render(), "docs/cli.md is stale: run `python -m reports cli-reference`"


def test_the_report_fields_are_what_the_shipped_schemas_say():
    """docs/reports.md's tables are the schemas' (a field added or reworded there shows here)."""
    from reports import schema_docs

    page = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    tables = page.split("<!-- schema tables: begin -->\n", 1)[1].split("<!-- schema tables: end -->", 1)[0]
    assert tables == schema_docs.render(), "docs/reports.md is stale: paste `python -m reports.schema_docs` there"


def test_the_command_reference_is_written_where_asked(tmp_path, capsys):
    from reports.__main__ import main

    page = tmp_path / "cli.md"
    assert main(["cli-reference", "--page", str(page)]) == 0
    assert capsys.readouterr().out == f"reports: wrote {page}\n"
    assert page.read_text(encoding="utf-8") == cli_reference.render()


def _clause_marks():
    """(clause id, kind mark) for every test of the shipped suite."""
    for module in (test_add, test_pop, test_properties, test_robustness, test_sglang_cases, test_stateful):
        module_mark = getattr(module, "pytestmark", None)
        module_marks = [module_mark.name] if module_mark else []
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("test_"):
                continue
            marks = getattr(fn, "pytestmark", [])
            kinds = {m.name for m in marks} | set(module_marks)
            for mark in marks:
                if mark.name == "clause":
                    yield mark.args[0], "robustness" if "robustness" in kinds else "contract"


def test_every_clause_has_a_test_and_every_test_a_known_clause():
    marks = list(_clause_marks())
    assert {clause for clause, _ in marks} == set(CLAUSES)


def test_robustness_tests_are_the_clauses_where_sglang_differs():
    robust = {clause for clause, kind in _clause_marks() if kind == "robustness"}
    assert robust == {c.id for c in CLAUSES.values() if c.sglang_differs}


def _hypothesis_header() -> str:
    """How the installed Hypothesis introduces a failing example ("Failing test case:" in 6.170)."""

    @settings(database=None, max_examples=1)
    @given(st.just(0))
    def probe(x):
        raise ValueError

    with pytest.raises(ValueError) as info:
        probe()
    return info.value.__notes__[0].split(" probe(")[0]


def test_docs_quote_failing_examples_as_the_pinned_hypothesis_prints_them():
    quoted = {
        (page.name, m.group(0))
        for page in PAGES
        if page.name != "CHANGELOG.md"
        for m in EXAMPLE_HEADER.finditer(page.read_text(encoding="utf-8"))
    }
    header = _hypothesis_header()
    assert header == "Failing test case:"
    assert quoted and {q for q in quoted if q[1] != header} == set()
