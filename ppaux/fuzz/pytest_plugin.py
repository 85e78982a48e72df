"""pytest plugin for the rounds that ``ppaux fuzz`` drives (``-p ppaux.fuzz.pytest_plugin``).

At configure time it registers the ``ppaux-fuzz`` profile (the ``nightly`` profile with this round's
example budget and the fuzz database) and one :class:`FuzzRound`, which holds everything the round
keeps: it keeps only Hypothesis tests (of this machine's shard, in this worker's order), counts
examples, and appends events (progress, failures, per-test outcomes) as JSON lines to
``$PPAUX_FUZZ_EVENTS`` for the parent to read.
"""

from __future__ import annotations

import os
import random
import signal
import time
import types
from collections.abc import Callable, Generator, Iterable

import pluggy
import pytest
from hypothesis import Phase, is_hypothesis_test, settings
from hypothesis.database import ExampleDatabase, ReadOnlyDatabase

from ppaux.fuzz.database import ROUND_REDIS_TIMEOUT_S, open_database
from ppaux.fuzz.events import (
    Collected,
    Finished,
    Interrupted,
    Progress,
    RoundEvent,
    RoundFailure,
    Running,
    Started,
    TestDone,
    encode,
)
from ppaux.fuzz.options import in_shard, parse_shard
from ppaux.report import TestOutcome
from ppaux.report.conformance import Outcome
from ppaux.testing.hypothesis_api import (
    HypothesisAPIError,
    check_hypothesis_api,
    observe_test_cases,
    replace_seed_generator,
)
from ppaux.testing.plugin import recorded_calls
from ppaux.testing.profiles import tuned
from ppaux.testing.results import MinimalExamples, carried, carried_outcome, carry, carry_outcome, row

PROFILE = "ppaux-fuzz"
# Failure text kept per failure: Hypothesis puts the example and the blob at the end.
TEXT_LIMIT = 6000
# Seconds between progress events while examples run.
PROGRESS_EVERY_S = 0.5


class _RecordingDatabase(ExampleDatabase):
    """Read-only view that counts, per test, the saved failures Hypothesis fetched first (its primary key)."""

    def __init__(self, db: ExampleDatabase, running: Callable[[], str | None]) -> None:
        super().__init__()
        self._db = ReadOnlyDatabase(db)
        self._running = running
        self.saved: dict[str, int] = {}

    def fetch(self, key: bytes) -> Iterable[bytes]:
        values = list(self._db.fetch(key))
        nodeid = self._running()
        if nodeid is not None and nodeid not in self.saved:
            self.saved[nodeid] = len(values)
        return iter(values)

    def save(self, key: bytes, value: bytes) -> None:  # pragma: no cover - replay never writes
        pass

    def delete(self, key: bytes, value: bytes) -> None:  # pragma: no cover
        pass

    def _start_listening(self) -> None:  # pragma: no cover
        pass

    def _stop_listening(self) -> None:  # pragma: no cover
        pass


def _runs_hypothesis(item: pytest.Item) -> bool:
    """A test that runs Hypothesis under the run's settings, as the suite's stateful runs do (``ppaux_settings``)."""
    return "ppaux_settings" in getattr(item, "fixturenames", ())


def _worker_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """Worker W of N starts its rounds W/N of the way down the list: early in a run, the
    workers together have tried more tests than one would, and each still reaches every test."""
    worker, _, workers = os.environ.get("PPAUX_FUZZ_WORKER", "1/1").partition("/")
    start = len(items) * (int(worker) - 1) // int(workers)
    return items[start:] + items[:start]


class FuzzRound:
    """One round's state and hooks, registered on the round's plugin manager as ``ppaux-fuzz-round``
    (as pytest-xdist registers its DSession): nothing of a round lives in a module global."""

    def __init__(self, env: dict[str, str]) -> None:
        self.mode = env.get("PPAUX_FUZZ_MODE", "run")
        self.events = env.get("PPAUX_FUZZ_EVENTS")
        self.examples = 0
        self._last_write = 0.0
        self.running: str | None = None
        self.session: pytest.Session | None = None
        self.stopping = False
        self.database: _RecordingDatabase | None = None
        self.profile = self._profile(env)
        seed = env.get("PPAUX_FUZZ_SEED")
        # --seed: every test of the round draws its seed from one generator seeded with the round's.
        self._seeds = None if seed is None else random.Random(int(seed))
        self.shard = parse_shard(env.get("PPAUX_FUZZ_SHARD"))
        # What pytest_unconfigure puts back, last first.
        self._undo: list[Callable[[], object]] = []

    def _profile(self, env: dict[str, str]) -> settings:
        db = open_database(env.get("PPAUX_FUZZ_DB"), answer_timeout=ROUND_REDIS_TIMEOUT_S)
        nightly = tuned("nightly")
        if self.mode == "replay":
            # Only the saved examples, as saved: no generation, no shrinking, nothing written back.
            self.database = _RecordingDatabase(db, lambda: self.running)
            return settings(nightly, database=self.database, phases=[Phase.reuse])
        max_examples = int(env.get("PPAUX_FUZZ_MAX_EXAMPLES", nightly.max_examples))
        # The explain phase re-runs a found failure under a tracer to annotate it: ~13 s per failure
        # here, budget better spent finding the next one. The minimal example and the blob stay.
        phases = [p for p in nightly.phases if p is not Phase.explain]
        return settings(nightly, database=db, max_examples=max_examples, phases=phases)

    def saved(self, nodeid: str) -> int | None:
        return None if self.database is None else self.database.saved.get(nodeid)

    def emit(self, event: RoundEvent) -> None:
        if not self.events:
            return
        with open(self.events, "a", encoding="utf-8") as fh:
            fh.write(encode(event, time.time()) + "\n")

    def _count_example(self, status: str) -> None:
        self.examples += 1
        now = time.monotonic()
        if now - self._last_write >= PROGRESS_EVERY_S:
            self._last_write = now
            self.emit(Progress(self.examples))

    def pytest_configure(self, config: pytest.Config) -> None:
        # Every test case Hypothesis runs, stateful ones and those of a forked child included.
        self._undo.append(observe_test_cases(self._count_example))
        # A failure's minimal example and blob, for its record.
        MinimalExamples.register(config)
        if self._seeds is not None:
            old = replace_seed_generator(self._seeds)
            self._undo.append(lambda: replace_seed_generator(old))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # A session run inside another process (pytester) leaves that process as it found it.
        while self._undo:
            self._undo.pop()()

    def _stop(self, signum: int, frame: types.FrameType | None) -> None:
        # The parent stops a round with SIGINT. Hypothesis may turn the KeyboardInterrupt into a
        # test failure and carry on, so the session is also told to stop after the current test.
        self.stopping = True
        if self.session is not None:
            self.session.shouldstop = "fuzz round stopped"
        raise KeyboardInterrupt

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        handler = signal.signal(signal.SIGINT, self._stop)
        self._undo.append(lambda: signal.signal(signal.SIGINT, handler))
        self.emit(Started(os.getpid()))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        # Plain example tests give the same answer every time: fuzzing them wastes the budget. A test that
        # runs Hypothesis itself under the run's settings (the suite's stateful runs: ppaux_settings) is fuzzed.
        fuzzable = [item for item in items if is_hypothesis_test(getattr(item, "obj", None)) or _runs_hypothesis(item)]
        keep = [item for item in fuzzable if in_shard(item.nodeid, self.shard)]
        dropped = [item for item in items if item not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = _worker_order(keep)
        self.emit(Collected(len(keep), len(fuzzable)))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, pluggy.Result[object], None]:
        self.running = item.nodeid
        # Which test a worker was running, should it die.
        self.emit(Running(item.nodeid))
        outcome = yield
        if outcome.excinfo is not None and issubclass(outcome.excinfo[0], KeyboardInterrupt):
            # Stopped with the round (the test's child, if it had one, is killed): no verdict, but never dropped.
            self.emit(Interrupted(item.nodeid))
        self.running = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        # Where the test runs: a contained test runs in ppaux's forked worker, which runs one test after
        # another under a single protocol hook of this process's (ppaux.testing.containment).
        self.running = item.nodeid

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
        outcome = yield
        # A test of the shipped suite runs in a forked child (ppaux.testing.containment): what it
        # counted there comes back on its reports.
        report = outcome.get_result()
        interrupted = call.excinfo is not None and _raised_in_an_interrupt(call.excinfo.value)
        counted = {"examples": self.examples, "saved": self.saved(item.nodeid), "interrupted": interrupted}
        carry(report, "round", counted)
        if report.failed and not carried(report, "outcome"):
            # The failure's record, made where the test ran (its forked child): its clause, its error
            # from the exception itself, its minimal example and blob, and the calls of that example as code.
            made = row(item, report, call.excinfo)
            calls = recorded_calls(item) if report.when == "call" else None
            if calls is not None:
                made = calls.on(made)
            carry_outcome(report, made)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        counted = carried(report, "round")
        self.examples = max(self.examples, counted.get("examples", 0))
        if counted.get("saved") is not None and self.database is not None:
            self.database.saved.setdefault(report.nodeid, counted["saved"])
        if report.when != "call" and not report.failed:
            return
        if self.stopping and counted.get("interrupted"):
            self.emit(Interrupted(report.nodeid))
            return  # our own stop: no verdict, not a finding
        outcome: Outcome = "failed" if report.failed else ("skipped" if report.skipped else "passed")
        self.emit(TestDone(report.nodeid, outcome, (self.saved(report.nodeid) or 0) if self.mode == "replay" else None))
        if report.failed:
            # Made where the test ran, or here for a forked child that could not report one (it died in
            # both forks, or passed only with each call isolated).
            made = carried_outcome(report) or TestOutcome(report.nodeid, None, "failed")
            self.emit(RoundFailure(made, report.longreprtext[-TEXT_LIMIT:]))
        self.emit(Progress(self.examples))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.emit(Progress(self.examples))
        self.emit(Finished(int(exitstatus)))


def _raised_in_an_interrupt(error: BaseException) -> bool:
    """Whether ``error`` is a KeyboardInterrupt or was raised from or while handling one (its causes,
    contexts and grouped exceptions): a round's stop, however the test or Hypothesis turned it."""
    pending, seen = [error], set()
    while pending:
        found = pending.pop()
        if id(found) in seen:
            continue
        seen.add(id(found))
        if isinstance(found, KeyboardInterrupt):
            return True
        pending += [e for e in (found.__cause__, found.__context__) if e is not None]
        # An exception group's members (BaseExceptionGroup is a builtin only from Python 3.11).
        members = getattr(found, "exceptions", None)
        if isinstance(members, tuple):
            pending += [e for e in members if isinstance(e, BaseException)]
    return False


# First: Hypothesis' own pytest_configure loads --hypothesis-profile=ppaux-fuzz, which must exist by then.
@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    try:
        check_hypothesis_api()
    except HypothesisAPIError as exc:
        # A Hypothesis release that moved a name the round relies on: one line that says which.
        raise pytest.UsageError(str(exc)) from None
    fuzz_round = FuzzRound(dict(os.environ))
    settings.register_profile(PROFILE, fuzz_round.profile)
    config.pluginmanager.register(fuzz_round, "ppaux-fuzz-round")
