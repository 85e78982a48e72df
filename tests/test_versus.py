"""The same-hour comparison of two checkouts (reports/versus.py): each side's commands run where the README
runs them, with that side's Python, cold, in turns that swap; the ratio is this side over the other."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

from reports import versus

# A side's `python -m pytest` and `python -m ppaux`: they log how they were run, in the order they ran.
FAKE_TOOL = """
import json, os, sys
with open(os.environ["VERSUS_LOG"], "a") as fh:
    fh.write(json.dumps({{"tool": {tool!r}, "side": os.environ["SIDE"], "argv": sys.argv[1:], "cwd": os.getcwd(),
                         "writes": not sys.dont_write_bytecode}}) + "\\n")
print("collected 3 items")
print({said!r})
print()
sys.exit({status})
"""


def _side(root: Path, name: str, tests_exit: int) -> versus.Side:
    checkout = root / name
    for tool, said, status in (("pytest", "3 passed in 0.01s", tests_exit), ("ppaux", "every clause holds", 0)):
        (checkout / tool).mkdir(parents=True)
        (checkout / tool / "__init__.py").write_text("")
        (checkout / tool / "__main__.py").write_text(FAKE_TOOL.format(tool=tool, said=said, status=status))
    # The side's interpreter: its checkout importable from anywhere, as an editable install makes it.
    python = root / f"{name}-python"
    python.write_text(f'#!/bin/sh\nSIDE={name} PYTHONPATH={checkout} exec {sys.executable} "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return versus.Side(name, checkout, str(python))


def test_each_side_runs_the_readme_commands_cold_with_its_python_in_turns_that_swap(tmp_path, monkeypatch):
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("VERSUS_LOG", str(log))
    against, this = _side(tmp_path, "against", tests_exit=1), _side(tmp_path, "this", tests_exit=0)

    runs = versus.compare(against, this, pairs=2)

    ran = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["tool"], r["side"]) for r in ran] == [
        ("pytest", "against"),
        ("pytest", "this"),
        ("ppaux", "against"),
        ("ppaux", "this"),
        ("pytest", "this"),
        ("pytest", "against"),
        ("ppaux", "this"),
        ("ppaux", "against"),
    ]
    for r in ran:
        assert not r["writes"]  # cold, whatever this process's setting
        checkout = tmp_path / r["side"]
        if r["tool"] == "pytest":
            assert r["argv"] == ["--hypothesis-profile=ci", "-n", "2", "-q"] and Path(r["cwd"]) == checkout
        else:
            # From an empty directory outside both checkouts, its report there.
            assert r["argv"][:2] == ["check", "--report"] and Path(r["argv"][2]).parent == Path(r["cwd"])
            assert not Path(r["cwd"]).is_relative_to(tmp_path)
    assert [(r["pair"], r["command"], r["side"], r["exit"], r["summary"]) for r in runs] == [
        (1, "tests", "against", 1, "3 passed in 0.01s"),
        (1, "tests", "this", 0, "3 passed in 0.01s"),
        (1, "check", "against", 0, "every clause holds"),
        (1, "check", "this", 0, "every clause holds"),
        (2, "tests", "this", 0, "3 passed in 0.01s"),
        (2, "tests", "against", 1, "3 passed in 0.01s"),
        (2, "check", "this", 0, "every clause holds"),
        (2, "check", "against", 0, "every clause holds"),
    ]


def _run(pair: int, command: str, side: str, wall: float) -> dict[str, object]:
    return {"pair": pair, "command": command, "side": side, "exit": 0, "wall_s": wall, "cpu_s": 2 * wall, "summary": ""}


def test_the_ratio_is_this_side_over_the_other_the_median_of_the_pairs():
    walls = {"tests": [(10.0, 5.0), (8.0, 6.0), (10.0, 4.0)], "check": [(20.0, 10.0), (20.0, 8.0), (10.0, 9.0)]}
    runs = [
        _run(pair, command, side, wall)
        for command, pairs in walls.items()
        for pair, (against, this) in enumerate(pairs, 1)
        for side, wall in (("this", this), ("against", against))
    ]
    assert versus.ratios(runs, "wall_s") == {"tests": 0.5, "check": 0.5}
    assert versus.ratios(runs, "cpu_s") == {"tests": 0.5, "check": 0.5}
    result = {
        "this": "/this",
        "this commit": "bc83024",
        "against": "/base",
        "against commit": "cce1f99",
        "against python": "/base-env/bin/python",
        "pairs": 3,
        "speed reference s, before and after": [0.5, 0.75],
        "wall ratio, this over against": {"tests": 0.5, "check": 0.4},
        "CPU ratio, this over against": {"tests": 0.6, "check": 0.9},
        "runs": runs[:1],
    }
    page = versus.render(result).splitlines()
    assert page[2] == (
        "This checkout (`/this`, bc83024) against `/base` (cce1f99, run with `/base-env/bin/python`), 3 pairs, every "
        "run cold; the machine's speed reference (`sum(i * i for i in range(10**7))`) 0.50 s before, 0.75 s after."
    )
    assert page[4:7] == [
        "| command | median wall ratio, this / against | median CPU ratio |",
        "| --- | --- | --- |",
        "| tests | 0.5 | 0.6 |",
    ]
    assert page[7] == "| check | 0.4 | 0.9 |"
    assert page[-1] == "| 1 | tests | this | 0 | 5.0 | 10.0 |  |"
