"""What a user installs: the wheel ships the example plugin the docs point to (opt-in: ``-m subprocess``;
it builds the wheel in a child process). ``.ci/wheel-smoke`` runs it from an install."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "ppaux" / "examples"

pytestmark = pytest.mark.subprocess


def test_the_wheel_ships_every_module_of_the_examples(tmp_path):
    # A copy without build outputs (a stale build/ would add files the tree no longer has) and without
    # virtual environments: .ci/run installs the README's (.venv-readme, 1.2 GB) while the tests run; nor
    # coverage's data files, which the run's other processes write and combine away while it copies.
    tree = tmp_path / "tree"
    shutil.copytree(
        ROOT,
        tree,
        ignore=shutil.ignore_patterns(
            ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".hypothesis", "out", ".coverage*"
        ),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(tree),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("ppaux-*.whl")
    shipped = {name for name in zipfile.ZipFile(wheel).namelist() if name.startswith("ppaux/examples/")}
    assert shipped == {path.relative_to(ROOT).as_posix() for path in EXAMPLES.rglob("*.py")}
