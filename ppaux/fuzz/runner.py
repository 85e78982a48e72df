"""The fuzz loop: N workers run rounds side by side until the budget is spent or a signal arrives;
failures are kept once, however many workers hit them, and reported."""

from __future__ import annotations

import random
import signal
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from ppaux.fuzz.database import DatabaseError, open_database
from ppaux.fuzz.depth import RoundDepth, round_depth, save_depth
from ppaux.fuzz.events import Interrupted, RoundEvent, RoundFailure, TestDone
from ppaux.fuzz.options import FuzzUsageError, format_duration
from ppaux.fuzz.rounds import Round, Suite
from ppaux.fuzz.timeline import Timeline, thin
from ppaux.isolation import DEFAULT_TIMEOUT, MONOTONIC, Clock, describe_exitcode
from ppaux.report import FuzzFailure, FuzzReplayReport, FuzzRunReport
from ppaux.report.conformance import Outcome
from ppaux.report.fuzz import FAILURE_FIELDS, DeadWorker, FixedTest, FuzzRound, InterruptedTest, WorkerRun
from ppaux.testing.impl import DEFAULT_IMPL
from ppaux.testing.progress import Progress

__all__ = ["FuzzRun", "Replay", "RunError", "Worker", "failure_rows", "progress_line"]

# Examples per test in successive rounds on each placement: a quick sweep first so every test
# gets a turn on every placement early, then the nightly profile's own max_examples.
SCHEDULE = (50, 200, 1000)
# pytest exit statuses that, before any test ran, mean the selection cannot run anywhere: every
# worker would say the same. After that, a round that ends so is a worker that died.
_BROKEN = {2: "interrupted or collection error", 3: "internal error", 4: "usage error", 5: "no tests collected"}
# How often the run looks at its rounds (their event files, their processes): a round's end is seen
# within 20 ms, and each look reads only what the rounds appended since the last.
POLL = 0.02


class RunError(FuzzUsageError):
    """The rounds cannot run at all (bad --tests, pytest usage error): one line for the user."""


def progress_line(budget: float, elapsed: float, examples: int, failures: int, placement: str, round_no: int) -> str:
    """What a fuzz run's progress line says: time spent of the budget, the round, examples and their rate, failures."""
    rate = examples / elapsed if elapsed > 0 else 0.0
    return (
        f"fuzz {format_duration(elapsed)}/{format_duration(budget)}  round {round_no} ({placement})  "
        f"examples {examples:,}  {rate:,.0f}/s  failures {failures}"
    )


def failure_rows(report: FuzzRunReport | FuzzReplayReport | Mapping[str, Any]) -> list[dict[str, str | None]]:
    """Each distinct failure of a run (or a merged run, or a replay's still-failing tests) as
    ``nodeid, clause, error, example, blob``: the one place to read them from. ``report``: the typed
    report, or its fuzz.json / replay.json as read (a file of another format version is refused)."""
    if isinstance(report, Mapping):
        report = (FuzzReplayReport if report.get("kind") == "fuzz-replay" else FuzzRunReport).from_json(report)
    rows = report.failures if isinstance(report, FuzzRunReport) else report.still_failing
    return [{k: getattr(row, k) for k in FAILURE_FIELDS} for row in rows]


@dataclass
class Worker:
    """One slot of the run: rounds one after another on its own placements, until it stops or dies."""

    number: int
    placements: list[str]
    timeline: Timeline = field(default_factory=Timeline)
    current: Round | None = None
    rounds: int = 0
    examples_done: int = 0
    failures: int = 0
    died: DeadWorker | None = None

    @property
    def examples(self) -> int:
        return self.examples_done + (self.current.examples if self.current else 0)

    def stats(self) -> WorkerRun:
        points = tuple(tuple(p) for p in thin(self.timeline.points, 300))
        return WorkerRun(
            self.number, tuple(self.placements), self.rounds, self.examples, self.failures, self.died, points
        )


@dataclass
class FuzzRun:
    budget: float
    suite: Suite
    workers: list[Worker]
    nightly_max_examples: int
    progress: Progress
    seed: int | None = None
    max_failures: int | None = None
    # Seconds a stopped round has to write its report before it is killed.
    grace: float = 10.0
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    rounds: list[FuzzRound] = field(default_factory=list)
    failures: dict[tuple[str, str], FuzzFailure] = field(default_factory=dict)
    interrupted: list[InterruptedTest] = field(default_factory=list)
    timeline: Timeline = field(default_factory=Timeline)
    stopped_by: str | None = None
    elapsed: float = 0.0
    clock: Clock = field(default=MONOTONIC, repr=False)
    # Draws the swarm seeds of a run without --seed (each recorded with its round).
    swarm_seeds: random.Random = field(default_factory=random.Random, repr=False)

    @property
    def examples(self) -> int:
        return sum(w.examples for w in self.workers)

    @property
    def dead(self) -> list[DeadWorker]:
        return [w.died for w in self.workers if w.died]

    def _signal(self, signum: int, frame: types.FrameType | None) -> None:
        self.stopped_by = signal.Signals(signum).name

    def max_examples(self, worker: Worker) -> int:
        sweep = worker.rounds // len(worker.placements)
        return SCHEDULE[sweep] if sweep < len(SCHEDULE) else self.nightly_max_examples

    def depth(self, worker: Worker, seed: int | None) -> RoundDepth:
        """The scope and swarm configuration of the worker's next round (:mod:`ppaux.fuzz.depth`)."""
        return round_depth(worker.rounds, seed, self.swarm_seeds, lead=worker.number - 1)

    def _stop_reason(self, elapsed: float) -> str | None:
        if self.stopped_by is None and self.max_failures and len(self.failures) >= self.max_failures:
            self.stopped_by = "max-failures"
        return self.stopped_by or ("budget" if elapsed >= self.budget else None)

    def run(self) -> None:
        self.suite.workdir.mkdir(parents=True, exist_ok=True)
        for old in self.suite.workdir.glob("worker-*"):
            old.unlink()
        previous = {s: signal.signal(s, self._signal) for s in (signal.SIGINT, signal.SIGTERM)}
        start = self.clock.monotonic()
        try:
            while not self.loop_once(self.clock.monotonic() - start):
                self.clock.sleep(POLL)
        finally:
            for worker in self.workers:
                if worker.current is not None:  # only on an error: kill what is left, no verdict to wait for
                    worker.current.kill()
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.elapsed = self.clock.monotonic() - start
            self._sample(self.elapsed, force=True)
            self.progress.finish(
                progress_line(
                    self.budget, self.elapsed, self.examples, len(self.failures), self._where(), len(self.rounds)
                )
            )

    def loop_once(self, elapsed: float) -> bool:
        """One turn of the run's loop at ``elapsed`` s: each worker starts, stops or takes the end of
        its round; whether the run is over (every round ended, and the budget spent, a stop asked
        for, or every worker dead)."""
        reason = self._stop_reason(elapsed)
        for worker in self.workers:
            self._step(worker, elapsed, reason)
        self._sample(elapsed)
        return all(w.current is None for w in self.workers) and (
            reason is not None or all(w.died for w in self.workers)
        )

    def _where(self) -> str:
        """Where the rounds run, for the progress line: the placement of a lone worker's round."""
        live = [w.current for w in self.workers if w.current]
        if len(self.workers) > 1:
            return f"{len(live)}/{len(self.workers)} workers"
        return (
            live[0].placement if live else self.rounds[-1].placement if self.rounds else self.workers[0].placements[0]
        )

    def _step(self, worker: Worker, elapsed: float, reason: str | None) -> None:
        """Start the worker's next round, or follow the one it runs: stop it, or take its end."""
        if worker.current is None:
            if reason is None and worker.died is None:
                placement = worker.placements[worker.rounds % len(worker.placements)]
                max_examples = self.max_examples(worker)
                worker.rounds += 1
                seed = None if self.seed is None else self.seed + 1000 * (worker.number - 1) + worker.rounds
                worker.current = Round.start(
                    self.suite,
                    worker.rounds,
                    placement,
                    max_examples,
                    mode="run",
                    worker=(worker.number, len(self.workers)),
                    seed=seed,
                    clock=self.clock,
                    depth=self.depth(worker, seed),
                )
            return
        rnd = worker.current
        if reason is not None:
            rnd.stop(self.grace)
        ended = rnd.reap()
        self._take(rnd.poll_events(), worker, elapsed, reason or "finished")
        if ended:
            self._end_round(worker, elapsed, reason or "finished")

    def _end_round(self, worker: Worker, elapsed: float, reason: str) -> None:
        rnd = worker.current
        assert rnd is not None and rnd.max_examples is not None  # a run's rounds have one; a replay's have none
        rnd.kill()  # children the round left behind, if any: its process group goes with it
        self._take(rnd.poll_events(), worker, elapsed, reason)
        worker.examples_done += rnd.examples
        worker.current = None
        status = rnd.proc.returncode
        self.rounds.append(
            FuzzRound(
                worker=worker.number,
                round=rnd.number,
                placement=rnd.placement,
                max_examples=rnd.max_examples,
                examples=rnd.examples,
                tests=rnd.collected,
                exit_status=status,
                ended_by=reason,
                log=str(rnd.log_path),
                scope=rnd.depth.scope,
                swarm=rnd.depth.swarm,
                swarm_seed=rnd.depth.swarm_seed,
            )
        )
        if reason != "finished" or status in (0, 1):
            return
        if status in _BROKEN and rnd.collected is None or status == 5:
            raise RunError(self._broken_message(rnd, status))
        worker.died = DeadWorker(worker.number, rnd.number, rnd.placement, rnd.running, status, str(rnd.log_path))
        self.progress.say(
            f"fuzz: worker {worker.number} died in round {rnd.number} ({rnd.placement}) running "
            f"{rnd.running or 'no test yet'}: {describe_exitcode(status)}; the other workers go on"
        )

    def _take(self, events: Sequence[RoundEvent], worker: Worker, elapsed: float, reason: str) -> None:
        rnd: Round = worker.current  # type: ignore[assignment]  # called only while the worker has a round
        for event in events:
            if isinstance(event, RoundFailure):
                self._record_failure(event, worker, rnd, elapsed)
            elif isinstance(event, Interrupted):
                # A test still running when the round was stopped: no verdict, and said so.
                self.interrupted.append(InterruptedTest(event.nodeid, worker.number, rnd.number, rnd.placement, reason))
                self.progress.say(
                    f"fuzz: interrupted {event.nodeid} (worker {worker.number}, round {rnd.number}, "
                    f"{rnd.placement}): still running when the round was stopped ({reason}); no verdict"
                )

    def _record_failure(self, event: RoundFailure, worker: Worker, rnd: Round, elapsed: float) -> None:
        failure = replace(
            FuzzFailure.of(event.test, event.text),
            worker=worker.number,
            workers=(worker.number,),
            round=rnd.number,
            placements=(rnd.placement,),
            found_after_s=round(elapsed, 1),
            seen=1,
            # What the round drew with: a replay runs the failure under the same.
            scope=rnd.depth.scope,
            swarm=rnd.depth.swarm,
            swarm_seed=rnd.depth.swarm_seed,
        )
        seen = self.failures.get(failure.key)
        if seen is not None:
            self.failures[failure.key] = replace(
                seen,
                seen=(seen.seen or 1) + 1,
                placements=tuple(sorted({*seen.placements, rnd.placement})),
                workers=tuple(sorted({*seen.workers, worker.number})),
            )
            return
        worker.failures += 1
        self.failures[failure.key] = failure
        self._keep_depth(rnd.depth)
        self.progress.say(
            f"fuzz: FAILURE {event.nodeid} (worker {worker.number}, round {rnd.number}, {rnd.placement}): "
            f"{event.test.error or 'see the report'}"
        )

    def _keep_depth(self, depth: RoundDepth) -> None:
        """The failure's depth into the example database, for a replay that has only the database."""
        try:
            save_depth(open_database(self.suite.db), depth)
        except DatabaseError as exc:  # the rounds saved their failures there; the report still has the depth
            self.progress.say(f"fuzz: {exc}")

    def _sample(self, elapsed: float, force: bool = False) -> None:
        for worker in self.workers:
            worker.timeline.sample(elapsed, worker.examples, worker.failures, force)
        self.timeline.sample(elapsed, self.examples, len(self.failures), force)
        self.progress.update(
            progress_line(self.budget, elapsed, self.examples, len(self.failures), self._where(), len(self.rounds) + 1)
        )

    def _broken_message(self, rnd: Round, status: int) -> str:
        if status == 5 and self.suite.shard is not None and rnd.selected:
            k, n = self.suite.shard
            return f"shard {k}/{n} holds none of the {rnd.selected} selected Hypothesis tests; nothing to fuzz here"
        if status == 5:
            return "no Hypothesis tests match the selection (--tests); nothing to fuzz"
        return f"pytest could not run the round ({_BROKEN[status]}, exit {status}); see {rnd.log_path}: " + (
            rnd.log_tail(1) or "no output"
        )

    def summary(self) -> FuzzRunReport:
        """The run's report (fuzz.json), as far as it got."""
        return FuzzRunReport(
            started_at=self.started_at,
            budget_s=self.budget,
            elapsed_s=round(self.elapsed, 1),
            stopped_by=self.stopped_by or "budget",
            complete=self.stopped_by in (None, "max-failures"),
            impl=self.suite.impl or DEFAULT_IMPL,
            db=self.suite.db,
            suite=self.suite.what,
            tests=self.suite.tests,
            seed=self.seed,
            shard=f"{self.suite.shard[0]}/{self.suite.shard[1]}" if self.suite.shard else None,
            placements=tuple(sorted({p for w in self.workers for p in w.placements})),
            workers=tuple(w.stats() for w in self.workers),
            dead_workers=tuple(self.dead),
            examples=self.examples,
            examples_per_s=round(self.examples / self.elapsed, 1) if self.elapsed else 0.0,
            timeout_s=self.suite.timeout or DEFAULT_TIMEOUT,
            rounds=tuple(self.rounds),
            failures=tuple(self.failures.values()),
            interrupted=tuple(self.interrupted),
            timeline=tuple(tuple(p) for p in thin(self.timeline.points, 600)),
        )


def verdict(report: FuzzRunReport) -> tuple[int, str | None]:
    """The run's exit status (1: its verdict is fail), and why when no test failed: a dead worker, or nothing fuzzed."""
    return (1 if report.verdict == "fail" else 0), report.why_not_clean


@dataclass(frozen=True)
class ReplayedTest:
    """A test of the replay rounds: its outcome (failed if it failed under any depth), the examples the
    database had saved for it, and the depth it ran under (the one it failed under, if it failed)."""

    nodeid: str
    outcome: Outcome
    saved: int
    depth: RoundDepth


@dataclass
class Replay:
    suite: Suite
    placement: str
    # Each test of the replay rounds, and the first failure event of each failing test.
    rows: list[ReplayedTest] = field(default_factory=list)
    failures: dict[str, RoundFailure] = field(default_factory=dict)
    # One replay round per scope and swarm configuration the run's failures were found under.
    depths: list[RoundDepth] = field(default_factory=lambda: [RoundDepth()])

    def run(self) -> None:
        self.suite.workdir.mkdir(parents=True, exist_ok=True)
        for number, depth in enumerate(self.depths):
            self._replay(number, depth)

    def _replay(self, number: int, depth: RoundDepth) -> None:
        rnd = Round.start(self.suite, number, self.placement, None, mode="replay", depth=depth)
        try:
            rnd.proc.wait()
        except KeyboardInterrupt:
            rnd.interrupt()
            raise
        finally:
            rnd.kill()
        for event in rnd.poll_events():
            if isinstance(event, TestDone):
                self._take_row(ReplayedTest(event.nodeid, event.outcome, event.saved or 0, depth))
            elif isinstance(event, RoundFailure) and event.nodeid not in self.failures:
                self.failures[event.nodeid] = event
        status = rnd.proc.returncode
        if status not in (0, 1, 5):
            raise RunError(
                f"pytest could not run the replay (exit {status}); see {rnd.log_path}: "
                + (rnd.log_tail(1) or "no output")
            )

    def _take_row(self, row: ReplayedTest) -> None:
        """A test's row of one replay round: a test that fails under any depth still fails (with that depth)."""
        seen = next((i for i, r in enumerate(self.rows) if r.nodeid == row.nodeid), None)
        if seen is None:
            self.rows.append(row)
            return
        before = self.rows[seen]
        kept = row if row.outcome == "failed" and before.outcome != "failed" else before
        self.rows[seen] = replace(kept, saved=max(before.saved, row.saved))

    def _still_failing(self, row: ReplayedTest) -> FuzzFailure:
        """A test that still fails, with its failure's details and its calls as code (none where the round
        wrote no failure event)."""
        failure = self.failures.get(row.nodeid)
        depth = row.depth
        still = FuzzFailure(row.nodeid) if failure is None else replace(
            FuzzFailure.of(failure.test, failure.text),
            scenario=failure.test.scenario,
            scenario_error=failure.test.scenario_error,
        )  # fmt: skip
        return replace(still, saved=row.saved, scope=depth.scope, swarm=depth.swarm, swarm_seed=depth.swarm_seed)

    def summary(self) -> FuzzReplayReport:
        """The replay's report (replay.json): the tests with saved failures, those that still fail
        (with their failure's details), those that pass now."""
        saved = [r for r in self.rows if r.saved]
        still = [self._still_failing(r) for r in saved if r.outcome == "failed"]
        fixed = [
            FixedTest(r.nodeid, r.saved, r.depth.scope, r.depth.swarm, r.depth.swarm_seed)
            for r in saved
            if r.outcome == "passed"
        ]
        return FuzzReplayReport(
            at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            impl=self.suite.impl or DEFAULT_IMPL,
            db=self.suite.db,
            placement=self.placement,
            tests_with_saved_failures=len(saved),
            saved_examples=sum(r.saved for r in saved),
            still_failing=tuple(still),
            no_longer_failing=tuple(fixed),
        )
