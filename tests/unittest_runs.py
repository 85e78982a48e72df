"""Written regression files run as their user runs them, with unittest in a child interpreter (where
ppaux, Hypothesis and pytest may be made impossible to import), and the last line of what it said;
shared by tests/test_regressions.py and tests/test_sglang_conformance.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

NOT_INSTALLED = ("ppaux", "ppaux_strategies", "hypothesis", "pytest", "_pytest")
# unittest in an interpreter where ppaux, Hypothesis and pytest cannot be imported.
WITHOUT_PPAUX = f"""
import sys, unittest
class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {NOT_INSTALLED!r}:
            raise ImportError(f"{{name}} is not installed here")
sys.meta_path.insert(0, NotInstalled())
unittest.main(module=None, argv=["unittest", *sys.argv[1:]])
"""


def run_unittest(folder: Path, python_path: list, *, block: bool = False) -> subprocess.CompletedProcess:
    names = sorted(p.stem for p in folder.glob("test_*.py"))
    argv = ["-c", WITHOUT_PPAUX, *names] if block else ["-m", "unittest", *names]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, python_path)), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, *argv], cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def summary(done: subprocess.CompletedProcess) -> str:
    return done.stderr.strip().splitlines()[-1]
