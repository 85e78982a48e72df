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
    group.addoption("--ppaux-results", default=None, metavar="FILE", help="write per-test results as JSON lines (used by `ppaux check`)")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # First: ppaux's Hypothesis profiles must exist before Hypothesis's own plugin loads --hypothesis-profile.
    from ppaux.testing import plugin, profiles

    profiles.register()
    config.pluginmanager.register(plugin, "ppaux.testing.plugin")
