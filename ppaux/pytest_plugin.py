"""pytest plugin (registered by the ``ppaux_pytest`` entry point): ``--ppaux-impl``, the ``ppaux_impl`` fixture,
ppaux's marks and Hypothesis profiles, and per-clause result records for ``ppaux check``."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from ppaux import impl as impl_mod
from ppaux.profiles import register as _register_profiles

_register_profiles()

MARKS = {
    "contract": "documented behaviour that SGLang has too",
    "robustness": "guarantees of the contract where SGLang differs",
    "clause(id)": "the contract clause a property checks",
    "sglang": "downloads SGLang's released wheel and runs the suite against it",
    "wire": "relays PP dicts over a channel",
    "gloo": "starts torch.distributed gloo processes on 127.0.0.1",
    "gpu": "needs CUDA",
}

_current: Optional[impl_mod.Implementation] = None


def current_implementation() -> impl_mod.Implementation:
    """The implementation this run tests (``--ppaux-impl``/``PPAUX_IMPL``; ppaux's own by default)."""
    global _current
    if _current is None:
        _current = impl_mod.load(os.environ.get("PPAUX_IMPL"))
    return _current


def pytest_configure(config: pytest.Config) -> None:
    global _current
    for mark, doc in MARKS.items():
        config.addinivalue_line("markers", f"{mark}: {doc}")
    # Both options are always registered (by the ppaux_pytest shim): no default needed.
    spec = config.getoption("--ppaux-impl") or os.environ.get("PPAUX_IMPL")
    try:
        _current = impl_mod.load(spec)
    except impl_mod.ImplementationError as exc:
        raise pytest.UsageError(str(exc)) from None
    path = config.getoption("--ppaux-results")
    if path:
        config.pluginmanager.register(_ResultRecorder(path), "ppaux-results")


def pytest_report_header(config: pytest.Config) -> str:
    return f"ppaux: implementation under test {current_implementation()!r}"


@pytest.fixture(scope="session")
def ppaux_impl() -> impl_mod.Implementation:
    """The implementation under test."""
    return current_implementation()


@pytest.fixture
def ppaux_observer_check():
    """:func:`ppaux.testing.check_observer`, for a plugin's PP relay test."""
    from ppaux.testing import check_observer

    return check_observer


_BLOB = re.compile(r"@reproduce_failure\([^)]*\)")
# Hypothesis before 6.16x says "Falsifying example:", later "Failing test case:".
EXAMPLE_HEADER = re.compile(r"(?:Falsifying|Failing)(?: explicit)? (?:example|test case):")
_BLOCK_END = ("You can reproduce", "Explanation:", "Traceback", "Unreliable")


def _plain_lines(text: str) -> List[str]:
    # pytest prefixes failure text with "E   " and exception groups with "| ".
    out = []
    for line in text.splitlines():
        if line.startswith("E ") or line == "E":
            line = line[1:]
        out.append(re.sub(r"^\s*\| ?", "", line))
    return out


def failure_details(text: str) -> Dict[str, Optional[str]]:
    """The minimal example and the reproduce blob from a failure's report text."""
    lines = _plain_lines(text)
    start = next((i for i, line in enumerate(lines) if EXAMPLE_HEADER.match(line.lstrip())), None)
    example = None
    if start is not None:
        indent = len(lines[start]) - len(lines[start].lstrip())
        block = []
        for line in lines[start:]:
            if not line.strip() or line.strip().startswith(_BLOCK_END):
                break
            block.append(line[indent:] if not line[:indent].strip() else line.lstrip())
        example = "\n".join(block)
    blob = _BLOB.search(text)
    return {"example": example, "blob": blob.group(0) if blob else None}


class _ResultRecorder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.rows: List[Dict[str, Any]] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any):
        outcome = yield
        report = outcome.get_result()
        if report.when != "call" and not (report.failed or report.skipped):
            return
        clause = item.get_closest_marker("clause")
        func = getattr(item, "function", None)
        doc = (getattr(item, "cls", None) or func).__doc__ if func else None
        row = {
            "nodeid": item.nodeid,
            "clause": clause.args[0] if clause else None,
            "marks": sorted({m.name for m in item.iter_markers()} & {"contract", "robustness", "wire", "gloo", "gpu"}),
            "doc": " ".join((doc or "").split()),
            "outcome": "skipped" if report.skipped else ("failed" if report.failed else "passed"),
        }
        if report.failed:
            row.update(failure_details(report.longreprtext))
            if call.excinfo is not None:
                message = str(call.excinfo.value).strip().splitlines()
                row["error"] = f"{call.excinfo.typename}: {message[0] if message else ''}"
        elif report.skipped:
            row["error"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        self.rows.append(row)

    def pytest_sessionfinish(self) -> None:
        # Bytes, UTF-8 encoded here: the file does not depend on the locale.
        Path(self.path).write_bytes("".join(json.dumps(row) + "\n" for row in self.rows).encode())
