"""The suite's pytest run under ``ppaux check`` stood in for, so that a check costs milliseconds;
shared by tests/test_check.py and tests/test_regressions.py."""

from __future__ import annotations

import json
import os
from pathlib import Path


class FakePytest:
    """Stands in for the suite's pytest run: records how it was called and writes the rows it is given."""

    def __init__(self, rows, status=0, printed=""):
        self.rows, self.status, self.printed = rows, status, printed
        self.calls = []

    def __call__(self, argv):
        results = argv[argv.index("--ppaux-results") + 1]
        self.calls.append((argv, os.getcwd(), results, os.path.isdir(os.path.dirname(results))))
        Path(results).write_text("".join(json.dumps(r) + "\n" for r in self.rows))
        return self.status, self.printed
