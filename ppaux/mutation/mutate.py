"""``ppaux mutate``: how many bugs in an implementation would the conformance suite catch, and
how many would that project's own tests catch?

The implementation's module is copied into a scratch project and mutated with mutmut 3; the
shipped conformance suite, pointed at the mutated copy, kills what it can. With a baseline command
the same mutants run against it (the project's own tests), and the report puts the two side by
side. Tests that fail on the unmutated module cannot kill anything: robustness tests (where an
implementation may differ from the contract, as SGLang does) are left out and listed; any other
red test, or a red baseline, is bad input (:class:`MutateInputError`).

:func:`mutate` tells the run in its steps: check the inputs, the kill set, the baseline on the
unmutated copy, the mutants against the suite, then against the baseline, the report.
"""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from ppaux.isolation import DEFAULT_TIMEOUT, MONOTONIC, Clock, describe_exitcode
from ppaux.mutation.equivalents import REVIEW, Judgement, read_any
from ppaux.mutation.equivalents import resolve as match_judgements
from ppaux.mutation.identity import identify_all
from ppaux.mutation.project import MutmutProject, changed_line, run_with_mutant, show_counts
from ppaux.mutation.score import (
    EquivalentsError,
    Score,
    is_killed,
    judged_equivalent,
    score,
    stale,
    verdicts,
)
from ppaux.mutation.target import Target, resolve, write_config, write_scratch
from ppaux.report import BaselineComparison, MutantResult, MutateReport, ReviewEntry, write_report
from ppaux.report.mutation import SIDES, STALE, verdict_of
from ppaux.report.render import mutate_markdown
from ppaux.testing.impl import ImplementationError
from ppaux.testing.profiles import TUNINGS
from ppaux.testing.progress import Progress
from ppaux.testing.results import read_outcomes
from ppaux.testing.state import StateError, report_directory
from ppaux.testing.suite import DEFAULT_MARKS, SuiteRun

__all__ = [
    "KillSet",
    "MutateInputError",
    "MutateOptions",
    "MutateRun",
    "baseline_imports_the_copy",
    "baseline_limit",
    "baseline_on_the_copy",
    "build_report",
    "check_inputs",
    "kill_set",
    "mutants_against_the_baseline",
    "mutants_against_the_suite",
    "mutate",
]

# The bound shows only on a baseline that hangs for ten minutes.
CLEAN_BASELINE_TIMEOUT_S = 600.0
# Any source that fails to import serves.
UNIMPORTABLE = b"raise ImportError('ppaux mutate: the copy under test was imported')\n"
# mutmut's progress lines every 5 s on a plain stream (a log, CI).
PROGRESS_EVERY_S = 5.0
# A baseline run with a mutant may take this many times its clean run, and never less than the floor.
BASELINE_LIMIT_FACTOR = 10.0
BASELINE_LIMIT_FLOOR_S = 10.0


class MutateInputError(Exception):
    """Bad input to ``ppaux mutate``: one line for the user (exit status 2 on the command line)."""


@dataclass(frozen=True)
class MutateOptions:
    """What ``ppaux mutate`` is asked: its command-line options, by the same names."""

    impl: str
    baseline: str | None = None
    gate: float = 100.0
    # None: .ppaux/mutate in the current directory (ppaux.testing.state).
    report: str | None = None
    marks: str = DEFAULT_MARKS
    tests: str | None = None
    profile: str = "mutation"
    equivalents: str | None = None
    max_children: int | None = None
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class KillSet:
    """The suite on the unmutated copy: the tests that pass (they may kill), the robustness tests
    that fail (left out)."""

    passed: list[str]
    left_out: list[str] = field(default_factory=list)


@dataclass
class MutateRun:
    """What a run found, for its report: mutmut's verdicts with the suite (``suite``) and the
    baseline's (``baseline``, ``None`` without one), the diffs of the mutants either missed."""

    options: MutateOptions
    target: Target
    kill_set: KillSet
    suite: dict[str, str]
    baseline: dict[str, str] | None = None
    diffs: dict[str, str] = field(default_factory=dict)
    equivalents: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0
    # Judgements keyed by identity that match no mutant or several, and those to review.
    unmatched: list[str] = field(default_factory=list)
    review: list[ReviewEntry] = field(default_factory=list)

    def missed(self, name: str) -> bool:
        """Whether the suite or the baseline let the mutant survive: the report shows its diff."""
        return not is_killed(self.suite[name]) or (self.baseline is not None and self.baseline[name] == "survived")


def _suite_args(options: MutateOptions, target: Target, results: Path | None = None) -> list[str]:
    run = SuiteRun(
        impl=target.module,
        marks=options.marks,
        tests=options.tests,
        timeout=options.timeout,
        tuning=options.profile,
        results=None if results is None else str(results),
    )
    return ["-p", "no:cacheprovider", "-p", "no:randomly", *run.options()]


def check_inputs(
    options: MutateOptions,
) -> tuple[Target, dict[str, str] | list[Judgement], list[str] | None]:
    """The module to mutate, the equivalents and the baseline command, or the one line that says what is wrong."""
    for module, name in (("mutmut", "mutmut 3"), ("tomli_w", "tomli-w")):
        try:
            importlib.import_module(module)  # only whether it is installed
        except ImportError:
            raise MutateInputError(
                f"{name} is not installed, and mutate needs it: pip install 'ppaux[mutate]'"
            ) from None
    if options.profile not in TUNINGS:
        raise MutateInputError(f"unknown profile {options.profile!r}; choose from {', '.join(TUNINGS)}")
    if not 0 <= options.gate <= 100:
        raise MutateInputError(f"--gate must be between 0 and 100, got {options.gate}")
    try:
        equivalents = read_any(options.equivalents) if options.equivalents is not None else {}
    except EquivalentsError as exc:
        raise MutateInputError(f"--equivalents {exc}") from None
    command = shlex.split(options.baseline) if options.baseline else None
    if options.baseline is not None and not command:
        raise MutateInputError("--baseline needs a command")
    if command is not None and shutil.which(command[0]) is None:
        raise MutateInputError(f"baseline command not found: {command[0]!r}")
    try:
        target = resolve(options.impl)
    except ImplementationError as exc:
        raise MutateInputError(str(exc)) from None
    return target, equivalents, command


def kill_set(options: MutateOptions, target: Target, scratch: Path) -> KillSet:
    """The suite on the unmutated copy. Failing robustness tests are left out; any other failure is bad input."""
    results = scratch / "clean-run.jsonl"
    cmd = [sys.executable, "-m", "pytest", "tests", "-q", *_suite_args(options, target, results)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(scratch), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True)
    rows = read_outcomes(results)
    if proc.returncode not in (0, 1) or not rows:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        ended = describe_exitcode(proc.returncode)
        raise MutateInputError(f"the conformance suite did not run on the unmutated module (pytest: {ended})")
    failed = [r for r in rows if r.outcome == "failed"]
    red = [r.nodeid for r in failed if "robustness" not in r.marks]
    if red:
        raise MutateInputError(
            f"the unmutated module fails {len(red)} contract test(s), so they cannot kill mutants: {', '.join(red)}"
        )
    passed = [r.nodeid for r in rows if r.outcome == "passed"]
    if not passed:
        raise MutateInputError("no conformance test passes on the unmutated module: nothing can kill a mutant")
    return KillSet(passed=passed, left_out=[r.nodeid for r in failed])


def baseline_imports_the_copy(command: list[str], target: Target, scratch: Path) -> None:
    """Where the module under test is a copy that raises on import, the baseline must fail:
    otherwise it imports the module from elsewhere and cannot kill a mutant."""
    sentinel = scratch / "sentinel"
    write_scratch(target, sentinel, tests=[], source=UNIMPORTABLE)
    status, _ = run_with_mutant(command, pythonpath=[sentinel], timeout=CLEAN_BASELINE_TIMEOUT_S)
    if status == "survived":
        raise MutateInputError(
            "the baseline command passes even when the module under mutation cannot be imported: "
            f"it does not import the copy ({shlex.join(command)}){_beside_the_original(target)}"
        )


def _beside_the_original(target: Target) -> str:
    """Why a baseline run here would import another module than the copy: ``python -m`` and ``python
    script.py`` put the current directory (or the script's) before PYTHONPATH, where the copy is."""
    if not (Path.cwd() / target.relative_path).is_file():
        return ""
    return f"; the current directory holds {target.relative_path}: run ppaux mutate from another one"


def baseline_on_the_copy(command: list[str], scratch: Path, clock: Clock = MONOTONIC) -> float:
    """The baseline must pass on the unmutated copy: how long it takes, on ``clock``."""
    status, seconds = run_with_mutant(command, pythonpath=[scratch], timeout=CLEAN_BASELINE_TIMEOUT_S, clock=clock)
    if status != "survived":
        why = "timed out" if status == "timeout" else "fails"
        raise MutateInputError(f"the baseline command {why} on the unmutated module: {shlex.join(command)}")
    return seconds


def mutants_against_the_suite(
    options: MutateOptions, target: Target, scratch: Path, kills: KillSet, progress: Progress
) -> tuple[MutmutProject, dict[str, str]]:
    """mutmut's run over the copy, killing with the kill set alone: its verdicts."""
    # Only the kill set: the left-out tests would "kill" every mutant.
    pytest_args = _suite_args(options, target) + [arg for nodeid in kills.left_out for arg in ("--deselect", nodeid)]
    write_config(target, scratch, pytest_args=pytest_args)
    project = MutmutProject(scratch)
    log = scratch.parent / "mutmut-run.log"
    code = project.run(max_children=options.max_children, log=log, progress=progress)
    suite = project.results()
    if code != 0 or not suite:
        raise MutateInputError(f"mutmut did not run (exit {code}); see {log}")
    return project, suite


def baseline_limit(clean_s: float) -> float:
    """How long the baseline may run with a mutant: ten times its clean run, at least 10 s (a
    mutant that makes it loop is a kill, a machine busy for a while is not)."""
    return max(BASELINE_LIMIT_FLOOR_S, BASELINE_LIMIT_FACTOR * clean_s)


def mutants_against_the_baseline(
    command: list[str], scratch: Path, mutants: list[str], clean_s: float, workers: int
) -> dict[str, str]:
    """The baseline once per mutant, ``workers`` at once, each bounded by :func:`baseline_limit`."""
    progress = Progress(every=PROGRESS_EVERY_S)
    timeout = baseline_limit(clean_s)
    done: dict[str, str] = {}

    def show(final: bool = False) -> None:
        killed = sum(s != "survived" for s in done.values())
        show_counts(
            progress, len(done), len(mutants), killed, len(done) - killed, label="baseline mutants", final=final
        )

    def one(name: str) -> None:
        done[name], _ = run_with_mutant(command, pythonpath=[scratch / "mutants"], mutant=name, timeout=timeout)
        show()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, mutants))
    show(final=True)
    return {name: done[name] for name in mutants}


def build_report(run: MutateRun) -> MutateReport:
    """``mutate.json``: the score, the kill set, the verdicts, every mutant (with its diff where
    either side missed it); with a baseline, its score over the same mutants and the side-by-side counts."""
    options, suite, baseline = run.options, run.suite, run.baseline
    judged = judged_equivalent(suite, run.equivalents)
    scored = score(suite, judged)
    mutants = []
    for name, status in suite.items():
        diff = run.diffs.get(name, "") if run.missed(name) else None
        mutants.append(
            MutantResult(
                mutant=name,
                suite=status,
                killed=is_killed(status),
                baseline=None if baseline is None else baseline[name],
                equivalent=judged.get(name),
                diff=diff,
                line=None if diff is None else changed_line(diff),
            )
        )
    return MutateReport(
        implementation=options.impl,
        module=run.target.module,
        mutmut=version("mutmut"),
        profile=options.profile,
        marks=options.marks,
        tests=options.tests,
        kill_set=len(run.kill_set.passed),
        left_out=tuple(run.kill_set.left_out),
        wall_s=run.wall_s,
        total=len(suite),
        equivalent=scored.equivalent,
        killed=scored.killed,
        score=scored.percent,
        gate=options.gate,
        verdict=verdict_of(scored.reaches(options.gate) and not run.unmatched),
        verdicts=verdicts(suite),
        stale_equivalents=tuple(stale(suite, run.equivalents)),
        unmatched_equivalents=tuple(run.unmatched),
        review_equivalents=tuple(run.review),
        mutants=tuple(mutants),
        baseline=None if baseline is None else _side_by_side(options.baseline or "", mutants, judged, scored),
    )


def _side_by_side(
    command: str, mutants: list[MutantResult], judged: Mapping[str, str], scored: Score
) -> BaselineComparison:
    def side(m: MutantResult) -> str:
        by_baseline = m.baseline != "survived"
        return {(True, True): "both", (True, False): "only ppaux", (False, True): "only the baseline"}.get(
            (m.killed, by_baseline), "neither"
        )

    sides = [side(m) for m in mutants]
    # Over the same mutants as ppaux's score: no test can kill one judged equivalent.
    killed = sum(m.baseline != "survived" and m.mutant not in judged for m in mutants)
    baseline_score = Score(killed=killed, counted=scored.counted, equivalent=scored.equivalent)
    return BaselineComparison(
        command=command,
        killed=killed,
        score=baseline_score.percent,
        side_by_side={k: sides.count(k) for k in SIDES},
    )


def _fresh_scratch(report: str | None) -> tuple[Path, Path]:
    try:
        out = report_directory(report, "mutate").resolve()
    except StateError as exc:
        raise MutateInputError(str(exc)) from None
    scratch = out / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    return out, scratch


def _summary(report: MutateReport, page: Path) -> str:
    line = f"ppaux mutate: {report.score}% ({report.killed}/{report.counted} killed) in {report.wall_s} s"
    if report.baseline is not None:
        line += f"; baseline {report.baseline.score}%; " + ", ".join(
            f"{k} {v}" for k, v in report.baseline.side_by_side.items()
        )
    return line + f"; gate {report.gate}% {'pass' if report.verdict == 'pass' else 'FAIL'}; report {page}"


def mutate(options: MutateOptions, suite_files: Sequence[Path]) -> int:
    """The whole run with the conformance tests in ``suite_files``; 0 when the suite's score reaches
    the gate, 1 below it. Bad input raises :class:`MutateInputError`."""
    target, equivalents, command = check_inputs(options)
    out, scratch = _fresh_scratch(options.report)
    start = time.monotonic()
    write_scratch(target, scratch, tests=suite_files)
    write_config(target, scratch, pytest_args=_suite_args(options, target))
    kills = kill_set(options, target, scratch)
    clean_s = 0.0
    if command is not None:
        baseline_imports_the_copy(command, target, scratch)
        clean_s = baseline_on_the_copy(command, scratch)
    progress = Progress(every=PROGRESS_EVERY_S)
    if kills.left_out:
        progress.say(
            f"ppaux mutate: {len(kills.left_out)} robustness test(s) fail on the unmutated module "
            "and are left out of the kill set"
        )
    project, suite = mutants_against_the_suite(options, target, scratch, kills, progress)
    run = MutateRun(options, target, kills, suite)
    if isinstance(equivalents, dict):
        run.equivalents = equivalents
    else:
        identities = identify_all(project.sources(list(suite), lambda name: target.relative_path.as_posix()))
        resolution = match_judgements(equivalents, identities)
        run.equivalents, run.unmatched = resolution.judged, resolution.problems
        run.review = [
            ReviewEntry(mutant=name, entry=j.describe(), function_hash=identities[name].function_hash)
            for name, j in sorted(resolution.review.items())
        ]
    if command is not None:
        run.baseline = mutants_against_the_baseline(
            command, scratch, list(suite), clean_s, options.max_children or os.cpu_count() or 1
        )
    run.diffs = project.diffs(
        [name for name in suite if run.missed(name)], lambda name: target.relative_path.as_posix()
    )
    run.wall_s = round(time.monotonic() - start, 1)
    report = build_report(run)
    page, _ = write_report(out, "mutate", report.to_json(), mutate_markdown(report))
    progress.say(_summary(report, page))
    for line in report.unmatched_equivalents:
        progress.say(f"ppaux mutate: {line}")
    for e in report.review_equivalents:
        progress.say(f"ppaux mutate: {REVIEW}: {e.entry} (now {e.mutant}, function_hash {e.function_hash})")
    for name in report.stale_equivalents:
        progress.say(f"ppaux mutate: {STALE}: {name}")
    return 0 if report.verdict == "pass" else 1
