"""Collecting the shipped suite asks for ppaux: this registers the suite's marks and activates ppaux's
pytest plugin in the run (the entry point, ``ppaux_pytest``, stays inert in runs that never collect a
ppaux test)."""

from __future__ import annotations

import pytest

import ppaux_pytest
from ppaux.conformance import MARKS


def pytest_configure(config: pytest.Config) -> None:
    for mark, doc in MARKS.items():
        config.addinivalue_line("markers", f"{mark}: {doc}")
    if ppaux_pytest.LOADED in config.stash:
        ppaux_pytest.activate_from_conftest(config)


def pytest_collection_modifyitems(config: pytest.Config) -> None:
    if ppaux_pytest.LOADED not in config.stash:
        # The tests need the plugin's fixtures: one line instead of an error per test.
        raise pytest.UsageError(
            "ppaux.conformance needs ppaux's pytest plugin, which this run did not load "
            "(-p no:ppaux, or PYTEST_DISABLE_PLUGIN_AUTOLOAD without -p ppaux_pytest)"
        )
