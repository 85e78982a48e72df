"""pytest plugin for the rounds that ``ppaux fuzz`` drives (``-p ppaux.fuzz.pytest_plugin``).

It registers the ``ppaux-fuzz`` profile (the ``nightly`` profile with this round's
example budget and the fuzz database), keeps only Hypothesis tests (of this machine's shard,
in this worker's order), counts examples, and appends events (progress, failures, per-test
outcomes) as JSON lines to ``$PPAUX_FUZZ_EVENTS`` for the parent to read.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from typing import Any, Dict, Iterable, Optional

import pytest
from hypothesis import Phase, settings
from hypothesis.database import ExampleDatabase, ReadOnlyDatabase
from hypothesis.internal.detection import is_hypothesis_test

from ppaux.fuzz.database import ROUND_REDIS_TIMEOUT_S, open_database
from ppaux.fuzz.options import in_shard, parse_shard
from ppaux.testing.plugin import recorded_calls
from ppaux.testing.profiles import PROFILES
from ppaux.testing.results import failure_details

PROFILE = "ppaux-fuzz"
MODE = os.environ.get("PPAUX_FUZZ_MODE", "run")
EVENTS = os.environ.get("PPAUX_FUZZ_EVENTS")
# Failure text kept per failure: Hypothesis puts the example and the blob at the end.
TEXT_LIMIT = 6000

_current: Dict[str, Any] = {"nodeid": None}
_counts = {"examples": 0, "last_write": 0.0}
_saved: Dict[str, int] = {}


def emit(event: Dict[str, Any]) -> None:
    if not EVENTS:
        return
    event.setdefault("time", time.time())
    with open(EVENTS, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(event) + "\n")


class _RecordingDatabase(ExampleDatabase):
    """Read-only view that counts, per test, the saved failures Hypothesis fetched first (its primary key)."""

    def __init__(self, db: ExampleDatabase) -> None:
        super().__init__()
        self._db = ReadOnlyDatabase(db)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        values = list(self._db.fetch(key))
        nodeid = _current["nodeid"]
        if nodeid is not None and nodeid not in _saved:
            _saved[nodeid] = len(values)
        return iter(values)

    def save(self, key: bytes, value: bytes) -> None:  # pragma: no cover - replay never writes
        pass

    def delete(self, key: bytes, value: bytes) -> None:  # pragma: no cover
        pass

    def _start_listening(self) -> None:  # pragma: no cover
        pass

    def _stop_listening(self) -> None:  # pragma: no cover
        pass


# An exception line inside an exception group's box: "  | ExceptionGroup: Hypothesis found 2 ...".
_GROUPED_ERROR = re.compile(r"^[ +|-]*\|\s*([A-Za-z_][\w.]*(?:Error|Exception|Group|Crash|Hang)\b:.*)$")


def error_line(text: str) -> Optional[str]:
    """The failure's one-line error: pytest's first ``E`` line, else (several distinct bugs in one
    test, as the nightly profile reports them) the exception group's own line."""
    lines = text.splitlines()
    found = next((line[1:].strip() for line in lines if line.startswith("E ") and line[1:].strip()), None)
    if found is None:
        found = next((m.group(1).strip() for m in map(_GROUPED_ERROR.match, lines) if m), None)
    return found


def _profile() -> settings:
    db = open_database(os.environ.get("PPAUX_FUZZ_DB"), answer_timeout=ROUND_REDIS_TIMEOUT_S)
    nightly = PROFILES["nightly"]
    if MODE == "replay":
        # Only the saved examples, as saved: no generation, no shrinking, nothing written back.
        return settings(nightly, database=_RecordingDatabase(db), phases=[Phase.reuse])
    max_examples = int(os.environ.get("PPAUX_FUZZ_MAX_EXAMPLES", nightly.max_examples))
    # The explain phase re-runs a found failure under a tracer to annotate it: ~13 s per failure
    # here, budget better spent finding the next one. The minimal example and the blob stay.
    phases = [p for p in nightly.phases if p is not Phase.explain]
    return settings(nightly, database=db, max_examples=max_examples, phases=phases)


settings.register_profile(PROFILE, _profile())


def _count_example() -> None:
    _counts["examples"] += 1
    now = time.monotonic()
    if now - _counts["last_write"] >= 0.5:
        _counts["last_write"] = now
        emit({"kind": "progress", "examples": _counts["examples"]})


def _install_counter() -> None:
    """Count every test case Hypothesis runs, stateful ones included.

    Hypothesis' observability callbacks would do it with a public API but make each example
    about 4x slower (they render every example); wrapping the engine's one entry point costs
    nothing. Should a Hypothesis release rename it, progress shows 0 examples, nothing breaks.
    """
    from hypothesis.internal.conjecture.engine import ConjectureRunner

    original = getattr(ConjectureRunner, "test_function", None)
    if original is None or getattr(original, "_ppaux_counted", False):  # pragma: no cover
        return

    def test_function(self: Any, data: Any) -> Any:
        _count_example()
        return original(self, data)

    test_function._ppaux_counted = True  # type: ignore[attr-defined]
    ConjectureRunner.test_function = test_function  # type: ignore[method-assign]


def _seed_rounds() -> None:
    """``--seed``: a reproducible round. ``--hypothesis-seed`` would turn the example database off
    (Hypothesis keys nothing under a forced seed), so seed the generator it draws per-test seeds from."""
    seed = os.environ.get("PPAUX_FUZZ_SEED")
    if seed is None:
        return
    import random

    from hypothesis import core

    core.threadlocal._hypothesis_global_random = random.Random(int(seed))


def pytest_configure(config: pytest.Config) -> None:
    _install_counter()
    _seed_rounds()


def _stop(signum: int, frame: Any) -> None:
    # The parent stops a round with SIGINT. Hypothesis may turn the KeyboardInterrupt into a
    # test failure and carry on, so the session is also told to stop after the current test.
    _current["stopping"] = True
    session = _current.get("session")
    if session is not None:
        session.shouldstop = "fuzz round stopped"
    raise KeyboardInterrupt


def pytest_sessionstart(session: pytest.Session) -> None:
    _current["session"] = session
    signal.signal(signal.SIGINT, _stop)
    emit({"kind": "started", "pid": os.getpid()})


def _worker_order(items: list) -> list:
    """Worker W of N starts its rounds W/N of the way down the list: early in a run, the
    workers together have tried more tests than one would, and each still reaches every test."""
    worker, _, workers = os.environ.get("PPAUX_FUZZ_WORKER", "1/1").partition("/")
    start = len(items) * (int(worker) - 1) // int(workers)
    return items[start:] + items[:start]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    shard = parse_shard(os.environ.get("PPAUX_FUZZ_SHARD"))
    # Plain example tests give the same answer every time: fuzzing them wastes the budget.
    fuzzable = [item for item in items if is_hypothesis_test(getattr(item, "obj", None))]
    keep = [item for item in fuzzable if in_shard(item.nodeid, shard)]
    dropped = [item for item in items if item not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = _worker_order(keep)
    emit({"kind": "collected", "tests": len(keep), "selected": len(fuzzable)})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any):
    _current["nodeid"] = item.nodeid
    # Which test a worker was running, should it die.
    emit({"kind": "running", "nodeid": item.nodeid})
    outcome = yield
    if outcome.excinfo is not None and issubclass(outcome.excinfo[0], KeyboardInterrupt):
        # Stopped with the round (the test's child, if it had one, is killed): no verdict, but never dropped.
        emit({"kind": "interrupted", "nodeid": item.nodeid})
    _current["nodeid"] = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any):
    outcome = yield
    # A test of the shipped suite runs in a forked child (ppaux.testing.containment): what it
    # counted there comes back on its reports.
    report = outcome.get_result()
    clause = item.get_closest_marker("clause")
    report.ppaux_fuzz = {"examples": _counts["examples"], "saved": _saved.get(item.nodeid),
                         "clause": clause.args[0] if clause else None}
    if report.failed and report.when == "call":
        # Made where the test ran (its forked child): the calls of its minimal example, as code.
        report.ppaux_fuzz["calls"] = recorded_calls(item) or {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    counted = getattr(report, "ppaux_fuzz", None) or {}
    _counts["examples"] = max(_counts["examples"], counted.get("examples", 0))
    if counted.get("saved") is not None:
        _saved.setdefault(report.nodeid, counted["saved"])
    if report.when != "call" and not report.failed:
        return
    if _current.get("stopping") and "KeyboardInterrupt" in report.longreprtext:
        emit({"kind": "interrupted", "nodeid": report.nodeid})
        return  # our own stop: no verdict, not a finding
    outcome = "failed" if report.failed else ("skipped" if report.skipped else "passed")
    event: Dict[str, Any] = {"kind": "test", "nodeid": report.nodeid, "outcome": outcome}
    if MODE == "replay":
        event["saved"] = _saved.get(report.nodeid, 0)
    emit(event)
    if report.failed:
        text = report.longreprtext
        details = failure_details(text)
        details["error"] = details.get("error") or error_line(text)
        emit({"kind": "failure", "nodeid": report.nodeid, "clause": counted.get("clause"), **details,
              "text": text[-TEXT_LIMIT:], **counted.get("calls", {})})
    emit({"kind": "progress", "examples": _counts["examples"]})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    emit({"kind": "progress", "examples": _counts["examples"]})
    emit({"kind": "finished", "exitstatus": int(exitstatus)})
