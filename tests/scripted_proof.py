"""The proof's child (prove.DRIVER) scripted: a stand-in that uses the standard library only, finds
the implementation's module on the path the proof gives it, as the real child's import would, and
answers as the script says; shared by tests/test_regressions_files.py and tests/test_fuzz.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ppaux
import ppaux.regressions.prove as proof
from ppaux.testing.impl import REQUIRED_NAMES

PREFIX = "__sampling_observer_output__."

SCRIPTED_DRIVER = r"""
import ast, json, os, sys, time

script = json.loads(os.environ["SCRIPTED_PROOF"])
module, paths = sys.argv[1], sys.argv[2:]
entries = os.environ["PYTHONPATH"].split(os.pathsep)
parts = module.split(".")


def found(entry):
    # A regular package at each level, as an import that a later entry's package cannot shadow needs.
    packages = all(os.path.isfile(os.path.join(entry, *parts[:i], "__init__.py")) for i in range(1, len(parts)))
    file = os.path.join(entry, *parts) + ".py"
    return file if packages and os.path.isfile(file) else None


where = next(filter(None, map(found, entries)), None)
missing, side = parts[0], "none"
if where is not None:
    with open(where) as f:
        tree = ast.parse(f.read())
    side = "red"
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.ImportFrom) and first.module == "ppaux.transport":
        side = "green"
        assert [a.name for a in first.names] == script["reference_names"], ast.dump(first)
        # The ppaux this run imported, on the path itself (so that an uninstalled checkout works too).
        if not any(os.path.realpath(os.path.join(e, "ppaux")) == script["ppaux"] for e in entries):
            missing, where = "ppaux", None
names = [os.path.basename(p) for p in paths]
with open(script["log"] + "." + side, "a") as log:
    log.write(json.dumps({"files": names, "in_scratch": os.getcwd() == os.path.dirname(paths[0]),
                          "no_bytecode": sys.dont_write_bytecode}) + "\n")
if any(n in script.get("sleep", {}).get(side, []) for n in names):
    time.sleep(5)
if any(n in script.get("mute", []) for n in names):
    sys.exit(0)
# "crash": a file that takes down a run of several files (alone, it runs); "die": any run of it.
crash = [n for n in names if n in script.get("crash", {}).get(side, []) and len(names) > 1]
crash += [n for n in names if n in script.get("die", [])]
print("the child's own output")
print("more of it")
verdicts = {}
for path, name in zip(paths, names):
    if where is None:
        verdicts[name] = {"import_error": "ModuleNotFoundError: No module named " + repr(missing)}
        continue
    with open(path) as f:
        methods = [n.name for n in ast.walk(ast.parse(f.read())) if isinstance(n, ast.FunctionDef)
                   and n.name.startswith("test")]
    said = script["outcomes"].get(side, {})
    verdicts[name] = {"tests": {m: said.get(m, script["default"][side]) for m in methods}}
print(json.dumps(verdicts))
if crash:
    sys.stderr.write("Fatal Python error: Segmentation fault\n\ndied running " + crash[0] + "\n")
    sys.exit(3)
"""

RED = {"outcome": "fail", "text": "Traceback\nAssertionError: 1 != 2"}
GREEN = {"outcome": "pass"}


class ScriptedProof:
    """The proof's child, scripted: outcomes per side ("red": the implementation, "green": the
    reference) and method, the files whose run crashes or sleeps; and the runs it saw, per side."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.log = tmp / "proof-log"
        self.script = {
            "log": str(self.log),
            "reference_names": list(REQUIRED_NAMES),
            "ppaux": str(Path(ppaux.__file__).resolve().parent),
            "default": {"red": RED, "green": GREEN, "none": GREEN},
            "outcomes": {},
        }
        driver = tmp / "scripted_driver.py"
        driver.write_text(SCRIPTED_DRIVER)
        monkeypatch.setattr(proof, "DRIVER", driver)
        # A user whose environment does not ask for it: the proof itself keeps bytecode out of their folders.
        monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        self.monkeypatch = monkeypatch

    def set(self, **script) -> None:
        self.script.update(script)
        self.monkeypatch.setenv("SCRIPTED_PROOF", json.dumps(self.script))

    def runs(self, side: str) -> list[list[str]]:
        path = Path(f"{self.log}.{side}")
        seen = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        # The proof runs in its scratch folder and writes no bytecode into the user's directories.
        assert all(run["in_scratch"] and run["no_bytecode"] for run in seen), seen
        return [run["files"] for run in seen]
