"""ppaux's own mutation runs for a user whose locale is not UTF-8 (LC_CTYPE=C: ASCII): the checkout's
files, the equivalents files, mutmut's log and the reports are read and written as UTF-8 all the
same, so a name or a reason beyond ASCII neither fails the run nor comes out garbled."""

from __future__ import annotations

import codecs
import json
import locale
import sys

import pytest

from ppaux.mutation import own
from ppaux.mutation.pragmas import markings
from tests.fake_mutmut import ARITH, Clock, FakeMutmut, judged_file, small_checkout
from tests.support import tomllib

# mutmut's progress line, as its log holds it.
PROGRESS_LINE = "⠹ 1/1  🎉 1 🫥 0  ⏰ 0  🤔 0  🙁 0  🔇 0\n"


@pytest.fixture
def ascii_locale():
    if sys.flags.utf8_mode:
        pytest.skip("Python's UTF-8 mode reads and writes UTF-8 whatever the locale")
    saved = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        # Without an encoding, open() now reads and writes ASCII (where C is not UTF-8 already).
        if codecs.lookup(locale.getpreferredencoding(False)).name != "ascii":
            pytest.skip("the C locale is not ASCII here")
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, saved)


class _Utf8Log(FakeMutmut):
    """mutmut stood in for, its log in UTF-8 as mutmut's run writes it, its clean run failing once."""

    def run(self, *, max_children, only, log, progress):
        self.runs.append((max_children, tuple(only), log.name))
        failed = len(self.runs) == 1
        text = PROGRESS_LINE + (own.CLEAN_RUN_FAILED + "\n" if failed else "done\n")
        log.write_bytes(text.encode("utf-8"))
        return 1 if failed else 0


def test_a_run_reads_and_writes_utf_8_whatever_the_locale(tmp_path, monkeypatch, ascii_locale):
    root = tmp_path / "checkout"
    small_checkout(root)
    (root / "pyproject.toml").write_bytes("[project]\nname = 'arith'\nauthors = [{name = 'Jürgen'}]\n".encode())
    judged = {"arith.ops.x_double__mutmut_2": "x·2 ≡ x+x"}
    (root / "eq.json").write_bytes(json.dumps(judged_file(judged), ensure_ascii=False).encode())
    runs = []
    verdicts = {"arith.ops.x_double__mutmut_1": "killed", "arith.ops.x_double__mutmut_2": "survived"}

    class StandIn(own.Checkout):
        def project(self, scope, dest):
            super().project(scope, dest)
            return _Utf8Log(dest, verdicts, runs, True)

    checkout = StandIn(root=root, copied=("arith", "pyproject.toml"), pytest_args=(), do_not_mutate=(), always_gated=())
    monkeypatch.setattr(own, "time", Clock(took=1.0))
    out = tmp_path / "out"
    assert own.run_scope(checkout, ARITH, str(out), None) == 0
    # mutmut's log, emoji and all, was read: its failed clean run was seen and run again.
    assert [log for *_, log in runs] == ["mutmut-run.log", "mutmut-run-again.log"]
    pyproject = tomllib.loads((out / "project" / "pyproject.toml").read_bytes().decode("utf-8"))
    assert pyproject["project"]["authors"] == [{"name": "Jürgen"}]
    assert pyproject["tool"]["mutmut"]["only_mutate"] == ["arith/*"]
    report = json.loads((out / "mutation.json").read_bytes().decode("utf-8"))
    assert report["judged_equivalent"] == judged
    assert "- `arith.ops.x_double__mutmut_2`: x·2 ≡ x+x\n" in (out / "mutation.md").read_bytes().decode("utf-8")


def test_markings_are_read_in_utf_8_whatever_the_locale(tmp_path, ascii_locale):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_bytes("größe = 1  # pragma: no mutate - equivalent: ½ is 0.5\n".encode())
    assert [m.to_json() for m in markings(tmp_path / "pkg")] == [
        {"where": "pkg/m.py:1", "block": False, "reason": "equivalent: ½ is 0.5", "problem": None}
    ]
