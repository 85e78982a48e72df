"""Entry point of ppaux's pytest plugin (``pytest11``): a guest in every pytest run of the environment.

Installed and unused, it costs an import of this file: it registers ppaux's options and the one mark
users write in tests of their own (``isolated``), and imports nothing else. ppaux is *activated* in a
run (:func:`activate`: the plugin proper, :mod:`ppaux.testing.plugin`, with torch and the
implementation under test) only when the run asks for it:

- a ``--ppaux-*`` option on the command line;
- collecting ppaux's shipped tests (``ppaux/conformance/conftest.py`` activates it; on the controller
  of an xdist run, once it has started its workers, which need not wait for its import of torch);
- a collected test that uses a ppaux fixture or carries ``@pytest.mark.isolated``.

So ``$PPAUX_IMPL`` is read, and a bad value fails the run, only in runs that test an implementation.
ppaux registers and loads no Hypothesis profile (see :mod:`ppaux.testing.profiles`). Being imported
before pytest-cov starts, this file stays out of the measured package.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from types import ModuleType
from typing import Any

import pytest

# Set in a run's stash when this plugin configured it, and to the plugin proper once activated:
# per run, so that a nested session (pytester, `ppaux check`) never changes the run around it.
LOADED = pytest.StashKey[bool]()
ACTIVE = pytest.StashKey[ModuleType]()
# Why the plugin proper refused the run (a bad implementation), once it has.
REFUSED = pytest.StashKey[str]()
# Set when the session starts: from then on a refusal is raised inside collection.
STARTED = pytest.StashKey[bool]()
# Set on the controller of an xdist run when the shipped suite's conftest asks for ppaux as the run is
# configured: it activates as its run loop starts, once it has started its workers (each loads the
# implementation too), so that they need not wait for its import of torch.
DEFERRED = pytest.StashKey[bool]()

# Fixtures and the mark that make a collected test one of ppaux's.
FIXTURES = ("ppaux_impl", "ppaux_observer_check", "ppaux_settings")
ISOLATED = "isolated: (ppaux) runs in a forked child, as the shipped suite's tests do: a crash or hang is a finding"

# Options whose presence on the command line asks for ppaux (dest, default when absent).
_ASKING = (
    ("ppaux_impl", None),
    ("ppaux_results", None),
    ("ppaux_timeout", None),
    ("ppaux_isolation", None),
    ("ppaux_workers", None),
    ("ppaux_record_calls", False),
    ("ppaux_profile", None),
    ("ppaux_max_examples", None),
    ("ppaux_scope", None),
    ("ppaux_swarm", None),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ppaux")
    group.addoption(
        "--ppaux-impl",
        default=None,
        metavar="MODULE_OR_FILE",
        help="implementation of the PP auxiliary transport to test (module name or .py file); "
        "default: $PPAUX_IMPL or ppaux's reference",
    )
    group.addoption(
        "--ppaux-profile",
        default=None,
        metavar="NAME",
        help="ppaux's Hypothesis tuning for its own tests: ci, dev, nightly or mutation (default: the one named "
        "like the active Hypothesis profile, if any); other tests keep the active profile",
    )
    group.addoption(
        "--ppaux-max-examples",
        default=None,
        metavar="N",
        help="examples per property for ppaux's own tests alone (default: as the tuning or profile says)",
    )
    group.addoption(
        "--ppaux-scope",
        default=None,
        metavar="NAME|JSON",
        help="how big ppaux's own tests draw: small, medium, large, or every bound as JSON (default: the tuning's: "
        "ci and mutation small, dev medium, nightly large; small under other profiles)",
    )
    group.addoption(
        "--ppaux-swarm",
        default=None,
        metavar="JSON",
        help="a swarm configuration for ppaux's own tests: the dtypes, views, names, defects and size bounds they "
        "keep (used by `ppaux fuzz`; default: everything)",
    )
    group.addoption(
        "--ppaux-results",
        default=None,
        metavar="FILE",
        help="write per-test results as JSON lines (used by `ppaux check`)",
    )
    group.addoption(
        "--ppaux-timeout",
        default=None,
        metavar="SECONDS",
        help="per-call time limit on the implementation under test: a call past it fails as a hang "
        "(default: the ppaux_timeout ini value, else 10)",
    )
    group.addoption(
        "--ppaux-isolation",
        default=None,
        choices=("test", "off"),
        help="'test' (default): the tests of ppaux.conformance run in a supervised forked worker (a fresh one "
        "after a crash), so that a crash or a hang signals cannot reach is a finding; 'off': in this process "
        "(for a debugger)",
    )
    group.addoption(
        "--ppaux-workers",
        default=None,
        metavar="N",
        help="with --ppaux-isolation=test, run the contained tests in N supervised forked workers at once, each "
        "with its share of them (default: the ppaux_workers ini value, else 1)",
    )
    group.addoption(
        "--ppaux-record-calls",
        action="store_true",
        default=False,
        help="keep each failing test's calls into the implementation in its result row, as code "
        "(used by `ppaux check --regressions`)",
    )
    parser.addini("ppaux_timeout", "per-call time limit in seconds on the implementation under test (default 10)")
    parser.addini("ppaux_isolation", "'test' (default) or 'off': see --ppaux-isolation")
    parser.addini(
        "ppaux_workers", "how many supervised forked workers run the contained tests at once: see --ppaux-workers"
    )
    parser.addini("ppaux_profile", "ppaux's Hypothesis tuning for its own tests: see --ppaux-profile")
    parser.addini(
        "ppaux_suite_copies",
        "directories holding a copy of ppaux.conformance's test modules (ppaux mutate's scratch project): "
        "their tests run as the shipped suite's (its tuning, scope and isolation)",
        type="paths",
        default=[],
    )
    parser.addini("ppaux_max_examples", "examples per property for ppaux's own tests alone: see --ppaux-max-examples")


@pytest.hookimpl(tryfirst=True)  # before the configure of ppaux's conftests, which ask whether it ran
def pytest_configure(config: pytest.Config) -> None:
    config.stash[LOADED] = True
    config.addinivalue_line("markers", ISOLATED)
    if any(config.getoption(dest) != absent for dest, absent in _ASKING):
        activate(config)


def activate(config: pytest.Config) -> ModuleType:
    """ppaux's plugin proper in this run, registered on first use: its ``pytest_configure`` loads the
    implementation under test (a bad one is a usage error, one line)."""
    plugin = config.stash.get(ACTIVE, None)
    if plugin is None:
        if REFUSED in config.stash:
            raise pytest.UsageError(config.stash[REFUSED])
        from ppaux.testing import plugin

        try:
            config.pluginmanager.register(plugin, "ppaux.testing.plugin")
        except pytest.UsageError as exc:
            # Refused (a bad implementation): no half-configured plugin stays, and the reason is kept.
            config.pluginmanager.unregister(plugin)
            config.stash[REFUSED] = str(exc)
            raise
        config.stash[ACTIVE] = plugin
    return plugin


def activate_from_conftest(config: pytest.Config) -> None:
    """:func:`activate`, from the ``pytest_configure`` of a conftest of ppaux's shipped tests. Loaded
    during collection (``--pyargs``), a refusal is a collection error of one line: a usage error
    raised there would print pytest's traceback, and crash xdist's controller from a worker."""
    if ACTIVE not in config.stash and STARTED not in config.stash and _starts_workers(config):
        config.stash[DEFERRED] = True
        return
    try:
        activate(config)
    except pytest.UsageError as exc:
        if STARTED not in config.stash:
            raise
        raise pytest.Collector.CollectError(str(exc)) from None


def _starts_workers(config: pytest.Config) -> bool:
    # pytest-xdist's controller: it collects and runs no test itself, and starts its workers as the
    # session starts (with --collect-only it starts none and collects).
    distributed = config.getoption("dist", "no") != "no" and not config.getoption("collectonly")
    return distributed and not hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[STARTED] = True


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    # xdist's controller started its workers as the session started; its run loop is about to wait on them.
    config = session.config
    if config.stash.get(DEFERRED, False):
        del config.stash[DEFERRED]
        # A bad implementation is a usage error, one line, and the session's end stops the workers.
        header = activate(config).unshown_header(config)
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if header is not None and reporter is not None:
            reporter.write_line(header)
    return (yield)


def _is_ppaux_test(item: pytest.Item) -> bool:
    fixtures = getattr(item, "fixturenames", ())
    return any(name in fixtures for name in FIXTURES) or item.get_closest_marker("isolated") is not None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ACTIVE not in config.stash and REFUSED not in config.stash and any(map(_is_ppaux_test, items)):
        try:
            activate(config)
        except pytest.UsageError:
            # In an xdist worker a usage error crashes the controller: there, each ppaux test fails
            # at setup with the line instead (_activated).
            if not hasattr(config, "workerinput"):
                raise
    plugin = config.stash.get(ACTIVE, None)
    if plugin is not None:
        plugin.collected(config, items)


def _activated(config: pytest.Config) -> ModuleType:
    try:
        return activate(config)
    except pytest.UsageError as exc:
        refused = str(exc)
    pytest.fail(refused, pytrace=False)


@pytest.fixture(scope="session")
def ppaux_impl(pytestconfig: pytest.Config) -> Any:  # Any: ppaux.testing.Implementation, not imported until used
    """The implementation under test in this run; every add and pop runs under the run's per-call limit."""
    return _activated(pytestconfig).session_impl(pytestconfig)


@pytest.fixture(scope="session")
def ppaux_observer_check(ppaux_impl: Any, pytestconfig: pytest.Config) -> Callable[..., Any]:
    """:func:`ppaux.testing.check_observer` bound to this run's implementation."""
    check: Callable[..., Any] = _activated(pytestconfig).observer_check(ppaux_impl)
    return check


@pytest.fixture(scope="session")
def ppaux_settings(pytestconfig: pytest.Config) -> Any:  # Any: hypothesis.settings
    """The Hypothesis settings of ppaux's tests in this run (see :mod:`ppaux.testing.profiles`)."""
    return _activated(pytestconfig).suite_settings(pytestconfig).settings
