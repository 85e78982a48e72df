"""The fuzz loop: rounds until the budget is spent or a signal arrives, failures kept and reported."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from fuzz.progress import Progress
from ppaux.isolation import DEFAULT_TIMEOUT
from fuzz.rounds import Round

# Examples per test in successive rounds on each placement: a quick sweep first so every test
# gets a turn on every placement early, then the nightly profile's own max_examples.
SCHEDULE = (50, 200, 1000)
# pytest exit statuses that mean the round itself could not run (usage, internal error, no tests).
_BROKEN = {2: "interrupted or usage error", 3: "internal error", 4: "usage error", 5: "no tests collected"}


class RunError(Exception):
    """The rounds cannot run at all (bad --tests, pytest usage error): one line for the user."""


@dataclass
class FuzzRun:
    budget: float
    placements: List[str]
    db: str
    impl: Optional[str]
    tests: Optional[str]
    report_dir: Path
    nightly_max_examples: int
    progress: Progress
    seed: Optional[int] = None
    max_failures: Optional[int] = None
    timeout: Optional[float] = None
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    rounds: List[Dict[str, Any]] = field(default_factory=list)
    failures: Dict[Tuple[str, str], Dict[str, Any]] = field(default_factory=dict)
    interrupted: List[Dict[str, Any]] = field(default_factory=list)
    timeline: List[Tuple[float, int, int]] = field(default_factory=list)
    stopped_by: Optional[str] = None
    elapsed: float = 0.0
    examples: int = 0

    def _signal(self, signum: int, frame: Any) -> None:
        self.stopped_by = signal.Signals(signum).name

    def max_examples(self, round_no: int) -> int:
        sweep = (round_no - 1) // len(self.placements)
        return SCHEDULE[sweep] if sweep < len(SCHEDULE) else self.nightly_max_examples

    def _record_failure(self, event: Dict[str, Any], rnd: Round, elapsed: float) -> None:
        key = (event["nodeid"], event.get("example") or event.get("error") or "")
        seen = self.failures.get(key)
        if seen is not None:
            seen["seen"] += 1
            seen["placements"] = sorted(set(seen["placements"]) | {rnd.placement})
            return
        self.failures[key] = {
            "nodeid": event["nodeid"], "round": rnd.number, "placements": [rnd.placement],
            "found_after_s": round(elapsed, 1), "example": event.get("example"), "blob": event.get("blob"),
            "error": event.get("error"), "text": event.get("text", ""), "seen": 1,
        }
        self.progress.say(f"fuzz: FAILURE {event['nodeid']} (round {rnd.number}, {rnd.placement}): "
                          f"{event.get('error') or 'see the report'}")

    def _sample(self, elapsed: float) -> None:
        point = (round(elapsed, 2), self.examples, len(self.failures))
        if not self.timeline or self.timeline[-1][1:] != point[1:] or elapsed - self.timeline[-1][0] >= 5:
            self.timeline.append(point)

    def run(self) -> None:
        workdir = self.report_dir / "rounds"
        workdir.mkdir(parents=True, exist_ok=True)
        for old in workdir.glob("round-*"):
            old.unlink()
        previous = {s: signal.signal(s, self._signal) for s in (signal.SIGINT, signal.SIGTERM)}
        start = time.monotonic()
        done_examples = 0
        round_no = 0
        try:
            while self.stopped_by is None and time.monotonic() - start < self.budget:
                round_no += 1
                placement = self.placements[(round_no - 1) % len(self.placements)]
                rnd = Round.start(round_no, placement, self.max_examples(round_no), mode="run", db=self.db,
                                  tests=self.tests, impl=self.impl, workdir=workdir,
                                  seed=None if self.seed is None else self.seed + round_no, timeout=self.timeout)
                reason = self._drive(rnd, start, done_examples)
                done_examples += rnd.examples
                status = rnd.proc.returncode
                self.rounds.append({"round": rnd.number, "placement": placement, "max_examples": rnd.max_examples,
                                    "examples": rnd.examples, "tests": rnd.collected, "exit_status": status,
                                    "ended_by": reason, "log": str(rnd.log_path)})
                if reason == "finished" and status in _BROKEN:
                    raise RunError(self._broken_message(rnd, status))
                if self.max_failures and len(self.failures) >= self.max_failures:
                    self.stopped_by = "max-failures"
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.elapsed = time.monotonic() - start
            self._sample(self.elapsed)
            last = self.rounds[-1]["placement"] if self.rounds else self.placements[0]
            self.progress.finish(self.elapsed, self.examples, len(self.failures), last, round_no)

    def _drive(self, rnd: Round, start: float, done_examples: int) -> str:
        """Follow one round until it ends, the budget is spent or a signal arrives; why it ended."""
        reason = "finished"
        while True:
            exited = rnd.proc.poll() is not None
            elapsed = time.monotonic() - start
            if not exited and self.stopped_by is not None:
                reason = self.stopped_by
                rnd.interrupt()
            elif not exited and elapsed >= self.budget:
                reason = "budget"
                rnd.interrupt()
            elif not exited and self.max_failures and len(self.failures) >= self.max_failures:
                reason = self.stopped_by = "max-failures"
                rnd.interrupt()
            self._take(rnd.poll_events(), rnd, elapsed, reason)
            self.examples = done_examples + rnd.examples
            self._sample(elapsed)
            self.progress.update(elapsed, self.examples, len(self.failures), rnd.placement, rnd.number)
            if exited or reason != "finished":
                rnd.proc.wait()
                self._take(rnd.poll_events(), rnd, elapsed, reason)
                self.examples = done_examples + rnd.examples
                return reason
            time.sleep(0.1)

    def _take(self, events: List[Dict[str, Any]], rnd: Round, elapsed: float, reason: str) -> None:
        for event in events:
            if event["kind"] == "failure":
                self._record_failure(event, rnd, elapsed)
            elif event["kind"] == "interrupted":
                # A test still running when the round was stopped: no verdict, and said so.
                self.interrupted.append({"nodeid": event["nodeid"], "round": rnd.number, "placement": rnd.placement,
                                         "stopped_by": reason})
                self.progress.say(f"fuzz: interrupted {event['nodeid']} (round {rnd.number}, {rnd.placement}): "
                                  f"still running when the round was stopped ({reason}); no verdict")

    @staticmethod
    def _broken_message(rnd: Round, status: int) -> str:
        if status == 5:
            return "no Hypothesis tests match the selection (--tests); nothing to fuzz"
        return f"pytest could not run the round ({_BROKEN[status]}, exit {status}); see {rnd.log_path}: " + \
            (rnd.log_tail(1) or "no output")

    def summary(self) -> Dict[str, Any]:
        return {
            "kind": "fuzz-run", "started_at": self.started_at, "budget_s": self.budget,
            "elapsed_s": round(self.elapsed, 1), "stopped_by": self.stopped_by or "budget",
            "complete": self.stopped_by in (None, "max-failures"), "impl": self.impl or "ppaux.transport", "db": self.db,
            "tests": self.tests, "seed": self.seed, "placements": self.placements, "examples": self.examples,
            "examples_per_s": round(self.examples / self.elapsed, 1) if self.elapsed else 0.0,
            "timeout_s": self.timeout or DEFAULT_TIMEOUT, "rounds": self.rounds, "failures": list(self.failures.values()),
            "interrupted": self.interrupted,
            "timeline": [list(p) for p in _thin(self.timeline, 600)],
        }


def _thin(points: List[Tuple[float, int, int]], limit: int) -> List[Tuple[float, int, int]]:
    if len(points) <= limit:
        return points
    step = len(points) / (limit - 1)
    picked = [points[int(i * step)] for i in range(limit - 1)]
    return picked + [points[-1]]


@dataclass
class Replay:
    db: str
    impl: Optional[str]
    tests: Optional[str]
    placement: str
    report_dir: Path
    timeout: Optional[float] = None
    rows: List[Dict[str, Any]] = field(default_factory=list)
    failures: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def run(self) -> None:
        workdir = self.report_dir / "rounds"
        workdir.mkdir(parents=True, exist_ok=True)
        rnd = Round.start(0, self.placement, None, mode="replay", db=self.db, tests=self.tests, impl=self.impl,
                          workdir=workdir, timeout=self.timeout)
        try:
            rnd.proc.wait()
        except KeyboardInterrupt:
            rnd.interrupt()
            raise
        for event in rnd.poll_events():
            if event["kind"] == "test":
                self.rows.append(event)
            elif event["kind"] == "failure":
                self.failures[event["nodeid"]] = event
        if rnd.proc.returncode in _BROKEN and rnd.proc.returncode != 5:
            raise RunError(FuzzRun._broken_message(rnd, rnd.proc.returncode))

    def summary(self) -> Dict[str, Any]:
        saved = [r for r in self.rows if r.get("saved")]
        still = [dict(r, **{k: self.failures.get(r["nodeid"], {}).get(k) for k in ("example", "blob", "error", "text")})
                 for r in saved if r["outcome"] == "failed"]
        fixed = [r for r in saved if r["outcome"] == "passed"]
        return {
            "kind": "fuzz-replay", "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "impl": self.impl or "ppaux.transport", "db": self.db, "placement": self.placement,
            "tests_with_saved_failures": len(saved), "saved_examples": sum(r["saved"] for r in saved),
            "still_failing": still, "no_longer_failing": fixed,
        }
