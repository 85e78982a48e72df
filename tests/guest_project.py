"""A stand-in for someone else's project, in an environment where ppaux is installed: its own conftest.py
(registering ``ci`` and ``dev`` profiles, or none), a property test, a failing one, and a last test that
reports what the run was like. Run by a fresh interpreter (profiles and imports are process-wide), with
ppaux's plugin loaded or ``-p no:ppaux``: a guest changes nothing, so both runs report the same.

Standard library only: ``.ci/wheel-smoke`` runs this file by its path with a non-editable install's
interpreter (``python tests/guest_project.py``: every scenario, exit 1 on any difference).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# A safety net, not a measure: a pytest start of a small project takes a second or two.
SAFETY_NET_S = 300

# (environment, arguments) of the runs a CI owner makes, and one with PPAUX_IMPL naming nothing.
SCENARIOS = {
    "ci-flag": ({}, ["--hypothesis-profile=ci"]),
    "dev-flag": ({}, ["--hypothesis-profile=dev"]),
    "ci-variable": ({"CI": "true"}, []),
    "ppaux-impl-set": ({"PPAUX_IMPL": "no.such.module"}, ["--hypothesis-profile=ci"]),
}

# The project's own profiles, as a CI owner registers them.
CONFTEST = """
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=15, derandomize=True)
"""

TESTS = """
import json, os, sys
from hypothesis import given, settings, strategies as st

DRAWN = []


@given(st.integers())
def test_property(n):
    DRAWN.append(n)


@given(st.integers())
def test_fails(n):
    assert n is None


def test_report():
    # Runs last (file order): what the property ran under, how many examples it drew, what was imported.
    report = {
        "profile": settings.get_current_profile_name(),
        "settings": repr(settings.default),
        "examples": len(DRAWN),
        "imported": sorted(name for name in ("torch", "ppaux") if name in sys.modules),
    }
    with open(os.environ["GUEST_REPORT"], "w") as fh:
        json.dump(report, fh)
"""


def make(root: Path, *, profiles: bool) -> Path:
    """The stand-in project under ``root``: its own config (no ppaux option in it), profiles or none."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (root / "conftest.py").write_text(CONFTEST if profiles else "")
    (root / "test_guest.py").write_text(TESTS)
    return root


def run(root: Path, args: list[str], env: dict[str, str], *, with_ppaux: bool) -> dict[str, Any]:
    """One pytest run of the project in a fresh interpreter: its exit status, outcomes and report."""
    report = root / ("with.json" if with_ppaux else "without.json")
    report.unlink(missing_ok=True)
    # A clean environment: no CI variable, no PPAUX_* and no PYTEST_* of the outer run unless given.
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PPAUX_", "PYTEST_", "CI", "GITHUB_"))}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args]
    if not with_ppaux:
        cmd += ["-p", "no:ppaux"]
    done = subprocess.run(
        cmd,
        cwd=root,
        env={**base, **env, "GUEST_REPORT": str(report)},
        capture_output=True,
        text=True,
        timeout=SAFETY_NET_S,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    outcome = summary.split(" in ")[0]
    return {
        "exit": done.returncode,
        "outcome": outcome,
        "report": json.loads(report.read_text()) if report.exists() else done.stdout + done.stderr,
    }


def compare(root: Path, scenario: str, *, profiles: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The project's run in ``scenario`` with ppaux's plugin, and without it."""
    project = make(root / f"{scenario}-{'profiles' if profiles else 'none'}", profiles=profiles)
    env, args = SCENARIOS[scenario]
    return run(project, args, env, with_ppaux=True), run(project, args, env, with_ppaux=False)


def main() -> int:
    import tempfile

    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for profiles in (True, False):
            for scenario in SCENARIOS:
                if scenario == "dev-flag" and not profiles:
                    continue
                with_ppaux, without = compare(Path(tmp), scenario, profiles=profiles)
                same = with_ppaux == without and isinstance(with_ppaux["report"], dict)
                differ += not same
                print(
                    f"guest project ({'own profiles' if profiles else 'no profiles'}, {scenario}): "
                    + ("the same with ppaux" if same else f"DIFFERS: {with_ppaux} != {without}")
                )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
