"""The shipped suite, and the one way ppaux's own commands run it: its name, its marks, where it lies,
and the pytest options of a run (``ppaux check``, the fuzz rounds and ``ppaux mutate`` build their
runs here), and the in-process run ``ppaux check`` makes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import settings

from ppaux.report import TestOutcome
from ppaux.testing.profiles import suite_run_args, whole_count
from ppaux.testing.results import read_outcomes

__all__ = [
    "DEFAULT_MARKS",
    "MOST_WORKERS",
    "ROOT",
    "SUITE",
    "SuiteNotRun",
    "SuiteRun",
    "installed_suite",
    "own_environment",
    "run_installed",
    "run_in_process",
    "parse_workers",
    "usable_cores",
    "suite_files",
    "usable_workers",
]

SUITE = "ppaux.conformance"
# The suite's tests of the contract: the ones every check and mutation run selects unless told otherwise.
DEFAULT_MARKS = "contract or robustness"
# The checkout (or site-packages, for an install) that holds the ppaux package: node ids read
# "ppaux/conformance/test_add.py::..." from a checkout and from a wheel alike.
ROOT = Path(__file__).resolve().parents[2]
_SUITE_DIR = ROOT / "ppaux" / "conformance"


# ppaux check's default: a lane per core this process may run on, at most this many (the suite's few
# dozen tests gain little from more, and each lane holds a copy-on-write image of the process).
MOST_WORKERS = 4


def parse_workers(text: str | int) -> int:
    """How many workers run the contained tests at once (``--ppaux-workers``): a whole number >= 1.
    ``ValueError`` with the one-line reason otherwise."""
    return whole_count(text, "workers")


def usable_cores() -> int:
    """The cores this process may run on: a container's or taskset's share, not the host's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def usable_workers() -> int:
    """A worker for each core this process may run on, at most :data:`MOST_WORKERS`."""
    return min(MOST_WORKERS, usable_cores())


def suite_files() -> list[Path]:
    """The suite's test modules, as installed (``ppaux mutate`` copies them into its scratch project)."""
    return sorted(_SUITE_DIR.glob("test_*.py"))


# The suite's runs load the two plugins they need, not every plugin of the caller's environment
# (pytest-randomly would reorder and reseed them, pytest-cov measure them; loading them all is a
# sixth of a check). The variable, not --disable-plugin-autoload: pytest 8.0 to 8.3 have no flag.
OWN_PLUGINS_ONLY = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
_OWN_PLUGINS = ["-p", "_hypothesis_pytestplugin", "-p", "ppaux_pytest"]
# Options the caller gives their own runs, as their ``addopts`` does (a CI job's --cov=PKG): an
# option of a plugin the suite's run does not load would stop it with a usage error.
_CALLERS_OPTIONS = "PYTEST_ADDOPTS"


def own_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` as a run of the installed suite gets it: no plugin loaded but the ones it names, and
    none of the caller's ``PYTEST_ADDOPTS``."""
    return {**{k: v for k, v in environ.items() if k != _CALLERS_OPTIONS}, **OWN_PLUGINS_ONLY}


def installed_suite(ini: Path) -> list[str]:
    """pytest's arguments that select the installed suite, under ``ini`` (an empty config of ppaux's own:
    the caller's ``addopts`` and ``conftest.py`` are theirs, not the suite's), naming the plugins it
    needs: run it in :func:`own_environment`."""
    return ["--pyargs", SUITE, "-c", str(ini), "--rootdir", str(ROOT), "--confcutdir", str(_SUITE_DIR), *_OWN_PLUGINS]


@dataclass(frozen=True)
class SuiteRun:
    """One run of the suite by a ppaux command: against what, which tests, under which settings.

    ``tuning`` names ppaux's tuning of the suite's Hypothesis settings (over Hypothesis's ``default``
    profile); ``None`` leaves them to a profile the run loads itself (the fuzz rounds' own).
    ``marks=None`` selects every test of the suite. ``isolation``: ``--ppaux-isolation`` ("test", the
    default, or "off"); ``workers``: ``--ppaux-workers`` (how many contained tests run at once; default 1).
    """

    impl: str | None = None
    marks: str | None = DEFAULT_MARKS
    tests: str | None = None
    timeout: float | None = None
    tuning: str | None = "ci"
    max_examples: int | None = None
    record_calls: bool = False
    results: str | None = None
    junit: str | None = None
    isolation: str | None = None
    workers: int | None = None

    def options(self) -> list[str]:
        """The pytest options of this run, wherever the suite lies."""
        options = ["-m", self.marks] if self.marks is not None else []
        if self.tuning is not None:
            options += suite_run_args(self.tuning, self.max_examples)
        if self.results is not None:
            options += ["--ppaux-results", self.results]
        if self.timeout is not None:
            options += ["--ppaux-timeout", repr(self.timeout)]
        if self.impl:
            options += ["--ppaux-impl", self.impl]
        if self.record_calls:
            options.append("--ppaux-record-calls")
        if self.tests:
            options += ["-k", self.tests]
        if self.junit:
            options += ["--junitxml", self.junit]
        if self.isolation is not None:
            options += ["--ppaux-isolation", self.isolation]
        if self.workers is not None and self.isolation != "off":  # in process, there is no worker
            options += ["--ppaux-workers", str(self.workers)]
        return options


def _suite_modules() -> list[str]:
    return [name for name in sys.modules if name.startswith(SUITE + ".")]


def run_in_process(argv: list[str]) -> tuple[int, str]:
    """Run pytest on ``argv`` in this process, as ``python -m pytest`` would from the caller's
    directory; return its exit status and everything it printed.

    In process, because a second interpreter would import torch and Hypothesis again: a third of
    the run on two cores. The suite's modules are imported afresh, so that pytest rewrites their
    asserts, and the caller gets its own modules (and its Hypothesis profile) back.
    """
    profile = settings.get_current_profile_name()
    callers = {name: sys.modules.pop(name) for name in _suite_modules()}
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            status = pytest.main(argv)
    finally:
        settings.load_profile(profile)
        # `import ppaux.conformance.test_x as m` reads the package's attribute, which the run's import set.
        package = vars(sys.modules[SUITE]) if SUITE in sys.modules else {}
        for name in _suite_modules():
            del sys.modules[name]
            package.pop(name[len(SUITE) + 1 :], None)
        sys.modules.update(callers)
        package.update({name[len(SUITE) + 1 :]: module for name, module in callers.items()})
    return int(status), printed.getvalue()


# pytest's words for a -m or -k expression it cannot parse (stable since pytest 6).
_WRONG_EXPRESSION = re.compile(r"ERROR: Wrong expression passed to '-([mk])': (.*)")
# This process imported Hypothesis (and ppaux) before pytest could rewrite their asserts; the
# suite's own modules it imports afresh and rewrites, so the warning says nothing about the run.
_QUIET = ["-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning"]


class SuiteNotRun(Exception):
    """The suite's run ended before its tests ran: one line; ``option`` names the bad selection
    (``marks`` or ``tests``) where that was the cause; ``printed``: pytest's own words."""

    def __init__(self, line: str, option: str | None = None, printed: str = "") -> None:
        super().__init__(line)
        self.option, self.printed = option, printed


def installed_args(run: SuiteRun, ini: Path) -> list[str]:
    """pytest's arguments for ``run`` of the installed suite under the empty config ``ini``."""
    return installed_suite(ini) + _QUIET + run.options()


def run_installed(run: SuiteRun) -> list[TestOutcome]:
    """Run the installed suite in this process (:func:`run_in_process`) under an empty config of
    its own and return each test's outcome, as recorded where the test ran. :class:`SuiteNotRun`
    when no test could run (a bad expression, a collection or usage error)."""
    with tempfile.TemporaryDirectory() as tmp:
        results, ini = Path(tmp) / "results.jsonl", Path(tmp) / "pytest.ini"
        ini.write_bytes(b"[pytest]\n")
        with mock.patch.dict(os.environ, own_environment(os.environ), clear=True):  # the caller's back after
            status, printed = run_in_process(installed_args(dataclasses.replace(run, results=str(results)), ini))
        outcomes = read_outcomes(results)
    if status not in (0, 1):
        wrong = _WRONG_EXPRESSION.search(printed)
        if wrong:
            option = "marks" if wrong.group(1) == "m" else "tests"
            raise SuiteNotRun(f"not a valid pytest -{wrong.group(1)} expression: {wrong.group(2)}", option, printed)
        raise SuiteNotRun(f"the suite did not run (pytest exit {status})", None, printed)
    return outcomes
