"""The one reader of JSON-lines files (a run's result rows, a fuzz round's events): a missing file,
blank lines, and a last line torn by a writer that died mid-line."""

from __future__ import annotations

import json

import pytest

from ppaux.testing.results import read_jsonl, split_jsonl


def test_a_missing_file_has_no_rows(tmp_path):
    assert read_jsonl(tmp_path / "never-written.jsonl") == []


def test_rows_are_read_in_order_and_blank_lines_skipped(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"nodeid": "t::a", "outcome": "passed"}\n\n  \n{"nodeid": "t::b", "doc": "caf\xc3\xa9"}\n')
    assert read_jsonl(path) == [{"nodeid": "t::a", "outcome": "passed"}, {"nodeid": "t::b", "doc": "café"}]
    assert read_jsonl(str(path)) == read_jsonl(path)


def test_a_torn_last_line_is_left_out(tmp_path):
    """A child that crashed while writing leaves a last line without its newline: the finished rows stand."""
    path = tmp_path / "rows.jsonl"
    path.write_text('{"nodeid": "t::a"}\n{"nodeid": "t::b", "outc')
    assert read_jsonl(path) == [{"nodeid": "t::a"}]
    # A last row that happens to be whole JSON but lacks its newline is torn all the same.
    path.write_text('{"nodeid": "t::a"}\n{"nodeid": "t::b"}')
    assert read_jsonl(path) == [{"nodeid": "t::a"}]


def test_a_finished_line_that_is_not_json_is_an_error(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"nodeid": "t::a"}\nnot json\n')
    with pytest.raises(json.JSONDecodeError) as info:
        read_jsonl(path)
    assert str(info.value) == "Expecting value: line 1 column 1 (char 0)"


def test_a_file_still_being_written_is_read_line_by_line_as_it_grows():
    rows, rest = split_jsonl(b'{"kind": "started"}\n{"kind": "prog')
    assert (rows, rest) == ([{"kind": "started"}], b'{"kind": "prog')
    rows, rest = split_jsonl(rest + b'ress", "examples": 3}\n')
    assert (rows, rest) == ([{"kind": "progress", "examples": 3}], b"")
    assert split_jsonl(b"") == ([], b"")
