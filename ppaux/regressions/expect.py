"""What the contract expects of a counterexample's calls: each step run against ppaux's reference,
on the very doubles a regression test file defines, and written down as that file's assertions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import torch

from ppaux.core.errors import AuxiliaryPPError
from ppaux.regressions.doubles import source as doubles_source
from ppaux.testing.impl import reference
from ppaux.testing.scenario import key_code, literal

FUNCTIONS = {"add": "add_auxiliary_output_to_pp_tensors", "pop": "pop_auxiliary_output_from_pp_tensors"}


class ExpectedStep(TypedDict):
    """A step of a regression test (see :func:`expected_steps`)."""

    op: str
    setup: list[str]
    call: str
    raised: list[str] | None
    checks: list[str]


class _Run:
    """The file's namespace while the reference runs its steps; names values back by identity."""

    def __init__(self, scenario: Mapping[str, Any]) -> None:
        self.prefix = scenario["prefix"]
        # Any: what the file's lines define, values of every type.
        self.ns: dict[str, Any] = {"torch": torch, "_OUTPUT_PREFIX": self.prefix}
        exec(doubles_source(scenario["doubles"]), self.ns)  # noqa: S102 - the file's own classes
        self.defined: list[str] = []

    def setup(self, lines: list[str]) -> None:
        for line in lines:
            exec(line, self.ns)  # noqa: S102 - code describe() wrote
            self.defined.append(line.split(" = ", 1)[0])

    def name_of(self, value: object) -> str | None:
        return next((name for name in self.defined if self.ns[name] is value), None)

    def value_code(self, value: object) -> str:
        name = self.name_of(value)
        # A tensor always has a name: the reference makes none, and literal() refuses one.
        return name if name is not None else literal(value)

    def entries(self, mapping: Mapping[object, object]) -> str:
        pairs = [f"({key_code(k, self.prefix)}, {self.value_code(v)})" for k, v in mapping.items()]
        return "[" + ", ".join(pairs) + "]"


def _raised(run: _Run, exc: BaseException) -> list[str]:
    for name in run.defined:
        if getattr(run.ns[name], "error", None) is exc:
            return [f"self.assertIs(raised.exception, {name}.error)"]
    # The reference raises its documented errors and lets the doubles' own through: nothing else.
    assert isinstance(exc, AuxiliaryPPError), f"the reference raised {type(exc).__name__}: {exc}"
    return [
        "self.assertIsInstance(raised.exception, RuntimeError)",
        f"self.assertEqual(str(raised.exception), {str(exc)!r})",
    ]


def _double_checks(run: _Run, arg: str) -> list[str]:
    """What the contract says about the output's or observer's calls after the step."""
    obj: object = run.ns.get(arg)
    if hasattr(obj, "handed"):
        checks = [f"self.assertEqual(len({arg}.handed), {len(obj.handed)})"]
        if obj.handed:
            checks.append(f"self.assertEntries({arg}.handed[-1], {run.entries(obj.handed[-1])})")
        return checks
    if hasattr(obj, "calls"):
        return [f"self.assertEqual({arg}.calls, {obj.calls})"]
    return []


def expected_steps(scenario: Mapping[str, Any]) -> list[ExpectedStep]:
    """Each step with the lines that make it and check it as the contract says, from the reference's run.

    Step: ``setup`` (definitions), ``call`` (the call's code), ``raised`` (``None`` or the
    assertions about the exception, which refer to it as ``raised.exception``), ``checks``.
    """
    run = _Run(scenario)
    impl = reference(run.prefix)
    out: list[ExpectedStep] = []
    for step in scenario["steps"]:
        run.setup(step["setup"])
        tensors, arg = run.ns[step["dict"]], eval(step["arg"], run.ns)  # noqa: S307 - code describe() wrote
        call = f"{FUNCTIONS[step['op']]}({step['dict']}, {step['arg']})"
        raised: list[str] | None = None
        checks: list[str] = []
        try:
            result = getattr(impl, step["op"])(tensors, arg)
        except Exception as exc:
            raised = _raised(run, exc)
        else:
            if step["op"] == "pop":
                checks.append(
                    "self.assertIsNone(result)"
                    if result is None
                    else f"self.assertIs(result, {step['arg']}.returned[-1])"
                )
        checks += _double_checks(run, step["arg"])
        checks.append(f"self.assertEntries({step['dict']}, {run.entries(tensors)})")
        out.append({"op": step["op"], "setup": step["setup"], "call": call, "raised": raised, "checks": checks})
    return out
