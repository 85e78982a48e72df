"""Entry point of ppaux's pytest plugin (``pytest11``).

pytest imports entry-point plugins before pytest-cov starts measuring, so this shim imports
nothing of ``ppaux`` at import time; the plugin proper, :mod:`ppaux.testing.plugin`, is
registered from ``pytest_configure`` and thus measured like any module.
"""

from __future__ import annotations

import pytest


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
        help="'test' (default): each test of ppaux.conformance runs in a forked child, so that a crash or a hang "
        "signals cannot reach is a finding; 'off': in this process (for a debugger)",
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


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # First: ppaux's Hypothesis profiles must exist before Hypothesis's own plugin loads --hypothesis-profile.
    from ppaux.testing import plugin, profiles

    profiles.register()
    config.pluginmanager.register(plugin, "ppaux.testing.plugin")
