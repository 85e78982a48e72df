"""fuzz.json / fuzz.md and replay.json / replay.md under the report directory; shards' reports merged into one.

The reports are typed (:mod:`ppaux.report.fuzz`) and rendered in :mod:`ppaux.report.render`: this
module reads shards' files, merges them and writes the files."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ppaux.fuzz.options import FuzzUsageError
from ppaux.fuzz.timeline import add_up, thin
from ppaux.isolation import DEFAULT_TIMEOUT
from ppaux.report import FuzzFailure, FuzzReplayReport, FuzzRunReport, ReportFormatError, write_report
from ppaux.report.fuzz import ShardRun
from ppaux.report.render import fuzz_replay_markdown, fuzz_run_markdown
from ppaux.testing.advice import rerun_command
from ppaux.testing.impl import DEFAULT_IMPL

__all__ = ["check_report_dir", "merge_runs", "read_run", "replay_commands", "write_replay", "write_run"]


def check_report_dir(path: Path, option: str = "--report") -> Path:
    """``path`` resolved, or one line for the user when it cannot hold a report."""
    if path.exists() and not path.is_dir():
        raise FuzzUsageError(f"{option} {str(path)!r} is a file; expected a directory")
    return path.resolve()


def _replay_command(impl: str, db: str, timeout_s: float) -> str:
    """The ``ppaux fuzz replay`` that re-runs a run's saved failures against what the run fuzzed: without
    its --impl, a replay would run them against ppaux's own transport and find them all fixed."""
    return rerun_command(
        ["ppaux", "fuzz", "replay"],
        [("--impl", impl, DEFAULT_IMPL), ("--db", db, None), ("--timeout", timeout_s, DEFAULT_TIMEOUT)],
    )


def replay_commands(report: FuzzRunReport) -> list[str]:
    """The replays of a run's saved failures: one, or one per implementation, database and time limit of its shards."""
    return list(dict.fromkeys(_replay_command(*run) for run in report.runs))


def write_run(report: FuzzRunReport, report_dir: Path) -> Path:
    """fuzz.json and fuzz.md of ``report`` into ``report_dir``; the page's path."""
    page, _ = write_report(report_dir, "fuzz", report.to_json(), fuzz_run_markdown(report, replay_commands(report)))
    return page


def write_replay(report: FuzzReplayReport, report_dir: Path) -> Path:
    """replay.json and replay.md of ``report`` into ``report_dir``; the page's path."""
    page, _ = write_report(report_dir, "replay", report.to_json(), fuzz_replay_markdown(report))
    return page


def read_run(directory: Path, option: str = "--merge") -> FuzzRunReport:
    """A shard's ``fuzz.json``, or one line for the user saying why it cannot be read (``option``: what
    named the directory): a file of another format version is refused with the report's own line."""
    path = directory / "fuzz.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FuzzUsageError(f"{option} {str(directory)!r}: no fuzz.json there") from None
    except (OSError, ValueError) as exc:
        raise FuzzUsageError(f"{option} {str(directory)!r}: cannot read fuzz.json ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("kind") != "fuzz-run" or "workers" not in data:
        raise FuzzUsageError(f"{option} {str(directory)!r}: fuzz.json is not a report of `ppaux fuzz run`")
    try:
        return FuzzRunReport.from_json(data)
    except ReportFormatError as exc:
        raise FuzzUsageError(f"{option} {str(directory)!r}: {exc}") from None


def merge_runs(runs: Sequence[FuzzRunReport]) -> FuzzRunReport:
    """One report of several shards' runs: every round, worker and failure tagged with its shard,
    a failure found by more than one shard listed once, and the shards' timelines added up."""
    labels = [r.shard or f"run {i + 1}" for i, r in enumerate(runs)]
    tagged = [run.tagged(label) for run, label in zip(runs, labels)]
    failures: dict[tuple[str, str], FuzzFailure] = {}
    for run in tagged:
        for f in run.failures:
            first = failures.get(f.key)
            failures[f.key] = f if first is None else replace(first, seen=(first.seen or 1) + (f.seen or 1))
    elapsed = max(r.elapsed_s for r in runs)
    examples = sum(r.examples for r in runs)
    return FuzzRunReport(
        merged=True,
        started_at=min(r.started_at for r in runs),
        budget_s=max(r.budget_s for r in runs),
        elapsed_s=elapsed,
        stopped_by=next((r.stopped_by for r in runs if not r.complete), runs[0].stopped_by),
        complete=all(r.complete for r in runs),
        impl=", ".join(sorted({r.impl for r in runs})),
        db=", ".join(sorted({r.db for r in runs})),
        suite=", ".join(sorted({r.suite for r in runs})),
        tests=runs[0].tests,
        seed=None,
        shard=None,
        shards=tuple(
            ShardRun(
                shard=label,
                examples=r.examples,
                failures=len(r.failures),
                workers=len(r.workers),
                stopped_by=r.stopped_by,
                impl=r.impl,
                db=r.db,
                timeout_s=r.timeout_s,
                timeline=r.timeline,
            )
            for r, label in zip(runs, labels)
        ),
        placements=tuple(sorted({p for r in runs for p in r.placements})),
        workers=tuple(w for r in tagged for w in r.workers),
        dead_workers=tuple(d for r in tagged for d in r.dead_workers),
        examples=examples,
        examples_per_s=round(examples / elapsed, 1) if elapsed else 0.0,
        timeout_s=max(r.timeout_s for r in runs),
        rounds=tuple(x for r in tagged for x in r.rounds),
        failures=tuple(failures.values()),
        interrupted=tuple(x for r in tagged for x in r.interrupted),
        timeline=tuple(tuple(p) for p in thin(add_up([[list(p) for p in r.timeline] for r in runs]), 600)),
    )
