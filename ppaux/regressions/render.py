"""A broken clause's regression test file: plain unittest and torch, importing the implementation's
own module, one test method per finding, in the style of a hand-written unit test."""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import ppaux.regressions.doubles as doubles
from ppaux.core.clauses import statement
from ppaux.regressions.expect import FUNCTIONS, ExpectedStep
from ppaux.regressions.layout import wrap

# The first line of every file ppaux writes: how a later run knows which files are its own.
MARKER = "# Regression tests written by ppaux"
WIDTH = 100
# What a regression file may import besides the implementation's module.
STANDARD = {"contextlib", "multiprocessing", "sys", "unittest", "torch"}


@dataclass
class RegressionCase:
    """One failing test of the suite, as a regression test: its steps with their expectations."""

    nodeid: str
    clause: str
    kind: str | None  # "hang", "crash" or None
    steps: list[ExpectedStep]
    doubles: list[str]
    method: str = ""
    uses: list[str] = field(default_factory=list)


def module_of(spec: str) -> tuple[str, str | None]:
    """The module name a regression file imports for ``--impl spec``, and a comment when ``spec`` is a file."""
    if spec.endswith(".py") or Path(spec).is_file():
        stem = Path(spec).stem
        return stem, f"# {stem} is {spec} (ppaux check --impl {spec}): run with its directory on PYTHONPATH."
    return spec, None


def file_name(clause: str) -> str:
    return "test_" + re.sub(r"\W+", "_", clause).strip("_") + ".py"


def class_name(clause: str) -> str:
    return "Test" + "".join(part.capitalize() for part in re.split(r"\W+", clause) if part)


def method_name(nodeid: str, taken: set[str]) -> str:
    test = nodeid.rsplit("::", 1)[-1]
    base = re.sub(r"\W+", "_", test).strip("_").lower()
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _docstring(text: str, indent: str) -> list[str]:
    wrapped = textwrap.wrap(text.replace('"""', "'''"), WIDTH - len(indent) - 3)
    if len(wrapped) == 1 and len(wrapped[0]) + len(indent) + 6 <= WIDTH:
        return [f'{indent}"""{wrapped[0]}"""']
    return [f'{indent}"""{wrapped[0]}'] + [f"{indent}{line}" for line in wrapped[1:]] + [f'{indent}"""']


def clause_line(clause: str) -> str:
    return f"{clause}: {statement(clause) or 'a property of the suite'}"


def _step_lines(step: ExpectedStep, indent: str) -> list[str]:
    lines = [indent + line for line in step["setup"]] + ([""] if step["setup"] else [])
    if step["raised"] is None:
        call = f"result = {step['call']}" if step["op"] == "pop" else step["call"]
        lines.append(indent + call)
    else:
        lines += [f"{indent}with self.assertRaises(Exception) as raised:", f"{indent}    {step['call']}"]
        lines += [indent + check for check in step["raised"]]
    return lines + [indent + check for check in step["checks"]]


def calls_function(finding: RegressionCase) -> str:
    # Not test_*: pytest would collect a module-level test_ function as a test of its own.
    return f"{finding.method.removeprefix('test_')}_calls"


def _calls_function(finding: RegressionCase) -> list[str]:
    """A hang or crash: the counterexample's calls as a module-level function a child process runs."""
    lines = [f"def {calls_function(finding)}():", f'    """The calls of {finding.method}\'s counterexample."""']
    for step in finding.steps:
        lines += ["    " + line for line in step["setup"]]
        if step["raised"] is None:
            lines.append(f"    {step['call']}")
        else:
            error = "RuntimeError" if "RuntimeError" in " ".join(step["raised"]) else "ObserverFailure"
            lines += [
                f"    with contextlib.suppress({error}):  # the contract's answer here",
                f"        {step['call']}",
            ]
    return _wrapped(lines)


def _wrapped(lines: list[str]) -> list[str]:
    return [part for line in lines for part in wrap(line, WIDTH)]


def method_lines(finding: RegressionCase, timeout: float) -> list[str]:
    lines = [f"    def {finding.method}(self):", *_docstring(clause_line(finding.clause), "        ")]
    if finding.kind:
        ends = "did not return" if finding.kind == "hang" else "ended its process"
        lines += [
            f"        exitcode = run_in_child({calls_function(finding)}, seconds={timeout!r})",
            f'        self.assertIsNotNone(exitcode, "the calls did not return within {timeout:g} s")',
            f'        self.assertEqual(exitcode, 0, "the process making the calls died")  # here: it {ends}',
        ]
        return lines
    for i, step in enumerate(finding.steps):
        if i:
            lines.append("")
        lines += _step_lines(step, "        ")
    return _wrapped(lines)


def render(clause: str, findings: list[RegressionCase], spec: str, timeout: float) -> str:
    """The file for ``clause``: its findings as test methods of one TestCase."""
    module, comment = module_of(spec)
    used_functions = sorted({FUNCTIONS[s["op"]] for f in findings for s in f.steps})
    body = "\n".join(line for f in findings for s in f.steps for line in s["setup"] + s["checks"] + [s["call"]])
    names = (["_OUTPUT_PREFIX"] if "_OUTPUT_PREFIX" in body else []) + used_functions
    hangs = any(f.kind for f in findings)
    out = [
        f"{MARKER} for {clause}.",
        "# A later run of ppaux with --regressions on this directory replaces this file.",
        *_docstring(
            f"Regression tests for {module}: {clause_line(clause)} Each test is a minimal counterexample "
            f"that ppaux's conformance suite found, proven to fail against {module} and to pass "
            f"against ppaux's reference transport. Needs only torch: python -m unittest "
            f"{file_name(clause)}",
            "",
        ),
        "",
    ]
    modules = ["contextlib", "multiprocessing", "sys", "unittest"] if hangs else ["unittest"]
    out += [f"import {name}" for name in modules]
    out += ["", "import torch", ""]
    if comment:
        out.append(comment)
    out += [f"from {module} import ("] + [f"    {name}," for name in names] + [")", ""]
    classes = doubles.needed(sorted({d for f in findings for d in f.doubles}))
    if classes:
        out.append(doubles.source(classes).rstrip() + "\n")
    out.append(doubles.TEST_CASE.rstrip() + "\n")
    if hangs:
        out.append(doubles.RUN_IN_CHILD.rstrip() + "\n")
        for f in findings:
            if f.kind:
                out += ["", *_calls_function(f), ""]
    out += ["", f"class {class_name(clause)}(PPDictTestCase):"]
    for i, f in enumerate(findings):
        out += ([""] if i else []) + method_lines(f, timeout)
    out += ["", "", 'if __name__ == "__main__":', "    unittest.main()", ""]
    text = re.sub(r"\n{3,}", "\n\n\n", "\n".join(out))
    check_imports(text, module)
    return text


def imported_roots(source: str) -> set[str]:
    """The top-level names a module's source imports."""
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def check_imports(source: str, module: str) -> None:
    """A regression file imports the standard library, torch and ``module``: nothing of ppaux or Hypothesis."""
    extra = imported_roots(source) - STANDARD - {module.split(".")[0]}
    assert not extra, f"a regression file imports {sorted(extra)}"
