"""ppaux's directory in the user's tree (:mod:`ppaux.testing.state`): where a command given no
``--report`` writes, and why a directory cannot hold a command's files. Each command's own use of it
(the default, ``--report`` exactly, a ``.ppaux`` that cannot be made) is tested with the command."""

from __future__ import annotations

import os
from pathlib import Path

from ppaux.testing.state import check_directory, report_directory


def test_a_report_directory_given_is_returned_as_given_and_nothing_is_made(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert report_directory("a/b", "fuzz") == Path("a/b")
    assert list(tmp_path.iterdir()) == []


def test_the_default_is_the_commands_directory_under_a_dot_directory_made_with_its_gitignore(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert report_directory(None, "faults") == Path(".ppaux", "faults")
    # The command makes its own directory when it writes: a run that fails before leaves .ppaux only.
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [".ppaux", ".ppaux/.gitignore"]
    assert (tmp_path / ".ppaux" / ".gitignore").read_text() == "# Created by ppaux automatically.\n*\n"


def test_a_dot_directory_that_is_a_dangling_link_is_the_users_and_left_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.symlink("elsewhere", ".ppaux")
    assert report_directory(None, "mutate") == Path(".ppaux", "mutate")
    assert [p.name for p in tmp_path.iterdir()] == [".ppaux"] and not (tmp_path / "elsewhere").exists()


def test_a_file_where_a_directory_should_be_is_said_so(tmp_path):
    (tmp_path / "f").write_text("")
    assert check_directory(tmp_path / "f") == f"{tmp_path / 'f'} is not a directory"


def test_a_directory_that_cannot_be_written_is_said_so(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert check_directory(tmp_path) == f"{tmp_path} is not writable"
