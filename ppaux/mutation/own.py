"""Mutation runs of a checkout by its own tests (ppaux's: ``python -m reports mutation``): mutmut
over a scope of the package in a scratch copy, the score per module, every survivor's diff, the
mutants judged equivalent (the scope's equivalents files, read as ``ppaux mutate --equivalents``
reads its file), the gate; and the scope's mutants listed without running a test.

mutmut's own exit status says nothing (0 with survivors) and its cache outlives test edits, so
every run starts from a fresh copy and reads the verdicts from ``mutmut results``.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TextIO

from ppaux.mutation import history
from ppaux.mutation.equivalents import REVIEW, Judgement, audit, read_judgements, resolve, write_judgements
from ppaux.mutation.identity import MutantIdentity, identify_all
from ppaux.mutation.mutant_runs import FIRST, recorded_killers
from ppaux.mutation.project import (
    MUTANT_PYTEST_ARGS,
    MutmutProject,
    changed_line,
    module_of,
    mutmut_table,
    select,
    source_file,
)
from ppaux.mutation.score import is_killed, judged_equivalent, score, stale, verdicts
from ppaux.report import Marking, ModuleScore, MutationReport, ReviewEntry, Survivor, SurvivorIdentity, write_report
from ppaux.report.mutation import STALE, verdict_of
from ppaux.report.render import mutation_markdown
from ppaux.testing.progress import Progress

__all__ = [
    "CLEAN_RUN_FAILED",
    "Checkout",
    "Scope",
    "audit_judgements",
    "list_mutants",
    "run_scope",
    "score_modules",
    "source_of",
]

CLEAN_RUN_FAILED = "Failed to run clean test"
# mutmut's progress lines every 5 s on a plain stream (a log, CI).
PROGRESS_EVERY_S = 5.0


@dataclass(frozen=True)
class Scope:
    """What one kind of run mutates (mutmut's ``only_mutate`` patterns), which tests may kill (and
    ``marks``, their pytest ``-m`` expression), the gate (``None``: reported only), the files of
    mutants judged equivalent (:mod:`ppaux.mutation.equivalents`, relative to the checkout), and the
    tests left out of every run (``deselect``: ``(pytest node id, why it cannot run in mutmut's copy)``)."""

    name: str
    mutate: tuple[str, ...]
    tests: tuple[str, ...]
    gate: float | None
    doc: str
    marks: str
    equivalents: tuple[str, ...] = ()
    deselect: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Checkout:
    """The checkout a scope's run copies: its ``root``, what the copy holds (``copied``), the
    pytest arguments of every test run, what is never mutated, the modules gated at 100% in every
    scope, and what every scope's tests read besides its test paths (``test_support``: their
    conftest, helpers and strategies, hashed with them for an incremental run)."""

    root: Path
    copied: tuple[str, ...]
    pytest_args: tuple[str, ...]
    do_not_mutate: tuple[str, ...]
    always_gated: tuple[str, ...]
    test_support: tuple[str, ...] = ()

    def gate_for(self, module: str, scope: Scope) -> float | None:
        """The always-gated modules at 100% in every scope; the others at the scope's gate."""
        if module.replace(".", "/") + ".py" in self.always_gated:
            return 100.0
        return scope.gate

    def equivalents(self, scope: Scope) -> list[Judgement]:
        """The scope's mutants judged equivalent, from its files in order (named relative to the checkout)."""
        judged: list[Judgement] = []
        for path in scope.equivalents:
            judged += [dataclasses.replace(j, file=path) for j in read_judgements(self.root / path)]
        return judged

    def module_source(self, module: str) -> str | None:
        """The text of ``module`` in the checkout (``pkg/mod.py`` or ``pkg/mod/__init__.py``), if any."""
        path = source_file(self.root, module)
        return None if path is None else path.read_text(encoding="utf-8")

    def tests_hash(self, scope: Scope) -> str:
        """The hash of what the scope's tests are: their files, the support they read, how they run."""
        settings = (*self.pytest_args, *(t for t, _ in scope.deselect), scope.marks)
        return history.tests_hash(self.root, (*scope.tests, *self.test_support), settings)

    def project(self, scope: Scope, dest: Path) -> MutmutProject:
        """A scratch copy of the checkout whose ``[tool.mutmut]`` table is the scope's."""
        for name in self.copied:
            src = self.root / name
            if src.is_dir():
                shutil.copytree(
                    src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "out", "index.html", "mutants")
                )
            else:
                shutil.copy2(src, dest / name)
        package = self.copied[0]
        config = {
            "source_paths": [f"{package}/"],
            "only_mutate": list(scope.mutate),
            "do_not_mutate": list(self.do_not_mutate),
            "also_copy": [
                n + ("/" if (self.root / n).is_dir() else "")
                for n in self.copied
                if n not in (package, "pyproject.toml")
            ],
            "pytest_add_cli_args": [
                *MUTANT_PYTEST_ARGS,
                *self.pytest_args,
                *(f"--deselect={test}" for test, _ in scope.deselect),
                "-m",
                scope.marks,
            ],
            "pytest_add_cli_args_test_selection": list(scope.tests),
            # Fork every mutant from a server that has already imported torch and collected the suite:
            # forking from mutmut's own process re-imports torch and every test module per mutant (~2 s each).
            "process_isolation": "forkserver",
            "forkserver_warmup": "collect",
            # mutmut stops a mutant's run at 15 times the time its tests took in the clean run (a
            # quarter of an hour for the command-line tests): a mutant that loops for ever cost that
            # much. Three times is margin enough on a machine running one mutant per core.
            "timeout_multiplier": 3.0,
        }
        pyproject = (dest / "pyproject.toml").read_text(encoding="utf-8")
        (dest / "pyproject.toml").write_text(pyproject.rstrip() + "\n\n" + mutmut_table(config), encoding="utf-8")
        return MutmutProject(dest)


def source_of(mutant: str) -> str:
    """The file a mutant's module is, relative to the checkout."""
    return module_of(mutant).replace(".", "/") + ".py"


def audit_judgements(
    checkout: Checkout, files: Sequence[str], *, restamp: bool = False, out: TextIO | None = None
) -> int:
    """The judgements of ``files`` (relative to the checkout) read against its code as it is, without
    mutmut (:func:`~ppaux.mutation.equivalents.audit`): 0 when every one is on the function it was
    judged on, 1 when one is gone or its function changed, each named on ``out``. ``restamp``: the
    changed ones (looked at again, found still equivalent) get their function's hash now, each file
    in its own order; the gone ones still fail."""
    out = out or sys.stdout
    judged = [dataclasses.replace(j, file=f) for f in files for j in read_judgements(checkout.root / f)]
    found = audit(judged, checkout.module_source)
    if restamp and found.changed:
        restamped = found.restamped(judged)
        for name in dict.fromkeys(j.file for j, _ in found.changed):
            write_judgements(checkout.root / name, [j for j in restamped if j.file == name], sort=False)
        for judgement, now in found.changed:
            print(f"restamped ({now}): {judgement.describe()}: {judgement.reason}", file=out)
        found.changed = []
    for line in found.lines():
        print(line, file=out)
    if found.gone or found.changed:
        print(
            f"{len(found.gone) + len(found.changed)} of {len(judged)} equivalence judgements to look at: a gone one is "
            "re-keyed to its mutant or removed; a changed one, still equivalent, is restamped (--restamp)",
            file=out,
        )
        return 1
    print(f"equivalence judgements: {len(judged)} in {len(files)} file(s), each on the function judged", file=out)
    return 0


def score_modules(
    results: Mapping[str, str], judged: Mapping[str, str], gate_for: Callable[[str], float | None]
) -> dict[str, ModuleScore]:
    """The score per module: its mutants, those killed and judged equivalent, its survivors (the
    mutants neither killed nor judged equivalent), its gate (``gate_for(module)``) and its verdict."""
    by_module: dict[str, dict[str, str]] = defaultdict(dict)
    for name, status in sorted(results.items()):
        by_module[module_of(name)][name] = status
    out = {}
    for module, mutants in sorted(by_module.items()):
        scored = score(mutants, judged)
        gate = gate_for(module)
        survivors = tuple(Survivor(n, s) for n, s in mutants.items() if not is_killed(s) and n not in judged)
        out[module] = ModuleScore(
            total=len(mutants),
            killed=scored.killed,
            equivalent=scored.equivalent,
            survivors=survivors,
            score=scored.percent,
            gate=gate,
            verdict=verdict_of(gate is None or scored.reaches(gate)),
        )
    return out


def _run_mutmut(project: MutmutProject, out: Path, max_children: int | None, only: list[str]) -> int:
    code = project.run(
        max_children=max_children, only=only, log=out / "mutmut-run.log", progress=Progress(every=PROGRESS_EVERY_S)
    )
    if code != 0 and CLEAN_RUN_FAILED in (out / "mutmut-run.log").read_text(errors="replace"):
        # mutmut forks its clean run from the process that has just run the whole suite for its
        # stats (gloo groups and threads included), and that fork now and then fails with no
        # output. Run again: mutmut loads the stats it saved and forks from a fresh process.
        # A test that really fails the clean run fails it again here.
        print("reports: mutmut's clean run failed; running mutmut again on the stats it saved", file=sys.stderr)
        code = project.run(
            max_children=max_children,
            only=only,
            log=out / "mutmut-run-again.log",
            progress=Progress(every=PROGRESS_EVERY_S),
        )
    return code


def _fresh(out_dir: str) -> tuple[Path, Path]:
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    scratch = out / "project"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    return out, scratch


def _identity(found: MutantIdentity) -> SurvivorIdentity:
    return SurvivorIdentity(**dataclasses.asdict(found))


def _identities(project: MutmutProject, names: Sequence[str]) -> dict[str, MutantIdentity]:
    return identify_all(project.sources(names, source_of))


def run_scope(
    checkout: Checkout,
    scope: Scope,
    out_dir: str,
    max_children: int | None,
    only: Sequence[str] = (),
    *,
    full: bool = False,
    markings: Callable[[], list[Marking]] = list,
) -> int:
    """The scope's run, its report in ``out_dir`` (``mutation.md``, ``.json``) and a summary on the
    console: 0 when every module reaches its gate, every equivalence judgement matches one mutant and
    no no-mutate marking (``markings()``, each with its ``problem`` or ``None``; the report lists
    them) is refused, 1 otherwise or when mutmut failed.

    Incremental unless ``full`` or ``only``: the verdicts recorded in ``out_dir`` (:mod:`ppaux.mutation.history`)
    stand for every mutant whose function and tests did not change; mutmut runs the others."""
    judgements = checkout.equivalents(scope)
    out, scratch = _fresh(out_dir)
    project = checkout.project(scope, scratch)
    start = time.monotonic()
    only = list(only)
    stamp = dict(scope=scope.name, tests=checkout.tests_hash(scope), mutmut=version("mutmut"))
    store = out / history.HISTORY.format(scope=scope.name)
    recorded = None if full or only else history.load(store, **stamp)
    identities: dict[str, MutantIdentity] | None = None
    reused: dict[str, str] = {}
    code = 0
    if recorded is None:
        code = _run_mutmut(project, out, max_children, only)
    else:
        names = project.generate(max_children=max_children)
        identities = _identities(project, names)
        reused, to_run = history.plan(identities, recorded)
        # A mutant without an identity has no record to reuse: it runs (with its function).
        to_run += [name for name in names if name not in identities]
        if to_run:
            # Each rerun mutant's earlier killer first (the plugin of its test runs reads the file).
            first = {name: test for name, test in history.killers(identities, recorded).items() if name in to_run}
            (project.root / "mutants").mkdir(exist_ok=True)
            (project.root / "mutants" / FIRST).write_text(json.dumps(first), encoding="utf-8")
            code = _run_mutmut(project, out, max_children, history.function_patterns(to_run))
    wall = round(time.monotonic() - start, 1)
    every = {**project.results(), **reused} if code == 0 else {}
    results = select(every, only)
    if code != 0 or not results:
        print(f"reports: error: mutmut run failed (exit {code}); see {out / 'mutmut-run.log'}", file=sys.stderr)
        return 1
    if identities is None:
        identities = _identities(project, list(every))
    # Every judgement is matched against every mutant mutmut made; a narrowed run judges and
    # scores only the mutants it picked.
    resolution = resolve(judgements, identities)
    asked = select(resolution.judged, only)
    judged = judged_equivalent(results, asked)
    modules = score_modules(results, judged, lambda module: checkout.gate_for(module, scope))
    survivors = [s for module in modules.values() for s in module.survivors]
    diffs = project.diffs([s.mutant for s in survivors], source_of)
    survivors = [
        Survivor(s.mutant, s.status, diffs.get(s.mutant, ""), _identity(identities[s.mutant])) for s in survivors
    ]
    scored = score(results, judged)
    marked = markings()
    ran = len(results) - len(reused)
    if not only:
        # The killers of this run's mutants, and the recorded ones of the mutants it did not run.
        found = recorded_killers(project.root / "mutants")
        kept = {} if recorded is None else history.killers(identities, recorded)
        history.save(store, every, identities, killers={**kept, **found}, **stamp)
    report = MutationReport(
        scope=scope.name,
        scope_doc=scope.doc,
        wall_s=wall,
        mutmut=stamp["mutmut"],
        total=len(results),
        reused=len(reused),
        ran=ran,
        equivalent=scored.equivalent,
        killed=scored.killed,
        score=scored.percent,
        verdict=verdict_of(
            all(m.verdict == "pass" for m in modules.values())
            and not any(e.problem for e in marked)
            and not resolution.problems
        ),
        verdicts=verdicts(results),
        only=tuple(only),
        modules=modules,
        survivors=tuple(survivors),
        equivalents_files=scope.equivalents,
        judged_equivalent=judged,
        stale_equivalents=tuple(stale(results, asked)),
        unmatched_equivalents=tuple(resolution.problems),
        review_equivalents=tuple(
            ReviewEntry(mutant=name, entry=j.describe(), function_hash=identities[name].function_hash)
            for name, j in sorted(resolution.review.items())
        ),
        markings=tuple(marked),
    )
    page, _ = write_report(out, "mutation", report.to_json(), mutation_markdown(report))
    print(
        f"mutation ({scope.name}): {report.score}% ({scored.killed}/{scored.counted} killed) in {wall} s "
        f"({ran} run, {len(reused)} recorded results reused); "
        f"gate {'pass' if report.verdict == 'pass' else 'FAIL'}; report {page}"
    )
    for module, m in modules.items():
        if m.verdict == "fail":
            print(f"  {module}: {m.score}% < {m.gate}% ({len(m.survivors)} survivors)")
    for e in marked:
        if e.problem:
            print(f"  {e.where}: {e.problem}")
    for line in resolution.problems:
        print(f"  {line}")
    for entry in report.review_equivalents:
        print(f"  {REVIEW}: {entry.entry} (now {entry.mutant}, function_hash {entry.function_hash})")
    for name in report.stale_equivalents:
        print(f"  {STALE}: {name}")
    return 0 if report.verdict == "pass" else 1


def _in_order(mutant: str) -> tuple[str, int]:
    # A function's mutants by number: _2 before _10.
    function, _, number = mutant.rpartition("__mutmut_")
    return function, int(number)


def list_mutants(
    checkout: Checkout,
    scope: Scope,
    out_dir: str,
    max_children: int | None,
    only: Sequence[str] = (),
    stream: TextIO | None = None,
) -> int:
    """Every mutant of the scope (those ``only`` picks), one a line: its name and the line it
    changes, ``name: before -> after``; mutmut generates them, no test runs. 0, or 1 when mutmut made none."""
    stream = sys.stdout if stream is None else stream
    _, scratch = _fresh(out_dir)
    project = checkout.project(scope, scratch)
    names = sorted(select(dict.fromkeys(project.generate(max_children=max_children)), list(only)), key=_in_order)
    if not names:
        print(f"reports: error: mutmut made no mutant of scope {scope.name!r}", file=sys.stderr)
        return 1
    diffs = project.diffs(names, source_of)
    for name in names:
        stream.write(f"{name}: {changed_line(diffs.get(name, ''))}\n")
    return 0
