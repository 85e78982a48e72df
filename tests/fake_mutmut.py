"""ppaux's own mutation runs on a small checkout (``arith``): mutmut stood in for, the checkout, its
scope and the run's clock; shared by tests/test_mutation_runs.py and tests/test_mutation_locale.py."""

from __future__ import annotations

import dataclasses
import fnmatch
from pathlib import Path

import reports.mutation as mutation
from ppaux.mutation import own
from ppaux.mutation.equivalents import FORMAT
from ppaux.mutation.identity import identify_all
from ppaux.mutation.mutant_runs import KILLERS
from ppaux.mutation.own import Checkout


class FakeMutmut:
    """mutmut stood in for: the first run fails its clean run when ``flaky``, every run exits
    ``code`` otherwise; the verdicts are given, and a diff for each mutant but the ``undiffed``."""

    def __init__(self, root, verdicts, runs, flaky, *, code=0, undiffed=()):
        self.root, self.verdicts, self.runs, self.flaky = root, verdicts, runs, flaky
        self.code, self.undiffed = code, undiffed

    def run(self, *, max_children, only, log, progress):
        self.runs.append((max_children, tuple(only), log.name))
        failed = self.flaky and len(self.runs) == 1
        # Progress as mutmut's run shows it, on the run's progress line.
        progress.update(f"{log.name}: mutants 0/1", state=0)
        progress.finish(f"{log.name}: mutants 1/1", state=1)
        log.write_text("Running clean tests\n" + (mutation.CLEAN_RUN_FAILED + "\n" if failed else "done\n"))
        # Each killed mutant's killer, as the plugin of mutmut's test runs records it.
        killers = self.root / "mutants" / KILLERS
        killers.mkdir(parents=True, exist_ok=True)
        for name, verdict in self.verdicts.items():
            if verdict == "killed" and (not only or any(fnmatch.fnmatch(name, p) for p in only)):
                (killers / name).write_text(f"tests/test_{name.rpartition('x_')[2].split('__')[0]}.py::test_it")
        return 1 if failed else self.code

    def results(self):
        return dict(self.verdicts)

    def generate(self, *, max_children):
        self.runs.append((max_children, "generate"))
        return list(self.verdicts)

    def sources(self, names, source_of):
        return fake_sources(names)

    def diffs(self, names, source_of):
        return {
            name: f"--- {source_of(name)}\n+++ {source_of(name)}\n-    a\n+    b\n"
            for name in names
            if name not in self.undiffed
        }


def fake_sources(names):
    """The stand-in's mutated functions: each mutant changes line ``a`` into ``b<its number>``."""
    return {name: ("def f():\n    a\n", f"def f():\n    b{name.rpartition('__mutmut_')[2]}\n") for name in names}


def judged_file(entries):
    """An equivalents file's JSON judging the stand-in's mutants ``{name: reason}``, keyed by identity."""
    identities = identify_all(fake_sources(entries))
    return {
        "format": FORMAT,
        "equivalents": [{**dataclasses.asdict(identities[name]), "reason": why} for name, why in entries.items()],
    }


def small_checkout(root: Path) -> Checkout:
    (root / "arith").mkdir(parents=True)
    (root / "arith" / "__init__.py").write_text("")
    (root / "arith" / "ops.py").write_text(
        "def double(x):\n    return x * 2\n\n\ndef is_small(x):\n    return x < 10\n"
    )
    (root / "pyproject.toml").write_text("[project]\nname = 'arith'\n")
    return Checkout(root=root, copied=("arith", "pyproject.toml"), pytest_args=(), do_not_mutate=(), always_gated=())


ARITH = own.Scope(
    name="arith",
    mutate=("arith/*",),
    tests=("tests/",),
    gate=None,
    doc="the arith package, its score reported",
    marks="not slow",
    equivalents=("eq.json",),
)


class Clock:
    """The clock of a run: 100.0 when it starts, ``100.0 + took`` when mutmut is done."""

    def __init__(self, took):
        self.times = iter([100.0, 100.0 + took])

    def monotonic(self):
        return next(self.times)
