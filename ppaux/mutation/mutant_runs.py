"""A pytest plugin for the test runs of a mutation run (``-p ppaux.mutation.mutant_runs``, which
``ppaux mutate`` and ppaux's own mutation runs pass to mutmut).

mutmut runs each mutant's tests with ``pytest -x`` in a child forked from a server that has
collected the suite, so a mutant costs the tests it runs up to the first that fails, plus what the
child does again that the server did not do. This plugin changes what that costs, never which
tests run or what they assert:

- the cheapest tests run first: the first run that executes tests in a directory (mutmut's stats
  run) records each test's duration in :data:`DURATIONS`, and every later run orders its tests by
  them, tests without a recorded duration last;
- a mutant's run puts first the test that killed the same mutant in an earlier run (a changed
  function's mutants, rerun by an incremental run: :data:`FIRST`), and records which test kills
  each mutant (:data:`KILLERS`), which mutmut itself does not;
- the objects alive after collection are frozen (:func:`gc.freeze`): a forked child's garbage
  collections then skip them, which makes each collection (pytest's and Hypothesis's own calls to
  ``gc.collect()`` included) a matter of milliseconds instead of a quarter of a second.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest

# In the directory the runs start in (mutmut's mutants/).
DURATIONS = "ppaux-test-durations.json"
# A file per mutant, named by it, holding the node id of the first test that failed with it.
KILLERS = "ppaux-killers"
# {mutant: node id}: the test each mutant's run puts first (written before the run).
FIRST = "ppaux-first-tests.json"


def mutant_under_test() -> str:
    """The mutant this test run is for, as mutmut names it; empty for its stats, clean and forced-fail runs."""
    name = os.environ.get("MUTANT_UNDER_TEST", "")
    return name if "__mutmut_" in name else ""


def recorded_killers(directory: Path) -> dict[str, str]:
    """``{mutant: node id of the test that killed it}`` as the runs in ``directory`` recorded them."""
    killers = directory / KILLERS
    if not killers.is_dir():
        return {}
    return {path.name: path.read_text(encoding="utf-8") for path in killers.iterdir()}


def killer_first(items: list[pytest.Item], killer: str | None) -> list[pytest.Item]:
    """``items`` with the test ``killer`` names first, the others in their order."""
    return sorted(items, key=lambda item: item.nodeid != killer)


def recorded_durations(directory: Path) -> dict[str, float]:
    """``{nodeid: seconds}`` as the first run in ``directory`` recorded them; empty before it."""
    try:
        return dict(json.loads((directory / DURATIONS).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def cheapest_first(items: list[pytest.Item], durations: dict[str, float]) -> list[pytest.Item]:
    """``items`` by recorded duration, shortest first; those without one last, in their order."""
    return sorted(items, key=lambda item: (item.nodeid not in durations, durations.get(item.nodeid, 0.0)))


class DurationRecorder:
    """Each test's duration in this run, written to :data:`DURATIONS` if no earlier run wrote it."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / DURATIONS
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.seconds[report.nodeid] = report.duration

    def pytest_sessionfinish(self) -> None:
        if self.seconds and not self.path.exists():
            self.path.write_text(json.dumps(self.seconds, indent=0, sort_keys=True), encoding="utf-8")


class KillRecorder:
    """The first test that fails in a mutant's run, written to :data:`KILLERS` under the mutant's name."""

    def __init__(self, directory: Path, mutant: str) -> None:
        self.path = directory / KILLERS / mutant

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and not self.path.exists():
            self.path.parent.mkdir(exist_ok=True)
            self.path.write_text(report.nodeid, encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(DurationRecorder(config.invocation_params.dir), "ppaux-test-durations")
    if mutant_under_test():
        config.pluginmanager.register(KillRecorder(config.invocation_params.dir, mutant_under_test()), "ppaux-killers")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    durations = recorded_durations(config.invocation_params.dir)
    if durations:
        items[:] = cheapest_first(items, durations)
    try:
        first = json.loads((config.invocation_params.dir / FIRST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    killer = first.get(mutant_under_test())
    if killer:
        items[:] = killer_first(items, killer)


def pytest_collection_finish() -> None:
    gc.freeze()
