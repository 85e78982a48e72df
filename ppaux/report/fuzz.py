"""The fuzz job's reports as typed data: a run's fuzz.json (one shard's run, or several shards'
merged) with its workers, rounds, dead workers, interrupted tests and failures, and a replay's
replay.json. Written with ``to_json``, read back with ``from_json``, which refuses a file of another
format version with one line (:mod:`ppaux.report.versions`); their JSON Schemas ship beside this
module (``schemas/fuzz-run.schema.json``, ``schemas/fuzz-replay.schema.json``).

One class holds a shard's run and a merged run alike (:class:`FuzzRunReport`, ``merged`` and
``shards`` tell them apart, each row names its ``shard`` once merged): a merged report has every
field of a shard's, read by the same tools (the reports page, a replay's depths, ``failure_rows``)
and rendered by the same page, and a merge of reports is again one to merge, read or replay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ppaux.report.conformance import FindingKind, RegressionSummary, TestOutcome
from ppaux.report.versions import SCHEMA_VERSIONS, check_version

__all__ = [
    "DeadWorker",
    "FixedTest",
    "FuzzFailure",
    "FuzzReplayReport",
    "FuzzRound",
    "FuzzRunReport",
    "InterruptedTest",
    "ShardRun",
    "WorkerRun",
    "failure_key",
]

Verdict = Literal["pass", "fail"]
# Any: JSON as json.loads gives it (a report file, a round's event), read field by field below.
_JSON = Mapping[str, Any]
# A scope's bounds or a swarm configuration: ppaux.testing.depth's own JSON, kept as it is.
Depth = Mapping[str, Any]
# A timeline's points: [seconds since the start, examples so far, distinct failures so far].
Points = tuple[tuple[float, ...], ...]


def _points(raw: Iterable[Iterable[float]]) -> Points:
    return tuple(tuple(p) for p in raw)


def _depth_json(scope: Depth | None, swarm: Depth | None, swarm_seed: int | None) -> dict[str, object]:
    return {
        "scope": None if scope is None else dict(scope),
        "swarm": None if swarm is None else dict(swarm),
        "swarm_seed": swarm_seed,
    }


def _tagged(out: dict[str, object], shard: str | None) -> dict[str, object]:
    """A row of a merged report names its shard; a shard's own rows do not."""
    return out if shard is None else {**out, "shard": shard}


def failure_key(nodeid: str, example: str | None, error: str | None) -> tuple[str, str]:
    """What makes two failures one: the test and its minimal example, or, with no example (a hang,
    a crash), its error. A run counts the same failure again under it; a merge lists it once."""
    return nodeid, example or error or ""


@dataclass(frozen=True)
class FuzzFailure:
    """A distinct failure: the test, its contract clause, error, minimal example and blob (the five
    fields every reader takes, :data:`FAILURE_FIELDS`), whether it is a hang or a crash (``finding``),
    its failure text; where a run first found it (``shard``, ``worker``, ``round``, after
    ``found_after_s``), every worker and placement that hit it, how often (``seen``); the scope and
    swarm configuration it was found under; in a replay, how many examples the database had
    ``saved`` for it and its calls as code (``scenario``)."""

    nodeid: str
    clause: str | None = None
    error: str | None = None
    finding: FindingKind | None = None
    example: str | None = None
    blob: str | None = None
    text: str | None = None
    shard: str | None = None
    worker: int | None = None
    workers: tuple[int, ...] = ()
    round: int | None = None
    placements: tuple[str, ...] = ()
    found_after_s: float | None = None
    seen: int | None = None
    saved: int | None = None
    scope: Depth | None = None
    swarm: Depth | None = None
    swarm_seed: int | None = None
    scenario: Depth | None = None
    scenario_error: str | None = None

    @classmethod
    def of(cls, test: TestOutcome, text: str | None = None) -> FuzzFailure:
        """The failure its test's outcome records (made where the test ran), with pytest's failure
        text: a run adds where it found it, a replay what the database had saved."""
        return cls(test.nodeid, test.clause, test.error, test.finding, test.example, test.blob, text)

    @property
    def key(self) -> tuple[str, str]:
        return failure_key(self.nodeid, self.example, self.error)

    @property
    def has_depth(self) -> bool:
        return self.scope is not None or self.swarm is not None

    def to_json(self) -> dict[str, object]:
        # The five fields any reader takes are always there; the others where the failure has them.
        out: dict[str, object] = {k: getattr(self, k) for k in FAILURE_FIELDS}
        optional = {
            "finding": self.finding,
            "text": self.text,
            "shard": self.shard,
            "worker": self.worker,
            "workers": list(self.workers) if self.workers else None,
            "round": self.round,
            "placements": list(self.placements) if self.placements else None,
            "found_after_s": self.found_after_s,
            "seen": self.seen,
            "saved": self.saved,
            "scenario": None if self.scenario is None else dict(self.scenario),
            "scenario_error": self.scenario_error,
        }
        out.update((k, v) for k, v in optional.items() if v is not None)
        if self.has_depth:
            out.update(_depth_json(self.scope, self.swarm, self.swarm_seed))
        return out

    @classmethod
    def from_json(cls, row: _JSON) -> FuzzFailure:
        return cls(
            nodeid=row["nodeid"],
            clause=row.get("clause"),
            error=row.get("error"),
            finding=row.get("finding"),
            example=row.get("example"),
            blob=row.get("blob"),
            text=row.get("text"),
            shard=row.get("shard"),
            worker=row.get("worker"),
            workers=tuple(row.get("workers", ())),
            round=row.get("round"),
            placements=tuple(row.get("placements", ())),
            found_after_s=row.get("found_after_s"),
            seen=row.get("seen"),
            saved=row.get("saved"),
            scope=row.get("scope"),
            swarm=row.get("swarm"),
            swarm_seed=row.get("swarm_seed"),
            scenario=row.get("scenario"),
            scenario_error=row.get("scenario_error"),
        )


# What a failure carries for whoever acts on it (a regression test, an issue): failure_rows gives these.
FAILURE_FIELDS = ("nodeid", "clause", "error", "example", "blob")


@dataclass(frozen=True)
class FuzzRound:
    """One round of a worker: its placement, examples per test, tests collected (``None``: it died
    before collecting), examples run, how it ended and its exit status, its log, and the scope and
    swarm configuration it drew with."""

    worker: int
    round: int
    placement: str
    max_examples: int
    examples: int
    tests: int | None
    exit_status: int | None
    ended_by: str
    log: str
    scope: Depth | None = None
    swarm: Depth | None = None
    swarm_seed: int | None = None
    shard: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "worker": self.worker,
            "round": self.round,
            "placement": self.placement,
            "max_examples": self.max_examples,
            "examples": self.examples,
            "tests": self.tests,
            "exit_status": self.exit_status,
            "ended_by": self.ended_by,
            "log": self.log,
            **_depth_json(self.scope, self.swarm, self.swarm_seed),
        }
        return _tagged(out, self.shard)

    @classmethod
    def from_json(cls, row: _JSON) -> FuzzRound:
        return cls(
            row["worker"],
            row["round"],
            row["placement"],
            row["max_examples"],
            row["examples"],
            row["tests"],
            row["exit_status"],
            row["ended_by"],
            row["log"],
            row["scope"],
            row["swarm"],
            row["swarm_seed"],
            row.get("shard"),
        )


@dataclass(frozen=True)
class DeadWorker:
    """A worker whose round ended without a verdict (killed, crashed): the round, the test it was
    running (``None``: none yet), its exit status (negative: the signal) and its log."""

    worker: int
    round: int
    placement: str
    test: str | None
    exit_status: int
    log: str
    shard: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "worker": self.worker,
            "round": self.round,
            "placement": self.placement,
            "test": self.test,
            "exit_status": self.exit_status,
            "log": self.log,
        }
        return _tagged(out, self.shard)

    @classmethod
    def from_json(cls, row: _JSON) -> DeadWorker:
        return cls(
            row["worker"], row["round"], row["placement"], row["test"], row["exit_status"], row["log"], row.get("shard")
        )


@dataclass(frozen=True)
class InterruptedTest:
    """A test still running when its round was stopped: no verdict, and said so."""

    nodeid: str
    worker: int
    round: int
    placement: str
    stopped_by: str
    shard: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "nodeid": self.nodeid,
            "worker": self.worker,
            "round": self.round,
            "placement": self.placement,
            "stopped_by": self.stopped_by,
        }
        return _tagged(out, self.shard)

    @classmethod
    def from_json(cls, row: _JSON) -> InterruptedTest:
        return cls(row["nodeid"], row["worker"], row["round"], row["placement"], row["stopped_by"], row.get("shard"))


@dataclass(frozen=True)
class WorkerRun:
    """A worker's share of the run: its placements, rounds, examples, the failures it found first,
    whether it died (and where), and its timeline."""

    worker: int
    placements: tuple[str, ...]
    rounds: int
    examples: int
    failures: int
    died: DeadWorker | None
    timeline: Points
    shard: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "worker": self.worker,
            "placements": list(self.placements),
            "rounds": self.rounds,
            "examples": self.examples,
            "failures": self.failures,
            "died": None if self.died is None else self.died.to_json(),
            "timeline": [list(p) for p in self.timeline],
        }
        return _tagged(out, self.shard)

    @classmethod
    def from_json(cls, row: _JSON) -> WorkerRun:
        died = row["died"]
        return cls(
            row["worker"],
            tuple(row["placements"]),
            row["rounds"],
            row["examples"],
            row["failures"],
            None if died is None else DeadWorker.from_json(died),
            _points(row["timeline"]),
            row.get("shard"),
        )


@dataclass(frozen=True)
class ShardRun:
    """A merged report's line for one shard's run: what it fuzzed with, how far it got, its timeline."""

    shard: str
    examples: int
    failures: int
    workers: int
    stopped_by: str
    impl: str
    db: str
    timeout_s: float
    timeline: Points

    def to_json(self) -> dict[str, object]:
        return {**vars(self), "timeline": [list(p) for p in self.timeline]}

    @classmethod
    def from_json(cls, row: _JSON) -> ShardRun:
        return cls(**{**row, "timeline": _points(row["timeline"])})


@dataclass(frozen=True)
class FuzzRunReport:
    """``ppaux fuzz run``'s report (fuzz.json), or several shards' merged by ``ppaux fuzz report
    --merge`` (``merged``, one ``shards`` line each): when and how long it ran, what it fuzzed, its
    workers, rounds, dead workers, interrupted tests and distinct failures, and its verdict."""

    started_at: str
    budget_s: float
    elapsed_s: float
    stopped_by: str
    complete: bool
    impl: str
    db: str
    suite: str
    tests: str | None
    seed: int | None
    shard: str | None
    placements: tuple[str, ...]
    workers: tuple[WorkerRun, ...]
    dead_workers: tuple[DeadWorker, ...]
    examples: int
    examples_per_s: float
    timeout_s: float
    rounds: tuple[FuzzRound, ...]
    failures: tuple[FuzzFailure, ...]
    interrupted: tuple[InterruptedTest, ...]
    timeline: Points
    merged: bool = False
    shards: tuple[ShardRun, ...] = ()
    kind: str = field(default="fuzz-run", init=False)
    schema_version: int = field(default=SCHEMA_VERSIONS["fuzz-run"], init=False)

    @property
    def why_not_clean(self) -> str | None:
        """Why the run fails though no test failed: a worker died, or nothing was fuzzed."""
        if self.dead_workers:
            return f"{len(self.dead_workers)} worker(s) died: see the report"
        if not self.failures and self.examples == 0:
            return "no example ran within the budget: nothing was fuzzed"
        return None

    @property
    def verdict(self) -> Verdict:
        """pass: examples ran, no test failed and no worker died."""
        return "fail" if self.failures or self.why_not_clean else "pass"

    @property
    def runs(self) -> list[tuple[str, str, float]]:
        """Each run's implementation, database and per-call limit: a merged report's shards', else its own."""
        if self.shards:
            return [(h.impl, h.db, h.timeout_s) for h in self.shards]
        return [(self.impl, self.db, self.timeout_s)]

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "schema_version": self.schema_version,
            "verdict": self.verdict,
            "merged": self.merged,
            "started_at": self.started_at,
            "budget_s": self.budget_s,
            "elapsed_s": self.elapsed_s,
            "stopped_by": self.stopped_by,
            "complete": self.complete,
            "impl": self.impl,
            "db": self.db,
            "suite": self.suite,
            "tests": self.tests,
            "seed": self.seed,
            "shard": self.shard,
            "shards": [h.to_json() for h in self.shards],
            "placements": list(self.placements),
            "workers": [w.to_json() for w in self.workers],
            "dead_workers": [d.to_json() for d in self.dead_workers],
            "examples": self.examples,
            "examples_per_s": self.examples_per_s,
            "timeout_s": self.timeout_s,
            "rounds": [r.to_json() for r in self.rounds],
            "failures": [f.to_json() for f in self.failures],
            "interrupted": [i.to_json() for i in self.interrupted],
            "timeline": [list(p) for p in self.timeline],
        }

    @classmethod
    def from_json(cls, data: _JSON) -> FuzzRunReport:
        """The report ``to_json`` gave; :class:`~ppaux.report.versions.ReportFormatError` for a file of
        another format version (a fuzz.json from before 0.4 included)."""
        check_version(data, "fuzz-run")
        return cls(
            started_at=data["started_at"],
            budget_s=data["budget_s"],
            elapsed_s=data["elapsed_s"],
            stopped_by=data["stopped_by"],
            complete=data["complete"],
            impl=data["impl"],
            db=data["db"],
            suite=data["suite"],
            tests=data["tests"],
            seed=data["seed"],
            shard=data["shard"],
            placements=tuple(data["placements"]),
            workers=tuple(WorkerRun.from_json(w) for w in data["workers"]),
            dead_workers=tuple(DeadWorker.from_json(d) for d in data["dead_workers"]),
            examples=data["examples"],
            examples_per_s=data["examples_per_s"],
            timeout_s=data["timeout_s"],
            rounds=tuple(FuzzRound.from_json(r) for r in data["rounds"]),
            failures=tuple(FuzzFailure.from_json(f) for f in data["failures"]),
            interrupted=tuple(InterruptedTest.from_json(i) for i in data["interrupted"]),
            timeline=_points(data["timeline"]),
            merged=data["merged"],
            shards=tuple(ShardRun.from_json(h) for h in data["shards"]),
        )

    def tagged(self, shard: str) -> FuzzRunReport:
        """This run's rows, each naming ``shard``: a merged report's share of it."""
        return replace(
            self,
            workers=tuple(replace(w, shard=shard) for w in self.workers),
            dead_workers=tuple(replace(d, shard=shard) for d in self.dead_workers),
            rounds=tuple(replace(r, shard=shard) for r in self.rounds),
            failures=tuple(replace(f, shard=shard) for f in self.failures),
            interrupted=tuple(replace(i, shard=shard) for i in self.interrupted),
        )


@dataclass(frozen=True)
class FixedTest:
    """A test with saved failures that passes now: how many examples were saved, and the scope
    and swarm configuration it was replayed under (none: the default scope)."""

    nodeid: str
    saved: int
    scope: Depth | None = None
    swarm: Depth | None = None
    swarm_seed: int | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"nodeid": self.nodeid, "saved": self.saved}
        if self.scope is not None or self.swarm is not None:
            out.update(_depth_json(self.scope, self.swarm, self.swarm_seed))
        return out

    @classmethod
    def from_json(cls, row: _JSON) -> FixedTest:
        return cls(row["nodeid"], row["saved"], row.get("scope"), row.get("swarm"), row.get("swarm_seed"))


@dataclass(frozen=True)
class FuzzReplayReport:
    """``ppaux fuzz replay``'s report (replay.json): the saved failures re-run against an
    implementation (the tests the database had examples saved for, and how many), split into those
    that still fail and those that no longer do; the regression files written from them
    (``--regressions``)."""

    at: str
    impl: str
    db: str
    placement: str
    tests_with_saved_failures: int
    saved_examples: int
    still_failing: tuple[FuzzFailure, ...]
    no_longer_failing: tuple[FixedTest, ...]
    regressions: RegressionSummary | None = None
    kind: str = field(default="fuzz-replay", init=False)
    schema_version: int = field(default=SCHEMA_VERSIONS["fuzz-replay"], init=False)

    @property
    def verdict(self) -> Verdict:
        """pass: no saved failure fails any more."""
        return "fail" if self.still_failing else "pass"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind,
            "schema_version": self.schema_version,
            "verdict": self.verdict,
            "at": self.at,
            "impl": self.impl,
            "db": self.db,
            "placement": self.placement,
            "tests_with_saved_failures": self.tests_with_saved_failures,
            "saved_examples": self.saved_examples,
            "still_failing": [f.to_json() for f in self.still_failing],
            "no_longer_failing": [t.to_json() for t in self.no_longer_failing],
        }
        if self.regressions is not None:
            out["regressions"] = self.regressions.to_json()
        return out

    @classmethod
    def from_json(cls, data: _JSON) -> FuzzReplayReport:
        """The report ``to_json`` gave; :class:`~ppaux.report.versions.ReportFormatError` for a file of
        another format version."""
        check_version(data, "fuzz-replay")
        found = data.get("regressions")
        return cls(
            at=data["at"],
            impl=data["impl"],
            db=data["db"],
            placement=data["placement"],
            tests_with_saved_failures=data["tests_with_saved_failures"],
            saved_examples=data["saved_examples"],
            still_failing=tuple(FuzzFailure.from_json(f) for f in data["still_failing"]),
            no_longer_failing=tuple(FixedTest.from_json(t) for t in data["no_longer_failing"]),
            regressions=None if found is None else RegressionSummary.from_json(found),
        )
