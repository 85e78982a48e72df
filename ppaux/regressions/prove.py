"""Proof before a regression file is written: it must fail against the implementation (on an
assertion, or on an error raised inside the implementation: never on its own import or a typo)
and pass against ppaux's reference bound under the implementation's module name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import ppaux.core.transport as reference_module
from ppaux.testing.impl import REQUIRED_NAMES

DRIVER = Path(__file__).with_name("driver.py")
# Importing torch and running a few calls: a proof run past this is itself a finding.
PROOF_SECONDS = 60.0


@dataclass(frozen=True)
class MethodRun:
    """One test method of a file, as the driver ran it: its outcome (``None``: unittest did not run
    it), unittest's text for it, and for an error whether its traceback passes through the implementation."""

    outcome: Literal["pass", "fail", "error", "skip"] | None
    text: str = ""
    in_implementation: bool = False


NOT_RUN = MethodRun(None)


@dataclass(frozen=True)
class FileRun:
    """The driver's verdict on one file, against one side: each test method's run, or why there is none
    (``broken``: the run died or outlasted its limit; ``import_error``: the file did not import)."""

    tests: Mapping[str, MethodRun] = field(default_factory=dict)
    broken: str | None = None
    import_error: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileRun:  # Any: the driver's JSON line, as json.loads gives it
        tests = {method: MethodRun(**run) for method, run in data.get("tests", {}).items()}
        return cls(tests, data.get("broken"), data.get("import_error"))


@dataclass(frozen=True)
class Proof:
    """A file run against the implementation (``red``) and against the reference (``green``)."""

    red: FileRun
    green: FileRun


def bind_reference(root: Path, module: str) -> None:
    """Make ``module`` importable under ``root`` as ppaux's reference transport."""
    parts = module.split(".")
    folder = root.joinpath(*parts[:-1])
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(1, len(parts)):
        root.joinpath(*parts[:i], "__init__.py").touch()
    names = ", ".join(REQUIRED_NAMES)
    (folder / f"{parts[-1]}.py").write_text(f"from ppaux.transport import {names}  # noqa: F401\n")


def run(paths: list[Path], module: str, python_path: list[str], seconds: float) -> dict[str, FileRun]:
    """The driver's verdict on each file (by name): per test, its outcome; or why there is none."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(python_path), PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(
            [sys.executable, str(DRIVER), module, *map(str, paths)],
            capture_output=True,
            text=True,
            env=env,
            timeout=seconds,
            cwd=paths[0].parent,
        )
    except subprocess.TimeoutExpired:
        return {p.name: FileRun(broken=f"the test run did not finish within {seconds:g} s") for p in paths}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        said = done.stderr.strip().splitlines()
        why = f"the test run ended with exit status {done.returncode}" + (f": {said[-1]}" if said else "")
        return {p.name: FileRun(broken=why) for p in paths}
    return {name: FileRun.from_json(verdict) for name, verdict in json.loads(lines[-1]).items()}


def _run_side(paths: list[Path], module: str, python_path: list[str], seconds: float) -> dict[str, FileRun]:
    verdicts = run(paths, module, python_path, seconds)
    if len(paths) > 1 and any(v.broken for v in verdicts.values()):
        # One file took the run down with it (a crash outside a child, a hang): each file on its own.
        verdicts = {p.name: run([p], module, python_path, seconds)[p.name] for p in paths}
    return verdicts


def judge(red: FileRun, green: FileRun, method: str) -> str | None:
    """``None`` when ``method`` discriminates (red on the implementation, green on the reference); else why not."""
    for side, verdict in (("the implementation", red), ("the reference", green)):
        if verdict.broken or verdict.import_error:
            return f"against {side}, {verdict.broken or f'the file did not import: {verdict.import_error}'}"
    got_red, got_green = red.tests.get(method, NOT_RUN), green.tests.get(method, NOT_RUN)
    if got_green.outcome != "pass":
        return f"it does not pass against ppaux's reference ({got_green.outcome}: {_last_line(got_green)})"
    if got_red.outcome == "pass":
        return "it passes against the implementation: the failure depends on more than the calls the test replays"
    if got_red.outcome == "error" and not got_red.in_implementation:
        return f"against the implementation it errs outside the implementation ({_last_line(got_red)})"
    return None


def _last_line(run: MethodRun) -> str:
    lines = run.text.strip().splitlines()
    return lines[-1] if lines else "no output"


def prove_files(sources: dict[str, str], module: str, user_path: list[str], seconds: float) -> dict[str, Proof]:
    """Run the files ``sources`` (name -> source) against the implementation and, side by side,
    against the reference bound as ``module``: each file's proof, by name."""
    with tempfile.TemporaryDirectory(prefix="ppaux-regression-") as tmp:
        root = Path(tmp)
        (root / "test").mkdir()
        paths = []
        for name, source in sources.items():
            paths.append(root / "test" / name)
            paths[-1].write_text(source)
        bind_reference(root / "reference", module)
        ppaux_home = str(Path(reference_module.__file__).resolve().parents[2])
        with ThreadPoolExecutor(max_workers=2) as pool:
            red = pool.submit(_run_side, paths, module, user_path, seconds)
            green = pool.submit(_run_side, paths, module, [str(root / "reference"), ppaux_home, *user_path], seconds)
            return {name: Proof(red.result()[name], green.result()[name]) for name in sources}
