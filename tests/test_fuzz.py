"""``ppaux fuzz`` (and ``python -m fuzz``): arguments, workers, shards, progress, merged reports, and
real runs that find, save and replay a planted failure."""

from __future__ import annotations

import builtins
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from fuzz.__main__ import main
from ppaux.cli.main import build_parser
from ppaux.cli.main import main as ppaux_main
from ppaux.fuzz import failure_rows
from ppaux.fuzz.database import DatabaseError, open_database
from ppaux.fuzz.depth import RAMP_ROUNDS, RoundDepth, saved_depths
from ppaux.fuzz.options import FuzzUsageError as UsageError
from ppaux.fuzz.options import (
    format_duration,
    in_shard,
    parse_budget,
    parse_shard,
    parse_workers,
    placements,
)
from ppaux.fuzz.report import merge_runs, write_run
from ppaux.fuzz.rounds import Round, Suite, from_checkout
from ppaux.fuzz.runner import FuzzRun, Replay, RunError, Worker, progress_line, verdict
from ppaux.fuzz.timeline import Timeline, add_up, thin
from ppaux.report import FuzzRunReport, ReportFormatError
from ppaux.testing import state
from ppaux.testing.depth import grown_scope
from ppaux.testing.progress import Progress
from tests.fuzz_runs import ROOT, env, examples_ran, fuzz_run_held
from tests.support import FakeClock, cli_help, held_until


def conforms(data: dict, kind: str) -> None:
    """A real run's fuzz.json or replay.json is what the shipped schema describes (tests/test_report_fuzz.py)."""
    from tests.test_report_fuzz import conforms as checked

    checked(data, kind)


BROKEN = str(ROOT / "tests" / "impls" / "broken_contiguous_copy.py")
# Every example with a tensor shows this planted bug (add.7), so the end-to-end runs stop at their
# first failure within seconds of the round's start on any machine (the demo's bug needs a rare draw).
COPIES = str(ROOT / "tests" / "impls" / "copies_every_tensor.py")
PLANTED = ["--impl", COPIES, "--tests", "bound_to_the_same_tensor", "--seed", "7", "--workers", "1"]
BROKEN_TEST = "ppaux/conformance/test_add.py::test_success_adds_one_key_per_item_bound_to_the_same_tensor"
OTHER_SHARD_TEST = "ppaux/conformance/test_pop.py::test_name_is_key_with_prefix_removed_once"


def test_fuzz_help_names_every_option_of_each_command_with_its_metavar_and_default(capsys):
    # The help is how a user learns the options, their forms and defaults: each word of it counts.
    common = (
        "--impl MODULE_OR_FILE implementation under test (default: ppaux's own)"
        " --devices {auto,cpu,cuda} auto: each worker on one GPU in turn (and two, where two are visible),"
        " then on the CPU; cpu: GPUs hidden; cuda: GPUs only"
        " --db DIR|redis://HOST:PORT example database (default .hypothesis/fuzz-db)"
        " --tests EXPR pytest -k expression over test names, files and marks"
        " --report DIR report directory (default .ppaux/fuzz in the current directory)"
        " --timeout SECONDS per-call time limit on the implementation: a call past it fails as a hang (default 10)"
    )
    assert cli_help(capsys, "fuzz", "run") == (
        "usage: ppaux fuzz run [-h] [--budget BUDGET] [--workers N|auto] [--shard K/N] [--impl MODULE_OR_FILE]"
        " [--devices {auto,cpu,cuda}] [--db DIR|redis://HOST:PORT] [--tests EXPR] [--report DIR]"
        " [--timeout SECONDS] [--seed SEED] [--max-failures N] [--progress-every S]"
        " options: -h, --help show this help message and exit"
        " --budget BUDGET how long to fuzz: 30m, 1h30m, 90s (default 30m)"
        " --workers N|auto worker processes side by side on the one database (default auto: one per core)"
        " --shard K/N fuzz only this machine's share of the tests, the K-th of N (a stable split by test id) "
        + common
        + " --seed SEED seed each round from SEED (a reproducible run); default: random"
        " --max-failures N stop once N distinct failures are found"
        " --progress-every S seconds between progress lines when not on a terminal"
    )
    assert cli_help(capsys, "fuzz", "replay") == (
        "usage: ppaux fuzz replay [-h] [--impl MODULE_OR_FILE] [--devices {auto,cpu,cuda}]"
        " [--db DIR|redis://HOST:PORT] [--tests EXPR] [--report DIR] [--timeout SECONDS] [--regressions DIR]"
        " options: -h, --help show this help message and exit "
        + common
        + " --regressions DIR write a standalone regression test (unittest + torch) per clause still failing"
        " there, as ppaux check --regressions does"
    )
    assert cli_help(capsys, "fuzz", "report") == (
        "usage: ppaux fuzz report [-h] --merge DIR [DIR ...] [--report DIR]"
        " options: -h, --help show this help message and exit"
        " --merge DIR [DIR ...] report directories of the shards' runs"
        " --report DIR where to write the merged fuzz.md and fuzz.json (default .ppaux/fuzz in the current directory)"
    )
    assert cli_help(capsys, "fuzz") == (
        "usage: ppaux fuzz [-h] {run,replay,report} ..."
        " the nightly fuzz job: fuzz the suite with N workers (and shards), replay or merge what was found"
        " positional arguments: {run,replay,report}"
        " run fuzz the Hypothesis tests under the nightly profile until the budget is spent"
        " replay re-run every failure saved in the example database, from any machine"
        " report merge the fuzz.json of several shards' runs into one report"
        " options: -h, --help show this help message and exit"
    )


def test_fuzz_commands_run_with_these_options_when_given_none():
    def defaults(*argv):
        return {k: v for k, v in vars(build_parser().parse_args(["fuzz", *argv])).items() if not k.startswith("_")}

    common = {"impl": None, "devices": "auto", "db": None, "tests": None, "report": None, "timeout": None}
    assert defaults("run") == {
        "command": "fuzz",
        "fuzz_command": "run",
        "budget": "30m",
        "workers": "auto",
        "shard": None,
        **common,
        "seed": None,
        "max_failures": None,
        "progress_every": 10.0,
    }
    assert defaults("replay") == {"command": "fuzz", "fuzz_command": "replay", **common, "regressions": None}
    assert defaults("report", "--merge", "a") == {
        "command": "fuzz",
        "fuzz_command": "report",
        "merge": ["a"],
        "report": None,
    }


@pytest.mark.parametrize("text, seconds", [("30m", 1800), ("1h30m", 5400), ("90s", 90), ("2h", 7200), ("45", 45)])
def test_budget_accepts_durations(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize(
    "text, why",
    [
        ("", "expected a duration such as 30m, 1h30m, 90s"),
        ("m", "expected a duration such as 30m, 1h30m, 90s"),
        ("0m", "the budget must be longer than 0 s"),
        ("0", "the budget must be longer than 0 s"),
        ("1.5h", "expected a duration such as 30m, 1h30m, 90s"),
        ("30 minutes", "expected a duration such as 30m, 1h30m, 90s"),
        ("-5", "expected a duration such as 30m, 1h30m, 90s"),
    ],
)
def test_budget_rejects_other_text(text, why):
    with pytest.raises(UsageError) as caught:
        parse_budget(text)
    assert (type(caught.value), str(caught.value)) == (UsageError, f"--budget {text!r}: {why}")


def test_placements_bind_each_worker_to_a_gpu_in_turn_and_pair_gpus_where_two_exist():
    assert placements("auto", ["0", "1", "2"], 0) == (["cuda:0", "cuda:0,1", "cpu"], None)
    assert placements("auto", ["0", "1", "2"], 2) == (["cuda:2", "cuda:2,0", "cpu"], None)
    assert placements("auto", ["4", "7"], 3) == (["cuda:7", "cuda:7,4", "cpu"], None)
    assert placements("auto", ["0"], 5) == (["cuda:0", "cpu"], None)
    assert placements("auto", []) == (["cpu"], "no CUDA device visible: fuzzing on CPU only")
    assert placements("cpu", ["0", "1"], 1) == (["cpu"], None)
    assert placements("cuda", ["0", "1"], 1) == (["cuda:1", "cuda:1,0"], None)
    with pytest.raises(UsageError, match="no CUDA device is visible"):
        placements("cuda", [])
    assert format_duration(3725) == "1:02:05" and format_duration(65) == "01:05"


def test_the_gpus_a_worker_may_take_are_those_torch_sees_named_as_cuda_visible_devices_names_them(monkeypatch):
    import torch

    from ppaux.fuzz.options import visible_gpus

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_gpus() == ["0", "1"]
    # This process's own list, as far as torch sees devices in it.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5,7")
    assert visible_gpus() == ["3", "5"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert visible_gpus() == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--budget", "soon"], "fuzz: error: --budget 'soon': expected a duration such as 30m, 1h30m, 90s"),
        (["run", "--max-failures", "0"], "fuzz: error: --max-failures must be at least 1"),
        (["run", "--progress-every", "0"], "fuzz: error: --progress-every must be a positive number of seconds"),
        (
            ["run", "--impl", "no/such/impl.py"],
            "fuzz: error: --impl: implementation file 'no/such/impl.py' does not exist",
        ),
        (["replay", "--db", "redis://"], "fuzz: error: --db 'redis://': expected redis://HOST:PORT"),
        (
            ["run", "--devices", "tpu"],
            "fuzz: error: python -m fuzz run: argument --devices: invalid choice: 'tpu' "
            "(choose from 'auto', 'cpu', 'cuda')",
        ),
        (
            ["fly"],
            "fuzz: error: python -m fuzz: argument {run,replay,report}: invalid choice: 'fly' "
            "(choose from 'run', 'replay', 'report')",
        ),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == message + "\n"


def test_unreachable_redis_is_a_usage_error(capsys):
    port = _free_port()
    assert main(["replay", "--db", f"redis://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fuzz: error: --db redis://127.0.0.1:{port}: cannot reach Redis (ConnectionError")
    assert err.count("\n") == 1


def test_db_that_is_a_file_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "db").write_text("")
    assert main(["replay", "--db", str(tmp_path / "db")]) == 2
    assert (
        capsys.readouterr().err
        == f"fuzz: error: --db {str(tmp_path / 'db')!r} is a file; expected a directory or redis://HOST:PORT\n"
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["run", "--workers", "0"],
            "ppaux: error: --workers '0': expected a number of worker processes, 1 or more, or auto",
        ),
        (
            ["run", "--workers", "many"],
            "ppaux: error: --workers 'many': expected a number of worker processes, 1 or more, or auto",
        ),
        (["run", "--shard", "3/2"], "ppaux: error: --shard '3/2': K must be between 1 and N"),
        (["run", "--shard", "0/2"], "ppaux: error: --shard '0/2': K must be between 1 and N"),
        (["run", "--shard", "x"], "ppaux: error: --shard 'x': expected K/N, this machine's share of N (e.g. 1/4)"),
        (["run", "--timeout", "soon"], "ppaux: error: --timeout: timeout 'soon' is not a number of seconds"),
        (["replay", "--db", "redis://h:port"], "ppaux: error: --db 'redis://h:port': the port is not a number"),
        (["report"], "ppaux fuzz report: the following arguments are required: --merge"),
        (
            ["fly"],
            "ppaux fuzz: argument {run,replay,report}: invalid choice: 'fly' (choose from 'run', 'replay', 'report')",
        ),
    ],
)
def test_ppaux_fuzz_bad_arguments_are_one_line_and_exit_2(argv, message, capsys):
    assert ppaux_main(["fuzz", *argv]) == 2
    assert capsys.readouterr().err == message + "\n"


def test_a_report_or_database_that_cannot_be_one_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    (tmp_path / "other.json").mkdir()
    (tmp_path / "other.json" / "fuzz.json").write_text('{"kind": "conformance"}')
    # JSON that is no report at all, and a run's report that names no worker (written by hand, cut short).
    for name, text in (("list", "[]"), ("workerless", '{"kind": "fuzz-run"}')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "fuzz.json").write_text(text)
    (tmp_path / "garbled").mkdir()
    (tmp_path / "garbled" / "fuzz.json").write_text("{")
    file, missing = str(tmp_path / "file"), str(tmp_path / "no-such-db")
    cases = [
        (["run", "--report", file], f"ppaux: error: --report {file!r} is a file; expected a directory"),
        # A typo'd database on replay: "0 saved examples" and exit 0 would read as a clean night.
        (
            ["replay", "--impl", "ppaux.transport", "--db", missing],
            f"ppaux: error: --db {missing!r}: no such directory; nothing saved there to replay",
        ),
        (
            ["replay", "--db", str(tmp_path), "--report", str(tmp_path / "r"), "--regressions", file],
            f"ppaux: error: --regressions: {file} is not a directory",
        ),
        (["report", "--merge", str(tmp_path)], f"ppaux: error: --merge {str(tmp_path)!r}: no fuzz.json there"),
        (["report", "--merge", file], f"ppaux: error: --merge {file!r} is a file; expected a directory"),
        (
            ["report", "--merge", str(tmp_path), str(tmp_path / "." / "")],
            f"ppaux: error: --merge {str(tmp_path)!r} is named twice: its rounds would count twice",
        ),
        (
            ["report", "--merge", str(tmp_path / "garbled")],
            f"ppaux: error: --merge {str(tmp_path / 'garbled')!r}: cannot read fuzz.json (JSONDecodeError)",
        ),
        (
            ["report", "--merge", str(tmp_path / "other.json")],
            f"ppaux: error: --merge {str(tmp_path / 'other.json')!r}: fuzz.json is not a report of `ppaux fuzz run`",
        ),
        *(
            (
                ["report", "--merge", str(tmp_path / name)],
                f"ppaux: error: --merge {str(tmp_path / name)!r}: fuzz.json is not a report of `ppaux fuzz run`",
            )
            for name in ("list", "workerless")
        ),
    ]
    for argv, message in cases:
        assert (ppaux_main(["fuzz", *argv]), capsys.readouterr().err) == (2, message + "\n")
    assert not (tmp_path / "no-such-db").exists()


def silent_redis() -> socket.socket:
    """A socket that accepts connections (the kernel's backlog) and never answers: without a time limit, a hang."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    return silent


def test_a_redis_that_does_not_answer_is_given_up_on_at_the_answer_limit():
    with silent_redis() as silent:
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(DatabaseError) as raised:
            open_database(url, answer_timeout=0.05)
    assert re.fullmatch(re.escape(f"--db {url}: cannot reach Redis (TimeoutError: ") + r"[^\n]+\)", str(raised.value))


@pytest.mark.slow  # waits out the command line's own limit (seconds); the test above, a short one
def test_a_redis_that_does_not_answer_is_one_line_and_exit_2(capsys):
    with silent_redis() as silent:
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}"
        assert ppaux_main(["fuzz", "run", "--db", url]) == 2
    # ppaux's words and the cause's type; the cause's own words are redis-py's (8.2 changed them).
    err = capsys.readouterr().err
    assert re.fullmatch(re.escape(f"ppaux: error: --db {url}: cannot reach Redis (TimeoutError: ") + r"[^\n]+\)\n", err)


def test_shards_split_every_test_into_exactly_one_share_the_same_on_every_machine():
    ids = [f"ppaux/conformance/test_add.py::test_{i}" for i in range(200)] + [BROKEN_TEST, OTHER_SHARD_TEST]
    for n in (1, 2, 3, 7):
        owners = [[k for k in range(1, n + 1) if in_shard(nodeid, (k, n))] for nodeid in ids]
        assert all(len(o) == 1 for o in owners)
        assert {o[0] for o in owners} == set(range(1, n + 1))
    assert in_shard(BROKEN_TEST, None)
    assert parse_shard("2/5") == (2, 5) and parse_shard(None) is None
    assert parse_workers("3") == 3


def test_auto_is_a_worker_for_each_core_this_process_may_use(monkeypatch):
    # A container's or taskset's share of the cores, not the host's count.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert parse_workers("auto") == 3


def test_workers_start_their_rounds_at_different_tests(monkeypatch):
    from ppaux.fuzz.pytest_plugin import _worker_order

    items = list("abcdefgh")
    orders = []
    for worker in ("1/3", "2/3", "3/3"):
        monkeypatch.setenv("PPAUX_FUZZ_WORKER", worker)
        orders.append("".join(_worker_order(items)))
    assert orders == ["abcdefgh", "cdefghab", "fghabcde"]


DRAWING_TEST = """
import os
from hypothesis import given, strategies as st

@given(st.integers())
def test_drawn(n):
    with open(os.environ["DRAWN"], "a") as fh:
        fh.write(f"{n}\\n")
"""


def test_a_seeded_round_draws_the_same_examples_again_counts_them_and_leaves_the_process_as_it_was(
    pytester, monkeypatch, tmp_path
):
    from hypothesis import given
    from hypothesis import strategies as st

    from ppaux.testing import hypothesis_api
    from ppaux.testing.hypothesis_api import replace_seed_generator

    pytester.makepyfile(test_drawn=DRAWING_TEST)
    sigint = signal.getsignal(signal.SIGINT)
    outer = replace_seed_generator(None)
    replace_seed_generator(outer)

    def fuzz_round(seed: int, run: int) -> list:
        run_dir = tmp_path / f"seed-{seed}-run-{run}"
        run_dir.mkdir()
        for name, value in {
            "DRAWN": run_dir / "drawn",
            "PPAUX_FUZZ_SEED": seed,
            "PPAUX_FUZZ_MAX_EXAMPLES": 20,
            "PPAUX_FUZZ_DB": run_dir / "db",
            "PPAUX_FUZZ_EVENTS": run_dir / "events",
        }.items():
            monkeypatch.setenv(name, str(value))
        result = pytester.runpytest_inprocess("-p", "ppaux.fuzz.pytest_plugin", "--hypothesis-profile=ppaux-fuzz")
        assert result.ret == 0, result.stdout.str()
        drawn = (run_dir / "drawn").read_text().splitlines()
        events = [json.loads(line) for line in (run_dir / "events").read_text().splitlines()]
        # Every example counted, through Hypothesis' observability callbacks.
        assert events[-2] == {"kind": "progress", "examples": len(drawn), "time": events[-2]["time"]}
        return drawn

    first = fuzz_round(5, 1)
    assert len(first) == 20
    assert fuzz_round(5, 2) == first != fuzz_round(6, 1)
    # Nothing of the rounds is left in this process: no seed, no signal handler, no counting.
    assert signal.getsignal(signal.SIGINT) is sigint and replace_seed_generator(outer) is outer
    assert hypothesis_api.observability.OBSERVABILITY_COLLECT_COVERAGE is True
    counted = (tmp_path / "seed-6-run-1" / "events").read_text()
    given(st.integers())(lambda n: None)()
    assert (tmp_path / "seed-6-run-1" / "events").read_text() == counted


ROUND_TESTS = """
from hypothesis import given, strategies as st

@given(st.integers())
def test_small(n):
    assert n < 5, "too big"

@given(st.integers())
def test_any(n):
    pass

def test_plain():
    pass
"""


# Two whole pytest sessions of a fuzz round with a failure (seconds, as a round in a child process
# takes): out of the quick run, in the package mutation run, where it kills the plugin's mutants.
@pytest.mark.subprocess
def test_a_round_reports_what_it_runs_and_finds_and_a_replay_round_how_many_examples_each_test_had_saved(
    pytester, monkeypatch, tmp_path
):
    """The events a round appends for the parent: the Hypothesis tests it keeps (a plain test is
    dropped), each test started and its outcome, a failure with its minimal example, blob and
    error, the round's exit status; a replay round of the same database adds each test's saved count."""
    pytester.makepyfile(test_round=ROUND_TESTS)

    def fuzz_round(mode: str) -> tuple[int, list]:
        events = tmp_path / f"{mode}.events"
        for name, value in {
            "PPAUX_FUZZ_MODE": mode,
            "PPAUX_FUZZ_SEED": 3,
            "PPAUX_FUZZ_MAX_EXAMPLES": 20,
            "PPAUX_FUZZ_DB": tmp_path / "db",
            "PPAUX_FUZZ_EVENTS": events,
        }.items():
            monkeypatch.setenv(name, str(value))
        result = pytester.runpytest_inprocess("-p", "ppaux.fuzz.pytest_plugin", "--hypothesis-profile=ppaux-fuzz")
        # Progress events come every half second: how many there are depends on the machine.
        read = [json.loads(line) for line in events.read_text().splitlines()]
        assert all(isinstance(event.pop("time"), float) for event in read)
        return result.ret, [event for event in read if event["kind"] != "progress"]

    failing, passing = "test_round.py::test_small", "test_round.py::test_any"
    status, events = fuzz_round("run")
    failure = events[4]
    assert re.fullmatch(r"@reproduce_failure\('[\d.]+', b'[\w+/=]+'\)", failure["blob"]), failure["blob"]
    assert "E       AssertionError: too big" in failure["text"].splitlines()
    assert failure == {
        "kind": "failure",
        "nodeid": failing,
        "clause": None,
        "example": "test_small(\n    n=5,\n)",
        "blob": failure["blob"],
        "error": "AssertionError: too big",
        "marks": [],
        "doc": "",
        "outcome": "failed",
        "text": failure["text"],
    }
    assert (status, events) == (
        1,
        [
            {"kind": "started", "pid": os.getpid()},
            {"kind": "collected", "tests": 2, "selected": 2},
            {"kind": "running", "nodeid": failing},
            {"kind": "test", "nodeid": failing, "outcome": "failed"},
            failure,
            {"kind": "running", "nodeid": passing},
            {"kind": "test", "nodeid": passing, "outcome": "passed"},
            {"kind": "finished", "exitstatus": 1},
        ],
    )
    status, events = fuzz_round("replay")
    assert (status, [event for event in events if event["kind"] != "failure"]) == (
        1,
        [
            {"kind": "started", "pid": os.getpid()},
            {"kind": "collected", "tests": 2, "selected": 2},
            {"kind": "running", "nodeid": failing},
            {"kind": "test", "nodeid": failing, "outcome": "failed", "saved": 1},
            # Nothing saved, nothing generated in a replay: Hypothesis skips the test.
            {"kind": "running", "nodeid": passing},
            {"kind": "test", "nodeid": passing, "outcome": "skipped", "saved": 0},
            {"kind": "finished", "exitstatus": 1},
        ],
    )


SHARDED_TESTS = """
from hypothesis import given, strategies as st

@given(st.none())
def test_a(n):
    pass

@given(st.none())
def test_b(n):
    pass

@given(st.none())
def test_c(n):
    pass

@given(st.none())
def test_d(n):
    pass

def test_plain():
    pass
"""

BROKEN_ROUND_TESTS = """
import pytest
from hypothesis import given, strategies as st

@pytest.fixture
def broken():
    raise RuntimeError("the fixture broke")

@given(n=st.just(1))
def test_set_up_broken(broken, n):
    pass

@given(n=st.just(1))
def test_fails(n):
    assert n == 2, "one is not two"

@given(n=st.sampled_from([0, 1]))
def test_two_bugs(n):
    raise (ValueError("zero") if n == 0 else KeyError("one"))
"""


def _round_events(pytester, monkeypatch, tmp_path, env: dict, *args: str) -> tuple[int, list]:
    """A fuzz round of pytester's files in this process, as told by ``env``: its exit status and events (no times)."""
    for name in ("PPAUX_FUZZ_SEED", "PPAUX_FUZZ_SHARD", "PPAUX_FUZZ_MAX_EXAMPLES", "PPAUX_FUZZ_WORKER"):
        monkeypatch.delenv(name, raising=False)
    events = tmp_path / "events"
    for name, value in {"PPAUX_FUZZ_DB": tmp_path / "db", "PPAUX_FUZZ_EVENTS": events, **env}.items():
        monkeypatch.setenv(name, str(value))
    result = pytester.runpytest_inprocess("-p", "ppaux.fuzz.pytest_plugin", "--hypothesis-profile=ppaux-fuzz", *args)
    read = [json.loads(line) for line in events.read_text().splitlines()]
    return result.ret, [{k: v for k, v in event.items() if k != "time"} for event in read]


def test_a_round_of_a_shard_keeps_only_that_shard_s_hypothesis_tests(pytester, monkeypatch, tmp_path):
    pytester.makepyfile(test_sharded=SHARDED_TESTS)
    ids = [f"test_sharded.py::test_{x}" for x in "abcd"]
    kept = [nodeid for nodeid in ids if in_shard(nodeid, (2, 2))]
    assert 0 < len(kept) < len(ids)  # a share, not all or none of them
    status, events = _round_events(pytester, monkeypatch, tmp_path, {"PPAUX_FUZZ_SHARD": "2/2"}, "--collect-only", "-q")
    assert (status, events[1]) == (0, {"kind": "collected", "tests": len(kept), "selected": 4})


def test_a_round_reports_a_test_whose_set_up_failed_and_why_a_failure_s_calls_are_not_code(
    pytester, monkeypatch, tmp_path
):
    """A failure in a test's set-up is a failure too (it has no calls to write); with
    --ppaux-record-calls, a failing test that made no call says so. A failure's error is its
    exception's first line, a test with two distinct bugs says so (the nightly profile reports both).
    Without a max_examples from the parent, the round runs the nightly profile's."""
    pytester.makepyfile(test_broken=BROKEN_ROUND_TESTS)
    status, events = _round_events(pytester, monkeypatch, tmp_path, {"PPAUX_FUZZ_MODE": "run"}, "--ppaux-record-calls")
    failures = [event for event in events if event["kind"] == "failure"]
    assert all(isinstance(failure.pop("text"), str) for failure in failures)
    # Of two distinct bugs, the example is the first one Hypothesis printed.
    assert failures[2]["example"] in (f"test_two_bugs(\n    n={n},\n)" for n in (0, 1))
    assert (status, failures) == (
        1,
        [
            {
                "kind": "failure",
                "nodeid": "test_broken.py::test_set_up_broken",
                "clause": None,
                "example": None,
                "blob": None,
                "error": "RuntimeError: the fixture broke",
                "marks": [],
                "doc": "",
                "outcome": "failed",
            },
            {
                "kind": "failure",
                "nodeid": "test_broken.py::test_fails",
                "clause": None,
                "example": failures[1]["example"],
                "blob": failures[1]["blob"],
                "error": "AssertionError: one is not two",
                "marks": [],
                "doc": "",
                "outcome": "failed",
                "scenario_error": "the test made no call into the implementation",
            },
            {
                "kind": "failure",
                "nodeid": "test_broken.py::test_two_bugs",
                "clause": None,
                "example": failures[2]["example"],
                "blob": failures[2]["blob"],
                "error": "ExceptionGroup: Hypothesis found 2 distinct failures. (2 sub-exceptions)",
                "marks": [],
                "doc": "",
                "outcome": "failed",
                "scenario_error": "the test made no call into the implementation",
            },
        ],
    )


STOPPED_ROUND_TESTS = """
import os, signal
from hypothesis import given, strategies as st

@given(st.none())
def test_stopped(n):
    try:
        os.kill(os.getpid(), signal.SIGINT)  # the parent stopping the round
    except KeyboardInterrupt as exc:
        raise AssertionError("turned into a failure: KeyboardInterrupt") from exc

@given(st.none())
def test_never_run(n):
    pass
"""


def _raised(cause: BaseException | None = None, context: BaseException | None = None) -> BaseException:
    error = AssertionError("KeyboardInterrupt, in words only")
    error.__cause__, error.__context__ = cause, context
    return error


def _cyclic() -> BaseException:
    first, second = ValueError(), ValueError()
    first.__context__, second.__context__ = second, first
    return first


# Exception groups are builtins from Python 3.11 (the backport before it is Hypothesis's and pytest's).
GROUP = getattr(builtins, "BaseExceptionGroup", None)
NEEDS_GROUPS = pytest.mark.skipif(GROUP is None, reason="exception groups are builtins from Python 3.11")


@pytest.mark.parametrize(
    "error, interrupted",
    [
        pytest.param(lambda: KeyboardInterrupt(), True, id="itself"),
        pytest.param(lambda: _raised(cause=KeyboardInterrupt()), True, id="its cause"),
        pytest.param(lambda: _raised(context=_raised(context=KeyboardInterrupt())), True, id="a context's context"),
        pytest.param(
            lambda: GROUP("two", [ValueError(), _raised(cause=KeyboardInterrupt())]),
            True,
            id="in a group",
            marks=NEEDS_GROUPS,
        ),
        # A failure that only names the interrupt in its message is a failure.
        pytest.param(lambda: _raised(), False, id="named only"),
        pytest.param(lambda: GROUP("two", [ValueError(), _raised()]), False, id="group without", marks=NEEDS_GROUPS),
        pytest.param(_cyclic, False, id="a cycle"),
    ],
)
def test_a_round_s_stop_is_told_from_a_failure_by_the_exceptions_not_their_words(error, interrupted):
    from ppaux.fuzz.pytest_plugin import _raised_in_an_interrupt

    assert _raised_in_an_interrupt(error()) is interrupted


def test_a_test_that_turns_the_round_s_stop_into_a_failure_is_interrupted_not_failed(pytester, monkeypatch, tmp_path):
    # As Hypothesis may do with the KeyboardInterrupt of a stop: no verdict, no finding, and the round ends there.
    pytester.makepyfile(test_stopped=STOPPED_ROUND_TESTS)
    status, events = _round_events(
        pytester, monkeypatch, tmp_path, {"PPAUX_FUZZ_MODE": "run", "PPAUX_FUZZ_MAX_EXAMPLES": 1}
    )
    # Stopped, as pytest says of a session told to stop: exit 2.
    assert (status, events[-1]) == (2, {"kind": "finished", "exitstatus": 2})
    assert [e for e in events if e["kind"] not in ("started", "progress", "finished")] == [
        {"kind": "collected", "tests": 2, "selected": 2},
        {"kind": "running", "nodeid": "test_stopped.py::test_stopped"},
        {"kind": "interrupted", "nodeid": "test_stopped.py::test_stopped"},
    ]


def test_an_installed_suite_runs_from_the_users_directory_a_checkout_from_its_root(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    installed = Suite(
        db="redis://h:1",
        workdir=tmp_path,
        tests="test_add",
        impl="mine",
        timeout=2.0,
        shard=(2, 3),
        record_calls=True,
        checkout=False,
        cwd=tmp_path,
    )
    assert installed.command() == [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "ppaux.fuzz.pytest_plugin",
        "--hypothesis-profile=ppaux-fuzz",
        "-q",
        "--no-header",
        "-p",
        "no:cacheprovider",
        "--strict-markers",
        "--ppaux-timeout",
        "2.0",
        "--ppaux-impl",
        "mine",
        "--ppaux-record-calls",
        "-k",
        "test_add",
        "--pyargs",
        "ppaux.conformance",
        "-c",
        str(tmp_path / "pytest.ini"),
        "--rootdir",
        str(ROOT),
        "--confcutdir",
        str(ROOT / "ppaux" / "conformance"),
        # The plugins it needs by name, none of the environment's (as ppaux check runs it).
        "-p",
        "_hypothesis_pytestplugin",
        "-p",
        "ppaux_pytest",
    ]
    assert (tmp_path / "pytest.ini").read_text() == "[pytest]\n"
    assert installed.what == "ppaux.conformance" and from_checkout()
    checkout = Suite(db="d", workdir=tmp_path)
    assert checkout.command()[-6:] == ["-m", "not sglang", "-o", "addopts=", "ppaux/conformance", "tests"]
    assert checkout.what == "ppaux.conformance and ppaux's tests/"
    # ppaux's own tests take this checkout's plugins (pytester, xdist's): autoloaded as in its own runs.
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", "--cov=theirs")
    checkout_env = checkout.env(mode="run", events=tmp_path / "e", placement="cpu", max_examples=None, worker=(1, 1))
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in checkout_env and checkout_env["PYTEST_ADDOPTS"] == "--cov=theirs"
    env = installed.env(mode="run", events=tmp_path / "e", placement="cuda:2,0", max_examples=50, worker=(2, 4), seed=9)
    assert {k: env[k] for k in env if k.startswith(("PPAUX_FUZZ_", "CUDA_"))} == {
        "PPAUX_FUZZ_SEED": "9",
        "PPAUX_FUZZ_SHARD": "2/3",
        "PPAUX_FUZZ_MODE": "run",
        "PPAUX_FUZZ_DB": "redis://h:1",
        "PPAUX_FUZZ_EVENTS": str(tmp_path / "e"),
        "PPAUX_FUZZ_WORKER": "2/4",
        "PPAUX_FUZZ_MAX_EXAMPLES": "50",
        "CUDA_VISIBLE_DEVICES": "2,0",
    }
    # The caller's options for their own runs are not the installed suite's (as in ppaux check).
    assert env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1" and "PYTEST_ADDOPTS" not in env
    # A replay replays every shard's failures; a cpu round sees no GPU.
    env = installed.env(mode="replay", events=tmp_path / "e", placement="cpu", max_examples=None, worker=(1, 1))
    assert "PPAUX_FUZZ_SHARD" not in env and "PPAUX_FUZZ_SEED" not in env and env["CUDA_VISIBLE_DEVICES"] == ""


def test_timelines_add_up_per_worker_into_the_run():
    one = [[0.0, 0, 0], [2.0, 10, 0], [5.0, 30, 1]]
    two = [[1.0, 5, 0], [5.0, 20, 0]]
    assert add_up([one, two]) == [[0.0, 0, 0], [1.0, 5, 0], [2.0, 15, 0], [5.0, 50, 1]]
    assert thin([[float(i), i, 0] for i in range(10)], 4) == [[0.0, 0, 0], [3.0, 3, 0], [6.0, 6, 0], [9.0, 9, 0]]
    line = Timeline()
    for t, examples in ((0.0, 0), (0.1, 0), (0.2, 3), (6.0, 3)):
        line.sample(t, examples, 0)
    assert line.points == [[0.0, 0, 0], [0.2, 3, 0], [6.0, 3, 0]]
    # A flat stretch gets a point every 5 s exactly, counted from the last point; times to 1/100 s.
    flat = Timeline()
    for t in (2.0, 4.0, 7.0, 8.456):
        flat.sample(t, 3, 0)
    flat.sample(8.456, 4, 0)
    assert flat.points == [[2.0, 3, 0], [7.0, 3, 0], [8.46, 4, 0]]


def _run_summary(shard, *, failures=(), dead=(), examples=100, complete=True):
    """A shard's fuzz.json as this version writes it (format version 1)."""
    return {
        "kind": "fuzz-run",
        "schema_version": 1,
        "verdict": "fail" if failures or dead or not examples else "pass",
        "merged": False,
        "shards": [],
        "started_at": f"2026-12-02T0{shard[0]}:00:00+00:00",
        "budget_s": 60.0,
        "elapsed_s": 60.0,
        "stopped_by": "budget" if complete else "SIGTERM",
        "complete": complete,
        "impl": "x.py",
        "db": "redis://h:1",
        "suite": "ppaux.conformance",
        "tests": None,
        "seed": None,
        "shard": shard,
        "placements": ["cpu"],
        "workers": [
            {
                "worker": 1,
                "placements": ["cpu"],
                "rounds": 1,
                "examples": examples,
                "failures": len(failures),
                "died": None,
                "timeline": [[0.0, 0, 0], [60.0, examples, len(failures)]],
            }
        ],
        "dead_workers": list(dead),
        "examples": examples,
        "examples_per_s": examples / 60,
        "timeout_s": 10.0,
        "rounds": [
            {
                "worker": 1,
                "round": 1,
                "placement": "cpu",
                "max_examples": 50,
                "examples": examples,
                "tests": 3,
                "exit_status": 0,
                "ended_by": "budget",
                "log": "l",
                "scope": None,
                "swarm": None,
                "swarm_seed": None,
            }
        ],
        "failures": [
            {
                "nodeid": n,
                "clause": "add.7",
                "error": "E" if n != "b" else None,
                "example": "ex",
                "blob": "b" if n != "b" else None,
                "seen": 1,
            }
            for n in failures
        ],
        "interrupted": [],
        "timeline": [[0.0, 0, 0], [60.0, examples, len(failures)]],
    }


def _merged(runs: list[dict]) -> dict:
    """The merged report of shards' fuzz.json files, as fuzz.json holds it."""
    return merge_runs([FuzzRunReport.from_json(run) for run in runs]).to_json()


def _written(summary: dict, report: Path) -> Path:
    """fuzz.md and fuzz.json of a run's fuzz.json as read back."""
    return write_run(FuzzRunReport.from_json(summary), report)


def test_merged_report_tags_each_round_worker_and_failure_with_its_shard_and_lists_a_failure_once(tmp_path, capsys):
    dead = {"worker": 1, "round": 1, "placement": "cpu", "test": "t", "exit_status": -9, "log": "l"}
    runs = [_run_summary("1/2", failures=["a", "b"]), _run_summary("2/2", failures=["b"], dead=[dead], complete=False)]
    merged = _merged(runs)
    assert [(f["nodeid"], f["shard"], f["seen"]) for f in merged["failures"]] == [("a", "1/2", 1), ("b", "1/2", 2)]
    assert [(r["shard"], r["round"]) for r in merged["rounds"]] == [("1/2", 1), ("2/2", 1)]
    assert merged["dead_workers"] == [dict(dead, shard="2/2")]
    assert (merged["examples"], merged["complete"], merged["stopped_by"]) == (200, False, "SIGTERM")
    assert merged["timeline"] == [[0.0, 0, 0], [60.0, 200, 3]]
    assert verdict(FuzzRunReport.from_json(merged)) == (1, "1 worker(s) died: see the report")
    for i, run in enumerate(runs):
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "fuzz.json").write_text(json.dumps(run))
    status, out, _ = ppaux_fuzz(
        capsys, "report", "--merge", str(tmp_path / "0"), str(tmp_path / "1"), "--report", str(tmp_path / "merged")
    )
    assert status == 1
    assert out.splitlines()[0] == (
        "fuzz report: 2 runs merged: 200 examples, 2 rounds, 2 failures; 1 worker(s) died: see the report"
    )
    # The whole page, as the user reads it: each shard's line, its workers and rounds tagged, the
    # dead worker named with its shard, a failure two shards found listed once.
    assert (tmp_path / "merged" / "fuzz.md").read_text() == "\n".join(
        [
            "# Fuzz run (2 shards merged)",
            "",
            "- started: 2026-12-02T01:00:00+00:00; ran 01:00 of a 01:00 budget"
            " (stopped early by SIGTERM: partial report)",
            "- implementation: `x.py`; suite: ppaux.conformance; tests: `all Hypothesis tests`",
            "- workers: 2; placements: cpu",
            "- example database: `redis://h:1`",
            "- examples: 200 (3.3/s) in 2 rounds",
            "- per-call time limit: 10 s",
            "- failures: **2**; dead workers: **1**",
            "",
            "| shard | examples | failures | workers | ended by |",
            "| --- | --- | --- | --- | --- |",
            "| 1/2 | 100 | 2 | 1 | budget |",
            "| 2/2 | 100 | 1 | 1 | SIGTERM |",
            "",
            "| worker | placements | rounds | examples | failures found first | died |",
            "| --- | --- | --- | --- | --- | --- |",
            "| 1/2 1 | cpu | 1 | 100 | 2 | no |",
            "| 2/2 1 | cpu | 1 | 100 | 1 | no |",
            "",
            "| shard | worker | round | placement | examples/test | tests | examples | ended by | scope |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            "| 1/2 | 1 | 1 | cpu | 50 | 3 | 100 | budget | - |",
            "| 2/2 | 1 | 1 | cpu | 50 | 3 | 100 | budget | - |",
            "",
            "## Dead workers",
            "",
            "A worker whose round ended without a verdict (killed, crashed): the others went on.",
            "",
            "- worker 1 of shard 2/2: round 1 (cpu), running `t`: killed the process with SIGKILL (signal 9); log l",
            "",
            "## Failures",
            "",
            "### `a`",
            "",
            "- error: `E`",
            "- clause: add.7",
            "- shard: 1/2",
            "- times seen: 1",
            "",
            "Minimal example:",
            "",
            "```",
            "ex",
            "```",
            "",
            "Reproduce (decorate the test with):",
            "",
            "```python",
            "b",
            "```",
            "",
            "### `b`",
            "",
            "- clause: add.7",
            "- shard: 1/2",
            "- times seen: 2",
            "",
            "Minimal example:",
            "",
            "```",
            "ex",
            "```",
            "",
            "Replay every saved failure: `ppaux fuzz replay --impl x.py --db redis://h:1`",
            "",
        ]
    )
    assert json.loads((tmp_path / "merged" / "fuzz.json").read_text()) == merged
    # What the page does not show is in fuzz.json for tools: no single seed or shard, each shard's timeline.
    assert {k: merged[k] for k in ("kind", "verdict", "merged", "seed", "shard", "tests", "impl", "db", "suite")} == {
        "kind": "fuzz-run",
        "verdict": "fail",
        "merged": True,
        "seed": None,
        "shard": None,
        "tests": None,
        "impl": "x.py",
        "db": "redis://h:1",
        "suite": "ppaux.conformance",
    }
    assert (merged["budget_s"], merged["elapsed_s"], merged["timeout_s"], merged["examples_per_s"]) == (
        60.0,
        60.0,
        10.0,
        3.3,
    )
    assert [(h["shard"], h["timeline"]) for h in merged["shards"]] == [
        ("1/2", [[0.0, 0, 0], [60.0, 100, 2]]),
        ("2/2", [[0.0, 0, 0], [60.0, 100, 1]]),
    ]


def test_a_shard_s_page_names_its_selection_its_dead_worker_what_was_interrupted_and_where_a_failure_was_found(
    tmp_path,
):
    # One shard's run (not merged), stopped by SIGTERM after an hour: a worker died in its second
    # round before running a test, one test had no verdict, one failure has no minimal example.
    dead = {"worker": 1, "round": 2, "placement": "cuda:0", "test": None, "exit_status": -9, "log": "w1.log"}
    summary = _run_summary("1/2", dead=[dead], complete=False)
    summary.update(tests="add and not slow", timeout_s=2.5, examples=12345, examples_per_s=3.3, elapsed_s=3725.4)
    summary["suite"] = "ppaux.conformance and ppaux's tests/"  # a checkout's run
    summary["budget_s"] = 7200.0
    summary["workers"][0].update(died=dead, examples=12345)
    summary["rounds"].append(
        {
            "round": 2,
            "placement": "cuda:0",
            "max_examples": 200,
            "examples": 12245,
            "tests": 3,
            "exit_status": -9,
            "ended_by": "finished",
            "log": "w1.log",
            "worker": 1,
            "scope": None,
            "swarm": None,
            "swarm_seed": None,
        }
    )
    summary["interrupted"] = [
        {"nodeid": "t.py::slow", "worker": 1, "round": 2, "placement": "cuda:0", "stopped_by": "SIGTERM"}
    ]
    summary["failures"] = [
        {
            "nodeid": "t.py::t",
            "clause": None,
            "worker": 1,
            "workers": [1],
            "round": 1,
            "placements": ["cpu"],
            "found_after_s": 12.5,
            "example": None,
            "blob": None,
            "error": None,
            "text": "Traceback\nE   AssertionError\n",
            "seen": 2,
        }
    ]
    # A report directory whose parent does not exist yet: both are made.
    report = tmp_path / "nightly" / "report"
    assert _written(summary, report) == report / "fuzz.md"
    assert sorted(p.name for p in report.iterdir()) == ["fuzz.json", "fuzz.md"]
    # Indented for a person reading it; read back, the same report.
    assert (report / "fuzz.json").read_text() == json.dumps(
        json.loads((report / "fuzz.json").read_text()), indent=2
    ) + "\n"
    assert json.loads((report / "fuzz.json").read_text()) == summary
    assert (report / "fuzz.md").read_text() == "\n".join(
        [
            "# Fuzz run",
            "",
            "- started: 2026-12-02T01:00:00+00:00; ran 1:02:05 of a 2:00:00 budget"
            " (stopped early by SIGTERM: partial report)",
            "- implementation: `x.py`; suite: ppaux.conformance and ppaux's tests/;"
            " tests: `add and not slow`; shard 1/2",
            "- workers: 1; placements: cpu",
            "- example database: `redis://h:1`",
            "- examples: 12,345 (3.3/s) in 2 rounds",
            "- per-call time limit: 2.5 s",
            "- failures: **1**; dead workers: **1**; interrupted (still running when stopped, no verdict): 1",
            "",
            "| worker | placements | rounds | examples | failures found first | died |",
            "| --- | --- | --- | --- | --- | --- |",
            "| 1 | cpu | 1 | 12,345 | 0 | yes |",
            "",
            "| shard | worker | round | placement | examples/test | tests | examples | ended by | scope |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            "| 1/2 | 1 | 1 | cpu | 50 | 3 | 100 | budget | - |",
            "| 1/2 | 1 | 2 | cuda:0 | 200 | 3 | 12,245 | finished | - |",
            "",
            "## Dead workers",
            "",
            "A worker whose round ended without a verdict (killed, crashed): the others went on.",
            "",
            "- worker 1: round 2 (cuda:0), running `no test yet`: killed the process with SIGKILL (signal 9); "
            "log w1.log",
            "",
            "## Interrupted",
            "",
            "Still running when their round was stopped: no verdict for these runs.",
            "",
            "- `t.py::slow` (worker 1, round 2, cuda:0; stopped by SIGTERM)",
            "",
            "## Failures",
            "",
            "### `t.py::t`",
            "",
            "- first found by worker: 1",
            "- in round: 1",
            "- placements: ['cpu']",
            "- found after (s): 12.5",
            "- times seen: 2",
            "",
            "Minimal example:",
            "",
            "```",
            "(see the failure text)",
            "```",
            "",
            "<details><summary>failure text</summary>",
            "",
            "```",
            "Traceback",
            "E   AssertionError",
            "```",
            "",
            "</details>",
            "",
            "Replay every saved failure: `ppaux fuzz replay --impl x.py --db redis://h:1 --timeout 2.5`",
            "",
        ]
    )


def test_a_run_without_failures_says_none_under_failures(tmp_path):
    # A run of no shard: its rounds are of no shard ("-").
    summary = _run_summary("1/1")
    summary["shard"] = None
    summary["rounds"].append(dict(summary["rounds"][0], worker=2))
    _written(summary, tmp_path)
    page = (tmp_path / "fuzz.md").read_text()
    assert page.splitlines()[3] == "- implementation: `x.py`; suite: ppaux.conformance; tests: `all Hypothesis tests`"
    rounds = (
        "| shard | worker | round | placement | examples/test | tests | examples | ended by | scope |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        "| - | 1 | 1 | cpu | 50 | 3 | 100 | budget | - |\n"
        "| - | 2 | 1 | cpu | 50 | 3 | 100 | budget | - |\n"
    )
    assert rounds in page
    assert (
        page.split("## Failures\n\n", 1)[1]
        == "None.\n\nReplay every saved failure: `ppaux fuzz replay --impl x.py --db redis://h:1`\n"
    )
    assert "## Dead workers" not in page and "## Interrupted" not in page


def test_merging_keeps_a_test_s_different_examples_apart_and_names_each_suite_once():
    """Failures of one test with one error but different minimal examples stay two failures, the
    same one again counts each shard's times seen; the suites are named once each."""
    runs = [_run_summary(f"{k}/3", failures=["a"]) for k in (1, 2, 3)]
    runs[0]["suite"] = "ppaux.conformance and ppaux's tests/"
    runs[1]["failures"][0]["example"] = "another example"
    runs[2]["failures"][0]["seen"] = 3
    slow = {"nodeid": "t.py::slow", "worker": 1, "round": 1, "placement": "cpu", "stopped_by": "budget"}
    runs[2]["interrupted"] = [slow]
    merged = _merged(runs)
    assert [(f["example"], f["shard"], f["seen"]) for f in merged["failures"]] == [
        ("ex", "1/3", 4),
        ("another example", "2/3", 1),
    ]
    assert merged["suite"] == "ppaux.conformance, ppaux.conformance and ppaux's tests/"
    assert merged["interrupted"] == [dict(slow, shard="3/3")]


@pytest.mark.parametrize(
    "change, line",
    [
        (
            {"schema_version": None},
            "this fuzz-run report was written before 0.4 (no schema_version); ppaux reads format version 1: "
            "run the fuzz job again",
        ),
        (
            {"schema_version": 2},
            "this fuzz-run report was written in format version 2; ppaux reads format version 1: "
            "run the fuzz job again",
        ),
    ],
)
def test_a_shard_s_report_of_another_format_version_is_not_merged_one_line_and_exit_2(tmp_path, capsys, change, line):
    old = _run_summary("2/2")
    old.update(change)
    if old["schema_version"] is None:  # as 0.3 wrote it
        del old["schema_version"], old["verdict"], old["merged"], old["shards"]
    with pytest.raises(ReportFormatError) as caught:
        FuzzRunReport.from_json(old)
    assert str(caught.value) == line
    argv = _two_shards(tmp_path)
    (tmp_path / "1" / "fuzz.json").write_text(json.dumps(old))
    assert ppaux_fuzz(capsys, *argv[:2], str(tmp_path / "0"), str(tmp_path / "1")) == (
        2,
        "",
        f"ppaux: error: --merge {str(tmp_path / '1')!r}: {line}\n",
    )
    assert main([*argv[:2], str(tmp_path / "0"), str(tmp_path / "1")]) == 2
    assert capsys.readouterr().err == f"fuzz: error: --merge {str(tmp_path / '1')!r}: {line}\n"


def test_merging_runs_of_no_shard_failures_without_an_example_and_runs_that_took_no_time(tmp_path):
    """Runs without --shard are named by their place; a failure with no minimal example (a crash) is
    one failure per error, its counts added up; reports from before dead workers and interrupted
    runs were recorded still merge; a run that took no time has a rate of 0, not a division error."""
    runs = [_run_summary(f"{k}/2") for k in (1, 2)]
    crash = {"nodeid": "a", "clause": None, "error": "Crash: pop killed the process with SIGSEGV (signal 11)"}
    hang = {"nodeid": "a", "clause": None, "error": "Hang: pop did not return within 1 s"}
    runs[0]["failures"] = [dict(crash, example=None, seen=2), dict(hang, example=None, seen=1)]
    runs[1]["failures"] = [dict(crash, example=None, seen=3)]
    for run in runs:
        run["shard"] = None
        run["elapsed_s"] = 0.0
    merged = _merged(runs)
    assert [(f["error"], f["shard"], f["seen"]) for f in merged["failures"]] == [
        (crash["error"], "run 1", 5),
        (hang["error"], "run 1", 1),
    ]
    # From fuzz.json as read, or from the typed report: the same rows.
    assert (
        failure_rows(merged)
        == failure_rows(FuzzRunReport.from_json(merged))
        == [{"nodeid": "a", "clause": None, "error": f["error"], "example": None, "blob": None} for f in (crash, hang)]
    )
    assert [h["shard"] for h in merged["shards"]] == ["run 1", "run 2"]
    assert (merged["examples_per_s"], merged["stopped_by"], merged["complete"]) == (0.0, "budget", True)
    assert (merged["dead_workers"], merged["interrupted"]) == ([], [])
    _written(merged, tmp_path)
    assert "| run 2 | 100 | 1 | 1 | budget |" in (tmp_path / "fuzz.md").read_text().splitlines()


def test_the_replay_advice_replays_against_what_the_run_fuzzed(tmp_path):
    """The page's replay command names the run's implementation (replayed against ppaux's own, every
    saved failure would read as fixed), database and time limit, quoted for the shell; shards of
    other implementations or databases get a command each."""
    run = _run_summary("1/1")
    run["impl"] = "ppaux.transport"
    _written(run, tmp_path / "reference")
    page = (tmp_path / "reference" / "fuzz.md").read_text()
    assert page.endswith("\nReplay every saved failure: `ppaux fuzz replay --db redis://h:1`\n")
    shards = [_run_summary(f"{k}/3") for k in (1, 2, 3)]
    for shard in shards:
        shard["impl"] = "/home/u/my impl.py"
    shards[1]["db"] = "/data/fuzz db"
    shards[2]["timeout_s"] = 0.5
    merged = _merged(shards)
    assert (merged["impl"], merged["db"]) == ("/home/u/my impl.py", "/data/fuzz db, redis://h:1")
    _written(merged, tmp_path / "merged")
    page = (tmp_path / "merged" / "fuzz.md").read_text()
    assert page.split("## Failures\n\nNone.\n\n", 1)[1] == "\n".join(
        [
            "Replay every saved failure, one command per implementation, database and time limit:",
            "",
            "- `ppaux fuzz replay --impl '/home/u/my impl.py' --db redis://h:1`",
            "- `ppaux fuzz replay --impl '/home/u/my impl.py' --db '/data/fuzz db'`",
            "- `ppaux fuzz replay --impl '/home/u/my impl.py' --db redis://h:1 --timeout 0.5`",
            "",
        ]
    )


def _two_shards(tmp_path):
    for i, shard in enumerate(("1/2", "2/2")):
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "fuzz.json").write_text(json.dumps(_run_summary(shard)))
    return ["report", "--merge", "0", "1"]


def test_without_report_the_merged_report_goes_to_a_dot_directory_that_git_ignores(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    merge = _two_shards(tmp_path)
    status, out, _ = ppaux_fuzz(capsys, *merge)
    assert status == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ppaux", "0", "1"]
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / ".ppaux").rglob("*")) == [
        ".ppaux/.gitignore",
        ".ppaux/fuzz",
        ".ppaux/fuzz/fuzz.json",
        ".ppaux/fuzz/fuzz.md",
    ]
    assert (tmp_path / ".ppaux" / ".gitignore").read_text() == "# Created by ppaux automatically.\n*\n"
    assert out.splitlines()[-1] == f"fuzz report: {tmp_path / '.ppaux' / 'fuzz' / 'fuzz.md'}"
    # .ppaux is the user's once it exists: a later run leaves what they changed there as it is.
    (tmp_path / ".ppaux" / ".gitignore").write_text("fuzz/\n")
    assert ppaux_fuzz(capsys, *merge)[0] == 0
    assert (tmp_path / ".ppaux" / ".gitignore").read_text() == "fuzz/\n"


def test_a_fuzz_report_directory_given_is_exactly_the_one_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status, out, _ = ppaux_fuzz(capsys, *_two_shards(tmp_path), "--report", "out")
    assert (status, out) == (
        0,
        "fuzz report: 2 runs merged: 200 examples, 2 rounds, 0 failures\n"
        f"fuzz report: {tmp_path / 'out' / 'fuzz.md'}\n",
    )
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "0",
        "0/fuzz.json",
        "1",
        "1/fuzz.json",
        "out",
        "out/fuzz.json",
        "out/fuzz.md",
    ]
    assert out.splitlines()[-1] == f"fuzz report: {tmp_path / 'out' / 'fuzz.md'}"


@pytest.mark.parametrize("command", ["run", "replay", "report"])
def test_a_dot_directory_that_cannot_be_made_is_one_line_and_exit_2_before_anything_runs(
    tmp_path, monkeypatch, capsys, command
):
    monkeypatch.chdir(tmp_path)
    argv = _two_shards(tmp_path) if command == "report" else [command, "--db", str(tmp_path / "db")]
    (tmp_path / "db").mkdir()
    # Under a file, where no one (root included) can make a directory.
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(state, "STATE", tmp_path / "file" / ".ppaux")
    assert ppaux_fuzz(capsys, *argv) == (
        2,
        "",
        f"ppaux: error: cannot create {tmp_path / 'file' / '.ppaux'}: Not a directory\n",
    )
    made = ["0", "1"] if command == "report" else []
    assert sorted(p.name for p in tmp_path.iterdir()) == [*made, "db", "file"]


def test_a_usage_error_found_after_the_database_is_opened_leaves_no_dot_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status, _, err = ppaux_fuzz(capsys, "run", "--db", "db", "--shard", "x")
    assert (status, err) == (2, "ppaux: error: --shard 'x': expected K/N, this machine's share of N (e.g. 1/4)\n")
    assert list(tmp_path.iterdir()) == []


def test_the_verdict_of_a_run_that_fuzzed_nothing_or_lost_a_worker_is_not_clean():
    def judged(summary):
        report = FuzzRunReport.from_json(summary)
        return report.verdict, verdict(report)

    assert judged(_run_summary("1/1")) == ("pass", (0, None))
    assert judged(_run_summary("1/1", failures=["a"])) == ("fail", (1, None))
    assert judged(_run_summary("1/1", examples=0)) == (
        "fail",
        (1, "no example ran within the budget: nothing was fuzzed"),
    )


# A stand-in for a round's pytest process: it writes what the fuzz job told it beside its events file
# (ROUND.environment.json), appends the events $FAKE_ROUND lists for its worker ("1", "2"; "*" for any), then
# ends as told: "exit N", "kill" (SIGKILL, as the OOM killer would), "hang" (says it was interrupted on
# SIGINT, then hangs on), "interrupt-parent" (Ctrl-C to the fuzz job); after "linger" seconds, if given.
# Its last words go to stderr and stdout (both into the round's log), none if "quiet"; then
# "raw_last_line", if given.
FAKE_ROUND = """
import json, os, signal, sys, time
plan = json.loads(os.environ["FAKE_ROUND"])
worker = os.environ["PPAUX_FUZZ_WORKER"].partition("/")[0]
steps = plan.get(worker, plan.get("*"))
def stopped(signum, frame):  # as the plugin does on the parent's SIGINT, but then it hangs on
    with open(os.environ["PPAUX_FUZZ_EVENTS"], "a") as fh:
        fh.write(json.dumps({"kind": "interrupted", "nodeid": "t.py::slow"}) + "\\n")
# First thing, as the plugin's is set at import: a stop that comes while a loaded machine is still
# starting the round must find it (Python's default would end it with status 1).
if steps["end"] == "hang":
    signal.signal(signal.SIGINT, stopped)
told = {k: os.environ.get("PPAUX_FUZZ_" + k.upper()) for k in ("mode", "worker", "seed", "shard", "max_examples")}
with open(os.environ["PPAUX_FUZZ_EVENTS"].replace(".events.jsonl", ".environment.json"), "w") as fh:
    json.dump(told, fh)
with open(os.environ["PPAUX_FUZZ_EVENTS"], "a") as fh:
    for event in steps["events"]:
        fh.write(json.dumps(event) + "\\n")
if not steps.get("quiet"):
    sys.stderr.write("a warning of worker " + worker + "\\n")
    sys.stderr.flush()
    print("last words of worker", worker)
    sys.stdout.flush()
if "raw_last_line" in steps:  # bytes as the code under test may print them, given as latin-1
    sys.stdout.buffer.write(steps["raw_last_line"].encode("latin-1"))
    sys.stdout.flush()
time.sleep(steps.get("linger", 0))
end = steps["end"]
if end == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if end == "interrupt-parent":
    os.kill(os.getppid(), signal.SIGINT)
if end in ("hang", "interrupt-parent"):
    for _ in range(600):
        time.sleep(0.1)
sys.exit(int(end.split()[1]))
"""
FAILURE = {"kind": "failure", "nodeid": "t.py::t", "clause": "add.7", "error": "E", "example": "ex", "blob": "b"}
COLLECTED = {"kind": "collected", "tests": 1, "selected": 3}
# A failure's calls as the plugin records them for a regression test: kept as they are in replay.json.
SCENARIO = {"prefix": "p", "steps": [{"op": "pop", "dict": "d", "arg": "'p.a'", "setup": []}], "doubles": []}


class ScriptedSuite(Suite):
    def command(self):
        return [sys.executable, "-c", FAKE_ROUND]


def scripted_run(
    tmp_path, monkeypatch, plan, *, workers=2, budget=60.0, shard=None, where=("cpu",), **kwargs
) -> FuzzRun:
    """A run of ``workers`` scripted workers, worker N on ``where``'s N-th placement (in turn)."""
    monkeypatch.setenv("FAKE_ROUND", json.dumps(plan))
    # A failure's depth is saved in the run's database: one under tmp_path.
    suite = ScriptedSuite(db=str(tmp_path / "d"), workdir=tmp_path / "rounds", shard=shard)
    return FuzzRun(
        budget=budget,
        suite=suite,
        workers=[Worker(i + 1, [where[i % len(where)]]) for i in range(workers)],
        nightly_max_examples=10,
        progress=Progress(io.StringIO(), tty=False),
        **kwargs,
    )


def test_a_run_keeps_a_test_s_different_examples_and_crashes_apart_and_counts_each_again(tmp_path, monkeypatch):
    """One test's failures are one per minimal example, or per error where there is no example (a
    hang or a crash); the same one again is counted, not listed twice; each keeps its failure text."""
    first = dict(FAILURE, text="Traceback\nE   AssertionError: add.7\n")
    other = dict(first, example="another example")
    crash = dict(first, example=None, blob=None, error="Crash: pop killed the process with SIGSEGV (signal 11)")
    crash["finding"] = "crash"
    hang = dict(crash, error="Hang: pop did not return within 1 s", finding="hang")
    events = [COLLECTED, {"kind": "running", "nodeid": "t.py::t"}, first, first, other, crash, hang]
    run = scripted_run(
        tmp_path, monkeypatch, {"*": {"events": events, "end": "exit 1"}}, workers=1, max_failures=4, budget=5.0
    )
    run.run()
    summary = run.summary().to_json()
    assert [(f["example"], f["error"], f.get("finding"), f["seen"], f["text"]) for f in summary["failures"]] == [
        ("ex", "E", None, 2, first["text"]),
        ("another example", "E", None, 1, first["text"]),
        (None, crash["error"], "crash", 1, first["text"]),
        (None, hang["error"], "hang", 1, first["text"]),
    ]
    assert (summary["stopped_by"], summary["complete"]) == ("max-failures", True)


@pytest.mark.subprocess
def test_a_failure_two_workers_hit_is_one_failure_and_a_killed_worker_is_reported(tmp_path, monkeypatch):
    events = [
        {"kind": "started", "pid": 1},
        COLLECTED,
        {"kind": "running", "nodeid": "t.py::t"},
        {"kind": "progress", "examples": 7},
        FAILURE,
    ]
    # Worker 2 dies at once; worker 1 lingers past the budget, so neither round's end races the other's.
    run = scripted_run(
        tmp_path,
        monkeypatch,
        {"1": {"events": events, "end": "exit 1", "linger": 20}, "2": {"events": events, "end": "kill"}},
        budget=5.0,
        where=("cpu", "cuda:0"),
    )
    (tmp_path / "rounds").mkdir()
    (tmp_path / "rounds" / "worker-9-round-001.log").write_text("a stale round of an earlier run")
    run.run()
    report = run.summary()
    summary = report.to_json()
    [failure] = summary["failures"]
    # Hit on both workers' placements: the failure names them both.
    assert (failure["workers"], failure["placements"], failure["seen"], failure["clause"]) == (
        [1, 2],
        ["cpu", "cuda:0"],
        2,
        "add.7",
    )
    log = str(tmp_path / "rounds" / "worker-2-round-001.log")
    assert summary["dead_workers"] == [
        {"worker": 2, "round": 1, "placement": "cuda:0", "test": "t.py::t", "exit_status": -9, "log": log}
    ]
    assert (summary["examples"], summary["stopped_by"], verdict(report)) == (
        14,
        "budget",
        (1, "1 worker(s) died: see the report"),
    )
    assert not (tmp_path / "rounds" / "worker-9-round-001.log").exists()


@pytest.mark.subprocess
@pytest.mark.parametrize("devices", ["auto", "cpu"])
def test_the_command_says_where_it_fuzzes_and_that_a_worker_died(devices, tmp_path, monkeypatch, capsys):
    """What `ppaux fuzz run` says on the console when a worker dies, with scripted rounds: the
    CPU-only note first when GPUs were asked for and none is visible, the dead worker, and the
    verdict's reason last, exit 1 (the end-to-end run with a real SIGKILL is nightly)."""
    import ppaux.fuzz.options as options
    import ppaux.fuzz.rounds as rounds

    events = [{"kind": "started", "pid": 1}, COLLECTED, {"kind": "running", "nodeid": "t.py::t"}]
    plan = {
        "1": {"events": [*events, {"kind": "progress", "examples": 3}], "end": "exit 0"},
        "2": {"events": events, "end": "kill"},
    }
    monkeypatch.setenv("FAKE_ROUND", json.dumps(plan))
    monkeypatch.setattr(rounds, "Suite", ScriptedSuite)
    asked: list[str] = []
    # --devices cpu does not ask CUDA which devices it has (on a broken driver asking warns or hangs).
    monkeypatch.setattr(options, "visible_gpus", lambda: asked.append("visible_gpus") or [])
    report = tmp_path / "report"
    status, _, err = ppaux_fuzz(
        capsys,
        *("run", "--workers", "2", "--budget", "2s", "--devices", devices),
        *("--db", str(tmp_path / "db"), "--report", str(report)),
    )
    assert status == 1, err
    lines = err.splitlines()
    note = "fuzz: no CUDA device visible: fuzzing on CPU only"
    assert [line for line in lines if line == note] == ([note] if devices == "auto" else []), err
    assert lines[0] == note or devices == "cpu", err
    died = "killed the process with SIGKILL (signal 9); the other workers go on"
    assert f"fuzz: worker 2 died in round 1 (cpu) running t.py::t: {died}" in lines, err
    assert lines[-2:] == [f"fuzz: report {report / 'fuzz.md'}", "fuzz: 1 worker(s) died: see the report"], err
    assert asked == (["visible_gpus"] if devices == "auto" else [])


def test_a_run_stopped_at_max_failures_sums_up_its_worker_round_and_each_distinct_failure(tmp_path, monkeypatch):
    # One worker whose first round reports two distinct failures (one of them twice): the run stops there.
    other = {"kind": "failure", "nodeid": "t.py::u", "example": "ex2"}
    events = [COLLECTED, {"kind": "running", "nodeid": "t.py::t"}, {"kind": "progress", "examples": 7}]
    run = scripted_run(
        tmp_path,
        monkeypatch,
        {"*": {"events": [*events, FAILURE, FAILURE, other], "end": "exit 1"}},
        workers=1,
        shard=(1, 2),
        seed=7,
        max_failures=2,
    )
    run.run()
    report = run.summary()
    summary = report.to_json()
    # A worker's first round: a third of the way to the large scope, every feature on.
    first_round = {"scope": grown_scope(1 / RAMP_ROUNDS), "swarm": None, "swarm_seed": None}
    found_after = [f.pop("found_after_s") for f in summary["failures"]]
    assert all(isinstance(t, float) and t >= 0 for t in found_after)
    assert summary["failures"] == [
        {
            "nodeid": "t.py::t",
            "clause": "add.7",
            "worker": 1,
            "workers": [1],
            "round": 1,
            "placements": ["cpu"],
            "example": "ex",
            "blob": "b",
            "error": "E",
            "text": "",
            "seen": 2,
            **first_round,
        },
        {
            "nodeid": "t.py::u",
            "clause": None,
            "worker": 1,
            "workers": [1],
            "round": 1,
            "placements": ["cpu"],
            "example": "ex2",
            "blob": None,
            "error": None,
            "text": "",
            "seen": 1,
            **first_round,
        },
    ]
    [worker] = summary["workers"]
    assert {k: v for k, v in worker.items() if k != "timeline"} == {
        "worker": 1,
        "placements": ["cpu"],
        "rounds": 1,
        "examples": 7,
        "failures": 2,
        "died": None,
    }
    # A point when the counts change, and one at the end of the run, for the worker and the run alike.
    assert [p[1:] for p in worker["timeline"]] == [[0, 0], [7, 2], [7, 2]] == [p[1:] for p in summary["timeline"]]
    assert worker["timeline"][-1][0] == summary["timeline"][-1][0] == round(run.elapsed, 2)
    # Each failure's depth, once, in the database: a replay with nothing but the database replays it as found.
    assert saved_depths(open_database(run.suite.db)) == [RoundDepth(first_round["scope"])]
    [round_] = summary["rounds"]
    assert {k: round_[k] for k in ("worker", "round", "placement", "max_examples", "examples", "tests", "log")} == {
        "worker": 1,
        "round": 1,
        "placement": "cpu",
        "max_examples": 50,
        "examples": 7,
        "tests": 1,
        "log": str(tmp_path / "rounds" / "worker-1-round-001.log"),
    }
    # Seconds to a tenth, as float (fuzz.json says 3.0, not 3), and the rate over them.
    assert 0 < run.elapsed and (summary["elapsed_s"], summary["examples_per_s"]) == (
        round(run.elapsed, 1),
        round(7 / run.elapsed, 1),
    )
    assert isinstance(summary["elapsed_s"], float)
    assert {k: summary[k] for k in summary if k not in ("started_at", "elapsed_s", "examples_per_s", "timeline")} == {
        "kind": "fuzz-run",
        "schema_version": 1,
        "verdict": "fail",
        "merged": False,
        "shards": [],
        "budget_s": 60.0,
        "stopped_by": "max-failures",
        "complete": True,
        "impl": "ppaux.transport",
        "db": str(tmp_path / "d"),
        "suite": run.suite.what,
        "tests": None,
        "seed": 7,
        "shard": "1/2",
        "placements": ["cpu"],
        "workers": summary["workers"],
        "dead_workers": [],
        "examples": 7,
        "timeout_s": 10.0,
        "rounds": summary["rounds"],
        "failures": summary["failures"],
        "interrupted": [],
    }
    assert verdict(report) == (1, None)
    # The progress line once its round started, each new failure, and the line at the end.
    *said, last = run.progress.stream.getvalue().splitlines()
    assert said == [
        "fuzz 00:00/01:00  round 1 (cpu)  examples 0  0/s  failures 0",
        "fuzz: FAILURE t.py::t (worker 1, round 1, cpu): E",
        "fuzz: FAILURE t.py::u (worker 1, round 1, cpu): see the report",
    ]
    assert re.fullmatch(r"fuzz 00:\d\d/01:00  round 1 \(cpu\)  examples 7  [\d,]+/s  failures 2", last), last
    # The round was told it fuzzes (this shard), as worker 1 of 1, with its own seed and max_examples.
    told = tmp_path / "rounds" / "worker-1-round-001.environment.json"
    assert json.loads(told.read_text()) == {
        "mode": "run",
        "worker": "1/1",
        "seed": "8",
        "shard": "1/2",
        "max_examples": "50",
    }


def test_a_run_on_cuda_fuzzes_on_the_gpus_only_with_the_seed_tests_and_max_failures_given(
    tmp_path, monkeypatch, capsys
):
    """``ppaux fuzz run --devices cuda`` with two GPUs visible and scripted rounds: the worker's placements
    (no CPU), the seed its round is given, --tests and --max-failures 1 (the first failure stops it)."""
    import ppaux.fuzz.options as options
    import ppaux.fuzz.rounds as rounds

    events = [COLLECTED, {"kind": "progress", "examples": 4}, FAILURE]
    monkeypatch.setenv("FAKE_ROUND", json.dumps({"*": {"events": events, "end": "exit 1"}}))
    monkeypatch.setattr(rounds, "Suite", ScriptedSuite)
    monkeypatch.setattr(options, "visible_gpus", lambda: ["0", "1"])
    report = tmp_path / "report"
    status, out, err = ppaux_fuzz(
        capsys,
        *("run", "--devices", "cuda", "--workers", "1", "--seed", "11", "--tests", "t", "--max-failures", "1"),
        *("--db", str(tmp_path / "db"), "--report", str(report)),
    )
    assert (status, out) == (1, ""), err
    lines = err.splitlines()
    assert lines[1:2] + lines[3:] == [
        "fuzz: FAILURE t.py::t (worker 1, round 1, cuda:0): E",
        f"fuzz: report {report / 'fuzz.md'}",
    ]
    summary = json.loads((report / "fuzz.json").read_text())
    assert {k: summary[k] for k in ("placements", "seed", "tests", "stopped_by", "examples")} == {
        "placements": ["cuda:0", "cuda:0,1"],
        "seed": 11,
        "tests": "t",
        "stopped_by": "max-failures",
        "examples": 4,
    }
    assert [r["placement"] for r in summary["rounds"]] == ["cuda:0"]
    # Round 1 of worker 1 draws from seed 11 + 1.
    told = json.loads((report / "rounds" / "worker-1-round-001.environment.json").read_text())
    assert (told["seed"], told["worker"]) == ("12", "1/1")


def test_a_round_that_breaks_after_its_tests_were_collected_is_a_dead_worker_not_bad_input(tmp_path, monkeypatch):
    # pytest's "internal error" mid-run: that worker's problem, not the selection's.
    events = [COLLECTED, {"kind": "running", "nodeid": "t.py::t"}]
    run = scripted_run(tmp_path, monkeypatch, {"*": {"events": events, "end": "exit 3"}}, workers=1)
    run.run()
    assert [(d.worker, d.test, d.exit_status) for d in run.dead] == [(1, "t.py::t", 3)]
    # Each round leaves its events and its log under the report's rounds/, named by worker and round
    # (beside the stand-in's own record of what it was told).
    assert sorted(p.name for p in (tmp_path / "rounds").iterdir() if not p.name.endswith(".environment.json")) == [
        "worker-1-round-001.events.jsonl",
        "worker-1-round-001.log",
    ]
    # Its stderr as well as its stdout.
    log = "a warning of worker 1\nlast words of worker 1\n"
    assert (tmp_path / "rounds" / "worker-1-round-001.log").read_text() == log
    assert verdict(run.summary()) == (1, "1 worker(s) died: see the report")


@pytest.mark.parametrize(
    "events, shard, quiet, message",
    [
        ([COLLECTED], (2, 2), False, "shard 2/2 holds none of the 3 selected Hypothesis tests; nothing to fuzz here"),
        (
            [{"kind": "collected", "tests": 0}],
            None,
            False,
            "no Hypothesis tests match the selection (--tests); nothing to fuzz",
        ),
        ([], None, False, "pytest could not run the round (usage error, exit 4); see {log}: last words of worker 1"),
        ([], None, True, "pytest could not run the round (usage error, exit 4); see {log}: no output"),
    ],
)
def test_a_selection_that_cannot_run_stops_every_worker_with_one_line(
    tmp_path, monkeypatch, events, shard, quiet, message
):
    status = 4 if not events else 5
    run = scripted_run(
        tmp_path,
        monkeypatch,
        {"1": {"events": events, "end": f"exit {status}", "quiet": quiet}, "2": {"events": [], "end": "hang"}},
        shard=shard,
    )
    with pytest.raises(RunError) as caught:
        run.run()
    assert str(caught.value) == message.format(log=tmp_path / "rounds" / "worker-1-round-001.log")
    # Worker 2's round, still running, is killed with its process group: nothing is left behind.
    assert (run.workers[0].current, run.workers[1].current.proc.returncode) == (None, -9)
    assert [r.ended_by for r in run.rounds] == ["finished"]


def rounds_reached(run: FuzzRun, event: str) -> bool:
    """Whether every round still running has written ``event`` (its JSON kind, quoted)."""
    return all(event in w.current.events_path.read_text() for w in run.workers if w.current is not None)


def test_a_stop_reaches_every_round_and_one_that_ignores_it_is_killed_after_the_grace(tmp_path, monkeypatch):
    events = [COLLECTED, {"kind": "progress", "examples": 3}]
    run = scripted_run(tmp_path, monkeypatch, {"*": {"events": events, "end": "hang"}}, grace=0.2)
    run._signal(signal.SIGTERM, None)  # as the handler would, before the first round started
    run.run()
    assert (run.rounds, run.stopped_by) == ([], "SIGTERM")
    # Time holds still until each round has set its handler (its first events are written after
    # it), and after the budget until each has taken the stop: a busy machine changes no verdict.
    clock = FakeClock(start=0.0)
    run = scripted_run(
        tmp_path, monkeypatch, {"*": {"events": events, "end": "hang"}}, budget=1.0, grace=0.5, clock=clock
    )
    clock.on_sleep = held_until(lambda: rounds_reached(run, '"interrupted"' if clock.now >= 1.0 else '"collected"'))
    run.run()
    report = run.summary()
    summary = report.to_json()
    assert sorted((r["worker"], r["ended_by"], r["exit_status"]) for r in summary["rounds"]) == [
        (1, "budget", -9),
        (2, "budget", -9),
    ]
    assert sorted((i["worker"], i["nodeid"]) for i in summary["interrupted"]) == [(1, "t.py::slow"), (2, "t.py::slow")]
    assert verdict(report) == (0, None)
    write_run(report, tmp_path)
    assert "- `t.py::slow` (worker 2, round 1, cpu; stopped by budget)" in (tmp_path / "fuzz.md").read_text()


# A round's pytest that answers SIGINT with exit 3, or ignores it; "ready" once its handler is set, then
# it waits for a signal (one it ignores leaves it waiting: the round's SIGKILL ends it).
_INTERRUPTIBLE = (
    "import signal, sys\nsignal.signal(signal.SIGINT, {handler})\nprint('ready', flush=True)\nsignal.pause()\n"
)


def test_an_interrupted_round_ends_on_its_own_or_is_killed_after_its_grace_and_not_before(tmp_path):
    started: list[subprocess.Popen[bytes]] = []

    def start(handler: str, clock: FakeClock) -> Round:
        code = _INTERRUPTIBLE.format(handler=handler)
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
        started.append(proc)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        proc.stdout.close()
        return Round(0, 1, "cpu", None, tmp_path / "e", tmp_path / "l", proc, clock=clock)

    try:
        # It takes the stop: time holds still until it has ended, and it ends with its own status.
        clock = FakeClock(start=0.0)
        rnd = start("lambda *_: sys.exit(3)", clock)
        clock.on_sleep = held_until(lambda: rnd.proc.poll() is not None)
        rnd.interrupt(grace=0.2)
        assert rnd.proc.returncode == 3 and clock.now < 0.2
        # It ignores the stop: killed once the grace has passed, on the round's clock.
        clock = FakeClock(start=0.0)
        rnd = start("signal.SIG_IGN", clock)
        rnd.interrupt(grace=0.2)
        assert rnd.proc.returncode == -signal.SIGKILL
        assert clock.now >= 0.2 and clock.now - max(clock.sleeps) < 0.2
    finally:
        # A failed assertion leaves no process waiting for a signal.
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_replay_stopped_by_ctrl_c_or_that_cannot_run_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_ROUND", json.dumps({"*": {"events": [], "end": "interrupt-parent"}}))
    replay = Replay(suite=ScriptedSuite(db="d", workdir=tmp_path), placement="cpu")
    # Ctrl-C as a terminal delivers it, whatever the runner set (mutmut's workers ignore SIGINT).
    runners = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            replay.run()
    finally:
        signal.signal(signal.SIGINT, runners)
    # The replay's one round is round 0 of worker 1; its log's last line says why it ended.
    log = tmp_path / "worker-1-round-000.log"
    for quiet, last in ((False, "last words of worker 1"), (True, "no output")):
        monkeypatch.setenv("FAKE_ROUND", json.dumps({"*": {"events": [], "end": "exit 3", "quiet": quiet}}))
        with pytest.raises(RunError) as caught:
            replay.run()
        assert str(caught.value) == f"pytest could not run the replay (exit 3); see {log}: {last}"
    # Output that is not UTF-8 (the code under test printed bytes): its last line, the bad bytes replaced.
    garbled = {"events": [], "end": "exit 3", "raw_last_line": "\xff\xfe core dumped\n"}
    monkeypatch.setenv("FAKE_ROUND", json.dumps({"*": garbled}))
    with pytest.raises(RunError) as caught:
        replay.run()
    assert str(caught.value) == f"pytest could not run the replay (exit 3); see {log}: \ufffd\ufffd core dumped"


def test_a_replayed_failure_whose_round_wrote_no_details_still_fails_with_its_saved_examples(
    tmp_path, monkeypatch, capsys
):
    """A round that says a test failed but not how (it died before its failure event): the test still
    fails in the replay, with its saved examples and no details rather than another test's."""
    import ppaux.fuzz.rounds as rounds

    events = [{"kind": "test", "nodeid": "t.py::t", "outcome": "failed", "saved": 2}]
    monkeypatch.setenv("FAKE_ROUND", json.dumps({"*": {"events": events, "end": "exit 1"}}))
    monkeypatch.setattr(rounds, "Suite", ScriptedSuite)
    (tmp_path / "db").mkdir()
    report = tmp_path / "report"
    status, _, _ = ppaux_fuzz(
        capsys, "replay", "--devices", "cpu", "--db", str(tmp_path / "db"), "--report", str(report)
    )
    assert status == 1
    replayed = json.loads((report / "replay.json").read_text())
    conforms(replayed, "fuzz-replay")
    assert replayed["still_failing"] == [
        {"nodeid": "t.py::t", "clause": None, "error": None, "example": None, "blob": None, "saved": 2}
    ]


def test_a_replay_says_which_saved_failures_still_fail_and_which_no_longer_do(tmp_path, monkeypatch, capsys):
    """``ppaux fuzz replay`` with a scripted round: the tests with saved examples, split into those
    that still fail (with their finding) and those that pass now, on the console and in replay.md."""
    import ppaux.fuzz.options as options
    import ppaux.fuzz.rounds as rounds

    events = [
        {"kind": "test", "nodeid": "t.py::fixed", "outcome": "passed", "saved": 2},
        {"kind": "test", "nodeid": "t.py::never_failed", "outcome": "passed", "saved": 0},
        {"kind": "test", "nodeid": "t.py::t", "outcome": "failed", "saved": 3},
        dict(FAILURE, text="Traceback\nE   AssertionError: add.7\n", scenario=SCENARIO, scenario_error="se"),
    ]
    monkeypatch.setenv("FAKE_ROUND", json.dumps({"*": {"events": events, "end": "exit 1"}}))
    monkeypatch.setattr(rounds, "Suite", ScriptedSuite)
    # A GPU is visible, and --devices cpu keeps the replay off it.
    monkeypatch.setattr(options, "visible_gpus", lambda: ["0"])
    (tmp_path / "db").mkdir()
    report = tmp_path / "report"
    argv = ("replay", "--devices", "cpu", "--db", str(tmp_path / "db"), "--report", str(report))
    assert ppaux_fuzz(capsys, *argv) == (
        1,
        "fuzz replay: 5 saved examples in 2 tests; still failing: 1; no longer failing: 1\n"
        "  FAILS t.py::t: E\n"
        f"fuzz replay: report {report / 'replay.md'}\n",
        "",
    )
    # One round, round 0 of worker 1, told to replay: no seed, no shard (every shard's failures), no max_examples.
    told = (report / "rounds" / "worker-1-round-000.environment.json").read_text()
    assert json.loads(told) == {
        "mode": "replay",
        "worker": "1/1",
        "seed": None,
        "shard": None,
        "max_examples": None,
    }
    summary = json.loads((report / "replay.json").read_text())
    # Indented for a person reading it, as fuzz.json is.
    assert (report / "replay.json").read_text() == json.dumps(summary, indent=2) + "\n"
    # When, in UTC as a run's started_at is: the shards' machines may be in other time zones.
    assert datetime.fromisoformat(summary["at"]).utcoffset() == timedelta(0)
    assert summary == {
        "kind": "fuzz-replay",
        "schema_version": 1,
        "verdict": "fail",
        "at": summary["at"],
        "impl": "ppaux.transport",
        "db": str(tmp_path / "db"),
        "placement": "cpu",
        "tests_with_saved_failures": 2,
        "saved_examples": 5,
        "still_failing": [
            {
                "nodeid": "t.py::t",
                "saved": 3,
                "clause": "add.7",
                "example": "ex",
                "blob": "b",
                "error": "E",
                "text": "Traceback\nE   AssertionError: add.7\n",
                "scenario": SCENARIO,
                "scenario_error": "se",
            }
        ],
        "no_longer_failing": [{"nodeid": "t.py::fixed", "saved": 2}],
    }
    row = {"nodeid": "t.py::t", "clause": "add.7", "error": "E", "example": "ex", "blob": "b"}
    assert failure_rows(summary) == [row]
    assert (report / "replay.md").read_text() == "\n".join(
        [
            "# Replay of saved fuzz failures",
            "",
            f"- at: {summary['at']}; implementation: `ppaux.transport`; database: `{tmp_path / 'db'}`; placement: cpu",
            "- tests with saved failures: 2 (5 saved examples)",
            "- still failing: **1**; no longer failing: 1",
            "",
            "## No longer failing",
            "",
            "- `t.py::fixed` (2 saved)",
            "",
            "## Still failing",
            "",
            "### `t.py::t`",
            "",
            "- error: `E`",
            "- clause: add.7",
            "- saved examples: 3",
            "",
            "Minimal example:",
            "",
            "```",
            "ex",
            "```",
            "",
            "Reproduce (decorate the test with):",
            "",
            "```python",
            "b",
            "```",
            "",
            "<details><summary>failure text</summary>",
            "",
            "```",
            "Traceback",
            "E   AssertionError: add.7",
            "```",
            "",
            "</details>",
            "",
        ]
    )
    # Once every saved failure passes: exit 0, nothing under "Still failing".
    monkeypatch.setenv("FAKE_ROUND", json.dumps({"*": {"events": events[:2], "end": "exit 0"}}))
    assert ppaux_fuzz(capsys, *argv) == (
        0,
        "fuzz replay: 2 saved examples in 1 tests; still failing: 0; no longer failing: 1\n"
        f"fuzz replay: report {report / 'replay.md'}\n",
        "",
    )
    assert (report / "replay.md").read_text().endswith("## Still failing\n\nNone.\n")


def test_progress_redraws_one_line_on_a_terminal_and_prints_lines_otherwise():
    tty = io.StringIO()
    p = Progress(tty, tty=True)
    p.update(progress_line(60, 10, 500, 0, "cpu", 1))
    p.update(progress_line(60, 10, 501, 0, "cpu", 1))  # within a quarter of a second: not redrawn
    p.say("fuzz: note")
    p.finish(progress_line(60, 20, 1000, 1, "cpu", 2))
    assert tty.getvalue() == (
        "\r\x1b[Kfuzz 00:10/01:00  round 1 (cpu)  examples 500  50/s  failures 0"
        "\r\x1b[Kfuzz: note\n"
        "\r\x1b[Kfuzz 00:20/01:00  round 2 (cpu)  examples 1,000  50/s  failures 1\n"
    )
    plain = io.StringIO()
    p = Progress(plain, every=3600, tty=False)
    p.update(progress_line(60, 1, 10, 0, "cpu", 1))
    p.update(progress_line(60, 2, 20, 0, "cpu", 1))  # within `every`: no line
    p.finish(progress_line(60, 3, 30, 0, "cpu", 1))
    assert plain.getvalue().splitlines() == [
        "fuzz 00:01/01:00  round 1 (cpu)  examples 10  10/s  failures 0",
        "fuzz 00:03/01:00  round 1 (cpu)  examples 30  10/s  failures 0",
    ]
    # At the very start, before any time has passed: no rate yet.
    assert progress_line(60, 0, 0, 0, "cpu", 1) == "fuzz 00:00/01:00  round 1 (cpu)  examples 0  0/s  failures 0"


def ppaux_fuzz(capsys, *args: str) -> tuple[int, str, str]:
    """``ppaux fuzz ARGS`` in this process (its rounds are subprocesses): exit status, stdout, stderr."""
    capsys.readouterr()
    status = ppaux_main(["fuzz", *args])
    out, err = capsys.readouterr()
    return status, out, err


def _find_save_replay(capsys, db: str, report: Path, *, replay_fixed: bool) -> None:
    _find(capsys, db, report, *PLANTED)
    _replay(capsys, db, report, replay_fixed=replay_fixed)


def _find(capsys, db: str, report: Path, *args: str) -> None:
    """A run stopped by the planted failure: its summary, report and console line say what it found."""
    status, _, err = ppaux_fuzz(
        capsys, "run", "--budget", "90s", "--max-failures", "1", "--db", db, "--report", str(report), *args
    )
    assert status == 1, err
    summary = json.loads((report / "fuzz.json").read_text())
    conforms(summary, "fuzz-run")
    assert summary["stopped_by"] == "max-failures" and summary["complete"]
    [failure] = summary["failures"]
    assert failure["nodeid"] == BROKEN_TEST
    assert failure["example"].splitlines()[0] == "test_success_adds_one_key_per_item_bound_to_the_same_tensor("
    assert failure["blob"].startswith("@reproduce_failure(")
    assert failure_rows(summary) == [
        {
            "nodeid": BROKEN_TEST,
            "clause": "add.7",
            "error": failure["error"],
            "example": failure["example"],
            "blob": failure["blob"],
        }
    ]
    # The round that finds it depends on the seeds Hypothesis draws; the line's form does not.
    assert re.search(rf"^fuzz: FAILURE {re.escape(BROKEN_TEST)} \(worker 1, round \d+, cpu\): ", err, re.M), err
    assert BROKEN_TEST in (report / "fuzz.md").read_text()


def _replay(capsys, db: str, report: Path, *, replay_fixed: bool) -> None:
    """The saved failure replayed on the planted implementation (a regression file written and proven),
    then, with ``replay_fixed``, on the reference, where it no longer fails."""
    regressions = report / "regressions"
    status, out, err = ppaux_fuzz(
        capsys, "replay", "--db", db, "--report", str(report), "--impl", COPIES, "--regressions", str(regressions)
    )
    assert status == 1, err
    replay = json.loads((report / "replay.json").read_text())
    conforms(replay, "fuzz-replay")
    # The saved failure becomes a regression test, proven as ppaux check proves one.
    assert [(f["clause"], f["tests"]) for f in replay["regressions"]["files"]] == [
        ("add.7", ["test_success_adds_one_key_per_item_bound_to_the_same_tensor"])
    ]
    assert replay["regressions"]["refused"] == [] and os.listdir(regressions) == ["test_add_7.py"]
    assert f"  REGRESSION TEST {regressions / 'test_add_7.py'} (add.7): " in out
    assert [r["nodeid"] for r in replay["still_failing"]] == [BROKEN_TEST]
    assert replay["still_failing"][0]["example"].splitlines()[0] == f"{BROKEN_TEST.rsplit('::', 1)[1]}("
    assert failure_rows(replay)[0]["blob"] == replay["still_failing"][0]["blob"]
    assert out.splitlines()[0].endswith("in 1 tests; still failing: 1; no longer failing: 0")

    if not replay_fixed:
        return
    status, _, err = ppaux_fuzz(capsys, "replay", "--db", db, "--report", str(report))
    assert status == 0, err
    replay = json.loads((report / "replay.json").read_text())
    conforms(replay, "fuzz-replay")
    assert replay["still_failing"] == [] and [r["nodeid"] for r in replay["no_longer_failing"]] == [BROKEN_TEST]


# Nightly: CI runs the same finding, saving and replaying over Redis (below), and the wheel smoke run
# (.ci/wheel-smoke) finds and replays from the default directory database.
@pytest.mark.slow
@pytest.mark.thorough
def test_planted_failure_is_found_saved_and_replayed_from_a_directory(tmp_path, capsys):
    _find_save_replay(capsys, str(tmp_path / "db"), tmp_path / "report", replay_fixed=True)
    assert any((tmp_path / "db").iterdir())


@pytest.fixture
def redis_url(tmp_path):
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
    import redis

    # A free port can be taken by another run before this server binds it: then the server exits,
    # and a ping could reach the other run's server. Only an answer from this server's pid counts.
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen(
            [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        client = redis.Redis(host="127.0.0.1", port=port)
        if _answers_from(client, proc):
            break
        _stop(proc)
    else:  # pragma: no cover - five ports taken in a row
        pytest.fail("redis-server could not bind a free port on 127.0.0.1 in five tries")
    try:
        yield f"redis://127.0.0.1:{port}", client
    finally:
        _stop(proc)


def _answers_from(client, proc: subprocess.Popen) -> bool:
    import redis

    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            return client.info("server")["process_id"] == proc.pid
        except redis.ConnectionError:
            time.sleep(0.05)
    return False


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - watchdog
        proc.kill()
        proc.wait()


def test_a_redis_url_s_path_names_the_numbered_database_the_examples_are_saved_in(redis_url):
    import redis

    from ppaux.fuzz.database import open_database

    url, client = redis_url
    numbered = open_database(url + "/3")
    numbered.save(b"test-key", b"example")
    assert list(numbered.fetch(b"test-key")) == [b"example"]
    # Saved in database 3 of that server, not in its database 0 (the one a URL without a path names).
    assert list(open_database(url).fetch(b"test-key")) == []
    host, port = client.connection_pool.connection_kwargs["host"], client.connection_pool.connection_kwargs["port"]
    assert (client.dbsize(), redis.Redis(host=host, port=port, db=3).dbsize()) == (0, 1)
    # A path that is not a number names database 0, as no path does.
    open_database(url + "/examples").save(b"other-key", b"example")
    assert list(open_database(url).fetch(b"other-key")) == [b"example"]


@pytest.mark.slow
def test_two_shards_share_a_real_redis_a_replay_naming_only_the_url_reproduces_and_the_report_merges_them(
    redis_url, tmp_path, capsys, monkeypatch
):
    url, client = redis_url
    # Shard 1 of 2 holds the planted bug's test, shard 2 the other (in_shard hashes the ids).
    tests = ["--tests", f"bound_to_the_same_tensor or {OTHER_SHARD_TEST.rpartition('::')[2]}", "--workers", "1"]
    assert in_shard(BROKEN_TEST, (1, 2)) and in_shard(OTHER_SHARD_TEST, (2, 2))
    _find(capsys, url, tmp_path / "shard1", "--shard", "1/2", "--impl", COPIES, "--seed", "7", *tests)
    # The budget runs once a round has run an example, however long a loaded machine takes to start it.
    capsys.readouterr()
    status = fuzz_run_held(
        monkeypatch,
        lambda now: examples_ran(tmp_path / "shard2"),
        *("--shard", "2/2", "--budget", "20s", "--db", url, "--report", str(tmp_path / "shard2"), "--impl", COPIES),
        *tests,
    )
    err = capsys.readouterr().err
    assert status == 0, err
    assert client.keys(b"hypothesis-example:*")
    shard2 = json.loads((tmp_path / "shard2" / "fuzz.json").read_text())
    conforms(shard2, "fuzz-run")
    assert {r["tests"] for r in shard2["rounds"] if r["tests"] is not None} == {1} and shard2["examples"] > 0

    # Another machine: nothing but the URL (and the implementation under test), then the fixed one.
    _replay(capsys, url, tmp_path / "replay", replay_fixed=True)

    status, out, err = ppaux_fuzz(
        capsys,
        "report",
        "--merge",
        str(tmp_path / "shard1"),
        str(tmp_path / "shard2"),
        "--report",
        str(tmp_path / "merged"),
    )
    assert status == 1, err
    merged = json.loads((tmp_path / "merged" / "fuzz.json").read_text())
    conforms(merged, "fuzz-run")
    assert {r["shard"] for r in merged["rounds"]} == {"1/2", "2/2"}
    assert [(f["nodeid"], f["shard"]) for f in merged["failures"]] == [(BROKEN_TEST, "1/2")]
    assert "| 1/2 | 1 | 1 | cpu |" in (tmp_path / "merged" / "fuzz.md").read_text()
    assert out.splitlines()[-1] == f"fuzz report: {tmp_path / 'merged' / 'fuzz.md'}"


def _kill_worker_once_it_runs_a_test(events: Path, killed: dict) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else []
        running = [e["nodeid"] for e in lines if e["kind"] == "running"]
        if running:
            killed["test"] = running[0]
            os.kill(next(e["pid"] for e in lines if e["kind"] == "started"), signal.SIGKILL)
            return
        time.sleep(0.05)


# Nightly: 40 s of real rounds; CI checks the same console and summary with scripted rounds.
@pytest.mark.slow
@pytest.mark.thorough
def test_a_worker_that_dies_is_reported_and_the_others_go_on(tmp_path, capsys):
    """As the OOM killer would: worker 2's pytest process gets SIGKILL in the middle of a test."""
    report, killed = tmp_path / "report", {}
    killer = threading.Thread(
        target=_kill_worker_once_it_runs_a_test, args=(report / "rounds" / "worker-2-round-001.events.jsonl", killed)
    )
    killer.start()
    try:
        # 40 s: on a loaded machine a round's pytest takes many seconds to start its first test.
        status, _, err = ppaux_fuzz(
            capsys,
            "run",
            "--workers",
            "2",
            "--budget",
            "40s",
            "--devices",
            "cpu",
            "--db",
            str(tmp_path / "db"),
            "--report",
            str(report),
            "--tests",
            "test_add",
        )
    finally:
        killer.join()
    assert status == 1, err
    summary = json.loads((report / "fuzz.json").read_text())
    log = str(report / "rounds" / "worker-2-round-001.log")
    assert summary["dead_workers"] == [
        {"worker": 2, "round": 1, "placement": "cpu", "test": killed["test"], "exit_status": -9, "log": log}
    ]
    assert (
        f"fuzz: worker 2 died in round 1 (cpu) running {killed['test']}: killed the process with SIGKILL (signal 9); "
        "the other workers go on"
    ) in err.splitlines()
    assert err.splitlines()[-1] == "fuzz: 1 worker(s) died: see the report"
    one, two = summary["workers"]
    assert one["died"] is None and one["examples"] > 0 and two["rounds"] == 1 and summary["failures"] == []
    assert [r["ended_by"] for r in summary["rounds"] if r["worker"] == 1][-1] == "budget"


# Nightly: a real fuzz process for 10 s and more; in CI, scripted rounds take the SIGTERM (run._signal).
@pytest.mark.slow
@pytest.mark.thorough
def test_sigterm_stops_cleanly_with_a_partial_report(tmp_path):
    report = tmp_path / "report"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fuzz",
            "run",
            "--budget",
            "10m",
            "--db",
            str(tmp_path / "db"),
            # A round far longer than the wait for its first progress event, so that the
            # signal lands inside round 1 and not after it ended on its own.
            "--report",
            str(report),
            "--tests",
            "test_add or test_pop or test_properties or test_stateful",
            "--workers",
            "1",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env(),
    )
    try:
        events = report / "rounds" / "worker-1-round-001.events.jsonl"
        deadline = time.monotonic() + 60
        while not (events.exists() and '"kind": "progress"' in events.read_text()):
            assert time.monotonic() < deadline and proc.poll() is None, "the first round never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:  # pragma: no cover - watchdog
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    summary = json.loads((report / "fuzz.json").read_text())
    assert summary["stopped_by"] == "SIGTERM" and not summary["complete"]
    assert summary["rounds"][0]["ended_by"] == "SIGTERM" and summary["failures"] == []
    assert "stopped early by SIGTERM: partial report" in (report / "fuzz.md").read_text()
    assert (
        err.splitlines()[0] == "fuzz: no CUDA device visible: fuzzing on CPU only"
        or os.environ.get("CUDA_VISIBLE_DEVICES") != ""
    )


# A hang (its call run in a child with the run's --timeout) and a failure whose calls were not recorded.
HANG_FAILURE = {
    "kind": "failure",
    "nodeid": "t.py::test_hangs",
    "clause": "add.1",
    "error": "Hang: pop did not return within 5 s",
    "finding": "hang",  # as a round reports a hang: its kind from the exception, not the error text
}
UNRECORDED_FAILURE = {"kind": "failure", "nodeid": "t.py::test_unrecorded", "error": "AssertionError: x"}


@pytest.mark.subprocess
def test_a_replay_with_regressions_writes_a_proven_file_per_still_failing_clause_and_says_so(
    tmp_path, monkeypatch, capsys
):
    """``ppaux fuzz replay --regressions DIR`` with a scripted round and a scripted proof: where the user
    stands, the --impl file, --db and --timeout; each still-failing clause's file on the console and in
    replay.json, a failure without a clause under "unclassified", and why one could not be written."""
    import ppaux.fuzz.options as options
    import ppaux.fuzz.rounds as rounds
    from ppaux.testing.scenario import Call, describe
    from tests.scripted_proof import PREFIX, ScriptedProof

    proof = ScriptedProof(tmp_path, monkeypatch)
    proof.set()
    recorded = describe([Call("add", {"next_token_ids": [1]}, None, [("next_token_ids", [1])])], PREFIX)
    events = [
        {"kind": "test", "nodeid": "t.py::test_hangs", "outcome": "failed", "saved": 1},
        {"kind": "test", "nodeid": "t.py::test_unrecorded", "outcome": "failed", "saved": 2},
        dict(HANG_FAILURE, scenario=recorded),
        UNRECORDED_FAILURE,
    ]
    monkeypatch.setenv("FAKE_ROUND", json.dumps({"*": {"events": events, "end": "exit 1"}}))
    monkeypatch.setattr(rounds, "Suite", ScriptedSuite)
    # Two GPUs visible: the replay sees them both.
    monkeypatch.setattr(options, "visible_gpus", lambda: ["0", "1"])
    shutil.copy(BROKEN, tmp_path / "mine.py")
    (tmp_path / "db").mkdir()
    monkeypatch.chdir(tmp_path)
    out = Path("regressions")  # named as the user gave it, relative to where they stand
    out.mkdir()
    status, said, err = ppaux_fuzz(
        capsys,
        *("replay", "--impl", "mine.py", "--db", "db", "--timeout", "5", "--report", "report"),
        *("--regressions", "regressions"),
    )
    file = out / "test_add_1.py"
    why = "the test's calls were not recorded"
    assert (status, said, err) == (
        1,
        "fuzz replay: 3 saved examples in 2 tests; still failing: 2; no longer failing: 0\n"
        f"  FAILS t.py::test_hangs: {HANG_FAILURE['error']}\n"
        "  FAILS t.py::test_unrecorded: AssertionError: x\n"
        f"  REGRESSION TEST {file} (add.1): test_hangs\n"
        f"  NO REGRESSION TEST for t.py::test_unrecorded: {why}\n"
        f"fuzz replay: report {tmp_path / 'report' / 'replay.md'}\n",
        "",
    )
    summary = json.loads((tmp_path / "report" / "replay.json").read_text())
    assert {k: summary[k] for k in ("impl", "db", "placement", "regressions")} == {
        "impl": str(tmp_path / "mine.py"),
        "db": str(tmp_path / "db"),
        "placement": "cuda:0,1",
        "regressions": {
            "directory": str(out),
            "files": [{"clause": "add.1", "path": str(file), "tests": ["test_hangs"]}],
            "refused": [{"clause": "unclassified", "nodeid": "t.py::test_unrecorded", "why": why}],
            "removed": [],
        },
    }
    assert os.listdir(out) == ["test_add_1.py"]
    # A hang's calls run in a child, given the run's --timeout.
    assert (
        "        exitcode = run_in_child(hangs_calls, seconds=5.0)\n"
        '        self.assertIsNotNone(exitcode, "the calls did not return within 5 s")\n'
    ) in file.read_text()


DYING_ROUND_TESTS = """
import os
import pytest
from hypothesis import given, strategies as st

@pytest.mark.isolated
@pytest.mark.clause("add.1")
@given(st.none())
def test_dies(n):
    os._exit(3)  # the test's own code, outside any call into the implementation: it dies in both forks
"""


def test_a_round_whose_only_test_died_in_both_forks_counts_no_example(pytester, monkeypatch, tmp_path):
    # Both forks died: the failure is the one its parent wrote, with its error, and no example was
    # counted (priming the seed before the forks runs no Hypothesis test case).
    pytester.makepyfile(test_dying=DYING_ROUND_TESTS)
    status, events = _round_events(pytester, monkeypatch, tmp_path, {"PPAUX_FUZZ_MODE": "run"})
    failures = [event for event in events if event["kind"] == "failure"]
    assert (status, [(f["clause"], f["error"]) for f in failures]) == (
        1,
        [
            (
                "add.1",
                "crash: the test's process ended the process with exit status 3, outside any single call into "
                "the implementation under test",
            )
        ],
    ), events
    assert [e["examples"] for e in events if e["kind"] == "progress"] == [0, 0], events
