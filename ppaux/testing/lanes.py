"""The contained tests on several cores at once (``--ppaux-workers N``, ``ppaux check --workers N``).

A stretch of consecutive contained tests is dealt round-robin to ``N`` lanes: processes forked from
this pytest process after its imports and collection, each running its share one test after another
through a fork server of its own (:class:`ForkServer`: one supervised worker per lane, every survival
guarantee of one worker kept). A lane runs no code under test, its worker does; it sends each test's
reports back as its worker hands them over, and this process logs them in the session's order
(pytest-xdist's ``DSession``, with forked lanes instead of spawned interpreters: the imports and the
collection are paid once). Each test's Hypothesis seed is drawn here in the session's order, as one
worker would have drawn it, so a test meets the same examples in any lane.

A lane that ends before it reported all its tests (a bug in ppaux, or a kill from outside) turns each
test it still held into a failure that says so, and the run goes on (xdist's ``handle_crashitem``).
"""

from __future__ import annotations

import json
import os
import select
import signal
from dataclasses import dataclass, replace
from types import FrameType
from typing import NoReturn

import pytest

from ppaux.isolation import MONOTONIC, Clock, Guard, describe_status
from ppaux.isolation.forked import die_with, fork_frozen, run_child, send, set_group, split_messages
from ppaux.testing.containment import ForkServer, draw_seed, is_contained
from ppaux.testing.results import JSONObject, carry_outcome, row

# A lane asked to stop (the session ended early) is given this long to kill its worker and end, then
# killed; a lane that reported its last test, this long to end. Safety nets: both take milliseconds.
STOP_WAIT = 10.0
# How often this process looks whether a lane has ended while it waits for reports.
_RECHECK = 0.25


class Stopped(BaseException):
    """SIGTERM in a lane: the session ended early; the lane kills its worker and ends."""


@dataclass
class _Lane:
    pid: int
    fd: int
    # Its tests not reported yet, by place in the session's items, in the order it runs them.
    places: list[int]
    # What it sent that is not a whole message yet.
    received: bytes = b""
    # How it ended, once reaped.
    status: int | None = None


class Lanes:
    """The contained tests of one pytest process, ``count`` lanes at a time; the same calls as
    :class:`ForkServer` (:meth:`run` for each contained test in the session's order, :meth:`close`)."""

    def __init__(self, session: pytest.Session, guard: Guard, count: int, *, clock: Clock = MONOTONIC) -> None:
        if count < 1:
            raise ValueError(f"a run needs at least one lane, not {count}")
        self.session, self.guard, self.count, self.clock = session, guard, count, clock
        self._lanes: list[_Lane] = []
        # Reports that came back before pytest asked for them, by place.
        self._arrived: dict[int, list[pytest.TestReport]] = {}
        self._places: dict[int, int] | None = None

    def run(self, item: pytest.Item, nextitem: pytest.Item | None) -> list[pytest.TestReport]:
        """The test's reports, from the lane it was dealt to. pytest asks for the tests in the session's
        order: the first of a stretch deals the stretch, the last lets its lanes go."""
        place = self._place(item)
        if not self._lanes:
            self._deal(place)
        while place not in self._arrived:
            self._receive()
        reports = self._arrived.pop(place)
        if not self._arrived and not any(lane.places for lane in self._lanes):
            self._join()
        return reports

    def close(self) -> None:
        """Stop every lane still running (the session ended early: its tests are not reported), or
        let those that finished go."""
        for lane in self._lanes:
            # A lane reaped already (lost) is not signalled: its pid may be another process's now.
            if lane.status is None:
                os.kill(lane.pid, signal.SIGTERM)
        self._join()

    def _place(self, item: pytest.Item) -> int:
        if self._places is None:
            self._places = {id(each): place for place, each in enumerate(self.session.items)}
        return self._places[id(item)]

    def _deal(self, start: int) -> None:
        items = self.session.items
        stretch = [start]
        while stretch[-1] + 1 < len(items) and is_contained(items[stretch[-1] + 1]):
            stretch.append(stretch[-1] + 1)
        seeds = {place: draw_seed() for place in stretch}
        count = min(self.count, len(stretch))
        for number in range(count):
            share = stretch[number::count]
            read_end, write_end = os.pipe()
            parent = os.getpid()
            pid = fork_frozen()
            if pid == 0:  # pragma: no cover - the lane's side: coverage traces the child's new frames only
                others = [read_end, *(other.fd for other in self._lanes)]
                _lane(self.session, self.guard, share, seeds, write_end, parent, others)
            os.close(write_end)
            os.set_blocking(read_end, False)
            set_group(pid)
            self._lanes.append(_Lane(pid, read_end, list(share)))

    def _receive(self) -> None:
        """Wait for what any lane sends next (or for a lane to end) and take it in."""
        waiting = [lane for lane in self._lanes if lane.places]
        select.select([lane.fd for lane in waiting], [], [], _RECHECK)
        for lane in waiting:
            # Its status first, then its pipe: all that a lane that has ended sent is there by now. (A process
            # it started may hold the pipe open after it: its end is read from its status, not the pipe.)
            ended, status = os.waitpid(lane.pid, os.WNOHANG)
            self._read(lane)
            if ended:
                lane.status = status
                self._lost(lane, status)

    def _read(self, lane: _Lane) -> None:
        """Take in the whole messages the lane has sent so far (a part waits for the rest)."""
        while True:
            try:
                chunk = os.read(lane.fd, 1 << 16)
            except BlockingIOError:
                chunk = b""
            if not chunk:
                break
            lane.received += chunk
        messages, lane.received = split_messages(lane.received)
        for message in messages:
            self._take(lane, json.loads(message))

    def _take(self, lane: _Lane, answer: JSONObject) -> None:
        config = self.session.config
        place = answer["place"]
        self.guard.merge(answer["guard"])
        lane.places.remove(place)
        self._arrived[place] = [
            config.hook.pytest_report_from_serializable(config=config, data=data) for data in answer["reports"]
        ]

    def _lost(self, lane: _Lane, status: int) -> None:
        """A lane that ended holding tests: each becomes a failure that says so."""
        for place in lane.places:
            self._arrived[place] = [_lane_ended(self.session.items[place], status)]
        lane.places.clear()

    def _join(self) -> None:
        """Let every lane of the last stretch end (killed past :data:`STOP_WAIT`)."""
        give_up = self.clock.monotonic() + STOP_WAIT
        for lane in self._lanes:
            os.close(lane.fd)
            status = self._reap(lane, give_up)
            if lane.places:
                self._lost(lane, status)
        self._lanes = []

    def _reap(self, lane: _Lane, give_up: float) -> int:
        """The lane's exit status once it has ended, or after killing it at ``give_up``."""
        while lane.status is None:
            done, status = os.waitpid(lane.pid, os.WNOHANG)
            if done:
                lane.status = status
            else:
                if self.clock.monotonic() >= give_up:
                    # Reaped at a later look; its worker and the children it forked end with it (die_with).
                    os.kill(lane.pid, signal.SIGKILL)
                self.clock.sleep(0.01)
        return lane.status


def _lane_ended(item: pytest.Item, status: int) -> pytest.TestReport:
    """The failure of a test whose lane ended before it reported the test."""
    text = (
        f"the ppaux lane that held this test ended before it reported it ({describe_status(status)}): a failure of "
        "ppaux, not a finding about the implementation"
    )
    report = pytest.TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed", text, "call")
    carry_outcome(report, replace(row(item, report), error=text))
    return report


def run_share(
    session: pytest.Session, guard: Guard, share: list[int], seeds: dict[int, int], out: int
) -> None:  # pragma: no cover - runs in a lane: coverage traces the child's new frames only
    """A lane's work: the tests at ``share`` (places in the session's items), one after another through a
    fork server of its own, each one's reports sent down ``out`` as soon as it has them."""
    config, items = session.config, session.items
    # Its worker is killed when it ends, stopped or not (ends_with_this_process).
    server = ForkServer(session, guard, ends_with_this_process=True)
    for number, place in enumerate(share):
        nextitem = items[share[number + 1]] if number + 1 < len(share) else None
        reports = server.run(items[place], nextitem, seeds[place])
        data = [config.hook.pytest_report_to_serializable(config=config, report=r) for r in reports]
        send(out, json.dumps({"place": place, "reports": data, "guard": guard.state()}).encode())


def _stop(signum: int, frame: FrameType | None) -> None:  # pragma: no cover - runs in a lane
    # One stop, raised once: a second SIGTERM ends the lane at once, and its end has one Stopped to outlast.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Stopped()


def _lane(
    session: pytest.Session,
    guard: Guard,
    share: list[int],
    seeds: dict[int, int],
    out: int,
    parent: int,
    others: list[int],
) -> NoReturn:  # pragma: no cover - the lane's side: coverage traces the child's new frames only
    def run_until_done_or_stopped() -> None:
        for fd in others:  # the other lanes' pipes, and its own read end
            os.close(fd)
        set_group(0)
        die_with(parent)
        try:
            signal.signal(signal.SIGTERM, _stop)
            # The calls of this lane's worker get a deadline of their own: the other lanes' are read elsewhere.
            guard.renew_mark()
            run_share(session, guard, share, seeds, out)
        except (Stopped, BrokenPipeError):
            pass  # stopped, or nobody reads its reports any more: the session ended early

    run_child(run_until_done_or_stopped)
