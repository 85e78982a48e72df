"""The mutation reports as typed data: ``ppaux mutate``'s mutate.json (:class:`MutateReport`) and
ppaux's own runs' mutation.json (``python -m reports mutation``, :class:`MutationReport`).

Two kinds, not one: they answer different questions. ``mutate`` scores a user's implementation by
ppaux's suite (beside the user's own tests, the baseline) over one module, mutant by mutant;
``mutation`` scores a checkout's package by its own tests, module by module against each module's
gate, with the markings and judgement files that scope reads. One class for both would be a bag of
fields each present for one of them. What they share is typed once: the score's fields (each
kind's ``killed``, ``equivalent``, ``score``), the equivalence judgements to review
(:class:`ReviewEntry`), and the one ``verdict``.

The models hold plain values (names, counts, mutmut's verdict strings): the mutation layer
(:mod:`ppaux.mutation`) runs mutmut and builds them, this layer only reads and writes them. Each
``from_json`` refuses a file of another format version with one line
(:mod:`ppaux.report.versions`); the JSON Schemas ship beside this module (``schemas/mutate.schema.json``,
``schemas/mutation.schema.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ppaux.report.conformance import Verdict
from ppaux.report.versions import SCHEMA_VERSIONS, check_version

__all__ = [
    "SIDES",
    "STALE",
    "BaselineComparison",
    "Marking",
    "ModuleScore",
    "MutantResult",
    "MutateReport",
    "MutationReport",
    "ReviewEntry",
    "Survivor",
    "SurvivorIdentity",
    "verdict_of",
]

# How a stale equivalence entry is named, on the console and in the report.
STALE = "stale equivalence entry (killed, or no such mutant)"
# Who killed a mutant, in the side-by-side table's order.
SIDES = ("both", "only ppaux", "only the baseline", "neither")

# Any: JSON as json.loads gives it, read by the one function that checks each field it takes.
_JSON = Mapping[str, Any]


def verdict_of(passes: bool) -> Verdict:
    """``pass`` or ``fail``: the one vocabulary of every report's verdict."""
    return "pass" if passes else "fail"


@dataclass(frozen=True)
class ReviewEntry:
    """An equivalence judgement whose function changed since it was made: the mutant it now
    matches, the judgement (``entry``, as a message names it) and the function's hash now."""

    mutant: str
    entry: str
    function_hash: str

    def to_json(self) -> dict[str, object]:
        return {"mutant": self.mutant, "entry": self.entry, "function_hash": self.function_hash}

    @classmethod
    def from_json(cls, data: _JSON) -> ReviewEntry:
        return cls(data["mutant"], data["entry"], data["function_hash"])


# --- ppaux mutate: mutate.json -------------------------------------------------------------------


@dataclass(frozen=True)
class MutantResult:
    """One mutant of ``ppaux mutate``'s run: mutmut's verdict with ppaux's suite (``suite``) and
    whether that verdict means the suite ``killed`` it, the baseline's (``survived``, ``killed``,
    ``timeout``; ``None`` without a baseline), the reason it was judged equivalent, and, where
    either side missed it, its ``diff`` and the ``line`` it changes."""

    mutant: str
    suite: str
    killed: bool
    baseline: str | None = None
    equivalent: str | None = None
    diff: str | None = None
    line: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"mutant": self.mutant, "suite": self.suite, "killed": self.killed}
        optional = {"baseline": self.baseline, "equivalent": self.equivalent, "diff": self.diff, "line": self.line}
        out.update((k, v) for k, v in optional.items() if v is not None)
        return out

    @classmethod
    def from_json(cls, data: _JSON) -> MutantResult:
        optional = (data.get("baseline"), data.get("equivalent"), data.get("diff"), data.get("line"))
        return cls(data["mutant"], data["suite"], data["killed"], *optional)


@dataclass(frozen=True)
class BaselineComparison:
    """The baseline (the project's own tests, ``command``) over the same mutants as ppaux's score:
    how many it killed, its score, and how many mutants each side killed (:data:`SIDES`)."""

    command: str
    killed: int
    score: float
    side_by_side: Mapping[str, int]

    def to_json(self) -> dict[str, object]:
        return {
            "command": self.command,
            "killed": self.killed,
            "score": self.score,
            "side_by_side": {side: self.side_by_side[side] for side in SIDES},
        }

    @classmethod
    def from_json(cls, data: _JSON) -> BaselineComparison:
        return cls(data["command"], data["killed"], data["score"], dict(data["side_by_side"]))


@dataclass(frozen=True)
class MutateReport:
    """``ppaux mutate``'s report: the implementation and how it was mutated and tested, the suite's
    score (``killed`` of the mutants not judged ``equivalent``) against the ``gate``, the run's
    verdict (the score reaches the gate and every equivalence judgement matches one mutant),
    mutmut's verdict counts, every mutant, and the side-by-side with a baseline, where one ran."""

    implementation: str
    module: str
    mutmut: str
    profile: str
    marks: str
    tests: str | None
    kill_set: int
    left_out: tuple[str, ...]
    wall_s: float
    total: int
    equivalent: int
    killed: int
    score: float
    gate: float
    verdict: Verdict
    verdicts: Mapping[str, int]
    stale_equivalents: tuple[str, ...] = ()
    unmatched_equivalents: tuple[str, ...] = ()
    review_equivalents: tuple[ReviewEntry, ...] = ()
    mutants: tuple[MutantResult, ...] = ()
    baseline: BaselineComparison | None = None
    kind: str = field(default="mutate", init=False)
    schema_version: int = field(default=SCHEMA_VERSIONS["mutate"], init=False)

    @property
    def counted(self) -> int:
        """The mutants the score counts: all but those judged equivalent."""
        return self.total - self.equivalent

    @property
    def survivors(self) -> tuple[MutantResult, ...]:
        """The mutants shown with their diff: those ppaux's suite or the baseline let survive."""
        return tuple(m for m in self.mutants if m.diff is not None)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind,
            "schema_version": self.schema_version,
            "implementation": self.implementation,
            "module": self.module,
            "mutmut": self.mutmut,
            "profile": self.profile,
            "marks": self.marks,
            "tests": self.tests,
            "kill_set": self.kill_set,
            "left_out": list(self.left_out),
            "wall_s": self.wall_s,
            "total": self.total,
            "equivalent": self.equivalent,
            "killed": self.killed,
            "score": self.score,
            "gate": self.gate,
            "verdict": self.verdict,
            "verdicts": dict(self.verdicts),
            "stale_equivalents": list(self.stale_equivalents),
            "unmatched_equivalents": list(self.unmatched_equivalents),
            "review_equivalents": [e.to_json() for e in self.review_equivalents],
            "mutants": [m.to_json() for m in self.mutants],
        }
        if self.baseline is not None:
            out["baseline"] = self.baseline.to_json()
        return out

    @classmethod
    def from_json(cls, data: _JSON) -> MutateReport:
        """The report ``to_json`` gave; :class:`~ppaux.report.versions.ReportFormatError` for a
        file of another format version."""
        check_version(data, "mutate")
        baseline = data.get("baseline")
        return cls(
            implementation=data["implementation"],
            module=data["module"],
            mutmut=data["mutmut"],
            profile=data["profile"],
            marks=data["marks"],
            tests=data["tests"],
            kill_set=data["kill_set"],
            left_out=tuple(data["left_out"]),
            wall_s=data["wall_s"],
            total=data["total"],
            equivalent=data["equivalent"],
            killed=data["killed"],
            score=data["score"],
            gate=data["gate"],
            verdict=cast(Verdict, data["verdict"]),
            verdicts=dict(data["verdicts"]),
            stale_equivalents=tuple(data["stale_equivalents"]),
            unmatched_equivalents=tuple(data["unmatched_equivalents"]),
            review_equivalents=tuple(ReviewEntry.from_json(e) for e in data["review_equivalents"]),
            mutants=tuple(MutantResult.from_json(m) for m in data["mutants"]),
            baseline=None if baseline is None else BaselineComparison.from_json(baseline),
        )


# --- ppaux's own runs: mutation.json -------------------------------------------------------------


@dataclass(frozen=True)
class SurvivorIdentity:
    """A mutant by what it changes (as an equivalents file keys it): ``module``, qualified
    ``function``, the changed line ``before`` and ``after``, its ``occurrence`` among the
    function's identical changes, and the function's AST hash."""

    module: str
    function: str
    before: str
    after: str
    occurrence: int
    function_hash: str

    def to_json(self) -> dict[str, object]:
        return dict(vars(self))


@dataclass(frozen=True)
class Survivor:
    """A mutant that no test killed and no judgement holds: its name and mutmut's verdict; in the
    run's list (not a module's) also its ``diff`` and ``identity``."""

    mutant: str
    status: str
    diff: str | None = None
    identity: SurvivorIdentity | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"mutant": self.mutant, "status": self.status}
        if self.diff is not None:
            out["diff"] = self.diff
        if self.identity is not None:
            out["identity"] = self.identity.to_json()
        return out

    @classmethod
    def from_json(cls, data: _JSON) -> Survivor:
        found = data.get("identity")
        return cls(
            data["mutant"], data["status"], data.get("diff"), None if found is None else SurvivorIdentity(**found)
        )


@dataclass(frozen=True)
class ModuleScore:
    """One module's score: its mutants, those killed and judged equivalent, its survivors, its
    gate (``None``: reported only) and its verdict (``pass``: no gate, or the score reaches it)."""

    total: int
    killed: int
    equivalent: int
    survivors: tuple[Survivor, ...]
    score: float
    gate: float | None
    verdict: Verdict

    def to_json(self) -> dict[str, object]:
        return {
            "total": self.total,
            "killed": self.killed,
            "equivalent": self.equivalent,
            "survivors": [s.to_json() for s in self.survivors],
            "score": self.score,
            "gate": self.gate,
            "verdict": self.verdict,
        }

    @classmethod
    def from_json(cls, data: _JSON) -> ModuleScore:
        return cls(
            total=data["total"],
            killed=data["killed"],
            equivalent=data["equivalent"],
            survivors=tuple(Survivor.from_json(s) for s in data["survivors"]),
            score=data["score"],
            gate=data["gate"],
            verdict=cast(Verdict, data["verdict"]),
        )


@dataclass(frozen=True)
class Marking:
    """A ``# pragma: no mutate`` marking: ``where`` (``path:line``), whether it covers a ``block``,
    its one-line ``reason`` and the ``problem`` the gate refuses it for (``None`` for a sound one)."""

    where: str
    block: bool
    reason: str | None
    problem: str | None

    def to_json(self) -> dict[str, object]:
        return dict(vars(self))

    @classmethod
    def from_json(cls, data: _JSON) -> Marking:
        return cls(data["where"], data["block"], data["reason"], data["problem"])


@dataclass(frozen=True)
class MutationReport:
    """A checkout's mutation run by its own tests (ppaux's: ``python -m reports mutation``): the
    scope, the score (``killed`` of the ``total`` mutants not judged ``equivalent``), how many ran
    and how many recorded results were reused, each module against its gate, every survivor, the
    equivalence judgements (held, stale, matching no mutant, to review) and the no-mutate
    markings. The verdict passes when every module reaches its gate, every judgement matches one
    mutant and no marking is refused."""

    scope: str
    scope_doc: str
    wall_s: float
    mutmut: str
    total: int
    reused: int
    ran: int
    equivalent: int
    killed: int
    score: float
    verdict: Verdict
    verdicts: Mapping[str, int]
    only: tuple[str, ...]
    modules: Mapping[str, ModuleScore]
    survivors: tuple[Survivor, ...] = ()
    equivalents_files: tuple[str, ...] = ()
    judged_equivalent: Mapping[str, str] = field(default_factory=dict)
    stale_equivalents: tuple[str, ...] = ()
    unmatched_equivalents: tuple[str, ...] = ()
    review_equivalents: tuple[ReviewEntry, ...] = ()
    markings: tuple[Marking, ...] = ()
    kind: str = field(default="mutation", init=False)
    schema_version: int = field(default=SCHEMA_VERSIONS["mutation"], init=False)

    @property
    def counted(self) -> int:
        """The mutants the score counts: all but those judged equivalent."""
        return self.total - self.equivalent

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "schema_version": self.schema_version,
            "scope": self.scope,
            "scope_doc": self.scope_doc,
            "wall_s": self.wall_s,
            "mutmut": self.mutmut,
            "total": self.total,
            "reused": self.reused,
            "ran": self.ran,
            "equivalent": self.equivalent,
            "killed": self.killed,
            "score": self.score,
            "verdict": self.verdict,
            "verdicts": dict(self.verdicts),
            "only": list(self.only),
            "modules": {name: m.to_json() for name, m in self.modules.items()},
            "survivors": [s.to_json() for s in self.survivors],
            "equivalents_files": list(self.equivalents_files),
            "judged_equivalent": dict(self.judged_equivalent),
            "stale_equivalents": list(self.stale_equivalents),
            "unmatched_equivalents": list(self.unmatched_equivalents),
            "review_equivalents": [e.to_json() for e in self.review_equivalents],
            # "equivalents": the name 0.3 gave the markings' list, kept for the readers of the file.
            "equivalents": [m.to_json() for m in self.markings],
        }

    @classmethod
    def from_json(cls, data: _JSON) -> MutationReport:
        """The report ``to_json`` gave; :class:`~ppaux.report.versions.ReportFormatError` for a
        file of another format version."""
        check_version(data, "mutation")
        return cls(
            scope=data["scope"],
            scope_doc=data["scope_doc"],
            wall_s=data["wall_s"],
            mutmut=data["mutmut"],
            total=data["total"],
            reused=data["reused"],
            ran=data["ran"],
            equivalent=data["equivalent"],
            killed=data["killed"],
            score=data["score"],
            verdict=cast(Verdict, data["verdict"]),
            verdicts=dict(data["verdicts"]),
            only=tuple(data["only"]),
            modules={name: ModuleScore.from_json(m) for name, m in data["modules"].items()},
            survivors=tuple(Survivor.from_json(s) for s in data["survivors"]),
            equivalents_files=tuple(data["equivalents_files"]),
            judged_equivalent=dict(data["judged_equivalent"]),
            stale_equivalents=tuple(data["stale_equivalents"]),
            unmatched_equivalents=tuple(data["unmatched_equivalents"]),
            review_equivalents=tuple(ReviewEntry.from_json(e) for e in data["review_equivalents"]),
            markings=tuple(Marking.from_json(m) for m in data["equivalents"]),
        )
