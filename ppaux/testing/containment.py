"""Each test of the shipped suite in a forked child of the pytest process, so that an
implementation that kills its process or hangs where no signal reaches it costs one test, not
the run (pytest-forked's idea, with pytest-xdist's "a dead worker is a failed test").

The child runs the test's whole protocol and sends its reports back through pytest's own report
serialisation hooks. A child that dies, or is killed at its call's deadline, is run again with
every call into the implementation isolated in a child of its own (``guard.isolated``): the crash
or hang is then an ordinary failure that Hypothesis shrinks, saves and prints with its blob.
Hypothesis draws each test's seed from a generator both children inherit unchanged, so the
second run meets the same examples as the first.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

from ppaux.isolation import ChildOutcome, Guard
from ppaux.testing.hypothesis_api import replace_seed_generator
from ppaux.testing.results import JSONObject, row
from ppaux.testing.suite import SUITE


def is_suite_test(item: pytest.Item) -> bool:
    """A test of the shipped suite (:mod:`ppaux.conformance`)."""
    module = getattr(item, "module", None)
    name = getattr(module, "__name__", "")
    return name == SUITE or name.startswith(SUITE + ".")


def is_contained(item: pytest.Item) -> bool:
    """The shipped suite's tests, whose code under test is wrong by assumption, and any test marked
    ``@pytest.mark.isolated`` (a plugin author's own properties over ``ppaux_impl``)."""
    return is_suite_test(item) or item.get_closest_marker("isolated") is not None


def run_contained(item: pytest.Item, nextitem: pytest.Item | None, guard: Guard) -> list[pytest.TestReport]:
    """The test's reports, from a forked child; a death becomes the test's failure."""
    # The child tears down what it set up, never what this process holds (session fixtures set up
    # by earlier tests here): those the session's own teardown ends.
    upto: Any = nextitem if nextitem is not None else item.session
    config = item.config

    def work(isolated: bool) -> list[JSONObject]:
        guard.isolated = isolated
        with guard.installed():
            reports = runtestprotocol(item, log=False, nextitem=upto)
        return [config.hook.pytest_report_to_serializable(config=config, report=r) for r in reports]

    prime_seed()
    first, answer = guard.supervised(lambda: work(False))
    if first.finished:
        return _reports(config, answer)
    second, answer = guard.supervised(lambda: work(True))
    if not second.finished:
        return [_died(item, first, second)]
    reports = _reports(config, answer)
    for report in reports:
        if report.when == "call" and report.passed:
            report.outcome = "failed"
            report.longrepr = (
                f"the test's process {first.describe()}, but it passed when run again with each call "
                "isolated: the crash or hang depends on state outside the drawn example"
            )
            report.ppaux_row = dict(  # type: ignore[attr-defined]  # see ResultRecorder
                row(item, report), error=f"{kind(first)}: the test's process {first.describe()}", finding=kind(first)
            )
    return reports


def prime_seed() -> None:
    """Hypothesis draws the seed of a run without one from a generator it makes on first use
    (``random.Random()``): make it before forking, so that both children of a test draw the same
    seed. No Hypothesis test runs for it, so none is observed (a fuzz round counts no example)."""
    generator = replace_seed_generator(None)
    replace_seed_generator(random.Random() if generator is None else generator)


def _reports(config: pytest.Config, answer: list[JSONObject]) -> list[pytest.TestReport]:
    return [config.hook.pytest_report_from_serializable(config=config, data=d) for d in answer]


def _died(item: pytest.Item, first: ChildOutcome, second: ChildOutcome) -> pytest.TestReport:
    """The failure of a test whose process died even with every call isolated: outside the calls
    into the implementation (the test's own code, a strategy), so no example could be shrunk."""
    how = (
        "was stopped: no call into the implementation returned or ended for too long"
        if second.stopped
        else second.describe()
    )
    text = f"{kind(second)}: the test's process {how}, outside any single call into the implementation under test"
    if second.dump.strip():
        text += "\n" + second.dump.strip()
    report = pytest.TestReport(
        item.nodeid,
        item.location,
        {k: 1 for k in item.keywords},
        "failed",
        text,
        "call",
        duration=first.seconds + second.seconds,
    )
    head, _, detail = text.partition("\n")
    report.ppaux_row = dict(row(item, report), error=head, finding=kind(second), detail=detail)  # type: ignore[attr-defined]
    return report


def kind(outcome: ChildOutcome) -> str:
    return "hang" if outcome.stopped else "crash"
