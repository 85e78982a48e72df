"""The reports ppaux writes, read as a CI job or a dashboard would: each validates against the JSON
Schema shipped with the package, reads back into the same typed report, and a file of another
format version is refused with one line naming its version."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from ppaux.cli.main import main
from ppaux.report import ConformanceReport, ReportFormatError, schema, write_atomic

IMPLS = Path(__file__).resolve().parent / "impls"
ADD_6 = "test_failed_add_leaves_dict_exactly_as_before"


def validate(data: dict, kind: str) -> None:
    jsonschema.Draft202012Validator(schema(kind)).validate(data)


def checked(tmp_path: Path, *args: str) -> dict:
    """conformance.json of ``ppaux check ARGS`` (a real run of the installed suite)."""
    main(["check", "--report", str(tmp_path), *args])
    return json.loads((tmp_path / "conformance.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def passing_report(tmp_path_factory) -> dict:
    """One passing check for the tests that only read its report (each check is a run of the suite)."""
    return checked(tmp_path_factory.mktemp("reference"), "--tests", "round_trip")


def test_the_shipped_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(schema("conformance"))


@pytest.mark.subprocess
def test_a_check_of_a_broken_and_of_a_correct_implementation_writes_what_the_schema_describes(tmp_path, passing_report):
    # One failing test is a failing report: the whole suite's shrinking would only cost time.
    broken = checked(tmp_path / "broken", "--impl", str(IMPLS / "non_atomic_add.py"), "--tests", ADD_6)
    assert broken["verdict"] == "fail" and broken["failed_clauses"] == ["add.6"]
    assert passing_report["verdict"] == "pass"
    for data in (broken, passing_report):
        validate(data, "conformance")
        # Read back, the typed report writes the very same JSON.
        assert ConformanceReport.from_json(data).to_json() == data


@pytest.mark.subprocess
def test_a_check_that_writes_regression_files_writes_what_the_schema_describes(tmp_path):
    impl = str(IMPLS / "non_atomic_add.py")
    data = checked(tmp_path, "--impl", impl, "--tests", ADD_6, "--regressions", str(tmp_path / "reg"))
    assert [f["clause"] for f in data["regressions"]["files"]] == ["add.6"]
    validate(data, "conformance")
    assert ConformanceReport.from_json(data).to_json() == data


@pytest.mark.parametrize(
    "change, why",
    [
        ({"verdict": "passed"}, "'passed' is not one of ['pass', 'fail']"),
        ({"schema_version": 2}, "1 was expected"),
        ({"counts": {"passed": 1, "failed": 0}}, "'skipped' is a required property"),
        ({"extra": 1}, "Additional properties are not allowed ('extra' was unexpected)"),
    ],
)
def test_the_schema_rejects_what_ppaux_does_not_write(passing_report, change, why):
    with pytest.raises(jsonschema.ValidationError) as caught:
        validate({**passing_report, **change}, "conformance")
    assert caught.value.message == why


@pytest.mark.parametrize(
    "change, line",
    [
        (
            {"schema_version": None},
            "this conformance report was written before 0.4 (no schema_version); ppaux reads format version 1: "
            "run the check again",
        ),
        (
            {"schema_version": 2},
            "this conformance report was written in format version 2; ppaux reads format version 1: "
            "run the check again",
        ),
        ({"kind": "fuzz-run"}, "not a conformance report: its kind is 'fuzz-run'"),
    ],
)
def test_a_report_of_another_format_version_is_refused_with_one_line(passing_report, change, line):
    data = {**passing_report, **change}
    if data["schema_version"] is None:
        del data["schema_version"], data["kind"]  # as 0.3 wrote it
    with pytest.raises(ReportFormatError) as caught:
        ConformanceReport.from_json(data)
    assert str(caught.value) == line


def test_a_report_is_written_whole_in_utf8_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / "conformance.md"
    write_atomic(path, "before\n")
    monkeypatch.setenv("LC_ALL", "C")
    write_atomic(path, "caf\u00e9 \u2192 pop.4\n")
    assert path.read_bytes() == "caf\u00e9 \u2192 pop.4\n".encode()

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(OSError):
        write_atomic(path, "half\n")
    # The reader still sees the last whole report, and nothing else is left beside it.
    assert path.read_text(encoding="utf-8") == "caf\u00e9 \u2192 pop.4\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conformance.md"]
