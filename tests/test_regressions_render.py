"""The parts of a regression file that depend on its clause and its implementation: docstrings that
fit the page, the names of the file, class and imports, and what a file may import."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppaux.regressions.expect import expected_steps
from ppaux.regressions.render import (
    RegressionCase,
    check_imports,
    class_name,
    file_name,
    imported_roots,
    method_lines,
    render,
)


@pytest.mark.parametrize(
    "clause, docstring",
    [
        # A clause of the catalog reads its statement; any other, what it is.
        ("add.1", ['        """add.1: A `None` output is a no-op: add returns and the dict is untouched."""']),
        # 100 characters with its indent and quotes: one line.
        ("c" * 61, ['        """' + "c" * 61 + ': a property of the suite"""']),
        # Wrapped as one line, but its quotes would pass the width: they go on a line of their own.
        ("c" * 64, ['        """' + "c" * 64 + ": a property of the suite", '        """']),
        ("c" * 66, ['        """' + "c" * 66 + ": a property of the", "        suite", '        """']),
        # A clause that holds the docstring's own quotes does not end it.
        ('say """hi"""', ["        \"\"\"say '''hi''': a property of the suite\"\"\""]),
    ],
)
def test_a_tests_docstring_is_its_clause_on_lines_that_fit_in_100_columns(clause, docstring):
    finding = RegressionCase("t.py::test_x", clause, None, [], [], method="test_x")
    assert method_lines(finding, 1.0) == ["    def test_x(self):", *docstring]


@pytest.mark.parametrize(
    "clause, names",
    [("round-trip", ("test_round_trip.py", "TestRoundTrip")), ("-my clause-", ("test_my_clause.py", "TestMyClause"))]
    + [("X.1", ("test_X_1.py", "TestX1"))],
)
def test_a_clause_names_its_file_and_test_case_in_pythons_spelling(clause, names):
    assert (file_name(clause), class_name(clause)) == names


def test_a_key_that_holds_an_equals_sign_is_checked_as_written():
    steps = expected_steps(
        {
            "prefix": "p.",
            "doubles": [],
            "steps": [{"op": "pop", "dict": "tensors", "arg": "None", "setup": ["tensors = {'a = b': 1}"]}],
        }
    )
    assert steps[0]["checks"] == ["self.assertIsNone(result)", "self.assertEntries(tensors, [('a = b', 1)])"]


@pytest.mark.parametrize("suffix", [".py", ""])
def test_an_implementation_given_by_path_is_imported_by_its_stem_with_a_comment_saying_where(tmp_path, suffix):
    # A path that ends in .py (existing or not), or an existing file of any name.
    spec = "nowhere/mine.py" if suffix else str(tmp_path / "mine")
    if not suffix:
        Path(spec).write_text("")
    steps = expected_steps(
        {
            "prefix": "p.",
            "doubles": [],
            "steps": [{"op": "pop", "dict": "tensors", "arg": "None", "setup": ["tensors = {}"]}],
        }
    )
    source = render("pop.2", [RegressionCase("t.py::test_x", "pop.2", None, steps, [], method="test_x")], spec, 1.0)
    imports = source.split('"""\n\n', 1)[1].split("\n\n\nclass PPDictTestCase")[0]
    # No aux key in the calls: the file does not import _OUTPUT_PREFIX.
    assert imports == (
        "import unittest\n\nimport torch\n\n"
        f"# mine is {spec} (ppaux check --impl {spec}): run with its directory on PYTHONPATH.\n"
        "from mine import (\n    pop_auxiliary_output_from_pp_tensors,\n)"
    )


def test_the_imports_of_a_source_are_the_top_level_names_it_imports():
    source = "import a.b, c\nimport g\nfrom d.e import f\nfrom . import h\n"
    assert imported_roots(source) == {"a", "c", "d", "g"}


def test_a_regression_file_may_import_only_the_standard_library_torch_and_the_implementation():
    assert check_imports("import unittest\nimport torch\nfrom pkg.mod import x\n", "pkg.mod") is None
    with pytest.raises(AssertionError) as info:
        check_imports("import numpy\nimport hypothesis.strategies\nfrom pkg.mod import x\n", "pkg.mod")
    # (Its first line: under pytest, the assertion's own explanation follows.)
    assert str(info.value).splitlines()[0] == "a regression file imports ['hypothesis', 'numpy']"
