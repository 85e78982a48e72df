"""ppaux's own test run: its Hypothesis profiles and marks, nested sessions, SGLang-release and slow end-to-end tests
only when asked, no process left behind."""

from __future__ import annotations

import gc
import multiprocessing
import os
import re

import pytest
from hypothesis import settings

from ppaux.conformance import MARKS as SUITE_MARKS
from ppaux.testing.profiles import TUNINGS, tuned

pytest_plugins = ["pytester"]

# This project's profiles are ppaux's tunings: its own tests draw as the shipped suite's do (the plugin
# registers no profile; a project's profiles are its conftest's to register).
for _name in TUNINGS:
    settings.register_profile(_name, tuned(_name))

# Its own marks, and the suite's: its tests import the suite's modules.
MARKS = {
    **SUITE_MARKS,
    "sglang": "downloads SGLang's released wheel and runs the suite against it",
    "wire": "relays PP dicts over a channel",
    "gloo": "starts torch.distributed gloo processes on 127.0.0.1",
    "gpu": "needs CUDA",
}

# Marks whose tests run only when asked for: `-m MARK` (any -m expression that names the mark
# without negating it) or the environment variable.
OPT_IN = {
    "sglang": ("PPAUX_SGLANG", "downloads an SGLang release"),
    "slow": ("PPAUX_SLOW", "an end-to-end run of the fuzz job or of mutmut (half a minute or more)"),
    # Left out of the quick run only: in-process, they are what kills the mutants of ppaux mutate's
    # command line, so the package mutation run asks for them.
    "subprocess": (
        "PPAUX_SUBPROCESS",
        "starts processes of its own and waits on them: the suite, a baseline, fuzz workers, a gloo world, a browser, "
        "or a forked child waited out to its deadline (a second or more each)",
    ),
    # The nightly workflow runs these; CI a cheaper test of the same path (or a sample of the table),
    # so that .ci/run stays well under ten minutes on two cores.
    "thorough": ("PPAUX_THOROUGH", "the longest end-to-end runs and the rest of a table-driven one beyond CI's sample"),
}


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which makes a bare -n N mean --dist load
def pytest_cmdline_main(config: pytest.Config) -> None:
    # A bare -n N (the README's) runs these tests as --dist worksteal, as .ci/run did: an idle worker
    # takes queued tests from the busy one, so the workers end together, not seconds apart
    # (docs/benchmarks.md). An explicit --dist is kept.
    option = config.option
    if getattr(option, "numprocesses", None) and option.dist == "no" and not option.distload:
        option.dist = "worksteal"


@pytest.hookimpl(trylast=True)  # after ppaux's plugin loaded the implementation under test, and torch
def pytest_configure(config: pytest.Config) -> None:
    # torch's heap, frozen before collection: the full collections while the test modules load no
    # longer walk it (about a second in each process of the run).
    gc.freeze()
    for mark in ("slow", "subprocess", "thorough"):
        config.addinivalue_line("markers", f"{mark}: {OPT_IN[mark][1]}")
    for mark, doc in MARKS.items():
        config.addinivalue_line("markers", f"{mark}: {doc}")


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    markexpr = config.getoption("markexpr") or ""
    for mark, (variable, why) in OPT_IN.items():
        if re.search(rf"(?<!not )\b{mark}\b", markexpr) or os.environ.get(variable) == "1":
            continue
        skip = pytest.mark.skip(reason=f"{why}: run with -m {mark} (or {variable}=1)")
        for item in items:
            if item.get_closest_marker(mark):
                item.add_marker(skip)


def pytest_collection_finish(session: pytest.Session) -> None:
    # What collection loaded (torch, Hypothesis, every test module) lives to the end of the run:
    # frozen, it is no longer walked by each full collection (a fifth of a second each, dozens a run).
    gc.freeze()


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
    # Imported here, where tests run: the controller of a -n run starts its workers without torch.
    from ppaux.relay import gloo

    yield
    gloo.stop_all()
    assert multiprocessing.active_children() == []
