"""The pytest plugin proper (registered by the ``ppaux_pytest`` entry point): ppaux's marks, the
implementation under test bound to each run, its fixtures, and per-test result rows for
``ppaux check``.

Everything a run decides lives in that run's ``config.stash``, never in a module global: a
nested pytest session (pytester, ``ppaux check``'s child) has its own config and cannot change
which implementation the outer run tests.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import pytest

from ppaux.isolation import DEFAULT_TIMEOUT, Guard, can_fork, parse_timeout
from ppaux.testing.containment import is_contained, run_contained
from ppaux.testing.impl import Implementation, ImplementationError, load
from ppaux.testing.kit import KitResult, check_observer
from ppaux.testing.results import JSONObject, ResultRecorder, scenario
from ppaux.testing.scenario import CallRecorder

MARKS = {
    "contract": "documented behaviour that SGLang has too",
    "robustness": "guarantees of the contract where SGLang differs",
    "clause(id)": "the contract clause a property checks",
    "sglang": "downloads SGLang's released wheel and runs the suite against it",
    "wire": "relays PP dicts over a channel",
    "gloo": "starts torch.distributed gloo processes on 127.0.0.1",
    "gpu": "needs CUDA",
    "isolated": "runs in a forked child, as the shipped suite's tests do: a crash or hang in it is a finding",
}

IMPL_KEY = pytest.StashKey[Implementation]()
GUARD_KEY = pytest.StashKey[Guard]()
ISOLATION_KEY = pytest.StashKey[bool]()
RECORDER_KEY = pytest.StashKey[CallRecorder | None]()


def pytest_configure(config: pytest.Config) -> None:
    for mark, doc in MARKS.items():
        config.addinivalue_line("markers", f"{mark}: {doc}")
    # Both options are always registered (by the ppaux_pytest shim): no default needed.
    spec = config.getoption("--ppaux-impl") or os.environ.get("PPAUX_IMPL")
    try:
        config.stash[IMPL_KEY] = load(spec)
    except ImplementationError as exc:
        raise pytest.UsageError(str(exc)) from None
    timeout = config.getoption("--ppaux-timeout") or config.getini("ppaux_timeout") or DEFAULT_TIMEOUT
    try:
        config.stash[GUARD_KEY] = Guard(parse_timeout(timeout))
    except ValueError as exc:
        raise pytest.UsageError(f"--ppaux-timeout: {exc}") from None
    isolation = config.getoption("--ppaux-isolation") or config.getini("ppaux_isolation") or "test"
    if isolation not in ("test", "off"):
        raise pytest.UsageError(f"ppaux_isolation = {isolation!r}; expected 'test' or 'off'")
    config.stash[ISOLATION_KEY] = isolation == "test" and can_fork()
    config.stash[RECORDER_KEY] = CallRecorder() if config.getoption("--ppaux-record-calls") else None
    path = config.getoption("--ppaux-results")
    if path:
        config.pluginmanager.register(ResultRecorder(path, recorded_calls), "ppaux-results")


def implementation(config: pytest.Config) -> Implementation:
    """The implementation that this run tests (``--ppaux-impl``, ``$PPAUX_IMPL``, or ppaux's own)."""
    return config.stash[IMPL_KEY]


def guard(config: pytest.Config) -> Guard:
    """The per-call limit of this run (``--ppaux-timeout``) and the hangs it has seen."""
    return config.stash[GUARD_KEY]


def pytest_report_header(config: pytest.Config) -> str:
    isolation = "each test of ppaux.conformance in a forked child" if config.stash[ISOLATION_KEY] else "in process"
    return (
        f"ppaux: implementation under test {implementation(config)!r}; per-call limit {guard(config).timeout:g} s; "
        f"isolation: {isolation}"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if not (item.config.stash[ISOLATION_KEY] and is_contained(item)):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in run_contained(item, nextitem, guard(item.config)):
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    recorder = item.config.stash[RECORDER_KEY]
    if recorder is not None:
        recorder.start_test()


def recorded_calls(item: pytest.Item) -> JSONObject | None:
    """A failing test's calls into the implementation as code (``scenario``, or ``scenario_error``
    saying why not), when the run records them (``--ppaux-record-calls``); else ``None``."""
    recorder = item.config.stash[RECORDER_KEY]
    return None if recorder is None else scenario(recorder, implementation(item.config).prefix)


@pytest.fixture(scope="session")
def ppaux_impl(pytestconfig: pytest.Config) -> Implementation:
    """The implementation under test in this run; every add and pop runs under the run's per-call limit."""
    impl = implementation(pytestconfig).guarded(guard(pytestconfig))
    recorder = pytestconfig.stash[RECORDER_KEY]
    return impl if recorder is None else impl.recorded(recorder)


@pytest.fixture(scope="session")
def ppaux_observer_check(ppaux_impl: Implementation) -> Callable[..., KitResult]:
    """:func:`ppaux.testing.check_observer` bound to this run's implementation."""
    check: Callable[..., KitResult] = functools.partial(check_observer, impl=ppaux_impl)
    return check
