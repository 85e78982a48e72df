"""Entry point of ppaux's pytest plugin (``pytest11``).

pytest imports entry-point plugins before pytest-cov starts measuring, so this shim
imports nothing of ``ppaux`` until ``pytest_configure``; the plugin proper is
:mod:`ppaux.pytest_plugin`, registered from there and thus measured like any module.
"""

from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("ppaux")
    group.addoption(
        "--ppaux-impl",
        default=None,
        metavar="MODULE_OR_FILE",
        help="implementation of the PP auxiliary transport to test (module name or .py file); "
        "default: $PPAUX_IMPL or ppaux's reference",
    )
    group.addoption("--ppaux-results", default=None, metavar="FILE", help="write per-test results as JSON lines (used by `ppaux check`)")
    # Profiles must exist before Hypothesis's own plugin loads --hypothesis-profile.
    _register_profiles_without_importing_ppaux()


def _register_profiles_without_importing_ppaux():
    import importlib.util
    import pathlib

    spec = importlib.util.find_spec("ppaux")
    path = pathlib.Path(spec.origin).parent / "profiles.py" if spec and spec.origin else None
    if path is None or not path.is_file():  # pragma: no cover - ppaux is always installed beside this shim
        return
    namespace = {"__name__": "ppaux_profiles_preload"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    namespace["register"]()


def pytest_configure(config):
    from ppaux import pytest_plugin

    config.pluginmanager.register(pytest_plugin, "ppaux.pytest_plugin")
