"""What a run's tests did, read from pytest's reports: the per-test rows ``ppaux check`` builds its
report from, with a failure's minimal example and reproduce blob as Hypothesis gives them as data."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeAlias

import pluggy
import pytest

from ppaux.report import TestOutcome
from ppaux.report.conformance import FindingKind
from ppaux.testing.hypothesis_api import FailingExample, failing_examples
from ppaux.testing.scenario import CallRecorder, Unwritable, describe

# A JSON object as json.loads gives it (a test's row, a fuzz event, a run's summary): its values are
# read by key and used as what the writer put there, unchecked.
JSONObject: TypeAlias = dict[str, Any]

# The marks a row keeps: what kind of test it is.
KINDS = ("contract", "robustness", "wire", "gloo", "gpu")


# The one attribute of a pytest report that carries ppaux's data from where the test ran (a forked
# worker, an xdist worker) to the process that reads it: pytest's reports have no field for it, and
# their serialisation keeps an attribute that is plain JSON (as Hypothesis's plugin carries its stats).
REPORT_KEY = "ppaux"


def carried(report: pytest.TestReport, part: str) -> JSONObject:
    """What was put on ``report`` under ``part`` where its test ran: ``outcome``, the test's row
    (:func:`row`); ``round``, what a fuzz round counted. Empty when nothing was."""
    found: JSONObject = (report.__dict__.get(REPORT_KEY) or {}).get(part) or {}
    return found


def carry(report: pytest.TestReport, part: str, data: JSONObject) -> None:
    """Put ``data`` on ``report`` as its ``part`` (see :func:`carried`), replacing what was there."""
    report.__dict__.setdefault(REPORT_KEY, {})[part] = data


# A test's failures as Hypothesis replayed them where the test ran: put there by MinimalExamples while
# the test runs, read by :func:`row`.
FAILING_EXAMPLES_KEY = pytest.StashKey[list[FailingExample]]()


class MinimalExamples:
    """Keeps each test's failing examples, as data, for its row (registered by whoever makes rows: the
    result recorder, a fuzz round). Its hook runs inside Hypothesis's own, whose statistics it hears."""

    NAME = "ppaux-minimal-examples"

    @classmethod
    def register(cls, config: pytest.Config) -> None:
        """Register one, unless the run has one already."""
        if not config.pluginmanager.has_plugin(cls.NAME):
            config.pluginmanager.register(cls(), cls.NAME)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with failing_examples() as found:
            item.stash[FAILING_EXAMPLES_KEY] = found
            yield


def finding(error_type: str | None) -> FindingKind | None:
    """What kind of finding a failure is, beside a broken assertion: a hang or a crash."""
    kinds: dict[str, FindingKind] = {"Hang": "hang", "Crash": "crash"}
    return kinds.get(error_type or "")


def row(
    item: pytest.Item, report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException] | None = None
) -> TestOutcome:
    """One test's outcome: its clause, kind, description and outcome; a failure's error, example and blob."""
    clause = item.get_closest_marker("clause")
    func = getattr(item, "function", None)
    doc = (getattr(item, "cls", None) or func).__doc__ if func else None
    made = TestOutcome(
        nodeid=item.nodeid,
        clause=clause.args[0] if clause else None,
        outcome="skipped" if report.skipped else ("failed" if report.failed else "passed"),
        marks=tuple(sorted({m.name for m in item.iter_markers()} & set(KINDS))),
        doc=" ".join((doc or "").split()),
    )
    if report.failed:
        # The first failure's, as a failing test's text shows the first one first.
        failing = item.stash.get(FAILING_EXAMPLES_KEY, None)
        if failing:
            # The blob as the test's settings have it: where they do not print it (print_blob), none.
            shown = failing[0].blob in report.longreprtext
            made = replace(made, example=failing[0].example, blob=failing[0].blob if shown else None)
        if excinfo is not None:
            message = str(excinfo.value).strip().splitlines()
            kind = finding(excinfo.typename)
            # A hang's or a crash's detail: where the call was stuck or died, the lines after the first.
            made = replace(
                made,
                error=f"{excinfo.typename}: {message[0] if message else ''}",
                finding=kind,
                detail="\n".join(message[1:]) if kind else None,
            )
    elif report.skipped:
        why = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        made = replace(made, error=why)
    return made


def carry_outcome(report: pytest.TestReport, outcome: TestOutcome) -> None:
    """Put the test's outcome on ``report`` (its ``outcome`` part, see :func:`carried`)."""
    carry(report, "outcome", outcome.to_json())


def carried_outcome(report: pytest.TestReport) -> TestOutcome | None:
    """The outcome put on ``report`` where its test ran (:func:`carry_outcome`), if one was."""
    found = carried(report, "outcome")
    return TestOutcome.from_json(found) if found else None


@dataclass(frozen=True)
class RecordedCalls:
    """A failing test's calls into the implementation, as code (``scenario``: its prefix, steps and
    doubles, :func:`ppaux.testing.scenario.describe`), or why they cannot be (``scenario_error``)."""

    scenario: Mapping[str, object] | None = None
    scenario_error: str | None = None

    def on(self, outcome: TestOutcome) -> TestOutcome:
        """``outcome`` with these calls (a failure's row, made where the test ran)."""
        return replace(outcome, scenario=self.scenario, scenario_error=self.scenario_error)


def scenario(calls: CallRecorder, prefix: str) -> RecordedCalls:
    """A failing test's calls into the implementation, as code, or why they cannot be."""
    if not calls.calls:
        return RecordedCalls(scenario_error="the test made no call into the implementation")
    try:
        return RecordedCalls(describe(calls.calls, prefix))
    except Unwritable as exc:
        return RecordedCalls(scenario_error=str(exc))


def split_jsonl(data: bytes) -> tuple[list[JSONObject], bytes]:
    """The rows of the complete lines of JSON-lines ``data`` (blank lines skipped) and what follows
    its last newline: a line still being written, or one torn by a writer that died mid-line."""
    *complete, rest = data.split(b"\n")
    return [json.loads(line) for line in complete if line.strip()], rest


def read_jsonl(path: str | Path) -> list[JSONObject]:
    """The rows of the JSON-lines file at ``path``: none when there is no file; blank lines skipped.
    Every row a writer finished ends with a newline (:class:`ResultRecorder`, the fuzz rounds'
    events), so a last line without one was torn by a writer that died: it is left out. A
    finished line that is not JSON raises :class:`ValueError` (json's own error)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    return split_jsonl(data)[0]


def read_outcomes(path: str | Path) -> list[TestOutcome]:
    """The tests' outcomes a :class:`ResultRecorder` wrote to ``path`` (none when it wrote nothing)."""
    return [TestOutcome.from_json(row) for row in read_jsonl(path)]


class ResultRecorder:
    """Writes one JSON line per test to ``path`` at the end of the run.

    Each row is made where the test ran (a forked child, an xdist worker) and rides on its report
    as its ``outcome`` (:func:`carry`): this process collects the rows as the reports arrive. ``calls_of(item)`` adds
    a failing test's calls into the implementation, as code (``None`` when the run records none).
    """

    def __init__(self, path: str, calls_of: Callable[[pytest.Item], RecordedCalls | None] | None = None) -> None:
        self.path = path
        self.calls_of = calls_of
        self.rows: list[TestOutcome] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or report.failed or report.skipped:
            made = row(item, report, call.excinfo)
            calls = self.calls_of(item) if report.failed and report.when == "call" and self.calls_of else None
            if calls is not None:
                made = calls.on(made)
            carry_outcome(report, made)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = carried_outcome(report)
        if found is not None:
            self.rows.append(found)

    def pytest_sessionfinish(self) -> None:
        # Bytes, UTF-8 encoded here: the file does not depend on the locale.
        Path(self.path).write_bytes("".join(json.dumps(r.to_json()) + "\n" for r in self.rows).encode())
