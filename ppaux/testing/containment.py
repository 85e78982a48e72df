"""The shipped suite's tests (and any marked ``@pytest.mark.isolated``) in a supervised worker, so that
an implementation that kills its process or hangs where no signal reaches it costs one test, not the
run (pytest-xdist's "a dead worker is a failed test", AFL's fork server).

A :class:`ForkServer` forks one worker from the pytest process at the first contained test, after
imports and collection, and sends it each contained test in turn (its place in ``session.items``
and the next one's, so that fixtures are torn down as pytest would); the worker runs the test's
whole protocol and sends its reports back through pytest's own report serialisation hooks. A worker
that dies, or is killed at its call's deadline, costs only the test it was running: that test is run
again alone in a fresh child with every call into the implementation isolated in a child of its own
(``guard.isolated``), so the crash or hang is an ordinary failure that Hypothesis shrinks, saves and
prints with its blob; the next contained test starts a fresh worker. The parent draws each test's
Hypothesis seed, so that the rerun meets the same examples as the worker did.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from _pytest.runner import runtestprotocol

from ppaux.isolation import ChildOutcome, Contained, Guard, Worker, can_fork, resident_bytes
from ppaux.report.conformance import FindingKind
from ppaux.testing.hypothesis_api import replace_seed_generator
from ppaux.testing.results import JSONObject, carry_outcome, row
from ppaux.testing.suite import SUITE

# A contained run that crashed or hung, as the finding its test's outcome records.
AS_FINDING: dict[str, FindingKind] = {"crash": "crash", "hang": "hang"}

# A worker runs this many tests at most, or until its resident memory has grown this much past what
# it held after its first test; the next contained test then starts a fresh one (what one test
# leaks, or leaves behind in torch's caches, does not pile up for the rest of the run).
RECYCLE_AFTER = 500
RECYCLE_GROWTH = 1 << 30


def forks_usefully() -> bool:
    """Whether a child forked from this process now could do what this process does: the platform forks,
    and CUDA is not initialized here (it does not survive a fork: the child could touch no cuda tensor)."""
    return can_fork() and not torch.cuda.is_initialized()


def is_suite_test(item: pytest.Item) -> bool:
    """A test of the shipped suite (:mod:`ppaux.conformance`), or of a copy of its modules in a directory
    the ``ppaux_suite_copies`` ini value names (``ppaux mutate`` runs such a copy, named ``tests/test_add.py``)."""
    module = getattr(item, "module", None)
    name = getattr(module, "__name__", "")
    if name == SUITE or name.startswith(SUITE + "."):
        return True
    copies: list[Path] = item.config.getini("ppaux_suite_copies")
    return any(item.path.is_relative_to(directory) for directory in copies)


def is_contained(item: pytest.Item) -> bool:
    """The shipped suite's tests, whose code under test is wrong by assumption, and any test marked
    ``@pytest.mark.isolated`` (a plugin author's own properties over ``ppaux_impl``)."""
    return is_suite_test(item) or item.get_closest_marker("isolated") is not None


class ForkServer:
    """The contained tests of one pytest process (one xdist worker), run one after another in a
    long-lived forked worker under ``guard``'s deadlines; a fresh worker after ``recycle_after`` tests
    or once its memory has grown by ``recycle_growth`` bytes (:data:`RECYCLE_AFTER`, :data:`RECYCLE_GROWTH`).
    ``ends_with_this_process``: a worker is killed when this process ends (a lane's: see ``Worker``)."""

    def __init__(
        self,
        session: pytest.Session,
        guard: Guard,
        *,
        recycle_after: int | None = None,
        recycle_growth: int | None = None,
        ends_with_this_process: bool = False,
    ) -> None:
        self.session, self.guard = session, guard
        self.ends_with_this_process = ends_with_this_process
        # Read when the server starts (a run's settings, as the module holds them then).
        self.recycle_after = RECYCLE_AFTER if recycle_after is None else recycle_after
        self.recycle_growth = RECYCLE_GROWTH if recycle_growth is None else recycle_growth
        self._worker: Worker | None = None
        self._served = 0
        self._first_rss: int | None = None
        self._retiring = False
        self._places: dict[int, int] | None = None
        # The worker's side: the deepest node pytest had set up here when it forked (what this
        # process set up is this process's to tear down), and the last test it ran.
        self._inherited: pytest.Item | pytest.Collector | None = None
        self._last: pytest.Item | None = None

    def run(self, item: pytest.Item, nextitem: pytest.Item | None, seed: int | None = None) -> list[pytest.TestReport]:
        """The test's reports; a death of the worker becomes the test's failure (after the rerun alone).
        ``seed``: the test's Hypothesis seed, drawn by the caller (else here, :func:`draw_seed`)."""
        seed = draw_seed() if seed is None else seed
        place = self._place(item)
        following = None if nextitem is None or not is_contained(nextitem) else self._place(nextitem)
        # The worker's last test tears down what the worker set up: the next test runs here, or in a new worker.
        last = following is None or self._retiring or self._served + 1 >= self.recycle_after
        request = {"test": place, "next": None if last else following, "seed": seed}
        if self._worker is None:
            self._worker = Worker(
                self._serve,
                farewell=self._farewell,
                clock=self.guard.clock,
                ends_with_parent=self.ends_with_this_process,
            )
        self.guard.idle()
        reply = self._worker.ask(json.dumps(request).encode(), deadline=self.guard.kill_deadline)
        if isinstance(reply, ChildOutcome):
            self._forget()
            if reply.stopped:
                self.guard.hangs += 1
            return run_alone(item, nextitem, self.guard, seed, first=Contained(reply, None, None))
        answer = json.loads(reply)
        self.guard.merge(answer["guard"])
        self._served += 1
        if self._first_rss is None:
            self._first_rss = answer["rss"]
        self._retiring = answer["rss"] - self._first_rss > self.recycle_growth
        if last:
            self.close()
        return _reports(item.config, answer["reports"])

    def close(self) -> None:
        """Let the worker go (it tears down what it set up): at the session's end, or to recycle it."""
        if self._worker is not None:
            self._worker.close()
        self._forget()

    def _forget(self) -> None:
        self._worker = None
        self._served, self._first_rss, self._retiring = 0, None, False

    def _place(self, item: pytest.Item) -> int:
        # The worker finds a test by its place among the session's items (pytest's runtestloop and
        # xdist's workers run those): it holds a copy of them, made at its fork.
        if self._places is None:
            self._places = {id(each): place for place, each in enumerate(self.session.items)}
        return self._places[id(item)]

    # The worker's side.

    def _serve(self, request: bytes) -> bytes:
        asked = json.loads(request)
        items = self.session.items
        if self._last is None:
            stack = list(self._setup().stack)
            self._inherited = stack[-1] if stack else None
        item = items[asked["test"]]
        upto = items[asked["next"]] if asked["next"] is not None else self._inherited
        self._last = item
        reports = _protocol(item, upto, self.guard, asked["seed"], isolated=False)
        return json.dumps({"reports": reports, "guard": self.guard.state(), "rss": resident_bytes()}).encode()

    def _farewell(self) -> None:
        # Asked to go before its last test said so (the session stopped early): tear down what it set up.
        # An error there has no test to report it: the worker prints it.
        if self._last is not None:  # pragma: no branch - a worker is asked to go only after a test
            self._setup().teardown_exact(self._inherited)

    def _setup(self) -> Any:  # Any: pytest's SetupState, which pytest does not export
        # The nodes pytest has set up, and their finalizers: the session's SetupState, with no public reader.
        return self.session._setupstate


def draw_seed() -> int:
    """A seed for the next test's Hypothesis run, drawn here from the generator Hypothesis would draw
    it from (made on first use, as Hypothesis makes it): the worker and a rerun alone meet the same examples."""
    generator = replace_seed_generator(None) or random.Random()
    replace_seed_generator(generator)
    return generator.getrandbits(64)


def _protocol(
    item: pytest.Item, upto: pytest.Item | pytest.Collector | None, guard: Guard, seed: int, *, isolated: bool
) -> list[JSONObject]:
    """The test's whole protocol here, under ``seed``, its reports serialised; torn down to ``upto``."""
    replace_seed_generator(random.Random(seed))
    guard.isolated = isolated
    with guard.installed():
        # A collector as ``nextitem``: tear down all but the nodes it lies in (pytest reads only its chain).
        reports = runtestprotocol(item, log=False, nextitem=upto)  # type: ignore[arg-type]
    config = item.config
    return [config.hook.pytest_report_to_serializable(config=config, report=r) for r in reports]


def run_alone(
    item: pytest.Item, nextitem: pytest.Item | None, guard: Guard, seed: int, first: Contained
) -> list[pytest.TestReport]:
    """The test's reports from a contained run of its own, with every call isolated, after ``first``
    (the worker's, which crashed or hung in it): a crash or hang here too becomes the test's failure,
    a pass a failure that says the death depended on more than the drawn example."""
    # The child tears down what it set up, never what this process holds (session fixtures set up
    # by earlier tests here): those the session's own teardown ends.
    upto: Any = nextitem if nextitem is not None else item.session
    config = item.config
    second = guard.contain(lambda: _verdict(_protocol(item, upto, guard, seed, isolated=True)))
    if second.kind in ("crash", "hang"):
        return [_died(item, first, second)]
    reports = _reports(config, second.value)
    for report in reports:
        if report.when == "call" and report.passed:
            report.outcome = "failed"
            report.longrepr = (
                f"the test's process {first.outcome.describe()}, but it passed when run again with each call "
                "isolated: the crash or hang depends on state outside the drawn example"
            )
            error = f"{first.kind}: the test's process {first.outcome.describe()}"
            carry_outcome(report, replace(row(item, report), error=error, finding=AS_FINDING[first.kind]))
    return reports


def _verdict(reports: list[JSONObject]) -> tuple[list[JSONObject], str | None]:
    """A test's serialised reports and its error in one line: the phase that failed first, if one did."""
    failed = [str(r.get("when")) for r in reports if r.get("outcome") == "failed"]
    return reports, (f"{failed[0]} failed" if failed else None)


def prime_seed() -> None:
    """Hypothesis draws the seed of a run without one from a generator it makes on first use
    (``random.Random()``): make it before forking, so that both children of a test draw the same
    seed. No Hypothesis test runs for it, so none is observed (a fuzz round counts no example)."""
    generator = replace_seed_generator(None)
    replace_seed_generator(random.Random() if generator is None else generator)


def _reports(config: pytest.Config, answer: list[JSONObject]) -> list[pytest.TestReport]:
    return [config.hook.pytest_report_from_serializable(config=config, data=d) for d in answer]


def _died(item: pytest.Item, first: Contained, second: Contained) -> pytest.TestReport:
    """The failure of a test whose process died even with every call isolated: outside the calls
    into the implementation (the test's own code, a strategy), so no example could be shrunk."""
    outcome = second.outcome
    how = "was stopped: no call into the implementation returned or ended for too long" if outcome.stopped else None
    text = f"{second.kind}: the test's process {how or outcome.describe()}, outside any single call into the "
    text += "implementation under test"
    if outcome.dump.strip():
        text += "\n" + outcome.dump.strip()
    report = pytest.TestReport(
        item.nodeid,
        item.location,
        {k: 1 for k in item.keywords},
        "failed",
        text,
        "call",
        duration=first.outcome.seconds + outcome.seconds,
    )
    head, _, detail = text.partition("\n")
    carry_outcome(report, replace(row(item, report), error=head, finding=AS_FINDING[second.kind], detail=detail))
    return report
