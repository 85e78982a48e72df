"""What a fuzz round tells the run that started it, as typed events.

The round's plugin (:mod:`ppaux.fuzz.pytest_plugin`) appends one JSON line per event to the round's
events file; the parent (:meth:`ppaux.fuzz.rounds.Round.poll_events`) reads them back as these
records, and the runner dispatches on their type. Both ends are the same ppaux install, so the
file is a wire, not a report: it has no version, and a line of a kind this release does not
write is an error, not a skipped line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeAlias

from ppaux.report.conformance import Outcome, TestOutcome

__all__ = [
    "Collected",
    "Finished",
    "RoundEvent",
    "RoundFailure",
    "Interrupted",
    "Progress",
    "Running",
    "Started",
    "TestDone",
    "decode",
    "encode",
]


@dataclass(frozen=True)
class Started:
    """The round's pytest session started, in process ``pid`` (the one to signal)."""

    KIND: ClassVar[str] = "started"
    pid: int


@dataclass(frozen=True)
class Collected:
    """The round kept ``tests`` tests (its shard's) of the ``selected`` that can be fuzzed."""

    KIND: ClassVar[str] = "collected"
    tests: int
    selected: int | None = None


@dataclass(frozen=True)
class Running:
    """The round started ``nodeid``: the test a worker was running, should it die."""

    KIND: ClassVar[str] = "running"
    nodeid: str


@dataclass(frozen=True)
class Interrupted:
    """``nodeid`` was still running when the round was stopped: no verdict."""

    KIND: ClassVar[str] = "interrupted"
    nodeid: str


@dataclass(frozen=True)
class TestDone:
    """``nodeid`` ended with ``outcome``; in a replay, how many examples the database had ``saved`` for it."""

    __test__ = False  # not a pytest test class, whatever its name
    KIND: ClassVar[str] = "test"
    nodeid: str
    outcome: Outcome
    saved: int | None = None


@dataclass(frozen=True)
class RoundFailure:
    """A failure: the test's outcome as recorded where it ran (:class:`ppaux.report.TestOutcome`: its
    clause, error, finding, minimal example, blob and calls as code), and the end of pytest's failure text."""

    KIND: ClassVar[str] = "failure"
    test: TestOutcome
    text: str = ""

    @property
    def nodeid(self) -> str:
        return self.test.nodeid


@dataclass(frozen=True)
class Progress:
    """The round has run ``examples`` test cases so far."""

    KIND: ClassVar[str] = "progress"
    examples: int


@dataclass(frozen=True)
class Finished:
    """The round's pytest session ended with ``exitstatus``."""

    KIND: ClassVar[str] = "finished"
    exitstatus: int


RoundEvent: TypeAlias = Started | Collected | Running | Interrupted | TestDone | RoundFailure | Progress | Finished
_BY_KIND: dict[str, type[RoundEvent]] = {
    kind.KIND: kind for kind in (Started, Collected, Running, Interrupted, TestDone, RoundFailure, Progress, Finished)
}
# Written only where set: a line names what the event has, not what it might have had.
_ONLY_WHEN_SET = frozenset({"saved"})


def encode(event: RoundEvent, at: float) -> str:
    """The event as one line of the events file (no newline), stamped with the wall-clock time ``at``."""
    data: dict[str, object] = {"kind": event.KIND}
    if isinstance(event, RoundFailure):
        # The test's outcome as its report row writes it (TestOutcome.to_json), beside the failure text.
        data.update(event.test.to_json(), text=event.text)
    else:
        for f in fields(event):
            value = getattr(event, f.name)
            if value is not None or f.name not in _ONLY_WHEN_SET:
                data[f.name] = value
    data["time"] = at
    return json.dumps(data)


def decode(data: Mapping[str, Any]) -> RoundEvent:  # Any: one line of the events file, as json.loads gives it
    """The event a line of the events file holds; :class:`ValueError` for a kind this release does not write."""
    kind = _BY_KIND.get(data.get("kind", ""))
    if kind is None:
        raise ValueError(f"a fuzz round wrote an event of unknown kind {data.get('kind')!r}")
    if kind is RoundFailure:
        return RoundFailure(TestOutcome.from_json({"outcome": "failed", **data}), data.get("text", ""))
    return kind(**{f.name: data[f.name] for f in fields(kind) if f.name in data})
