"""``ppaux mutate``: bad input is one line and exit 2, the report says what killed what, and a real
mutmut run over a small implementation scores it against the gate, beside a baseline command."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import textwrap
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import pytest

from ppaux.cli.main import main
from ppaux.mutation import mutate, project
from ppaux.mutation.equivalents import NO_MUTANT, REVIEW
from ppaux.mutation.mutate import KillSet, MutateInputError, MutateOptions, MutateRun
from ppaux.mutation.project import changed_line, crashes, name_crashes, parse_results, show_counts
from ppaux.mutation.score import is_killed, verdicts
from ppaux.mutation.target import Target, resolve, scratch_package_init, write_config, write_scratch
from ppaux.report import MutateReport, TestOutcome
from ppaux.report.render import mutate_markdown
from ppaux.testing import progress as progress_module
from ppaux.testing import state
from ppaux.testing.impl import ImplementationError
from ppaux.testing.progress import Progress
from ppaux.testing.suite import suite_files
from tests.fake_mutmut import fake_sources, judged_file
from tests.support import FakeClock, tomllib
from tests.test_lanes import ended
from tests.typed_reports import read_valid

IMPLS = Path(__file__).resolve().parent / "impls"
ROOT = IMPLS.parent.parent

# An implementation of its own whose pop is a copy of the reference's; add is the reference's.
OWN_POP = """
import torch
from ppaux.core.errors import AuxiliaryPPError
from ppaux.transport import (  # noqa: F401 - the names an implementation must provide
    _OUTPUT_PREFIX, PipelineParallelAuxiliaryOutput, PipelineParallelSamplingObserver,
    add_auxiliary_output_to_pp_tensors)


def pop_auxiliary_output_from_pp_tensors(tensors, observer):
    keys = [k for k in tensors if isinstance(k, str) and k.startswith(_OUTPUT_PREFIX)]
    if not keys:
        return None
    if observer is None:
        raise AuxiliaryPPError("P1")
    if not isinstance(observer, PipelineParallelSamplingObserver):
        raise AuxiliaryPPError("P2")
    received = {k[len(_OUTPUT_PREFIX):]: tensors[k] for k in keys}
    if not all(torch.is_tensor(v) for v in received.values()):
        raise AuxiliaryPPError("P3")
    output = observer.from_pp_tensors(received)
    if output is None:
        raise AuxiliaryPPError("P4")
    for name in received:  # as SGLang 0.5.23: by the dict the observer was handed (fails pop.4's robustness test)
        del tensors[_OUTPUT_PREFIX + name]
    return output
"""

# A baseline of the kind a project keeps: one example test, of P1 only.
BASELINE = """
import own_pop
try:
    own_pop.pop_auxiliary_output_from_pp_tensors({own_pop._OUTPUT_PREFIX + "s": 1}, None)
except RuntimeError as exc:
    assert str(exc) == "received auxiliary PP output without a sampling observer"
else:
    raise AssertionError("no P1")
"""


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--impl", "ppaux.transport"],
            "ppaux: error: implementation 'ppaux.transport' defines neither add_auxiliary_output_to_pp_tensors "
            "nor pop_auxiliary_output_from_pp_tensors (they come from ppaux.core.transport); point --impl at the "
            "module that defines them\n",
        ),
        (
            ["--impl", "no_such_impl_module"],
            "ppaux: error: cannot import implementation module 'no_such_impl_module': ModuleNotFoundError: "
            "No module named 'no_such_impl_module'\n",
        ),
        (
            ["--impl", "ppaux.core.transport", "--gate", "101"],
            "ppaux: error: --gate must be between 0 and 100, got 101.0\n",
        ),
        (
            ["--impl", "ppaux.core.transport", "--profile", "fast"],
            "ppaux: error: unknown profile 'fast'; choose from ci, dev, nightly, mutation\n",
        ),
        (["--impl", "ppaux.core.transport", "--baseline", ""], "ppaux: error: --baseline needs a command\n"),
        (
            ["--impl", "ppaux.core.transport", "--baseline", "no-such-command-xyz --flag"],
            "ppaux: error: baseline command not found: 'no-such-command-xyz'\n",
        ),
        ([], "ppaux mutate: the following arguments are required: --impl\n"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert run_cli(capsys, "mutate", *argv) == (2, "", message)


@pytest.mark.parametrize(
    "content, message",
    [
        ("[1]", "must be a JSON object {mutant: reason} with a reason for each"),
        ('{"m": " "}', "must be a JSON object {mutant: reason} with a reason for each"),
        ("{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ],
)
def test_an_equivalents_file_needs_a_reason_for_each_mutant(capsys, tmp_path, content, message):
    path = tmp_path / "eq.json"
    path.write_text(content)
    code, _, err = run_cli(capsys, "mutate", "--impl", "ppaux.core.transport", "--equivalents", str(path))
    assert (code, err) == (
        2,
        f"ppaux: error: --equivalents {str(path)!r}" + (": " if content == "{" else " ") + message + "\n",
    )


@pytest.mark.parametrize("module, name", [("mutmut", "mutmut 3"), ("tomli_w", "tomli-w")])
def test_without_mutmut_or_tomli_w_it_says_how_to_install_it(capsys, monkeypatch, module, name):
    monkeypatch.setitem(sys.modules, module, None)
    assert run_cli(capsys, "mutate", "--impl", "ppaux.core.transport") == (
        2,
        "",
        f"ppaux: error: {name} is not installed, and mutate needs it: pip install 'ppaux[mutate]'\n",
    )


def test_a_file_must_be_named_like_a_module(tmp_path):
    path = tmp_path / "my-transport.py"
    path.write_text(OWN_POP)
    with pytest.raises(ImplementationError) as info:
        resolve(str(path))
    assert str(info.value) == f"implementation file {str(path)!r}: 'my-transport' is not a module name; rename the file"


def test_a_file_that_only_re_exports_an_implementation_cannot_be_mutated(tmp_path):
    """Its mutants would change nothing the suite calls."""
    path = tmp_path / "reexported.py"
    path.write_text(
        "from ppaux.core.transport import *  # noqa\nfrom ppaux.core.transport import _OUTPUT_PREFIX  # noqa\n"
    )
    with pytest.raises(ImplementationError) as info:
        resolve(str(path))
    assert str(info.value) == (
        f"implementation {str(path)!r} defines neither add_auxiliary_output_to_pp_tensors "
        "nor pop_auxiliary_output_from_pp_tensors "
        "(they come from ppaux.core.transport); point --impl at the module that defines them"
    )


def test_a_file_named_relative_to_another_directory_is_the_file_it_names(tmp_path, monkeypatch):
    """``--impl ../own_pop.py`` from a subdirectory, as ppaux check takes it."""
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    target = resolve("../own_pop.py")
    assert (target.module, target.source) == ("own_pop", tmp_path / "own_pop.py")


def test_a_module_is_mutated_in_its_parent_packages():
    target = resolve("ppaux.core.transport")
    assert (target.module, target.relative_path) == ("ppaux.core.transport", Path("ppaux/core/transport.py"))
    assert target.packages == (("ppaux", (str(ROOT / "ppaux"),)), ("ppaux.core", (str(ROOT / "ppaux" / "core"),)))


def test_a_scratch_package_finds_the_copy_first_and_everything_else_in_the_original(tmp_path, monkeypatch):
    original = tmp_path / "original" / "pkg_under_test"
    original.mkdir(parents=True)
    (original / "__init__.py").write_text("MARK = 'original init ran'\n")
    (original / "sibling.py").write_text("WHERE = 'original'\n")
    (original / "target.py").write_text("WHERE = 'original'\n")
    scratch = tmp_path / "scratch" / "pkg_under_test"
    scratch.mkdir(parents=True)
    (scratch / "__init__.py").write_text(scratch_package_init([str(original)]))
    (scratch / "target.py").write_text("WHERE = 'copy'\n")
    monkeypatch.syspath_prepend(str(tmp_path / "scratch"))
    for name in ("pkg_under_test", "pkg_under_test.target", "pkg_under_test.sibling"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import pkg_under_test.sibling
    import pkg_under_test.target

    assert (pkg_under_test.target.WHERE, pkg_under_test.sibling.WHERE, pkg_under_test.MARK) == (
        "copy",
        "original",
        "original init ran",
    )


def test_a_mutmut_table_is_toml_that_mutmut_reads_back():
    config = {
        "source_paths": ["ppaux/", 'a "quoted"\\path'],
        "process_isolation": "forkserver",
        "timeout_multiplier": 2.5,
        "max_stack_depth": 8,
        "also_copy": [],
        "debug": True,
    }
    assert tomllib.loads(project.mutmut_table(config)) == {"tool": {"mutmut": config}}


def test_mutmut_reads_the_scratch_projects_table_and_forks_each_mutant_from_a_server_that_collected_the_suite(
    tmp_path, monkeypatch
):
    """What mutmut will do with the table ppaux mutate writes, as mutmut itself reads it."""
    from mutmut.configuration import _load_config

    (tmp_path / "own_pop.py").write_text(OWN_POP)
    target = resolve(str(tmp_path / "own_pop.py"))
    scratch = tmp_path / "scratch"
    write_scratch(target, scratch, tests=[])
    write_config(target, scratch, pytest_args=["-k", "p4"])
    monkeypatch.chdir(scratch)
    config = _load_config()
    assert (config.process_isolation.value, config.forkserver_warmup.value) == ("forkserver", "collect")
    assert config.pytest_add_cli_args == [*project.MUTANT_PYTEST_ARGS, "-k", "p4"]
    assert (config.only_mutate, config.pytest_add_cli_args_test_selection) == (["own_pop.py"], ["tests/"])
    # The copy is pytest's rootdir (no configuration above it is read), pytest keeps no cache in it, and
    # its tests/ run as the shipped suite (test_a_crash_in_the_unmutated_modules_run_...).
    tool = tomllib.loads((scratch / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    assert tool["pytest"] == {"ini_options": {"addopts": "-p no:cacheprovider", "ppaux_suite_copies": ["tests"]}}


def test_a_diff_mutmut_cannot_make_says_why_and_no_mutant_needs_no_process(tmp_path):
    scratch = project.MutmutProject(tmp_path)
    diffs = scratch.diffs(["own_pop.x_f__mutmut_1"], lambda name: "own_pop.py")
    assert list(diffs) == ["own_pop.x_f__mutmut_1"] and diffs["own_pop.x_f__mutmut_1"].startswith("(no diff: ")
    assert scratch.diffs([], lambda name: "own_pop.py") == {}
    # Where mutmut itself cannot be imported (here a broken package of that name shadows it), no
    # diff at all: the report shows the mutants without one rather than failing.
    (tmp_path / "mutmut").mkdir()
    (tmp_path / "mutmut" / "__init__.py").write_text("raise ImportError('a broken mutmut')\n")
    assert scratch.diffs(["own_pop.x_f__mutmut_1"], lambda name: "own_pop.py") == {}


def test_mutmuts_listing_and_a_diff_read_back():
    listing = "    a.b.x_f__mutmut_1: killed\n    a.b.xǁCǁm__mutmut_2: survived\nnoise\n"
    assert parse_results(listing) == {"a.b.x_f__mutmut_1": "killed", "a.b.xǁCǁm__mutmut_2": "survived"}
    diff = "--- a.py\n+++ a.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
    assert changed_line(diff) == "return 1 -> return 2"
    assert changed_line("") == ""
    # A module-level line keeps its first character; a change over two lines, or a line removed, reads as such.
    assert changed_line("--- a.py\n+++ a.py\n-LIMIT = 1\n+LIMIT = 2\n") == "LIMIT = 1 -> LIMIT = 2"
    assert changed_line("-    f(a,\n-      b)\n+    f(a)\n") == "f(a, / b) -> f(a)"
    assert changed_line("-    f(a)\n+    f(a,\n+      b)\n") == "f(a) -> f(a, / b)"
    assert changed_line("-    x = 1\n") == "x = 1 -> "


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_a_mutation_runs_progress_redraws_one_line_on_a_terminal_and_ends_it_once_done(monkeypatch):
    clock = Clock(start=0.0)
    monkeypatch.setattr(progress_module, "time", clock)
    tty = Tty()
    p = Progress(stream=tty, every=5.0)
    for at, done in ((0.0, 1), (0.1, 2), (5.0, 3)):
        clock.now = at
        show_counts(p, done, 4, done, 0)
    clock.now = 6.0
    show_counts(p, 4, 4, 3, 1, final=True)
    p.say("ppaux mutate: done")
    # In place while running, at most four times a second; the last counts end the line.
    assert tty.getvalue() == (
        "\r\x1b[Kmutants 1/4  killed 1  survived 0  elapsed 0 s  ETA 0 s"
        "\r\x1b[Kmutants 3/4  killed 3  survived 0  elapsed 5 s  ETA 2 s"
        "\r\x1b[Kmutants 4/4  killed 3  survived 1  elapsed 6 s  ETA 0 s\n"
        "ppaux mutate: done\n"
    )


def test_a_mutation_runs_progress_prints_a_line_every_so_often_and_the_last_counts_once(monkeypatch):
    clock = Clock(start=0.0)
    monkeypatch.setattr(progress_module, "time", clock)
    plain = io.StringIO()
    p = Progress(stream=plain, every=5.0)
    for at, done in ((0.0, 1), (4.9, 2), (5.0, 3)):
        clock.now = at
        show_counts(p, done, 4, done, 0)
    show_counts(p, 3, 4, 3, 0, final=True)  # the counts the last line gave: nothing new to say
    clock.now = 6.0
    show_counts(p, 4, 4, 3, 1, final=True)
    assert plain.getvalue().splitlines() == [
        "mutants 1/4  killed 1  survived 0  elapsed 0 s  ETA 0 s",
        "mutants 3/4  killed 3  survived 0  elapsed 5 s  ETA 2 s",
        "mutants 4/4  killed 3  survived 1  elapsed 6 s  ETA 0 s",
    ]


def test_a_note_on_a_terminal_clears_the_drawn_line_first():
    tty = Tty()
    p = Progress(stream=tty)
    p.update("mutants 1/4")
    p.say("a note")
    p.say("another")
    assert tty.getvalue() == "\r\x1b[Kmutants 1/4\r\x1b[Ka note\nanother\n"
    # Asked or not, a stream says whether it is a terminal.
    assert (Progress(stream=Tty()).tty, Progress(stream=io.StringIO()).tty, Progress(stream=Tty(), tty=False).tty) == (
        True,
        False,
        False,
    )


def test_progress_goes_to_stderr_unless_told(capsys):
    Progress().say("on stderr")
    assert capsys.readouterr() == ("", "on stderr\n")


class Clock:
    """time.monotonic for Progress: each reading advances by ``step`` seconds."""

    def __init__(self, start: float = 100.0, step: float = 0.0) -> None:
        self.now, self.step = start - step, step

    def monotonic(self) -> float:
        self.now += self.step
        return self.now


def test_progress_says_elapsed_time_and_the_time_left_at_the_pace_so_far(monkeypatch):
    clock = Clock(start=40.0)
    monkeypatch.setattr(progress_module, "time", clock)
    out = io.StringIO()
    p = Progress(stream=out, every=0)
    clock.now = 100.0
    show_counts(p, 3, 9, 2, 1, label="baseline mutants")
    # Nothing done yet, or more done than the total says: no pace to go by.
    show_counts(p, 0, 9, 0, 0)
    show_counts(p, 5, 3, 5, 0)
    assert out.getvalue().splitlines() == [
        "baseline mutants 3/9  killed 2  survived 1  elapsed 60 s  ETA 120 s",
        "mutants 0/9  killed 0  survived 0  elapsed 60 s  ETA ?",
        "mutants 5/3  killed 5  survived 0  elapsed 60 s  ETA ?",
    ]


def _args(**kw):
    base = dict(impl="m.py", profile="mutation", marks="contract", tests=None, gate=100.0, baseline="pytest t.py")
    return MutateOptions(**{**base, **kw})


def _report(options, suite, baseline, diffs, kill_set, equivalents, wall_s):
    """mutate.json of a run with these results, as written."""
    return mutate.build_report(
        MutateRun(options, Target("m", Path("m.py")), kill_set, suite, baseline, diffs, equivalents, wall_s)
    ).to_json()


def render_markdown(report: dict) -> str:
    """mutate.md of mutate.json, read back as ``python -m reports build`` reads it."""
    return mutate_markdown(MutateReport.from_json(report))


SUITE = {
    "m.x_f__mutmut_1": "killed",
    "m.x_f__mutmut_2": "survived",
    "m.x_f__mutmut_3": "timeout",
    "m.x_f__mutmut_4": "survived",
}
BASELINE_RESULTS = {
    "m.x_f__mutmut_1": "killed",
    "m.x_f__mutmut_2": "killed",
    "m.x_f__mutmut_3": "survived",
    "m.x_f__mutmut_4": "survived",
}


def test_the_report_puts_the_suite_and_the_baseline_side_by_side(monkeypatch):
    monkeypatch.setattr(mutate, "version", lambda name: "3.8.1")
    diffs = {n: f"-    return {i}\n+    return {i + 1}\n" for i, n in enumerate(SUITE)}
    clean = KillSet(passed=["t::a", "t::b"], left_out=["t::robust"])
    report = _report(
        _args(),
        SUITE,
        BASELINE_RESULTS,
        diffs,
        clean,
        {"m.x_f__mutmut_4": "no caller sees it", "m.x_f__mutmut_1": "stale: it was killed"},
        12.5,
    )
    assert (report["total"], report["equivalent"], report["killed"], report["score"], report["verdict"]) == (
        4,
        1,
        2,
        66.67,
        "fail",
    )
    assert report["baseline"]["side_by_side"] == {"both": 1, "only ppaux": 1, "only the baseline": 1, "neither": 1}
    # The judged-equivalent mutant counts in neither score: the baseline kills 2 of the other 3.
    assert report["baseline"]["score"] == 66.67 and report["stale_equivalents"] == ["m.x_f__mutmut_1"]
    assert (report["kind"], report["module"], report["mutmut"]) == ("mutate", "m", "3.8.1")
    shown = {m["mutant"]: m for m in report["mutants"] if "diff" in m}
    assert sorted(shown) == ["m.x_f__mutmut_2", "m.x_f__mutmut_3", "m.x_f__mutmut_4"]
    assert shown["m.x_f__mutmut_2"]["line"] == "return 1 -> return 2"


# Each kind of verdict pair a different number of times, so that no two kinds can be mistaken for each other.
UNEVEN_SUITE = {
    "m.x_f__mutmut_1": "killed",
    "m.x_f__mutmut_2": "survived",
    "m.x_f__mutmut_3": "timeout",
    "m.x_f__mutmut_4": "survived",
    "m.x_f__mutmut_5": "killed",
    "m.x_f__mutmut_6": "killed",
    "m.x_f__mutmut_7": "killed",
    "m.x_f__mutmut_8": "survived",
}
UNEVEN_BASELINE = {
    "m.x_f__mutmut_1": "killed",
    "m.x_f__mutmut_2": "killed",
    "m.x_f__mutmut_3": "survived",
    "m.x_f__mutmut_4": "survived",
    "m.x_f__mutmut_5": "killed",
    "m.x_f__mutmut_6": "survived",
    "m.x_f__mutmut_7": "timeout",
    "m.x_f__mutmut_8": "survived",
}


def test_the_side_by_side_counts_each_mutant_by_who_killed_it(monkeypatch):
    """mutate.json: both 3, only ppaux 2, only the baseline 1, neither 2 (one judged equivalent);
    a baseline that times out has killed. A survivor whose diff mutmut could not show keeps its place."""
    monkeypatch.setattr(mutate, "version", lambda name: "3.8.1")
    diffs = {n: f"-    return {i}\n+    return {i + 1}\n" for i, n in enumerate(UNEVEN_SUITE) if n != "m.x_f__mutmut_8"}
    report = _report(
        _args(),
        UNEVEN_SUITE,
        UNEVEN_BASELINE,
        diffs,
        KillSet(passed=["t::a"]),
        {"m.x_f__mutmut_4": "no caller sees it"},
        3.0,
    )
    assert report["baseline"]["side_by_side"] == {"both": 3, "only ppaux": 2, "only the baseline": 1, "neither": 2}
    # 7 mutants count: ppaux kills 5 of them, the baseline 4 (1, 2, 5 and 7).
    assert (report["killed"], report["score"]) == (5, 71.43)
    assert (report["baseline"]["killed"], report["baseline"]["score"]) == (4, 57.14)
    shown = {m["mutant"]: (m["diff"], m["line"]) for m in report["mutants"] if "diff" in m}
    assert sorted(shown) == [
        "m.x_f__mutmut_2",
        "m.x_f__mutmut_3",
        "m.x_f__mutmut_4",
        "m.x_f__mutmut_6",
        "m.x_f__mutmut_8",
    ]
    assert shown["m.x_f__mutmut_8"] == ("", "")
    # One mutant that ppaux's suite kills and the baseline misses: only ppaux's, not neither.
    alone = _report(
        _args(), {"m.x_f__mutmut_1": "killed"}, {"m.x_f__mutmut_1": "survived"}, {}, KillSet(["t::a"]), {}, 1
    )
    assert alone["baseline"]["side_by_side"] == {"both": 0, "only ppaux": 1, "only the baseline": 0, "neither": 0}


def test_a_run_whose_every_mutant_is_judged_equivalent_scores_full_marks(monkeypatch):
    monkeypatch.setattr(mutate, "version", lambda name: "3.8.1")
    suite = {"m.x_f__mutmut_1": "survived"}
    report = _report(
        _args(),
        suite,
        {"m.x_f__mutmut_1": "survived"},
        {},
        KillSet(passed=["t::a"]),
        {"m.x_f__mutmut_1": "no caller sees it"},
        1.0,
    )
    assert (report["equivalent"], report["score"], report["verdict"], report["baseline"]["score"]) == (
        1,
        100.0,
        "pass",
        100.0,
    )


def test_the_markdown_report_reads_as_a_whole(monkeypatch):
    """What a maintainer reads in mutate.md: the score without the judged-equivalent mutant, the
    baseline's score over the same mutants, the table, each survivor with the line it changes."""
    monkeypatch.setattr(mutate, "version", lambda name: "3.8.1")
    diffs = {n: f"-    return {i}\n+    return {i + 1}\n" for i, n in enumerate(SUITE)}
    report = _report(
        _args(tests="p4"),
        SUITE,
        BASELINE_RESULTS,
        diffs,
        KillSet(passed=["t::a", "t::b"], left_out=["t::robust", "t::robust_too"]),
        {"m.x_f__mutmut_4": "no caller sees it", "m.x_f__mutmut_1": "stale: it was killed"},
        12.5,
    )
    assert render_markdown(report) == textwrap.dedent("""\
        # Mutation testing: `m.py`

        - ppaux's conformance suite: **66.67%** (2/3 mutants killed; 1 judged equivalent); gate 100.0%: **FAIL**
        - module `m`, mutmut 3.8.1, profile `mutation`, tests `contract` and `-k p4`: 2 tests; wall time 12.5 s
        - verdicts: survived 2, killed 1, timeout 1
        - left out of the kill set (robustness tests that fail on the unmutated module): `t::robust`, `t::robust_too`

        ## Side by side with `pytest t.py`

        | killed by | mutants |
        | --- | --- |
        | both | 1 |
        | only ppaux | 1 |
        | only the baseline | 1 |
        | neither | 1 |

        ppaux's suite 66.67%, the baseline 66.67% of 3 mutants (1 judged equivalent left out).

        ## Survivors

        ### `m.x_f__mutmut_2` (survives ppaux's suite, killed by the baseline)

        Changes `return 1 -> return 2`

        ```diff
        -    return 1
        +    return 2
        ```

        ### `m.x_f__mutmut_3` (killed by ppaux's suite, survives the baseline)

        Changes `return 2 -> return 3`

        ```diff
        -    return 2
        +    return 3
        ```

        ### `m.x_f__mutmut_4` (survives ppaux's suite, survives the baseline)

        Judged equivalent: no caller sees it

        Changes `return 3 -> return 4`

        ```diff
        -    return 3
        +    return 4
        ```

        ## Stale equivalence entries (killed, or no such mutant)

        - `m.x_f__mutmut_1`
        """)


def test_a_report_without_survivors_says_so():
    report = _report(_args(baseline=None), {"m.x_f__mutmut_1": "killed"}, None, {}, KillSet(passed=["t::a"]), {}, 1.0)
    assert (report["score"], report["verdict"], "baseline" in report) == (100.0, "pass", False)
    assert render_markdown(report).endswith("## Survivors\n\nNone.\n")


@pytest.mark.slow
@pytest.mark.thorough  # CI's mutation gate runs mutmut end to end on every push
def test_a_real_run_scores_a_weak_suite_below_the_gate_beside_a_baseline(tmp_path, monkeypatch, capsys):
    """mutmut mutates the implementation's own pop; one conformance test kills only some mutants, the
    project's one-example baseline others: exit 1, and the report counts each kind."""
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    # Not beside own_pop.py: a script's own directory comes first on its path and would shadow the mutated copy.
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "baseline.py").write_text(BASELINE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    (tmp_path / "eq.json").write_text(
        '{"own_pop.x_pop_auxiliary_output_from_pp_tensors__mutmut_999": "no such mutant"}'
    )
    code = main(
        [
            "mutate",
            "--impl",
            "own_pop.py",
            "--tests",
            "test_observer_returning_none_is_p4 or test_observer_changing_its_dict",
            "--max-children",
            "2",
            "--baseline",
            f"{sys.executable} project/baseline.py",
            "--report",
            "out",
            "--equivalents",
            "eq.json",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1, err
    # What mutmut 3 really made of it, as the shipped schema describes mutate.json.
    report = read_valid(tmp_path / "out" / "mutate.json", "mutate")
    assert report["module"] == "own_pop" and report["kill_set"] == 1
    assert report["left_out"] == [
        "tests/test_robustness.py::test_observer_changing_its_dict_does_not_change_the_pp_dict"
    ]
    assert "ppaux mutate: 1 robustness test(s) fail on the unmutated module and are left out of the kill set" in err
    assert (
        "ppaux mutate: stale equivalence entry (killed, or no such mutant): "
        "own_pop.x_pop_auxiliary_output_from_pp_tensors__mutmut_999" in err
    )
    assert all(
        m["mutant"].startswith("own_pop.x_pop_auxiliary_output_from_pp_tensors__mutmut_") for m in report["mutants"]
    )
    assert 0 < report["killed"] < report["total"] and report["verdict"] == "fail"
    sides = report["baseline"]["side_by_side"]
    assert sum(sides.values()) == report["total"] and sides["only ppaux"] > 0 and sides["only the baseline"] > 0
    assert "ppaux mutate: " in err and "; gate 100.0% FAIL; report " in err
    text = (tmp_path / "out" / "mutate.md").read_text()
    assert text.startswith("# Mutation testing: `own_pop.py`\n") and "## Side by side with `" in text
    assert (
        textwrap.dedent("""\
        | killed by | mutants |
        | --- | --- |""")
        in text
    )


@pytest.mark.subprocess
def test_a_baseline_that_imports_the_copy_and_passes_on_it_is_timed(tmp_path, monkeypatch):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    target = resolve(str(tmp_path / "own_pop.py"))
    scratch = tmp_path / "scratch"
    write_scratch(target, scratch, tests=[])
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    command = [sys.executable, "-c", "import own_pop"]
    mutate.baseline_imports_the_copy(command, target, scratch)  # raises UsageError where it must not
    assert mutate.baseline_on_the_copy(command, scratch) > 0


@pytest.mark.subprocess
def test_a_baseline_that_finds_the_original_by_itself_is_bad_input_with_no_word_on_the_directory(tmp_path, monkeypatch):
    """The original is not in the current directory: the command puts it on its own path first."""
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    target = resolve(str(tmp_path / "own_pop.py"))
    scratch = tmp_path / "scratch"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    command = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import own_pop"]
    with pytest.raises(MutateInputError) as info:
        mutate.baseline_imports_the_copy(command, target, scratch)
    assert str(info.value) == (
        "the baseline command passes even when the module under mutation cannot be imported: "
        f"it does not import the copy ({shlex.join(command)})"
    )


@pytest.mark.subprocess
def test_a_baseline_that_does_not_import_the_copy_is_bad_input(tmp_path, monkeypatch, capsys):
    """Beside the original module the baseline imports that, not the mutated copy: it could kill nothing."""
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    (tmp_path / "baseline.py").write_text(BASELINE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    code = main(
        [
            "mutate",
            "--impl",
            "own_pop.py",
            "--tests",
            "test_observer_returning_none_is_p4",
            "--max-children",
            "2",
            "--baseline",
            f"{sys.executable} baseline.py",
            "--report",
            "out",
        ]
    )
    assert code == 2
    assert capsys.readouterr().err.endswith(
        "ppaux: error: the baseline command passes even when the module under mutation cannot be imported: "
        f"it does not import the copy ({sys.executable} baseline.py); the current directory holds own_pop.py: "
        "run ppaux mutate from another one\n"
    )


class _CleanRun:
    """Stands in for the clean run's child pytest: writes the rows its ``--ppaux-results`` file
    would hold and exits as pytest does (1 when a test failed), or with ``code`` and no rows."""

    def __init__(self, rows, code=None, printed="", printed_err=""):
        self.rows, self.code, self.printed, self.printed_err, self.calls = rows, code, printed, printed_err, []

    def run(self, cmd, **kw):
        self.calls.append((cmd, kw))
        if self.code is None:
            results = Path(cmd[cmd.index("--ppaux-results") + 1])
            results.write_text("".join(json.dumps(r) + "\n" for r in self.rows))
        code = self.code if self.code is not None else int(any(r["outcome"] == "failed" for r in self.rows))
        # What subprocess.run hands back: the output only when it was captured, as text when asked.
        captured = kw.get("capture_output") and kw.get("text")
        return subprocess.CompletedProcess(
            cmd, code, self.printed if captured else None, self.printed_err if captured else None
        )


def _row(nodeid, outcome, *marks):
    return TestOutcome(nodeid, None, outcome, marks=marks or ("contract",)).to_json()


def _stand_in_clean_run(monkeypatch, rows, **kw):
    fake = _CleanRun(rows, **kw)
    monkeypatch.setattr(mutate, "subprocess", types.SimpleNamespace(run=fake.run))
    return fake


class _Verdicts(project.MutmutProject):
    """mutmut stood in for: one mutant killed, one survived; what it was configured with is kept."""

    def run(self, **kw):
        self.table = (self.root / "pyproject.toml").read_text()
        _Verdicts.last = self
        return 0

    def results(self):
        return {"own_pop.x_f__mutmut_1": "killed", "own_pop.x_f__mutmut_2": "survived"}

    def diffs(self, names, source_of):
        return {name: f"--- {source_of(name)}\n+++ {source_of(name)}\n-    a\n+    b\n" for name in names}


def test_the_clean_run_runs_the_copied_suite_against_the_copy_with_the_runs_options(tmp_path, monkeypatch, capsys):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    (tmp_path / "eq.json").write_text('{"own_pop.x_f__mutmut_1": "killed after all"}')
    fake = _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.setattr(mutate, "MutmutProject", _Verdicts)
    assert (
        _mutate(
            tmp_path,
            monkeypatch,
            "--impl",
            "own_pop.py",
            "--profile",
            "ci",
            "--marks",
            "contract",
            "--tests",
            "p4",
            "--gate",
            "50",
            "--timeout",
            "3",
            "--equivalents",
            str(tmp_path / "eq.json"),
        )
        == 0
    )
    ((cmd, kw),) = fake.calls
    scratch = tmp_path / "out" / "scratch"
    assert kw["cwd"] == scratch and kw["env"]["PYTHONPATH"] == f"{scratch}{os.pathsep}{tmp_path}"
    assert cmd[:4] == [sys.executable, "-m", "pytest", "tests"]
    for option in (
        ["--hypothesis-profile", "default", "--ppaux-profile", "ci"],
        ["-m", "contract"],
        ["-k", "p4"],
        ["--ppaux-impl", "own_pop"],
        ["--ppaux-timeout", "3.0"],
    ):
        assert any(cmd[i : i + len(option)] == option for i in range(len(cmd))), option
    assert sorted(p.name for p in (scratch / "tests").glob("test_*.py")) == sorted(p.name for p in suite_files())
    assert (scratch / "own_pop.py").read_text() == OWN_POP
    # The mutants are killed by the same tests, under the same options.
    table = tomllib.loads(_Verdicts.last.table)["tool"]["mutmut"]
    args = table["pytest_add_cli_args"]
    assert table["only_mutate"] == ["own_pop.py"] and args[args.index("--ppaux-impl") + 1] == "own_pop"
    assert args[args.index("--ppaux-timeout") + 1] == "3.0"
    assert (table["source_paths"], table["pytest_add_cli_args_test_selection"]) == (["own_pop.py"], ["tests/"])
    assert "--deselect" not in table["pytest_add_cli_args"]
    err = capsys.readouterr().err
    assert err.startswith("ppaux mutate: 50.0% (1/2 killed) in ")
    assert err.endswith("ppaux mutate: stale equivalence entry (killed, or no such mutant): own_pop.x_f__mutmut_1\n")


def test_the_clean_run_keeps_the_users_environment_with_or_without_a_pythonpath(tmp_path, monkeypatch, capsys):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    fake = _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.setattr(mutate, "MutmutProject", _Verdicts)
    monkeypatch.setenv("PPAUX_TEST_USER_SETTING", "kept")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert main(["mutate", "--impl", "own_pop.py", "--gate", "50", "--report", "out"]) == 0
    ((cmd, kw),) = fake.calls
    assert kw["env"]["PPAUX_TEST_USER_SETTING"] == "kept"
    assert kw["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path / "out" / "scratch")


def _users_files(directory: Path) -> list[str]:
    # Python's import of own_pop.py writes __pycache__ beside it wherever bytecode writing is on: not ppaux's.
    return sorted(p.name for p in directory.iterdir() if p.name != "__pycache__")


def test_without_report_the_run_goes_to_a_dot_directory_that_git_ignores(tmp_path, monkeypatch, capsys):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    fake = _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.setattr(mutate, "MutmutProject", _Verdicts)
    monkeypatch.chdir(tmp_path)
    assert main(["mutate", "--impl", "own_pop.py", "--gate", "50"]) == 0
    assert _users_files(tmp_path) == [".ppaux", "own_pop.py"]
    assert sorted(p.name for p in (tmp_path / ".ppaux").iterdir()) == [".gitignore", "mutate"]
    assert (tmp_path / ".ppaux" / ".gitignore").read_text() == "# Created by ppaux automatically.\n*\n"
    out = tmp_path / ".ppaux" / "mutate"
    assert sorted(p.name for p in out.iterdir()) == ["mutate.json", "mutate.md", "scratch"]
    ((_, kw),) = fake.calls
    assert kw["cwd"] == out / "scratch"
    assert capsys.readouterr().err.endswith(f"; gate 50.0% pass; report {out / 'mutate.md'}\n")


def test_a_mutate_report_directory_given_is_exactly_the_one_written(tmp_path, monkeypatch, capsys):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.setattr(mutate, "MutmutProject", _Verdicts)
    monkeypatch.chdir(tmp_path)
    assert main(["mutate", "--impl", "own_pop.py", "--gate", "50", "--report", "out"]) == 0
    assert _users_files(tmp_path) == ["out", "own_pop.py"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["mutate.json", "mutate.md", "scratch"]
    assert capsys.readouterr().err.endswith(f"; gate 50.0% pass; report {tmp_path / 'out' / 'mutate.md'}\n")


def test_a_dot_directory_that_cannot_be_made_is_a_usage_error_before_the_run(tmp_path, monkeypatch, capsys):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    fake = _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.chdir(tmp_path)
    # Under a file, where no one (root included) can make a directory.
    monkeypatch.setattr(state, "STATE", tmp_path / "own_pop.py" / ".ppaux")
    assert run_cli(capsys, "mutate", "--impl", "own_pop.py") == (
        2,
        "",
        f"ppaux: error: cannot create {tmp_path / 'own_pop.py' / '.ppaux'}: Not a directory\n",
    )
    assert fake.calls == []
    assert _users_files(tmp_path) == ["own_pop.py"]


@pytest.mark.parametrize("gate, code", [("0", 0), ("100", 1)])
def test_the_gate_may_be_anything_from_0_to_100(tmp_path, monkeypatch, gate, code):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.setattr(mutate, "MutmutProject", _Verdicts)
    assert _mutate(tmp_path, monkeypatch, "--impl", "own_pop.py", "--gate", gate) == code


def test_robustness_tests_that_fail_on_the_unmutated_module_are_left_out_of_the_kill_set(tmp_path, monkeypatch, capsys):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    _stand_in_clean_run(
        monkeypatch,
        [
            _row("tests/test_pop.py::test_p4", "passed"),
            _row("tests/test_pop.py::test_p1", "skipped"),
            _row("tests/test_robustness.py::test_dict", "failed", "robustness"),
        ],
    )
    monkeypatch.setattr(mutate, "MutmutProject", _Verdicts)
    assert _mutate(tmp_path, monkeypatch, "--impl", "own_pop.py") == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "ppaux mutate: 1 robustness test(s) fail on the unmutated module and are left out of the kill set\n"
    )
    args = tomllib.loads(_Verdicts.last.table)["tool"]["mutmut"]["pytest_add_cli_args"]
    assert args[-2:] == ["--deselect", "tests/test_robustness.py::test_dict"]
    report = json.loads((tmp_path / "out" / "mutate.json").read_text())
    assert (report["kill_set"], report["left_out"]) == (1, ["tests/test_robustness.py::test_dict"])


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            [
                _row("t.py::test_a", "failed"),
                _row("t.py::test_b", "passed"),
                _row("t.py::test_c", "failed", "contract", "gloo"),
            ],
            "the unmutated module fails 2 contract test(s), so they cannot kill mutants: t.py::test_a, t.py::test_c",
        ),
        (
            [_row("t.py::test_r", "failed", "robustness"), _row("t.py::test_s", "skipped")],
            "no conformance test passes on the unmutated module: nothing can kill a mutant",
        ),
    ],
)
def test_a_clean_run_that_cannot_kill_is_bad_input(tmp_path, monkeypatch, capsys, rows, message):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    _stand_in_clean_run(monkeypatch, rows)
    assert _mutate(tmp_path, monkeypatch, "--impl", "own_pop.py") == 2
    assert capsys.readouterr().err == f"ppaux: error: {message}\n"


@pytest.mark.parametrize(
    "code, ended",
    [
        (0, "ended the process with exit status 0"),
        (1, "ended the process with exit status 1"),
        (4, "ended the process with exit status 4"),
        (-11, "killed the process with SIGSEGV (signal 11)"),
    ],
)
def test_a_clean_run_without_results_shows_what_pytest_printed(tmp_path, monkeypatch, capsys, code, ended):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    traceback = (
        "Traceback (most recent call last):\n" + '  File "conftest.py", line 1\n' * 50 + "ImportError: own_pop\n"
    )
    _stand_in_clean_run(monkeypatch, [], code=code, printed="ERROR: usage: pytest [options]\n", printed_err=traceback)
    assert _mutate(tmp_path, monkeypatch, "--impl", "own_pop.py") == 2
    assert capsys.readouterr().err == (
        "ERROR: usage: pytest [options]\n"
        + traceback
        + f"ppaux: error: the conformance suite did not run on the unmutated module (pytest: {ended})\n"
    )


def _mutate(tmp_path, monkeypatch, *argv):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return main(["mutate", *argv, "--report", "out"])


@pytest.mark.subprocess
def test_an_implementation_that_breaks_the_contract_cannot_be_mutation_tested(tmp_path, monkeypatch, capsys):
    """Its red contract tests would "kill" every mutant: bad input, naming them. A crash is one of them:
    the copied suite runs contained, as ppaux check runs it, not as a pytest process that dies."""
    impl = str(IMPLS / "segfaults_without_observer.py")
    assert _mutate(tmp_path, monkeypatch, "--impl", impl, "--tests", "test_observer_checks_precede_value_checks") == 2
    assert capsys.readouterr().err == (
        "ppaux: error: the unmutated module fails 2 contract test(s), so they cannot kill mutants: "
        "tests/test_pop.py::test_observer_checks_precede_value_checks, "
        "tests/test_pop.py::test_observer_checks_precede_value_checks_on_a_non_tensor[P1]\n"
    )


@pytest.mark.subprocess
def test_a_suite_that_cannot_run_shows_pytests_own_words(tmp_path, monkeypatch, capsys):
    assert _mutate(tmp_path, monkeypatch, "--impl", "ppaux.core.transport", "--tests", "no_test_has_this_name") == 2
    err = capsys.readouterr().err
    assert err.endswith(
        "ppaux: error: the conformance suite did not run on the unmutated module (pytest: ended the process with exit "
        "status 5)\n"
    )
    assert "deselected" in err


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "script, why", [("raise SystemExit(3)", "fails"), ("import time; time.sleep(60)", "timed out")]
)
def test_a_red_baseline_is_bad_input(tmp_path, monkeypatch, capsys, script, why):
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "baseline.py").write_text("import own_pop\n" + script + "\n")
    if why == "timed out":
        monkeypatch.setattr(mutate, "run_with_mutant", _shorter(mutate.run_with_mutant))
    _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    code = _mutate(
        tmp_path,
        monkeypatch,
        "--impl",
        "own_pop.py",
        "--tests",
        "returning_none_is_p4",
        "--baseline",
        f"{sys.executable} project/baseline.py",
    )
    assert code == 2
    assert (
        capsys.readouterr().err
        == f"ppaux: error: the baseline command {why} on the unmutated module: {sys.executable} project/baseline.py\n"
    )


@pytest.mark.parametrize("status, why", [("killed", "fails"), ("timeout", "timed out")])
def test_a_baseline_red_on_the_unmutated_copy_says_how(tmp_path, monkeypatch, capsys, status, why):
    """In one process, the runner stood in for: the real commands are the test above."""
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    scratch = tmp_path / "out" / "scratch"
    verdicts = {str(scratch / "sentinel"): "killed", str(scratch): status}
    timeouts = []

    def runner(command, *, pythonpath, timeout, clock=None):
        timeouts.append(timeout)
        return verdicts[str(pythonpath[0])], 0.1

    monkeypatch.setattr(mutate, "run_with_mutant", runner)
    assert _mutate(tmp_path, monkeypatch, "--impl", "own_pop.py", "--baseline", "true") == 2
    assert capsys.readouterr().err == f"ppaux: error: the baseline command {why} on the unmutated module: true\n"
    # Both runs on the unmutated copies are bounded: a baseline that hangs there cannot hang the run.
    assert timeouts == [mutate.CLEAN_BASELINE_TIMEOUT_S, mutate.CLEAN_BASELINE_TIMEOUT_S]


def _shorter(run_with_mutant):
    """The same runner with a timeout of 2 s: a hanging baseline is found out without waiting ten minutes."""
    return lambda command, **kw: run_with_mutant(command, **{**kw, "timeout": 2})


def test_when_mutmut_fails_the_run_says_where_its_log_is(tmp_path, monkeypatch, capsys):
    runs = []

    class Failing(project.MutmutProject):
        def run(self, **kw):
            runs.append((kw["max_children"], kw["log"]))
            return 1

        def results(self):
            # Verdicts of the mutants it ran before it failed: a failed run all the same.
            return {"ppaux.core.transport.x_f__mutmut_1": "killed"}

    _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.setattr(mutate, "MutmutProject", Failing)
    code = _mutate(
        tmp_path,
        monkeypatch,
        "--impl",
        "ppaux.core.transport",
        "--tests",
        "returning_none_is_p4",
        "--max-children",
        "3",
    )
    assert code == 2
    log = tmp_path / "out" / "mutmut-run.log"
    assert capsys.readouterr().err == f"ppaux: error: mutmut did not run (exit 1); see {log}\n"
    assert runs == [(3, log)]


def test_mutmut_without_a_project_fails_and_logs_why(tmp_path):
    """An empty directory is no mutmut project: its own message lands in the log, and no progress is claimed."""
    stream = io.StringIO()
    code = project.MutmutProject(tmp_path).run(max_children=1, log=tmp_path / "log", progress=Progress(stream=stream))
    assert code != 0 and "Could not figure out where the code to mutate is" in (tmp_path / "log").read_text()
    assert stream.getvalue() == "" and project.MutmutProject(tmp_path).diffs([], str) == {}


def test_a_command_runs_with_a_mutant_and_reports_how_it_ended(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # The probe fails under any mutant: without one, MUTANT_UNDER_TEST is empty (the unmutated code).
    probe = [sys.executable, "-c", "import os, sys; sys.exit(os.environ['MUTANT_UNDER_TEST'] != '')"]
    run = project.run_with_mutant
    assert run(probe, pythonpath=[], timeout=30)[0] == "survived"
    assert run(probe, pythonpath=[], mutant="m.x_f__mutmut_1", timeout=30)[0] == "killed"
    # A command that would outlast its timeout: stopped at it, and the time it ran read on the clock.
    # The fake clock moves by the timeout while the command runs: the seconds reported are its.
    clock = FakeClock(start=100.0)
    status, seconds = run(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        pythonpath=[],
        timeout=0.5,
        clock=_ReadThen(clock, lambda: clock.advance(0.5)),
    )
    assert (status, seconds) == ("timeout", 0.5)


class _ReadThen:
    """A clock whose first reading is followed by ``after_first_read`` (the command's time passing)."""

    def __init__(self, clock, after_first_read):
        self.clock, self.after_first_read, self.reads = clock, after_first_read, 0

    def monotonic(self):
        reading = self.clock.monotonic()
        self.reads += 1
        if self.reads == 1:
            self.after_first_read()
        return reading

    def sleep(self, seconds):
        self.clock.sleep(seconds)


def test_a_command_run_with_a_mutant_takes_its_time_from_the_clock(tmp_path, monkeypatch):
    """The seconds a run took are the clock's, read as it starts and as it ends (a baseline's limit is made of them)."""
    monkeypatch.chdir(tmp_path)
    clock = FakeClock(start=40.0)
    status, seconds = project.run_with_mutant(
        [sys.executable, "-c", "pass"], pythonpath=[], timeout=600, clock=_ReadThen(clock, lambda: clock.advance(2.5))
    )
    assert (status, seconds) == ("survived", 2.5)
    # The clean run's seconds on that clock set the limit of the runs with a mutant.
    assert mutate.baseline_limit(seconds) == 25.0 and mutate.baseline_limit(0.1) == 10.0


def test_a_command_run_with_a_mutant_keeps_the_users_environment_and_finds_the_copy_first(tmp_path, monkeypatch, capfd):
    for folder, module in (("copy", "mutated_copy"), ("users", "users_module")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{module}.py").write_text("")
    (tmp_path / "run_here").mkdir()
    monkeypatch.setenv("PPAUX_TEST_USER_SETTING", "kept")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "users"))
    probe = [
        sys.executable,
        "-c",
        "import os, sys, mutated_copy, users_module; print('noise'); print('noise', file=sys.stderr); "
        "sys.exit(os.environ.get('PPAUX_TEST_USER_SETTING') != 'kept' "
        f"or os.getcwd() != {str(tmp_path / 'run_here')!r})",
    ]
    monkeypatch.chdir(tmp_path / "run_here")
    status, seconds = project.run_with_mutant(probe, pythonpath=[tmp_path / "copy"], mutant="", timeout=600)
    assert status == "survived" and seconds > 0
    # The command's output stays out of ppaux's console.
    assert capfd.readouterr() == ("", "")
    # Without a PYTHONPATH of the user's, only the copy is added: the directory the command runs in is not.
    monkeypatch.delenv("PYTHONPATH")
    (tmp_path / "run_here" / "only_in_cwd.py").write_text("")
    script = tmp_path / "probe.py"
    script.write_text("import sys\ntry:\n    import only_in_cwd\nexcept ImportError:\n    sys.exit(0)\nsys.exit(1)\n")
    assert (
        project.run_with_mutant([sys.executable, str(script)], pythonpath=[tmp_path / "copy"], mutant="", timeout=30)[0]
        == "survived"
    )


def test_a_module_without_source_cannot_be_mutated(tmp_path, monkeypatch):
    import py_compile

    source = tmp_path / "compiled_transport.py"
    source.write_text(
        "from ppaux.transport import *  # noqa\nfrom ppaux.transport import _OUTPUT_PREFIX  # noqa\n"
        "def add_auxiliary_output_to_pp_tensors(t, o): pass\ndef pop_auxiliary_output_from_pp_tensors(t, o): pass\n"
    )
    py_compile.compile(str(source), cfile=str(tmp_path / "compiled_transport.pyc"))
    source.unlink()
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImplementationError) as info:
        resolve("compiled_transport")
    assert str(info.value) == "implementation 'compiled_transport' has no Python source to mutate"


def test_a_namespace_package_needs_no_original_init(tmp_path):
    assert scratch_package_init([str(tmp_path)]).splitlines()[-1] == f"__path__.extend({[str(tmp_path)]!r})"


def test_without_a_baseline_the_verdicts_make_the_report_and_the_exit_status(tmp_path, monkeypatch, capsys):
    """mutmut's verdicts (stood in for here) decide: one survivor of two is 50%, below a gate of 60."""

    class Verdicts(_Verdicts):
        def results(self):
            return {
                "ppaux.core.transport.x_f__mutmut_1": "killed",
                "ppaux.core.transport.x_f__mutmut_2": "survived",
                "ppaux.core.transport.x_f__mutmut_3": "survived",
            }

    # The third mutant is judged equivalent: it counts in neither side of the score.
    (tmp_path / "eq.json").write_text('{"ppaux.core.transport.x_f__mutmut_3": "no caller sees it"}')
    _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.setattr(mutate, "MutmutProject", Verdicts)
    assert (
        _mutate(
            tmp_path,
            monkeypatch,
            "--impl",
            "ppaux.core.transport",
            "--tests",
            "returning_none_is_p4",
            "--gate",
            "60",
            "--equivalents",
            "eq.json",
        )
        == 1
    )
    # A module inside packages: mutmut looks in the top package, for that module alone.
    table = tomllib.loads(_Verdicts.last.table)["tool"]["mutmut"]
    assert (table["source_paths"], table["only_mutate"]) == (["ppaux"], ["ppaux/core/transport.py"])
    err = capsys.readouterr().err
    wall_s = json.loads((tmp_path / "out" / "mutate.json").read_text())["wall_s"]
    assert err.endswith(
        f"ppaux mutate: 50.0% (1/2 killed) in {wall_s} s; gate 60.0% FAIL; report {tmp_path / 'out' / 'mutate.md'}\n"
    )
    text = (tmp_path / "out" / "mutate.md").read_text()
    assert "### `ppaux.core.transport.x_f__mutmut_2` (survives ppaux's suite)\n\nChanges `a -> b`" in text
    assert "--- ppaux/core/transport.py" in text and "Side by side" not in text


def test_an_equivalents_file_keyed_by_identity_judges_its_mutant_and_fails_on_one_that_matches_none(
    tmp_path, monkeypatch, capsys
):
    """The format of ppaux's own files: a judgement on its mutant's change holds it whatever mutmut
    numbers it; one that matches no mutant fails the gate, named; one whose function changed is
    listed for review."""

    class Verdicts(_Verdicts):
        def results(self):
            return {"own_pop.x_f__mutmut_1": "killed", "own_pop.x_f__mutmut_2": "survived"}

        def sources(self, names, source_of):
            assert {source_of(name) for name in names} == {"own_pop.py"}
            return fake_sources(names)

    (tmp_path / "own_pop.py").write_text(OWN_POP)
    entries = judged_file({"own_pop.x_f__mutmut_2": "no caller sees it", "own_pop.x_gone__mutmut_1": "gone"})
    (tmp_path / "eq.json").write_text(json.dumps(entries))
    _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.setattr(mutate, "MutmutProject", Verdicts)
    args = ("--impl", "own_pop.py", "--gate", "100", "--equivalents", "eq.json")
    assert _mutate(tmp_path, monkeypatch, *args) == 1
    report = read_valid(tmp_path / "out" / "mutate.json", "mutate")
    gone = f"{NO_MUTANT}: eq.json: own_pop:gone: a -> b1"
    assert (report["score"], report["equivalent"], report["unmatched_equivalents"]) == (100.0, 1, [gone])
    assert capsys.readouterr().err.endswith(f"ppaux mutate: {gone}\n")
    assert (
        f"## Equivalence judgements that match no mutant, or several (the run fails)\n\n- {gone}\n"
        in (tmp_path / "out" / "mutate.md").read_text()
    )
    # Without the entry for no mutant it passes; judged on the function as it was, it is listed for review.
    entries["equivalents"] = [{**entries["equivalents"][0], "function_hash": "0" * 64}]
    (tmp_path / "eq.json").write_text(json.dumps(entries))
    assert _mutate(tmp_path, monkeypatch, *args) == 0
    review = read_valid(tmp_path / "out" / "mutate.json", "mutate")["review_equivalents"]
    assert [e["mutant"] for e in review] == ["own_pop.x_f__mutmut_2"]
    assert f"ppaux mutate: {REVIEW}: eq.json: own_pop:f: a -> b2 (now own_pop.x_f__mutmut_2, function_hash " in (
        capsys.readouterr().err
    )


class _UnevenVerdicts(project.MutmutProject):
    """mutmut stood in for with :data:`UNEVEN_SUITE`; it shows its progress on the run's console as mutmut's does."""

    def run(self, *, progress, **kw):
        show_counts(progress, len(UNEVEN_SUITE), len(UNEVEN_SUITE), 6, 2, final=True)
        return 0

    def results(self):
        return {name.replace("m.", "own_pop.", 1): status for name, status in UNEVEN_SUITE.items()}

    def diffs(self, names, source_of):
        return {
            name: f"--- {source_of(name)}\n+++ {source_of(name)}\n-    return {name[-1]}\n+    return 0\n"
            for name in names
        }


def test_a_run_beside_a_baseline_reports_both_and_every_mutant_either_misses(tmp_path, monkeypatch, capsys):
    """The whole run in one process: the baseline must fail on a copy that cannot be imported and
    pass on the unmutated copy, then runs once per mutant against the mutated copy, as many at
    once as there are CPUs; the console, mutate.json and mutate.md say what each side killed."""
    (tmp_path / "own_pop.py").write_text(OWN_POP)
    scratch = tmp_path / "out" / "scratch"
    scratch.mkdir(parents=True)
    (scratch / "left_by_an_earlier_run.txt").write_text("")
    _stand_in_clean_run(monkeypatch, [_row("tests/test_pop.py::test_p4", "passed")])
    monkeypatch.setattr(mutate, "MutmutProject", _UnevenVerdicts)
    runs = []

    def baseline(command, *, pythonpath, timeout, mutant="", clock=None):
        runs.append((mutant, [Path(p) for p in pythonpath]))
        if pythonpath == [scratch / "sentinel"]:
            return "killed", 0.1
        assert command == [sys.executable, "baseline.py"] and pythonpath in ([scratch], [scratch / "mutants"])
        return UNEVEN_BASELINE.get(mutant.replace("own_pop.", "m.", 1), "survived"), 0.5

    monkeypatch.setattr(mutate, "run_with_mutant", baseline)
    workers = []
    monkeypatch.setattr(
        mutate, "ThreadPoolExecutor", lambda max_workers: workers.append(max_workers) or ThreadPoolExecutor(1)
    )
    monkeypatch.setattr(mutate.os, "cpu_count", lambda: 3)
    monkeypatch.setattr(mutate, "time", Clock(step=1.25))
    monkeypatch.setattr(mutate, "version", lambda name: "3.8.1")
    code = _mutate(
        tmp_path, monkeypatch, "--impl", "own_pop.py", "--baseline", f"{sys.executable} baseline.py", "--gate", "62.5"
    )
    assert code == 0 and workers == [3]
    # The copy that cannot be imported, the unmutated copy, then every mutant.
    assert runs[:2] == [("", [scratch / "sentinel"]), ("", [scratch])]
    assert sorted(m for m, _ in runs[2:]) == sorted(_UnevenVerdicts(scratch).results())
    assert all(path == [scratch / "mutants"] for _, path in runs[2:])
    assert not (scratch / "left_by_an_earlier_run.txt").exists()
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("mutants 8/8  killed 6  survived 2  elapsed ")
    assert err[-1] == (
        "ppaux mutate: 62.5% (5/8 killed) in 1.2 s; baseline 50.0%; both 3, only ppaux 2, only the baseline 1, "
        f"neither 2; gate 62.5% pass; report {tmp_path / 'out' / 'mutate.md'}"
    )
    text = (tmp_path / "out" / "mutate.json").read_text(encoding="utf-8")
    report = read_valid(tmp_path / "out" / "mutate.json", "mutate")
    # Readable as it is written: indented, one entry a line.
    assert text == json.dumps(report, indent=2) + "\n"
    assert (report["wall_s"], report["baseline"]["side_by_side"]) == (
        1.2,
        {"both": 3, "only ppaux": 2, "only the baseline": 1, "neither": 2},
    )
    markdown = (tmp_path / "out" / "mutate.md").read_text(encoding="utf-8")
    assert markdown == render_markdown(report)
    assert markdown.startswith(
        "# Mutation testing: `own_pop.py`\n\n"
        "- ppaux's conformance suite: **62.5%** (5/8 mutants killed); gate 62.5%: **pass**\n"
        "- module `own_pop`, mutmut 3.8.1, profile `mutation`, tests `contract or robustness`: 1 tests; "
        "wall time 1.2 s\n"
    )
    # The last survivor's diff ends the page, with one newline.
    assert markdown.endswith("-    return 8\n+    return 0\n```\n")
    assert "\nppaux's suite 62.5%, the baseline 50.0% of 8 mutants.\n" in markdown
    # Each mutant one side missed, with its diff: the suite's survivors and the baseline's.
    shown = {m["mutant"]: m["line"] for m in report["mutants"] if "diff" in m}
    assert shown == {f"own_pop.x_f__mutmut_{i}": f"return {i} -> return 0" for i in (2, 3, 4, 6, 8)}


def test_a_suspicious_mutant_whose_test_process_died_by_a_signal_is_a_crash(tmp_path):
    # The layout mutmut 3.8 writes: one meta file per source file, exit codes by mutant.
    (tmp_path / "ppaux").mkdir()
    (tmp_path / "ppaux" / "gloo.py.meta").write_text(
        json.dumps(
            {
                "exit_code_by_key": {
                    "ppaux.gloo.x_a__mutmut_1": -6,
                    "ppaux.gloo.x_a__mutmut_2": 1,
                    "ppaux.gloo.x_a__mutmut_3": None,
                    "ppaux.gloo.x_a__mutmut_4": 4,
                    "ppaux.gloo.x_a__mutmut_5": -11,
                    "ppaux.gloo.x_a__mutmut_6": -99,
                    "ppaux.gloo.x_a__mutmut_8": 0,
                }
            }
        )
    )
    (tmp_path / "ppaux" / "broken.py.meta").write_text("{not json")
    (tmp_path / "ppaux" / "unrun.py.meta").write_text("{}")
    (tmp_path / "ppaux" / "gone.py.meta").symlink_to(tmp_path / "removed")
    crashed = crashes(tmp_path)
    assert crashed == {
        "ppaux.gloo.x_a__mutmut_1": "crashed (SIGABRT)",
        "ppaux.gloo.x_a__mutmut_5": "crashed (SIGSEGV)",
        "ppaux.gloo.x_a__mutmut_6": "crashed (signal 99)",
    }
    results = {
        "ppaux.gloo.x_a__mutmut_1": "suspicious",
        "ppaux.gloo.x_a__mutmut_2": "killed",
        "ppaux.gloo.x_a__mutmut_4": "suspicious",
        "ppaux.gloo.x_a__mutmut_5": "segfault",
    }
    named = name_crashes(results, crashed)
    # Only a suspicious verdict is renamed; an exit code 4 (pytest's usage error) stays suspicious.
    assert named == {**results, "ppaux.gloo.x_a__mutmut_1": "crashed (SIGABRT)"}
    # Most common first, then by name: the report's "verdicts" line reads in this order.
    assert list(verdicts(named).items()) == [
        ("crashed (SIGABRT)", 1),
        ("killed", 1),
        ("segfault", 1),
        ("suspicious", 1),
    ]
    assert list(
        verdicts({**named, "ppaux.gloo.x_a__mutmut_7": "segfault", "ppaux.gloo.x_a__mutmut_9": "segfault"}).items()
    ) == [("segfault", 3), ("crashed (SIGABRT)", 1), ("killed", 1), ("suspicious", 1)]
    assert [n for n, status in named.items() if is_killed(status)] == [
        "ppaux.gloo.x_a__mutmut_1",
        "ppaux.gloo.x_a__mutmut_2",
        "ppaux.gloo.x_a__mutmut_5",
    ]


def test_a_mutants_module_is_its_name_without_the_function():
    assert project.module_of("ppaux.core.transport.xǁPPAuxTransportǁadd__mutmut_1") == "ppaux.core.transport"
    assert project.module_of("own_pop.x_pop__mutmut_12") == "own_pop"


def test_the_baseline_runs_every_mutant_and_says_how_each_ended(monkeypatch, tmp_path, capsys):
    seen = []
    verdict = {"m.x_f__mutmut_1": "survived", "m.x_f__mutmut_2": "killed"}

    def runner(command, *, pythonpath, mutant, timeout):
        seen.append((command, mutant, timeout, [str(p) for p in pythonpath]))
        return verdict.get(mutant, "timeout"), 0.1

    monkeypatch.setattr(mutate, "run_with_mutant", runner)
    monkeypatch.setattr(progress_module, "time", Clock(step=10.0))  # every update is due
    names = ["m.x_f__mutmut_1", "m.x_f__mutmut_2", "m.x_f__mutmut_3"]
    assert mutate.mutants_against_the_baseline(["cmd"], tmp_path, names, 2.5, 1) == {
        "m.x_f__mutmut_1": "survived",
        "m.x_f__mutmut_2": "killed",
        "m.x_f__mutmut_3": "timeout",
    }
    # The user's command; ten times the clean run, at least 10 s; the mutated copy first on the path.
    assert seen == [(["cmd"], n, 25.0, [str(tmp_path / "mutants")]) for n in names]
    # One worker: the mutants in turn, counted as they end (a timeout kills).
    assert [line.split("  elapsed")[0] for line in capsys.readouterr().err.splitlines()] == [
        "baseline mutants 1/3  killed 0  survived 1",
        "baseline mutants 2/3  killed 1  survived 1",
        "baseline mutants 3/3  killed 2  survived 1",
    ]
    seen.clear()
    mutate.mutants_against_the_baseline(["cmd"], tmp_path, names[:1], 0.1, 1)
    assert seen[0][2] == 10.0
    capsys.readouterr()
    # On a clock that does not move, the first count shows, then only the last, once.
    monkeypatch.setattr(progress_module, "time", Clock(step=0.0))
    mutate.mutants_against_the_baseline(["cmd"], tmp_path, names, 2.5, 1)
    assert [line.split("  elapsed")[0] for line in capsys.readouterr().err.splitlines()] == [
        "baseline mutants 1/3  killed 0  survived 1",
        "baseline mutants 3/3  killed 2  survived 1",
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_the_baseline_runs_at_most_max_children_commands_at_once(monkeypatch, tmp_path, workers):
    lock, running, most = threading.Lock(), [0], [0]

    def runner(command, *, pythonpath, mutant, timeout):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return "killed", 0.05

    monkeypatch.setattr(mutate, "run_with_mutant", runner)
    mutate.mutants_against_the_baseline(["cmd"], tmp_path, [f"m.x_f__mutmut_{i}" for i in range(8)], 1.0, workers)
    assert 1 <= most[0] <= workers


@pytest.mark.slow
def test_progress_counts_only_the_mutants_a_run_picks(tmp_path):
    """mutmut's own total counts every mutant; a run narrowed with ``only`` shows the picked ones as its total."""
    (tmp_path / "arith.py").write_text("def double(x):\n    return x * 2\n\n\ndef halve(x):\n    return x / 2\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_arith.py").write_text(
        "from arith import double, halve\n\n\ndef test_double():\n    assert double(3) == 6\n\n\n"
        "def test_halve():\n    assert halve(6) == 3\n"
    )
    (tmp_path / "pyproject.toml").write_text(
        project.mutmut_table({"paths_to_mutate": ["arith.py"], "tests_dir": ["tests"], "timeout_multiplier": 2.5})
    )
    stream = io.StringIO()
    code = project.MutmutProject(tmp_path).run(
        max_children=1, only=["arith.x_double*"], log=tmp_path / "log", progress=Progress(stream=stream, every=0)
    )
    assert code == 0, (tmp_path / "log").read_text()
    picked = project.select(project.MutmutProject(tmp_path).results(), ["arith.x_double*"])
    everything = project.MutmutProject(tmp_path).results()
    assert 0 < len(picked) < len(everything)
    assert (
        stream.getvalue()
        .splitlines()[-1]
        .startswith(f"mutants {len(picked)}/{len(picked)}  killed {len(picked)}  survived 0  ")
    )


def test_a_narrowed_runs_total_counts_the_module_mutmut_was_rewriting_when_the_run_began(tmp_path):
    """mutmut rewrites a module's ``.meta`` in place as its mutants finish: read half written when the
    first progress line comes, that module's picked mutants still count in the total."""
    (tmp_path / "mutants").mkdir()
    meta = tmp_path / "mutants" / "arith.py.meta"
    whole = json.dumps(
        {
            "exit_code_by_key": {
                "arith.x_double__mutmut_1": 1,
                "arith.x_double__mutmut_2": None,
                "arith.x_halve__mutmut_1": None,
            }
        }
    )
    progress_line = "⠋ {}/3  🎉 {} 🫥 0  ⏰ 0  🤔 0  🙁 0  🔇 0\n"
    env = _standin_mutmut(
        tmp_path,
        f"""
        import time
        line = {progress_line!r}
        open({str(meta)!r}, "w").write({whole[:40]!r})
        # Output on both sides of the line, as mutmut's spinner writes, so that it is read at once.
        spin = "\\u280b Generating mutants\\r" * 20
        print(spin + line.format(1, 1) + spin, end="", flush=True)
        time.sleep(0.1)
        open({str(meta)!r}, "w").write({whole!r})
        print(line.format(2, 2), end="", flush=True)
        """,
    )
    stream = io.StringIO()
    code = project.MutmutProject(tmp_path).run(
        max_children=1,
        only=["arith.x_double*"],
        log=tmp_path / "log",
        progress=Progress(stream=stream, every=0),
        env=env,
    )
    assert code == 0, (tmp_path / "log").read_text()
    assert [line.split("  killed")[0] for line in stream.getvalue().splitlines()] == ["mutants 1/2", "mutants 2/2"]


def _standin_mutmut(root: Path, main: str) -> dict[str, str]:
    """An environment whose ``python -m mutmut`` runs ``main`` instead of mutmut."""
    standin = root / "standin" / "mutmut"
    standin.mkdir(parents=True)
    (standin / "__init__.py").write_text("")
    (standin / "__main__.py").write_text(textwrap.dedent(main), encoding="utf-8")
    return {**os.environ, "PYTHONPATH": str(standin.parent)}


def test_a_run_ends_with_mutmut_though_a_process_its_mutants_leaked_keeps_its_output_open(tmp_path):
    """A mutant that breaks the code reaping child processes leaves one behind, holding mutmut's output
    (seen in the full package run: three of them, every signal blocked). The run ends when mutmut does,
    with its progress, and takes the leftover with it."""
    leaked = tmp_path / "leaked.pid"
    env = _standin_mutmut(
        tmp_path,
        f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(leaked)!r}, "w").write(str(child.pid))
        print("\u280b 1/1  \U0001f389 1 \U0001fae5 0  \u23f0 0  \U0001f914 0  \U0001f641 0  \U0001f507 0", flush=True)
        """,
    )
    stream = io.StringIO()
    outcome: list[int] = []
    run = threading.Thread(
        target=lambda: outcome.append(
            project.MutmutProject(tmp_path).run(
                max_children=1, log=tmp_path / "log", progress=Progress(stream=stream, every=0), env=env
            )
        ),
        daemon=True,
    )
    run.start()
    try:
        # Bounds the test, not the speed: without the fix the run waits the leftover's 600 s.
        run.join(timeout=60)
        assert not run.is_alive(), "the run waited on the leaked process instead of ending with mutmut"
        assert outcome == [0]
        assert stream.getvalue().splitlines()[-1].startswith("mutants 1/1  killed 1  survived 0  ")
        # SIGKILL is delivered after kill() returns: give the leftover a moment to be gone.
        pid, deadline = int(leaked.read_text()), time.monotonic() + 10
        while not ended(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ended(pid), "the process the mutant leaked outlived the run"
    finally:
        if leaked.exists() and not ended(int(leaked.read_text())):
            os.kill(int(leaked.read_text()), 9)


class _CtrlC(io.StringIO):
    def write(self, text: str) -> int:
        raise KeyboardInterrupt


def test_a_ctrl_c_during_the_run_reaches_mutmut(tmp_path):
    """mutmut runs in a session of its own (so that its leftovers can be stopped): a Ctrl-C at the
    terminal, which only ppaux sees, is passed on to it, and the run stops."""
    heard = tmp_path / "heard"
    env = _standin_mutmut(
        tmp_path,
        f"""
        import signal, sys, time
        signal.signal(signal.SIGINT, lambda *_: (open({str(heard)!r}, "w").write("SIGINT"), sys.exit(1)))
        print("\u280b 1/2  \U0001f389 1 \U0001fae5 0  \u23f0 0  \U0001f914 0  \U0001f641 0  \U0001f507 0", flush=True)
        time.sleep(30)  # ends the test within bounds should the Ctrl-C not reach it
        """,
    )
    with pytest.raises(KeyboardInterrupt):
        project.MutmutProject(tmp_path).run(
            max_children=1, log=tmp_path / "log", progress=Progress(stream=_CtrlC(), every=0), env=env
        )
    assert heard.read_text() == "SIGINT"


# A progress line as mutmut 3.8.1 (CI's pin) wrote it, captured from a real run of two mutants.
MUTMUT_3_8_1_PROGRESS = "⠸ 2/2  🎉 2 🫥 0  ⏰ 0  🤔 0  🙁 0  🔇 0  🧙 0"


@pytest.mark.parametrize(
    "line, read",
    [
        (MUTMUT_3_8_1_PROGRESS, project.MutmutProgress(done=2, total=2, killed=2, survived=0)),
        # Nothing past the survived count is read: a line with fewer counts after it reads the same.
        (
            "⠹ 44/53  🎉 40 🫥 2  ⏰ 1  🤔 3  🙁 5  🔇 0",
            project.MutmutProgress(done=44, total=53, killed=41, survived=5),
        ),
    ],
)
def test_mutmuts_progress_line_of_the_supported_releases_reads_as_done_total_killed_survived(line, read):
    """Killed counts mutmut's killed and timed-out mutants; "suspicious" stays out until the verdicts are read."""
    assert project.parse_mutmut_progress(f"{line}\r{line}\n") == [read, read]
    # What is not mutmut's line is no progress.
    assert project.parse_mutmut_progress("2/2 killed 2 survived 0\n") == []


def test_the_installed_mutmut_is_of_the_releases_whose_progress_line_is_pinned():
    # mutmut 4 may reword its progress line: capture its line above before widening the range.
    major, minor = (int(part) for part in version("mutmut").split(".")[:2])
    assert (3, 3) <= (major, minor) < (4, 0)


def test_a_narrowed_runs_progress_counts_the_mutants_it_picked():
    line = next(project.status_lines(["⠹ 44/53  🎉 40 🫥 2  ⏰ 1  🤔 3  🙁 5  🔇 0\n"]))[1][0]
    assert project._counts(line) == (44, 53, 41, 5)
    assert project._counts(line, 7) == (44, 7, 41, 5)


def test_a_progress_line_cut_by_a_chunk_boundary_is_read_whole():
    status = "  🎉 {} 🫥 0  ⏰ 0  🤔 0  🙁 {}  🔇 0  🧙 0"
    line = lambda done, killed: f"{done}/6064" + status.format(killed, 40)  # noqa: E731
    chunks = [
        "⠦ 2",
        line(28, 188) + "\r⠦ 22",
        line(9, 189) + "\r⠧ " + line(230, 190) + "\r",
        "⠇ " + line(231, 191) + "\n⠏ " + line(232, 192) + "\n",
        "⠋ " + line(233, 193),
    ]
    seen = [(chunk, [(str(m.done), str(m.killed)) for m in lines]) for chunk, lines in project.status_lines(chunks)]
    # Every chunk is passed on as it came (for the log); each line is counted once, whole, as soon
    # as it ends ("\r" or "\n"); the last, unended one when the output ends.
    assert [chunk for chunk, _ in seen] == [*chunks, ""]
    assert [found for _, found in seen] == [
        [],
        [("228", "188")],
        [("229", "189"), ("230", "190")],
        [("231", "191"), ("232", "192")],
        [],
        [("233", "193")],
    ]
    # A line whose last count ends it, and a boundary just after a line's end: read whole still.
    bare = lambda done: f"{done}/12  🎉 1 🫥 0  ⏰ 0  🤔 0  🙁 2"  # noqa: E731
    chunks = [bare(3) + "\r1", bare(10)[1:] + "\r"]
    assert [[m.done for m in lines] for _, lines in project.status_lines(chunks)] == [[3], [10]]
    # No output: nothing to pass on.
    assert list(project.status_lines([])) == []


def test_a_run_narrowed_by_patterns_keeps_the_mutants_they_name():
    results = {
        "ppaux.core.transport.x_add__mutmut_1": "killed",
        "ppaux.core.errors.x_lookup__mutmut_1": "survived",
        "ppaux.cli.x_main__mutmut_1": "not checked",
    }
    assert project.select(results, []) == results
    assert project.select(results, ["ppaux.core.transport*", "ppaux.core.errors*"]) == {
        "ppaux.core.transport.x_add__mutmut_1": "killed",
        "ppaux.core.errors.x_lookup__mutmut_1": "survived",
    }
