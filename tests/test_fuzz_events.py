"""The events a fuzz round writes for the run that started it (ppaux.fuzz.events): each kind reads back
as the event that was written, a line names only what its event has, and a line of an unknown kind is
refused rather than skipped."""

from __future__ import annotations

import json

import pytest

from ppaux.fuzz.events import (
    Collected,
    Finished,
    Interrupted,
    Progress,
    RoundFailure,
    Running,
    Started,
    TestDone,
    decode,
    encode,
)
from ppaux.report import TestOutcome

SCENARIO = {"prefix": "p", "steps": [{"op": "pop", "dict": "d", "arg": "'p.a'", "setup": []}], "doubles": []}

EVENTS = [
    Started(41),
    Collected(2, 5),
    Running("t.py::t"),
    Interrupted("t.py::t"),
    TestDone("t.py::t", "failed", 3),
    TestDone("t.py::u", "passed"),
    RoundFailure(
        TestOutcome(
            "t.py::t",
            "add.7",
            "failed",
            ("contract",),
            "Adding keeps the tensor.",
            "AssertionError: x",
            example="Failing test case: t()",
            blob="@reproduce_failure(..)",
        ),
        "E",
    ),
    RoundFailure(
        TestOutcome(
            "t.py::h",
            None,
            "failed",
            error="Hang: pop did not return within 1 s",
            finding="hang",
            detail="  File t.py, line 3, in pop",
            scenario=SCENARIO,
        )
    ),
    RoundFailure(
        TestOutcome("t.py::u", None, "failed", scenario_error="the test made no call into the implementation")
    ),
    Progress(17),
    Finished(1),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_each_event_reads_back_as_written(event):
    assert decode(json.loads(encode(event, 1.5))) == event


def test_a_line_names_its_kind_and_time_and_only_the_optional_fields_its_event_has():
    assert json.loads(encode(TestDone("t.py::u", "passed"), 2.0)) == {
        "kind": "test",
        "nodeid": "t.py::u",
        "outcome": "passed",
        "time": 2.0,
    }
    # A failure names what its test's report row names (a failure: whether it has an example and a blob).
    assert json.loads(encode(RoundFailure(TestOutcome("t.py::t", None, "failed", error="E")), 2.0)) == {
        "kind": "failure",
        "nodeid": "t.py::t",
        "clause": None,
        "marks": [],
        "doc": "",
        "outcome": "failed",
        "error": "E",
        "example": None,
        "blob": None,
        "text": "",
        "time": 2.0,
    }


def test_a_line_of_a_kind_this_release_does_not_write_is_refused():
    with pytest.raises(ValueError) as caught:
        decode({"kind": "environment", "mode": "run"})
    assert str(caught.value) == "a fuzz round wrote an event of unknown kind 'environment'"
