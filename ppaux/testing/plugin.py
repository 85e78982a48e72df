"""The pytest plugin proper, registered in a run by the ``ppaux_pytest`` entry point once the run asks
for ppaux (:func:`ppaux_pytest.activate`): ppaux's marks, the implementation under test bound to the
run, the settings of the shipped suite's tests, containment, and per-test result rows for
``ppaux check``.

Everything a run decides lives in that run's ``config.stash``, never in a module global: a
nested pytest session (pytester, ``ppaux check``'s child) has its own config and cannot change
which implementation the outer run tests, or under which settings.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Generator

import pytest
from hypothesis import settings
from ppaux_strategies.scope import Scope, Swarm, use_scope

from ppaux.isolation import DEFAULT_TIMEOUT, Guard, can_fork, parse_timeout
from ppaux.testing.calls import SuiteGuard
from ppaux.testing.containment import ForkServer, forks_usefully, is_contained, is_suite_test
from ppaux.testing.depth import DepthError, read_depth
from ppaux.testing.impl import Implementation, ImplementationError, load
from ppaux.testing.kit import KitResult, check_observer
from ppaux.testing.lanes import Lanes
from ppaux.testing.profiles import SuiteSettings, UnknownTuning, check_tuning, parse_max_examples, resolve, under
from ppaux.testing.results import MinimalExamples, RecordedCalls, ResultRecorder, scenario
from ppaux.testing.scenario import CallRecorder
from ppaux.testing.suite import parse_workers

IMPL_KEY = pytest.StashKey[Implementation]()
GUARD_KEY = pytest.StashKey[Guard]()
ISOLATION_KEY = pytest.StashKey[bool]()
# How many workers run the contained tests at once (lanes, ppaux.testing.lanes).
WORKERS_KEY = pytest.StashKey[int]()
RECORDER_KEY = pytest.StashKey[CallRecorder | None]()
# What --ppaux-profile and --ppaux-max-examples asked for, and the settings made of them on first use
# (after Hypothesis's own plugin has loaded --hypothesis-profile).
ASKED_KEY = pytest.StashKey[tuple[str | None, int | None]]()
SETTINGS_KEY = pytest.StashKey[SuiteSettings]()
# The scope and swarm configuration asked for (--ppaux-scope, --ppaux-swarm), and what they make on first use.
ASKED_DEPTH_KEY = pytest.StashKey[tuple[str | None, str | None]]()
DEPTH_KEY = pytest.StashKey[tuple[Scope, Swarm | None]]()
# Whether the run's header line was shown at the session's start (activated by an option), or is still to show.
HEADER_KEY = pytest.StashKey[bool]()
# The worker that runs this process's contained tests, started at the first of them.
SERVER_KEY = pytest.StashKey[ForkServer | Lanes]()


def pytest_configure(config: pytest.Config) -> None:
    spec = config.getoption("--ppaux-impl") or os.environ.get("PPAUX_IMPL")
    try:
        config.stash[IMPL_KEY] = load(spec)
    except ImplementationError as exc:
        raise pytest.UsageError(str(exc)) from None
    timeout = config.getoption("--ppaux-timeout") or config.getini("ppaux_timeout") or DEFAULT_TIMEOUT
    try:
        config.stash[GUARD_KEY] = SuiteGuard(parse_timeout(timeout))
    except ValueError as exc:
        raise pytest.UsageError(f"--ppaux-timeout: {exc}") from None
    isolation = config.getoption("--ppaux-isolation") or config.getini("ppaux_isolation") or "test"
    if isolation not in ("test", "off"):
        raise pytest.UsageError(f"ppaux_isolation = {isolation!r}; expected 'test' or 'off'")
    config.stash[ISOLATION_KEY] = isolation == "test" and can_fork()
    workers = config.getoption("--ppaux-workers") or config.getini("ppaux_workers") or "1"
    try:
        config.stash[WORKERS_KEY] = parse_workers(workers)
    except ValueError as exc:
        raise pytest.UsageError(f"--ppaux-workers: {exc}") from None
    config.stash[RECORDER_KEY] = CallRecorder() if config.getoption("--ppaux-record-calls") else None
    config.stash[ASKED_KEY] = _asked_settings(config)
    config.stash[ASKED_DEPTH_KEY] = (config.getoption("--ppaux-scope"), config.getoption("--ppaux-swarm"))
    try:
        # Checked now (one line for a bad value); the tuning's default scope is known on first use.
        read_depth(*config.stash[ASKED_DEPTH_KEY], None)
    except DepthError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[HEADER_KEY] = False
    path = config.getoption("--ppaux-results")
    if path:
        config.pluginmanager.register(ResultRecorder(path, recorded_calls), "ppaux-results")
        MinimalExamples.register(config)


def _asked_settings(config: pytest.Config) -> tuple[str | None, int | None]:
    tuning = config.getoption("--ppaux-profile") or config.getini("ppaux_profile") or None
    examples = config.getoption("--ppaux-max-examples") or config.getini("ppaux_max_examples") or None
    try:
        return check_tuning(tuning), parse_max_examples(examples)
    except ValueError as exc:
        option = "--ppaux-profile" if isinstance(exc, UnknownTuning) else "--ppaux-max-examples"
        raise pytest.UsageError(f"{option}: {exc}") from None


def implementation(config: pytest.Config) -> Implementation:
    """The implementation that this run tests (``--ppaux-impl``, ``$PPAUX_IMPL``, or ppaux's own)."""
    return config.stash[IMPL_KEY]


def guard(config: pytest.Config) -> Guard:
    """The per-call limit of this run (``--ppaux-timeout``) and the hangs it has seen."""
    return config.stash[GUARD_KEY]


def suite_settings(config: pytest.Config) -> SuiteSettings:
    """The Hypothesis settings of the shipped suite's tests in this run (:mod:`ppaux.testing.profiles`)."""
    made = config.stash.get(SETTINGS_KEY, None)
    if made is None:
        tuning, examples = config.stash[ASKED_KEY]
        made = resolve(settings.default or settings(), settings.get_current_profile_name(), tuning, examples)
        config.stash[SETTINGS_KEY] = made
    return made


def suite_depth(config: pytest.Config) -> tuple[Scope, Swarm | None]:
    """The scope and swarm configuration of the shipped suite's tests in this run (:mod:`ppaux.testing.depth`)."""
    made = config.stash.get(DEPTH_KEY, None)
    if made is None:
        made = read_depth(*config.stash[ASKED_DEPTH_KEY], suite_settings(config).tuning)
        config.stash[DEPTH_KEY] = made
    return made


def collected(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each of the shipped suite's property tests, built again under this run's settings (called by the
    entry point once the run's items are known)."""
    run = suite_settings(config).settings
    for item in items:
        if isinstance(item, pytest.Function) and is_suite_test(item):
            copy = under(item.obj, run)
            if copy is not None:
                item.obj = copy


def _header(config: pytest.Config) -> str:
    isolation = (
        "the tests of ppaux.conformance in a supervised forked worker" if config.stash[ISOLATION_KEY] else "in process"
    )
    return (
        f"ppaux: implementation under test {implementation(config)!r}; per-call limit {guard(config).timeout:g} s; "
        f"isolation: {isolation}; Hypothesis: {suite_settings(config).describe()}; scope {suite_depth(config)[0].name}"
        + ("" if suite_depth(config)[1] is None else " with a swarm configuration")
    )


def pytest_report_header(config: pytest.Config) -> str:
    config.stash[HEADER_KEY] = True
    return _header(config)


def unshown_header(config: pytest.Config) -> str | None:
    """The header's line, where the run printed its header before ppaux was activated in it (once)."""
    if config.stash[HEADER_KEY]:
        return None
    config.stash[HEADER_KEY] = True
    return _header(config)


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    # Activated by what collection found: the header's place has passed, so it follows the collection line.
    return unshown_header(config)


# Once CUDA is initialized here, a worker forked after could touch no cuda tensor, and every test
# there would fail on that, not on the implementation (containment.forks_usefully).
CUDA_IN_PROCESS = (
    "ppaux: CUDA is initialized in this pytest process, and a forked process cannot use it: the contained "
    "tests from here on run in this process, under the per-call time limit alone (a crash, or a hang no "
    "signal reaches, ends the run). Initialize CUDA inside tests, not at import or in a session fixture."
)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if not (item.config.stash[ISOLATION_KEY] and is_contained(item)):
        return None
    server = item.config.stash.get(SERVER_KEY, None)
    if not forks_usefully():
        # A live worker was forked before; one that dies could not be replaced: let it go now.
        if server is not None:
            server.close()
        item.config.stash[ISOLATION_KEY] = False
        warnings.warn(pytest.PytestWarning(CUDA_IN_PROCESS), stacklevel=1)
        return None
    if server is None:
        workers = item.config.stash[WORKERS_KEY]
        made = (
            ForkServer(item.session, guard(item.config))
            if workers == 1
            else Lanes(item.session, guard(item.config), workers)
        )
        server = item.config.stash[SERVER_KEY] = made
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in server.run(item, nextitem):
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.hookimpl(tryfirst=True)  # the worker's fixtures end before those of this process
def pytest_sessionfinish(session: pytest.Session) -> None:
    server = session.config.stash.get(SERVER_KEY, None)
    if server is not None:
        server.close()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, None]:
    recorder = item.config.stash[RECORDER_KEY]
    if recorder is not None:
        recorder.start_test()
    if not is_suite_test(item):
        yield
        return
    # The suite's strategies, built as the test runs, take their bounds from the run's scope.
    with use_scope(*suite_depth(item.config)):
        yield


def recorded_calls(item: pytest.Item) -> RecordedCalls | None:
    """A failing test's calls into the implementation as code (or why not), when the run records them
    (``--ppaux-record-calls``); else ``None`` (also in a run that never asked for ppaux)."""
    recorder = item.config.stash.get(RECORDER_KEY, None)
    return None if recorder is None else scenario(recorder, implementation(item.config).prefix)


def session_impl(config: pytest.Config) -> Implementation:
    """The ``ppaux_impl`` fixture's value: the run's implementation, every add and pop under the run's
    per-call limit (and recorded, with ``--ppaux-record-calls``)."""
    impl = implementation(config).guarded(guard(config))
    recorder = config.stash[RECORDER_KEY]
    return impl if recorder is None else impl.recorded(recorder)


def observer_check(impl: Implementation) -> Callable[..., KitResult]:
    """The ``ppaux_observer_check`` fixture's value: :func:`ppaux.testing.check_observer` bound to ``impl``."""
    check: Callable[..., KitResult] = functools.partial(check_observer, impl=impl)
    return check
