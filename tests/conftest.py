"""Suite-wide fixtures."""

from __future__ import annotations

import multiprocessing

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session", autouse=True)
def _gloo_workers_are_stopped():
    """Every gloo worker process the suite started is killed and joined at the end."""
    yield
    from ppaux import gloo

    gloo.stop_all()
    assert multiprocessing.active_children() == []
