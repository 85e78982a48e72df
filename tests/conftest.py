"""ppaux's own test run: nested sessions, SGLang-release tests only when asked, no process left behind."""

from __future__ import annotations

import multiprocessing
import os
import re

import pytest
from hypothesis import settings

from ppaux.relay import gloo

pytest_plugins = ["pytester"]

# `-m sglang` (or any -m expression that names the mark without negating it) opts in.
_ASKS_FOR_SGLANG = re.compile(r"(?<!not )\bsglang\b")


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Tests that download an SGLang release run only when asked for: `-m sglang` or PPAUX_SGLANG=1."""
    if _ASKS_FOR_SGLANG.search(config.getoption("markexpr") or "") or os.environ.get("PPAUX_SGLANG") == "1":
        return
    skip = pytest.mark.skip(reason="downloads an SGLang release: run with -m sglang (or PPAUX_SGLANG=1)")
    for item in items:
        if item.get_closest_marker("sglang"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _nested_sessions_keep_the_outer_profile(request):
    """A nested pytest session's --hypothesis-profile must not become the outer run's profile."""
    if "pytester" not in request.fixturenames:
        yield
        return
    name = settings.get_current_profile_name()
    yield
    settings.load_profile(name)


@pytest.fixture(scope="session", autouse=True)
def _gloo_workers_are_stopped():
    """Every gloo worker process the suite started is killed and joined at the end."""
    yield
    gloo.stop_all()
    assert multiprocessing.active_children() == []
