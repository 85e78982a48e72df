"""What a run's tests did, read from pytest's reports: the per-test rows ``ppaux check`` builds its
report from, and the minimal example and reproduce blob of a failure."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

# The marks a row keeps: what kind of test it is.
KINDS = ("contract", "robustness", "wire", "gloo", "gpu")


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


class ResultRecorder:
    """Writes one JSON line per test to ``path`` at the end of the run."""

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
            "marks": sorted({m.name for m in item.iter_markers()} & set(KINDS)),
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
