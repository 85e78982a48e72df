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
from typing import Any, Callable

import pytest

from ppaux.testing.impl import Implementation, ImplementationError, load
from ppaux.testing.kit import check_observer
from ppaux.testing.results import ResultRecorder

MARKS = {
    "contract": "documented behaviour that SGLang has too",
    "robustness": "guarantees of the contract where SGLang differs",
    "clause(id)": "the contract clause a property checks",
    "sglang": "downloads SGLang's released wheel and runs the suite against it",
    "wire": "relays PP dicts over a channel",
    "gloo": "starts torch.distributed gloo processes on 127.0.0.1",
    "gpu": "needs CUDA",
}

IMPL_KEY = pytest.StashKey[Implementation]()


def pytest_configure(config: pytest.Config) -> None:
    for mark, doc in MARKS.items():
        config.addinivalue_line("markers", f"{mark}: {doc}")
    # Both options are always registered (by the ppaux_pytest shim): no default needed.
    spec = config.getoption("--ppaux-impl") or os.environ.get("PPAUX_IMPL")
    try:
        config.stash[IMPL_KEY] = load(spec)
    except ImplementationError as exc:
        raise pytest.UsageError(str(exc)) from None
    path = config.getoption("--ppaux-results")
    if path:
        config.pluginmanager.register(ResultRecorder(path), "ppaux-results")


def implementation(config: pytest.Config) -> Implementation:
    """The implementation that this run tests (``--ppaux-impl``, ``$PPAUX_IMPL``, or ppaux's own)."""
    return config.stash[IMPL_KEY]


def pytest_report_header(config: pytest.Config) -> str:
    return f"ppaux: implementation under test {implementation(config)!r}"


@pytest.fixture(scope="session")
def ppaux_impl(pytestconfig: pytest.Config) -> Implementation:
    """The implementation under test in this run."""
    return implementation(pytestconfig)


@pytest.fixture(scope="session")
def ppaux_observer_check(ppaux_impl: Implementation) -> Callable[..., None]:
    """:func:`ppaux.testing.check_observer` bound to this run's implementation."""
    check: Any = functools.partial(check_observer, impl=ppaux_impl)
    return check
