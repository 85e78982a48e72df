"""The bytecode states the README command's benchmarks time it in (reports/bytecode.py): a cold run finds
none of the checkout's bytecode and leaves the checkout's cache as it was; a first run follows the
README's first command's check on a fresh clone; installed packages are not the checkout's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports import bytecode


def _tree(root: Path) -> dict[str, Path]:
    files = {
        "module": root / "pkg" / "__pycache__" / "m.cpython-311.pyc",
        "test": root / "tests" / "__pycache__" / "test_m.cpython-311-pytest-9.2.0.pyc",
        "dot venv": root / ".venv" / "lib" / "__pycache__" / "torch.cpython-311.pyc",
        "venv": root / "env" / "lib" / "__pycache__" / "torch.cpython-311.pyc",
    }
    for name, path in files.items():
        path.parent.mkdir(parents=True)
        path.write_bytes(name.encode())
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return files


def test_the_checkout_s_caches_are_its_own_modules_and_tests_not_an_environment_inside_it(tmp_path):
    _tree(tmp_path)
    assert sorted(bytecode.checkout_caches(tmp_path)) == [
        tmp_path / "pkg" / "__pycache__",
        tmp_path / "tests" / "__pycache__",
    ]


def test_a_cold_run_finds_no_bytecode_and_the_cache_is_as_it_was_after(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    files = _tree(tmp_path)
    written_during = tmp_path / "pkg" / "sub" / "__pycache__" / "new.cpython-311.pyc"
    with pytest.raises(KeyboardInterrupt), bytecode.prepared("cold", tmp_path) as env:
        assert env["PYTHONDONTWRITEBYTECODE"] == "1"
        assert not files["module"].exists() and not files["test"].exists()
        assert files["venv"].read_bytes() == b"venv" and files["dot venv"].read_bytes() == b"dot venv"
        written_during.parent.mkdir(parents=True)
        written_during.write_bytes(b"new")
        raise KeyboardInterrupt  # the run stopped: the cache is put back all the same
    assert {name: path.read_bytes() for name, path in files.items()} == {name: name.encode() for name in files}
    assert not written_during.parent.exists()
    assert sorted(p.name for p in (tmp_path / "pkg").iterdir()) == ["__pycache__", "sub"]


def test_a_warm_run_writes_bytecode_whatever_this_process_says(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    assert "PYTHONDONTWRITEBYTECODE" not in bytecode.environment("warm")
    with pytest.raises(ValueError) as info:
        bytecode.environment("lukewarm")
    assert str(info.value) == "bytecode state 'lukewarm'; expected one of cold, first, warm"


# A checkout's `python -m ppaux` that says how it was run and imports a module of the package.
FAKE_MAIN = """
import json, os, sys
import ppaux.relayed
with open(os.environ["RUN_RECORD"], "w") as fh:
    json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "writes": not sys.dont_write_bytecode}, fh)
"""


def test_a_first_run_follows_the_checks_cache_on_a_fresh_clone_and_the_cache_is_as_it_was_after(tmp_path, monkeypatch):
    files = _tree(tmp_path)
    package = tmp_path / "ppaux"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "relayed.py").write_text("RELAYED = True\n")
    (package / "__main__.py").write_text(FAKE_MAIN)
    record = tmp_path.parent / f"{tmp_path.name}-run.json"
    monkeypatch.setenv("RUN_RECORD", str(record))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # this process's setting is not the run's
    with bytecode.prepared("first", tmp_path) as env:
        assert "PYTHONDONTWRITEBYTECODE" not in env
        assert not files["module"].exists() and not files["test"].exists()
        ran = json.loads(record.read_text())
        assert ran["argv"][:2] == ["check", "--report"] and ran["writes"]
        assert not Path(ran["argv"][2]).is_relative_to(tmp_path) and Path(ran["cwd"]) == tmp_path
        # What the check imported (`-m`'s module too) is cached for the run that follows.
        cached = sorted(p.name.split(".")[0] for p in (package / "__pycache__").iterdir())
        assert cached == ["__init__", "__main__", "relayed"]
    assert {name: path.read_bytes() for name, path in files.items()} == {name: name.encode() for name in files}
    assert not (package / "__pycache__").exists()
