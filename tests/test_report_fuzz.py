"""The fuzz job's reports read as a CI job would: fuzz.json (one shard's run, and shards' runs
merged) and replay.json validate against the JSON Schemas shipped with the package, read back into
the same typed reports, and a file of another format version is refused with one line (and exit
status 2 where a command reads it). The real runs of tests/test_fuzz.py (a planted bug found, saved,
replayed with --regressions; two shards on a real Redis, replayed and merged) validate theirs too:
:func:`conforms`."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from ppaux.cli.main import main as ppaux_main
from ppaux.report import (
    FuzzReplayReport,
    FuzzRunReport,
    RefusedFinding,
    RegressionSummary,
    ReportFormatError,
    WrittenRegressions,
    schema,
)
from tests.test_fuzz import COLLECTED, FAILURE, ScriptedSuite
from tests.typed_reports import conforms, validate

# The fields of a failure a run found, beside its depth (and its shard, merged).
FOUND = ["nodeid", "clause", "error", "example", "blob", "text", "worker", "workers", "round", "placements"]
FOUND += ["found_after_s", "seen"]


def fuzz(capsys, *args: str) -> tuple[int, str]:
    """``ppaux fuzz ARGS`` in this process: exit status and stderr."""
    capsys.readouterr()
    status = ppaux_main(["fuzz", *args])
    return status, capsys.readouterr().err


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind", ["fuzz-run", "fuzz-replay"])
def test_the_shipped_schemas_are_valid_json_schemas(kind):
    jsonschema.Draft202012Validator.check_schema(schema(kind))


def _scripted_shard(tmp_path: Path, capsys, monkeypatch, shard: str, events: list) -> Path:
    """``ppaux fuzz run --shard SHARD``, its round scripted (tests/test_fuzz.py's FAKE_ROUND): its report directory."""
    import ppaux.fuzz.rounds as rounds

    monkeypatch.setenv("FAKE_ROUND", json.dumps({"*": {"events": events, "end": "exit 1"}}))
    monkeypatch.setattr(rounds, "Suite", ScriptedSuite)
    out = tmp_path / f"shard{shard[0]}"
    argv = ("run", "--shard", shard, "--workers", "1", "--budget", "60s", "--max-failures", "1", "--devices", "cpu")
    status, err = fuzz(capsys, *argv, "--db", str(tmp_path / "db"), "--report", str(out))
    assert status == 1, err
    return out


@pytest.mark.subprocess
def test_two_shards_merged_write_what_the_schema_describes(tmp_path, capsys, monkeypatch):
    events = [COLLECTED, {"kind": "running", "nodeid": "t.py::t"}, {"kind": "progress", "examples": 7}]
    one = _scripted_shard(tmp_path, capsys, monkeypatch, "1/2", [*events, FAILURE])
    two = _scripted_shard(tmp_path, capsys, monkeypatch, "2/2", [*events, dict(FAILURE, nodeid="t.py::u")])
    for shard in (one, two):
        conforms(read(shard / "fuzz.json"), "fuzz-run")
    status, err = fuzz(capsys, "report", "--merge", str(one), str(two), "--report", str(tmp_path / "merged"))
    assert status == 1, err
    merged = read(tmp_path / "merged" / "fuzz.json")
    assert (merged["merged"], [h["shard"] for h in merged["shards"]]) == (True, ["1/2", "2/2"])
    assert [(f["nodeid"], f["shard"]) for f in merged["failures"]] == [("t.py::t", "1/2"), ("t.py::u", "2/2")]
    assert sorted(merged["failures"][0]) == sorted([*FOUND, "shard", "scope", "swarm", "swarm_seed"])
    conforms(merged, "fuzz-run")


def _run_file(tmp_path: Path, capsys, monkeypatch) -> dict:
    events = [COLLECTED, {"kind": "running", "nodeid": "t.py::t"}, {"kind": "progress", "examples": 7}, FAILURE]
    return read(_scripted_shard(tmp_path, capsys, monkeypatch, "1/2", events) / "fuzz.json")


def _replay_file() -> dict:
    failure = {**{k: FAILURE[k] for k in ("nodeid", "clause", "error", "example", "blob")}, "text": "E", "saved": 2}
    return {
        "kind": "fuzz-replay",
        "schema_version": 1,
        "verdict": "fail",
        "at": "2026-12-05T00:00:00+00:00",
        "impl": "x.py",
        "db": "d",
        "placement": "cpu",
        "tests_with_saved_failures": 2,
        "saved_examples": 3,
        "still_failing": [failure],
        "no_longer_failing": [{"nodeid": "t.py::u", "saved": 1}],
    }


def _refusal(data: dict, kind: str, change: dict) -> str:
    validate(data, kind)
    with pytest.raises(jsonschema.ValidationError) as caught:
        validate({**data, **change}, kind)
    return caught.value.message


# Each change to a file ppaux wrote, and why its schema refuses the result.
RUN_REFUSALS = [
    ({"verdict": "failed"}, "'failed' is not one of ['pass', 'fail']"),
    ({"schema_version": 2}, "1 was expected"),
    ({"shards": [{"shard": "1/2"}]}, "'examples' is a required property"),
    ({"failures": [{"nodeid": "t.py::t"}]}, "'clause' is a required property"),
    ({"extra": 1}, "Additional properties are not allowed ('extra' was unexpected)"),
]
REPLAY_REFUSALS = [
    ({"verdict": "passed"}, "'passed' is not one of ['pass', 'fail']"),
    ({"no_longer_failing": [{"nodeid": "t.py::u", "saved": 0}]}, "0 is less than the minimum of 1"),
    ({"kind": "fuzz-run"}, "'fuzz-replay' was expected"),
]


def test_the_schemas_reject_what_ppaux_does_not_write(tmp_path, capsys, monkeypatch):
    # One run's file for every change: a scripted run costs a fraction of a second.
    run = _run_file(tmp_path, capsys, monkeypatch)
    assert [_refusal(run, "fuzz-run", change) for change, _ in RUN_REFUSALS] == [why for _, why in RUN_REFUSALS]
    replay = _replay_file()
    assert [_refusal(replay, "fuzz-replay", change) for change, _ in REPLAY_REFUSALS] == [
        why for _, why in REPLAY_REFUSALS
    ]


# What --regressions wrote: a file for clause add.7, and a failure it could not write as code.
WRITTEN = {
    "directory": "reg",
    "files": [{"clause": "add.7", "path": "reg/test_add_7.py", "tests": ["test_t"]}],
    "refused": [{"nodeid": "t.py::v", "clause": "pop.4", "why": "the test's calls were not recorded"}],
    "removed": ["reg/test_pop_4.py"],
}


@pytest.mark.parametrize("regressions", [None, WRITTEN])
def test_a_replay_report_with_or_without_regression_files_reads_back_into_the_same_json(regressions):
    data = _replay_file() if regressions is None else {**_replay_file(), "regressions": regressions}
    conforms(data, "fuzz-replay")
    assert FuzzReplayReport.from_json(data).regressions == (
        None
        if regressions is None
        else RegressionSummary(
            "reg",
            (WrittenRegressions("add.7", "reg/test_add_7.py", ("test_t",)),),
            (RefusedFinding("pop.4", "t.py::v", "the test's calls were not recorded"),),
            ("reg/test_pop_4.py",),
        )
    )


@pytest.mark.parametrize(
    "kind, change, line",
    [
        (
            "fuzz-run",
            {"schema_version": None},
            "this fuzz-run report was written before 0.4 (no schema_version); ppaux reads format version 1: "
            "run the fuzz job again",
        ),
        (
            "fuzz-replay",
            {"schema_version": None},
            "this fuzz-replay report was written before 0.4 (no schema_version); ppaux reads format version 1: "
            "run the replay again",
        ),
        (
            "fuzz-replay",
            {"schema_version": 3},
            "this fuzz-replay report was written in format version 3; ppaux reads format version 1: "
            "run the replay again",
        ),
        ("fuzz-replay", {"kind": "conformance"}, "not a fuzz-replay report: its kind is 'conformance'"),
    ],
)
def test_a_report_of_another_format_version_is_refused_with_one_line(tmp_path, capsys, monkeypatch, kind, change, line):
    data = _run_file(tmp_path, capsys, monkeypatch) if kind == "fuzz-run" else _replay_file()
    data.update(change)
    if data["schema_version"] is None:
        del data["schema_version"], data["verdict"]  # as 0.3 wrote it
    with pytest.raises(ReportFormatError) as caught:
        (FuzzRunReport if kind == "fuzz-run" else FuzzReplayReport).from_json(data)
    assert str(caught.value) == line


def test_a_replay_beside_a_fuzz_report_of_0_3_is_refused_with_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    # The replay reads the run's fuzz.json in its --report directory for the depths its failures were found at.
    data = _run_file(tmp_path, capsys, monkeypatch)
    del data["schema_version"], data["verdict"], data["merged"], data["shards"]
    report = tmp_path / "report"
    report.mkdir()
    (report / "fuzz.json").write_text(json.dumps(data))
    (tmp_path / "db").mkdir(exist_ok=True)
    status, err = fuzz(capsys, "replay", "--devices", "cpu", "--db", str(tmp_path / "db"), "--report", str(report))
    assert (status, err) == (
        2,
        f"ppaux: error: --report {str(report)!r}: this fuzz-run report was written before 0.4 (no schema_version); "
        "ppaux reads format version 1: run the fuzz job again\n",
    )
