"""Proof before a regression file is written: it must fail against the implementation (on an
assertion, or on an error raised inside the implementation: never on its own import or a typo)
and pass against ppaux's reference bound under the implementation's module name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ppaux.core.transport as reference_module
from ppaux.testing.impl import REQUIRED_NAMES
from ppaux.testing.results import JSONObject

DRIVER = Path(__file__).with_name("driver.py")
# Importing torch and running a few calls: a proof run past this is itself a finding.
PROOF_SECONDS = 60.0


def bind_reference(root: Path, module: str) -> None:
    """Make ``module`` importable under ``root`` as ppaux's reference transport."""
    parts = module.split(".")
    folder = root.joinpath(*parts[:-1])
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(1, len(parts)):
        root.joinpath(*parts[:i], "__init__.py").touch()
    names = ", ".join(REQUIRED_NAMES)
    (folder / f"{parts[-1]}.py").write_text(f"from ppaux.transport import {names}  # noqa: F401\n")


def run(paths: list[Path], module: str, python_path: list[str], seconds: float) -> dict[str, JSONObject]:
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
        return {p.name: {"broken": f"the test run did not finish within {seconds:g} s"} for p in paths}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        said = done.stderr.strip().splitlines()
        why = f"the test run ended with exit status {done.returncode}" + (f": {said[-1]}" if said else "")
        return {p.name: {"broken": why} for p in paths}
    verdicts: dict[str, JSONObject] = json.loads(lines[-1])
    return verdicts


def _run_side(paths: list[Path], module: str, python_path: list[str], seconds: float) -> dict[str, JSONObject]:
    verdicts = run(paths, module, python_path, seconds)
    if len(paths) > 1 and any("broken" in v for v in verdicts.values()):
        # One file took the run down with it (a crash outside a child, a hang): each file on its own.
        verdicts = {p.name: run([p], module, python_path, seconds)[p.name] for p in paths}
    return verdicts


def judge(red: JSONObject, green: JSONObject, method: str) -> str | None:
    """``None`` when ``method`` discriminates (red on the implementation, green on the reference); else why not."""
    for side, verdict in (("the implementation", red), ("the reference", green)):
        if "broken" in verdict or "import_error" in verdict:
            return f"against {side}, {verdict.get('broken') or 'the file did not import: ' + verdict['import_error']}"
    got_red, got_green = red["tests"].get(method, {}), green["tests"].get(method, {})
    if got_green.get("outcome") != "pass":
        return f"it does not pass against ppaux's reference ({got_green.get('outcome')}: {_last_line(got_green)})"
    if got_red.get("outcome") == "pass":
        return "it passes against the implementation: the failure depends on more than the calls the test replays"
    if got_red.get("outcome") == "error" and not got_red.get("in_implementation"):
        return f"against the implementation it errs outside the implementation ({_last_line(got_red)})"
    return None


def _last_line(outcome: JSONObject) -> str:
    lines = (outcome.get("text") or "").strip().splitlines()
    return lines[-1] if lines else "no output"


def prove_files(sources: dict[str, str], module: str, user_path: list[str], seconds: float) -> dict[str, JSONObject]:
    """Run the files ``sources`` (name -> source) against the implementation and, side by side,
    against the reference bound as ``module``. Returns, per file, ``{"red": ..., "green": ...}``."""
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
            return {name: {"red": red.result()[name], "green": green.result()[name]} for name in sources}
